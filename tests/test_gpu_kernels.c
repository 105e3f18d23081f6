/* test_gpu_kernels.c: every example kernel, every variant, on the GPU
 * against a CPU reference: fresh random inputs (never zeros), sizes that
 * are and are not multiples of the tile, outputs poisoned with NaN before
 * each launch so an unwritten element fails. Most tests load the
 * variant's own kernel (gk_load), which is never an sm_90a twin; the
 * twins of the convolutions, reshape_matmul_pipe and copy_bounds run
 * through a program, each launch's TILEC_LOGS=tma line read back to name
 * the twin (conv_twins, twin_prog). Without a GPU the binary prints one
 * SKIP line and succeeds. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <unistd.h>

#include "gpu_helpers.h"
#include "numerics_ref.h"

static tilec_rt *rt;
static char arch[16];
static unsigned long long rng;

#define CHECK_RT(call) GPU_CHECK(rt, call)

static uint64_t dev_alloc(size_t bytes)
{
    uint64_t p = 0;
    CHECK_RT(tilec_rt_malloc(rt, bytes ? bytes : 4, &p));
    return p;
}

static uint64_t upload(const void *host, size_t bytes)
{
    uint64_t p = dev_alloc(bytes);
    CHECK_RT(tilec_rt_memcpy_htod(rt, p, host, bytes));
    return p;
}

static uint64_t poisoned(size_t n)
{
    uint64_t p = dev_alloc(n * 4);
    CHECK_RT(tilec_rt_memset_d32(rt, p, 0x7fc00000u, n)); /* NaN */
    return p;
}

static void gpu_setup(void) { gpu_open(&rt, arch, &rng); }

static void gpu_teardown(void) { gpu_close(&rt); }

TestSuite(gpu, .init = gpu_setup, .fini = gpu_teardown);

static void load_or_fail(const char *file, const char *kernel, int variant, gk *g)
{
    cr_assert_eq(gk_load(rt, arch, file, kernel, variant, g), 0, "%s", g->err);
}

static uint32_t variants_of(const char *file, const char *kernel)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, file, &m), TILEC_OK);
    uint32_t nv = tilec_kernel_variant_count(tilec_module_find_kernel(m, kernel));
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return nv;
}

static float *random_floats(size_t n)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    fill_random(x, n, &rng);
    return x;
}

static void download_check(uint64_t dev, const double *want, size_t n, double tol, const char *what)
{
    gpu_expect_close(rt, dev, want, n, tol, what);
}

Test(gpu, add_relu)
{
    static const int sizes[] = {1, 127, 1000, 4097, (1 << 20) + 3};
    gk g;
    load_or_fail("examples/add_relu.tile", "add_relu", 0, &g);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        float *x = random_floats((size_t)n), *y = random_floats((size_t)n);
        double *want = malloc((size_t)n * sizeof *want);
        for (int i = 0; i < n; i++)
            want[i] = fmax((double)x[i] + (double)y[i], 0.0);
        uint64_t dx = upload(x, (size_t)n * 4), dy = upload(y, (size_t)n * 4), dout = poisoned((size_t)n);
        tilec_rt_arg args[4] = {{.ptr = dx}, {.ptr = dy}, {.ptr = dout}, {.i32 = n}};
        CHECK_RT(gk_launch(&g, args, NULL));
        char what[64];
        snprintf(what, sizeof what, "add_relu n=%d", n);
        download_check(dout, want, (size_t)n, 1e-6, what);
        tilec_rt_free(rt, dx);
        tilec_rt_free(rt, dy);
        tilec_rt_free(rt, dout);
        free(x);
        free(y);
        free(want);
    }
    gk_free(&g);
}

/* Issue 14 item 1: a parameter min and a let min_ were both min_ in CUDA
 * (reserved names got a '_'), so the kernel stored 5 + 5. Every user name
 * is v_NAME now: min + min_ = 1.5 + 5. */
Test(gpu, user_names_never_meet)
{
    gk g;
    load_or_fail("tests/golden/ok/names.tile", "add_min", 0, &g);
    int n = 1000;
    double *want = malloc((size_t)n * sizeof *want);
    for (int i = 0; i < n; i++)
        want[i] = 6.5;
    uint64_t dout = poisoned((size_t)n);
    tilec_rt_arg args[3] = {{.f32 = 1.5f}, {.ptr = dout}, {.i32 = n}};
    CHECK_RT(gk_launch(&g, args, NULL));
    download_check(dout, want, (size_t)n, 0, "add_min: min + min_");
    tilec_rt_free(rt, dout);
    free(want);
    gk_free(&g);
}

/* Every value in v[0 .. n-1] (stride `stride`) is one of 0 .. n-1, each once. */
static void expect_permutation(const int32_t *v, int n, int stride, const char *what)
{
    char *seen = calloc((size_t)n, 1);
    cr_assert(seen);
    for (int i = 0; i < n; i++) {
        int32_t x = v[(size_t)i * (size_t)stride];
        cr_expect(x >= 0 && x < n && !seen[x], "%s: value %d at %d (n = %d)", what, x, i, n);
        if (x >= 0 && x < n)
            seen[x] = 1;
    }
    free(seen);
}

/* Issue 14 item 9: atomic_add used as a value did not compile on a scalar,
 * and on a tile of fewer elements than threads the replicas read garbage
 * as the old value. Every old value must be distinct and in 0 .. n-1. */
Test(gpu, atomic_add_results_are_the_old_values)
{
    gk g;
    load_or_fail("tests/gpu/atomic_values.tile", "atomic_values", 0, &g);
    const int n = 3000;
    uint64_t counter = dev_alloc(4), slots = dev_alloc(16 * 4), firsts = poisoned((size_t)n),
             olds = poisoned((size_t)n * 16);
    CHECK_RT(tilec_rt_memset_d32(rt, counter, 0, 1));
    CHECK_RT(tilec_rt_memset_d32(rt, slots, 0, 16));
    tilec_rt_arg args[5] = {{.ptr = counter}, {.ptr = slots}, {.ptr = firsts}, {.ptr = olds}, {.i32 = n}};
    CHECK_RT(gk_launch(&g, args, NULL));
    int32_t *f = malloc((size_t)n * 4), *o = malloc((size_t)n * 16 * 4), c, sl[16];
    cr_assert(f && o);
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, f, firsts, (size_t)n * 4));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, o, olds, (size_t)n * 16 * 4));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, &c, counter, 4));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, sl, slots, sizeof sl));
    cr_expect_eq(c, n, "counter %d", c);
    expect_permutation(f, n, 1, "scalar atomic_add");
    for (int j = 0; j < 16; j++) {
        char what[64];
        snprintf(what, sizeof what, "tile atomic_add, element %d", j);
        cr_expect_eq(sl[j], n, "slot %d: %d", j, sl[j]);
        expect_permutation(o + j, n, 16, what);
    }
    free(f);
    free(o);
    tilec_rt_free(rt, counter);
    tilec_rt_free(rt, slots);
    tilec_rt_free(rt, firsts);
    tilec_rt_free(rt, olds);
    gk_free(&g);
}

/* cdiv on tiles is the ceiling for any dividend and a positive divisor,
 * as the host computes it (docs/language.md 7.7): once it computed
 * (a + b - 1) / b, which rounds a negative a toward 0 and overflows near
 * INT32_MAX. */
Test(gpu, cdiv_on_tiles_is_the_ceiling)
{
    gk g;
    load_or_fail("tests/gpu/cdiv_values.tile", "cdiv_values", 0, &g);
    static const int32_t a[] = {7, 8, 0, -7, -8, -1, -128, -129, 2147483647, 2147483647, -2147483647 - 1, 5};
    static const int32_t b[] = {2, 2, 5, 2, 2, 128, 128, 128, 2, 2147483647, 3, 7};
    static const double want[] = {4, 4, 0, -3, -4, 0, -1, -1, 1073741824, 1, -715827882, 1};
    const int n = (int)(sizeof a / sizeof a[0]);
    uint64_t da = upload(a, sizeof a), db = upload(b, sizeof b), dout = poisoned((size_t)n);
    tilec_rt_arg args[4] = {{.ptr = da}, {.ptr = db}, {.ptr = dout}, {.i32 = n}};
    CHECK_RT(gk_launch(&g, args, NULL));
    int32_t got[sizeof a / sizeof a[0]];
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, dout, sizeof got));
    for (int i = 0; i < n; i++)
        cr_expect_eq(got[i], (int32_t)want[i], "cdiv(%d, %d) = %d, want %.0f", a[i], b[i], got[i], want[i]);
    tilec_rt_free(rt, da);
    tilec_rt_free(rt, db);
    tilec_rt_free(rt, dout);
    gk_free(&g);
}

/* Re-assigned pointer tiles (tests/gpu/ptr_reassign.tile): a row pointer
 * advanced in a loop sums the rows of x (or of y, its base switched inside
 * an if), and a 2-D pointer tile moved one row down is read transposed.
 * The lowering once declared such a tile's registers as floats (NVRTC
 * refused the kernel). */
Test(gpu, reassigned_pointer_tiles)
{
    gk g;
    load_or_fail("tests/gpu/ptr_reassign.tile", "ptr_reassign", 0, &g);
    enum { C = 32, R = 16, ROWS = 20 };
    float x[ROWS * C], y[ROWS * C];
    for (int i = 0; i < ROWS * C; i++) {
        x[i] = (float)(i % 97) - 40.0f;
        y[i] = (float)(i % 13) * 0.5f;
    }
    uint64_t dx = upload(x, sizeof x), dy = upload(y, sizeof y);
    for (int sel = 0; sel < 2; sel++) {
        const float *src = sel ? y : x;
        double want[C + C * R];
        for (int c = 0; c < C; c++) {
            want[c] = 0;
            for (int i = 0; i < ROWS; i++)
                want[c] += src[i * C + c];
            for (int r = 0; r < R; r++)
                want[C + c * R + r] = x[(r + 1) * C + c];
        }
        uint64_t dout = poisoned(C + C * R);
        tilec_rt_arg args[5] = {{.ptr = dx}, {.ptr = dy}, {.ptr = dout}, {.i32 = ROWS}, {.i32 = sel}};
        CHECK_RT(gk_launch(&g, args, NULL));
        download_check(dout, want, C + C * R, 0, sel ? "ptr_reassign, base y" : "ptr_reassign, base x");
        tilec_rt_free(rt, dout);
    }
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dy);
    gk_free(&g);
}

/* Spellings of one masked access the analysis (lower/axinfo.c) turns into
 * 16-byte accesses decided by a run's last mask element
 * (tests/gpu/axinfo_forms.tile): `&` masks, i64 casts with a 1-D column
 * mask, pointer tiles re-assigned in the loop. Ragged shapes, and rows of
 * an odd length (no run aligned: the element-by-element path), must give
 * y = x + 1 inside [M, N] and leave the rest of y as it was. */
Test(gpu, access_forms_the_analysis_vectorizes)
{
    static const char *const kernels[] = {"copy_and", "copy_cast", "copy_carried"};
    static const int shapes[][3] = {{37, 131, 136}, {16, 64, 64}, {5, 200, 201}, {40, 7, 7}};
    for (size_t kk = 0; kk < sizeof kernels / sizeof kernels[0]; kk++) {
        gk g;
        load_or_fail("tests/gpu/axinfo_forms.tile", kernels[kk], 0, &g);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int M = shapes[s][0], N = shapes[s][1], ld = shapes[s][2];
            size_t n = (size_t)M * (size_t)ld;
            float *x = random_floats(n), *y = malloc(n * sizeof *y);
            double *want = malloc(n * sizeof *want);
            cr_assert(y && want);
            for (size_t i = 0; i < n; i++) {
                y[i] = -7.0f;
                want[i] = (int)(i % (size_t)ld) < N ? (double)x[i] + 1.0 : -7.0;
            }
            uint64_t dx = upload(x, n * sizeof *x), dy = upload(y, n * sizeof *y);
            tilec_rt_arg args[5] = {{.ptr = dx}, {.ptr = dy}, {.i32 = M}, {.i32 = N}, {.i32 = ld}};
            CHECK_RT(gk_launch(&g, args, NULL));
            char what[96];
            snprintf(what, sizeof what, "%s M=%d N=%d ld=%d", kernels[kk], M, N, ld);
            download_check(dy, want, n, 1e-6, what);
            tilec_rt_free(rt, dx);
            tilec_rt_free(rt, dy);
            free(x);
            free(y);
            free(want);
        }
        gk_free(&g);
    }
}

