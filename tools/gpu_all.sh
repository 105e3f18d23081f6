#!/bin/sh
# gpu_all.sh BUNDLE OUT [STEP...]: the whole GPU proof in one device call,
# run from the repository root on the GPU machine. BUNDLE is what
# `make gpu-bundle GPUDIR=BUNDLE` made here (bin/, lib/). Steps, all by
# default, in this order:
#   tests    every GPU suite and the Python GPU tests (tools/gpu_tests.sh)
#   bench    the benchmark harness twice: run1 autotunes and times the host
#            cost, run2 repeats the device rows (the spread between runs);
#            bench1 and bench2 run one of them (one device call is limited
#            to 600 s: run1 takes most of it)
#   runtime  the runtime benchmark (cold and warm starts, launch cost)
#   cache    the kernel cache's benchmark (local and Redis warm starts)
# BENCH_ARGS (e.g. "--family matmul --family conv") narrows both harness
# runs, so run1 can be split over two device calls (its records append to
# one benchmarks.jsonl under one tag). Each step's log and results go under OUT; a failing step does not stop
# the next; the exit status is 1 when any failed.
set -u
[ $# -ge 2 ] || { echo "usage: tools/gpu_all.sh BUNDLE OUT [tests|bench|runtime|cache ...]" >&2; exit 2; }
G=$(cd "$1" && pwd)
OUT=$2
shift 2
steps=${*:-tests bench runtime cache}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$G/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TILEC_LIB="$G/lib/libtilec.so" TILEC_BENCH_LIB="$G/lib/libtilec_bench.so"
export TILEC_CHAIN8_LIB="$G/lib/libtilec_chain8.so" TILEC_COMPILE_WORKER="$G/bin/tilec" TILEC_BIN="$G/bin/tilec"
export PYTHONUNBUFFERED=1
rc=0
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "triton", triton.__version__)'
    date -u
} > "$OUT/machine.txt" 2>&1
for s in $steps; do
    t0=$(date +%s)
    case $s in
    tests) sh tools/gpu_tests.sh "$G/bin" "$G/bin/tilec" > "$OUT/gpu_tests.txt" 2>&1 ;;
    bench) sh "$0" "$G" "$OUT" bench1 bench2 ;;
    bench1) python3 bench/harness/bench.py --out "$OUT/benchmarks.jsonl" --tag run1 --autotune ${BENCH_ARGS:---host} \
               >> "$OUT/bench_run1.log" 2>&1 ;;
    bench2) python3 bench/harness/bench.py --out "$OUT/benchmarks.jsonl" --tag run2 ${BENCH_ARGS:-} \
               >> "$OUT/bench_run2.log" 2>&1 ;;
    runtime) sh bench/runtime/run.sh "$OUT" "$G/bin" > "$OUT/runtime_run.log" 2>&1 ;;
    cache) sh bench/cache/run.sh --gpu --bin "$G/bin" --redis-server "$G/bin/redis-server" \
               --out "$OUT/cache.txt" > "$OUT/cache_run.log" 2>&1 ;;
    *) echo "gpu_all: unknown step $s" >&2; false ;;
    esac
    r=$?
    [ $r -eq 0 ] || rc=1
    echo "gpu_all: $s rc=$r $(($(date +%s) - t0)) s"
done
exit $rc
