#!/bin/sh
# run.sh: the multi-kernel benchmark on the GPU machine:
#   bench/multikernel/run.sh OUTDIR [BIN_DIR]
set -eu
outdir=${1:-bench/results}
bin=${2:-build/bench}
mkdir -p "$outdir"
"$bin/bench_multikernel" "$outdir/multikernel.jsonl" | tee "$outdir/multikernel.log"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
python3 bench/multikernel/report.py "$outdir/multikernel.jsonl" "$outdir/multikernel.md" "$outdir/multikernel.png" \
    "$device" "$(date -u +%Y-%m-%d)"
cat "$outdir/multikernel.md"
