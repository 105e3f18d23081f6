/* test_chunks.c: chunked graphs (issue 35 item 4), the wrapper IR's side.
 * Every graph of a corpus of loops is lowered and planned, then RUN as the
 * wrappers run its lines, each loop's body three times: ALLOCATE makes
 * storage, REUSE takes the storage of a buffer that still holds it,
 * FREE_IF_NOT_REUSED and FREE give it back, and every use needs the
 * storage of its buffer (through views) live and its own. At the end only
 * the outputs hold storage: nothing leaks in any iteration, nothing is
 * used after its free, no iteration takes a buffer another one freed. A
 * planner that is not scoped by loop body fails here (graph `reuse` of
 * tests/golden/ir/chunks.tile: `c` would take `v`, freed in the body, and
 * the dropped free would leak it in every iteration; `t` would take `a`,
 * freed before the loop, which the second iteration no longer holds), and
 * so does a lowering that frees a buffer of the graph's top inside a loop
 * that uses it. Also: an emitter built against ABI 2 (before LOOP and
 * END_LOOP) is refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/emitter.h"
#include "tilec/tilec.h"
#include "tilec/wir.h"

static const char corpus[] =
    "kernel k2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) {\n"
    "    let i = pid(0) * 256 + range(256);\n"
    "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
    "}\n"
    "graph outer_last_use_inside(x: f32[N], m: i64) -> f32[N] {\n"
    "    let a = empty(f32, [N]);\n"
    "    k2(x, a, N);\n"
    "    let y = empty(f32, [N]);\n"
    "    for i in 0 .. m {\n"
    "        let t = empty(f32, [N]);\n"
    "        k2(a, t, N);\n"
    "        k2(t, y, N);\n"
    "    }\n"
    "    let b = empty(f32, [N]);\n"
    "    k2(y, b, N);\n"
    "    return b;\n"
    "}\n"
    "graph nested_reuse(x: f32[R, H], n: i64) -> f32[H] {\n"
    "    let s = zeros(f32, [H]);\n"
    "    let p = empty(f32, [H]);\n"
    "    k2(s, p, H);\n"
    "    for i in 0 .. n {\n"
    "        let u = empty(f32, [H]);\n"
    "        k2(p, u, H);\n"
    "        for j in 0 .. 2 {\n"
    "            let row = x[i * 2 + j : i * 2 + j + 1];\n"
    "            let v = empty(f32, [H]);\n"
    "            k2(row, v, H);\n"
    "            let w = empty(f32, [H]);\n"
    "            k2(v, w, H);\n"
    "            k2(w, s, H);\n"
    "        }\n"
    "        let z = empty(f32, [H]);\n"
    "        k2(u, z, H);\n"
    "        k2(z, s, H);\n"
    "    }\n"
    "    let q = empty(f32, [H]);\n"
    "    k2(s, q, H);\n"
    "    return q;\n"
    "}\n";

enum { MAXB = 4096 };

typedef struct sim {
    const tilec_wir *w;
    const char *name[MAXB]; /* buffer name -> storage */
    int sid[MAXB];
    int nnames;
    const char *owner[MAXB]; /* storage -> the buffer holding it, NULL when given back */
    int nsids;
    char why[512];
} sim;

static int slot(sim *s, const char *name)
{
    for (int i = s->nnames; i-- > 0;)
        if (!strcmp(s->name[i], name))
            return i;
    return -1;
}

/* the buffer a name resolves to through REINTERPRET lines */
static const char *root(const tilec_wir *w, const char *name)
{
    for (size_t i = 0; i < tilec_wir_line_count(w); i++) {
        const tilec_wir_line *l = tilec_wir_line_at(w, i);
        if (l->kind == TILEC_WIR_REINTERPRET && !strcmp(l->name, name))
            return root(w, l->from);
    }
    return name;
}

