/* test_robust.c: hostile input to the whole front end. Random bytes,
 * every truncated prefix and random mutations of every example, deep
 * nesting, huge files: each must end in a diagnostic (or a clean parse),
 * never a crash, hang or leak (`make asan` runs this under ASan+UBSan). */
#include <criterion/criterion.h>
#include <glob.h>
#include <time.h>

#include "helpers.h"

/* Parse; an error status must come with at least one located error,
 * success with none. */
static void expect_consistent(const char *what, const char *text, size_t len)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_string(ctx, what, text, len, &m);
    if (st == TILEC_OK) {
        cr_expect_eq(tilec_ctx_error_count(ctx), 0, "%s: success with errors", what);
        cr_expect_not_null(m);
    } else {
        cr_expect_eq(st, TILEC_ERR_INPUT, "%s: status %d", what, st);
        cr_expect_gt(tilec_ctx_error_count(ctx), 0, "%s: failure without a diagnostic", what);
        const tilec_diag *d = tilec_ctx_diag(ctx, 0);
        cr_expect(d && d->message[0], "%s: empty message", what);
        cr_expect_null(m);
    }
    membuf out = {0};
    tilec_ctx_render_diags(ctx, membuf_sink(&out));
    free(out.s);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

static unsigned long long rng_state;
static unsigned rnd(void)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(rng_state >> 33);
}

Test(robust, random_bytes, .timeout = 60)
{
    rng_state = (unsigned long long)time(NULL);
    cr_log_info("random_bytes seed %llu", rng_state);
    char buf[512];
    for (int round = 0; round < 3000; round++) {
        size_t n = rnd() % sizeof buf;
        for (size_t i = 0; i < n; i++)
            buf[i] = (char)rnd();
        expect_consistent("random.tile", buf, n);
        /* random tokens are more likely to get past the lexer */
        static const char *const words[] = {"kernel", "graph", "extern", "let", "for", "in", "..", "(", ")", "{",
                                            "}", "[", "]", ",", ";", ":", "=", "+", "*", "x", "n", "f32", "*f32",
                                            "1", "2.5", "range(4)", "load", "store", "if", "->", "None", "\n"};
        size_t k = 0;
        size_t nw = rnd() % 60;
        for (size_t i = 0; i < nw; i++) {
            const char *w = words[rnd() % (sizeof words / sizeof words[0])];
            size_t l = strlen(w);
            if (k + l + 1 >= sizeof buf)
                break;
            memcpy(buf + k, w, l);
            k += l;
            buf[k++] = ' ';
        }
        expect_consistent("words.tile", buf, k);
    }
}

static char **example_files(size_t *n)
{
    glob_t g;
    char **v = NULL;
    *n = 0;
    if (glob("examples/*.tile", 0, NULL, &g) == 0) {
        v = calloc(g.gl_pathc, sizeof *v);
        for (size_t i = 0; i < g.gl_pathc; i++)
            v[(*n)++] = strdup(g.gl_pathv[i]);
        globfree(&g);
    }
    return v;
}

Test(robust, truncated_prefixes_of_examples, .timeout = 120)
{
    size_t n;
    char **files = example_files(&n);
    cr_assert_gt(n, 0);
    for (size_t f = 0; f < n; f++) {
        size_t len = 0;
        char *text = read_file(files[f], &len);
        cr_assert(text);
        for (size_t cut = 0; cut < len; cut++)
            expect_consistent(files[f], text, cut);
        free(text);
        free(files[f]);
    }
    free(files);
}

Test(robust, mutated_examples, .timeout = 120)
{
    rng_state = (unsigned long long)time(NULL) ^ 0x9e3779b97f4a7c15ULL;
    cr_log_info("mutated_examples seed %llu", rng_state);
    size_t n;
    char **files = example_files(&n);
    for (size_t f = 0; f < n; f++) {
        size_t len = 0;
        char *text = read_file(files[f], &len);
        cr_assert(text && len);
        char *copy = malloc(len + 1);
        for (int round = 0; round < 400; round++) {
            memcpy(copy, text, len);
            int edits = 1 + (int)(rnd() % 4);
            for (int e = 0; e < edits; e++)
                copy[rnd() % len] = (char)(rnd() % 3 ? " ();,{}[]+-*0aZ:\n"[rnd() % 17] : (char)rnd());
            expect_consistent(files[f], copy, len);
        }
        free(copy);
        free(text);
        free(files[f]);
    }
    free(files);
}

