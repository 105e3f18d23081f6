#!/bin/sh
# run.sh: what `make bench` runs on the GPU machine, from the repository root:
#   bench/harness/run.sh OUTDIR
# Two runs of the harness in one go (the second, with torch.compile's caches
# warm, shows how far the ratios move between runs), the report
# (OUTDIR/benchmarks.md and .png, copied to docs/performance.md), then the
# runtime's own host-time benchmark (OUTDIR/runtime.md).
# TILEC_LIB, TILEC_BENCH_LIB and TILEC_COMPILE_WORKER point at a bundle's
# copies where the build tree has none. The runs are written to a file of
# their own and replace OUTDIR/benchmarks.jsonl (tracked: the report's
# records) only once both runs and the report succeeded: a machine without
# torch or a GPU stops before anything is touched, saying why.
set -eu
outdir=${1:-bench/results}
mkdir -p "$outdir"
export TILEC_COMPILE_WORKER=${TILEC_COMPILE_WORKER:-$PWD/build/bin/tilec}
export PYTHONUNBUFFERED=1
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "run.sh: make bench needs python3 with torch and a CUDA GPU; $outdir is left as it was" >&2
    exit 1
fi
raw="$outdir/benchmarks.jsonl"
new="$outdir/benchmarks.jsonl.new"
rm -f "$new"
trap 'rm -f "$new"' EXIT
python3 bench/harness/bench.py --out "$new" --tag run1 --autotune --host
python3 bench/harness/bench.py --out "$new" --tag run2
python3 bench/harness/report.py "$outdir/benchmarks.md" "$outdir/benchmarks.png" "$new" >/dev/null
mv "$new" "$raw"
sed 's#(benchmarks.png)#(../bench/results/benchmarks.png)#' "$outdir/benchmarks.md" > docs/performance.md
bench/runtime/run.sh "$outdir" "${BENCH_BIN:-build/bench}"