static int bad(sim *s, const tilec_wir_line *l, const char *what, const char *name)
{
    if (!s->why[0])
        snprintf(s->why, sizeof s->why, "graph %s, line %u: %s '%s'", tilec_wir_graph(s->w)->name, l->loc.line, what,
                 name);
    return 1;
}

static int use(sim *s, const tilec_wir_line *l, const char *name)
{
    if (tilec_wir_is_input(s->w, root(s->w, name)))
        return 0;
    const char *r = root(s->w, name);
    int k = slot(s, r);
    if (k < 0 || !s->owner[s->sid[k]] || strcmp(s->owner[s->sid[k]], r))
        return bad(s, l, "uses a buffer that does not hold its storage:", r);
    return 0;
}

static int make(sim *s, const char *name, int sid)
{
    if (s->nnames == MAXB || s->nsids == MAXB)
        return 1;
    s->name[s->nnames] = name;
    s->sid[s->nnames++] = sid;
    return 0;
}

/* Run lines [from, to): a LOOP's body three times. Returns nonzero on a fault. */
static int run(sim *s, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        const tilec_wir_line *l = tilec_wir_line_at(s->w, i);
        switch (l->kind) {
        case TILEC_WIR_LOOP: {
            size_t end = i + 1;
            for (int depth = 0; end < to; end++) {
                const tilec_wir_line *e = tilec_wir_line_at(s->w, end);
                depth += e->kind == TILEC_WIR_LOOP;
                if (e->kind == TILEC_WIR_END_LOOP && !depth--)
                    break;
            }
            cr_assert_lt(end, to, "LOOP without END_LOOP");
            for (int it = 0; it < 3; it++)
                if (run(s, i + 1, end))
                    return 1;
            i = end;
            break;
        }
        case TILEC_WIR_ALLOCATE:
        case TILEC_WIR_EXTERN_ALLOC:
        case TILEC_WIR_COLLECTIVE:
            if (make(s, l->name, s->nsids))
                return bad(s, l, "too many buffers at", l->name);
            s->owner[s->nsids++] = l->name;
            break;
        case TILEC_WIR_REUSE: {
            int k = slot(s, l->from);
            if (k < 0 || !s->owner[s->sid[k]] || strcmp(s->owner[s->sid[k]], l->from))
                return bad(s, l, "reuses a buffer whose storage it no longer holds:", l->from);
            s->owner[s->sid[k]] = l->name;
            if (make(s, l->name, s->sid[k]))
                return 1;
            break;
        }
        case TILEC_WIR_FREE_IF_NOT_REUSED:
        case TILEC_WIR_FREE: {
            if (tilec_wir_is_output(s->w, l->name))
                break;
            int k = slot(s, l->name);
            if (k < 0 || !s->owner[s->sid[k]] || strcmp(s->owner[s->sid[k]], l->name))
                return bad(s, l, "frees a buffer that does not hold its storage:", l->name);
            s->owner[s->sid[k]] = NULL;
            break;
        }
        case TILEC_WIR_REINTERPRET:
            if (use(s, l, l->from))
                return 1;
            break;
        case TILEC_WIR_KERNEL_CALL:
        case TILEC_WIR_EXTERN_CALL:
            for (uint32_t a = 0; a < l->nargs; a++)
                if (l->args[a].kind == TILEC_WIR_ARG_BUFFER && use(s, l, l->args[a].text))
                    return 1;
            break;
        default: break;
        }
    }
    return 0;
}

