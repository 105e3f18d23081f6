/* test_golden.c: golden files. tests/golden/ok/X.tile must check cleanly
 * and dump exactly X.ast; tests/golden/bad/X.tile must fail with exactly
 * the diagnostics of X.err (as `tilec X.tile --check` prints them). Every
 * example must check cleanly. Regenerate with `make golden` and review. */
#include <criterion/criterion.h>

#include "cases.h"
#include "helpers.h"
#include "tilec/emitter.h"
#include "tilec/lower.h"


static char *sibling(const char *path, const char *ext)
{
    size_t n = strlen(path) - strlen(".tile");
    char *s = malloc(n + strlen(ext) + 1);
    memcpy(s, path, n);
    strcpy(s + n, ext);
    return s;
}

ParameterizedTestParameters(golden, ok) { return cases_of("tests/golden/ok/*.tile"); }
ParameterizedTest(gcase *c, golden, ok)
{
    char *want_path = sibling(c->path, ".ast");
    char *want = read_file(want_path, NULL);
    cr_assert(want, "missing %s", want_path);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_file(ctx, c->path, &m);
    membuf diags = {0};
    tilec_ctx_render_diags(ctx, membuf_sink(&diags));
    cr_assert_eq(st, TILEC_OK, "%s does not check:\n%s", c->path, diags.s ? diags.s : "");
    membuf got = {0};
    cr_assert_eq(tilec_module_dump_ast(m, membuf_sink(&got)), TILEC_OK);
    cr_expect_str_eq(got.s ? got.s : "", want, "%s: the dump differs from %s", c->path, want_path);
    free(got.s);
    free(diags.s);
    free(want);
    free(want_path);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

ParameterizedTestParameters(golden, bad) { return cases_of("tests/golden/bad/*.tile"); }
ParameterizedTest(gcase *c, golden, bad)
{
    char *want_path = sibling(c->path, ".err");
    char *want = read_file(want_path, NULL);
    cr_assert(want, "missing %s", want_path);
    cr_assert(strstr(want, ": error: "), "%s holds no error", want_path);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_file(ctx, c->path, &m);
    membuf got = {0};
    tilec_ctx_render_diags(ctx, membuf_sink(&got));
    cr_expect_eq(st, TILEC_ERR_INPUT, "%s: status %d", c->path, st);
    cr_expect_null(m);
    cr_expect_gt(tilec_ctx_error_count(ctx), 0);
    cr_expect_str_eq(got.s ? got.s : "", want, "%s: diagnostics differ from %s", c->path, want_path);
    free(got.s);
    free(want);
    free(want_path);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

ParameterizedTestParameters(golden, examples) { return cases_of("examples/*.tile"); }
/* Parse path, which must check with no diagnostic at all. */
static tilec_module *parse_clean(tilec_ctx *ctx, const char *path)
{
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_file(ctx, path, &m);
    membuf diags = {0};
    tilec_ctx_render_diags(ctx, membuf_sink(&diags));
    cr_expect_eq(st, TILEC_OK, "%s:\n%s", path, diags.s ? diags.s : "");
    cr_expect_eq(tilec_ctx_diag_count(ctx), 0, "%s:\n%s", path, diags.s ? diags.s : "");
    free(diags.s);
    return m;
}

ParameterizedTest(gcase *c, golden, examples)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module_free(parse_clean(ctx, c->path));
    tilec_ctx_free(ctx);
}

/* What `emit` writes for example `path` must be exactly
 * tests/golden/DIR/NAME.EXT. */
static void expect_golden_emit(const char *path, const char *dir, const char *ext,
                               tilec_status (*emit)(tilec_ctx *, const tilec_module *, tilec_sink))
{
    const char *base = strrchr(path, '/') + 1;
    char want_path[300];
    snprintf(want_path, sizeof want_path, "tests/golden/%s/%.*s.%s", dir, (int)(strlen(base) - 5), base, ext);
    char *want = read_file(want_path, NULL);
    cr_assert(want, "missing %s", want_path);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, path, &m), TILEC_OK);
    membuf got = {0};
    cr_assert_eq(emit(ctx, m, membuf_sink(&got)), TILEC_OK);
    cr_expect_str_eq(got.s, want, "%s: the output differs from %s", path, want_path);
    cr_expect_eq(emit(ctx, NULL, membuf_sink(&got)), TILEC_ERR_ARG);
    free(got.s);
    free(want);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* The lines of `tilec --emit cuda` for path that keep() keeps, without
 * their indentation, must be exactly its sibling file with extension ext. */
