/* im2col_rate.cu: does TMA's im2col mode itself bound the conv rows
 * twin's step rate (docs/lowering.md, "What limits the rows twin")?
 *
 * Each block of a grid of one block an SM (132 on the H200) only copies:
 * one thread walks the tiles of the rows twin's 3x3 56x56 C64 N32 layer
 * (784 tiles of 128 output pixels, blockIdx.x, + gridDim.x, ...) and each
 * tile's 9 taps, issuing a step's A box into a ring of `stages` slots of
 * 16 KiB, waiting on a slot's full barrier only before it reuses the slot
 * (the consumers freeing it at once), then waiting for the last copies.
 * Mode 0: the twin's copy, TMA's im2col mode with the runtime's map
 * (runtime/tma.c, encode_im2col of kind 2: 4-D C, W, H, N, corners -1 and
 * (OW - 1) * stride - pad - (W - 1) = -1, a box of 128 pixels x 64
 * channels in the 128-byte swizzle, L2 promotion 256 B) and the twin's
 * coordinates (lower/wgim2col.c: the tile's first pixel's channel 0,
 * column and row at tap (0, 0), the tap (s, r) as the offsets). Mode 1:
 * the same bytes as tiled boxes: the image as a 2-D map of N * H * W
 * rows of C, each step's box the 128 rows from the tile's first pixel
 * shifted by the tap ((r - pad) * W + s - pad rows). Mode 2: tiled boxes
 * of 128 rows, each tile's nine steps the same box (the halo read once
 * in the design that takes the nine taps from shared memory, an upper
 * bound on its copies' rate).
 *
 * Built here (no GPU needed), run on the device:
 *   nvcc -arch=sm_90a -cubin -o build/micro/im2col_rate.cubin bench/micro/im2col_rate.cu
 *   g++ -x c++ -O2 -I/usr/local/cuda/include -o build/micro/im2col_rate bench/micro/im2col_rate.cu \
 *       -L/usr/local/cuda/lib64/stubs -lcuda
 * (the host part the driver API's alone, so any driver runs it)
 *   build/micro/im2col_rate build/micro/im2col_rate.cubin [reps]
 * Prints one line a mode and stage count: the median time of a launch
 * (the L2 flushed before each, as bench/harness/bench.py times) and
 * without the flush, and the boxes a microsecond an SM (the twin's: 7056
 * boxes over 132 SMs in 41.9 us, 0.77 us a step). */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PIX = 128, CH = 64, BOX_BYTES = PIX * CH * 2, TAPS = 9 };

#if defined(__CUDA_ARCH__)
static __device__ __forceinline__ unsigned sa(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

static __device__ __forceinline__ void bar_wait(unsigned b, unsigned ph)
{
    unsigned ok = 0;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(ok)
                     : "r"(b), "r"(ph)
                     : "memory");
    } while (!ok);
}

extern "C" __global__ void __launch_bounds__(32, 1)
    rate(const __grid_constant__ CUtensorMap map, int mode, int stages, int tiles, int OH, int OW, int W, int pad)
{
    extern __shared__ unsigned char smem[];
    if (threadIdx.x)
        return;
    const unsigned ring = (sa(smem) + 1023u) & ~1023u, bars = ring + stages * BOX_BYTES;
    for (int s = 0; s < stages; s++)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bars + 8 * s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    int it = 0;
    for (int t = (int)blockIdx.x; t < tiles; t += (int)gridDim.x) {
        const int p0 = t * PIX, n = p0 / (OH * OW), w = p0 % OW - pad, h = p0 / OW % OH - pad;
        for (int tap = 0; tap < TAPS; tap++, it++) {
            const int slot = it % stages, r = tap / 3, s = tap % 3;
            const unsigned b = bars + 8 * slot, dst = ring + slot * BOX_BYTES;
            if (it >= stages) /* the slot's previous copy landed */
                bar_wait(b, (it / stages - 1) & 1);
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(BOX_BYTES) : "memory");
            if (mode == 0)
                asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%0], "
                             "[%1, {%2, %3, %4, %5}], [%6], {%7, %8};" ::"r"(dst),
                             "l"((unsigned long long)&map), "r"(0), "r"(w), "r"(h), "r"(n), "r"(b),
                             "h"((unsigned short)s), "h"((unsigned short)r)
                             : "memory");
            else
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], "
                             "[%1, {%2, %3}], [%4];" ::"r"(dst),
                             "l"((unsigned long long)&map), "r"(0),
                             "r"(mode == 1 ? p0 + (r - pad) * W + s - pad : p0), "r"(b)
                             : "memory");
        }
    }
    for (int k = it - stages < 0 ? 0 : it - stages; k < it; k++) /* the last copies */
        bar_wait(bars + 8 * (k % stages), (k / stages) & 1);
}
#else

