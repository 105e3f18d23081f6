#!/bin/sh
# gpu_tests.sh [BIN_DIR] [TILEC]: every GPU test suite and the Python GPU
# tests, one command on the GPU machine, from the repository root. With a
# bundle (../shared/tools/gpu-bundle, `make gpu-bundle`) point BIN_DIR at its
# bin/ and export LD_LIBRARY_PATH and TILEC_LIB to its lib/. Without a GPU
# each suite skips with one line. Exits non-zero when any suite fails.
# GPU_TEST_STREAMS=4 (any value above 1) runs the suites as four groups at
# once on the one GPU
# (each group in order; the output is printed group by group when all are
# done): the whole proof in about a third of the time. The tests check
# results, not times, so sharing the GPU changes no verdict.
bin=${1:-build/tests}
export TILEC_BIN=${2:-build/bin/tilec}
export TILEC_COMPILE_WORKER=${TILEC_COMPILE_WORKER:-$TILEC_BIN}
suite() { # suite NAME: one C suite or Python test file, its verdict last
  echo "== $1"
  case $1 in
  *.py) python3 "$1" ;;
  *) "$bin/$1" --jobs 1 ;;
  esac || { echo "FAILED: $1"; return 1; }
}
group() { # group SUITE...: every suite in order, failing when any did
  g=0
  for s in "$@"; do suite "$s" || g=1; done
  return $g
}
# test_gpu_nccl.py: one "skip:" line below 2 GPUs; on 2 or more, every rank spawned (worlds 2 and 4)
P=tests/python
G1="test_gpu_kernels"
G2="test_gpu_wgmma test_gpu_splitk test_gpu_aot test_gpu_im2col"
G3="test_gpu_layouts test_gpu_runtime test_gpu_wrapper test_gpu_externs test_gpu_faults test_gpu_chunks"
G4="$P/test_gpu.py $P/test_gpu_wrappers.py $P/test_gpu_interop.py $P/test_gpu_nccl.py $P/test_gpu_chunks.py $P/test_gpu_lists.py $P/test_gpu_llm.py"
rc=0
if [ "${GPU_TEST_STREAMS:-1}" -gt 1 ]; then
  tmp=$(mktemp -d)
  i=0
  for g in "$G1" "$G2" "$G3" "$G4"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    (group $g > "$tmp/$i.log" 2>&1; echo $? > "$tmp/$i.rc") &
  done
  wait
  for i in 1 2 3 4; do
    cat "$tmp/$i.log"
    [ "$(cat "$tmp/$i.rc")" = 0 ] || rc=1
  done
  rm -rf "$tmp"
else
  # shellcheck disable=SC2086
  group $G1 $G2 $G3 $G4 || rc=1
fi
echo "gpu_tests: rc=$rc"
exit $rc
