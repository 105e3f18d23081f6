/* test_forms.c: issue 29's corpus of equivalent forms (the .tile files of tests/forms,
 * README there): the same f16 GEMM spelt as different users write it.
 * Each form is lowered on the CPU and checked against the path the table
 * below expects, through the remarks (tilec/lower.h, `remarks`), the
 * generated CUDA and, when cuobjdump is at hand (../shared/tools/sass),
 * the sm_90a SASS: HGMMA and UTMALDG for the wgmma + TMA twin, LDGSTS
 * for a cp.async pipeline. A form that does not reach the reference's
 * path has the remark that says why asserted, so today's gaps are
 * documented here and a change that closes one flips its row. */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <dirent.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_helpers.h"
#include "helpers.h"
#include "sass_helpers.h"
#include "tilec/lower.h"
#include "tilec/program.h"
#include "tilec/tma.h"

typedef struct form {
    const char *file;   /* under tests/forms */
    int twin;           /* the sm_90a twin runs the dot loop on wgmma + TMA */
    int pipelined;      /* the variant itself: 1 a cp.async pipeline, 2 B alone on a cp.async ring (A through registers) */
    const char *path;   /* in the dot loop's remark */
    const char *why;    /* the remark of the path not taken, or NULL */
    int store_tma;      /* the twin's epilogue stores by TMA (map 2, UTMASTG), as the reference's */
    int stage_k;        /* the K of the twin's HGMMA in its SASS: a stage's K depth (the reference's: 64), times the
                         * stages an iteration its loop over them unrolls (a K tile of 128: two of 64) */
} form;

#define BT_PATH                                                                                                        \
    "dot loop: wgmma + TMA (the sm_90a twin, B K-major: trans of its [N, K] load); elsewhere cp.async pipeline + "     \
    "mma.sync (B^T: [N][K] in its ring, plain ldmatrix)"
/* a 128 x 128 tile: two N tiles a block of the persistent twin (lower/wgpair.c), a K tile of 128 too (two stages
 * of 64 an iteration: before, a stage of 128 left 2 stages of 96 KiB paired, "not two") */
#define PAIR ", two N tiles a block on a persistent grid (pid(1) 2j and 2j + 1: m64n256 wgmma, 4 stages)"
#define BT_PAIR_PATH                                                                                                   \
    "dot loop: wgmma + TMA (the sm_90a twin, B K-major: trans of its [N, K] load" PAIR "); elsewhere cp.async "        \
    "pipeline + mma.sync (B^T: [N][K] in its ring, plain ldmatrix)"

/* a head's product (the batch in pid(1), B's N index pid(2) * 128 + ...): its N tiles pair along pid(2) */
#define HEAD_PAIR ", two N tiles a block on a persistent grid (pid(2) 2j and 2j + 1: m64n256 wgmma, 4 stages)"

/* A MN-major (A^T stored [K, M], dW = G^T @ X): wgmma's transpose bit for A, its TMA boxes of K rows along M;
 * elsewhere B alone on a cp.async ring (the mma.sync pipeline reads A as [M][K]) */
#define AT_PATH                                                                                                        \
    "dot loop: wgmma + TMA (the sm_90a twin, A MN-major: boxes of 64 x 64 along M, the transpose bit" PAIR             \
    "); elsewhere cp.async rings of 3 stages for v_tb (dot B operands) + mma.sync"
#define AT_WHY "dot operand A is MN-major (its load's unit stride runs along M"

static const form forms[] = {
    {"ref.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere cp.async pipeline + mma.sync, 3 stages",
     NULL, 1, 64},
    {"ld_params.tile", 1, 1, "dot loop: wgmma + TMA", NULL, 1, 64},
    /* the store's offset and mask let after the loop: matched where the store is */
    {"named_masks.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere", NULL, 1, 64},
    {"no_stages.tile", 1, 1,
     "elsewhere cp.async pipeline + mma.sync, 4 stages (no hint: the deepest of 2..4 that fits)", NULL, 1, 64},
    {"scalar_let.tile", 1, 1, "dot loop: wgmma + TMA", NULL, 1, 64},
    {"other_names.tile", 1, 1, "dot loop: wgmma + TMA", NULL, 1, 64},
    {"no_other.tile", 1, 1, "dot loop: wgmma + TMA", NULL, 1, 64},
    {"ptr_lets.tile", 1, 1, "dot loop: wgmma + TMA", NULL, 1, 64},
    {"inline_loads.tile", 1, 1, "dot loop: wgmma + TMA", NULL, 1, 64},
    /* no hints: the tune pass keeps only candidates on wgmma + TMA (docs/tuning.md) */
    {"tuned.tile", 1, 1, "dot loop: wgmma + TMA", NULL, 1, 64},
    /* a K tile under 64: stages of 64 all the same, several iterations a
     * stage; 128: two stages an iteration (docs/lowering.md, "wgmma and TMA") */
    {"bk16.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin, K tile 16: stages of 64 (four iterations a stage)" PAIR ")",
     NULL, 1, 64},
    {"bk32.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin, K tile 32: stages of 64 (two iterations a stage)" PAIR ")",
     NULL, 1, 64},
    /* the K tile's number as the loop variable: its offset kt * BK, to cdiv(K, BK) */
    {"tiles_bk32.tile", 1, 1,
     "dot loop: wgmma + TMA (the sm_90a twin, K tile 32: stages of 64 (two iterations a stage)" PAIR ")", NULL, 1, 64},
    {"bk128.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin, K tile 128: stages of 64 (two stages an iteration)" PAIR ")",
     NULL, 1, 128},
    /* `warps` other than BM / 16: the twin arranges its consumer warp groups */
    {"warps4.tile", 1, 1,
     "dot loop: wgmma + TMA (the sm_90a twin, 8 consumer warps (two m64 warp groups for BM = 128) "
     "where the `warps` hint says 4" PAIR ")",
     NULL, 1, 64},
    /* 8 warps for a 64-row tile: two M tiles a block, one a consumer warp group (lower/wgpair.c) */
    {"warps8_bm64.tile", 1, 1,
     "dot loop: wgmma + TMA (the sm_90a twin, two M tiles a block on a persistent grid (pid(0) 2i and 2i + 1, one a "
     "consumer warp group: the `warps` hint's 8 warps; m64n256 wgmma, 4 stages))",
     NULL, 1, 64},
    {"user_mix.tile", 1, 1,
     "wgmma + TMA (the sm_90a twin, K tile 32: stages of 64 (two iterations a stage), "
     "8 consumer warps (two m64 warp groups for BM = 128) where the `warps` hint says 4" PAIR "); "
     "elsewhere cp.async pipeline + mma.sync, 4 stages (no hint",
     NULL, 1, 64},
    /* x @ W.T, B stored [N, K]: wgmma's K-major B (TMA boxes of N rows, no
     * transpose bit); elsewhere B^T [N][K] in the ring, read by plain ldmatrix */
    {"bt.tile", 1, 1, BT_PAIR_PATH ", 3 stages", NULL, 1, 64},
    {"bt_let_trans.tile", 1, 1, BT_PAIR_PATH, NULL, 1, 64},
    {"bt_ptr_lets.tile", 1, 1, BT_PAIR_PATH, NULL, 1, 64},
    {"bt_inline.tile", 1, 1, BT_PAIR_PATH, NULL, 1, 64},
    {"bt_linear.tile", 1, 1, BT_PATH ", 4 stages (no hint", NULL, 1, 64},
    /* K-major B with a K tile other than 64: its boxes cut along K as A's */
    {"bt_bk32.tile", 1, 1,
     "dot loop: wgmma + TMA (the sm_90a twin, B K-major: trans of its [N, K] load, K tile 32: stages of 64 (two "
     "iterations a stage)" PAIR ")",
     NULL, 1, 64},
    {"bt_bk128.tile", 1, 1,
     "dot loop: wgmma + TMA (the sm_90a twin, B K-major: trans of its [N, K] load, K tile 128: stages of 64 (two "
     "stages an iteration)" PAIR ")",
     NULL, 1, 128},
    {"at.tile", 1, 2, AT_PATH, AT_WHY, 1, 64},
    {"at_bf16.tile", 1, 2, AT_PATH, AT_WHY, 1, 64},
    {"at_ptr.tile", 1, 2, AT_PATH, AT_WHY, 1, 64},
    /* A's tile loaded [BK, BM] along K and transposed: K-major, A's own boxes */
    {"at_kmajor.tile", 1, 2,
     "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere cp.async rings of 3 stages for v_tb (dot B operands)",
     "dot operand A is trans of a load contiguous along K", 1, 64},
    /* spellings the analysis reads (lower_ptr_affine, lower_mask_bounds; issue 29): strides and bounds named by
     * scalar lets, products before broadcasts and turned round, 2-D index lets, 64-bit indices, batch offsets
     * inline, in pointer lets or through named strides */
    {"stride_lets.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere", NULL, 1, 64},
    {"bcast_after.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere", NULL, 1, 64},
    {"rows_cols.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere", NULL, 1, 64},
    {"i64_bounds.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere", NULL, 1, 64},
    {"bt_strides.tile", 1, 1, BT_PAIR_PATH, NULL, 1, 64},
    {"batch_ptr_let.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere", NULL, 1, 64},
    {"batch_stride_let.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere", NULL, 1, 64},
    {"batch_bt.tile", 1, 1, BT_PAIR_PATH, NULL, 1, 64},
    /* scalars the pointer adds to a coordinate (lower_ptraff.add): the K offset added to a pointer let of
     * range(BK)[None, :], the first row and column folded into scalar pointer lets before the loop */
    {"bt_ptr_base.tile", 1, 1, BT_PAIR_PATH, NULL, 1, 64},
    {"scalar_bases.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere", NULL, 1, 64},
    /* pointer tiles stepped in the loop by a loop-invariant scalar (pa = pa + BK): their value before the loop
     * plus the steps taken (lower/ivstep.c), over K offsets or K tile numbers */
    {"ptr_step.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere cp.async pipeline + mma.sync, 3 stages",
     NULL, 1, 64},
    /* the first row inline as pid(0) * BM * K: a coordinate with a constant factor times the row stride */
    {"base_inline.tile", 1, 1,
     "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere cp.async pipeline + mma.sync, 3 stages", NULL, 1, 64},
    {"ptr_step_tiles.tile", 1, 1,
     "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere cp.async pipeline + mma.sync, 3 stages", NULL, 1, 64},
    /* a batch or head index in pid(1) (the mask bounds no pid(1) term: the batch, not a coordinate), N tiles in
     * pid(2): two N tiles a block along pid(2), the axis B's N index reads */
    {"head_pid1.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" HEAD_PAIR "); elsewhere", NULL, 1, 64},
    {"head_lets.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" HEAD_PAIR "); elsewhere", NULL, 1, 64},
    /* a batch stride of literal sizes, a let of them, a module constant */
    {"batch_const.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere", NULL, 1, 64},
    /* two scalars on the rows' axis: their sum one coordinate, compared with the store's by linear form */
    {"two_rows.tile", 1, 1, "dot loop: wgmma + TMA (the sm_90a twin" PAIR "); elsewhere", NULL, 1, 64},
};
enum { NFORMS = sizeof forms / sizeof forms[0] };

static void lower_form(tilec_ctx *ctx, tilec_module **m, const form *f, tilec_kernel_code *code)
{
    char path[256];
    snprintf(path, sizeof path, "tests/forms/%s", f->file);
    *m = parse(ctx, path);
    const tilec_kernel *k = tilec_module_find_kernel(*m, "gemm");
    cr_assert_not_null(k, "%s: no kernel gemm", f->file);
    cr_assert_eq(tilec_lower_kernel(ctx, *m, k, 0, code), TILEC_OK, "%s does not lower", f->file);
}

/* Every file of tests/forms is in the table, and at least 10 forms. */
Test(forms, corpus_is_complete)
{
    char *ls;
    cr_assert_eq(sh(&ls, "ls tests/forms | grep -c '\\.tile$'"), 0);
    cr_expect_eq(atoi(ls), NFORMS, "tests/forms has %d forms, the table %d", atoi(ls), NFORMS);
    free(ls);
    cr_expect_geq(NFORMS, 10);
}