static void check_module(const char *path, const char *src, size_t len)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, path, src, len, &m), TILEC_OK, "%s does not check", path);
    int loops = 0;
    for (size_t g = 0; g < tilec_module_graph_count(m); g++) {
        tilec_wir *w = NULL;
        cr_assert_eq(tilec_wir_lower(ctx, m, tilec_module_graph(m, g), &w), TILEC_OK);
        cr_assert_eq(tilec_wir_plan(ctx, w), TILEC_OK);
        static sim s;
        memset(&s, 0, sizeof s);
        s.w = w;
        for (size_t i = 0; i < tilec_wir_line_count(w); i++)
            loops += tilec_wir_line_at(w, i)->kind == TILEC_WIR_LOOP;
        cr_expect_eq(run(&s, 0, tilec_wir_line_count(w)), 0, "%s: %s", path, s.why);
        for (int k = 0; k < s.nsids && !s.why[0]; k++)
            cr_expect(!s.owner[k] || tilec_wir_is_output(w, s.owner[k]), "%s: graph %s leaks '%s'", path,
                      tilec_module_graph(m, g)->name, s.owner[k]);
        tilec_wir_free(w);
    }
    cr_expect_gt(loops, 0, "%s has no loop to test", path);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

static void check_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    check_module(path, buf, n);
}

Test(chunks, planned_loops_run_without_a_leak_or_a_use_after_free)
{
    check_module("corpus.tile", corpus, strlen(corpus));
    check_file("tests/golden/ir/chunks.tile");
    check_file("tests/golden/ir/unroll.tile"); /* unrolled loops, and loops kept beside them */
}

/* Planning within one iteration still happens: v takes t's storage in the
 * body of graph `reuse`, and c after the loop takes a (freed before it). */
Test(chunks, reuse_within_an_iteration_and_around_the_loop)
{
    FILE *f = fopen("tests/golden/ir/chunks.tile", "rb");
    cr_assert(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "chunks.tile", buf, n, &m), TILEC_OK);
    tilec_wir *w = NULL;
    cr_assert_eq(tilec_wir_lower(ctx, m, tilec_module_find_graph(m, "reuse"), &w), TILEC_OK);
    cr_assert_eq(tilec_wir_plan(ctx, w), TILEC_OK);
    int v = 0, c = 0;
    for (size_t i = 0; i < tilec_wir_line_count(w); i++) {
        const tilec_wir_line *l = tilec_wir_line_at(w, i);
        if (l->kind != TILEC_WIR_REUSE)
            continue;
        v += !strcmp(l->name, "v") && !strcmp(l->from, "t");
        c += !strcmp(l->name, "c") && !strcmp(l->from, "a");
        cr_expect(strcmp(l->name, "t") && strcmp(l->name, "u"), "'%s' takes '%s' across the loop's edge", l->name,
                  l->from);
    }
    cr_expect_eq(v, 1);
    cr_expect_eq(c, 1);
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

/* An emitter of ABI 2 has no .loop and .end_loop, one of ABI 3 no
 * .assert_list (tensor lists), one of ABI 4 no .make_list (sub-lists),
 * one of ABI 5 no .list_of (lists of named tensors):
 * refused, never called through a hook table hooks short. */
Test(chunks, an_emitter_of_abi_2_is_refused)
{
    cr_expect_eq(TILEC_EMITTER_ABI, 6u);
    for (unsigned abi = 2; abi <= 5; abi++) {
        tilec_emitter old = {TILEC_EMITTER_HEADER, .name = "old", .hooks = {{{.comment = nop}}}};
        old.abi = abi;
        /* hooks short: LOOP, END_LOOP (ABI 3), ASSERT_LIST (ABI 4), MAKE_LIST (ABI 5) and LIST_OF (ABI 6) */
        old.size = (unsigned)(sizeof(tilec_emitter) - (abi == 2 ? 5 : 6 - abi) * sizeof(tilec_wir_hook));
        tilec_ctx *ctx = tilec_ctx_new();
        cr_expect_eq(tilec_register_emitter(ctx, &old), TILEC_ERR_ARG);
        cr_assert_eq(tilec_ctx_error_count(ctx), 1);
        char want[32];
        snprintf(want, sizeof want, "emitter ABI %u", abi);
        cr_expect(strstr(tilec_ctx_diag(ctx, 0)->message, want) != NULL, "%s", tilec_ctx_diag(ctx, 0)->message);
        cr_expect_null(tilec_find_emitter(ctx, "old"));
        tilec_ctx_free(ctx);
    }
}

