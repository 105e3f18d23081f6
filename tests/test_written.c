/* test_written.c: the written-parameter analysis of lower/written.c
 * (tilec_kernel_written_params, and the `written` mask of lowered code)
 * over kernel shapes that alias pointers: stores and atomics nested in
 * expressions, in loop bounds and conditions, pointers re-assigned, let
 * chains, where, trans and reshapes, loop-carried swaps, branches. Each
 * case is a kernel body over the same parameters and the exact mask it
 * must give: missing a bit would let multi-kernel timing run on a real
 * output; an extra bit where the answer is certain shows imprecision. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "helpers.h"
#include "tilec/lower.h"

/* parameters: a = bit 0, b = bit 1, c = bit 2, d = bit 3, n = bit 4 (scalar) */
enum { A = 1, B = 2, C = 4, D = 8 };

typedef struct wcase {
    const char *what;
    const char *body;
    uint64_t want;
} wcase;

static const wcase cases[] = {
    {"nothing stored", "let v = load(a + range(T));", 0},
    {"a top-level store", "store(a + range(T), 1.0);", A},
    {"a top-level atomic", "atomic_add(d + range(T), 1);", D},
    {"an atomic nested in arithmetic", "let z = atomic_add(d + range(T), 1) * 2;", D},
    {"an atomic inside a store's value", "store(a + range(T), cast(atomic_add(d + range(T), 1), f32));", A | D},
    {"an atomic in a loop bound", "for i in 0 .. atomic_add(d, 1) { }", D},
    {"an atomic in an if condition", "if atomic_add(d, 1) > 0 { }", D},
    {"an atomic in a let re-assigned", "let z = 0; z = atomic_add(d, 2) + 1;", D},
    {"a let chain", "let p = b; let q = p + 1; let r = q; store(r + range(T), 1.0);", B},
    {"a re-assigned pointer", "let p = a; p = b; store(p + range(T), 1.0);", A | B},
    {"a re-assigned pointer in a branch", "let p = a; if n > 0 { p = c; } store(p, 1.0);", A | C},
    {"where selects pointers", "let p = where(n > 0, a, c); store(p + range(T), 1.0);", A | C},
    {"where nested in the address", "store(where(n > 0, a, b) + 1, 2.0);", A | B},
    {"a loop-carried swap",
     "let p = a; let q = c; for i in 0 .. n { let t = p; p = q; q = t; } store(p, 1.0);", A | C},
    {"a store in a loop in a branch", "for i in 0 .. n { if i > 0 { store(c + i, 1.0); } else { } }", C},
    {"reshape and trans", "let p = (b + range(T))[:, None]; let q = trans(p); store(q, 1.0);", B},
    {"a reshaped pointer tile", "let q = reshape(c + range(T), 4, T / 4); store(q, 1.0);", C},
    {"loaded values are not pointers", "let v = load(a + range(T)); store(b + range(T), v);", B},
    {"an offset loaded through d", "store(b + load(d), 1.0);", B},
    {"a chain defined after its use in a loop",
     "let p = a; let q = a; for i in 0 .. n { store(p, 1.0); p = q; q = c; }", A | C},
    {"sibling blocks reuse a name (merged)",
     "if n > 0 { let p = a; store(p, 1.0); } else { let p = b; let v = load(p); }", A | B},
    {"a pointer compared, not stored", "let same = a == c; store(b, 1.0);", B},
    {"every pointer written", "store(a, 1.0); store(b, 2.0); store(c, 3.0); atomic_add(d, 1);", A | B | C | D},
};

enum { NCASES = sizeof cases / sizeof *cases };

/* Criterion passes parameters by value to a re-run binary: an index. */
ParameterizedTestParameters(written, mask)
{
    static int idx[NCASES];
    for (int i = 0; i < NCASES; i++)
        idx[i] = i;
    return cr_make_param_array(int, idx, NCASES);
}

ParameterizedTest(int *i, written, mask)
{
    const wcase *c = &cases[*i];
    char src[2048];
    snprintf(src, sizeof src,
             "kernel k(a: *f32, b: *f32, c: *f32, d: *i32, n: i32) grid (1) hints { T = 16 }\n{\n    %s\n}\n", c->body);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_string(ctx, "w.tile", src, strlen(src), &m);
    if (st != TILEC_OK) {
        tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
        cr_assert_fail("%s: does not check:\n%s", c->what, src);
    }
    const tilec_kernel *k = tilec_module_kernel(m, 0);
    uint64_t got = tilec_kernel_written_params(k);
    cr_expect_eq(got, c->want, "%s: written 0x%llx, want 0x%llx", c->what, (unsigned long long)got,
                 (unsigned long long)c->want);
    tilec_kernel_code code;
    cr_assert_eq(tilec_lower_kernel(ctx, m, k, 0, &code), TILEC_OK, "%s", c->what);
    cr_expect_eq(code.written, c->want, "%s: the lowered code carries the mask", c->what);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Every kernel of the examples: each pointer it stores through is in its
 * mask, and the mask holds pointer parameters only. */
Test(written, examples_are_pointer_only_and_include_their_outputs)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, "examples/matmul.tile", &m), TILEC_OK);
    const tilec_kernel *k = tilec_module_find_kernel(m, "matmul");
    cr_assert(k);
    uint64_t w = tilec_kernel_written_params(k), ptrs = 0;
    for (uint32_t i = 0; i < k->nparams; i++)
        if (k->params[i].type.kind == TILEC_TE_POINTER)
            ptrs |= UINT64_C(1) << i;
    cr_expect(w, "matmul writes its output");
    cr_expect_eq(w & ~ptrs, 0, "only pointer parameters are written");
    cr_expect_neq(w, ptrs, "its inputs are only loaded");
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

Test(written, null_kernel_is_nothing) { cr_expect_eq(tilec_kernel_written_params(NULL), 0); }
