/* test_gpu_aot.c: an ahead-of-time wrapper on the GPU (issue 29 item 6).
 * build/gen/wrappers/aot_gemm.c is `tilec tests/aot_gemm.tile --emit c
 * --aot sm_80,sm_90a` (made by the Makefile): the CUBINs of both targets
 * and the sm_90a twins' launch metadata embedded, no NVRTC at run time.
 * Its graph runs C = A @ B and C[z] = A[z] @ B[z] (f16, f32 accumulation)
 * against a host reference in double precision, and TILEC_LOGS=tma, read
 * back from stderr, must say on a 9.0 device that the twins were resolved
 * and launched (wgmma + TMA, tensor maps built from the run's pointers and
 * sizes), exactly as a program built at run time does; a K whose rows are
 * not a multiple of 16 bytes must take the variant's own kernel (the log
 * says why) and still be right. On an 8.x device the sm_80 table loads:
 * no twin, the same answers. Without a GPU one SKIP line; on an older
 * device the test is skipped. */
#include <criterion/criterion.h>
#include <unistd.h>

#include "aot_gemm.h"
#include "gpu_helpers.h"

static tilec_rt *rt;
static unsigned long long rng;

static void setup(void)
{
    char arch[16];
    gpu_open(&rt, arch, &rng);
}

static void teardown(void) { gpu_close(&rt); }

TestSuite(aot, .init = setup, .fini = teardown);

/* n random f16 values on the device; vals gets what they round to. */
static uint64_t upload16(size_t n, float *vals)
{
    uint16_t *h = malloc(n * 2 + 2);
    fill_random(vals, n, &rng);
    for (size_t i = 0; i < n; i++) {
        h[i] = f32_to_f16(vals[i]);
        vals[i] = f16_to_f32(h[i]);
    }
    uint64_t d = 0;
    GPU_CHECK(rt, tilec_rt_malloc(rt, n * 2 + 2, &d));
    GPU_CHECK(rt, tilec_rt_memcpy_htod(rt, d, h, n * 2));
    free(h);
    return d;
}

static tilec_tensor tensor16(uint64_t data, int rank, const int64_t *sizes)
{
    tilec_tensor t = {.data = data, .dtype = TILEC_DT_F16, .rank = (uint32_t)rank};
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; i--) {
        t.sizes[i] = sizes[i];
        t.strides[i] = stride;
        stride *= sizes[i];
    }
    return t;
}

/* The f16 output t of n elements against want (relative L2 error). */
static void expect_close16(const tilec_tensor *t, const double *want, size_t n, const char *what)
{
    uint16_t *h = malloc(n * 2 + 2);
    float *got = malloc(n * 4 + 4);
    GPU_CHECK(rt, tilec_rt_synchronize(rt));
    GPU_CHECK(rt, tilec_rt_memcpy_dtoh(rt, h, t->data, n * 2));
    for (size_t i = 0; i < n; i++)
        got[i] = f16_to_f32(h[i]);
    double e = rel_l2(got, want, n);
    cr_expect_leq(e, 1e-2, "%s: relative L2 error %g", what, e);
    free(h);
    free(got);
}

/* Run the graph once at M x N x K with Z products in the batch and check
 * both outputs. */
static void run_case(aot_gemm_module *m, int M, int N, int K, int Z)
{
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *x = malloc(na * Z * 4), *y = malloc(nb * Z * 4);
    int64_t sa[] = {M, K}, sb[] = {K, N}, sx[] = {Z, M, K}, sy[] = {Z, K, N};
    tilec_tensor ta = tensor16(upload16(na, a), 2, sa), tb = tensor16(upload16(nb, b), 2, sb);
    tilec_tensor tx = tensor16(upload16(na * Z, x), 3, sx), ty = tensor16(upload16(nb * Z, y), 3, sy);
    tilec_tensor tc = {0}, tz = {0};
    char err[1024] = "";
    cr_assert_eq(aot_gemm_run(m, &ta, &tb, &tx, &ty, &tc, &tz, err, sizeof err), 0, "%s", err);
    char what[128];
    double *want = gk_ref_matmul(a, b, M, N, K);
    snprintf(what, sizeof what, "gemm_f16 %d x %d x %d", M, N, K);
    expect_close16(&tc, want, nc, what);
    free(want);
    double *wz = malloc(nc * Z * sizeof *wz);
    for (int z = 0; z < Z; z++) {
        double *w = gk_ref_matmul(x + na * z, y + nb * z, M, N, K);
        memcpy(wz + nc * z, w, nc * sizeof *w);
        free(w);
    }
    snprintf(what, sizeof what, "bmm_f16 %d x %d x %d x %d", Z, M, N, K);
    expect_close16(&tz, wz, nc * Z, what);
    free(wz);
    uint64_t bufs[] = {ta.data, tb.data, tx.data, ty.data, tc.data, tz.data};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        tilec_rt_free(rt, bufs[i]);
    free(a);
    free(b);
    free(x);
    free(y);
}

