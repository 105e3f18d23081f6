/* test_gpu_wgmma.c: the sm_90a twins (wgmma + TMA) of bench/harness's
 * matrix products on a Hopper GPU, through the program the runtime builds
 * for the device (sm_90a on a 9.0 device): every variant with a twin
 * against a CPU reference in double precision, f16 and bf16, the fused
 * bias + gelu epilogue, sizes that are not multiples of the tile, outputs
 * poisoned with NaN, and operands the tensor memory accelerator cannot
 * read (a base off 16 bytes, a row stride not a multiple of 16 bytes),
 * which must take the variant's own kernel and still be right, and the
 * batched product (3-D tensor maps) with three products, and an f32
 * output (examples/matmul.tile) stored by TMA, and issue 29's forms whose
 * K tile is not 64 (16, 32, 128: A swizzled 32, 64, 128 bytes wide) or
 * whose `warps` is not BM / 16 (the twin arranges its warp groups). The twins run on a
 * persistent grid: one shape has more tiles than the device has
 * multiprocessors, so a block walks several. x @ W.T (W stored [N, K],
 * a K-major B for wgmma) in every variant of tests/gpu/linear_bt.tile.
 * An epilogue that reads an f32 tile back through shared memory beside
 * the ring (tests/gpu/epilogue_readback.tile: persistent and gather twins
 * whose stages leave room for it). Batched forms whose batch index is
 * pid(1) (a head) or whose batch stride is a constant.
 * Without a GPU one SKIP line; on a GPU other than 9.0 the twin checks are
 * skipped. */
#include <criterion/criterion.h>

#include "gpu_helpers.h"

static tilec_rt *rt;
static tilec_ctx *ctx;
static tilec_module *mod;
static tilec_program *prog;
static int hopper;
static unsigned long long rng;

#define CHECK_RT(call) GK_CHECK_RT(rt, call)

static void setup(void)
{
    CHECK_RT(tilec_rt_open(0, &rt));
    tilec_rt_device_props p;
    CHECK_RT(tilec_rt_device_info(rt, &p));
    hopper = p.sm_major == 9 && p.sm_minor == 0;
    cr_assert(!hopper || !strcmp(p.arch, "sm_90a"), "a 9.0 device compiles for sm_90a, not %s", p.arch);
    ctx = tilec_ctx_new();
    cr_assert_eq(tilec_parse_file(ctx, "tests/gemm_variants.tile", &mod), TILEC_OK);
    tilec_build_options o = {.threads = 2};
    tilec_status st = tilec_program_build(ctx, rt, mod, &o, &prog);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s", d ? d->message : "build failed");
    rng = gk_seed();
    cr_log_info("%s (%s), seed %llu", p.name, p.arch, rng);
}

static void teardown(void)
{
    tilec_program_free(prog);
    tilec_module_free(mod);
    tilec_ctx_free(ctx);
    tilec_rt_close(rt);
}

TestSuite(wgmma, .init = setup, .fini = teardown);

/* n random 16-bit values; vals gets what they round to. */
static uint16_t *rand16(size_t n, int bf16, float *vals)
{
    uint16_t *h = malloc(n * 2 + 2);
    fill_random(vals, n, &rng);
    for (size_t i = 0; i < n; i++) {
        h[i] = bf16 ? f32_to_bf16(vals[i]) : f32_to_f16(vals[i]);
        vals[i] = bf16 ? bf16_to_f32(h[i]) : f16_to_f32(h[i]);
    }
    return h;
}

static uint64_t upload_at(const void *host, size_t bytes, size_t offset, uint64_t *base)
{
    CHECK_RT(tilec_rt_malloc(rt, bytes + offset + 16, base));
    CHECK_RT(tilec_rt_memcpy_htod(rt, *base + offset, host, bytes));
    return *base + offset;
}

typedef struct mm_case {
    const char *kernel;
    int bf16, gelu;
    int M, N, K;
    size_t a_off; /* bytes added to A's base: 2 makes it unfit for TMA */
    int batch;    /* bmm_f16: this many products one after another; 0: a plain matmul */
    tilec_program *prog; /* NULL: tests/gemm_variants.tile's */
} mm_case;

/* The reference of `nbat` products one after another, in double. */
static double *ref_batched(const float *a, const float *b, int nbat, int M, int N, int K)
{
    size_t nc = (size_t)M * N;
    double *want = malloc(nc * nbat * sizeof *want + 8);
    for (int z = 0; z < nbat; z++) {
        double *w = gk_ref_matmul(a + (size_t)z * M * K, b + (size_t)z * K * N, M, N, K);
        memcpy(want + z * nc, w, nc * sizeof *w);
        free(w);
    }
    return want;
}