/* rows x cols: ragged, exactly a tile, each variant's width, rows longer
 * than every tile (the three-pass paths), many short rows (the multi-row
 * kernels' several rows per program) */
static const int row_shapes[][2] = {{1, 1},     {3, 127},  {7, 1000}, {2, 4097},  {16, 1024},
                                    {17, 128}, {33, 512}, {70, 300}, {1, (1 << 20) + 3}};

/* softmax(file:kernel), every variant, against double */
static void check_softmax(const char *file, const char *kernel)
{
    for (uint32_t var = 0; var < variants_of(file, kernel); var++) {
    gk g;
    load_or_fail(file, kernel, (int)var, &g);
    for (size_t s = 0; s < sizeof row_shapes / sizeof row_shapes[0]; s++) {
        int rows = row_shapes[s][0], cols = row_shapes[s][1];
        size_t n = (size_t)rows * (size_t)cols;
        float *x = random_floats(n);
        for (size_t i = 0; i < n; i++)
            x[i] *= 8.0f;
        double *want = malloc(n * sizeof *want);
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * (size_t)cols;
            double mx = -INFINITY, sum = 0;
            for (int c = 0; c < cols; c++)
                mx = fmax(mx, xr[c]);
            for (int c = 0; c < cols; c++)
                sum += exp(xr[c] - mx);
            for (int c = 0; c < cols; c++)
                want[(size_t)r * (size_t)cols + (size_t)c] = exp(xr[c] - mx) / sum;
        }
        uint64_t dx = upload(x, n * 4), dy = poisoned(n);
        tilec_rt_arg args[4] = {{.ptr = dx}, {.ptr = dy}, {.i32 = rows}, {.i32 = cols}};
        CHECK_RT(gk_launch(&g, args, NULL));
        char what[64];
        snprintf(what, sizeof what, "%s variant %u %dx%d", kernel, var, rows, cols);
        download_check(dy, want, n, 1e-5, what);
        tilec_rt_free(rt, dx);
        tilec_rt_free(rt, dy);
        free(x);
        free(want);
    }
    gk_free(&g);
    }
}

Test(gpu, softmax, .timeout = 120) { check_softmax("examples/softmax.tile", "softmax"); }
Test(gpu, softmax_rows, .timeout = 120) { check_softmax("examples/softmax_rows.tile", "softmax_multirow"); }
/* issue 31: every candidate the default space of a row kernel keeps */
Test(gpu, softmax_tuned, .timeout = 300) { check_softmax("bench/harness/rows_tuned.tile", "softmax"); }

/* layernorm(file:kernel), every variant, against double */
static void check_layernorm(const char *file, const char *kernel)
{
    for (uint32_t var = 0; var < variants_of(file, kernel); var++) {
    gk g;
    load_or_fail(file, kernel, (int)var, &g);
    for (size_t s = 0; s < sizeof row_shapes / sizeof row_shapes[0]; s++) {
        int rows = row_shapes[s][0], cols = row_shapes[s][1];
        size_t n = (size_t)rows * (size_t)cols;
        float *x = random_floats(n), *w = random_floats((size_t)cols), *b = random_floats((size_t)cols);
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] * 3.0f + 0.5f;
        double *want = malloc(n * sizeof *want);
        const float eps = 1e-5f;
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * (size_t)cols;
            double mean = 0, vsum = 0;
            for (int c = 0; c < cols; c++)
                mean += xr[c];
            mean /= cols;
            for (int c = 0; c < cols; c++)
                vsum += (xr[c] - mean) * (xr[c] - mean);
            vsum /= cols;
            double rstd = 1.0 / sqrt(vsum + eps);
            for (int c = 0; c < cols; c++)
                want[(size_t)r * (size_t)cols + (size_t)c] = (xr[c] - mean) * rstd * w[c] + b[c];
        }
        uint64_t dx = upload(x, n * 4), dw = upload(w, (size_t)cols * 4), db = upload(b, (size_t)cols * 4),
                 dy = poisoned(n);
        tilec_rt_arg args[7] = {{.ptr = dx}, {.ptr = dw}, {.ptr = db}, {.ptr = dy}, {.i32 = rows}, {.i32 = cols},
                                {.f32 = eps}};
        CHECK_RT(gk_launch(&g, args, NULL));
        char what[64];
        snprintf(what, sizeof what, "%s variant %u %dx%d", kernel, var, rows, cols);
        download_check(dy, want, n, 1e-5, what);
        tilec_rt_free(rt, dx);
        tilec_rt_free(rt, dw);
        tilec_rt_free(rt, db);
        tilec_rt_free(rt, dy);
        free(x);
        free(w);
        free(b);
        free(want);
    }
    gk_free(&g);
    }
}

Test(gpu, layernorm, .timeout = 120) { check_layernorm("examples/layernorm.tile", "layernorm"); }
Test(gpu, layernorm_rows, .timeout = 120) { check_layernorm("examples/layernorm_rows.tile", "layernorm_rows"); }
Test(gpu, layernorm_tuned, .timeout = 300) { check_layernorm("bench/harness/rows_tuned.tile", "layernorm"); }

/* A kernel of file through a program (tilec_program_build): on a 9.0
 * device each variant must have its sm_90a twin, and twin_prog_launch
 * reads each launch's TILEC_LOGS=tma line back to require the twin's name
 * (a twin fed by cp.async alone, no tensor map, runs for any arguments):
 * a launch that yields to the variant's own kernel fails. Elsewhere the
 * program runs the variants' own kernels. */
typedef struct twin_prog {
    tilec_ctx *ctx;
    tilec_module *m;
    tilec_program *p;
    const char *kernel;
    int hopper;
    tma_log log;
    uint32_t nv;
    gk_twin tw[8];
} twin_prog;

