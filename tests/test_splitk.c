/* test_splitk.c: split-K (the `split_k` hint, lower/splitk.c) on the CPU:
 * the launch metadata (slices, partial bytes, no sm_90a twin, the kernel's
 * own parameters unchanged, the two hidden ones in its signature), the
 * grid (axis 2 times split_k, in the library and in an --aot table), the
 * kernels it refuses and why, tests/gemm_variants.tile's split variants, the source
 * record's round trip, and an sm_90a compile of a split variant (NVRTC
 * needs no GPU). The lowering's text is pinned by
 * the .split files of tests/golden/split (test_golden.c). */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <stdlib.h>

#include "api/record.h"
#include "fs_helpers.h"
#include "helpers.h"
#include "tilec/lower.h"
#include "tilec/program.h"

/* A skinny product: HINTS replace the hints, PRE goes before the loop,
 * BODY at the top of its body, POST after it, STEP is its step. */
#define SK(HINTS, PRE, STEP, BODY, POST)                                                                   \
    "kernel s(a: *f16, b: *f16, c: *f16, M: i32, N: i32, K: i32)\n"                                        \
    "    grid (cdiv(M, BM), cdiv(N, BN))\n"                                                                \
    "    hints { BM = 16, BN = 64, BK = 64, warps = 4" HINTS " }\n"                                        \
    "{\n"                                                                                                  \
    "    let rm = pid(0) * BM + range(BM);\n"                                                              \
    "    let rn = pid(1) * BN + range(BN);\n"                                                              \
    "    let acc = zeros(f32, BM, BN);\n" PRE "    for k in 0 .. K step " STEP " {\n" BODY                 \
    "        let rk = k + range(BK);\n"                                                                    \
    "        let ta = load(a + rm[:, None] * K + rk[None, :], rm[:, None] < M && rk[None, :] < K, 0.0);\n" \
    "        let tb = load(b + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0);\n" \
    "        acc = acc + dot(ta, tb);\n"                                                                   \
    "    }\n" POST                                                                                         \
    "    store(c + rm[:, None] * N + rn[None, :], cast(acc, f16), rm[:, None] < M && rn[None, :] < N);\n"  \
    "}\n"

static tilec_module *parse_src(tilec_ctx *ctx, const char *src)
{
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_string(ctx, "s.tile", src, strlen(src), &m);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s\n%s", d ? d->message : "", src);
    return m;
}

Test(splitk, metadata_and_grid)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse_src(ctx, SK(", stages = 3, split_k = 4", "", "BK", "", ""));
    const tilec_kernel *k = tilec_module_find_kernel(m, "s");
    tilec_kernel_code code;
    cr_assert_eq(tilec_lower_kernel(ctx, m, k, 0, &code), TILEC_OK);
    cr_expect_eq(code.split_k, 4);
    cr_expect_eq(code.split_bytes, 16 * 64 * 4, "a block's f32 accumulators: BM x BN floats");
    cr_expect_eq(code.nparams, 6, "the kernel's own parameters; the runtime adds the hidden two");
    cr_expect_null(code.tma.name, "no sm_90a twin for a split-K variant");
    cr_expect(strstr(code.source, "float *__restrict__ tl_split_part, unsigned int *__restrict__ tl_split_cnt)"));
    cr_expect(strstr(code.source, "const int tl_slice = (int)blockIdx.z % 4;"));
    cr_expect(strstr(code.source, "atomicAdd(tl_split_cnt + tl_tile, 1u)"));
    cr_expect(strstr(code.source, "tl_split_cnt[tl_tile] = 0u;"), "the last block resets the counter");
    cr_expect(strstr(code.layouts, "split_k = 4: the loop's steps in 4 slices"), "%s", code.layouts);
    tilec_kernel_code_free(&code);
    int64_t args[6] = {0, 0, 0, 16, 8192, 8192};
    uint32_t g[3];
    cr_assert_eq(tilec_kernel_grid(k, 0, args, g), TILEC_OK);
    cr_expect(g[0] == 1 && g[1] == 128 && g[2] == 4, "grid %u %u %u", g[0], g[1], g[2]);
    args[4] = 0; /* no tiles: nothing launched, whatever the slices */
    cr_assert_eq(tilec_kernel_grid(k, 0, args, g), TILEC_OK);
    cr_expect_eq(g[1], 0);
    tilec_module_free(m);
    /* split_k = 1 is no split: the kernel as before */
    m = parse_src(ctx, SK(", stages = 3, split_k = 1", "", "BK", "", ""));
    cr_assert_eq(tilec_lower_kernel(ctx, m, tilec_module_find_kernel(m, "s"), 0, &code), TILEC_OK);
    cr_expect_eq(code.split_k, 0);
    cr_expect_eq(code.split_bytes, 0);
    cr_expect(!strstr(code.source, "tl_split"));
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* A grid with three axes: pid(2) and num_programs(2) keep their meaning,
 * the launch's axis 2 is batch x split_k (at most 65535). */
