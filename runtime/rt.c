/* rt.c: the runtime handle (open, close, errors, device info), device
 * memory, streams and events, over the driver table of driver.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernel_internal.h"
#include "runtime/rt_internal.h"

_Static_assert(sizeof(tilec_rt_arg) == 8, "tilec_rt_arg is one 8-byte slot");
_Static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t), "device pointers are 64-bit");

/* ORDER STATUS */
static const char *const status_text[TILEC_RT_STATUS_COUNT] = {
    [TILEC_RT_OK] = "success",
    [TILEC_RT_NO_DRIVER] = "no CUDA driver found (libcuda.so.1 could not be loaded)",
    [TILEC_RT_NO_DEVICE] = "no CUDA device (the driver sees none, or not the one asked for)",
    [TILEC_RT_DRIVER_ERROR] = "a CUDA driver call failed (the last error names it)",
    [TILEC_RT_COMPILE_ERROR] = "NVRTC could not compile the kernel source (see the log)",
    [TILEC_RT_NOMEM] = "out of host memory",
    [TILEC_RT_INVALID_ARG] = "invalid argument to a tilec runtime call",
    [TILEC_RT_LAUNCH_ERROR] = "kernel launch failed (the last error names the kernel)",
    [TILEC_RT_DEVICE_NOMEM] = "out of device memory",
    [TILEC_RT_DRIVER_TOO_OLD] = "the CUDA driver is too old (an entry point is missing)",
    [TILEC_RT_MODULE_ERROR] = "the module image was rejected (malformed, truncated, or not for this device)",
    [TILEC_RT_NOT_FOUND] = "no kernel of that name in the module",
    [TILEC_RT_IO_ERROR] = "a file could not be read or written",
    [TILEC_RT_KERNEL_FAULT] = "a kernel faulted and the CUDA context is lost (restart the process)",
};

const char *tilec_rt_status_string(tilec_rt_status s)
{
    if ((unsigned)s < TILEC_RT_STATUS_COUNT && status_text[s])
        return status_text[s];
    return "unknown tilec runtime status";
}

/* ---- errors ---- */