/* Run one product through variant v and compare with the CPU. */
static void run_case(const mm_case *c, int v)
{
    int M = c->M, N = c->N, K = c->K, nbat = c->batch ? c->batch : 1;
    size_t na = (size_t)M * K * nbat, nb = (size_t)K * N * nbat, nc = (size_t)M * N * nbat;
    float *a = malloc(na * 4 + 4), *b = malloc(nb * 4 + 4), *bias = malloc((size_t)N * 4 + 4);
    uint16_t *ah = rand16(na, c->bf16, a), *bh = rand16(nb, c->bf16, b), *biash = rand16((size_t)N, 0, bias);
    double *want = ref_batched(a, b, nbat, M, N, K);
    if (c->gelu)
        for (size_t i = 0; i < nc; i++) {
            double x = want[i] + bias[i % (size_t)N];
            want[i] = 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
        }
    uint64_t ba, bb, bc, bbias;
    uint64_t da = upload_at(ah, na * 2, c->a_off, &ba), db = upload_at(bh, nb * 2, 0, &bb);
    uint64_t dbias = upload_at(biash, (size_t)N * 2, 0, &bbias);
    CHECK_RT(tilec_rt_malloc(rt, nc * 2 + 4, &bc));
    CHECK_RT(tilec_rt_memset_d32(rt, bc, 0x7e007e00u, (nc * 2 + 4) / 4)); /* f16 NaN (a bf16 NaN too) */
    tilec_rt_arg args[8];
    int n = 0;
    args[n++].ptr = da;
    args[n++].ptr = db;
    if (c->gelu)
        args[n++].ptr = dbias;
    args[n++].ptr = bc;
    args[n++].i32 = M;
    args[n++].i32 = N;
    args[n++].i32 = K;
    if (c->batch)
        args[n++].i32 = c->batch;
    CHECK_RT(tilec_program_launch(c->prog ? c->prog : prog, c->kernel, v, args, (uint32_t)n, NULL));
    CHECK_RT(tilec_rt_synchronize(rt));
    uint16_t *got16 = malloc(nc * 2 + 2);
    float *got = malloc(nc * 4 + 4);
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got16, bc, nc * 2));
    for (size_t i = 0; i < nc; i++)
        got[i] = c->bf16 ? bf16_to_f32(got16[i]) : f16_to_f32(got16[i]);
    double err = rel_l2(got, want, nc);
    cr_expect(err < (c->bf16 ? 1e-2 : 2e-3), "%s variant %d, M=%d N=%d K=%d batch %d, A base +%zu bytes: rel. error %g",
              c->kernel, v, M, N, K, c->batch, c->a_off, err);
    tilec_rt_free(rt, ba);
    tilec_rt_free(rt, bb);
    tilec_rt_free(rt, bc);
    tilec_rt_free(rt, bbias);
    free(a);
    free(b);
    free(bias);
    free(ah);
    free(bh);
    free(biash);
    free(want);
    free(got16);
    free(got);
}

/* K not a multiple of 64: 200, 72 and 1000 leave the last K tile partly
 * past K; 96 and 48 are 3 K tiles of 32 or 16 (a K tile under 64 is
 * stages of 64, several iterations a stage: the last stage's second
 * iteration lies wholly past K, 200 and 72 are odd numbers of K tiles
 * of 16 and 32 too). The last: more tiles than an H100 has
 * multiprocessors at every tile shape, so each block of a persistent
 * twin walks several (ragged in M, N and K) */
static const int shapes[][3] = {{128, 128, 64}, {300, 264, 200}, {129, 136, 72}, {1000, 1000, 1000}, {8, 64, 1024},
                                {136, 200, 96}, {72, 64, 48},    {2100, 2080, 72}};

/* Every variant of kernel with a twin: at least `want_twins` of them
 * (batch: bmm_f16's number of products, 0 for the others). */
static void check_kernel(const char *kernel, int bf16, int gelu, int want_twins, int batch)
{
    if (!hopper) {
        cr_log_info("not a 9.0 device: no sm_90a twins to check");
        return;
    }
    int twins = 0;
    for (int v = 0; v < 8 && tilec_program_kernel(prog, kernel, v); v++) {
        if (!tilec_program_has_twin(prog, kernel, v))
            continue;
        twins++;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            mm_case c = {kernel, bf16, gelu, shapes[s][0], shapes[s][1], shapes[s][2], 0, batch, NULL};
            run_case(&c, v);
        }
    }
    cr_assert_geq(twins, want_twins, "%s: %d variants with an sm_90a twin", kernel, twins);
}

Test(wgmma, matmul_f16, .timeout = 300) { check_kernel("matmul_f16", 0, 0, 3, 0); }
Test(wgmma, matmul_bf16, .timeout = 300) { check_kernel("matmul_bf16", 1, 0, 3, 0); }
Test(wgmma, bias_gelu_epilogue, .timeout = 300) { check_kernel("matmul_bias_gelu", 0, 1, 2, 0); }
/* 3-D tensor maps: the batch is the maps' third dimension, pid(2) its
 * coordinate; three products, ragged sizes, each checked */
Test(wgmma, batched_matmul, .timeout = 300) { check_kernel("bmm_f16", 0, 0, 2, 3); }

/* Operands the tensor memory accelerator cannot read take the variant's
 * own kernel: A's base 2 bytes off 16, then row strides (K, N) of an odd
 * number of elements. */
Test(wgmma, misaligned_operands_fall_back, .timeout = 300)
{
    if (!hopper)
        return;
    int v = 3; /* matmul_f16's 128x128 variant */
    cr_assert(tilec_program_has_twin(prog, "matmul_f16", v));
    mm_case off = {"matmul_f16", 0, 0, 256, 256, 256, 2, 0, NULL};
    run_case(&off, v);
    mm_case odd = {"matmul_f16", 0, 0, 200, 129, 127, 0, 0, NULL};
    run_case(&odd, v);
    mm_case bodd = {"matmul_bf16", 1, 0, 130, 257, 65, 0, 0, NULL};
    run_case(&bodd, v);
    mm_case boff = {"bmm_f16", 0, 0, 256, 256, 256, 2, 2, NULL}; /* a batched A off 16 bytes */
    run_case(&boff, 1);
}

