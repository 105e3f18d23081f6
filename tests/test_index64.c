/* test_index64.c: the width of index arithmetic (lower/index64.c) on a
 * corpus of spellings of one offset `o`: let-bound, inline, through where,
 * cast, re-assignment, reductions and scans. A WIDE spelling can pass
 * 2^31 - 1: its variable is declared long long, the kernel's comment says
 * 64-bit, and nothing cuts a value back to int. A NARROW one is proven to
 * fit and stays int. Every spelling compiles with NVRTC. (Issue 28 item 2.) */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "helpers.h"
#include "tilec/lower.h"
#include "tilec/program.h"

enum { NARROW, WIDE };

typedef struct spelling {
    const char *body; /* the kernel's statements after `let i = range(B);` */
    int want;
    const char *var; /* the variable whose declaration is checked, or NULL */
} spelling;

static const spelling corpus[] = {
    /* reductions: n elements of the operand */
    {"let o = sum(i * 0 + stride, 0); store(out + o + i, load(x + i));", WIDE, "v_o"},
    {"let o = prod(i * 0 + stride, 0); store(out + o + i, load(x + i));", WIDE, "v_o"},
    {"let o = sum(i[:, None] * 0 + stride + range(4)[None, :] * 0, 0); store(out + o, load(x + range(4)));",
     WIDE, "v_o"},
    {"let o = max(pid(0) * n + i, 0); store(out + o + i, load(x + i));", WIDE, "v_o"},
    {"let o = min(pid(0) * n + i, 0); store(out + o + i, load(x + i));", WIDE, "v_o"},
    {"store(out + sum(i * 0 + stride, 0) + i, load(x + i));", WIDE, NULL},
    {"let o = cast(sum(i * 0 + stride, 0), i64); store(out + o + i, load(x + i));", WIDE, NULL},
    /* scans */
    {"let o = cumsum(load(offs + i), 0); store(out + o, load(x + i));", WIDE, "v_o"},
    {"let o = cumsum(load(offs + i), 0, true); store(out + o, load(x + o));", WIDE, "v_o"},
    {"let o = cumsum(pid(0) * n + i, 0); store(out + o, load(x + i));", WIDE, "v_o"},
    {"let o = cummax(pid(0) * n + i, 0); store(out + o, load(x + i));", WIDE, "v_o"},
    {"let o = cummin(pid(0) * n + i, 0, true, true); store(out + o, load(x + i));", WIDE, "v_o"},
    {"let o = cumprod(i + 1, 0); store(out + o, load(x + i));", WIDE, "v_o"},
    {"let o = scan(load(offs + i), 0, 0, a, b, a + b); store(out + o, load(x + i));", WIDE, "v_o"},
    {"let o = scan(i, 0, 0, a, b, a * b + 1); store(out + o, load(x + i));", WIDE, "v_o"},
    {"let base = pid(0) * n; let o = scan(i, 0, 0, a, b, a + b + base); store(out + o, load(x + i));", WIDE, "v_o"},
    {"store(out + cumsum(load(offs + i), 0), load(x + i));", WIDE, NULL},
    /* abs */
    {"let o = abs(pid(0) * n + i); store(out + o, load(x + i));", WIDE, NULL},
    {"store(out + abs(pid(0) * n + i), load(x + i));", WIDE, NULL},
    /* through where, cast to i64, re-assignment */
    {"let o = where(i < 4, cumsum(load(offs + i), 0), 0); store(out + o, load(x + i));", WIDE, "v_o"},
    {"let o = where(i < 4, 0, abs(pid(0) * n + i)); store(out + o, load(x + i));", WIDE, NULL},
    {"let o = cast(cumsum(load(offs + i), 0), i64); store(out + o, load(x + i));", WIDE, "v_o"},
    {"let o = load(offs + i); o = cumsum(o, 0); store(out + o, load(x + i));", WIDE, "v_o"},
    {"let o = i; o = sum(i * 0 + stride, 0) + i; store(out + o, load(x + i));", WIDE, "v_o"},
    {"let s = cumsum(load(offs + i), 0); let o = s * 2; store(out + o, load(x + i));", WIDE, "v_o"},
    /* reshape: its operand's interval, in its operand's place */
    {"let o = reshape(pid(0) * n + i, 8, 16); store(out + o, load(x + reshape(i, 8, 16)));", WIDE, NULL},
    {"store(reshape(out + cumsum(load(offs + i), 0), 16, 8), 1.0);", WIDE, NULL},
    {"let o = reshape(cumsum(load(offs + i), 0), 2, 64); store(out + o, 1.0);", WIDE, "v_o"},
    /* proven to fit */
    {"let o = sum(i, 0); store(out + o + i, load(x + i));", NARROW, "v_o"},
    {"let o = cummax(load(offs + i), 0); store(out + o, load(x + i));", NARROW, "v_o"},
    {"let o = argmax(load(offs + i), 0); store(out + o + i, load(x + i));", NARROW, "v_o"},
    {"let o = abs(i - 64); store(out + o, load(x + i));", NARROW, NULL},
    {"let o = scan(i, 0, 0, a, b, maximum(a, b)); store(out + o, load(x + i));", NARROW, "v_o"},
    {"let o = cumsum(i < 4, 0); store(out + o, load(x + i));", NARROW, "v_o"},
    {"let o = reshape(i * 2, 16, 8); store(out + o, 1.0);", NARROW, NULL},
    /* a grid-stride loop: a start and a step that are multiples of B keep o
     * on multiples of B, at most 2^31 - B below an i32 n, so o + i fits */
    {"for o in pid(0) * B .. n step 4 * B { store(out + o + i, load(x + o + i, o + i < n), o + i < n); }", NARROW,
     NULL},
    {"for o in (pid(0) << 7) .. n step 256 { store(out + o + i, load(x + o + i, o + i < n), o + i < n); }", NARROW,
     NULL},
    {"for o in pid(0) * B + 1 .. n step 4 * B { store(out + o + i, load(x + o + i, o + i < n), o + i < n); }", WIDE,
     NULL},
    {"for o in pid(0) * B .. n step 500 { store(out + o + i, load(x + o + i, o + i < n), o + i < n); }", WIDE, NULL},
    {"for o in pid(0) * B .. n step stride { store(out + o + i, load(x + o + i, o + i < n), o + i < n); }", WIDE,
     NULL},
    {"for o in pid(0) * 64 .. n step 4 * B { store(out + o + i, load(x + o + i, o + i < n), o + i < n); }", WIDE,
     NULL},
    /* data, not an offset: the language's i32 */
    {"let o = cumsum(load(offs + i), 0); store(out + i, cast(o, f32));", NARROW, "v_o"},
};

