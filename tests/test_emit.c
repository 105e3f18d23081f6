/* test_emit.c: the emitter layer (include/tilec/emitter.h). The built-in
 * "c" emitter writes exactly tests/golden/c/X/NAME.{c,h} for
 * tests/golden/ir/X.tile and examples/e2e.tile (regenerate with `make
 * golden` and review), and what it writes compiles; user emitters, the
 * registry, plugins (tests/plugin_demo.c), and the driver's errors, which
 * write nothing. */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <dirent.h>
#include <glob.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_helpers.h"
#include "cases.h"
#include "helpers.h"
#include "util/mangle.h"
#include "tilec/emitter.h"

#ifndef TILEC_BUILD
#define TILEC_BUILD "build"
#endif
#ifndef TILEC_SANFLAGS
#define TILEC_SANFLAGS "" /* the sanitizers libtilec.a was built with: a program linking it links them too */
#endif
#define TILEC_BIN TILEC_BUILD "/bin/tilec"
#define PLUGIN_DEMO TILEC_BUILD "/tests/libplugin_demo.so"
#define PLUGIN_FAIL TILEC_BUILD "/tests/libplugin_demo_fail.so"
#define PLUGIN_ABI TILEC_BUILD "/tests/libplugin_demo_abi.so"
#define FAKECUDA TILEC_BUILD "/tests/libfakecuda.so"

/* ---- helpers ---- */

/* The golden corpus of the "c" emitter. */
static struct criterion_test_params c_cases(void) { return cases_of2("tests/golden/ir/*.tile", "examples/e2e.tile"); }

static tilec_module *parse_src(tilec_ctx *ctx, const char *name, const char *src)
{
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, name, src, strlen(src), &m), TILEC_OK, "%s does not check", name);
    return m;
}

/* Two graphs: g1 calls no kernel, g2 calls one. */
static const char two_graphs[] = "kernel neg(x: *f32, y: *f32, n: i32) grid (cdiv(n, 128)) hints { warps = 4 } {\n"
                                 "    let i = pid(0) * 128 + range(128);\n"
                                 "    store(y + i, 0.0 - load(x + i, i < n), i < n);\n"
                                 "}\n"
                                 "graph g1(x: f32[N]) -> (v: f32[N]) {\n"
                                 "    let v = view(x, f32[N]);\n"
                                 "    return v;\n"
                                 "}\n"
                                 "graph g2(x: f32[N]) -> (y: f32[N]) {\n"
                                 "    let y = empty(f32, [N]);\n"
                                 "    neg(x, y, N);\n"
                                 "    return y;\n"
                                 "}\n";






/* The rendered diagnostics of ctx (caller frees). */
static char *diags(tilec_ctx *ctx)
{
    membuf d = {0};
    tilec_ctx_render_diags(ctx, membuf_sink(&d));
    return d.s ? d.s : calloc(1, 1);
}

/* ---- the "c" emitter: goldens ---- */

/* "tests/golden/c/block" for ".../block.tile" */
static void golden_dir(const char *tile, char *out, size_t cap)
{
    const char *base = strrchr(tile, '/') + 1;
    snprintf(out, cap, "tests/golden/c/%.*s", (int)(strlen(base) - 5), base);
}

/* The file graph i of m is written to: its name in C (util/mangle.h) + ext. */
static void graph_file(char *out, size_t cap, const tilec_module *m, size_t i, const char *ext)
{
    strbuf g;
    sb_init(&g);
    mg_c_graph(&g, tilec_module_graph(m, i)->name);
    snprintf(out, cap, "%s%s", sb_str(&g), ext);
    sb_free(&g);
}

ParameterizedTestParameters(emit, c_golden) { return c_cases(); }
ParameterizedTest(gcase *c, emit, c_golden)
{
    char gdir[300], dir[64];
    golden_dir(c->path, gdir, sizeof gdir);
    make_tmpdir(dir, sizeof dir);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, c->path);
    tilec_emit_options o = {.dir = dir, .plan = 1};
    membuf sink = {0};
    cr_assert_eq(tilec_module_emit(ctx, m, "c", &o, membuf_sink(&sink)), TILEC_OK, "%s", c->path);
    cr_expect_null(sink.s, "with a dir nothing goes to the sink");
    cr_expect_eq(tilec_ctx_diag_count(ctx), 0);
    /* exactly NAME.c and NAME.h per graph, and the golden dir holds the same files */
    membuf want_names = {0};
    for (size_t i = 0; i < tilec_module_graph_count(m); i++) {
        char line[300], c_file[140], h_file[140];
        graph_file(c_file, sizeof c_file, m, i, ".c");
        graph_file(h_file, sizeof h_file, m, i, ".h");
        snprintf(line, sizeof line, "%s\n%s\n", c_file, h_file);
        membuf_write(&want_names, line, strlen(line));
    }
    cr_assert(want_names.s, "%s has no graph", c->path);
    char *got_names = list_dir(dir), *golden_names = list_dir(gdir);
    cr_expect_str_eq(got_names, want_names.s, "%s: files written", c->path);
    cr_expect_str_eq(golden_names, want_names.s, "%s: files (run make golden)", gdir);
    membuf cat = {0}; /* every output, in order, as the sink gets them */
    for (size_t i = 0; i < tilec_module_graph_count(m); i++) {
        const char *ext[] = {".h", ".c"};
        for (int k = 0; k < 2; k++) {
            char file[300];
            graph_file(file, sizeof file, m, i, ext[k]);
            char *got = read_in(dir, file), *want = read_in(gdir, file);
            cr_assert(want, "missing %s/%s (run make golden)", gdir, file);
            cr_assert(got, "not written: %s", file);
            cr_expect_str_eq(got, want, "%s: %s differs from %s/%s", c->path, file, gdir, file);
            membuf_write(&cat, want, strlen(want));
            free(got);
            free(want);
        }
    }
    /* without a dir: the same bytes to the sink, header first */
    cr_assert_eq(tilec_module_emit(ctx, m, "c", &(tilec_emit_options){.plan = 1}, membuf_sink(&sink)), TILEC_OK);
    cr_expect_str_eq(sink.s, cat.s);
    free(sink.s);
    free(cat.s);
    free(got_names);
    free(golden_names);
    free(want_names.s);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    rm_dir(dir);
}