Test(forms, paths_and_remarks, .timeout = 120)
{
    for (int i = 0; i < NFORMS; i++) {
        const form *f = &forms[i];
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m;
        tilec_kernel_code code;
        lower_form(ctx, &m, f, &code);
        cr_assert_not_null(code.remarks);
        cr_expect(strstr(code.remarks, f->path), "%s: the remark names the path '%s':\n%s", f->file, f->path,
                  code.remarks);
        if (f->why)
            cr_expect(strstr(code.remarks, f->why), "%s: the remark says why: '%s':\n%s", f->file, f->why,
                      code.remarks);
        else
            cr_expect(!strstr(code.remarks, " not on "), "%s: nothing missed:\n%s", f->file, code.remarks);
        /* --emit layouts closes with the same remarks */
        cr_expect(strstr(code.layouts, "  remark: line "), "%s:\n%s", f->file, code.layouts);
        cr_expect_eq(code.tma.name != NULL, f->twin, "%s: twin %d", f->file, f->twin);
        cr_expect_eq(code.tma.nmaps == 3, f->store_tma, "%s: the epilogue's store by TMA %d", f->file, f->store_tma);
        /* ... and the twin's epilogue issues it (the plan's coordinates are the emission's) */
        cr_expect_eq(strstr(code.source, "tl_tma_store_2d(&") != NULL || strstr(code.source, "tl_tma_store_3d(&") != NULL,
                     f->store_tma, "%s: the twin stores by TMA %d", f->file, f->store_tma);
        cr_expect_eq(strstr(code.source, "-stage cp.async pipeline */") != NULL, f->pipelined == 1, "%s: pipelined %d",
                     f->file, f->pipelined);
        cr_expect_eq(strstr(code.source, "-stage cp.async ring: ") != NULL, f->pipelined == 2, "%s: a ring %d",
                     f->file, f->pipelined);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* The tensor maps of form file's twin. */
static void twin_maps(const char *file, tilec_tma_meta *out)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m;
    tilec_kernel_code code;
    form f = {.file = file};
    lower_form(ctx, &m, &f, &code);
    cr_assert_not_null(code.tma.name, "%s: a twin", file);
    *out = code.tma;
    out->name = NULL;
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The maps the analysis builds from a spelling are its reference's: the
 * same parameters for base, rows, columns and row stride (a stride or a
 * bound named by a scalar let is the parameter it names), the same boxes;
 * a batch offset however spelt is pid(2) times the same parameters. */
Test(forms, maps_as_reference, .timeout = 120)
{
    static const char *const same[][2] = {
        {"stride_lets.tile", "ref.tile"},          {"bcast_after.tile", "ref.tile"},
        {"rows_cols.tile", "ref.tile"},            {"i64_bounds.tile", "ref.tile"},
        {"ptr_lets.tile", "ref.tile"},             {"named_masks.tile", "ref.tile"},
        {"bt_strides.tile", "bt.tile"},            {"bt_ptr_lets.tile", "bt.tile"},
        {"batch_stride_let.tile", "batch_ptr_let.tile"}, {"bt_ptr_base.tile", "bt.tile"},
        {"scalar_bases.tile", "ref.tile"},       {"ptr_step.tile", "ref.tile"},
        {"ptr_step_tiles.tile", "ref.tile"},      {"base_inline.tile", "ref.tile"},
        {"two_rows.tile", "ref.tile"},            {"head_lets.tile", "head_pid1.tile"},
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        tilec_tma_meta a, b;
        twin_maps(same[i][0], &a);
        twin_maps(same[i][1], &b);
        cr_expect_eq(a.nmaps, b.nmaps, "%s: %u maps, %s %u", same[i][0], a.nmaps, same[i][1], b.nmaps);
        cr_expect(!memcmp(a.maps, b.maps, sizeof a.maps), "%s: its maps are %s's", same[i][0], same[i][1]);
    }
    /* gemm(a, b, c, M, N, K, batch): A [M, K] at a + z * M * K, B [K, N], C [M, N] */
    static const struct {
        const char *file;
        uint32_t ptr, rows, cols, stride;
    } want[] = {{"batch_ptr_let.tile", 0, 3, 5, 5}, {"batch_ptr_let.tile", 1, 5, 4, 4},
                {"batch_ptr_let.tile", 2, 3, 4, 4}, {"batch_bt.tile", 0, 3, 5, 5},
                {"batch_bt.tile", 1, 4, 5, 5},      {"batch_bt.tile", 2, 3, 4, 4}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tilec_tma_meta a;
        twin_maps(want[i].file, &a);
        const tilec_tma_map *mp = &a.maps[want[i].ptr];
        cr_expect_eq(a.nmaps, 3, "%s", want[i].file);
        cr_expect(mp->ptr == want[i].ptr && mp->rows == want[i].rows && mp->cols == want[i].cols &&
                      mp->stride == want[i].stride,
                  "%s map %u: ptr %u rows %u cols %u stride %u", want[i].file, want[i].ptr, mp->ptr, mp->rows,
                  mp->cols, mp->stride);
        /* the batch stride: the parameters of the matrix's two extents, in either order */
        cr_expect(mp->batched && ((mp->bs[0] == want[i].rows && mp->bs[1] == want[i].cols) ||
                                  (mp->bs[0] == want[i].cols && mp->bs[1] == want[i].rows)),
                  "%s map %u: batched by pid(2) * %u * %u", want[i].file, want[i].ptr, mp->bs[0], mp->bs[1]);
        cr_expect(mp->bgrid == 2 && mp->bscale == 1, "%s map %u: pid(2) * 1 * ..., not %u * %u", want[i].file,
                  want[i].ptr, mp->bgrid, mp->bscale);
    }
    /* the head in pid(1): the same matrices, the batch index the grid's y; a constant stride: no parameter */
    tilec_tma_meta h, bp, bc;
    twin_maps("head_pid1.tile", &h);
    twin_maps("batch_ptr_let.tile", &bp);
    twin_maps("batch_const.tile", &bc);
    cr_expect_eq(h.nmaps, 3);
    cr_expect_eq(bc.nmaps, 3);
    for (uint32_t i = 0; i < 3; i++) {
        const tilec_tma_map *x = &h.maps[i], *r = &bp.maps[i], *c = &bc.maps[i];
        cr_expect(x->batched && x->bgrid == 1 && x->bscale == 1 && x->ptr == r->ptr && x->rows == r->rows &&
                      x->cols == r->cols && x->stride == r->stride && x->bs[0] == r->bs[0] && x->bs[1] == r->bs[1],
                  "head_pid1.tile map %u: batched %u by pid(%u) * %u * %u * %u", i, x->batched, x->bgrid, x->bscale,
                  x->bs[0], x->bs[1]);
        cr_expect(c->batched && c->bgrid == 2 && c->bscale == 4096u * 4096u && c->bs[0] == TILEC_TMA_NONE &&
                      c->bs[1] == TILEC_TMA_NONE && c->ptr == r->ptr && c->stride == r->stride,
                  "batch_const.tile map %u: batched %u by pid(%u) * %u * %u * %u", i, c->batched, c->bgrid, c->bscale,
                  c->bs[0], c->bs[1]);
    }
}

/* The persistent twin's walk over the tiles: the batch index slowest and
 * the M tiles grouped with the N tiles' axis, so resident blocks share A's
 * row panels; with the batch in pid(1), axes 1 and 2 trade places (a
 * bijection of the grid all the same): a head's product walks pairs of N
 * tiles along pid(2) as the pid(2)-batched one walks them along pid(1), its
 * metadata persistent 4 (pairs along z) where that one's is 2 (along y),
 * the second tile of a pair pid(2) + 1; the one-tile twin beside it walks
 * single tiles in the same order. */
Test(forms, batch_axis_slowest, .timeout = 120)
{
    static const struct {
        const char *file, *want[5];
        uint32_t persistent;
    } cases[] = {
        {"head_pid1.tile",
         {"const int tl_g1 = (tl_grid2 + 1) / 2;\n", "tl_pid1 = tl_u / tl_n01", "tl_pid2 = (tl_r / tl_gs) * 2;",
          "const int tl_pidn = tl_pid2 + 1;\n        if (tl_pidn < tl_grid2) {", "const int tl_g1 = tl_grid2;\n"},
         4},
        {"head_lets.tile",
         {"const int tl_g1 = (tl_grid2 + 1) / 2;\n", "tl_pid1 = tl_u / tl_n01", "tl_pid2 = (tl_r / tl_gs) * 2;",
          "const int tl_pidn = tl_pid2 + 1;\n        if (tl_pidn < tl_grid2) {", "const int tl_g1 = tl_grid2;\n"},
         4},
        {"batch_ptr_let.tile",
         {"const int tl_g1 = (tl_grid1 + 1) / 2;\n", "tl_pid2 = tl_u / tl_n01", "tl_pid1 = (tl_r / tl_gs) * 2;",
          "const int tl_pidn = tl_pid1 + 1;\n        if (tl_pidn < tl_grid1) {", "const int tl_g1 = tl_grid1;\n"},
         2},
        {"ref.tile",
         {"const int tl_g1 = (tl_grid1 + 1) / 2;\n", "tl_pid2 = tl_u / tl_n01", "tl_pid1 = (tl_r / tl_gs) * 2;",
          "const int tl_pidn = tl_pid1 + 1;\n        if (tl_pidn < tl_grid1) {", "const int tl_g1 = tl_grid1;\n"},
         2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m;
        tilec_kernel_code code;
        form f = {.file = cases[i].file};
        lower_form(ctx, &m, &f, &code);
        for (int j = 0; j < 5; j++)
            cr_expect(strstr(code.source, cases[i].want[j]), "%s: the walk has '%s'", cases[i].file, cases[i].want[j]);
        cr_expect_eq(code.tma.persistent, cases[i].persistent, "%s: persistent %u", cases[i].file, code.tma.persistent);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

static char *replace(const char *src, const char *from, const char *to);

/* Batch offsets the maps cannot hold: the twin goes, and the dot loop's
 * remark names why; a pid(1) term the mask bounds stays a coordinate. */
Test(forms, batch_offsets_refused, .timeout = 120)
{
    static const struct {
        const char *file, *from, *to, *why;
    } cases[] = {
        /* a batch and a head: two batch dimensions */
        {"head_pid1.tile", "a + pid(1) * M * K +", "a + pid(2) * M * K + pid(1) * M * K +",
         "the pointer has two batch offsets (pid(1) and pid(2), or one twice): a tensor map here has one batch "
         "dimension"},
        {"head_pid1.tile", "b + pid(1) * K * N +", "b + pid(1) * K * N * batch +",
         "the batch stride is a product of more than two integer parameters"},
        {"batch_const.tile", "pid(2) * 4096 * 4096", "pid(2) * 65536 * 65536",
         "the batch stride's constant factor is not from 1 to 2^31 - 1"},
        {"head_pid1.tile", "a + pid(1) * M * K +", "a + pid(1) * pid(1) * M * K +",
         "the pointer has two batch offsets"},
        {"batch_const.tile", "pid(2) * 4096 * 4096", "pid(2)", "the batch stride is 1 element"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "tests/forms/%s", cases[i].file);
        char *base = read_file(path, NULL);
        cr_assert_not_null(base);
        char *src = replace(base, cases[i].from, cases[i].to);
        cr_assert(strcmp(src, base), "%s: '%s' replaced", cases[i].file, cases[i].from);
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_kernel_code code;
        cr_assert_eq(tilec_parse_string(ctx, "g.tile", src, strlen(src), &m), TILEC_OK, "%s", src);
        cr_assert_eq(tilec_lower_kernel(ctx, m, tilec_module_find_kernel(m, "gemm"), 0, &code), TILEC_OK);
        cr_expect(strstr(code.remarks, cases[i].why), "%s -> %s: the remark says '%s':\n%s", cases[i].from,
                  cases[i].to, cases[i].why, code.remarks);
        cr_expect(!code.tma.name || !code.tma.nmaps, "%s: no twin on tensor maps", cases[i].to);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
        free(src);
        free(base);
    }
}

/* The HGMMA instructions of the twin gemm_v0_tma in SASS s. */
static int twin_hgmma(const char *s)
{
    const char *t = strstr(s, "Function : gemm_v0_tma\n"); /* not its one-tile twin gemm_v0_tma_1 */
    if (!t)
        return 0;
    const char *end = strstr(t + 1, "Function : ");
    int n = 0;
    for (const char *p = strstr(t, "HGMMA"); p && (!end || p < end); p = strstr(p + 5, "HGMMA"))
        n++;
    return n;
}

/* The instructions each form compiles to for sm_90a; a twin's HGMMA as
 * many a stage as the reference's (a K tile of 16 or 32 is stages of 64:
 * four k16 steps, not one or two); a K tile of 128 two stages of 64 an
 * iteration, each the reference's four, unrolled. */
Test(forms, sass, .timeout = 300)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    char *rs = disassemble_file(tool, "-sass", "tests/forms/ref.tile", "gemm", 0, "sm_90a");
    int ref_hgmma = twin_hgmma(rs);
    free(rs);
    cr_assert_gt(ref_hgmma, 0, "ref.tile's twin has HGMMA");
    for (int i = 0; i < NFORMS; i++) {
        const form *f = &forms[i];
        char path[256];
        snprintf(path, sizeof path, "tests/forms/%s", f->file);
        char *s = disassemble_file(tool, "-sass", path, "gemm", 0, "sm_90a");
        cr_expect_eq(strstr(s, "HGMMA") != NULL, f->twin, "%s: HGMMA", f->file);
        if (f->twin)
            cr_expect_eq(twin_hgmma(s), ref_hgmma * f->stage_k / 64,
                         "%s: %d HGMMA in the twin, the reference %d", f->file, twin_hgmma(s), ref_hgmma);
        cr_expect_eq(strstr(s, "UTMALDG") != NULL, f->twin, "%s: UTMALDG", f->file);
        cr_expect_eq(strstr(s, "UTMASTG") != NULL, f->store_tma, "%s: UTMASTG (the epilogue by TMA)", f->file);
        cr_expect_eq(strstr(s, "LDGSTS") != NULL, f->pipelined != 0, "%s: LDGSTS (cp.async)", f->file);
        cr_expect(strstr(s, "HMMA"), "%s: the variant on mma.sync", f->file);
        free(s);
    }
}

/* src with every `from` replaced by `to` (one level: the forms' text). */
static char *replace(const char *src, const char *from, const char *to)
{
    size_t nf = strlen(from), nt = strlen(to), n = strlen(src) + 1;
    for (const char *p = strstr(src, from); p; p = strstr(p + nf, from))
        n += nt;
    char *out = malloc(n), *o = out;
    cr_assert_not_null(out);
    for (const char *p = src, *q; (q = strstr(p, from)) != NULL; p = q + nf) {
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        memcpy(o, to, nt);
        o += nt;
        src = q + nf;
    }
    strcpy(o, src);
    return out;
}

/* Compile src (named name) for sm_90a, its remarks going where TILEC_LOGS says. */
static void compile_src(const char *name, const char *src)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, name, src, strlen(src), &m), TILEC_OK);
    tilec_kernel_code code;
    void *cubin = NULL;
    size_t size = 0;
    tilec_status st = tilec_compile_kernel(ctx, m, tilec_module_find_kernel(m, "gemm"), 0, "sm_90a", &code, &cubin, &size);
    if (st == TILEC_OK)
        tilec_kernel_code_free(&code);
    free(cubin);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* TILEC_LOGS=remarks: each remark on stderr at its .tile line, the path
 * taken and the twin's choices (bk32) and a reason (a 256-row tile: four
 * m64 warp groups would need more registers than a multiprocessor has). */
Test(forms, remarks_on_stderr, .init = cr_redirect_stderr, .timeout = 120)
{
    setenv("TILEC_LOGS", "remarks", 1);
    char *src = read_file("tests/forms/bk32.tile", NULL);
    cr_assert_not_null(src);
    char *bm256 = replace(src, "BM = 128, BN = 128,", "BM = 256, BN = 64,");
    compile_src("tests/forms/bk32.tile", src);
    compile_src("bm256.tile", bm256);
    free(bm256);
    free(src);
    fflush(stderr);
    static char buf[32768] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, cr_get_redirected_stderr());
    buf[n] = 0;
    cr_expect(strstr(buf,
                     "tests/forms/bk32.tile:10: remark: gemm_v0: dot loop: wgmma + TMA (the sm_90a twin, K tile 32: "
                     "stages of 64 (two iterations a stage)" PAIR "); elsewhere cp.async pipeline + mma.sync, 3 stages"),
              "%s", buf);
    cr_expect(strstr(buf,
                     "bm256.tile:14: remark: gemm_v0: dot loop at line 10 not on wgmma + TMA: M tile 256 is not 64 "
                     "or 128 (one or two m64 warp groups)"),
              "%s", buf);
    cr_expect(strstr(buf, "bm256.tile:10: remark: gemm_v0: dot loop: cp.async pipeline + mma.sync"), "%s", buf);
}

