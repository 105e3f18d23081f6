/* test_wgconv.c: the sm_90a twin of a dot loop whose operands TMA cannot
 * read as tiles (lower/wggather.c) on the CPU: every variant of both
 * convolutions of examples/conv2d.tile (a gathered A: one base address a
 * row, the channels contiguous) gets a twin whose producer warp group
 * copies A by cp.async into the swizzled ring, and B too where two warp
 * groups copy; where one does (variant 4, BK = 64), B (the filter's rows
 * of a tap, a plain strided tile at a computed row) goes by one tensor
 * map whose rows the kernel proves at run time (its box where every row
 * is unmasked, the chunks by cp.async where not: C not a multiple of
 * BK); the remark says which and why not TMA for A; the divisions that find the
 * filter tap are step counters in the producer's loop; a dot whose B is transposed
 * and no tensor map keeps the pipeline, the remark saying both reasons;
 * and, when cuobjdump is at hand, the sm_90a SASS of the twin holds
 * HGMMA, LDGSTS, UTMALDG in variant 4's alone, no local memory. The kernel
 * conv2d_f16_rows (rows of consecutive output pixels) reads A by TMA's
 * im2col mode instead (lower/wgim2col.c): one box a step from one thread,
 * its map of kind 2 named by the kernel's parameters, and stores its
 * tile through shared memory in 16-byte chunks of whole rows (wgstore.c).
 * NVRTC needs no GPU. */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "fs_helpers.h"
#include "mm_tile.h"
#include "sass_helpers.h"
#include "tilec/emitter.h"
#include "tilec/lower.h"

#define CONV "examples/conv2d.tile"

Test(wgconv, every_conv_variant_has_a_gather_twin)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, CONV);
    static const char *const kernels[] = {"conv2d_f16", "conv2d_nhwc"};
    for (int i = 0; i < 2; i++) {
        uint32_t nv = tilec_kernel_variant_count(tilec_module_find_kernel(m, kernels[i]));
        cr_expect_eq(nv, 8, "%s: %u variants", kernels[i], nv);
        for (uint32_t v = 0; v < nv; v++) {
            tilec_kernel_code code;
            lower_variant(ctx, m, kernels[i], (int)v, &code);
            cr_expect_not_null(code.tma.name, "%s variant %u: an sm_90a twin", kernels[i], v);
            /* one producer warp group (variant 4, BK = 64): B (RSCK: the tap's rows of [R * S * C, K]) by its
             * one map, rows at the tap's offset, unbounded (the kernel proves each box's rows), columns K
             * (parameter 7 or 8), row stride K; two groups: B by cp.async, no map */
            int one = v == 4;
            const tilec_tma_map *b = &code.tma.maps[0];
            uint32_t kp = i ? 8 : 7;
            cr_expect(one ? code.tma.nmaps == 1 && b->ptr == 1 && b->rows == TILEC_TMA_NONE && b->cols == kp &&
                                b->stride == kp && b->box_cols == 64 && b->box_rows == 64 && !b->batched
                          : code.tma.nmaps == 0,
                      "%s variant %u: B's tensor map (%u maps; ptr %u rows %u cols %u stride %u box %u x %u)", kernels[i], v,
                      code.tma.nmaps, b->ptr, b->rows, b->cols, b->stride, b->box_rows, b->box_cols);
            cr_expect_eq(code.tma.persistent, 0, "%s variant %u: one tile a block", kernels[i], v);
            cr_expect(strstr(code.layouts, "but one tile a block runs, not a persistent grid: A is gathered by cp.async "
                                           "(the persistent gather twin takes A by TMA's im2col mode)"),
                      "%s variant %u: the remark says why one tile a block", kernels[i], v);
            const char *twin = code.tma.name ? strstr(code.source, code.tma.name) : NULL;
            cr_assert_not_null(twin);
            cr_expect(strstr(twin, "cp.async.mbarrier.arrive.noinc"), "%s variant %u: the producer arrives by cp.async",
                      kernels[i], v);
            cr_expect(strstr(twin, "tl_fence_async_smem();\n            const unsigned tl_a"),
                      "%s variant %u: the consumers fence the generic proxy's writes before wgmma", kernels[i], v);
            /* B's box by TMA where every row of it is unmasked (c0 + 64 <= C), else its chunks by cp.async; the
             * full barrier counts the TMA thread's arrival too (2 x 128 + 1) */
            if (one)
                cr_expect(strstr(twin, "const __grid_constant__ tl_tmap tl_tm0)") &&
                              strstr(twin, ", &tl_tm0, (int)tl_bcol + 64, (int)tl_brow, ") &&
                              strstr(twin, " + 64 <= (long long)(v_C) && tl_brow >= 0") &&
                              strstr(twin, "if (!tl_bt) { /* B's box partly masked: its chunks by cp.async */") &&
                              strstr(twin, "tl_mbar_init(tl_full + tl_s * 8, 257);"),
                          "%s variant %u: B by TMA, by cp.async where its box is partly masked", kernels[i], v);
            else
                cr_expect(!strstr(twin, "tl_tma_2d(") && !strstr(twin, "tl_tm0") &&
                              strstr(twin, "tl_mbar_init(tl_full + tl_s * 8, 512);"),
                          "%s variant %u: two producer groups copy B by cp.async", kernels[i], v);
            /* two producer warp groups (512 threads at BM = 128) when each
             * thread copies at most 4 chunks a step, the registers split */
            int two = strstr(twin, "the producer, 256 threads") != NULL;
            cr_expect(two == (code.tma.threads == 256 + (uint32_t)strtol(strstr(twin, "tl_tid >= ") + 10, NULL, 10)),
                      "%s variant %u: %u threads", kernels[i], v, code.tma.threads);
            cr_expect(!two || ((strstr(twin, "tl_setmaxnreg_dec<96>();") || strstr(twin, "tl_setmaxnreg_dec<56>();")) &&
                               strstr(twin, "tl_setmaxnreg_inc<")),
                      "%s variant %u: two producer groups split the registers", kernels[i], v);
            cr_expect(two || !strstr(twin, "setmaxnreg"), "%s variant %u: one producer group keeps them", kernels[i], v);
            /* the tap's divisions: step counters, none in the producer's loop */
            const char *loop = strstr(twin, "for (int v_q0 = tl_lo;");
            cr_assert_not_null(loop);
            const char *end = strstr(loop, "cp.async.mbarrier.arrive.noinc");
            cr_assert_not_null(end);
            char *body = strndup(loop, (size_t)(end - loop));
            const char *fallback = strstr(body, "if (!tl_dok) {"), *after = fallback ? strchr(fallback, '}') : NULL;
            cr_expect(after && !strstr(after, "/ v_cp") && !strstr(after, "% v_cp") && !strstr(after, "/ v_s1") &&
                          !strstr(after, "% v_s1") && strstr(after, "tl_dq1"),
                      "%s variant %u: the copies read step counters, no division a step:\n%s", kernels[i], v, body);
            free(body);
            cr_expect(strstr(twin, "const bool tl_dok = tl_lo >= 0 && tl_st > 0 && (v_cp) > 0 && (v_s1) > 0;"),
                      "%s variant %u: the counters are checked to equal the divisions", kernels[i], v);
            /* the counters in 32 bits (the loop variable and the divisors are i32): the advance's adds and
             * compares one instruction each, not two (session 44); 64-bit in the two-block twins (their
             * producer spilled with them: variants 3 and 6) */
            if (v == 3 || v == 6)
                cr_expect(strstr(twin, "long long tl_dq0 = tl_dok ? (long long)(tl_lo) / (long long)(v_cp) : 0"),
                          "%s variant %u: 64-bit step counters (two blocks an SM)", kernels[i], v);
            else
                cr_expect(strstr(twin, "unsigned tl_dq0 = tl_dok ? (unsigned)(tl_lo) / (unsigned)(v_cp) : 0") &&
                          strstr(twin, "unsigned tl_dq1 = tl_dok ? (unsigned)((int)tl_dq0) / (unsigned)(v_s1) : 0") &&
                          strstr(twin, "tl_dr0 += (unsigned)tl_st;") && !strstr(twin, "long long tl_dn") &&
                              !strstr(twin, "long long tl_dq"),
                          "%s variant %u: 32-bit step counters", kernels[i], v);
            cr_expect(strstr(code.layouts, one ? "A by cp.async from the producer warp group into the swizzled ring, "
                                                 "not TMA (line "
                                               : "A and B by cp.async from the producer warp group into the swizzled "
                                                 "ring, not TMA (line ") &&
                          (strstr(code.layouts, "B by TMA (rows at a computed offset, each step's box taken where its "
                                                "rows are all unmasked, else by cp.async)") != NULL) == one,
                      "%s variant %u: the remark says which path and why not TMA:\n%s", kernels[i], v, code.layouts);
            /* a block of PR x PW pixels is no run of consecutive output pixels: no im2col box, and why */
            cr_expect(strstr(code.layouts, "; nor its im2col mode: the input column is not (p % OW) * stride + the tap "
                                           "for one unit-stride index p)") &&
                          !strstr(twin, ".im2col.") && !code.tma.maps[0].im2col,
                      "%s variant %u: A gathered, the remark says why not the im2col mode:\n%s", kernels[i], v,
                      code.layouts);
            tilec_kernel_code_free(&code);
        }
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Two blocks an SM where their halves fit (wggather.c, gather_blocks):
 * variants 3 (BM 128, BN 64) and 6 (BM 64, BN 64) of both kernels, whose
 * consumers need few registers, are built for two (the launch bound, the
 * ring under 96 KiB, the registers of 32 Ki split: 56 a producer thread),
 * the 128 x 128 tiles and the one-producer-group BK = 64 for one; the
 * remark says so. Every twin's copies take one cp.async a chunk (source
 * size 16 or 0) and test their masks with & (no branch a term). */