Test(emit, c_golden_corpus)
{
    glob_t g;
    cr_assert_eq(glob("tests/golden/c/*/*.[ch]", 0, NULL, &g), 0);
    size_t graphs = 0; /* of every case */
    glob_t t;
    cr_assert_eq(glob("tests/golden/ir/*.tile", 0, NULL, &t), 0);
    cr_assert_eq(glob("examples/e2e.tile", GLOB_APPEND, NULL, &t), 0);
    for (size_t i = 0; i < t.gl_pathc; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = parse(ctx, t.gl_pathv[i]);
        graphs += tilec_module_graph_count(m);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
    globfree(&t);
    cr_expect_geq(graphs, 5);
    cr_expect_eq(g.gl_pathc, 2 * graphs, "%zu graphs, a .c and a .h each", graphs);
    globfree(&g);
}

/* The command writes the same files (it is what `make golden` runs). */
Test(emit, c_golden_from_the_command)
{
    char dir[64], *out;
    make_tmpdir(dir, sizeof dir);
    cr_expect_eq(sh(&out, "%s examples/e2e.tile --emit c -o %s", TILEC_BIN, dir), 0);
    cr_expect_str_eq(out, "");
    free(out);
    const char *files[] = {"e2e.c", "e2e.h"};
    for (int i = 0; i < 2; i++) {
        char *got = read_in(dir, files[i]), *want = read_in("tests/golden/c/e2e", files[i]);
        cr_assert(got && want, "%s", files[i]);
        cr_expect_str_eq(got, want, "%s", files[i]);
        free(got);
        free(want);
    }
    rm_dir(dir);
}

/* ---- the "c" emitter: what it writes compiles ---- */

static void expect_compiles(const char *dir, const char *cfile)
{
    const char *cc = getenv("CC");
    if (!cc || !*cc)
        cc = "cc";
    /* as a wrapper (the flags the header comment promises), and as the benchmark */
    const char *modes[] = {"", "-D_POSIX_C_SOURCE=200809L -DTILEC_BENCH_MAIN"};
    for (int i = 0; i < 2; i++) {
        char *out;
        int st = sh(&out, "%s -std=c11 -fsyntax-only -Wall -Wextra -Wshadow -Wdouble-promotion -Werror %s -Iinclude -I%s %s/%s", cc, modes[i], dir,
                    dir, cfile);
        cr_expect_eq(st, 0, "%s/%s %s does not compile:\n%s", dir, cfile, modes[i], out);
        free(out);
    }
}

/* Every golden IR case and every example, as a wrapper and as the
 * benchmark, with the kernels built at load and compiled ahead of time
 * (--aot sm_90: NVRTC, no GPU): -Wall -Wextra -Werror clean. */
static struct criterion_test_params all_cases(void) { return cases_of2("tests/golden/ir/*.tile", "examples/*.tile"); }

ParameterizedTestParameters(emit, c_compiles) { return all_cases(); }
ParameterizedTest(gcase *c, emit, c_compiles, .timeout = 600)
{
    for (int aot = 0; aot < 2; aot++) {
        char dir[64];
        make_tmpdir(dir, sizeof dir);
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = parse(ctx, c->path);
        const char *const keys[] = {"aot"}, *const values[] = {"sm_90"};
        tilec_emit_options o = {.dir = dir, .plan = 1, .keys = keys, .values = values, .noptions = (size_t)aot};
        cr_assert_eq(tilec_module_emit(ctx, m, "c", &o, tilec_sink_file(stdout)), TILEC_OK, "%s%s", c->path,
                     aot ? " --aot sm_90" : "");
        for (size_t i = 0; i < tilec_module_graph_count(m); i++) {
            char file[300];
            graph_file(file, sizeof file, m, i, ".c");
            expect_compiles(dir, file);
        }
        tilec_module_free(m);
        tilec_ctx_free(ctx);
        rm_dir(dir);
    }
}

/* A graph that returns its own input hands out a copy, never the caller's
 * buffer as its own (the caller would free it twice). */
Test(emit, c_returned_input_is_a_copy)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/ir/returns_input.tile");
    cr_assert_eq(tilec_module_emit(ctx, m, "c", &(tilec_emit_options){.dir = dir, .plan = 1}, tilec_sink_file(stdout)),
                 TILEC_OK);
    char *c = read_in(dir, "g.c");
    cr_assert(c);
    const char *copy = strstr(c, "tilec_rt_memcpy_dtod(M->rt, b_x.data, tl_in.data, tl_n)");
    const char *alloc = strstr(c, "if (tl_alloc(M, &b_x, \"x\", tl_in.dtype");
    const char *out = strstr(c, "    *out_x = b_x;\n");
    cr_expect(alloc && copy && out && alloc < copy && copy < out, "%s", c);
    free(c);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    rm_dir(dir);
}

/* The .tile file name lands in a comment and a string literal: quotes,
 * backslashes, trigraphs and comment ends must not break either. Inputs
 * are read only after their checks (a NULL input is an error, not a crash). */
Test(emit, c_escapes_the_file_name)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    const char *name = "we\"ird\\name?\?/x*/.tile";
    char *src = read_file("tests/golden/ir/chain.tile", NULL);
    cr_assert(src);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse_src(ctx, name, src);
    cr_assert_eq(tilec_module_emit(ctx, m, "c", &(tilec_emit_options){.dir = dir, .plan = 1}, tilec_sink_file(stdout)),
                 TILEC_OK);
    char *c = read_in(dir, "chain.c"), *h = read_in(dir, "chain.h");
    cr_assert(c && h);
    const char *lit = "tilec_parse_string(M->ctx, \"we\\\"ird\\\\name\\077\\077/x*/.tile\", tl_source";
    cr_expect(strstr(c, lit), "no %s in\n%.400s", lit, c);
    cr_expect(strstr(h, "from we\"ird name  /x* /.tile\n"), "%.200s", h);
    expect_compiles(dir, "chain.c");
    /* b_x = *t_x only after the checks of x */
    const char *check = strstr(c, "    if (!t_x || t_x->dtype != TILEC_DT_F32 || t_x->rank != 2)\n");
    const char *copy = strstr(c, "    b_x = *t_x;\n");
    cr_expect(check && copy && check < copy);
    cr_expect(strstr(c, "    tilec_tensor b_x __attribute__((unused)) = {0};\n"));
    free(c);
    free(h);
    free(src);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    rm_dir(dir);
}

/* C as the compiler sees it after translation phases 1-3, without its
 * comments and literals: trigraphs replaced (-std=c11 has them), line
 * splices joined (a // comment ending in a backslash swallows the next
 * line), comments, string and character literals dropped. */
static char *c_code_only(const char *src)
{
    size_t n = strlen(src);
    char *a = malloc(n + 1), *b = malloc(n + 1);
    cr_assert(a && b);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) { /* trigraphs */
        static const char from[] = "=/'()!<>-", to[] = "#\\^[]|{}~";
        const char *t = src[i] == '?' && src[i + 1] == '?' && src[i + 2] ? strchr(from, src[i + 2]) : NULL;
        if (t) {
            a[k++] = to[t - from];
            i += 2;
        } else {
            a[k++] = src[i];
        }
    }
    a[k] = 0;
    n = k;
    k = 0;
    for (size_t i = 0; i < n; i++) /* line splices */
        if (a[i] == '\\' && a[i + 1] == '\n')
            i++;
        else
            a[k++] = a[i];
    a[k] = 0;
    n = k;
    k = 0;
    for (size_t i = 0; i < n;) {
        if (a[i] == '/' && a[i + 1] == '/') {
            while (i < n && a[i] != '\n')
                i++;
        } else if (a[i] == '/' && a[i + 1] == '*') {
            const char *e = strstr(a + i + 2, "*/");
            cr_assert(e, "an unterminated comment in\n%s", a + i);
            i = (size_t)(e - a) + 2;
            b[k++] = ' ';
        } else if (a[i] == '"' || a[i] == '\'') {
            char q = a[i++];
            while (i < n && a[i] != q) {
                cr_assert(a[i] != '\n', "a literal across lines: %.80s", a + i);
                i += a[i] == '\\' ? 2 : 1;
            }
            i++;
            b[k++] = '0';
        } else {
            b[k++] = a[i++];
        }
    }
    b[k] = 0;
    free(a);
    return b;
}

/* Text from the .tile file (doc comments, the file name) lands in
 * comments and string literals only: comment ends and starts, quotes,
 * backslashes (a trailing one would splice the next line into a //
 * comment), trigraphs. The planted declaration never reaches the code. */
