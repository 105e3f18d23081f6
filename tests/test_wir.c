/* test_wir.c: the wrapper IR. tests/golden/ir/X.tile lowers and plans to
 * exactly X.ir (as `tilec X.tile --emit ir` prints it); memory planning
 * lowers the reserved peak, never reuses an output or a view's live base;
 * the text is stable. Regenerate the goldens with `make golden`. */
#include <criterion/criterion.h>

#include "fs_helpers.h"
#include "cases.h"
#include "helpers.h"
#include "tilec/wir.h"


static char *emit(const char *path, int plan)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, path);
    membuf got = {0};
    cr_assert_eq(tilec_module_emit_ir(ctx, m, plan, NULL, 0, membuf_sink(&got)), TILEC_OK);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return got.s ? got.s : strdup("");
}

ParameterizedTestParameters(wir, golden) { return cases_of("tests/golden/ir/*.tile"); }
ParameterizedTest(gcase *c, wir, golden)
{
    char want_path[300];
    snprintf(want_path, sizeof want_path, "%.*s.ir", (int)(strlen(c->path) - 5), c->path);
    char *want = read_file(want_path, NULL);
    cr_assert(want, "missing %s", want_path);
    char *got = emit(c->path, 1);
    cr_expect_str_eq(got, want, "%s: the IR differs from %s", c->path, want_path);
    /* stable: a second parse and lowering prints the same bytes */
    char *again = emit(c->path, 1);
    cr_expect_str_eq(again, got);
    free(again);
    free(got);
    free(want);
}

Test(wir, golden_corpus)
{
    glob_t g;
    cr_assert_eq(glob("tests/golden/ir/*.tile", 0, NULL, &g), 0);
    cr_expect_geq(g.gl_pathc, 4);
    globfree(&g);
}

/* ---- helpers over lines ---- */

typedef struct lowered {
    tilec_ctx *ctx;
    tilec_module *m;
    tilec_wir *w;
} lowered;

static lowered lower(const char *path, int plan)
{
    lowered l = {tilec_ctx_new(), NULL, NULL};
    l.m = parse(l.ctx, path);
    cr_assert_eq(tilec_module_graph_count(l.m), 1);
    cr_assert_eq(tilec_wir_lower(l.ctx, l.m, tilec_module_graph(l.m, 0), &l.w), TILEC_OK);
    if (plan)
        cr_assert_eq(tilec_wir_plan(l.ctx, l.w), TILEC_OK);
    return l;
}

static void done(lowered *l)
{
    tilec_wir_free(l->w);
    tilec_module_free(l->m);
    tilec_ctx_free(l->ctx);
}

static int is_output(const tilec_wir *w, const char *name)
{
    for (size_t i = 0; i < tilec_wir_output_count(w); i++)
        if (!strcmp(tilec_wir_output(w, i), name))
            return 1;
    return 0;
}

/* The base buffer a view name resolves to (itself if not a view). */
static const char *root_of(const tilec_wir *w, const char *name)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < tilec_wir_line_count(w); i++) {
            const tilec_wir_line *l = tilec_wir_line_at(w, i);
            if (l->kind == TILEC_WIR_REINTERPRET && !strcmp(l->name, name)) {
                name = l->from;
                changed = 1;
            }
        }
    }
    return name;
}

/* Does any line after `after` read or write a name whose root is `root`? */
static int used_after(const tilec_wir *w, size_t after, const char *root)
{
    for (size_t i = after + 1; i < tilec_wir_line_count(w); i++) {
        const tilec_wir_line *l = tilec_wir_line_at(w, i);
        for (uint32_t a = 0; a < l->nargs; a++)
            if (l->args[a].kind == TILEC_WIR_ARG_BUFFER && !strcmp(root_of(w, l->args[a].text), root))
                return 1;
        if (l->kind == TILEC_WIR_REINTERPRET && !strcmp(root_of(w, l->from), root))
            return 1;
    }
    return 0;
}

static const char *const graphs[] = {"tests/golden/ir/block.tile", "tests/golden/ir/chain.tile",
                                     "tests/golden/ir/multi.tile", "tests/golden/ir/views.tile"};

