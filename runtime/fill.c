/* fill.c: filling device memory with one element's bit pattern, ordered on
 * a stream (tilec_rt_fill_async): the one implementation behind the C
 * wrapper's zeros/ones/full, the launch plan's fill step and tilec.fill in
 * Python. A pattern that repeats every 1, 2 or 4 bytes is one
 * cuMemsetD8/D16/D32Async; an 8-byte pattern whose halves differ (an f64
 * like 0.1, an i64 like 3) is a small fill kernel, PTX loaded into the
 * context on first use. Both are stream work, so a capturing stream
 * records them into its CUDA graph like a kernel launch. */
#include <string.h>

#include "runtime/rt_internal.h"

enum { FILL_THREADS = 256, FILL_MAX_BLOCKS = 4096 };

/* tilec_fill_u64(dst, value, n): dst[i] = value for i < n, a grid-stride loop */
static const char fill_ptx[] = ".version 7.0\n"
                               ".target sm_50\n"
                               ".address_size 64\n"
                               ".visible .entry tilec_fill_u64(.param .u64 dst, .param .u64 val, .param .u64 n)\n"
                               "{\n"
                               "    .reg .pred %p;\n"
                               "    .reg .b32 %r<5>;\n"
                               "    .reg .b64 %rd<8>;\n"
                               "    ld.param.u64 %rd1, [dst];\n"
                               "    ld.param.u64 %rd2, [val];\n"
                               "    ld.param.u64 %rd3, [n];\n"
                               "    mov.u32 %r1, %ctaid.x;\n"
                               "    mov.u32 %r2, %ntid.x;\n"
                               "    mov.u32 %r3, %tid.x;\n"
                               "    mov.u32 %r4, %nctaid.x;\n"
                               "    mul.wide.u32 %rd4, %r1, %r2;\n"
                               "    cvt.u64.u32 %rd5, %r3;\n"
                               "    add.u64 %rd4, %rd4, %rd5;\n"
                               "    mul.wide.u32 %rd6, %r4, %r2;\n"
                               "LOOP:\n"
                               "    setp.ge.u64 %p, %rd4, %rd3;\n"
                               "    @%p bra DONE;\n"
                               "    shl.b64 %rd7, %rd4, 3;\n"
                               "    add.u64 %rd7, %rd1, %rd7;\n"
                               "    st.global.u64 [%rd7], %rd2;\n"
                               "    add.u64 %rd4, %rd4, %rd6;\n"
                               "    bra LOOP;\n"
                               "DONE:\n"
                               "    ret;\n"
                               "}\n";

/* The fill kernel, loaded once per runtime handle. */
static tilec_rt_status fill_kernel(tilec_rt *rt, CUfunction *out)
{
    tilec_rt_status st = TILEC_RT_OK;
    pthread_mutex_lock(&rt->fill_lock);
    if (!rt->fill_fn) {
        CUmodule m = NULL;
        CUresult r = rt->drv.ModuleLoadData(&m, fill_ptx);
        if (r == CUDA_SUCCESS) {
            r = rt->drv.ModuleGetFunction(&rt->fill_fn, m, "tilec_fill_u64");
            if (r != CUDA_SUCCESS)
                rt->drv.ModuleUnload(m);
            else
                rt->fill_mod = m;
        }
        if (r != CUDA_SUCCESS) {
            rt->fill_fn = NULL;
            st = rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "loading the fill kernel");
        }
    }
    *out = rt->fill_fn;
    pthread_mutex_unlock(&rt->fill_lock);
    return st;
}

/* The shortest period of the pattern: es halved while its halves agree,
 * count doubled to match. */
static void fill_narrow(uint64_t *bits, unsigned *es, size_t *count)
{
    while (*es > 1) {
        unsigned half = *es * 4; /* bits in half an element */
        uint64_t lo = *bits & ((1ull << half) - 1), hi = (*bits >> half) & ((1ull << half) - 1);
        if (lo != hi || *count > SIZE_MAX / 2)
            return;
        *bits = lo;
        *es /= 2;
        *count *= 2;
    }
}

static tilec_rt_status fill_launch(tilec_rt *rt, uint64_t dst, uint64_t bits, size_t count, void *stream)
{
    CUfunction f = NULL;
    tilec_rt_status st = fill_kernel(rt, &f);
    if (st != TILEC_RT_OK)
        return st;
    uint64_t n = count, blocks = (n + FILL_THREADS - 1) / FILL_THREADS;
    void *params[] = {&dst, &bits, &n};
    CUresult r = rt->drv.LaunchKernel(f, (unsigned)(blocks < FILL_MAX_BLOCKS ? blocks : FILL_MAX_BLOCKS), 1, 1,
                                      FILL_THREADS, 1, 1, 0, (CUstream)stream, params, NULL);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_LAUNCH_ERROR, r, "the fill kernel (0x%llx, %zu elements of 8 bytes)",
                          (unsigned long long)dst, count);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_fill_async(tilec_rt *rt, uint64_t dst, uint64_t bits, unsigned es, size_t count,
                                    void *stream)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK || count == 0)
        return st;
    if (es != 1 && es != 2 && es != 4 && es != 8)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_fill_async: elements of %u bytes (1, 2, 4 or 8)", es);
    if (dst % es)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_fill_async: 0x%llx is not aligned to its %u-byte elements",
                       (unsigned long long)dst, es);
    if (es < 8)
        bits &= (1ull << (8 * es)) - 1;
    fill_narrow(&bits, &es, &count);
    CUresult r;
    switch (es) {
    case 1: r = rt->drv.MemsetD8Async(dst, (unsigned char)bits, count, (CUstream)stream); break;
    case 2: r = rt->drv.MemsetD16Async(dst, (unsigned short)bits, count, (CUstream)stream); break;
    case 4: r = rt->drv.MemsetD32Async(dst, (unsigned)bits, count, (CUstream)stream); break;
    default: return fill_launch(rt, dst, bits, count, stream);
    }
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuMemsetD%uAsync(0x%llx, 0x%llx, %zu, stream %p)", 8 * es,
                          (unsigned long long)dst, (unsigned long long)bits, count, stream);
    return TILEC_RT_OK;
}
