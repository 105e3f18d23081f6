/* test_remarks.c: the remarks on loads, stores and atomic adds
 * (lower/remark.c; docs/lowering.md, "Remarks"): each access's path, its
 * vector width and, below 16 bytes, the reason the decision that chose
 * it gives (memory.c from axinfo.c's facts and the layout's run), quoted
 * as the user wrote it; `--emit layouts` closes with the same lines and
 * TILEC_LOGS=remarks writes them on stderr at FILE:LINE:COL. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "tilec/lower.h"
#include "tilec/program.h"

/* One kernel, one access a line; the line numbers are the remarks'. */
static const char src[] =
    "kernel k(x: *f32, y: *f32, ix: *i32, h: *f16, M: i32, N: i32, ldx: i32)\n" /* 1 */
    "    grid (cdiv(M, 16))\n"
    "    hints { warps = 4 }\n"
    "{\n"
    "    let r = pid(0) * 16 + range(16);\n" /* 5 */
    "    let c = range(64);\n"
    "    let a = load(x + r[:, None] * N + c[None, :], r[:, None] < M, 0.0);\n"
    "    let b = load(x + r[:, None] * N + c[None, :] * ldx, r[:, None] < M, 0.0);\n"
    "    let o = r[:, None] * N + c[None, :] * ldx;\n"
    "    let p = x + o;\n" /* 10 */
    "    let b2 = load(p, r[:, None] < M, 0.0);\n"
    "    let d = load(x + r[:, None] * N + c[None, :], c[None, :] != 5, 0.0);\n"
    "    let e = load(x + r[:, None] * N + c[None, :] * 2, r[:, None] < M, 0.0);\n"
    "    let idx = load(ix + c);\n"
    "    let f = load(x + r[:, None] * N + idx[None, :], r[:, None] < M, 0.0);\n" /* 15 */
    "    let one = load(x + pid(0) * 64 + range(64));\n"
    "    atomic_add(h + c, cast(one, f16));\n"
    "    atomic_add(y + c, one);\n"
    "    store(y + r, sum(a + b + b2 + d + e + f, 1), r < M);\n"
    "}\n"; /* 20 */

static const char *const want[] = {
    /* vectorised: unit stride along the layout's run, the mask true on a prefix of it */
    "line 7:13: load `x` [16, 64] f32: ld, 4 elements (16 bytes) a vector, mask on a prefix",
    /* a run-time stride along the fastest axis, inline or through lets */
    "line 8:13: load `x` [16, 64] f32: ld, one element (4 bytes) at a time; below 16 bytes: the stride along axis 1 is "
    "the run-time value `ldx`, not 1",
    "line 11:14: load `p` [16, 64] f32: ld, one element (4 bytes) at a time; below 16 bytes: the stride along axis 1 is "
    "the run-time value `ldx`, not 1",
    /* a mask that is no prefix: still 16 bytes, tested on every element */
    "line 12:13: load `x` [16, 64] f32: ld, 4 elements (16 bytes) a vector, mask `c[None, :] != 5` per element",
    "line 13:13: load `x` [16, 64] f32: ld, one element (4 bytes) at a time; below 16 bytes: the stride along axis 1 is "
    "2 elements, not 1",
    "line 14:15: load `ix` [64] i32: ld, 4 elements (16 bytes) a vector",
    /* a gather */
    "line 15:13: load `x` [16, 64] f32: ld, one element (4 bytes) at a time; below 16 bytes: the offsets along axis 1 are "
    "values in registers (`idx`: loaded or re-assigned data)",
    "line 16:15: load `x` [64] f32: ld, 4 elements (16 bytes) a vector",
    "line 17:5: atomic_add `h` [64] f16: atomic, one element (2 bytes) at a time; below 16 bytes: vector atomic adds are "
    "f32 only",
    "line 18:5: atomic_add `y` [64] f32: red (a vector atomic), 4 elements (16 bytes) a vector",
    /* the layout: a row sum of [16, 64] is one element a thread */
    "line 19:5: store `y` [16] f32: st, one element (4 bytes) at a time; below 16 bytes: its blocked layout gives each "
    "thread runs of 1 element along axis 0",
};

static tilec_module *parse_src(tilec_ctx *ctx, const char *name, const char *text)
{
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, name, text, strlen(text), &m), TILEC_OK, "%s does not check", name);
    return m;
}

/* Is `line` a whole line of text? */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && (p[n] == '\n' || !p[n]))
            return 1;
    return 0;
}

