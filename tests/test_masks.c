/* test_masks.c: the mask rule (lower/mask.c, docs/lowering.md "The mask
 * rule"): every access that checks a run of consecutive elements builds
 * element q's bound check one way. Before it, only memory.c's one-row
 * loads and stores wrote `i(q) < n` as `i(0) < n - q` (saturating); the
 * 16-byte cp.async chunks of pipelined dot loops, rings and the gather
 * producer (pipeline.c) and the values they kept before the loop (hoist.c)
 * compared each element's own index `(tl_i1 + 7)`, and a 64-bit comparison
 * (an i64 bound) kept every element's index too. The host-run values of
 * the rewritten checks, at every bound down to the i32 and i64 minimum,
 * are tests/test_numerics.c's run_bounds and run_bounds_i64. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sass_helpers.h"

/* The pipelined copies of examples/matmul.tile: A's K edge is decided by
 * the chunk's last element against K - 7 (in the loop), B's N edge by the
 * value kept before the loop against N - 7; the elements only the slow
 * path reads (a mask true on a prefix: 1 .. 6) keep their own index. */
Test(masks, copies_check_against_the_chunks_first_element)
{
    char *src = lowered_source("examples/matmul.tile", "matmul", 0);
    cr_expect(strstr(src, "const bool tl_m7 = (tl_h1[tl_q] && ((v_k + tl_i1) < (v_K >= -2147483641 ? v_K - 7 : -2147483647 - 1)));"),
              "A's chunk is not decided against K - 7:\n%s", src);
    cr_expect(strstr(src, "tl_h4[tl_q] = (((((int)blockIdx.y) * v_BN) + tl_i1) < (v_N >= -2147483641 ? v_N - 7 : -2147483647 - 1));"),
              "B's kept mask is not against N - 7:\n%s", src);
    cr_expect(!strstr(src, "(tl_i1 + 7)"), "a chunk's deciding element compares its own index:\n%s", src);
    cr_expect(strstr(src, "((v_k + (tl_i1 + 3)) < v_K)"), "a slow-path element got a bound of its own:\n%s", src);
    free(src);
}

/* A bound parameter of any value (tests/gpu/run_bounds.tile's copy_bounds;
 * test_gpu_kernels copy_bounds_saturate runs it for lim from the i32
 * minimum): the chunk decided against lim - 7, saturating. */
Test(masks, a_chunks_bound_saturates)
{
    char *src = lowered_source("tests/gpu/run_bounds.tile", "copy_bounds", 0);
    cr_expect(strstr(src, "((v_k + tl_i1) < (v_lim >= -2147483641 ? v_lim - 7 : -2147483647 - 1)))"), "%s", src);
    cr_expect(!strstr(src, "((v_k + (tl_i1 + 7)) < v_lim)"), "%s", src);
    free(src);
}

/* The gather twin's producer (wggather.c) copies by the same chunks:
 * conv2d's filter columns kept before its loop against K - 7, a per-chunk
 * copy's channels against C - 7; its first half (lower_emit_async_prep,
 * every chunk's address and flags before one cp.async each) keeps each
 * element's own index: against the bound less 7, ptxas issued variant 4's
 * copies two back to back, not eight (test_wgconv). */
Test(masks, the_gather_producer_checks_the_same_way)
{
    char *src = lowered_source("examples/conv2d.tile", "conv2d_f16", 0);
    const char *twin = strstr(src, "conv2d_f16_v0_tma(");
    cr_assert(twin, "no sm_90a twin:\n%s", src);
    cr_expect(strstr(twin, "= (((tl_pid1 * v_BN) + tl_i1) < (v_K >= -2147483641 ? v_K - 7 : -2147483647 - 1));"), "%s", twin);
    const char *chunk = strstr(twin, "tl_cp16(tl_d, tl_p, tl_w ? 16 : 0);"); /* the per-chunk path after the halves */
    cr_assert(chunk, "%s", twin);
    const char *m7 = strstr(twin, "((((int)tl_dr0) + tl_i1) < (v_C >= -2147483641 ? v_C - 7 : -2147483647 - 1))");
    cr_expect(m7 && m7 < chunk, "the per-chunk copy's channels are not against C - 7:\n%s", twin);
    const char *own = strstr(twin, "((((int)tl_dr0) + (tl_i1 + 7)) < v_C)");
    cr_expect(own && own < strstr(twin, "if (tl_xf0 & tl_xf1)"), "the first half does not keep its own index:\n%s", twin);
    free(src);
}

/* An i32 bound beside a 64-bit index keeps the element's index (ptxas
 * compares the widened i32s in 32 bits); an i64 bound is rewritten in 64
 * bits (llm.tile's swiglu: n is i64). */
Test(masks, a_64_bit_check_only_against_an_i64_bound)
{
    char *src = lowered_source("tests/forms/i64_bounds.tile", "gemm", 0);
    cr_expect(strstr(src, "(((long long)((v_k + (tl_i1 + 7)))) < ((long long)(v_depth)))"), "%s", src);
    cr_expect(!strstr(src, "9223372036854775807LL"), "%s", src);
    free(src);
    src = lowered_source("examples/llm.tile", "swiglu__f16", 0);
    cr_expect(strstr(src, "const bool tl_m7 = (((((long long)(((int)blockIdx.x))) * ((long long)(v_BLOCK))) + ((long long)(tl_i0))) < "
                          "(v_n >= -9223372036854775801LL ? v_n - 7LL : (-9223372036854775807LL - 1)));"),
              "%s", src);
    cr_expect(!strstr(src, "(tl_i0 + 7)"), "%s", src);
    free(src);
}

/* A tile of several rows keeps each element's own index, in a load and in
 * the twin's TMA store alike (wgstore.c walks its values through
 * lower_run_idx too) */
Test(masks, several_rows_keep_each_elements_index)
{
    char *src = lowered_source("bench/harness/rows_tuned.tile", "layernorm", 19);
    cr_assert(strstr(src, "ROWS = 16, BLOCK = 128"), "%s", src);
    cr_expect(strstr(src, "((tl_i1 + 3) < v_cols)"), "%s", src);
    free(src);
}

/* REG of variant v of kernel in file for sm_90a (cuobjdump -res-usage; a
 * kernel with no twin: one function). */
static int regs_of(const char *tool, const char *file, const char *kernel, int v)
{
    char *out = disassemble_file(tool, "-res-usage", file, kernel, v, "sm_90a");
    const char *r = strstr(out, "REG:");
    cr_assert(r, "no REG in:\n%s", out);
    int reg = atoi(r + 4);
    free(out);
    return reg;
}

/* The registers (NVRTC, sm_90a) where the rule took the most: llm.tile's
 * geglu__f16 v0 (an i64 bound, 8-element vectors: 58 before) and the
 * swiglu__f16 v3 (28 before). */
Test(masks, an_i64_bound_frees_the_vectors_registers, .timeout = 300)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    int reg = regs_of(tool, "examples/llm.tile", "geglu__f16", 0);
    cr_expect_leq(reg, 48, "geglu__f16 v0: %d registers (58 before)", reg);
    reg = regs_of(tool, "examples/llm.tile", "swiglu__f16", 3);
    cr_expect_leq(reg, 26, "swiglu__f16 v3: %d registers (28 before)", reg);
}
