/* runtime.h: the public API of the tilec runtime's first layer: the CUDA
 * driver loaded at run time (device, memory, streams, events, modules,
 * static kernel launch) and the NVRTC compile service.
 *
 * Plain C types only: device pointers are uint64_t, streams, events and
 * the like are void *. This header never includes cuda.h and compiles on a
 * machine with no CUDA installed. */
#ifndef TILEC_RUNTIME_H
#define TILEC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "tilec/param_kind.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ORDER STATUS: the values are part of the ABI (the Python package reads
 * them through ctypes); add new statuses at the end, before the count. */
typedef enum tilec_rt_status {
    TILEC_RT_OK = 0,
    TILEC_RT_NO_DRIVER = 1,      /* libcuda.so.1 could not be loaded */
    TILEC_RT_NO_DEVICE = 2,      /* the driver sees no (such) CUDA device */
    TILEC_RT_DRIVER_ERROR = 3,   /* a driver call failed: see the last error */
    TILEC_RT_COMPILE_ERROR = 4,  /* NVRTC rejected the source or an option, or is missing: see the log */
    TILEC_RT_NOMEM = 5,          /* out of host memory */
    TILEC_RT_INVALID_ARG = 6,    /* a bad argument to a runtime call */
    TILEC_RT_LAUNCH_ERROR = 7,   /* cuLaunchKernel failed */
    TILEC_RT_DEVICE_NOMEM = 8,   /* out of device memory */
    TILEC_RT_DRIVER_TOO_OLD = 9, /* the driver lacks cuGetProcAddress or an entry point */
    TILEC_RT_MODULE_ERROR = 10,  /* a module image was rejected (malformed, wrong arch) */
    TILEC_RT_NOT_FOUND = 11,     /* no kernel of that name in the module (or a cache miss) */
    TILEC_RT_IO_ERROR = 12,      /* a file could not be written or read: see the message */
    TILEC_RT_KERNEL_FAULT = 13,  /* a kernel faulted (trap, illegal address...): the context is lost */
    TILEC_RT_STATUS_COUNT        /* not a status */
} tilec_rt_status;

/* One English sentence explaining a status (never NULL). */
const char *tilec_rt_status_string(tilec_rt_status s);

/* ---- the runtime handle: one per device, no global state ---- */

typedef struct tilec_rt tilec_rt;

/* Load the driver (libcuda.so.1 through dlopen, every entry point through
 * cuGetProcAddress), cuInit, pick device `device`, retain its primary
 * context and make it current in the calling thread.
 *
 * Like sqlite3_open, *out receives a handle even when the open fails (it is
 * NULL only with TILEC_RT_NOMEM or TILEC_RT_INVALID_ARG): read
 * tilec_rt_last_error() from it, then tilec_rt_close() it. Every other call
 * on a failed handle returns the status of the open (TILEC_RT_NO_DRIVER,
 * TILEC_RT_NO_DEVICE, ...) and changes nothing. */
tilec_rt_status tilec_rt_open(int device, tilec_rt **out);

/* The same with another driver library: a file name searched like
 * dlopen() does, or a path. NULL means "libcuda.so.1". (Tests use it to
 * load a fake driver.) */
tilec_rt_status tilec_rt_open_driver(const char *driver_library, int device, tilec_rt **out);

/* Release the primary context. Unload modules and free device memory,
 * streams and events first: close does not track them. NULL is a no-op. */
void tilec_rt_close(tilec_rt *rt);

/* The message of the last failure on this handle: it names the driver call
 * and the CUresult (name and description), or says what was wrong with an
 * argument. "" when nothing failed yet. The string belongs to the handle
 * and changes at the next failure; with several threads on one handle,
 * read it from the thread that saw the failure before another one fails.
 * Never NULL (NULL rt gives a fixed message). */
const char *tilec_rt_last_error(const tilec_rt *rt);

/* Make the handle's context current in the calling thread. tilec_rt_open
 * does it for the opening thread, and every call taking a tilec_rt does it
 * when needed; call it once in any other thread that launches kernels,
 * since tilec_rt_launch does nothing but cuLaunchKernel. */
tilec_rt_status tilec_rt_make_current(tilec_rt *rt);