static void expect_cuda_lines(const char *path, const char *ext, int (*keep)(const char *line))
{
    char *want_path = sibling(path, ext);
    char *want = read_file(want_path, NULL);
    cr_assert(want, "missing %s", want_path);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, path, &m), TILEC_OK);
    membuf cu = {0}, got = {0};
    cr_assert_eq(tilec_module_emit_cuda(ctx, m, membuf_sink(&cu)), TILEC_OK);
    for (char *line = cu.s, *end; line && *line; line = end + 1) {
        end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        char *l = strndup(line, (size_t)(end - line));
        const char *t = l + strspn(l, " ");
        if (keep(l)) {
            membuf_write(&got, t, strlen(t));
            membuf_write(&got, "\n", 1);
        }
        free(l);
        if (!*end)
            break;
    }
    cr_expect_str_eq(got.s ? got.s : "", want, "%s: the lines differ from %s", path, want_path);
    free(got.s);
    free(cu.s);
    free(want);
    free(want_path);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

static int index_line(const char *l)
{
    return !strncmp(l + strspn(l, " "), "/* indexing:", 12) ||
           (strstr(l, "long long") && !strstr(l, "(unsigned long long)"));
}

/* The width of index arithmetic (lower/index64.c): tests/golden/index/X.idx
 * holds the `indexing:` comment of each kernel variant and every line of
 * the CUDA C that declares or converts to a 64-bit integer. */
ParameterizedTestParameters(golden, index) { return cases_of("tests/golden/index/*.tile"); }
ParameterizedTest(gcase *c, golden, index) { expect_cuda_lines(c->path, ".idx", index_line); }

static int axis_line(const char *l)
{
    return strstr(l, " along axis ") || strstr(l, "blockIdx.") || strstr(l, "gridDim.");
}

/* Axes given as constants (hints, module constants, expressions of them):
 * tests/golden/axes/X.axes holds every line of the CUDA C that names the
 * axis a reduction or scan runs along, or the grid axis of pid and
 * num_programs. */
ParameterizedTestParameters(golden, axes) { return cases_of("tests/golden/axes/*.tile"); }
ParameterizedTest(gcase *c, golden, axes) { expect_cuda_lines(c->path, ".axes", axis_line); }

static int hoist_line(const char *l)
{
    for (const char *p = strstr(l, "tl_h"); p; p = strstr(p + 4, "tl_h"))
        if (p[4] >= '0' && p[4] <= '9')
            return 1;
    return 0;
}

/* The loop-invariant parts of pipelined copies (lower/hoist.c):
 * tests/golden/hoist/X.hoist holds every line of the CUDA C that declares,
 * fills or reads a kept per-chunk register. */
ParameterizedTestParameters(golden, hoist) { return cases_of("tests/golden/hoist/*.tile"); }
ParameterizedTest(gcase *c, golden, hoist) { expect_cuda_lines(c->path, ".hoist", hoist_line); }

static int split_line(const char *l)
{
    static const char *const keys[] = {"split", "tl_slice", "tl_steps", "tl_per", "tl_tile", "tl_last", "tl_seen",
                                       "tl_all", "tl_mine", "blockIdx.z", "gridDim.z", "__threadfence"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strstr(l, keys[i]))
            return 1;
    return 0;
}

