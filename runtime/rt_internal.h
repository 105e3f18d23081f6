/* rt_internal.h: what the runtime's files share: the table of driver entry
 * points resolved at run time, the runtime handle, and error recording. */
#ifndef TILEC_RUNTIME_RT_INTERNAL_H
#define TILEC_RUNTIME_RT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* Types and PFN_ typedefs only: libcuda is never linked, only dlopen'ed. */
#include <cudaTypedefs.h>

#include "tilec/runtime.h"

/* The CUDA version whose ABI every entry point is asked for: each PFN type
 * below is the one that version returns (cuCtxSynchronize, for one, took
 * no argument then and takes a context since CUDA 13). */
#define RT_CUDA_ABI 12000

/* The driver entry points: X(field, PFN type, CUDA version asked for,
 * required). The symbol is "cu" #field; an optional one may stay NULL. */
#define RT_DRIVER_CALLS(X)                                                                        \
    X(GetErrorName, PFN_cuGetErrorName_v6000, RT_CUDA_ABI, 1)                                     \
    X(GetErrorString, PFN_cuGetErrorString_v6000, RT_CUDA_ABI, 1)                                 \
    X(DriverGetVersion, PFN_cuDriverGetVersion_v2020, RT_CUDA_ABI, 1)                             \
    X(Init, PFN_cuInit_v2000, RT_CUDA_ABI, 1)                                                     \
    X(DeviceGetCount, PFN_cuDeviceGetCount_v2000, RT_CUDA_ABI, 1)                                 \
    X(DeviceGet, PFN_cuDeviceGet_v2000, RT_CUDA_ABI, 1)                                           \
    X(DeviceGetName, PFN_cuDeviceGetName_v2000, RT_CUDA_ABI, 1)                                   \
    X(DeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000, RT_CUDA_ABI, 1)                         \
    X(DeviceTotalMem, PFN_cuDeviceTotalMem_v3020, RT_CUDA_ABI, 1)                                 \
    X(DevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000, RT_CUDA_ABI, 1)                 \
    X(DevicePrimaryCtxRelease, PFN_cuDevicePrimaryCtxRelease_v11000, RT_CUDA_ABI, 1)              \
    X(CtxSetCurrent, PFN_cuCtxSetCurrent_v4000, RT_CUDA_ABI, 1)                                   \
    X(CtxGetCurrent, PFN_cuCtxGetCurrent_v4000, RT_CUDA_ABI, 1)                                   \
    X(CtxSynchronize, PFN_cuCtxSynchronize_v2000, RT_CUDA_ABI, 1)                                 \
    X(MemAlloc, PFN_cuMemAlloc_v3020, RT_CUDA_ABI, 1)                                             \
    X(MemFree, PFN_cuMemFree_v3020, RT_CUDA_ABI, 1)                                               \
    X(MemcpyHtoD, PFN_cuMemcpyHtoD_v3020, RT_CUDA_ABI, 1)                                         \
    X(MemcpyDtoH, PFN_cuMemcpyDtoH_v3020, RT_CUDA_ABI, 1)                                         \
    X(MemcpyDtoD, PFN_cuMemcpyDtoD_v3020, RT_CUDA_ABI, 1)                                         \
    X(MemcpyHtoDAsync, PFN_cuMemcpyHtoDAsync_v3020, RT_CUDA_ABI, 1)                               \
    X(MemcpyDtoHAsync, PFN_cuMemcpyDtoHAsync_v3020, RT_CUDA_ABI, 1)                               \
    X(MemcpyDtoDAsync, PFN_cuMemcpyDtoDAsync_v3020, RT_CUDA_ABI, 1)                               \
    X(MemsetD32, PFN_cuMemsetD32_v3020, RT_CUDA_ABI, 1)                                           \
    X(MemsetD32Async, PFN_cuMemsetD32Async_v3020, RT_CUDA_ABI, 1)                                 \
    X(MemsetD16Async, PFN_cuMemsetD16Async_v3020, RT_CUDA_ABI, 1)                                 \
    X(MemsetD8Async, PFN_cuMemsetD8Async_v3020, RT_CUDA_ABI, 1)                                   \
    X(StreamCreate, PFN_cuStreamCreate_v2000, RT_CUDA_ABI, 1)                                     \
    X(StreamDestroy, PFN_cuStreamDestroy_v4000, RT_CUDA_ABI, 1)                                   \
    X(StreamSynchronize, PFN_cuStreamSynchronize_v2000, RT_CUDA_ABI, 1)                           \
    X(StreamWaitEvent, PFN_cuStreamWaitEvent_v3020, RT_CUDA_ABI, 1)                               \
    X(EventCreate, PFN_cuEventCreate_v2000, RT_CUDA_ABI, 1)                                       \
    X(EventDestroy, PFN_cuEventDestroy_v4000, RT_CUDA_ABI, 1)                                     \
    X(EventRecord, PFN_cuEventRecord_v2000, RT_CUDA_ABI, 1)                                       \
    X(EventSynchronize, PFN_cuEventSynchronize_v2000, RT_CUDA_ABI, 1)                             \
    X(EventElapsedTime, PFN_cuEventElapsedTime_v2000, RT_CUDA_ABI, 1)                             \
    X(ModuleLoadData, PFN_cuModuleLoadData_v2000, RT_CUDA_ABI, 1)                                 \
    X(ModuleUnload, PFN_cuModuleUnload_v2000, RT_CUDA_ABI, 1)                                     \
    X(ModuleGetFunction, PFN_cuModuleGetFunction_v2000, RT_CUDA_ABI, 1)                           \
    X(FuncGetAttribute, PFN_cuFuncGetAttribute_v2020, RT_CUDA_ABI, 1)                             \
    X(FuncSetAttribute, PFN_cuFuncSetAttribute_v9000, RT_CUDA_ABI, 1)                             \
    X(LaunchKernel, PFN_cuLaunchKernel_v4000, RT_CUDA_ABI, 1)                                     \
    X(OccupancyMaxActiveBlocksPerMultiprocessor, PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050, RT_CUDA_ABI, 0) \
    X(FuncGetParamInfo, PFN_cuFuncGetParamInfo_v12040, 12040, 0)                                 \
    X(TensorMapEncodeTiled, PFN_cuTensorMapEncodeTiled_v12000, 12000, 0)                          \
    X(TensorMapEncodeIm2col, PFN_cuTensorMapEncodeIm2col_v12000, 12000, 0)                        \
    X(MemGetAddressRange, PFN_cuMemGetAddressRange_v3020, RT_CUDA_ABI, 0)                         \
    X(StreamBeginCapture, PFN_cuStreamBeginCapture_v10010, RT_CUDA_ABI, 0)                        \
    X(StreamEndCapture, PFN_cuStreamEndCapture_v10000, RT_CUDA_ABI, 0)                            \
    X(GraphInstantiateWithFlags, PFN_cuGraphInstantiateWithFlags_v11040, RT_CUDA_ABI, 0)          \
    X(GraphLaunch, PFN_cuGraphLaunch_v10000, RT_CUDA_ABI, 0)                                      \
    X(GraphExecDestroy, PFN_cuGraphExecDestroy_v10000, RT_CUDA_ABI, 0)                            \
    X(GraphDestroy, PFN_cuGraphDestroy_v10000, RT_CUDA_ABI, 0)                                    \
    X(GraphExecUpdate, PFN_cuGraphExecUpdate_v12000, 12000, 0)

