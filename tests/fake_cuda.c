/* fake_cuda.c: a fake CUDA driver for the CPU tests of the runtime: the
 * entry points tilec uses, behind cuGetProcAddress_v2, with "device"
 * memory in host memory and a few kernels run on the host. Test code:
 * process-wide state is fine here. See fake_cuda.h. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_cuda.h"

static fake_cuda_state state = {.dyn_smem_attr = -1, .min_version_asked = 1 << 30};

fake_cuda_state *fake_cuda_state_get(void) { return &state; }

static int mode(const char *m)
{
    const char *v = getenv("FAKE_CUDA_MODE");
    return v && strcmp(v, m) == 0;
}

static int ctx_object;
static CUcontext current;

void fake_cuda_clear_current(void) { current = NULL; }

/* ---- errors ---- */

static const struct {
    CUresult r;
    const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NO_BINARY_FOR_GPU, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
};

static CUresult fake_GetErrorName(CUresult r, const char **s)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].r == r) {
            *s = errors[i].name;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult fake_GetErrorString(CUresult r, const char **s)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].r == r) {
            *s = errors[i].text;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---- driver, device, context ---- */

/* FAKE_CUDA_DRIVER_VERSION and FAKE_CUDA_DEVICE_NAME (read when asked):
 * another machine's driver or device model, for the multi-kernel's stored
 * choices */
static CUresult fake_DriverGetVersion(int *v)
{
    const char *e = getenv("FAKE_CUDA_DRIVER_VERSION");
    *v = e && *e ? atoi(e) : 12080;
    return CUDA_SUCCESS;
}

static CUresult fake_Init(unsigned flags)
{
    state.inits++;
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (mode("nodevice"))
        return CUDA_ERROR_NO_DEVICE;
    if (mode("initfail"))
        return CUDA_ERROR_UNKNOWN;
    return CUDA_SUCCESS;
}

static CUresult fake_DeviceGetCount(int *n)
{
    *n = mode("zero") ? 0 : 1;
    return CUDA_SUCCESS;
}

static CUresult fake_DeviceGet(CUdevice *d, int ordinal)
{
    if (ordinal != 0)
        return CUDA_ERROR_INVALID_VALUE;
    *d = 0;
    return CUDA_SUCCESS;
}

static CUresult fake_DeviceGetName(char *name, int len, CUdevice d)
{
    (void)d;
    const char *e = getenv("FAKE_CUDA_DEVICE_NAME");
    strncpy(name, e && *e ? e : "Fake CUDA Device", (size_t)len);
    return CUDA_SUCCESS;
}

static CUresult fake_DeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = FAKE_CUDA_L2; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 << 10; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = FAKE_CUDA_OPTIN_SMEM; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult fake_DeviceTotalMem(size_t *bytes, CUdevice d)
{
    (void)d;
    *bytes = (size_t)80 << 30;
    return CUDA_SUCCESS;
}

static CUresult fake_DevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    (void)d;
    if (state.lost) /* as the real driver: a fault is sticky for the process */
        return CUDA_ERROR_LAUNCH_FAILED;
    state.ctx_refs++;
    *c = (CUcontext)(void *)&ctx_object;
    return CUDA_SUCCESS;
}