static void twin_prog_open(twin_prog *t, const char *file, const char *kernel)
{
    memset(t, 0, sizeof *t);
    t->kernel = kernel;
    tilec_rt_device_props props;
    CHECK_RT(tilec_rt_device_info(rt, &props));
    t->hopper = props.sm_major == 9 && props.sm_minor == 0;
    t->ctx = tilec_ctx_new();
    cr_assert_eq(tilec_parse_file(t->ctx, file, &t->m), TILEC_OK, "%s does not parse", file);
    const tilec_kernel *k = tilec_module_find_kernel(t->m, kernel);
    cr_assert_not_null(k, "no kernel %s in %s", kernel, file);
    t->nv = tilec_kernel_variant_count(k);
    cr_assert_leq(t->nv, 8);
    for (uint32_t v = 0; v < t->nv; v++)
        gk_twin_of(t->ctx, t->m, k, v, &t->tw[v]);
    tma_log_start(&t->log);
    setenv("TILEC_LOGS", "tma", 1); /* read when a twin is resolved */
    tilec_build_options o = {.threads = 8};
    tilec_status st = tilec_program_build(t->ctx, rt, t->m, &o, &t->p);
    unsetenv("TILEC_LOGS");
    free(tma_log_take(&t->log)); /* the build's "resolved" lines */
    const tilec_diag *d = tilec_ctx_diag(t->ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s: %s", file, d ? d->message : "build failed");
    for (uint32_t v = 0; v < t->nv; v++)
        cr_expect(!t->hopper || tilec_program_has_twin(t->p, kernel, (int)v), "%s variant %u: an sm_90a twin", kernel,
                  v);
}

/* Variant v through the program, finished; what says which case */
static void twin_prog_launch(twin_prog *t, uint32_t v, const tilec_rt_arg *args, uint32_t nargs, const char *what)
{
    CHECK_RT(tilec_program_launch(t->p, t->kernel, (int)v, args, nargs, NULL));
    CHECK_RT(tilec_rt_synchronize(rt));
    char *text = tma_log_take(&t->log);
    if (t->hopper && !t->tw[v].nmaps)
        cr_expect(tma_log_launched(text, &t->tw[v]) && !strstr(text, "not its twin"), "%s: not its twin %s:\n%s", what,
                  t->tw[v].name, text);
    else if (t->hopper)
        cr_log_info("%s: %s", what, tma_log_launched(text, &t->tw[v]) ? "its twin" : "its own kernel");
    free(text);
}

static void twin_prog_close(twin_prog *t)
{
    tma_log_stop(&t->log);
    tilec_program_free(t->p);
    tilec_module_free(t->m);
    tilec_ctx_free(t->ctx);
}

static const int mm_shapes[][3] = {{1, 1, 1}, {64, 64, 64}, {127, 129, 33}, {256, 96, 1000}, {300, 257, 80}};

/* C = A @ B with A stored [M, K], or (at) [K, M], and B stored [K, N], or
 * (bt) [N, K] (nn.Linear's weight); each variant's own kernel, or (tp)
 * through a program, its twin checked. */
static void check_matmul_via(const char *file, const char *kernel, int half, int at, int bt, double tol, twin_prog *tp)
{
    uint32_t nv = tp ? tp->nv : variants_of(file, kernel);
    for (uint32_t v = 0; v < nv; v++) {
        gk g = {0};
        if (!tp)
            load_or_fail(file, kernel, (int)v, &g);
        for (size_t s = 0; s < sizeof mm_shapes / sizeof mm_shapes[0]; s++) {
            int M = mm_shapes[s][0], N = mm_shapes[s][1], K = mm_shapes[s][2];
            size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
            float *a = random_floats(na), *b = random_floats(nb);
            uint16_t *ah = malloc(na * 2 + 2), *bh = malloc(nb * 2 + 2);
            if (half) { /* the reference sees the rounded operands */
                for (size_t i = 0; i < na; i++)
                    a[i] = f16_to_f32(ah[i] = f32_to_f16(a[i]));
                for (size_t i = 0; i < nb; i++)
                    b[i] = f16_to_f32(bh[i] = f32_to_f16(b[i]));
            }
            double *want = calloc(nc, sizeof *want);
            for (int i = 0; i < M; i++)
                for (int k = 0; k < K; k++) {
                    double aik = a[at ? (size_t)k * M + i : (size_t)i * K + k];
                    for (int j = 0; j < N; j++)
                        want[(size_t)i * N + j] += aik * b[bt ? (size_t)j * K + k : (size_t)k * N + j];
                }
            uint64_t da = half ? upload(ah, na * 2) : upload(a, na * 4);
            uint64_t db = half ? upload(bh, nb * 2) : upload(b, nb * 4);
            uint64_t dc = poisoned(nc);
            tilec_rt_arg args[6] = {{.ptr = da}, {.ptr = db}, {.ptr = dc}, {.i32 = M}, {.i32 = N}, {.i32 = K}};
            char what[112];
            snprintf(what, sizeof what, "%s variant %u%s, M=%d N=%d K=%d", kernel, v, tp ? " (program)" : "", M, N, K);
            if (tp)
                twin_prog_launch(tp, v, args, 6, what);
            else
                CHECK_RT(gk_launch(&g, args, NULL));
            download_check(dc, want, nc, tol, what);
            tilec_rt_free(rt, da);
            tilec_rt_free(rt, db);
            tilec_rt_free(rt, dc);
            free(a);
            free(b);
            free(ah);
            free(bh);
            free(want);
        }
        if (!tp)
            gk_free(&g);
    }
}

static void check_matmul_t(const char *file, const char *kernel, int half, int at, int bt, double tol)
{
    check_matmul_via(file, kernel, half, at, bt, tol, NULL);
}

static void check_matmul(const char *file, const char *kernel, int half, double tol)
{
    check_matmul_t(file, kernel, half, 0, 0, tol);
}

Test(gpu, matmul_f16, .timeout = 300) { check_matmul("examples/matmul.tile", "matmul", 1, 1e-2); }
Test(gpu, matmul_f32, .timeout = 300) { check_matmul("examples/matmul_f32.tile", "matmul_f32", 0, 1e-3); }
/* x @ W.T in f32: W stored [N, K], the same FMA loop as matmul_f32 (every variant, the ragged shapes) */
Test(gpu, linear_f32, .timeout = 300) { check_matmul_t("examples/linear_f32.tile", "linear_f32", 0, 0, 1, 1e-3); }
/* f32 operands stored either way round, spelt with trans or strided loads
 * (tests/gpu/f32_forms.tile): the copies of each kind into the K-major ring */
Test(gpu, f32_forms, .timeout = 300)
{
    static const struct {
        const char *kernel;
        int at, bt;
    } k[] = {{"f32_bt_strided", 0, 1}, {"f32_bt_let", 0, 1}, {"f32_at", 1, 0}, {"f32_at_bt", 1, 1}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        check_matmul_t("tests/gpu/f32_forms.tile", k[i].kernel, 0, k[i].at, k[i].bt, 1e-3);
}
/* the tf32 hint: operands rounded to 10-bit mantissas (relative error about 2^-11 each) */
Test(gpu, matmul_tf32, .timeout = 300) { check_matmul("examples/matmul_tf32.tile", "matmul_tf32", 0, 2e-3); }
/* reshaped operands and result (a register reshape in the loop; a
 * reshaped pointer tile read by the cp.async pipeline) */
Test(gpu, reshape_matmul, .timeout = 300) { check_matmul("tests/gpu/reshape_matmul.tile", "reshape_matmul", 1, 1e-2); }
Test(gpu, reshape_matmul_pipe, .timeout = 300)
{
    check_matmul("tests/gpu/reshape_matmul.tile", "reshape_matmul_pipe", 1, 1e-2);
}
/* and its sm_90a twin (lower/wggather.c: A gathered through the reshape by
 * a cp.async producer warp group), through a program */
Test(gpu, reshape_matmul_pipe_twin, .timeout = 300)
{
    twin_prog tp;
    twin_prog_open(&tp, "tests/gpu/reshape_matmul.tile", "reshape_matmul_pipe");
    check_matmul_via("tests/gpu/reshape_matmul.tile", "reshape_matmul_pipe", 1, 0, 0, 1e-2, &tp);
    twin_prog_close(&tp);
}

/* The mask rule's saturating edge in a pipelined copy (lower/mask.c):
 * tests/gpu/run_bounds.tile's copy_bounds stops A's K at `lim` too, each
 * 16-byte chunk decided against lim - 7 (saturating), for lim from the
 * i32 minimum (every chunk zero-filled) past K; a ragged M, N and K. */
Test(gpu, copy_bounds_saturate, .timeout = 300)
{
    const int M = 70, N = 72, K = 45;
    const int lims[] = {-2147483647 - 1, -2147483647 + 2, -7, 0, 1, 5, 7, 8, 9, 33, 44, 45, 2147483647};
    gk g;
    load_or_fail("tests/gpu/run_bounds.tile", "copy_bounds", 0, &g);
    twin_prog tp; /* and its sm_90a twin (lower/wggather.c), through a program */
    twin_prog_open(&tp, "tests/gpu/run_bounds.tile", "copy_bounds");
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *a = random_floats(na), *b = random_floats(nb);
    uint16_t *ah = malloc(na * 2), *bh = malloc(nb * 2);
    for (size_t i = 0; i < na; i++)
        a[i] = f16_to_f32(ah[i] = f32_to_f16(a[i]));
    for (size_t i = 0; i < nb; i++)
        b[i] = f16_to_f32(bh[i] = f32_to_f16(b[i]));
    uint64_t da = upload(ah, na * 2), db = upload(bh, nb * 2);
    double *want = malloc(nc * sizeof *want);
    for (size_t l = 0; l < sizeof lims / sizeof lims[0]; l++) {
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double sum = 0;
                for (int k = 0; k < K && k < lims[l]; k++)
                    sum += (double)a[(size_t)i * K + k] * b[(size_t)k * N + j];
                want[(size_t)i * N + j] = sum;
            }
        for (int twin = 0; twin < 2; twin++) {
            uint64_t dc = poisoned(nc);
            tilec_rt_arg args[7] = {{.ptr = da}, {.ptr = db}, {.ptr = dc},     {.i32 = M},
                                    {.i32 = N},  {.i32 = K},  {.i32 = lims[l]}};
            char what[64];
            snprintf(what, sizeof what, "copy_bounds%s lim=%d", twin ? " (program)" : "", lims[l]);
            if (twin)
                twin_prog_launch(&tp, 0, args, 7, what);
            else
                CHECK_RT(gk_launch(&g, args, NULL));
            download_check(dc, want, nc, 1e-2, what);
            tilec_rt_free(rt, dc);
        }
    }
    twin_prog_close(&tp);
    tilec_rt_free(rt, da);
    tilec_rt_free(rt, db);
    free(a);
    free(b);
    free(ah);
    free(bh);
    free(want);
    gk_free(&g);
}

Test(gpu, block_kernels)
{
    static const int sizes[] = {1, 1000, 4097, (1 << 20) + 3};
    gk ss, ra;
    load_or_fail("examples/block.tile", "scale_shift", 0, &ss);
    load_or_fail("examples/block.tile", "relu_add", 0, &ra);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        float *x = random_floats((size_t)n), *y = random_floats((size_t)n);
        double *w1 = malloc((size_t)n * sizeof *w1), *w2 = malloc((size_t)n * sizeof *w2);
        for (int i = 0; i < n; i++) {
            w1[i] = (double)x[i] * 0.75 - 0.25;
            w2[i] = fmax((double)x[i], 0.0) + (double)y[i];
        }
        uint64_t dx = upload(x, (size_t)n * 4), dy = upload(y, (size_t)n * 4), o1 = poisoned((size_t)n),
                 o2 = poisoned((size_t)n);
        tilec_rt_arg a1[5] = {{.ptr = dx}, {.ptr = o1}, {.i32 = n}, {.f32 = 0.75f}, {.f32 = -0.25f}};
        tilec_rt_arg a2[4] = {{.ptr = dx}, {.ptr = dy}, {.ptr = o2}, {.i32 = n}};
        CHECK_RT(gk_launch(&ss, a1, NULL));
        CHECK_RT(gk_launch(&ra, a2, NULL));
        download_check(o1, w1, (size_t)n, 1e-6, "scale_shift");
        download_check(o2, w2, (size_t)n, 1e-6, "relu_add");
        tilec_rt_free(rt, dx);
        tilec_rt_free(rt, dy);
        tilec_rt_free(rt, o1);
        tilec_rt_free(rt, o2);
        free(x);
        free(y);
        free(w1);
        free(w2);
    }
    gk_free(&ss);
    gk_free(&ra);
}

/* The multi-kernel dispatcher on the device: bench/multikernel/mm.tile's
 * mm_f32 (three variants on M) through tilec_program_launch_best over a
 * sweep of M; whatever variant is chosen, the output must match the CPU
 * for every M. A second program on the same cache directory (a new
 * process, as far as the program goes) must launch every M with the
 * stored choice, without timing: TILEC_LOGS=multi_kernel says
 * "(choice from cache (disk), not timed)" instead of the timings, and
 * tilec_program_stats counts 7 stored choices, none timed. */
/* A build of bench/multikernel/mm.tile on the cache in dir, for target
 * `target` (NULL: the device's own, as `tilec tune` builds). */
static tilec_program *mk_build(const char *dir, const char *target, tilec_ctx **ctx, tilec_module **m,
                               tilec_cache **cache)
{
    *ctx = tilec_ctx_new();
    cr_assert_eq(tilec_parse_file(*ctx, "bench/multikernel/mm.tile", m), TILEC_OK);
    cr_assert_eq(tilec_cache_open(dir, cache), TILEC_RT_OK);
    tilec_build_options o = {.arch = target, .cache = *cache};
    tilec_program *p = NULL;
    cr_assert_eq(tilec_program_build(*ctx, rt, *m, &o, &p), TILEC_OK);
    return p;
}

static void mk_sweep(tilec_program *p, int pass, int *chosen)
{
    static const int Ms[] = {1, 17, 64, 100, 256, 1000, 4096};
    const int N = 96, K = 40;
    for (size_t s = 0; s < sizeof Ms / sizeof Ms[0]; s++) {
        int M = Ms[s];
        float *a = random_floats((size_t)M * K), *b = random_floats((size_t)K * N);
        double *want = calloc((size_t)M * N, sizeof *want);
        for (int i = 0; i < M; i++)
            for (int k = 0; k < K; k++)
                for (int j = 0; j < N; j++)
                    want[(size_t)i * N + j] += (double)a[(size_t)i * K + k] * (double)b[(size_t)k * N + j];
        uint64_t da = upload(a, (size_t)M * K * 4), db = upload(b, (size_t)K * N * 4), dc = poisoned((size_t)M * N);
        tilec_rt_arg args[6] = {{.ptr = da}, {.ptr = db}, {.ptr = dc}, {.i32 = M}, {.i32 = N}, {.i32 = K}};
        int v = -1;
        tilec_rt_status st = tilec_program_launch_best(p, "mm_f32", args, 6, NULL, &v);
        cr_assert_eq(st, TILEC_RT_OK, "M = %d: %s: %s", M, tilec_rt_status_string(st), tilec_rt_last_error(rt));
        cr_expect(v >= 0 && v < 3, "M = %d: variant %d", M, v);
        if (pass == 0)
            chosen[s] = v;
        else
            cr_expect_eq(v, chosen[s], "M = %d: the stored choice", M);
        char what[64];
        snprintf(what, sizeof what, "pass %d, M = %d, variant %d", pass, M, v);
        download_check(dc, want, (size_t)M * N, 1e-4, what);
        tilec_rt_free(rt, da);
        tilec_rt_free(rt, db);
        tilec_rt_free(rt, dc);
        free(a);
        free(b);
        free(want);
    }
}

static size_t count_lines(const char *log, const char *needle)
{
    size_t n = 0;
    for (const char *s = log; (s = strstr(s, needle)); s++)
        n++;
    return n;
}