Test(wgconv, two_blocks_where_the_halves_fit)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, CONV);
    static const char *const kernels[] = {"conv2d_f16", "conv2d_nhwc"};
    for (int i = 0; i < 2; i++)
        for (int v = 0; v < 8; v++) {
            tilec_kernel_code code;
            lower_variant(ctx, m, kernels[i], v, &code);
            const char *twin = code.tma.name ? strstr(code.source, code.tma.name) : NULL;
            cr_assert_not_null(twin);
            const char *head = twin;
            while (head > code.source && strncmp(head, "extern", 6))
                head--;
            int two = v == 3 || v == 6;
            char *decl = strndup(head, strcspn(head, "\n"));
            cr_expect(strstr(decl, two ? (v == 3 ? "__launch_bounds__(512, 2)" : "__launch_bounds__(384, 2)") : ", 1) "),
                      "%s variant %d: built for %d blocks an SM:\n%.120s", kernels[i], v, two ? 2 : 1, decl);
            free(decl);
            cr_expect(!two || strstr(twin, "tl_setmaxnreg_dec<56>();"), "%s variant %d: 56 registers a producer thread",
                      kernels[i], v);
            unsigned full = 0;
            const char *f = strstr(twin, "tl_full = tl_ring + ");
            cr_assert_not_null(f);
            full = (unsigned)strtoul(f + 20, NULL, 10);
            cr_expect(two ? full <= 96 * 1024 : full > 96 * 1024, "%s variant %d: a ring of %u bytes", kernels[i], v, full);
            cr_expect((strstr(code.layouts, "two blocks an SM (each half the ring and the registers)") != NULL) == two,
                      "%s variant %d: the remark:\n%s", kernels[i], v, code.layouts);
            cr_expect(strstr(twin, "tl_cp16(tl_d, tl_p, tl_w ? 16 : 0); /* whole, or zero fill */") &&
                          !strstr(twin, "tl_cp16(tl_d, tl_p, 0);"),
                      "%s variant %d: one cp.async a chunk", kernels[i], v);
            const char *m0 = strstr(twin, "const bool tl_m0 = ");
            cr_assert_not_null(m0);
            char *line = strndup(m0, strcspn(m0, "\n"));
            cr_expect(!strstr(line, "&&") && strstr(line, " & "), "%s variant %d: the mask by &: %s", kernels[i], v, line);
            free(line);
            tilec_kernel_code_free(&code);
        }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* examples/conv2d.tile in a buffer of *cap bytes, room for edits of slack more. */
static char *conv_src(size_t slack, size_t *cap)
{
    char *text = read_file(CONV, NULL);
    cr_assert_not_null(text);
    *cap = strlen(text) + slack;
    char *src = malloc(*cap);
    cr_assert_not_null(src);
    memcpy(src, text, strlen(text) + 1);
    free(text);
    return src;
}

/* A mask term that may fault where && would have skipped it (a division
 * by a run-time value no step counter serves: k / K with K 0) keeps its
 * &&; the other terms of the copies still join by &. */
