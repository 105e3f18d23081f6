/* test_gpu_splitk.c: split-K (the `split_k` hint, lower/splitk.c, the
 * runtime's per-stream workspace in runtime/program.c) on a GPU: every
 * split-K variant of tests/gemm_variants.tile (f16 and bf16) and of a small
 * module of our own (an f32 FMA accumulator, a fused bias + gelu epilogue,
 * a batched product whose grid already has three axes) against a CPU
 * reference in double precision, on random inputs, with sizes that are no
 * multiple of the tile, K no multiple of split_k * BK (and K so short that
 * some slices are empty), the output poisoned with NaN before each launch;
 * every case launched twice in a row (the tile counters must be back at
 * zero) with bit-identical results (the partials are added in slice
 * order), then on two streams at once, and as two CUDA graphs of one plan
 * replayed on two streams at once (each graph owns its workspace). Without
 * a GPU one SKIP line. */
#include <criterion/criterion.h>

#include "gpu_helpers.h"
#include "tilec/plan.h"

static tilec_rt *rt;
static tilec_ctx *ctx;
static tilec_module *gemm, *own;
static tilec_program *pgemm, *pown;
static unsigned long long rng;

#define CHECK_RT(call) GK_CHECK_RT(rt, call)

/* Our own split kernels: f32 operands (FMA registers), a bias + gelu
 * epilogue after the loop, and a batch on grid axis 2 (pid(2) keeps its
 * meaning while the launch multiplies that axis by split_k). */
static const char OWN[] =
    "kernel mm32(a: *f32, b: *f32, c: *f32, M: i32, N: i32, K: i32)\n"
    "    grid (cdiv(M, BM), cdiv(N, BN))\n"
    "    hints { BM = 32, BN = 64, BK = 16, warps = 4, stages = 3, split_k = 3 }\n"
    "{\n"
    "    let rm = pid(0) * BM + range(BM);\n"
    "    let rn = pid(1) * BN + range(BN);\n"
    "    let acc = zeros(f32, BM, BN);\n"
    "    for k in 0 .. K step BK {\n"
    "        let rk = k + range(BK);\n"
    "        let ta = load(a + rm[:, None] * K + rk[None, :], rm[:, None] < M && rk[None, :] < K, 0.0);\n"
    "        let tb = load(b + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0);\n"
    "        acc = acc + dot(ta, tb);\n"
    "    }\n"
    "    store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M && rn[None, :] < N);\n"
    "}\n"
    "kernel gelu16(a: *f16, b: *f16, bias: *f16, c: *f16, M: i32, N: i32, K: i32)\n"
    "    grid (cdiv(M, BM), cdiv(N, BN))\n"
    "    hints { BM = 16, BN = 64, BK = 64, warps = 4, stages = 3, split_k = 5 }\n"
    "{\n"
    "    let rm = pid(0) * BM + range(BM);\n"
    "    let rn = pid(1) * BN + range(BN);\n"
    "    let acc = zeros(f32, BM, BN);\n"
    "    for k in 0 .. K step BK {\n"
    "        let rk = k + range(BK);\n"
    "        let ta = load(a + rm[:, None] * K + rk[None, :], rm[:, None] < M && rk[None, :] < K, 0.0);\n"
    "        let tb = load(b + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0);\n"
    "        acc = acc + dot(ta, tb);\n"
    "    }\n"
    "    let x = acc + cast(load(bias + rn, rn < N, 0.0), f32)[None, :];\n"
    "    let y = 0.5 * x * (1.0 + erf(x * 0.7071067811865476));\n"
    "    store(c + rm[:, None] * N + rn[None, :], cast(y, f16), rm[:, None] < M && rn[None, :] < N);\n"
    "}\n"
    "kernel bmm16(a: *f16, b: *f16, c: *f16, M: i32, N: i32, K: i32, batch: i32)\n"
    "    grid (cdiv(M, BM), cdiv(N, BN), batch)\n"
    "    hints { BM = 16, BN = 64, BK = 64, warps = 4, stages = 2, split_k = 2 }\n"
    "{\n"
    "    let za = cast(pid(2), i64) * M * K;\n"
    "    let zb = cast(pid(2), i64) * K * N;\n"
    "    let zc = cast(pid(2), i64) * M * N;\n"
    "    let rm = pid(0) * BM + range(BM);\n"
    "    let rn = pid(1) * BN + range(BN);\n"
    "    let acc = zeros(f32, BM, BN);\n"
    "    for k in 0 .. K step BK {\n"
    "        let rk = k + range(BK);\n"
    "        let ta = load(a + za + rm[:, None] * K + rk[None, :], rm[:, None] < M && rk[None, :] < K, 0.0);\n"
    "        let tb = load(b + zb + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0);\n"
    "        acc = acc + dot(ta, tb);\n"
    "    }\n"
    "    store(c + zc + rm[:, None] * N + rn[None, :], cast(acc, f16), rm[:, None] < M && rn[None, :] < N);\n"
    "}\n";

