#!/bin/sh
# run.sh: the runtime benchmark on the GPU machine, one command:
#   bench/runtime/run.sh OUTDIR [BIN_DIR]
# writes OUTDIR/runtime.jsonl and OUTDIR/runtime.md.
set -eu
outdir=${1:-bench/results}
bin=${2:-build/bench}
mkdir -p "$outdir"
all=$(mktemp /tmp/tilec_examples_XXXXXX.tile)
cat examples/*.tile > "$all"
"$bin/bench_runtime" "$outdir/runtime.jsonl" "$all" | tee "$outdir/runtime.log"
rm -f "$all"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
python3 bench/runtime/report.py "$outdir/runtime.jsonl" "$outdir/runtime.md" "$device" "$(date -u +%Y-%m-%d)" "$(nproc)"
cat "$outdir/runtime.md"
