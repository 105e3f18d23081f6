/* test_gpu_runtime.c: the runtime's first layer on a real GPU: device
 * info, memory, NVRTC compile + load + launch checked against the CPU on
 * fresh random inputs, the shared-memory opt-in, event timing and the
 * error paths. Without a driver or a device it prints one line
 * "SKIP: no GPU (<status>)" and every test is skipped. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tilec/runtime.h"

/* Open device 0 or skip the test; only the test that announces prints
 * the SKIP line, so a machine without a GPU sees it once. */
static tilec_rt *open_or_skip(int announce)
{
    tilec_rt *rt = NULL;
    tilec_rt_status st = tilec_rt_open(0, &rt);
    if (st == TILEC_RT_NO_DRIVER || st == TILEC_RT_NO_DEVICE) {
        if (announce)
            fprintf(stderr, "SKIP: no GPU (%s)\n", tilec_rt_status_string(st));
        char why[1100];
        snprintf(why, sizeof why, "no GPU (%s): %s", tilec_rt_status_string(st), tilec_rt_last_error(rt));
        tilec_rt_close(rt);
        cr_skip_test("%s", why);
    }
    cr_assert_eq(st, TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    return rt;
}

static uint64_t rng;

static uint32_t rnd(void) /* xorshift64* */
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}

static void seed(const char *test)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    rng = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ull;
    cr_log_info("%s: seed %llu", test, (unsigned long long)rng);
}

/* Random floats in ±[0.5, 2), never zero. */
static float rnd_float(void)
{
    float v = 0.5f + 1.5f * (float)(rnd() >> 8) / (float)(1u << 24);
    return rnd() & 1 ? -v : v;
}

static void compile_for(tilec_rt *rt, const char *src, const char *name, void **bin, size_t *size)
{
    tilec_rt_device_props p;
    cr_assert_eq(tilec_rt_device_info(rt, &p), TILEC_RT_OK);
    char *log = NULL;
    tilec_rt_status st = tilec_nvrtc_compile(src, name, p.arch, NULL, 0, bin, size, &log);
    cr_assert_eq(st, TILEC_RT_OK, "%s: %s", tilec_rt_status_string(st), log ? log : "");
    free(log);
}

Test(gpu, device_info)
{
    tilec_rt *rt = open_or_skip(1);
    tilec_rt_device_props p;
    cr_assert_eq(tilec_rt_device_info(rt, &p), TILEC_RT_OK);
    cr_expect(p.name[0]);
    cr_expect_geq(p.sm_major, 7);
    cr_expect_gt(p.multiprocessors, 0);
    cr_expect_gt(p.l2_bytes, 0);
    cr_expect_geq(p.smem_per_block_optin, p.smem_per_block);
    cr_expect_gt(p.total_mem, 0);
    cr_expect_eq(p.warp_size, 32);
    char arch[16];
    /* Hopper's target is the arch-specific sm_90a (wgmma) */
    snprintf(arch, sizeof arch, "sm_%d%d%s", p.sm_major, p.sm_minor, p.sm_major == 9 && p.sm_minor == 0 ? "a" : "");
    cr_expect_str_eq(p.arch, arch);
    int n = 0;
    cr_expect_eq(tilec_rt_device_count(rt, &n), TILEC_RT_OK);
    cr_expect_geq(n, 1);
    printf("gpu: %s, %s, %d SMs, %llu MiB L2, %llu KiB shared memory per block (opt-in), %llu MiB, driver %d.%d\n",
           p.name, p.arch, p.multiprocessors, (unsigned long long)(p.l2_bytes >> 20),
           (unsigned long long)(p.smem_per_block_optin >> 10), (unsigned long long)(p.total_mem >> 20),
           p.driver_version / 1000, p.driver_version % 1000 / 10);
    tilec_rt_close(rt);
}

