/* test_gpu_layouts.c: kernels whose tiles the layout plan keeps in
 * registers (lower/linlay.c, lower/layplan.c), on the GPU against CPU
 * references in double: row and column sums and row maxima of one tile,
 * and attention forward (d = 64 and 128, causal or not, ragged S; K as
 * stored with dot(q, trans(k)) too). The
 * multi-row softmax and layernorm are in test_gpu_kernels.c beside their
 * one-row twins. Fresh random inputs, sizes off the tile multiples, outputs poisoned
 * with NaN. Without a GPU the binary prints one SKIP line and succeeds. */
#include <criterion/criterion.h>

#include "gpu_helpers.h"

static tilec_rt *rt;
static char arch[16];
static unsigned long long rng;

#define CHECK_RT(call) GPU_CHECK(rt, call)

static uint64_t put(const void *host, size_t bytes)
{
    uint64_t p = 0;
    CHECK_RT(tilec_rt_malloc(rt, bytes ? bytes : 4, &p));
    if (host)
        CHECK_RT(tilec_rt_memcpy_htod(rt, p, host, bytes));
    return p;
}

/* n 32-bit words, each `word` (0x7fc00000: NaN) */
static uint64_t filled(size_t n, unsigned word)
{
    uint64_t p = put(NULL, n * 4);
    CHECK_RT(tilec_rt_memset_d32(rt, p, word, n));
    return p;
}

static void lay_setup(void) { gpu_open(&rt, arch, &rng); }

static void lay_teardown(void) { gpu_close(&rt); }

TestSuite(layouts, .init = lay_setup, .fini = lay_teardown);

static void load(const char *file, const char *kernel, uint32_t variant, gk *g)
{
    cr_assert_eq(gk_load(rt, arch, file, kernel, (int)variant, g), 0, "%s", g->err);
}

static float *rnd(size_t n, float scale, float shift)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    fill_random(x, n, &rng);
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] * scale + shift;
    return x;
}

static void expect_close(uint64_t dev, const double *want, size_t n, double tol, const char *what)
{
    gpu_expect_close(rt, dev, want, n, tol, what);
}

/* rows x cols: one row, ragged, exactly a tile, wider than a tile */
static const int shapes[][2] = {{1, 1}, {3, 127}, {17, 128}, {33, 512}, {5, 1000}, {9, 1024}, {3, 4097}, {70, 300}};

Test(layouts, row_and_column_reductions, .timeout = 120)
{
    gk g;
    load("examples/reduce2d.tile", "row_col_sums", 0, &g);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        size_t n = (size_t)rows * cols;
        float *x = rnd(n, 1.0f, 0.25f);
        double *rs = calloc((size_t)rows, sizeof *rs), *cs = calloc((size_t)cols, sizeof *cs),
               *mx = malloc((size_t)rows * sizeof *mx);
        for (int r = 0; r < rows; r++) {
            mx[r] = -INFINITY;
            for (int c = 0; c < cols; c++) {
                double e = x[(size_t)r * cols + c];
                rs[r] += e;
                cs[c] += e;
                mx[r] = fmax(mx[r], e);
            }
        }
        uint64_t dx = put(x, n * 4), drs = filled((size_t)rows, 0), dcs = filled((size_t)cols, 0),
                 dmx = filled((size_t)rows, 0x7fc00000u);
        tilec_rt_arg args[6] = {{.ptr = dx}, {.ptr = drs}, {.ptr = dcs}, {.ptr = dmx}, {.i32 = rows}, {.i32 = cols}};
        CHECK_RT(gk_launch(&g, args, NULL));
        char what[80];
        snprintf(what, sizeof what, "row sums %dx%d", rows, cols);
        expect_close(drs, rs, (size_t)rows, 1e-5, what);
        snprintf(what, sizeof what, "column sums %dx%d", rows, cols);
        expect_close(dcs, cs, (size_t)cols, 1e-5, what);
        if (cols <= 128) {
            snprintf(what, sizeof what, "row maxima %dx%d", rows, cols);
            expect_close(dmx, mx, (size_t)rows, 0, what);
        }
        tilec_rt_free(rt, dx);
        tilec_rt_free(rt, drs);
        tilec_rt_free(rt, dcs);
        tilec_rt_free(rt, dmx);
        free(x);
        free(rs);
        free(cs);
        free(mx);
    }
    gk_free(&g);
}

/* o = softmax(q k^T * scale, causal mask) v per (batch*head), in double
 * over the f16-rounded inputs */