Test(gpu, multikernel_sweep_and_stored_choice, .timeout = 600)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tilec_gpu_mk_XXXXXX");
    cr_assert(mkdtemp(dir));
    unsetenv("TILEC_MULTI_KERNEL");
    unsetenv("TILEC_DISABLE_MULTI_KERNEL_CACHE");
    char logpath[128];
    snprintf(logpath, sizeof logpath, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    dup2(fd, 2);
    close(fd);
    setenv("TILEC_LOGS", "multi_kernel", 1);

    int chosen[7];
    long first_end = 0;
    for (int pass = 0; pass < 2; pass++) {
        tilec_ctx *ctx;
        tilec_module *m;
        tilec_cache *cache;
        tilec_program *p = mk_build(dir, arch, &ctx, &m, &cache);
        mk_sweep(p, pass, chosen);
        tilec_program_stats st;
        tilec_program_get_stats(p, &st);
        cr_expect_eq(st.choices_timed, pass == 0 ? 7u : 0u, "pass %d", pass);
        cr_expect_eq(st.choices_stored, pass == 0 ? 0u : 7u, "pass %d", pass);
        tilec_program_free(p);
        tilec_cache_close(cache);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
        fflush(stderr);
        if (pass == 0)
            first_end = lseek(2, 0, SEEK_CUR);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    unsetenv("TILEC_LOGS");

    FILE *f = fopen(logpath, "r");
    cr_assert_not_null(f);
    static char log[1 << 16];
    size_t n = fread(log, 1, sizeof log - 1, f);
    log[n] = 0;
    fclose(f);
    cr_assert(first_end > 0 && (size_t)first_end <= n, "no multi_kernel log: %s", log);
    char *second = log + first_end;
    size_t timed_second = count_lines(second, " ms\n");
    size_t stored_second = count_lines(second, "(choice from cache (disk), not timed)\n");
    second[-1] = 0; /* the first pass alone (its last line loses its newline) */
    size_t timed_first = count_lines(log, " of ");
    cr_expect_eq(timed_first, 7, "the first program times every M:\n%s", log);
    cr_expect_eq(timed_second, 0, "the second program times nothing:\n%s", second);
    cr_expect_eq(stored_second, 7, "the second program reads every stored choice:\n%s", second);
    for (int i = 0; i < 7; i++)
        cr_log_info("M sweep %d: variant %d", i, chosen[i]);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* `tilec tune` on the device (issue 31): the CLI ($TILEC_BIN, as
 * tools/gpu_tests.sh exports it) times mm_f32 at two sizes and stores the
 * choices; a second run times nothing; a program built on the same cache
 * directory launches those shapes without timing. */
static char *tune_run(const char *args)
{
    const char *bin = getenv("TILEC_BIN");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s tune %s", bin && *bin ? bin : "build/bin/tilec", args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    static char out[4096];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    cr_assert_eq(pclose(p), 0, "%s: %s", cmd, out);
    return out;
}

Test(gpu, tune_cli_stores_choices_ahead_of_time, .timeout = 600)
{
    char dir[64], args[256];
    snprintf(dir, sizeof dir, "/tmp/tilec_gpu_tune_XXXXXX");
    cr_assert(mkdtemp(dir));
    unsetenv("TILEC_MULTI_KERNEL");
    unsetenv("TILEC_DISABLE_MULTI_KERNEL_CACHE");
    snprintf(args, sizeof args, "bench/multikernel/mm.tile --sizes M=1000,N=96,K=40 --sizes M=17,N=96,K=40 --dir %s",
             dir);
    const char *out = tune_run(args);
    cr_expect(strstr(out, "mm_f32 M=1000,N=96,K=40: variant ") && strstr(out, "(timed, stored)\n"), "%s", out);
    cr_expect(strstr(out, "mm_f32 M=17,N=96,K=40: variant "), "%s", out);
    out = tune_run(args);
    cr_expect(strstr(out, "(choice from cache, not timed)\n") && !strstr(out, "timed, stored"), "%s", out);
    tilec_ctx *ctx;
    tilec_module *m;
    tilec_cache *cache;
    /* the device's own target, as tilec tune's build (an sm_90 build of an
     * sm_90a device is another program: other kernels, other choices) */
    tilec_program *p = mk_build(dir, NULL, &ctx, &m, &cache);
    static const int Ms[] = {1000, 17};
    for (int i = 0; i < 2; i++) {
        uint64_t da = poisoned((size_t)Ms[i] * 40), db = poisoned(40 * 96), dc = poisoned((size_t)Ms[i] * 96);
        tilec_rt_arg a[6] = {{.ptr = da}, {.ptr = db}, {.ptr = dc}, {.i32 = Ms[i]}, {.i32 = 96}, {.i32 = 40}};
        int v = -1;
        CHECK_RT(tilec_program_launch_best(p, "mm_f32", a, 6, NULL, &v));
        CHECK_RT(tilec_rt_synchronize(rt));
        tilec_rt_free(rt, da);
        tilec_rt_free(rt, db);
        tilec_rt_free(rt, dc);
    }
    tilec_program_stats st;
    tilec_program_get_stats(p, &st);
    cr_expect_eq(st.choices_timed, 0u, "tilec tune stored both shapes' choices");
    cr_expect_eq(st.choices_stored, 2u);
    tilec_program_free(p);
    tilec_cache_close(cache);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* Multi-kernel timing never runs on the caller's real output, even when
 * the only write is an atomic_add nested in an expression: each launch
 * adds 1 to y[0], so after the first launch_best (which times both
 * variants, 16 launches each, on scratch copies) y[0] must be 1, not 33. */
Test(gpu, multikernel_timing_leaves_a_nested_atomic_output_alone, .timeout = 120)
{
    static const char src[] =
        "kernel count(y: *i32, n: i32) grid (1) hints { warps = 4 } variants { {}, { warps = 2 } }\n"
        "{\n"
        "    let i = range(32);\n"
        "    let old = atomic_add(y + i, 1, i < 1) * 2;\n"
        "}\n";
    unsetenv("TILEC_MULTI_KERNEL");
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "count.tile", src, sizeof src - 1, &m), TILEC_OK);
    tilec_build_options o = {.arch = arch};
    tilec_program *p = NULL;
    cr_assert_eq(tilec_program_build(ctx, rt, m, &o, &p), TILEC_OK);
    uint64_t y = dev_alloc(4 * 32);
    CHECK_RT(tilec_rt_memset_d32(rt, y, 0, 32));
    tilec_rt_arg args[2] = {{.ptr = y}, {.i32 = 500}};
    int v = -1;
    CHECK_RT(tilec_program_launch_best(p, "count", args, 2, NULL, &v));
    int32_t got[32];
    CHECK_RT(tilec_rt_synchronize(rt));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, y, sizeof got));
    cr_expect_eq(got[0], 1, "y[0] = %d after one launch (variant %d): timing ran on the real output", got[0], v);
    cr_expect_eq(got[1], 0);
    tilec_rt_free(rt, y);
    tilec_program_free(p);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Issue 21 item 4, 64-bit index arithmetic: the shape, 65536 rows
 * of a vocabulary of 32769, 2^31 + 65536 bytes in each of x and y. With
 * 32-bit offsets base wrapped negative and the kernel wrote outside y (or
 * faulted). */
Test(gpu, index64_rows_past_2_31, .timeout = 300)
{
    tilec_rt_device_props props;
    CHECK_RT(tilec_rt_device_info(rt, &props));
    const uint64_t total_mem = props.total_mem;
    const int R = 65536, V = 32769;
    const size_t n = (size_t)R * (size_t)V;
    cr_assert_gt(n, (size_t)1 << 31);
    if (total_mem < 2 * n + ((size_t)1 << 30)) {
        cr_skip_test("needs %zu MiB of device memory, the device has %llu MiB", (2 * n >> 20) + 1024,
                     (unsigned long long)(total_mem >> 20));
    }
    gk g;
    load_or_fail("tests/gpu/index64.tile", "rows_i8", 0, &g);
    cr_assert(strstr(g.code.source, "const long long v_base"), "base is not 64-bit:\n%s", g.code.source);
    /* x: every byte 3; y: every byte 0x55, and a guard after it */
    const size_t guard = 1 << 20;
    uint64_t x = 0, y = 0;
    CHECK_RT(tilec_rt_malloc(rt, n, &x));
    CHECK_RT(tilec_rt_malloc(rt, n + guard, &y));
    CHECK_RT(tilec_rt_memset_d32(rt, x, 0x03030303u, n / 4));
    CHECK_RT(tilec_rt_memset_d32(rt, y, 0x55555555u, (n + guard) / 4));
    /* the last n % 4 bytes of x */
    int8_t tail[4] = {3, 3, 3, 3};
    if (n % 4)
        CHECK_RT(tilec_rt_memcpy_htod(rt, x + n - n % 4, tail, n % 4));
    tilec_rt_arg args[4] = {{.ptr = x}, {.ptr = y}, {.i32 = R}, {.i32 = V}};
    CHECK_RT(gk_launch(&g, args, NULL));
    CHECK_RT(tilec_rt_synchronize(rt));
    int8_t *got = malloc(n + guard);
    cr_assert(got);
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, y, n + guard));
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (got[i] != (int8_t)(3 + (int)(i % 7)) && !bad++)
            first = i;
    cr_expect_eq(bad, 0, "%zu of %zu bytes wrong, the first at %zu (row %zu): %d, want %d", bad, n, first,
                 first / (size_t)V, got[first], 3 + (int)(first % 7));
    size_t spill = 0;
    for (size_t i = n; i < n + guard; i++)
        spill += got[i] != 0x55;
    cr_expect_eq(spill, 0, "%zu bytes written past the end of y", spill);
    free(got);
    tilec_rt_free(rt, x);
    tilec_rt_free(rt, y);
    gk_free(&g);
}

/* Issue 28 item 2: the exclusive cumsum of 128 row lengths of 2^24 + 1
 * bytes passes 2^31 from row 128; each row's first byte is its number, and
 * no other byte (nor the guard after y) is written. */
Test(gpu, index64_ragged_starts_past_2_31, .timeout = 300)
{
    tilec_rt_device_props props;
    CHECK_RT(tilec_rt_device_info(rt, &props));
    const int B = 128, len = (1 << 24) + 1;
    const size_t n = (size_t)B * (size_t)len, guard = 1 << 20;
    cr_assert_gt(n, (size_t)1 << 31);
    if (props.total_mem < n + guard + ((size_t)1 << 30))
        cr_skip_test("needs %zu MiB of device memory, the device has %llu MiB", ((n + guard) >> 20) + 1024,
                     (unsigned long long)(props.total_mem >> 20));
    gk g;
    load_or_fail("tests/gpu/index64.tile", "ragged_starts", 0, &g);
    cr_assert(strstr(g.code.source, "long long v_starts["), "the starts are not 64-bit:\n%s", g.code.source);
    int32_t lens[128];
    for (int k = 0; k < B; k++)
        lens[k] = len;
    uint64_t dl = 0, y = 0;
    CHECK_RT(tilec_rt_malloc(rt, sizeof lens, &dl));
    CHECK_RT(tilec_rt_malloc(rt, n + guard, &y));
    CHECK_RT(tilec_rt_memcpy_htod(rt, dl, lens, sizeof lens));
    CHECK_RT(tilec_rt_memset_d32(rt, y, 0, (n + guard) / 4));
    tilec_rt_arg args[2] = {{.ptr = dl}, {.ptr = y}};
    CHECK_RT(gk_launch(&g, args, NULL));
    CHECK_RT(tilec_rt_synchronize(rt));
    int8_t *got = malloc(n + guard);
    cr_assert(got);
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, y, n + guard));
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n + guard; i++) {
        int8_t want = i < n && i % (size_t)len == 0 ? (int8_t)(i / (size_t)len + 1) : 0;
        if (got[i] != want && !bad++)
            first = i;
    }
    cr_expect_eq(bad, 0, "%zu bytes wrong, the first at %zu (row %zu): %d", bad, first, first / (size_t)len, got[first]);
    free(got);
    tilec_rt_free(rt, dl);
    tilec_rt_free(rt, y);
    gk_free(&g);
}

/* Issue 21 item 1: the scans of tests/gpu/scans.tile against a CPU
 * reference in double: 8 results of an [R, C] tile per variant. */
static double scan_ref(const float *x, int R, int C, int op, int i, int j)
{
    int axis = op == 1 || op == 3 || op == 6 ? 0 : 1, len = axis ? C : R;
    int excl = op == 1 || op == 3 || op == 4 || op == 7, rev = op == 2 || op == 3 || op == 7;
    int pos = axis ? j : i;
    double acc = op == 2 || op == 6 ? -INFINITY : op == 3 ? INFINITY : op == 5 ? 1.0 : 0.0;
    for (int q = 0; q < len; q++) {
        int p = rev ? len - 1 - q : q; /* the q-th element in scan order */
        if (excl && p == pos)
            return acc;
        double e = x[axis ? i * C + p : p * C + j];
        acc = op == 0 || op == 1 || op == 4 || op == 7 ? acc + e : op == 5 ? acc * (1.0 + e * 0.001)
            : op == 2 || op == 6 ? fmax(acc, e) : fmin(acc, e);
        if (p == pos)
            return acc;
    }
    return NAN;
}

