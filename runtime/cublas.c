/* cublas.c: the cuBLAS built-ins of the extern registry ("cublas.sgemm",
 * "cublas.hgemm"): argument checks, then cuBLAS loaded lazily with dlopen
 * and its entry points found with dlsym. No cuBLAS header is included. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/externs.h"

/* ---- the few pieces of the cuBLAS ABI used here ----
 * Values checked against CUDA 13.0's cublas_api.h and library_types.h; they
 * are fixed by the cuBLAS ABI (unchanged since CUDA 11). C enums are passed
 * as int on every platform tilec supports. */
typedef int cublas_status;          /* cublasStatus_t: CUBLAS_STATUS_SUCCESS = 0 */
typedef struct cublas_context *cublas_handle; /* cublasHandle_t: an opaque pointer */
enum {
    CUBLAS_STATUS_SUCCESS_ = 0,
    CUBLAS_OP_N_ = 0,          /* cublasOperation_t */
    CUDA_R_32F_ = 0,           /* cudaDataType (library_types.h) */
    CUDA_R_16F_ = 2,           /* cudaDataType (library_types.h) */
    CUBLAS_COMPUTE_32F_ = 68,  /* cublasComputeType_t: f32 accumulate, no TF32 */
    CUBLAS_GEMM_DEFAULT_ = -1, /* cublasGemmAlgo_t */
    CUBLAS_DEFAULT_MATH_ = 0   /* cublasMath_t: no TF32 unless NVIDIA_TF32_OVERRIDE=1 */
};

typedef cublas_status (*pfn_create)(cublas_handle *);
typedef cublas_status (*pfn_destroy)(cublas_handle);
typedef cublas_status (*pfn_set_stream)(cublas_handle, void *stream); /* cudaStream_t == CUstream */
typedef cublas_status (*pfn_set_math_mode)(cublas_handle, int mode);
typedef cublas_status (*pfn_sgemm)(cublas_handle, int transa, int transb, int m, int n, int k, const float *alpha,
                                   const float *A, int lda, const float *B, int ldb, const float *beta, float *C,
                                   int ldc);
typedef cublas_status (*pfn_gemm_ex)(cublas_handle, int transa, int transb, int m, int n, int k, const void *alpha,
                                     const void *A, int atype, int lda, const void *B, int btype, int ldb,
                                     const void *beta, void *C, int ctype, int ldc, int compute, int algo);
typedef const char *(*pfn_status_text)(cublas_status);

static const char *const default_libraries[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so"};

struct tilec_cublas {
    pthread_mutex_t lock; /* guards everything below, and the handle's use */
    char *library;        /* asked for; NULL: default_libraries */
    int tried;            /* the load ran (its failure is kept in load_error) */
    void *lib;
    char lib_name[256];   /* the library that loaded */
    char load_error[768];
    pfn_create create;
    pfn_destroy destroy;
    pfn_set_stream set_stream;
    pfn_set_math_mode set_math_mode;
    pfn_sgemm sgemm;
    pfn_gemm_ex gemm_ex;
    pfn_status_text status_name, status_string; /* optional (cuBLAS 11.4+) */
    cublas_handle handle;
    tilec_rt *handle_rt; /* the runtime handle whose context made `handle` */
};

tilec_cublas *tilec_cublas_new(const char *library)
{
    tilec_cublas *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (library && !(c->library = strdup(library))) {
        free(c);
        return NULL;
    }
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c->library);
        free(c);
        return NULL;
    }
    return c;
}

void tilec_cublas_free(tilec_cublas *c)
{
    if (!c)
        return;
    if (c->handle && c->destroy) {
        /* cublasDestroy works on the context current in this thread. */
        if (c->handle_rt)
            (void)tilec_rt_make_current(c->handle_rt);
        c->destroy(c->handle);
    }
    if (c->lib)
        dlclose(c->lib);
    pthread_mutex_destroy(&c->lock);
    free(c->library);
    free(c);
}

/* ---- messages ---- */