static void free_ix(struct criterion_test_params *p) { cr_free(p->params); }

/* Each case is an index into corpus (a test runs in a process of its own,
 * where the table's pointers differ). */
ParameterizedTestParameters(index64, corpus)
{
    size_t n = sizeof corpus / sizeof corpus[0];
    size_t *ix = cr_malloc(n * sizeof *ix);
    for (size_t i = 0; ix && i < n; i++)
        ix[i] = i;
    return cr_make_param_array(size_t, ix, ix ? n : 0, free_ix);
}

/* Whether the CUDA C declares var (an array or a scalar) with C type ct. */
static int declares(const char *cu, const char *ct, const char *var)
{
    char want[3][96];
    snprintf(want[0], sizeof want[0], " %s %s[", ct, var);
    snprintf(want[1], sizeof want[1], " %s %s;", ct, var);
    snprintf(want[2], sizeof want[2], " %s %s =", ct, var);
    for (int i = 0; i < 3; i++)
        if (strstr(cu, want[i]))
            return 1;
    return 0;
}

/* Kernel 0 of m compiles with NVRTC for sm_90 (no GPU needed); what names
 * the case in the message. */
static void expect_nvrtc(tilec_ctx *ctx, tilec_module *m, const char *what)
{
    tilec_kernel_code code;
    void *cubin = NULL;
    size_t size = 0;
    cr_expect_eq(tilec_compile_kernel(ctx, m, tilec_module_kernel(m, 0), 0, "sm_90", &code, &cubin, &size), TILEC_OK,
                 "%s: NVRTC refuses it", what);
    if (cubin) {
        free(cubin);
        tilec_kernel_code_free(&code);
    }
}

ParameterizedTest(size_t *ix, index64, corpus)
{
    const spelling *s = &corpus[*ix];
    char src[1024];
    snprintf(src, sizeof src,
             "kernel k(x: *f32, out: *f32, n: i32, stride: i32, offs: *i32)\n"
             "    grid (cdiv(n, 128))\n"
             "    hints { B = 128 }\n"
             "{\n"
             "    let i = range(B);\n"
             "    %s\n"
             "}\n",
             s->body);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "corpus.tile", src, strlen(src), &m), TILEC_OK, "%s", src);
    membuf cu = {0};
    cr_assert_eq(tilec_module_emit_cuda(ctx, m, membuf_sink(&cu)), TILEC_OK, "%s", s->body);
    const char *body = strstr(cu.s, "/* indexing:");
    cr_assert(body, "%s: no indexing comment", s->body);
    if (s->want == WIDE) {
        cr_expect(!strncmp(body, "/* indexing: 64-bit", 19), "%s: not reported 64-bit", s->body);
        /* nothing computed in 64 bits is cut back: the only int
         * conversions of the kernel are of threadIdx and blockIdx */
        cr_expect(!strstr(body, "(int)(("), "%s: a value is cut to int:\n%s", s->body, body);
        cr_expect(!strstr(body, " int tl_a ") && !strstr(body, " int tl_carry ") && !strstr(body, " int tl_sa"),
                  "%s: a reduction or scan runs in int:\n%s", s->body, body);
        if (s->var)
            cr_expect(declares(body, "long long", s->var), "%s: %s is not declared long long:\n%s", s->body, s->var,
                      body);
    } else {
        cr_expect(!strncmp(body, "/* indexing: 32-bit, every index", 32), "%s: not proven to fit:\n%s", s->body, body);
        if (s->var)
            cr_expect(declares(body, "int", s->var), "%s: %s is not declared int:\n%s", s->body, s->var, body);
    }
    expect_nvrtc(ctx, m, s->body); /* and NVRTC takes it (no GPU needed) */
    free(cu.s);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* A loop's header (lower/stmt.c, lower_loop_next): `v += st` only where
 * index64.c proves hi - 1 + st fits v's type and st > 0; else the step is
 * taken only while v + st stays below hi, so v never wraps past 2^31 - 1
 * (a grid-stride loop over n = 2^31 - 1000 elements would otherwise come
 * back at a negative offset). Each kernel compiles with NVRTC. */
