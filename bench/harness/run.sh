#!/bin/sh
# run.sh: what `make bench` runs on the GPU machine, from the repository root:
#   bench/harness/run.sh OUTDIR
# Two runs of the harness in one go (the second, with torch.compile's caches
# warm, shows how far the ratios move between runs), the report
# (OUTDIR/benchmarks.md and .png, copied to docs/performance.md), then the
# runtime's own host-time benchmark (OUTDIR/runtime.md).
# TILEC_LIB, TILEC_BENCH_LIB and TILEC_COMPILE_WORKER point at a bundle's
# copies where the build tree has none.
set -eu
outdir=${1:-bench/results}
mkdir -p "$outdir"
export TILEC_COMPILE_WORKER=${TILEC_COMPILE_WORKER:-$PWD/build/bin/tilec}
export PYTHONUNBUFFERED=1
raw="$outdir/benchmarks.jsonl"
rm -f "$raw"
python3 bench/harness/bench.py --out "$raw" --tag run1 --autotune --host
python3 bench/harness/bench.py --out "$raw" --tag run2
python3 bench/harness/report.py "$outdir/benchmarks.md" "$outdir/benchmarks.png" "$raw" >/dev/null
sed 's#(benchmarks.png)#(../bench/results/benchmarks.png)#' "$outdir/benchmarks.md" > docs/performance.md
bench/runtime/run.sh "$outdir" "${BENCH_BIN:-build/bench}"