static CUresult fake_DevicePrimaryCtxRelease(CUdevice d)
{
    (void)d;
    if (state.ctx_refs <= 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    state.ctx_refs--;
    return CUDA_SUCCESS;
}

static CUresult fake_CtxSetCurrent(CUcontext c)
{
    current = c;
    return CUDA_SUCCESS;
}

static CUresult fake_CtxGetCurrent(CUcontext *c)
{
    *c = current;
    return CUDA_SUCCESS;
}

static void nccl_flush(void *stream, unsigned long long upto);

static CUresult fake_CtxSynchronize(void)
{
    nccl_flush(NULL, ~0ULL);
    if (state.lost)
        return CUDA_ERROR_LAUNCH_FAILED;
    return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* ---- memory: host memory with the address as the device pointer ---- */

/* the live allocations, for cuMemGetAddressRange */
enum { MAX_ALLOCS = 256 };
static struct {
    CUdeviceptr base;
    size_t size;
} allocs[MAX_ALLOCS];

static CUstream capturing;

static CUresult fake_MemAlloc(CUdeviceptr *p, size_t n)
{
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (n > ((size_t)1 << 40))
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (state.fail_allocs > 0) {
        state.fail_allocs--;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (state.fail_allocs_over && n > state.fail_allocs_over)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (capturing)
        state.allocs_in_capture++;
    void *m = malloc(n);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (n < FAKE_CUDA_L2) /* (a flush buffer is never read) */
        memset(m, 0xAB, n); /* not zero: a missing fill shows */
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (!allocs[i].base) {
            allocs[i].base = (CUdeviceptr)(uintptr_t)m;
            allocs[i].size = n;
            break;
        }
    state.live_allocs++;
    *p = (CUdeviceptr)(uintptr_t)m;
    return CUDA_SUCCESS;
}

static CUresult fake_MemGetAddressRange(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].base && p >= allocs[i].base && p < allocs[i].base + allocs[i].size) {
            if (base)
                *base = allocs[i].base;
            if (size)
                *size = allocs[i].size;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

static CUresult fake_MemFree(CUdeviceptr p)
{
    for (int i = 0; i < MAX_ALLOCS; i++)
        if (allocs[i].base == p) {
            allocs[i].base = 0;
            break;
        }
    free((void *)(uintptr_t)p);
    state.live_allocs--;
    return CUDA_SUCCESS;
}

static CUresult fake_MemcpyHtoD(CUdeviceptr d, const void *s, size_t n)
{
    memcpy((void *)(uintptr_t)d, s, n);
    return CUDA_SUCCESS;
}

static CUresult fake_MemcpyDtoH(void *d, CUdeviceptr s, size_t n)
{
    nccl_flush(NULL, ~0ULL); /* synchronous: after all work */
    if (state.lost)
        return CUDA_ERROR_LAUNCH_FAILED;
    memcpy(d, (const void *)(uintptr_t)s, n);
    return CUDA_SUCCESS;
}

static CUresult fake_MemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n)
{
    memmove((void *)(uintptr_t)d, (const void *)(uintptr_t)s, n);
    return CUDA_SUCCESS;
}

static CUresult fake_MemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
    (void)st;
    return fake_MemcpyHtoD(d, s, n);
}

static CUresult fake_MemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st)
{
    (void)st;
    return fake_MemcpyDtoH(d, s, n);
}

static CUresult fake_MemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    (void)st;
    return fake_MemcpyDtoD(d, s, n);
}

static CUresult fake_MemsetD32(CUdeviceptr d, unsigned v, size_t n)
{
    uint32_t *w = (uint32_t *)(uintptr_t)d;
    for (size_t i = 0; i < n; i++)
        w[i] = v;
    return CUDA_SUCCESS;
}

/* a memset of n elements of width bytes (1, 2 or 4), as the fill calls make */
static CUresult fake_memset(CUdeviceptr d, unsigned v, size_t n, unsigned width)
{
    if (d % width)
        return CUDA_ERROR_INVALID_VALUE;
    state.memsets++;
    if ((unsigned long long)n * width >= FAKE_CUDA_L2) {
        /* the multi-kernel chooser's L2 flush (twice the L2, before each
         * timed launch): counted, not written, so that the suites that
         * time shapes on this host do not write gigabytes */
        state.l2_cleared = 1;
        return CUDA_SUCCESS;
    }
    for (size_t i = 0; i < n; i++)
        memcpy((unsigned char *)(uintptr_t)d + i * width, &v, width); /* little-endian: the low bytes */
    return CUDA_SUCCESS;
}

static CUresult record_memset(CUdeviceptr d, unsigned v, size_t n, unsigned width);

static CUresult fake_MemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream st)
{
    if (capturing && st == capturing)
        return record_memset(d, v, n, 4);
    return fake_memset(d, v, n, 4);
}

static CUresult fake_MemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream st)
{
    if (capturing && st == capturing)
        return record_memset(d, v, n, 2);
    return fake_memset(d, v, n, 2);
}

static CUresult fake_MemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st)
{
    if (capturing && st == capturing)
        return record_memset(d, v, n, 1);
    return fake_memset(d, v, n, 1);
}

/* ---- streams and events ---- */

/* The fake NCCL (tests/fake_nccl.c, loaded by the runtime from TILEC_NCCL)
 * may defer the collectives enqueued on a stream of our own
 * (FAKE_NCCL_DEFER): they run when another stream waits on an event
 * recorded after them, or at a synchronization, as on a GPU. These find
 * its hooks in the copy the runtime loaded (RTLD_NOLOAD); without one,
 * nothing is deferred and they do nothing. */