/* Everything written to stderr while the graph loads and runs the given
 * shapes (NUL-terminated; free() it). */
static char *run_logged(aot_gemm_module **m, const int (*shapes)[4], int n)
{
    char err[1024] = "";
    FILE *log = tmpfile();
    cr_assert(log);
    fflush(stderr);
    int saved = dup(2);
    cr_assert(saved >= 0 && dup2(fileno(log), 2) >= 0);
    setenv("TILEC_LOGS", "tma", 1);
    int rc = aot_gemm_load(rt, m, err, sizeof err);
    for (int i = 0; !rc && i < n; i++)
        run_case(*m, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]);
    unsetenv("TILEC_LOGS");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    cr_assert_eq(rc, 0, "%s", err);
    long size = ftell(log);
    char *text = calloc(1, (size_t)(size > 0 ? size : 0) + 1);
    rewind(log);
    cr_assert(text && fread(text, 1, (size_t)(size > 0 ? size : 0), log) == (size_t)(size > 0 ? size : 0));
    fclose(log);
    cr_log_info("TILEC_LOGS=tma said:\n%s", text);
    return text;
}

/* 1 on a 9.0 device (the sm_90a table, with twins), 0 on 8.x (the sm_80
 * table); skips the test on other devices. */
static int is_hopper(void)
{
    tilec_rt_device_props p;
    GPU_CHECK(rt, tilec_rt_device_info(rt, &p));
    if (p.sm_major != 8 && !(p.sm_major == 9 && p.sm_minor == 0))
        cr_skip_test("a %d.%d device: the wrapper holds sm_80 and sm_90a CUBINs", p.sm_major, p.sm_minor);
    return p.sm_major == 9;
}

Test(aot, twins_run_and_match_the_host, .timeout = 300)
{
    int hopper = is_hopper();
    /* not multiples of the 128 x 128 tile; rows a multiple of 16 bytes */
    static const int shapes[][4] = {{300, 264, 200, 3}, {1024, 512, 512, 2}};
    aot_gemm_module *m = NULL;
    char *log = run_logged(&m, shapes, 2);
    if (!hopper) {
        cr_expect_null(strstr(log, "tilec tma: "), "the sm_80 table has no twin:\n%s", log);
        free(log);
        aot_gemm_unload(m);
        return;
    }
    cr_expect(strstr(log, "tilec tma: gemm_f16 variant 0: sm_90a twin gemm_f16_v0_tma resolved"), "%s", log);
    cr_expect(strstr(log, "tilec tma: bmm_f16 variant 0: sm_90a twin bmm_f16_v0_tma resolved"), "%s", log);
    cr_expect(strstr(log, "tilec tma: gemm_f16 variant 0: launched sm_90a twin gemm_f16_v0_tma"), "%s", log);
    cr_expect(strstr(log, "tilec tma: bmm_f16 variant 0: launched sm_90a twin bmm_f16_v0_tma"), "%s", log);
    cr_expect_null(strstr(log, "not its twin"), "%s", log);
    free(log);
    aot_gemm_unload(m);
}

Test(aot, unfit_rows_take_the_variant_and_are_right, .timeout = 300)
{
    int hopper = is_hopper();
    /* K = 203: A's rows are 406 bytes, not a multiple of 16: no tensor map */
    static const int shapes[][4] = {{100, 72, 203, 2}};
    aot_gemm_module *m = NULL;
    char *log = run_logged(&m, shapes, 1);
    if (hopper)
        cr_expect(strstr(log, "tilec tma: gemm_f16 variant 0: launched gemm_f16_v0, not its twin: the tensor behind "
                              "parameter 0"),
                  "%s", log);
    cr_expect_null(strstr(log, "launched sm_90a twin gemm_f16_v0_tma"), "%s", log);
    free(log);
    aot_gemm_unload(m);
}

int main(int argc, char *argv[]) { return gpu_suite_main(argc, argv, "ahead-of-time wrapper (sm_90a twins)"); }