static void attention_ref(const float *q, const float *k, const float *v, double *o, int bh, int S, int D, int causal,
                          double scale)
{
    double *p = malloc((size_t)S * sizeof *p);
    for (int h = 0; h < bh; h++)
        for (int i = 0; i < S; i++) {
            const float *qi = q + ((size_t)h * S + i) * D;
            double mx = -INFINITY, den = 0;
            int hi = causal ? i + 1 : S;
            for (int j = 0; j < hi; j++) {
                const float *kj = k + ((size_t)h * S + j) * D;
                double s = 0;
                for (int d = 0; d < D; d++)
                    s += (double)qi[d] * kj[d];
                p[j] = s * scale;
                mx = fmax(mx, p[j]);
            }
            for (int j = 0; j < hi; j++)
                den += p[j] = exp(p[j] - mx);
            for (int d = 0; d < D; d++) {
                double a = 0;
                for (int j = 0; j < hi; j++)
                    a += p[j] * v[((size_t)h * S + j) * D + d];
                o[((size_t)h * S + i) * D + d] = a / den;
            }
        }
    free(p);
}

static float *rnd_f16(size_t n, uint16_t **h)
{
    float *x = rnd(n, 1.0f, 0.0f);
    *h = malloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++)
        x[i] = f16_to_f32((*h)[i] = f32_to_f16(x[i]));
    return x;
}

/* How a check launches the kernel: its variant's own kernel (g), or a
 * program that launches the variant's sm_90a twin where it has one. */
typedef struct att_run {
    gk *g;
    tilec_program *p;
    const char *kernel;
    int v;
    int kds;      /* K given as [D, S] per (batch, head) */
    double scale; /* 0: 1 / sqrt(D) */
    tma_log *log; /* a program's TILEC_LOGS=tma lines on a 9.0 device, each launch's checked (NULL: not) */
    const gk_twin *tw; /* with log: the variant's twin */
} att_run;

/* File as a program (its sm_90a twins included on a 9.0 device; the
 * build failing fails the test), stderr captured into log from here on
 * with TILEC_LOGS=tma read by the build (tma_log_stop it). */
static tilec_program *att_program(const char *file, tilec_ctx **ctx, tilec_module **m, tma_log *log)
{
    *ctx = tilec_ctx_new();
    cr_assert_eq(tilec_parse_file(*ctx, file, m), TILEC_OK, "%s does not parse", file);
    tma_log_start(log);
    setenv("TILEC_LOGS", "tma", 1); /* read when the twins are resolved */
    tilec_build_options o = {.threads = 8};
    tilec_program *p = NULL;
    tilec_status st = tilec_program_build(*ctx, rt, *m, &o, &p);
    unsetenv("TILEC_LOGS");
    free(tma_log_take(log)); /* the build's "resolved" lines */
    const tilec_diag *d = tilec_ctx_diag(*ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s: %s", file, d ? d->message : "build failed");
    return p;
}

/* S from 1 to past several tiles: the ring's first stages alone, its
 * steady state, whole tiles (the unmasked copy of the body) and ragged
 * last tiles and causal diagonals (the masked copy). */
static void check_attention_run(const att_run *r, int D)
{
    static const int seqs[] = {1, 17, 64, 100, 257, 640};
    const int bh = 3;
    for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; s++)
        for (int causal = 0; causal < 2; causal++) {
            int S = seqs[s];
            size_t n = (size_t)bh * S * D;
            uint16_t *qh, *kh, *vh;
            float *q = rnd_f16(n, &qh), *k = rnd_f16(n, &kh), *v = rnd_f16(n, &vh);
            double *want = malloc(n * sizeof *want), scale = r->scale != 0 ? r->scale : 1.0 / sqrt((double)D);
            attention_ref(q, k, v, want, bh, S, D, causal, scale);
            if (r->kds) { /* K^T per head: [D, S] */
                uint16_t *t = malloc(n * 2 + 2);
                for (size_t h = 0; h < (size_t)bh; h++)
                    for (size_t j = 0; j < (size_t)S; j++)
                        for (size_t d = 0; d < (size_t)D; d++)
                            t[(h * D + d) * S + j] = kh[(h * S + j) * D + d];
                free(kh);
                kh = t;
            }
            uint64_t dq = put(qh, n * 2), dk = put(kh, n * 2), dv = put(vh, n * 2), dout = put(NULL, n * 2);
            CHECK_RT(tilec_rt_memset_d32(rt, dout, 0x7e007e00u, (n + 1) / 2)); /* f16 NaN */
            tilec_rt_arg args[8] = {{.ptr = dq}, {.ptr = dk}, {.ptr = dv}, {.ptr = dout}, {.i32 = S}, {.i32 = bh},
                                    {.i32 = causal}, {.f32 = (float)scale}};
            if (r->p)
                CHECK_RT(tilec_program_launch(r->p, r->kernel, r->v, args, 8, NULL));
            else
                CHECK_RT(gk_launch(r->g, args, NULL));
            uint16_t *oh = malloc(n * 2 + 2);
            float *got = malloc(n * sizeof *got);
            CHECK_RT(tilec_rt_synchronize(rt));
            if (r->log) { /* the twin, except where K^T's rows (S halves) are no multiple of 16 bytes */
                char *text = tma_log_take(r->log);
                if (!(r->kds && S % 8))
                    cr_expect(tma_log_launched(text, r->tw) && !strstr(text, "not its twin"),
                              "%s variant %d S=%d causal=%d: not its twin %s:\n%s", r->kernel, r->v, S, causal,
                              r->tw->name, text);
                free(text);
            }
            CHECK_RT(tilec_rt_memcpy_dtoh(rt, oh, dout, n * 2));
            for (size_t i = 0; i < n; i++)
                got[i] = f16_to_f32(oh[i]);
            double err = rel_l2(got, want, n);
            cr_expect_leq(err, 5e-3, "%s d%d variant %d%s S=%d causal=%d scale=%g: relative L2 error %g", r->kernel, D,
                          r->v, r->p ? " (program)" : "", S, causal, scale, err);
            tilec_rt_free(rt, dq);
            tilec_rt_free(rt, dk);
            tilec_rt_free(rt, dv);
            tilec_rt_free(rt, dout);
            free(q);
            free(k);
            free(v);
            free(qh);
            free(kh);
            free(vh);
            free(oh);
            free(got);
            free(want);
        }
}