Test(wgconv, a_term_that_may_fault_keeps_its_and)
{
    size_t cap;
    char *src = conv_src(64, &cap);
    edit_src(src, cap, "c[:, None] < C && k[None, :] < K, 0.0", "c[:, None] < C && k[None, :] / K < 1, 0.0");
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_kernel_code code;
    lower_src(ctx, &m, "conv2d_f16", src, &code);
    const char *twin = code.tma.name ? strstr(code.source, code.tma.name) : NULL;
    cr_assert_not_null(twin, "a gather twin");
    const char *a = strstr(twin, "const bool tl_m0 = "), *b = a ? strstr(a + 1, "const bool tl_m0 = ") : NULL;
    cr_assert(a && b);
    char *la = strndup(a, strcspn(a, "\n")), *lb = strndup(b, strcspn(b, "\n"));
    cr_expect(!strstr(la, "&&"), "A's mask by &: %s", la);
    cr_expect(strstr(lb, "&&"), "B's mask keeps the && before k / K: %s", lb);
    free(la);
    free(lb);
    free(src);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* B trans of a load TMA cannot read (its mask bounds the rows only): the
 * copies run along rows, so no gather twin either; the remark says why
 * not TMA and why not cp.async. */
Test(wgconv, transposed_operand_keeps_the_pipeline)
{
    static const char *const edits[] = {
        "load(b + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0)",
        "load(b + rn[:, None] * K + rk[None, :], rn[:, None] < N, 0.0)", "dot(ta, tb)", "dot(ta, trans(tb))"};
    tilec_module *m = NULL;
    tilec_kernel_code code;
    tilec_ctx *ctx = lower_mm(edits, 2, &m, &code);
    cr_expect_null(code.tma.name, "no twin");
    cr_expect(strstr(code.layouts, "not on wgmma + TMA: the mask is not R[:, None] < rows && C[None, :] < cols"),
              "why not TMA:\n%s", code.layouts);
    cr_expect(strstr(code.layouts, "; nor by cp.async from the producer warp group: an operand is a transposed load"),
              "why not cp.async:\n%s", code.layouts);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

__attribute__((noinline)) static char *disassemble(const char *tool, const char *kernel, int v)
{
    return disassemble_file(tool, "-sass", CONV, kernel, v, "sm_90a");
}

/* The SASS of variant v's twin, or NULL when the cubin has none. */
static char *twin_sass(const char *tool, const char *kernel, int v)
{
    char name[128];
    snprintf(name, sizeof name, "Function : %s_v%d_tma", kernel, v);
    char *sass = disassemble(tool, kernel, v);
    const char *twin = strstr(sass, name), *next = twin ? strstr(twin + 1, "Function : ") : NULL;
    char *t = twin ? strndup(twin, next ? (size_t)(next - twin) : strlen(twin)) : NULL;
    free(sass);
    return t;
}

Test(wgconv, sass_has_hgmma_and_ldgsts, .timeout = 300)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    /* variant 0: two producer warp groups; 4 (BK = 64): one; 3 and 6: two blocks an SM, at most 64 and 80
     * registers a thread, no local memory either */
    static const int vs[] = {0, 4, 3, 6};
    for (int j = 0; j < 4; j++) {
        int v = vs[j];
        char *t = twin_sass(tool, "conv2d_nhwc", v);
        cr_assert_not_null(t, "the sm_90a cubin has the twin of variant %d", v);
        cr_expect(strstr(t, v == 6 || v == 3 ? "HGMMA.64x64x16.F32" : "HGMMA.64x128x16.F32"),
                  "variant %d: the twin multiplies on wgmma", v);
        cr_expect(strstr(t, "LDGSTS") && strstr(t, "ARRIVES.LDGSTSBAR"),
                  "variant %d: its producer copies by cp.async and arrives when they land", v);
        cr_expect((strstr(t, "UTMALDG") != NULL) == (v == 4), "variant %d: B by TMA in the one-group twin alone", v);
        cr_expect(!strstr(t, "LDL") && !strstr(t, "STL"), "variant %d: no local memory in the twin", v);
        free(t);
    }
}

/* The longest run of LDGSTS in t with at most three other instructions
 * between two of them (the per-chunk path had about 30: its branch, the
 * next chunk's address and masks). */
static int ldgsts_run(const char *t)
{
    int best = 0, run = 0, gap = 0;
    char line[512];
    for (const char *l = t; l && *l;) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line - 1 ? n : sizeof line - 1), l);
        l = e ? e + 1 : NULL;
        const char *s = line + strspn(line, " ");
        if (strncmp(s, "/*", 2) || !strstr(s, "*/ ") || !strchr(s, ';'))
            continue; /* not an instruction line */
        if (strstr(line, "LDGSTS")) {
            run++;
            gap = 0;
            best = run > best ? run : best;
        } else if (!strstr(line, "@!PT LDS RZ") && ++gap > 3) {
            run = 0;
        }
    }
    return best;
}

/* The producer's copies in two halves where one block has the SM
 * (wggather.c, lower_emit_async_prep): every chunk's address, place and
 * flag first, then one cp.async a chunk with no branch between when all
 * are whole or all masked; the per-chunk path after the counters are made
 * opaque. The two-block twins (3, 6) keep the per-chunk path. In the SASS
 * (when cuobjdump is at hand) variant 0's four chunks a thread (A's 2, B's
 * 2) and variant 4's eight (A's) issue back to back; before, each LDGSTS
 * sat behind its chunk's branch, about 30 instructions apart. */
Test(wgconv, the_copies_issue_in_two_halves, .timeout = 300)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, CONV);
    for (int v = 0; v < 8; v++) {
        tilec_kernel_code code;
        lower_variant(ctx, m, "conv2d_f16", v, &code);
        const char *twin = code.tma.name ? strstr(code.source, code.tma.name) : NULL;
        cr_assert_not_null(twin);
        int two = v == 3 || v == 6, one = v == 4;
        cr_expect((strstr(twin, one ? "if (tl_xf0) { /* every chunk whole or all masked"
                                    : "if (tl_xf0 & tl_xf1) { /* every chunk whole or all masked") != NULL) == !two,
                  "variant %d: %s", v, two ? "the per-chunk path alone (two blocks an SM)" : "the copies in two halves");
        cr_expect((strstr(twin, "asm volatile(\"\" : \"+r\"(v_q0), \"+r\"(tl_dq0), \"+r\"(tl_dr0), \"+r\"(tl_dq1), "
                                "\"+r\"(tl_dr1));") != NULL) == !two,
                  "variant %d: the per-chunk path reads the counters anew", v);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    static const int vs[] = {0, 4, 3}, want[] = {4, 8, 1};
    for (int j = 0; j < 3; j++) {
        char *t = twin_sass(tool, "conv2d_f16", vs[j]);
        cr_assert_not_null(t);
        int run = ldgsts_run(t);
        cr_expect(vs[j] == 3 ? run < 4 : run >= want[j], "variant %d: %d LDGSTS back to back", vs[j], run);
        free(t);
    }
}

/* The steps of one filter tap in an inner loop (hoist.c, wggather.c):
 * what moves with the tap alone (the shifted pixel's bounds, the tap's
 * offsets of A's and B's rows: the parts of the loads' index expressions
 * that read a step counter's quotient and no remainder of the loop
 * variable) is computed in the outer loop, once a tap; the inner loop's
 * steps read it from registers, so no bound of the pixel and no division
 * is left there. Every twin of both kernels, and the convolution spelled
 * another way (the tap let once, its column as t - t / S * S, which no
 * step counter serves: its division runs once a tap, not once a step).
 * Variant 4 keeps nothing (over the register budget), as before. */
