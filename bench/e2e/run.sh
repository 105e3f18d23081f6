#!/bin/sh
# run.sh: the end-to-end comparison on the GPU machine:
#   bench/e2e/run.sh OUTDIR [BIN_DIR]
# tilec: the C wrappers the "c" emitter writes for the graphs e2e and
# e2e_fused of examples/e2e.tile, built as benchmarks (load = compile or
# cache read; per call). torch.compile:
# the same function. Cold = empty caches, new process; warm = the caches
# that run filled, new process.
set -eu
outdir=${1:-bench/results}
bin=${2:-build/bench}
mkdir -p "$outdir"
R=4096 C=1024
tc=$(mktemp -d) ti=$(mktemp -d) tt=$(mktemp -d)
export TORCHINDUCTOR_CACHE_DIR=$ti TRITON_CACHE_DIR=$tt
{
  echo "tilec cold: $(TILEC_CACHE_DIR=$tc "$bin/e2e" R=$R C=$C iters=100 | tr '\n' ' ')"
  echo "tilec warm: $(TILEC_CACHE_DIR=$tc "$bin/e2e" R=$R C=$C iters=100 | tr '\n' ' ')"
  echo "tilec fused cold: $(TILEC_CACHE_DIR=$tc.f "$bin/e2e_fused" R=$R C=$C iters=100 | tr '\n' ' ')"
  echo "tilec fused warm: $(TILEC_CACHE_DIR=$tc.f "$bin/e2e_fused" R=$R C=$C iters=100 | tr '\n' ' ')"
  echo "torch cold: $(python3 bench/e2e/torch_e2e.py $R $C 2>/dev/null)"
  echo "torch warm: $(python3 bench/e2e/torch_e2e.py $R $C 2>/dev/null)"
} | tee "$outdir/e2e.log"
rm -rf "$tc" "$tc.f" "$ti" "$tt"