Test(gpu, memory)
{
    tilec_rt *rt = open_or_skip(0);
    seed("memory");
    enum { N = 1 << 20 };
    uint32_t *host = malloc(N * sizeof *host), *back = malloc(N * sizeof *back);
    cr_assert(host && back);
    uint64_t a = 0, b = 0;
    cr_assert_eq(tilec_rt_malloc(rt, N * sizeof *host, &a), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_assert_eq(tilec_rt_malloc(rt, N * sizeof *host, &b), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    uint32_t pattern = rnd() | 1;
    cr_assert_eq(tilec_rt_memset_d32(rt, a, pattern, N), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, back, a, N * sizeof *back), TILEC_RT_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(back[i], pattern, "word %d after memset", i);
    for (int i = 0; i < N; i++)
        host[i] = rnd();
    cr_assert_eq(tilec_rt_memcpy_htod(rt, a, host, N * sizeof *host), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_dtod(rt, b, a, N * sizeof *host), TILEC_RT_OK);
    memset(back, 0, N * sizeof *back);
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, back, b, N * sizeof *back), TILEC_RT_OK);
    cr_assert(memcmp(host, back, N * sizeof *host) == 0, "device round trip differs");

    void *s = NULL;
    cr_assert_eq(tilec_rt_stream_create(rt, TILEC_RT_STREAM_NON_BLOCKING, &s), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memset_d32_async(rt, b, ~pattern, N / 2, s), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_dtod_async(rt, a, b, N * sizeof *host, s), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_dtoh_async(rt, back, a, N * sizeof *back, s), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_stream_synchronize(rt, s), TILEC_RT_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(back[i], i < N / 2 ? ~pattern : host[i], "word %d after the async copies", i);
    cr_expect_eq(tilec_rt_stream_destroy(rt, s), TILEC_RT_OK);

    uint64_t huge = 0;
    cr_expect_eq(tilec_rt_malloc(rt, (size_t)1 << 50, &huge), TILEC_RT_DEVICE_NOMEM);
    cr_expect(strstr(tilec_rt_last_error(rt), "cuMemAlloc(1125899906842624 bytes): CUDA_ERROR_OUT_OF_MEMORY"), "%s",
              tilec_rt_last_error(rt));
    cr_expect_eq(tilec_rt_free(rt, a), TILEC_RT_OK);
    cr_expect_eq(tilec_rt_free(rt, b), TILEC_RT_OK);
    free(host);
    free(back);
    tilec_rt_close(rt);
}

static const char scale2_src[] = "extern \"C\" __global__ void scale2(const float *x, float *y, int n) {\n"
                                 "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                                 "    if (i < n) y[i] = 2.0f * x[i];\n"
                                 "}\n";

static const tilec_rt_param_kind scale2_kinds[] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_POINTER,
                                                   TILEC_RT_PARAM_I32};

Test(gpu, compile_load_launch_scale2, .timeout = 120)
{
    tilec_rt *rt = open_or_skip(0);
    seed("scale2");
    void *bin = NULL;
    size_t size = 0;
    compile_for(rt, scale2_src, "scale2.cu", &bin, &size);
    tilec_rt_module *m = NULL;
    cr_assert_eq(tilec_rt_module_load(rt, bin, size, &m), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    free(bin);
    tilec_rt_launch_meta meta = {.block_x = 256, .nparams = 3, .kinds = scale2_kinds};
    tilec_rt_kernel *k = NULL;
    cr_assert_eq(tilec_rt_kernel_get(m, "scale2", &meta, &k), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));

    /* an odd size, so the last block is partial and the guard matters */
    int n = (int)(1000003 + rnd() % 1000);
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    cr_assert(x && y);
    for (int i = 0; i < n; i++)
        x[i] = rnd_float();
    uint64_t dx = 0, dy = 0;
    cr_assert_eq(tilec_rt_malloc(rt, (size_t)n * sizeof *x, &dx), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, (size_t)n * sizeof *y + 4, &dy), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_htod(rt, dx, x, (size_t)n * sizeof *x), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memset_d32(rt, dy, 0x7FC00001u, (size_t)n + 1), TILEC_RT_OK); /* a NaN: unwritten shows */

    void *s = NULL, *e0 = NULL, *e1 = NULL;
    cr_assert_eq(tilec_rt_stream_create(rt, 0, &s), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_event_create(rt, &e0), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_event_create(rt, &e1), TILEC_RT_OK);
    tilec_rt_arg args[3] = {{.ptr = dx}, {.ptr = dy}, {.i32 = n}};
    uint32_t grid[3] = {(uint32_t)(n + 255) / 256, 1, 1};
    cr_assert_eq(tilec_rt_launch(k, grid, args, s), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    enum { REPS = 50 };
    cr_assert_eq(tilec_rt_event_record(rt, e0, s), TILEC_RT_OK);
    for (int r = 0; r < REPS; r++)
        cr_assert_eq(tilec_rt_launch(k, grid, args, s), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_assert_eq(tilec_rt_event_record(rt, e1, s), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_event_synchronize(rt, e1), TILEC_RT_OK);
    float ms = 0;
    cr_assert_eq(tilec_rt_event_elapsed_ms(rt, e0, e1, &ms), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_expect_gt(ms, 0.0f);
    cr_assert_eq(tilec_rt_stream_synchronize(rt, s), TILEC_RT_OK);

    float *yy = malloc(((size_t)n + 1) * sizeof *yy);
    cr_assert_not_null(yy);
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, yy, dy, ((size_t)n + 1) * sizeof *yy), TILEC_RT_OK);
    for (int i = 0; i < n; i++)
        cr_assert_eq(yy[i], 2.0f * x[i], "y[%d] = %g, want %g", i, (double)yy[i], 2.0 * (double)x[i]);
    uint32_t past;
    memcpy(&past, &yy[n], 4);
    cr_expect_eq(past, 0x7FC00001u, "the kernel wrote past n");
    double bytes = 8.0 * n;
    printf("gpu: scale2 n=%d: %.2f us per launch (%.0f GB/s), %d launches timed with events\n", n,
           1000.0 * (double)ms / REPS, bytes * REPS / ((double)ms * 1e6), REPS);

    cr_expect_eq(tilec_rt_event_destroy(rt, e0), TILEC_RT_OK);
    cr_expect_eq(tilec_rt_event_destroy(rt, e1), TILEC_RT_OK);
    cr_expect_eq(tilec_rt_stream_destroy(rt, s), TILEC_RT_OK);
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dy);
    tilec_rt_module_unload(m);
    free(x);
    free(y);
    free(yy);
    tilec_rt_close(rt);
}

