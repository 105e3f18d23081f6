/* externs.h: the extern kernel registry: C functions called by name from
 * the wrappers (a .tile `extern` declaration names the symbol), with the
 * cuBLAS GEMMs built in ("cublas.sgemm", "cublas.hgemm").
 *
 * A registry is an object (no global state): the generated C wrapper and
 * the Python package each hold one, or share one the application made.
 * cuBLAS is loaded with dlopen on the first built-in call, never at link
 * time: no cuBLAS headers or libraries are needed to build tilec. */
#ifndef TILEC_EXTERNS_H
#define TILEC_EXTERNS_H

#include <stddef.h>
#include <stdint.h>

#include "tilec/runtime.h"
#include "tilec/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An extern kernel: reads `inputs`, writes `outputs` (already allocated by
 * the caller with the shapes the .tile extern declaration gives), enqueued
 * on `stream` (a CUstream; NULL: the legacy default stream). Returns 0, or
 * nonzero with a message in err[errlen] (always NUL-terminated by the
 * registry before the call, so writing nothing is allowed). */
typedef int (*tilec_extern_fn)(void *user, tilec_rt *rt, void *stream, const tilec_tensor *inputs, uint32_t ninputs,
                               tilec_tensor *outputs, uint32_t noutputs, char *err, size_t errlen);

typedef struct tilec_externs tilec_externs; /* a registry object: no global state */

/* A registry with the built-ins registered: "cublas.sgemm", "cublas.hgemm".
 * NULL when out of memory. */
tilec_externs *tilec_externs_new(void);

/* The same, the built-ins loading another cuBLAS library (a file name
 * searched like dlopen() does, or a path) instead of the default search
 * "libcublas.so.13", "libcublas.so.12", "libcublas.so". NULL means the
 * default search. (Tests use it to see the message of a missing cuBLAS.) */
tilec_externs *tilec_externs_new_cublas(const char *cublas_library);

/* Free the registry. Also destroys the cuBLAS handle and dlclose's cuBLAS
 * when a built-in loaded it: free the registry before closing the tilec_rt
 * its cuBLAS calls ran on. NULL is a no-op. */
void tilec_externs_free(tilec_externs *x);

/* Register fn (with its `user` pointer) as `symbol`, replacing what was
 * registered under that name (a built-in too). The symbol is copied.
 * Returns 0, or -1 when an argument is NULL, the symbol empty, or memory
 * runs out (the registry is then unchanged). */
int tilec_externs_register(tilec_externs *x, const char *symbol, tilec_extern_fn fn, void *user);

/* Call `symbol`'s function with these arguments.
 *   TILEC_RT_OK            it returned 0
 *   TILEC_RT_NOT_FOUND     nothing is registered under that name: the last
 *                          error reads  no extern kernel registered as "x"
 *   TILEC_RT_LAUNCH_ERROR  it returned nonzero: the last error is its
 *                          message (or, when it wrote none, says which
 *                          extern kernel failed with what value)
 *   TILEC_RT_INVALID_ARG   x or symbol NULL, or a NULL tensor array with a
 *                          nonzero count
 * The function runs without any registry lock held: it may call the
 * registry (another extern) itself. */
tilec_rt_status tilec_externs_call(tilec_externs *x, const char *symbol, tilec_rt *rt, void *stream,
                                   const tilec_tensor *inputs, uint32_t ninputs, tilec_tensor *outputs,
                                   uint32_t noutputs);

/* The message of the last failed call on this registry; "" when none
 * failed yet. It belongs to the registry and changes at the next failure:
 * with several threads on one registry, read it before another call fails.
 * Never NULL (NULL x gives a fixed message). */
const char *tilec_externs_last_error(const tilec_externs *x);

/* Thread safety: register and call may run concurrently from several
 * threads (a mutex guards the table and the last error). The built-ins
 * share one cuBLAS handle per registry, guarded by its own mutex from the
 * lazy load to the end of the enqueue (cublasSetStream + the GEMM), so
 * concurrent GEMMs on one registry serialize their enqueues only. */

/* ---- the cuBLAS back end of the built-ins (runtime/cublas.c) ----
 * Also usable alone, e.g. to register the GEMMs under other names. */

typedef struct tilec_cublas tilec_cublas;

/* A lazy cuBLAS loader: nothing is loaded until the first GEMM. library:
 * as for tilec_externs_new_cublas. NULL when out of memory. */
tilec_cublas *tilec_cublas_new(const char *library);

/* Destroy the handle and dlclose cuBLAS if they were made. NULL: no-op. */
void tilec_cublas_free(tilec_cublas *c);

/* tilec_extern_fn's, their `user` a tilec_cublas *. Row-major contiguous
 * matrices, checked (ranks, dtypes, shapes, contiguity, non-NULL data)
 * before cuBLAS is loaded:
 *   sgemm: f32 A[M,K], f32 B[K,N] -> f32 C[M,N]   (TF32 off: exact f32 FMA)
 *   hgemm: f16 A[M,K], f16 B[K,N] -> f32 or f16 C[M,N]  (f32 accumulate)
 * M = 0 or N = 0 does nothing; K = 0 zeroes C with a fill on the stream
 * (cuBLAS is not loaded) unless C's byte count is not a multiple of 4 (an
 * odd f16 count), then cuBLAS gets k = 0, beta = 0. The handle is created
 * on rt's context at the first call (and again when a later call brings
 * another rt). */
int tilec_cublas_sgemm(void *cublas, tilec_rt *rt, void *stream, const tilec_tensor *inputs, uint32_t ninputs,
                       tilec_tensor *outputs, uint32_t noutputs, char *err, size_t errlen);
int tilec_cublas_hgemm(void *cublas, tilec_rt *rt, void *stream, const tilec_tensor *inputs, uint32_t ninputs,
                       tilec_tensor *outputs, uint32_t noutputs, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