/* FILE parsed into *m and built for the device (two compile threads);
 * the build's first diagnostic names any failure. */
static tilec_program *build_file(const char *path, tilec_module **m)
{
    tilec_program *p = NULL;
    cr_assert_eq(tilec_parse_file(ctx, path, m), TILEC_OK, "%s", path);
    tilec_build_options o = {.threads = 2};
    tilec_status st = tilec_program_build(ctx, rt, *m, &o, &p);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s: %s", path, d ? d->message : "build failed");
    return p;
}

/* An f32 output (examples/matmul.tile): the epilogue's TMA store writes
 * boxes of 32 floats from 8-byte swizzled stores; every variant with a
 * twin, ragged sizes, the output poisoned with NaN. */
Test(wgmma, f32_output_by_tma, .timeout = 300)
{
    if (!hopper)
        return;
    tilec_module *m = NULL;
    tilec_program *p = build_file("examples/matmul.tile", &m);
    int twins = 0;
    for (int v = 0; v < 8 && tilec_program_kernel(p, "matmul", v); v++) {
        if (!tilec_program_has_twin(p, "matmul", v))
            continue;
        twins++;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
            float *a = malloc(na * 4 + 4), *b = malloc(nb * 4 + 4), *got = malloc(nc * 4 + 4);
            uint16_t *ah = rand16(na, 0, a), *bh = rand16(nb, 0, b);
            double *want = gk_ref_matmul(a, b, M, N, K);
            uint64_t ba, bb, bc;
            uint64_t da = upload_at(ah, na * 2, 0, &ba), db = upload_at(bh, nb * 2, 0, &bb);
            CHECK_RT(tilec_rt_malloc(rt, nc * 4 + 4, &bc));
            CHECK_RT(tilec_rt_memset_d32(rt, bc, 0x7fc00000u, nc + 1)); /* f32 NaN */
            tilec_rt_arg args[6] = {{.ptr = da}, {.ptr = db}, {.ptr = bc}, {.i32 = M}, {.i32 = N}, {.i32 = K}};
            CHECK_RT(tilec_program_launch(p, "matmul", v, args, 6, NULL));
            CHECK_RT(tilec_rt_synchronize(rt));
            CHECK_RT(tilec_rt_memcpy_dtoh(rt, got, bc, nc * 4));
            double err = rel_l2(got, want, nc);
            cr_expect(err < 1e-3, "matmul (f32 out) variant %d, M=%d N=%d K=%d: rel. error %g", v, M, N, K, err);
            tilec_rt_free(rt, ba);
            tilec_rt_free(rt, bb);
            tilec_rt_free(rt, bc);
            free(a);
            free(b);
            free(got);
            free(ah);
            free(bh);
            free(want);
        }
    }
    cr_expect_geq(twins, 2, "examples/matmul.tile: %d variants with an sm_90a twin", twins);
    tilec_program_free(p);
    tilec_module_free(m);
}

/* tests/forms/FORM.tile (its path into path) parsed into *m and built
 * for the device; on a 9.0 device its gemm has an sm_90a twin. */
static tilec_program *form_program(const char *form, char *path, size_t size, tilec_module **m)
{
    snprintf(path, size, "tests/forms/%s.tile", form);
    tilec_program *p = build_file(path, m);
    cr_expect(!hopper || tilec_program_has_twin(p, "gemm", 0), "%s: an sm_90a twin", path);
    return p;
}

/* tests/forms whose K tile or warps differ from the reference's
 * (bk16, bk32, bk128, warps4, warps8_bm64, user_mix, tiles_bk32): each has a twin, right
 * on every shape (ragged in M, N and K: the last K tile partly past K; K
 * tiles of 16 and 32 in stages of 64, the last stage's iterations partly
 * or wholly past K). */
static void run_forms_batch(const char *const *forms, size_t n, int batch)
{
    for (size_t f = 0; f < n; f++) {
        char path[128];
        tilec_module *m = NULL;
        tilec_program *p = form_program(forms[f], path, sizeof path, &m);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            mm_case c = {"gemm", 0, 0, shapes[s][0], shapes[s][1], shapes[s][2], 0, batch, p};
            cr_log_info("%s: M=%d N=%d K=%d batch %d", path, c.M, c.N, c.K, batch);
            run_case(&c, 0);
        }
        tilec_program_free(p);
        tilec_module_free(m);
    }
}

static void run_forms(const char *const *forms, size_t n) { run_forms_batch(forms, n, 0); }

Test(wgmma, forms_k_tiles_and_warps, .timeout = 600)
{
    if (!hopper)
        return;
    static const char *const forms[] = {"bk16", "bk32", "bk128", "warps4", "warps8_bm64", "user_mix", "tiles_bk32"};
    run_forms(forms, sizeof forms / sizeof forms[0]);
}

/* tests/forms read by the analysis since session 41: pointer tiles stepped
 * in the loop (lower/ivstep.c: over K offsets and over K tile numbers) and
 * the first row inline (`a + pid(0) * BM * K + ...`); each has a twin, right on
 * every shape (ragged: the steps past K's last tile are masked as the
 * reference's). */
Test(wgmma, forms_steps_and_inline, .timeout = 600)
{
    if (!hopper)
        return;
    static const char *const forms[] = {"ptr_step", "ptr_step_tiles", "base_inline"};
    run_forms(forms, sizeof forms / sizeof forms[0]);
}