static tilec_program *build(tilec_module *m)
{
    tilec_build_options o = {.threads = 2};
    tilec_program *p = NULL;
    tilec_status st = tilec_program_build(ctx, rt, m, &o, &p);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s", d ? d->message : "build failed");
    return p;
}

static void setup(void)
{
    char arch[16];
    gpu_open(&rt, arch, &rng);
    ctx = tilec_ctx_new();
    cr_assert_eq(tilec_parse_file(ctx, "tests/gemm_variants.tile", &gemm), TILEC_OK);
    cr_assert_eq(tilec_parse_string(ctx, "own.tile", OWN, strlen(OWN), &own), TILEC_OK);
    pgemm = build(gemm);
    pown = build(own);
}

static void teardown(void)
{
    tilec_program_free(pgemm);
    tilec_program_free(pown);
    tilec_module_free(gemm);
    tilec_module_free(own);
    tilec_ctx_free(ctx);
    tilec_rt_close(rt);
}

TestSuite(splitk, .init = setup, .fini = teardown);

enum { F16, BF16, F32 };

/* n random values of type t on the device; vals gets what they round to. */
static uint64_t upload(size_t n, int t, float *vals)
{
    fill_random(vals, n, &rng);
    size_t es = t == F32 ? 4 : 2;
    uint16_t *h = malloc(n * 2 + 2);
    for (size_t i = 0; t != F32 && i < n; i++) {
        h[i] = t == BF16 ? f32_to_bf16(vals[i]) : f32_to_f16(vals[i]);
        vals[i] = t == BF16 ? bf16_to_f32(h[i]) : f16_to_f32(h[i]);
    }
    uint64_t d;
    CHECK_RT(tilec_rt_malloc(rt, n * es + 16, &d));
    CHECK_RT(tilec_rt_memcpy_htod(rt, d, t == F32 ? (const void *)vals : (const void *)h, n * es));
    free(h);
    return d;
}

typedef struct sk_case {
    tilec_program *p;
    const char *kernel;
    int variant, type, gelu, batch; /* batch: bmm16's products, 0 for a plain product */
    int M, N, K;
} sk_case;

/* The output of one launch, as floats (the output poisoned with NaN first). */
static void launch(const sk_case *c, const tilec_rt_arg *args, uint32_t nargs, uint64_t dc, size_t nc, void *stream,
                   float *got)
{
    size_t es = c->type == F32 ? 4 : 2;
    CHECK_RT(tilec_rt_memset_d32(rt, dc, c->type == F32 ? 0x7fc00000u : 0x7e007e00u, (nc * es + 3) / 4));
    CHECK_RT(tilec_program_launch(c->p, c->kernel, c->variant, args, nargs, stream));
    CHECK_RT(stream ? tilec_rt_stream_synchronize(rt, stream) : tilec_rt_synchronize(rt));
    uint16_t *h = malloc(nc * 2 + 2);
    if (c->type == F32)
        CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, dc, nc * 4));
    else
        CHECK_RT(tilec_rt_memcpy_dtoh(rt, h, dc, nc * 2));
    for (size_t i = 0; c->type != F32 && i < nc; i++)
        got[i] = c->type == BF16 ? bf16_to_f32(h[i]) : f16_to_f32(h[i]);
    free(h);
}

