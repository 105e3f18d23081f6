/* test_builtins.c: the builtins of kernels are one enum (parser/builtins.h)
 * that the checker resolves once per call and the lowering switches on.
 * The table round-trips (each name finds its own row); every call of every
 * checked kernel of the examples carries the builtin its name spells; each
 * math builtin, checked from its spelling, lowers to its own CUDA function
 * (a row naming another function, or a checker storing another value,
 * fails here); and kernels named like builtins (sum, dot, load), called
 * from a graph, lower to the same code as when named otherwise. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <ctype.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "parser/builtins.h"
#include "tilec/lower.h"

Test(builtins, table_round_trips)
{
    for (int b = BI_NONE + 1; b < BI_COUNT; b++) {
        const tilec_builtin_info *r = tilec_builtin_get((tilec_builtin)b);
        cr_assert(r->name && r->name[0], "builtin %d has a name", b);
        cr_expect_eq(tilec_builtin_find(r->name), (tilec_builtin)b, "'%s' finds its own row %d", r->name, b);
        cr_expect(r->lo >= 1 && r->lo <= r->hi, "'%s' takes %d to %d arguments", r->name, r->lo, r->hi);
    }
    cr_expect_eq(tilec_builtin_find(""), BI_NONE);
    cr_expect_eq(tilec_builtin_find("loads"), BI_NONE);
    cr_expect_eq(tilec_builtin_find("Dot"), BI_NONE);
    cr_expect_str_empty(tilec_builtin_get(BI_NONE)->name);
    cr_expect_str_empty(tilec_builtin_get(BI_COUNT)->name, "out of range: the empty row");
}

static int calls_checked, calls_wrong;

static void walk_expr(const char *file, const tilec_expr *e)
{
    if (!e)
        return;
    if (e->kind == TILEC_EX_CALL) {
        calls_checked++;
        tilec_builtin want = tilec_builtin_find(e->name);
        if (want == BI_NONE || e->builtin != (int)want) {
            calls_wrong++;
            cr_log_error("%s:%u:%u: call '%s' carries builtin %d, its name spells %d", file, e->loc.line, e->loc.col,
                         e->name, e->builtin, (int)want);
        }
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        walk_expr(file, e->args[i]);
}

static void walk_block(const char *file, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        walk_expr(file, s->value);
        walk_expr(file, s->lo);
        walk_expr(file, s->hi);
        walk_expr(file, s->step);
        for (uint32_t j = 0; j < s->nvalues; j++)
            walk_expr(file, s->values[j]);
        walk_block(file, &s->body);
        walk_block(file, &s->orelse);
    }
}

/* Every call in every kernel body (generic instances included) of the
 * examples and the user-documentation tests: resolved by the checker to
 * the builtin its name spells, never left unresolved. */
Test(builtins, checker_resolves_every_call)
{
    const char *pats[] = {"examples/*.tile", "tests/docuser/*.tile", "bench/harness/*.tile"};
    int files = 0;
    for (size_t p = 0; p < sizeof pats / sizeof pats[0]; p++) {
        glob_t g;
        if (glob(pats[p], 0, NULL, &g))
            continue;
        for (size_t i = 0; i < g.gl_pathc; i++) {
            tilec_ctx *ctx = tilec_ctx_new();
            tilec_module *m = NULL;
            cr_assert_eq(tilec_parse_file(ctx, g.gl_pathv[i], &m), TILEC_OK, "%s checks", g.gl_pathv[i]);
            for (size_t k = 0; k < tilec_module_kernel_count(m); k++)
                walk_block(g.gl_pathv[i], &tilec_module_kernel(m, k)->body);
            tilec_module_free(m);
            tilec_ctx_free(ctx);
            files++;
        }
        globfree(&g);
    }
    cr_assert_gt(files, 10, "the examples were found (run from the repository root)");
    cr_assert_gt(calls_checked, 500, "the kernels call builtins");
    cr_expect_eq(calls_wrong, 0, "%d of %d calls carry another builtin than their name", calls_wrong, calls_checked);
}

/* The CUDA of kernel `name` of src (variant 0), or NULL. */
static char *lower_one(const char *src, const char *name)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    char *out = NULL;
    if (tilec_parse_string(ctx, "b.tile", src, strlen(src), &m) != TILEC_OK) {
        tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
    } else {
        const tilec_kernel *k = tilec_module_find_kernel(m, name);
        tilec_kernel_code code;
        if (k && tilec_lower_kernel(ctx, m, k, 0, &code) == TILEC_OK) {
            out = strdup(code.source);
            tilec_kernel_code_free(&code);
        } else {
            tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
        }
    }
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return out;
}

typedef struct mathcase {
    const char *fn;   /* the builtin as written */
    const char *want; /* what its lowering of an f32 operand must contain */
} mathcase;

static const mathcase maths[] = {
    {"exp", "expf("},     {"exp2", "tl_exp2("},  {"log", "logf("},   {"log2", "log2f("},
    {"sqrt", "sqrtf("},   {"rsqrt", "rsqrtf("},  {"sin", "sinf("},   {"cos", "cosf("},
    {"tanh", "tanhf("},   {"erf", "erff("},      {"abs", "fabsf("},  {"floor", "floorf("},
    {"ceil", "ceilf("},   {"sigmoid", "tl_sigmoid((float)("},
};
enum { NMATHS = sizeof maths / sizeof maths[0] };