static void taps_kept(const char *src, const char *what)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_string(ctx, "conv.tile", src, strlen(src), &m);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s: %s", what, d ? d->message : "");
    static const char *const kernels[] = {"conv2d_f16", "conv2d_nhwc"};
    for (int i = 0; i < 2; i++)
        for (int v = 0; v < 8; v++) {
            tilec_kernel_code code;
            lower_variant(ctx, m, kernels[i], v, &code);
            const char *twin = code.tma.name ? strstr(code.source, code.tma.name) : NULL;
            cr_assert_not_null(twin, "%s %s variant %d: a gather twin", what, kernels[i], v);
            const char *in = strstr(twin, "do { /* the steps of one tap */");
            const char *out = in ? strstr(in, "} while (!tl_tnew && v_q0 < tl_hi);") : NULL;
            if (v == 4) { /* A's 8 chunks and B's 8 a thread: over hoist.c's budget, nothing kept (main's twin) */
                cr_expect(!in, "%s %s variant 4: one loop, nothing kept", what, kernels[i]);
                tilec_kernel_code_free(&code);
                continue;
            }
            cr_assert(in && out, "%s %s variant %d: the steps of a tap in an inner loop", what, kernels[i], v);
            char *inner = strndup(in, (size_t)(out - in));
            char *tap = strndup(twin, (size_t)(in - twin));
            cr_expect(!strstr(inner, "v_pad") && !strstr(inner, "v_H") && !strstr(inner, "v_W)"),
                      "%s %s variant %d: no bound of the shifted pixel in a step", what, kernels[i], v);
            cr_expect(!strstr(inner, "/ v_s1") && !strstr(inner, "% v_s1") && !strstr(inner, "/ (v_cp)") &&
                          !strstr(inner, "% (v_cp)"),
                      "%s %s variant %d: no division in a step", what, kernels[i], v);
            const char *kept = strstr(tap, "/* the tap's kept values");
            cr_expect(kept && strstr(kept, "v_pad"),
                      "%s %s variant %d: the bounds once a tap", what, kernels[i], v);
            cr_expect(strstr(inner, "tl_tnew = (tl_dn0) != 0;") != NULL, "%s %s variant %d: the step says when the tap moved",
                      what, kernels[i], v);
            free(inner);
            free(tap);
            tilec_kernel_code_free(&code);
        }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

Test(wgconv, the_steps_of_a_tap_read_its_bounds_from_registers)
{
    size_t cap;
    char *src = conv_src(512, &cap);
    taps_kept(src, "conv2d.tile");
    for (int i = 0; i < 4; i++) { /* the four kernels (the rows kernels are lowered by their own tests) */
        edit_src(src, cap, "        let c = q0 % cp + range(BK);", "        let t = q0 / cp;\n        let c = q0 - t * cp + range(BK);");
        edit_src(src, cap, "q0 / cp / s1 - pad", "t / s1 - pad");
        edit_src(src, cap, "q0 / cp % s1 - pad", "t - t / s1 * s1 - pad");
        edit_src(src, cap, "(q0 / cp * C + c)", "(t * C + c)");
    }
    cr_assert(!strstr(src, "q0 / cp / s1"), "the kernels respelled");
    taps_kept(src, "the tap let once");
    free(src);
}

/* --aot sm_90a of a graph whose product has a gather twin (no tensor map:
 * A's mask bounds its rows only): the twin's metadata in the wrapper, with
 * no maps, compiles as C11 with strict warnings. */
Test(wgconv, aot_wrapper_with_a_gather_twin_compiles, .timeout = 300)
{
    char src[4096];
    int n = snprintf(src, sizeof src, MM_TILE_FMT
                     "graph g(a: f16[M, K], b: f16[K, N]) -> (c: f16[M, N]) {\n"
                     "    let c = empty(f16, [M, N]);\n"
                     "    mm(a, b, c, M, N, K);\n"
                     "    return c;\n"
                     "}\n",
                     "mm", "rm[:, None] < M");
    cr_assert(n > 0 && (size_t)n < sizeof src);
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "g.tile", src, (size_t)n, &m), TILEC_OK);
    const char *const keys[] = {"aot"}, *const values[] = {"sm_90a"};
    tilec_status st = tilec_module_emit(ctx, m, "c",
                                        &(tilec_emit_options){.dir = dir, .plan = 1, .keys = keys, .values = values, .noptions = 1},
                                        tilec_sink_file(stdout));
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s", d ? d->message : "");
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    char *c = read_in(dir, "g.c");
    cr_assert_not_null(c);
    cr_expect(strstr(c, "static const tilec_tma_meta tl_tma_mm_v0 = {tl_twin_mm_v0, 384, "),
              "the twin's metadata, 384 threads (BK = 64: one producer warp group)");
    cr_expect(strstr(c, ", 1, 0, {\n    {1, TILEC_TMA_NONE, 4, 4, 64, 64, 2, 0, 0, {TILEC_TMA_NONE, TILEC_TMA_NONE}, 0, 0, 0, 0, 0, 0, 0, 0, 0}}, "
                        "5, 0, 64, 0};\n"),
              "B's tensor map (rows the kernel proves), not persistent; the loop's trips: K over 64");
    free(c);
    const char *cc = getenv("CC");
    char *out;
    int rc = sh(&out, "%s -std=c11 -pedantic -fsyntax-only -Wall -Wextra -Wshadow -Werror -Iinclude -I%s %s/g.c",
                cc && *cc ? cc : "cc", dir, dir);
    cr_expect_eq(rc, 0, "the wrapper does not compile:\n%.2000s", out);
    free(out);
    rm_dir(dir);
}

/* conv2d_f16_rows: the rows p = pid(0) * BM + range(BM) of the flattened
 * N x OH x OW, each reading channels c0 + range(BK) of input pixel (p /
 * (OH * OW), p / OW % OH * stride + r - pad, p % OW * stride + s - pad),
 * masked to the image: every variant's twin reads A as one box of TMA's
 * im2col mode a step (lower/wgim2col.c). Its map (map 0, kind 2): x (0),
 * N images (3) of H x W (4, 5) pixels of C channels (6), a pixel every C,
 * the walk's extents OH and OW (10, 11), padding 13, stride 12, boxes of
 * BM pixels x BK channels; B's map after it (w, 1: columns and row stride
 * K, 7). The first producer thread expects both boxes' bytes and issues
 * them (the full barrier counts 2 x 128 + 1); A's chunks by cp.async only
 * in a step whose tap offsets the copy cannot take; the remark says so. */
