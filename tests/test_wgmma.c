/* test_wgmma.c: the sm_90a twins of dot loops (lower/wgmma.c) on the CPU:
 * which variants of tests/gemm_variants.tile (the benchmark GEMM as it was
 * hand-tuned) get one and the tensor-map
 * metadata the runtime builds its maps from; that an sm_90 compile of the
 * same source has no twin; and, when cuobjdump is at hand, that the sm_90a
 * twin's SASS holds the Hopper instructions (HGMMA, UTMALDG) with no local
 * memory, and that the f32 matmul (no twin) runs a cp.async ring into FFMA
 * register blocks. NVRTC needs no GPU. */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <ctype.h>
#include <glob.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs_helpers.h"
#include "helpers.h"
#include "mm_tile.h"
#include "sass_helpers.h"
#include "tilec/lower.h"

#define GEMM "tests/gemm_variants.tile"

static void expect_map(const tilec_tma_map *t, uint32_t ptr, uint32_t rows, uint32_t cols, uint32_t stride,
                       uint32_t box_rows, uint32_t bf16)
{
    cr_expect_eq(t->ptr, ptr);
    cr_expect_eq(t->rows, rows);
    cr_expect_eq(t->cols, cols);
    cr_expect_eq(t->stride, stride);
    cr_expect_eq(t->box_rows, box_rows);
    cr_expect_eq(t->box_cols, 64);
    cr_expect_eq(t->elem_bytes, 2);
    cr_expect_eq(t->bf16, bf16);
}

/* matmul_f16(a, b, c, M, N, K): A is [M, K] with row stride K, B [K, N]
 * with row stride N; the BM = 16 variant has no twin (not 64 rows per
 * warp group), the batched product none (its pointers carry an offset). */
Test(wgmma, twin_metadata)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, GEMM);
    tilec_kernel_code code;
    lower_variant(ctx, m, "matmul_f16", 0, &code);
    cr_expect_null(code.tma.name, "BM = 16 has no twin");
    tilec_kernel_code_free(&code);
    static const uint32_t bm[] = {0, 64, 128, 128, 128}, warps[] = {0, 4, 8, 8, 8};
    for (int v = 1; v < 5; v++) { /* v4: 128 x 256 */
        lower_variant(ctx, m, "matmul_f16", v, &code);
        cr_assert_not_null(code.tma.name, "variant %d has a twin", v);
        char want[64];
        snprintf(want, sizeof want, "matmul_f16_v%d_tma", v);
        cr_expect_str_eq(code.tma.name, want);
        cr_expect_eq(code.tma.threads, 32 * warps[v] + 128, "its warps and one producer warp group");
        cr_expect_gt(code.tma.smem_bytes, code.smem_bytes);
        cr_expect_leq(code.tma.smem_bytes, 227 * 1024);
        cr_expect_eq(code.tma.nmaps, 3, "A, B and the stored C");
        expect_map(&code.tma.maps[0], 0, 3, 5, 5, bm[v], 0);
        expect_map(&code.tma.maps[1], 1, 5, 4, 4, 64, 0);
        expect_map(&code.tma.maps[2], 2, 3, 4, 4, bm[v], 0); /* C: [M, N], row stride N, boxes of BM x 64 */
        cr_expect(strstr(code.source, "tl_tma_store_2d(&tl_tm2"), "the epilogue stores by TMA");
        /* 2: two N tiles a block (wgpair.c), but for v4's 128 x 256, the widest wgmma already */
        cr_expect_eq(code.tma.persistent, v == 4 ? 1 : 2, "variant %d: a persistent grid", v);
        cr_expect(strstr(code.source, "int tl_grid0, int tl_grid1, int tl_grid2)"), "the program's grid as parameters");
        cr_expect(strstr(code.source, "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)"), "the twin is for sm_90a only");
        tilec_kernel_code_free(&code);
    }
    lower_variant(ctx, m, "matmul_bf16", 3, &code);
    expect_map(&code.tma.maps[0], 0, 3, 5, 5, 128, 1);
    tilec_kernel_code_free(&code);
    /* matmul_bias_gelu(a, b, bias, c, M, N, K) */
    lower_variant(ctx, m, "matmul_bias_gelu", 1, &code);
    expect_map(&code.tma.maps[0], 0, 4, 6, 6, 128, 0);
    expect_map(&code.tma.maps[1], 1, 6, 5, 5, 64, 0);
    expect_map(&code.tma.maps[2], 3, 4, 5, 5, 128, 0); /* gelu(acc + bias) is what the TMA stores */
    tilec_kernel_code_free(&code);
    /* bmm_f16(a, b, c, M, N, K, batch): P + pid(2) * X * Y + ...: 3-D maps,
     * matrix z at z * M * K (A), z * K * N (B), z * M * N (C) */
    lower_variant(ctx, m, "bmm_f16", 1, &code);
    cr_assert_not_null(code.tma.name, "the batched product has a twin");
    cr_expect_eq(code.tma.nmaps, 3);
    static const uint32_t bs[3][2] = {{3, 5}, {5, 4}, {3, 4}};
    for (int i = 0; i < 3; i++) {
        const tilec_tma_map *t = &code.tma.maps[i];
        int same = (t->bs[0] == bs[i][0] && t->bs[1] == bs[i][1]) || (t->bs[0] == bs[i][1] && t->bs[1] == bs[i][0]);
        cr_expect(t->batched == 1 && same, "map %d: batch stride %u * %u", i, t->bs[0], t->bs[1]);
    }
    expect_map(&code.tma.maps[0], 0, 3, 5, 5, 128, 0);
    cr_expect(strstr(code.source, "tl_tma_3d(") && strstr(code.source, "tl_tma_store_3d(&tl_tm2"), "3-D copies");
    tilec_kernel_code_free(&code);
    lower_variant(ctx, m, "matmul_f16", 3, &code);
    cr_expect(!code.tma.maps[0].batched && code.tma.maps[0].bs[0] == TILEC_TMA_NONE, "a plain matmul's maps are 2-D");
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Count of `needle` in hay. */
static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + strlen(needle), needle))
        n++;
    return n;
}

/* The source of the (paired) twin: src up to its one-tile twin NAME_tma_1, when there is one (lower/wgpair.c). */
static char *first_twin(const char *src)
{
    const char *one = strstr(src, "_tma_1(");
    return strndup(src, one ? (size_t)(one - src) : strlen(src));
}

/* The K tile and the warps shape the twin, not whether there is one
 * (docs/lowering.md, "wgmma and TMA"). A stage is 64 halves deep in K
 * whatever the K tile under that: a K tile of 16 or 32 takes 4 or 2 loop
 * iterations a stage (the loop steps that many K tiles a stage), A in
 * boxes of 64 columns in the 128-byte swizzle (descriptor layout type 1,
 * stride byte offset 1024), B in boxes of 64 K rows (its leading byte
 * offset one box, 64 x 128 bytes), 4 k16 steps and (BM + BN) * 64 * 2
 * bytes a stage, as the reference's; a K tile of 128 or 256, each
 * iteration two or four such stages in turn (the loop over its parts,
 * tl_j, the K coordinate tl_j * 64 on), the stage the reference's again
 * (before, one stage of 128 with two boxes of A and 8 k16 steps left
 * 2 stages paired, so the twin ran one N tile a block at 0.85x of cuBLAS);
 * and BM / 16 consumer warps whatever the `warps` hint says. */