/* tests/forms whose batch index is pid(1) (head_pid1, head_lets: a head
 * as attention writes it, N tiles in pid(2)): the 3-D maps' batch extent
 * is the grid's y; two products a call, every shape, with the launch's
 * choice and with the pairs of N tiles along z (lower/wgpair.c: an odd
 * number of N tiles, 264 columns, leaves the last pair's second tile past
 * the grid) and the one-tile twin each forced (TILEC_TMA_PAIR). two_rows:
 * the first row in two scalars on one axis (a group of M tiles and the
 * tile in it), its store by TMA. */
Test(wgmma, forms_heads_and_two_scalars, .timeout = 600)
{
    if (!hopper)
        return;
    static const char *const heads[] = {"head_pid1", "head_lets"}, *const rows[] = {"two_rows"};
    static const char *const modes[] = {NULL, "1", "0"};
    for (size_t i = 0; i < 3; i++) {
        if (modes[i])
            setenv("TILEC_TMA_PAIR", modes[i], 1);
        cr_log_info("heads, TILEC_TMA_PAIR=%s", modes[i] ? modes[i] : "-");
        run_forms_batch(heads, 2, 2);
        unsetenv("TILEC_TMA_PAIR");
    }
    run_forms(rows, 1);
}

/* tests/forms/batch_const.tile: matrix z of A, B and C at z * 4096 * 4096
 * elements (literal sizes, a let of them, a module constant), whatever M,
 * N and K are: each product in its own 32 MiB slot, two a call, checked
 * against the CPU on the shapes up to 1000 (the slots' constant, not M *
 * K, is the stride). */
Test(wgmma, forms_constant_batch_stride, .timeout = 600)
{
    if (!hopper)
        return;
    char path[128];
    tilec_module *m = NULL;
    tilec_program *p = form_program("batch_const", path, sizeof path, &m);
    const size_t slot = (size_t)4096 * 4096, nbat = 2;
    uint64_t da, db, dc;
    CHECK_RT(tilec_rt_malloc(rt, slot * nbat * 2, &da));
    CHECK_RT(tilec_rt_malloc(rt, slot * nbat * 2, &db));
    CHECK_RT(tilec_rt_malloc(rt, slot * nbat * 2, &dc));
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
        if (M > 1000 || N > 1000)
            continue;
        size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
        float *a = malloc(na * nbat * 4), *b = malloc(nb * nbat * 4), *got = malloc(nc * 4);
        uint16_t *ah = rand16(na * nbat, 0, a), *bh = rand16(nb * nbat, 0, b), *got16 = malloc(nc * 2);
        double *want = ref_batched(a, b, (int)nbat, M, N, K);
        CHECK_RT(tilec_rt_memset_d32(rt, dc, 0x7e007e00u, slot * nbat / 2)); /* f16 NaN */
        for (size_t z = 0; z < nbat; z++) {
            CHECK_RT(tilec_rt_memcpy_htod(rt, da + z * slot * 2, ah + z * na, na * 2));
            CHECK_RT(tilec_rt_memcpy_htod(rt, db + z * slot * 2, bh + z * nb, nb * 2));
        }
        tilec_rt_arg args[7] = {{.ptr = da}, {.ptr = db}, {.ptr = dc}, {.i32 = M}, {.i32 = N}, {.i32 = K},
                                {.i32 = (int32_t)nbat}};
        CHECK_RT(tilec_program_launch(p, "gemm", 0, args, 7, NULL));
        CHECK_RT(tilec_rt_synchronize(rt));
        for (size_t z = 0; z < nbat; z++) {
            CHECK_RT(tilec_rt_memcpy_dtoh(rt, got16, dc + z * slot * 2, nc * 2));
            for (size_t i = 0; i < nc; i++)
                got[i] = f16_to_f32(got16[i]);
            double err = rel_l2(got, want + z * nc, nc);
            cr_expect(err < 2e-3, "%s, M=%d N=%d K=%d, matrix %zu: rel. error %g", path, M, N, K, z, err);
        }
        free(a);
        free(b);
        free(got);
        free(ah);
        free(bh);
        free(got16);
        free(want);
    }
    tilec_rt_free(rt, da);
    tilec_rt_free(rt, db);
    tilec_rt_free(rt, dc);
    tilec_program_free(p);
    tilec_module_free(m);
}

/* x @ W.T (tests/gpu/linear_bt.tile, issue 29 item 2): W stored [N, K],
 * the dot's B trans of its tile. Every variant, with a twin (wgmma, B
 * K-major) or not (the cp.async pipeline reading B^T with plain
 * ldmatrix), at the ragged shapes, against the CPU in double; on a 9.0
 * device each twin's variant also through its own kernel (x's base off 16
 * bytes: no tensor map), and at least 5 twins (BN 64, 128, 256; f16, bf16). */
