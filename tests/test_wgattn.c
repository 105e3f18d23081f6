/* test_wgattn.c: the sm_90a twins of loops of dots on cp.async rings
 * (lower/wgattn.c) on the CPU: every variant of examples/attention.tile
 * gets one (its rings filled by TMA through a tensor map a ring, BM / 16
 * consumer warps and a producer warp group; by cp.async where no map
 * describes a load, tests/gpu/attention_ring.tile), K as stored [S, D] is
 * read K-major and K given as [D, S] MN-major, the remarks say which path
 * each loop took or why not, and, with cuobjdump at hand, the twin's SASS
 * multiplies on HGMMA with its A operand in registers and copies by
 * UTMALDG. NVRTC needs no GPU. The GPU checks against a reference are in
 * tests/test_gpu_layouts.c (attention_twin_*). */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "sass_helpers.h"
#include "tilec/lower.h"

#define ATTN "examples/attention.tile"
#define ATTN_KT "tests/gpu/attention_kt.tile"
#define ATTN_RING "tests/gpu/attention_ring.tile"

static void lower_v(tilec_ctx *ctx, tilec_module *m, const char *kernel, int v, tilec_kernel_code *code)
{
    const tilec_kernel *k = tilec_module_find_kernel(m, kernel);
    cr_assert_not_null(k, "no kernel %s", kernel);
    cr_assert_eq(tilec_lower_kernel(ctx, m, k, v, code), TILEC_OK, "%s variant %d does not lower", kernel, v);
}

/* "__launch_bounds__(threads, 1)" */
static const char *lower_launch_one(uint32_t threads)
{
    static char b[64];
    snprintf(b, sizeof b, "__launch_bounds__(%u, 1)", threads);
    return b;
}

/* Every variant of both kernels: a twin of BM / 16 consumer warps plus
 * the producer warp group, its dots in the register-A form of wgmma (K
 * read K-major: _bk; V MN-major), K and V copied by TMA (two maps of the
 * [S, D] rows of a head: S rows, D columns and row stride the hint D as
 * constants, the head pid(1) times S * D the batch), the remark naming it. */
Test(wgattn, every_attention_variant_has_a_twin)
{
    static const struct {
        const char *kernel;
        int v;
        uint32_t threads; /* BM / 16 warps + 128 */
        const char *s_form, *pv_form;
        uint32_t bn, d;
        int walks; /* 0: two warp groups taking turns over fewer than 128 keys a step run one tile a block */
        int two;   /* one consumer warp group whose ring fits twice: two blocks an SM, its consumers at 232 */
    } cases[] = {
        {"attention_d64", 0, 384, "tl_wgrs_f16_n64_bk(", "tl_wgrs_f16_n64(", 64, 64, 0, 0},
        {"attention_d64", 1, 384, "tl_wgrs_f16_n32_bk(", "tl_wgrs_f16_n64(", 32, 64, 0, 0},
        {"attention_d64", 2, 256, "tl_wgrs_f16_n64_bk(", "tl_wgrs_f16_n64(", 64, 64, 1, 1},
        {"attention_d64", 3, 384, "tl_wgrs_f16_n128_bk(", "tl_wgrs_f16_n64(", 128, 64, 1, 0},
        {"attention_d128", 0, 256, "tl_wgrs_f16_n32_bk(", "tl_wgrs_f16_n128(", 32, 128, 1, 1},
        {"attention_d128", 1, 384, "tl_wgrs_f16_n64_bk(", "tl_wgrs_f16_n128(", 64, 128, 1, 0},
        {"attention_d128", 2, 384, "tl_wgrs_f16_n32_bk(", "tl_wgrs_f16_n128(", 32, 128, 1, 0},
        {"attention_d128", 3, 384, "tl_wgmma_f16_n128_bk(", "tl_wgrs_f16_n128(", 128, 128, 1, 0},
    };
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, ATTN);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_kernel_code code;
        lower_v(ctx, m, cases[i].kernel, cases[i].v, &code);
        cr_assert_not_null(code.tma.name, "%s variant %d: an sm_90a twin", cases[i].kernel, cases[i].v);
        cr_expect_eq(code.tma.nmaps, 2, "%s variant %d: K and V by TMA: two tensor maps", cases[i].kernel, cases[i].v);
        for (uint32_t j = 0; j < 2; j++) { /* k (parameter 1), v (2): [bh][S][D] */
            const tilec_tma_map *mp = &code.tma.maps[j];
            cr_expect(mp->ptr == 1 + j && mp->rows == 4 && mp->cols == (TILEC_TMA_CONST | cases[i].d) &&
                          mp->stride == (TILEC_TMA_CONST | cases[i].d) && mp->box_rows == cases[i].bn &&
                          mp->box_cols == 64 && mp->elem_bytes == 2 && !mp->bf16,
                      "%s variant %d map %u: ptr %u rows %u cols 0x%x stride 0x%x box %u x %u", cases[i].kernel,
                      cases[i].v, j, mp->ptr, mp->rows, mp->cols, mp->stride, mp->box_rows, mp->box_cols);
            cr_expect(mp->batched == 1 && mp->bgrid == 1 && mp->bs[0] == 4 && mp->bs[1] == TILEC_TMA_NONE &&
                          mp->bscale == cases[i].d,
                      "%s variant %d map %u: a head pid(1) of S x D elements", cases[i].kernel, cases[i].v, j);
        }
        cr_expect_eq(code.tma.persistent, (uint32_t)cases[i].walks,
                     "%s variant %d: persistent, the turns' twins too (per unit) from 128 keys a step",
                     cases[i].kernel, cases[i].v);
        /* `for n0 in 0 .. hi step BN`, hi = S or minimum(S, ...): at most S (parameter 4) over BN trips a unit */
        cr_expect(code.tma.kbound == 4 && code.tma.kfrom == 0 && code.tma.kper == cases[i].bn,
                  "%s variant %d: trips %u from %u over %u", cases[i].kernel, cases[i].v, code.tma.kbound,
                  code.tma.kfrom, code.tma.kper);
        cr_expect_eq(code.tma.threads, cases[i].threads, "%s variant %d: %u threads", cases[i].kernel, cases[i].v,
                     code.tma.threads);
        cr_expect(strstr(code.source, cases[i].s_form), "%s variant %d: S = Q K^T by %s", cases[i].kernel, cases[i].v,
                  cases[i].s_form);
        cr_expect(strstr(code.source, cases[i].pv_form), "%s variant %d: acc += P V by %s", cases[i].kernel,
                  cases[i].v, cases[i].pv_form);
        const char *tw = strstr(code.source, "_tma(");
        cr_assert_not_null(tw);
        cr_expect(strstr(tw, "tl_setmaxnreg_dec<") && strstr(tw, "tl_mbar_wait(tl_full"),
                  "a producer warp group and an mbarrier ring");
        cr_expect(strstr(tw, cases[i].walks ? "const __grid_constant__ tl_tmap tl_tm0, const __grid_constant__ tl_tmap "
                                              "tl_tm1, int tl_grid0, int tl_grid1, int tl_grid2)"
                                            : "const __grid_constant__ tl_tmap tl_tm0, const __grid_constant__ tl_tmap "
                                              "tl_tm1)"),
                  "the maps after the variant's parameters (then a persistent twin's program grid)");
        cr_expect(strstr(tw, "tl_mbar_expect(tl_full + tl_s * 8, ") && strstr(tw, "tl_tma_3d(") &&
                      strstr(tw, "&tl_tm1, (int)(0) + 0, (int)((v_n0 + ((long long)(0)))), tl_pid1, tl_full"),
                  "%s variant %d: one thread expects the stage's bytes and copies V's rows n0.. of head pid(1)",
                  cases[i].kernel, cases[i].v);
        cr_expect(!strstr(tw, "tl_cp16(") && !strstr(tw, "tl_cp_wait<"), "no cp.async in the twin");
        cr_expect(strstr(code.remarks, "dot loop: wgmma, its rings filled by TMA through mbarriers"),
                  "the remark names the path:\n%s", code.remarks);
        int creg = cases[i].two ? 232 : 240;
        char inc[64], said[512];
        snprintf(inc, sizeof inc, "tl_setmaxnreg_inc<%d>();", creg);
        snprintf(said, sizeof said, ", setmaxnreg %d for the consumers, 24 for the producer's thread%s%s", creg,
                 cases[i].two ? ", two blocks an SM (64 rows a block; each block " : "",
                 cases[i].two    ? ""
                 : cases[i].walks ? "; on a persistent grid: a block walks (query tile, head) units"
                                  : "; but one tile a block runs, not a persistent grid: its two warp groups take "
                                    "turns over ");
        cr_expect(strstr(tw, "tl_setmaxnreg_dec<24>();") && strstr(tw, inc) && strstr(code.remarks, said),
                  "%s variant %d: the consumers at %d registers, the producer's thread at 24, and the remark says "
                  "so:\n%s",
                  cases[i].kernel, cases[i].v, creg, code.remarks);
        cr_expect(strstr(code.source, cases[i].two ? "__launch_bounds__(256, 2)" : lower_launch_one(code.tma.threads)),
                  "%s variant %d: %s an SM", cases[i].kernel, cases[i].v, cases[i].two ? "two blocks" : "one block");
        cr_expect(!strstr(code.remarks, "sm_90a twin: cp.async by its producer warps") &&
                      strstr(code.remarks, "(16 bytes) a chunk, a whole tile without checks where it is in bounds, mask on "
                                           "a prefix; sm_90a twin: TMA\n"),
                  "the loads' remarks say the twin copies them by TMA:\n%s", code.remarks);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* One consumer warp group (BM = 64: the docs-written d64 attention,
 * issue 30) whose shared memory fits twice runs two blocks an SM: launch
 * bounds (256, 2), 128 registers a thread at launch, the producer's
 * thread at 24 and the consumers at 232; the remark says so. Two groups
 * (fa_d64_plain at BM = 128) keep one block of 384 threads at 240, and a
 * one-group twin whose ring does not fit twice (fa_d128's BM = 64
 * variant: 4 stages of 32 KiB), or whose rings are filled by cp.async (no
 * tensor map: measured only by TMA), keeps one block, the remark saying
 * why. */