/* The message is fmt's text followed by suffix. */
static void set_error(tilec_rt *rt, const char *suffix, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

static void set_error(tilec_rt *rt, const char *suffix, const char *fmt, va_list ap)
{
    char msg[RT_ERR_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    pthread_mutex_lock(&rt->err_lock);
    snprintf(rt->err, sizeof rt->err, "%s%s", msg, suffix);
    pthread_mutex_unlock(&rt->err_lock);
}

tilec_rt_status rt_fail(tilec_rt *rt, tilec_rt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(rt, "", fmt, ap);
    va_end(ap);
    return st;
}

tilec_rt_status rt_cu_fail(tilec_rt *rt, tilec_rt_status st, CUresult r, const char *fmt, ...)
{
    char res[600];
    rt_driver_describe(&rt->drv, r, res + 2, 200);
    res[0] = ':';
    res[1] = ' ';
    int fault = rt_kernel_fault(r);
    if (fault) {
        const char *k = rt_last_kernel_name(rt);
        size_t n = strlen(res);
        if (k)
            snprintf(res + n, sizeof res - n, "; a kernel faulted (the last one launched on this runtime: '%s')", k);
        else
            snprintf(res + n, sizeof res - n, "; a kernel faulted earlier in this process");
        n = strlen(res);
        snprintf(res + n, sizeof res - n,
                 ", so the CUDA context is lost: every later CUDA call in this process fails (CUDA cannot "
                 "recover from a kernel fault inside a process); restart the process");
    }
    va_list ap;
    va_start(ap, fmt);
    set_error(rt, res, fmt, ap);
    va_end(ap);
    if (fault)
        return TILEC_RT_KERNEL_FAULT;
    if (r == CUDA_ERROR_OUT_OF_MEMORY)
        return TILEC_RT_DEVICE_NOMEM;
    if (r == CUDA_ERROR_NO_DEVICE)
        return TILEC_RT_NO_DEVICE;
    return st;
}

const char *tilec_rt_last_error(const tilec_rt *rt)
{
    return rt ? rt->err : "no runtime handle (tilec_rt_open gave none: out of memory or a NULL argument)";
}

tilec_rt_status rt_enter(tilec_rt *rt)
{
    if (!rt)
        return TILEC_RT_INVALID_ARG;
    if (rt->open_status != TILEC_RT_OK)
        return rt->open_status;
    CUcontext cur = NULL;
    CUresult r = rt->drv.CtxGetCurrent(&cur);
    if (r == CUDA_SUCCESS && cur == rt->ctx)
        return TILEC_RT_OK;
    r = rt->drv.CtxSetCurrent(rt->ctx);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuCtxSetCurrent(primary context of device %d)",
                          rt->ordinal);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_make_current(tilec_rt *rt) { return rt_enter(rt); }

/* ---- open and close ---- */

static tilec_rt_status read_props(tilec_rt *rt)
{
    rt_driver *d = &rt->drv;
    tilec_rt_device_props *p = &rt->props;
    memset(p, 0, sizeof *p);
    p->ordinal = rt->ordinal;
    p->driver_version = d->version;
    CUresult r = d->DeviceGetName(p->name, (int)sizeof p->name - 1, rt->dev);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuDeviceGetName(device %d)", rt->ordinal);
    static const struct {
        CUdevice_attribute attr;
        const char *name;
        size_t offset; /* of an int field */
    } ints[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR",
         offsetof(tilec_rt_device_props, sm_major)},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR",
         offsetof(tilec_rt_device_props, sm_minor)},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT",
         offsetof(tilec_rt_device_props, multiprocessors)},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK",
         offsetof(tilec_rt_device_props, max_threads_per_block)},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, "WARP_SIZE", offsetof(tilec_rt_device_props, warp_size)},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int v = 0;
        r = d->DeviceGetAttribute(&v, ints[i].attr, rt->dev);
        if (r != CUDA_SUCCESS)
            return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_%s, device %d)",
                              ints[i].name, rt->ordinal);
        memcpy((char *)p + ints[i].offset, &v, sizeof v);
    }
    static const struct {
        CUdevice_attribute attr;
        const char *name;
        size_t offset; /* of a uint64_t field */
    } sizes[] = {
        {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2_CACHE_SIZE", offsetof(tilec_rt_device_props, l2_bytes)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "MAX_SHARED_MEMORY_PER_BLOCK",
         offsetof(tilec_rt_device_props, smem_per_block)},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
         offsetof(tilec_rt_device_props, smem_per_block_optin)},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        int v = 0;
        r = d->DeviceGetAttribute(&v, sizes[i].attr, rt->dev);
        if (r != CUDA_SUCCESS)
            return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_%s, device %d)",
                              sizes[i].name, rt->ordinal);
        uint64_t u = v > 0 ? (uint64_t)v : 0;
        memcpy((char *)p + sizes[i].offset, &u, sizeof u);
    }
    size_t total = 0;
    r = d->DeviceTotalMem(&total, rt->dev);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuDeviceTotalMem(device %d)", rt->ordinal);
    p->total_mem = total;
    /* sm_90a on Hopper: wgmma and setmaxnreg need the arch-specific target */
    snprintf(p->arch, sizeof p->arch, "sm_%d%d%s", p->sm_major, p->sm_minor, p->sm_major == 9 && p->sm_minor == 0 ? "a" : "");
    return TILEC_RT_OK;
}

static tilec_rt_status open_device(tilec_rt *rt, const char *driver_library, int device)
{
    char why[RT_ERR_MAX];
    tilec_rt_status st = rt_driver_load(&rt->drv, driver_library, why, sizeof why);
    if (st != TILEC_RT_OK)
        return rt_fail(rt, st, "%s", why);
    rt_driver *d = &rt->drv;
    const char *lib = d->lib_name;
    CUresult r = d->Init(0);
    if (r == CUDA_ERROR_NO_DEVICE)
        return rt_cu_fail(rt, TILEC_RT_NO_DEVICE, r, "no CUDA device: cuInit(0) in %s", lib);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuInit(0) in %s", lib);
    int count = 0;
    r = d->DeviceGetCount(&count);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuDeviceGetCount");
    if (count <= 0)
        return rt_fail(rt, TILEC_RT_NO_DEVICE, "no CUDA device: the driver %s sees none", lib);
    if (device >= count)
        return rt_fail(rt, TILEC_RT_NO_DEVICE, "no CUDA device %d: the driver sees %d (0 to %d)", device,
                       count, count - 1);
    r = d->DeviceGet(&rt->dev, device);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuDeviceGet(%d)", device);
    CUcontext ctx = NULL;
    r = d->DevicePrimaryCtxRetain(&ctx, rt->dev);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuDevicePrimaryCtxRetain(device %d)", device);
    rt->ctx = ctx;
    r = d->CtxSetCurrent(ctx);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuCtxSetCurrent(primary context of device %d)",
                          device);
    return read_props(rt);
}