Test(emit, c_text_from_the_tile_file_cannot_inject_code)
{
    static const char src[] = "/// doc */ int injected; /* ?\?/\n"
                              "/// back\\slash \"quote\" trailing \\\n"
                              "/// not UTF-8 \377\376, UTF-8 \303\251, line separator \342\200\250 */ int injected;\n"
                              "kernel k(x: *f32, y: *f32, n: i32)\n"
                              "    grid (cdiv(n, BLOCK))\n"
                              "    hints { BLOCK = 256, warps = 4 }\n"
                              "{\n"
                              "    let i = pid(0) * BLOCK + range(BLOCK);\n"
                              "    store(y + i, load(x + i, i < n), i < n);\n"
                              "}\n\n"
                              "extern ex(a: f32[N]) -> f32[N] = \"my.sym\";\n\n"
                              "/// graph doc */ int injected; ?\?/\n"
                              "/// line two \\\n"
                              "graph g(x: f32[N]) -> (y: f32[N]) {\n"
                              "    /// body doc */ int injected; /* \\\n"
                              "    let t = empty(f32, [N]);\n"
                              "    k(x, t, N);\n"
                              "    /// \"quote\" */ int injected; ?\?= ?\?/\n"
                              "    /// ends in a star *\n"
                              "    let y = ex(t);\n"
                              "    return y;\n"
                              "}\n";
    const char *names[] = {"we\"ird\\name?\?/x*/ /* int injected; */.tile", "tail\\", "q?\?/\n int injected; //.tile"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char dir[64];
        make_tmpdir(dir, sizeof dir);
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = parse_src(ctx, names[i], src);
        cr_assert_eq(tilec_module_emit(ctx, m, "c", &(tilec_emit_options){.dir = dir, .plan = 1}, tilec_sink_file(stdout)),
                     TILEC_OK);
        const char *files[] = {"g.c", "g.h"};
        for (int f = 0; f < 2; f++) {
            char *text = read_in(dir, files[f]);
            cr_assert(text);
            cr_expect(strstr(text, "injected"), "%s: the planted text is kept (in comments)", files[f]);
            char *code = c_code_only(text);
            cr_expect_null(strstr(code, "injected"), "%s (name %s): text from the .tile file reached the code:\n%s", files[f],
                           names[i], code);
            free(code);
            free(text);
        }
        expect_compiles(dir, "g.c");
        tilec_module_free(m);
        tilec_ctx_free(ctx);
        rm_dir(dir);
    }
}

/* The built-in "ir" emitter writes NAME.ir: the golden text form. */
Test(emit, ir_emitter_writes_the_golden_text)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/ir/views.tile");
    cr_assert_eq(tilec_module_emit(ctx, m, "ir", &(tilec_emit_options){.dir = dir, .plan = 1}, tilec_sink_file(stdout)),
                 TILEC_OK);
    char *names = list_dir(dir);
    cr_expect_str_eq(names, "views.ir\n");
    char *got = read_in(dir, "views.ir"), *want = read_file("tests/golden/ir/views.ir", NULL);
    cr_assert(got && want);
    cr_expect_str_eq(got, want);
    free(names);
    free(got);
    free(want);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    rm_dir(dir);
}

/* ---- a user emitter: counts the lines of each kind ---- */

typedef struct counts {
    tilec_emit *e;
    int n[TILEC_WIR_KIND_COUNT];
} counts;

static int begins, ends, fail_begin_of_g2, fail_end;

static int count_begin(tilec_emit *e, void **state)
{
    begins++;
    if (fail_begin_of_g2 && !strcmp(tilec_emit_graph(e)->name, "g2"))
        return -1;
    counts *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->e = e;
    /* the session's accessors agree with each other */
    cr_expect_eq(tilec_wir_graph(tilec_emit_wir(e)), tilec_emit_graph(e));
    cr_expect_eq(tilec_module_find_graph(tilec_emit_module(e), tilec_emit_graph(e)->name), tilec_emit_graph(e));
    cr_expect_neq(tilec_emit_ctx(e), NULL);
    *state = c;
    return 0;
}

static int count_line(void *user, const tilec_wir_line *l)
{
    counts *c = user;
    c->n[l->kind]++;
    return 0;
}

static int count_fail(void *user, const tilec_wir_line *l)
{
    (void)user;
    (void)l;
    return -1;
}

/* NAME.count: an optional title line (option "title"), then "KIND N" for
 * every kind; the output file may be renamed with option "file". */
static int count_end(tilec_emit *e, void *state)
{
    counts *c = state;
    ends++;
    char file[300];
    const char *f = tilec_emit_option(e, "file");
    snprintf(file, sizeof file, "%.250s.count", tilec_emit_graph(e)->name);
    if (f)
        snprintf(file, sizeof file, "%s", f);
    int bad = 0;
    const char *title = tilec_emit_option(e, "title");
    if (title)
        bad |= tilec_emit_printf(e, file, "%s %s\n", title, tilec_emit_graph(e)->name);
    for (int k = 0; k < TILEC_WIR_KIND_COUNT; k++)
        bad |= tilec_emit_printf(e, file, "%s %d\n", tilec_wir_kind_name((tilec_wir_kind)k), c->n[k]);
    free(c);
    if (f && tilec_emit_option(e, "ignore_errors"))
        return 0;
    return bad || fail_end ? -1 : 0;
}

#define COUNT_HOOK(E, e) .e = count_line,
static const tilec_emitter counter = {
    TILEC_EMITTER_HEADER,
    .name = "count",
    .description = "lines per kind",
    .begin = count_begin,
    .hooks = {{{TILEC_WIR_LINES(COUNT_HOOK)}}},
    .end = count_end,
};

static const char block_counts[] = "COMMENT 2\n"
                                   "KERNEL_DEF 2\n"
                                   "ALLOCATE 1\n"
                                   "REUSE 1\n"
                                   "FREE_IF_NOT_REUSED 0\n"
                                   "FREE 2\n"
                                   "REINTERPRET 1\n"
                                   "KERNEL_CALL 2\n"
                                   "EXTERN_CALL 0\n"
                                   "EXTERN_ALLOC 2\n"
                                   "MULTI_OUTPUT 2\n"
                                   "ASSERT_SHAPE 2\n"
                                   "COLLECTIVE 0\n"
                                   "LOOP 0\n"
                                   "END_LOOP 0\n"
                                   "ASSERT_LIST 0\n"
                                   "MAKE_LIST 0\n"
                                   "LIST_OF 0\n";