Test(wgattn, one_warp_group_two_blocks_an_sm)
{
    static const struct {
        const char *file, *kernel;
        int v;
        uint32_t threads;
        const char *bounds, *inc, *said;
    } cases[] = {
        {"tests/attn_forms/fa_d64_lets.tile", "fa_d64_lets", 0, 256, "__launch_bounds__(256, 2)",
         "tl_setmaxnreg_inc<232>();",
         ", setmaxnreg 232 for the consumers, 24 for the producer's thread, two blocks an SM (64 rows a block; "
         "each block 66624 bytes of shared memory, 128 registers a thread at launch)"},
        {"tests/attn_forms/fa_d64_plain.tile", "fa_d64_plain", 0, 384, "__launch_bounds__(384, 1)",
         "tl_setmaxnreg_inc<240>();", ", setmaxnreg 240 for the consumers, 24 for the producer's thread; "},
        {"tests/attn_forms/fa_d128.tile", "fa_d128", 2, 256, "__launch_bounds__(256, 1)", "tl_setmaxnreg_inc<240>();",
         ", setmaxnreg 240 for the consumers, 24 for the producer's thread, one block an SM (64 rows, but "
         "132160 bytes of shared memory a block do not fit twice)"},
    };
    tilec_ctx *ctx = tilec_ctx_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_module *m = parse(ctx, cases[i].file);
        tilec_kernel_code code;
        lower_v(ctx, m, cases[i].kernel, cases[i].v, &code);
        cr_assert_not_null(code.tma.name, "%s: an sm_90a twin", cases[i].kernel);
        cr_expect_eq(code.tma.threads, cases[i].threads, "%s: %u threads", cases[i].kernel, code.tma.threads);
        const char *tw = strstr(code.source, "_tma(");
        cr_assert_not_null(tw);
        char sig[128];
        snprintf(sig, sizeof sig, "%s %s(", cases[i].bounds, code.tma.name);
        cr_expect(strstr(code.source, sig), "%s: the twin is `%s`", cases[i].kernel, sig);
        cr_expect(strstr(tw, "tl_setmaxnreg_dec<24>();") && strstr(tw, cases[i].inc), "%s: %s", cases[i].kernel,
                  cases[i].inc);
        cr_expect(strstr(code.remarks, cases[i].said), "%s: the remark says `%s`:\n%s", cases[i].kernel,
                  cases[i].said, code.remarks);
        cr_expect(!strstr(tw, "blockIdx.x) * 2") && !strstr(tw, "* 2 + tl_wgi"),
                  "%s: pid(0) is the user's, one query tile a block", cases[i].kernel);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
    }
    /* rings by cp.async (attention_ring.tile's attention_cp_d64 at BM = 64: no tensor map) keep one block */
    char *src = read_file(ATTN_RING, NULL);
    cr_assert_not_null(src);
    const char *from = "hints { BM = 128, BN = 64, D = 64, warps = 4, stages = 2 }";
    char *at = strstr(src, from);
    cr_assert_not_null(at);
    memcpy(at, "hints { BM = 64 , BN = 64, D = 64, warps = 4, stages = 2 }", strlen(from));
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "ring64.tile", src, strlen(src), &m), TILEC_OK);
    tilec_kernel_code code;
    lower_v(ctx, m, "attention_cp_d64", 0, &code);
    cr_assert_not_null(code.tma.name, "attention_cp_d64 at BM = 64: a twin");
    cr_expect_eq(code.tma.nmaps, 0, "its rings by cp.async");
    char sig[128];
    snprintf(sig, sizeof sig, "__launch_bounds__(256, 1) %s(", code.tma.name);
    cr_expect(strstr(code.source, sig) && strstr(code.source, "tl_setmaxnreg_inc<224>();") &&
                  strstr(code.source, "tl_setmaxnreg_dec<56>();"),
              "one block an SM, the consumers at 224, the producer at 56");
    cr_expect(strstr(code.remarks, ", one block an SM (64 rows, but its rings by cp.async: two blocks "
                                   "an SM are built only where TMA fills them)"),
              "the remark says why one block:\n%s", code.remarks);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    free(src);
    tilec_ctx_free(ctx);
}

/* The two-block twin's SASS (fa_d64_lets): 128 registers a thread at
 * launch, the consumers' setmaxnreg.inc to 232 (0xe8) and the producer's
 * dec to 24; its wgmma not serialized at 232 (at most 4
 * WARPGROUP.DEPBAR, one a dot's wait, as at 240) and nothing spilled. */
static char *twin_sass_in(const char *file, const char *kernel, int v);

Test(wgattn, sass_two_blocks_an_sm, .timeout = 200)
{
    char *t = twin_sass_in("tests/attn_forms/fa_d64_lets.tile", "fa_d64_lets", 0);
    int hg = 0, dep = 0;
    for (const char *p = t; (p = strstr(p, "HGMMA.")) != NULL; p++)
        hg++;
    for (const char *p = t; (p = strstr(p, "WARPGROUP.DEPBAR")) != NULL; p++)
        dep++;
    cr_expect(strstr(t, "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8") && strstr(t, "USETMAXREG.DEALLOC.CTAPOOL 0x18"),
              "the consumers at 232 registers, the producer at 24");
    cr_expect(hg >= 16 && dep <= 4, "%d HGMMA, %d WARPGROUP.DEPBAR (serialized: one a HGMMA)", hg, dep);
    cr_expect(!strstr(t, "STL") && !strstr(t, "LDL"), "nothing spilled");
    free(t);
}

/* K given as [D, S]: its tile is contiguous along the keys, so the ring
 * keeps rows of keys and S = Q K reads it MN-major with the transpose bit;
 * K as stored read through trans(...) is K-major as in the example. */
Test(wgattn, k_layout_decides_the_operand_major)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, ATTN_KT);
    tilec_kernel_code code;
    lower_v(ctx, m, "attention_kds", 0, &code);
    cr_assert_not_null(code.tma.name);
    cr_expect(!strstr(code.source, "_bk("), "no K-major B");
    cr_expect(strstr(code.source, "B v_tk from its swizzled ring (MN-major, transposed)"), "K read MN-major");
    tilec_kernel_code_free(&code);
    lower_v(ctx, m, "attention_kt_inline", 0, &code);
    cr_assert_not_null(code.tma.name);
    cr_expect(strstr(code.source, "B v_tk from its swizzled ring (K-major)") && strstr(code.source, "tl_wgrs_f16_n64_bk("),
              "K read K-major");
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The maps follow the loads, not the spelling: K given as [D, S] is a map
 * of D rows (the constant: range(D) is not masked) of S columns, row
 * stride S; a mask that also bounds d by the hint (`rd < D`) gives the
 * constant extent D; a mask that is no map's bound (`rn <= S - 1`) keeps
 * both rings on cp.async, and the remark says which load and why. */
