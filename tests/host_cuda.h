/* host_cuda.h: just enough of CUDA for the host C++ compiler to build the
 * CUDA C that tilec generates for an elementwise kernel, so that
 * tests/test_numerics.c can compute with it on a machine without a GPU:
 * the kernel is called once per (block, thread), one after another, which
 * is right only for kernels whose threads never meet (no barrier, shuffle
 * or shared memory; the test checks). The half-precision conversions are
 * CUDA's own (cuda_fp16.h, cuda_bf16.h have host versions). */
#include <stdint.h>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__
struct tl_host_dim3 {
    unsigned x, y, z;
};
static tl_host_dim3 threadIdx, blockIdx, blockDim, gridDim;
unsigned char tl_smem[16];
static inline unsigned long __cvta_generic_to_shared(const void *p) { return (unsigned long)(uintptr_t)p; }
