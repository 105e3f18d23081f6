/* test_collective.c: collectives in graphs (issue 32): the COLLECTIVE
 * line in the IR text (tests/golden/collective/X.ir), its result sizes in
 * the symbol world, peak bytes, the emitter ABI that a new line kind
 * bumps, and the C and Python emitters refusing a graph they cannot run
 * yet, with the line's location. */
#include <criterion/criterion.h>

#include "cases.h"
#include "fs_helpers.h"
#include "helpers.h"
#include "tilec/emitter.h"
#include "tilec/wir.h"

static char *emit_ir(const char *path, const tilec_wir_size *sizes, size_t n)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, path);
    membuf got = {0};
    cr_assert_eq(tilec_module_emit_ir(ctx, m, 1, sizes, n, membuf_sink(&got)), TILEC_OK);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return got.s ? got.s : strdup("");
}

static void expect_ir(const char *tile, const char *want_path)
{
    char *want = read_file(want_path, NULL);
    cr_assert(want, "missing %s", want_path);
    char *got = emit_ir(tile, NULL, 0);
    cr_expect_str_eq(got, want, "%s: the IR differs from %s", tile, want_path);
    free(got);
    free(want);
}

Test(collective, tp_mlp_ir) { expect_ir("tests/golden/ir/tp_mlp.tile", "tests/golden/ir/tp_mlp.ir"); }
Test(collective, ragged_ir) { expect_ir("tests/golden/collective/ragged.tile", "tests/golden/collective/ragged.ir"); }

/* all_gather's result (world * T tokens) counts from its line to its
 * last use; world is a size like any other */
