#!/bin/sh
# run_all.sh: every benchmark, one command on the GPU machine, from the
# repository root (what `make bench` runs):
#   bench/run_all.sh OUTDIR [BIN_DIR] [TILEC]
# bench/kernels, bench/runtime, bench/multikernel, bench/wrapper and the
# end-to-end case, each writing its results under OUTDIR, then
# OUTDIR/performance.md: one table of every workload (bench/performance.py).
set -eu
outdir=${1:-bench/results}
bin=${2:-build/bench}
tilec=${3:-build/bin/tilec}
mkdir -p "$outdir"
export TILEC_COMPILE_WORKER=${TILEC_COMPILE_WORKER:-$PWD/$tilec}
for b in kernels runtime multikernel; do
  echo "== bench/$b"
  "bench/$b/run.sh" "$outdir" "$bin" > "$outdir/$b.out" 2>&1 || { cat "$outdir/$b.out"; exit 1; }
done
echo "== bench/wrapper"
bench/wrapper/run.sh "$outdir" "$bin" "$tilec"
echo "== bench/e2e"
bench/e2e/run.sh "$outdir" "$bin"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
python3 bench/performance.py "$outdir" "$outdir/performance.md" "$device" "$(date -u +%Y-%m-%d)"