static void put(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* "f32[127,33]" */
static void describe(const tilec_tensor *t, char *buf, size_t size)
{
    const char *name = (unsigned)t->dtype < TILEC_DT_COUNT ? tilec_dtype_name(t->dtype) : "?";
    size_t n = (size_t)snprintf(buf, size, "%s[", name);
    for (uint32_t i = 0; i < t->rank && i < TILEC_TENSOR_MAX_RANK && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)t->sizes[i]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
}

static void describe_status(const tilec_cublas *c, cublas_status s, char *buf, size_t size)
{
    const char *name = c->status_name ? c->status_name(s) : NULL;
    const char *text = c->status_string ? c->status_string(s) : NULL;
    if (name && text)
        snprintf(buf, size, "%s (%s)", name, text);
    else
        snprintf(buf, size, "cublasStatus_t %d", s);
}

/* ---- argument checks (no cuBLAS needed) ---- */

/* Row-major contiguous: the last stride 1, each other the product of the
 * sizes after it (dimensions of size 1 may have any stride). */
static int contiguous(const tilec_tensor *t)
{
    int64_t expect = 1;
    for (uint32_t i = t->rank; i-- > 0;) {
        if (t->sizes[i] != 1 && t->strides[i] != expect)
            return 0;
        if (t->sizes[i] < 0 || __builtin_mul_overflow(expect, t->sizes[i], &expect))
            return 0; /* no tensor has that many elements */
    }
    return 1;
}

/* One operand: a rank-2 contiguous matrix of dtype want (or want2 when it
 * is not TILEC_DT_COUNT) with a device pointer. */
static int check_matrix(const char *fn, const char *role, uint32_t index, const tilec_tensor *t, tilec_dtype want,
                        tilec_dtype want2, char *err, size_t errlen)
{
    char d[160];
    if (t->rank > TILEC_TENSOR_MAX_RANK) {
        put(err, errlen, "%s: %s %u has rank %u (at most %d)", fn, role, index, t->rank, TILEC_TENSOR_MAX_RANK);
        return -1;
    }
    describe(t, d, sizeof d);
    if (t->dtype != want && t->dtype != want2) {
        if (want2 == TILEC_DT_COUNT)
            put(err, errlen, "%s: %s %u is %s, expected %s", fn, role, index, d, tilec_dtype_name(want));
        else
            put(err, errlen, "%s: %s %u is %s, expected %s or %s", fn, role, index, d, tilec_dtype_name(want),
                tilec_dtype_name(want2));
        return -1;
    }
    if (t->rank != 2) {
        put(err, errlen, "%s: %s %u is %s, expected a matrix (rank 2)", fn, role, index, d);
        return -1;
    }
    for (int i = 0; i < 2; i++)
        if (t->sizes[i] < 0 || t->sizes[i] > INT_MAX) {
            put(err, errlen, "%s: %s %u is %s: each dimension must be in [0, %d]", fn, role, index, d, INT_MAX);
            return -1;
        }
    if (!contiguous(t)) {
        put(err, errlen, "%s: %s %u is %s with strides [%lld,%lld], expected row-major contiguous [%lld,1]", fn,
            role, index, d, (long long)t->strides[0], (long long)t->strides[1], (long long)t->sizes[1]);
        return -1;
    }
    if (!t->data && t->sizes[0] && t->sizes[1]) {
        put(err, errlen, "%s: %s %u (%s) has no data (a NULL device pointer)", fn, role, index, d);
        return -1;
    }
    return 0;
}

/* C[M,N] = A[M,K] @ B[K,N]: counts, dtypes, shapes. */
static int check_gemm(const char *fn, tilec_dtype in, tilec_dtype out, tilec_dtype out2, const tilec_tensor *inputs,
                      uint32_t ninputs, const tilec_tensor *outputs, uint32_t noutputs, char *err, size_t errlen)
{
    if (ninputs != 2 || noutputs != 1 || !inputs || !outputs) {
        put(err, errlen, "%s: expected 2 inputs and 1 output, got %u input%s and %u output%s", fn, ninputs,
            ninputs == 1 ? "" : "s", noutputs, noutputs == 1 ? "" : "s");
        return -1;
    }
    if (check_matrix(fn, "input", 0, &inputs[0], in, TILEC_DT_COUNT, err, errlen) ||
        check_matrix(fn, "input", 1, &inputs[1], in, TILEC_DT_COUNT, err, errlen) ||
        check_matrix(fn, "output", 0, &outputs[0], out, out2, err, errlen))
        return -1;
    const tilec_tensor *a = &inputs[0], *b = &inputs[1], *c = &outputs[0];
    char da[160], db[160], dc[160];
    describe(a, da, sizeof da);
    describe(b, db, sizeof db);
    describe(c, dc, sizeof dc);
    if (a->sizes[1] != b->sizes[0]) {
        put(err, errlen, "%s: inner dimensions differ: input 0 is %s, input 1 is %s (K = %lld and %lld)", fn, da, db,
            (long long)a->sizes[1], (long long)b->sizes[0]);
        return -1;
    }
    if (c->sizes[0] != a->sizes[0] || c->sizes[1] != b->sizes[1]) {
        put(err, errlen, "%s: output 0 is %s, expected [%lld,%lld] for %s @ %s", fn, dc, (long long)a->sizes[0],
            (long long)b->sizes[1], da, db);
        return -1;
    }
    return 0;
}

/* ---- loading (lock held) ---- */

static int load_symbols(tilec_cublas *c, const char *name)
{
    static const struct {
        const char *symbol;
        size_t offset;
        int required;
    } syms[] = {
        {"cublasCreate_v2", offsetof(tilec_cublas, create), 1},
        {"cublasDestroy_v2", offsetof(tilec_cublas, destroy), 1},
        {"cublasSetStream_v2", offsetof(tilec_cublas, set_stream), 1},
        {"cublasSetMathMode", offsetof(tilec_cublas, set_math_mode), 1},
        {"cublasSgemm_v2", offsetof(tilec_cublas, sgemm), 1},
        {"cublasGemmEx", offsetof(tilec_cublas, gemm_ex), 1},
        {"cublasGetStatusName", offsetof(tilec_cublas, status_name), 0},
        {"cublasGetStatusString", offsetof(tilec_cublas, status_string), 0},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *fn = dlsym(c->lib, syms[i].symbol);
        if (!fn && syms[i].required) {
            snprintf(c->load_error, sizeof c->load_error, "cuBLAS library %s lacks %s (cuBLAS 11 or newer needed)",
                     name, syms[i].symbol);
            return -1;
        }
        /* A data pointer into a function-pointer field: POSIX guarantees
         * one representation (dlsym relies on it too). */
        memcpy((char *)c + syms[i].offset, &fn, sizeof fn);
    }
    return 0;
}

static int load_locked(tilec_cublas *c)
{
    if (c->tried)
        return c->lib ? 0 : -1;
    c->tried = 1;
    const char *const *names = c->library ? (const char *const *)&c->library : default_libraries;
    size_t nnames = c->library ? 1 : sizeof default_libraries / sizeof default_libraries[0];
    char first_why[512] = "";
    for (size_t i = 0; i < nnames; i++) {
        /* RTLD_NODELETE, as for libcuda: cuBLAS (its static CUDA runtime and
         * C++ runtime) stays mapped after dlclose, so that its exit-time
         * handlers and other registries' handles never point into an
         * unmapped library; dlclose only drops this registry's reference. */
        c->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (c->lib) {
            snprintf(c->lib_name, sizeof c->lib_name, "%s", names[i]);
            break;
        }
        if (i == 0) {
            const char *why = dlerror();
            snprintf(first_why, sizeof first_why, "%s", why ? why : "unknown dlopen error");
        }
    }
    if (!c->lib) {
        snprintf(c->load_error, sizeof c->load_error, "cuBLAS not found (%s): %s", names[0], first_why);
        return -1;
    }
    if (load_symbols(c, c->lib_name) != 0) {
        dlclose(c->lib);
        c->lib = NULL;
        return -1;
    }
    return 0;
}

/* Load cuBLAS, make rt's context current, have a handle for it on
 * `stream`. Lock held. */
static int prepare_locked(tilec_cublas *c, const char *fn, tilec_rt *rt, void *stream, char *err, size_t errlen)
{
    if (load_locked(c) != 0) {
        put(err, errlen, "%s: %s", fn, c->load_error);
        return -1;
    }
    if (!rt) {
        put(err, errlen, "%s: no runtime handle (rt is NULL)", fn);
        return -1;
    }
    tilec_rt_status st = tilec_rt_make_current(rt);
    if (st != TILEC_RT_OK) {
        put(err, errlen, "%s: no usable CUDA context: %s", fn, tilec_rt_last_error(rt));
        return -1;
    }
    char why[256];
    cublas_status s;
    if (c->handle && c->handle_rt != rt) {
        c->destroy(c->handle); /* made on another runtime handle's context */
        c->handle = NULL;
        c->handle_rt = NULL;
    }
    if (!c->handle) {
        cublas_handle h = NULL;
        if ((s = c->create(&h)) != CUBLAS_STATUS_SUCCESS_) {
            describe_status(c, s, why, sizeof why);
            put(err, errlen, "%s: cublasCreate_v2 (%s) failed: %s", fn, c->lib_name, why);
            return -1;
        }
        /* f32 GEMMs stay f32: no TF32 tensor-op downconversion. */
        if ((s = c->set_math_mode(h, CUBLAS_DEFAULT_MATH_)) != CUBLAS_STATUS_SUCCESS_) {
            describe_status(c, s, why, sizeof why);
            put(err, errlen, "%s: cublasSetMathMode(CUBLAS_DEFAULT_MATH) failed: %s", fn, why);
            c->destroy(h);
            return -1;
        }
        c->handle = h;
        c->handle_rt = rt;
    }
    if ((s = c->set_stream(c->handle, stream)) != CUBLAS_STATUS_SUCCESS_) {
        describe_status(c, s, why, sizeof why);
        put(err, errlen, "%s: cublasSetStream_v2 failed: %s", fn, why);
        return -1;
    }
    return 0;
}

/* K = 0: C is the empty sum. Zeroed here with a 32-bit fill on the stream
 * where the byte count allows (f32, f16 with an even count), so that the
 * result does not depend on how cuBLAS treats k = 0; 1 when it could not
 * be (an odd f16 count: cuBLAS then gets k = 0 with beta = 0). */
static int zero_output(const char *fn, tilec_rt *rt, void *stream, const tilec_tensor *c, char *err, size_t errlen)
{
    size_t bytes = (size_t)c->sizes[0] * (size_t)c->sizes[1] * tilec_dtype_size(c->dtype);
    if (bytes % 4)
        return 1;
    if (!rt) {
        put(err, errlen, "%s: no runtime handle (rt is NULL)", fn);
        return -1;
    }
    if (tilec_rt_memset_d32_async(rt, c->data, 0, bytes / 4, stream) != TILEC_RT_OK) {
        put(err, errlen, "%s: zeroing the output (K = 0) failed: %s", fn, tilec_rt_last_error(rt));
        return -1;
    }
    return 0;
}

/* ---- the built-ins ----
 * cuBLAS is column-major; a row-major X[r,c] is the column-major X^T with
 * leading dimension c. So C = A B is computed as C^T = B^T A^T: a
 * column-major GEMM of (m, n, k) = (N, M, K) with B (ld N) first, A (ld K)
 * second, C (ld N), no transposes. */

/* What both GEMMs do first: check the arguments and the state, read
 * M, N, K, and do the degenerate shapes themselves. 1: call cuBLAS;
 * 0: done (nothing to write, or K = 0 zeroed the output); -1: error in err. */
static int gemm_begin(const char *fn, tilec_dtype in, tilec_dtype out, tilec_dtype out2, const tilec_cublas *c,
                      tilec_rt *rt, void *stream, const tilec_tensor *inputs, uint32_t ninputs, tilec_tensor *outputs,
                      uint32_t noutputs, char *err, size_t errlen, int *M, int *N, int *K)
{
    if (check_gemm(fn, in, out, out2, inputs, ninputs, outputs, noutputs, err, errlen))
        return -1;
    if (!c) {
        put(err, errlen, "%s: no cuBLAS state (user pointer is NULL)", fn);
        return -1;
    }
    *M = (int)inputs[0].sizes[0];
    *K = (int)inputs[0].sizes[1];
    *N = (int)inputs[1].sizes[1];
    if (*M == 0 || *N == 0)
        return 0; /* nothing to write */
    if (*K == 0) {
        int r0 = zero_output(fn, rt, stream, &outputs[0], err, errlen);
        if (r0 <= 0)
            return r0;
    }
    return 1;
}

int tilec_cublas_sgemm(void *cublas, tilec_rt *rt, void *stream, const tilec_tensor *inputs, uint32_t ninputs,
                       tilec_tensor *outputs, uint32_t noutputs, char *err, size_t errlen)
{
    static const char fn[] = "cublas.sgemm";
    tilec_cublas *c = cublas;
    int M, N, K, go = gemm_begin(fn, TILEC_DT_F32, TILEC_DT_F32, TILEC_DT_COUNT, c, rt, stream, inputs, ninputs,
                                 outputs, noutputs, err, errlen, &M, &N, &K);
    if (go <= 0)
        return go;
    pthread_mutex_lock(&c->lock);
    int r = prepare_locked(c, fn, rt, stream, err, errlen);
    if (r == 0) {
        const float alpha = 1.0f, beta = 0.0f;
        cublas_status s = c->sgemm(c->handle, CUBLAS_OP_N_, CUBLAS_OP_N_, N, M, K, &alpha,
                                   (const float *)(uintptr_t)inputs[1].data, N,
                                   (const float *)(uintptr_t)inputs[0].data, K ? K : 1, &beta,
                                   (float *)(uintptr_t)outputs[0].data, N);
        if (s != CUBLAS_STATUS_SUCCESS_) {
            char why[256];
            describe_status(c, s, why, sizeof why);
            put(err, errlen, "%s: cublasSgemm_v2(m=%d, n=%d, k=%d) failed: %s", fn, N, M, K, why);
            r = -1;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}

int tilec_cublas_hgemm(void *cublas, tilec_rt *rt, void *stream, const tilec_tensor *inputs, uint32_t ninputs,
                       tilec_tensor *outputs, uint32_t noutputs, char *err, size_t errlen)
{
    static const char fn[] = "cublas.hgemm";
    tilec_cublas *c = cublas;
    int M, N, K, go = gemm_begin(fn, TILEC_DT_F16, TILEC_DT_F32, TILEC_DT_F16, c, rt, stream, inputs, ninputs,
                                 outputs, noutputs, err, errlen, &M, &N, &K);
    if (go <= 0)
        return go;
    int ctype = outputs[0].dtype == TILEC_DT_F16 ? CUDA_R_16F_ : CUDA_R_32F_;
    pthread_mutex_lock(&c->lock);
    int r = prepare_locked(c, fn, rt, stream, err, errlen);
    if (r == 0) {
        const float alpha = 1.0f, beta = 0.0f; /* f32, as the compute type says */
        cublas_status s =
            c->gemm_ex(c->handle, CUBLAS_OP_N_, CUBLAS_OP_N_, N, M, K, &alpha, (const void *)(uintptr_t)inputs[1].data,
                       CUDA_R_16F_, N, (const void *)(uintptr_t)inputs[0].data, CUDA_R_16F_, K ? K : 1, &beta,
                       (void *)(uintptr_t)outputs[0].data, ctype, N, CUBLAS_COMPUTE_32F_, CUBLAS_GEMM_DEFAULT_);
        if (s != CUBLAS_STATUS_SUCCESS_) {
            char why[256];
            describe_status(c, s, why, sizeof why);
            put(err, errlen, "%s: cublasGemmEx(m=%d, n=%d, k=%d, C %s) failed: %s", fn, N, M, K,
                ctype == CUDA_R_16F_ ? "CUDA_R_16F" : "CUDA_R_32F", why);
            r = -1;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return r;
}
