/* test_emit_py.c: the built-in "py" emitter. It writes exactly
 * tests/golden/py/X/NAME.py for tests/golden/ir/X.tile and
 * examples/e2e.tile (regenerate with `make golden` and review); what it
 * writes compiles (python3 -m py_compile); nothing from the .tile file
 * (doc comments, the file name, extern symbols, the source) can get out
 * of its comment, docstring or string literal. */
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

static struct criterion_test_params py_cases(void) { return cases_of2("tests/golden/ir/*.tile", "examples/e2e.tile"); }






static void expect_compiles(const char *dir, const char *file)
{
    char *out = NULL;
    int rc = sh(&out, "PYTHONDONTWRITEBYTECODE=1 python3 -c 'import ast, sys; ast.parse(open(sys.argv[1], "
                      "\"rb\").read(), sys.argv[1])' '%s/%s' && python3 -m py_compile '%s/%s'",
                dir, file, dir, file);
    cr_expect_eq(rc, 0, "%s does not compile:\n%s", file, out);
    free(out);
}

ParameterizedTestParameters(emit_py, golden) { return py_cases(); }
ParameterizedTest(gcase *c, emit_py, golden)
{
    char gdir[300], dir[64];
    const char *base = strrchr(c->path, '/') + 1;
    snprintf(gdir, sizeof gdir, "tests/golden/py/%.*s", (int)(strlen(base) - 5), base);
    make_tmpdir(dir, sizeof dir);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, c->path);
    tilec_emit_options o = {.dir = dir, .plan = 1};
    membuf sink = {0};
    char errpath[320];
    snprintf(errpath, sizeof errpath, "%s/error.txt", gdir);
    char *want_err = read_file(errpath, NULL);
    if (want_err) { /* a graph the py emitter refuses: its exact diagnostics */
        cr_expect_neq(tilec_module_emit(ctx, m, "py", &o, membuf_sink(&sink)), TILEC_OK, "%s", c->path);
        membuf got = {0};
        tilec_ctx_render_diags(ctx, membuf_sink(&got));
        cr_expect_str_eq(got.s ? got.s : "", want_err, "%s", c->path);
        free(got.s);
        free(want_err);
        free(sink.s);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
        rm_dir(dir);
        return;
    }
    cr_assert_eq(tilec_module_emit(ctx, m, "py", &o, membuf_sink(&sink)), TILEC_OK, "%s", c->path);
    cr_expect_null(sink.s, "with a dir nothing goes to the sink");
    cr_expect_eq(tilec_ctx_diag_count(ctx), 0);
    membuf want_names = {0};
    for (size_t i = 0; i < tilec_module_graph_count(m); i++) {
        char line[300];
        strbuf g; /* the module is named like a parameter (util/mangle.h) */
        sb_init(&g);
        const char *gn = tilec_module_graph(m, i)->name;
        mg_py(&g, gn, strlen(gn));
        snprintf(line, sizeof line, "%s.py\n", sb_str(&g));
        sb_free(&g);
        membuf_write(&want_names, line, strlen(line));
    }
    cr_assert(want_names.s, "%s has no graph", c->path);
    char *got_names = list_dir(dir), *golden_names = list_dir(gdir);
    cr_expect_str_eq(got_names, want_names.s, "%s: files written", c->path);
    cr_expect_str_eq(golden_names, want_names.s, "%s: files (run make golden)", gdir);
    membuf cat = {0};
    for (size_t i = 0; i < tilec_module_graph_count(m); i++) {
        char file[300];
        strbuf g; /* the module is named like a parameter (util/mangle.h) */
        sb_init(&g);
        const char *gn = tilec_module_graph(m, i)->name;
        mg_py(&g, gn, strlen(gn));
        snprintf(file, sizeof file, "%s.py", sb_str(&g));
        sb_free(&g);
        char *got = read_in(dir, file), *want = read_in(gdir, file);
        cr_assert(want, "missing %s/%s (run make golden)", gdir, file);
        cr_assert(got, "not written: %s", file);
        cr_expect_str_eq(got, want, "%s: %s differs from %s/%s", c->path, file, gdir, file);
        membuf_write(&cat, want, strlen(want));
        expect_compiles(dir, file);
        free(got);
        free(want);
    }
    /* without a dir: the same bytes to the sink */
    cr_assert_eq(tilec_module_emit(ctx, m, "py", &(tilec_emit_options){.plan = 1}, membuf_sink(&sink)), TILEC_OK);
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