/* element by element: infinities (the identity of an exclusive cummin and
 * cummax) must match exactly */
static void scan_check(uint64_t dev, const double *want, int n, const char *what)
{
    float *got = malloc((size_t)n * sizeof *got);
    CHECK_RT(tilec_rt_synchronize(rt));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, dev, (size_t)n * 4));
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++)
        if (isfinite(want[i]) ? !(fabs(got[i] - want[i]) <= 1e-4 * (1.0 + fabs(want[i]))) : got[i] != want[i])
            bad = i;
    cr_expect_eq(bad, -1, "%s: element %d is %g, want %g", what, bad, bad < 0 ? 0.0 : (double)got[bad],
                 bad < 0 ? 0.0 : want[bad]);
    free(got);
}

Test(gpu, scans_every_axis_and_direction, .timeout = 120)
{
    static const int shapes[3][2] = {{4, 64}, {64, 8}, {2, 2048}};
    for (int v = 0; v < 3; v++) {
        gk g;
        load_or_fail("tests/gpu/scans.tile", "scans", v, &g);
        int R = shapes[v][0], C = shapes[v][1], n = R * C;
        float *x = random_floats((size_t)n);
        double *want = malloc((size_t)n * 8 * sizeof *want);
        for (int op = 0; op < 8; op++)
            for (int i = 0; i < R; i++)
                for (int j = 0; j < C; j++)
                    want[op * n + i * C + j] = scan_ref(x, R, C, op, i, j);
        uint64_t dx = upload(x, (size_t)n * 4), dy = poisoned((size_t)n * 8);
        tilec_rt_arg args[2] = {{.ptr = dx}, {.ptr = dy}};
        CHECK_RT(gk_launch(&g, args, NULL));
        static const char *const names[] = {"cumsum axis 1", "exclusive cumsum axis 0", "reverse cummax axis 1",
                                            "exclusive reverse cummin axis 0", "exclusive scan(+) axis -1",
                                            "cumprod axis 1", "scan(maximum) axis 0",
                                            "exclusive reverse cumsum axis 1"};
        for (int op = 0; op < 8; op++) {
            char what[96];
            snprintf(what, sizeof what, "%s of [%d, %d]", names[op], R, C);
            scan_check(dy + (uint64_t)op * (uint64_t)n * 4, want + op * n, n, what);
        }
        tilec_rt_free(rt, dx);
        tilec_rt_free(rt, dy);
        free(x);
        free(want);
        gk_free(&g);
    }
}

/* Issue 21 item 5: examples/cumsum.tile, rows that are and are not
 * multiples of the W * BW block, against a running sum in double. */
Test(gpu, cumsum_rows_example, .timeout = 120)
{
    static const int shapes[][3] = {{3, 4096, 0}, {5, 1000, 0}, {2, 32768, 1}, {2, 40000, 1}, {4, 4097, 0}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int R = shapes[k][0], C = shapes[k][1];
        gk g;
        load_or_fail("examples/cumsum.tile", "cumsum_rows", shapes[k][2], &g);
        size_t n = (size_t)R * (size_t)C;
        float *x = random_floats(n);
        double *want = malloc(n * sizeof *want);
        for (int i = 0; i < R; i++) {
            double acc = 0;
            for (int j = 0; j < C; j++)
                want[(size_t)i * C + j] = acc += x[(size_t)i * C + j];
        }
        uint64_t dx = upload(x, n * 4), dy = poisoned(n);
        tilec_rt_arg args[4] = {{.ptr = dx}, {.ptr = dy}, {.i32 = R}, {.i32 = C}};
        CHECK_RT(gk_launch(&g, args, NULL));
        char what[64];
        snprintf(what, sizeof what, "cumsum_rows %dx%d", R, C);
        download_check(dy, want, n, 1e-5, what);
        tilec_rt_free(rt, dx);
        tilec_rt_free(rt, dy);
        free(x);
        free(want);
        gk_free(&g);
    }
}

/* examples/total.tile: the chunk sums into one accumulator by atomic_add
 * (zeroed here as the graph's zeros does) */
Test(gpu, total_example, .timeout = 120)
{
    static const int sizes[] = {1, 8191, 8193, (1 << 20) + 5};
    gk g;
    load_or_fail("examples/total.tile", "chunk_sums", 0, &g);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n = sizes[k];
        float *x = random_floats((size_t)n);
        double want = 0, mag = 0;
        for (int i = 0; i < n; i++) {
            want += x[i];
            mag += fabs(x[i]);
        }
        uint64_t dx = upload(x, (size_t)n * 4), ds = dev_alloc(4);
        CHECK_RT(tilec_rt_memset_d32(rt, ds, 0, 1));
        tilec_rt_arg args[3] = {{.ptr = dx}, {.ptr = ds}, {.i32 = n}};
        CHECK_RT(gk_launch(&g, args, NULL));
        float got = 0;
        CHECK_RT(tilec_rt_synchronize(rt));
        CHECK_RT(tilec_rt_memcpy_dtoh(rt, &got, ds, 4));
        cr_expect_leq(fabs(got - want), 1e-5 * mag + 1e-6, "total of %d: %g, want %g", n, (double)got, want);
        tilec_rt_free(rt, dx);
        tilec_rt_free(rt, ds);
        free(x);
    }
    gk_free(&g);
}

/* examples/conv2d.tile: relu(conv2d + bias) (conv2d_nhwc), the plain
 * conv2d_f16, conv2d_f16_rows and its fused conv2d_nhwc_rows, f16 NHWC
 * input, RSCK filter, f16 output, every variant, 3x3, 5x5 and 1x1, stride
 * 1 and 2, with and without padding, channels below, equal to and above
 * BK, against a double reference on the f16-rounded operands; the output
 * is poisoned (f16 NaN) before each launch. check_conv's launches go
 * either to each variant's own kernel (gk_load: never an sm_90a twin) or
 * through a program, which on a 9.0 device launches the variant's twin
 * (conv_twins below, with TILEC_LOGS=tma read back to prove which kernel
 * ran). */
/* N, H, W, C, K, R(=S), stride, pad */
static const int conv_shapes[][8] = {{2, 9, 9, 16, 24, 3, 1, 1},
                                     {1, 11, 7, 8, 70, 3, 2, 1},
                                     {3, 5, 6, 32, 64, 1, 1, 0},
                                     {1, 8, 8, 3, 5, 1, 2, 0},
                                     {2, 7, 7, 80, 136, 3, 1, 1},
                                     {2, 13, 11, 24, 32, 3, 2, 1},
                                     {3, 8, 9, 16, 48, 1, 2, 0},
                                     {2, 10, 10, 72, 64, 5, 2, 2},
                                     /* from here (CONV_FEW) not the pixel-block kernels' own kernels: more tiles
                                      * than the H200's 132 SMs (at BM 128, BN 128: 144 and 150), so that a block of
                                      * the persistent twin walks two where the program forces it
                                      * (TILEC_TMA_PERSIST=1, conv_twins) */
                                     {4, 48, 48, 64, 200, 1, 1, 0},
                                     {6, 40, 40, 16, 136, 3, 1, 1},
                                     /* one N tile (K <= BN) and 137 tiles at BM 128: B resident on the persistent
                                      * twin (lower/wgmma.c, persist_plan) where it walks (TILEC_TMA_PERSIST=1); C 16
                                      * below BK, B's boxes partly masked, its chunks by cp.async */
                                     {4, 66, 66, 16, 64, 3, 1, 1},
                                     {1, 132, 132, 64, 32, 3, 1, 1},
                                     /* 288 tiles at BM 128, BN 128 (more at smaller tiles): more than 2 a
                                      * multiprocessor, so the launch's own rule walks them on the persistent twin
                                      * (runtime/tma.c, TMA_GATHER_WALK) */
                                     {2, 96, 96, 32, 136, 1, 1, 0}};
#define CONV_FEW 8   /* conv_shapes below this: a few tiles, the gather twins' one-tile twin by the launch's rule */
#define CONV_MANY 12 /* this one: the persistent twin walking by the launch's rule */
#define CONV_VMAX 8  /* variants a kernel */

/* A kernel check_conv runs: fused is relu(conv + bias), the bias after w */
typedef struct conv_kernel {
    const char *name;
    int fused;
    uint32_t nv;               /* its variants */
    gk_twin twin[CONV_VMAX]; /* through a program: each variant's twin */
} conv_kernel;

/* How check_conv launches: g[k * CONV_VMAX + v], kernel k's variant v's
 * own kernel, or program p, with log its TILEC_LOGS=tma lines where the
 * device is a 9.0 one (NULL: not checked); persist the TILEC_TMA_PERSIST
 * it was built under (NULL: the launch's rule). */
typedef struct conv_via {
    gk *g;
    tilec_program *p;
    const char *persist;
    tma_log *log;
} conv_via;

/* The TILEC_LOGS=tma lines of one launch of variant v of ck at shape t
 * must name its twin, and for a gather twin (persistent 5: A by TMA's
 * im2col mode) the twin the mode and the tiles pick. A twin whose
 * operands all come by cp.async (no tensor map) runs for any arguments;
 * one with maps where every map's row is a multiple of 16 bytes: C halves
 * a pixel, K a filter row (fits). Elsewhere the variant's own kernel may
 * run: the line must say which. */
static void expect_conv_twin(const conv_via *via, const conv_kernel *ck, uint32_t v, size_t t, int fits)
{
    char *text = tma_log_take(via->log), line[160];
    const gk_twin *tw = &ck->twin[v];
    snprintf(line, sizeof line, "tilec tma: %s variant %u: launched ", ck->name, v);
    int took = tma_log_launched(text, tw), took_whole = took == 1, took_one = took == 2;
    const char *mode = via->persist ? via->persist : "unset";
    cr_expect(strstr(text, line), "%s variant %u shape %zu (TILEC_TMA_PERSIST %s): no launch line:\n%s", ck->name, v, t,
              mode, text);
    if (fits || !tw->nmaps) {
        cr_expect(took_whole || took_one, "%s variant %u shape %zu (TILEC_TMA_PERSIST %s): not its twin %s:\n%s",
                  ck->name, v, t, mode, tw->name, text);
        cr_expect_null(strstr(text, "not its twin"), "%s variant %u shape %zu: %s", ck->name, v, t, text);
        if (tw->persistent != 5)
            cr_expect(took_whole, "%s variant %u shape %zu: %s", ck->name, v, t, text);
        else if (via->persist && !strcmp(via->persist, "1"))
            cr_expect(took_whole && strstr(text, "walking its units: TILEC_TMA_PERSIST=1"),
                      "%s variant %u shape %zu: the persistent twin, forced: %s", ck->name, v, t, text);
        else if (!via->persist && t < CONV_FEW)
            cr_expect(took_one && strstr(text, "few tiles a multiprocessor"),
                      "%s variant %u shape %zu: the one-tile twin for a few tiles: %s", ck->name, v, t, text);
        else if (!via->persist && t == CONV_MANY)
            cr_expect(took_whole && strstr(text, "walking its units"),
                      "%s variant %u shape %zu: the persistent twin walking its tiles: %s", ck->name, v, t, text);
    } else {
        cr_log_info("%s variant %u shape %zu: C or K not a multiple of 8 halves: %s", ck->name, v, t,
                    took_whole || took_one ? "its twin" : "its own kernel");
    }
    free(text);
}

/* Every variant of each kernel of file at conv_shapes (the last five, the
 * walking ones, where walk is set), launched by each of the nvia ways; one
 * reference a shape. */
