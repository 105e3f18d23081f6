#!/bin/sh
# gpu_tests.sh [BIN_DIR] [TILEC]: every GPU test suite and the Python GPU
# tests, one command on the GPU machine, from the repository root. With a
# bundle (../shared/tools/gpu-bundle, `make gpu-bundle`) point BIN_DIR at its
# bin/ and export LD_LIBRARY_PATH and TILEC_LIB to its lib/. Without a GPU
# each suite skips with one line. Exits non-zero when any suite fails.
bin=${1:-build/tests}
export TILEC_BIN=${2:-build/bin/tilec}
export TILEC_COMPILE_WORKER=${TILEC_COMPILE_WORKER:-$TILEC_BIN}
rc=0
for t in test_gpu_kernels test_gpu_layouts test_gpu_runtime test_gpu_wrapper test_gpu_externs test_gpu_faults test_gpu_wgmma test_gpu_splitk test_gpu_aot test_gpu_chunks; do
  echo "== $t"
  "$bin/$t" --jobs 1 || { echo "FAILED: $t"; rc=1; }
done
# test_gpu_nccl.py: one "skip:" line below 2 GPUs; on 2 or more, every rank spawned (worlds 2 and 4)
for p in tests/python/test_gpu.py tests/python/test_gpu_wrappers.py tests/python/test_gpu_interop.py tests/python/test_gpu_nccl.py tests/python/test_gpu_chunks.py tests/python/test_gpu_lists.py tests/python/test_gpu_llm.py; do
  echo "== $p"
  python3 "$p" || { echo "FAILED: $p"; rc=1; }
done
echo "gpu_tests: rc=$rc"
exit $rc