Test(wir, reuse_is_safe)
{
    int reuses = 0;
    for (size_t g = 0; g < sizeof graphs / sizeof *graphs; g++) {
        lowered l = lower(graphs[g], 1);
        for (size_t i = 0; i < tilec_wir_line_count(l.w); i++) {
            const tilec_wir_line *r = tilec_wir_line_at(l.w, i);
            if (r->kind != TILEC_WIR_REUSE)
                continue;
            reuses++;
            cr_expect(!is_output(l.w, r->from), "%s: reuse of the output %s", graphs[g], r->from);
            /* no view of an output may point at the reused storage either */
            for (size_t k = 0; k < tilec_wir_output_count(l.w); k++)
                cr_expect_str_neq(root_of(l.w, tilec_wir_output(l.w, k)), r->from);
            cr_expect(!used_after(l.w, i, r->from), "%s: %s (or a view of it) is used after %s took it over",
                      graphs[g], r->from, r->name);
            /* the freed buffer's conditional free is gone; it was an ALLOCATE of the same key */
            for (size_t k = 0; k < tilec_wir_line_count(l.w); k++) {
                const tilec_wir_line *f = tilec_wir_line_at(l.w, k);
                cr_expect(!(f->kind == TILEC_WIR_FREE_IF_NOT_REUSED && !strcmp(f->name, r->from)));
                if ((f->kind == TILEC_WIR_ALLOCATE || f->kind == TILEC_WIR_REUSE) && !strcmp(f->name, r->from)) {
                    cr_expect_lt(k, i);
                    cr_expect_str_eq(f->key, r->key);
                }
            }
        }
        done(&l);
    }
    cr_expect_geq(reuses, 5, "the corpus must exercise reuse");
}

/* Before planning: every buffer the graph allocated and does not return
 * is freed exactly once; outputs and views never are. */
Test(wir, frees_before_planning)
{
    for (size_t g = 0; g < sizeof graphs / sizeof *graphs; g++) {
        lowered l = lower(graphs[g], 0);
        for (size_t i = 0; i < tilec_wir_line_count(l.w); i++) {
            const tilec_wir_line *a = tilec_wir_line_at(l.w, i);
            cr_expect_neq(a->kind, TILEC_WIR_REUSE);
            if (a->kind != TILEC_WIR_ALLOCATE && a->kind != TILEC_WIR_MULTI_OUTPUT &&
                !(a->kind == TILEC_WIR_EXTERN_ALLOC && a->bytes) && a->kind != TILEC_WIR_REINTERPRET)
                continue;
            int frees = 0, out = 0;
            for (size_t k = 0; k < tilec_wir_output_count(l.w); k++)
                out |= !strcmp(root_of(l.w, tilec_wir_output(l.w, k)), a->name);
            for (size_t k = 0; k < tilec_wir_line_count(l.w); k++) {
                const tilec_wir_line *f = tilec_wir_line_at(l.w, k);
                if ((f->kind == TILEC_WIR_FREE || f->kind == TILEC_WIR_FREE_IF_NOT_REUSED) && !strcmp(f->name, a->name)) {
                    frees++;
                    cr_expect(!used_after(l.w, k, a->name), "%s: %s used after its free", graphs[g], a->name);
                }
            }
            int want = a->kind == TILEC_WIR_REINTERPRET || out ? 0 : 1;
            cr_expect_eq(frees, want, "%s: %s freed %d times", graphs[g], a->name, frees);
        }
        done(&l);
    }
}

Test(wir, planned_peak_is_lower)
{
    tilec_wir_size sz[4];
    size_t n = 0;
    cr_assert_eq(tilec_wir_parse_sizes("R=4096,C=1024", sz, 4, &n), TILEC_OK);
    cr_assert_eq(n, 2);
    lowered l = lower("tests/golden/ir/chain.tile", 0);
    int64_t before, after, live_before, live_after;
    cr_assert_eq(tilec_wir_peak_bytes(l.ctx, l.w, TILEC_WIR_PEAK_RESERVED, sz, n, &before), TILEC_OK);
    cr_assert_eq(tilec_wir_peak_bytes(l.ctx, l.w, TILEC_WIR_PEAK_LIVE, sz, n, &live_before), TILEC_OK);
    cr_assert_eq(tilec_wir_plan(l.ctx, l.w), TILEC_OK);
    cr_assert_eq(tilec_wir_peak_bytes(l.ctx, l.w, TILEC_WIR_PEAK_RESERVED, sz, n, &after), TILEC_OK);
    cr_assert_eq(tilec_wir_peak_bytes(l.ctx, l.w, TILEC_WIR_PEAK_LIVE, sz, n, &live_after), TILEC_OK);
    const int64_t f32 = 4LL * 4096 * 1024, f16 = f32 / 2;
    cr_expect_eq(before, 5 * f32 + f16);  /* a b c d y all fresh, h fresh */
    cr_expect_eq(after, 2 * f32 + f16);   /* a b serve c d y */
    cr_expect_lt(after, before);
    cr_expect_eq(live_before, live_after); /* reuse changes no live set */
    cr_expect_eq(after, live_after);       /* and the plan reaches that bound here */
    done(&l);
}