typedef struct tilec_rt_device_props {
    char name[256];                /* "NVIDIA H100 80GB HBM3" */
    char arch[16];                 /* "sm_90a" on a 9.0 device, else "sm_XY": the NVRTC target of this device */
    int ordinal;                   /* the device index given to tilec_rt_open */
    int sm_major, sm_minor;        /* compute capability */
    int multiprocessors;
    int max_threads_per_block;
    int warp_size;
    int driver_version;            /* cuDriverGetVersion: 12080 is CUDA 12.8 */
    uint64_t l2_bytes;
    uint64_t smem_per_block;       /* default limit per block (48 KiB) */
    uint64_t smem_per_block_optin; /* most dynamic + static shared memory a block may opt in to */
    uint64_t total_mem;            /* device memory, in bytes */
} tilec_rt_device_props;

/* What the device is: name, architecture, sizes and limits. */
tilec_rt_status tilec_rt_device_info(tilec_rt *rt, tilec_rt_device_props *info);

/* The number of devices the loaded driver sees. */
tilec_rt_status tilec_rt_device_count(tilec_rt *rt, int *count);

/* Wait for all work of the context (cuCtxSynchronize). */
tilec_rt_status tilec_rt_synchronize(tilec_rt *rt);

/* ---- device memory. Device pointers are uint64_t (a CUdeviceptr). ---- */

/* bytes == 0 gives *out = 0 and succeeds; freeing 0 does nothing. */
tilec_rt_status tilec_rt_malloc(tilec_rt *rt, size_t bytes, uint64_t *out);
tilec_rt_status tilec_rt_free(tilec_rt *rt, uint64_t ptr);

/* Synchronous copies and fill (count 32-bit words). A size of 0 does nothing. */
tilec_rt_status tilec_rt_memcpy_htod(tilec_rt *rt, uint64_t dst, const void *src, size_t bytes);
tilec_rt_status tilec_rt_memcpy_dtoh(tilec_rt *rt, void *dst, uint64_t src, size_t bytes);
tilec_rt_status tilec_rt_memcpy_dtod(tilec_rt *rt, uint64_t dst, uint64_t src, size_t bytes);
tilec_rt_status tilec_rt_memset_d32(tilec_rt *rt, uint64_t dst, uint32_t value, size_t count);
/* The allocation that holds device address ptr: its base and size. */
tilec_rt_status tilec_rt_mem_range(tilec_rt *rt, uint64_t ptr, uint64_t *base, size_t *size);

/* The same, ordered on a stream (NULL: the legacy default stream). Host
 * memory must stay valid until the stream reaches the copy. */
tilec_rt_status tilec_rt_memcpy_htod_async(tilec_rt *rt, uint64_t dst, const void *src, size_t bytes,
                                           void *stream);
tilec_rt_status tilec_rt_memcpy_dtoh_async(tilec_rt *rt, void *dst, uint64_t src, size_t bytes,
                                           void *stream);
tilec_rt_status tilec_rt_memcpy_dtod_async(tilec_rt *rt, uint64_t dst, uint64_t src, size_t bytes,
                                           void *stream);
tilec_rt_status tilec_rt_memset_d32_async(tilec_rt *rt, uint64_t dst, uint32_t value, size_t count,
                                          void *stream);

/* Every one of count elements of es bytes (1, 2, 4 or 8) at dst set to the
 * bit pattern in the low es bytes of bits (the zeros, ones and full of
 * graphs), ordered on stream (NULL: the legacy default stream). A pattern
 * that repeats every 1, 2 or 4 bytes is one cuMemsetD8/D16/D32Async; other
 * 8-byte patterns run a small fill kernel (loaded into the context on
 * first use). A capturing stream records either into its CUDA graph. dst
 * must be aligned to es; count 0 does nothing. */
tilec_rt_status tilec_rt_fill_async(tilec_rt *rt, uint64_t dst, uint64_t bits, unsigned es, size_t count,
                                    void *stream);

/* ---- streams and events (CUstream / CUevent as void *) ---- */

enum {
    TILEC_RT_STREAM_DEFAULT = 0,     /* synchronizes with the legacy default stream */
    TILEC_RT_STREAM_NON_BLOCKING = 1 /* does not */
};

tilec_rt_status tilec_rt_stream_create(tilec_rt *rt, unsigned flags, void **out);
tilec_rt_status tilec_rt_stream_destroy(tilec_rt *rt, void *stream);
tilec_rt_status tilec_rt_stream_synchronize(tilec_rt *rt, void *stream);