static void run_case(const sk_case *c)
{
    int M = c->M, N = c->N, K = c->K, nbat = c->batch ? c->batch : 1;
    size_t na = (size_t)M * K * nbat, nb = (size_t)K * N * nbat, nc = (size_t)M * N * nbat;
    float *a = malloc(na * 4 + 4), *b = malloc(nb * 4 + 4), *bias = malloc((size_t)N * 4 + 4);
    uint64_t da = upload(na, c->type, a), db = upload(nb, c->type, b), dbias = upload((size_t)N, F16, bias);
    double *want = malloc(nc * sizeof *want + 8);
    for (int z = 0; z < nbat; z++) {
        double *w = gk_ref_matmul(a + (size_t)z * M * K, b + (size_t)z * K * N, M, N, K);
        memcpy(want + (size_t)z * M * N, w, (size_t)M * N * sizeof *w);
        free(w);
    }
    for (size_t i = 0; c->gelu && i < nc; i++) {
        double x = want[i] + bias[i % (size_t)N];
        want[i] = 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
    }
    uint64_t dc;
    CHECK_RT(tilec_rt_malloc(rt, nc * 4 + 16, &dc));
    tilec_rt_arg args[8];
    uint32_t n = 0;
    args[n++].ptr = da;
    args[n++].ptr = db;
    if (c->gelu)
        args[n++].ptr = dbias;
    args[n++].ptr = dc;
    args[n++].i32 = M;
    args[n++].i32 = N;
    args[n++].i32 = K;
    if (c->batch)
        args[n++].i32 = c->batch;
    float *got = malloc(nc * 4 + 4), *again = malloc(nc * 4 + 4);
    double tol = c->type == BF16 ? 1e-2 : c->type == F32 ? 1e-5 : 2e-3;
    launch(c, args, n, dc, nc, NULL, got);
    double err = rel_l2(got, want, nc);
    cr_expect(err < tol, "%s variant %d, M=%d N=%d K=%d batch %d: rel. error %g", c->kernel, c->variant, M, N, K,
              c->batch, err);
    /* again: the counters the first launch used are back at zero, and
     * the sum is the same bits (slice order, whichever block was last) */
    launch(c, args, n, dc, nc, NULL, again);
    cr_expect(!memcmp(got, again, nc * 4), "%s variant %d, M=%d N=%d K=%d: a second launch differs", c->kernel,
              c->variant, M, N, K);
    tilec_rt_free(rt, da);
    tilec_rt_free(rt, db);
    tilec_rt_free(rt, dbias);
    tilec_rt_free(rt, dc);
    free(a);
    free(b);
    free(bias);
    free(want);
    free(got);
    free(again);
}

/* M, N, K: ragged tiles; K = 3000 is 47 steps of 64 (no multiple of
 * split_k * BK); K = 200 gives 4 steps, so a split of 8 leaves slices
 * empty; K = 64 is one step. */
static const int shapes[][3] = {{16, 1000, 3000}, {5, 130, 200}, {64, 264, 1000},
                                {100, 72, 64},    {1, 64, 8192}, {37, 200, 777}};