/* Past 48 KiB of dynamic shared memory a kernel must opt in: kernel_get
 * does it, and the launch succeeds and computes. */
Test(gpu, dynamic_shared_memory_opt_in, .timeout = 120)
{
    tilec_rt *rt = open_or_skip(0);
    seed("smem");
    const char src[] = "extern \"C\" __global__ void reverse(const float *x, float *y, int n) {\n"
                       "    extern __shared__ float buf[];\n"
                       "    const float *xb = x + (size_t)blockIdx.x * n;\n"
                       "    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = xb[i];\n"
                       "    __syncthreads();\n"
                       "    for (int i = threadIdx.x; i < n; i += blockDim.x) y[(size_t)blockIdx.x * n + i] = buf[n - 1 - i];\n"
                       "}\n";
    void *bin = NULL;
    size_t size = 0;
    compile_for(rt, src, "reverse.cu", &bin, &size);
    tilec_rt_module *m = NULL;
    cr_assert_eq(tilec_rt_module_load(rt, bin, size, &m), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    free(bin);
    enum { PER_BLOCK = 25600, BLOCKS = 264 }; /* 100 KiB of floats per block */
    tilec_rt_launch_meta meta = {.block_x = 512, .dyn_smem_bytes = PER_BLOCK * 4, .nparams = 3, .kinds = scale2_kinds};
    tilec_rt_kernel *k = NULL;
    cr_assert_eq(tilec_rt_kernel_get(m, "reverse", &meta, &k), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    size_t total = (size_t)PER_BLOCK * BLOCKS;
    float *x = malloc(total * sizeof *x), *y = malloc(total * sizeof *y);
    cr_assert(x && y);
    for (size_t i = 0; i < total; i++)
        x[i] = rnd_float();
    uint64_t dx = 0, dy = 0;
    cr_assert_eq(tilec_rt_malloc(rt, total * 4, &dx), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, total * 4, &dy), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_htod(rt, dx, x, total * 4), TILEC_RT_OK);
    tilec_rt_arg args[3] = {{.ptr = dx}, {.ptr = dy}, {.i32 = PER_BLOCK}};
    uint32_t grid[3] = {BLOCKS, 1, 1};
    cr_assert_eq(tilec_rt_launch(k, grid, args, NULL), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_assert_eq(tilec_rt_synchronize(rt), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, y, dy, total * 4), TILEC_RT_OK);
    for (size_t b = 0; b < BLOCKS; b++)
        for (size_t i = 0; i < PER_BLOCK; i++)
            cr_assert_eq(y[b * PER_BLOCK + i], x[b * PER_BLOCK + PER_BLOCK - 1 - i], "block %zu element %zu", b, i);

    /* more than the device allows is refused before any launch */
    tilec_rt_device_props p;
    cr_assert_eq(tilec_rt_device_info(rt, &p), TILEC_RT_OK);
    meta.dyn_smem_bytes = (uint32_t)p.smem_per_block_optin + 4;
    cr_expect_eq(tilec_rt_kernel_get(m, "reverse", &meta, &k), TILEC_RT_INVALID_ARG);
    cr_expect(strstr(tilec_rt_last_error(rt), "of dynamic shared memory; device 0"), "%s", tilec_rt_last_error(rt));
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dy);
    tilec_rt_module_unload(m);
    free(x);
    free(y);
    tilec_rt_close(rt);
}