/* Events record timing (CU_EVENT_DEFAULT). */
tilec_rt_status tilec_rt_event_create(tilec_rt *rt, void **out);
tilec_rt_status tilec_rt_event_destroy(tilec_rt *rt, void *event);
tilec_rt_status tilec_rt_event_record(tilec_rt *rt, void *event, void *stream);
tilec_rt_status tilec_rt_event_synchronize(tilec_rt *rt, void *event);
/* Work enqueued on `stream` after this waits until `event` (as last
 * recorded) completes (cuStreamWaitEvent): orders two streams without the
 * host waiting, and joins a stream into another's CUDA-graph capture. */
tilec_rt_status tilec_rt_stream_wait_event(tilec_rt *rt, void *stream, void *event);
/* Milliseconds between two recorded, completed events. */
tilec_rt_status tilec_rt_event_elapsed_ms(tilec_rt *rt, void *start, void *end, float *ms);

/* ---- modules, kernels and the static launch ---- */

typedef struct tilec_rt_module tilec_rt_module;
typedef struct tilec_rt_kernel tilec_rt_kernel;

#define TILEC_RT_MAX_PARAMS 64            /* most parameters of a launched kernel */
#define TILEC_RT_MAX_BLOCK 1024           /* most threads per block */
#define TILEC_RT_DEFAULT_SMEM (48u << 10) /* dynamic shared memory needing no opt-in */

/* A tensor list argument (docs/language.md §4.3): n tensors, tensor i at
 * device address ptrs[i] holding numels[i] elements (>= 0). Every list
 * argument of one launch has the same n. */
typedef struct tilec_rt_list {
    uint32_t n;
    const uint64_t *ptrs;
    const int64_t *numels;
} tilec_rt_list;

/* One kernel argument; the member read is the one its parameter kind
 * names. A tensor list (TILEC_RT_PARAM_LIST) is `list` for a program's
 * launch (tilec_program_launch, which packs it and splits a long list
 * into several launches), and for tilec_rt_launch `ptr`: the address of
 * its packed table (tilec/param_kind.h: count, addresses, counts). */
typedef union tilec_rt_arg {
    const tilec_rt_list *list;
    uint64_t ptr;
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
    uint32_t u32;
    uint64_t u64;
} tilec_rt_arg;

/* How a kernel is launched: a 1-D block of block_x threads, dyn_smem_bytes
 * of dynamic shared memory, nparams parameters of the given kinds. */
typedef struct tilec_rt_launch_meta {
    uint32_t block_x;
    uint32_t dyn_smem_bytes;
    uint32_t nparams;
    const tilec_rt_param_kind *kinds; /* nparams entries; copied by kernel_get */
} tilec_rt_launch_meta;

/* Check metadata without a device: 1 <= block_x <= 1024, nparams <= 64,
 * kinds present and known. On failure writes why into why[why_size] (when
 * why is not NULL) and returns TILEC_RT_INVALID_ARG. */
tilec_rt_status tilec_rt_launch_meta_check(const tilec_rt_launch_meta *meta, char *why, size_t why_size);

/* The size in bytes of a parameter kind (4 or 8), 0 for an unknown kind
 * and a tensor list (its table's size is the kernel's: tilec_rt_list_bytes). */
size_t tilec_rt_param_size(tilec_rt_param_kind kind);

/* Load a module image: a CUBIN (ELF), a fatbinary, or NUL-terminated PTX.
 * The image is checked for truncation before the driver sees it
 * (TILEC_RT_MODULE_ERROR); the caller may free it once this returns. */
tilec_rt_status tilec_rt_module_load(tilec_rt *rt, const void *image, size_t size, tilec_rt_module **out);

/* Unload the module and free every kernel got from it. NULL is a no-op. */
void tilec_rt_module_unload(tilec_rt_module *mod);

/* Resolve kernel `name` (an extern "C" __global__ function) once and keep
 * its CUfunction with a copy of meta. Checks the metadata, the block size
 * against the kernel's register-limited maximum and, where the driver can
 * tell (CUDA 12.4+), each parameter's size against its kind. When
 * dyn_smem_bytes exceeds 48 KiB it sets the kernel's
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES. The kernel lives until
 * its module is unloaded. Not thread-safe per module. */
tilec_rt_status tilec_rt_kernel_get(tilec_rt_module *mod, const char *name, const tilec_rt_launch_meta *meta,
                                    tilec_rt_kernel **out);