tilec_rt_status tilec_rt_open_driver(const char *driver_library, int device, tilec_rt **out)
{
    if (!out)
        return TILEC_RT_INVALID_ARG;
    *out = NULL;
    if (device < 0)
        return TILEC_RT_INVALID_ARG;
    tilec_rt *rt = calloc(1, sizeof *rt);
    if (!rt)
        return TILEC_RT_NOMEM;
    if (pthread_mutex_init(&rt->err_lock, NULL) != 0) {
        free(rt);
        return TILEC_RT_NOMEM;
    }
    if (pthread_mutex_init(&rt->fill_lock, NULL) != 0) {
        pthread_mutex_destroy(&rt->err_lock);
        free(rt);
        return TILEC_RT_NOMEM;
    }
    rt->ordinal = device;
    rt->open_status = open_device(rt, driver_library, device);
    *out = rt;
    return rt->open_status;
}

tilec_rt_status tilec_rt_open(int device, tilec_rt **out) { return tilec_rt_open_driver(NULL, device, out); }

void tilec_rt_close(tilec_rt *rt)
{
    if (!rt)
        return;
    rt_driver *d = &rt->drv;
    if (rt->fill_mod && rt_enter(rt) == TILEC_RT_OK) /* the fill kernel's module (fill.c loads it) */
        d->ModuleUnload(rt->fill_mod);
    if (rt->ctx) {
        CUcontext cur = NULL;
        if (d->CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == rt->ctx)
            d->CtxSetCurrent(NULL);
        d->DevicePrimaryCtxRelease(rt->dev);
    }
    if (d->lib)
        rt_driver_unload(d);
    pthread_mutex_destroy(&rt->err_lock);
    pthread_mutex_destroy(&rt->fill_lock);
    free(rt);
}

tilec_rt_status tilec_rt_device_info(tilec_rt *rt, tilec_rt_device_props *info)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!info)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_device_info: info is NULL");
    *info = rt->props;
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_device_count(tilec_rt *rt, int *count)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!count)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_device_count: count is NULL");
    CUresult r = rt->drv.DeviceGetCount(count);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuDeviceGetCount");
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_synchronize(tilec_rt *rt)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    CUresult r = rt->drv.CtxSynchronize();
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuCtxSynchronize");
    return TILEC_RT_OK;
}

/* ---- memory ---- */

tilec_rt_status tilec_rt_malloc(tilec_rt *rt, size_t bytes, uint64_t *out)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!out)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_malloc: out is NULL");
    *out = 0;
    if (bytes == 0)
        return TILEC_RT_OK;
    CUdeviceptr p = 0;
    CUresult r = rt->drv.MemAlloc(&p, bytes);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuMemAlloc(%zu bytes)", bytes);
    *out = p;
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_free(tilec_rt *rt, uint64_t ptr)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK || ptr == 0)
        return st;
    CUresult r = rt->drv.MemFree(ptr);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuMemFree(0x%llx)", (unsigned long long)ptr);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_mem_range(tilec_rt *rt, uint64_t ptr, uint64_t *base, size_t *size)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!base || !size)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_mem_range: NULL output");
    if (!rt->drv.MemGetAddressRange)
        return rt_fail(rt, TILEC_RT_DRIVER_TOO_OLD, "the driver has no cuMemGetAddressRange");
    CUdeviceptr b = 0;
    size_t n = 0;
    CUresult r = rt->drv.MemGetAddressRange(&b, &n, ptr);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuMemGetAddressRange(0x%llx)", (unsigned long long)ptr);
    *base = b;
    *size = n;
    return TILEC_RT_OK;
}