/* Variant `variant` of kernel, through its own kernel. */
static void check_attention_in(const char *file, const char *kernel, int D, uint32_t variant)
{
    gk g;
    load(file, kernel, variant, &g);
    att_run r = {.g = &g, .kernel = kernel, .v = (int)variant};
    check_attention_run(&r, D);
    gk_free(&g);
}

/* Every variant of kernel through a program: on a 9.0 device each has
 * its sm_90a twin (lower/wgattn.c: wgmma, its rings filled by TMA, or by a
 * cp.async producer warp group where no map describes a load) and the
 * program launches it (or the variant's own kernel where an argument is
 * no tensor map's: K given as [D, S] with S not a multiple of 8); each
 * launch's TILEC_LOGS=tma line must name the twin, so a launch that
 * yields to the variant's own kernel elsewhere fails. */
static void check_attention_twins(const char *file, const char *kernel, int D, int kds, double scale)
{
    tilec_ctx *ctx;
    tilec_module *m;
    tma_log log;
    tilec_program *p = att_program(file, &ctx, &m, &log);
    tilec_rt_device_props props;
    CHECK_RT(tilec_rt_device_info(rt, &props));
    int hopper = props.sm_major == 9 && props.sm_minor == 0;
    const tilec_kernel *k = tilec_module_find_kernel(m, kernel);
    cr_assert_not_null(k, "no kernel %s in %s", kernel, file);
    for (uint32_t v = 0; v < tilec_kernel_variant_count(k); v++) {
        gk_twin tw;
        gk_twin_of(ctx, m, k, v, &tw);
        if (hopper)
            cr_expect(tilec_program_has_twin(p, kernel, (int)v), "%s variant %u: an sm_90a twin", kernel, v);
        else
            cr_log_info("not a 9.0 device: %s variant %u through its own kernel", kernel, v);
        att_run r = {
            .p = p, .kernel = kernel, .v = (int)v, .kds = kds, .scale = scale, .log = hopper ? &log : NULL, .tw = &tw};
        check_attention_run(&r, D);
    }
    tma_log_stop(&log);
    tilec_program_free(p);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* the sm_90a twins: K as stored [S, D] (read K-major), K^T given as
 * [D, S] (MN-major), d = 64 and 128, every block shape */
Test(layouts, attention_twin_d64, .timeout = 300) { check_attention_twins("examples/attention.tile", "attention_d64", 64, 0, 0); }
Test(layouts, attention_twin_d128, .timeout = 300) { check_attention_twins("examples/attention.tile", "attention_d128", 128, 0, 0); }
Test(layouts, attention_twin_k_given_transposed, .timeout = 300)
{
    check_attention_twins("tests/gpu/attention_kt.tile", "attention_kds", 64, 1, 0);
}
Test(layouts, attention_twin_trans_k, .timeout = 300)
{
    check_attention_twins("tests/gpu/attention_kt.tile", "attention_kt_inline", 64, 0, 0);
}

/* The persistent twins walking units (issue 30): bh = 64 heads of S = 260
 * (ragged: 3 query tiles of 128, 5 of 64) make 192 or 320 units, more
 * than the H200's 132 multiprocessors, so the blocks of a persistent twin
 * (tilec_tma_meta.persistent 1, as the lowering writes it: every
 * attention_d128, attention_d64's { BM = 64 } and { BN = 128 }; the other
 * twins take a block a unit) walk two or three units each with the ring's
 * phases carried from one to the next (the tests above, bh = 3, give a
 * block one unit); every variant, causal and not, against one reference
 * each. On a 9.0 device
 * each variant must have its twin and each launch's TILEC_LOGS=tma line
 * must name it (a persistent one "walking its units"), so a launch that
 * yields to the variant's own kernel fails. */
static void check_attention_walk(const char *kernel, int D)
{
    const int bh = 64, S = 260;
    tilec_ctx *ctx;
    tilec_module *m;
    tilec_rt_device_props props;
    CHECK_RT(tilec_rt_device_info(rt, &props));
    int hopper = props.sm_major == 9 && props.sm_minor == 0;
    tma_log log;
    tilec_program *p = att_program("examples/attention.tile", &ctx, &m, &log);
    const tilec_kernel *k = tilec_module_find_kernel(m, kernel);
    cr_assert_not_null(k);
    uint32_t nv = tilec_kernel_variant_count(k);
    gk_twin tw[8];
    cr_assert_leq(nv, 8);
    for (uint32_t vi = 0; vi < nv; vi++) {
        gk_twin_of(ctx, m, k, vi, &tw[vi]);
        cr_expect(!hopper || tilec_program_has_twin(p, kernel, (int)vi), "%s variant %u: an sm_90a twin", kernel, vi);
    }
    size_t n = (size_t)bh * S * D;
    double scale = 1.0 / sqrt((double)D);
    uint16_t *qh, *kh, *vh, *oh = malloc(n * 2);
    float *q = rnd_f16(n, &qh), *kk = rnd_f16(n, &kh), *v = rnd_f16(n, &vh), *got = malloc(n * sizeof *got);
    double *want = malloc(n * sizeof *want);
    uint64_t dq = put(qh, n * 2), dk = put(kh, n * 2), dv = put(vh, n * 2), dout = put(NULL, n * 2);
    for (int causal = 0; causal < 2; causal++) {
        attention_ref(q, kk, v, want, bh, S, D, causal, scale);
        for (uint32_t vi = 0; vi < nv; vi++) {
            CHECK_RT(tilec_rt_memset_d32(rt, dout, 0x7e007e00u, (n + 1) / 2)); /* f16 NaN */
            tilec_rt_arg args[8] = {{.ptr = dq}, {.ptr = dk}, {.ptr = dv},     {.ptr = dout},
                                    {.i32 = S},  {.i32 = bh}, {.i32 = causal}, {.f32 = (float)scale}};
            CHECK_RT(tilec_program_launch(p, kernel, (int)vi, args, 8, NULL));
            CHECK_RT(tilec_rt_synchronize(rt));
            char *text = tma_log_take(&log);
            if (hopper) {
                cr_expect(tma_log_launched(text, &tw[vi]) == 1, "%s variant %u causal %d: not its twin %s:\n%s", kernel,
                          vi, causal, tw[vi].name, text);
                cr_expect(tw[vi].persistent != 1 || strstr(text, "; walking its units: "),
                          "%s variant %u causal %d: the persistent twin does not walk:\n%s", kernel, vi, causal, text);
            }
            free(text);
            CHECK_RT(tilec_rt_memcpy_dtoh(rt, oh, dout, n * 2));
            for (size_t i = 0; i < n; i++)
                got[i] = f16_to_f32(oh[i]);
            double err = rel_l2(got, want, n);
            cr_expect_leq(err, 5e-3,
                          "%s variant %u, %d heads of S = %d, causal %d (units walked): relative L2 error %g", kernel,
                          vi, bh, S, causal, err);
        }
    }
    const uint64_t dev[] = {dq, dk, dv, dout};
    void *const host[] = {q, kk, v, qh, kh, vh, oh, got, want};
    for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
        tilec_rt_free(rt, dev[i]);
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
    tma_log_stop(&log);
    tilec_program_free(p);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}
Test(layouts, attention_twin_walks_units_d64, .timeout = 300) { check_attention_walk("attention_d64", 64); }
Test(layouts, attention_twin_walks_units_d128, .timeout = 300) { check_attention_walk("attention_d128", 128); }

/* Attention written from the docs alone (tests/attn_forms/README.md):
 * every variant through its sm_90a twin, ragged S, causal and not. */
Test(layouts, attention_docs_d64_plain, .timeout = 300)
{
    check_attention_twins("tests/attn_forms/fa_d64_plain.tile", "fa_d64_plain", 64, 0, 0);
}
Test(layouts, attention_docs_d64_exp2, .timeout = 300)
{
    check_attention_twins("tests/attn_forms/fa_d64_exp2.tile", "fa_d64_exp2", 64, 0, 0);
}
Test(layouts, attention_docs_d64_lets, .timeout = 300)
{
    check_attention_twins("tests/attn_forms/fa_d64_lets.tile", "fa_d64_lets", 64, 0, 0);
}
Test(layouts, attention_docs_d128, .timeout = 300)
{
    check_attention_twins("tests/attn_forms/fa_d128.tile", "fa_d128", 128, 0, 0);
}

/* The twin's producer either way (tests/gpu/attention_ring.tile): V's
 * mask no tensor map's bound, both rings by cp.async (d = 64 with the
 * turns, d = 128 at BM = 128, BN = 64); the head size bounded by the hint
 * (`rd < D`), a map of constant extent D. */
Test(layouts, attention_twin_cp_async_d64, .timeout = 300)
{
    check_attention_twins("tests/gpu/attention_ring.tile", "attention_cp_d64", 64, 0, 0);
}
Test(layouts, attention_twin_cp_async_d128, .timeout = 300)
{
    check_attention_twins("tests/gpu/attention_ring.tile", "attention_cp_d128", 128, 0, 0);
}
Test(layouts, attention_twin_d_bounded, .timeout = 300)
{
    check_attention_twins("tests/gpu/attention_ring.tile", "attention_dmask", 64, 0, 0);
}

/* A negative scale: the copy of the body with the scale folded into the
 * exponent (lower/fold.c) runs only where the scale is positive, so every
 * tile takes the body as written (its max of the scaled tile). */
Test(layouts, attention_twin_negative_scale, .timeout = 300)
{
    check_attention_twins("examples/attention.tile", "attention_d64", 64, 0, -0.125);
}

static void check_attention(int D, uint32_t variant)
{
    char kernel[32];
    snprintf(kernel, sizeof kernel, "attention_d%d", D);
    check_attention_in("examples/attention.tile", kernel, D, variant);
}

/* K as stored, the product dot(tq, trans(tk)) inline or let first: K's
 * ring read as B^T (tests/gpu/attention_kt.tile) */
Test(layouts, attention_trans_k_inline, .timeout = 120)
{
    check_attention_in("tests/gpu/attention_kt.tile", "attention_kt_inline", 64, 0);
}
Test(layouts, attention_trans_k_let, .timeout = 120) { check_attention_in("tests/gpu/attention_kt.tile", "attention_kt_let", 64, 0); }

/* every variant of examples/attention.tile: block shapes of 64 and 128
 * query rows over 4 or 8 warps, 32, 64 or 128 keys a step (BN = 128's own
 * mma.sync kernel spills; its twin is the one a 9.0 device launches) */
Test(layouts, attention_d64, .timeout = 120) { check_attention(64, 0); }
Test(layouts, attention_d64_bn32, .timeout = 120) { check_attention(64, 1); }
Test(layouts, attention_d64_bm64, .timeout = 120) { check_attention(64, 2); }
Test(layouts, attention_d64_bn128, .timeout = 120) { check_attention(64, 3); }
Test(layouts, attention_d128, .timeout = 120) { check_attention(128, 0); }
Test(layouts, attention_d128_8warps, .timeout = 120) { check_attention(128, 1); }
Test(layouts, attention_d128_8warps_bn32, .timeout = 120) { check_attention(128, 2); }
Test(layouts, attention_d128_bn128, .timeout = 120) { check_attention(128, 3); }

int main(int argc, char *argv[]) { return gpu_suite_main(argc, argv, "GPU layout tests"); }
