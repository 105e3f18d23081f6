#!/bin/sh
# attnforms_s50.sh [BUNDLE]: session 50's one device call (helper attn50b), from the repository
# root with this branch's trimmed bundle in BUNDLE (default .gpu: bin/, lib/) and main's
# libtilec.so, libtilec_bench.so and tilec in BUNDLE/main: the attention tests of
# test_gpu_layouts, then the docs-written d64 attention
# (fa_d64_lets) and the example's attention, each build in its own process and cache.
# Writes under $OUT (log.txt: everything; *.jsonl: bench.py's records).
G=$PWD/${1:-.gpu}
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64 TILEC_NO_NATIVE=1
mine() { TILEC_LIB=$G/lib/libtilec.so TILEC_BENCH_LIB=$G/lib/libtilec_bench.so TILEC_BIN=$G/bin/tilec \
         TILEC_COMPILE_WORKER=$G/bin/tilec TILEC_CACHE_DIR=/tmp/cache_mine "$@"; }
main() { TILEC_LIB=$G/main/lib/libtilec.so TILEC_BENCH_LIB=$G/main/lib/libtilec_bench.so \
         TILEC_BIN=$G/main/tilec TILEC_COMPILE_WORKER=$G/main/tilec TILEC_CACHE_DIR=/tmp/cache_main "$@"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
date -u
echo "== test_gpu_layouts attention"
mine timeout 45 $G/bin/test_gpu_layouts --jobs 4 --timeout 40 --filter 'layouts/attention*'; echo "rc $?"
date -u
B="python3 bench/harness/bench.py --no-compile"
echo "== fa_d64_lets, this build"
mine timeout 25 $B --family attnforms --only fa_d64_lets --tag attn50b --out $OUT/lets_mine.jsonl; echo "rc $?"
echo "== fa_d64_lets, main"
main timeout 25 $B --family attnforms --only fa_d64_lets --tag main --out $OUT/lets_main.jsonl; echo "rc $?"
date -u
echo "== example attention, this build"
mine timeout 22 $B --family attention --only x1024 --only x4096 --tag attn50b --out $OUT/ex_mine.jsonl; echo "rc $?"
echo "== example attention, main"
main timeout 22 $B --family attention --only x1024 --only x4096 --tag main --out $OUT/ex_main.jsonl; echo "rc $?"
date -u