Test(wir, peak_needs_every_symbol)
{
    tilec_wir_size sz[1];
    size_t n = 0;
    cr_assert_eq(tilec_wir_parse_sizes("R=8", sz, 1, &n), TILEC_OK);
    lowered l = lower("tests/golden/ir/chain.tile", 1);
    int64_t peak = -1;
    cr_expect_eq(tilec_wir_peak_bytes(l.ctx, l.w, TILEC_WIR_PEAK_RESERVED, sz, n, &peak), TILEC_ERR_ARG);
    cr_expect_eq(peak, -1);
    cr_assert_eq(tilec_ctx_error_count(l.ctx), 1);
    cr_expect_str_eq(tilec_ctx_diag(l.ctx, 0)->message,
                     "graph 'chain': no value for the size symbol 'C' (needed by 'a', 4*C*R bytes)");
    cr_expect_eq(tilec_ctx_diag(l.ctx, 0)->line, 36);
    done(&l);
}

Test(wir, plan_is_idempotent)
{
    lowered l = lower("tests/golden/ir/views.tile", 1);
    membuf a = {0}, b = {0};
    cr_assert_eq(tilec_wir_print(l.w, membuf_sink(&a)), TILEC_OK);
    cr_assert_eq(tilec_wir_plan(l.ctx, l.w), TILEC_OK);
    cr_assert_eq(tilec_wir_print(l.w, membuf_sink(&b)), TILEC_OK);
    cr_expect_str_eq(a.s, b.s);
    free(a.s);
    free(b.s);
    done(&l);
}