Test(remarks, loads_and_stores_name_their_width_and_why)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse_src(ctx, "remarks.tile", src);
    tilec_kernel_code code;
    cr_assert_eq(tilec_lower_kernel(ctx, m, tilec_module_find_kernel(m, "k"), 0, &code), TILEC_OK);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        cr_expect(has_line(code.remarks, want[i]), "want the line\n  %s\nin\n%s", want[i], code.remarks);
        /* --emit layouts closes with the same lines */
        char *l = malloc(strlen(want[i]) + 16);
        sprintf(l, "  remark: %s", want[i]);
        cr_expect(has_line(code.layouts, l), "want in the layout report\n  %s\n%s", l, code.layouts);
        free(l);
    }
    /* one remark an access of the source, in source order after the dot loops' */
    int n = 0;
    for (const char *p = code.remarks; (p = strstr(p, "line ")); p++)
        n++;
    cr_expect_eq(n, (int)(sizeof want / sizeof *want), "%s", code.remarks);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* A pipelined dot loop's operands: 16-byte cp.async chunks into its ring;
 * on sm_90a the twin's TMA (the benchmark's form, tests/forms/ref.tile). */
Test(remarks, pipelined_operands_name_their_ring_and_the_twin)
{
    tilec_ctx *ctx = tilec_ctx_new();
    char *text = read_file("tests/forms/ref.tile", NULL);
    cr_assert_not_null(text);
    tilec_module *m = parse_src(ctx, "tests/forms/ref.tile", text);
    tilec_kernel_code code;
    cr_assert_eq(tilec_lower_kernel(ctx, m, tilec_module_find_kernel(m, "gemm"), 0, &code), TILEC_OK);
    cr_expect(strstr(code.remarks, ": load `a` [128, 64] f16: cp.async into the pipeline's ring (3 stages), 8 elements "
                                   "(16 bytes) a chunk, mask on a prefix; sm_90a twin: TMA\n"),
              "%s", code.remarks);
    cr_expect(strstr(code.remarks, "sm_90a twin: TMA store\n"), "%s", code.remarks);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    free(text);
    /* a ring's copies (ring.c), each chunk checked: the row stride is the run-time N */
    text = read_file("tests/forms/at.tile", NULL);
    cr_assert_not_null(text);
    m = parse_src(ctx, "tests/forms/at.tile", text);
    cr_assert_eq(tilec_lower_kernel(ctx, m, tilec_module_find_kernel(m, "gemm"), 0, &code), TILEC_OK);
    cr_expect(strstr(code.remarks, "line 13:18: load `b` [64, 128] f16: cp.async into a ring (3 stages), 8 elements (16 bytes) a "
                                   "chunk, each chunk checked (the stride along axis 0 is not a known multiple of 16 bytes), "
                                   "mask on a prefix; sm_90a twin: TMA\n"),
              "%s", code.remarks);
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    free(text);
}

/* A float division whose divisor repeats along an axis, in a kernel with a
 * dot loop: attention's `acc / l_i[:, None]` (tests/attn_forms, written
 * from the docs) is an IEEE division an element; the remark names the
 * reciprocal form. The example's `acc * (1.0 / l_i)[:, None]`
 * (examples/attention.tile) and fa_d64_lets' `1.0 / row_sum` get none,
 * nor does a row kernel's `e / sum(e, 1)[:, None]` (examples/softmax_rows.tile:
 * no dot loop). */
static const char *kernel_remarks(tilec_ctx *ctx, const char *file, const char *kernel, tilec_kernel_code *code,
                                  tilec_module **m, char **text)
{
    *text = read_file(file, NULL);
    cr_assert_not_null(*text, "%s", file);
    *m = parse_src(ctx, file, *text);
    const tilec_kernel *k = tilec_module_find_kernel(*m, kernel);
    cr_assert_not_null(k, "%s: %s", file, kernel);
    cr_assert_eq(tilec_lower_kernel(ctx, *m, k, 0, code), TILEC_OK, "%s: %s", file, kernel);
    return code->remarks;
}

