/* test_dot.c: the example Graphviz emitter plugin (examples/emitters/dot.c)
 * run through the command: its output against tests/golden/dot (rewrite
 * with `make golden`), escaping of .tile text, and, when Graphviz is
 * installed, that `dot -Tsvg` accepts every file. */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_helpers.h"
#include "helpers.h"

#ifndef TILEC_BUILD
#define TILEC_BUILD "build"
#endif
#define TILEC_BIN TILEC_BUILD "/bin/tilec"
#define DOT_PLUGIN TILEC_BUILD "/examples/emitters/libtilec_dot.so"
#define GOLDEN "tests/golden/dot"





static void emit_dot(const char *tile, const char *dir)
{
    char *out;
    int st = sh(&out, "%s %s --plugin %s --emit dot -o %s", TILEC_BIN, tile, DOT_PLUGIN, dir);
    cr_assert_eq(st, 0, "tilec %s --emit dot failed (%d):\n%s", tile, st, out);
    free(out);
}

/* Is Graphviz's dot on the PATH? */
static int have_dot(void)
{
    char *out;
    int st = sh(&out, "command -v dot");
    free(out);
    return st == 0;
}

/* dot -Tsvg accepts every .dot file listed in names (one a line) under dir. */
static void check_dot_accepts(const char *dir, const char *names)
{
    if (!have_dot()) {
        cr_log_info("graphviz 'dot' is not installed: not checking that it accepts the files");
        return;
    }
    const char *s = names;
    while (*s) {
        const char *nl = strchr(s, '\n');
        char *out;
        int st = sh(&out, "dot -Tsvg '%s/%.*s' -o /dev/null", dir, (int)(nl - s), s);
        cr_expect_eq(st, 0, "dot -Tsvg rejects %s/%.*s:\n%s", dir, (int)(nl - s), s, out);
        free(out);
        s = nl + 1;
    }
}

Test(dot, golden)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    emit_dot("examples/e2e.tile", dir);
    emit_dot("tests/golden/ir/block.tile", dir);

    char *got = list_dir(dir), *want = list_dir(GOLDEN);
    cr_expect_str_eq(got, want, "the files written differ from " GOLDEN " (run `make golden`)");
    const char *s = got;
    while (*s) {
        const char *nl = strchr(s, '\n');
        char a[512], b[512];
        snprintf(a, sizeof a, "%s/%.*s", dir, (int)(nl - s), s);
        snprintf(b, sizeof b, GOLDEN "/%.*s", (int)(nl - s), s);
        size_t na = 0, nb = 0;
        char *fa = read_file(a, &na), *fb = read_file(b, &nb);
        cr_assert(fa, "cannot read %s", a);
        cr_expect(fb, "missing golden %s (run `make golden`)", b);
        if (fb)
            cr_expect(na == nb && !memcmp(fa, fb, na), "%s differs from %s (run `make golden` and review)", a,
                      b);
        free(fa);
        free(fb);
        s = nl + 1;
    }
    check_dot_accepts(dir, got);
    free(got);
    free(want);
    rm_dir(dir);
}

/* Text from the .tile file (doc comments, names in grids) cannot break the
 * DOT syntax: quotes, backslashes and '&' are escaped, tabs become spaces. */
Test(dot, escapes_tile_text)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    char tile[128];
    snprintf(tile, sizeof tile, "%s/esc.tile", dir);
    FILE *f = fopen(tile, "w");
    cr_assert(f);
    fputs("kernel neg(x: *f32, y: *f32, n: i32)\n"
          "    grid (cdiv(n, BLOCK))\n"
          "    hints { BLOCK = 256, warps = 4 }\n"
          "{\n"
          "    let i = pid(0) * BLOCK + range(BLOCK);\n"
          "    let p = y + i;\n"
          "    store(p, -load(x + i, i < n), i < n);\n"
          "}\n"
          "graph esc(x: f32[N]) -> (y: f32[N]) {\n"
          "    /// say \"hi\" \\ back\\n & forth\t}; digraph {\n"
          "    let y = empty(f32, [N]);\n"
          "    neg(x, y, N);\n"
          "    return y;\n"
          "}\n",
          f);
    fclose(f);
    char out_dir[160];
    snprintf(out_dir, sizeof out_dir, "%s/out", dir);
    cr_assert_eq(mkdir(out_dir, 0700), 0);
    emit_dot(tile, out_dir);

    char path[200];
    snprintf(path, sizeof path, "%s/esc.dot", out_dir);
    char *text = read_file(path, NULL);
    cr_assert(text, "no %s", path);
    cr_expect(strstr(text, "# say \\\"hi\\\" \\\\ back\\\\n &amp; forth }; digraph {\\l"), "%s", text);
    /* the store through a let of y marks y written: call -> y, and x read */
    cr_expect(strstr(text, "\"call_1\" -> \"buf_y\" [label=\"y\"];"), "%s", text);
    cr_expect(strstr(text, "\"buf_x\" -> \"call_1\" [label=\"x\"];"), "%s", text);
    cr_expect(!strstr(text, "\"buf_y\" -> \"call_1\""), "%s", text);
    /* every line has balanced (unescaped) quotes */
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        cr_assert(nl, "the file does not end with a newline");
        int quotes = 0;
        for (const char *c = l; c < nl; c++) {
            if (*c == '\\')
                c++;
            else if (*c == '"')
                quotes++;
        }
        cr_expect(quotes % 2 == 0, "unbalanced quotes: %.*s", (int)(nl - l), l);
        l = nl + 1;
    }
    free(text);
    check_dot_accepts(out_dir, "esc.dot\n");
    rm_dir(dir);
}

/* "dot" is not built in: without the plugin the command does not know it. */
Test(dot, needs_the_plugin)
{
    char *out;
    int st = sh(&out, "%s examples/e2e.tile --emit dot -o /tmp", TILEC_BIN);
    cr_expect_neq(st, 0, "%s", out);
    cr_expect(strstr(out, "dot"), "%s", out);
    free(out);
}