Test(wgattn, rings_by_tma_where_a_map_describes_each_load)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, ATTN_KT);
    tilec_kernel_code code;
    lower_v(ctx, m, "attention_kds", 0, &code);
    const tilec_tma_map *k = &code.tma.maps[0];
    cr_expect(code.tma.nmaps == 2 && k->rows == (TILEC_TMA_CONST | 64) && k->cols == 4 && k->stride == 4 &&
                  k->box_rows == 64 && k->bs[0] == 4 && k->bscale == 64,
              "K given as [D, S]: %u maps, rows 0x%x cols %u stride %u", code.tma.nmaps, k->rows, k->cols, k->stride);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    m = parse(ctx, ATTN_RING);
    lower_v(ctx, m, "attention_dmask", 0, &code);
    cr_expect(code.tma.nmaps == 2 && code.tma.maps[0].cols == (TILEC_TMA_CONST | 64) &&
                  code.tma.maps[1].cols == (TILEC_TMA_CONST | 64),
              "rd < D: the constant extent 64 (%u maps)", code.tma.nmaps);
    tilec_kernel_code_free(&code);
    static const char *const cp[] = {"attention_cp_d64", "attention_cp_d128"};
    for (int i = 0; i < 2; i++) {
        lower_v(ctx, m, cp[i], 0, &code);
        cr_assert_not_null(code.tma.name, "%s: a twin", cp[i]);
        cr_expect_eq(code.tma.nmaps, 0, "%s: no maps", cp[i]);
        const char *tw = strstr(code.source, "_tma(");
        cr_expect(tw && strstr(tw, "tl_fence_async_smem();") && !strstr(tw, "tl_tma_"),
                  "%s: the cp.async producer, its writes fenced for wgmma's reads", cp[i]);
        cr_expect(code.tma.persistent == 0 &&
                      strstr(code.remarks, "but one tile a block runs, not a persistent grid: its rings are filled by "
                                           "cp.async"),
                  "%s: one tile a block, and the remark says why:\n%s", cp[i], code.remarks);
        cr_expect(strstr(code.remarks, "its rings filled by a cp.async producer warp group through mbarriers") &&
                      strstr(code.remarks, "not by TMA: load tv: the mask is not R[:, None] < rows") &&
                      strstr(code.remarks, "sm_90a twin: cp.async by its producer warps"),
                  "%s: the remark says which load no map describes:\n%s", cp[i], code.remarks);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* attention_d64 of the example with edits (pairs: each first occurrence
 * of edits[2i] replaced by edits[2i + 1]), lowered into *code. */
static void lower_edited(const char *const *edits, int n, tilec_kernel_code *code)
{
    char *src = read_file(ATTN, NULL);
    cr_assert_not_null(src);
    for (int i = 0; i < n; i++) {
        const char *from = edits[2 * i], *to = edits[2 * i + 1];
        char *at = strstr(src, from);
        cr_assert_not_null(at, "%s not in the example", from);
        size_t len = strlen(src), a = (size_t)(at - src), fl = strlen(from), tl = strlen(to);
        char *out = malloc(len - fl + tl + 1);
        memcpy(out, src, a);
        memcpy(out + a, to, tl);
        memcpy(out + a + tl, at + fl, len - a - fl + 1);
        free(src);
        src = out;
    }
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_string(ctx, "src.tile", src, strlen(src), &m);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s", d ? d->message : "");
    lower_v(ctx, m, "attention_d64", 0, code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    free(src);
}

/* The example with one change: its remarks; *twin: it has a twin. */
static char *remarks_with(const char *from, const char *to, int *twin)
{
    const char *edit[2] = {from, to};
    tilec_kernel_code code;
    lower_edited(edit, 1, &code);
    char *r = strdup(code.remarks);
    *twin = code.tma.name != NULL;
    tilec_kernel_code_free(&code);
    return r;
}

/* bf16 operands: the bf16 form of the register-A wgmma. */
Test(wgattn, bf16_twin)
{
    static const char *const edits[] = {
        "kernel attention_d64(q: *f16, k: *f16, v: *f16, o: *f16,", "kernel attention_d64(q: *bf16, k: *bf16, v: *bf16, o: *bf16,",
        "dot(cast(p, f16), tv)", "dot(cast(p, bf16), tv)",
        "cast(acc * (1.0 / l_i)[:, None], f16)", "cast(acc * (1.0 / l_i)[:, None], bf16)",
    };
    tilec_kernel_code code;
    lower_edited(edits, 3, &code);
    cr_assert_not_null(code.tma.name, "%s", code.remarks);
    cr_expect(strstr(code.source, "tl_wgrs_bf16_n64_bk(") && strstr(code.source, "tl_wgrs_bf16_n64("), "bf16 wgmma");
    cr_expect(strstr(code.source, "m64n64k16.f32.bf16.bf16"), "the bf16 instruction");
    tilec_kernel_code_free(&code);
}

/* Where the twin does not apply, the remark says why: a head size of 32
 * (K's rows are 64 bytes, not the 128-byte swizzle's), a store before
 * the loop (the producer warp group runs those statements too). */
Test(wgattn, refusals_say_why)
{
    int twin;
    char *r = remarks_with("hints { BM = 128, BN = 64, D = 64", "hints { BM = 128, BN = 64, D = 32", &twin);
    cr_expect(!twin);
    cr_expect(strstr(r, "not on wgmma (the sm_90a twin): load tk is 32 elements along its contiguous axis"), "%s", r);
    free(r);
    r = remarks_with("    let hi = S;\n", "    let hi = S;\n    store(o + base, 0.0, S > 0);\n", &twin);
    cr_expect(!twin);
    cr_expect(strstr(r, "not on wgmma (the sm_90a twin): a statement before the loop stores or returns"), "%s", r);
    free(r);
}

/* The SASS of `kernel` variant v's sm_90a twin alone (up to the next
 * function of the cubin); the test is skipped without cuobjdump. */
static char *twin_sass_in(const char *file, const char *kernel, int v)
{
    char name[64];
    snprintf(name, sizeof name, "Function : %s_v%d_tma", kernel, v);
    return sass_function(file, kernel, v, name);
}

static char *twin_sass(const char *kernel, int v) { return twin_sass_in(ATTN, kernel, v); }

/* The twin's SASS: HGMMA with A from registers (no A descriptor), B
 * K-major (K) and transposed (V), TMA copies (UTMALDG, no LDGSTS) and
 * mbarrier waits; an sm_90 compile has no twin. */
Test(wgattn, sass_has_register_a_hgmma, .timeout = 200)
{
    char *t = twin_sass("attention_d64", 0);
    cr_expect(strstr(t, "HGMMA.64x64x16.F32 R"), "S = Q K^T on wgmma");
    cr_expect(strstr(t, "gdesc[") && strstr(t, ".tnspB"), "P V with V transposed from its descriptor");
    cr_expect(strstr(t, "UTMALDG") && !strstr(t, "LDGSTS"), "the producer copies by TMA, not cp.async");
    cr_expect(strstr(t, "SYNCS"), "mbarriers");
    cr_expect(strstr(t, "USETMAXREG"), "the roles' registers");
    free(t);
    char *sass = disassemble_file(cuobjdump(), "-sass", ATTN, "attention_d64", 0, "sm_90");
    cr_expect(!strstr(sass, "_tma"), "an sm_90 compile has no twin");
    free(sass);
}

/* Two consumer warp groups whose last dot stays in flight (attention_d64
 * at BM = 128) take turns to issue their wgmma (FlashAttention-3's
 * ping-pong): a group's turn is named barrier 2 + its index, taken before
 * the last dot (P V) and passed on after the next iteration's first
 * (S = Q K^T), before its wait, so one group's softmax runs under the
 * other's products. On the persistent grid the turns run per unit: group 1
 * passes the first turn to group 0 before the walk, each group takes its
 * turn before each unit's loop and passes it on after the loop's last
 * wait, before the epilogue (so group 1's last P V does not wait behind
 * group 0's epilogue), and after the walk group 0 takes group 1's last
 * pass (none is left pending); the remark says so. One warp group (BM = 64) and the twins that wait for every
 * dot (d = 128: measured slower with the turns, docs/lowering.md) have
 * none. */
/* Occurrences of needle in [from, to). */
static int count_in(const char *from, const char *to, const char *needle)
{
    int n = 0;
    for (const char *p = from; (p = strstr(p, needle)) != NULL && p < to; p++)
        n++;
    return n;
}

static const char *next_line(const char *p)
{
    p = strchr(p, '\n');
    cr_assert_not_null(p);
    return p + 1 + strspn(p + 1, " ");
}

Test(wgattn, two_warp_groups_take_turns)
{
    static const struct {
        const char *kernel;
        int v, turns;
    } cases[] = {
        {"attention_d64", 0, 2},  {"attention_d64", 1, 2},  {"attention_d64", 2, 0},  {"attention_d64", 3, 1},
        {"attention_d128", 0, 0}, {"attention_d128", 1, 0}, {"attention_d128", 2, 0}, {"attention_d128", 3, 0},
    };
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, ATTN);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_kernel_code code;
        lower_v(ctx, m, cases[i].kernel, cases[i].v, &code);
        const char *tw = strstr(code.source, "_tma(");
        cr_assert_not_null(tw, "%s variant %d: a twin", cases[i].kernel, cases[i].v);
        cr_expect_eq(strstr(code.remarks, "two warp groups taking turns to issue, the last dot in flight") != NULL,
                     cases[i].turns != 0, "%s variant %d: the remark says whether the groups take turns:\n%s",
                     cases[i].kernel, cases[i].v, code.remarks);
        if (cases[i].turns == 2) { /* under 128 keys a step: one tile a block, its turns ended before the epilogue */
            cr_expect(code.tma.persistent == 0 && !strstr(tw, "for (int tl_u = ") && strstr(tw, "tl_bar_sync_n(") &&
                          strstr(code.remarks, "but one tile a block runs, not a persistent grid: its two warp groups "
                                               "take turns over ") &&
                          strstr(code.remarks, " keys a step (the persistent form measured 5-17% slower than one tile a "
                                               "block below 128 keys a step)"),
                      "%s variant %d: one tile a block, with its turns, and the remark says why:\n%s", cases[i].kernel,
                      cases[i].v, code.remarks);
            tilec_kernel_code_free(&code);
            continue;
        }
        cr_expect_eq(strstr(code.remarks, "the two warp groups' turns begun and ended per unit") != NULL, cases[i].turns,
                     "%s variant %d: the remark says the turns run per unit:\n%s", cases[i].kernel, cases[i].v,
                     code.remarks);
        cr_expect_eq(strstr(code.remarks, "each dot waited (the last dot's accumulator is 128 columns, wider than the "
                                          "64 kept in flight)") != NULL,
                     !strcmp(cases[i].kernel, "attention_d128"), "%s variant %d: the remark says why each dot waits:\n%s",
                     cases[i].kernel, cases[i].v, code.remarks);
        if (!cases[i].turns) {
            cr_expect(!strstr(tw, "tl_bar_sync_n(") && !strstr(tw, "tl_bar_arrive_n("), "%s variant %d: no turns",
                      cases[i].kernel, cases[i].v);
            tilec_kernel_code_free(&code);
            continue;
        }
        const char *first = strstr(tw, "if (tl_wgi == 1)"), *loop = first ? strstr(first, "for (tl_ix v_n0") : NULL;
        cr_assert(first && loop, "%s variant %d: the consumers' loop", cases[i].kernel, cases[i].v);
        const char *a0 = next_line(first), *walk = next_line(a0), *it0 = strstr(walk, "const int tl_it0 = tl_it;");
        const char *s0 = it0 ? strstr(it0, "tl_bar_sync_n(2 + tl_wgi, 256);") : NULL;
        cr_expect(!strncmp(a0, "tl_bar_arrive_n(2, 256);", 24) && !strncmp(walk, "for (int tl_u = ", 16) && s0 &&
                      s0 < loop && count_in(walk, loop, "tl_bar_") == 1,
                  "%s variant %d: group 1 passes the first turn before the walk, each group takes its own before "
                  "each unit's loop", cases[i].kernel, cases[i].v);
        /* in each copy of the body (unmasked, masked): S's wgmma, the turn passed on, then its wait; the turn
         * taken before P V's wgmma, which stay in flight */
        const char *at = loop;
        for (int copy = 0; copy < 2; copy++) {
            const char *s = strstr(at, "tl_wgrs_f16_n"), *commit = s ? strstr(s, "tl_wg_commit();\n") : NULL;
            cr_assert_not_null(commit, "%s variant %d: copy %d has S's wgmma", cases[i].kernel, cases[i].v, copy);
            const char *arv = next_line(commit), *wait = next_line(arv);
            cr_expect(!strncmp(arv, "tl_bar_arrive_n(3 - tl_wgi, 256);", 33) && !strncmp(wait, "tl_wg_wait<0>();", 16),
                      "%s variant %d, copy %d: the turn passed on between S's commit and its wait", cases[i].kernel,
                      cases[i].v, copy);
            const char *sync = strstr(arv, "tl_bar_sync_n(2 + tl_wgi, 256);"), *pv = strstr(arv, "tl_wg_fence();");
            cr_expect(sync && pv && sync < pv && strstr(pv, "tl_wgrs_f16_n64(") &&
                          strstr(pv, "tl_wgrs_f16_n64(") < strstr(pv, "stay in flight"),
                      "%s variant %d, copy %d: the turn taken before P V's wgmma", cases[i].kernel, cases[i].v, copy);
            at = pv ? strstr(pv, "stay in flight") : arv;
        }
        /* after the loop's last wait, before the epilogue's store: the turn passed on, no group waiting; after
         * the walk group 0 takes group 1's last pass */
        const char *wait = strstr(at, "tl_wg_wait<0>();"), *tail = strstr(at, "if (tl_wgi == 0) /* the turn passes on");
        const char *store = strstr(at, "(v_o + v_base)"), *last = store ? strstr(store, "if (tl_wgi == 0)\n") : NULL;
        cr_expect(wait && tail && wait < tail && store && tail < store &&
                      !strncmp(next_line(tail), "tl_bar_arrive_n(3, 256);", 24) &&
                      !strncmp(next_line(next_line(tail)), "else", 4) &&
                      !strncmp(next_line(next_line(next_line(tail))), "tl_bar_arrive_n(2, 256);", 24) &&
                      count_in(tail, store, "tl_bar_") == 2,
                  "%s variant %d: after the loop's wait and before the epilogue each group passes the turn on",
                  cases[i].kernel, cases[i].v);
        cr_expect(last && !strncmp(next_line(last), "tl_bar_sync_n(2, 256);\n}", 24) && count_in(store, last, "tl_bar_") == 0,
                  "%s variant %d: after the walk, group 0 takes group 1's last pass", cases[i].kernel, cases[i].v);
        cr_expect(strstr(code.source, "#define TL_BAR_TURN"), "the turn helpers");
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The persistent twin (issue 30): the barriers set up once, then each
 * role walks the block's units (query tile, head) with one stage counter
 * carried over them, so the ring's phases run on from unit to unit and the
 * producer copies the next unit's K and V while the consumers finish this
 * one; the statements before the loop run per unit in each role. Every
 * variant that walks, the turns' too from 128 keys a step (their turns per unit:
 * two_warp_groups_take_turns; under 128 one tile a block).
 * The causal bound grows with pid(0) (order.c), so a head's query tiles
 * run in mirrored pairs (tile n0 - 1, 0, n0 - 2, 1, ...) and a walking
 * block takes a pair a step (units 2b, 2b + 1, 2b + 2 gridDim.x, ...):
 * the old walk, one unit a step in reversed order, gave a block tiles of
 * one or two weights. The one-tile twin set the barriers up and counted
 * from 0 in its one tile. */
Test(wgattn, persistent_walk_carries_the_phases)
{
    static const struct {
        const char *kernel;
        int v;
    } cases[] = {{"attention_d64", 2}, {"attention_d64", 3}, {"attention_d128", 0}, {"attention_d128", 3}};
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, ATTN);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_kernel_code code;
        lower_v(ctx, m, cases[i].kernel, cases[i].v, &code);
        const char *tw = strstr(code.source, "_tma("), *end = tw ? tw + strlen(tw) : NULL;
        cr_assert_not_null(tw, "%s variant %d: a twin", cases[i].kernel, cases[i].v);
        cr_expect_eq(code.tma.persistent, 1);
        const char *walk = "int tl_it = 0;\n",
                   *units = "for (int tl_u = tl_pairs ? 2 * (int)blockIdx.x : (int)blockIdx.x; tl_u < tl_units;\n"
                            "             tl_u += !tl_pairs ? (int)gridDim.x : (tl_u & 1) ? 2 * (int)gridDim.x - 1 : 1) {";
        const char *init = strstr(tw, "tl_mbar_init(tl_full"), *roles = strstr(tw, "if (tl_tid0 >= ");
        const char *p0 = roles ? strstr(roles, walk) : NULL, *pu = p0 ? strstr(p0, units) : NULL;
        const char *cons = pu ? strstr(pu, "tl_setmaxnreg_inc<") : NULL; /* 240, or 232 at two blocks an SM */
        const char *c0 = cons ? strstr(cons, walk) : NULL, *cu = c0 ? strstr(c0, units) : NULL;
        cr_assert(init && roles && init < roles && pu && cu, "%s variant %d: the barriers once, then each role's walk",
                  cases[i].kernel, cases[i].v);
        cr_expect(count_in(tw, roles, "const int tl_pairs = (int)gridDim.x < tl_units;") == 1,
                  "%s variant %d: pairs a step where a block walks", cases[i].kernel, cases[i].v);
        cr_expect(count_in(tw, end, "tl_mbar_init(tl_full") == 1 && count_in(tw, end, "__syncthreads();") == 1 &&
                      count_in(tw, end, walk) == 2 && count_in(tw, end, units) == 2,
                  "%s variant %d: one setup, one counter a role, set before its walk", cases[i].kernel, cases[i].v);
        /* the unit's coordinates, a head's query tiles in mirrored pairs (the causal bound grows with pid(0)),
         * and its statements before the loop, in each role */
        const char *pid0 = "const int tl_h = tl_u / tl_grid0, tl_i = tl_u - tl_h * tl_grid0;\n"
                           "        const int tl_pid0 = (tl_i & 1) ? tl_i >> 1 : tl_grid0 - 1 - (tl_i >> 1);\n"
                           "        const int tl_pid1 = tl_h % tl_grid1, tl_pid2 = tl_h / tl_grid1;";
        cr_expect(count_in(pu, cons, pid0) == 1 && count_in(cu, end, pid0) == 1 &&
                      count_in(pu, cons, "v_hi = (") == 1 && count_in(cu, end, "v_hi = (") == 1,
                  "%s variant %d: each role's unit and its causal bound", cases[i].kernel, cases[i].v);
        cr_expect(strstr(pu, "tl_mbar_wait(tl_empty + tl_s * 8, ((tl_it / ") < cons &&
                      strstr(cu, "const int tl_it0 = tl_it;") &&
                      strstr(cu, "tl_mbar_wait(tl_full + (tl_it % ") &&
                      !strstr(cu, "tl_it > 0") && count_in(pu, end, "tl_mbar_arrive(tl_empty") >= 1,
                  "%s variant %d: the phases from the carried counter, a unit's first stage released by the last",
                  cases[i].kernel, cases[i].v);
        cr_expect(strstr(code.remarks, "on a persistent grid: a block walks (query tile, head) units") &&
                      strstr(code.remarks, "a head's query tiles in mirrored pairs (the heaviest with the lightest), a "
                                           "walking block taking a pair a step"),
                  "%s", code.remarks);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The loop's trips a unit the launch may weigh (lower/wgmma.c
 * lower_wg_trips, runtime/tma.c persist_walks): the docs-written forms at
 * most S (parameter 4) over BN, the causal bound `minimum(S, ...)`
 * assigned in a branch (fa_d128, fa_d64_plain), `minimum(nblk, ...)` of
 * `nblk = cdiv(S, BN)` stepping by 1 (fa_d64_exp2: ceil(S / 64)), or
 * picked by a scalar `where` (fa_d64_lets: order.c reads it, so pid(0) is
 * reversed and the walk pairs its tiles). A bound that is not a
 * parameter: kper 0. */