Test(remarks, a_division_by_a_row_broadcast_names_the_reciprocal)
{
    static const struct {
        const char *file, *kernel, *want;
    } cases[] = {
        {"tests/attn_forms/fa_d64_plain.tile", "fa_d64_plain",
         "line 38:66: `acc / l_i[:, None]`: an IEEE division for each of its 8192 elements, the divisor's 128 values each "
         "used 64 times; the dividend times the divisor's reciprocal (`x * (1.0 / l)[:, None]`) divides once a value "
         "(within 1.5 ulp of the quotient, not 0.5)\n"},
        {"examples/attention.tile", "attention_d64", NULL},
        {"tests/attn_forms/fa_d64_lets.tile", "fa_d64_lets", NULL},
        {"examples/softmax_rows.tile", "softmax_multirow", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_kernel_code code;
        tilec_module *m;
        char *text;
        const char *r = kernel_remarks(ctx, cases[i].file, cases[i].kernel, &code, &m, &text);
        if (cases[i].want)
            cr_expect(strstr(r, cases[i].want), "%s: want\n%s\nin\n%s", cases[i].kernel, cases[i].want, r);
        else
            cr_expect(!strstr(r, "an IEEE division"), "%s: no division remark wanted:\n%s", cases[i].kernel, r);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
        free(text);
    }
}

/* TILEC_LOGS=remarks: the same lines on stderr when the kernel is
 * compiled, at FILE:LINE:COL as a compiler's remarks are. */
Test(remarks, the_log_prints_the_same_lines, .init = cr_redirect_stderr)
{
    setenv("TILEC_LOGS", "remarks", 1);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse_src(ctx, "remarks.tile", src);
    tilec_kernel_code code;
    void *cubin = NULL;
    size_t size = 0;
    if (tilec_compile_kernel(ctx, m, tilec_module_find_kernel(m, "k"), 0, "sm_80", &code, &cubin, &size) == TILEC_OK)
        tilec_kernel_code_free(&code);
    free(cubin);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    unsetenv("TILEC_LOGS");
    fflush(stderr);
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, cr_get_redirected_stderr());
    buf[n] = 0;
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        unsigned line = 0, col = 0;
        int skip = 0;
        cr_assert_eq(sscanf(want[i], "line %u:%u: %n", &line, &col, &skip), 2);
        char l[512];
        snprintf(l, sizeof l, "remarks.tile:%u:%u: remark: k_v0: %s", line, col, want[i] + skip);
        cr_expect(has_line(buf, l), "want on stderr\n  %s\nin\n%s", l, buf);
    }
}

/* Every access a remark: each `load(`, `store(` and `atomic_add(` of the
 * examples and of the corpus of forms, at its line and column, closes the
 * layout report of some variant of its kernel (a path that lowers an
 * access without remarking it fails here). */
Test(remarks, every_access_of_the_examples_has_one, .timeout = 240)
{
    const char *const pats[] = {"examples/*.tile", "tests/forms/*.tile"};
    int files = 0;
    for (size_t pi = 0; pi < sizeof pats / sizeof *pats; pi++) {
        glob_t g;
        cr_assert_eq(glob(pats[pi], 0, NULL, &g), 0);
        for (size_t i = 0; i < g.gl_pathc; i++, files++) {
            const char *path = g.gl_pathv[i];
            char *text = read_file(path, NULL);
            cr_assert_not_null(text);
            tilec_ctx *ctx = tilec_ctx_new();
            tilec_module *m = NULL;
            cr_assert_eq(tilec_parse_file(ctx, path, &m), TILEC_OK, "%s", path);
            membuf rep = {0};
            cr_assert_eq(tilec_module_emit_layouts(ctx, m, membuf_sink(&rep)), TILEC_OK, "%s", path);
            unsigned line = 1;
            for (const char *l = text; *l; line++) {
                const char *e = strchr(l, '\n');
                size_t n = e ? (size_t)(e - l) : strlen(l);
                const char *c = l;
                while (c < l + n && (*c == ' ' || *c == '\t'))
                    c++;
                for (const char *p = l; p < l + n && strncmp(c, "//", 2); p++) {
                    if (p > l && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') ||
                                  (p[-1] >= '0' && p[-1] <= '9')))
                        continue;
                    if (strncmp(p, "load(", 5) && strncmp(p, "store(", 6) && strncmp(p, "atomic_add(", 11))
                        continue;
                    if (p > c && !strncmp(p - 2, "//", 2)) /* a comment after code */
                        break;
                    char at[64];
                    snprintf(at, sizeof at, "  remark: line %u:%u: ", line, (unsigned)(p - l + 1));
                    cr_expect(strstr(rep.s, at), "%s:%u:%u: no remark for this access", path, line, (unsigned)(p - l + 1));
                }
                l += n + (e != NULL);
            }
            free(rep.s);
            tilec_module_free(m);
            tilec_ctx_free(ctx);
            free(text);
        }
        globfree(&g);
    }
    cr_expect_gt(files, 20);
}