static void check_conv(const char *file, const conv_kernel *ks, size_t nk, int walk, const conv_via *via, size_t nvia)
{
    for (size_t t = 0; t < sizeof conv_shapes / sizeof conv_shapes[0]; t++) {
        if (t >= CONV_FEW && !walk)
            continue; /* the pixel-block kernels' own kernels run one tile a block */
        const int *sh = conv_shapes[t];
        int N = sh[0], H = sh[1], W = sh[2], C = sh[3], K = sh[4], R = sh[5], S = R, st = sh[6], pad = sh[7];
        int OH = (H + 2 * pad - R) / st + 1, OW = (W + 2 * pad - S) / st + 1;
        size_t nx = (size_t)N * H * W * C, nw = (size_t)K * R * S * C, ny = (size_t)N * OH * OW * K;
        float *x = random_floats(nx), *w = random_floats(nw), *b = random_floats((size_t)K), *got = malloc(ny * 4);
        uint16_t *xh = malloc(nx * 2), *wh = malloc(nw * 2), *bh = malloc((size_t)K * 2), *yh = malloc(ny * 2);
        for (size_t i = 0; i < nx; i++)
            x[i] = f16_to_f32(xh[i] = f32_to_f16(x[i]));
        for (size_t i = 0; i < nw; i++) /* w[r][s][c][k] */
            w[i] = f16_to_f32(wh[i] = f32_to_f16(w[i]));
        for (int i = 0; i < K; i++)
            b[i] = f16_to_f32(bh[i] = f32_to_f16(b[i]));
        double *plain = malloc(ny * sizeof *plain), *fused = malloc(ny * sizeof *fused);
        for (int n = 0; n < N; n++)
            for (int oh = 0; oh < OH; oh++)
                for (int ow = 0; ow < OW; ow++)
                    for (int k = 0; k < K; k++) {
                        double acc = 0.0;
                        for (int r = 0; r < R; r++)
                            for (int s = 0; s < S; s++) {
                                int h = oh * st + r - pad, v = ow * st + s - pad;
                                if (h < 0 || h >= H || v < 0 || v >= W)
                                    continue;
                                for (int c = 0; c < C; c++)
                                    acc += (double)x[(((size_t)n * H + h) * W + v) * C + c] *
                                           w[(((size_t)r * S + s) * C + c) * K + k];
                            }
                        size_t o = (((size_t)n * OH + oh) * OW + ow) * K + k;
                        plain[o] = acc;
                        fused[o] = acc + b[k] < 0 ? 0 : acc + b[k];
                    }
        uint64_t dx = upload(xh, nx * 2), dw = upload(wh, nw * 2), db = upload(bh, (size_t)K * 2);
        uint64_t dy = dev_alloc(ny * 2);
        for (size_t a = 0; a < nvia; a++)
            for (size_t kf = 0; kf < nk; kf++)
                for (uint32_t var = 0; var < ks[kf].nv; var++) {
                    CHECK_RT(tilec_rt_fill_async(rt, dy, 0x7e00, 2, ny, NULL)); /* f16 NaN */
                    tilec_rt_arg args[15] = {{.ptr = dx}, {.ptr = dw}, {.ptr = db}, {.ptr = dy}, {.i32 = N},
                                             {.i32 = H},  {.i32 = W},  {.i32 = C},  {.i32 = K},  {.i32 = R},
                                             {.i32 = S},  {.i32 = OH}, {.i32 = OW}, {.i32 = st}, {.i32 = pad}};
                    uint32_t nargs = 15;
                    if (!ks[kf].fused) { /* no bias */
                        memmove(&args[2], &args[3], 12 * sizeof args[0]);
                        nargs = 14;
                    }
                    if (via[a].p)
                        CHECK_RT(tilec_program_launch(via[a].p, ks[kf].name, (int)var, args, nargs, NULL));
                    else
                        CHECK_RT(gk_launch(&via[a].g[kf * CONV_VMAX + var], args, NULL));
                    CHECK_RT(tilec_rt_synchronize(rt));
                    CHECK_RT(tilec_rt_memcpy_dtoh(rt, yh, dy, ny * 2));
                    if (via[a].log)
                        expect_conv_twin(&via[a], &ks[kf], var, t, C % 8 == 0 && K % 8 == 0);
                    for (size_t i = 0; i < ny; i++)
                        got[i] = f16_to_f32(yh[i]);
                    double err = rel_l2(got, ks[kf].fused ? fused : plain, ny);
                    char how[48] = "";
                    if (via[a].p)
                        snprintf(how, sizeof how, " (program, TILEC_TMA_PERSIST %s)",
                                 via[a].persist ? via[a].persist : "unset");
                    cr_expect_leq(err, 2e-3,
                                  "%s %s variant %u%s N%d H%d W%d C%d K%d %dx%d stride %d pad %d: relative L2 error %g",
                                  file, ks[kf].name, var, how, N, H, W, C, K, R, S, st, pad, err);
                }
        tilec_rt_free(rt, dx);
        tilec_rt_free(rt, dw);
        tilec_rt_free(rt, db);
        tilec_rt_free(rt, dy);
        free(x), free(w), free(b), free(xh), free(wh), free(bh), free(yh), free(got), free(plain), free(fused);
    }
}

/* Every variant of kernel through its own kernel (gk_load). */
static void check_conv_own(const char *file, const char *kernel, int fused, int walk)
{
    conv_kernel ck = {kernel, fused, variants_of(file, kernel), {{"", 0, 0}}};
    cr_assert_leq(ck.nv, CONV_VMAX);
    gk g[CONV_VMAX];
    for (uint32_t v = 0; v < ck.nv; v++)
        load_or_fail(file, kernel, (int)v, &g[v]);
    conv_via via = {g, NULL, NULL, NULL};
    check_conv(file, &ck, 1, walk, &via, 1);
    for (uint32_t v = 0; v < ck.nv; v++)
        gk_free(&g[v]);
}

Test(gpu, conv2d_example, .timeout = 600)
{
    static const char *const kernels[] = {"conv2d_nhwc", "conv2d_f16", "conv2d_f16_rows", "conv2d_nhwc_rows"};
    for (int kf = 0; kf < 4; kf++)
        check_conv_own("examples/conv2d.tile", kernels[kf], kf == 0 || kf == 3, kf >= 2);
}

/* tests/conv_forms: convolutions written from the docs alone (the flat
 * rows with `(pixel)[:, None] * C` and `p < N * OH * OW`; the tap by tap
 * loops), every variant's own kernel. */
Test(gpu, conv2d_from_the_docs, .timeout = 600)
{
    check_conv_own("tests/conv_forms/conv_gemm.tile", "conv_gemm", 0, 1);
    check_conv_own("tests/conv_forms/conv_taps.tile", "conv_taps", 0, 0);
}

/* The sm_90a twins users run (issue 30): the kernels of file through a
 * program, built twice from one kernel cache (the second build loads the
 * first's images): under the launch's own rule and with
 * TILEC_TMA_PERSIST=1 (every gather twin's persistent kernel, its blocks
 * walking the tiles past the multiprocessors), where the persist mode
 * matters (persist set). On a 9.0 device every variant must have its twin
 * (tilec_program_has_twin) and each launch's TILEC_LOGS=tma line must name
 * it (expect_conv_twin), so a twin that yields to the variant's own kernel
 * fails; elsewhere the program runs the variants' own kernels. Every
 * shape of conv_shapes, the output poisoned, one reference for all. */
static void conv_twins(const char *file, conv_kernel *ks, size_t nk, int persist)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/tilec_gpu_conv_XXXXXX");
    cr_assert(mkdtemp(dir));
    tilec_rt_device_props props;
    CHECK_RT(tilec_rt_device_info(rt, &props));
    int hopper = props.sm_major == 9 && props.sm_minor == 0;
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, file, &m), TILEC_OK, "%s does not parse", file);
    for (size_t kf = 0; kf < nk; kf++) { /* each variant's twin, as the lowering names it */
        const tilec_kernel *k = tilec_module_find_kernel(m, ks[kf].name);
        cr_assert_not_null(k, "no kernel %s in %s", ks[kf].name, file);
        ks[kf].nv = tilec_kernel_variant_count(k);
        cr_assert_leq(ks[kf].nv, CONV_VMAX);
        for (uint32_t v = 0; v < ks[kf].nv; v++)
            gk_twin_of(ctx, m, k, v, &ks[kf].twin[v]);
    }
    tilec_cache *cache = NULL;
    cr_assert_eq(tilec_cache_open(dir, &cache), TILEC_RT_OK);
    tma_log log;
    tma_log_start(&log);
    setenv("TILEC_LOGS", "tma", 1); /* read when a twin is resolved, as TILEC_TMA_PERSIST */
    static const char *const modes[] = {NULL, "1"};
    tilec_program *p[2] = {NULL, NULL};
    conv_via via[2];
    size_t nvia = persist ? 2 : 1;
    for (size_t i = 0; i < nvia; i++) {
        if (modes[i])
            setenv("TILEC_TMA_PERSIST", modes[i], 1);
        else
            unsetenv("TILEC_TMA_PERSIST");
        tilec_build_options o = {.threads = 8, .cache = cache};
        tilec_status st = tilec_program_build(ctx, rt, m, &o, &p[i]);
        const tilec_diag *d = tilec_ctx_diag(ctx, 0);
        cr_assert_eq(st, TILEC_OK, "%s: %s", file, d ? d->message : "build failed");
        for (size_t kf = 0; kf < nk; kf++)
            for (uint32_t v = 0; v < ks[kf].nv; v++) {
                if (hopper)
                    cr_expect(tilec_program_has_twin(p[i], ks[kf].name, (int)v), "%s variant %u: an sm_90a twin",
                              ks[kf].name, v);
                else
                    cr_log_info("not a 9.0 device: %s variant %u through its own kernel", ks[kf].name, v);
            }
        via[i] = (conv_via){NULL, p[i], modes[i], hopper ? &log : NULL};
    }
    unsetenv("TILEC_TMA_PERSIST");
    unsetenv("TILEC_LOGS");
    free(tma_log_take(&log)); /* the builds' "resolved" lines */
    check_conv(file, ks, nk, 1, via, nvia);
    tma_log_stop(&log);
    for (size_t i = 0; i < nvia; i++)
        tilec_program_free(p[i]);
    tilec_cache_close(cache);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0, "cannot remove %s", dir);
}

/* The rows kernels' twins (lower/wgim2col.c: A by TMA's im2col mode, B by
 * TMA, wgmma; a persistent twin and its one-tile twin NAME_1), plain and
 * fused with bias and relu: what bench/harness's conv rows time against
 * cuDNN. */
Test(gpu, conv2d_rows_twins, .timeout = 300)
{
    conv_kernel ks[] = {{"conv2d_f16_rows", 0, 0, {{"", 0, 0}}}, {"conv2d_nhwc_rows", 1, 0, {{"", 0, 0}}}};
    conv_twins("examples/conv2d.tile", ks, 2, 1);
}

/* The pixel-block kernels' twins (lower/wggather.c: A gathered by a
 * cp.async producer warp group, B by cp.async or TMA, wgmma; one tile a
 * block) */
Test(gpu, conv2d_pixel_block_twins, .timeout = 300)
{
    conv_kernel ks[] = {{"conv2d_f16", 0, 0, {{"", 0, 0}}}, {"conv2d_nhwc", 1, 0, {{"", 0, 0}}}};
    conv_twins("examples/conv2d.tile", ks, 2, 0);
}

/* tests/conv_forms/conv_gemm.tile, written from the docs alone: its
 * twins are the rows kernels' (A by TMA's im2col mode) */
Test(gpu, conv2d_from_the_docs_twins, .timeout = 300)
{
    conv_kernel ks[] = {{"conv_gemm", 0, 0, {{"", 0, 0}}}};
    conv_twins("tests/conv_forms/conv_gemm.tile", ks, 1, 1);
}

/* examples/conv2d_f32.tile: f32 NCHW input, KCRS filter (torch's
 * layouts), f32 NCHW output, no tf32; conv2d_f32 (stride 1, every
 * variant) and conv2d_f32_strided (stride 1 and 2), 3x3, 1x1 and 5x3
 * filters, with and without padding, odd sizes (W not a multiple of 4:
 * rows whose 16-byte chunks are misaligned; C * R * S not a multiple of
 * BK), against a double reference; the output is poisoned with NaN. */
