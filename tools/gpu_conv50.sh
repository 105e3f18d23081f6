#!/bin/sh
# gpu_conv50.sh: session 50's conv split-K call (bench/results/conv_s50.md), from the repository root
# with the bundle in .gpu: the 14x14 rows and one 56x56 row with the split variants (the default) and
# without (TILEC_SPLIT_K=0, the old behaviour), each in one process, then the GPU suites.
B=$PWD/.gpu
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64 TILEC_LIB=$B/lib/libtilec.so TILEC_BENCH_LIB=$B/lib/libtilec_bench.so
export TILEC_BIN=$B/bin/tilec TILEC_COMPILE_WORKER=$B/bin/tilec TILEC_DISABLE_MULTI_KERNEL_CACHE=1
O=${OUT:-/tmp}
git rev-parse HEAD 2>/dev/null > "$O/commit.txt"; nvidia-smi -L >> "$O/commit.txt" 2>&1
sel="--only rows\ f16\ 3x3\ 14x14 --only rows\ f16\ 1x1\ 14x14 --only rows\ f16\ 3x3\ 56x56\ C64\ K64 --only convform\ conv_gemm\ f16\ 3x3\ 14x14"
run() { # run TAG: one bench process
  eval "timeout ${BT:-50} python3 bench/harness/bench.py --family conv --family convforms --no-compile $sel --tag $1 --out $O/$1.jsonl" > "$O/$1.txt" 2>&1
  echo "rc $?" >> "$O/$1.txt"
}
TILEC_LOGS=tma,multi_kernel run split
TILEC_SPLIT_K=0 TILEC_LOGS=multi_kernel run nosplit
timeout 15 "$B/bin/test_gpu_im2col" --jobs 1 > "$O/test_gpu_im2col.txt" 2>&1; echo "rc $?" >> "$O/test_gpu_im2col.txt"
TILEC_LOGS=tma timeout 70 "$B/bin/test_gpu_splitk" --jobs 1 --verbose > "$O/test_gpu_splitk.txt" 2>&1; echo "rc $?" >> "$O/test_gpu_splitk.txt"