/* The lines of graph `name` of tests/golden/ir/unroll.tile, planned. */
static tilec_wir *unroll_graph(tilec_ctx *ctx, tilec_module **m, const char *name)
{
    FILE *f = fopen("tests/golden/ir/unroll.tile", "rb");
    cr_assert(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    cr_assert_eq(tilec_parse_string(ctx, "unroll.tile", buf, n, m), TILEC_OK);
    tilec_wir *w = NULL;
    cr_assert_eq(tilec_wir_lower(ctx, *m, tilec_module_find_graph(*m, name), &w), TILEC_OK);
    cr_assert_eq(tilec_wir_plan(ctx, w), TILEC_OK);
    return w;
}

static int count_kind(const tilec_wir *w, tilec_wir_kind k)
{
    int n = 0;
    for (size_t i = 0; i < tilec_wir_line_count(w); i++)
        n += tilec_wir_line_at(w, i)->kind == k;
    return n;
}

static const tilec_wir_line *named(const tilec_wir *w, const char *name)
{
    for (size_t i = 0; i < tilec_wir_line_count(w); i++) {
        const tilec_wir_line *l = tilec_wir_line_at(w, i);
        if (l->name && !strcmp(l->name, name) && l->kind != TILEC_WIR_FREE && l->kind != TILEC_WIR_FREE_IF_NOT_REUSED)
            return l;
    }
    return NULL;
}

/* A loop of a constant count (a module constant, NC = 4) is straight-line
 * IR: no LOOP line, each iteration's names suffixed and the variable a
 * number in its slices' bounds and offsets, and the planner hands the
 * body's two buffers from one iteration to the next: two ALLOCATEs and six
 * REUSEs, a planned peak of two chunk buffers beside y, as a loop's. */
Test(chunks, a_constant_loop_is_unrolled_and_planned_as_straight_line)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_wir *w = unroll_graph(ctx, &m, "chunks4");
    cr_expect_eq(count_kind(w, TILEC_WIR_LOOP), 0);
    cr_expect_eq(count_kind(w, TILEC_WIR_ALLOCATE), 3); /* y, t_i0, u_i0 */
    cr_expect_eq(count_kind(w, TILEC_WIR_REUSE), 6);
    cr_expect_eq(count_kind(w, TILEC_WIR_KERNEL_CALL), 12);
    const tilec_wir_line *v = named(w, "xc_i3");
    cr_assert(v && v->kind == TILEC_WIR_REINTERPRET);
    cr_expect_str_eq(v->offset, "12*H");
    cr_expect_str_eq(v->args[0].text, "12");
    cr_expect_str_eq(v->args[1].text, "16");
    tilec_wir_size h = {"H", 8};
    int64_t peak = 0;
    cr_assert_eq(tilec_wir_peak_bytes(ctx, w, TILEC_WIR_PEAK_RESERVED, &h, 1, &peak), TILEC_OK);
    cr_expect_eq(peak, 16 * 8 * 4 + 2 * 4 * 8 * 4, "y and two chunk buffers, got %lld bytes", (long long)peak);
    tilec_wir_free(w);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Loops past the limit (TILEC_MAX_UNROLL statements) stay loops, with a
 * COMMENT line that says why; a constant loop in a loop of a run-time
 * count is unrolled inside it. */
Test(chunks, loops_past_the_limit_stay_loops_with_a_remark)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_wir *w = unroll_graph(ctx, &m, "long");
    cr_expect_eq(count_kind(w, TILEC_WIR_LOOP), 2);
    int remarks = 0;
    for (size_t i = 0; i < tilec_wir_line_count(w); i++) {
        const tilec_wir_line *l = tilec_wir_line_at(w, i);
        remarks += l->kind == TILEC_WIR_COMMENT && strstr(l->text, "kept as a loop") &&
                   strstr(l->text, "past the 256 statements");
    }
    cr_expect_eq(remarks, 2);
    tilec_wir_free(w);
    tilec_module_free(m);
    m = NULL;
    w = unroll_graph(ctx, &m, "mixed");
    cr_expect_eq(count_kind(w, TILEC_WIR_LOOP), 2); /* i (run-time count) and k (its names would clash) */
    const tilec_wir_line *b = named(w, "blk_j1");
    cr_assert(b);
    cr_expect_str_eq(b->offset, "H + 2*H*i");
    tilec_wir_free(w);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Nine nested loops of 200: a body's weight saturates past the limit (200^9
 * statements would pass 64 bits), so the eight outer loops stay loops, each
 * saying its body has more than 256 statements (h: 200 x 200), and the
 * innermost (200 statements) is unrolled in its parent's body. */
