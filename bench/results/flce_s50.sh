#!/bin/sh
# flce50.sh: session 50's one H200 call for helper flce50 (timeline, bench, tests)
G=${G:-$PWD/.gpu}
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64 TILEC_LIB=$G/lib/libtilec.so \
  TILEC_BENCH_LIB=$G/lib/libtilec_bench.so TILEC_BIN=$G/bin/tilec TILEC_COMPILE_WORKER=$G/bin/tilec \
  TILEC_CACHE_DIR=/tmp/tc50f PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 TILEC_COMMIT=$(cat $G/commit)
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 100 > $OUT/smi.csv 2>&1 &
smi=$!
echo "== timeline ($(( $(date +%s) - t0 )) s)"
timeout 70 python3 $G/flce_timeline.py --out $OUT/flce_s50_tl.jsonl --chunk 512 --chunk 1024 \
  --variant zeros-to-empty --variant cuda-graph --trace $OUT --tag s50f
echo "== bench ($(( $(date +%s) - t0 )) s)"
timeout 45 python3 bench/harness/bench.py --family llm --only C512 --only C1024 --no-compile --tag s50f \
  --out $OUT/flce_s50_bench.jsonl
kill $smi
echo "== test_gpu_chunks ($(( $(date +%s) - t0 )) s)"
timeout 15 $G/bin/test_gpu_chunks --jobs 1; echo "rc=$?"
echo "== test_gpu_chunks.py ($(( $(date +%s) - t0 )) s)"
timeout 15 python3 tests/python/test_gpu_chunks.py; echo "rc=$?"
echo "== done ($(( $(date +%s) - t0 )) s)"