/* Every split-K variant of a gemm.tile kernel: at least `want`. */
static void check_gemm(const char *kernel, int type, int want)
{
    int split = 0;
    for (int v = 0; v < 32 && tilec_program_kernel(pgemm, kernel, v); v++) {
        tilec_kernel_code code;
        const tilec_kernel *k = tilec_module_find_kernel(gemm, kernel);
        cr_assert_eq(tilec_lower_kernel(ctx, gemm, k, v, &code), TILEC_OK);
        int s = code.split_k > 1;
        tilec_kernel_code_free(&code);
        if (!s)
            continue;
        cr_expect(!tilec_program_has_twin(pgemm, kernel, v), "%s variant %d: no sm_90a twin for split-K", kernel, v);
        split++;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
            sk_case c = {pgemm, kernel, v, type, 0, 0, shapes[i][0], shapes[i][1], shapes[i][2]};
            run_case(&c);
        }
    }
    cr_assert_geq(split, want, "%s: %d split-K variants", kernel, split);
}

Test(splitk, gemm_f16, .timeout = 300) { check_gemm("matmul_f16", F16, 2); }
Test(splitk, gemm_bf16, .timeout = 300) { check_gemm("matmul_bf16", BF16, 2); }

Test(splitk, own_kernels, .timeout = 300)
{
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        sk_case f = {pown, "mm32", 0, F32, 0, 0, shapes[i][0], shapes[i][1], shapes[i][2]};
        run_case(&f);
        sk_case g = {pown, "gelu16", 0, F16, 1, 0, shapes[i][0], shapes[i][1], shapes[i][2]};
        run_case(&g);
        sk_case z = {pown, "bmm16", 0, F16, 0, 3, shapes[i][0], shapes[i][1], shapes[i][2]};
        run_case(&z);
    }
}

/* The first split-K variant of tests/gemm_variants.tile's matmul_f16. */
static int split_variant(void)
{
    int v = -1;
    for (int i = 0; i < 32 && tilec_program_kernel(pgemm, "matmul_f16", i) && v < 0; i++) {
        tilec_kernel_code code;
        cr_assert_eq(tilec_lower_kernel(ctx, gemm, tilec_module_find_kernel(gemm, "matmul_f16"), i, &code), TILEC_OK);
        if (code.split_k > 1)
            v = i;
        tilec_kernel_code_free(&code);
    }
    cr_assert_geq(v, 0);
    return v;
}

/* Two streams at once: each has its own workspace and counters. */
Test(splitk, two_streams, .timeout = 300)
{
    enum { M = 16, N = 2048, K = 4096 };
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *got = malloc(nc * 4);
    uint64_t da = upload(na, F16, a), db = upload(nb, F16, b);
    double *want = gk_ref_matmul(a, b, M, N, K);
    void *s[2];
    uint64_t dc[2];
    for (int i = 0; i < 2; i++) {
        CHECK_RT(tilec_rt_stream_create(rt, 1, &s[i]));
        CHECK_RT(tilec_rt_malloc(rt, nc * 2, &dc[i]));
        CHECK_RT(tilec_rt_memset_d32(rt, dc[i], 0x7e007e00u, nc / 2));
    }
    int v = split_variant();
    for (int r = 0; r < 8; r++)
        for (int i = 0; i < 2; i++) {
            tilec_rt_arg args[6] = {{.ptr = da}, {.ptr = db}, {.ptr = dc[i]}, {.i32 = M}, {.i32 = N}, {.i32 = K}};
            CHECK_RT(tilec_program_launch(pgemm, "matmul_f16", v, args, 6, s[i]));
        }
    for (int i = 0; i < 2; i++) {
        CHECK_RT(tilec_rt_stream_synchronize(rt, s[i]));
        uint16_t *h = malloc(nc * 2);
        CHECK_RT(tilec_rt_memcpy_dtoh(rt, h, dc[i], nc * 2));
        for (size_t j = 0; j < nc; j++)
            got[j] = f16_to_f32(h[j]);
        free(h);
        double err = rel_l2(got, want, nc);
        cr_expect(err < 2e-3, "stream %d: rel. error %g", i, err);
        CHECK_RT(tilec_rt_stream_destroy(rt, s[i]));
        tilec_rt_free(rt, dc[i]);
    }
    tilec_rt_free(rt, da);
    tilec_rt_free(rt, db);
    free(a);
    free(b);
    free(got);
    free(want);
}