Test(emit, user_emitter)
{
    tilec_ctx *ctx = tilec_ctx_new();
    cr_expect_null(tilec_find_emitter(ctx, "count"));
    cr_assert_eq(tilec_register_emitter(ctx, &counter), TILEC_OK);
    cr_expect_eq(tilec_find_emitter(ctx, "count"), &counter);
    tilec_module *m = parse(ctx, "tests/golden/ir/block.tile");
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    const char *keys[] = {"title"}, *values[] = {"counts of"};
    tilec_emit_options o = {.dir = dir, .keys = keys, .values = values, .noptions = 1, .plan = 1};
    cr_assert_eq(tilec_module_emit(ctx, m, "count", &o, tilec_sink_file(stdout)), TILEC_OK);
    cr_expect_eq(begins, 1);
    cr_expect_eq(ends, 1);
    char *names = list_dir(dir), *got = read_in(dir, "block.count");
    cr_expect_str_eq(names, "block.count\n");
    char want[1024];
    snprintf(want, sizeof want, "counts of block\n%s", block_counts);
    cr_expect_str_eq(got, want);
    free(names);
    free(got);
    rm_dir(dir);
    /* no options, to a sink */
    membuf sink = {0};
    cr_assert_eq(tilec_module_emit(ctx, m, "count", NULL, membuf_sink(&sink)), TILEC_OK);
    cr_expect_str_eq(sink.s, block_counts);
    free(sink.s);
    cr_expect_eq(tilec_ctx_diag_count(ctx), 0);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

Test(emit, registry)
{
    tilec_ctx *ctx = tilec_ctx_new();
    const char *names[8] = {0};
    cr_assert_eq(tilec_emitter_names(ctx, names, 8), 3);
    cr_expect_str_eq(names[0], "ir");
    cr_expect_str_eq(names[1], "c");
    cr_expect_str_eq(names[2], "py");
    cr_expect_eq(tilec_emitter_names(ctx, names, 1), 1);
    cr_expect_eq(tilec_emitter_names(NULL, names, 8), 3);
    const tilec_emitter *builtin_c = tilec_find_emitter(ctx, "c");
    cr_assert(builtin_c);
    cr_expect_str_eq(builtin_c->name, "c");
    cr_expect_str_eq(tilec_find_emitter(ctx, "ir")->name, "ir");
    cr_expect_eq(tilec_find_emitter(NULL, "c"), builtin_c);
    cr_expect_null(tilec_find_emitter(ctx, "nope"));
    cr_expect_null(tilec_find_emitter(ctx, NULL));

    /* a same-named registration replaces an earlier one, and the built-ins */
    tilec_emitter first = counter, second = counter, as_c = counter;
    second.description = "second";
    as_c.name = "c";
    cr_assert_eq(tilec_register_emitter(ctx, &first), TILEC_OK);
    cr_assert_eq(tilec_register_emitter(ctx, &second), TILEC_OK);
    cr_expect_eq(tilec_find_emitter(ctx, "count"), &second);
    cr_assert_eq(tilec_register_emitter(ctx, &as_c), TILEC_OK);
    cr_expect_eq(tilec_find_emitter(ctx, "c"), &as_c);
    cr_assert_eq(tilec_emitter_names(ctx, names, 8), 4);
    cr_expect_str_eq(names[0], "ir");
    cr_expect_str_eq(names[1], "c");
    cr_expect_str_eq(names[3], "count");
    /* emitting "c" now runs the replacement */
    tilec_module *m = parse(ctx, "tests/golden/ir/block.tile");
    membuf sink = {0};
    cr_assert_eq(tilec_module_emit(ctx, m, "c", NULL, membuf_sink(&sink)), TILEC_OK);
    cr_expect_str_eq(sink.s, block_counts);
    free(sink.s);
    tilec_module_free(m);
    /* registries are per context */
    tilec_ctx *other = tilec_ctx_new();
    cr_expect_eq(tilec_find_emitter(other, "c"), builtin_c);
    cr_expect_null(tilec_find_emitter(other, "count"));
    tilec_ctx_free(other);

    /* bad registrations change nothing */
    tilec_emitter unnamed = counter, empty = counter;
    unnamed.name = NULL;
    empty.name = "";
    cr_expect_eq(tilec_register_emitter(ctx, NULL), TILEC_ERR_ARG);
    cr_expect_eq(tilec_register_emitter(ctx, &unnamed), TILEC_ERR_ARG);
    cr_expect_eq(tilec_register_emitter(ctx, &empty), TILEC_ERR_ARG);
    cr_expect_eq(tilec_register_emitter(NULL, &counter), TILEC_ERR_ARG);
    cr_expect_eq(tilec_emitter_names(ctx, names, 8), 4);
    cr_expect_eq(tilec_ctx_diag_count(ctx), 0);
    /* an emitter of another layout: refused with a diagnostic, before its name is read */
    tilec_emitter old = counter, big = counter;
    old.abi = 0;
    big.size += 8;
    cr_expect_eq(tilec_register_emitter(ctx, &old), TILEC_ERR_ARG);
    cr_expect_eq(tilec_register_emitter(ctx, &big), TILEC_ERR_ARG);
    cr_expect_eq(tilec_emitter_names(ctx, names, 8), 4);
    cr_assert_eq(tilec_ctx_error_count(ctx), 2);
    char want[512];
    snprintf(want, sizeof want,
             "refused an emitter built for emitter ABI 0 (tilec_emitter of %zu bytes); this tilec has ABI %u (%zu "
             "bytes): rebuild it against this tilec's include/tilec/emitter.h",
             sizeof(tilec_emitter), TILEC_EMITTER_ABI, sizeof(tilec_emitter));
    cr_expect_str_eq(tilec_ctx_diag(ctx, 0)->message, want);
    cr_expect_str_eq(tilec_ctx_diag(ctx, 0)->file, "tilec_register_emitter");
    tilec_ctx_free(ctx);
}

/* ---- the driver's errors: a message, an error status, nothing written ---- */

typedef struct failing {
    tilec_ctx *ctx;
    tilec_module *m;
    char dir[64];
    membuf sink;
} failing;

/* Emit two_graphs (g1, g2) with em into a fresh dir and to a sink; both
 * must fail with `want` and leave nothing. Returns the context for the
 * caller to check its diagnostics. */
static failing emit_failing(const tilec_emitter *em, tilec_status want, const tilec_emit_options *opts)
{
    failing f = {.ctx = tilec_ctx_new()};
    cr_assert_eq(tilec_register_emitter(f.ctx, em), TILEC_OK);
    f.m = parse_src(f.ctx, "two.tile", two_graphs);
    cr_assert_eq(tilec_module_graph_count(f.m), 2);
    make_tmpdir(f.dir, sizeof f.dir);
    tilec_emit_options o = opts ? *opts : (tilec_emit_options){.plan = 1};
    o.dir = f.dir;
    cr_expect_eq(tilec_module_emit(f.ctx, f.m, em->name, &o, membuf_sink(&f.sink)), want);
    char *names = list_dir(f.dir);
    cr_expect_str_eq(names, "", "written despite the error");
    free(names);
    char *first = diags(f.ctx);
    tilec_ctx_clear_diags(f.ctx);
    o.dir = NULL;
    cr_expect_eq(tilec_module_emit(f.ctx, f.m, em->name, &o, membuf_sink(&f.sink)), want);
    cr_expect_null(f.sink.s, "written to the sink despite the error");
    char *second = diags(f.ctx);
    cr_expect_str_eq(second, first, "the same error either way");
    free(first);
    free(second);
    rm_dir(f.dir);
    return f;
}

static void done(failing *f)
{
    tilec_module_free(f->m);
    tilec_ctx_free(f->ctx);
}

static void expect_one_error(tilec_ctx *ctx, const char *message, uint32_t line)
{
    cr_assert_eq(tilec_ctx_diag_count(ctx), 1);
    cr_expect_eq(tilec_ctx_error_count(ctx), 1);
    cr_expect_str_eq(tilec_ctx_diag(ctx, 0)->message, message);
    cr_expect_eq(tilec_ctx_diag(ctx, 0)->line, line);
}

Test(emit, missing_hook_writes_nothing)
{
    tilec_emitter partial = counter;
    partial.name = "partial";
    partial.hooks.kernel_call = NULL;
    /* g1 has no kernel call and emits; g2 fails: still nothing written */
    failing f = emit_failing(&partial, TILEC_ERR_ARG, NULL);
    expect_one_error(f.ctx, "emitter 'partial' has no hook for line kind KERNEL_CALL", 11);
    char *d = diags(f.ctx);
    const char *want = "two.tile:11:5: error: emitter 'partial' has no hook for line kind KERNEL_CALL\n";
    cr_expect(!strncmp(d, want, strlen(want)), "%s", d);
    free(d);
    cr_expect_eq(begins, 4, "g1 and g2, twice");
    cr_expect_eq(ends, 4, "end frees the state of a failed graph too");
    done(&f);
}

Test(emit, failing_hook_writes_nothing)
{
    tilec_emitter em = counter;
    em.name = "flaky";
    em.hooks.kernel_call = count_fail;
    failing f = emit_failing(&em, TILEC_ERR_IO, NULL);
    expect_one_error(f.ctx, "emitter 'flaky' failed at a KERNEL_CALL line of graph 'g2'", 11);
    cr_expect_eq(ends, begins);
    done(&f);
}

Test(emit, failing_begin_writes_nothing)
{
    fail_begin_of_g2 = 1;
    failing f = emit_failing(&counter, TILEC_ERR_IO, NULL);
    expect_one_error(f.ctx, "emitter 'count' failed to begin graph 'g2'", 9);
    cr_expect_eq(begins, 4);
    cr_expect_eq(ends, 2, "end only for a graph that began");
    done(&f);
}

Test(emit, failing_end_writes_nothing)
{
    fail_end = 1;
    failing f = emit_failing(&counter, TILEC_ERR_IO, NULL);
    expect_one_error(f.ctx, "emitter 'count' failed to finish graph 'g1'", 5);
    cr_expect_eq(ends, 2, "the first graph's failure stops the emit");
    done(&f);
}

/* Output names are plain: no '/', no leading '.', not empty. An emitter
 * that ignores the -1 still fails the emit. */
Test(emit, bad_output_names)
{
    const char *bad[] = {"a/b", "../x", "/tmp/x", ".hidden", ".", "..", "", "x/"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        for (int ignore = 0; ignore < 2; ignore++) {
            const char *keys[] = {"file", "ignore_errors"}, *values[] = {bad[i], "1"};
            tilec_emit_options o = {.keys = keys, .values = values, .noptions = ignore ? 2 : 1, .plan = 1};
            failing f = emit_failing(&counter, TILEC_ERR_IO, &o);
            if (ignore) {
                char want[256];
                snprintf(want, sizeof want,
                         "emitter 'count' wrote to a bad output name '%s' (a plain file name: no '/', not starting "
                         "with '.')",
                         bad[i]);
                expect_one_error(f.ctx, want, 0);
            }
            else
                expect_one_error(f.ctx, "emitter 'count' failed to finish graph 'g1'", 5);
            done(&f);
        }
    }
    /* a plain name is fine (and both graphs append to it) */
    tilec_ctx *ctx = tilec_ctx_new();
    cr_assert_eq(tilec_register_emitter(ctx, &counter), TILEC_OK);
    tilec_module *m = parse_src(ctx, "two.tile", two_graphs);
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    const char *keys[] = {"file", "title"}, *values[] = {"all.txt..", "#"};
    tilec_emit_options o = {.dir = dir, .keys = keys, .values = values, .noptions = 2, .plan = 1};
    cr_assert_eq(tilec_module_emit(ctx, m, "count", &o, tilec_sink_file(stdout)), TILEC_OK);
    char *names = list_dir(dir), *got = read_in(dir, "all.txt..");
    cr_expect_str_eq(names, "all.txt..\n");
    cr_expect(got && !strncmp(got, "# g1\nCOMMENT 0\n", 15), "%s", got);
    cr_expect(got && strstr(got, "REINTERPRET 1\nKERNEL_CALL 0\n"), "%s", got);
    cr_expect(got && strstr(got, "\n# g2\nCOMMENT 0\nKERNEL_DEF 1\nALLOCATE 1\n"), "%s", got);
    free(names);
    free(got);
    rm_dir(dir);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* An output dir that cannot be written: an error naming the file. */
Test(emit, unwritable_dir)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/ir/chain.tile");
    tilec_emit_options o = {.dir = "/nonexistent/dir", .plan = 1};
    cr_expect_eq(tilec_module_emit(ctx, m, "c", &o, tilec_sink_file(stdout)), TILEC_ERR_IO);
    cr_assert_eq(tilec_ctx_diag_count(ctx), 1);
    cr_expect_str_eq(tilec_ctx_diag(ctx, 0)->message, "cannot write chain.h: No such file or directory");
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* ---- unknown emitters, bad arguments ---- */

Test(emit, unknown_emitter)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/ir/chain.tile");
    membuf sink = {0};
    cr_expect_eq(tilec_module_emit(ctx, m, "nope", NULL, membuf_sink(&sink)), TILEC_ERR_ARG);
    cr_expect_null(sink.s);
    char *d = diags(ctx);
    cr_expect_str_eq(d, "tests/golden/ir/chain.tile: error: no emitter called 'nope' (known: ir, c, py)\n");
    free(d);
    tilec_ctx_clear_diags(ctx);
    cr_expect_eq(tilec_module_emit(NULL, m, "c", NULL, membuf_sink(&sink)), TILEC_ERR_ARG);
    cr_expect_eq(tilec_module_emit(ctx, NULL, "c", NULL, membuf_sink(&sink)), TILEC_ERR_ARG);
    cr_expect_eq(tilec_module_emit(ctx, m, NULL, NULL, membuf_sink(&sink)), TILEC_ERR_ARG);
    cr_expect_eq(tilec_ctx_diag_count(ctx), 0);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

Test(emit, unknown_emitter_from_the_command)
{
    char *out;
    cr_expect_eq(sh(&out, "%s tests/golden/ir/chain.tile --emit nope", TILEC_BIN), 2);
    cr_expect_str_eq(out, "tilec: error: unknown --emit kind 'nope' (known: ast, cuda, layouts, tune, cubin, ir, c, py)\n"
                          "(run 'tilec --help' for usage)\n");
    free(out);
    cr_expect_eq(sh(&out, "%s tests/golden/ir/chain.tile --plugin %s --emit nope", TILEC_BIN, PLUGIN_DEMO), 2);
    cr_expect_str_eq(out, "tilec: error: unknown --emit kind 'nope' (known: ast, cuda, layouts, tune, cubin, ir, c, py, demo)\n"
                          "(run 'tilec --help' for usage)\n");
    free(out);
}

/* ---- plugins ---- */

static const char block_demo[] = "demo block\n"
                                 "KERNEL_DEF\nKERNEL_DEF\nASSERT_SHAPE\nASSERT_SHAPE\nCOMMENT\nALLOCATE\nKERNEL_CALL\n"
                                 "COMMENT\nEXTERN_ALLOC\nREUSE\nKERNEL_CALL\nREINTERPRET\nEXTERN_ALLOC\nMULTI_OUTPUT\n"
                                 "MULTI_OUTPUT\nFREE\nFREE\n";

Test(emit, plugin)
{
    tilec_ctx *ctx = tilec_ctx_new();
    cr_expect_null(tilec_find_emitter(ctx, "demo"));
    cr_assert_eq(tilec_load_plugin(ctx, PLUGIN_DEMO), TILEC_OK);
    const tilec_emitter *demo = tilec_find_emitter(ctx, "demo");
    cr_assert(demo);
    cr_expect_str_eq(demo->description, "the kind of every IR line (NAME.demo)");
    const char *names[8];
    cr_assert_eq(tilec_emitter_names(ctx, names, 8), 4);
    cr_expect_str_eq(names[3], "demo");
    tilec_module *m = parse(ctx, "tests/golden/ir/block.tile");
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    cr_assert_eq(tilec_module_emit(ctx, m, "demo", &(tilec_emit_options){.dir = dir, .plan = 1}, tilec_sink_file(stdout)),
                 TILEC_OK);
    char *list = list_dir(dir), *got = read_in(dir, "block.demo");
    cr_expect_str_eq(list, "block.demo\n");
    cr_expect_str_eq(got, block_demo);
    free(list);
    free(got);
    rm_dir(dir);
    /* loading it again (a second handle) is harmless */
    cr_expect_eq(tilec_load_plugin(ctx, PLUGIN_DEMO), TILEC_OK);
    cr_expect_eq(tilec_emitter_names(ctx, names, 8), 4);
    cr_expect_eq(tilec_ctx_diag_count(ctx), 0);
    tilec_module_free(m);
    tilec_ctx_free(ctx); /* closes the library */
}

static void expect_plugin_error(const char *path, tilec_status want, const char *message)
{
    tilec_ctx *ctx = tilec_ctx_new();
    cr_expect_eq(tilec_load_plugin(ctx, path), want, "%s", path);
    cr_assert_eq(tilec_ctx_error_count(ctx), 1, "%s", path);
    cr_expect_str_eq(tilec_ctx_diag(ctx, 0)->message, message);
    char *d = diags(ctx), want_text[1024];
    snprintf(want_text, sizeof want_text, "%s: error: %s\n", path, message);
    cr_expect_str_eq(d, want_text);
    free(d);
    cr_expect_null(tilec_find_emitter(ctx, "demo"));
    cr_expect_eq(tilec_emitter_names(ctx, (const char *[4]){0}, 4), 3);
    tilec_ctx_free(ctx);
}

Test(emit, plugin_errors)
{
    expect_plugin_error("/nonexistent/libnope.so", TILEC_ERR_IO,
                        "cannot load the plugin: /nonexistent/libnope.so: cannot open shared object file: No such file "
                        "or directory");
    expect_plugin_error("tests/golden/ir/block.tile", TILEC_ERR_IO,
                        "cannot load the plugin: tests/golden/ir/block.tile: invalid ELF header");
    expect_plugin_error(FAKECUDA, TILEC_ERR_INPUT, "the plugin has no tilec_plugin_register function");
    expect_plugin_error(PLUGIN_FAIL, TILEC_ERR_INPUT, "the plugin's tilec_plugin_register failed");
    char abi[512];
    snprintf(abi, sizeof abi,
             "the plugin registers an emitter built for emitter ABI %u (tilec_emitter of %zu bytes); this tilec has "
             "ABI %u (%zu bytes): rebuild it against this tilec's include/tilec/emitter.h",
             TILEC_EMITTER_ABI + 1, sizeof(tilec_emitter) + 8, TILEC_EMITTER_ABI, sizeof(tilec_emitter));
    expect_plugin_error(PLUGIN_ABI, TILEC_ERR_INPUT, abi);
    tilec_ctx *ctx = tilec_ctx_new();
    cr_expect_eq(tilec_load_plugin(ctx, NULL), TILEC_ERR_ARG);
    cr_expect_eq(tilec_load_plugin(NULL, PLUGIN_DEMO), TILEC_ERR_ARG);
    cr_expect_eq(tilec_ctx_diag_count(ctx), 0);
    tilec_ctx_free(ctx);
}

/* An empty output directory is an error with a diagnostic: it once made
 * "/" + file, writing into the root directory. */
Test(emit, empty_output_directory_is_an_error)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/ir/block.tile");
    cr_expect_eq(tilec_module_emit(ctx, m, "c", &(tilec_emit_options){.dir = "", .plan = 1}, tilec_sink_file(stdout)),
                 TILEC_ERR_ARG);
    cr_assert_eq(tilec_ctx_error_count(ctx), 1);
    cr_expect_str_eq(tilec_ctx_diag(ctx, 0)->message,
                     "the output directory is an empty string (use \".\" for the current directory)");
    struct stat st;
    cr_expect_neq(stat("/block.c", &st), 0, "wrote /block.c");
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

Test(emit, plugin_from_the_command)
{
    char *out;
    cr_expect_eq(sh(&out, "%s tests/golden/ir/block.tile --plugin %s --emit demo", TILEC_BIN, PLUGIN_DEMO), 0);
    cr_expect_str_eq(out, block_demo);
    free(out);
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    cr_expect_eq(sh(&out, "%s tests/golden/ir/block.tile --plugin %s --emit demo -o %s", TILEC_BIN, PLUGIN_DEMO, dir), 0);
    cr_expect_str_eq(out, "");
    free(out);
    char *list = list_dir(dir), *got = read_in(dir, "block.demo");
    cr_expect_str_eq(list, "block.demo\n");
    cr_expect_str_eq(got, block_demo);
    free(list);
    free(got);
    /* errors: exit 1, the diagnostic, nothing written */
    struct {
        const char *plugin, *message;
    } bad[] = {
        {"/nonexistent/libnope.so",
         "/nonexistent/libnope.so: error: cannot load the plugin: /nonexistent/libnope.so: cannot open shared object "
         "file: No such file or directory\n"},
        {FAKECUDA, FAKECUDA ": error: the plugin has no tilec_plugin_register function\n"},
        {PLUGIN_FAIL, PLUGIN_FAIL ": error: the plugin's tilec_plugin_register failed\n"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_expect_eq(sh(&out, "%s tests/golden/ir/chain.tile --plugin %s --emit demo -o %s", TILEC_BIN, bad[i].plugin,
                        dir),
                     1, "%s", bad[i].plugin);
        cr_expect_str_eq(out, bad[i].message);
        free(out);
    }
    /* a plugin built against another emitter ABI: both versions, the file */
    cr_expect_eq(sh(&out, "%s tests/golden/ir/chain.tile --plugin %s --emit demo -o %s", TILEC_BIN, PLUGIN_ABI, dir), 1);
    char want[640];
    snprintf(want, sizeof want,
             "%s: error: the plugin registers an emitter built for emitter ABI %u (tilec_emitter of %zu bytes); this "
             "tilec has ABI %u (%zu bytes): rebuild it against this tilec's include/tilec/emitter.h\n",
             PLUGIN_ABI, TILEC_EMITTER_ABI + 1, sizeof(tilec_emitter) + 8, TILEC_EMITTER_ABI, sizeof(tilec_emitter));
    cr_expect_str_eq(out, want);
    free(out);
    list = list_dir(dir);
    cr_expect_str_eq(list, "block.demo\n", "chain.demo written");
    free(list);
    rm_dir(dir);
}

/* All temporary files are written before any rename: a directory where
 * block.c should go fails the emit and block.h is not written either.
 * Written files are readable by everyone (0644), not mkstemp's 0600. */
Test(emit, directory_in_the_way_writes_nothing)
{
    char dir[64], path[128];
    make_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/block.c", dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/golden/ir/block.tile");
    tilec_emit_options o = {.dir = dir, .plan = 1};
    membuf sink = {0};
    cr_expect_eq(tilec_module_emit(ctx, m, "c", &o, membuf_sink(&sink)), TILEC_ERR_IO);
    cr_assert_eq(tilec_ctx_diag_count(ctx), 1);
    cr_expect_str_eq(tilec_ctx_diag(ctx, 0)->message, "cannot write block.c: Is a directory");
    char *names = list_dir(dir);
    cr_expect_str_eq(names, "block.c\n", "only the directory is there: no block.h, no temporary files");
    free(names);
    cr_expect_eq(rmdir(path), 0);
    /* with the directory gone the same emit writes both, mode 0644 */
    tilec_ctx_clear_diags(ctx);
    cr_expect_eq(tilec_module_emit(ctx, m, "c", &o, membuf_sink(&sink)), TILEC_OK);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0644);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    rm_dir(dir);
}

/* ---- --aot ARCH: the kernels compiled at emit time, no .tile source ---- */

Test(emit, aot_embeds_cubins_and_compiles, .timeout = 300)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    char *out;
    cr_expect_eq(sh(&out, "%s tests/golden/ir/chain.tile --emit c --aot sm_90 -o %s", TILEC_BIN, dir), 0, "%s", out);
    free(out);
    char *c = read_in(dir, "chain.c"), *h = read_in(dir, "chain.h");
    char *src = read_file("tests/golden/ir/chain.tile", NULL);
    cr_assert(c && h && src);
    cr_expect_null(strstr(c, "tl_source"), "the .tile source is embedded");
    cr_expect_null(strstr(c, "tilec_parse_string"));
    cr_expect_null(strstr(c, "tilec_program_build"));
    /* no line of the .tile text (kernels, graphs) shows up in the wrapper */
    for (char *line = strtok(src, "\n"); line; line = strtok(NULL, "\n"))
        if (strlen(line) > 20 && strncmp(line, "//", 2))
            cr_expect_null(strstr(c, line), "the source line '%s' is in the wrapper", line);
    cr_expect(strstr(c, "/* the kernels, compiled ahead of time for sm_90 */"));
    cr_expect(strstr(c, "static const unsigned char tl_cubin_"));
    cr_expect(strstr(c, "static const tilec_aot_kernel tl_kernels[] = {"));
    cr_expect(strstr(c, "tilec_program_load(rt, tl_kernels, TL_NKERNELS, &M->prog)"));
    cr_expect(strstr(h, "compiled ahead of time for sm_90"));
    expect_compiles(dir, "chain.c");
    free(c);
    free(h);
    free(src);
    rm_dir(dir);
}

