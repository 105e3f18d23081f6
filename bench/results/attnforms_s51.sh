#!/bin/sh
# attnforms_s51.sh [BUNDLE]: session 51's one device call (helper attn51b), from the repository
# root: BUNDLE (default .gpu) holds this branch's trimmed bundle (bin/, lib/), main's libtilec.so,
# libtilec_bench.so and tilec in BUNDLE/main, and in BUNDLE/g64 the same branch with
# lower/target.c's WGA_TURNS_WALK_N at 64 (the turns' twins walk at 64 keys a step; libtilec.so,
# tilec). The attention GPU tests (test_gpu_layouts, test_gpu_wgmma at once), then the
# docs-written attention and the example's, this branch and main each in its own process and
# cache, then (time allowing) fa_d64_lets at S = 1024 a block a unit and the d64 BM = 128 forms
# on the g64 build. Writes under $OUT (log.txt: everything; *.jsonl: bench.py's records).
G=$PWD/${1:-.gpu}
T0=$(date +%s)
left() { echo $((112 - $(date +%s) + T0)); }
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64 TILEC_NO_NATIVE=1
mine() { TILEC_LIB=$G/lib/libtilec.so TILEC_BENCH_LIB=$G/lib/libtilec_bench.so TILEC_BIN=$G/bin/tilec \
         TILEC_COMPILE_WORKER=$G/bin/tilec TILEC_CACHE_DIR=/tmp/cache_mine "$@"; }
main() { TILEC_LIB=$G/main/lib/libtilec.so TILEC_BENCH_LIB=$G/main/lib/libtilec_bench.so \
         TILEC_BIN=$G/main/tilec TILEC_COMPILE_WORKER=$G/main/tilec TILEC_CACHE_DIR=/tmp/cache_main "$@"; }
g64() { TILEC_LIB=$G/g64/libtilec.so TILEC_BENCH_LIB=$G/lib/libtilec_bench.so TILEC_BIN=$G/g64/tilec \
        TILEC_COMPILE_WORKER=$G/g64/tilec TILEC_CACHE_DIR=/tmp/cache_g64 "$@"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
date -u
echo "== test_gpu_layouts attention + test_gpu_wgmma (at once)"
(mine timeout 50 $G/bin/test_gpu_layouts --jobs 4 --timeout 45 --filter 'layouts/attention*' > $OUT/t_layouts.txt 2>&1; echo "rc $?" >> $OUT/t_layouts.txt) &
(mine timeout 50 $G/bin/test_gpu_wgmma --jobs 4 --timeout 45 > $OUT/t_wgmma.txt 2>&1; echo "rc $?" >> $OUT/t_wgmma.txt) &
wait
tail -3 $OUT/t_layouts.txt; tail -3 $OUT/t_wgmma.txt
echo "elapsed $(( $(date +%s) - T0 ))"
B="python3 bench/harness/bench.py --no-compile --family attnforms --family attention --only x1024 --only x4096"
echo "== this build"
mine timeout $(left) $B --tag attn51b --out $OUT/mine.jsonl; echo "rc $?"
echo "elapsed $(( $(date +%s) - T0 ))"
echo "== main"
main timeout $(left) $B --tag main --out $OUT/main.jsonl; echo "rc $?"
echo "elapsed $(( $(date +%s) - T0 ))"
if [ "$(left)" -gt 8 ]; then
  echo "== this build, fa_d64_lets at 1024 a block a unit (TILEC_TMA_PERSIST=0)"
  TILEC_TMA_PERSIST=0 mine timeout $(left) python3 bench/harness/bench.py --no-compile --family attnforms \
    --only "fa_d64_lets d64 16x16x1024" --tag attn51b-unit --out $OUT/unit.jsonl; echo "rc $?"
fi
if [ "$(left)" -gt 8 ]; then
  echo "== g64 build: fa_d64_plain, fa_d64_exp2 on the persistent twin"
  g64 timeout $(left) python3 bench/harness/bench.py --no-compile --family attnforms --only fa_d64_plain \
    --only fa_d64_exp2 --tag attn51b-g64 --out $OUT/g64.jsonl; echo "rc $?"
fi
echo "elapsed $(( $(date +%s) - T0 ))"
date -u
