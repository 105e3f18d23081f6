/* test_rows.c: issue 31's [ROWS, BLOCK] row kernels (bench/harness/rows_tuned.tile,
 * the compiler's default row space) against the hand-tuned one-row kernels
 * (examples/layernorm.tile, softmax.tile). At ROWS 1 the row layout is the
 * 1-D kernel's (a thread's 16-byte vectors warps * 32 * 4 columns apart,
 * lower/linlay.c lower_lin_rows), the bound checks of a vector's elements
 * compare the index of its first element (lower/mask.c, the mask rule), and,
 * with cuobjdump at hand (../shared/tools/sass), layernorm's variant 1
 * (ROWS 1, BLOCK 1024, warps 4: the benchmark's 4096x768 choice) needs no
 * more registers than the hand-tuned kernel's allocation of 40 (41 before:
 * 48 allocated, 10 blocks of 128 threads a multiprocessor against 12). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sass_helpers.h"

#define ROWS_TUNED "bench/harness/rows_tuned.tile"

/* Variant v of kernel in file for sm_90a (cuobjdump -res-usage): at most
 * max_reg registers (why: what more would cost) and no stack. */
static void expect_fits(const char *tool, const char *file, const char *kernel, int v, int max_reg, const char *why)
{
    char *out = disassemble_file(tool, "-res-usage", file, kernel, v, "sm_90a");
    const char *r = strstr(out, "REG:"), *s = strstr(out, "STACK:");
    cr_assert(r && s, "no REG/STACK in:\n%s", out);
    int reg = atoi(r + 4), stack = atoi(s + 6);
    cr_expect_leq(reg, max_reg, "%s %s v%d: %d registers (%s)", file, kernel, v, reg, why);
    cr_expect_eq(stack, 0, "%s %s v%d: %d bytes of stack", file, kernel, v, stack);
    free(out);
}

Test(rows, variant_1_is_rows_1_block_1024_warps_4)
{
    for (int k = 0; k < 2; k++) {
        char *src = lowered_source(ROWS_TUNED, k ? "softmax" : "layernorm", 1);
        cr_assert(strstr(src, "tune candidate 1: ROWS = 1, BLOCK = 1024, warps = 4"), "%s", src);
        free(src);
    }
}

/* [1, 1024] over 4 warps: register bits 0-1 columns 0-1, lanes 2-6, warps
 * 7-8, register bit 2 column 9 (the one-row kernel's ((j / 4) * 128 + tid)
 * * 4 + j % 4); before, the warps took columns 8-9 and register bit 2
 * column 7 (each warp a contiguous quarter of the row). */
Test(rows, one_row_layout_is_the_1d_kernels)
{
    char *src = lowered_source(ROWS_TUNED, "softmax", 1);
    const char *want = "const int tl_i1 = ((((tl_j) >> 0) & 3) << 0 | (((tl_j) >> 2) & 1) << 9) | (((tl_lane >> 0) & 31) << 2) | "
                       "(((tl_warp >> 0) & 3) << 7);";
    cr_expect(strstr(src, want), "softmax v1's column index is not the 1-D kernel's:\n%s", src);
    free(src);
}

/* Element q > 0 of a vector compares the first element's index with the
 * bound less q (saturating): one index register for the whole vector. */
Test(rows, bound_checks_against_the_first_element)
{
    char *src = lowered_source(ROWS_TUNED, "layernorm", 1);
    cr_expect(strstr(src, "const bool tl_m1 = (tl_i1 < (v_cols >= -2147483647 ? v_cols - 1 : -2147483647 - 1));"), "%s", src);
    cr_expect(strstr(src, "const bool tl_m3 = ((v_c0 + tl_i1) < (v_cols >= -2147483645 ? v_cols - 3 : -2147483647 - 1));"),
              "%s", src);
    cr_expect(!strstr(src, "(tl_i1 + 3) < v_cols"), "an element's own index compared:\n%s", src);
    free(src);
    /* a tile of several rows keeps each element's own index */
    src = lowered_source(ROWS_TUNED, "layernorm", 19);
    cr_assert(strstr(src, "ROWS = 16, BLOCK = 128"), "%s", src);
    cr_expect(strstr(src, "((tl_i1 + 3) < v_cols)"), "%s", src);
    free(src);
}

/* The registers (sm_90a, NVRTC): layernorm v1 41 before (48 allocated),
 * the hand-tuned kernel 40; softmax v1 38 before. */
Test(rows, one_row_layernorm_fits_the_hand_tuned_allocation, .timeout = 300)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    expect_fits(tool, ROWS_TUNED, "layernorm", 1, 40, "48 allocated: 10 blocks a multiprocessor, not 12");
    expect_fits(tool, ROWS_TUNED, "softmax", 1, 38, "38 before");
    expect_fits(tool, "examples/layernorm.tile", "layernorm", 0, 40, "the hand-tuned allocation");
}