Test(wgmma, k_tile_and_warps_shape_the_twin)
{
    static const struct {
        const char *hints;
        uint32_t threads, a_cols, a_boxes, b_rows;
        const char *a_desc, *b_desc, *steps, *expect, *step;
    } cases[] = {
/* A's and B's descriptors and the k16 steps of a stage 64 halves deep */
#define STAGE64 \
    "tl_wg_desc(tl_a + tl_q * 32, 16, 1024, 1)", "tl_wg_desc(tl_b + tl_q * 2048, 8192, 1024, 1)", "tl_q < 4;"
        /* two N tiles a block (wgpair.c): A 128 x 64 and B 64 x 256 a stage */
        {"BM = 128, BN = 128, BK = 16, warps = 8", 384, 64, 1, 64, STAGE64,
         "tl_mbar_expect(tl_full + tl_s * 8, 49152);", "tl_st = (v_BK) * 4;"},
        {"BM = 128, BN = 128, BK = 32, warps = 8", 384, 64, 1, 64, STAGE64,
         "tl_mbar_expect(tl_full + tl_s * 8, 49152);", "tl_st = (v_BK) * 2;"},
        {"BM = 128, BN = 128, BK = 128, warps = 8", 384, 64, 1, 64, STAGE64,
         "tl_mbar_expect(tl_full + tl_s * 8, 49152);", "for (int tl_j = 0; tl_j < 2; ++tl_j, ++tl_it) {"},
        {"BM = 64, BN = 64, BK = 256, warps = 4", 256, 64, 1, 64, "tl_wg_desc(tl_a + tl_q * 32, 16, 1024, 1)",
         "tl_wg_desc(tl_b + tl_q * 2048, 8192, 1024, 1)", "tl_q < 4;", "tl_mbar_expect(tl_full + tl_s * 8, 24576);",
         "for (int tl_j = 0; tl_j < 4; ++tl_j, ++tl_it) {"},
        /* warps = 4 for 128 rows: two consumer warp groups all the same */
        {"BM = 128, BN = 128, BK = 64, warps = 4", 384, 64, 1, 64, STAGE64, "tl_mbar_init(tl_empty0 + tl_s * 8, 8);",
         "tl_st = v_BK;"},
        /* warps = 8 for 64 rows: two M tiles a block, one a consumer warp group (wgpair.c); before, one
         * warp group, 256 threads */
        {"BM = 64, BN = 256, BK = 32, warps = 8", 384, 64, 1, 64, STAGE64, "tl_mbar_init(tl_empty0 + tl_s * 8, 8);",
         "tl_st = (v_BK) * 2;"},
        /* warps = 4 for 64 rows: one warp group, one M tile */
        {"BM = 64, BN = 256, BK = 32, warps = 4", 256, 64, 1, 64, STAGE64, "tl_mbar_init(tl_empty0 + tl_s * 8, 4);",
         "tl_st = (v_BK) * 2;"},
#undef STAGE64
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *edit[2] = {"BM = 128, BN = 128, BK = 64, warps = 8", cases[i].hints};
        tilec_module *m;
        tilec_kernel_code code;
        tilec_ctx *ctx = lower_mm(edit, 1, &m, &code);
        const char *c = cases[i].hints;
        cr_assert_not_null(code.tma.name, "%s: a twin", c);
        cr_expect_eq(code.tma.threads, cases[i].threads, "%s: %u threads", c, code.tma.threads);
        cr_expect_eq(code.tma.maps[0].box_cols, cases[i].a_cols, "%s: A's box %u columns", c,
                     code.tma.maps[0].box_cols);
        cr_expect_eq(code.tma.maps[1].box_rows, cases[i].b_rows, "%s: B's box %u K rows", c, code.tma.maps[1].box_rows);
        char *tw = first_twin(code.source);
        cr_expect_eq(count_of(tw, "&tl_tm0, "), (int)cases[i].a_boxes, "%s: A's copies a stage", c);
        free(tw);
        cr_expect(strstr(code.source, cases[i].a_desc), "%s: A's descriptor %s", c, cases[i].a_desc);
        cr_expect(strstr(code.source, cases[i].b_desc), "%s: B's descriptor %s", c, cases[i].b_desc);
        cr_expect(strstr(code.source, cases[i].steps), "%s: %s", c, cases[i].steps);
        cr_expect(strstr(code.source, cases[i].expect), "%s: %s", c, cases[i].expect);
        cr_expect(strstr(code.source, cases[i].step), "%s: a stage's step %s", c, cases[i].step);
        if (strstr(cases[i].step, "tl_j")) { /* every box of part tl_j: the K tile's columns tl_j * 64 on */
            char *tw1 = first_twin(code.source);
            int n = count_of(tw1, "tl_tma_2d(tl_ring");
            cr_expect(n >= 2 && count_of(tw1, " + tl_j * 64, ") == n, "%s: A's and B's K coordinates", c);
            free(tw1);
        }
        cr_expect_leq(code.tma.smem_bytes, 227 * 1024);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* Several iterations of a small K tile make a stage only where that is
 * the same sum: consecutive iterations read consecutive K tiles, and the
 * loop runs to the masks' K extent, so what a merged stage reads past the
 * loop's end lies past the extent (zeros). Otherwise one iteration a
 * stage, in the swizzle of the K tile's width, and the remark says why. */
Test(wgmma, small_k_tiles_merge_only_when_the_same_sum)
{
    static const struct {
        const char *from, *to; /* one edit of the BK = 32 kernel */
        int iters;
        const char *step, *remark;
    } cases[] = {
        {"k + range(BK)", "k + range(BK)", 2, "tl_st = (v_BK) * 2;", "K tile 32: stages of 64 (two iterations a stage)"},
        /* the K offset from an iteration count: kt * BK, to cdiv(K, BK) */
        {"for k in 0 .. K step BK {\n        let rk = k + range(BK);",
         "for kt in 0 .. cdiv(K, BK) {\n        let k0 = kt * BK;\n        let rk = k0 + range(BK);", 2,
         "tl_st = (1) * 2;", "K tile 32: stages of 64 (two iterations a stage)"},
        /* the loop stops a K tile short of K: the next one is not zeros */
        {"for k in 0 .. K step BK", "for k in 0 .. K - BK step BK", 1, "tl_st = v_BK;",
         "K tile 32: A in 64-byte swizzled rows, one iteration a stage (the loop's end is not K, the masks' K extent"},
        /* every other K tile: the one between is not in the sum */
        {"for k in 0 .. K step BK", "for k in 0 .. K step 2 * BK", 1, "tl_st = (2 * v_BK);",
         "one iteration a stage (A's K index is not the loop variable (times a constant) plus range(32), one K tile "
         "an iteration)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *edits[4] = {"BK = 64", "BK = 32", cases[i].from, cases[i].to};
        tilec_module *m;
        tilec_kernel_code code;
        tilec_ctx *ctx = lower_mm(edits, 2, &m, &code);
        const char *c = cases[i].to;
        cr_assert_not_null(code.tma.name, "%s: a twin", c);
        cr_expect(strstr(code.remarks, cases[i].remark), "%s: %s\n%s", c, cases[i].remark, code.remarks);
        cr_expect(strstr(code.source, cases[i].step), "%s: %s", c, cases[i].step);
        uint32_t k = 32 * (uint32_t)cases[i].iters; /* a stage's K */
        cr_expect_eq(code.tma.maps[0].box_cols, k, "%s: A's box %u columns", c, code.tma.maps[0].box_cols);
        cr_expect_eq(code.tma.maps[1].box_rows, k, "%s: B's box %u K rows", c, code.tma.maps[1].box_rows);
        cr_expect(strstr(code.source, cases[i].iters > 1 ? "tl_q < 4;" : "tl_q < 2;"), "%s: k16 steps a stage", c);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* The epilogue's store goes by TMA only when it is the kernel's last
 * statement and writes the whole tile under its own extents; an f32
 * output is boxes of 32 columns (128 bytes). Otherwise two maps and the
 * store from the fragments. */
Test(wgmma, store_by_tma_when_it_qualifies)
{
    static const struct {
        const char *store, *after;
        uint32_t nmaps;
    } cases[] = {
        {"store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M && rn[None, :] < N);", "", 3},
        {"store(c + rm[:, None] * N + rn[None, :], acc, rn[None, :] < N && rm[:, None] < M);", "", 3},
        {"store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M && rn[None, :] < N);",
         "store(c, 1.0, M > 0);", 2}, /* not the last statement */
        {"if M < 0 { store(c, 1.0, M > 0); }",
         "store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M && rn[None, :] < N);", 2}, /* only lets before it */
        {"let d = acc * 2.0;", "store(c + rm[:, None] * N + rn[None, :], d, rm[:, None] < M && rn[None, :] < N);", 3},
        {"store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M && rn[None, :] < K);", "", 3},
        {"store(c + rm[:, None] * N + rn[None, :], acc, rm[:, None] < M);", "", 2}, /* rows only */
        {"store(c + rm[:, None] * N + rn[None, :] + 1, acc, rm[:, None] < M && rn[None, :] < N);", "", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[2048];
        snprintf(src, sizeof src,
                 "kernel mf(a: *f16, b: *f16, c: *f32, M: i32, N: i32, K: i32)\n"
                 "    grid (cdiv(M, BM), cdiv(N, BN))\n"
                 "    hints { BM = 128, BN = 128, BK = 64, warps = 8, stages = 3 }\n"
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
                 "    %s\n    %s\n}\n",
                 cases[i].store, cases[i].after);
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_kernel_code code;
        lower_src(ctx, &m, "mf", src, &code);
        cr_assert_not_null(code.tma.name, "case %zu has a twin", i);
        cr_expect_eq(code.tma.nmaps, cases[i].nmaps, "case %zu: %s %s", i, cases[i].store, cases[i].after);
        cr_expect_eq(!!strstr(code.source, "tl_tma_store_2d(&tl_tm2"), cases[i].nmaps == 3, "case %zu", i);
        if (code.tma.nmaps == 3) {
            const tilec_tma_map *t = &code.tma.maps[2];
            cr_expect(t->ptr == 2 && t->rows == 3 && t->stride == 4 && t->cols == (i == 5 ? 5u : 4u), "case %zu", i);
            cr_expect(t->elem_bytes == 4 && t->box_cols == 32 && t->box_rows == 128, "f32: 128 rows x 32 columns");
        }
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* mm with A's mask `amask`: its twin's map of A (rows, cols), or -1 -1
 * when it has no tensor map (*gather: a twin whose producer copies by
 * cp.async, lower/wggather.c). */
static void a_map_with_mask(const char *amask, int *rows, int *cols, int *gather)
{
    char src[2048];
    snprintf(src, sizeof src, MM_TILE_FMT, "mm", amask);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_string(ctx, "mm.tile", src, strlen(src), &m);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s: %s", amask, d ? d->message : "");
    tilec_kernel_code code;
    lower_variant(ctx, m, "mm", 0, &code);
    *rows = code.tma.name && code.tma.nmaps >= 2 ? (int)code.tma.maps[0].rows : -1;
    *cols = code.tma.name && code.tma.nmaps >= 2 ? (int)code.tma.maps[0].cols : -1;
    /* a gather twin: A by cp.async, B [K, N] (its rows bounded by K, its columns by N) by its one map,
     * rows unbounded (the kernel takes a box only where all its rows are below K, lower/wggather.c) */
    const tilec_tma_map *b = &code.tma.maps[0];
    *gather = code.tma.name && code.tma.nmaps == 1 && strstr(code.source, "cp.async.mbarrier.arrive.noinc") &&
              b->ptr == 1 && b->rows == TILEC_TMA_NONE && b->cols == 4 && b->stride == 4 && b->box_rows == 64 &&
              b->box_cols == 64 && strstr(code.source, "(long long)(v_K)");
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The map's extents are the mask's bounds, whichever parameters they are
 * (the runtime falls back when the row stride is narrower than a row); a
 * mask that is not `R < rows && C < cols` of the pointer's own index
 * tiles is no tensor map: the twin's producer copies A by cp.async
 * instead (a gather twin, masked element by element as the pipeline),
 * and B, a plain tile, by its own map. */
Test(wgmma, masks_give_the_extents)
{
    int r, c, g;
    a_map_with_mask(MM_TILE_MASK, &r, &c, &g);
    cr_expect(r == 3 && c == 5 && !g, "rows M, cols K: %d %d", r, c);
    a_map_with_mask("rk[None, :] < K && rm[:, None] < M", &r, &c, &g);
    cr_expect(r == 3 && c == 5 && !g, "either order: %d %d", r, c);
    a_map_with_mask("rm[:, None] < M && rk[None, :] < N", &r, &c, &g);
    cr_expect(r == 3 && c == 4 && !g, "cols N: %d %d", r, c);
    a_map_with_mask("rm[:, None] < M", &r, &c, &g);
    cr_expect(r == -1 && g, "rows only: no map, a gather twin");
    a_map_with_mask("rm[:, None] < M && rk[None, :] + 1 < K", &r, &c, &g);
    cr_expect(r == -1 && g, "a bound on another index expression: no map, a gather twin");
    a_map_with_mask("rm[:, None] < M && rk[None, :] < 64", &r, &c, &g);
    cr_expect(r == -1 && g, "a constant bound: no map, a gather twin");
}

static char *disassemble(const char *tool, const char *opt, const char *kernel, int v, const char *arch)
{
    return disassemble_file(tool, opt, GEMM, kernel, v, arch);
}

Test(wgmma, sass_has_hgmma_and_utmaldg, .timeout = 120)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    char *sass = disassemble(tool, "-sass", "matmul_bias_gelu", 1, "sm_90a");
    const char *twin = strstr(sass, "Function : matmul_bias_gelu_v1_tma\n"); /* the paired twin, not _tma_1 */
    cr_assert_not_null(twin, "the sm_90a cubin has the twin:\n%.2000s", sass);
    const char *next = strstr(twin + 1, "Function : ");
    size_t len = next ? (size_t)(next - twin) : strlen(twin);
    char *t = strndup(twin, len);
    /* 128 x 128 tiles two a block along N (wgpair.c): one m64n256 wgmma */
    cr_expect(strstr(t, "HGMMA.64x256x16.F32"), "the twin multiplies on wgmma");
    cr_expect(strstr(t, "UTMALDG.2D"), "the twin loads by TMA");
    cr_expect(strstr(t, "UTMASTG.2D"), "and stores its epilogue by TMA");
    cr_expect(strstr(sass, "Function : matmul_bias_gelu_v1_tma_1\n"), "its one-tile twin beside it");
    cr_expect(strstr(t, "SYNCS"), "the twin waits on mbarriers");
    cr_expect(!strstr(t, "LDL") && !strstr(t, "STL"), "no local memory in the twin");
    free(t);
    free(sass);
    char *res = disassemble(tool, "-res-usage", "matmul_f16", 3, "sm_90a");
    const char *r = strstr(res, "matmul_f16_v3_tma:");
    cr_assert_not_null(r, "%s", res);
    cr_expect(strstr(r, "STACK:0") && strstr(r, "LOCAL:0"), "no spills:\n%s", res);
    free(res);
    sass = disassemble(tool, "-sass", "matmul_f16", 3, "sm_90");
    cr_expect(!strstr(sass, "_tma"), "an sm_90 compile has no twin");
    cr_expect(strstr(sass, "HMMA"), "the variant itself stays on mma.sync");
    free(sass);
}

/* The control bits of the SASS instruction whose text starts at line:
 * its write barrier (0-5, or 7: none) in *wb, the barriers it waits on
 * (a mask of 6 bits) as the value; -1 where the line has no instruction
 * or its second word is missing. sm_90 keeps them in bits 41 on of the
 * instruction's second 64-bit word, printed on the next line. */
static int sass_waits(const char *line, int *wb)
{
    const char *nl = strchr(line, '\n');
    const char *w = nl ? strstr(nl + 1, "/* 0x") : NULL;
    const char *end = nl ? strchr(nl + 1, '\n') : NULL;
    if (!w || (end && w > end))
        return -1;
    unsigned long long hi = strtoull(w + 3, NULL, 16), c = hi >> 41;
    *wb = (int)((c >> 5) & 7);
    return (int)((c >> 11) & 63);
}

/* gemm_dw's paired twin loads both tiles' dW before its loop (64 LDG.E a
 * thread): no instruction before its first HGMMA may wait on those loads,
 * or each unit's read runs before its loop instead of under it. Copying
 * the second tile's registers to tl_t0_n1 element by element (bf16) split
 * each loaded word into halves there (PRMT ..., 0x7632), waiting on every
 * load, and spilled three of them (STL.S16); the copy by 32-bit words
 * (lower_wg_early_words) leaves the words whole until the epilogue. */
Test(wgmma, paired_early_loads_not_waited_before_the_loop, .timeout = 300)
{
    char *t = sass_function("examples/llm.tile", "gemm_dw", 0, "Function : gemm_dw_v0_tma\n");
    const char *mma = strstr(t, "HGMMA."), *ld = strstr(t, "LDG.E ");
    cr_assert(mma && ld && ld < mma, "dW loaded before the first HGMMA");
    while (ld > t && ld[-1] != '\n')
        ld--; /* the first load's line */
    int lwb = -1, loads = 0, waited = 0;
    for (const char *l = ld; l && l < mma; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        const char *q = l + strspn(l, " \t"), *eol = strchr(l, '\n');
        if (strncmp(q, "/*", 2) || !isxdigit((unsigned char)q[2]))
            continue; /* not an instruction's line (its address in a comment, then the text): its second word, a header */
        int wb, wait = sass_waits(l, &wb);
        if (wait < 0)
            continue;
        if (strstr(l, "LDG.E ") && (!eol || strstr(l, "LDG.E ") < eol)) {
            cr_assert(lwb < 0 || wb == lwb, "the dW loads share one write barrier");
            lwb = wb;
            loads++;
        } else if (lwb >= 0 && lwb < 6 && (wait >> lwb & 1)) {
            waited++;
            cr_log_info("waits on the dW loads before the loop: %.*s", (int)(eol ? eol - l : 80), l);
        }
    }
    cr_expect_eq(loads, 64, "64 LDG.E of 4 bytes a thread before the loop, not %d", loads);
    cr_expect_eq(waited, 0, "%d instructions wait on the dW loads before the first HGMMA", waited);
    cr_expect(!strstr(t, "STL") && !strstr(t, "LDL"), "no local memory in the paired twin");
    free(t);
}

/* gemm_dw's one-tile twin reads its dW tile by TMA into the store's
 * staging (lower/wgmma.c, staged_load): no LDG.E for it (before: 32 a
 * thread, in the accumulator's layout, each with a 2-byte fallback), two
 * more UTMALDG than the producer's four (A's two boxes and B's two a
 * stage), no local memory; the epilogue reads the staged tile a pair of
 * adjacent columns at a time (lower/wgstore.c, ws_stage): 32 LDS of 4
 * bytes a thread, no LDS.U16 (before: 64). */
Test(wgmma, one_tile_twin_reads_dw_by_tma, .timeout = 300)
{
    char *t = sass_function("examples/llm.tile", "gemm_dw", 0, "Function : gemm_dw_v0_tma_1\n");
    cr_expect_eq(count_of(t, "LDG.E"), 0, "no LDG.E in the one-tile twin (dW by TMA): %d", count_of(t, "LDG.E"));
    cr_expect_eq(count_of(t, "UTMALDG"), 6, "4 UTMALDG of the producer's and 2 of dW's, not %d", count_of(t, "UTMALDG"));
    cr_expect_eq(count_of(t, "UTMASTG"), 2, "the store's two boxes");
    cr_expect(!strstr(t, "STL") && !strstr(t, "LDL"), "no local memory in the one-tile twin");
    cr_expect_eq(count_of(t, "LDS.U16"), 0, "no 2-byte read of the staged dW, not %d", count_of(t, "LDS.U16"));
    cr_expect_eq(count_of(t, "LDS "), 32, "32 LDS of a pair of dW's elements, not %d", count_of(t, "LDS "));
    free(t);
}

/* In the SASS of an FFMA, its three source registers and how many of them
 * are read from the register file (no .reuse) with another such one of the
 * same number parity: the register file's two banks (R0, R2, .. and R1,
 * R3, ..) give one of them a cycle each. Returns 1 for such a pair. */
static int ffma_same_bank(const char *line)
{
    const char *p = strstr(line, "FFMA ");
    int reg[4], reuse[4], n = 0;
    for (p = p ? p + 5 : NULL; p && n < 4 && (p = strchr(p, 'R')); p++) {
        char *end;
        long r = strtol(p + 1, &end, 10);
        if (end == p + 1)
            continue; /* RZ or a name */
        reg[n] = (int)r;
        reuse[n++] = !strncmp(end, ".reuse", 6);
        p = end - 1;
    }
    if (n < 4)
        return 0;
    int par[2] = {0, 0};
    for (int i = 1; i < 4; i++)
        if (!reuse[i])
            par[reg[i] & 1]++;
    return par[0] >= 2 || par[1] >= 2;
}

/* The chain check of SASS instruction `line`, the idx-th instruction of
 * its listing: 1 for an FFMA whose addend (its third source) an FFMA at
 * most 4 instructions before wrote, which it then waits for (the FFMA
 * latency, with two warps a scheduler to hide it). last[r]: the index of
 * the FFMA that last wrote register r, -1 where another instruction did
 * since; updated here for the instruction's destination (its first
 * operand, where that is a register and not an address). */
static int ffma_chained(const char *line, int idx, int *last)
{
    const char *op = strstr(line, "*/");
    if (!op)
        return 0;
    op += 2;
    while (*op == ' ')
        op++;
    if (*op == '@') /* a predicate */
        op += strcspn(op, " "), op += strspn(op, " ");
    int ffma = !strncmp(op, "FFMA ", 5), hit = 0, reg[4], n = 0;
    const char *p = op + strcspn(op, " ");
    p += strspn(p, " ");
    if (*p != 'R' || p[1] < '0' || p[1] > '9')
        return 0; /* no register destination: a store, a copy, a compare into a predicate, a branch */
    for (; n < 4 && (p = strchr(p, 'R')); p++) {
        char *end;
        long r = strtol(p + 1, &end, 10);
        if (end == p + 1)
            continue;
        reg[n++] = (int)r;
        p = end - 1;
    }
    if (ffma && n == 4 && reg[3] < 256 && last[reg[3]] >= 0 && idx - last[reg[3]] <= 4)
        hit = 1;
    if (n > 0 && reg[0] < 256)
        last[reg[0]] = ffma ? idx : -1;
    return hit;
}

/* f32 has no twin: its dot loop is a cp.async ring. A contiguous along K
 * is stored [K][M] by 4-byte copies (LDGSTS.E); B contiguous along N
 * (x @ W) is stored [K][N] by 16-byte ones (LDGSTS.E.BYPASS.128), and B
 * contiguous along K (x @ W.T, W stored [N, K]) is copied as it lies by
 * 16-byte ones too, into the [N][K] ring (docs/lowering.md): linear_f32
 * has matmul_f32's count of each copy (before, its W took three times the
 * 4-byte copies and no 16-byte one), of FFMA and of LDS.128 (four rows of
 * A, four columns of B, or four k of one column of B, a 16-byte read);
 * with `transpose_b = 1` (linear_f32's variants 3 and 4) W is transposed
 * by 4-byte copies again. No spills, no stack frame. With A's values of
 * one k in consecutive registers, at most a quarter of x @ W's FFMAs read
 * two registers of one bank outside the reuse cache (about 18% at
 * 128x256; 47% when A rows were read four k at a time, where the H100
 * profile showed 0.45 cycles of dispatch stall per instruction,
 * docs/lowering.md), and of x @ W.T's at BK = 32 (22%); x @ W.T at BK = 16
 * has 30% (ptxas's allocation at 255 registers; its transposing copies
 * had 25% and ran slower on the H200, 3.398 against 3.317 ms at 4096:
 * bench/results/f32_s43.md), counted and bounded by a third. Variant 1
 * is 128x256 at BK = 16 (2048 FFMA a step), variant 2 the same at BK = 32
 * (4096), which had 255 registers, a stack frame and 73% same-bank pairs
 * before A's row bases were kept out of the loop (hoist.c). */
Test(wgmma, sass_f32_fma_ring, .timeout = 600)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    static const char *const files[2][2] = {{"examples/matmul_f32.tile", "matmul_f32"},
                                            {"examples/linear_f32.tile", "linear_f32"}};
    /* counted in both: FFMA, LDS.128, 4-byte copies, 16-byte copies */
    static const char *const ops[4] = {"FFMA ", "LDS.128 ", "LDGSTS.E [", "LDGSTS.E.BYPASS.128 ["};
    for (int v = 1; v <= 4; v++) {
        int counts[2][4] = {{0}};
        int mv = v <= 2 ? v : v - 2; /* linear_f32's variants 3 and 4: 1 and 2 under transpose_b */
        for (int f = 0; f < 2; f++) {
            if (f == 0 && v > 2) { /* matmul_f32 has three variants: the counts of 1 and 2 again */
                char *sass = disassemble_file(tool, "-sass", files[0][0], files[0][1], mv, "sm_90a");
                for (int i = 0; i < 4; i++)
                    for (const char *p = strstr(sass, ops[i]); p; p = strstr(p + 1, ops[i]))
                        counts[0][i]++;
                free(sass);
                continue;
            }
            const char *file = files[f][0], *kern = files[f][1];
            char *sass = disassemble_file(tool, "-sass", file, kern, f ? v : mv, "sm_90a");
            cr_expect(!strstr(sass, "_tma"), "no twin for f32");
            cr_expect(strstr(sass, "LDS.128"), "%s v%d: 16-byte shared-memory reads", kern, v);
            cr_expect(!strstr(sass, "LDL") && !strstr(sass, "STL"), "%s v%d: no local memory", kern, v);
            int ffma = 0, same = 0, lds = 0, chained = 0, idx = 0, last[256];
            for (int r = 0; r < 256; r++)
                last[r] = -1;
            for (const char *l = sass; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                const char *e = strchr(l, '\n');
                char line[256];
                size_t n = e ? (size_t)(e - l) : strlen(l);
                snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), l);
                if (strstr(line, "FFMA ")) {
                    ffma++;
                    same += ffma_same_bank(line);
                }
                const char *t = line + strspn(line, " ");
                if (t[0] == '/' && t[1] == '*' && isxdigit((unsigned char)t[2])) /* an instruction: its address, then its text */
                    chained += ffma_chained(line, idx++, last);
                lds += strstr(line, "LDS") && !strstr(line, "@!PT LDS"); /* ptxas's no-ops before LDGSTS */
                for (int i = 0; i < 4; i++)
                    counts[f][i] += strstr(line, ops[i]) != NULL;
            }
            cr_expect(ffma >= 2048 * mv, "%s v%d: the %d-k step of the 8 x 16 register block: %d FFMA", kern, v, 16 * mv,
                      ffma);
            /* a quarter, but x @ W.T's BK = 16 (linear_f32 v1): 30% (ptxas's allocation at 255 registers). There
             * the mask rule (lower/mask.c) wrote the [N][K] ring's chunks against K - 3 and ptxas gave 40% (822 of
             * 2048), 3.442 ms against 3.258-3.317 on the H200 (bench/results/f32_s44.md); the chunks keep their
             * own index (LOWER_ASYNC_OWN): 620 on its branch. Merged with s44/convf32 (a partial chunk's
             * elements copied by 4-byte cp.async, not synchronous loads) ptxas allocates it as before: 802, with
             * 120 chained; not timed, and not the variant the runtime picks (v2: 3.012 ms in
             * bench/results/merged_s44.md). Bounded at 45% and 1 in 16 there, as in session 43 */
            int pct = f == 1 && v == 1 ? 45 : 25, chain_k = f == 1 && v == 1 ? 16 : 32;
            cr_expect(same * 100 <= ffma * pct, "%s v%d: %d of %d FFMAs read two same-bank registers outside the reuse cache", kern, v,
                      same, ffma);
            /* x @ W none; x @ W.T's [N][K] loop, a column's four k one after the other, 55 at BK = 16 (127 with
             * the bound K - 3) and 62 at BK = 32 of its FFMAs add to the result of an FFMA 1-4 instructions before */
            cr_expect(chained * chain_k <= ffma, "%s v%d: %d of %d FFMAs add to what an FFMA at most 4 instructions before wrote",
                      kern, v, chained, ffma);
            cr_expect(lds == counts[f][1], "%s v%d: every shared-memory read 16 bytes (%d of %d)", kern, v, counts[f][1], lds);
            cr_expect(ffma >= 16 * counts[f][1], "%s v%d: %d FFMA to %d LDS.128", kern, v, ffma, counts[f][1]);
            free(sass);
            char *res = disassemble_file(tool, "-res-usage", file, kern, f ? v : mv, "sm_90a");
            cr_expect(strstr(res, "STACK:0 "), "%s v%d: no stack frame:\n%s", kern, v, res);
            free(res);
        }
        for (int i = 0; i < 4; i++) {
            cr_expect_gt(counts[0][i], 0, "matmul_f32 v%d: '%s'", mv, ops[i]);
            /* x @ W's instructions, or under transpose_b W's 4-byte copies (three times A's) and no 16-byte one */
            /* x @ W's 4-byte copies are A's plus, since s44/convf32, those of a partial or misaligned
             * 16-byte chunk's elements (a 4-byte cp.async each, in a loop: two LDGSTS.E for each 16-byte
             * copy in this SASS, 72 = 24 + 2 x 24 at v1); W transposed takes twice A's */
            int a4 = counts[0][2] - 2 * counts[0][3];
            int want = v <= 2 || i < 2 ? counts[0][i] : i == 2 ? 3 * a4 : 0;
            cr_expect_eq(counts[1][i], want, "linear_f32 v%d: %d '%s', matmul_f32 v%d %d (%d 16-byte)", v, counts[1][i], ops[i],
                         mv, counts[0][i], counts[0][3]);
        }
    }
}

/* examples/conv2d_f32.tile (f32 NCHW, an implicit GEMM on the FMA ring):
 * every global read of the stride-1 kernel is a cp.async. Its input's
 * chunks of four pixels are shifted by the filter tap (v = ow + s - pad),
 * so two of three taps of a 3x3 filter give 16-byte chunks off their
 * alignment, and the image border cuts chunks in part; those go one
 * 4-byte cp.async an element (zero-filled where masked), where they were
 * synchronous loads and shared-memory stores in the loop (LDG + STS
 * before the change: 0.449 against 0.348 ms at 3x3 56x56 C64 on the
 * H200, bench/results/conv_f32_s44.md). The variants 0 (128x128, 8 warps)
 * and 3 (64x64, 4 warps, the runtime's choice there): the FFMA of their
 * register blocks, 16-byte shared-memory reads, no local memory. */
Test(wgmma, sass_conv2d_f32_copies_are_async, .timeout = 600)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    static const int vars[2] = {0, 3}, ffma_step[2] = {1024, 512};
    for (int i = 0; i < 2; i++) {
        char *sass = disassemble_file(tool, "-sass", "examples/conv2d_f32.tile", "conv2d_f32", vars[i], "sm_90a");
        int ffma = 0, ldg = 0, cp4 = 0, cp16 = 0;
        for (const char *p = strstr(sass, "FFMA "); p; p = strstr(p + 1, "FFMA "))
            ffma++;
        for (const char *p = strstr(sass, "LDG.E"); p; p = strstr(p + 1, "LDG.E"))
            ldg++;
        for (const char *p = strstr(sass, "LDGSTS.E ["); p; p = strstr(p + 1, "LDGSTS.E ["))
            cp4++;
        for (const char *p = strstr(sass, "LDGSTS.E.BYPASS.128 ["); p; p = strstr(p + 1, "LDGSTS.E.BYPASS.128 ["))
            cp16++;
        cr_expect_eq(ldg, 0, "conv2d_f32 v%d: %d synchronous global loads (LDG): every read a cp.async", vars[i], ldg);
        cr_expect_gt(cp4, 0, "conv2d_f32 v%d: the 4-byte copies of partial or misaligned chunks", vars[i]);
        cr_expect_gt(cp16, 0, "conv2d_f32 v%d: the 16-byte copies of whole chunks", vars[i]);
        cr_expect_geq(ffma, ffma_step[i], "conv2d_f32 v%d: %d FFMA, the 16-k step is %d", vars[i], ffma, ffma_step[i]);
        cr_expect(strstr(sass, "LDS.128"), "conv2d_f32 v%d: 16-byte shared-memory reads", vars[i]);
        cr_expect(!strstr(sass, "LDL") && !strstr(sass, "STL"), "conv2d_f32 v%d: no local memory", vars[i]);
        free(sass);
    }
}

/* The tf32 hint puts the same f32 dot on tensor cores: HMMA.1688 on tf32,
 * the operands rounded (cvt.rna.tf32) on the way, no local memory. */
Test(wgmma, sass_tf32_hint, .timeout = 120)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    char *sass = disassemble_file(tool, "-sass", "examples/matmul_tf32.tile", "matmul_tf32", 1, "sm_90a");
    cr_expect(strstr(sass, "HMMA.1688.F32.TF32"), "tf32 tensor cores");
    cr_expect(!strstr(sass, "FFMA"), "no FMA dot");
    cr_expect(!strstr(sass, "LDL") && !strstr(sass, "STL"), "no local memory");
    free(sass);
}

/* The remark of case c names `remark`, or (NULL) says nothing of `absent`;
 * then code, m and ctx freed. */
static void remark_and_free(tilec_ctx *ctx, tilec_module *m, tilec_kernel_code *code, const char *c, const char *remark,
                            const char *absent)
{
    if (remark)
        cr_expect(strstr(code->remarks, remark), "%s: %s\n%s", c, remark, code->remarks);
    else
        cr_expect(!strstr(code->remarks, absent), "%s: no remark of %s\n%s", c, absent, code->remarks);
    tilec_kernel_code_free(code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Two program tiles along N a block (lower/wgpair.c): a twin whose B
 * columns are pid(1) * BN + range(BN), with nothing else reading pid(1)
 * before the epilogue, runs pid(1) = 2j and 2j + 1 on one m64(2BN)
 * wgmma (the second tile's accumulator tl_acc1), its epilogue once per
 * tile (the second with the lets again at pid(1) + 1, skipped past the
 * program's grid), on a persistent grid over pairs (metadata 2). Where it
 * does not apply, the remark says why, decided from the analysis of the
 * index expressions, not their spelling. */
Test(wgmma, two_n_tiles_a_block)
{
    static const struct {
        const char *from, *to; /* one edit of MM_TILE_FMT */
        int pair;
        const char *remark;
    } cases[] = {
        {"BK = 64", "BK = 64", 1, "two N tiles a block on a persistent grid (pid(1) 2j and 2j + 1: m64n256 wgmma, 4 stages)"},
        /* the tile's column offset named and scaled another way: the same analysis */
        {"let rn = pid(1) * BN + range(BN);", "let n0 = BN * cast(pid(1), i32);\n    let rn = range(BN) + n0;", 1,
         "two N tiles a block"},
        /* BM = 64: m64n256 from one consumer warp group */
        {"BM = 128, BN = 128, BK = 64, warps = 8", "BM = 64, BN = 128, BK = 64, warps = 4", 1, "m64n256 wgmma"},
        /* the axes swapped: B's columns follow pid(0), A's rows pid(1) */
        {"let rm = pid(0) * BM + range(BM);\n    let rn = pid(1) * BN + range(BN);",
         "let rm = pid(1) * BM + range(BM);\n    let rn = pid(0) * BN + range(BN);", 0,
         "one N tile a block (not two: B's N index is neither pid(1) * 128 nor pid(2) * 128 plus what does not read "
         "that pid)"},
        /* B's tile does follow pid(1), but A's rows too */
        {"let rm = pid(0) * BM + range(BM);", "let rm = (pid(0) + pid(1)) * BM + range(BM);", 0,
         "not two: A's tile, the K index or the batch reads pid(1)"},
        /* a loop whose start reads pid(1): the two tiles' sums differ */
        {"for k in 0 .. K step BK", "for k in pid(1) * BK .. K step BK", 0,
         "not two: the loop's bounds read pid(1)"},
        /* a K tile of 128: two stages of 64 an iteration, each the reference's (before: one stage of 128 x 128 for
         * A and 128 x 256 for B, 2 stages of 96 KiB, not two) */
        {"BK = 64", "BK = 128", 1,
         "K tile 128: stages of 64 (two stages an iteration), two N tiles a block on a persistent grid (pid(1) 2j and "
         "2j + 1: m64n256 wgmma, 4 stages)"},
        /* 256 columns already: the widest wgmma, nothing to say */
        {"BN = 128", "BN = 256", 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *edit[2] = {cases[i].from, cases[i].to};
        tilec_module *m;
        tilec_kernel_code code;
        tilec_ctx *ctx = lower_mm(edit, 1, &m, &code);
        const char *c = cases[i].to;
        cr_assert_not_null(code.tma.name, "%s: a twin", c);
        cr_expect_eq(code.tma.persistent, cases[i].pair ? 2u : 1u, "%s: persistent %u", c, code.tma.persistent);
        cr_expect_eq(!!strstr(code.source, "tl_acc1"), cases[i].pair, "%s: the second tile's accumulator", c);
        if (cases[i].pair) {
            cr_expect(strstr(code.source, "_n256_2(v_acc, tl_acc1, "), "%s: one m64n256 wgmma for both tiles", c);
            cr_expect(strstr(code.source, "const int tl_units = tl_grid0 * ((tl_grid1 + 1) / 2) * tl_grid2;"),
                      "%s: the block walks pairs", c);
            cr_expect(strstr(code.source, "if (tl_pidn < tl_grid1) {"), "%s: no second store past the grid", c);
            char *tw = first_twin(code.source);
            cr_expect_eq(count_of(tw, "tl_tma_store_2d(&tl_tm2, "), 4, "%s: each tile's two boxes stored", c);
            free(tw);
            /* and beside it the one-tile twin, for launches of too few pairs (runtime/tma.c) */
            cr_expect(strstr(code.source, "mm_v0_tma_1(__half *v_a"), "%s: the one-tile twin", c);
            cr_expect(strstr(code.source, "tl_wgmma_f16_n128(v_acc, "), "%s: its m64n128 wgmma", c);
            cr_expect(strstr(code.source, "tl_mbar_expect(tl_full + tl_s * 8, "), "%s", c);
        }
        remark_and_free(ctx, m, &code, c, cases[i].remark, "N tile");
    }
}

/* Two program tiles along M a block (lower/wgpair.c): a 64-row tile whose
 * `warps` hint asks for two warp groups runs pid(0) = 2i and 2i + 1, one
 * a consumer warp group: A's box both tiles' 128 rows a stage, the
 * block's 256 consumer threads and its producer warp group (384), each
 * warp group's statements after the loop at pid(0) + tl_g with its own
 * named barrier and staging, the second skipped past the program's grid,
 * on a persistent grid over pairs along x (metadata 3). Before, the twin
 * ran one warp group of 4 warps on a 64 x 256 tile, the `warps` hint's
 * other 4 unused, loading 1.67 times the operand bytes a product of the
 * reference's 128 x 256 (0.87x of cuBLAS at 4096, forms_s40.md). Where it
 * does not apply, the remark says why. */
Test(wgmma, two_m_tiles_a_block)
{
    static const struct {
        const char *from, *to; /* one edit of MM_TILE_FMT at BM = 64, BN = 256, warps = 8 */
        int mpair;
        const char *remark;
    } cases[] = {
        {"BK = 64", "BK = 64", 1,
         "two M tiles a block on a persistent grid (pid(0) 2i and 2i + 1, one a consumer warp group: the `warps` hint's 8 "
         "warps; m64n256 wgmma, 4 stages)"},
        /* the tile's row offset named and scaled another way: the same analysis */
        {"let rm = pid(0) * BM + range(BM);", "let m0 = BM * cast(pid(0), i32);\n    let rm = range(BM) + m0;", 1,
         "two M tiles a block"},
        /* B's columns follow pid(0), A's rows pid(1) */
        {"let rm = pid(0) * BM + range(BM);\n    let rn = pid(1) * BN + range(BN);",
         "let rm = pid(1) * BM + range(BM);\n    let rn = pid(0) * BN + range(BN);", 0,
         "one M tile a block (not two: A's M index is not pid(0) * 64 plus what does not read pid(0))"},
        /* B's tile reads pid(0) too */
        {"let rn = pid(1) * BN + range(BN);", "let rn = (pid(1) + pid(0)) * BN + range(BN);", 0,
         "not two: B's tile, the K index or the batch reads pid(0)"},
        {"for k in 0 .. K step BK", "for k in pid(0) * BK .. K step BK", 0, "not two: the loop's bounds read pid(0)"},
        /* the hint's one warp group: nothing to say */
        {"warps = 8", "warps = 4", 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *edit[4] = {"BM = 128, BN = 128", "BM = 64, BN = 256", cases[i].from, cases[i].to};
        tilec_module *m;
        tilec_kernel_code code;
        tilec_ctx *ctx = lower_mm(edit, 2, &m, &code);
        const char *c = cases[i].to;
        cr_assert_not_null(code.tma.name, "%s: a twin", c);
        cr_expect_eq(code.tma.persistent, cases[i].mpair ? 3u : 1u, "%s: persistent %u", c, code.tma.persistent);
        cr_expect_eq(code.tma.threads, cases[i].mpair ? 384u : 256u, "%s: %u threads", c, code.tma.threads);
        cr_expect_eq(code.tma.maps[0].box_rows, cases[i].mpair ? 128u : 64u, "%s: A's box %u rows", c,
                     code.tma.maps[0].box_rows);
        cr_expect_eq(code.tma.maps[2].box_rows, 64u, "%s: C's box one tile's rows", c);
        cr_expect_leq(code.tma.smem_bytes, 227 * 1024);
        cr_expect_eq(!!strstr(code.source, "tl_bar_group(tl_g, 128);"), cases[i].mpair, "%s: a barrier a warp group", c);
        if (cases[i].mpair) {
            cr_expect(strstr(code.source, "__launch_bounds__(384, 1) mm_v0_tma("), "%s: 384 threads", c);
            cr_expect(strstr(code.source, "const int tl_units = ((tl_grid0 + 1) / 2) * tl_grid1 * tl_grid2;"),
                      "%s: the block walks pairs along x", c);
            cr_expect(strstr(code.source, "const int tl_pid0 = (tl_first + tl_r % tl_gs) * 2, "), "%s: pid(0) 2i", c);
            cr_expect(strstr(code.source, "const int tl_g = tl_tid >> 7, tl_pidm = tl_pid0 + tl_g;") &&
                          strstr(code.source, "if (tl_pidm < tl_grid0) {"),
                      "%s: each warp group's tile, none stored past the grid", c);
            cr_expect(strstr(code.source, "tl_mbar_init(tl_empty0 + tl_s * 8, 8);"), "%s: 8 consumer warps free a stage", c);
            cr_expect(strstr(code.source, " + tl_g * 16384;"), "%s: a staging each", c);
            cr_expect(strstr(code.source, "tl_mbar_expect(tl_full + tl_s * 8, 49152);"), "%s: (128 + 256) x 64 a stage", c);
            cr_expect(strstr(code.source, "tl_wgmma_f16_n256(v_acc, "), "%s: m64n256 a warp group", c);
            /* B past A's 4 slots of two M tiles (4 x 128 x 64 halves), where the producer copies it and
             * where the consumers read it (session 49's merge read it past one M tile's slots) */
            cr_expect(strstr(code.source, "tl_tma_2d(tl_ring + 65536 + tl_s * 32768 + 0, &tl_tm1, "),
                      "%s: the producer copies B past A's slots of two M tiles", c);
            cr_expect(strstr(code.source, "const unsigned tl_b = tl_ring + 65536 + tl_s * 32768;"),
                      "%s: the consumers read B where the producer copied it", c);
        }
        remark_and_free(ctx, m, &code, c, cases[i].remark, "M tile");
    }
}

/* Two M tiles a block with A MN-major (dW = G^T @ X: two boxes of 64
 * along M a stage), and not where the statements after the loop take
 * shared memory of their own (a tile read back through it, as llm.tile's
 * gemm_dw adds to dW): both warp groups would use it at once, so the
 * twin of one M tile a block runs and the remark says why. (B's tiles
 * here do not pair: the loop's start reads pid(1).) */
Test(wgmma, two_m_tiles_leave_shared_memory_alone)
{
    static const char *const stores[] = {"store(at, cast(acc, bf16), m);",
                                         "store(at, cast(acc + cast(load(at, m && add != 0, 0.0), f32), bf16), m);"};
    for (int i = 0; i < 2; i++) {
        char src[2048];
        snprintf(src, sizeof src,
                 "kernel mm(a: *bf16, b: *bf16, dw: *bf16, M: i32, N: i32, K: i32, add: i32)\n"
                 "    grid (cdiv(M, BM), cdiv(N, BN))\n"
                 "    hints { BM = 64, BN = 128, BK = 64, warps = 8 }\n"
                 "{\n"
                 "    let rm = pid(0) * BM + range(BM);\n"
                 "    let rn = pid(1) * BN + range(BN);\n"
                 "    let acc = zeros(f32, BM, BN);\n"
                 "    for k in (pid(1) %% 1) * BK .. K step BK {\n"
                 "        let rk = k + range(BK);\n"
                 "        let ta = load(a + rk[:, None] * M + rm[None, :], rk[:, None] < K && rm[None, :] < M, 0.0);\n"
                 "        let tb = load(b + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0);\n"
                 "        acc = acc + dot(trans(ta), tb);\n"
                 "    }\n"
                 "    let m = rm[:, None] < M && rn[None, :] < N;\n"
                 "    let at = dw + rm[:, None] * N + rn[None, :];\n"
                 "    %s\n"
                 "}\n",
                 stores[i]);
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m;
        tilec_kernel_code code;
        lower_src(ctx, &m, "mm", src, &code);
        cr_assert_not_null(code.tma.name, "%s: a twin", stores[i]);
        cr_expect_eq(code.tma.persistent, i ? 1u : 3u, "%s: persistent %u", stores[i], code.tma.persistent);
        cr_expect_eq(!!strstr(code.source, "tl_bar_group(tl_g, 128);"), !i, "%s: a barrier a warp group", stores[i]);
        cr_expect(strstr(code.remarks, "A MN-major") && strstr(code.remarks, "two M tiles a block on a persistent grid"),
                  "%s\n%s", stores[i], code.remarks);
        char *tw = first_twin(code.source);
        cr_expect_eq(count_of(tw, "&tl_tm0, "), i ? 1 : 2, "%s: A's boxes along M a stage", stores[i]);
        free(tw);
        if (i)
            cr_expect(strstr(code.remarks, "but one M tile a block runs: the statements after the loop take shared "
                                           "memory, which the two warp groups would share"),
                      "%s", code.remarks);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* Two M tiles a block planned (BN = 256: N tiles cannot pair), but the
 * statements after the loop take 32 KiB of shared memory (the C tile
 * read back through it), so beside the two warp groups' stagings fewer
 * stages fit than two M tiles want: lower_wg_pair_deep's bound, 4 with
 * BK = 64 (stages x BK >= 256), not a fixed 3; and the remark says so
 * beside the statements' bytes, where it once said nothing of the M
 * tiles (lower/target.c, twin_remark). */
Test(wgmma, two_m_tiles_say_the_stages_they_want)
{
    static const char *const edits[] = {
        "BM = 128, BN = 128, BK = 64, warps = 8, stages = 3", "BM = 64, BN = 256, BK = 64, warps = 8",
        "cast(acc, f16)", "cast(acc + cast(load(c + rm[:, None] * N + rn[None, :], rm[:, None] < M, 0.0), f32), f16)"};
    tilec_module *m;
    tilec_kernel_code code;
    tilec_ctx *ctx = lower_mm(edits, 2, &m, &code);
    cr_assert_not_null(code.tma.name, "a twin\n%s", code.remarks);
    cr_expect(strstr(code.remarks, "two M tiles a block on a persistent grid (pid(0) 2i and 2i + 1"), "%s",
              code.remarks);
    cr_expect(strstr(code.remarks, "m64n256 wgmma, 4 stages); but one M tile a block runs: fewer than 4 stages fit "
                                   "beside the two warp groups' stagings; the statements after the loop take 32768 "
                                   "bytes of shared memory, so one M tile a block on a persistent grid, 4 stages)"),
              "%s", code.remarks);
    cr_expect_null(strstr(code.remarks, "fewer than 3 stages"), "%s", code.remarks);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* A twin's stages leave room for every shared buffer of the kernel
 * (lower_wg_block, lower_wg_fit; lower/target.c measures what the
 * statements after the loop take and plans again): an epilogue that
 * reads a tile back through shared memory no longer pushes the planned
 * twin past the 227 KiB a block may have. Before, the persistent plan
 * left a guessed 3 KiB for it: llm.tile's gemm_dw (a 32 KiB conversion
 * of the dW tile it adds to) fell back to one tile a block, and a product
 * adding an f32 tile (64 KiB) had no twin at all, by TMA or cp.async. */
Test(wgmma, stages_leave_room_for_the_epilogue)
{
    enum { LIMIT = 227 * 1024 };
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "examples/llm.tile");
    tilec_kernel_code code;
    lower_variant(ctx, m, "gemm_dw", 0, &code);
    cr_assert_not_null(code.tma.name, "gemm_dw has a twin");
    /* its dW tiles loaded before the loop in the accumulator's layout (wgmma.c, early_pair): no conversion
     * buffer, so the pair's 4 stages of 48 KiB fit */
    cr_expect_eq(code.tma.persistent, 2, "gemm_dw's twin walks a persistent grid, two N tiles a block");
    cr_expect_leq(code.tma.smem_bytes, LIMIT, "%u bytes of shared memory", code.tma.smem_bytes);
    cr_expect(strstr(code.source, "each block walks tiles, 4 stages (sm_90a)"), "the pair's 4 stages");
    cr_expect(!strstr(code.remarks, "the statements after the loop take") &&
                  !strstr(code.remarks, "not a persistent grid"),
              "the remark says what runs:\n%s", code.remarks);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    /* mm + an f32 tile read back (64 KiB converted): by TMA, a persistent
     * twin of one N tile a block (two would convert the tile through 64
     * KiB), whose consumers load the tile before the loop, so its stages
     * leave no room for it: 6 stages (4 before, planned with the pair's 64
     * KiB it does not take); by cp.async (A's mask no map: a gather twin,
     * one tile a block, converting it), 5 stages where its ring would take 6 */
    static const char *const edits[] = {
        "c: *f16,", "c: *f16, d: *f32,", "cast(acc, f16)",
        "cast(acc + load(d + rm[:, None] * N + rn[None, :], rm[:, None] < M && rn[None, :] < N, 0.0), f16)",
        MM_TILE_MASK, "rm[:, None] < M"};
    for (int gather = 0; gather < 2; gather++) {
        ctx = lower_mm(edits, gather ? 3 : 2, &m, &code);
        cr_assert_not_null(code.tma.name, "gather %d: a twin", gather);
        cr_expect_eq(code.tma.persistent, gather ? 0u : 1u, "gather %d: persistent %u", gather, code.tma.persistent);
        cr_expect_leq(code.tma.smem_bytes, LIMIT, "gather %d: %u bytes", gather, code.tma.smem_bytes);
        cr_expect(strstr(code.source, gather ? "wgmma on 5 cp.async stages" : "each block walks tiles, 6 stages"),
                  "gather %d: its stages", gather);
        cr_expect(strstr(code.remarks, gather ? "the statements after the loop take 65536 bytes of shared memory, so 5 "
                                                "stages"
                                              : "the statements after the loop take 65536 bytes of shared memory, so one "
                                                "N tile a block on a persistent grid, where they take 0: 6 stages"),
                  "gather %d:\n%s", gather, code.remarks);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
    /* every twin of the examples and the benchmark's kernels: within a
     * block's shared memory, and none planned persistent but refused for it */
    glob_t g;
    cr_assert_eq(glob("examples/*.tile", 0, NULL, &g), 0);
    cr_assert_eq(glob("bench/harness/*.tile", GLOB_APPEND, NULL, &g), 0);
    int twins = 0;
    for (size_t f = 0; f < g.gl_pathc; f++) {
        ctx = tilec_ctx_new();
        m = parse(ctx, g.gl_pathv[f]);
        for (size_t k = 0; k < tilec_module_kernel_count(m); k++) {
            const tilec_kernel *kk = tilec_module_kernel(m, k);
            for (uint32_t v = 0; v < tilec_kernel_variant_count(kk); v++) {
                if (tilec_lower_kernel(ctx, m, kk, (int)v, &code) != TILEC_OK)
                    continue; /* a variant that does not lower is another suite's business */
                twins += code.tma.name != NULL;
                cr_expect_leq(code.tma.smem_bytes, LIMIT, "%s %s v%u", g.gl_pathv[f], kk->name, v);
                cr_expect(!strstr(code.remarks, "not a persistent grid: its passes need"), "%s %s v%u:\n%s",
                          g.gl_pathv[f], kk->name, v, code.remarks);
                tilec_kernel_code_free(&code);
            }
        }
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
    globfree(&g);
    cr_expect_gt(twins, 20, "%d twins", twins);
}

/* The twin's part of the CUDA (from its `_tma(` on), "" where none. */
static const char *twin_text(const tilec_kernel_code *code)
{
    const char *t = strstr(code->source, "_tma(");
    return t ? t : "";
}

/* Kernel `name`'s definition in code's source, up to the next
 * __global__ (a copy; "" when it is not there). */
static char *kernel_text(const tilec_kernel_code *code, const char *name)
{
    const char *k = strstr(code->source, name);
    if (!k)
        return strdup("");
    const char *next = strstr(k + 1, "__global__");
    return strndup(k, next ? (size_t)(next - k) : strlen(k));
}

/* A one-tile persistent twin whose epilogue adds the tile it stores
 * (gemm_dw's dW += G^T h) reads that tile by TMA into the store's staging
 * (lower/wgmma.c, staged_load): consumer thread 0 issues the two boxes
 * through the store's map once the previous tile's store has read the
 * staging, on the mbarrier after the ring's; the epilogue waits on it and
 * adds each element where it writes it; the flag's condition (add != 0)
 * skips the copy. Not the pairs (the second tile's dW has no staging),
 * not a batched map (mm_acc_head), not a tile of another tensor (mm_add's
 * d): their consumers load registers as before. The twin's metadata says
 * so (tilec_tma_meta.one_tma, which the launch weighs: runtime/tma.c):
 * set for gemm_dw, mm_acc and mm_acc_if, not for the others nor for a
 * plain product's pairs (mm_tile.h). */
Test(wgmma, epilogue_tile_read_by_tma_into_the_staging)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "examples/llm.tile");
    tilec_kernel_code code;
    lower_variant(ctx, m, "gemm_dw", 0, &code);
    cr_expect(code.tma.persistent == 2 && code.tma.one_tma == 1, "gemm_dw: persistent %u, one_tma %u",
              code.tma.persistent, code.tma.one_tma);
    char *one = kernel_text(&code, "gemm_dw_v0_tma_1("), *pair = kernel_text(&code, "gemm_dw_v0_tma(");
    const char *c = strstr(one, "tl_setmaxnreg_inc"); /* the consumers' part: after the producer's loop */
    const char *issue = c ? strstr(c, "by TMA into the store's staging") : NULL;
    const char *loop = c ? strstr(c, "+= dot: wgmma") : NULL;
    cr_expect(issue && loop && issue < loop, "the one-tile twin reads dW before its loop:\n%s", one);
    cr_expect(strstr(one, "const bool tl_sc = (v_add != 0);"), "the flag's condition:\n%s", one);
    cr_expect(strstr(one, "tl_mbar_init(tl_full0 + 96, 1);"), "its mbarrier after the 6 stages' 12:\n%s", one);
    cr_expect(strstr(one, "tl_tma_2d(tl_ring0 + 196608, &tl_tm2, ((tl_pid1 * v_BN) + 0) + 0, ((tl_pid0 * v_BM) + 0), "
                          "tl_full0 + 96);") &&
                  strstr(one, "tl_tma_2d(tl_ring0 + 212992, &tl_tm2, ((tl_pid1 * v_BN) + 0) + 64,"),
              "two boxes of 128 x 64 by the store's map into its staging:\n%s", one);
    const char *wait = loop ? strstr(loop, "tl_mbar_wait(tl_full0 + 96,") : NULL;
    cr_expect(wait && strstr(wait, "const unsigned int tl_rw = tl_sc ? *(const unsigned int *)(tl_so + tl_o) : "
                                   "(unsigned int)0;") &&
                  strstr(wait, "tl_r1 = ((const __nv_bfloat16 *)&tl_rw)[1];") &&
                  strstr(wait, "__bfloat162float(tl_r0)"),
              "the epilogue waits, then adds each element where it writes it, a pair a read:\n%s", one);
    cr_expect(!strstr(one, "tl_t0[") && !strstr(one, "v_dw +"), "no register tile, no pointer into dW:\n%s", one);
    cr_expect(!strstr(pair, "store's staging") && strstr(pair, "tl_t0_n1"), "the pairs load registers:\n%s", pair);
    cr_expect(strstr(code.remarks, "(its one-tile twin: by TMA into the store's staging)"), "the remark:\n%s",
              code.remarks);
    free(one);
    free(pair);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    m = parse(ctx, "tests/gpu/epilogue_readback.tile");
    static const char *const kernels[][2] = {
        {"mm_acc", "mm_acc_v0_tma_1("}, {"mm_acc_if", "mm_acc_if_v0_tma_1("},
        {"mm_acc_head", "mm_acc_head_v0_tma_1("}, {"mm_add", "mm_add_v0_tma("}};
    static const int staged[] = {1, 1, 0, 0};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
        lower_variant(ctx, m, kernels[i][0], 0, &code);
        char *t = kernel_text(&code, kernels[i][1]);
        cr_expect(strstr(t, "issued before the dot loop"), "%s: its tile read before the loop:\n%s", kernels[i][0], t);
        cr_expect_eq(strstr(t, "by TMA into the store's staging") != NULL, staged[i], "%s:\n%s", kernels[i][0], t);
        cr_expect_eq(code.tma.one_tma, (uint32_t)staged[i], "%s: one_tma", kernels[i][0]);
        free(t);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    ctx = lower_mm(NULL, 0, &m, &code);
    cr_expect(code.tma.persistent == 2 && code.tma.one_tma == 0, "mm's pairs: persistent %u, one_tma %u",
              code.tma.persistent, code.tma.one_tma);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* staged_load decides from what the load's pointer and mask mean, not
 * from their spelling (tests/gpu/epilogue_readback.tile): mm_acc_spelt
 * (the pointer and mask written again under other lets, the offset
 * `rn[None, :] + N * rm[:, None]`, the bounds the other way round, the
 * flag first) and mm_acc_twice (the tile written twice inline, its rows
 * range(BM) + BM * pid(0) under another name) read c by TMA into the
 * staging, with the flag's condition where there is one (before: per-thread
 * loads, the remark silent); the tile one row down (mm_acc_row), another
 * tensor at the same offsets (mm_acc_other) and a let of the load
 * (mm_acc_let: not yet followed) do not, and the remark says why. */
Test(wgmma, staged_read_decided_by_meaning)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/gpu/epilogue_readback.tile");
    static const struct {
        const char *kernel, *fn, *cond, *remark;
    } cases[] = {
        {"mm_acc_spelt", "mm_acc_spelt_v0_tma_1(", "const bool tl_sc = (v_add != 0);",
         "(its one-tile twin: by TMA into the store's staging)"},
        {"mm_acc_twice", "mm_acc_twice_v0_tma_1(", "const bool tl_sc = true;",
         "(its one-tile twin: by TMA into the store's staging)"},
        {"mm_acc_row", "mm_acc_row_v0_tma_1(", NULL,
         "(its one-tile twin: not by TMA into the store's staging: it reads another tile of c than the store writes "
         "(its offsets))"},
        {"mm_acc_other", "mm_acc_other_v0_tma_1(", NULL,
         "(its one-tile twin: not by TMA into the store's staging: it reads d, the store writes c)"},
        {"mm_acc_let", "mm_acc_let_v0_tma_1(", NULL,
         "(its one-tile twin: not by TMA into the store's staging: the stored value does not read it inline element "
         "by element (a let of the load, a broadcast, a transpose))"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_kernel_code code;
        lower_variant(ctx, m, cases[i].kernel, 0, &code);
        char *t = kernel_text(&code, cases[i].fn);
        int staged = cases[i].cond != NULL;
        cr_expect(strstr(t, "issued before the dot loop"), "%s: its tile read before the loop:\n%s", cases[i].kernel, t);
        cr_expect_eq(strstr(t, "by TMA into the store's staging") != NULL, staged, "%s:\n%s", cases[i].kernel, t);
        cr_expect_eq(code.tma.one_tma, (uint32_t)staged, "%s: one_tma %u", cases[i].kernel, code.tma.one_tma);
        if (staged)
            cr_expect(strstr(t, cases[i].cond) && strstr(t, "tl_tma_2d(tl_ring0 + 196608, &tl_tm2,"),
                      "%s: the copy by the store's map, its condition `%s`:\n%s", cases[i].kernel, cases[i].cond, t);
        cr_expect(strstr(code.remarks, cases[i].remark), "%s: the remark says `%s`:\n%s", cases[i].kernel,
                  cases[i].remark, code.remarks);
        free(t);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* A persistent twin whose epilogue reads a tile (dW += G^T h: gemm_dw's
 * load of the dW it adds to) has its consumers issue that load before the
 * dot loop, in the accumulator's layout: the load's latency runs under
 * the loop's, and the epilogue reads its registers as they are, no
 * conversion through shared memory. Before, the load came after the last
 * wgmma, with the tensor cores idle, and went through 32 KiB of shared
 * memory (64 STS.U16 and 64 LDS.U16 a thread). Not where the load could
 * read what the kernel writes first (a store before it), nor where its
 * mask reads the accumulator, nor past the register budget. */
Test(wgmma, epilogue_loads_before_the_loop)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "examples/llm.tile");
    tilec_kernel_code code;
    lower_variant(ctx, m, "gemm_dw", 0, &code);
    /* the consumers' part: after the producer's loop */
    const char *t = twin_text(&code), *c = strstr(t, "tl_setmaxnreg_inc");
    const char *early = c ? strstr(c, "issued before the dot loop") : NULL, *loop = c ? strstr(c, "+= dot: wgmma") : NULL;
    cr_expect(early && loop && early < loop, "gemm_dw's twin loads dW before its loop:\n%s", t);
    cr_expect(!strstr(t, "to shared memory */"), "no conversion of the dW tile through shared memory:\n%s", t);
    cr_expect(strstr(code.remarks, "its consumers load the epilogue's tile of line"), "the remark says so:\n%s",
              code.remarks);
    /* two N tiles a block (the loads take no shared memory: the pair's 4 stages fit), each tile's dW loaded
     * before the loop: the second's at pid(1) + 1 into tl_t0_n1, which its epilogue copies back */
    cr_expect_eq(code.tma.persistent, 2u, "gemm_dw's twin pairs its N tiles: persistent %u\n%s", code.tma.persistent,
                 code.remarks);
    cr_expect(strstr(code.remarks, "two N tiles a block on a persistent grid (pid(1) 2j and 2j + 1: m64n256 wgmma, 4 "
                                   "stages); its consumers load") &&
                  !strstr(code.remarks, "one N tile a block on a persistent grid"),
              "the remark:\n%s", code.remarks);
    const char *second = early ? strstr(early, "the second N tile's early loads") : NULL;
    /* copied as 32-bit words (lower_wg_early_words; test paired_early_loads_not_waited_before_the_loop) */
    const char *out = "((unsigned int *)tl_t0_n1)[tl_j] = ((const unsigned int *)tl_t0)[tl_j];";
    const char *back = "((unsigned int *)tl_t0)[tl_j] = ((const unsigned int *)tl_t0_n1)[tl_j];";
    cr_expect(second && second < loop && strstr(second, out) && strstr(second, out) < loop,
              "the second tile's dW loaded before the loop:\n%s", t);
    cr_expect(loop && strstr(loop, "v_acc[tl_j] = tl_acc1[tl_j];") &&
                  strstr(strstr(loop, "v_acc[tl_j] = tl_acc1[tl_j];"), back),
              "the second epilogue reads the second tile's registers:\n%s", t);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
#define EARLY_D "cast(acc + load(d + rm[:, None] * N + rn[None, :], rm[:, None] < M && rn[None, :] < N, 0.0), f16)"
    static const char *const cases[][6] = {
        /* an f32 tile added back: early (64 + 64 registers a thread); paired, past the budget (128 + 2 x 64):
         * one N tile a block (persistent 1) */
        {"c: *f16,", "c: *f16, d: *f32,", "cast(acc, f16)", EARLY_D, "", ""},
        /* a store before it (the load may read what it wrote): not early */
        {"c: *f16,", "c: *f16, d: *f32,", "    store(c +",
         "    store(c + rm[:, None] * N + rn[None, :], cast(acc, f16), rm[:, None] < M && rn[None, :] < N);\n"
         "    store(c + N + rm[:, None] * N + rn[None, :], " EARLY_D ", rm[:, None] < M && rn[None, :] < N);\n"
         "    store(c +",
         "", ""},
        /* a 128 x 256 accumulator (128 registers a thread) and an f16 tile (64): within the budget (192), early */
        {"c: *f16,", "c: *f16, d: *f16,", "cast(acc, f16)", EARLY_D, "BN = 128", "BN = 256"},
    };
    static const int nearly[] = {1, 0, 1};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *const edits[] = {cases[i][0], cases[i][1], cases[i][2], cases[i][3], cases[i][4], cases[i][5]};
        ctx = lower_mm(edits, cases[i][4][0] ? 3 : 2, &m, &code);
        cr_assert_not_null(code.tma.name, "case %zu: a twin", i);
        t = twin_text(&code);
        cr_expect_eq(code.tma.persistent, 1u, "case %zu: persistent %u", i, code.tma.persistent);
        cr_expect_eq(count_of(t, "issued before the dot loop"), nearly[i], "case %zu:\n%s", i, t);
        cr_expect_eq(strstr(code.remarks, "before the loop") != NULL, nearly[i] > 0, "case %zu:\n%s", i, code.remarks);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
#undef EARLY_D
}

/* A head's product whose epilogue reads its tile back (tests/gpu/
 * epilogue_readback.tile's mm_acc_head: the head in pid(1), its N tiles in
 * pid(2)): the pair runs along pid(2) (persistent 4), and the second
 * tile's early loads are at pid(2) + 1 as its epilogue is, not at the
 * next head's pid(1) + 1. */
Test(wgmma, head_pair_loads_its_second_tile_at_pid2)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/gpu/epilogue_readback.tile");
    tilec_kernel_code code;
    lower_variant(ctx, m, "mm_acc_head", 0, &code);
    cr_expect_eq(code.tma.persistent, 4u, "pairs along z: persistent %u\n%s", code.tma.persistent, code.remarks);
    const char *t = twin_text(&code), *c = strstr(t, "tl_setmaxnreg_inc");
    const char *loop = c ? strstr(c, "+= dot: wgmma") : NULL;
    const char *second = c ? strstr(c, "the second N tile's early loads: pid(2) + 1") : NULL;
    cr_expect(second && loop && second < loop && strstr(second, "const int tl_pidn = tl_pid2 + 1;") < loop &&
                  strstr(second, "if (tl_pidn < tl_grid2) {") < loop,
              "the second tile's c loaded at pid(2) + 1 before the loop:\n%s", t);
    cr_expect(!strstr(t, "tl_pid1 + 1"), "nothing at the next head:\n%s", t);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* A given MN-major (issue 29 item 2: dW = G^T @ X): A stored [K, M] and
 * loaded [BK, BM] then transposed, or its [BM, BK] pointer tile built with
 * the unit stride along M. The twin takes A as B [K, N] is taken: a map of
 * K rows (rows K, columns M, row stride M) in boxes of BK x 64 along M,
 * each consumer warp group its box, the descriptor of an MN-major operand
 * and wgmma's transpose bit for A (imm-trans-a 1); paired or not, with a
 * K-major B too; the variant itself on its cp.async ring for B, the remark
 * saying both. Before this change the pipeline refused the loop (`dot
 * operand A is a transposed load`) and no twin was noted. A tile loaded
 * [BK, BM] along K (K-major) and transposed takes A's plain K-major path. */
Test(wgmma, a_mn_major)
{
#define AT_LOAD "let ta = load(a + rk[:, None] * M + rm[None, :], rk[:, None] < K && rm[None, :] < M, 0.0);"
#define AT_PTR "let ta = load(a + rm[:, None] + rk[None, :] * M, rm[:, None] < M && rk[None, :] < K, 0.0);"
#define AT_KMAJ "let ta = load(a + rk[:, None] + rm[None, :] * K, rk[:, None] < K && rm[None, :] < M, 0.0);"
#define A_LOAD "let ta = load(a + rm[:, None] * K + rk[None, :], rm[:, None] < M && rk[None, :] < K, 0.0);"
#define B_LOAD "let tb = load(b + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0);"
#define BT_LOAD "let tb = load(b + rn[:, None] * K + rk[None, :], rn[:, None] < N && rk[None, :] < K, 0.0);"
    static const struct {
        const char *a, *dot, *hints, *b;
        int amn, pair;
        const char *fn;
    } cases[] = {
        {AT_LOAD, "dot(trans(ta), tb)", NULL, NULL, 1, 1, "tl_wgmma_f16_n256_at_2(v_acc, tl_acc1, "},
        {AT_PTR, "dot(ta, tb)", NULL, NULL, 1, 1, "tl_wgmma_f16_n256_at_2(v_acc, tl_acc1, "},
        {AT_LOAD, "dot(trans(ta), tb)", "BM = 64, BN = 256, BK = 32, warps = 4", NULL, 1, 0, "tl_wgmma_f16_n256_at(v_acc, "},
        {AT_LOAD, "dot(trans(ta), trans(tb))", NULL, BT_LOAD, 1, 1, "tl_wgmma_f16_n256_at_bk_2(v_acc, tl_acc1, "},
        {AT_KMAJ, "dot(trans(ta), tb)", NULL, NULL, 0, 1, "tl_wgmma_f16_n256_2(v_acc, tl_acc1, "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *edit[8] = {A_LOAD, cases[i].a, "dot(ta, tb)", cases[i].dot, "BM = 128, BN = 128, BK = 64, warps = 8",
                               cases[i].hints ? cases[i].hints : "BM = 128, BN = 128, BK = 64, warps = 8", B_LOAD,
                               cases[i].b ? cases[i].b : B_LOAD};
        tilec_module *m;
        tilec_kernel_code code;
        tilec_ctx *ctx = lower_mm(edit, 4, &m, &code);
        const char *c = cases[i].a;
        int bm = cases[i].hints ? 64 : 128, bk = 64; /* BK = 32: stages of 64, boxes of 64 K rows */
        cr_assert_not_null(code.tma.name, "%s %s: a twin\n%s", c, cases[i].dot, code.remarks);
        cr_expect_eq(code.tma.persistent, cases[i].pair ? 2u : 1u, "%s: persistent %u", c, code.tma.persistent);
        cr_expect(strstr(code.source, cases[i].fn), "%s %s: %s", c, cases[i].dot, cases[i].fn);
        const tilec_tma_map *a = &code.tma.maps[0];
        if (cases[i].amn) { /* A: rows K (5), columns M (3), row stride M; boxes of BK x 64 along M */
            expect_map(a, 0, 5, 3, 3, (uint32_t)bk, 0);
            cr_expect(strstr(code.source, "p, 1, 1, 1, "), "%s: A's transpose bit", c);
            cr_expect(strstr(code.source, "tl_wg_desc(tl_a + tl_q * 2048, 8192, 1024, 1)"), "%s: A MN-major", c);
            cr_expect(strstr(code.source, "(tl_warp >> 2) * 8192;"), "%s: a warp group's box of 64 along M", c);
            char *tw = first_twin(code.source);
            cr_expect_eq(count_of(tw, "&tl_tm0, "), bm / 64, "%s: A's boxes a stage", c);
            free(tw);
            cr_expect(strstr(code.remarks, "A MN-major: boxes of 64 x 64 along M, the transpose bit"), "%s:\n%s", c,
                      code.remarks);
            cr_expect(strstr(code.remarks, "dot operand A is MN-major"), "%s:\n%s", c, code.remarks);
        } else { /* A: rows M, columns K: A's own path, no transpose bit */
            expect_map(a, 0, 3, 5, 5, (uint32_t)bm, 0);
            cr_expect(!strstr(code.source, "p, 1, 1, 1, "), "%s: no transpose bit for A", c);
            cr_expect(strstr(code.remarks, "dot operand A is trans of a load contiguous along K"), "%s:\n%s", c,
                      code.remarks);
        }
        cr_expect(strstr(code.remarks, "dot loop: wgmma + TMA (the sm_90a twin"), "%s:\n%s", c, code.remarks);
        cr_expect(strstr(code.remarks, "elsewhere cp.async rings of 3 stages for v_tb"), "%s:\n%s", c, code.remarks);
        cr_expect(strstr(code.source, "-stage cp.async ring"), "%s: the variant's B on its ring", c);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
#undef AT_LOAD
#undef AT_PTR
#undef AT_KMAJ
#undef A_LOAD
#undef B_LOAD
#undef BT_LOAD
}

/* The twin's metadata says how many trips its dot loop makes a tile, from
 * the arguments (tilec_tma_meta.kbound, kfrom, kper: ceil((P - kfrom) /
 * kper)), which the launch weighs in choosing a persistent grid
 * (runtime/tma.c): `0 .. K step BK` is K's parameter (5) over 64; a loop
 * from a constant counts from it; `0 .. cdiv(K, BK)` (a step of 1, the K
 * index k * BK) over 64 too; gemm_dw's (examples/llm.tile) K is parameter
 * 5 of its 7; an end that is not a parameter, or one that may be below it
 * (a minimum), is not known (kper 0); a let of the cdiv is the cdiv. */
Test(wgmma, twin_meta_counts_the_loop_s_trips)
{
    static const struct {
        const char *from[2], *to[2];
        uint32_t kbound, kfrom, kper;
    } cases[] = {
        {{NULL, NULL}, {NULL, NULL}, 5, 0, 64},
        {{"for k in 0 .. K step BK", NULL}, {"for k in 128 .. K step BK", NULL}, 5, 128, 64},
        {{"for k in 0 .. K step BK", "let rk = k + range(BK);"},
         {"for k in 0 .. cdiv(K, BK)", "let rk = k * BK + range(BK);"}, 5, 0, 64},
        {{"for k in 0 .. K step BK", NULL}, {"for k in 0 .. K * 2 step BK", NULL}, TILEC_TMA_NONE, 0, 0},
        /* a bound that may be below K's (lower_wg_trips' minimum): no twin's trips but attention's (a walk
         * balanced by order.c), not known */
        {{"for k in 0 .. K step BK", NULL}, {"for k in 0 .. minimum(K, 4096) step BK", NULL}, TILEC_TMA_NONE, 0, 0},
        /* a name set once to cdiv(K, BK), stepping by one: as the cdiv itself */
        {{"for k in 0 .. K step BK", "let rk = k + range(BK);"},
         {"let nk = cdiv(K, BK);\n    for k in 0 .. nk", "let rk = k * BK + range(BK);"}, 5, 0, 64},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *edits[4];
        int n = 0;
        for (int i = 0; i < 2 && cases[c].from[i]; i++, n++) {
            edits[2 * n] = cases[c].from[i];
            edits[2 * n + 1] = cases[c].to[i];
        }
        tilec_module *m;
        tilec_kernel_code code;
        tilec_ctx *ctx = lower_mm(edits, n, &m, &code);
        cr_assert_not_null(code.tma.name, "case %zu: a twin", c);
        cr_expect(code.tma.kbound == cases[c].kbound && code.tma.kfrom == cases[c].kfrom &&
                      code.tma.kper == cases[c].kper,
                  "case %zu: kbound %u, kfrom %u, kper %u", c, code.tma.kbound, code.tma.kfrom, code.tma.kper);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "examples/llm.tile");
    tilec_kernel_code code;
    lower_variant(ctx, m, "gemm_dw", 0, &code);
    cr_assert_not_null(code.tma.name);
    cr_expect(code.tma.kbound == 5 && code.tma.kfrom == 0 && code.tma.kper == 64, "gemm_dw: %u %u %u",
              code.tma.kbound, code.tma.kfrom, code.tma.kper);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}