#define CK(x)                                                                                                        \
    do {                                                                                                             \
        CUresult e_ = (x);                                                                                           \
        if (e_ != CUDA_SUCCESS) {                                                                                    \
            const char *s_ = "?";                                                                                    \
            cuGetErrorString(e_, &s_);                                                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);                                          \
            exit(1);                                                                                                 \
        }                                                                                                            \
    } while (0)

static int cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const int N = 32, H = 56, W = 56, C = CH, pad = 1, OH = 56, OW = 56, tiles = N * OH * OW / PIX;
    const int reps = argc > 2 ? atoi(argv[2]) : 20;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE.cubin [reps]\n", argv[0]);
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuModuleLoad(&mod, argv[1]));
    CK(cuModuleGetFunction(&fn, mod, "rate"));
    int sms = 0;
    CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    size_t xb = (size_t)N * H * W * C * 2, fb = (size_t)256 << 20;
    CUdeviceptr x, flush;
    CK(cuMemAlloc(&x, xb));
    CK(cuMemAlloc(&flush, fb));
    CK(cuMemsetD16(x, 0x3c00, xb / 2));
    CUtensorMap maps[2];
    { /* runtime/tma.c's im2col map of kind 2 */
        cuuint64_t dims[4] = {(cuuint64_t)C, (cuuint64_t)W, (cuuint64_t)H, (cuuint64_t)N};
        cuuint64_t str[3] = {(cuuint64_t)C * 2, (cuuint64_t)W * C * 2, (cuuint64_t)H * W * C * 2};
        int lower[2] = {-pad, -pad}, upper[2] = {(OW - 1) - pad - (W - 1), (OH - 1) - pad - (H - 1)};
        cuuint32_t es[4] = {1, 1, 1, 1};
        CK(cuTensorMapEncodeIm2col(&maps[0], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 4, (void *)x, dims, str, lower, upper, CH,
                                   PIX, es, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    }
    { /* the image as N * H * W rows of C: 128 rows a box */
        cuuint64_t dims[2] = {(cuuint64_t)C, (cuuint64_t)N * H * W}, str[1] = {(cuuint64_t)C * 2};
        cuuint32_t box[2] = {CH, PIX}, es[2] = {1, 1};
        CK(cuTensorMapEncodeTiled(&maps[1], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void *)x, dims, str, box, es,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    }
    CUevent e0, e1;
    CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    static const char *const names[3] = {"im2col", "tiled", "tiled-once"};
    static const int st[] = {1, 2, 3, 4, 5, 6, 8, 10, 12};
    double boxes = (double)tiles * TAPS / sms;
    printf("# im2col_rate: 3x3 %dx%d C%d N%d, %d tiles x %d boxes of %d KiB over %d blocks (one an SM), %d reps\n", H, W,
           C, N, tiles, TAPS, BOX_BYTES / 1024, sms, reps);
    printf("# mode stages  us(flushed) us(warm)  boxes/us/SM(flushed)  GB/s/SM(flushed)\n");
    float *t = (float *)malloc(sizeof(float) * (size_t)reps), *u = (float *)malloc(sizeof(float) * (size_t)reps);
    for (int mode = 0; mode < 3; mode++)
        for (unsigned k = 0; k < sizeof st / sizeof st[0]; k++) {
            int stages = st[k];
            unsigned shm = (unsigned)(stages * BOX_BYTES + 8 * stages + 1024);
            CK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shm));
            CUtensorMap *m = &maps[mode ? 1 : 0];
            int a0 = mode, a1 = stages, a2 = tiles, a3 = OH, a4 = OW, a5 = W, a6 = pad;
            void *args[] = {m, &a0, &a1, &a2, &a3, &a4, &a5, &a6};
            for (int rep = -2; rep < 2 * reps; rep++) {
                int flushed = rep < reps;
                if (flushed)
                    CK(cuMemsetD8(flush, (unsigned char)rep, fb));
                CK(cuEventRecord(e0, 0));
                CK(cuLaunchKernel(fn, (unsigned)sms, 1, 1, 32, 1, 1, shm, 0, args, NULL));
                CK(cuEventRecord(e1, 0));
                CK(cuEventSynchronize(e1));
                float ms;
                CK(cuEventElapsedTime(&ms, e0, e1));
                if (rep >= 0)
                    (flushed ? t : u)[flushed ? rep : rep - reps] = ms * 1000.0f;
            }
            qsort(t, (size_t)reps, sizeof *t, cmp);
            qsort(u, (size_t)reps, sizeof *u, cmp);
            float tm = t[reps / 2], um = u[reps / 2];
            printf("%-10s %2d  %8.2f %8.2f  %6.2f  %6.1f\n", names[mode], stages, tm, um, boxes / tm,
                   boxes * BOX_BYTES / tm / 1e3);
        }
    return 0;
}
#endif
