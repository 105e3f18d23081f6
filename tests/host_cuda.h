/* host_cuda.h: just enough of CUDA for the host C++ compiler to build the
 * CUDA C that tilec generates, so that tests/test_numerics.c can compute
 * with it on a machine without a GPU. A launch (tl_host_launch) runs the
 * blocks one after another and the threads of a block as host threads:
 * __syncthreads is a barrier of the block, a shuffle a barrier of the warp
 * around a slot per lane, shared memory one array (blocks never overlap).
 * The half-precision conversions are CUDA's own (cuda_fp16.h, cuda_bf16.h
 * have host versions). */
#include <stdint.h>
#include <string.h>

#include <cmath> /* expf, logf, sqrtf ... that the CUDA C calls */
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <vector_types.h> /* uint4, float4, ... of vector loads and stores */
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__
struct tl_host_dim3 {
    unsigned x, y, z;
};
static thread_local tl_host_dim3 threadIdx, blockIdx;
static tl_host_dim3 blockDim, gridDim;
alignas(16) unsigned char tl_smem[1 << 18];
static inline unsigned long __cvta_generic_to_shared(const void *p) { return (unsigned long)(uintptr_t)p; }

/* A reusable barrier of n threads. */
struct tl_host_barrier {
    std::mutex m;
    std::condition_variable cv;
    unsigned n = 0, count = 0, gen = 0;
    void wait()
    {
        std::unique_lock<std::mutex> lk(m);
        unsigned g = gen;
        if (++count == n) {
            count = 0;
            gen++;
            cv.notify_all();
            return;
        }
        cv.wait(lk, [&] { return gen != g; });
    }
};
static tl_host_barrier tl_host_block, tl_host_warp[32];
static uint64_t tl_host_lane_slot[1024];

static inline float __int_as_float(int i)
{
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}
static inline double __longlong_as_double(long long i)
{
    double d;
    memcpy(&d, &i, sizeof d);
    return d;
}

static inline void __syncthreads(void) { tl_host_block.wait(); }

/* atomicAdd: the old value, the add done under one lock of the launch */
static std::mutex tl_host_atomic;
template <class T> static inline T atomicAdd(T *p, T v)
{
    std::lock_guard<std::mutex> g(tl_host_atomic);
    T old = *p;
    *p = old + v;
    return old;
}

/* Every lane of the warp writes its value, then reads lane src's. */
template <class T> static inline T tl_host_shfl(T v, unsigned src)
{
    static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
    unsigned t = threadIdx.x, w = t / 32;
    memcpy(&tl_host_lane_slot[t], &v, sizeof v);
    tl_host_warp[w].wait();
    T r;
    memcpy(&r, &tl_host_lane_slot[w * 32 + (src & 31)], sizeof r);
    tl_host_warp[w].wait();
    return r;
}
template <class T> static inline T __shfl_xor_sync(unsigned, T v, int o) { return tl_host_shfl(v, (threadIdx.x & 31) ^ (unsigned)o); }
template <class T> static inline T __shfl_sync(unsigned, T v, int src) { return tl_host_shfl(v, (unsigned)src); }

/* The kernel f(args) on blocks x threads. */
static inline void tl_host_launch(unsigned blocks, unsigned threads, const std::function<void(void)> &f)
{
    blockDim = {threads, 1, 1};
    gridDim = {blocks, 1, 1};
    tl_host_block.n = threads;
    for (unsigned w = 0; w < 32; w++)
        tl_host_warp[w].n = threads > w * 32 ? (threads - w * 32 < 32 ? threads - w * 32 : 32) : 0;
    for (unsigned b = 0; b < blocks; b++) {
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < threads; t++)
            ts.emplace_back([&, b, t] {
                blockIdx = {b, 0, 0};
                threadIdx = {t, 0, 0};
                f();
            });
        for (auto &th : ts)
            th.join();
    }
}