Test(wgconv, rows_read_a_by_the_im2col_mode)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, CONV);
    static const char *const kernels[] = {"conv2d_f16_rows", "conv2d_nhwc_rows"};
    for (uint32_t kf = 0; kf < 2; kf++) {
    uint32_t nv = tilec_kernel_variant_count(tilec_module_find_kernel(m, kernels[kf]));
    cr_expect_eq(nv, 5);
    static const uint32_t bm[] = {128, 128, 128, 64, 64}, bk[] = {64, 32, 64, 64, 64};
    for (uint32_t v = 0; v < nv && v < 5; v++) {
        tilec_kernel_code code;
        lower_variant(ctx, m, kernels[kf], (int)v, &code);
        cr_assert_not_null(code.tma.name, "%s variant %u: an sm_90a twin", kernels[kf], v);
        const tilec_tma_map *a = &code.tma.maps[0], *b = &code.tma.maps[1];
        uint32_t o = kf; /* the fused kernel's parameters after w: one on (bias) */
        cr_expect(code.tma.nmaps == 2 && a->im2col == TILEC_TMA_IM2COL_OUT && a->ptr == 0 && a->rows == 3 + o &&
                      a->cols == 6 + o && a->stride == 6 + o && a->ih == 4 + o && a->iw == 5 + o && a->fr == 10 + o &&
                      a->fs == 11 + o && a->pad == 13 + o && a->cstride == 12 + o && a->box_rows == bm[v] &&
                      a->box_cols == bk[v] && !a->batched && a->elem_bytes == 2,
                  "%s variant %u: A's im2col map (%u maps; kind %u ptr %u rows %u cols %u stride %u ih %u iw %u fr %u fs "
                  "%u pad %u cstride %u box %u x %u)",
                  kernels[kf], v, code.tma.nmaps, a->im2col, a->ptr, a->rows, a->cols, a->stride, a->ih, a->iw, a->fr,
                  a->fs, a->pad, a->cstride, a->box_rows, a->box_cols);
        cr_expect(!b->im2col && b->ptr == 1 && b->rows == TILEC_TMA_NONE && b->cols == 7 + o && b->stride == 7 + o,
                  "%s variant %u: B's tiled map after A's", kernels[kf], v);
        /* the persistent twin, then its one-tile twin NAME_1 (lower/target.c, gather_single), main's twin */
        char one_name[128];
        snprintf(one_name, sizeof one_name, "%s_1(", code.tma.name);
        char *src = strdup(code.source), *one = strstr(src, one_name);
        cr_assert(one, "%s variant %u: the one-tile twin beside the persistent one", kernels[kf], v);
        one[0] = '\0';
        const char *twin = strstr(src, code.tma.name);
        cr_assert_not_null(twin);
        one = strstr(code.source, one_name);
        cr_expect(strstr(one, "tl_mbar_init(tl_full + tl_s * 8, 257);") && strstr(one, "the producer, 128 threads") &&
                      strstr(one, "tl_pid0 = tl_first + tl_r % tl_gs;") && !strstr(one, "tl_grid0"),
                  "%s variant %u: the one-tile twin's producer warp group and grouped order", kernels[kf], v);
        const char *cp = strstr(twin, "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes");
        cr_expect(cp && !strstr(cp + 60, ".im2col.") && strstr(twin, "\"l\"((unsigned long long)&tl_tm0), \"r\"(tl_ac + 0), "
                                                                  "\"r\"(tl_aw), \"r\"(tl_ah), \"r\"(tl_an)"),
                  "variant %u: one im2col copy a step", v);
        char want[128];
        snprintf(want, sizeof want, "tl_mbar_expect(tl_full + tl_s * 8, (tl_at ? %uu : 0u) + ((tl_bt && tl_bw) ? ", bm[v] * bk[v] * 2);
        cr_expect(strstr(twin, want) && strstr(twin, "&tl_tm1, (int)tl_bcol + 0, (int)tl_brow") &&
                      strstr(twin, "if (!tl_at) { /* a tap's offsets the copy cannot take: A's chunks by cp.async */"),
                  "%s variant %u: one thread issues A's box and B's, A's chunks only where the offsets do not fit",
                  kernels[kf], v);
        /* the ring all TMA in a persistent twin whose A takes more stages where B is resident (variants 1-4):
         * one producer thread a step (wggather.c, lower_wg_gather_one) waits for the slot and arrives once, the
         * full barrier of one arrival; the warp group meets it (named barrier 8) only in a step whose chunks go
         * by cp.async, and arrives on no barrier itself (a later tile's step copies no resident B). Variant 0
         * (6 stages either way, slower so on the H200) and the one-tile twins: every producer thread arrives
         * twice, 2 x 128 + 1 */
        for (int t = 0; t < 2; t++) {
            const char *x = t ? one : twin;
            const char *fb = strstr(x, "if (!tl_one) { /* chunks by cp.async: the group meets the thread that waited "
                                       "for the slot */\n");
            const char *sync = fb ? strstr(fb, "asm volatile(\"bar.sync 8, 128;\" ::: \"memory\");") : NULL;
            const char *land = sync ? strstr(sync + 1, "asm volatile(\"cp.async.wait_all;\" ::: \"memory\");\n") : NULL;
            const char *issue = land ? strstr(land, "tl_mbar_expect(tl_full + tl_s * 8, (tl_at ?") : NULL;
            if (!t && v)
                cr_expect(strstr(x, "tl_mbar_init(tl_full0 + tl_s * 8, 1);") &&
                              strstr(x, "if (tl_tid == 0 && tl_it >= ") &&
                              strstr(x, "const bool tl_one = tl_at && (tl_bt || !tl_bw);") && sync && land &&
                              strstr(land, "bar.sync 8, 128;") && issue &&
                              !strstr(x, "cp.async.mbarrier.arrive.noinc") && !strstr(x, "tl_mbar_arrive(tl_full"),
                          "%s variant %u: one producer thread a step, one arrival a full barrier", kernels[kf], v);
            else
                cr_expect(strstr(x, t ? "tl_mbar_init(tl_full + tl_s * 8, 257);"
                                      : "tl_mbar_init(tl_full0 + tl_s * 8, 257);") &&
                              !fb && strstr(x, "cp.async.mbarrier.arrive.noinc") && !strstr(x, "tl_tid == 0 && tl_it"),
                          "%s variant %u (%s): the producer warp group arrives, 257 a full barrier", kernels[kf], v,
                          t ? "one-tile" : "persistent");
            /* there (session 50) the group's cp.async writers fence before the one arrival and the consumers fence
             * no step; elsewhere the consumers fence after the full barrier's wait. There and in the one-tile twins
             * (session 51) each consumer warp group hands its step's slot back once its own wgmma are done
             * (wait_group 0), not a step later; variant 0's persistent twin keeps one group in flight (the fused
             * kernel's twin spilled and ran slower with the early hand-back) */
            const char *back = "tl_wg_commit();\n            tl_wg_wait<0>();\n            if (tl_lane == 0)\n"
                               "                tl_mbar_arrive(tl_empty + tl_s * 8);\n        }\n";
            const char *fence = strstr(x, "tl_fence_async_smem();");
            if (!t && v)
                cr_expect(land && fence && fence > land && fence < issue &&
                              !strstr(fence + 1, "tl_fence_async_smem();") && strstr(x, back) &&
                              !strstr(x, "tl_wg_wait<1>();"),
                          "%s variant %u: the writers fence, each slot back after its own wgmma", kernels[kf], v);
            else if (t)
                cr_expect(strstr(x, "tl_fence_async_smem();\n            const unsigned tl_a") && strstr(x, back) &&
                              !strstr(x, "tl_wg_wait<1>();") && !strstr(x, "(tl_it - 1)"),
                          "%s variant %u (one-tile): the consumers fence, each slot back after its own wgmma",
                          kernels[kf], v);
            else
                cr_expect(strstr(x, "tl_fence_async_smem();\n            const unsigned tl_a") &&
                              strstr(x, "tl_wg_commit();\n            tl_wg_wait<1>();") && !strstr(x, back),
                          "%s variant %u (persistent): the consumers fence and keep one wgmma group in flight",
                          kernels[kf], v);
        }
        /* on a persistent grid (wgmma.c, persist_body): the program's grid as parameters, the producer warp
         * group's 128 threads and the consumers each walk the block's tiles, tl_it counting on; the producer
         * waits for its copies once, after its walk, and never returns (its threads are the walk's) */
        snprintf(want, sizeof want, "if (tl_tid >= %u) {\n        {\n        int tl_it = 0;\n        for (int tl_u = ",
                 bm[v] * 2);
        const char *walk = strstr(twin, want), *wait = walk ? strstr(walk, "cp.async.wait_all;") : NULL;
        cr_expect(code.tma.persistent == 5 && strstr(twin, "int tl_grid0, int tl_grid1, int tl_grid2)") && walk &&
                      wait && strstr(wait, "} else {\n        int tl_it = 0;\n        for (int tl_u = ") &&
                      !strstr(twin, "return;") && strstr(twin, "const int tl_it0 = tl_it;"),
                  "%s variant %u: a persistent grid (persistent %u)", kernels[kf], v, code.tma.persistent);
        snprintf(want, sizeof want, "A by TMA's im2col mode (one box of %u output pixels x %u channels a step", bm[v], bk[v]);
        cr_expect(strstr(code.layouts, want) && strstr(code.layouts, "on a persistent grid, ") &&
                      strstr(code.layouts, " stages: the producer copies the block's next tile while the consumers "
                                           "store this one (beside it, one tile a block where the tiles are few a "
                                           "multiprocessor)"),
                  "%s variant %u: the remark:\n%s", kernels[kf], v, code.layouts);
        free(src);
        tilec_kernel_code_free(&code);
    }
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The same rows spelt as users write them (tests/conv_forms/conv_gemm.tile
 * does both): the pixel index broadcast before its stride, `(...)[:, None]
 * * C`, and the image count bounded as the pixels' `p < N * OH * OW` (the
 * factors in any order) rather than `img < N`. Either way A is one im2col
 * box a step, its map the example's (N the rows, parameter 3). */