Test(gpu, conv2d_f32_example, .timeout = 600)
{
    /* N, H, W, C, K, R, S, stride, pad */
    static const int shapes[][9] = {{2, 9, 9, 16, 24, 3, 3, 1, 1},   {1, 11, 7, 3, 70, 3, 3, 2, 1},
                                    {3, 5, 6, 32, 64, 1, 1, 1, 0},   {1, 8, 8, 3, 5, 1, 1, 2, 0},
                                    {2, 13, 70, 5, 130, 3, 3, 1, 1}, {1, 10, 9, 7, 9, 5, 3, 2, 2},
                                    {1, 6, 33, 4, 16, 3, 3, 1, 0}};
    static const char *const kernels[] = {"conv2d_f32", "conv2d_f32_strided"};
    for (int kf = 0; kf < 2; kf++) {
        uint32_t nv = variants_of("examples/conv2d_f32.tile", kernels[kf]);
        for (uint32_t var = 0; var < nv; var++) {
            gk g;
            load_or_fail("examples/conv2d_f32.tile", kernels[kf], (int)var, &g);
            for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
                int N = shapes[t][0], H = shapes[t][1], W = shapes[t][2], C = shapes[t][3], K = shapes[t][4];
                int R = shapes[t][5], S = shapes[t][6], st = shapes[t][7], pad = shapes[t][8];
                if (kf == 0 && st != 1)
                    continue; /* conv2d_f32 is the stride-1 kernel */
                int OH = (H + 2 * pad - R) / st + 1, OW = (W + 2 * pad - S) / st + 1;
                size_t nx = (size_t)N * C * H * W, nw = (size_t)K * C * R * S, ny = (size_t)N * K * OH * OW;
                float *x = random_floats(nx), *w = random_floats(nw), *got = malloc(ny * sizeof *got);
                double *want = malloc(ny * sizeof *want);
                for (int n = 0; n < N; n++)
                    for (int k = 0; k < K; k++)
                        for (int oh = 0; oh < OH; oh++)
                            for (int ow = 0; ow < OW; ow++) {
                                double acc = 0;
                                for (int c = 0; c < C; c++)
                                    for (int r = 0; r < R; r++)
                                        for (int s = 0; s < S; s++) {
                                            int h = oh * st + r - pad, v = ow * st + s - pad;
                                            if (h >= 0 && h < H && v >= 0 && v < W)
                                                acc += (double)x[(((size_t)n * C + c) * H + h) * W + v] *
                                                       w[(((size_t)k * C + c) * R + r) * S + s];
                                        }
                                want[(((size_t)n * K + k) * OH + oh) * OW + ow] = acc;
                            }
                uint64_t dx = upload(x, nx * 4), dw = upload(w, nw * 4), dy = poisoned(ny);
                tilec_rt_arg args[14] = {{.ptr = dx}, {.ptr = dw}, {.ptr = dy}, {.i32 = N},  {.i32 = C},
                                         {.i32 = H},  {.i32 = W},  {.i32 = K},  {.i32 = R},  {.i32 = S},
                                         {.i32 = OH}, {.i32 = OW}, {.i32 = st}, {.i32 = pad}};
                if (kf == 0) /* no stride argument */
                    args[12] = args[13];
                CHECK_RT(gk_launch(&g, args, NULL));
                CHECK_RT(tilec_rt_synchronize(rt));
                CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, dy, ny * 4));
                double err = rel_l2(got, want, ny);
                cr_expect_leq(err, 1e-5, "%s variant %u N%d C%d H%d W%d K%d %dx%d stride %d pad %d: relative L2 error %g",
                              kernels[kf], var, N, C, H, W, K, R, S, st, pad, err);
                tilec_rt_free(rt, dx);
                tilec_rt_free(rt, dw);
                tilec_rt_free(rt, dy);
                free(x), free(w), free(got), free(want);
            }
            gk_free(&g);
        }
    }
}

/* A loop at the edge of i32 (docs/language.md, "for"): a grid-stride
 * fill of n = 2^31 - 1000 bytes, step num_programs(0) * BLOCK = 65536, so
 * most programs' last o + step passes 2^31 - 1. Before the loop header was
 * guarded (lower_loop_next) o wrapped to about -2^31, still passed o < n,
 * and the body stored 2 GiB before the buffer, then wrapped again and
 * again (the loop never ended). A 2 GiB guard region before the buffer
 * must stay zero, every byte of the buffer and of its tail must be set,
 * and the 64 bytes after it stay zero. 4 GiB of device memory. fill_u8
 * starts at pid(0) * BLOCK, fill_u8_from at minimum(lo, 0) + pid(0) * BLOCK
 * (lo = 0 here: a start the compiler cannot prove >= 0), both guarded
 * (tests/gpu/loop_edge.tile). */
static void edge_fill(const char *kernel, int nargs)
{
    const size_t guard = (size_t)1 << 31, after = 64;
    const int n = 2147483647 - 999; /* 2^31 - 1000 */
    gk g;
    load_or_fail("tests/gpu/loop_edge.tile", kernel, 0, &g);
    size_t total = guard + (size_t)n + 1000 + after; /* a multiple of 4 */
    uint64_t base = dev_alloc(total);
    CHECK_RT(tilec_rt_memset_d32(rt, base, 0, total / 4));
    uint64_t out = base + guard;
    tilec_rt_arg args[4] = {{.ptr = out}, {.i32 = n}, {.i32 = 7}, {.i32 = 0}};
    cr_assert_eq(g.code.nparams, (uint32_t)nargs, "%s: %u parameters", kernel, g.code.nparams);
    CHECK_RT(gk_launch(&g, args, NULL));
    CHECK_RT(tilec_rt_synchronize(rt));
    unsigned char *h = malloc(total);
    cr_assert(h);
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, h, base, total));
    size_t bad_guard = 0, bad_out = 0, bad_after = 0, first_guard = 0;
    for (size_t i = 0; i < guard; i++)
        if (h[i] && !bad_guard++)
            first_guard = i;
    for (size_t i = 0; i < (size_t)n; i++)
        bad_out += h[guard + i] != 7;
    for (size_t i = guard + (size_t)n; i < total; i++)
        bad_after += h[i] != 0;
    cr_expect_eq(bad_guard, 0,
                 "%s: %zu bytes written before the buffer (the first at out - %zu): the loop variable wrapped", kernel,
                 bad_guard, guard - first_guard);
    cr_expect_eq(bad_out, 0, "%s: %zu of the %d bytes not filled", kernel, bad_out, n);
    cr_expect_eq(h[guard + (size_t)n - 1], 7, "%s: the last byte is not filled", kernel);
    cr_expect_eq(bad_after, 0, "%s: %zu bytes written after the buffer", kernel, bad_after);
    free(h);
    tilec_rt_free(rt, base);
    gk_free(&g);
}

Test(gpu, loop_edge_fill, .timeout = 60) { edge_fill("fill_u8", 3); }

Test(gpu, loop_edge_fill_guarded, .timeout = 60) { edge_fill("fill_u8_from", 4); }

/* The loop's bound may be negative (fill_u8_any: its grid is 64 programs
 * whatever n): no trip for n <= 0, as `o < n` gives, where a header
 * comparing (unsigned)n would fill about 4 GiB; n = 5000 fills 5000 bytes.
 * A 1 MiB buffer, zero before. */
Test(gpu, loop_edge_negative_bound)
{
    const size_t total = (size_t)1 << 20;
    gk g;
    load_or_fail("tests/gpu/loop_edge.tile", "fill_u8_any", 0, &g);
    uint64_t out = dev_alloc(total);
    unsigned char *h = malloc(total);
    cr_assert(h);
    const int ns[] = {-1000, -2147483647 - 1, 0, 5000};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        CHECK_RT(tilec_rt_memset_d32(rt, out, 0, total / 4));
        tilec_rt_arg args[3] = {{.ptr = out}, {.i32 = ns[k]}, {.i32 = 7}};
        CHECK_RT(gk_launch(&g, args, NULL));
        CHECK_RT(tilec_rt_synchronize(rt));
        CHECK_RT(tilec_rt_memcpy_dtoh(rt, h, out, total));
        size_t want = ns[k] > 0 ? (size_t)ns[k] : 0, bad = 0;
        for (size_t i = 0; i < total; i++)
            bad += h[i] != (i < want ? 7 : 0);
        cr_expect_eq(bad, 0, "n = %d: %zu bytes wrong of %zu", ns[k], bad, total);
    }
    free(h);
    tilec_rt_free(rt, out);
    gk_free(&g);
}

/* A u32 bound past 2^31 - 1 (fill_u8_u32, n = 2^31 + 1000): every byte of
 * the buffer filled, a 2 GiB guard before it and 64 bytes after it zero.
 * With an int loop variable (before session 51) the bytes past 2^31 stayed
 * 0 and the stores landed before the buffer. 4 GiB of device memory. */
Test(gpu, loop_edge_u32_bound, .timeout = 60)
{
    const size_t guard = (size_t)1 << 31, after = 64, n = ((size_t)1 << 31) + 1000;
    gk g;
    load_or_fail("tests/gpu/loop_edge.tile", "fill_u8_u32", 0, &g);
    size_t total = guard + n + after; /* a multiple of 4 */
    uint64_t base = dev_alloc(total);
    CHECK_RT(tilec_rt_memset_d32(rt, base, 0, total / 4));
    tilec_rt_arg args[3] = {{.ptr = base + guard}, {.u32 = (uint32_t)n}, {.i32 = 7}};
    CHECK_RT(gk_launch(&g, args, NULL));
    CHECK_RT(tilec_rt_synchronize(rt));
    unsigned char *h = malloc(total);
    cr_assert(h);
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, h, base, total));
    size_t bad_guard = 0, bad_out = 0, bad_after = 0;
    for (size_t i = 0; i < guard; i++)
        bad_guard += h[i] != 0;
    for (size_t i = 0; i < n; i++)
        bad_out += h[guard + i] != 7;
    for (size_t i = guard + n; i < total; i++)
        bad_after += h[i] != 0;
    cr_expect_eq(bad_guard, 0, "%zu bytes written before the buffer: the loop variable wrapped", bad_guard);
    cr_expect_eq(bad_out, 0, "%zu of the %zu bytes not filled", bad_out, n);
    cr_expect_eq(bad_after, 0, "%zu bytes written after the buffer", bad_after);
    free(h);
    tilec_rt_free(rt, base);
    gk_free(&g);
}

int main(int argc, char *argv[]) { return gpu_suite_main(argc, argv, "GPU kernel tests"); }

/* sigmoid on the GPU within docs/language.md's bound of a double reference
 * over tests/numerics_ref.h's sweep (+-inf, NaN, +-88, +-1e-30, the
 * subnormal results), f32 and f64 (tests/test_numerics.c: the CPU). */
Test(gpu, sigmoid_within_its_bound)
{
    float x[SIGMOID_N];
    double xd[SIGMOID_N], outd[SIGMOID_N];
    float out[SIGMOID_N];
    int n = sigmoid_sweep(x);
    for (int i = 0; i < n; i++)
        xd[i] = x[i];
    gk g;
    load_or_fail("tests/gpu/numerics.tile", "sigmoids", 0, &g);
    uint64_t dx = upload(x, (size_t)n * 4), dxd = upload(xd, (size_t)n * 8), dout = poisoned(n),
             doutd = dev_alloc((size_t)n * 8);
    tilec_rt_arg args[5] = {{.ptr = dx}, {.ptr = dxd}, {.ptr = dout}, {.ptr = doutd}, {.i32 = n}};
    CHECK_RT(gk_launch(&g, args, NULL));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, out, dout, (size_t)n * 4));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, outd, doutd, (size_t)n * 8));
    double worst = 0, worst_d = 0;
    for (int i = 0; i < n; i++) {
        double u = sigmoid_ulps(x[i], out[i]), ud = sigmoid_ulps_f64(x[i], outd[i]);
        cr_expect(u <= SIGMOID_ULPS, "sigmoid(%a) = %a (f32): %g ulp from the double reference", (double)x[i],
                  (double)out[i], u);
        cr_expect(ud <= 2.0, "sigmoid(%a) = %a (f64): %g ulp", (double)x[i], outd[i], ud);
        worst = u > worst ? u : worst;
        worst_d = ud > worst_d ? ud : worst_d;
    }
    fprintf(stderr, "sigmoid on the GPU: worst %g ulp (f32), %g ulp (f64) over %d values\n", worst, worst_d, n);
    gk_free(&g);
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dxd);
    tilec_rt_free(rt, dout);
    tilec_rt_free(rt, doutd);
}