/* An --aot wrapper computes a grid of min(cdiv(n, BLOCK), sms * PER_SM) in
 * C as tilec_kernel_grid does (tilec/iexpr.h: min never fails); the
 * wrapper compiles -Werror clean. Before, min in a grid was an error. */
Test(emit, aot_grid_takes_min, .timeout = 300)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    char *out;
    cr_expect_eq(sh(&out, "%s tests/golden/ok/grid_min_max.tile --emit c --aot sm_90 -o %s", TILEC_BIN, dir), 0, "%s",
                 out);
    free(out);
    char *c = read_in(dir, "run.c");
    cr_assert(c);
    cr_expect(strstr(c, "const int64_t t6 = t2 < t5 ? t2 : t5;"), "%s", c);
    expect_compiles(dir, "run.c");
    free(c);
    rm_dir(dir);
}

/* --aot compiles as --emit cubin does: through the kernel cache, so a
 * second run compiles nothing and writes the same file; --no-cache
 * compiles again, the same bytes. */
Test(emit, aot_compiles_through_the_cache, .timeout = 300)
{
    char dir[64], cache[64], a[96], b[96], c[96];
    make_tmpdir(dir, sizeof dir);
    make_tmpdir(cache, sizeof cache);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(c, sizeof c, "%s/c", dir);
    char *out;
    const char *env = "TILEC_LOGS=cache TILEC_CACHE_DIR";
    cr_expect_eq(sh(&out, "%s=%s %s tests/golden/ir/chain.tile --emit c --aot sm_90 -q -o %s 2>&1", env, cache,
                    TILEC_BIN, a), 0, "%s", out);
    cr_expect(strstr(out, "tilec cache: wrote "), "the cold run stores its bundle:\n%s", out);
    free(out);
    cr_expect_eq(sh(&out, "%s=%s %s tests/golden/ir/chain.tile --emit c --aot sm_90 -q -o %s 2>&1", env, cache,
                    TILEC_BIN, b), 0, "%s", out);
    cr_expect(strstr(out, "tilec cache: record hit "), "the warm run lowers nothing:\n%s", out);
    cr_expect_null(strstr(out, "tilec cache: wrote "), "the warm run compiled:\n%s", out);
    free(out);
    cr_expect_eq(sh(&out, "%s=%s %s tests/golden/ir/chain.tile --emit c --aot sm_90 --no-cache -q -o %s 2>&1", env,
                    cache, TILEC_BIN, c), 0, "%s", out);
    cr_expect_null(strstr(out, "tilec cache: "), "--no-cache used the cache:\n%s", out);
    free(out);
    char *ca = read_in(a, "chain.c"), *cb = read_in(b, "chain.c"), *cc = read_in(c, "chain.c");
    cr_assert(ca && cb && cc);
    cr_expect_str_eq(ca, cb, "the cached run wrote another file");
    cr_expect_str_eq(ca, cc, "--no-cache wrote another file");
    free(ca);
    free(cb);
    free(cc);
    rm_dir(dir);
    rm_dir(cache);
}

