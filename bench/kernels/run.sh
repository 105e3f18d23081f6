#!/bin/sh
# run.sh: the kernel benchmark, one command on the GPU machine:
#   bench/kernels/run.sh OUTDIR [BIN_DIR]
# times every example kernel (bench_kernels) and the same workloads through
# torch.compile plus a device copy (torch_bench.py), then writes
# OUTDIR/kernels.md and OUTDIR/kernels.png.
set -eu
outdir=${1:-bench/results}
bin=${2:-build/bench}
mkdir -p "$outdir"
"$bin/bench_kernels" "$outdir/kernels_tilec.jsonl"
python3 bench/kernels/torch_bench.py "$outdir/kernels_torch.jsonl"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
python3 bench/kernels/report.py "$outdir/kernels_tilec.jsonl" "$outdir/kernels_torch.jsonl" \
    "$outdir/kernels.md" "$outdir/kernels.png" "$device" "$(date -u +%Y-%m-%d)"
cat "$outdir/kernels.md"