Test(emit_py, golden_corpus)
{
    glob_t g, t;
    cr_assert_eq(glob("tests/golden/py/*/*.py", 0, NULL, &g), 0);
    cr_assert_eq(glob("tests/golden/ir/*.tile", 0, NULL, &t), 0);
    cr_assert_eq(glob("examples/e2e.tile", GLOB_APPEND, NULL, &t), 0);
    size_t graphs = 0;
    for (size_t i = 0; i < t.gl_pathc; i++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = parse(ctx, t.gl_pathv[i]);
        const char *base = strrchr(t.gl_pathv[i], '/') + 1;
        char err[320];
        snprintf(err, sizeof err, "tests/golden/py/%.*s/error.txt", (int)(strlen(base) - 5), base);
        if (access(err, F_OK) != 0) /* a module the emitter refuses has no .py */
            graphs += tilec_module_graph_count(m);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
    globfree(&t);
    cr_expect_geq(graphs, 5);
    cr_expect_eq(g.gl_pathc, graphs, "%zu graphs, a .py each", graphs);
    globfree(&g);
}

Test(emit_py, is_built_in)
{
    tilec_ctx *ctx = tilec_ctx_new();
    const tilec_emitter *em = tilec_find_emitter(ctx, "py");
    cr_assert(em);
    cr_expect_str_eq(em->name, "py");
    const char *names[8] = {0};
    size_t n = tilec_emitter_names(ctx, names, 8);
    int found = 0;
    for (size_t i = 0; i < n; i++)
        found |= !strcmp(names[i], "py");
    cr_expect(found, "py is in the names of the emitters");
    tilec_ctx_free(ctx);
}

/* Doc comments, a file name and an extern symbol full of quotes,
 * backslashes, triple quotes, comment ends and braces (extern symbols
 * are checked to be plain: letters, digits, '_' and '.'). */
static const char injection[] =
    "/// kernel doc \"\"\" + __import__('os').system('echo INJECTED') + \"\"\" \\ */ '''\n"
    "kernel neg(x: *f32, y: *f32, n: i32) grid (cdiv(n, 128)) hints { warps = 4 } {\n"
    "    let i = pid(0) * 128 + range(128);\n"
    "    store(y + i, -load(x + i, i < n), i < n);\n"
    "}\n"
    "extern ext(x: f32[N]) -> f32[N] = \"my_lib.ext\";\n"
    "/// graph doc \"\"\"\n"
    "/// import os; os.system(\"echo INJECTED\") # \\ \\\" {x} */ ''' \\x00 \\N{BULLET}\n"
    "graph inj(x: f32[N]) -> (z: f32[N]) {\n"
    "    /// step doc \"\"\" \\\n"
    "    /// second line ''' */ INJECTED = 1\n"
    "    /// bytes that are not UTF-8 \377\376, UTF-8 \303\251 and a line separator \342\200\250\n"
    "    let y = empty(f32, [N]);\n"
    "    neg(x, y, N);\n"
    "    let z = ext(y);\n"
    "    return z;\n"
    "}\n";

static const char check_script[] =
    "import ast, sys\n"
    "path, src = sys.argv[1], open(sys.argv[3], 'rb').read()\n"
    "name = open(sys.argv[2], 'rb').read().decode()\n"
    "text = open(path, 'rb').read().decode()\n"
    "tree = ast.parse(text)\n"
    "doc = ast.get_docstring(tree)\n"
    "assert 'import os; os.system(\"echo INJECTED\") # \\\\ \\\\\" {x}' in doc, doc\n"
    "assert 'graph doc \"\"\"' in doc, doc\n"
    "assert name.split(chr(10))[0] in doc, doc\n"
    "values = {}\n"
    "for node in tree.body:\n"
    "    assert not isinstance(node, (ast.Import, ast.ImportFrom)) or \\\n"
    "        [a.name for a in node.names] in (['sys'], ['time'], ['tilec']), ast.dump(node)\n"
    "    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):\n"
    "        values[node.targets[0].id] = node.value.value\n"
    "assert values['TILE_SOURCE'] == src, 'the source does not round-trip'\n"
    "assert values['TILE_FILE'] == name, values['TILE_FILE']\n"
    "steps = [n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == '_STEPS'][0]\n"
    "syms = [e.elts[1].value for e in steps.elts if e.elts[0].value == 'extern']\n"
    "assert syms == ['my_lib.ext'], syms\n"
    "names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}\n"
    "assert 'INJECTED' not in names and '__import__' not in names, names\n"
    "for line in text.splitlines():\n"
    "    s = line.strip()\n"
    "    if 'INJECTED' in s:\n"
    "        assert s.startswith('#') or s.startswith('b\"') or s.startswith('ext.call(') or 'graph doc' in s \\\n"
    "            or s.startswith('import os;') or s.startswith('second line') or 'kernel doc' in s, s\n"
    "print('ok')\n";

Test(emit_py, nothing_gets_out_of_its_literal)
{
    const char *name = "we\"ird\\name\"\"\"\n'''{x}.tile";
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, name, injection, strlen(injection), &m), TILEC_OK, "the source checks");
    tilec_emit_options o = {.dir = dir, .plan = 1};
    cr_assert_eq(tilec_module_emit(ctx, m, "py", &o, (tilec_sink){0}), TILEC_OK);
    expect_compiles(dir, "inj.py");
    write_in(dir, "check.py", check_script);
    write_in(dir, "src.tile", injection);
    write_in(dir, "name.txt", name);
    char *out = NULL;
    int rc = sh(&out, "cd '%s' && python3 check.py inj.py name.txt src.tile", dir);
    cr_expect_eq(rc, 0, "%s", out);
    cr_expect(strstr(out, "ok"), "%s", out);
    free(out);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    rm_dir(dir);
}