/* --aot sm_90a (issue 29 item 6): each variant whose dot loop has an
 * sm_90a twin carries the twin's launch metadata in the table (its
 * __global__ function, block, dynamic shared memory, persistent grid and
 * one tensor map per operand: parameter indices, box, element size and,
 * for the batched product, the batch stride's parameters), the same
 * whether the kernels were compiled cold, found in the cache's records or
 * compiled by the API with no cache; the wrapper compiles with strict
 * warnings and links with libtilec.a. --aot sm_90 has no twin (the twins
 * are compiled for sm_90a only). */
Test(emit, aot_sm_90a_embeds_the_twins, .timeout = 300)
{
    char dir[64], cache[64], a[96], b[96], api[96];
    make_tmpdir(dir, sizeof dir);
    make_tmpdir(cache, sizeof cache);
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(api, sizeof api, "%s/api", dir);
    char *out;
    for (int warm = 0; warm < 2; warm++) {
        cr_expect_eq(
            sh(&out, "TILEC_LOGS=cache TILEC_CACHE_DIR=%s %s tests/aot_gemm.tile --emit c --aot sm_90a -q -o %s 2>&1",
               cache, TILEC_BIN, warm ? b : a),
            0, "%s", out);
        cr_expect(strstr(out, warm ? "tilec cache: record hit " : "tilec cache: wrote "), "%s", out);
        free(out);
    }
    cr_assert_eq(mkdir(api, 0700), 0);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/aot_gemm.tile");
    const char *const keys[] = {"aot"}, *const values[] = {"sm_90a"};
    cr_assert_eq(
        tilec_module_emit(ctx, m, "c",
                          &(tilec_emit_options){.dir = api, .plan = 1, .keys = keys, .values = values, .noptions = 1},
                          tilec_sink_file(stdout)),
        TILEC_OK);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    char *c = read_in(a, "aot_gemm.c"), *cw = read_in(b, "aot_gemm.c"), *capi = read_in(api, "aot_gemm.c");
    cr_assert(c && cw && capi);
    cr_expect_str_eq(c, cw, "the twins differ after a record hit");
    cr_expect_str_eq(c, capi, "the twins differ when the API compiles without a cache");
    /* persistent 2: two N tiles a block, the one-tile twin NAME_1 beside it (lower/wgpair.c) */
    static const char *const want[] = {
        "static char tl_twin_gemm_f16_v0[] = \"gemm_f16_v0_tma\";\n"
        "static const tilec_tma_meta tl_tma_gemm_f16_v0 = {tl_twin_gemm_f16_v0, 384, 230496, 3, 2, {\n"
        "    {0, 3, 5, 5, 128, 64, 2, 0, 0, {TILEC_TMA_NONE, TILEC_TMA_NONE}, 0, 0, 0, 0, 0, 0, 0, 0, 0},\n"
        "    {1, 5, 4, 4, 64, 64, 2, 0, 0, {TILEC_TMA_NONE, TILEC_TMA_NONE}, 0, 0, 0, 0, 0, 0, 0, 0, 0},\n"
        "    {2, 3, 4, 4, 128, 64, 2, 0, 0, {TILEC_TMA_NONE, TILEC_TMA_NONE}, 0, 0, 0, 0, 0, 0, 0, 0, 0}}, 5, 0, 64, 0};\n",
        /* 3-D maps: A's matrices M * K apart (parameters 5 and 3), B's K * N, C's M * N; the batch pid(2) (the
         * grid's z), the constant 1 */
        "static char tl_twin_bmm_f16_v0[] = \"bmm_f16_v0_tma\";\n"
        "static const tilec_tma_meta tl_tma_bmm_f16_v0 = {tl_twin_bmm_f16_v0, 384, 230496, 3, 2, {\n"
        "    {0, 3, 5, 5, 128, 64, 2, 0, 1, {5, 3}, 2, 1, 0, 0, 0, 0, 0, 0, 0},\n"
        "    {1, 5, 4, 4, 64, 64, 2, 0, 1, {4, 5}, 2, 1, 0, 0, 0, 0, 0, 0, 0},\n"
        "    {2, 3, 4, 4, 128, 64, 2, 0, 1, {4, 3}, 2, 1, 0, 0, 0, 0, 0, 0, 0}}, 5, 0, 64, 0};\n",
        "tl_grid_gemm_f16_v0, 0, 0, &tl_tma_gemm_f16_v0},\n",
        "tl_grid_bmm_f16_v0, 0, 0, &tl_tma_bmm_f16_v0},\n",
        "/* the kernels, compiled ahead of time for sm_90a */",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_expect(strstr(c, want[i]), "the wrapper lacks\n%s", want[i]);
    expect_compiles(a, "aot_gemm.c");
    /* and links: the wrapper with a caller, against the static library */
    write_in(a, "main.c",
             "#include \"aot_gemm.h\"\n"
             "int main(void)\n{\n    aot_gemm_module *m = NULL;\n    char err[256];\n"
             "    if (!aot_gemm_load(NULL, &m, err, sizeof err))\n        aot_gemm_unload(m);\n    return 0;\n}\n");
    const char *cc = getenv("CC");
    cr_expect_eq(sh(&out,
                    "%s -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Wshadow -Werror %s -Iinclude -I%s -o %s/run "
                    "%s/aot_gemm.c %s/main.c %s/lib/libtilec.a -ldl -lpthread -lm",
                    cc && *cc ? cc : "cc", TILEC_SANFLAGS, a, a, a, a, TILEC_BUILD),
                 0, "the wrapper does not link:\n%.2000s", out); /* bounded: criterion's channel stalls on a huge message */
    free(out);
    free(c);
    free(cw);
    free(capi);
    /* sm_80,sm_90a: a table per architecture, the twins in sm_90a's only */
    cr_expect_eq(sh(&out, "TILEC_CACHE_DIR=%s %s tests/aot_gemm.tile --emit c --aot sm_80,sm_90a -q -o %s 2>&1", cache,
                    TILEC_BIN, b),
                 0, "%s", out);
    free(out);
    c = read_in(b, "aot_gemm.c");
    cr_assert(c);
    cr_expect(strstr(c, "/* the kernels, compiled ahead of time for sm_80 */"));
    cr_expect(strstr(c, "tl_grid_gemm_f16_v0_sm_80, 0, 0, NULL},\n"));
    cr_expect(strstr(c, "tl_grid_gemm_f16_v0_sm_90a, 0, 0, &tl_tma_gemm_f16_v0_sm_90a},\n"));
    cr_expect(strstr(c, "tl_grid_bmm_f16_v0_sm_90a, 0, 0, &tl_tma_bmm_f16_v0_sm_90a},\n"));
    cr_expect_null(strstr(c, "tl_tma_gemm_f16_v0_sm_80"));
    cr_expect(strstr(c, "#define TL_NARCHS 2u\nstatic const tilec_aot_table tl_archs[] = {\n"
                        "    {\"sm_80\", tl_kernels_sm_80, TL_NKERNELS_sm_80, NULL, 0u},\n"
                        "    {\"sm_90a\", tl_kernels_sm_90a, TL_NKERNELS_sm_90a, NULL, 0u},\n};\n"));
    free(c);
    expect_compiles(b, "aot_gemm.c");
    /* sm_90: no twin in its CUBINs, none in the table */
    cr_expect_eq(
        sh(&out, "TILEC_CACHE_DIR=%s %s tests/aot_gemm.tile --emit c --aot sm_90 -q -o %s 2>&1", cache, TILEC_BIN, b),
        0, "%s", out);
    free(out);
    c = read_in(b, "aot_gemm.c");
    cr_assert(c);
    cr_expect_null(strstr(c, "tilec_tma_meta"), "an sm_90 wrapper names twins");
    cr_expect(strstr(c, "tl_grid_gemm_f16_v0, 0, 0, NULL},\n"));
    free(c);
    rm_dir(dir);
    rm_dir(cache);
}

/* The attention twin's maps in the table (tests/aot_attn.tile): columns
 * and row stride the constant 64 (TILEC_TMA_CONST), rows parameter S (4),
 * the head pid(1) times S * 64; then the key loop's trips as the launch
 * weighs them (kbound 4 = S, kfrom 0, kper 64 = BN: lower/wgattn.c
 * wga_trips) and no epilogue read (one_tma 0); the wrapper compiles. */
Test(emit, aot_attention_twin_s_constant_extents, .timeout = 300)
{
    char dir[64], cache[64];
    make_tmpdir(dir, sizeof dir);
    make_tmpdir(cache, sizeof cache);
    char *out;
    cr_expect_eq(sh(&out, "TILEC_CACHE_DIR=%s %s tests/aot_attn.tile --emit c --aot sm_90a -q -o %s 2>&1", cache,
                    TILEC_BIN, dir),
                 0, "%s", out);
    free(out);
    char *c = read_in(dir, "aot_attn.c");
    cr_assert(c);
    static const char want[] =
        "    {1, 4, TILEC_TMA_CONST | 64u, TILEC_TMA_CONST | 64u, 64, 64, 2, 0, 1, {4, TILEC_TMA_NONE}, 1, 64, 0, 0, 0, 0, 0, 0, 0},\n"
        "    {2, 4, TILEC_TMA_CONST | 64u, TILEC_TMA_CONST | 64u, 64, 64, 2, 0, 1, {4, TILEC_TMA_NONE}, 1, 64, 0, 0, 0, 0, 0, 0, 0}}, 4, 0, "
        "64, 0};\n";
    cr_expect(strstr(c, want), "the wrapper lacks\n%s", want);
    free(c);
    expect_compiles(dir, "aot_attn.c");
    rm_dir(dir);
    rm_dir(cache);
}

Test(emit, aot_bad_arch_writes_nothing)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    const char *bad[] = {"sm_9", "90", "compute_90", "sm_90x", "sm_"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *out;
        cr_expect_eq(sh(&out, "%s tests/golden/ir/chain.tile --emit c --aot %s -o %s 2>&1", TILEC_BIN, bad[i], dir), 2);
        char want[128]; /* a usage error, before anything is read (tests/test_cli.c) */
        snprintf(want, sizeof want, "tilec: error: unknown --aot '%s' (NVRTC ", bad[i]);
        cr_expect(strstr(out, want), "no '%s' in:\n%s", want, out);
        free(out);
        char *names = list_dir(dir);
        cr_expect_str_eq(names, "", "--aot %s wrote files", bad[i]);
        free(names);
    }
    /* lists: each item checked by the command (an empty one is unknown), a
     * repeat by the emitter; nothing written either way */
    const char *lists[][2] = {{"sm_80,sm_9", "unknown --aot 'sm_9'"},
                              {"sm_80,", "unknown --aot ''"},
                              {"sm_90a,sm_90a", "--aot: 'sm_90a,sm_90a' is not a GPU architecture or a list of them"}};
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++) {
        char *out;
        int st = sh(&out, "%s tests/golden/ir/chain.tile --emit c --aot %s -o %s 2>&1", TILEC_BIN, lists[i][0], dir);
        cr_expect(st == 1 || st == 2, "--aot %s: exit %d", lists[i][0], st);
        cr_expect(strstr(out, lists[i][1]), "no '%s' in:\n%s", lists[i][1], out);
        free(out);
        char *names = list_dir(dir);
        cr_expect_str_eq(names, "", "--aot %s wrote files", lists[i][0]);
        free(names);
    }
    rm_dir(dir);
}

Test(emit, aot_needs_emit_c)
{
    const char *cmds[] = {"--emit py --aot sm_90 -o /tmp/tilec_aot_never", "--emit ir --aot sm_90",
                          "--aot sm_90", "--emit c -o /tmp/tilec_aot_never --aot"};
    for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
        char *out;
        cr_expect_eq(sh(&out, "%s tests/golden/ir/chain.tile %s 2>&1", TILEC_BIN, cmds[i]), 2, "%s", cmds[i]);
        cr_expect(strstr(out, i < 3 ? "--aot needs --emit c" : "option '--aot' needs an argument"), "%s: %s", cmds[i], out);
        free(out);
    }
    struct stat st;
    cr_expect_neq(stat("/tmp/tilec_aot_never", &st), 0, "a usage error created the output directory");
}
