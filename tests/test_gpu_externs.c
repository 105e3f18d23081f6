/* test_gpu_externs.c: the cuBLAS built-ins of the extern registry on the
 * GPU against a CPU reference in double: random inputs, sizes that are and
 * are not multiples of any tile (127x65x33, 256x256x256, as MxNxK),
 * outputs poisoned with NaN first, on the default stream and on a created
 * one. Without a GPU the binary prints one SKIP line and succeeds. */
#include <criterion/criterion.h>
#include <math.h>

#include "gpu_helpers.h"
#include "helpers.h"
#include "tilec/externs.h"

static tilec_rt *rt;
static tilec_externs *ext;
static unsigned long long rng;

#define CHECK_RT(call)                                                                                           \
    do {                                                                                                         \
        tilec_rt_status st_ = (call);                                                                            \
        cr_assert_eq(st_, TILEC_RT_OK, "%s: %s: %s", #call, tilec_rt_status_string(st_), tilec_rt_last_error(rt)); \
    } while (0)

static void gpu_setup(void)
{
    tilec_rt_status st = tilec_rt_open(0, &rt);
    cr_assert_eq(st, TILEC_RT_OK, "%s: %s", tilec_rt_status_string(st), tilec_rt_last_error(rt));
    ext = tilec_externs_new();
    cr_assert(ext);
    rng = gk_seed();
    cr_log_info("seed %llu", rng);
}

static void gpu_teardown(void)
{
    tilec_externs_free(ext); /* before the runtime handle its cuBLAS handle ran on */
    ext = NULL;
    tilec_rt_close(rt);
    rt = NULL;
}

TestSuite(gpu_externs, .init = gpu_setup, .fini = gpu_teardown);

static uint64_t upload(const void *host, size_t bytes)
{
    uint64_t p = 0;
    CHECK_RT(tilec_rt_malloc(rt, bytes, &p));
    CHECK_RT(tilec_rt_memcpy_htod(rt, p, host, bytes));
    return p;
}

/* C[M,N] = A[M,K] @ B[K,N] in double. */
static void reference(const float *a, const float *b, double *c, int M, int N, int K)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += (double)a[(size_t)i * K + k] * (double)b[(size_t)k * N + j];
            c[(size_t)i * N + j] = s;
        }
}

/* One GEMM through the registry: symbol on `stream`, the inputs of dtype
 * in_dt (f32 or f16), C of out_dt; checks the relative L2 error. */
static void run_gemm(const char *symbol, tilec_dtype in_dt, tilec_dtype out_dt, int M, int N, int K, void *stream,
                     double tol)
{
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b), *c = malloc(nc * sizeof *c);
    double *ref = malloc(nc * sizeof *ref);
    uint16_t *ha = malloc(na * 2), *hb = malloc(nb * 2), *hc = malloc(nc * 2);
    cr_assert(a && b && c && ref && ha && hb && hc);
    fill_random(a, na, &rng);
    fill_random(b, nb, &rng);
    uint64_t da, db, dc = 0;
    if (in_dt == TILEC_DT_F16) {
        /* the reference sees the inputs the GPU sees: rounded to f16 */
        for (size_t i = 0; i < na; i++)
            a[i] = f16_to_f32(ha[i] = f32_to_f16(a[i]));
        for (size_t i = 0; i < nb; i++)
            b[i] = f16_to_f32(hb[i] = f32_to_f16(b[i]));
        da = upload(ha, na * 2);
        db = upload(hb, nb * 2);
    } else {
        da = upload(a, na * 4);
        db = upload(b, nb * 4);
    }
    reference(a, b, ref, M, N, K);
    size_t csize = nc * tilec_dtype_size(out_dt);
    /* rounded up to whole 32-bit words: the NaN fill below writes words */
    CHECK_RT(tilec_rt_malloc(rt, (csize + 3) & ~(size_t)3, &dc));
    if (out_dt == TILEC_DT_F32)
        CHECK_RT(tilec_rt_memset_d32(rt, dc, 0x7fc00000u, nc)); /* NaN */
    else
        CHECK_RT(tilec_rt_memset_d32(rt, dc, 0x7e007e00u, (nc + 1) / 2)); /* f16 NaN pairs */

    tilec_tensor in[2] = {matrix(in_dt, M, K, da), matrix(in_dt, K, N, db)};
    tilec_tensor out[1] = {matrix(out_dt, M, N, dc)};
    tilec_rt_status st = tilec_externs_call(ext, symbol, rt, stream, in, 2, out, 1);
    cr_assert_eq(st, TILEC_RT_OK, "%s: %s", symbol, tilec_externs_last_error(ext));
    if (stream)
        CHECK_RT(tilec_rt_stream_synchronize(rt, stream));
    else
        CHECK_RT(tilec_rt_synchronize(rt));
    if (out_dt == TILEC_DT_F32) {
        CHECK_RT(tilec_rt_memcpy_dtoh(rt, c, dc, csize));
    } else {
        CHECK_RT(tilec_rt_memcpy_dtoh(rt, hc, dc, csize));
        for (size_t i = 0; i < nc; i++)
            c[i] = f16_to_f32(hc[i]);
    }
    double err = rel_l2(c, ref, nc);
    cr_log_info("%s %dx%dx%d -> %s: rel L2 %.3g", symbol, M, N, K, tilec_dtype_name(out_dt), err);
    cr_expect(err <= tol, "%s %dx%dx%d -> %s: rel L2 error %.3g > %.1g (C[0] = %g, want %g)", symbol, M, N, K,
              tilec_dtype_name(out_dt), err, tol, (double)c[0], ref[0]);
    tilec_rt_free(rt, da);
    tilec_rt_free(rt, db);
    tilec_rt_free(rt, dc);
    free(a);
    free(b);
    free(c);
    free(ref);
    free(ha);
    free(hb);
    free(hc);
}