/* Names that are Python keywords or the wrapper's own get a '_'; the
 * wrapper's helpers are _NAME_KIND and meet no parameter. */
Test(emit_py, keywords_are_renamed)
{
    static const char src[] = "kernel copy(x: *f32, y: *f32, n: i32) grid (cdiv(n, 128)) hints { warps = 4 } {\n"
                              "    let i = pid(0) * 128 + range(128);\n"
                              "    store(y + i, load(x + i, i < n), i < n);\n"
                              "}\n"
                              "graph kw(lambda: f32[N], pool: f32[N], x_info: f32[N]) -> (pass: f32[N]) {\n"
                              "    let pass = empty(f32, [N]);\n"
                              "    copy(lambda, pass, N);\n"
                              "    copy(pool, pass, N);\n"
                              "    copy(x_info, pass, N);\n"
                              "    return pass;\n"
                              "}\n";
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "kw.tile", src, strlen(src), &m), TILEC_OK, "the source checks");
    cr_assert_eq(tilec_module_emit(ctx, m, "py", &(tilec_emit_options){.dir = dir, .plan = 1}, (tilec_sink){0}),
                 TILEC_OK);
    expect_compiles(dir, "kw.py");
    char *py = read_in(dir, "kw.py");
    cr_assert(py);
    cr_expect(strstr(py, "def call(lambda_, pool_, x_info, *, stream=None):"), "%s", py);
    cr_expect(strstr(py, "    _x_info_info = tilec.tensor_info(x_info)\n"), "%s", py);
    cr_expect(strstr(py, "    return pass_\n"), "%s", py);
    free(py);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    rm_dir(dir);
}