Test(wgconv, rows_spelt_otherwise_read_a_by_the_im2col_mode)
{
    static const struct {
        const char *from, *to;
    } edits[][2] = {
        {{"x + (((img * H + h) * W + v) * C)[:, None] + c[None, :]", "x + ((img * H + h) * W + v)[:, None] * C + c[None, :]"},
         {"", ""}},
        {{"(img < N && h >= 0", "(p < N * OH * OW && h >= 0"}, {"", ""}},
        {{"(img < N && h >= 0", "(p < OW * (N * OH) && h >= 0"},
         {"x + (((img * H + h) * W + v) * C)[:, None] + c[None, :]", "x + C * ((img * H + h) * W + v)[:, None] + c[None, :]"}},
    };
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        size_t cap;
        char *src = conv_src(64, &cap), *rows = strstr(src, "kernel conv2d_f16_rows");
        cr_assert_not_null(rows);
        for (int i = 0; i < 2; i++)
            if (*edits[e][i].from)
                edit_src(rows, cap - (size_t)(rows - src), edits[e][i].from, edits[e][i].to);
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_kernel_code code;
        lower_src(ctx, &m, "conv2d_f16_rows", src, &code);
        cr_assert_not_null(code.tma.name, "edit %zu: a gather twin", e);
        const tilec_tma_map *a = &code.tma.maps[0];
        cr_expect(a->im2col == TILEC_TMA_IM2COL_OUT && a->rows == 3 && a->stride == 6 && a->fr == 10 && a->fs == 11 &&
                      strstr(code.source, ".im2col."),
                  "edit %zu: A's im2col map (kind %u rows %u stride %u)\n%s", e, a->im2col, a->rows, a->stride, code.layouts);
        cr_expect(strstr(code.layouts, "A by TMA's im2col mode (one box of 128 output pixels x 64 channels a step"),
                  "edit %zu:\n%s", e, code.layouts);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
        free(src);
    }
}

/* Variant v of kernel lowered into code: a copy of its source (free it)
 * cut before the one-tile twin NAME_1, *twin the persistent twin in it,
 * *one the one-tile twin in code->source. */
static char *rows_twins(tilec_ctx *ctx, tilec_module *m, const char *kernel, int v, tilec_kernel_code *code,
                        const char **twin, const char **one)
{
    lower_variant(ctx, m, kernel, v, code);
    cr_assert_not_null(code->tma.name, "%s variant %d: an sm_90a twin", kernel, v);
    char one_name[128];
    snprintf(one_name, sizeof one_name, "%s_1(", code->tma.name);
    char *src = strdup(code->source), *cut = strstr(src, one_name);
    cr_assert(cut, "%s variant %d: the one-tile twin", kernel, v);
    cut[0] = '\0';
    *twin = strstr(src, code->tma.name);
    *one = strstr(code->source, one_name);
    cr_assert_not_null(*twin);
    return src;
}

/* conv2d_f16_rows with `from` replaced by `to`, lowered into code (a
 * context and module of its own: free them and the returned source). */
static char *rows_edited(const char *from, const char *to, tilec_ctx **ctx, tilec_module **m, tilec_kernel_code *code)
{
    size_t cap;
    char *src = conv_src(64, &cap), *rows = strstr(src, "kernel conv2d_f16_rows");
    cr_assert_not_null(rows);
    edit_src(rows, cap - (size_t)(rows - src), from, to);
    *ctx = tilec_ctx_new();
    *m = NULL;
    lower_src(*ctx, m, "conv2d_f16_rows", src, code);
    cr_assert_not_null(code->tma.name, "the edited kernel: a gather twin");
    return src;
}

/* The rows twins' epilogue (lower/wgstore.c, vstore): the tile staged in
 * shared memory as a TMA store's boxes (past the ring on the persistent
 * grid, in the ring on the one-tile twin), then 16-byte stores of whole
 * rows, where the fragments' own stores wrote each 32-byte sector in two
 * 16-byte halves; a pointer whose unit stride is not along the columns
 * keeps the plain store. */