/* Without the channel: nothing on stderr. */
Test(forms, remarks_off_by_default, .init = cr_redirect_stderr)
{
    unsetenv("TILEC_LOGS");
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/forms/bk32.tile");
    tilec_kernel_code code;
    void *cubin = NULL;
    size_t size = 0;
    if (tilec_compile_kernel(ctx, m, tilec_module_find_kernel(m, "gemm"), 0, "sm_90a", &code, &cubin, &size) == TILEC_OK)
        tilec_kernel_code_free(&code);
    free(cubin);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    fflush(stderr);
    cr_expect_stderr_eq_str("");
}

/* no_stages.tile with tile hints `hints` and a transposed store, which
 * converts the f32 accumulator through shared memory after the loop:
 * variant 0 lowered. */
static void lower_transposed(tilec_ctx *ctx, tilec_module **m, const char *hints, tilec_kernel_code *code)
{
    char *base = read_file("tests/forms/no_stages.tile", NULL);
    cr_assert_not_null(base);
    char *tiles = replace(base, "BM = 128, BN = 128, BK = 64, warps = 8", hints);
    char *src = replace(tiles, "store(c + rm[:, None] * N + rn[None, :], cast(acc, f16), rm[:, None] < M && rn[None, :] < N)",
                        "store(c + rn[:, None] * M + rm[None, :], cast(trans(acc), f16), rn[:, None] < N && rm[None, :] < M)");
    cr_assert(strcmp(base, tiles) && strcmp(src, tiles), "the form's hints and store are replaced");
    cr_assert_eq(tilec_parse_string(ctx, "g.tile", src, strlen(src), m), TILEC_OK);
    cr_assert_eq(tilec_lower_kernel(ctx, *m, tilec_module_find_kernel(*m, "gemm"), 0, code), TILEC_OK,
                 "%s lowers with fewer stages: %s", hints, tilec_ctx_diag(ctx, 0) ? tilec_ctx_diag(ctx, 0)->message : "");
    cr_expect_leq(code->smem_bytes, 227 * 1024);
    free(src);
    free(tiles);
    free(base);
}

/* No `stages` hint: when what follows the loop overflows shared memory
 * beside the deepest ring that fit before it, the lowering lowers again
 * with fewer stages (lower.c) instead of failing, down to none, and the
 * remark says why. */
