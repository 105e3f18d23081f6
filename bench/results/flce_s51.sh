#!/bin/sh
# flce_s51.sh: session 51's one H200 call for helper flce51: each side's energy a call, SM clock
# and power in bench.py's own loop (--power: NVML), main's C = 512 row against the branch's 6
# chunks (flce_bf16_n) in one process, torch.compile included; the GPU tests; then the tilec
# sides alone again (C = 512, 1024 and 6 chunks) in the time left.
# Run from main's checkout as `G=$PWD/.gpu-flce51 sh .gpu-flce51/flce_s51.sh`: $G holds the
# bundle (bin/, lib/) and tree/ (the branch's python/, examples/, bench/harness/, tests/python/).
G=${G:-$PWD/.gpu}
T=$G/tree
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64 TILEC_LIB=$G/lib/libtilec.so \
  TILEC_BENCH_LIB=$G/lib/libtilec_bench.so TILEC_BIN=$G/bin/tilec TILEC_COMPILE_WORKER=$G/bin/tilec \
  TILEC_CACHE_DIR=/tmp/tc51f PYTHONPATH=$T/python PYTHONUNBUFFERED=1 TILEC_COMMIT=$(cat $G/commit)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 100 > $OUT/smi.csv 2>&1 &
smi=$!
echo "== bench ($(( $(date +%s) - t0 )) s)"
(cd $T && timeout 62 python3 bench/harness/bench.py --family llm --only C512 --only N6 \
  --compile-only C512 --power --tag s51f --out $OUT/flce_s51.jsonl)
echo "== test_gpu_llm.py FusedLinearCrossEntropy ($(( $(date +%s) - t0 )) s)"
(cd $T && timeout 20 python3 tests/python/test_gpu_llm.py $G/bin/tilec FusedLinearCrossEntropy); echo "rc=$?"
echo "== test_gpu_chunks ($(( $(date +%s) - t0 )) s)"
timeout 10 $G/bin/test_gpu_chunks --jobs 1; echo "rc=$?"
echo "== test_gpu_chunks.py ($(( $(date +%s) - t0 )) s)"
timeout 10 python3 tests/python/test_gpu_chunks.py; echo "rc=$?"
left=$(( 113 - $(date +%s) + t0 ))
echo "== bench again, the tilec sides alone ($(( $(date +%s) - t0 )) s, $left s left)"
[ $left -gt 12 ] && (cd $T && timeout $left python3 bench/harness/bench.py --family llm --only N6 --only C512 --only C1024 \
  --tilec-only --power --tag s51f-b --out $OUT/flce_s51.jsonl)
kill $smi
echo "== done ($(( $(date +%s) - t0 )) s)"