Test(wgconv, rows_store_whole_rows_through_shared_memory)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, CONV);
    static const char *const kernels[] = {"conv2d_f16_rows", "conv2d_nhwc_rows"};
    /* the ring's bytes (stages x stage) of each variant: the persistent twin's staging begins there */
    /* (B's region holds its resident slots past the ring's stages: rows_keep_b_resident) */
    static const long ring[] = {196608, 196608, 212992, 212992, 221184}, tile[] = {32768, 32768, 16384, 16384, 8192};
    for (uint32_t kf = 0; kf < 2; kf++)
        for (int v = 0; v < 5; v++) {
            tilec_kernel_code code;
            const char *twin, *one_twin;
            char *src = rows_twins(ctx, m, kernels[kf], v, &code, &twin, &one_twin), want[160];
            snprintf(want, sizeof want, "& ~1023u) - tl_sa(tl_smem)) + %ld;", ring[v]);
            const char *st = strstr(twin, "then 16-byte stores of whole rows */");
            cr_expect(st && strstr(twin, "{ /* the tile into its staging (128-byte swizzle, ") && strstr(st, want) &&
                          strstr(st, "*(uint4 *)tl_p = tl_vec;") && !strstr(st, "*(unsigned int *)tl_p"),
                      "%s variant %d: the persistent twin stages the tile past its ring, then 16-byte stores", kernels[kf], v);
            snprintf(want, sizeof want, "tl_full0 = tl_ring0 + %ld,", ring[v] + tile[v]); /* BM x BN halves */
            cr_expect(strstr(twin, want), "%s variant %d: the barriers past the staging", kernels[kf], v);
            cr_expect(strstr(one_twin, "{ /* the tile into the ring (128-byte swizzle, ") &&
                          strstr(one_twin, "*(uint4 *)tl_p = tl_vec;"),
                      "%s variant %d: the one-tile twin stages it in the ring", kernels[kf], v);
            cr_expect(strstr(code.layouts, "sm_90a twin: staged in shared memory, 16-byte stores of whole rows"),
                      "%s variant %d: the remark:\n%s", kernels[kf], v, code.layouts);
            free(src);
            tilec_kernel_code_free(&code);
        }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    tilec_kernel_code code;
    char *src = rows_edited("store(y + p[:, None] * K + k[None, :], cast(acc, f16)",
                            "store(y + p[:, None] + k[None, :] * K, cast(acc, f16)", &ctx, &m, &code);
    cr_expect(!strstr(code.source, "16-byte stores of whole rows") && !strstr(code.layouts, "16-byte stores of whole rows"),
              "a store whose unit stride is along the rows keeps the fragments' stores");
    cr_expect(strstr(code.layouts, "sm_90a twin: 4-byte stores from the fragments (not staged: its columns are not "
                                   "unit-stride in runs of 8 elements (16 bytes))"),
              "the remark says why the store is not staged:\n%s", code.layouts);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    free(src);
}

/* The staged store is decided from the pointer's analysis (unit-stride
 * columns in whole 16-byte runs), not from its spelling: conv2d_f16's
 * tile of 8 x 16 output pixels, whose rows are (img * OH + oh) * OW + ow
 * with oh and ow divided out of range(BM) (no row offset of the form
 * start + range(n)), stages its tile as the rows kernels do, in every
 * variant. Before session 48 it kept the fragments' 4-byte stores. */
Test(wgconv, tiled_pixels_store_whole_rows_too)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, CONV);
    for (int v = 0; v < 8; v++) {
        tilec_kernel_code code;
        lower_variant(ctx, m, "conv2d_f16", v, &code);
        cr_assert_not_null(code.tma.name, "conv2d_f16 variant %d: an sm_90a twin", v);
        const char *twin = strstr(code.source, code.tma.name);
        cr_assert_not_null(twin);
        const char *st = strstr(twin, "{ /* the tile into the ring (128-byte swizzle, ");
        cr_expect(st && strstr(st, "*(uint4 *)tl_p = tl_vec;"), "conv2d_f16 variant %d: the twin stages its tile", v);
        cr_expect(strstr(code.layouts, "sm_90a twin: staged in shared memory, 16-byte stores of whole rows"),
                  "conv2d_f16 variant %d: the remark:\n%s", v, code.layouts);
        tilec_kernel_code_free(&code);
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* B resident on the persistent rows twin (wgmma.c, persist_plan): B's
 * region past A's ring holds as many k-steps' slots as fit beside the
 * staging; where a tile's steps fit them and the grid has one N tile (a
 * run-time test, tl_res), the block's first tile copies B's steps into
 * slot j of step j (by TMA, or its chunks by cp.async where the box is
 * partly masked), later tiles copy A alone, and the consumers read B's
 * slot j; else the ring as before. The one-tile twin beside it keeps the
 * ring. A B that varies with pid(0) stays in the ring, and the remark
 * says why. Where B is resident A takes more stages (session 49,
 * res_stages) where B keeps nine slots: A's slots first, B's past them,
 * both roles' ring indexed by tl_res, a barrier pair a stage. */