Test(splitk, third_axis)
{
    static const char src[] =
        "kernel z(a: *f16, b: *f16, c: *f16, M: i32, N: i32, K: i32, batch: i32)\n"
        "    grid (cdiv(M, BM), cdiv(N, BN), batch)\n"
        "    hints { BM = 16, BN = 64, BK = 64, warps = 4, stages = 2, split_k = 3 }\n"
        "{\n"
        "    let za = cast(pid(2), i64) * M * K;\n"
        "    let zc = cast(pid(2), i64) * M * N + cast(num_programs(2), i64) * 0;\n"
        "    let rm = pid(0) * BM + range(BM);\n"
        "    let rn = pid(1) * BN + range(BN);\n"
        "    let acc = zeros(f32, BM, BN);\n"
        "    for k in 0 .. K step BK {\n"
        "        let rk = k + range(BK);\n"
        "        let ta = load(a + za + rm[:, None] * K + rk[None, :], rm[:, None] < M && rk[None, :] < K, 0.0);\n"
        "        let tb = load(b + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0);\n"
        "        acc = acc + dot(ta, tb);\n"
        "    }\n"
        "    store(c + zc + rm[:, None] * N + rn[None, :], cast(acc, f16), rm[:, None] < M && rn[None, :] < N);\n"
        "}\n";
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse_src(ctx, src);
    const tilec_kernel *k = tilec_module_find_kernel(m, "z");
    tilec_kernel_code code;
    cr_assert_eq(tilec_lower_kernel(ctx, m, k, 0, &code), TILEC_OK);
    cr_expect(strstr(code.source, "((int)blockIdx.z / 3)"), "pid(2) is the batch");
    cr_expect(strstr(code.source, "((int)gridDim.z / 3)"), "num_programs(2) is the batch count");
    cr_expect(!strstr(code.source, "((int)blockIdx.z)"));
    tilec_kernel_code_free(&code);
    int64_t args[7] = {0, 0, 0, 100, 64, 640, 7};
    uint32_t g[3];
    cr_assert_eq(tilec_kernel_grid(k, 0, args, g), TILEC_OK);
    cr_expect(g[0] == 7 && g[1] == 1 && g[2] == 21, "grid %u %u %u", g[0], g[1], g[2]);
    args[6] = 21845; /* 65535 / 3 */
    cr_expect_eq(tilec_kernel_grid(k, 0, args, g), TILEC_OK);
    args[6] = 21846; /* times 3 is past the axis's 65535 */
    cr_expect_eq(tilec_kernel_grid(k, 0, args, g), TILEC_ERR_ARG);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* src must lower with an error whose message holds `want`. */
static void refuse(const char *src, const char *want)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse_src(ctx, src);
    tilec_kernel_code code;
    cr_expect_eq(tilec_lower_kernel(ctx, m, tilec_module_kernel(m, 0), 0, &code), TILEC_ERR_INPUT, "%s", src);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert_not_null(d, "no diagnostic for\n%s", src);
    cr_expect(strstr(d->message, want), "'%s' does not say '%s'", d->message, want);
    cr_expect(strstr(d->message, "kernel '"), "'%s' names the kernel", d->message);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

Test(splitk, refusals)
{
    refuse(SK(", stages = 3, split_k = 0", "", "BK", "", ""), "must be 1 (no split) to 64");
    refuse(SK(", stages = 3, split_k = 65", "", "BK", "", ""), "must be 1 (no split) to 64");
    /* not the pipelined dot loop: stages = 1; the accumulator read inside
     * the loop by something other than the dot; each says why */
    refuse(SK(", stages = 1, split_k = 2", "", "BK", "", ""), "is not a pipelined dot loop");
    refuse(SK(", stages = 1, split_k = 2", "", "BK", "", ""), "the `stages` hint is 1");
    refuse(SK(", stages = 3, split_k = 2", "", "BK", "        let t = acc * 2.0;\n", ""),
           "let t needs loaded data or a reduction");
    /* every slice would run what comes before the loop */
    refuse(SK(", stages = 3, split_k = 2", "    store(c + rn, cast(zeros(f32, BN), f16), rn < N);\n", "BK", "", ""),
           "writes memory before the dot loop");
    /* each slice must start from zero */
    refuse(SK(", stages = 3, split_k = 2", "    acc = acc + 1.0;\n", "BK", "", ""), "must be `let acc = zeros(...)`");
    /* one loop, at the top of the body */
    refuse(SK(", stages = 3, split_k = 2", "", "BK", "", "    for j in 0 .. 4 { acc = acc * 0.5; }\n"),
           "needs exactly one loop");
    refuse(SK(", stages = 3, split_k = 2", "    if M > 0 { for j in 0 .. 4 { acc = acc * 0.5; } }\n", "BK", "", ""),
           "as a statement of the kernel's body");
    refuse(SK(", stages = 3, split_k = 2", "", "N", "", ""), "step must be a positive constant");
    refuse("kernel n(c: *f32, N: i32) grid (cdiv(N, 64)) hints { split_k = 2 }\n"
           "{ let r = pid(0) * 64 + range(64); store(c + r, cast(r, f32), r < N); }\n",
           "the kernel has no loop");
    refuse("kernel n(c: *f32, N: i32) grid (cdiv(N, 64)) hints { split_k = 2 }\n"
           "{ let r = pid(0) * 64 + range(64); let x = zeros(f32, 64);\n"
           "  for k in 0 .. N step 64 { x = x + 1.0; } store(c + r, x, r < N); }\n",
           "has no `acc = acc + dot(a, b)`");
}

/* tests/gemm_variants.tile: the skinny variants split K, the large ones do not (and
 * keep their twins); the bundle entry keeps the split (warm starts take
 * it from there). */
Test(splitk, gemm_variants_and_bundle_entry)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/gemm_variants.tile");
    const tilec_kernel *k = tilec_module_find_kernel(m, "matmul_f16");
    uint32_t n = tilec_kernel_variant_count(k);
    cr_assert_leq(n, 16);
    tilec_kernel_code codes[16], back;
    tilec_rt_param_kind kinds[TILEC_RT_MAX_PARAMS] = {0};
    int split = 0;
    for (uint32_t v = 0; v < n; v++) {
        cr_assert_eq(tilec_lower_kernel(ctx, m, k, (int)v, &codes[v]), TILEC_OK);
        int64_t bm = tilec_kernel_hint(k, (int)v, "BM", 0);
        if (codes[v].split_k) {
            split++;
            cr_expect_leq(bm, 64, "variant %u: split-K is for skinny tiles", v);
            cr_expect_null(codes[v].tma.name);
            cr_expect_eq(codes[v].split_bytes, (uint32_t)(bm * tilec_kernel_hint(k, (int)v, "BN", 0) * 4));
        }
        if (bm == 128)
            cr_expect_eq(codes[v].split_k, 0, "variant %u: no split for large tiles", v);
        tilec_bundle_kernel e;
        static unsigned char image[] = {7};
        rec_to_bundle(&e, &codes[v], image, sizeof image, kinds);
        cr_assert_eq(rec_from_bundle(&e, &back, k->nparams, kinds), 0);
        cr_expect_eq(back.split_k, codes[v].split_k, "variant %u", v);
        cr_expect_eq(back.split_bytes, codes[v].split_bytes, "variant %u", v);
        tilec_kernel_code_free(&back);
    }
    cr_expect_geq(split, 2, "gemm_variants.tile's skinny variants split K");
    for (uint32_t v = 0; v < n; v++)
        tilec_kernel_code_free(&codes[v]);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* NVRTC compiles a split variant for sm_90a (no twin in it). */
Test(splitk, compiles_for_sm_90a, .timeout = 120)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse_src(ctx, SK(", stages = 3, split_k = 8", "", "BK", "", ""));
    tilec_kernel_code code;
    void *cubin = NULL;
    size_t size = 0;
    tilec_status st = tilec_compile_kernel(ctx, m, tilec_module_find_kernel(m, "s"), 0, "sm_90a", &code, &cubin, &size);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s", d ? d->message : "");
    cr_expect_gt(size, 0);
    cr_expect_eq(code.split_k, 8);
    free(cubin);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}
