#!/bin/sh
# gpu_conv51.sh BUNDLE: session 51's conv stream-K call (bench/results/conv_s51.md), from the repository
# root: the 14x14 rows (SK), 1x1 s2 and 3x3 56x56 (walk) and conv_gemm 3x3 14x14 with stream-K by the
# rule (the default) and without (TILEC_TMA_STREAMK=0: main's behaviour), each in one process; then the
# GPU suites (stream-K's own test, im2col, split-K, wgmma's persistent/one-tile twins) at once.
B=$(cd "${1:-.gpu}" && pwd)
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64 TILEC_LIB=$B/lib/libtilec.so TILEC_BENCH_LIB=$B/lib/libtilec_bench.so
export TILEC_BIN=$B/bin/tilec TILEC_COMPILE_WORKER=$B/bin/tilec TILEC_DISABLE_MULTI_KERNEL_CACHE=1
O=${OUT:-/tmp}
nvidia-smi -L > "$O/device.txt" 2>&1; nvidia-smi --query-gpu=driver_version,clocks.max.sm --format=csv >> "$O/device.txt" 2>&1
sel="--only rows\ f16\ 3x3\ 14x14 --only rows\ f16\ 1x1\ 14x14 --only rows\ f16\ 1x1\ s2 --only rows\ f16\ 3x3\ 56x56\ C64\ K64 --only convform\ conv_gemm\ f16\ 3x3\ 14x14"
run() { # run TAG SECONDS: one bench process
  eval "timeout $2 python3 bench/harness/bench.py --family conv --family convforms --no-compile $sel --tag $1 --out $O/$1.jsonl" > "$O/$1.txt" 2>&1
  echo "rc $?" >> "$O/$1.txt"
}
t0=$(date +%s)
TILEC_LOGS=tma,multi_kernel run streamk 46
echo "streamk $(($(date +%s) - t0)) s" >> "$O/device.txt"
TILEC_TMA_STREAMK=0 TILEC_LOGS=tma,multi_kernel run nostreamk 34
echo "bench $(($(date +%s) - t0)) s" >> "$O/device.txt"
t() { # t NAME SECONDS ARGS...: one suite
  n=$1; s=$2; shift 2
  timeout "$s" "$B/bin/$n" --jobs 1 "$@" > "$O/$n.txt" 2>&1; echo "rc $?" >> "$O/$n.txt"
}
TILEC_LOGS=tma t test_gpu_kernels 34 --verbose --filter 'gpu/conv2d_rows_stream_k' &
t test_gpu_im2col 15 &
t test_gpu_splitk 34 &
t test_gpu_wgmma 34 --filter 'wgmma/pairs_and_one_tile_forced' &
wait
echo "all $(($(date +%s) - t0)) s" >> "$O/device.txt"