Test(wgconv, rows_keep_b_resident)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, CONV);
    static const char *const kernels[] = {"conv2d_f16_rows", "conv2d_nhwc_rows"};
    static const int cap[] = {6, 9, 10, 9, 15}, kib[] = {16, 8, 8, 16, 8}, S[] = {6, 12, 6, 6, 6}, sa[] = {0, 15, 8, 8, 12},
                     akib[] = {16, 8, 16, 8, 8};
    for (uint32_t kf = 0; kf < 2; kf++)
        for (int v = 0; v < 5; v++) {
            tilec_kernel_code code;
            const char *twin, *one_twin;
            char *src = rows_twins(ctx, m, kernels[kf], v, &code, &twin, &one_twin), want[256];
            snprintf(want, sizeof want, "const bool tl_res = tl_st > 0 && (tl_hi <= tl_lo || ((long long)tl_hi - tl_lo - 1) "
                                        "/ tl_st < %d) && tl_grid1 == 1;", cap[v]);
            const char *res = strstr(twin, want), *res2 = res ? strstr(res + 1, want) : NULL;
            cr_expect(res && res2 && !strstr(res2 + 1, want), "%s variant %d: the producer's and the consumers' test",
                      kernels[kf], v);
            cr_expect(strstr(twin, "const bool tl_bw = !tl_res || tl_u == (int)blockIdx.x;") &&
                          strstr(twin, "const int tl_bj = tl_res ? tl_it - tl_it0 : tl_s;") &&
                          strstr(twin, " + ((tl_bt && tl_bw) ? ") && strstr(twin, "if (tl_bt && tl_bw) {") &&
                          strstr(twin, " + tl_bj * ") && strstr(twin, "if (!tl_bt && tl_bw) {") &&
                          strstr(twin, " + (tl_res ? tl_it - tl_it0 : tl_s) * "),
                      "%s variant %d: B's boxes in the block's first tile, into slot j, read from it", kernels[kf], v);
            cr_expect(!strstr(one_twin, "bool tl_res") && !strstr(one_twin, "tl_bj"), "%s variant %d: the one-tile twin's ring",
                      kernels[kf], v);
            char sas[40] = "";
            if (sa[v])
                snprintf(sas, sizeof sas, " in %d stages (B's ring slots A's)", sa[v]);
            snprintf(want, sizeof want, "B resident: a block copies B's steps once, in its first tile, into %d slots of "
                                        "%d KiB and the ring carries A alone%s, where a tile's steps are at most %d and the "
                                        "grid has one tile along B's axis", cap[v], kib[v], sas, cap[v]);
            cr_expect(strstr(code.layouts, want), "%s variant %d: the remark:\n%s", kernels[kf], v, code.layouts);
            if (sa[v]) /* both roles' slot by tl_res; the barriers of A's stages; B's slots past A's */
                snprintf(want, sizeof want, "const int tl_s = tl_res ? tl_it %% %d : tl_it %% %d;", sa[v], S[v]);
            else
                snprintf(want, sizeof want, "const int tl_s = tl_it %% %d;", S[v]);
            res = strstr(twin, want);
            cr_expect(res && strstr(res + 1, want), "%s variant %d: %s, the producer's and the consumers'", kernels[kf], v,
                      want);
            snprintf(want, sizeof want, "for (int tl_s = 0; tl_s < %d; ++tl_s) {", sa[v] ? sa[v] : S[v]);
            cr_expect(strstr(twin, want), "%s variant %d: %s", kernels[kf], v, want);
            if (sa[v])
                snprintf(want, sizeof want, "const unsigned tl_b = tl_ring + (tl_res ? %du : %du) + ", sa[v] * akib[v] * 1024,
                         S[v] * akib[v] * 1024);
            else
                snprintf(want, sizeof want, "const unsigned tl_b = tl_ring + %d + ", S[v] * akib[v] * 1024);
            cr_expect(strstr(twin, want), "%s variant %d: %s", kernels[kf], v, want);
            cr_expect(code.tma.smem_bytes <= 227 * 1024, "%s variant %d: %u bytes", kernels[kf], v, code.tma.smem_bytes);
            free(src);
            tilec_kernel_code_free(&code);
        }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    tilec_kernel_code code;
    char *src = rows_edited("let b = load(w + (q0 / cp * C + c)[:, None]",
                            "let b = load(w + (q0 / cp * C + pid(0) % 1 + c)[:, None]", &ctx, &m, &code);
    cr_expect(!strstr(code.source, "bool tl_res") &&
                  strstr(code.layouts, "B not resident: B's tile or the loop's bounds vary with pid(0), the axis of the "
                                       "tiles a block walks"),
              "a B that reads pid(0) stays in the ring:\n%s", code.layouts);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    free(src);
}

/* The im2col box only where the mask is TMA's zero fill: without the
 * input column's lower bound (v >= 0) the gather would read the previous
 * pixel where TMA gives zeros, so A stays on cp.async and the remark says
 * why; a stride that differs along H (a second parameter) likewise. */
Test(wgconv, rows_whose_mask_is_not_the_image_s_keep_the_gather)
{
    static const struct {
        const char *from, *to, *why;
    } edits[] = {
        {"h >= 0 && h < H && v >= 0 && v < W)[:, None]", "h >= 0 && h < H && v < W)[:, None]",
         "nor its im2col mode: A's mask lacks one of the input pixel's bounds"},
        {"let h = cast(oh * stride + q0 / cp / s1 - pad, i32);", "let h = cast(oh * R + q0 / cp / s1 - pad, i32);",
         "nor its im2col mode: the stride differs along H and W"},
        {"let v = cast(ow * stride + q0 / cp % s1 - pad, i32);", "let v = cast(ow * stride + q0 / cp % s1 - R, i32);",
         "nor its im2col mode: the padding differs along H and W"},
    };
    for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
        size_t cap;
        char *src = conv_src(64, &cap), *rows = strstr(src, "kernel conv2d_f16_rows");
        cr_assert_not_null(rows);
        edit_src(rows, cap - (size_t)(rows - src), edits[e].from, edits[e].to); /* the rows kernel's line */
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        tilec_kernel_code code;
        lower_src(ctx, &m, "conv2d_f16_rows", src, &code);
        cr_assert_not_null(code.tma.name, "edit %zu: a gather twin", e);
        cr_expect(!code.tma.maps[0].im2col && !strstr(code.source, ".im2col."), "edit %zu: no im2col copy", e);
        cr_expect(strstr(code.layouts, edits[e].why), "edit %zu: the remark says why:\n%s", e, code.layouts);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
        free(src);
    }
}

/* In the SASS (when cuobjdump is at hand) the rows twin's producer issues
 * A by UTMALDG.4D.IM2COL and B by UTMALDG.2D, multiplies on HGMMA and uses
 * no local memory. */
Test(wgconv, sass_of_the_rows_twin_has_an_im2col_copy, .timeout = 300)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    char *t = twin_sass(tool, "conv2d_f16_rows", 0);
    cr_assert_not_null(t, "the sm_90a cubin has the twin");
    const char *i = strstr(t, "UTMALDG.4D.IM2COL");
    cr_expect(i && !strstr(i + 1, "UTMALDG.4D.IM2COL"), "one im2col copy in the producer's loop");
    cr_expect(strstr(t, "UTMALDG.2D") && strstr(t, "HGMMA.64x128x16.F32"), "B by TMA, wgmma");
    cr_expect(!strstr(t, "LDL") && !strstr(t, "STL"), "no local memory in the twin");
    /* the epilogue: 8 16-byte stores a thread a 128 x 128 f16 tile (lower/wgstore.c, vstore) */
    int n128 = 0;
    for (const char *p = strstr(t, "STG.E.128"); p; p = strstr(p + 1, "STG.E.128"))
        n128++;
    cr_expect_eq(n128, 8, "8 STG.E.128 in the epilogue (%d)", n128);
    free(t);
}

/* The twin with B resident (rows_keep_b_resident): the 128 x 64 twin of
 * the 3x3 56x56 C64 layer (variant 2) still has one im2col copy and B's
 * TMA copy in the producer's loop (predicated on tl_bw), wgmma, no local
 * memory. */
Test(wgconv, sass_of_the_rows_twin_with_b_resident, .timeout = 300)
{
    const char *tool = cuobjdump();
    if (!tool)
        cr_skip_test("SKIP: no cuobjdump (../shared/tools/sass installs one into /tmp/sass-tools)");
    char *t = twin_sass(tool, "conv2d_f16_rows", 2);
    cr_assert_not_null(t, "the sm_90a cubin has the twin");
    const char *i = strstr(t, "UTMALDG.4D.IM2COL"), *b = strstr(t, "UTMALDG.2D");
    cr_expect(i && !strstr(i + 1, "UTMALDG.4D.IM2COL") && b && !strstr(b + 1, "UTMALDG.2D"),
              "one im2col copy and one B box in the producer's loop");
    cr_expect(strstr(t, "HGMMA.64x64x16.F32"), "wgmma");
    cr_expect(!strstr(t, "LDL") && !strstr(t, "STL"), "no local memory in the twin");
    free(t);
}