typedef struct loopcase {
    const char *loop; /* the for statement's head */
    const char *want; /* in the CUDA C: the header's advance */
} loopcase;

static const loopcase loops[] = {
    /* guarded: n up to 2^31 - 1, and a step above 1 */
    {"for o in pid(0) * B .. n step 4 * B", "v_o = (unsigned)(v_n) - (unsigned)v_o > (unsigned)("},
    {"for o in 0 .. n step stride", "v_o = (unsigned)(v_n) - (unsigned)v_o > (unsigned)(v_stride) ? v_o + (v_stride) : (v_n))"},
    {"for o in pid(0) * B .. n step num_programs(0) * B", "v_o = (unsigned long long)(v_n) - (unsigned long long)v_o > "},
    {"for o in 0 .. 2147483647 step 2", "v_o = (unsigned)(2147483647) - (unsigned)v_o > (unsigned)(2) ? "},
    /* proven: step 1, constant bounds, a bound small by analysis, an i64 bound of i32 values */
    {"for o in 0 .. n", "; v_o < v_n; v_o += 1) {"},
    {"for o in 0 .. 1000 step 7", "; v_o < 1000; v_o += 7) {"},
    {"for o in 0 .. 2147483646 step 2", "; v_o < 2147483646; v_o += 2) {"},
    {"for o in 0 .. minimum(n, 4096) step 4 * B", "v_o += ("},
    {"for o in 0 .. cast(n, i64) step 4 * B", "v_o += ("},
    /* a u32 or u64 bound: the variable long long (an int held no u32 past 2^31 - 1, and the u64 guard compared
     * (unsigned)(v_nw), its low 32 bits) */
    {"for o in 0 .. nu step 4 * B", "long long v_o = 0; v_o < v_nu; v_o += ("},
    {"for o in 0 .. nw step 4 * B", "long long v_o = 0; v_o < v_nw; v_o = (unsigned long long)(v_nw) - (unsigned long long)v_o > "},
};

ParameterizedTestParameters(index64, loop_header)
{
    size_t n = sizeof loops / sizeof loops[0];
    size_t *ix = cr_malloc(n * sizeof *ix);
    for (size_t i = 0; ix && i < n; i++)
        ix[i] = i;
    return cr_make_param_array(size_t, ix, ix ? n : 0, free_ix);
}

ParameterizedTest(size_t *ix, index64, loop_header)
{
    const loopcase *c = &loops[*ix];
    char src[1024];
    snprintf(src, sizeof src,
             "kernel k(x: *f32, out: *f32, n: i32, stride: i32, nu: u32, nw: u64)\n"
             "    grid (cdiv(n, 128))\n"
             "    hints { B = 128 }\n"
             "{\n"
             "    let i = range(B);\n"
             "    %s { store(out + o + i, load(x + o + i, o + i < n), o + i < n); }\n"
             "}\n",
             c->loop);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "loop.tile", src, strlen(src), &m), TILEC_OK, "%s", src);
    membuf cu = {0};
    cr_assert_eq(tilec_module_emit_cuda(ctx, m, membuf_sink(&cu)), TILEC_OK, "%s", c->loop);
    const char *hdr = strstr(cu.s, " v_o = ");
    cr_assert(hdr, "%s: no loop", c->loop);
    while (hdr > cu.s && hdr[-1] != '\n') /* the whole line: the variable's type too */
        hdr--;
    const char *eol = strchr(hdr, '\n');
    cr_expect(strstr(hdr, c->want) && strstr(hdr, c->want) < eol, "%s: the header is not `%s`:\n%.*s", c->loop,
              c->want, (int)(eol - hdr), hdr);
    expect_nvrtc(ctx, m, c->loop);
    free(cu.s);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}