int main(int argc, char *argv[]) { return gpu_suite_main(argc, argv, "split-K"); }

/* Two CUDA graphs of one plan (one split-K launch each, other operands)
 * replayed on two streams at once, 16 times each with no wait between:
 * each graph owns its workspace pair, so neither sees the other's partials
 * or counters (issue 28 item 5: they shared the capture stream's). */
Test(splitk, two_cuda_graphs_on_two_streams, .timeout = 300)
{
    enum { M = 16, N = 2048, K = 4096 };
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    int v = split_variant();
    tilec_plan *p = tilec_plan_new(pgemm, NULL, "two_graphs", 6);
    cr_assert_not_null(p);
    static const char *const names[6] = {"a", "b", "c", "M", "N", "K"};
    tilec_plan_value pv[6];
    for (uint32_t i = 0; i < 6; i++) {
        CHECK_RT(tilec_plan_set_slot(p, i, i < 3 ? TILEC_PLAN_PTR : TILEC_PLAN_INT, names[i]));
        pv[i] = (tilec_plan_value){.slot = (int32_t)i};
    }
    cr_assert_eq(tilec_plan_add_kernel(p, "matmul_f16", v, pv, 6), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    CHECK_RT(tilec_plan_set_cuda_graph(p, 4));
    float *a[2], *b[2], *got = malloc(nc * 4);
    uint64_t da[2], db[2], dc[2];
    double *want[2];
    void *s[2];
    for (int i = 0; i < 2; i++) {
        a[i] = malloc(na * 4);
        b[i] = malloc(nb * 4);
        da[i] = upload(na, F16, a[i]);
        db[i] = upload(nb, F16, b[i]);
        want[i] = gk_ref_matmul(a[i], b[i], M, N, K);
        CHECK_RT(tilec_rt_stream_create(rt, 1, &s[i]));
        CHECK_RT(tilec_rt_malloc(rt, nc * 2, &dc[i]));
    }
    for (int r = 0; r < 17; r++)
        for (int i = 0; i < 2; i++) {
            if (r == 1) /* the replays start from a poisoned output */
                CHECK_RT(tilec_rt_memset_d32(rt, dc[i], 0x7e007e00u, nc / 2));
            tilec_rt_arg args[6] = {{.ptr = da[i]}, {.ptr = db[i]}, {.ptr = dc[i]}, {.i64 = M}, {.i64 = N}, {.i64 = K}};
            cr_assert_eq(tilec_plan_run(p, args, 6, s[i]), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
            if (r == 0) /* the first run records its graph (captures once or twice) */
                CHECK_RT(tilec_rt_stream_synchronize(rt, s[i]));
        }
    tilec_plan_stats st;
    tilec_plan_get_stats(p, &st);
    cr_expect_eq(st.recorded, 2, "one graph per operand set");
    cr_expect_geq(st.replayed, 30);
    for (int i = 0; i < 2; i++) {
        CHECK_RT(tilec_rt_stream_synchronize(rt, s[i]));
        uint16_t *h = malloc(nc * 2);
        CHECK_RT(tilec_rt_memcpy_dtoh(rt, h, dc[i], nc * 2));
        for (size_t j = 0; j < nc; j++)
            got[j] = f16_to_f32(h[j]);
        free(h);
        double err = rel_l2(got, want[i], nc);
        cr_expect(err < 2e-3, "graph %d: rel. error %g after concurrent replays", i, err);
    }
    tilec_plan_free(p);
    for (int i = 0; i < 2; i++) {
        CHECK_RT(tilec_rt_stream_destroy(rt, s[i]));
        tilec_rt_free(rt, da[i]);
        tilec_rt_free(rt, db[i]);
        tilec_rt_free(rt, dc[i]);
        free(a[i]);
        free(b[i]);
        free(want[i]);
    }
    free(got);
}