ParameterizedTestParameters(builtins, math_lowers_to_its_own_function)
{
    static int idx[NMATHS];
    for (int i = 0; i < NMATHS; i++)
        idx[i] = i;
    return cr_make_param_array(int, idx, NMATHS);
}

/* Each math builtin of the table is here, and each lowers to its function. */
ParameterizedTest(int *i, builtins, math_lowers_to_its_own_function)
{
    const mathcase *c = &maths[*i];
    cr_assert_eq(tilec_builtin_get(tilec_builtin_find(c->fn))->kind, BK_MATH, "%s is a math builtin", c->fn);
    char src[512];
    snprintf(src, sizeof src,
             "kernel k(x: *f32, y: *f32) grid (1) hints { T = 32 }\n{\n    store(y + range(T), %s(load(x + range(T))));\n}\n",
             c->fn);
    char *cu = lower_one(src, "k");
    cr_assert(cu, "%s lowers", c->fn);
    cr_expect(strstr(cu, c->want), "%s(x) lowers to %s...", c->fn, c->want);
    free(cu);
}

Test(builtins, every_math_builtin_is_tested)
{
    int n = 0;
    for (int b = BI_NONE + 1; b < BI_COUNT; b++)
        n += tilec_builtin_get((tilec_builtin)b)->kind == BK_MATH;
    cr_expect_eq(n, NMATHS, "a math builtin without a case in maths[]");
}

/* Kernels named like builtins: a kernel's body calls the builtins whatever
 * the kernel is called, a graph calls the kernels. */
static const char *shadow =
    "kernel NAME1(x: *f32, y: *f32, n: i32) grid (cdiv(n, T)) hints { T = 128 } {\n"
    "    let i = pid(0) * T + range(T);\n"
    "    let v = load(x + i, i < n, 0.0);\n"
    "    store(y + i, exp(v) + max(v, 0) + sum(v, 0), i < n);\n"
    "}\n"
    "kernel NAME2(a: *f16, b: *f16, y: *f32, K: i32) grid (1) hints { T = 64, BK = 32, warps = 4 } {\n"
    "    let r = range(T);\n"
    "    let acc = zeros(f32, T, T);\n"
    "    for k in 0 .. K step BK {\n"
    "        let x = load(a + r[:, None] * K + k + range(BK)[None, :]);\n"
    "        let w = load(b + (k + range(BK))[:, None] * T + r[None, :]);\n"
    "        acc = acc + dot(x, w);\n"
    "    }\n"
    "    store(y + r[:, None] * T + r[None, :], acc);\n"
    "}\n"
    "kernel NAME3(x: *f32, y: *f32) grid (1) hints { T = 32 } {\n"
    "    store(y + range(T), load(x + range(T)));\n"
    "}\n"
    "graph g(x: f32[N], a: f16[64, K], b: f16[K, 64]) -> f32[N] {\n"
    "    let y = empty(f32, [N]);\n"
    "    NAME1(x, y, N);\n"
    "    let z = empty(f32, [64, 64]);\n"
    "    NAME2(a, b, z, K);\n"
    "    let u = empty(f32, [N]);\n"
    "    NAME3(y, u);\n"
    "    return u;\n"
    "}\n";

/* shadow with NAME1..3 spelt n1..n3 */
static char *shadow_as(const char *n1, const char *n2, const char *n3)
{
    size_t cap = strlen(shadow) * 2 + 1, o = 0;
    char *s = malloc(cap);
    for (const char *p = shadow; *p;) {
        if (!strncmp(p, "NAME", 4) && p[4] >= '1' && p[4] <= '3') {
            const char *n = p[4] == '1' ? n1 : p[4] == '2' ? n2 : n3;
            o += (size_t)snprintf(s + o, cap - o, "%s", n);
            p += 5;
        } else {
            s[o++] = *p++;
        }
    }
    s[o] = 0;
    return s;
}

/* src's entry `from` renamed `to` (every whole-word occurrence). */
static char *renamed(const char *src, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to), cap = strlen(src) * (tl > fl ? tl / fl + 2 : 1) + 1, o = 0;
    char *s = malloc(cap);
    for (const char *p = src; *p;) {
        if (!strncmp(p, from, fl) && (p == src || !(p[-1] == '_' || isalnum((unsigned char)p[-1])))) {
            memcpy(s + o, to, tl);
            o += tl;
            p += fl;
        } else {
            s[o++] = *p++;
        }
    }
    s[o] = 0;
    return s;
}

Test(builtins, kernels_named_like_builtins_lower_as_any_kernel)
{
    char *as_builtins = shadow_as("sum", "dot", "load"), *plain = shadow_as("zq_a", "zq_b", "zq_c");
    const char *names[][2] = {{"sum", "zq_a"}, {"dot", "zq_b"}, {"load", "zq_c"}};
    for (size_t i = 0; i < 3; i++) {
        char *got = lower_one(as_builtins, names[i][0]);
        char *ref = lower_one(plain, names[i][1]);
        cr_assert(got, "kernel '%s' lowers", names[i][0]);
        cr_assert(ref, "kernel '%s' lowers", names[i][1]);
        char *want = renamed(ref, names[i][1], names[i][0]);
        cr_expect_str_eq(got, want, "kernel '%s' lowers as the same kernel named '%s'", names[i][0], names[i][1]);
        free(want);
        free(got);
        free(ref);
    }
    /* the bodies did lower the builtins they call */
    char *s = lower_one(as_builtins, "sum");
    cr_assert(s);
    cr_expect(strstr(s, "expf("), "sum's body calls exp");
    free(s);
    free(as_builtins);
    free(plain);
}