static void run_bt(tilec_program *p, const char *kernel, int v, int bf16, int M, int N, int K, size_t x_off)
{
    size_t na = (size_t)M * K, nb = (size_t)N * K, nc = (size_t)M * N;
    float *a = malloc(na * 4 + 4), *w = malloc(nb * 4 + 4), *wt = malloc(nb * 4 + 4), *got = malloc(nc * 4 + 4);
    uint16_t *ah = rand16(na, bf16, a), *wh = rand16(nb, bf16, w), *got16 = malloc(nc * 2 + 2);
    for (int n = 0; n < N; n++) /* W^T [K, N] for the reference */
        for (int k = 0; k < K; k++)
            wt[(size_t)k * N + n] = w[(size_t)n * K + k];
    double *want = gk_ref_matmul(a, wt, M, N, K);
    uint64_t ba, bw, bc;
    uint64_t da = upload_at(ah, na * 2, x_off, &ba), dw = upload_at(wh, nb * 2, 0, &bw);
    CHECK_RT(tilec_rt_malloc(rt, nc * 2 + 4, &bc));
    CHECK_RT(tilec_rt_memset_d32(rt, bc, 0x7e007e00u, (nc * 2 + 4) / 4)); /* f16 NaN (a bf16 NaN too) */
    tilec_rt_arg args[6] = {{.ptr = da}, {.ptr = dw}, {.ptr = bc}, {.i32 = M}, {.i32 = N}, {.i32 = K}};
    CHECK_RT(tilec_program_launch(p, kernel, v, args, 6, NULL));
    CHECK_RT(tilec_rt_synchronize(rt));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got16, bc, nc * 2));
    for (size_t i = 0; i < nc; i++)
        got[i] = bf16 ? bf16_to_f32(got16[i]) : f16_to_f32(got16[i]);
    double err = rel_l2(got, want, nc);
    cr_expect(err < (bf16 ? 1e-2 : 2e-3), "%s variant %d (twin %d), M=%d N=%d K=%d, x base +%zu bytes: rel. error %g",
              kernel, v, tilec_program_has_twin(p, kernel, v), M, N, K, x_off, err);
    tilec_rt_free(rt, ba);
    tilec_rt_free(rt, bw);
    tilec_rt_free(rt, bc);
    free(a);
    free(w);
    free(wt);
    free(got);
    free(ah);
    free(wh);
    free(got16);
    free(want);
}

Test(wgmma, linear_bt, .timeout = 300)
{
    tilec_module *m = NULL;
    tilec_program *p = build_file("tests/gpu/linear_bt.tile", &m);
    static const struct {
        const char *kernel;
        int bf16;
    } ks[] = {{"linear_f16", 0}, {"linear_bf16", 1}};
    int twins = 0, variants = 0;
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
        for (int v = 0; v < 8 && tilec_program_kernel(p, ks[i].kernel, v); v++) {
            int twin = tilec_program_has_twin(p, ks[i].kernel, v);
            twins += twin;
            variants++;
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                run_bt(p, ks[i].kernel, v, ks[i].bf16, shapes[s][0], shapes[s][1], shapes[s][2], 0);
            if (twin) /* the same variant through its own kernel */
                run_bt(p, ks[i].kernel, v, ks[i].bf16, 300, 264, 200, 2);
        }
    cr_expect_eq(variants, 6, "tests/gpu/linear_bt.tile: %d variants", variants);
    if (hopper)
        cr_expect_geq(twins, 5, "tests/gpu/linear_bt.tile: %d variants with an sm_90a twin", twins);
    tilec_program_free(p);
    tilec_module_free(m);
}

/* tests/gpu/epilogue_readback.tile: c = f16(a @ b + d), d f32, whose
 * epilogue converts 64 KiB through shared memory beside the twin's ring
 * (its stages planned with room for it: lower_wg_fit, lower/target.c);
 * mm_add's persistent twin (A by TMA) on every shape, mm_add_rows's
 * gather twin (one tile a block) where K is a multiple of its BK (A's
 * mask names its rows only); both have a twin on a 9.0 device (none
 * before the plans counted the epilogue), right against the CPU with the
 * output poisoned. */
static void run_readback(tilec_program *p, const char *kernel, int M, int N, int K)
{
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *a = malloc(na * 4 + 4), *b = malloc(nb * 4 + 4), *dv = malloc(nc * 4 + 4), *got = malloc(nc * 4 + 4);
    uint16_t *ah = rand16(na, 0, a), *bh = rand16(nb, 0, b), *got16 = malloc(nc * 2 + 2);
    fill_random(dv, nc, &rng);
    double *want = gk_ref_matmul(a, b, M, N, K);
    for (size_t i = 0; i < nc; i++)
        want[i] += dv[i];
    uint64_t ba, bb, bc, bd;
    uint64_t da = upload_at(ah, na * 2, 0, &ba), db = upload_at(bh, nb * 2, 0, &bb), dd = upload_at(dv, nc * 4, 0, &bd);
    CHECK_RT(tilec_rt_malloc(rt, nc * 2 + 4, &bc));
    CHECK_RT(tilec_rt_memset_d32(rt, bc, 0x7e007e00u, (nc * 2 + 4) / 4)); /* f16 NaN */
    tilec_rt_arg args[7] = {{.ptr = da}, {.ptr = db}, {.ptr = bc}, {.ptr = dd}, {.i32 = M}, {.i32 = N}, {.i32 = K}};
    CHECK_RT(tilec_program_launch(p, kernel, 0, args, 7, NULL));
    CHECK_RT(tilec_rt_synchronize(rt));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got16, bc, nc * 2));
    for (size_t i = 0; i < nc; i++)
        got[i] = f16_to_f32(got16[i]);
    double err = rel_l2(got, want, nc);
    cr_expect(err < 2e-3, "%s, M=%d N=%d K=%d: rel. error %g", kernel, M, N, K, err);
    tilec_rt_free(rt, ba);
    tilec_rt_free(rt, bb);
    tilec_rt_free(rt, bc);
    tilec_rt_free(rt, bd);
    free(a);
    free(b);
    free(dv);
    free(got);
    free(ah);
    free(bh);
    free(got16);
    free(want);
}