Test(wir, eval_and_sizes)
{
    tilec_wir_size sz[3];
    size_t n = 0;
    int64_t v = 0;
    cr_assert_eq(tilec_wir_parse_sizes("R=10,C=3,N=300", sz, 3, &n), TILEC_OK);
#define INT(x) (&(tilec_ix){.op = TILEC_IX_INT, .value = (x)})
#define SYM(s) (&(tilec_ix){.op = TILEC_IX_SYM, .name = (s)})
#define OP(o, x, y) (&(tilec_ix){.op = TILEC_IX_##o, .a = (x), .b = (y)})
    cr_assert_eq(tilec_wir_eval_expr(OP(ADD, OP(MUL, OP(MUL, INT(4), SYM("C")), SYM("R")), INT(2)), sz, n, &v),
                 TILEC_OK);
    cr_expect_eq(v, 122);
    cr_assert_eq(tilec_wir_eval_expr(OP(SUB, OP(MUL, INT(2), OP(DIV, SYM("R"), INT(4))),
                                        OP(CDIV, SYM("N"), INT(128))), sz, n, &v), TILEC_OK);
    cr_expect_eq(v, 2 * (10 / 4) - 3);
    cr_assert_eq(tilec_wir_eval_expr(OP(ADD, OP(NEG, SYM("R"), NULL), OP(MOD, SYM("N"), INT(7))), sz, n, &v), TILEC_OK);
    cr_expect_eq(v, -10 + 300 % 7);
    cr_expect_eq(tilec_wir_eval_expr(OP(MUL, SYM("K"), SYM("R")), sz, n, &v), TILEC_ERR_ARG, "an unknown symbol");
    cr_expect_eq(tilec_wir_eval_expr(OP(DIV, SYM("R"), INT(0)), sz, n, &v), TILEC_ERR_INPUT);
    cr_expect_eq(tilec_wir_eval_expr(OP(MUL, INT(INT64_MAX), SYM("R")), sz, n, &v), TILEC_ERR_INPUT);
    cr_expect_eq(tilec_wir_eval_expr(OP(ADD, SYM("R"), NULL), sz, n, &v), TILEC_ERR_ARG, "a missing operand");
#undef INT
#undef SYM
#undef OP
    /* a line's own size: chain.tile's a is 4*C*R bytes */
    lowered l = lower("tests/golden/ir/chain.tile", 0);
    const tilec_wir_line *a = NULL;
    for (size_t i = 0; i < tilec_wir_line_count(l.w) && !a; i++) {
        const tilec_wir_line *x = tilec_wir_line_at(l.w, i);
        if (x->kind == TILEC_WIR_ALLOCATE && x->name && !strcmp(x->name, "a"))
            a = x;
    }
    cr_assert_not_null(a);
    cr_assert_eq(tilec_wir_eval_expr(a->bytes_expr, sz, n, &v), TILEC_OK);
    cr_expect_eq(v, 4 * 3 * 10);
    done(&l);
    const char *bad[] = {"", "R", "R=", "R=0", "R=-1", "R=1,", "R=1,R=2", "1R=2", "R=1;C=2", "R=1,C=2,N=3,M=4"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_expect_eq(tilec_wir_parse_sizes(bad[i], sz, 3, &n), TILEC_ERR_ARG, "'%s' accepted", bad[i]);
}

/* The X-macro gives the names and the hook table; a missing hook is an
 * error naming the emitter and the line kind. */
/* An EXTERN_ALLOC's results: itself for one, its MULTI_OUTPUT lines for a
 * tuple, none when cap is too small or the line is of another kind. */
Test(wir, extern_results)
{
    lowered l = lower("tests/golden/ir/multi.tile", 1);
    const tilec_wir_line *res[4];
    int tuples = 0;
    for (size_t i = 0; i < tilec_wir_line_count(l.w); i++) {
        const tilec_wir_line *a = tilec_wir_line_at(l.w, i);
        if (a->kind != TILEC_WIR_EXTERN_ALLOC) {
            cr_expect_eq(tilec_wir_extern_results(l.w, a, res, 4), 0);
            continue;
        }
        tuples++;
        cr_assert_eq(a->nresults, 2);
        cr_assert_eq(tilec_wir_extern_results(l.w, a, res, 4), 2);
        cr_expect_eq(res[0]->kind, TILEC_WIR_MULTI_OUTPUT);
        cr_expect_eq(res[0]->index, 0);
        cr_expect_eq(res[1]->index, 1);
        cr_expect_str_eq(res[0]->from, a->name);
        cr_expect_eq(tilec_wir_extern_results(l.w, a, res, 1), 0, "cap too small");
    }
    cr_expect_eq(tuples, 2);
    done(&l);
    l = lower("tests/golden/ir/block.tile", 1);
    int singles = 0;
    for (size_t i = 0; i < tilec_wir_line_count(l.w); i++) {
        const tilec_wir_line *a = tilec_wir_line_at(l.w, i);
        if (a->kind == TILEC_WIR_EXTERN_ALLOC && a->nresults <= 1) {
            singles++;
            cr_assert_eq(tilec_wir_extern_results(l.w, a, res, 4), 1);
            cr_expect_eq(res[0], a);
        }
    }
    cr_expect_gt(singles, 0, "block.tile has an extern with one result");
    cr_expect_eq(tilec_wir_extern_results(l.w, NULL, res, 4), 0);
    done(&l);
}

static int count_line(void *user, const tilec_wir_line *l)
{
    (void)l;
    ++*(int *)user;
    return 0;
}

Test(wir, hooks_and_names)
{
    cr_expect_str_eq(tilec_wir_kind_name(TILEC_WIR_COMMENT), "COMMENT");
    cr_expect_str_eq(tilec_wir_kind_name(TILEC_WIR_FREE_IF_NOT_REUSED), "FREE_IF_NOT_REUSED");
    cr_expect_str_eq(tilec_wir_kind_name(TILEC_WIR_ASSERT_SHAPE), "ASSERT_SHAPE");
    cr_expect_str_eq(tilec_wir_kind_name(TILEC_WIR_KIND_COUNT), "?");
    cr_expect_str_eq(tilec_wir_kind_name(TILEC_WIR_COLLECTIVE), "COLLECTIVE");
    cr_expect_str_eq(tilec_wir_kind_name(TILEC_WIR_ASSERT_LIST), "ASSERT_LIST");
    cr_expect_str_eq(tilec_wir_kind_name(TILEC_WIR_MAKE_LIST), "MAKE_LIST");
    cr_expect_str_eq(tilec_wir_kind_name(TILEC_WIR_LIST_OF), "LIST_OF");
    cr_expect_eq(TILEC_WIR_KIND_COUNT, 18); /* COLLECTIVE (emitter ABI 2); LOOP, END_LOOP (ABI 3); ASSERT_LIST (ABI 4);
                                               MAKE_LIST (ABI 5); LIST_OF (ABI 6) */
    lowered l = lower("tests/golden/ir/block.tile", 1);
    tilec_wir_hooks all = {0};
    for (int k = 0; k < TILEC_WIR_KIND_COUNT; k++)
        all.by_kind[k] = count_line;
    int n = 0;
    cr_expect_eq(tilec_wir_dispatch(l.ctx, l.w, &all, "counter", &n), TILEC_OK);
    cr_expect_eq((size_t)n, tilec_wir_line_count(l.w));
    int walked = 0;
    cr_expect_eq(tilec_wir_walk(l.w, count_line, &walked), 0);
    cr_expect_eq(walked, n);
    tilec_wir_hooks some = all;
    some.kernel_call = NULL;
    n = 0;
    cr_expect_eq(tilec_wir_dispatch(l.ctx, l.w, &some, "dot", &n), TILEC_ERR_ARG);
    cr_assert_eq(tilec_ctx_error_count(l.ctx), 1);
    cr_expect_str_eq(tilec_ctx_diag(l.ctx, 0)->message, "emitter 'dot' has no hook for line kind KERNEL_CALL");
    cr_expect_eq(tilec_ctx_diag(l.ctx, 0)->line, 30);
    done(&l);
}

/* Every line carries a real .tile location; a doc comment's text is escaped. */
Test(wir, locations_and_escapes)
{
    lowered l = lower("tests/golden/ir/block.tile", 1);
    for (size_t i = 0; i < tilec_wir_line_count(l.w); i++) {
        const tilec_wir_line *x = tilec_wir_line_at(l.w, i);
        cr_expect_gt(x->loc.line, 0, "line %zu (%s)", i, tilec_wir_kind_name(x->kind));
        cr_expect_gt(x->loc.col, 0);
        cr_expect_str_eq(x->loc.file, "tests/golden/ir/block.tile");
    }
    done(&l);
    tilec_ctx *ctx = tilec_ctx_new();
    const char *src = "graph g(x: f32[N]) -> (y: f32[N]) {\n    /// a \\ b\tc\n    let y = view(x, f32[N]);\n    return y;\n}\n";
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "e.tile", src, strlen(src), &m), TILEC_OK);
    membuf got = {0};
    cr_assert_eq(tilec_module_emit_ir(ctx, m, 1, NULL, 0, membuf_sink(&got)), TILEC_OK);
    cr_expect_str_eq(got.s, "graph g(x: f32[N])  @1:1\n"
                            "assert_shape x: f32[N] binds N  @1:9\n"
                            "# a \\\\ b\\x09c  @2:5\n"
                            "view y = x as f32[N] strides [1] offset 0  @3:5\n"
                            "return y  @4:5\n");
    free(got.s);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The queries every emitter shares (wrapper_ir/query.c): a name is an
 * output exactly when the return line lists it, and each tensor parameter
 * has its ASSERT_SHAPE line. */