Test(forms, stages_fit_shared_memory)
{
    static const struct {
        const char *hints, *remark;
    } cases[] = {
        /* 4 stages of 42 KiB fit before the loop, not with the 64 KiB store */
        {"BM = 64, BN = 256, BK = 64, warps = 4", "cp.async pipeline + mma.sync, 3 stages (no hint"},
        /* 2 stages of 51 KiB do not fit beside the 128 KiB store */
        {"BM = 128, BN = 256, BK = 64, warps = 8",
         "line 10: dot loop at line 10 not on a cp.async pipeline: no two stages of its ring (52224 bytes a stage) fit "
         "in shared memory with what the rest of the kernel takes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_kernel_code code;
        lower_transposed(ctx, &m, cases[i].hints, &code);
        cr_expect(strstr(code.remarks, cases[i].remark), "%s:\n%s", cases[i].hints, code.remarks);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* file with each edits[2i] replaced by edits[2i + 1] (n pairs; a pair
 * that is not the same text must change it), kernel's variant 0 lowered. */
static void lower_edited(tilec_ctx *ctx, tilec_module **m, const char *file, const char *kernel, const char *const *edits,
                         int n, tilec_kernel_code *code)
{
    char *src = read_file(file, NULL);
    cr_assert_not_null(src);
    for (int i = 0; i < n; i++) {
        char *next = replace(src, edits[2 * i], edits[2 * i + 1]);
        cr_assert(strcmp(src, next) || !strcmp(edits[2 * i], edits[2 * i + 1]), "%s: '%s' replaced", file, edits[2 * i]);
        free(src);
        src = next;
    }
    cr_assert_eq(tilec_parse_string(ctx, "g.tile", src, strlen(src), m), TILEC_OK, "%s",
                 tilec_ctx_diag(ctx, 0) ? tilec_ctx_diag(ctx, 0)->message : "");
    cr_assert_eq(tilec_lower_kernel(ctx, *m, tilec_module_find_kernel(*m, kernel), 0, code), TILEC_OK);
    free(src);
}

/* file with `from` replaced by `to` (once or more), lowered into a new
 * context (*ctx, *m, *code; edited_free frees them). */
static void lower_edit1(tilec_ctx **ctx, tilec_module **m, const char *file, const char *from, const char *to,
                        tilec_kernel_code *code)
{
    const char *edit[2] = {from, to};
    *ctx = tilec_ctx_new();
    *m = NULL;
    lower_edited(*ctx, m, file, "gemm", edit, 1, code);
}

static void edited_free(tilec_ctx *ctx, tilec_module *m, tilec_kernel_code *code)
{
    tilec_kernel_code_free(code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* What the transposes mean, not how many are written: B = trans(trans(x))
 * of a [K, N] load is the reference's MN-major B; the twin of x @ W.T
 * multiplies a K-major B (no transpose bit) copied in one TMA box a stage,
 * the reference an MN-major one (the bit, N / 64 boxes). */
Test(forms, transposes_by_meaning)
{
    static const struct {
        const char *file, *from, *to;
        int bk; /* the twin's B K-major */
    } cases[] = {
        {"tests/forms/ref.tile", "dot(ta, tb)", "dot(ta, trans(trans(tb)))", 0},
        {"tests/forms/bt.tile", "dot(ta, trans(tb))", "dot(ta, trans(trans(trans(tb))))", 1},
        {"tests/forms/bt.tile", "dot(ta, trans(tb))", "dot(ta, trans(tb))", 1},
        {"tests/forms/ref.tile", "dot(ta, tb)", "dot(ta, tb)", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_kernel_code code;
        const char *edit[2] = {cases[i].from, cases[i].to};
        lower_edited(ctx, &m, cases[i].file, "gemm", edit, 1, &code);
        cr_expect(code.tma.name, "%s: a twin:\n%s", cases[i].to, code.remarks);
        cr_expect_eq(strstr(code.remarks, "B K-major") != NULL, cases[i].bk, "%s:\n%s", cases[i].to, code.remarks);
        /* two N tiles a block (lower/wgpair.c): m64n256 */
        cr_expect_eq(strstr(code.source, "tl_wgmma_f16_n256_bk_2(") != NULL, cases[i].bk, "%s", cases[i].to);
        cr_expect_eq(strstr(code.source, "p, 1, 1, 0, 0; }") != NULL, cases[i].bk, "%s: the transpose bit", cases[i].to);
        cr_expect_eq(strstr(code.source, "p, 1, 1, 0, 1; }") != NULL, !cases[i].bk, "%s: the transpose bit", cases[i].to);
        /* B's copies a stage: one box of N = 128 rows, or two of 64 columns */
        cr_expect_eq(strstr(code.source, "&tl_tm1, ((tl_pid1 * v_BN) + 0) + 64, (v_k + 0)") != NULL, !cases[i].bk, "%s",
                     cases[i].to);
        cr_expect_eq(strstr(code.source, "&tl_tm1, (v_k + 0), ((tl_pid1 * v_BN) + 0), tl_full") != NULL, cases[i].bk,
                     "%s", cases[i].to);
        /* paired, a K-major B is still copied in boxes of N rows (one per tile): the one-tile twin's map */
        cr_expect_eq(code.tma.maps[1].box_rows, cases[i].bk ? 128u : 64u, "%s", cases[i].to);
        /* the variant: B^T [N][K] in its ring, read by plain ldmatrix */
        cr_expect_eq(strstr(code.source, "tl_ldsm_x4_nt(tl_fb") != NULL, cases[i].bk, "%s", cases[i].to);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* A transposed A operand (x.T @ W.T, A stored [K, M]) is not read
 * transposed from a ring by the mma.sync pipeline: the variant's loop is
 * not a pipelined dot loop (B alone rings, ring.c) and the remark says
 * why, at the dot's line; the sm_90a twin takes it (A MN-major, B
 * K-major: both transpose bits the other way round from x @ W). Before
 * issue 29 item 2's A side it had no twin. */
Test(forms, transposed_a_says_why)
{
    static const char *const edits[] = {
        "load(a + rm[:, None] * K + rk[None, :], rm[:, None] < M && rk[None, :] < K, 0.0)",
        "load(a + rk[:, None] * M + rm[None, :], rk[:, None] < K && rm[None, :] < M, 0.0)",
        "dot(ta, trans(tb))",
        "dot(trans(ta), trans(tb))",
    };
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_kernel_code code;
    lower_edited(ctx, &m, "tests/forms/bt.tile", "gemm", edits, 2, &code);
    cr_expect(strstr(code.remarks, "line 10: dot loop: wgmma + TMA (the sm_90a twin, B K-major: trans of its [N, K] "
                                   "load, A MN-major: boxes of 64 x 64 along M, the transpose bit"),
              "%s", code.remarks);
    cr_expect(strstr(code.remarks, "elsewhere cp.async rings of 3 stages for v_tb (dot B operands) + mma.sync"), "%s",
              code.remarks);
    cr_expect(strstr(code.remarks, "line 14: dot loop at line 10 not on a pipelined dot loop (both operands by cp.async; "
                                   "wgmma + TMA on sm_90a): dot operand A is MN-major"),
              "%s", code.remarks);
    cr_expect_not_null(code.tma.name);
    cr_expect(strstr(code.source, "tl_wgmma_f16_n256_at_bk_2("), "A's transpose bit, B K-major");
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Attention's first product as users write it, dot(q, trans(k)) of a
 * [BN, D] load, the transpose inline or let first: K's tile is copied
 * into a cp.async ring like V's (ring.c), read as B^T by plain ldmatrix,
 * not staged through registers. */
Test(forms, attention_trans_k_rings)
{
    static const char *const dots[][2] = {
        {"let s = dot(tq, tk)", "let s = dot(tq, trans(tk))"},
        {"let s = dot(tq, tk)", "let kt = trans(tk);\n        let s = dot(tq, kt)"},
    };
    for (size_t i = 0; i < sizeof dots / sizeof dots[0]; i++) {
        const char *const edits[] = {
            "load(k + base + rn[None, :] * D + rd[:, None], rn[None, :] < S, 0.0)",
            "load(k + base + rn[:, None] * D + rd[None, :], rn[:, None] < S, 0.0)",
            dots[i][0],
            dots[i][1],
        };
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_kernel_code code;
        lower_edited(ctx, &m, "examples/attention.tile", "attention_d64", edits, 2, &code);
        cr_expect(strstr(code.layouts, "v_tk copied by cp.async into a 2-stage ring (9216 bytes a stage)\n"), "%s",
                  code.layouts);
        cr_expect(strstr(code.layouts, i ? "dot operand v_kt read from its cp.async ring (B^T, plain ldmatrix)"
                                         : "dot operand v_tk read from its cp.async ring (B^T, plain ldmatrix)"),
                  "%s", code.layouts);
        cr_expect(strstr(code.layouts, "1 __syncthreads per iteration (cp.async ring)"), "%s", code.layouts);
        cr_expect(strstr(code.remarks, "cp.async rings of 2 stages for v_tk, v_tv"), "%s", code.remarks);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* the .tile files in folder */
static size_t tiles_in(const char *folder)
{
    size_t files = 0;
    DIR *dir = opendir(folder);
    cr_assert_not_null(dir, "%s", folder);
    for (struct dirent *e; (e = readdir(dir));)
        files += strlen(e->d_name) > 5 && !strcmp(e->d_name + strlen(e->d_name) - 5, ".tile");
    closedir(dir);
    return files;
}

/* Attention as users wrote it from the docs alone (tests/attn_forms: no
 * stages hint, exp or exp2, K as [BN, D] under trans() or loaded [D, BN],
 * the mask as where() or an added bias, a trip count of blocks, many
 * lets, 4 or 8 warps): every variant of every file takes the sm_90a twin
 * (wgmma, TMA rings). Every file of the folder is in the list. */
Test(forms, attention_from_the_docs_takes_the_twin)
{
    static const struct {
        const char *file, *kernel;
    } docs_forms[] = {
        {"tests/attn_forms/fa_d128.tile", "fa_d128"},
        {"tests/attn_forms/fa_d64_exp2.tile", "fa_d64_exp2"},
        {"tests/attn_forms/fa_d64_lets.tile", "fa_d64_lets"},
        {"tests/attn_forms/fa_d64_plain.tile", "fa_d64_plain"},
    };
    cr_expect_eq(tiles_in("tests/attn_forms"), sizeof docs_forms / sizeof docs_forms[0],
                 "tests/attn_forms has a .tile this test does not list");
    for (size_t i = 0; i < sizeof docs_forms / sizeof docs_forms[0]; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        cr_assert_eq(tilec_parse_file(ctx, docs_forms[i].file, &m), TILEC_OK, "%s: %s", docs_forms[i].file,
                     tilec_ctx_diag(ctx, 0) ? tilec_ctx_diag(ctx, 0)->message : "");
        const tilec_kernel *k = tilec_module_find_kernel(m, docs_forms[i].kernel);
        cr_assert_not_null(k, "%s: no kernel %s", docs_forms[i].file, docs_forms[i].kernel);
        for (uint32_t v = 0; v < tilec_kernel_variant_count(k); v++) {
            tilec_kernel_code code;
            cr_assert_eq(tilec_lower_kernel(ctx, m, k, v, &code), TILEC_OK, "%s variant %u", docs_forms[i].file, v);
            cr_expect(strstr(code.remarks, ": dot loop: wgmma, its rings filled by TMA through mbarriers (the sm_90a twin"),
                      "%s variant %u:\n%s", docs_forms[i].file, v, code.remarks);
            cr_expect_not_null(code.tma.name, "%s variant %u: no sm_90a twin", docs_forms[i].file, v);
            tilec_kernel_code_free(&code);
        }
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* How many times needle occurs in hay. */
static int occurrences(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay ? strstr(hay, needle) : NULL; p; p = strstr(p + 1, needle))
        n++;
    return n;
}

#define EX2_REMARK ": exp: ex2.approx of x * log2(e) (MUFU.EX2), its argument `"
#define EXPF_REMARK ": exp: expf in a dot loop, its argument `"

/* exp in the docs' attention (issue 30): where its argument is <= 0 by what
 * it means (lower/sign.c: s - m with m a running maximum taken over s, a
 * row max broadcast back, through lets and the loop-carried m) the CUDA
 * has ex2.approx of x * log2(e), in the kernel and its sm_90a twin, and no
 * expf; fa_d64_plain.tile edited so that the sign is not known keeps expf
 * there, and the remark says so. A reassignment between the max and the
 * exp, or a cast through an integer, breaks the proof; a mask, a positive
 * scale and the max of the unmasked tile keep it. */
Test(forms, attention_exp_by_sign)
{
    static const struct {
        const char *from, *to;
        int ex2, expf_; /* exp remarks of each kind */
    } cases[] = {
        {"let p = ", "let p = ", 2, 0}, /* as written */
        {"exp(m_i - m_new)", "exp(m_new - m_i)", 1, 1},
        {"max(s_m, 1)", "max(s, 1)", 2, 0}, /* the masked elements are -inf, the others s */
        {"let alpha = exp(", "m_i = m_i * 2.0;\n        let alpha = exp(", 1, 1}, /* m_i no longer the one m_new took */
        {"exp(s_m - m_new[:, None])", "exp((s_m - m_new[:, None]) * 0.5)", 2, 0},
        {"exp(s_m - m_new[:, None])", "exp((s_m - m_new[:, None]) * scale)", 1, 1}, /* scale's sign unknown */
        {"exp(s_m - m_new[:, None])", "exp(s_m - m_i[:, None])", 1, 1},            /* the max before this tile */
        {"exp(m_i - m_new)", "exp(cast(cast(m_i - m_new, u8), f32))", 1, 1},       /* an integer wraps: -1 is 255 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_kernel_code code;
        const char *edit[2] = {cases[i].from, cases[i].to};
        lower_edited(ctx, &m, "tests/attn_forms/fa_d64_plain.tile", "fa_d64_plain", edit, 1, &code);
        cr_expect_eq(occurrences(code.remarks, EX2_REMARK), cases[i].ex2, "%s -> %s:\n%s", cases[i].from, cases[i].to,
                     code.remarks);
        cr_expect_eq(occurrences(code.remarks, EXPF_REMARK), cases[i].expf_, "%s -> %s:\n%s", cases[i].from, cases[i].to,
                     code.remarks);
        cr_expect_eq(occurrences(code.source, "expf((") > 0, cases[i].expf_ > 0, "%s -> %s: expf in the CUDA",
                     cases[i].from, cases[i].to);
        cr_expect(occurrences(code.source, ")) * 1.4426950408889634f)") > 0, "%s -> %s: no ex2 of x * log2(e)",
                  cases[i].from, cases[i].to);
        cr_expect_not_null(code.tma.name, "%s -> %s: no sm_90a twin", cases[i].from, cases[i].to);
        edited_free(ctx, m, &code);
    }
    /* the corpus: exp takes ex2 in both base-e files, every variant; exp2 as it was */
    static const struct {
        const char *file, *kernel;
        int ex2;
    } docs[] = {{"tests/attn_forms/fa_d64_plain.tile", "fa_d64_plain", 2},
                {"tests/attn_forms/fa_d64_lets.tile", "fa_d64_lets", 2},
                {"tests/attn_forms/fa_d64_exp2.tile", "fa_d64_exp2", 0},
                {"tests/attn_forms/fa_d128.tile", "fa_d128", 0}};
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        cr_assert_eq(tilec_parse_file(ctx, docs[i].file, &m), TILEC_OK);
        const tilec_kernel *k = tilec_module_find_kernel(m, docs[i].kernel);
        cr_assert_not_null(k);
        for (uint32_t v = 0; v < tilec_kernel_variant_count(k); v++) {
            tilec_kernel_code code;
            cr_assert_eq(tilec_lower_kernel(ctx, m, k, v, &code), TILEC_OK);
            cr_expect_eq(occurrences(code.remarks, EX2_REMARK), docs[i].ex2, "%s variant %u:\n%s", docs[i].file, v,
                         code.remarks);
            cr_expect_eq(occurrences(code.source, "expf(("), 0, "%s variant %u: expf in the CUDA", docs[i].file, v);
            tilec_kernel_code_free(&code);
        }
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

#define LONE_GROUP                                                                                                     \
    "one consumer warp group (M = 64 rows) and no variant with 128: add one (`variants { {}, { BM = 128 } }`) for two " \
    "groups taking turns"

/* fa_d64_lets.tile's only config is BM = 64: its twin runs one consumer
 * warp group where two would take turns at 128 rows, and the twin's remark
 * says which variant to add; with that variant, or in fa_d128.tile (BM =
 * 64 one variant of four), it says nothing. */
Test(forms, attention_lone_warp_group_remark)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_kernel_code code;
    const char *same[2] = {"warps = 4 }", "warps = 4 }"};
    lower_edited(ctx, &m, "tests/attn_forms/fa_d64_lets.tile", "fa_d64_lets", same, 1, &code);
    cr_expect(strstr(code.remarks, LONE_GROUP), "%s", code.remarks);
    edited_free(ctx, m, &code);
    ctx = tilec_ctx_new();
    m = NULL;
    const char *more[2] = {"warps = 4 }", "warps = 4 }\n    variants { {}, { BM = 128 } }"};
    lower_edited(ctx, &m, "tests/attn_forms/fa_d64_lets.tile", "fa_d64_lets", more, 1, &code);
    cr_expect(strstr(code.remarks, "4 consumer warps") && !strstr(code.remarks, "one consumer warp group"), "%s",
              code.remarks);
    edited_free(ctx, m, &code);
    ctx = tilec_ctx_new();
    m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, "tests/attn_forms/fa_d128.tile", &m), TILEC_OK);
    const tilec_kernel *k = tilec_module_find_kernel(m, "fa_d128");
    for (uint32_t v = 0; v < tilec_kernel_variant_count(k); v++) {
        cr_assert_eq(tilec_lower_kernel(ctx, m, k, v, &code), TILEC_OK);
        cr_expect(!strstr(code.remarks, "one consumer warp group"), "fa_d128 variant %u:\n%s", v, code.remarks);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Convolution as users wrote it from the docs alone (tests/conv_forms):
 * the flat rows of conv_gemm.tile (`(pixel)[:, None] * C`, `p < N * OH *
 * OW`, the tap split by subtraction) take A by TMA's im2col mode in every
 * variant; conv_taps.tile's loops over r, s and the channels stay on
 * mma.sync (a dot loop inside other loops is no twin's), and the remark
 * says why. Every file of the folder is in the list. */
/* conv_gemm spells the filter tap's split as the docs let one: `let tap
 * = q0 / cp`, `tap / S` through that name, the remainders by subtraction
 * (`q0 - tap * cp`, `tap - r * S`), and cp = cdiv(C, BK) * BK, which may
 * pass 2^31 - 1 (64-bit). Its persistent twin's producer must read step
 * counters for all of them, 32-bit, as conv2d_f16_rows's does (q0 / cp /
 * s1, q0 % cp): before, it divided the tap by S in 64 bits every step and
 * advanced 64-bit counters (11-27% slower on the 3x3 layers, session 47). */
static void check_tap_counters(const tilec_kernel_code *code, uint32_t v)
{
    const char *twin = code->tma.name ? strstr(code->source, code->tma.name) : NULL;
    cr_assert_not_null(twin, "variant %u: no sm_90a twin", v);
    cr_expect(strstr(twin, "const unsigned tl_dd0 = (unsigned)((v_cp) < 2147483648LL ? (v_cp) : 2147483648LL);") &&
                  strstr(twin, "unsigned tl_dq0 = tl_dok ? (unsigned)(tl_lo) / (unsigned)(tl_dd0) : 0") &&
                  strstr(twin, "unsigned tl_dq1 = tl_dok ? (unsigned)((int)tl_dq0) / (unsigned)(v_S) : 0") &&
                  !strstr(twin, "long long tl_dq"),
              "conv_gemm variant %u: 32-bit counters for q0 / cp (cp clamped) and tap / S", v);
    const char *loop = strstr(twin, "for (int v_q0 = tl_lo;");
    cr_assert_not_null(loop);
    const char *fallback = strstr(loop, "if (!tl_dok) {"), *after = fallback ? strchr(fallback, '}') : NULL;
    const char *adv = after ? strstr(after, "if (tl_dok) { /* the counters one step on */") : NULL;
    cr_assert(after && adv, "conv_gemm variant %u: the step's fallback and advance", v);
    char *body = strndup(after, (size_t)(adv - after));
    cr_expect(!strstr(body, "/ ((long long)(v_S))") && !strstr(body, "% ((long long)(v_S))") &&
                  !strstr(body, "tl_dq0) * v_cp") && strstr(body, "const int tl_ac = (int)((((long long)(int)tl_dr0) +"),
              "conv_gemm variant %u: the step divides by no S, the channel offset is the remainder counter:\n%s", v, body);
    free(body);
}

Test(forms, conv_from_the_docs)
{
    cr_expect_eq(tiles_in("tests/conv_forms"), 2, "tests/conv_forms has a .tile this test does not list");
    static const char *const names[] = {"conv_gemm", "conv_taps"};
    int nested = 0;
    for (int f = 0; f < 2; f++) {
        char path[64];
        snprintf(path, sizeof path, "tests/conv_forms/%s.tile", names[f]);
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        cr_assert_eq(tilec_parse_file(ctx, path, &m), TILEC_OK, "%s: %s", path,
                     tilec_ctx_diag(ctx, 0) ? tilec_ctx_diag(ctx, 0)->message : "");
        const tilec_kernel *k = tilec_module_find_kernel(m, names[f]);
        cr_assert_not_null(k);
        uint32_t nv = tilec_kernel_variant_count(k);
        cr_expect_geq(nv, f ? 1u : 7u, "%s: %u variants", path, nv);
        for (uint32_t v = 0; v < nv; v++) {
            tilec_kernel_code code;
            cr_assert_eq(tilec_lower_kernel(ctx, m, k, v, &code), TILEC_OK, "%s variant %u", path, v);
            if (!f) {
                cr_expect(code.tma.name && code.tma.maps[0].im2col == TILEC_TMA_IM2COL_OUT &&
                              strstr(code.remarks, "A by TMA's im2col mode (one box of "),
                          "%s variant %u:\n%s", path, v, code.remarks);
                check_tap_counters(&code, v);
            } else {
                cr_expect(!code.tma.name && strstr(code.remarks, "dot loop: cp.async pipeline + mma.sync") &&
                              strstr(code.remarks, "not on wgmma + TMA: "),
                          "%s variant %u:\n%s", path, v, code.remarks);
                nested += strstr(code.remarks, "not on wgmma + TMA: the loop is not a statement of the kernel's body") != NULL;
            }
            tilec_kernel_code_free(&code);
        }
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
    cr_expect_gt(nested, 0, "conv_taps: no variant says the nested loop is why");
}

/* The inner loop of an f32 FMA dot in src: from the operands' shared
 * base pointers to the last fmaf line, its numbers (strides, offsets of
 * the ring) left out; NULL when there is none. */
static char *fma_inner_loop(const char *src)
{
    const char *a = strstr(src, "const float *tl_sa = ");
    const char *last = a ? strstr(a, "fmaf(") : NULL;
    for (const char *p = last; p; p = strstr(p + 1, "fmaf("))
        last = p;
    if (!last)
        return NULL;
    const char *e = strchr(last, '\n');
    char *out = malloc((size_t)(e - a) + 1), *o = out;
    cr_assert_not_null(out);
    for (const char *p = a; p < e; p++)
        if (*p < '0' || *p > '9' || o == out || o[-1] != '#')
            *o++ = *p >= '0' && *p <= '9' ? '#' : *p;
    *o = 0;
    /* the registers' order within a 16-byte read (a swizzled ring, which
     * check_at_copies matches with its copies) aside */
    static const char sw[] = " ^ (((tl_k / #) % #) * #)";
    for (char *x = strstr(out, sw); x; x = strstr(x, sw))
        memmove(x, x + strlen(sw), strlen(x + strlen(sw)) + 1);
    return out;
}

/* A tiny evaluator of the integer C the copies' index lines are written
 * in (names, literals, + - * / %, parentheses), over the names bound so
 * far: enough to run a chunk loop's header for every lane on the host. */
typedef struct ienv {
    const char *name[16];
    size_t len[16];
    long val[16];
    int n;
} ienv;

static long ev_xor(const char **p, const ienv *v);

static long ev_atom(const char **p, const ienv *v)
{
    while (**p == ' ')
        ++*p;
    if (**p == '(') {
        ++*p;
        long x = ev_xor(p, v);
        while (**p == ' ')
            ++*p;
        cr_assert_eq(**p, ')', "a ')' at '%.40s'", *p);
        ++*p;
        return x;
    }
    if (**p >= '0' && **p <= '9')
        return strtol(*p, (char **)p, 10);
    const char *s = *p;
    while ((**p >= 'a' && **p <= 'z') || (**p >= '0' && **p <= '9') || **p == '_')
        ++*p;
    for (int i = v->n - 1; i >= 0; i--)
        if (v->len[i] == (size_t)(*p - s) && !strncmp(v->name[i], s, v->len[i]))
            return v->val[i];
    cr_assert_fail("an unbound name at '%.40s'", s);
    return 0;
}

static long ev_prod(const char **p, const ienv *v)
{
    long x = ev_atom(p, v);
    for (;;) {
        while (**p == ' ')
            ++*p;
        char op = **p;
        if (op != '*' && op != '/' && op != '%')
            return x;
        ++*p;
        long y = ev_atom(p, v);
        cr_assert(op == '*' || y > 0, "a division by %ld", y);
        x = op == '*' ? x * y : op == '/' ? x / y : x % y;
    }
}

static long ev_sum(const char **p, const ienv *v)
{
    long x = ev_prod(p, v);
    for (;;) {
        while (**p == ' ')
            ++*p;
        char op = **p;
        if (op != '+' && op != '-')
            return x;
        ++*p;
        long y = ev_prod(p, v);
        x = op == '+' ? x + y : x - y;
    }
}

static long ev_xor(const char **p, const ienv *v)
{
    long x = ev_sum(p, v);
    for (;;) {
        while (**p == ' ')
            ++*p;
        if (**p != '^')
            return x;
        ++*p;
        x ^= ev_sum(p, v);
    }
}

/* The swizzle the FMA loop after `from` reads ring `r` ('a' or 'b') of
 * row stride ld with, at k: its register index is tl_m ^ S or tl_n ^ S
 * (S an expression in tl_k, evaluated here), or plain (0). -1 when that
 * ring is not the one of stride ld. */
static long read_swizzle(const char *from, char r, int ld, long k)
{
    char pat[64];
    snprintf(pat, sizeof pat, "tl_s%c[tl_k * %d + ", r, ld);
    const char *f = strstr(from, "fmaf(");
    if (!f || !strstr(from, pat) || strstr(from, pat) > f)
        return -1;
    snprintf(pat, sizeof pat, "[tl_%c ^ ", r == 'a' ? 'm' : 'n'); /* tl_ra[tl_m ^ S], tl_ra[tl_kk][tl_m ^ S] */
    const char *x = strstr(f, pat), *eol = strchr(f, '\n');
    if (!x || x > eol)
        return 0;
    const char *p = x + strlen(pat);
    ienv v = {{"tl_k"}, {4}, {k}, 1};
    return ev_xor(&p, &v);
}

/* Every 4-byte (transposing) copy loop of src, run on the host for every
 * warp, chunk and lane: one warp's copy must read whole 32-byte sectors
 * (8 consecutive k of 4 rows at least: 8 rows by 4 k read half sectors
 * of 8, twice the L1 requests for the same bytes) and, where the K tile
 * holds whole 128-byte lines, one line (one row by 32 k); write 32
 * distinct banks of shared memory; no element twice; and put element
 * (row, k) where the FMA loop that follows reads it (column row ^ s(k),
 * s(k) its register swizzle). Returns how many copy loops it checked. */
static int check_at_copies(const char *src, const char *what)
{
    int loops = 0;
    const char *cp = "cp.async.ca.shared.global [%0], [%1], 4,";
    for (const char *c = strstr(src, cp); c; c = strstr(c + 1, cp)) {
        /* one element of a partial or misaligned 16-byte chunk (its own
         * tl_d, lower_emit_async_load_at), not a transposing copy loop */
        const char *to = strstr(c, "__cvta_generic_to_shared(");
        if (to && !strncmp(to + strlen("__cvta_generic_to_shared("), "tl_d", 4))
            continue;
        const char *hdr = NULL, *lb = NULL;
        for (const char *p = strstr(src, "for (int tl_q = 0; tl_q < "); p && p < c; p = strstr(p + 1, "for (int tl_q = 0; tl_q < "))
            hdr = p;
        for (const char *p = strstr(src, "__launch_bounds__("); p && p < c; p = strstr(p + 1, "__launch_bounds__("))
            lb = p;
        cr_assert(hdr && lb, "%s: the copy's chunk loop and thread count", what);
        int nq = atoi(hdr + strlen("for (int tl_q = 0; tl_q < ")), W = atoi(lb + strlen("__launch_bounds__(")) / 32;
        const char *decl = strstr(hdr, "const int ");
        /* the shared address: (unsigned)(KIDX * LD + COL) * 4u, COL the row or its swizzled tl_sr */
        const char *sh = strstr(c, "(unsigned)(tl_i");
        cr_assert(decl && sh && decl < c, "%s: the copy's indices:\n%.300s", what, hdr);
        char kname[8], sname[8];
        int ld = 0;
        cr_assert_eq(sscanf(sh, "(unsigned)(%7[tl_i01] * %d + %7[tl_irs01])", kname, &ld, sname), 3, "%.60s", sh);
        const char *rname = strcmp(kname, "tl_i0") ? "tl_i0" : "tl_i1";
        /* which ring: the one of the FMA loop that follows at the copy's shared offset */
        const char *fl = strstr(c, "const float *tl_sa = "), *fb = fl ? strstr(fl, "const float *tl_sb = ") : NULL;
        const char *fbn = fl ? strstr(fl, "const float *tl_sbn = ") : NULL; /* B [N][K] (copied as it lies) */
        if (fbn && (!fb || fbn < fb))
            fb = fbn;
        const char *dst = strstr(c, "__cvta_generic_to_shared(tl_smem) + (unsigned)(");
        cr_assert(fl && fb && dst, "%s: an FMA loop after the copies", what);
        long off = atol(dst + strlen("__cvta_generic_to_shared(tl_smem) + (unsigned)("));
        char ring = atol(strstr(fb, "(tl_smem + (") + strlen("(tl_smem + (")) == off ? 'b' : 'a';
        cr_assert_eq(atol(strstr(ring == 'a' ? fl : fb, "(tl_smem + (") + strlen("(tl_smem + (")), off,
                     "%s: no ring at the copy's offset %ld", what, off);
        cr_assert(read_swizzle(fl, ring, ld, 0) >= 0, "%s: ring %c not read with stride %d", what, ring, ld);
        char *seen = calloc((size_t)(nq * W * 32) * 64, 1); /* (row, k) pairs, rows < nq W 32, k < 64 */
        cr_assert_not_null(seen);
        long kmax = 0;
        int lines_max = 0;
        for (int q = 0; q < nq; q++)
            for (int w = 0; w < W; w++) {
                long row[32], k[32], col[32];
                for (int lane = 0; lane < 32; lane++) {
                    ienv v = {{"tl_q", "tl_warp", "tl_lane"}, {4, 7, 7}, {q, w, lane}, 3};
                    const char *p = decl + strlen("const int ");
                    while (*p != ';') { /* NAME = EXPR, ... */
                        const char *nm = p;
                        while (*p != ' ')
                            p++;
                        cr_assert(v.n < 16);
                        v.name[v.n] = nm;
                        v.len[v.n] = (size_t)(p - nm);
                        p += 3; /* " = " */
                        v.val[v.n] = ev_xor(&p, &v);
                        v.n++;
                        if (*p == ',')
                            p += 2;
                    }
                    for (int i = 0; i < v.n; i++) {
                        if (v.len[i] == strlen(kname) && !strncmp(v.name[i], kname, v.len[i]))
                            k[lane] = v.val[i];
                        if (v.len[i] == strlen(rname) && !strncmp(v.name[i], rname, v.len[i]))
                            row[lane] = v.val[i];
                        if (v.len[i] == strlen(sname) && !strncmp(v.name[i], sname, v.len[i]))
                            col[lane] = v.val[i];
                    }
                }
                int rows = 0, sectors = 0, lines = 0, banks = 0;
                for (int a = 0; a < 32; a++) {
                    int newrow = 1, newsec = 1, newline = 1, newbank = 1;
                    for (int b = 0; b < a; b++) {
                        newrow &= row[b] != row[a];
                        newsec &= row[b] != row[a] || k[b] / 8 != k[a] / 8;
                        newline &= row[b] != row[a] || k[b] / 32 != k[a] / 32;
                        newbank &= (k[b] * ld + col[b]) % 32 != (k[a] * ld + col[a]) % 32;
                    }
                    rows += newrow;
                    sectors += newsec;
                    lines += newline;
                    banks += newbank;
                    cr_assert(row[a] >= 0 && row[a] < nq * W * 32 && k[a] >= 0 && k[a] < 64, "%s: (%ld, %ld)", what, row[a], k[a]);
                    char *s = &seen[row[a] * 64 + k[a]];
                    cr_expect(!*s, "%s: element (%ld, %ld) copied twice", what, row[a], k[a]);
                    *s = 1;
                    long sw = read_swizzle(fl, ring, ld, k[a]);
                    cr_expect_eq(col[a], row[a] ^ sw, "%s: element (%ld, %ld) of ring %c stored at column %ld, read at %ld", what,
                                 row[a], k[a], ring, col[a], row[a] ^ sw);
                    kmax = k[a] > kmax ? k[a] : kmax;
                }
                cr_expect(rows <= 4 && sectors == 4, "%s: a warp's copy reads %d sectors of %d rows (chunk %d, warp %d)", what,
                          sectors, rows, q, w);
                cr_expect_eq(banks, 32, "%s: a warp's copy writes %d banks of shared memory (chunk %d, warp %d)", what, banks, q, w);
                lines_max = lines > lines_max ? lines : lines_max;
            }
        /* a K tile of whole lines (kmax + 1 a multiple of 32): one line a copy */
        if ((kmax + 1) % 32 == 0)
            cr_expect_eq(lines_max, 1, "%s: a warp's copy reads %d cache lines (K tile %ld)", what, lines_max, kmax + 1);
        free(seen);
        loops++;
    }
    return loops;
}

/* The value of the C integer expression at p (to the first character
 * that ends it) with the names of v bound; ev_bind binds one more. */
static long ev_until(const char *p, const ienv *v)
{
    return ev_xor(&p, v);
}

static void ev_bind(ienv *v, const char *name, long val)
{
    cr_assert(v->n < 16);
    v->name[v->n] = name;
    v->len[v->n] = strlen(name);
    v->val[v->n] = val;
    v->n++;
}

/* The expression after `key` in src from `from` on, or fail. */
static const char *after(const char *from, const char *key, const char *what)
{
    const char *p = strstr(from, key);
    cr_assert_not_null(p, "%s: no '%s' in:\n%.400s", what, key, from);
    return p + strlen(key);
}

/* Every copy into an FMA loop's [N][K] ring of B (16-byte cp.async of a
 * load contiguous along K, as it lies) and the loop's reads of it, run on
 * the host for every thread: each element (n, k) of the tile is copied
 * once, to where the loop reads four k of column n (the column the
 * accumulator layout gives the thread's tl_n); a warp's copy writes its
 * 32 chunks to 4 wavefronts (32 distinct (line, 16-byte bank group)); the
 * eight threads of each quarter warp read eight distinct 16-byte bank
 * groups (or the same chunk). Returns how many copy loops it checked
 * (the prologue's and the loop's). */
static int check_nk_ring(const char *src, const char *what)
{
    int loops = 0;
    const char *key = "float *tl_d = (float *)(tl_smem + ";
    for (const char *c = strstr(src, key); c; c = strstr(c + 1, key)) {
        const char *at = strstr(c, ") + ((tl_i");
        const char *eol = strchr(c, '\n');
        if (!at || at > eol || !strstr(c, "^ (((tl_i") || strstr(c, "^ (((tl_i") > eol)
            continue; /* another ring's 16-byte copies (B of x @ W) */
        at += 4;
        const char *hdr = NULL, *lb = NULL;
        for (const char *p = strstr(src, "for (int tl_q = 0; tl_q < "); p && p < c; p = strstr(p + 1, "for (int tl_q = 0; tl_q < "))
            hdr = p;
        for (const char *p = strstr(src, "__launch_bounds__("); p && p < c; p = strstr(p + 1, "__launch_bounds__("))
            lb = p;
        cr_assert(hdr && lb, "%s: the copy's chunk loop and thread count", what);
        int nq = atoi(hdr + strlen("for (int tl_q = 0; tl_q < ")), nt = atoi(lb + strlen("__launch_bounds__("));
        /* the layout's column of element tl_j (the accumulator's zeros) and the loop's reads */
        const char *col = after(lb, "for (int tl_j = 0; tl_j < ", what);
        col = after(col, "const int tl_i1 = ", what);
        const char *lp = after(c, "const float *tl_sbn = ", what);
        const char *base = after(lp, ") + ", what);
        const char *g = strstr(lp, "const int tl_g = ");
        const char *k4 = after(lp, "for (int tl_k4 = 0; tl_k4 < ", what);
        const char *tn = after(k4, "for (int tl_n = 0; tl_n < ", what);
        const char *x = after(tn, "const int tl_x = ", what);
        const char *rd = after(x, "&tl_sbn[", what);
        long K = atol(k4), TN = atol(tn);
        cr_assert(K > 0 && K <= 64 && TN > 0 && TN <= 64, "%s: K %ld, TN %ld", what, K, TN);
        /* the copies: element (row n, k) -> its place */
        long N = (long)nq * nt * 4 / K;
        long *place = malloc((size_t)(N * K) * sizeof *place);
        cr_assert_not_null(place);
        for (long i = 0; i < N * K; i++)
            place[i] = -1;
        const char *l = after(hdr, "const int tl_l = ", what), *ij = after(hdr, "const int tl_i", what) - 4;
        for (int q = 0; q < nq; q++)
            for (int w = 0; w < nt / 32; w++) {
                long where[32];
                for (int lane = 0; lane < 32; lane++) {
                    ienv v = {{0}, {0}, {0}, 0};
                    ev_bind(&v, "tl_q", q);
                    ev_bind(&v, "tl_tid", w * 32 + lane);
                    ev_bind(&v, "tl_l", ev_until(l, &v));
                    /* const int tl_iA = E1, tl_iB = E2; */
                    const char *p = ij;
                    for (int k = 0; k < 2; k++) {
                        const char *nm = p;
                        p += strlen("tl_i0 = ");
                        long val = ev_xor(&p, &v);
                        ev_bind(&v, nm[4] == '0' ? "tl_i0" : "tl_i1", val);
                        p += 2; /* ", " */
                    }
                    long i0 = v.val[3], i1 = v.val[4];
                    if (!strcmp(v.name[3], "tl_i1")) {
                        long t = i0;
                        i0 = i1;
                        i1 = t;
                    }
                    /* the row n: the index the place's first product names, ((tl_iN * K + ...) */
                    int n_is_i0 = at[6] == '0';
                    long n = n_is_i0 ? i0 : i1, k = n_is_i0 ? i1 : i0;
                    long d = ev_until(at, &v);
                    cr_assert(n >= 0 && n < N && k >= 0 && k + 3 < K, "%s: chunk (%ld, %ld)", what, n, k);
                    for (int e = 0; e < 4; e++) {
                        cr_assert(d + e >= 0 && d + e < N * K, "%s: place %ld", what, d + e);
                        cr_expect_eq(place[d + e], -1, "%s: place %ld written twice", what, d + e);
                        place[d + e] = n * K + k + e;
                    }
                    where[lane] = d;
                }
                int units = 0;
                for (int a = 0; a < 32; a++) {
                    int fresh = 1;
                    for (int b = 0; b < a; b++)
                        fresh &= where[b] / 32 != where[a] / 32 || (where[b] / 4) % 8 != (where[a] / 4) % 8;
                    units += fresh;
                }
                cr_expect_eq(units, 32, "%s: a warp's 32 chunks in %d distinct (line, bank group) places", what, units);
            }
        /* the reads: four k of the thread's column tl_n */
        for (int tid = 0; tid < nt; tid++)
            for (long n = 0; n < TN; n++)
                for (long kk = 0; kk < K; kk += 4) {
                    ienv v = {{0}, {0}, {0}, 0};
                    ev_bind(&v, "tl_tid", tid);
                    ev_bind(&v, "tl_j", n);
                    ev_bind(&v, "tl_n", n);
                    ev_bind(&v, "tl_k4", kk);
                    long column = ev_until(col, &v);
                    if (g)
                        ev_bind(&v, "tl_g", ev_until(g + strlen("const int tl_g = "), &v));
                    ev_bind(&v, "tl_x", ev_until(x, &v));
                    long r = ev_until(base, &v) + ev_until(rd, &v);
                    for (int e = 0; e < 4; e++)
                        cr_expect_eq(place[r + e], column * K + kk + e, "%s: thread %d reads (%ld, %ld) at %ld, which holds (%ld, %ld)",
                                     what, tid, column, kk + e, r + e, place[r + e] / K, place[r + e] % K);
                    if (tid % 8 == 0) { /* a quarter warp: 8 distinct 16-byte groups or the same chunk */
                        long rs[8];
                        for (int t = 0; t < 8; t++) {
                            ienv u = {{0}, {0}, {0}, 0};
                            ev_bind(&u, "tl_tid", tid + t);
                            ev_bind(&u, "tl_n", n);
                            ev_bind(&u, "tl_k4", kk);
                            if (g)
                                ev_bind(&u, "tl_g", ev_until(g + strlen("const int tl_g = "), &u));
                            ev_bind(&u, "tl_x", ev_until(x, &u));
                            rs[t] = ev_until(base, &u) + ev_until(rd, &u);
                            for (int b = 0; b < t; b++)
                                cr_expect(rs[b] == rs[t] || (rs[b] / 4) % 8 != (rs[t] / 4) % 8,
                                          "%s: threads %d and %d read one bank group (%ld, %ld)", what, tid + b, tid + t, rs[b], rs[t]);
                        }
                    }
                }
        free(place);
        loops++;
    }
    return loops;
}

/* f32 without tf32, spelt as users write x @ W, x @ W.T and their
 * transposes (issue 29 item 2): every spelling takes the cp.async pipeline
 * on FMA register blocks with both operands K-major in the ring, the same
 * remark and the inner loop of their B: A [K][M] read by 16 bytes, and B
 * contiguous along N (x @ W) [K][N], four columns a 16-byte read, or
 * contiguous along K (x @ W.T, however spelt) copied as it lies, 16 bytes
 * a cp.async, into the [N][K] ring, four k a 16-byte read (check_nk_ring);
 * A contiguous along K is transposed by 4-byte copies (LDGSTS.E), along M
 * copied by 16-byte ones.
 * Without the `stages` hint the same spellings share the register-staged
 * loop, trans(x) stored the other way round instead of converted; a
 * `let` of trans(x) there is still materialized first (a gap: its
 * conversion costs two more barriers an iteration). */
Test(forms, f32_spellings, .timeout = 120)
{
#define X_LOAD "let tx = load(x + rm[:, None] * K + rk[None, :], rm[:, None] < M && rk[None, :] < K, 0.0);"
#define W_LOAD "let tw = load(w + rn[:, None] * K + rk[None, :], rn[:, None] < N && rk[None, :] < K, 0.0);"
#define A_LOAD "let ta = load(a + rm[:, None] * K + rk[None, :], rm[:, None] < M && rk[None, :] < K, 0.0);"
#define B_LOAD "let tb = load(b + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0);"
    static const struct {
        const char *file, *kernel, *what, *e[3][2];
        int copies4; /* operands copied by 4-byte cp.async (A contiguous along K) */
        int converts; /* without `stages`: a let of trans(x) is materialized, x converted through shared memory */
        int nk;       /* B contiguous along K: copied as it lies into the [N][K] ring */
    } cases[] = {
        {"examples/matmul_f32.tile", "matmul_f32", "x @ W", {{"", ""}}, 1, 0, 0},
        {"examples/linear_f32.tile", "linear_f32", "x @ W.T, dot(x, trans(w))", {{"", ""}}, 1, 0, 1},
        {"examples/linear_f32.tile", "linear_f32", "x @ W.T, let wt = trans(tw)",
         {{"acc = acc + dot(tx, trans(tw));", "let wt = trans(tw);\n        acc = acc + dot(tx, wt);"}}, 1, 1, 1},
        {"examples/linear_f32.tile", "linear_f32", "x @ W.T, the loads inline",
         {{X_LOAD, ""}, {W_LOAD, ""}, {"dot(tx, trans(tw))",
          "dot(load(x + rm[:, None] * K + rk[None, :], rm[:, None] < M && rk[None, :] < K, 0.0), "
          "trans(load(w + rn[:, None] * K + rk[None, :], rn[:, None] < N && rk[None, :] < K, 0.0)))"}}, 1, 0, 1},
        {"examples/linear_f32.tile", "linear_f32", "x @ W.T, a pointer let",
         {{W_LOAD, "let pw = w + rn[:, None] * K + rk[None, :];\n        "
                   "let tw = load(pw, rn[:, None] < N && rk[None, :] < K, 0.0);"}}, 1, 0, 1},
        {"examples/linear_f32.tile", "linear_f32", "x @ W.T, W's tile loaded [K, N] by strides",
         {{W_LOAD, "let tw = load(w + rk[:, None] + rn[None, :] * K, rk[:, None] < K && rn[None, :] < N, 0.0);"},
          {"trans(tw)", "tw"}}, 1, 0, 1},
        {"examples/matmul_f32.tile", "matmul_f32", "x.T @ W, A stored [K, M]",
         {{A_LOAD, "let ta = load(a + rk[:, None] * M + rm[None, :], rk[:, None] < K && rm[None, :] < M, 0.0);"},
          {"dot(ta, tb)", "dot(trans(ta), tb)"}}, 0, 0, 0},
        {"examples/matmul_f32.tile", "matmul_f32", "x.T @ W.T, both transposed",
         {{A_LOAD, "let ta = load(a + rk[:, None] * M + rm[None, :], rk[:, None] < K && rm[None, :] < M, 0.0);"},
          {B_LOAD, "let tb = load(b + rn[:, None] * K + rk[None, :], rn[:, None] < N && rk[None, :] < K, 0.0);"},
          {"dot(ta, tb)", "dot(trans(ta), trans(tb))"}}, 0, 0, 1},
    };
    enum { NC = sizeof cases / sizeof cases[0] };
    for (int staged = 0; staged < 2; staged++) {
        char *ref[2] = {NULL, NULL}; /* the inner loop of B [K][N], of B [N][K] */
        for (int i = 0; i < NC; i++) {
            const char *edits[8];
            int n = 0;
            for (int j = 0; j < 3 && cases[i].e[j][0] && cases[i].e[j][0][0]; j++, n++) {
                edits[2 * n] = cases[i].e[j][0];
                edits[2 * n + 1] = cases[i].e[j][1];
            }
            if (staged) { /* no `stages` hint: the loads through registers */
                edits[2 * n] = ", stages = 3";
                edits[2 * n + 1] = "";
                n++;
            }
            tilec_ctx *ctx = tilec_ctx_new();
            tilec_module *m = NULL;
            tilec_kernel_code code;
            lower_edited(ctx, &m, cases[i].file, cases[i].kernel, edits, n, &code);
            const char *what = cases[i].what;
            int nk = !staged && cases[i].nk;
            if (!staged) {
                cr_expect(strstr(code.remarks, nk ? "dot loop: cp.async pipeline + FMA register blocks (4x8 a thread; A [K][M], "
                                                    "B [N][K] in the ring), 3 stages (the `stages` hint)"
                                                  : "dot loop: cp.async pipeline + FMA register blocks (4x8 a thread; A [K][M], "
                                                    "B [K][N] in the ring), 3 stages (the `stages` hint)"),
                          "%s:\n%s", what, code.remarks);
                cr_expect_eq(strstr(code.layouts, "stored [N][K] in its ring (16-byte cp.async as loaded, swizzled), four k "
                                                  "a 16-byte read") != NULL, nk, "%s:\n%s", what, code.layouts);
                if (nk)
                    cr_expect_eq(check_nk_ring(code.source, what), 2, "%s: the [N][K] ring's copies and reads", what);
                cr_expect(!strstr(code.remarks, " not on "), "%s: nothing missed:\n%s", what, code.remarks);
                int c4 = 0;
                for (const char *p = strstr(code.layouts, "(4-byte cp.async"); p; p = strstr(p + 1, "(4-byte cp.async"))
                    c4++;
                cr_expect_eq(c4, cases[i].copies4, "%s: %d operands by 4-byte copies:\n%s", what, c4, code.layouts);
                /* each operand's copies in the prologue and in the loop */
                cr_expect_eq(check_at_copies(code.source, what), 2 * c4, "%s: the 4-byte copy loops", what);
            } else {
                cr_expect(strstr(code.remarks, "its loads through registers"), "%s:\n%s", what, code.remarks);
                cr_expect_eq(strstr(code.layouts, "converted through shared memory") != NULL, cases[i].converts, "%s:\n%s",
                             what, code.layouts);
            }
            char *loop = fma_inner_loop(code.source);
            cr_assert_not_null(loop, "%s: an FMA loop:\n%s", what, code.source);
            cr_expect(strstr(loop, nk ? "*(float# *)&tl_ra[tl_kk][tl_m] = *(const float# *)&tl_sa[tl_k * #"
                                      : "*(float# *)&tl_ra[tl_m] = *(const float# *)&tl_sa[tl_k * #"),
                      "%s: A by 16 bytes:\n%s", what, loop);
            if (nk)
                cr_expect(strstr(loop, "const float# tl_b = *(const float# *)&tl_sbn[(tl_x / #) * # + ((tl_x % #) ^ tl_g)]"),
                          "%s: B by 16 bytes, four k:\n%s", what, loop);
            else
                cr_expect(strstr(loop, "*(float# *)&tl_rb[tl_n] = *(const float# *)&tl_sb[tl_k * #"), "%s: B by 16 bytes:\n%s",
                          what, loop);
            if (!ref[nk])
                ref[nk] = loop;
            else {
                cr_expect_str_eq(loop, ref[nk], "%s: the inner loop of %s", what, nk ? "x @ W.T" : "x @ W");
                free(loop);
            }
            tilec_kernel_code_free(&code);
            tilec_module_free(m);
            tilec_ctx_free(ctx);
        }
        free(ref[0]);
        free(ref[1]);
    }
#undef X_LOAD
#undef W_LOAD
#undef A_LOAD
#undef B_LOAD
}

/* Every variant of the two f32 examples (64x64 BK = 16 with 4 warps,
 * 128x256 BK = 16 and BK = 32 with 8, and linear_f32's two with
 * `transpose_b = 1`): each 4-byte copy loop (A contiguous along K; B too
 * under the hint) reads whole sectors, and at BK = 32 one whole line a
 * warp copy (4 lines before), writes 32 banks and puts each element where
 * the FMA loop reads it (check_at_copies); without the hint x @ W.T's B
 * takes the [N][K] ring (check_nk_ring). */
Test(forms, f32_whole_line_copies, .timeout = 120)
{
    static const struct {
        const char *file, *kernel, *from, *to; /* an edit: another spelling */
        int nv;
        int copies4[5]; /* per variant */
    } cases[] = {
        {"examples/matmul_f32.tile", "matmul_f32", NULL, NULL, 3, {1, 1, 1}},
        {"examples/linear_f32.tile", "linear_f32", NULL, NULL, 5, {1, 1, 1, 2, 2}},
        /* W's tile loaded [K, N] by strides (K on the load's axis 0), no trans */
        {"examples/linear_f32.tile", "linear_f32",
         "let tw = load(w + rn[:, None] * K + rk[None, :], rn[:, None] < N && rk[None, :] < K, 0.0);\n"
         "        acc = acc + dot(tx, trans(tw));",
         "let tw = load(w + rk[:, None] + rn[None, :] * K, rk[:, None] < K && rn[None, :] < N, 0.0);\n"
         "        acc = acc + dot(tx, tw);", 5, {1, 1, 1, 2, 2}},
    };
    static const char *shape[5] = {"a warp 4 rows by 8 k)", "a warp 4 rows by 8 k)", "a warp 1 row by 32 k, swizzled)",
                                   "a warp 4 rows by 8 k)", "a warp 1 row by 32 k, swizzled)"};
    for (int i = 0; i < 3; i++)
        for (int v = 0; v < cases[i].nv; v++) {
            tilec_ctx *ctx = tilec_ctx_new();
            tilec_module *m = NULL;
            tilec_kernel_code code;
            char *src = read_file(cases[i].file, NULL);
            cr_assert_not_null(src);
            if (cases[i].from) {
                char *next = replace(src, cases[i].from, cases[i].to);
                cr_assert(strcmp(src, next), "%s: '%s' replaced", cases[i].file, cases[i].from);
                free(src);
                src = next;
            }
            cr_assert_eq(tilec_parse_string(ctx, cases[i].file, src, strlen(src), &m), TILEC_OK);
            cr_assert_eq(tilec_lower_kernel(ctx, m, tilec_module_find_kernel(m, cases[i].kernel), v, &code), TILEC_OK);
            char what[96];
            snprintf(what, sizeof what, "%s variant %d%s", cases[i].kernel, v, cases[i].from ? " (W loaded [K, N])" : "");
            int c4 = cases[i].copies4[v];
            cr_expect_eq(check_at_copies(code.source, what), 2 * c4, "%s: the 4-byte copy loops", what);
            int n = 0;
            for (const char *p = strstr(code.layouts, shape[v]); p; p = strstr(p + 1, shape[v]))
                n++;
            cr_expect_eq(n, c4, "%s: '%s':\n%s", what, shape[v], code.layouts);
            int nk = i > 0 && c4 == 1;
            cr_expect_eq(check_nk_ring(code.source, what), nk ? 2 : 0, "%s: the [N][K] ring's copy loops", what);
            free(src);
            tilec_kernel_code_free(&code);
            tilec_module_free(m);
            tilec_ctx_free(ctx);
        }
}

/* What the analysis does not take for a tensor map: spellings whose
 * elements are not those of a map (a shifted or scaled index, a stride
 * times a constant, a stride let that is re-assigned, a mask with another
 * condition or bounding an index the pointer does not use, a scalar
 * offset other than pid(2) times parameters): no TMA map, and the remark
 * says why. */
Test(forms, not_a_map, .timeout = 120)
{
    static const struct {
        const char *from, *to, *why;
    } cases[] = {
        {"rm[:, None] * K + rk[None, :], rm", "rm[:, None] * (K * 2) + rk[None, :], rm",
         "a term of the pointer is not the pointer parameter"},
        {"rm[:, None] * K + rk[None, :], rm", "(rm[:, None] + 1) * K + rk[None, :], rm",
         "an index of the pointer is not a unit-stride start + range(n)"},
        {"rm[:, None] * K + rk[None, :], rm", "(rm + 1)[:, None] * K + rk[None, :], rm",
         "the mask is not R[:, None] < rows && C[None, :] < cols"},
        {"rm[:, None] * K + rk[None, :], rm", "rm[:, None] * K + rk[None, :] * 2, rm",
         "dot operand A is contiguous along neither axis"},
        {"rm[:, None] < M && rk[None, :] < K, 0.0", "rm[:, None] < M && rk[None, :] < K && rm[:, None] >= 0, 0.0",
         "the mask is not R[:, None] < rows && C[None, :] < cols"},
        {"rm[:, None] < M && rk[None, :] < K, 0.0", "rm[:, None] < M && rk[None, :] + 1 < K, 0.0",
         "the mask is not R[:, None] < rows && C[None, :] < cols"},
        /* a scalar added to the columns that the mask's K bound does not add */
        {"load(a + rm", "load(a + pid(1) + rm", "the mask is not R[:, None] < rows && C[None, :] < cols"},
        /* a scalar with a constant factor is a coordinate (kt * BK), here one the mask does not bound */
        {"load(a + rm", "load(a + 2 * k + rm", "the mask is not R[:, None] < rows && C[None, :] < cols"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_ctx *ctx;
        tilec_module *m;
        tilec_kernel_code code;
        lower_edit1(&ctx, &m, "tests/forms/ref.tile", cases[i].from, cases[i].to, &code);
        cr_expect(!strstr(code.remarks, "wgmma + TMA (the sm_90a twin"), "%s: no map:\n%s", cases[i].to, code.remarks);
        cr_expect(strstr(code.remarks, cases[i].why), "%s: says '%s':\n%s", cases[i].to, cases[i].why, code.remarks);
        edited_free(ctx, m, &code);
    }
    /* a stride let in the loop body, the kernel's only let of that name: the parameter it names */
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_kernel_code code;
    const char *edit[4] = {"let rk = k + range(BK);", "let rk = k + range(BK);\n        let lda = K;",
                           "rm[:, None] * K + rk", "rm[:, None] * lda + rk"};
    lower_edited(ctx, &m, "tests/forms/ref.tile", "gemm", edit, 2, &code);
    cr_expect(strstr(code.remarks, "wgmma + TMA (the sm_90a twin"), "%s", code.remarks);
    cr_expect_eq(code.tma.maps[0].stride, 5, "A's row stride: K");
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* A pointer stepped in the loop (ptr_step.tile's `pa = pa + BK`) is read as
 * its value before the loop plus the steps taken (lower/ivstep.c) however
 * the sum is turned; a step the rewrite cannot read leaves the loop as
 * written (pa a register tile, no pipeline), and the remark says which
 * step and why. */
Test(forms, pointer_steps, .timeout = 120)
{
    static const struct {
        const char *from, *to, *why; /* why NULL: the twin, as the reference */
    } cases[] = {
        {"pa = pa + BK;", "pa = BK + pa;", NULL},
        {"pa = pa + BK;", "pa = pa + k;", "its step reads the loop variable k"},
        {"pa = pa + BK;", "pa = pa + BK;\n        let pz = pa;", "pa is read after its step in the loop body"},
        {"pa = pa + BK;", "pa = pa + BK;\n        pa = pa + 0;", "pa is assigned more than once"},
        {"    store(c", "    store(pa, zeros(f16, BM, BK), rm[:, None] < M);\n    store(c", "pa is named after the loop"},
        {"pa = pa + BK;", "pa = pa + rk[0];", "its step reads rk, let in the loop"},
        {"pa = pa + BK;", "pa = pa + (rm * 0)[:, None];", "its step is not an integer scalar"},
        /* pa_at0 would be computed where it is read: its let may read nothing that changes */
        {"    let pa = a + rm", "    let z = 0;\n    z = z + 1;\n    let pa = a + z + rm", "its let reads z, which is assigned"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_ctx *ctx;
        tilec_module *m;
        tilec_kernel_code code;
        lower_edit1(&ctx, &m, "tests/forms/ptr_step.tile", cases[i].from, cases[i].to, &code);
        if (!cases[i].why) {
            cr_expect(strstr(code.remarks, "wgmma + TMA (the sm_90a twin"), "%s: the twin:\n%s", cases[i].to,
                      code.remarks);
            cr_expect(strstr(code.source, "-stage cp.async pipeline */"), "%s: pipelined", cases[i].to);
        } else {
            cr_expect(!code.tma.name, "%s: no twin", cases[i].to);
            cr_expect(strstr(code.remarks, "pa is re-assigned in the loop body, and its step is not read as its value "
                                           "before the loop plus the steps taken: "),
                      "%s: names the step:\n%s", cases[i].to, code.remarks);
            cr_expect(strstr(code.remarks, cases[i].why), "%s: says '%s':\n%s", cases[i].to, cases[i].why,
                      code.remarks);
        }
        edited_free(ctx, m, &code);
    }
    /* a run-time step from 1: pa = pa_at0 + (k - 1) / s * BK, a pure function of k (pipelined), whose
     * coordinate is not the mask's k + range(BK): no map, and the remark says so */
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_kernel_code code;
    const char *edit[4] = {"K: i32)", "K: i32, s: i32)", "for k in 0 .. K step BK {", "for k in 1 .. K step s {"};
    lower_edited(ctx, &m, "tests/forms/ptr_step.tile", "gemm", edit, 2, &code);
    cr_expect(strstr(code.source, "-stage cp.async pipeline */"), "pipelined:\n%s", code.remarks);
    cr_expect(strstr(code.source, "/ v_s)"), "the steps taken: (k - 1) / s");
    cr_expect(strstr(code.remarks, "line 14: the mask is not R[:, None] < rows && C[None, :] < cols"), "%s", code.remarks);
    edited_free(ctx, m, &code);
}

/* The layouts of every variant of a module's kernels, concatenated
 * (the caller frees it); `where` names the source in a failure. */
static char *all_layouts(tilec_ctx *ctx, tilec_module *m, const char *where)
{
    char *all = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&all, &len);
    cr_assert_not_null(f);
    for (size_t i = 0; i < tilec_module_kernel_count(m); i++) {
        const tilec_kernel *k = tilec_module_kernel(m, i);
        for (uint32_t v = 0; v < tilec_kernel_variant_count(k); v++) {
            tilec_kernel_code code;
            cr_assert_eq(tilec_lower_kernel(ctx, m, k, v, &code), TILEC_OK, "%s variant %u", where, v);
            fputs(code.layouts, f);
            tilec_kernel_code_free(&code);
        }
    }
    fclose(f);
    return all;
}

/* LLM kernels as users wrote them from the docs alone (tests/llm_forms:
 * RMSNorm, SwiGLU, cross-entropy and RoPE, three spellings each, each
 * file naming its op): every variant meets its operands in registers (no
 * tile converted through shared memory). */
Test(forms, llm_from_the_docs_meets_its_operands_in_registers)
{
    DIR *dir = opendir("tests/llm_forms");
    cr_assert_not_null(dir);
    size_t files = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        size_t n = strlen(e->d_name);
        if (n <= 5 || strcmp(e->d_name + n - 5, ".tile"))
            continue;
        char path[sizeof "tests/llm_forms/" + sizeof e->d_name];
        snprintf(path, sizeof path, "tests/llm_forms/%s", e->d_name);
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        cr_assert_eq(tilec_parse_file(ctx, path, &m), TILEC_OK, "%s: %s", path,
                     tilec_ctx_diag(ctx, 0) ? tilec_ctx_diag(ctx, 0)->message : "");
        char *lay = all_layouts(ctx, m, path);
        cr_expect(!strstr(lay, "converted through shared memory"), "%s:\n%s", path, lay);
        free(lay);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
        files++;
    }
    closedir(dir);
    cr_expect_geq(files, 12u, "tests/llm_forms: %zu files", files);
}

/* Two spellings the writer of tests/llm_forms met and wrote around
 * (tests/llm_forms/NOTES.md), now in registers: a zeros(f32, ROWS,
 * BLOCK) accumulator summed from a bf16 load (the f32 tile's rows took
 * runs of 4, the load's 8: the loaded tile went through shared memory
 * every iteration, 2 __syncthreads), and a row vector broadcast against a
 * square [64, 64] tile whose index arithmetic also broadcasts a column
 * (`h[:, None] * 128 + d[None, :]`: the vector took the column's slice,
 * converted through shared memory 4 times an iteration), and cos and
 * sin as [ROWS, 1, 64] loads broadcast over the halves of [ROWS, 2, 64]
 * tiles (the broadcast plan knew 2-D tiles only; the loop only gives the
 * test its per-iteration count). */
Test(forms, llm_writer_s_spellings_meet_in_registers)
{
    static const char *const srcs[] = {
        "kernel sq(x: *bf16, rstd: *f32, r: i32, c: i32)\n"
        "    grid (cdiv(r, ROWS))\n"
        "    hints { ROWS = 4, BLOCK = 1024, warps = 4 }\n"
        "{\n"
        "    let rows = pid(0) * ROWS + range(ROWS);\n"
        "    let rm = rows < r;\n"
        "    let cols = range(BLOCK);\n"
        "    let acc = zeros(f32, ROWS, BLOCK);\n"
        "    for j0 in 0 .. c step BLOCK {\n"
        "        let mj = rm[:, None] & (j0 + cols[None, :] < c);\n"
        "        let xj = cast(load(x + rows[:, None] * c + j0 + cols[None, :], mj), f32);\n"
        "        acc = acc + xj * xj;\n"
        "    }\n"
        "    store(rstd + rows, sum(acc, 1), rm);\n"
        "}\n",
        "kernel rope_h(q: *bf16, cos: *bf16, sin: *bf16, out: *bf16, tokens: i32, heads: i32)\n"
        "    grid (tokens)\n"
        "    hints { HB = 64, warps = 8 }\n"
        "{\n"
        "    let t = pid(0);\n"
        "    let d = range(64);\n"
        "    let c = cast(load(cos + t * 64 + d), f32)[None, :];\n"
        "    let s = cast(load(sin + t * 64 + d), f32)[None, :];\n"
        "    let qt = q + t * heads * 128;\n"
        "    let ot = out + t * heads * 128;\n"
        "    for h0 in 0 .. heads step HB {\n"
        "        let h = h0 + range(HB);\n"
        "        let off = h[:, None] * 128 + d[None, :];\n"
        "        let mh = h[:, None] < heads;\n"
        "        let x1 = cast(load(qt + off, mh), f32);\n"
        "        let x2 = cast(load(qt + off + 64, mh), f32);\n"
        "        store(ot + off, x1 * c - x2 * s, mh);\n"
        "        store(ot + off + 64, x2 * c + x1 * s, mh);\n"
        "    }\n"
        "}\n",
        "kernel rope_b(q: *bf16, cos: *bf16, sin: *bf16, out: *bf16, tokens: i32, heads: i32)\n"
        "    grid (cdiv(tokens * heads, ROWS))\n"
        "    hints { ROWS = 16, warps = 4 }\n"
        "{\n"
        "    let rows = pid(0) * ROWS + range(ROWS);\n"
        "    let r3 = rows[:, None, None];\n"
        "    let half = range(2)[None, :, None];\n"
        "    let d = range(64)[None, None, :];\n"
        "    let mr = r3 < tokens * heads;\n"
        "    let off = r3 * 128 + half * 64 + d;\n"
        "    let cs = r3 / maximum(heads, 1) * 64 + d;\n"
        "    for i in 0 .. 1 {\n"
        "        let x = cast(load(q + off, mr), f32);\n"
        "        let xp = cast(load(q + r3 * 128 + (1 - half) * 64 + d, mr), f32);\n"
        "        let sign = where(half == 0, -1.0, 1.0);\n"
        "        store(out + off, x * cast(load(cos + cs, mr), f32) + sign * xp * cast(load(sin + cs, mr), f32), mr);\n"
        "    }\n"
        "}\n",
    };
    for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        cr_assert_eq(tilec_parse_string(ctx, "w.tile", srcs[i], strlen(srcs[i]), &m), TILEC_OK, "%s", srcs[i]);
        char *lay = all_layouts(ctx, m, srcs[i]);
        cr_expect(!strstr(lay, "converted through shared memory") && strstr(lay, "0 __syncthreads per iteration"),
                  "%s", lay);
        free(lay);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}