/* The kernel's name and metadata (kinds point into the kernel). */
const char *tilec_rt_kernel_name(const tilec_rt_kernel *k);
tilec_rt_launch_meta tilec_rt_kernel_meta(const tilec_rt_kernel *k);

/* Launch on grid[0] x grid[1] x grid[2] blocks of the kernel's block size
 * on `stream` (NULL: the legacy default stream), args[i] read as kinds[i].
 * Packs the argument addresses into a fixed array and calls cuLaunchKernel:
 * no lookup, no allocation, no other driver call. The handle's context must
 * be current in the calling thread (see tilec_rt_make_current). Nothing is
 * checked here: k and grid must be valid, args must hold the kernel's
 * nparams arguments (NULL when it has none). On failure returns
 * TILEC_RT_LAUNCH_ERROR and the last error names the kernel. */
tilec_rt_status tilec_rt_launch(const tilec_rt_kernel *k, const uint32_t grid[3], const tilec_rt_arg *args,
                                void *stream);

/* ---- NVRTC: CUDA C++ source to CUBIN; needs no GPU and no driver ---- */

/* Compile `source` (program_name, e.g. "add_relu.cu", names it in the log;
 * NULL: "kernel.cu") to a CUBIN for arch ("sm_90", "sm_90a", "sm_100f"...).
 * Options, fixed per call, before the extra ones:
 *   --gpu-architecture=<arch> -default-device --std=c++17 [-lineinfo: TILEC_LINEINFO=1]
 *   -I<CUDA include dir>   (so <cuda_fp16.h>, <cuda_bf16.h>, <mma.h> resolve)
 * On success *cubin is a malloc'd image of *cubin_size bytes and *log the
 * NVRTC log when it is not empty (warnings), else NULL. On failure *cubin
 * is NULL and *log holds the whole NVRTC log or says what was wrong with an
 * argument. The caller frees both with free(); log may be NULL to ignore
 * it. Thread-safe (NVRTC is loaded once for the process). */
tilec_rt_status tilec_nvrtc_compile(const char *source, const char *program_name, const char *arch,
                                    const char *const *extra_options, size_t nopts, void **cubin,
                                    size_t *cubin_size, char **log);

/* The same compile in a child process (fork), the result sent back through
 * a pipe: NVRTC serializes compiles within one process, so parallel
 * compiles need processes. Falls back to an in-process compile when fork
 * fails. A worker that dies is a TILEC_RT_COMPILE_ERROR whose log says so. */
tilec_rt_status tilec_nvrtc_compile_isolated(const char *source, const char *program_name, const char *arch,
                                             const char *const *extra_options, size_t nopts, void **cubin,
                                             size_t *cubin_size, char **log);

/* The version of the loaded NVRTC (13, 0); TILEC_RT_COMPILE_ERROR when
 * NVRTC cannot be loaded (tilec_nvrtc_load_error says why). */
tilec_rt_status tilec_nvrtc_version(int *major, int *minor);

/* NVRTC is loaded with dlopen on first use, not linked: $TILEC_NVRTC (a
 * path or a library name) alone when set, else libnvrtc.so.13,
 * libnvrtc.so.12 and libnvrtc.so through the loader's search path, then
 * under lib64/ and lib/ of $TILEC_CUDA_HOME, $CUDA_HOME, $CUDA_PATH and the
 * build's default toolkit. NULL when it is loaded (loading it if not yet
 * tried), else why not: the names and places tried, and what to set. A
 * compile without NVRTC is a TILEC_RT_COMPILE_ERROR whose log is this
 * message. */
const char *tilec_nvrtc_load_error(void);

/* TILEC_RT_OK when NVRTC can compile for arch ("sm_90", "sm_90a",
 * "sm_100f": the number is one NVRTC lists), TILEC_RT_INVALID_ARG when not,
 * TILEC_RT_COMPILE_ERROR when NVRTC cannot say. With known not NULL, the
 * list ("sm_75, sm_80, ...") is copied there (cut to size). */
tilec_rt_status tilec_nvrtc_arch_supported(const char *arch, char *known, size_t size);

/* The CUDA include directory the compiles pass with -I (the first of
 * $TILEC_CUDA_HOME/include, $CUDA_HOME/include, $CUDA_PATH/include and the
 * build's default that holds cuda_fp16.h), copied into buf; "" when none
 * does. Returns TILEC_RT_INVALID_ARG when buf is too small. */
tilec_rt_status tilec_nvrtc_include_dir(char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