Test(wgmma, epilogue_reads_back, .timeout = 300)
{
    tilec_module *m = NULL;
    tilec_program *p = build_file("tests/gpu/epilogue_readback.tile", &m);
    for (int k = 0; k < 2; k++) {
        const char *kernel = k ? "mm_add_rows" : "mm_add";
        cr_expect(!hopper || tilec_program_has_twin(p, kernel, 0), "%s: an sm_90a twin", kernel);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            if (!k || shapes[s][2] % 64 == 0)
                run_readback(p, kernel, shapes[s][0], shapes[s][1], shapes[s][2]);
    }
    tilec_program_free(p);
    tilec_module_free(m);
}

/* c += a @ b through tests/gpu/epilogue_readback.tile's mm_acc (its
 * epilogue reads back the f16 tile it stores, as gemm_dw adds to dW), or
 * with nbat > 0 its head form mm_acc_head (nbat products, the head in
 * pid(1), the N tiles in pid(2)): c starts as random f16 values, against
 * the CPU in double. */
static void run_acc_as(tilec_program *p, const char *name, int nbat, int add, int M, int N, int K);

static void run_acc(tilec_program *p, int nbat, int M, int N, int K) { run_acc_as(p, NULL, nbat, -1, M, N, K); }

/* run_acc's product; add 0 or 1: mm_acc_if with that flag (c = a @ b +
 * (add ? c : 0)), -1: mm_acc or mm_acc_head; name (not NULL): a kernel of
 * the same parameters by another name (mm_acc_spelt as mm_acc_if,
 * mm_acc_twice as mm_acc). */
static void run_acc_as(tilec_program *p, const char *name, int nbat, int add, int M, int N, int K)
{
    int nz = nbat ? nbat : 1;
    size_t na = (size_t)M * K * nz, nb = (size_t)K * N * nz, nc = (size_t)M * N * nz;
    float *a = malloc(na * 4 + 4), *b = malloc(nb * 4 + 4), *c0 = malloc(nc * 4 + 4), *got = malloc(nc * 4 + 4);
    uint16_t *ah = rand16(na, 0, a), *bh = rand16(nb, 0, b), *ch = rand16(nc, 0, c0), *got16 = malloc(nc * 2 + 2);
    double *want = ref_batched(a, b, nz, M, N, K);
    for (size_t i = 0; i < nc && add != 0; i++)
        want[i] += c0[i];
    uint64_t ba, bb, bc;
    uint64_t da = upload_at(ah, na * 2, 0, &ba), db = upload_at(bh, nb * 2, 0, &bb), dc = upload_at(ch, nc * 2, 0, &bc);
    tilec_rt_arg args[7] = {{.ptr = da}, {.ptr = db}, {.ptr = dc}, {.i32 = M}, {.i32 = N}, {.i32 = K}, {.i32 = add >= 0 ? add : nbat}};
    const char *kernel = name ? name : add >= 0 ? "mm_acc_if" : nbat ? "mm_acc_head" : "mm_acc";
    CHECK_RT(tilec_program_launch(p, kernel, 0, args, nbat || add >= 0 ? 7 : 6, NULL));
    CHECK_RT(tilec_rt_synchronize(rt));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got16, dc, nc * 2));
    int nan = 0;
    for (size_t i = 0; i < nc; i++) {
        got[i] = f16_to_f32(got16[i]);
        nan += isnan(got[i]) != 0;
    }
    double err = rel_l2(got, want, nc);
    cr_expect(!nan && err < 2e-3, "%s, TILEC_TMA_PAIR=%s, %d heads, add %d, M=%d N=%d K=%d: %d NaN, rel. error %g",
              kernel, getenv("TILEC_TMA_PAIR"), nbat, add, M, N, K, nan, err);
    tilec_rt_free(rt, ba);
    tilec_rt_free(rt, bb);
    tilec_rt_free(rt, bc);
    free(a);
    free(b);
    free(c0);
    free(got);
    free(ah);
    free(bh);
    free(ch);
    free(got16);
    free(want);
}

/* A paired persistent twin whose consumers load both N tiles' epilogue
 * tiles before the loop (lower/wgmma.c, early_pair), along pid(1) (mm_acc)
 * and along pid(2) (mm_acc_head, a head's product), and its one-tile
 * twin beside it, each forced (TILEC_TMA_PAIR, read when the kernel is
 * resolved: a program each): right on every shape, the ragged ones and
 * odd numbers of N tiles (a pair's second tile past the grid) among them. */