/* The common head of the copy and fill calls. */
static tilec_rt_status enter_copy(tilec_rt *rt, const char *call, int null_host, size_t n)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (null_host && n)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "%s: host pointer is NULL", call);
    return TILEC_RT_OK;
}

#define COPY_RESULT(call, fmt, ...)                                                                \
    do {                                                                                           \
        if (r != CUDA_SUCCESS)                                                                     \
            return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, call "(" fmt ")", __VA_ARGS__);        \
        return TILEC_RT_OK;                                                                        \
    } while (0)

tilec_rt_status tilec_rt_memcpy_htod(tilec_rt *rt, uint64_t dst, const void *src, size_t bytes)
{
    tilec_rt_status st = enter_copy(rt, "tilec_rt_memcpy_htod", !src, bytes);
    if (st != TILEC_RT_OK || bytes == 0)
        return st;
    CUresult r = rt->drv.MemcpyHtoD(dst, src, bytes);
    COPY_RESULT("cuMemcpyHtoD", "0x%llx, %zu bytes", (unsigned long long)dst, bytes);
}

tilec_rt_status tilec_rt_memcpy_dtoh(tilec_rt *rt, void *dst, uint64_t src, size_t bytes)
{
    tilec_rt_status st = enter_copy(rt, "tilec_rt_memcpy_dtoh", !dst, bytes);
    if (st != TILEC_RT_OK || bytes == 0)
        return st;
    CUresult r = rt->drv.MemcpyDtoH(dst, src, bytes);
    COPY_RESULT("cuMemcpyDtoH", "0x%llx, %zu bytes", (unsigned long long)src, bytes);
}

tilec_rt_status tilec_rt_memcpy_dtod(tilec_rt *rt, uint64_t dst, uint64_t src, size_t bytes)
{
    tilec_rt_status st = enter_copy(rt, "tilec_rt_memcpy_dtod", 0, bytes);
    if (st != TILEC_RT_OK || bytes == 0)
        return st;
    CUresult r = rt->drv.MemcpyDtoD(dst, src, bytes);
    COPY_RESULT("cuMemcpyDtoD", "0x%llx <- 0x%llx, %zu bytes", (unsigned long long)dst,
                (unsigned long long)src, bytes);
}

tilec_rt_status tilec_rt_memset_d32(tilec_rt *rt, uint64_t dst, uint32_t value, size_t count)
{
    tilec_rt_status st = enter_copy(rt, "tilec_rt_memset_d32", 0, count);
    if (st != TILEC_RT_OK || count == 0)
        return st;
    CUresult r = rt->drv.MemsetD32(dst, value, count);
    COPY_RESULT("cuMemsetD32", "0x%llx, 0x%08x, %zu words", (unsigned long long)dst, value, count);
}

tilec_rt_status tilec_rt_memcpy_htod_async(tilec_rt *rt, uint64_t dst, const void *src, size_t bytes,
                                           void *stream)
{
    tilec_rt_status st = enter_copy(rt, "tilec_rt_memcpy_htod_async", !src, bytes);
    if (st != TILEC_RT_OK || bytes == 0)
        return st;
    CUresult r = rt->drv.MemcpyHtoDAsync(dst, src, bytes, (CUstream)stream);
    COPY_RESULT("cuMemcpyHtoDAsync", "0x%llx, %zu bytes, stream %p", (unsigned long long)dst, bytes, stream);
}

tilec_rt_status tilec_rt_memcpy_dtoh_async(tilec_rt *rt, void *dst, uint64_t src, size_t bytes, void *stream)
{
    tilec_rt_status st = enter_copy(rt, "tilec_rt_memcpy_dtoh_async", !dst, bytes);
    if (st != TILEC_RT_OK || bytes == 0)
        return st;
    CUresult r = rt->drv.MemcpyDtoHAsync(dst, src, bytes, (CUstream)stream);
    COPY_RESULT("cuMemcpyDtoHAsync", "0x%llx, %zu bytes, stream %p", (unsigned long long)src, bytes, stream);
}