typedef struct rt_driver {
    void *lib;                               /* dlopen handle */
    const char *lib_name;                    /* as given to dlopen */
    PFN_cuGetProcAddress_v12000 proc;        /* cuGetProcAddress_v2, or NULL */
    PFN_cuGetProcAddress_v11030 proc_legacy; /* cuGetProcAddress (drivers 11.3 to 11.8) */
    int version;                             /* cuDriverGetVersion */
#define X(field, type, ver, required) type field;
    RT_DRIVER_CALLS(X)
#undef X
} rt_driver;

/* dlopen lib_name (NULL: "libcuda.so.1") and resolve every entry point.
 * On failure writes why into err and returns TILEC_RT_NO_DRIVER or
 * TILEC_RT_DRIVER_TOO_OLD; the driver is then unloaded. */
tilec_rt_status rt_driver_load(rt_driver *d, const char *lib_name, char *err, size_t err_size);
void rt_driver_unload(rt_driver *d);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", or "CUresult 2" when the
 * driver cannot name it, into buf. */
void rt_driver_describe(const rt_driver *d, CUresult r, char *buf, size_t size);

enum { RT_ERR_MAX = 1024 };

struct tilec_rt {
    tilec_rt_status open_status; /* TILEC_RT_OK, or why the open failed: every call returns it */
    int ordinal;
    CUdevice dev;
    CUcontext ctx; /* the retained primary context, or NULL */
    rt_driver drv;
    tilec_rt_device_props props; /* read once at open */
    pthread_mutex_t err_lock;    /* serializes writers of err */
    char err[RT_ERR_MAX];
    /* the kernel last launched (NULL once its module is unloaded): named
     * when a later call reports that a kernel faulted */
    _Atomic(const tilec_rt_kernel *) last_launch;
    /* the fill kernel (fill.c), loaded on first use under fill_lock;
     * its module unloaded by tilec_rt_close */
    pthread_mutex_t fill_lock;
    CUmodule fill_mod;
    CUfunction fill_fn;
};

/* Record a failure message and return st. */
tilec_rt_status rt_fail(tilec_rt *rt, tilec_rt_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Record "<what>: <CUresult name> (<description>)" and return the status r
 * maps to: TILEC_RT_DEVICE_NOMEM for CUDA_ERROR_OUT_OF_MEMORY,
 * TILEC_RT_NO_DEVICE for CUDA_ERROR_NO_DEVICE, TILEC_RT_KERNEL_FAULT (the
 * message then names the last kernel launched and says the context is
 * lost) for the errors a faulting kernel leaves behind, else st. */
tilec_rt_status rt_cu_fail(tilec_rt *rt, tilec_rt_status st, CUresult r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Nonzero for the CUresults of a kernel that faulted: they are sticky, no
 * CUDA call in the process succeeds again (closing, resetting the primary
 * context and opening anew do not help: the H100 run showed it). */
static inline int rt_kernel_fault(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
        return 1;
    default:
        return 0;
    }
}


/* Start of every call taking a handle: TILEC_RT_INVALID_ARG for NULL, the
 * open's status for a failed handle, else make the context current. */
tilec_rt_status rt_enter(tilec_rt *rt);

#endif