Test(chunks, deep_nests_of_constant_loops_saturate_the_limit, .timeout = 30)
{
    static const char src[] =
        "kernel k2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) {\n"
        "    let i = pid(0) * 256 + range(256);\n"
        "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
        "}\n"
        "graph deep(x: f32[N]) -> f32[N] {\n"
        "    let y = zeros(f32, [N]);\n"
        "    for a in 0 .. 200 { for b in 0 .. 200 { for c in 0 .. 200 { for d in 0 .. 200 {\n"
        "    for e in 0 .. 200 { for f in 0 .. 200 { for g in 0 .. 200 { for h in 0 .. 200 {\n"
        "    for j in 0 .. 200 { k2(x, y, N); } } } } } } } } }\n"
        "    return y;\n"
        "}\n";
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "deep.tile", src, strlen(src), &m), TILEC_OK);
    tilec_wir *w = NULL;
    cr_assert_eq(tilec_wir_lower(ctx, m, tilec_module_graph(m, 0), &w), TILEC_OK);
    cr_expect_eq(count_kind(w, TILEC_WIR_LOOP), 8);
    cr_expect_eq(count_kind(w, TILEC_WIR_KERNEL_CALL), 200);
    int past = 0;
    for (size_t i = 0; i < tilec_wir_line_count(w); i++) {
        const tilec_wir_line *l = tilec_wir_line_at(w, i);
        past += l->kind == TILEC_WIR_COMMENT && strstr(l->text, "x more than 256 statements") != NULL;
    }
    cr_expect_eq(past, 7); /* a .. g; h's body is the 200 of j */
    tilec_wir_free(w);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Two unrolled names that still coincide (a loop variable holding '_':
 * `t` of `for x_i` and `t_x` of `for i` are both t_x_i0) are an error at
 * the statement naming the name, never two buffers under one name. */
Test(chunks, unrolled_names_that_coincide_are_an_error)
{
    static const char src[] = "kernel k2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) {\n"
                              "    let i = pid(0) * 256 + range(256);\n"
                              "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
                              "}\n"
                              "graph clash(x: f32[N]) -> f32[N] {\n"
                              "    let y = zeros(f32, [N]);\n"
                              "    for x_i in 0 .. 1 { let t = empty(f32, [N]); k2(x, t, N); k2(t, y, N); }\n"
                              "    for i in 0 .. 1 { let t_x = empty(f32, [N]); k2(x, t_x, N); k2(t_x, y, N); }\n"
                              "    return y;\n"
                              "}\n";
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "clash.tile", src, strlen(src), &m), TILEC_OK);
    tilec_wir *w = NULL;
    cr_expect_eq(tilec_wir_lower(ctx, m, tilec_module_graph(m, 0), &w), TILEC_ERR_INPUT);
    cr_expect_null(w);
    cr_assert_eq(tilec_ctx_error_count(ctx), 1);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_expect(strstr(d->message, "unrolling a loop makes a name twice, rename it: 't_x_i0'") != NULL, "%s",
              d->message);
    cr_expect_eq(d->line, 8u);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}