Test(gpu_externs, sgemm_odd_sizes) { run_gemm("cublas.sgemm", TILEC_DT_F32, TILEC_DT_F32, 127, 65, 33, NULL, 1e-5); }

Test(gpu_externs, sgemm_256) { run_gemm("cublas.sgemm", TILEC_DT_F32, TILEC_DT_F32, 256, 256, 256, NULL, 1e-5); }

Test(gpu_externs, hgemm_f32_out)
{
    run_gemm("cublas.hgemm", TILEC_DT_F16, TILEC_DT_F32, 127, 65, 33, NULL, 1e-2);
    run_gemm("cublas.hgemm", TILEC_DT_F16, TILEC_DT_F32, 256, 256, 256, NULL, 1e-2);
}

Test(gpu_externs, hgemm_f16_out)
{
    run_gemm("cublas.hgemm", TILEC_DT_F16, TILEC_DT_F16, 127, 65, 33, NULL, 1e-2);
    run_gemm("cublas.hgemm", TILEC_DT_F16, TILEC_DT_F16, 256, 256, 256, NULL, 1e-2);
}

/* The handle made by the first call is reused on another stream. */
Test(gpu_externs, on_a_created_stream)
{
    void *stream = NULL;
    CHECK_RT(tilec_rt_stream_create(rt, TILEC_RT_STREAM_NON_BLOCKING, &stream));
    run_gemm("cublas.sgemm", TILEC_DT_F32, TILEC_DT_F32, 127, 65, 33, NULL, 1e-5);
    run_gemm("cublas.sgemm", TILEC_DT_F32, TILEC_DT_F32, 256, 256, 256, stream, 1e-5);
    run_gemm("cublas.hgemm", TILEC_DT_F16, TILEC_DT_F32, 127, 65, 33, stream, 1e-2);
    CHECK_RT(tilec_rt_stream_destroy(rt, stream));
}

/* K = 0: C is the empty sum, zeros. */
Test(gpu_externs, sgemm_k0_writes_zeros)
{
    uint64_t dc = 0, dummy = 0;
    CHECK_RT(tilec_rt_malloc(rt, 8 * 5 * 4, &dc));
    CHECK_RT(tilec_rt_malloc(rt, 4, &dummy));
    CHECK_RT(tilec_rt_memset_d32(rt, dc, 0x7fc00000u, 40));
    tilec_tensor in[2] = {matrix(TILEC_DT_F32, 8, 0, dummy), matrix(TILEC_DT_F32, 0, 5, dummy)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F32, 8, 5, dc)};
    cr_assert_eq(tilec_externs_call(ext, "cublas.sgemm", rt, NULL, in, 2, out, 1), TILEC_RT_OK, "%s",
                 tilec_externs_last_error(ext));
    float c[40];
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, c, dc, sizeof c));
    for (int i = 0; i < 40; i++)
        cr_expect_eq(c[i], 0.0f, "C[%d] = %g", i, (double)c[i]);
    tilec_rt_free(rt, dc);
    tilec_rt_free(rt, dummy);
}

int main(int argc, char *argv[]) { return gpu_suite_main(argc, argv, "GPU extern tests"); }