Test(collective, peak_bytes)
{
    tilec_wir_size sz[4];
    size_t n = 0;
    cr_assert_eq(tilec_wir_parse_sizes("T=8,H=16,F=32,world=2", sz, 4, &n), TILEC_OK);
    char *got = emit_ir("tests/golden/ir/tp_mlp.tile", sz, n);
    /* tp_mlp: h and a (2*F*T each) live at once: 1024; tp_mlp_seq: xg, h, a at world * T: 2048 + 2048 */
    cr_expect(strstr(got, "peak bytes with T=8, H=16, F=32, world=2: 1024 planned, 1024 unplanned, 1024 live\n"),
              "%s", got);
    cr_expect(strstr(got, "peak bytes with T=8, H=16, F=32, world=2: 2048 planned, 2048 unplanned, 2048 live\n"),
              "%s", got);
    free(got);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/ir/tp_mlp.tile");
    cr_expect_eq(tilec_module_check_sizes(ctx, m, sz, n), TILEC_OK); /* world is known */
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* the lines of a graph with collectives, and a graph without */
Test(collective, lines)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/ir/tp_mlp.tile");
    tilec_wir *w = NULL;
    cr_assert_eq(tilec_wir_lower(ctx, m, tilec_module_graph(m, 1), &w), TILEC_OK);
    cr_expect(tilec_wir_has_collectives(w));
    int seen = 0;
    for (size_t i = 0; i < tilec_wir_line_count(w); i++) {
        const tilec_wir_line *l = tilec_wir_line_at(w, i);
        if (l->kind != TILEC_WIR_COLLECTIVE)
            continue;
        cr_expect_str_eq(tilec_wir_kind_name(l->kind), "COLLECTIVE");
        if (seen++ == 0) {
            cr_expect_eq(l->coll, TILEC_COLL_ALL_GATHER);
            cr_expect_str_eq(l->from, "x");
            cr_expect_str_eq(l->sizes[0], "T*world");
            cr_expect_str_eq(l->symbol, "tilec:coll:xg");
        } else {
            cr_expect_eq(l->coll, TILEC_COLL_REDUCE_SCATTER);
            cr_expect_eq(l->redop, TILEC_REDOP_SUM);
            cr_expect_eq(l->index, 0);
            cr_expect_str_eq(l->sizes[0], "T");
        }
    }
    cr_expect_eq(seen, 2);
    tilec_wir_free(w);
    tilec_module_free(m);
    m = parse(ctx, "tests/golden/ir/block.tile");
    cr_assert_eq(tilec_wir_lower(ctx, m, tilec_module_graph(m, 0), &w), TILEC_OK);
    cr_expect_not(tilec_wir_has_collectives(w));
    tilec_wir_free(w);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

static int nop(void *u, const tilec_wir_line *l)
{
    (void)u;
    (void)l;
    return 0;
}

/* An emitter built against ABI 1 (no COLLECTIVE hook: one hook less) is
 * refused, never called through a hook table of the wrong length. */
Test(collective, old_abi_refused)
{
    cr_expect_eq(TILEC_EMITTER_ABI, 6u); /* 3: LOOP, END_LOOP; 4: ASSERT_LIST; 5: MAKE_LIST; 6: LIST_OF (test_chunks.c: ABI 2 to 5 refused) */
    tilec_emitter old = {TILEC_EMITTER_HEADER, .name = "old", .hooks = {{{.comment = nop}}}};
    old.abi = 1;
    old.size = (unsigned)(sizeof(tilec_emitter) - 6 * sizeof(tilec_wir_hook)); /* ABI 1: no COLLECTIVE, LOOP, END_LOOP, ASSERT_LIST, MAKE_LIST, LIST_OF */
    tilec_ctx *ctx = tilec_ctx_new();
    cr_expect_eq(tilec_register_emitter(ctx, &old), TILEC_ERR_ARG);
    cr_assert_eq(tilec_ctx_error_count(ctx), 1);
    char want[512];
    snprintf(want, sizeof want,
             "refused an emitter built for emitter ABI 1 (tilec_emitter of %zu bytes); this tilec has ABI 6 (%zu "
             "bytes): rebuild it against this tilec's include/tilec/emitter.h",
             sizeof(tilec_emitter) - 6 * sizeof(tilec_wir_hook), sizeof(tilec_emitter));
    cr_expect_str_eq(tilec_ctx_diag(ctx, 0)->message, want);
    cr_expect_null(tilec_find_emitter(ctx, "old"));
    tilec_ctx_free(ctx);
}

/* An emitter of this ABI with no collective hook: an error at the line. */
Test(collective, missing_hook)
{
    tilec_emitter em = {TILEC_EMITTER_HEADER, .name = "partial"};
    for (int k = 0; k < TILEC_WIR_KIND_COUNT; k++)
        em.hooks.by_kind[k] = k == TILEC_WIR_COLLECTIVE ? NULL : nop;
    tilec_ctx *ctx = tilec_ctx_new();
    cr_assert_eq(tilec_register_emitter(ctx, &em), TILEC_OK);
    tilec_module *m = parse(ctx, "tests/golden/ir/tp_mlp.tile");
    membuf got = {0};
    cr_expect_eq(tilec_module_emit(ctx, m, "partial", NULL, membuf_sink(&got)), TILEC_ERR_ARG);
    cr_assert_eq(tilec_ctx_error_count(ctx), 1);
    cr_expect_str_eq(tilec_ctx_diag(ctx, 0)->message, "emitter 'partial' has no hook for line kind COLLECTIVE");
    cr_expect_eq(tilec_ctx_diag(ctx, 0)->line, 29);
    free(got.s);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The C and Python wrappers run collectives through a communicator set
 * on the module (their golden text: tests/golden/{c,py}/tp_mlp). */
Test(collective, wrappers_take_a_communicator)
{
    const char *const ems[] = {"c", "py"};
    const char *const want[] = {"int tp_mlp_set_comm(tp_mlp_module *M, tilec_comm *comm, char *err, size_t errlen)",
                                "def set_comm(comm):"};
    for (int i = 0; i < 2; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = parse(ctx, "tests/golden/ir/tp_mlp.tile");
        membuf got = {0};
        cr_expect_eq(tilec_module_emit(ctx, m, ems[i], NULL, membuf_sink(&got)), TILEC_OK);
        cr_expect_eq(tilec_ctx_error_count(ctx), 0);
        cr_expect(got.s && strstr(got.s, want[i]), "%s", ems[i]);
        cr_expect(got.s && strstr(got.s, "\"line 29: y = all_reduce(p, sum)\""), "%s", ems[i]);
        free(got.s);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}