/* Issue 35 items 1 and 2 on the GPU (tests/test_numerics.c runs the same
 * kernels on the CPU): cast(cast(v, bf16), f32) is v rounded to bf16 as
 * torch's x.to(torch.bfloat16).to(torch.float32) rounds it (to nearest
 * even), inline, in where, through a let, beside an f32, from f64 and in a
 * reduction's operand; f16 likewise; 0.9, 1e-50 and 1e300 beside an f64
 * are doubles. */
Test(gpu, casts_round_and_f64_literals_are_doubles)
{
    enum { n = 2048 }; /* rounding_sum reads [16, 128] */
    float *x = random_floats(n), *w = random_floats(n);
    for (int i = 0; i < n; i++)
        x[i] *= 70000.0f; /* past f16's range too */
    x[0] = 1.00390625f; /* ties */
    x[1] = 1.01171875f;
    gk g;
    load_or_fail("tests/gpu/numerics.tile", "rounding", 0, &g);
    uint64_t dx = upload(x, n * 4), dw = upload(w, n * 4), dout = poisoned(6 * n);
    tilec_rt_arg args[4] = {{.ptr = dx}, {.ptr = dw}, {.ptr = dout}, {.i32 = n}};
    CHECK_RT(gk_launch(&g, args, NULL));
    float *got = malloc(6 * n * sizeof *got);
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, dout, 6 * n * sizeof *got));
    for (int i = 0; i < n; i++) {
        float b = bf16_to_f32(f32_to_bf16(x[i])), h = f16_to_f32(f32_to_f16(x[i]));
        float want[6] = {b, h, x[i] > 0.0f ? b : h, b, w[i] * b, b + (float)((float)(i % 128) < x[i] * 128.0f)};
        for (int k = 0; k < 6; k++)
            cr_expect(memcmp(&got[k * n + i], &want[k], 4) == 0, "rounding[%d]: x = %a gives %a, want %a", k,
                      (double)x[i], (double)got[k * n + i], (double)want[k]);
    }
    gk_free(&g);
    load_or_fail("tests/gpu/numerics.tile", "rounding_sum", 0, &g);
    uint64_t dsum = poisoned(16);
    tilec_rt_arg sargs[2] = {{.ptr = dx}, {.ptr = dsum}};
    CHECK_RT(gk_launch(&g, sargs, NULL));
    double want_sum[16];
    for (int r = 0; r < 16; r++) {
        want_sum[r] = 0;
        for (int c = 0; c < 128; c++)
            want_sum[r] += bf16_to_f32(f32_to_bf16(x[r * 128 + c]));
    }
    download_check(dsum, want_sum, 16, 1e-5, "sum(cast(cast(x, bf16), f32), 1)");
    gk_free(&g);
    tilec_rt_free(rt, dsum);
    free(got);
    free(x);
    free(w);
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dw);
    tilec_rt_free(rt, dout);
    load_or_fail("tests/gpu/numerics.tile", "literals", 0, &g);
    uint64_t dl = dev_alloc(8 * sizeof(double));
    tilec_rt_arg largs[3] = {{.f64 = 1.0}, {.f64 = 0.0}, {.ptr = dl}};
    CHECK_RT(gk_launch(&g, largs, NULL));
    double lit[8];
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, lit, dl, sizeof lit));
    const double lwant[8] = {0.9, 1e-50, 1e300, 0.1, 0.1, 0.0, 1e-300, 1e-300};
    for (int i = 0; i < 8; i++)
        cr_expect(lit[i] == lwant[i], "literals[%d] = %.17g, want %.17g", i, lit[i], lwant[i]);
    tilec_rt_free(rt, dl);
    gk_free(&g);
}

/* Scalar f16/bf16 lets, re-assignments, loop-carried scalars and a virtual
 * bf16 tile bound by a let hold values of their type (tests/test_numerics.c
 * runs the same kernel on the CPU). */
Test(gpu, scalar_lets_round)
{
    static const float ss[] = {1.01171875f, 0.1f, -2.71828f, 3.14159265f, 1000.7f, 1e-3f, 7.0f, 21845.3f};
    gk g;
    load_or_fail("tests/gpu/numerics.tile", "scalar_round", 0, &g);
    uint64_t dout = poisoned(24);
    for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++) {
        tilec_rt_arg args[2] = {{.f32 = ss[i]}, {.ptr = dout}};
        CHECK_RT(gk_launch(&g, args, NULL));
        float got[24], want[SCALAR_ROUND_N];
        CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, dout, sizeof got));
        scalar_round_want(ss[i], want);
        for (int j = 0; j < 24; j++) {
            float w = j < SCALAR_ROUND_N ? want[j] : want[0];
            if (j >= SCALAR_ROUND_N && j < 8)
                continue;
            cr_expect(memcmp(&got[j], &w, 4) == 0, "%s: s = %a gives %a, want %a",
                      j < SCALAR_ROUND_N ? scalar_round_what[j] : "full(bf16, s, 16) * 3.0 through a let", (double)ss[i],
                      (double)got[j], (double)w);
        }
    }
    tilec_rt_free(rt, dout);
    gk_free(&g);
}

/* prod along each axis, to a scalar, of a replicated tile; i32 and u8
 * products wrap (tests/test_numerics.c runs the same kernel on the CPU). */
Test(gpu, prod_reduces)
{
    float x[512];
    int32_t y[512], oi[32], gi[32];
    double want[53];
    prods_inputs(x, y, 88172645463325252ull);
    prods_want(x, y, want, oi);
    gk g;
    load_or_fail("tests/gpu/numerics.tile", "prods", 0, &g);
    uint64_t dx = upload(x, sizeof x), dy = upload(y, sizeof y), dout = poisoned(53), doi = dev_alloc(sizeof gi);
    tilec_rt_arg args[4] = {{.ptr = dx}, {.ptr = dy}, {.ptr = dout}, {.ptr = doi}};
    CHECK_RT(gk_launch(&g, args, NULL));
    download_check(dout, want, 53, 1e-5, "prod");
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, gi, doi, sizeof gi));
    for (int i = 0; i < 32; i++)
        cr_expect_eq(gi[i], oi[i], "prod oi[%d] (%s) = %d, want %d", i, i < 16 ? "i32" : "u8", gi[i], oi[i]);
    gk_free(&g);
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dy);
    tilec_rt_free(rt, dout);
    tilec_rt_free(rt, doi);
}

/* Element picks with constant and run-time (clamped) indices
 * (tests/test_numerics.c runs the same kernel on the CPU). */
Test(gpu, picks)
{
    static const int ij[][2] = {{0, 0}, {7, 13}, {15, 31}, {-5, 99}, {99, -5}, {4, 31}};
    float x[512], got[20], want[20];
    int32_t y[512];
    prods_inputs(x, y, 1234567ull);
    gk g;
    load_or_fail("tests/gpu/numerics.tile", "picks", 0, &g);
    uint64_t dx = upload(x, sizeof x), dout = poisoned(20);
    for (size_t k = 0; k < sizeof ij / sizeof ij[0]; k++) {
        tilec_rt_arg args[4] = {{.ptr = dx}, {.ptr = dout}, {.i32 = ij[k][0]}, {.i32 = ij[k][1]}};
        CHECK_RT(gk_launch(&g, args, NULL));
        CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, dout, sizeof got));
        picks_want(x, ij[k][0], ij[k][1], want);
        for (int i = 0; i < 20; i++)
            cr_expect(memcmp(&got[i], &want[i], 4) == 0, "picks(i = %d, j = %d) out[%d] = %a, want %a", ij[k][0], ij[k][1],
                      i, (double)got[i], (double)want[i]);
    }
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dout);
    gk_free(&g);
}

/* Slices of register, virtual, reduced and pointer tiles, mixed with
 * picks and None (tests/test_numerics.c runs the same kernel on the CPU). */
Test(gpu, slices)
{
    static const int rows[] = {0, 3, 7, -2, 40};
    float x[512], got[336], want[336];
    int32_t y[512];
    prods_inputs(x, y, 7654321ull);
    gk g;
    load_or_fail("tests/gpu/numerics.tile", "slices", 0, &g);
    uint64_t dx = upload(x, sizeof x), dout = poisoned(336);
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        tilec_rt_arg args[3] = {{.ptr = dx}, {.ptr = dout}, {.i32 = rows[k]}};
        CHECK_RT(gk_launch(&g, args, NULL));
        CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, dout, sizeof got));
        slices_want(x, rows[k], want);
        for (int i = 0; i < 336; i++)
            cr_expect(memcmp(&got[i], &want[i], 4) == 0, "slices(i = %d) out[%d] = %a, want %a", rows[k], i, (double)got[i],
                      (double)want[i]);
    }
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dout);
    gk_free(&g);
}

/* RoPE with cos/sin rows broadcast in registers (issue 35 item 7) against
 * the CPU, 40 rows (a ragged last block); rows past n stay untouched. */
Test(gpu, rope_broadcast)
{
    static float x[48 * 64], cs[32], sn[32], got[48 * 64], want[48 * 64];
    rope_inputs(x, cs, sn, 99ull);
    gk g;
    load_or_fail("tests/gpu/numerics.tile", "rope", 0, &g);
    uint64_t dx = upload(x, sizeof x), dc = upload(cs, sizeof cs), ds = upload(sn, sizeof sn), dout = poisoned(48 * 64);
    tilec_rt_arg args[5] = {{.ptr = dx}, {.ptr = dc}, {.ptr = ds}, {.ptr = dout}, {.i32 = 40}};
    CHECK_RT(gk_launch(&g, args, NULL));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, dout, sizeof got));
    rope_want(x, cs, sn, 40, want);
    for (int i = 0; i < 40 * 64; i++)
        cr_expect(fabsf(got[i] - want[i]) <= 1e-5f * (1.0f + fabsf(want[i])), "rope out[%d] = %a, want %a", i,
                  (double)got[i], (double)want[i]);
    for (int i = 40 * 64; i < 48 * 64; i++)
        cr_expect(isnan(got[i]), "rope wrote out[%d] = %a past the last row", i, (double)got[i]);
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dc);
    tilec_rt_free(rt, ds);
    tilec_rt_free(rt, dout);
    gk_free(&g);
}

/* Reshapes of register, pointer and virtual tiles in row-major order
 * (tests/test_numerics.c runs the same kernel on the CPU). */
Test(gpu, reshapes)
{
    float x[512], got[3200], want[3200];
    int32_t y[512];
    prods_inputs(x, y, 7654321ull);
    gk g;
    load_or_fail("tests/gpu/numerics.tile", "reshapes", 0, &g);
    uint64_t dx = upload(x, sizeof x), dout = poisoned(3200);
    tilec_rt_arg args[2] = {{.ptr = dx}, {.ptr = dout}};
    CHECK_RT(gk_launch(&g, args, NULL));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, dout, sizeof got));
    reshapes_want(x, want);
    for (int i = 0; i < 3200; i++)
        cr_expect(memcmp(&got[i], &want[i], 4) == 0, "reshapes out[%d] = %a, want %a", i, (double)got[i],
                  (double)want[i]);
    tilec_rt_free(rt, dx);
    tilec_rt_free(rt, dout);
    gk_free(&g);
}