tilec_rt_status tilec_rt_memcpy_dtod_async(tilec_rt *rt, uint64_t dst, uint64_t src, size_t bytes,
                                           void *stream)
{
    tilec_rt_status st = enter_copy(rt, "tilec_rt_memcpy_dtod_async", 0, bytes);
    if (st != TILEC_RT_OK || bytes == 0)
        return st;
    CUresult r = rt->drv.MemcpyDtoDAsync(dst, src, bytes, (CUstream)stream);
    COPY_RESULT("cuMemcpyDtoDAsync", "0x%llx <- 0x%llx, %zu bytes, stream %p", (unsigned long long)dst,
                (unsigned long long)src, bytes, stream);
}

tilec_rt_status tilec_rt_memset_d32_async(tilec_rt *rt, uint64_t dst, uint32_t value, size_t count,
                                          void *stream)
{
    tilec_rt_status st = enter_copy(rt, "tilec_rt_memset_d32_async", 0, count);
    if (st != TILEC_RT_OK || count == 0)
        return st;
    CUresult r = rt->drv.MemsetD32Async(dst, value, count, (CUstream)stream);
    COPY_RESULT("cuMemsetD32Async", "0x%llx, 0x%08x, %zu words, stream %p", (unsigned long long)dst, value,
                count, stream);
}

/* ---- streams and events ---- */

tilec_rt_status tilec_rt_stream_create(tilec_rt *rt, unsigned flags, void **out)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!out)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_stream_create: out is NULL");
    *out = NULL;
    if (flags & ~(unsigned)TILEC_RT_STREAM_NON_BLOCKING)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_stream_create: unknown flags 0x%x", flags);
    CUstream s = NULL;
    unsigned cu_flags = (flags & TILEC_RT_STREAM_NON_BLOCKING) ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT;
    CUresult r = rt->drv.StreamCreate(&s, cu_flags);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuStreamCreate(flags 0x%x)", cu_flags);
    *out = s;
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_stream_destroy(tilec_rt *rt, void *stream)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK || !stream)
        return st;
    CUresult r = rt->drv.StreamDestroy((CUstream)stream);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuStreamDestroy(%p)", stream);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_stream_synchronize(tilec_rt *rt, void *stream)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    CUresult r = rt->drv.StreamSynchronize((CUstream)stream);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuStreamSynchronize(%p)", stream);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_event_create(tilec_rt *rt, void **out)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!out)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_event_create: out is NULL");
    *out = NULL;
    CUevent e = NULL;
    CUresult r = rt->drv.EventCreate(&e, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuEventCreate(CU_EVENT_DEFAULT)");
    *out = e;
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_event_destroy(tilec_rt *rt, void *event)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK || !event)
        return st;
    CUresult r = rt->drv.EventDestroy((CUevent)event);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuEventDestroy(%p)", event);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_event_record(tilec_rt *rt, void *event, void *stream)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!event)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_event_record: event is NULL");
    CUresult r = rt->drv.EventRecord((CUevent)event, (CUstream)stream);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuEventRecord(%p, stream %p)", event, stream);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_stream_wait_event(tilec_rt *rt, void *stream, void *event)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!event)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_stream_wait_event: event is NULL");
    CUresult r = rt->drv.StreamWaitEvent((CUstream)stream, (CUevent)event, 0);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuStreamWaitEvent(stream %p, %p)", stream, event);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_event_synchronize(tilec_rt *rt, void *event)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!event)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_event_synchronize: event is NULL");
    CUresult r = rt->drv.EventSynchronize((CUevent)event);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuEventSynchronize(%p)", event);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_rt_event_elapsed_ms(tilec_rt *rt, void *start, void *end, float *ms)
{
    tilec_rt_status st = rt_enter(rt);
    if (st != TILEC_RT_OK)
        return st;
    if (!start || !end || !ms)
        return rt_fail(rt, TILEC_RT_INVALID_ARG, "tilec_rt_event_elapsed_ms: NULL event or result");
    CUresult r = rt->drv.EventElapsedTime(ms, (CUevent)start, (CUevent)end);
    if (r != CUDA_SUCCESS)
        return rt_cu_fail(rt, TILEC_RT_DRIVER_ERROR, r, "cuEventElapsedTime(%p, %p)", start, end);
    return TILEC_RT_OK;
}