/* Split-K (lower/splitk.c): tests/golden/split/X.split holds every line of
 * the CUDA C that names the split: the hidden parameters, the slice, its
 * bounds, the partials, the counter and the sum in slice order. */
ParameterizedTestParameters(golden, split) { return cases_of("tests/golden/split/*.tile"); }
ParameterizedTest(gcase *c, golden, split) { expect_cuda_lines(c->path, ".split", split_line); }

/* The CUDA C of every example is golden too (tests/golden/cuda/X.cu):
 * a change to the lowering shows up as a reviewed diff. */
ParameterizedTestParameters(golden, cuda) { return cases_of("examples/*.tile"); }
ParameterizedTest(gcase *c, golden, cuda) { expect_golden_emit(c->path, "cuda", "cu", tilec_module_emit_cuda); }

/* The layout report of every example is golden (tests/golden/layouts/X.layouts):
 * which layout each tile takes, the conversions through shared memory and
 * the __syncthreads per loop iteration (lower/layplan.c). */
ParameterizedTestParameters(golden, layouts) { return cases_of("examples/*.tile"); }
ParameterizedTest(gcase *c, golden, layouts)
{
    expect_golden_emit(c->path, "layouts", "layouts", tilec_module_emit_layouts);
}

/* The tuning pass (lower/tune.c, docs/tuning.md): tests/golden/tune/X.tune
 * is exactly `tilec X.tile --emit tune`: every configuration pruned with its
 * reason, or kept (as which variant) or not, with its rank and estimate per
 * shape class. */
static tilec_status emit_tune(tilec_ctx *ctx, const tilec_module *m, tilec_sink sink)
{
    (void)ctx;
    return tilec_module_emit_tune(m, sink);
}
ParameterizedTestParameters(golden, tune) { return cases_of("tests/golden/tune/*.tile"); }
ParameterizedTest(gcase *c, golden, tune) { expect_golden_emit(c->path, "tune", "tune", emit_tune); }

/* tests/docuser: kernels and graphs written from the docs alone (tensor
 * lists, hint-less kernels on the default spaces, a graph over 4 unrolled
 * chunks, generic kernels). Each checks with no diagnostic, its layout report
 * (which carries each dot loop's path: wgmma + TMA for the hint-less GEMM,
 * whose masks are written (rm < M)[:, None] & (rk < K)[None, :]) is exactly
 * tests/golden/docuser/X.layouts, and its graphs emit C and Python. */
static int count_output(void *user, const char *file, const char *data, size_t len)
{
    (void)file;
    (void)data;
    *(size_t *)user += len;
    return 0;
}
ParameterizedTestParameters(golden, docuser) { return cases_of("tests/docuser/*.tile"); }
ParameterizedTest(gcase *c, golden, docuser)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse_clean(ctx, c->path);
    cr_assert(m, "%s does not check", c->path);
    membuf cu = {0};
    cr_expect_eq(tilec_module_emit_cuda(ctx, m, membuf_sink(&cu)), TILEC_OK, "%s", c->path);
    for (size_t i = 0; i < tilec_module_graph_count(m); i++)
        for (int e = 0; e < 2; e++) {
            size_t bytes = 0;
            tilec_emit_options o = {.plan = 1};
            cr_expect_eq(tilec_module_emit_outputs(ctx, m, e ? "py" : "c", &o, count_output, &bytes), TILEC_OK, "%s", c->path);
            cr_expect_gt(bytes, 0);
        }
    free(cu.s);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    expect_golden_emit(c->path, "docuser", "layouts", tilec_module_emit_layouts);
}

/* The corpus must stay large enough to cover every error class. */
Test(golden, corpus_size)
{
    glob_t g;
    cr_assert_eq(glob("tests/golden/bad/*.tile", 0, NULL, &g), 0);
    cr_expect_geq(g.gl_pathc, 40, "only %zu bad-input cases", g.gl_pathc);
    globfree(&g);
}