Test(wgmma, epilogue_reads_its_output_paired, .timeout = 300)
{
    if (!hopper)
        return;
    static const char *const modes[] = {"1", "0"};
    for (size_t i = 0; i < 2; i++) {
        setenv("TILEC_TMA_PAIR", modes[i], 1);
        tilec_module *m = NULL;
        tilec_program *p = build_file("tests/gpu/epilogue_readback.tile", &m);
        cr_expect(tilec_program_has_twin(p, "mm_acc", 0), "mm_acc: an sm_90a twin");
        cr_expect(tilec_program_has_twin(p, "mm_acc_head", 0), "mm_acc_head: an sm_90a twin");
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            run_acc(p, 0, shapes[s][0], shapes[s][1], shapes[s][2]);
            run_acc(p, 3, shapes[s][0], shapes[s][1], shapes[s][2]); /* the pairs along pid(2) */
            /* gemm_dw's flag: the one-tile twin's TMA read of c skipped (0: a plain arrival completes
             * each tile's phase, c not added) and made (1) */
            run_acc_as(p, NULL, 0, 0, shapes[s][0], shapes[s][1], shapes[s][2]);
            run_acc_as(p, NULL, 0, 1, shapes[s][0], shapes[s][1], shapes[s][2]);
            /* the same read spelt otherwise (lower/wgmma.c, staged_load decides by meaning) */
            run_acc_as(p, "mm_acc_spelt", 0, 0, shapes[s][0], shapes[s][1], shapes[s][2]);
            run_acc_as(p, "mm_acc_spelt", 0, 1, shapes[s][0], shapes[s][1], shapes[s][2]);
            run_acc_as(p, "mm_acc_twice", 0, -1, shapes[s][0], shapes[s][1], shapes[s][2]);
        }
        tilec_program_free(p);
        tilec_module_free(m);
    }
    unsetenv("TILEC_TMA_PAIR");
}

/* A given MN-major (issue 29 item 2, the A side: dW = G^T @ X): C = A @ B
 * with A stored [K, M] (a_kxm; tests/forms/at*.tile, `/// args: at`) or
 * [M, K] (at_kmajor.tile, its tile loaded [BK, BM] and transposed), B [K,
 * N], through program p's gemm; against the CPU in double at every element,
 * or, past 2^31 multiply-adds (4096^3), at 8192 sampled elements and the
 * corners, every element checked for NaN (the output is poisoned). */
static void run_at(tilec_program *p, int bf16, int a_kxm, int M, int N, int K, size_t a_off)
{
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *a = malloc(na * 4 + 4), *b = malloc(nb * 4 + 4), *got = malloc(nc * 4 + 4);
    uint16_t *ah = rand16(na, bf16, a), *bh = rand16(nb, bf16, b), *got16 = malloc(nc * 2 + 2);
    uint64_t ba, bb, bc;
    uint64_t da = upload_at(ah, na * 2, a_off, &ba), db = upload_at(bh, nb * 2, 0, &bb);
    CHECK_RT(tilec_rt_malloc(rt, nc * 2 + 4, &bc));
    CHECK_RT(tilec_rt_memset_d32(rt, bc, 0x7e007e00u, (nc * 2 + 4) / 4)); /* f16 NaN (a bf16 NaN too) */
    tilec_rt_arg args[6] = {{.ptr = da}, {.ptr = db}, {.ptr = bc}, {.i32 = M}, {.i32 = N}, {.i32 = K}};
    CHECK_RT(tilec_program_launch(p, "gemm", 0, args, 6, NULL));
    CHECK_RT(tilec_rt_synchronize(rt));
    CHECK_RT(tilec_rt_memcpy_dtoh(rt, got16, bc, nc * 2));
    int nan = 0;
    for (size_t i = 0; i < nc; i++) {
        got[i] = bf16 ? bf16_to_f32(got16[i]) : f16_to_f32(got16[i]);
        nan += isnan(got[i]) != 0;
    }
    int full = (double)M * N * K <= 2147483648.0;
    size_t ns = full ? nc : 8196;
    double *want = NULL;
    float *g = got;
    if (full) { /* A as [M, K] for the reference */
        float *am = a;
        if (a_kxm) {
            am = malloc(na * 4 + 4);
            for (int k = 0; k < K; k++)
                for (int m = 0; m < M; m++)
                    am[(size_t)m * K + k] = a[(size_t)k * M + m];
        }
        want = gk_ref_matmul(am, b, M, N, K);
        if (am != a)
            free(am);
    } else {
        want = malloc(ns * sizeof *want);
        g = malloc(ns * sizeof *g);
        unsigned long long st = rng;
        for (size_t s = 0; s < ns; s++) {
            st ^= st << 13, st ^= st >> 7, st ^= st << 17;
            size_t idx = s == 0 ? 0 : s == 1 ? (size_t)N - 1 : s == 2 ? nc - (size_t)N : s == 3 ? nc - 1 : st % nc;
            size_t m = idx / (size_t)N, n = idx % (size_t)N;
            double acc = 0;
            for (size_t k = 0; k < (size_t)K; k++)
                acc += (double)(a_kxm ? a[k * M + m] : a[m * K + k]) * b[k * N + n];
            want[s] = acc;
            g[s] = got[idx];
        }
    }
    double err = rel_l2(g, want, ns);
    cr_expect(!nan && err < (bf16 ? 1e-2 : 2e-3), "gemm (twin %d), M=%d N=%d K=%d, A base +%zu bytes: %d NaN, rel. error %g",
              tilec_program_has_twin(p, "gemm", 0), M, N, K, a_off, nan, err);
    tilec_rt_free(rt, ba);
    tilec_rt_free(rt, bb);
    tilec_rt_free(rt, bc);
    if (g != got)
        free(g);
    free(a);
    free(b);
    free(got);
    free(ah);
    free(bh);
    free(got16);
    free(want);
}

/* tests/forms's A^T forms (at: dot(trans(a), b) of a [BK, BM] load; at_ptr:
 * a [BM, BK] pointer tile with the unit stride along M; at_bf16; at_kmajor:
 * A stored [M, K] loaded [BK, BM] and transposed): each has a twin (A
 * MN-major: wgmma's transpose bit), right on every ragged shape (M = 129,
 * 1000 ...: A's row stride not a multiple of 16 bytes, the variant's own
 * kernel) and at 4096^3; a misaligned A through the variant's own kernel
 * (B on its cp.async ring); at.tile with the paired and the one-tile twin
 * each forced (TILEC_TMA_PAIR). */