Test(wgattn, loop_trips_for_the_launch)
{
    static const struct {
        const char *path, *kernel;
        uint32_t kper;
    } cases[] = {
        {"tests/attn_forms/fa_d128.tile", "fa_d128", 64},
        {"tests/attn_forms/fa_d64_plain.tile", "fa_d64_plain", 64},
        {"tests/attn_forms/fa_d64_exp2.tile", "fa_d64_exp2", 64},
        {"tests/attn_forms/fa_d64_lets.tile", "fa_d64_lets", 64},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = parse(ctx, cases[i].path);
        tilec_kernel_code code;
        lower_v(ctx, m, cases[i].kernel, 0, &code);
        cr_assert_not_null(code.tma.name, "%s: a twin", cases[i].kernel);
        cr_expect(code.tma.kper == cases[i].kper && (!cases[i].kper || (code.tma.kbound == 4 && code.tma.kfrom == 0)),
                  "%s: trips from %u over %u (kbound %u)", cases[i].kernel, code.tma.kfrom, code.tma.kper,
                  code.tma.kbound);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
    /* the same loop bounded by a let of another parameter's value and S: not one parameter, not known */
    tilec_ctx *ctx = tilec_ctx_new();
    size_t n;
    char *src = read_file("tests/aot_attn.tile", &n);
    cr_assert_not_null(src);
    char text[8192];
    cr_assert_lt(n + 64, sizeof text);
    memcpy(text, src, n + 1);
    free(src);
    char *at = strstr(text, "for n0 in 0 .. S step BN");
    cr_assert_not_null(at);
    const char *edit = "for n0 in 0 .. maximum(S, bh) step BN";
    memmove(at + strlen(edit), at + strlen("for n0 in 0 .. S step BN"), strlen(at + strlen("for n0 in 0 .. S step BN")) + 1);
    memcpy(at, edit, strlen(edit));
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "at.tile", text, strlen(text), &m), TILEC_OK);
    tilec_kernel_code code;
    lower_v(ctx, m, "at", 0, &code);
    cr_expect(code.tma.name && code.tma.kper == 0, "maximum(S, bh): kper %u", code.tma.kper);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* A twin whose two warp groups take turns over fewer than 128 keys a step
 * runs one tile a block (target.c, WGA_TURNS_WALK_N): its remark names
 * the variant that gives the first dot 128 keys, by the hint its keys'
 * range reads (BN: `cols[:, None]` of a [BN, D] load read as trans in
 * fa_d64_plain, `kj[None, :]` of a [HD, BN] load in fa_d64_exp2, whose D
 * and HD are 64 too), and says nothing where a variant has it (the
 * example's attention_d64 variants 0 and 1; fa_d64_plain given `{ BN = 128
 * }`), nor where no turns are taken (fa_d128, fa_d64_lets). */
Test(wgattn, short_key_steps_name_the_128_key_variant)
{
    static const struct {
        const char *path, *kernel;
        int v, named;
    } cases[] = {
        {"tests/attn_forms/fa_d64_plain.tile", "fa_d64_plain", 0, 1},
        {"tests/attn_forms/fa_d64_exp2.tile", "fa_d64_exp2", 0, 1},
        {"tests/attn_forms/fa_d128.tile", "fa_d128", 0, 0},
        {"tests/attn_forms/fa_d64_lets.tile", "fa_d64_lets", 0, 0},
        {ATTN, "attention_d64", 0, 0},
        {ATTN, "attention_d64", 1, 0},
    };
    const char *clause = "64 keys a step and no variant with 128: add one (`variants { {}, { BN = 128 } }`) for the "
                         "twin that walks a persistent grid";
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = parse(ctx, cases[i].path);
        tilec_kernel_code code;
        lower_v(ctx, m, cases[i].kernel, cases[i].v, &code);
        cr_assert_not_null(code.tma.name, "%s: a twin", cases[i].kernel);
        cr_expect_eq(strstr(code.remarks, clause) != NULL, cases[i].named, "%s variant %d:\n%s", cases[i].kernel,
                     cases[i].v, code.remarks);
        cr_expect_eq(strstr(code.remarks, "keys a step and no variant with") != NULL, cases[i].named, "%s", code.remarks);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
    /* fa_d64_plain with the variant: neither variant's remark asks for it */
    size_t n;
    char *src = read_file("tests/attn_forms/fa_d64_plain.tile", &n);
    cr_assert_not_null(src);
    char text[8192];
    const char *hints = "hints { BM = 128, BN = 64, D = 64, warps = 4 }\n";
    char *at = strstr(src, hints);
    cr_assert(at && n + 64 < sizeof text);
    snprintf(text, sizeof text, "%.*s%s    variants { {}, { BN = 128 } }\n%s", (int)(at - src), src, hints,
             at + strlen(hints));
    free(src);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "plain128.tile", text, strlen(text), &m), TILEC_OK);
    for (int v = 0; v < 2; v++) {
        tilec_kernel_code code;
        lower_v(ctx, m, "fa_d64_plain", v, &code);
        cr_assert_not_null(code.tma.name);
        cr_expect(!strstr(code.remarks, "keys a step and no variant with"), "variant %d: %s", v, code.remarks);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The turns in SASS: bar.sync / bar.arrive by the group's barrier in a
 * register, and every wgmma of a dot still issued back to back (ptxas
 * serializes the kernel's wgmma, C7515, a WARPGROUP.DEPBAR after each
 * HGMMA, when group 1's last arrive is a computed barrier id with the last
 * P V in flight: the tail takes constant ids after the wait). */
Test(wgattn, sass_turns_keep_wgmma_in_flight, .timeout = 200)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    for (int v = 0; v < 4; v += v == 1 ? 2 : 1) { /* the two-group variants: 0, 1 and 3 (BN = 128) */
        char *sass = disassemble_file(tool, "-sass", ATTN, "attention_d64", v, "sm_90a");
        const char *twin = strstr(sass, "_tma");
        cr_assert_not_null(twin, "variant %d: the twin", v);
        int hg = 0, dep = 0;
        for (const char *p = twin; (p = strstr(p, "HGMMA.")) != NULL; p++)
            hg++;
        for (const char *p = twin; (p = strstr(p, "WARPGROUP.DEPBAR")) != NULL; p++)
            dep++;
        cr_expect(strstr(twin, "BAR.SYNC.DEFER_BLOCKING R") && strstr(twin, "BAR.ARV R"),
                  "variant %d: the turns by a barrier in a register", v);
        cr_expect(hg >= 12 && dep <= 4, "variant %d: %d HGMMA, %d WARPGROUP.DEPBAR (serialized: one a HGMMA)", v, hg,
                  dep);
        free(sass);
    }
}

/* STL and LDL in a twin's SASS t from the consumers' setmaxnreg.inc
 * (USETMAXREG.TRY_ALLOC) to the loop's last HGMMA. */
static int consumer_spills(const char *t)
{
    const char *from = strstr(t, "USETMAXREG.TRY_ALLOC"), *to = NULL;
    int n = 0;
    for (const char *p = from; p && (p = strstr(p, "HGMMA.")) != NULL; p++)
        to = p;
    cr_assert(from && to, "the consumers' span");
    for (const char *p = from; (p = strstr(p, "STL")) != NULL && p < to; p++)
        n++;
    for (const char *p = from; (p = strstr(p, "LDL")) != NULL && p < to; p++)
        n++;
    return n;
}

/* The 128-key twin (attention_d64 variant 3: S's accumulator 64 registers
 * a thread beside acc's 32 and P's fragments): at setmaxnreg 232 for the
 * consumers ptxas serialized every wgmma of it (C7512, "insufficient
 * register resources": a WARPGROUP.DEPBAR after each of its 24 HGMMA);
 * at 240 (the producer's one TMA thread at 24) the products of a dot
 * issue back to back and nothing spills from the consumers'
 * setmaxnreg.inc to the loop's last HGMMA, nor in the producer. */
Test(wgattn, sass_128_key_twin_not_serialized, .timeout = 200)
{
    char *t = twin_sass("attention_d64", 3);
    int hg = 0, dep = 0;
    for (const char *p = t; (p = strstr(p, "HGMMA.")) != NULL; p++)
        hg++;
    for (const char *p = t; (p = strstr(p, "WARPGROUP.DEPBAR")) != NULL; p++)
        dep++;
    cr_expect(strstr(t, "HGMMA.64x128x16.F32"), "S = Q K^T over 128 keys");
    cr_expect(strstr(t, "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xf0") && strstr(t, "USETMAXREG.DEALLOC.CTAPOOL 0x18"),
              "the consumers at 240 registers, the producer at 24");
    cr_expect(hg >= 24 && dep <= 4, "%d HGMMA, %d WARPGROUP.DEPBAR (serialized: one a HGMMA)", hg, dep);
    int spill = consumer_spills(t);
    cr_expect_eq(spill, 0, "%d STL / LDL in the consumers' loop", spill);
    const char *prod = strstr(t, "USETMAXREG.DEALLOC");
    cr_expect(prod && !strstr(prod, "STL") && !strstr(prod, "LDL"), "the producer at 24 registers spills nothing");
    free(t);
}

/* A dot's A operand that the loop does not assign (Q), where the dots'
 * accumulators and A tiles pass 192 registers a thread (d = 128 at 128
 * keys a step: 224), is stored once before the loop into shared memory in
 * the 128-byte swizzle, K-major (box k / 64 of all the M rows, chunk (k /
 * 8) % 8 at that xor row % 8), fenced for the async proxy, and S = Q K^T
 * reads it through a wgmma descriptor (the warp group's 64 rows; a k16
 * step 32 bytes, 64 of K a box of M rows further), the rings after it; P,
 * assigned in the loop, stays in registers, and so does Q where the
 * registers fit (d = 128 at 64 keys: 160); the remark says which and why. */
Test(wgattn, q_from_shared_memory_where_loop_invariant)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, ATTN);
    tilec_kernel_code code;
    lower_v(ctx, m, "attention_d128", 3, &code);
    const char *tw = strstr(code.source, "_tma(");
    cr_assert_not_null(tw, "%s", code.remarks);
    cr_expect(strstr(code.remarks, ", A tq of the dot at line 64 from shared memory (loop-invariant, the dots' accumulators "
                                   "and A tiles 224 registers a thread, over 192: stored once before the loop, 32768 "
                                   "bytes), A p of the dot at line 72 from registers (assigned in the loop), setmaxnreg 240"),
              "the remark:\n%s", code.remarks);
    /* per unit in the consumers' walk, between barriers of its warp group (each writes and reads its 64 rows) */
    const char *cons = strstr(tw, "tl_setmaxnreg_inc<240>();"), *walk = cons ? strstr(cons, "for (int tl_u = ") : NULL;
    const char *bar = "asm volatile(\"bar.sync %0, 128;\" :: \"r\"(4 + (tl_warp >> 2)) : \"memory\");";
    const char *b0 = walk ? strstr(walk, bar) : NULL;
    const char *st = b0 ? strstr(b0, "if (tl_tid0 < 256) { /* v_tq into shared memory for wgmma: K-major, the 128-byte "
                                     "swizzle */") : NULL;
    const char *sync = st ? strstr(st, bar) : NULL, *loop = sync ? strstr(sync, "for (tl_ix v_n0") : NULL;
    cr_assert(loop && !strstr(walk, "__syncthreads();"),
              "Q stored by the consumers of each unit between their warp group's barriers, before the loop");
    cr_expect(strstr(st, "*(unsigned *)(tl_smem + tl_wro + (tl_i1 >> 6) * 16384 + tl_i0 * 128 + ((((tl_i1 >> 3) & 7) ^ "
                         "(tl_i0 & 7)) << 4) + (tl_i1 & 7) * 2) = *(const unsigned *)&v_tq[tl_j];") &&
                  strstr(st, "tl_fence_async_smem();") < sync,
              "pairs into the swizzle, then fenced for wgmma");
    cr_expect(strstr(tw, "tl_tma_3d(tl_sa(tl_smem) + tl_wro + 32768 + tl_s * 32768 + 0, &tl_tm0"), "K's ring after Q");
    cr_expect(strstr(tw, "tl_wg_desc(tl_sa(tl_smem) + tl_wro + (tl_warp >> 2) * 8192, 16, 1024, 1);") &&
                  strstr(tw, "tl_wgmma_f16_n128_bk(v_s_unscaled, (unsigned long long)tl_adhi << 32 | (tl_adlo + (((tl_q "
                             ">> 2) * 16384 + (tl_q & 3) * 32) >> 4)), "),
              "S = Q K^T with A by its descriptor");
    cr_expect(strstr(tw, "/* A v_p from registers, B v_tv") && strstr(tw, "tl_wgrs_f16_n128(v_acc, tl_fw[tl_q]"),
              "P V with A from registers");
    cr_expect(!strstr(tw, "tl_fw[tl_k >> 4][tl_q] = *(const unsigned *)&v_tq["), "no fragments of Q");
    tilec_kernel_code_free(&code);
    /* 64 keys a step: the registers fit, Q stays there */
    lower_v(ctx, m, "attention_d128", 1, &code);
    cr_expect(strstr(code.remarks, ", A tq of the dot at line 64 from registers (loop-invariant; the dots' accumulators "
                                   "and A tiles take 160 registers a thread, not over 192), A p of the dot at line 72 from "
                                   "registers (assigned in the loop), setmaxnreg 240") &&
                  strstr(code.source, "tl_wgrs_f16_n64_bk(v_s_unscaled, tl_fw[tl_q]") &&
                  !strstr(code.source, "into shared memory for wgmma"),
              "Q in registers where they fit:\n%s", code.remarks);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    /* the d64 kernel given d = 128 and 128 keys: Q assigned in the loop stays in registers */
    static const char *const assigned[] = {"hints { BM = 128, BN = 64, D = 64", "hints { BM = 128, BN = 128, D = 128",
                                           "        m_i = m_new;\n    }", "        m_i = m_new;\n        tq = tq;\n    }"};
    lower_edited(assigned, 2, &code);
    cr_assert_not_null(code.tma.name, "%s", code.remarks);
    cr_expect(strstr(code.remarks, ", A tq of the dot at line 30 from registers (assigned in the loop), A p of the dot "
                                   "at line 38 from registers (assigned in the loop), setmaxnreg 240") &&
                  strstr(code.source, "tl_wgrs_f16_n128_bk(v_s_unscaled, tl_fw[tl_q]") &&
                  !strstr(code.source, "into shared memory for wgmma"),
              "Q in registers where the loop assigns it:\n%s", code.remarks);
    tilec_kernel_code_free(&code);
    /* Q loaded as f32 and cast at the dot: the same tile, converted as it is stored */
    static const char *const cast[] = {"hints { BM = 128, BN = 64, D = 64", "hints { BM = 128, BN = 128, D = 128",
                                       "kernel attention_d64(q: *f16,", "kernel attention_d64(q: *f32,",
                                       "dot(tq, tk)", "dot(cast(tq, f16), tk)"};
    lower_edited(cast, 3, &code);
    cr_assert_not_null(code.tma.name, "%s", code.remarks);
    cr_expect(strstr(code.remarks, ", A tq of the dot at line 30 from shared memory (loop-invariant, the dots' accumulators "
                                   "and A tiles 256 registers a thread, over 192: stored once before the loop, 32768 bytes)"),
              "the cast's tile from shared memory:\n%s", code.remarks);
    const char *cv = strstr(code.source, "into shared memory for wgmma");
    cr_expect(cv && strstr(cv, "*(__half *)(tl_smem + tl_wro + (tl_i1 >> 6) * 16384") && strstr(cv, "__float2half_rn(v_tq[tl_j])"),
              "each element converted to f16 as it is stored");
    tilec_kernel_code_free(&code);
}

/* The 128-key d = 128 twin (attention_d128 variant 3: S's accumulator 64
 * registers a thread and acc's 64): with Q's 32 fragment registers it
 * serialized every wgmma (32 WARPGROUP.DEPBAR for 32 HGMMA, C7512) and
 * spilled in its loop (58 STL, 48 LDL; CUDA 13.0); with Q read from shared
 * memory by descriptor S's HGMMA take A from gdesc, each dot's products
 * issue back to back, and nothing spills from the consumers'
 * setmaxnreg.inc to the loop's last HGMMA. */
Test(wgattn, sass_d128_128_keys_q_from_shared_memory, .timeout = 200)
{
    char *t = twin_sass("attention_d128", 3);
    int hg = 0, dep = 0, adesc = 0;
    for (const char *p = t; (p = strstr(p, "HGMMA.64x128x16.F32 R")) != NULL; p++) {
        hg++;
        const char *sp = strchr(p + 21, ' '); /* past the accumulator: A is gdesc[...] or a register */
        adesc += sp && !strncmp(sp, " gdesc[", 7);
    }
    for (const char *p = t; (p = strstr(p, "WARPGROUP.DEPBAR")) != NULL; p++)
        dep++;
    cr_expect(hg >= 32 && dep <= 4, "%d HGMMA, %d WARPGROUP.DEPBAR (serialized: one a HGMMA)", hg, dep);
    cr_expect(adesc >= 16, "%d HGMMA with A from a descriptor (S = Q K^T: 8 a copy of the body)", adesc);
    int spill = consumer_spills(t);
    cr_expect_eq(spill, 0, "%d STL / LDL in the consumers' loop", spill);
    free(t);
}

/* The folded copy's guard, (unsigned)bits(c) - 1 < 0x7f7fffff, is c > 0 &&
 * c < inf for every f32 (zeros, subnormals, the largest finite, infinities,
 * NaNs, negatives). */
Test(wgattn, the_fold_guard_is_positive_and_finite)
{
    const float v[] = {0.0f, -0.0f, 1e-45f, 1.17549435e-38f, 0.125f, 1.0f, 3.40282347e38f, INFINITY, -INFINITY,
                       NAN, -NAN, -1e-45f, -2.0f};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        int guard = bits - 1u < 0x7f7fffffu, want = v[i] > 0.0f && v[i] < INFINITY;
        cr_expect_eq(guard, want, "f32 bits 0x%08x: guard %d, c > 0 && c < inf %d", (unsigned)bits, guard, want);
    }
}

/* The scale folded into the exponent (lower/fold.c): the row max taken of
 * the unscaled product and scaled once a row, each exponent's argument
 * `s0 * c - m` (one FFMA), in a copy run where c is positive and finite;
 * any spelling of the product (the scale on either side, K as stored or
 * given as [D, S], trans inline), the mma.sync kernels too. */
static void expect_folded(const tilec_kernel_code *code, const char *what)
{
    cr_expect(strstr(code->source, "((unsigned)__float_as_int(v_qk_scale) - 1u < 0x7f7fffffu)"),
              "%s: the folded copy runs where the scale is positive and finite", what);
    cr_expect(strstr(code->source, "the scale folded into the exponent"), "%s: the copy is there", what);
    cr_expect(strstr(code->source, "tl_exp2(((v_sm_unscaled[tl_j] * v_qk_scale) - v_m_new["),
              "%s: exp2 of s0 * c - m", what);
    cr_expect(strstr(code->source, "tl_max(v_m_i[tl_j], (tl_t"), "%s: the row max scaled after the reduction", what);
}

Test(wgattn, scale_folded_into_the_exponent)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, ATTN);
    for (int v = 0; v < 3; v++) {
        tilec_kernel_code code;
        lower_v(ctx, m, v == 2 ? "attention_d128" : "attention_d64", v, &code);
        expect_folded(&code, "attention.tile");
        /* the twin's copy and the mma.sync kernel's: both fold */
        const char *tw = strstr(code.source, "_tma(");
        cr_assert_not_null(tw);
        cr_expect(strstr(tw, "v_sm_unscaled") && strstr(code.source, "v_sm_unscaled") < tw, "both kernels fold");
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    m = parse(ctx, ATTN_KT);
    static const char *const kt[] = {"attention_kds", "attention_kt_inline", "attention_kt_let"};
    for (int i = 0; i < 3; i++) {
        tilec_kernel_code code;
        lower_v(ctx, m, kt[i], 0, &code);
        expect_folded(&code, kt[i]);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    /* the scale on the left */
    static const char *const left[] = {"let s = dot(tq, tk) * qk_scale;", "let s = qk_scale * dot(tq, tk);"};
    tilec_kernel_code code;
    lower_edited(left, 1, &code);
    expect_folded(&code, "qk_scale * dot(tq, tk)");
    tilec_kernel_code_free(&code);
}

/* Where the fold would not be the body's value it is left out: a scale
 * the body assigns, a scaled tile the body assigns again, a product
 * scaled by a tile. */
Test(wgattn, scale_fold_refused)
{
    static const char *const edits[][2] = {
        {"        m_i = m_new;\n", "        m_i = m_new;\n        qk_scale = qk_scale * 0.5;\n"},
        {"        let sm = where(ok, s, -inf);\n", "        s = s + 1.0;\n        let sm = where(ok, s, -inf);\n"},
        {"let s = dot(tq, tk) * qk_scale;", "let s = dot(tq, tk) * full(f32, qk_scale, BM, BN);"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        tilec_kernel_code code;
        lower_edited(edits[i], 1, &code);
        cr_expect(!strstr(code.source, "_unscaled"), "edit %zu: no fold", i);
        cr_expect(!strstr(code.source, "the scale folded"), "edit %zu: no folded copy", i);
        tilec_kernel_code_free(&code);
    }
}

/* One wgmma descriptor a stage: each k16 step adds its offset / 16 to the
 * descriptor's low word, no descriptor rebuilt a step. */
Test(wgattn, one_descriptor_a_stage)
{
    tilec_kernel_code code;
    static const char *const none[] = {"attention_d64", "attention_d64"};
    lower_edited(none, 1, &code);
    const char *tw = strstr(code.source, "_tma(");
    cr_assert_not_null(tw);
    cr_expect(strstr(tw, "const unsigned long long tl_bd = tl_wg_desc(tl_sa(tl_smem) + "), "the stage's descriptor");
    cr_expect(strstr(tw, "(unsigned long long)tl_bdhi << 32 | (tl_bdlo + (((tl_q >> 2) * 8192 + (tl_q & 3) * 32) >> 4))"),
              "K-major steps: 32 bytes, a box of 64 rows further each 64 of K");
    cr_expect(strstr(tw, "(unsigned long long)tl_bdhi << 32 | (tl_bdlo + ((tl_q * 2048) >> 4))"), "MN-major steps: 16 rows");
    cr_expect(!strstr(tw, "tl_wg_desc(tl_bw"), "no descriptor a step");
    tilec_kernel_code_free(&code);
}

/* Whole tiles of an affine load (unit stride along the contiguous axis, a
 * constant one along the other) are copied from the thread's first chunk
 * in constant steps, in the twin's producer and in the mma.sync ring
 * alike: d = 128's K and V rows are 128 halves, so the 128 producer
 * threads' 8-half chunks span 8 rows a step (8 x 128 halves of global
 * memory, 8 swizzled rows of 64 halves of the ring), d = 64's 16 rows;
 * no chunk's address is the load's expression at its own indices. */
Test(wgattn, whole_tiles_copied_in_constant_steps)
{
    static const struct {
        const char *kernel;
        int v;
        const char *step; /* K's and V's alike */
    } cases[] = {
        {"attention_cp_d128", 0, "tl_d + tl_q * 512, tl_g + tl_q * 1024LL, 16);"},
        {"attention_cp_d64", 0, "tl_d + tl_q * 1024, tl_g + tl_q * 1024LL, 16);"},
    };
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, ATTN_RING); /* example's kernels whose V no map describes: cp.async producers */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_kernel_code code;
        lower_v(ctx, m, cases[i].kernel, cases[i].v, &code);
        const char *tw = strstr(code.source, "_tma(");
        cr_assert_not_null(tw, "%s variant %d: a twin", cases[i].kernel, cases[i].v);
        const char *kg = "const __half *tl_g = (((v_k + v_base) + ((v_n0 + ((long long)(0))) * ((long long)(v_D)))) "
                         "+ 0) + (tl_i0 * 1 + tl_i1 * ";
        cr_expect(strstr(tw, kg), "%s variant %d: K's first chunk of the thread (stride 1 along d)", cases[i].kernel,
                  cases[i].v);
        const char *k = strstr(tw, cases[i].step), *v = k ? strstr(k + 1, cases[i].step) : NULL;
        cr_expect(k && v, "%s variant %d: K's and V's steps %s", cases[i].kernel, cases[i].v, cases[i].step);
        cr_expect(!strstr(code.source, "((long long)(v_D)))) + tl_i0), 16);") &&
                      !strstr(code.source, "((long long)(v_D)))) + tl_i1), 16);"),
                  "%s variant %d: no whole-tile chunk at its own indices", cases[i].kernel, cases[i].v);
        const char *pro = strstr(code.source, "tl_cp16((__half *)(tl_smem + 0 + tl_s * ");
        cr_expect(pro && !strncmp(strstr(pro, ") + ") + 4, "tl_d + tl_q * ", 14),
                  "%s variant %d: the mma.sync ring's prologue in steps too", cases[i].kernel, cases[i].v);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The twin's producer warp group holds no address across iterations: at
 * 56 registers (setmaxnreg) the d = 128 twin's producer (BN = 64, 16
 * cp.async a stage a thread) spilled 20 hoisted addresses an iteration
 * (LDL in its loop) before its whole tiles were copied in constant steps;
 * now its copies take constant offsets ([R+0x..]) and nothing spills past
 * the USETMAXREG.DEALLOC. */
Test(wgattn, sass_producer_spills_nothing, .timeout = 200)
{
    char *t = twin_sass_in(ATTN_RING, "attention_cp_d128", 0); /* attention_d128 v1 on cp.async */
    const char *prod = strstr(t, "USETMAXREG.DEALLOC");
    cr_assert_not_null(prod, "the producer's setmaxnreg.dec");
    int ldl = 0, imm = 0;
    for (const char *p = prod; (p = strstr(p, "LDL")) != NULL; p++)
        ldl++;
    for (const char *p = prod; (p = strstr(p, "LDGSTS.E.BYPASS.128 [R")) != NULL; p++) {
        const char *e = strchr(p, ']');
        imm += e && memchr(p, '+', (size_t)(e - p)) != NULL;
    }
    cr_expect_eq(ldl, 0, "the producer reloads %d spilled values", ldl);
    cr_expect(imm >= 8, "copies at constant offsets of one shared address (%d)", imm);
    free(t);
}

/* SASS instructions of t from its first `from` to its last `to` (a line
 * with an address and an opcode is one); -1 when either is missing. */
static int sass_span(const char *t, const char *from, const char *to)
{
    const char *a = strstr(t, from), *b = NULL;
    for (const char *p = a; p && (p = strstr(p, to)) != NULL; p++)
        b = p;
    if (!a || !b)
        return -1;
    int n = 0;
    for (const char *p = a; p && p < b; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *e = strstr(p, "*/"), *nl = strchr(p, '\n');
        n += e && (!nl || e < nl) && e[2 + strspn(e + 2, " ")] >= 'A' && e[2 + strspn(e + 2, " ")] <= 'Z';
    }
    return n;
}

/* K and V by TMA: the producer warp group's one thread issues a UTMALDG a
 * box (no LDGSTS in the twin), so its code from its setmaxnreg.dec to its
 * last copy is a few dozen instructions (a persistent twin's walk adds its
 * unit's coordinates, three integer divisions: 133 and 147 on CUDA 13.0's
 * ptxas, no load of Q, which the producer computes and never reads); with 128 threads copying 16-byte
 * chunks by cp.async it was 496 (d = 64) and 962 (d = 128, 16 LDGSTS a
 * thread a stage) on CUDA 13.0's ptxas. */
Test(wgattn, sass_producer_issues_tma, .timeout = 200)
{
    static const struct {
        const char *kernel;
        int v, boxes; /* UTMALDG a stage: K's and V's D / 64 boxes each */
    } cases[] = {{"attention_d64", 0, 2}, {"attention_d128", 1, 4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = twin_sass(cases[i].kernel, cases[i].v);
        int n = 0;
        for (const char *p = t; (p = strstr(p, "UTMALDG.3D")) != NULL; p++)
            n++;
        int span = sass_span(t, "USETMAXREG.DEALLOC", "UTMALDG");
        cr_expect_eq(n, cases[i].boxes, "%s variant %d: %d UTMALDG.3D", cases[i].kernel, cases[i].v, n);
        cr_expect(!strstr(t, "LDGSTS"), "%s variant %d: no cp.async", cases[i].kernel, cases[i].v);
        cr_expect(span > 0 && span <= 200, "%s variant %d: the producer's %d instructions to its last copy",
                  cases[i].kernel, cases[i].v, span);
        const char *prod = strstr(t, "USETMAXREG.DEALLOC"), *last = NULL;
        for (const char *p = prod; p && (p = strstr(p, "UTMALDG")) != NULL; p++)
            last = p;
        int ldg = 0;
        for (const char *p = prod; p && (p = strstr(p, " LDG.E")) != NULL && p < last; p++)
            ldg++;
        cr_expect(last && ldg == 0, "%s variant %d: the producer loads nothing from global memory (%d LDG)",
                  cases[i].kernel, cases[i].v, ldg);
        free(t);
    }
}