static char *repeat(const char *head, const char *unit, size_t times, const char *tail, size_t *len)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(hl + ul * times + tl + 1);
    memcpy(s, head, hl);
    for (size_t i = 0; i < times; i++)
        memcpy(s + hl + i * ul, unit, ul);
    memcpy(s + hl + ul * times, tail, tl + 1);
    *len = hl + ul * times + tl;
    return s;
}

Test(robust, deep_nesting_is_an_error, .timeout = 30)
{
    size_t len;
    char *open = repeat("kernel k(n: i32) grid (1) { let x = ", "(", 100000, "1", &len);
    char *diags;
    cr_expect_eq(parse_text("deep.tile", open, len, &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(strstr(diags, "error: nesting is too deep: more than 1000 levels"), "%s", diags);
    free(diags);
    free(open);
    char *neg = repeat("kernel k(n: i32) grid (1) { let x = ", "-", 100000, "1; }", &len);
    cr_expect_eq(parse_text("neg.tile", neg, len, &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(strstr(diags, "nesting is too deep"), "%s", diags);
    free(diags);
    free(neg);
    char *blocks = repeat("kernel k(n: i32) grid (1) ", "{ if true ", 50000, "", &len);
    cr_expect_eq(parse_text("blocks.tile", blocks, len, &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(strstr(diags, "nesting is too deep"), "%s", diags);
    free(diags);
    free(blocks);
}

Test(robust, moderately_deep_nesting_is_fine)
{
    size_t len;
    char *a = repeat("kernel k(n: i32) grid (1) { let x = ", "(", 200, "1", &len);
    char *b = repeat(a, ")", 200, "; }", &len);
    char *diags;
    cr_expect_eq(parse_text("ok.tile", b, len, &diags, NULL), TILEC_OK, "%s", diags);
    free(diags);
    free(a);
    free(b);
}

Test(robust, many_parameters, .timeout = 60)
{
    /* 10^5 parameters: linear time, and a duplicate found by hash */
    size_t n = 100000, len = 0;
    char *s = malloc(n * 24 + 128);
    len += (size_t)sprintf(s, "kernel k(");
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(s + len, "p%zu: i32, ", i);
    len += (size_t)sprintf(s + len, "p7: i32) grid (1) { }");
    char *diags;
    size_t nerr;
    cr_expect_eq(parse_text("params.tile", s, len, &diags, &nerr), TILEC_ERR_INPUT);
    cr_expect_eq(nerr, 1);
    cr_expect(strstr(diags, "error: parameter 'p7' is already defined as a parameter"), "%s", diags);
    free(diags);
    free(s);
}

Test(robust, long_lines_are_windowed_in_diagnostics, .timeout = 30)
{
    size_t len;
    char *s = repeat("kernel k(n: i32) grid (1) { /*", " + 1", 1000000, " */ @ }", &len);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_expect_eq(tilec_parse_string(ctx, "long.tile", s, len, &m), TILEC_ERR_INPUT);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert(d);
    cr_expect_str_eq(d->message, "unexpected character '@'");
    cr_expect_lt(strlen(d->source_line), 400);
    cr_expect_eq(d->source_line[d->source_col - 1], '@');
    tilec_ctx_free(ctx);
    free(s);
}

Test(robust, long_operator_chains_are_bounded, .timeout = 30)
{
    size_t len;
    char *s = repeat("kernel k(n: i32) grid (1) { let x = 1", " + 1", 100000, "; }", &len);
    char *diags;
    cr_expect_eq(parse_text("chain.tile", s, len, &diags, NULL), TILEC_ERR_INPUT);
    cr_expect(strstr(diags, "error: expression is too deeply nested: more than 1000 levels"), "%s", diags);
    free(diags);
    free(s);
}