Test(gpu, errors, .timeout = 120)
{
    tilec_rt *rt = open_or_skip(0);
    const char src[] = "extern \"C\" __global__ void __launch_bounds__(128) small(float *x, long long n) {\n"
                       "    if (threadIdx.x < n) x[threadIdx.x] = 1.0f;\n"
                       "}\n";
    void *bin = NULL;
    size_t size = 0;
    compile_for(rt, src, "small.cu", &bin, &size);
    tilec_rt_module *m = NULL;
    cr_expect_eq(tilec_rt_module_load(rt, bin, size / 2, &m), TILEC_RT_MODULE_ERROR, "a truncated cubin loaded");
    cr_assert_eq(tilec_rt_module_load(rt, bin, size, &m), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    free(bin);

    tilec_rt_param_kind kinds[] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_I64};
    tilec_rt_launch_meta meta = {.block_x = 128, .nparams = 2, .kinds = kinds};
    tilec_rt_kernel *k = NULL;
    cr_expect_eq(tilec_rt_kernel_get(m, "missing", &meta, &k), TILEC_RT_NOT_FOUND);
    cr_expect(strstr(tilec_rt_last_error(rt), "kernel 'missing' not found in the module"), "%s",
              tilec_rt_last_error(rt));
    meta.block_x = 256;
    cr_expect_eq(tilec_rt_kernel_get(m, "small", &meta, &k), TILEC_RT_INVALID_ARG);
    cr_expect(strstr(tilec_rt_last_error(rt), "kernel 'small' runs at most 128 threads per block"), "%s",
              tilec_rt_last_error(rt));
    meta.block_x = 128;
    tilec_rt_device_props p;
    cr_assert_eq(tilec_rt_device_info(rt, &p), TILEC_RT_OK);
    if (p.driver_version >= 12040) {
        kinds[1] = TILEC_RT_PARAM_I32;
        cr_expect_eq(tilec_rt_kernel_get(m, "small", &meta, &k), TILEC_RT_INVALID_ARG);
        cr_expect_str_eq(tilec_rt_last_error(rt),
                         "kernel 'small' parameter 1 is 8 bytes, but its launch metadata says i32 (4 bytes)");
        kinds[1] = TILEC_RT_PARAM_I64;
    }
    cr_assert_eq(tilec_rt_kernel_get(m, "small", &meta, &k), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    uint32_t zero[3] = {0, 1, 1};
    tilec_rt_arg args[2] = {{.ptr = 0}, {.i64 = 0}};
    cr_expect_eq(tilec_rt_launch(k, zero, args, NULL), TILEC_RT_LAUNCH_ERROR);
    cr_expect(strstr(tilec_rt_last_error(rt), "cuLaunchKernel(kernel 'small', grid 0x1x1, block 128"), "%s",
              tilec_rt_last_error(rt));
    cr_expect(strstr(tilec_rt_last_error(rt), "CUDA_ERROR_INVALID_VALUE"), "%s", tilec_rt_last_error(rt));
    tilec_rt_module_unload(m);

    /* a cubin for another architecture is the driver's to refuse */
    const char *other = p.sm_major == 8 ? "sm_90" : "sm_80";
    char *log = NULL;
    cr_assert_eq(tilec_nvrtc_compile(src, "small.cu", other, NULL, 0, &bin, &size, &log), TILEC_RT_OK, "%s", log);
    free(log);
    cr_expect_eq(tilec_rt_module_load(rt, bin, size, &m), TILEC_RT_MODULE_ERROR, "a %s cubin loaded on %s", other,
                 p.arch);
    cr_expect(strstr(tilec_rt_last_error(rt), "cuModuleLoadData(image of"), "%s", tilec_rt_last_error(rt));
    free(bin);
    tilec_rt_close(rt);
}