Test(wir, output_and_input_shape_queries)
{
    for (size_t gi = 0; gi < sizeof graphs / sizeof graphs[0]; gi++) {
        lowered l = lower(graphs[gi], 1);
        for (size_t i = 0; i < tilec_wir_line_count(l.w); i++) {
            const tilec_wir_line *ln = tilec_wir_line_at(l.w, i);
            if (ln->name)
                cr_assert_eq(tilec_wir_is_output(l.w, ln->name), is_output(l.w, ln->name), "%s: %s", graphs[gi],
                             ln->name);
        }
        cr_assert_gt(tilec_wir_output_count(l.w), 0);
        cr_assert(tilec_wir_is_output(l.w, tilec_wir_output(l.w, 0)));
        cr_assert_not(tilec_wir_is_output(l.w, "no such buffer"));
        cr_assert_not(tilec_wir_is_output(l.w, NULL));
        cr_assert_not(tilec_wir_is_output(NULL, "x"));
        const tilec_graph *g = tilec_wir_graph(l.w);
        for (uint32_t p = 0; p < g->nparams; p++) {
            const tilec_wir_line *a = tilec_wir_input_shape(l.w, p);
            if (g->params[p].type.kind != TILEC_TE_TENSOR) {
                cr_assert_null(a);
                continue;
            }
            cr_assert_not_null(a, "%s: parameter %s", graphs[gi], g->params[p].name);
            cr_assert_eq(a->kind, TILEC_WIR_ASSERT_SHAPE);
            cr_assert_eq(a->index, p);
            cr_assert_eq(a->rank, g->params[p].type.ndims);
        }
        for (uint32_t p = 0; p < g->nparams; p++) /* an input is a tensor parameter, nothing else */
            cr_assert_eq(tilec_wir_is_input(l.w, g->params[p].name), g->params[p].type.kind == TILEC_TE_TENSOR,
                         "%s: parameter %s", graphs[gi], g->params[p].name);
        cr_assert_not(tilec_wir_is_input(l.w, "no such buffer"));
        cr_assert_not(tilec_wir_is_input(l.w, NULL));
        cr_assert_not(tilec_wir_is_input(NULL, "x"));
        cr_assert_null(tilec_wir_input_shape(l.w, g->nparams));
        cr_assert_null(tilec_wir_input_shape(NULL, 0));
        done(&l);
    }
}