/* examples/llm.tile's rmsnorm_bwd (rows that fit the tile): the next row's x
 * and dy are loaded before this row's reduction, so its barriers and the
 * store of dx run under those loads (before: each row loaded, then reduced,
 * one memory round trip a row with 2 blocks a multiprocessor to cover it). */
Test(rows, rmsnorm_bwd_loads_the_next_row_before_the_reduction)
{
    char *src = lowered_source("examples/llm.tile", "rmsnorm_bwd__bf16", 0);
    const char *loop = strstr(src, "for (long long v_r = v_r0; v_r < v_r1; v_r += 1)");
    cr_assert(loop, "no row loop over r0 .. r1:\n%s", src);
    const char *bar = strstr(loop, "__syncthreads()");
    const char *nx = strstr(loop, "((v_x + v_nb) + tl_i0)"), *ndy = strstr(loop, "((v_dy + v_nb) + tl_i0)");
    cr_assert(bar, "%s", src);
    cr_expect(nx && nx < bar, "x's next row not loaded before the reduction:\n%s", loop);
    cr_expect(ndy && ndy < bar, "dy's next row not loaded before the reduction:\n%s", loop);
    free(src);
}

/* ...and it keeps two blocks of 256 threads a multiprocessor (at most 128
 * registers; 102 before the prefetch) with no stack. */
Test(rows, rmsnorm_bwd_prefetch_keeps_two_blocks, .timeout = 300)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    expect_fits(tool, "examples/llm.tile", "rmsnorm_bwd__bf16", 0, 128, "past 128: one block of 256 threads, not two");
}

/* The loads first (lower/stmt.c, issue_loads): RoPE's four lets
 * x1 = cast(load(q)), x2 = cast(load(q + 64)), cs, sn = cast(load(cos|sin))
 * issue all four loads before x1's conversion; in source order each
 * conversion stood between its load and the next (ptxas then had two of
 * the six 16-byte loads a thread in flight, not six). */
Test(rows, rope_issues_its_loads_before_their_arithmetic)
{
    char *src = lowered_source("examples/llm.tile", "rope__bf16", 0);
    const char *x1 = strstr(src, "float v_x1[");
    const char *q2 = strstr(src, "(long long)(tl_i1)))) + 64)"), *c = strstr(src, "(v_cos + "), *s = strstr(src, "(v_sin + ");
    cr_assert(x1 && q2 && c && s, "%s", src);
    cr_expect(q2 < x1, "x2's load not issued before x1's conversion:\n%s", src);
    cr_expect(c < x1 && s < x1, "cos's and sin's loads not issued before x1's conversion:\n%s", src);
    cr_expect(strstr(src, "// line 284's load, issued here with line 283's"), "no note of the load issued ahead:\n%s", src);
    free(src);
}

/* ...and in the SASS (with cuobjdump at hand): every 16-byte load of
 * variants 0, 2 and 3 is issued before the first bf16 to f32 conversion
 * (`IMAD.U32 .., 0x10000` or `PRMT .., 0x7632`); before, ptxas issued 2 of
 * v0's 6 and 1 of v2's 4 and converted those first. */
Test(rows, rope_sass_issues_every_vector_load_first, .timeout = 300)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    for (int v = 0; v <= 3; v += v ? 1 : 2) {
        char *out = disassemble_file(tool, "-sass", "examples/llm.tile", "rope__bf16", v, "sm_90");
        const char *a = strstr(out, "0x10000, RZ"), *b = strstr(out, "0x7632");
        const char *cv = a && (!b || a < b) ? a : b;
        cr_assert(cv, "no bf16 conversion in v%d's SASS:\n%s", v, out);
        int before = 0, all = 0;
        for (const char *p = strstr(out, "LDG.E.128"); p; p = strstr(p + 1, "LDG.E.128")) {
            all++;
            before += p < cv;
        }
        cr_expect(all >= 4 && before == all, "rope v%d: %d of its %d 16-byte loads before the first conversion", v,
                  before, all);
        free(out);
    }
}

/* RoPE's variant 3: a program a token and 16 of its heads, the programs
 * token-major (pid / (32 / H) the token, pid % (32 / H) the group: a
 * token's two programs adjacent, the blocks in flight on one stretch of q;
 * 0.970x of variant 2's time in one H200 process as a hand form,
 * bench/results/llm_s47.md), 8 elements of each half a thread over 4 warps. */
Test(rows, rope_v3_is_sixteen_heads_token_major)
{
    char *src = lowered_source("examples/llm.tile", "rope__bf16", 3);
    cr_expect(strstr(src, "constexpr int v_H = 16;") && strstr(src, "constexpr int v_warps = 4;"), "%s", src);
    cr_expect(strstr(src, "const int v_t = (((int)blockIdx.x) / (32 / v_H));"), "the token is not pid / (32 / H):\n%s", src);
    cr_expect(strstr(src, "(((int)blockIdx.x) % (32 / v_H)) * v_H)"), "the group is not pid %% (32 / H):\n%s", src);
    cr_expect(strstr(src, "__nv_bfloat16 tl_t0[8];"), "not 8 elements of a half a thread:\n%s", src);
    free(src);
}
