#!/bin/sh
# demo.sh: what `make demo` shows after the build (run from the repository
# root; BUILD is the build directory): every example checked, its kernels
# compiled with NVRTC for sm_90 (no GPU needed; through the kernel cache), the example graphs written
# out as C and Python wrappers, the C compiled and the Python byte-compiled;
# a warm start from the kernel cache's Redis tier where redis-server is
# installed; where a GPU is present, both wrappers of examples/e2e.tile run
# and print their timings.
set -eu
BUILD=${1:-build}
tilec=$BUILD/bin/tilec
out=$BUILD/demo
rm -rf "$out"
mkdir -p "$out/cubin" "$out/c" "$out/py"
for f in examples/*.tile; do
  printf 'tilec %s --check ... ' "$f"
  "$tilec" "$f" --check
  echo ok
  "$tilec" "$f" --emit cubin --arch sm_90 -o "$out/cubin" # its line: compiled, or from the kernel cache
done
echo "$(ls "$out/cubin" | grep -c '\.cubin$') CUBINs in $out/cubin"
for f in examples/block.tile examples/e2e.tile examples/tp_mlp.tile; do
  "$tilec" "$f" --emit c -o "$out/c"
  "$tilec" "$f" --emit py -o "$out/py"
done
for c in "$out"/c/*.c; do
  ${CC:-cc} -std=c11 -Wall -Wextra -Werror -Iinclude -I"$out/c" -c "$c" -o "${c%.c}.o"
done
python3 -m py_compile "$out"/py/*.py
echo "C wrappers (compiled): $(cd "$out/c" && ls *.c | tr '\n' ' ')"
echo "Python wrappers (byte-compiled): $(cd "$out/py" && ls *.py | tr '\n' ' ')"
echo; echo "== the wrapper IR of examples/e2e.tile for R=4096, C=1024"
"$tilec" examples/e2e.tile --emit ir --sizes R=4096,C=1024 | sed -n '/^graph e2e(/,/^peak/p'
echo
if command -v redis-server >/dev/null 2>&1; then
  echo "== the kernel cache's remote tier (a redis-server on a free loopback port): examples/matmul.tile"
  echo "   built cold (NVRTC, published to Redis), warm from the local directory, then warm from"
  echo "   Redis with an empty directory (docs/runtime.md, \"A fleet in a few commands\")"
  bench/cache/run.sh --bin "$BUILD/bench" --module examples/matmul.tile --rounds 1 --lookups 20 |
    grep -E '^(cold_ms|warm_local_ms|warm_remote_ms|remote_get_us|local_get_us) '
else
  echo "SKIP: no redis-server (apt-get install redis-server): the remote cache tier is not shown"
fi
if nvidia-smi -L >/dev/null 2>&1; then
  echo; echo "== on the GPU: the C wrappers, then the Python ones"
  "$BUILD/bench/e2e" R=4096 C=1024
  "$BUILD/bench/e2e_fused" R=4096 C=1024
  export PYTHONPATH=$PWD/python TILEC_LIB=${TILEC_LIB:-$PWD/$BUILD/lib/libtilec.so}
  (cd "$out/py" && python3 -m e2e R=4096 C=1024 && python3 -m e2e_fused R=4096 C=1024)
else
  echo; echo "SKIP: no GPU here (nvidia-smi found none): the wrappers were built but not run"
fi