static void *nccl_hook(const char *name)
{
    const char *path = getenv("TILEC_NCCL");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *f = h ? dlsym(h, name) : NULL;
    if (h)
        dlclose(h); /* NOLOAD took a reference: the runtime's stays */
    return f;
}

static unsigned long long nccl_seq(void)
{
    unsigned long long (*f)(void) = (unsigned long long (*)(void))nccl_hook("fake_nccl_seq");
    return f ? f() : 0;
}

/* run what the fake NCCL deferred on `stream` (NULL: every stream) before sequence number upto */
static void nccl_flush(void *stream, unsigned long long upto)
{
    void (*f)(void *, unsigned long long) = (void (*)(void *, unsigned long long))nccl_hook("fake_nccl_flush");
    if (f)
        f(stream, upto);
}

static void fake_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fake_log(const char *fmt, ...)
{
    const char *path = getenv("FAKE_CUDA_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

static CUresult fake_StreamCreate(CUstream *s, unsigned flags)
{
    if (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)
        return CUDA_ERROR_INVALID_VALUE;
    *s = malloc(16);
    state.live_streams++;
    return CUDA_SUCCESS;
}

static CUresult fake_StreamDestroy(CUstream s)
{
    free(s);
    state.live_streams--;
    return CUDA_SUCCESS;
}

static CUresult fake_StreamSynchronize(CUstream s)
{
    nccl_flush(s, ~0ULL);
    return CUDA_SUCCESS;
}

struct fake_event {
    struct timespec t;
    int recorded;
    int fake; /* recorded on the fake clock, at clock_ms */
    double clock_ms;
    CUstream stream;         /* the stream it was last recorded on */
    unsigned long long seq;  /* the fake NCCL's sequence number then */
};

static CUresult fake_EventCreate(CUevent *e, unsigned flags)
{
    (void)flags;
    *e = calloc(1, sizeof(struct fake_event));
    state.live_events++;
    return CUDA_SUCCESS;
}

static CUresult fake_EventDestroy(CUevent e)
{
    free(e);
    state.live_events--;
    return CUDA_SUCCESS;
}

static CUresult fake_EventRecord(CUevent e, CUstream s)
{
    struct fake_event *ev = (struct fake_event *)e;
    ev->stream = s;
    ev->seq = nccl_seq();
    fake_log("EventRecord event=%p stream=%p\n", (void *)e, (void *)s);
    clock_gettime(CLOCK_MONOTONIC, &ev->t);
    ev->recorded = 1;
    ev->fake = state.fake_clock;
    ev->clock_ms = state.clock_ms;
    state.event_records++;
    return CUDA_SUCCESS;
}

static CUresult fake_EventSynchronize(CUevent e)
{
    const struct fake_event *ev = (const struct fake_event *)e;
    nccl_flush(ev->stream, ev->seq);
    return CUDA_SUCCESS;
}

/* the stream's later work waits for what came before the event on its stream */
static CUresult fake_StreamWaitEvent(CUstream s, CUevent e, unsigned flags)
{
    const struct fake_event *ev = (const struct fake_event *)e;
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    fake_log("StreamWaitEvent stream=%p event=%p\n", (void *)s, (void *)e);
    if (ev->stream != s)
        nccl_flush(ev->stream, ev->seq);
    return CUDA_SUCCESS;
}

static CUresult fake_EventElapsedTime(float *ms, CUevent a, CUevent b)
{
    struct fake_event *x = (struct fake_event *)a, *y = (struct fake_event *)b;
    if (!x->recorded || !y->recorded)
        return CUDA_ERROR_INVALID_VALUE;
    if (x->fake && y->fake) {
        *ms = (float)(y->clock_ms - x->clock_ms);
        return CUDA_SUCCESS;
    }
    double d = (double)(y->t.tv_sec - x->t.tv_sec) * 1e3 + (double)(y->t.tv_nsec - x->t.tv_nsec) / 1e6;
    *ms = (float)d;
    return CUDA_SUCCESS;
}

/* ---- modules and kernels ---- */

typedef struct fake_kernel {
    const char *name;
    int nparams;
    size_t sizes[12];
    int max_threads, static_smem;
} fake_kernel;

static const fake_kernel kernels[] = {
    {"scale2", 3, {8, 8, 4}, 1024, 0},
    {"scale2_v0", 3, {8, 8, 4}, 1024, 0}, /* scale2 as lowering names a .tile kernel (tests/test_wrapper_run.c) */
    {"scale2__f32_v0", 3, {8, 8, 4}, 1024, 0}, /* the instances of a generic scale2<T: f32 | i32> (test_fake.py) */
    {"scale2__i32_v0", 3, {8, 8, 4}, 1024, 0},
    {"args7", 7, {8, 4, 8, 4, 8, 4, 8}, 1024, 0},
    {"fail_launch", 0, {0}, 1024, 0},
    {"trap", 0, {0}, 1024, 0},
    {"heavy", 1, {8}, 256, 0},
    {"static_smem", 0, {0}, 1024, 40 << 10},
    {"mk_v0", 3, {8, 8, 4}, 1024, 0},
    {"mk_v1", 3, {8, 8, 4}, 1024, 0},
    {"mk_v2", 3, {8, 8, 4}, 1024, 0},
    {"tw_v0", 6, {8, 8, 8, 4, 4, 4}, 1024, 0},
    {"tw_v0_tma", 9, {8, 8, 8, 4, 4, 4, 128, 128, 128}, 1024, 0},
    {"tw_v0_tma_1", 9, {8, 8, 8, 4, 4, 4, 128, 128, 128}, 1024, 0}, /* its one-tile twin (lower/wgpair.c) */
    /* tw with its loop's bound a u64 parameter KB after K (tests/test_tma.c), and its twins */
    {"uw_v0", 7, {8, 8, 8, 4, 4, 4, 8}, 1024, 0},
    {"uw_v0_tma", 10, {8, 8, 8, 4, 4, 4, 8, 128, 128, 128}, 1024, 0},
    {"uw_v0_tma_1", 10, {8, 8, 8, 4, 4, 4, 8, 128, 128, 128}, 1024, 0},
    {"gw_v0", 6, {8, 8, 8, 4, 4, 4}, 1024, 0},
    {"gw_v0_tma", 7, {8, 8, 8, 4, 4, 4, 128}, 1024, 0}, /* a gather twin: B's map alone (lower/wggather.c) */
    /* attention (q, k, v, o, S, bh, causal, scale) and its twin, K's and V's maps after them (lower/wgattn.c) */
    {"at_v0", 8, {8, 8, 8, 8, 4, 4, 4, 4}, 1024, 0},
    {"at_v0_tma", 10, {8, 8, 8, 8, 4, 4, 4, 4, 128, 128}, 1024, 0},
    /* a convolution (x, w, y, N, H, W, C, K, stride, pad) and its twin, x's im2col map after them */
    {"cv_v0", 10, {8, 8, 8, 4, 4, 4, 4, 4, 4, 4}, 1024, 0},
    {"cv_v0_tma", 11, {8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 128}, 1024, 0},
    {"cv_v0_tma_1", 11, {8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 128}, 1024, 0}, /* its one-tile twin (lower/target.c) */
    {"tilec_fill_u64", 3, {8, 8, 8}, 1024, 0}, /* the runtime's fill kernel (runtime/fill.c) */
    {"sk_v0", 4, {8, 4, 8, 8}, 1024, 0},        /* split-K: x, n, and the hidden part, cnt */
    /* test_fake.py's skmm(a, b, c, M, N, K): variant 0 split-K (two hidden pointers), variant 1 not */
    {"skmm_v0", 8, {8, 8, 8, 4, 4, 4, 8, 8}, 1024, 0},
    {"skmm_v1", 6, {8, 8, 8, 4, 4, 4}, 1024, 0},
    /* tensor lists: two tables of tilec_rt_list_cap(3, 2) = 126 tensors (8 + 16 * 126 bytes) and an f32 */
    {"lscale_v0", 3, {2024, 2024, 4}, 1024, 0},
};

static CUresult fake_TensorMapEncodeTiled(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *base,
                                          const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                                          const cuuint32_t *estr, CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                          CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill fill)
{
    (void)estr, (void)il, (void)l2, (void)fill;
    if (rank < 2 || rank > 3 || (uintptr_t)base % 16 || strides[0] % 16 || (rank == 3 && strides[1] % 16))
        return CUDA_ERROR_INVALID_VALUE;
    int i = state.tma_encodes++ % 3;
    state.tma_maps[i].base = (unsigned long long)(uintptr_t)base;
    state.tma_maps[i].rank = rank;
    state.tma_maps[i].dims[0] = dims[0], state.tma_maps[i].dims[1] = dims[1];
    state.tma_maps[i].dims[2] = rank == 3 ? dims[2] : 0;
    state.tma_maps[i].stride = strides[0];
    state.tma_maps[i].bstride = rank == 3 ? strides[1] : 0;
    state.tma_maps[i].box[0] = box[0], state.tma_maps[i].box[1] = box[1];
    state.tma_maps[i].dtype = (unsigned)dt;
    state.tma_maps[i].swizzle = (unsigned)sw;
    memset(map, 0, sizeof *map);
    memcpy(map, &state.tma_maps[i].base, sizeof state.tma_maps[i].base);
    return CUDA_SUCCESS;
}

static CUresult fake_TensorMapEncodeIm2col(CUtensorMap *map, CUtensorMapDataType dt, cuuint32_t rank, void *base,
                                           const cuuint64_t *dims, const cuuint64_t *strides, const int *lower,
                                           const int *upper, cuuint32_t cpp, cuuint32_t ppc, const cuuint32_t *estr,
                                           CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
                                           CUtensorMapFloatOOBfill fill)
{
    (void)il, (void)l2;
    if (rank != 4 || (uintptr_t)base % 16 || strides[0] % 16 || strides[1] % 16 || strides[2] % 16)
        return CUDA_ERROR_INVALID_VALUE;
    state.im2col_encodes++;
    state.im2col.base = (unsigned long long)(uintptr_t)base;
    for (int i = 0; i < 4; i++)
        state.im2col.dims[i] = dims[i], state.im2col.estr[i] = estr[i];
    for (int i = 0; i < 3; i++)
        state.im2col.strides[i] = strides[i];
    for (int i = 0; i < 2; i++)
        state.im2col.lower[i] = lower[i], state.im2col.upper[i] = upper[i];
    state.im2col.cpp = cpp, state.im2col.ppc = ppc;
    state.im2col.dtype = (unsigned)dt, state.im2col.swizzle = (unsigned)sw, state.im2col.fill = (unsigned)fill;
    memset(map, 0, sizeof *map);
    memcpy(map, &state.im2col.base, sizeof state.im2col.base);
    return CUDA_SUCCESS;
}

static CUresult fake_ModuleLoadData(CUmodule *m, const void *image)
{
    if (strncmp(image, "BADIMAGE", 8) == 0)
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    *m = malloc(16);
    state.live_modules++;
    return CUDA_SUCCESS;
}

static CUresult fake_ModuleUnload(CUmodule m)
{
    free(m);
    state.live_modules--;
    return CUDA_SUCCESS;
}

static CUresult fake_ModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    (void)m;
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        if (strcmp(kernels[i].name, name) == 0) {
            *f = (CUfunction)(void *)&kernels[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

static CUresult fake_FuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f)
{
    const fake_kernel *k = (const fake_kernel *)(const void *)f;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = k->max_threads; return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = k->static_smem; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

static CUresult fake_OccupancyMaxActiveBlocksPerMultiprocessor(int *n, CUfunction f, int threads, size_t smem)
{
    (void)f;
    (void)smem;
    if (threads <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    *n = state.per_sm > 0 ? state.per_sm : 1;
    return CUDA_SUCCESS;
}

static CUresult fake_FuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
    const fake_kernel *k = (const fake_kernel *)(const void *)f;
    if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || v + k->static_smem > FAKE_CUDA_OPTIN_SMEM)
        return CUDA_ERROR_INVALID_VALUE;
    state.dyn_smem_attr = v;
    return CUDA_SUCCESS;
}

static CUresult fake_FuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size)
{
    const fake_kernel *k = (const fake_kernel *)(const void *)f;
    if (i >= (size_t)k->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    *off = 0;
    for (size_t j = 0; j < i; j++)
        *off += 8;
    *size = k->sizes[i];
    return CUDA_SUCCESS;
}

/* ---- stream capture and graphs: a graph is the list of launches
 * recorded on the capturing stream, replayed by cuGraphLaunch ---- */

typedef struct fake_launch {
    CUfunction f; /* NULL: a memset of n elements of width bytes at dst */
    unsigned grid[3], block[3], smem;
    unsigned char args[4096]; /* the parameters by value, one after another (a launch's 4 KiB) */
    CUdeviceptr dst;
    unsigned value, width;
    size_t n;
} fake_launch;

typedef struct fake_graph {
    int n;
    fake_launch l[64];
} fake_graph;

static fake_graph *recording;

static CUresult fake_StreamBeginCapture(CUstream s, CUstreamCaptureMode m)
{
    (void)m;
    if (!s || capturing || mode("nocapture"))
        return CUDA_ERROR_INVALID_VALUE; /* the legacy stream cannot capture */
    recording = calloc(1, sizeof *recording);
    capturing = s;
    return CUDA_SUCCESS;
}

static CUresult fake_StreamEndCapture(CUstream s, CUgraph *g)
{
    if (s != capturing)
        return CUDA_ERROR_INVALID_VALUE;
    *g = (CUgraph)(void *)recording;
    state.live_graphs++;
    capturing = NULL;
    recording = NULL;
    return CUDA_SUCCESS;
}

static CUresult fake_GraphDestroy(CUgraph g)
{
    free(g);
    state.live_graphs--;
    return CUDA_SUCCESS;
}

static CUresult fake_GraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
    fake_graph *copy = malloc(sizeof *copy);
    if (flags || !copy) {
        free(copy);
        return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(copy, g, sizeof *copy);
    *e = (CUgraphExec)(void *)copy;
    state.live_graph_execs++;
    return CUDA_SUCCESS;
}

static CUresult fake_GraphExecDestroy(CUgraphExec e)
{
    free(e);
    state.live_graph_execs--;
    return CUDA_SUCCESS;
}

/* The exec takes g's launches when they are the same kernels and memsets in the same order. */
static CUresult fake_GraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    fake_graph *to = (fake_graph *)(void *)e;
    const fake_graph *from = (const fake_graph *)(const void *)g;
    int same = to->n == from->n;
    for (int i = 0; same && i < from->n; i++)
        same = to->l[i].f == from->l[i].f;
    if (info)
        info->result = same ? CU_GRAPH_EXEC_UPDATE_SUCCESS : CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    if (!same)
        return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    memcpy(to, from, sizeof *to);
    state.graph_updates++;
    return CUDA_SUCCESS;
}

static CUresult fake_LaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned smem, CUstream s, void **params, void **extra);

static CUresult fake_GraphLaunch(CUgraphExec e, CUstream s)
{
    const fake_graph *g = (const fake_graph *)(const void *)e;
    state.graph_launches++;
    for (int i = 0; i < g->n; i++) {
        const fake_launch *l = &g->l[i];
        if (!l->f) {
            CUresult r = fake_memset(l->dst, l->value, l->n, l->width);
            if (r != CUDA_SUCCESS)
                return r;
            continue;
        }
        const fake_kernel *k = (const fake_kernel *)(const void *)l->f;
        void *params[16];
        for (size_t j = 0, off = 0; j < (size_t)k->nparams && j < 16; off += k->sizes[j], j++)
            params[j] = (void *)(uintptr_t)(l->args + off);
        CUresult r = fake_LaunchKernel(l->f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
                                       l->block[2], l->smem, s, params, NULL);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

/* A memset on the capturing stream: recorded, not run. */
static CUresult record_memset(CUdeviceptr d, unsigned v, size_t n, unsigned width)
{
    if (recording->n == 64)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_launch *l = &recording->l[recording->n++];
    memset(l, 0, sizeof *l);
    l->dst = d, l->value = v, l->n = n, l->width = width;
    state.captured_memsets++;
    return CUDA_SUCCESS;
}

/* A launch on the capturing stream: recorded, not run. */
static CUresult record_launch(const fake_kernel *k, CUfunction f, const unsigned g[3], const unsigned b[3],
                              unsigned smem, void **params)
{
    if (recording->n == 64)
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_launch *l = &recording->l[recording->n++];
    l->f = f;
    memcpy(l->grid, g, sizeof l->grid);
    memcpy(l->block, b, sizeof l->block);
    l->smem = smem;
    for (size_t i = 0, off = 0; i < (size_t)k->nparams; off += k->sizes[i], i++) {
        if (off + k->sizes[i] > sizeof l->args)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(l->args + off, params[i], k->sizes[i]);
    }
    state.captured_launches++;
    return CUDA_SUCCESS;
}

static CUresult fake_LaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned smem, CUstream s, void **params, void **extra)
{
    const fake_kernel *k = (const fake_kernel *)(const void *)f;
    if (!current)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (extra || gx == 0 || gy == 0 || gz == 0 || bx * by * bz > (unsigned)k->max_threads)
        return CUDA_ERROR_INVALID_VALUE;
    if (capturing && s == capturing) {
        const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
        return record_launch(k, f, g, b, smem, params);
    }
    if (state.lost)
        return CUDA_ERROR_LAUNCH_FAILED;
    fake_log("Launch %s stream=%p\n", k->name, (void *)s);
    if (strcmp(k->name, "fail_launch") == 0)
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    if (strcmp(k->name, "trap") == 0) { /* launches, then faults: the context is lost */
        state.lost = 1;
        state.launches++;
        return CUDA_SUCCESS;
    }
    int mk = strncmp(k->name, "mk_v", 4) == 0 ? k->name[4] - '0' : -1;
    if (strncmp(k->name, "scale2", 6) == 0 || mk >= 0) {
        const float *x;
        float *y;
        int32_t n;
        memcpy(&x, params[0], sizeof x);
        memcpy(&y, params[1], sizeof y);
        memcpy(&n, params[2], sizeof n);
        uint64_t threads = (uint64_t)gx * gy * gz * bx * by * bz;
        if (mk >= 0) /* a tile kernel: each thread does several elements */
            threads = UINT64_MAX;
        for (uint64_t i = 0; i < threads && i < (uint64_t)(n > 0 ? n : 0); i++)
            y[i] = 2.0f * x[i];
        if (mk >= 0) {
            int before = state.mk_launches[0] + state.mk_launches[1] + state.mk_launches[2];
            state.mk_launches[mk]++;
            state.mk_flushed += state.l2_cleared; /* a write of L2's size since the last launch */
            state.l2_cleared = 0;
            state.clock_ms += (double)state.mk_ms[mk] * (1.0 + (double)state.mk_drift * before);
            if ((unsigned long long)(uintptr_t)y == state.out_watch)
                state.out_watch_hits++;
        }
    } else if (strncmp(k->name, "tw_v0_tma", 9) == 0) {
        state.tma_launches++;
        state.tma_one_launches += strcmp(k->name, "tw_v0_tma_1") == 0;
        memcpy(&state.tma_args[0], params[6], 8);
        memcpy(&state.tma_args[1], params[7], 8);
        memcpy(&state.tma_args[2], params[8], 8);
        for (int i = 0; i < 3; i++) /* a persistent twin: the program's grid after the maps */
            memcpy(&state.tma_grid[i], params[9 + i], 4);
    } else if (strncmp(k->name, "uw_v0_tma", 9) == 0) {
        state.tma_launches++;
    } else if (strcmp(k->name, "gw_v0_tma") == 0) {
        state.tma_launches++;
        memcpy(&state.tma_args[0], params[6], 8);
    } else if (strncmp(k->name, "cv_v0_tma", 9) == 0) {
        state.tma_launches++;
        state.tma_one_launches += strcmp(k->name, "cv_v0_tma_1") == 0;
        memcpy(&state.tma_args[0], params[10], 8);
    } else if (strcmp(k->name, "at_v0_tma") == 0) {
        state.tma_launches++;
        memcpy(&state.tma_args[0], params[8], 8);
        memcpy(&state.tma_args[1], params[9], 8);
    } else if (strcmp(k->name, "tilec_fill_u64") == 0) {
        uint64_t d, v, n;
        memcpy(&d, params[0], 8);
        memcpy(&v, params[1], 8);
        memcpy(&n, params[2], 8);
        uint64_t threads = (uint64_t)gx * bx;
        for (uint64_t i = 0; i < threads; i++) /* each thread's grid-stride loop */
            for (uint64_t j = i; j < n; j += threads)
                memcpy((unsigned char *)(uintptr_t)d + 8 * j, &v, 8);
        state.fill_launches++;
    } else if (strcmp(k->name, "sk_v0") == 0) {
        memcpy(&state.split_part, params[2], 8);
        memcpy(&state.split_cnt, params[3], 8);
        const unsigned *cnt = (const unsigned *)(uintptr_t)state.split_cnt;
        for (int i = 0; cnt && i < 64; i++)
            state.split_dirty += cnt[i] != 0;
        state.split_launches++;
    } else if (strcmp(k->name, "lscale_v0") == 0) { /* y[t] = s * x[t] for the table's tensors */
        const unsigned char *x = params[0], *y = params[1];
        int64_t n, xn, yn;
        float sc;
        memcpy(&n, x, 8);
        memcpy(&sc, params[2], 4);
        for (int64_t t = 0; t < n && t < 126; t++) {
            uint64_t xp, yp;
            memcpy(&xp, x + 8 + 8 * t, 8);
            memcpy(&yp, y + 8 + 8 * t, 8);
            memcpy(&xn, x + 8 + 8 * 126 + 8 * t, 8);
            memcpy(&yn, y + 8 + 8 * 126 + 8 * t, 8);
            for (int64_t j = 0; j < xn && j < yn; j++)
                ((float *)(uintptr_t)yp)[j] = sc * ((const float *)(uintptr_t)xp)[j];
        }
        state.list_n[state.list_launches++ % 8] = (int)n;
    } else if (strcmp(k->name, "args7") == 0) {
        memset(state.args, 0, sizeof state.args);
        for (int i = 0; i < k->nparams; i++)
            memcpy(state.args[i], params[i], k->sizes[i]);
    }
    state.launches++;
    state.grid[0] = gx, state.grid[1] = gy, state.grid[2] = gz;
    state.block[0] = bx, state.block[1] = by, state.block[2] = bz;
    state.smem = smem;
    state.stream = s;
    return CUDA_SUCCESS;
}

/* ---- the one exported entry point ---- */

#define ENTRY(name) {"cu" #name, (void *)fake_##name}
static const struct {
    const char *symbol;
    void *fn;
} entries[] = {
    ENTRY(GetErrorName),       ENTRY(GetErrorString),     ENTRY(DriverGetVersion),  ENTRY(Init),
    ENTRY(DeviceGetCount),     ENTRY(DeviceGet),          ENTRY(DeviceGetName),     ENTRY(DeviceGetAttribute),
    ENTRY(DeviceTotalMem),     ENTRY(DevicePrimaryCtxRetain), ENTRY(DevicePrimaryCtxRelease),
    ENTRY(CtxSetCurrent),      ENTRY(CtxGetCurrent),      ENTRY(CtxSynchronize),    ENTRY(MemAlloc),
    ENTRY(MemFree),            ENTRY(MemGetAddressRange),            ENTRY(MemcpyHtoD),         ENTRY(MemcpyDtoH),        ENTRY(MemcpyDtoD),
    ENTRY(MemcpyHtoDAsync),    ENTRY(MemcpyDtoHAsync),    ENTRY(MemcpyDtoDAsync),   ENTRY(MemsetD32),
    ENTRY(MemsetD32Async),     ENTRY(MemsetD16Async),     ENTRY(MemsetD8Async),     ENTRY(StreamCreate),       ENTRY(StreamDestroy),     ENTRY(StreamSynchronize),
    ENTRY(EventCreate),        ENTRY(EventDestroy),       ENTRY(EventRecord),       ENTRY(EventSynchronize), ENTRY(StreamWaitEvent),
    ENTRY(EventElapsedTime),   ENTRY(ModuleLoadData),     ENTRY(ModuleUnload),      ENTRY(ModuleGetFunction),
    ENTRY(FuncGetAttribute),   ENTRY(FuncSetAttribute),   ENTRY(FuncGetParamInfo),  ENTRY(LaunchKernel),
    ENTRY(StreamBeginCapture), ENTRY(StreamEndCapture),   ENTRY(GraphInstantiateWithFlags),
    ENTRY(GraphLaunch),        ENTRY(GraphExecDestroy),   ENTRY(GraphDestroy),      ENTRY(GraphExecUpdate),
    ENTRY(TensorMapEncodeTiled), ENTRY(TensorMapEncodeIm2col), ENTRY(OccupancyMaxActiveBlocksPerMultiprocessor),
};

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *status)
{
    *pfn = NULL;
    if (cudaVersion < state.min_version_asked)
        state.min_version_asked = cudaVersion;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (flags != CU_GET_PROC_ADDRESS_DEFAULT)
        return CUDA_ERROR_INVALID_VALUE;
    if ((mode("nolaunch") && strcmp(symbol, "cuLaunchKernel") == 0) ||
        (mode("nographs") && strcmp(symbol, "cuGraphLaunch") == 0) ||
        (mode("noupdate") && strcmp(symbol, "cuGraphExecUpdate") == 0) ||
        (mode("noparaminfo") && strcmp(symbol, "cuFuncGetParamInfo") == 0) ||
        (mode("notma") && strcmp(symbol, "cuTensorMapEncodeTiled") == 0) ||
        (mode("noim2col") && strcmp(symbol, "cuTensorMapEncodeIm2col") == 0))
        return CUDA_ERROR_NOT_FOUND;
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
        if (strcmp(entries[i].symbol, symbol) == 0) {
            *pfn = entries[i].fn;
            if (status)
                *status = CU_GET_PROC_ADDRESS_SUCCESS;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}
