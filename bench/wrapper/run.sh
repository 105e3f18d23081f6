#!/bin/sh
# run.sh: bench/wrapper on the GPU machine, from the repository root:
#   bench/wrapper/run.sh OUTDIR [BIN_DIR] [TILEC]
# The C wrapper of chain8.tile against 8 bare cuLaunchKernel calls
# (bench_wrapper), then the Python wrapper against torch.compile
# (py_bench.py), at N = 65536 (each kernel is a few microseconds: the
# per-call figure is launch and wrapper cost). Lines go to OUTDIR/wrapper.jsonl.
set -eu
outdir=${1:-bench/results}
bin=${2:-build/bench}
tilec=${3:-build/bin/tilec}
mkdir -p "$outdir"
rm -f "$outdir/wrapper.jsonl"
gen=$(mktemp -d)
"$tilec" bench/wrapper/chain8.tile --emit py -o "$gen"
export PYTHONPATH=$PWD/python${PYTHONPATH:+:$PYTHONPATH}
for n in 65536 1048576; do
  "$bin/bench_wrapper" N=$n "$outdir/wrapper.jsonl"
  python3 bench/wrapper/py_bench.py "$gen" $n "$outdir/wrapper.jsonl"
done
rm -rf "$gen"
