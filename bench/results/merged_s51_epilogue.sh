#!/bin/sh
# exp51.sh: the example's epilogue as one reciprocal a row (acc * (1.0 / l_i)[:, None]) against
# acc / l_i[:, None], and fa_d64_plain with a BN = 128 variant (attn51b's remark), same call
G=$PWD/.gpu-final/.gpu
export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64 TILEC_LIB=$G/lib/libtilec.so \
  TILEC_BENCH_LIB=$G/lib/libtilec_bench.so TILEC_BIN=$G/bin/tilec TILEC_COMPILE_WORKER=$G/bin/tilec \
  PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1 TILEC_COMMIT=cad00ec
t0=$(date +%s)
B="python3 bench/harness/bench.py --out $OUT/exp51.jsonl --no-compile"
run() { # run TAG CACHE
  TILEC_CACHE_DIR=$2 $B --tag $1 --family attention --only x1024 --only x4096
  TILEC_CACHE_DIR=$2 $B --tag $1 --family attnforms --only "fa_d64_plain attention d64 16x16x1024" --only "fa_d64_plain attention d64 4x16x4096"
  echo "$1: $(( $(date +%s) - t0 )) s"
}
run s51x-base /tmp/cx1
cp examples/attention.tile /tmp/att.bak; cp tests/attn_forms/fa_d64_plain.tile /tmp/fa.bak
sed -i 's|cast(acc / l_i\[:, None\], f16)|cast(acc * (1.0 / l_i)[:, None], f16)|' examples/attention.tile
sed -i 's|    hints { BM = 128, BN = 64, D = 64, warps = 4 }|    hints { BM = 128, BN = 64, D = 64, warps = 4 }\n    variants { {}, { BN = 128 } }|' tests/attn_forms/fa_d64_plain.tile
grep -c "1.0 / l_i" examples/attention.tile; grep -n variants tests/attn_forms/fa_d64_plain.tile
run s51x-new /tmp/cx2
cp /tmp/att.bak examples/attention.tile; cp /tmp/fa.bak tests/attn_forms/fa_d64_plain.tile
run s51x-base2 /tmp/cx1