Test(wgmma, forms_at, .timeout = 600)
{
    if (!hopper)
        return;
    static const struct {
        const char *form;
        int bf16, a_kxm;
    } fs[] = {{"at", 0, 1}, {"at_ptr", 0, 1}, {"at_bf16", 1, 1}, {"at_kmajor", 0, 0}};
    for (size_t f = 0; f < sizeof fs / sizeof fs[0]; f++) {
        char path[128];
        tilec_module *m = NULL;
        tilec_program *p = form_program(fs[f].form, path, sizeof path, &m);
        static const char *const modes[] = {NULL, "1", "0"};
        for (size_t i = 0; i < (f ? 1 : 3); i++) {
            if (modes[i])
                setenv("TILEC_TMA_PAIR", modes[i], 1);
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                cr_log_info("%s, TILEC_TMA_PAIR=%s: M=%d N=%d K=%d", path, modes[i] ? modes[i] : "-", shapes[s][0],
                            shapes[s][1], shapes[s][2]);
                run_at(p, fs[f].bf16, fs[f].a_kxm, shapes[s][0], shapes[s][1], shapes[s][2], 0);
            }
            unsetenv("TILEC_TMA_PAIR");
        }
        run_at(p, fs[f].bf16, fs[f].a_kxm, 4096, 4096, 4096, 0);
        run_at(p, fs[f].bf16, fs[f].a_kxm, 304, 264, 200, 2); /* A's base off 16 bytes: no tensor map */
        tilec_program_free(p);
        tilec_module_free(m);
    }
}

int main(int argc, char *argv[]) { return gpu_suite_main(argc, argv, "wgmma twins"); }

/* tests/forms's spellings of x @ W.T (bt*.tile: lets, pointer lets, the
 * transpose inline, BN 256, K tiles of 32 and 128): each has a twin with a
 * K-major B, right on every ragged shape against the CPU. */
Test(wgmma, forms_bt, .timeout = 600)
{
    if (!hopper)
        return;
    static const char *const forms[] = {"bt", "bt_let_trans", "bt_ptr_lets", "bt_inline", "bt_linear", "bt_bk32", "bt_bk128"};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        char path[128];
        tilec_module *m = NULL;
        tilec_program *p = form_program(forms[f], path, sizeof path, &m);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            run_bt(p, "gemm", 0, 0, shapes[s][0], shapes[s][1], shapes[s][2], 0);
        tilec_program_free(p);
        tilec_module_free(m);
    }
}

/* issue 31: every candidate the tuning pass keeps for a dot kernel written
 * with no tile hints (tests/forms/tuned.tile, docs/tuning.md), each right
 * on every ragged shape against the CPU (f16 in, f16 out). */
Test(wgmma, tuned_candidates, .timeout = 600)
{
    tilec_module *m = NULL;
    tilec_program *p = build_file("tests/forms/tuned.tile", &m);
    int nv = 0;
    for (int v = 0; v < 16 && tilec_program_kernel(p, "gemm", v); v++, nv++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            mm_case c = {"gemm", 0, 0, shapes[s][0], shapes[s][1], shapes[s][2], 0, 0, p};
            run_case(&c, v);
        }
    cr_expect_geq(nv, 2, "tests/forms/tuned.tile: %d kept candidates", nv);
    tilec_program_free(p);
    tilec_module_free(m);
}

/* A paired twin (two N tiles a block, lower/wgpair.c) and its one-tile
 * twin, each forced by TILEC_TMA_PAIR (1, 0) for every launch, right on
 * every ragged shape for x @ W and x @ W.T: odd numbers of N tiles (264 and
 * 2080 columns are 3 and 17 tiles of 128), so the last pair's second tile
 * lies past the program's grid and is not stored, and pairs and single
 * tiles past the multiprocessors, each block walking several; and both
 * with a K tile of 128 (bk128, bt_bk128: each iteration two stages of 64,
 * the last K tile partly or wholly past K). */
Test(wgmma, pairs_and_one_tile_forced, .timeout = 600)
{
    if (!hopper)
        return;
    static const char *const modes[] = {"1", "0"}, *const forms[] = {"ref", "bt", "bk128", "bt_bk128"};
    for (size_t i = 0; i < 2; i++) {
        setenv("TILEC_TMA_PAIR", modes[i], 1);
        for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
            char path[128];
            tilec_module *m = NULL;
            tilec_program *p = form_program(forms[f], path, sizeof path, &m);
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                cr_log_info("%s, TILEC_TMA_PAIR=%s: M=%d N=%d K=%d", path, modes[i], shapes[s][0], shapes[s][1],
                            shapes[s][2]);
                if (!strncmp(forms[f], "bt", 2)) {
                    run_bt(p, "gemm", 0, 0, shapes[s][0], shapes[s][1], shapes[s][2], 0);
                } else {
                    mm_case c = {"gemm", 0, 0, shapes[s][0], shapes[s][1], shapes[s][2], 0, 0, p};
                    run_case(&c, 0);
                }
            }
            tilec_program_free(p);
            tilec_module_free(m);
        }
    }
    unsetenv("TILEC_TMA_PAIR");
}
