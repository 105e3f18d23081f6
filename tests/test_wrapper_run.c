/* test_wrapper_run.c: generated C wrappers compiled and RUN on the CPU,
 * against the fake CUDA driver (tests/fake_cuda.c: "device" memory on the
 * host, a scale2 kernel that really writes). A small program (written
 * here) opens the fake driver, makes the input, calls NAME_load and
 * NAME_run, and prints what NAME_run returned with the launches and
 * allocations the driver saw. The graph's output of 4*N^4 bytes wraps 64
 * bits at N = 65536: the wrapper must fail with a message naming the
 * graph, the tensor and N before it allocates or launches anything. A
 * second graph's sizes hit the edges of cdiv, / and %: the checker, the
 * grid, memory planning and the generated C and Python must agree. */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs_helpers.h"
#include "mk_tile_text.h"
#include "mm_tile.h"
#include "tilec/emitter.h"
#include "tilec/wir.h"
#include "util/strbuf.h"

#ifndef TILEC_BUILD
#define TILEC_BUILD "build"
#endif
#ifndef TILEC_SANFLAGS
#define TILEC_SANFLAGS "" /* the sanitizers libtilec.a was built with: the runner links them too */
#endif
#define FAKECUDA TILEC_BUILD "/tests/libfakecuda.so"

/* scale2 is a kernel the fake driver runs: y[i] = 2 * x[i], i < n */
static const char big_tile[] = "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {\n"
                               "    let i = pid(0) * 256 + range(256);\n"
                               "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
                               "}\n"
                               "graph big(x: f32[N]) -> (y: f32[N, N, N, N]) {\n"
                               "    let y = empty(f32, [N, N, N, N]);\n"
                               "    scale2(x, y, N);\n"
                               "    return y;\n"
                               "}\n";

/* A runner's includes and main's start: argc checked (argv[1] the fake
 * driver), the runtime opened on it as rt and its state as f. */
#define FAKE_RUNNER_MAIN(header, argc)                                                                            \
    "#include <dlfcn.h>\n#include <stdio.h>\n#include <stdlib.h>\n"                                              \
    "#include \"" header "\"\n#include \"fake_cuda.h\"\n"                                                         \
    "int main(int argc, char **argv)\n{\n"                                                                         \
    "    if (argc != " argc ")\n        return 2;\n"                                                             \
    "    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);\n"                                                      \
    "    fake_cuda_state *(*get)(void) = h ? (fake_cuda_state * (*)(void)) dlsym(h, \"fake_cuda_state_get\") : NULL;\n" \
    "    tilec_rt *rt = NULL;\n"                                                                                    \
    "    if (!get || tilec_rt_open_driver(argv[1], 0, &rt) != TILEC_RT_OK)\n        return 3;\n"                   \
    "    fake_cuda_state *f = get();\n"

/* main(driver, N): "rc=R launches=L allocs=A err=E" */
static const char runner[] =
    FAKE_RUNNER_MAIN("big.h", "3")
    "    int64_t n = strtoll(argv[2], NULL, 10);\n"
    "    char err[512] = \"\";\n"
    "    big_module *m = NULL;\n"
    "    if (big_load(rt, &m, err, sizeof err)) {\n        printf(\"load: %s\\n\", err);\n        tilec_rt_close(rt);\n        return 4;\n    }\n"
    "    tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {n}, .strides = {1}}, y = {0};\n"
    "    if (tilec_rt_malloc(rt, (size_t)n * 4, &x.data) != TILEC_RT_OK)\n        return 5;\n"
    "    int launches = f->launches, allocs = f->live_allocs;\n"
    "    int rc = big_run(m, &x, &y, err, sizeof err);\n"
    "    printf(\"rc=%d launches=%d allocs=%d err=%s\\n\", rc, f->launches - launches, f->live_allocs - allocs, err);\n"
    "    if (!rc)\n        tilec_rt_free(rt, y.data);\n"
    "    tilec_rt_free(rt, x.data);\n"
    "    big_unload(m);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

/* dir/run: dir/NAME.c (an emitted wrapper; `name` may list several,
 * space-separated) and dir/main.c, linked with libtilec.a. */
static void link_runner(const char *dir, const char *name)
{
    const char *cc = getenv("CC");
    char *out = NULL, files[512] = "";
    size_t n = 0;
    for (const char *p = name; *p && n < sizeof files;) {
        size_t k = strcspn(p, " ");
        n += (size_t)snprintf(files + n, sizeof files - n, "%s/%.*s.c ", dir, (int)k, p);
        p += k + (p[k] == ' ');
    }
    cr_assert_lt(n, sizeof files);
    int st = sh(&out,
                "%s -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror %s -Iinclude -Itests -I%s "
                "-o %s/run %s%s/main.c %s/lib/libtilec.a -ldl -lpthread -lm",
                cc && *cc ? cc : "cc", TILEC_SANFLAGS, dir, dir, files, dir, TILEC_BUILD);
    cr_assert_eq(st, 0, "the wrapper does not build:\n%s", out);
    free(out);
}

/* The C wrapper of tile (parsed as big.tile) into dir. */
static void emit_c_of(const char *dir, const char *tile)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "big.tile", tile, strlen(tile), &m), TILEC_OK);
    cr_assert_eq(tilec_module_emit(ctx, m, "c", &(tilec_emit_options){.dir = dir, .plan = 1}, tilec_sink_file(stdout)),
                 TILEC_OK);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* dir/run: NAME.c (emitted from tile; `name` may list several, space-separated)
 * and the runner, linked with libtilec.a. */
static void build_runner(const char *dir, const char *tile, const char *name, const char *main_c)
{
    emit_c_of(dir, tile);
    write_in(dir, "main.c", main_c);
    link_runner(dir, name);
}

/* A fresh temporary dir (its name in dir[n]) with the runner built in it
 * (build_runner). */
static void new_runner(char *dir, size_t n, const char *tile, const char *name, const char *main_c)
{
    make_tmpdir(dir, n);
    build_runner(dir, tile, name, main_c);
}

/* the same for a .tile file of the tree, in a new directory dir[64] */
static void build_file_runner(char *dir, const char *path, const char *name, const char *main_c)
{
    make_tmpdir(dir, 64);
    char *tile = read_file(path, NULL);
    cr_assert(tile, "cannot read %s", path);
    build_runner(dir, tile, name, main_c);
    free(tile);
}

/* A C++ caller includes the generated header and links with the C object:
 * the header gives its functions C linkage (extern "C"), so the C++ names
 * are not mangled. Without it the link fails: undefined big_unload(...). */
Test(wrapper_run, cxx_caller_links_with_the_c_wrapper)
{
    char dir[64], *out = NULL;
    make_tmpdir(dir, sizeof dir);
    if (sh(&out, "command -v g++") != 0) {
        free(out);
        rm_dir(dir);
        cr_skip_test("no g++ here");
    }
    free(out);
    emit_c_of(dir, big_tile);
    write_in(dir, "main.cpp",
             "#include \"big.h\"\n#include <cstdio>\n"
             "int main()\n{\n    big_module *m = nullptr;\n    big_unload(m);\n"
             "    std::printf(\"ok %d\\n\", m == nullptr);\n    return 0;\n}\n");
    const char *cc = getenv("CC");
    int st = sh(&out,
                "%s -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror %s -Iinclude -c -o %s/big.o %s/big.c && "
                "g++ -std=c++17 -Wall -Wextra -Werror %s -Iinclude -I%s -o %s/run %s/main.cpp %s/big.o "
                "%s/lib/libtilec.a -ldl -lpthread -lm && %s/run",
                cc && *cc ? cc : "cc", TILEC_SANFLAGS, dir, dir, TILEC_SANFLAGS, dir, dir, dir, dir, TILEC_BUILD, dir);
    cr_expect_eq(st, 0, "a C++ caller does not build or run:\n%s", out);
    cr_expect(strstr(out, "ok "), "%s", out);
    free(out);
    rm_dir(dir);
}

/* dir/run on the fake driver with the arguments fmt formats (the kernel
 * cache in dir): its output; the runner must exit 0. Kernels compile on
 * the build's tilec as the worker process (as where tilec is installed
 * beside libtilec), not on a fork of the runner: a forked copy of this
 * multi-threaded ASan process once hung in a full `make asan` run. */
static char *run_args(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *run_args(const char *dir, const char *fmt, ...)
{
    char args[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    cr_assert(n >= 0 && (size_t)n < sizeof args, "the runner's arguments fit");
    char *out = NULL;
    int st = sh(&out, "TILEC_CACHE_DIR=%s/cache TILEC_COMPILE_WORKER=%s/bin/tilec %s/run %s %s 2>&1", dir, TILEC_BUILD,
                dir, FAKECUDA, args);
    cr_assert_eq(st, 0, "the runner failed (%d):\n%s", st, out);
    return out;
}

/* The runner's line for N (the kernel cache in dir). */
static char *run(const char *dir, long long n) { return run_args(dir, "%lld", n); }

Test(wrapper_run, byte_count_overflow_is_an_error_before_any_allocation_or_launch, .timeout = 120)
{
    char dir[64];
    new_runner(dir, sizeof dir, big_tile, "big", runner);
    /* the harness runs the graph for real: small sizes allocate and launch */
    char *out = run(dir, 8);
    cr_expect_str_eq(out, "rc=0 launches=1 allocs=1 err=\n"); /* y, handed to the caller */
    free(out);
    /* 4 * 65536^4 = 2^66 bytes: wrapped to 0, a 1-byte buffer and a kernel writing past it */
    out = run(dir, 65536);
    cr_expect_str_eq(out, "rc=1 launches=0 allocs=0 err=big: tensor y (f32[N, N, N, N]) needs more than 2^63 - 1 "
                          "bytes, with N=65536\n");
    free(out);
    rm_dir(dir);
}

/* ---- one integer arithmetic (docs/language.md 7.7): the checker, the
 * lowering's grid, memory planning and the generated C and Python agree on
 * sizes at the edges of cdiv, / and % (negative and zero dividends) ---- */

static const char agree_tile[] =
    "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4, A = cdiv(-7, 2), B = -7 / 2, "
    "C = -7 % 2, D = cdiv(0, 5), E = cdiv(-1, 128) } {\n"
    "    let i = pid(0) * 256 + range(256);\n"
    "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
    "}\n"
    "graph agree(x: f32[N], big: f32[M]) -> (y: f32[cdiv(N - 600, 256) + 4], z: f32[(N - 600) % 7 + 7],\n"
    "                                        w: f32[(N - 600) / 256 + cdiv(-7, 2) + 10]) {\n"
    "    let y = empty(f32, [cdiv(N - 600, 256) + 4]);\n"
    "    let z = empty(f32, [(N - 600) % 7 + 7]);\n"
    "    let w = empty(f32, [(N - 600) / 256 + cdiv(-7, 2) + 10]);\n"
    "    scale2(big, y, cdiv(N - 600, 256) + 4);\n"
    "    return y, z, w;\n"
    "}\n";

/* main(driver, N...): per N, "N: y z w grid" (the output sizes and the
 * grid of the launch), or "N: rc=R err=E" */
static const char agree_runner[] =
    "#include <dlfcn.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include \"agree.h\"\n#include \"fake_cuda.h\"\n"
    "int main(int argc, char **argv)\n{\n"
    "    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);\n"
    "    fake_cuda_state *(*get)(void) = h ? (fake_cuda_state * (*)(void)) dlsym(h, \"fake_cuda_state_get\") : NULL;\n"
    "    tilec_rt *rt = NULL;\n"
    "    if (!get || tilec_rt_open_driver(argv[1], 0, &rt) != TILEC_RT_OK)\n        return 3;\n"
    "    char err[512] = \"\";\n"
    "    agree_module *m = NULL;\n"
    "    if (agree_load(rt, &m, err, sizeof err)) {\n        printf(\"load: %s\\n\", err);\n        tilec_rt_close(rt);\n        return 4;\n    }\n"
    "    tilec_tensor big = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {1024}, .strides = {1}};\n"
    "    if (tilec_rt_malloc(rt, 4096, &big.data) != TILEC_RT_OK)\n        return 5;\n"
    "    for (int i = 2; i < argc; i++) {\n"
    "        int64_t n = strtoll(argv[i], NULL, 10);\n"
    "        tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {n}, .strides = {1}}, y = {0}, z = {0}, w = {0};\n"
    "        if (tilec_rt_malloc(rt, (size_t)n * 4, &x.data) != TILEC_RT_OK)\n            return 5;\n"
    "        int rc = agree_run(m, &x, &big, &y, &z, &w, err, sizeof err);\n"
    "        if (rc)\n            printf(\"%lld: rc=%d err=%s\\n\", (long long)n, rc, err);\n"
    "        else\n            printf(\"%lld: %lld %lld %lld %u\\n\", (long long)n, (long long)y.sizes[0],\n"
    "                   (long long)z.sizes[0], (long long)w.sizes[0], get()->grid[0]);\n"
    "        if (!rc) {\n            tilec_rt_free(rt, y.data);\n            tilec_rt_free(rt, z.data);\n"
    "            tilec_rt_free(rt, w.data);\n        }\n"
    "        tilec_rt_free(rt, x.data);\n"
    "    }\n"
    "    tilec_rt_free(rt, big.data);\n    agree_unload(m);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

/* The generated Python module, run without a GPU (tests/python/test_cpu.py's
 * fakes): per N, "N: y z w n" (the output sizes and the launch's n). */
static const char agree_py[] =
    "import importlib.util, sys\n"
    "sys.path.insert(0, 'tests/python')\n"
    "from test_cpu import _Fake, _slots, _without_gpu\n"
    "spec = importlib.util.spec_from_file_location('agree', sys.argv[1] + '/agree.py')\n"
    "mod = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(mod)\n"
    "g = _without_gpu(mod)\n"
    "for n in map(int, sys.argv[2:]):\n"
    "    y, z, w = mod.call(_Fake((n,)), _Fake((1024,)))\n"
    "    a = mod._STEPS[-1][3][2]  # the launch's n: a constant or a slot\n"
    "    v = _slots(mod, g.runs[-1])[a] if isinstance(a, str) else a\n"
    "    print(f'{n}: {y[1][0]} {z[1][0]} {w[1][0]} {v}')\n";

/* What the rules give for N, by hand (docs/language.md 7.7). */
static const struct {
    long long n, y, z, w;
} agree_cases[] = {
    {600, 4, 7, 7},  /* cdiv(0, 256) = 0, 0 % 7 = 0, 0 / 256 = 0; cdiv(-7, 2) = -3 */
    {601, 5, 8, 7},  /* cdiv(1, 256) = 1 */
    {856, 5, 11, 8}, /* cdiv(256, 256) = 1, 256 % 7 = 4, 256 / 256 = 1 */
    {857, 6, 12, 8}, /* cdiv(257, 256) = 2, 257 % 7 = 5 */
    {344, 3, 3, 6},  /* cdiv(-256, 256) = -1, -256 % 7 = -4, -256 / 256 = -1 */
    {343, 3, 2, 6},  /* cdiv(-257, 256) = -1 (the ceiling), -257 % 7 = -5, -257 / 256 = -1 (truncated) */
    {1, 2, 3, 5},    /* cdiv(-599, 256) = -2, -599 % 7 = -4, -599 / 256 = -2 */
};

Test(wrapper_run, checker_grid_planner_and_generated_c_and_python_agree_on_integer_edges, .timeout = 180)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "agree.tile", agree_tile, strlen(agree_tile), &m), TILEC_OK);
    /* the checker's constants */
    const tilec_kernel *k = tilec_module_find_kernel(m, "scale2");
    cr_expect_eq(tilec_kernel_hint(k, -1, "A", 0), -3, "cdiv(-7, 2)");
    cr_expect_eq(tilec_kernel_hint(k, -1, "B", 0), -3, "-7 / 2");
    cr_expect_eq(tilec_kernel_hint(k, -1, "C", 0), -1, "-7 % 2");
    cr_expect_eq(tilec_kernel_hint(k, -1, "D", 0), 0, "cdiv(0, 5)");
    cr_expect_eq(tilec_kernel_hint(k, -1, "E", 0), 0, "cdiv(-1, 128)");
    /* memory planning's evaluator: the live peak is y + z + w */
    tilec_wir *w = NULL;
    cr_assert_eq(tilec_wir_lower(ctx, m, tilec_module_find_graph(m, "agree"), &w), TILEC_OK);
    size_t ncases = sizeof agree_cases / sizeof agree_cases[0];
    strbuf ns;
    sb_init(&ns);
    for (size_t i = 0; i < ncases; i++) {
        tilec_wir_size sz[2] = {{"N", agree_cases[i].n}, {"M", 1024}};
        int64_t peak = 0;
        cr_assert_eq(tilec_wir_peak_bytes(ctx, w, TILEC_WIR_PEAK_LIVE, sz, 2, &peak), TILEC_OK);
        cr_expect_eq(peak, 4 * (agree_cases[i].y + agree_cases[i].z + agree_cases[i].w), "planner, N = %lld: %lld",
                     agree_cases[i].n, (long long)peak);
        sb_printf(&ns, " %lld", agree_cases[i].n);
    }
    tilec_wir_free(w);
    /* the generated C, run against the fake driver; the generated Python */
    cr_assert_eq(tilec_module_emit(ctx, m, "c", &(tilec_emit_options){.dir = dir, .plan = 1}, tilec_sink_file(stdout)),
                 TILEC_OK);
    cr_assert_eq(tilec_module_emit(ctx, m, "py", &(tilec_emit_options){.dir = dir, .plan = 1}, tilec_sink_file(stdout)),
                 TILEC_OK);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    write_in(dir, "main.c", agree_runner);
    write_in(dir, "agree_run.py", agree_py);
    link_runner(dir, "agree");
    char *out = NULL;
    int st;
    strbuf want_c, want_py;
    sb_init(&want_c);
    sb_init(&want_py);
    for (size_t i = 0; i < ncases; i++) { /* the grid: cdiv(y, 256) = 1; the launch's n: y */
        sb_printf(&want_c, "%lld: %lld %lld %lld 1\n", agree_cases[i].n, agree_cases[i].y, agree_cases[i].z,
                  agree_cases[i].w);
        sb_printf(&want_py, "%lld: %lld %lld %lld %lld\n", agree_cases[i].n, agree_cases[i].y, agree_cases[i].z,
                  agree_cases[i].w, agree_cases[i].y);
    }
    st = sh(&out, "TILEC_CACHE_DIR=%s/cache TILEC_COMPILE_WORKER=%s/bin/tilec %s/run %s%s 2>&1", dir, TILEC_BUILD, dir,
            FAKECUDA, sb_str(&ns));
    cr_expect_eq(st, 0, "the C runner failed (%d):\n%s", st, out);
    cr_expect_str_eq(out, sb_str(&want_c), "generated C");
    free(out);
    st = sh(&out, "python3 %s/agree_run.py %s%s 2>&1", dir, dir, sb_str(&ns));
    cr_expect_eq(st, 0, "the Python runner failed (%d):\n%s", st, out);
    cr_expect_str_eq(out, sb_str(&want_py), "generated Python");
    free(out);
    sb_free(&ns);
    sb_free(&want_c);
    sb_free(&want_py);
    rm_dir(dir);
}

/* Issue 21 item 2: zeros, ones, full and the *_like forms in a graph,
 * filled by the wrapper (memset, or an element and doubling copies for an
 * 8-byte pattern) in stream order before the kernel that reads them. */
static const char fills_tile[] = "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {\n"
                                 "    let i = pid(0) * 256 + range(256);\n"
                                 "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
                                 "}\n"
                                 "graph fills(x: f32[N]) -> (y: f32[N], h: f16[N], d: f64[N], b: i8[N], t: bool[N], z: i32[N]) {\n"
                                 "    let a = full_like(x, 1.5);\n"
                                 "    let y = empty_like(x);\n"
                                 "    scale2(a, y, N);\n"
                                 "    let h = full(f16, [N], -2.5);\n"
                                 "    let d = full(f64, [N], 0.1);\n"
                                 "    let b = full(i8, [N], -3);\n"
                                 "    let t = ones(bool, [N]);\n"
                                 "    let z = zeros(i32, [N]);\n"
                                 "    return y, h, d, b, t, z;\n"
                                 "}\n";

/* main(driver, N): each output's bytes in hex, one line each */
static const char fills_runner[] =
    "#include <stdio.h>\n#include <stdlib.h>\n"
    "#include \"fills.h\"\n"
    "int main(int argc, char **argv)\n{\n"
    "    tilec_rt *rt = NULL;\n"
    "    if (argc != 3 || tilec_rt_open_driver(argv[1], 0, &rt) != TILEC_RT_OK)\n        return 3;\n"
    "    int64_t n = strtoll(argv[2], NULL, 10);\n"
    "    char err[512] = \"\";\n"
    "    fills_module *m = NULL;\n"
    "    if (fills_load(rt, &m, err, sizeof err)) {\n        printf(\"load: %s\\n\", err);\n        tilec_rt_close(rt);\n        return 4;\n    }\n"
    "    tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {n}, .strides = {1}}, o[6] = {{0}};\n"
    "    if (tilec_rt_malloc(rt, (size_t)n * 4, &x.data) != TILEC_RT_OK)\n        return 5;\n"
    "    if (fills_run(m, &x, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], err, sizeof err)) {\n"
    "        printf(\"run: %s\\n\", err);\n        return 6;\n    }\n"
    "    static const int es[6] = {4, 2, 8, 1, 1, 4};\n"
    "    for (int i = 0; i < 6; i++) {\n"
    "        unsigned char buf[64];\n"
    "        if (tilec_rt_memcpy_dtoh(rt, buf, o[i].data, (size_t)(n * es[i])) != TILEC_RT_OK)\n            return 7;\n"
    "        for (int j = 0; j < n * es[i]; j++)\n            printf(\"%02x%s\", buf[j], (j + 1) % es[i] ? \"\" : \" \");\n"
    "        printf(\"\\n\");\n"
    "        tilec_rt_free(rt, o[i].data);\n"
    "    }\n"
    "    tilec_rt_free(rt, x.data);\n"
    "    fills_unload(m);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

Test(wrapper_run, filled_tensors_hold_their_value, .timeout = 120)
{
    char dir[64];
    new_runner(dir, sizeof dir, fills_tile, "fills", fills_runner);
    /* 5 elements: the i8, f16 and bool fills end in a part of a 32-bit word */
    char *out = run(dir, 5);
    cr_expect_str_eq(out, "00004040 00004040 00004040 00004040 00004040 \n" /* 2 * 1.5 */
                          "00c1 00c1 00c1 00c1 00c1 \n"                      /* f16 -2.5 */
                          "9a9999999999b93f 9a9999999999b93f 9a9999999999b93f 9a9999999999b93f 9a9999999999b93f \n"
                          "fd fd fd fd fd \n01 01 01 01 01 \n"
                          "00000000 00000000 00000000 00000000 00000000 \n");
    free(out);
    rm_dir(dir);
}

/* Issue 18: the C wrapper's CUDA-graph mode (NAME_set_cuda_graph). A graph
 * of two scale2 launches (y = 4 x): the first call of a shape runs eagerly
 * and is recorded; with its output released the next call of that shape
 * gets the same buffers and replays (one cuGraphLaunch, nothing recorded),
 * with the eager results; an output kept moves the next call's buffers,
 * and another shape, is recorded anew; turning graph mode off runs
 * eagerly; a graph with a fill replays its fill too (a step of the plan,
 * a memset in the graph); a graph with an extern call records the extern's
 * stream work (here a fill) with the launches and replays it without
 * calling the extern again. */
static const char twice_tile[] = "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {\n"
                                 "    let i = pid(0) * 256 + range(256);\n"
                                 "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
                                 "}\n"
                                 "graph twice(x: f32[N]) -> (y: f32[N]) {\n"
                                 "    let t = empty(f32, [N]);\n"
                                 "    scale2(x, t, N);\n"
                                 "    let y = empty(f32, [N]);\n"
                                 "    scale2(t, y, N);\n"
                                 "    return y;\n"
                                 "}\n"
                                 "graph filled(x: f32[N]) -> (y: f32[N]) {\n"
                                 "    let t = full(f32, [N], 0.5);\n"
                                 "    let y = empty(f32, [N]);\n"
                                 "    scale2(t, y, N);\n"
                                 "    return y;\n"
                                 "}\n"
                                 "graph same(x: f32[N]) -> (c: f32[N], y: f32[N]) {\n"
                                 "    let y = empty(f32, [N]);\n"
                                 "    scale2(x, y, N);\n"
                                 "    return x, y;\n"
                                 "}\n"
                                 "extern seven(x: f32[N]) -> f32[N] = \"my.seven\";\n"
                                 "graph sev(x: f32[N]) -> (y: f32[N]) {\n"
                                 "    let t = seven(x);\n"
                                 "    let y = empty(f32, [N]);\n"
                                 "    scale2(t, y, N);\n"
                                 "    return y;\n"
                                 "}\n";

/* main(driver): one line per call: "N: launches captured graph_launches y[0] y[N-1] same|new" */
static const char twice_runner[] =
    "#include <dlfcn.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include \"twice.h\"\n#include \"filled.h\"\n#include \"same.h\"\n#include \"sev.h\"\n#include \"fake_cuda.h\"\n"
    "static tilec_rt *rt;\nstatic twice_module *m;\nstatic fake_cuda_state *f;\nstatic uint64_t last;\n"
    "static uint64_t xs[64];\n"
    "static int sev_calls;\n"
    "/* my.seven: its output filled with 7.0, stream-ordered work only (a graph may capture it) */\n"
    "static int seven(void *u, tilec_rt *r, void *stream, const tilec_tensor *in, uint32_t nin, tilec_tensor *out,\n"
    "                 uint32_t nout, char *err, size_t errlen)\n{\n"
    "    (void)u;\n    (void)in;\n    (void)nin;\n    (void)err;\n    (void)errlen;\n"
    "    sev_calls++;\n"
    "    return nout != 1 || tilec_rt_fill_async(r, out[0].data, 0x40E00000u, 4, (size_t)out[0].sizes[0], stream);\n"
    "}\n"
    "static tilec_tensor call(int64_t n, int keep)\n{\n"
    "    float h[64];\n    char err[512] = \"\";\n"
    "    for (int i = 0; i < n; i++)\n        h[i] = (float)(i + 1);\n"
    "    tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {n}, .strides = {1}}, y = {0};\n"
    "    if (!xs[n] && tilec_rt_malloc(rt, (size_t)n * 4, &xs[n]) != TILEC_RT_OK)\n        exit(5);\n"
    "    x.data = xs[n];\n"
    "    tilec_rt_memcpy_htod(rt, x.data, h, (size_t)n * 4);\n"
    "    int l = f->launches, c = f->captured_launches, g = f->graph_launches;\n"
    "    if (twice_run(m, &x, &y, err, sizeof err)) {\n        printf(\"run: %s\\n\", err);\n        exit(6);\n    }\n"
    "    tilec_rt_memcpy_dtoh(rt, h, y.data, (size_t)n * 4);\n"
    "    printf(\"%lld: %d %d %d %g %g %s\\n\", (long long)n, f->launches - l, f->captured_launches - c,\n"
    "           f->graph_launches - g, (double)h[0], (double)h[n - 1], y.data == last ? \"same\" : \"new\");\n"
    "    last = y.data;\n"
    "    if (!keep)\n        twice_release(m, &y);\n"
    "    return y;\n}\n"
    "int main(int argc, char **argv)\n{\n"
    "    void *dl = argc >= 2 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;\n"
    "    fake_cuda_state *(*get)(void) = dl ? (fake_cuda_state * (*)(void)) dlsym(dl, \"fake_cuda_state_get\") : NULL;\n"
    "    char err[512] = \"\";\n"
    "    if (!get || tilec_rt_open_driver(argv[1], 0, &rt) != TILEC_RT_OK || twice_load(rt, &m, err, sizeof err))\n"
    "        return 3;\n"
    "    f = get();\n"
    "    if (twice_set_cuda_graph(m, 4, err, sizeof err)) {\n        printf(\"graphs: %s\\n\", err);\n        return 4;\n    }\n"
    "    call(8, 0);\n    call(8, 0);\n    call(8, 0);\n"
    "    tilec_tensor kept = call(8, 1);\n"
    "    call(8, 0);\n    call(16, 0);\n    call(8, 0);\n"
    "    printf(\"graphs held: %d\\n\", f->live_graph_execs);\n"
    "    twice_set_cuda_graph(m, 0, err, sizeof err);\n"
    "    printf(\"off: graphs held: %d\\n\", f->live_graph_execs);\n"
    "    call(8, 0);\n"
    "    twice_release(m, &kept);\n"
    "    filled_module *fm = NULL;\n"
    "    if (filled_load(rt, &fm, err, sizeof err))\n        return 7;\n"
    "    printf(\"filled: %d %s\\n\", filled_set_cuda_graph(fm, 2, err, sizeof err), err);\n"
    "    for (int i = 0; i < 3; i++) { /* recorded, then replayed: the fill is a step of the graph */\n"
    "        float h[8];\n"
    "        tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {8}, .strides = {1}, .data = xs[8]}, y = {0};\n"
    "        int l = f->launches, c = f->captured_launches, g = f->graph_launches, ms = f->memsets;\n"
    "        int cm = f->captured_memsets;\n"
    "        if (filled_run(fm, &x, &y, err, sizeof err)) {\n            printf(\"run: %s\\n\", err);\n            exit(8);\n        }\n"
    "        tilec_rt_memcpy_dtoh(rt, h, y.data, sizeof h);\n"
    "        printf(\"filled 8: %d %d %d memsets %d %d: %g %g\\n\", f->launches - l, f->captured_launches - c,\n"
    "               f->graph_launches - g, f->memsets - ms, f->captured_memsets - cm, (double)h[0], (double)h[7]);\n"
    "        filled_release(fm, &y);\n"
    "    }\n"
    "    printf(\"filled off: %d\\n\", filled_set_cuda_graph(fm, 0, err, sizeof err));\n"
    "    filled_unload(fm);\n"
    "    same_module *sm = NULL;\n"
    "    if (same_load(rt, &sm, err, sizeof err))\n        return 9;\n"
    "    printf(\"same: %d %s\\n\", same_set_cuda_graph(sm, 2, err, sizeof err), err);\n"
    "    for (int i = 0; i < 3; i++) { /* an output copied from the input: after the plan, each call */\n"
    "        float hc[8], hy[8];\n"
    "        tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {8}, .strides = {1}, .data = xs[8]};\n"
    "        tilec_tensor c = {0}, y = {0};\n"
    "        int l = f->launches, cl = f->captured_launches, g = f->graph_launches;\n"
    "        if (same_run(sm, &x, &c, &y, err, sizeof err)) {\n            printf(\"run: %s\\n\", err);\n"
    "            exit(10);\n        }\n"
    "        tilec_rt_memcpy_dtoh(rt, hc, c.data, sizeof hc);\n"
    "        tilec_rt_memcpy_dtoh(rt, hy, y.data, sizeof hy);\n"
    "        printf(\"same 8: %d %d %d: %g %g %g %g %s\\n\", f->launches - l, f->captured_launches - cl,\n"
    "               f->graph_launches - g, (double)hc[0], (double)hc[7], (double)hy[0], (double)hy[7],\n"
    "               c.data != x.data && c.data != y.data ? \"own\" : \"aliased\");\n"
    "        same_release(sm, &c);\n"
    "        same_release(sm, &y);\n"
    "    }\n"
    "    same_unload(sm);\n"
    "    sev_module *vm = NULL;\n"
    "    if (sev_load(rt, &vm, err, sizeof err) || tilec_externs_register(sev_externs(vm), \"my.seven\", seven, NULL))\n"
    "        return 11;\n"
    "    printf(\"sev: %d %s\\n\", sev_set_cuda_graph(vm, 2, err, sizeof err), err);\n"
    "    for (int i = 0; i < 3; i++) { /* recorded with the extern's fill, then replayed without calling it */\n"
    "        float h[8];\n"
    "        tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {8}, .strides = {1}, .data = xs[8]}, y = {0};\n"
    "        int l = f->launches, c = f->captured_launches, g = f->graph_launches, ms = f->memsets;\n"
    "        int cm = f->captured_memsets;\n"
    "        if (sev_run(vm, &x, &y, err, sizeof err)) {\n            printf(\"run: %s\\n\", err);\n            exit(12);\n        }\n"
    "        tilec_rt_memcpy_dtoh(rt, h, y.data, sizeof h);\n"
    "        printf(\"sev 8: %d %d %d memsets %d %d calls %d: %g %g\\n\", f->launches - l, f->captured_launches - c,\n"
    "               f->graph_launches - g, f->memsets - ms, f->captured_memsets - cm, sev_calls, (double)h[0],\n"
    "               (double)h[7]);\n"
    "        sev_release(vm, &y);\n"
    "    }\n"
    "    sev_unload(vm);\n"
    "    twice_unload(m);\n"
    "    printf(\"unloaded: graphs held: %d\\n\", f->live_graph_execs);\n"
    "    tilec_rt_close(rt);\n    return 0;\n}\n";

Test(wrapper_run, cuda_graph_mode_replays_a_known_call_and_records_a_new_one, .timeout = 120)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "twice.tile", twice_tile, strlen(twice_tile), &m), TILEC_OK);
    cr_assert_eq(tilec_module_emit(ctx, m, "c", &(tilec_emit_options){.dir = dir, .plan = 1}, tilec_sink_file(stdout)),
                 TILEC_OK);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    write_in(dir, "main.c", twice_runner);
    const char *cc = getenv("CC");
    char *out = NULL;
    int st = sh(&out,
                "%s -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror %s -Iinclude -Itests -I%s "
                "-o %s/run %s/twice.c %s/filled.c %s/same.c %s/sev.c %s/main.c %s/lib/libtilec.a "
                "-ldl -lpthread -lm",
                cc && *cc ? cc : "cc", TILEC_SANFLAGS, dir, dir, dir, dir, dir, dir, dir, TILEC_BUILD);
    cr_assert_eq(st, 0, "the wrappers do not build:\n%s", out);
    free(out);
    out = run(dir, 0);
    /* N: launches that ran, launches captured, graph launches, y[0], y[N-1], y's address */
    cr_expect_str_eq(out, "8: 2 2 0 4 32 new\n"   /* eager, then recorded */
                          "8: 2 0 1 4 32 same\n"  /* replayed: the graph's launches run */
                          "8: 2 0 1 4 32 same\n"
                          "8: 2 0 1 4 32 same\n"  /* kept by the caller ... */
                          "8: 2 2 1 4 32 new\n"   /* ... so this call's y is new: recorded at once (the sizes are
                                                     known: no eager run) and the new graph launched */
                          "16: 2 2 0 4 64 new\n"  /* another shape: recorded */
                          "8: 2 0 1 4 32 new\n"   /* back to the first: replayed */
                          "graphs held: 3\n"
                          "off: graphs held: 0\n"
                          "8: 2 0 0 4 32 same\n"  /* eager */
                          "filled: 0 \n"
                          "filled 8: 1 1 0 memsets 1 1: 1 1\n"  /* eager, then recorded */
                          "filled 8: 1 0 1 memsets 1 0: 1 1\n"  /* replayed: the memset is in the graph */
                          "filled 8: 1 0 1 memsets 1 0: 1 1\n"
                          "filled off: 0\n"
                          "same: 0 \n"
                          "same 8: 1 1 0: 1 8 2 16 own\n"  /* eager, then recorded; the copy after it */
                          "same 8: 1 1 1: 1 8 2 16 own\n"  /* the spares swapped: y is at another address,
                                                              recorded at once (known sizes) and launched */
                          "same 8: 1 0 1: 1 8 2 16 own\n"  /* replayed, and copied again after it */
                          "sev: 0 \n"
                          "sev 8: 1 1 0 memsets 1 1 calls 2: 14 14\n" /* eager, then recorded: the extern ran twice */
                          "sev 8: 1 0 1 memsets 1 0 calls 2: 14 14\n" /* replayed: its fill is in the graph */
                          "sev 8: 1 0 1 memsets 1 0 calls 2: 14 14\n"
                          "unloaded: graphs held: 0\n");
    free(out);
    rm_dir(dir);
}

/* Issue 35 item 4: a loop of a constant count is unrolled; it computes
 * what the same loop over a run-time count computes. Graph `looped` walks
 * n chunks of C rows in a C for loop, graph `unrolled` the same 4 chunks
 * of 2 rows unrolled (each chunk scaled twice into the mirrored chunk of y,
 * so every iteration's substituted bounds show): same launches, same
 * values, nothing left allocated but y and the wrapper's one spare. The
 * unrolled graph has no loop, so it has a CUDA-graph mode: the first call
 * runs eagerly and is recorded (8 launches captured), the next ones replay
 * it with one cuGraphLaunch and the same values; the looped graph's
 * set_cuda_graph still says why it has none. */
static const char unroll_tile[] =
    "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {\n"
    "    let i = pid(0) * 256 + range(256);\n"
    "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
    "}\n"
    "graph looped(x: f32[R, H], n: i64, C: i64) -> f32[R, H] {\n"
    "    let y = zeros(f32, [R, H]);\n"
    "    for i in 0 .. n {\n"
    "        let xc = x[i * C : (i + 1) * C];\n"
    "        let t = empty(f32, [C, H]);\n"
    "        scale2(xc, t, C * H);\n"
    "        let yc = y[(n - 1 - i) * C : (n - i) * C];\n"
    "        scale2(t, yc, C * H);\n"
    "    }\n"
    "    return y;\n"
    "}\n"
    "graph unrolled(x: f32[8, H]) -> f32[8, H] {\n"
    "    let y = zeros(f32, [8, H]);\n"
    "    for i in 0 .. 4 {\n"
    "        let xc = x[i * 2 : (i + 1) * 2];\n"
    "        let t = empty(f32, [2, H]);\n"
    "        scale2(xc, t, 2 * H);\n"
    "        let yc = y[(3 - i) * 2 : (4 - i) * 2];\n"
    "        scale2(t, yc, 2 * H);\n"
    "    }\n"
    "    return y;\n"
    "}\n";

/* main(driver): per call "NAME: rc launches captured graph_launches live | y" */
static const char unroll_runner[] =
    "#include <dlfcn.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include \"looped.h\"\n#include \"unrolled.h\"\n#include \"fake_cuda.h\"\n"
    "static tilec_rt *rt;\nstatic fake_cuda_state *f;\nstatic int l0, c0, g0, a0;\n"
    "static void mark(void)\n{\n    l0 = f->launches, c0 = f->captured_launches, g0 = f->graph_launches;\n"
    "    a0 = f->live_allocs;\n}\n"
    "static void show(const char *what, int rc, tilec_tensor *y, const char *err)\n{\n"
    "    printf(\"%s: %d %d %d %d %d |\", what, rc, f->launches - l0, f->captured_launches - c0,\n"
    "           f->graph_launches - g0, f->live_allocs - a0);\n"
    "    float ys[24];\n"
    "    if (!rc && tilec_rt_memcpy_dtoh(rt, ys, y->data, sizeof ys) == TILEC_RT_OK)\n"
    "        for (int i = 0; i < 24; i++)\n            printf(\" %g\", (double)ys[i]);\n"
    "    printf(\"%s%s\\n\", rc ? \" \" : \"\", rc ? err : \"\");\n}\n"
    "int main(int argc, char **argv)\n{\n"
    "    void *h = argc >= 2 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;\n"
    "    fake_cuda_state *(*get)(void) = h ? (fake_cuda_state * (*)(void)) dlsym(h, \"fake_cuda_state_get\") : NULL;\n"
    "    if (!get || tilec_rt_open_driver(argv[1], 0, &rt) != TILEC_RT_OK)\n        return 3;\n"
    "    f = get();\n"
    "    char err[512] = \"\";\n"
    "    looped_module *lm = NULL;\n    unrolled_module *um = NULL;\n"
    "    if (looped_load(rt, &lm, err, sizeof err) || unrolled_load(rt, &um, err, sizeof err)) {\n"
    "        printf(\"load: %s\\n\", err);\n        return 4;\n    }\n"
    "    float xs[24];\n    for (int i = 0; i < 24; i++)\n        xs[i] = (float)(i + 1);\n"
    "    tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 2, .sizes = {8, 3}, .strides = {3, 1}}, y = {0};\n"
    "    if (tilec_rt_malloc(rt, sizeof xs, &x.data) != TILEC_RT_OK || tilec_rt_memcpy_htod(rt, x.data, xs, sizeof xs))\n"
    "        return 5;\n"
    "    mark();\n    int rc = looped_run(lm, &x, 4, 2, &y, err, sizeof err);\n    show(\"looped\", rc, &y, err);\n"
    "    looped_release(lm, &y);\n"
    "    mark();\n    rc = unrolled_run(um, &x, &y, err, sizeof err);\n    show(\"unrolled\", rc, &y, err);\n"
    "    unrolled_release(um, &y);\n"
    "    printf(\"looped graphs: %d %s\\n\", looped_set_cuda_graph(lm, 4, err, sizeof err), err);\n"
    "    err[0] = 0;\n"
    "    printf(\"unrolled graphs: %d %s\\n\", unrolled_set_cuda_graph(um, 4, err, sizeof err), err);\n"
    "    for (int k = 0; k < 3; k++) {\n"
    "        mark();\n        rc = unrolled_run(um, &x, &y, err, sizeof err);\n        show(\"graph\", rc, &y, err);\n"
    "        unrolled_release(um, &y);\n    }\n"
    "    const int64_t trips[] = {4, 4, 3, 4, 3, 5};\n"
    "    for (int k = 0; k < 6; k++) {\n"
    "        char what[32];\n        snprintf(what, sizeof what, \"looped graph n=%d\", (int)trips[k]);\n"
    "        mark();\n        rc = looped_run(lm, &x, trips[k], 2, &y, err, sizeof err);\n        show(what, rc, &y, err);\n"
    "        if (!rc)\n            looped_release(lm, &y);\n    }\n"
    "    tilec_rt_free(rt, x.data);\n"
    "    looped_unload(lm);\n    unrolled_unload(um);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

Test(wrapper_run, an_unrolled_loop_computes_what_the_loop_does_and_has_a_cuda_graph_mode, .timeout = 120)
{
    char dir[64];
    new_runner(dir, sizeof dir, unroll_tile, "looped unrolled", unroll_runner);
    char *out = run(dir, 0);
    const char *y = " 76 80 84 88 92 96 52 56 60 64 68 72 28 32 36 40 44 48 4 8 12 16 20 24\n";
    const char *y3 = " 52 56 60 64 68 72 28 32 36 40 44 48 4 8 12 16 20 24 0 0 0 0 0 0\n";
    char want[4096];
    snprintf(want, sizeof want,
             "looped: 0 8 0 0 2 |%s"
             "unrolled: 0 8 0 0 2 |%s"
             "looped graphs: 0 \n"
             "unrolled graphs: 0 \n"
             "graph: 0 8 8 0 0 |%s" /* eager, then recorded */
             "graph: 0 8 0 1 0 |%s" /* replayed */
             "graph: 0 8 0 1 0 |%s"
             /* a kept loop: a plan per trip count, recorded the first time (eager, then
              * captured), replayed after; a call that fails a slice launches nothing */
             "looped graph n=4: 0 8 8 0 0 |%s"
             "looped graph n=4: 0 8 0 1 0 |%s"
             "looped graph n=3: 0 6 6 0 0 |%s"
             "looped graph n=4: 0 8 0 1 0 |%s"
             "looped graph n=3: 0 6 0 1 0 |%s"
             "looped graph n=5: 1 0 0 0 -2 | looped: line 11: slice yc = y[-C - C*i + C*n:-C*i + C*n] is out of "
             "bounds: start 8, stop 10, and 'y' has 8 rows\n", /* a failed call frees the spares too */
             y, y, y, y, y, y, y, y3, y, y3);
    cr_expect_str_eq(out, want);
    free(out);
    rm_dir(dir);
}

/* Issue 32 step 4: the generated C wrapper of a graph with collectives
 * (tests/collective_run.tile: scale2 kernels around all_reduce,
 * all_gather on an inner axis, reduce_scatter and broadcast), run on the
 * fake driver and the fake NCCL (TILEC_NCCL: tests/fake_nccl.c, whose
 * other ranks hold this rank's data) as rank R of world W; the run-time
 * errors: no communicator, a size world does not divide, NCCL missing. */
#define FAKENCCL TILEC_BUILD "/tests/libfakenccl.so"

/* main(driver, world, rank, T, H, comm|nocomm|graph): each output's sizes
 * and values, or the message of what failed; graph: three calls in
 * CUDA-graph mode, the first one's values */
static const char coll_runner[] =
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "#include \"coll.h\"\n"
    "static void show(tilec_rt *rt, const char *name, const tilec_tensor *t)\n{\n"
    "    int64_t n = t->sizes[0] * t->sizes[1];\n"
    "    float *h = malloc((size_t)n * 4 + 1);\n"
    "    if (!h || tilec_rt_memcpy_dtoh(rt, h, t->data, (size_t)n * 4) != TILEC_RT_OK)\n        exit(7);\n"
    "    printf(\"%s [%lld, %lld]:\", name, (long long)t->sizes[0], (long long)t->sizes[1]);\n"
    "    for (int64_t i = 0; i < n; i++)\n        printf(\" %g\", (double)h[i]);\n"
    "    printf(\"\\n\");\n    free(h);\n}\n"
    "int main(int argc, char **argv)\n{\n"
    "    tilec_rt *rt = NULL;\n"
    "    if (argc != 7 || tilec_rt_open_driver(argv[1], 0, &rt) != TILEC_RT_OK)\n        return 3;\n"
    "    int world = atoi(argv[2]), rank = atoi(argv[3]);\n"
    "    int64_t T = atoll(argv[4]), H = atoll(argv[5]);\n"
    "    char err[512] = \"\";\n"
    "    coll_module *m = NULL;\n"
    "    tilec_comm *c = NULL;\n"
    "    if (coll_load(rt, &m, err, sizeof err)) {\n        printf(\"load: %s\\n\", err);\n        tilec_rt_close(rt);\n        return 4;\n    }\n"
    "    if (!strcmp(argv[6], \"graph\") && coll_set_cuda_graph(m, 2, err, sizeof err)) {\n"
    "        printf(\"graph: %s\\n\", err);\n        return 6;\n    }\n"
    "    if (strcmp(argv[6], \"nocomm\")) {\n"
    "        unsigned char id[TILEC_COMM_ID_BYTES];\n"
    "        if (tilec_comm_unique_id(NULL, id, err, sizeof err) ||\n"
    "            tilec_comm_new(rt, NULL, rank, world, id, &c, err, sizeof err) || coll_set_comm(m, c, err, sizeof err)) {\n"
    "            printf(\"comm: %s\\n\", err);\n            coll_unload(m);\n            tilec_rt_close(rt);\n"
    "            return 0;\n        }\n"
    "    }\n"
    "    float *h = malloc((size_t)(T * H) * 4 + 1);\n"
    "    tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 2, .sizes = {T, H}, .strides = {H, 1}}, o[4] = {{0}};\n"
    "    for (int64_t i = 0; i < T * H; i++)\n        h[i] = (float)(i + 1);\n"
    "    if (!h || tilec_rt_malloc(rt, (size_t)(T * H) * 4, &x.data) != TILEC_RT_OK ||\n"
    "        tilec_rt_memcpy_htod(rt, x.data, h, (size_t)(T * H) * 4) != TILEC_RT_OK)\n        return 5;\n"
    "    for (int k = 0; k < (strcmp(argv[6], \"graph\") ? 1 : 3); k++) {\n"
    "        if (coll_run(m, &x, &o[0], &o[1], &o[2], &o[3], err, sizeof err)) {\n"
    "            printf(\"run: %s\\n\", err);\n            break;\n        }\n"
    "        for (int i = 0; i < 4; i++) {\n"
    "            if (k == 0)\n                show(rt, (const char[]){\"ygsb\"[i], 0}, &o[i]);\n"
    "            coll_release(m, &o[i]);\n        }\n"
    "        printf(\"call %d ok\\n\", k + 1);\n"
    "    }\n"
    "    free(h);\n    tilec_rt_free(rt, x.data);\n"
    "    coll_unload(m);\n    tilec_comm_free(c);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

static char *coll_run(const char *dir, const char *nccl, int world, int rank, int t, int h, const char *mode)
{
    char *out = NULL;
    int st = sh(&out, "TILEC_NCCL=%s TILEC_CACHE_DIR=%s/cache TILEC_COMPILE_WORKER=%s/bin/tilec %s/run %s %d %d %d %d %s 2>&1",
                nccl, dir, TILEC_BUILD, dir, FAKECUDA, world, rank, t, h, mode);
    cr_assert_eq(st, 0, "the runner failed (%d):\n%s", st, out);
    return out;
}

/* What the graph gives for x = 1 .. T*H as rank `rank` of `world` whose
 * other ranks hold the same x: y = 2 world * 2 x, g's rows the ranks'
 * rows of 2 x one after the other, s = world * this rank's rows of x,
 * b = 2 x. Written from the definitions, not from a run. */
static void coll_want(strbuf *w, int world, int rank, int t, int h)
{
    sb_printf(w, "y [%d, %d]:", t, h);
    for (int i = 0; i < t * h; i++)
        sb_printf(w, " %d", 4 * world * (i + 1));
    sb_printf(w, "\ng [%d, %d]:", t, h * world);
    for (int r = 0; r < t; r++)
        for (int k = 0; k < world; k++)
            for (int c = 0; c < h; c++)
                sb_printf(w, " %d", 2 * (r * h + c + 1));
    sb_printf(w, "\ns [%d, %d]:", t / world, h);
    for (int i = rank * (t / world) * h; i < (rank + 1) * (t / world) * h; i++)
        sb_printf(w, " %d", world * (i + 1));
    sb_printf(w, "\nb [%d, %d]:", t, h);
    for (int i = 0; i < t * h; i++)
        sb_printf(w, " %d", 2 * (i + 1));
    sb_printf(w, "\ncall 1 ok\n");
}

Test(wrapper_run, collectives_run_on_the_fake_nccl_with_world_1_and_2, .timeout = 180)
{
    char dir[64];
    build_file_runner(dir, "tests/collective_run.tile", "coll", coll_runner);
    static const int cases[][4] = {{1, 0, 4, 3}, {2, 0, 4, 3}, {2, 1, 4, 3}, {2, 1, 6, 5}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        strbuf want;
        sb_init(&want);
        coll_want(&want, cases[i][0], cases[i][1], cases[i][2], cases[i][3]);
        char *out = coll_run(dir, FAKENCCL, cases[i][0], cases[i][1], cases[i][2], cases[i][3], "comm");
        cr_expect_str_eq(out, sb_str(&want), "world %d rank %d T %d H %d:\n%s\nwanted\n%s", cases[i][0], cases[i][1],
                         cases[i][2], cases[i][3], out, sb_str(&want));
        free(out);
        sb_free(&want);
    }
    /* CUDA-graph mode: the collectives are extern steps of the plan. The
     * first call runs eagerly, the second records (the fake NCCL, which
     * knows no capture, runs then), the third replays: NCCL is not called
     * again (a real NCCL's kernels are in the graph). Before the
     * collective lines had a dtype and rank for the plan, graph mode was
     * refused: "coll: no CUDA-graph mode: an extern call's tensor has no
     * known dtype and rank". The fake NCCL computes when called, not
     * when the stream runs, so only the eager call's values mean
     * anything here (the GPU test checks replays on NCCL). */
    strbuf want, log;
    sb_init(&want);
    sb_init(&log);
    coll_want(&want, 2, 1, 4, 3);
    sb_puts(&want, "call 2 ok\ncall 3 ok\n");
    sb_printf(&log, "%s/nccl.log", dir);
    char *out = NULL;
    int st = sh(&out, "FAKE_NCCL_LOG=%s TILEC_NCCL=%s TILEC_CACHE_DIR=%s/cache TILEC_COMPILE_WORKER=%s/bin/tilec "
                      "%s/run %s 2 1 4 3 graph 2>&1",
                sb_str(&log), FAKENCCL, dir, TILEC_BUILD, dir, FAKECUDA);
    cr_expect_eq(st, 0, "%s", out);
    cr_expect_str_eq(out, sb_str(&want), "graph mode:\n%s\nwanted\n%s", out, sb_str(&want));
    free(out);
    /* the fake NCCL's calls: 7 a run (all_gather on axis 1 is a call per row, 4), eagerly and
     * recorded; none replayed */
    out = read_file(sb_str(&log), NULL);
    int calls = 0;
    for (const char *p = out; p && *p; p++)
        calls += *p == '\n';
    cr_expect_eq(calls, 14, "NCCL calls in graph mode:\n%s", out);
    free(out);
    sb_free(&want);
    sb_free(&log);
    /* no communicator: refused before anything runs */
    out = coll_run(dir, FAKENCCL, 2, 0, 4, 3, "nocomm");
    cr_expect_str_eq(out, "run: coll: the graph has collectives: give the module a communicator with coll_set_comm "
                          "first\n");
    free(out);
    /* T = 3 rows over 2 ranks: reduce_scatter's line and sizes named */
    out = coll_run(dir, FAKENCCL, 2, 0, 3, 2, "comm");
    cr_expect_str_eq(out, "run: coll: line 20: s = reduce_scatter(x, sum, 0): dimension 0 of the input f32[3, 2] is "
                          "3, which world (2 ranks) does not divide (reduce_scatter hands each rank an equal part)\n");
    free(out);
    /* TILEC_NCCL at a missing file */
    out = coll_run(dir, "/nonexistent/libnccl.so.2", 2, 0, 4, 3, "comm");
    cr_expect_str_eq(out, "comm: no NCCL found: /nonexistent/libnccl.so.2 (from TILEC_NCCL) could not be loaded: "
                          "/nonexistent/libnccl.so.2: cannot open shared object file: No such file or directory; "
                          "graphs with collectives need NCCL: set TILEC_NCCL to the path of libnccl.so.2 (the "
                          "nvidia-nccl wheel puts it in site-packages/nvidia/nccl/lib)\n");
    free(out);
    rm_dir(dir);
}

/* ---- an ahead-of-time wrapper launches the sm_90a twins (issue 29 item 6) ---- */

/* main(driver, M, N, K): the graph run once on the fake sm_90 device:
 * "rc=R twin=T maps=E own=O ops=1|0 tiles=XxYxZ blocks=B" (twin launches,
 * tensor maps made, launches of the variant's own kernel, whether the
 * twin's maps were made from the run's a, b and c, the program's grid and
 * the blocks launched) */
static const char tw_runner[] =
    FAKE_RUNNER_MAIN("mm.h", "5")
    "    int64_t M = strtoll(argv[2], NULL, 10), N = strtoll(argv[3], NULL, 10), K = strtoll(argv[4], NULL, 10);\n"
    "    char err[512] = \"\";\n"
    "    mm_module *m = NULL;\n"
    "    if (mm_load(rt, &m, err, sizeof err)) {\n        printf(\"load: %s\\n\", err);\n        tilec_rt_close(rt);\n        return 4;\n    }\n"
    "    tilec_tensor a = {.dtype = TILEC_DT_F16, .rank = 2, .sizes = {M, K}, .strides = {K, 1}};\n"
    "    tilec_tensor b = {.dtype = TILEC_DT_F16, .rank = 2, .sizes = {K, N}, .strides = {N, 1}}, c = {0};\n"
    "    if (tilec_rt_malloc(rt, (size_t)(M * K * 2), &a.data) != TILEC_RT_OK ||\n"
    "        tilec_rt_malloc(rt, (size_t)(K * N * 2), &b.data) != TILEC_RT_OK)\n        return 5;\n"
    "    int own = f->launches, twin = f->tma_launches, maps = f->tma_encodes;\n"
    "    int rc = mm_run(m, &a, &b, &c, err, sizeof err);\n"
    "    twin = f->tma_launches - twin;\n"
    "    own = f->launches - own - twin;\n"
    "    int ops = twin && f->tma_args[0] == a.data && f->tma_args[1] == b.data && f->tma_args[2] == c.data &&\n"
    "              f->tma_maps[0].base == a.data && f->tma_maps[2].base == c.data;\n"
    "    printf(\"rc=%d twin=%d maps=%d own=%d ops=%d tiles=%dx%dx%d blocks=%u err=%s\\n\", rc, twin,\n"
    "           f->tma_encodes - maps, own, ops, f->tma_grid[0], f->tma_grid[1], f->tma_grid[2], f->grid[0], err);\n"
    "    if (!rc)\n        tilec_rt_free(rt, c.data);\n"
    "    tilec_rt_free(rt, a.data);\n    tilec_rt_free(rt, b.data);\n"
    "    mm_unload(m);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

/* The runner's line for M x N x K (env: more environment, or ""). */
static char *tw_run(const char *dir, const char *env, int M, int N, int K)
{
    char *out = NULL;
    int st = sh(&out, "%s %s/run %s %d %d %d 2>&1", env, dir, FAKECUDA, M, N, K);
    cr_assert_eq(st, 0, "the runner failed (%d):\n%s", st, out);
    return out;
}

/* The fake driver's kernel tw (tests/mm_tile.h) with a graph, its wrapper
 * emitted by the command with --aot ARCH into dir and linked with the
 * runner. */
static void tw_build(const char *dir, const char *arch)
{
    char src[2048], *out = NULL;
    int n = snprintf(src, sizeof src, MM_TILE_FMT, "tw", MM_TILE_MASK);
    snprintf(src + n, sizeof src - (size_t)n,
             "graph mm(a: f16[M, K], b: f16[K, N]) -> (c: f16[M, N]) {\n"
             "    let c = empty(f16, [M, N]);\n    tw(a, b, c, M, N, K);\n    return c;\n}\n");
    write_in(dir, "mm.tile", src);
    int st = sh(&out, "TILEC_CACHE_DIR=%s/cache %s/bin/tilec %s/mm.tile --emit c --aot %s -q -o %s 2>&1", dir,
                TILEC_BUILD, dir, arch, dir);
    cr_assert_eq(st, 0, "%s", out);
    free(out);
    write_in(dir, "main.c", tw_runner);
    link_runner(dir, "mm");
}

/* A new dir with tw's --aot ARCH wrapper and its runner: the wrapper's C. */
static char *tw_fresh(char dir[64], const char *arch)
{
    make_tmpdir(dir, 64);
    tw_build(dir, arch);
    char *c = read_in(dir, "mm.c");
    cr_assert(c);
    return c;
}

/* --aot sm_90a: the table carries each variant's twin and its metadata, and
 * the wrapper's launch on a 9.0 device is the twin's, with its tensor maps
 * built from the run's pointers and sizes and its persistent grid, as a
 * program built at run time launches it (tests/test_tma.c); operands TMA
 * cannot read, and TILEC_DISABLE_TMA=1, take the variant's own kernel. An
 * sm_90 build has no twin (its CUBINs hold none). */
Test(wrapper_run, aot_sm_90a_launches_the_twin_with_its_tensor_maps, .timeout = 300)
{
    char dir[64];
    char *c = tw_fresh(dir, "sm_90a");
    cr_expect(strstr(c, "static char tl_twin_tw_v0[] = \"tw_v0_tma\";"), "no twin in the table");
    cr_expect(strstr(c, "tl_grid_tw_v0, 0, 0, &tl_tma_tw_v0},"), "the table entry does not name its twin");
    free(c);
    /* 3 x 3 tiles of 128 x 128: the twin, one block a tile, three maps (A, B and C's store) */
    char *out = tw_run(dir, "", 300, 264, 200);
    cr_expect_str_eq(out, "rc=0 twin=1 maps=3 own=0 ops=1 tiles=3x3x1 blocks=9 err=\n");
    free(out);
    /* K = 203: A's rows are 406 bytes, not a multiple of 16: the variant's own kernel */
    out = tw_run(dir, "", 300, 264, 203);
    cr_expect_str_eq(out, "rc=0 twin=0 maps=0 own=1 ops=0 tiles=0x0x0 blocks=3 err=\n");
    free(out);
    out = tw_run(dir, "TILEC_DISABLE_TMA=1", 300, 264, 200);
    cr_expect_str_eq(out, "rc=0 twin=0 maps=0 own=1 ops=0 tiles=0x0x0 blocks=3 err=\n");
    free(out);
    /* TILEC_LOGS=tma says which kernel ran */
    out = tw_run(dir, "TILEC_LOGS=tma", 300, 264, 200);
    cr_expect(strstr(out, "tilec tma: tw variant 0: sm_90a twin tw_v0_tma resolved (384 threads, "), "%s", out);
    /* 3 x 3 tiles: its one-tile twin (lower/wgpair.c); TILEC_TMA_PAIR=1: the 3 x 2 pairs; and why the
     * persistent grid walks its units (runtime/tma.c persist_walks) */
    cr_expect(strstr(out, "tilec tma: tw variant 0: launched sm_90a twin tw_v0_tma_1 (one tile a unit: its rounds of "
                          "tiles cost less than the pairs'), grid 9x1x1, 3 tensor maps; walking its units: 9 units, "
                          "at most 8 a multiprocessor\n"),
              "%s", out);
    free(out);
    out = tw_run(dir, "TILEC_LOGS=tma TILEC_TMA_PAIR=1", 300, 264, 200);
    cr_expect(strstr(out, "tilec tma: tw variant 0: launched sm_90a twin tw_v0_tma, grid 6x1x1, 3 tensor maps; "
                        "walking its units: 6 units, at most 8 a multiprocessor\n"), "%s",
              out);
    free(out);
    out = tw_run(dir, "TILEC_LOGS=tma TILEC_DISABLE_TMA=1", 300, 264, 200);
    cr_expect(strstr(out, "tilec tma: tw variant 0: sm_90a twin tw_v0_tma not used: TILEC_DISABLE_TMA=1 ("), "%s", out);
    free(out);
    out = tw_run(dir, "TILEC_LOGS=tma", 300, 264, 203);
    cr_expect(strstr(out, "tilec tma: tw variant 0: launched tw_v0, not its twin: the tensor behind parameter 0 is "
                          "not one TMA reads"),
              "%s", out);
    free(out);
    rm_dir(dir);
    /* sm_90: no twin in the table, the variant's own kernel */
    c = tw_fresh(dir, "sm_90");
    cr_expect_null(strstr(c, "tilec_tma_meta"), "an sm_90 build names a twin its CUBIN does not hold");
    free(c);
    out = tw_run(dir, "", 300, 264, 200);
    cr_expect_str_eq(out, "rc=0 twin=0 maps=0 own=1 ops=0 tiles=0x0x0 blocks=3 err=\n");
    free(out);
    rm_dir(dir);
    /* sm_80,sm_90a: a table each; the 9.0 device loads sm_90a's and runs the twin */
    c = tw_fresh(dir, "sm_80,sm_90a");
    cr_expect(strstr(c, "    {\"sm_80\", tl_kernels_sm_80, TL_NKERNELS_sm_80, NULL, 0u},\n"
                        "    {\"sm_90a\", tl_kernels_sm_90a, TL_NKERNELS_sm_90a, NULL, 0u},\n"),
              "no table per architecture");
    cr_expect(strstr(c, "tl_grid_tw_v0_sm_80, 0, 0, NULL},"), "the sm_80 table names a twin");
    cr_expect(strstr(c, "tl_grid_tw_v0_sm_90a, 0, 0, &tl_tma_tw_v0_sm_90a},"));
    cr_expect(strstr(c, "tilec_program_load_for_device(rt, tl_archs, TL_NARCHS, &M->prog, NULL)"));
    free(c);
    out = tw_run(dir, "", 300, 264, 200);
    cr_expect_str_eq(out, "rc=0 twin=1 maps=3 own=0 ops=1 tiles=3x3x1 blocks=9 err=\n");
    free(out);
    rm_dir(dir);
    /* sm_80,sm_86: nothing the device runs: NAME_load says so */
    free(tw_fresh(dir, "sm_80,sm_86"));
    char *err = NULL;
    cr_expect_eq(sh(&err, "%s/run %s 300 264 200 2>&1", dir, FAKECUDA), 4, "%s", err);
    cr_expect_str_eq(err, "load: mm: cannot load the kernels (compiled for sm_80,sm_86): the module image was "
                          "rejected (malformed, truncated, or not for this device): no table of this wrapper runs on "
                          "device 0 (Fake CUDA Device, sm_90a): it was compiled for sm_80, sm_86\n");
    free(err);
    rm_dir(dir);
}

/* Issue 32, overlap: tests/collective_overlap.tile's all_reduce runs on the
 * communication stream while scale2(z, q) runs; its wait comes before
 * scale2(r, y), and p (the all_reduce's input) is not given to q before
 * that wait. The fake NCCL defers each collective on a stream until a wait
 * or a synchronization needs it (FAKE_NCCL_DEFER=1), as a GPU would: with
 * the wait dropped y is not 4 world x (r not yet reduced); with p given
 * back at the collective (its free where lowering put it), q = p and r
 * reduces 2 z. The fake driver's and NCCL's log (one file) shows the order:
 * the fork (an event on the graph's stream that the communication stream
 * waits for), the all_reduce on that stream, q's kernel before the wait. */
static const char ovl_runner[] =
    "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
    "#include \"ovl.h\"\n"
    "int main(int argc, char **argv)\n{\n"
    "    tilec_rt *rt = NULL;\n"
    "    if (argc != 5 || tilec_rt_open_driver(argv[1], 0, &rt) != TILEC_RT_OK)\n        return 3;\n"
    "    int world = atoi(argv[2]), calls = atoi(argv[4]);\n"
    "    int64_t N = atoll(argv[3]);\n"
    "    char err[512] = \"\";\n"
    "    ovl_module *m = NULL;\n"
    "    tilec_comm *c = NULL;\n"
    "    unsigned char id[TILEC_COMM_ID_BYTES];\n"
    "    if (ovl_load(rt, &m, err, sizeof err) || tilec_comm_unique_id(NULL, id, err, sizeof err) ||\n"
    "        tilec_comm_new(rt, NULL, 0, world, id, &c, err, sizeof err) || ovl_set_comm(m, c, err, sizeof err)) {\n"
    "        printf(\"setup: %s\\n\", err);\n        return 4;\n    }\n"
    "    float *h = malloc((size_t)N * 8 + 8);\n"
    "    tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {N}, .strides = {1}}, z = x, o[2] = {{0}};\n"
    "    for (int64_t i = 0; i < N; i++) {\n        h[i] = (float)(i + 1);\n        h[N + i] = (float)(100 + i);\n    }\n"
    "    if (!h || tilec_rt_malloc(rt, (size_t)N * 4, &x.data) || tilec_rt_malloc(rt, (size_t)N * 4, &z.data) ||\n"
    "        tilec_rt_memcpy_htod(rt, x.data, h, (size_t)N * 4) || tilec_rt_memcpy_htod(rt, z.data, h + N, (size_t)N * 4))\n"
    "        return 5;\n"
    "    for (int k = 0; k < calls; k++) {\n"
    "        if (ovl_run(m, &x, &z, &o[0], &o[1], err, sizeof err)) {\n"
    "            printf(\"run: %s\\n\", err);\n            return 6;\n        }\n"
    "        for (int i = 0; i < 2; i++) {\n"
    "            if (tilec_rt_memcpy_dtoh(rt, h, o[i].data, (size_t)N * 4))\n                return 7;\n"
    "            printf(\"%c:\", \"yq\"[i]);\n"
    "            for (int64_t j = 0; j < N; j++)\n                printf(\" %g\", (double)h[j]);\n"
    "            printf(\"\\n\");\n"
    "            ovl_release(m, &o[i]);\n        }\n"
    "    }\n"
    "    free(h);\n    tilec_rt_free(rt, x.data);\n    tilec_rt_free(rt, z.data);\n"
    "    ovl_unload(m);\n    tilec_comm_free(c);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

/* the log with each pointer named by its first appearance (S1, S2, ...) and
 * the lines of interest kept: launches, event records and waits, NCCL calls */
static void ovl_normalize(const char *log, strbuf *out)
{
    char names[16][32];
    int n = 0;
    for (const char *p = log; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        for (size_t i = 0; i < len;) {
            if (p[i] == '0' && p[i + 1] == 'x') {
                size_t k = i;
                while (k < len && p[k] != ' ')
                    k++;
                char ptr[32];
                snprintf(ptr, sizeof ptr, "%.*s", (int)(k - i), p + i);
                int j = 0;
                while (j < n && strcmp(names[j], ptr))
                    j++;
                if (j == n && n < 16)
                    snprintf(names[n++], sizeof names[0], "%s", ptr);
                sb_printf(out, "P%d", j + 1);
                i = k;
            } else
                sb_putc(out, p[i++]);
        }
        sb_putc(out, '\n');
        p += len + (e ? 1 : 0);
    }
}

/* The runner in dir with args, the fake NCCL deferring its collectives and
 * both fakes logging to log; env: more environment, or "". Its output;
 * *st its exit status. */
static char *logged_run(const char *dir, const char *env, const char *log, const char *args, int *st)
{
    char *out = NULL;
    *st = sh(&out, "%s FAKE_NCCL_DEFER=1 FAKE_NCCL_LOG=%s FAKE_CUDA_LOG=%s TILEC_NCCL=%s TILEC_CACHE_DIR=%s/cache "
                   "TILEC_COMPILE_WORKER=%s/bin/tilec %s/run %s %s 2>&1",
             env, log, log, FAKENCCL, dir, TILEC_BUILD, dir, FAKECUDA, args);
    return out;
}

Test(wrapper_run, an_overlapped_collective_waits_and_keeps_its_input, .timeout = 180)
{
    char dir[64];
    build_file_runner(dir, "tests/collective_overlap.tile", "ovl", ovl_runner);
    /* y = 2 (world * 2 x), q = 2 z; twice, the second call on the spare buffers */
    for (int world = 1; world <= 2; world++) {
        strbuf want, log;
        sb_init(&want);
        sb_init(&log);
        for (int k = 0; k < 2; k++) {
            sb_puts(&want, "y:");
            for (int i = 0; i < 5; i++)
                sb_printf(&want, " %d", 4 * world * (i + 1));
            sb_puts(&want, "\nq:");
            for (int i = 0; i < 5; i++)
                sb_printf(&want, " %d", 2 * (100 + i));
            sb_puts(&want, "\n");
        }
        sb_printf(&log, "%s/ovl%d.log", dir, world);
        char args[32];
        snprintf(args, sizeof args, "%d 5 2", world);
        int st;
        char *out = logged_run(dir, "", sb_str(&log), args, &st);
        cr_expect_eq(st, 0, "%s", out);
        cr_expect_str_eq(out, sb_str(&want), "world %d:\n%s\nwanted\n%s", world, out, sb_str(&want));
        free(out);
        if (world == 2) { /* the order of the first call */
            char *raw = read_file(sb_str(&log), NULL);
            strbuf norm;
            sb_init(&norm);
            ovl_normalize(raw, &norm);
            const char *first = sb_str(&norm), *second = strstr(first, "Launch scale2_v0 stream=(nil)\nEventRecord");
            second = second ? strstr(second + 1, "Launch scale2_v0 stream=(nil)\nEventRecord") : NULL;
            cr_expect(second, "no second call in the log:\n%s", first);
            cr_expect_eq(strncmp(first,
                                 "Launch scale2_v0 stream=(nil)\n"            /* p = 2 x */
                                 "EventRecord event=P1 stream=(nil)\n"        /* the fork ... */
                                 "StreamWaitEvent stream=P2 event=P1\n"       /* ... joined by the comm stream */
                                 "AllReduce count=5 dtype=7 op=0 world=2 rank=0 stream=P2\n"
                                 "EventRecord event=P3 stream=P2\n"           /* its end */
                                 "Launch scale2_v0 stream=(nil)\n"            /* q = 2 z, overlapped */
                                 "StreamWaitEvent stream=(nil) event=P3\n"    /* the wait */
                                 "Launch scale2_v0 stream=(nil)\n",           /* y = 2 r */
                                 second ? (size_t)(second - first) : strlen(first)),
                         0, "the first call's order:\n%s", first);
            sb_free(&norm);
            free(raw);
        }
        sb_free(&want);
        sb_free(&log);
    }
    /* overlap off (TILEC_COMM_OVERLAP=0, tilec_comm_set_overlap): the graph's stream waits
       right after the all_reduce, before q's kernel */
    strbuf log, norm;
    sb_init(&log);
    sb_init(&norm);
    sb_printf(&log, "%s/serial.log", dir);
    int st;
    char *out = logged_run(dir, "TILEC_COMM_OVERLAP=0", sb_str(&log), "2 5 1", &st);
    cr_expect_eq(st, 0, "%s", out);
    free(out);
    char *raw = read_file(sb_str(&log), NULL);
    ovl_normalize(raw, &norm);
    cr_expect(strstr(sb_str(&norm), "EventRecord event=P3 stream=P2\n"
                                    "StreamWaitEvent stream=(nil) event=P3\n"
                                    "Launch scale2_v0 stream=(nil)\n"),
              "overlap off:\n%s", sb_str(&norm));
    free(raw);
    sb_free(&norm);
    sb_free(&log);
    rm_dir(dir);
}

/* A collective with nothing to overlap (its result is the next work line's
 * input, or only collectives and the return follow) runs on the graph's
 * stream: no event is recorded and no stream waits, as torch.distributed
 * runs a synchronous collective on the current stream. Before, each of
 * collective_run.tile's four paid the communication stream's fork and join
 * (EventRecord, StreamWaitEvent, the call on the other stream, EventRecord,
 * StreamWaitEvent) for nothing. */
Test(wrapper_run, a_collective_with_nothing_to_overlap_runs_on_the_graphs_stream, .timeout = 180)
{
    char dir[64];
    build_file_runner(dir, "tests/collective_run.tile", "coll", coll_runner);
    strbuf want, log, norm;
    sb_init(&want);
    sb_init(&log);
    sb_init(&norm);
    coll_want(&want, 2, 0, 4, 3);
    sb_printf(&log, "%s/sync.log", dir);
    int st;
    char *out = logged_run(dir, "", sb_str(&log), "2 0 4 3 comm", &st);
    cr_expect_eq(st, 0, "%s", out);
    cr_expect_str_eq(out, sb_str(&want), "%s\nwanted\n%s", out, sb_str(&want));
    free(out);
    char *raw = read_file(sb_str(&log), NULL);
    ovl_normalize(raw, &norm);
    const char *l = sb_str(&norm);
    int colls = 0;
    for (const char *p = l; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        const char *e = strchr(p, '\n'), *w = strstr(p, " world=");
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (w && (!e || w < e)) { /* an NCCL call (FAKE_NCCL_DEFER logs its stream): the graph's, NULL */
            colls++;
            cr_expect(len >= 12 && !memcmp(p + len - 12, "stream=(nil)", 12),
                      "an NCCL call off the graph's stream: %.*s\n%s", (int)len, p, l);
        }
    }
    cr_expect_eq(colls, 7, "NCCL calls (all_gather on axis 1 is one per row, 4):\n%s", l);
    cr_expect(!strstr(l, "EventRecord") && !strstr(l, "StreamWaitEvent"), "a fork or join:\n%s", l);
    free(raw);
    sb_free(&norm);
    sb_free(&log);
    sb_free(&want);
    rm_dir(dir);
}

/* Issue 35 item 4: a graph's for loop over slices, run. Chunks of C = 2
 * rows of x (8 rows of 3): each scaled into a buffer the iteration
 * allocates and frees, then into its slice of y; n chunks cover 2n rows.
 * The loop runs n times (2n launches), every iteration's buffer is
 * given back (after the call y is live and one spare, the wrapper's for
 * its next call, whatever n: 4 iterations leak none), and a chunk past the end
 * of x is the slice's run-time error, naming the graph, the line and the
 * values, with nothing left allocated. */
static const char chunks_tile[] = "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {\n"
                                  "    let i = pid(0) * 256 + range(256);\n"
                                  "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
                                  "}\n"
                                  "graph chunks(x: f32[R, H], n: i64, C: i64) -> f32[R, H] {\n"
                                  "    let y = zeros(f32, [R, H]);\n"
                                  "    for i in 0 .. n {\n"
                                  "        let xc = x[i * C : (i + 1) * C];\n"
                                  "        let t = empty(f32, [C, H]);\n"
                                  "        scale2(xc, t, C * H);\n"
                                  "        let yc = y[i * C : i * C + C];\n"
                                  "        scale2(t, yc, C * H);\n"
                                  "    }\n"
                                  "    return y;\n"
                                  "}\n";

/* main(driver, n): "rc=R launches=L live=A err=E" and y's values */
static const char chunks_runner[] =
    "#include <dlfcn.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
    "#include \"chunks.h\"\n#include \"fake_cuda.h\"\n"
    "int main(int argc, char **argv)\n{\n"
    "    void *h = argc == 3 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;\n"
    "    fake_cuda_state *(*get)(void) = h ? (fake_cuda_state * (*)(void)) dlsym(h, \"fake_cuda_state_get\") : NULL;\n"
    "    tilec_rt *rt = NULL;\n"
    "    if (!get || tilec_rt_open_driver(argv[1], 0, &rt) != TILEC_RT_OK)\n        return 3;\n"
    "    fake_cuda_state *f = get();\n"
    "    int64_t n = strtoll(argv[2], NULL, 10);\n"
    "    char err[512] = \"\";\n"
    "    chunks_module *m = NULL;\n"
    "    if (chunks_load(rt, &m, err, sizeof err)) {\n        printf(\"load: %s\\n\", err);\n        tilec_rt_close(rt);\n        return 4;\n    }\n"
    "    float xs[24];\n    for (int i = 0; i < 24; i++)\n        xs[i] = (float)(i + 1);\n"
    "    tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 2, .sizes = {8, 3}, .strides = {3, 1}}, y = {0};\n"
    "    if (tilec_rt_malloc(rt, sizeof xs, &x.data) != TILEC_RT_OK || tilec_rt_memcpy_htod(rt, x.data, xs, sizeof xs))\n"
    "        return 5;\n"
    "    int launches = f->launches, allocs = f->live_allocs;\n"
    "    int rc = chunks_run(m, &x, n, 2, &y, err, sizeof err);\n"
    "    printf(\"rc=%d launches=%d live=%d err=%s\\n\", rc, f->launches - launches, f->live_allocs - allocs, err);\n"
    "    if (!rc) {\n"
    "        float ys[24];\n"
    "        if (tilec_rt_memcpy_dtoh(rt, ys, y.data, sizeof ys) != TILEC_RT_OK)\n            return 6;\n"
    "        for (int i = 0; i < 24; i++)\n            printf(\"%g%s\", (double)ys[i], i % 3 == 2 ? \"\\n\" : \" \");\n"
    "        tilec_rt_free(rt, y.data);\n"
    "    }\n"
    "    tilec_rt_free(rt, x.data);\n"
    "    chunks_unload(m);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

Test(wrapper_run, a_for_loop_over_slices_runs_frees_each_iteration_and_checks_bounds, .timeout = 120)
{
    char dir[64];
    new_runner(dir, sizeof dir, chunks_tile, "chunks", chunks_runner);
    char *out = run(dir, 4); /* 4 chunks of 2 rows: all of x */
    cr_expect_str_eq(out, "rc=0 launches=8 live=2 err=\n"
                          "4 8 12\n16 20 24\n28 32 36\n40 44 48\n52 56 60\n64 68 72\n76 80 84\n88 92 96\n");
    free(out);
    out = run(dir, 1); /* the first chunk only: the other rows stay 0 */
    cr_expect_str_eq(out, "rc=0 launches=2 live=2 err=\n4 8 12\n16 20 24\n0 0 0\n0 0 0\n0 0 0\n0 0 0\n0 0 0\n0 0 0\n");
    free(out);
    out = run(dir, 5); /* the fifth chunk starts at row 8 of 8 */
    cr_expect_str_eq(out, "rc=1 launches=8 live=0 err=chunks: line 8: slice xc = x[C*i:C + C*i] is out of bounds: "
                          "start 8, stop 10, and 'x' has 8 rows\n");
    free(out);
    rm_dir(dir);
}

/* A slice bound written with % (T % 128 in the fused linear cross-entropy's
 * chunks, examples/llm.tile flce_bf16_n) names itself in the message, which
 * is a printf format in the C wrapper: the % doubled there (util/escape.c
 * esc_c_format), or the wrapper does not compile (-Wformat) or prints
 * garbage. Rows i * C % (R + 1): chunks 0..3 of 2 rows as before, the
 * fifth starts at row 8 of 8. */
Test(wrapper_run, a_slice_bound_with_a_percent_sign_compiles_and_names_itself, .timeout = 120)
{
    char tile[sizeof chunks_tile + 64];
    const char *at = strstr(chunks_tile, "x[i * C : (i + 1) * C]");
    cr_assert(at);
    snprintf(tile, sizeof tile, "%.*sx[i * C %% (R + 1) : i * C %% (R + 1) + C]%s", (int)(at - chunks_tile), chunks_tile,
             at + strlen("x[i * C : (i + 1) * C]"));
    char dir[64];
    new_runner(dir, sizeof dir, tile, "chunks", chunks_runner);
    char *out = run(dir, 4);
    cr_expect_str_eq(out, "rc=0 launches=8 live=2 err=\n"
                          "4 8 12\n16 20 24\n28 32 36\n40 44 48\n52 56 60\n64 68 72\n76 80 84\n88 92 96\n");
    free(out);
    out = run(dir, 5);
    cr_expect_str_eq(out, "rc=1 launches=8 live=0 err=chunks: line 8: slice xc = x[(C*i)%(R + 1):(C*i)%(R + 1) + C] is out "
                          "of bounds: start 8, stop 10, and 'x' has 8 rows\n");
    free(out);
    rm_dir(dir);
}

/* ---- an ahead-of-time wrapper embeds the choices tilec tune made (issue 31 item 3) ---- */

/* The kernel mk of the fake driver (three variants; mk_v<i> takes mk_ms[i]
 * on its clock) and a graph calling it. */
static const char ch_tile[] =
    MK_TILE "graph g(x: f32[n]) -> (y: f32[n]) {\n    let y = empty(f32, [n]);\n    mk(x, y, n);\n    return y;\n}\n";

/* main(driver, n): g run once at n on the fake clock, where variant 1 is
 * the fastest: "rc=R v=A,B,C events=E" (launches of each variant, event
 * records: 0 when nothing was timed) */
static const char ch_runner[] =
    FAKE_RUNNER_MAIN("g.h", "3")
    "    f->fake_clock = 1;\n    f->mk_ms[0] = 3;\n    f->mk_ms[1] = 1;\n    f->mk_ms[2] = 2;\n"
    "    int64_t n = strtoll(argv[2], NULL, 10);\n"
    "    char err[512] = \"\";\n"
    "    g_module *m = NULL;\n"
    "    if (g_load(rt, &m, err, sizeof err)) {\n        printf(\"load: %s\\n\", err);\n        tilec_rt_close(rt);\n        return 4;\n    }\n"
    "    tilec_tensor x = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {n}, .strides = {1}}, y = {0};\n"
    "    if (tilec_rt_malloc(rt, (size_t)n * 4, &x.data) != TILEC_RT_OK)\n        return 5;\n"
    "    int rc = g_run(m, &x, &y, err, sizeof err);\n"
    "    printf(\"rc=%d v=%d,%d,%d events=%d%s\\n\", rc, f->mk_launches[0], f->mk_launches[1], f->mk_launches[2],\n"
    "           f->event_records, err);\n"
    "    if (!rc)\n        tilec_rt_free(rt, y.data);\n"
    "    tilec_rt_free(rt, x.data);\n    g_unload(m);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

/* ch_tile's wrapper in dir, --aot ARCH with the choices file dir/ch.txt
 * (text), linked with the runner. */
static void ch_build(const char *dir, const char *arch, const char *choices)
{
    write_in(dir, "g.tile", ch_tile);
    write_in(dir, "ch.txt", choices);
    char *out = NULL;
    int st = sh(&out, "TILEC_CACHE_DIR=%s/cache %s/bin/tilec %s/g.tile --emit c --aot %s --choices %s/ch.txt -q -o %s 2>&1",
                dir, TILEC_BUILD, dir, arch, dir, dir);
    cr_assert_eq(st, 0, "%s", out);
    free(out);
    write_in(dir, "main.c", ch_runner);
    link_runner(dir, "g");
}

static char *ch_run(const char *dir, const char *env, int n)
{
    char *out = NULL;
    int st = sh(&out, "%s %s/run %s %d 2>&1", env, dir, FAKECUDA, n);
    cr_assert_eq(st, 0, "the runner failed (%d):\n%s", st, out);
    return out;
}

/* The choices file names variant 2 for n = 1000 on the fake device (whose
 * clock would choose variant 1) and variant 0 for n = 2000 on another
 * model: the wrapper launches variant 2 at 1000, once, with no event
 * recorded (nothing timed) and says so under TILEC_LOGS=multi_kernel; at
 * 2000 (another device's choice) and at 500 (no choice) it times, as
 * before, and launches the fastest. The same from an sm_80,sm_90a wrapper
 * (the sm_90a table's choices, through tilec_program_load_for_device). */
Test(wrapper_run, aot_choices_launch_the_embedded_winner_untimed, .timeout = 300)
{
    static const char choices[] =
        "# tilec tune choices\n"
        "mk sm_90a \"Fake CUDA Device\" n=1000 -> variant 2 of 3 {BLOCK=256,warps=4}\n"
        "mk sm_90a \"Another GPU\" n=2000 -> variant 0 of 3 {BLOCK=64,warps=2}\n"
        "mk sm_80 \"Fake CUDA Device\" n=500 -> variant 0 of 3 {BLOCK=64,warps=2}\n";
    static const char *const archs[] = {"sm_90a", "sm_80,sm_90a"};
    for (int a = 0; a < 2; a++) {
        char dir[64];
        make_tmpdir(dir, sizeof dir);
        ch_build(dir, archs[a], choices);
        char *out = ch_run(dir, "", 1000);
        cr_expect_str_eq(out, "rc=0 v=0,0,1 events=0\n", "%s: the embedded choice, untimed", archs[a]);
        free(out);
        out = ch_run(dir, "TILEC_LOGS=multi_kernel", 1000);
        cr_expect(strstr(out, "tilec multi_kernel: mk shape (1000): variant 2 (chosen ahead of time, not timed)\n"),
                  "%s: %s", archs[a], out);
        free(out);
        /* another model's choice, a shape with none (sm_80's line is not in the sm_90a table): timed */
        static const int timed[] = {2000, 500};
        for (int i = 0; i < 2; i++) {
            int v0 = -1, v1 = -1, v2 = -1, ev = -1;
            out = ch_run(dir, "", timed[i]);
            cr_expect_eq(sscanf(out, "rc=0 v=%d,%d,%d events=%d", &v0, &v1, &v2, &ev), 4, "%s", out);
            cr_expect_gt(ev, 0, "%s n=%d: timed: %s", archs[a], timed[i], out);
            cr_expect_gt(v1, v2, "%s n=%d: the fastest (variant 1) launched after the timing: %s", archs[a], timed[i],
                         out);
            free(out);
        }
        rm_dir(dir);
    }
}

/* tests/golden/choices: the tables a choices file becomes (the Makefile's
 * CHOICES_TABLE lines of `--aot sm_80,sm_90a --choices`), exactly. */
Test(wrapper_run, aot_choices_golden_table, .timeout = 300)
{
    char dir[64], *out = NULL;
    make_tmpdir(dir, sizeof dir);
    int st = sh(&out,
                "TILEC_CACHE_DIR=%s/cache %s/bin/tilec tests/golden/choices/mk.tile --emit c --aot sm_80,sm_90a "
                "--choices tests/golden/choices/mk.choices -q -o %s 2>&1 && sed -n '/the multi-kernel choices "
                "tuned/,/^};/p; /^static const tilec_aot_table/,/^};/p' %s/g.c",
                dir, TILEC_BUILD, dir, dir);
    cr_assert_eq(st, 0, "%s", out);
    char *want = read_in("tests/golden/choices", "mk.table");
    cr_assert(want);
    cr_expect_str_eq(out, want, "the choice tables differ from tests/golden/choices/mk.table (make golden)");
    free(want);
    free(out);
    rm_dir(dir);
}

/* `tilec tune --choices` on the fake driver writes a line per kernel and
 * shape that the emitter embeds as it is; a second run keeps the lines of
 * other shapes and replaces those it timed again. */
Test(wrapper_run, tune_choices_reach_the_aot_wrapper, .timeout = 300)
{
    char dir[64], *out = NULL;
    make_tmpdir(dir, sizeof dir);
    write_in(dir, "g.tile", ch_tile);
    const char *env = "TILEC_CUDA_DRIVER=" FAKECUDA " TILEC_CACHE_REDIS=";
    cr_assert_eq(sh(&out, "%s %s/bin/tilec tune %s/g.tile --sizes n=1000 --sizes n=50 --dir %s/c --choices %s/ch.txt 2>&1",
                    env, TILEC_BUILD, dir, dir, dir),
                 0, "%s", out);
    int v1 = -1, v2 = -1;
    cr_expect_eq(sscanf(out, "mk n=1000: variant %d of 3 (timed, stored)\nmk n=50: variant %d of 3", &v1, &v2), 2, "%s",
                 out);
    free(out);
    char *text = read_in(dir, "ch.txt");
    cr_assert(text);
    static const char *const hints[] = {"{BLOCK=64,warps=2}", "{BLOCK=128,warps=4}", "{BLOCK=256,warps=4}"};
    char want[512];
    cr_assert(v1 >= 0 && v1 < 3 && v2 >= 0 && v2 < 3);
    snprintf(want, sizeof want,
             "# tilec tune choices (docs/tuning.md): KERNEL TARGET \"DEVICE\" SHAPE -> variant V of N {HINTS}\n"
             "mk sm_90a \"Fake CUDA Device\" n=1000 -> variant %d of 3 %s\n"
             "mk sm_90a \"Fake CUDA Device\" n=50 -> variant %d of 3 %s\n",
             v1, hints[v1], v2, hints[v2]);
    cr_expect_str_eq(text, want);
    free(text);
    cr_assert_eq(sh(&out, "TILEC_CACHE_DIR=%s/cache %s/bin/tilec %s/g.tile --emit c --aot sm_90a --choices %s/ch.txt -q -o %s 2>&1",
                    dir, TILEC_BUILD, dir, dir, dir),
                 0, "%s", out);
    free(out);
    char *c = read_in(dir, "g.c");
    cr_assert(c);
    snprintf(want, sizeof want,
             "    {\"mk\", \"Fake CUDA Device\", 1, tl_key_0, %d}, /* n=1000 */\n"
             "    {\"mk\", \"Fake CUDA Device\", 1, tl_key_1, %d}, /* n=50 */\n",
             v1, v2);
    cr_expect(strstr(c, want), "the table lacks\n%s", want);
    cr_expect(strstr(c, "tl_load_program(rt, &M->prog)"));
    free(c);
    /* again at 50 and 7: 1000's line kept, 50's replaced, 7's added */
    cr_assert_eq(sh(&out, "%s %s/bin/tilec tune %s/g.tile --sizes n=50 --sizes n=7 --dir %s/c --choices %s/ch.txt 2>&1",
                    env, TILEC_BUILD, dir, dir, dir),
                 0, "%s", out);
    free(out);
    text = read_in(dir, "ch.txt");
    cr_assert(text);
    const char *l1000 = strstr(text, "\"Fake CUDA Device\" n=1000 -> "), *l50 = strstr(text, "\"Fake CUDA Device\" n=50 -> "),
               *l7 = strstr(text, "\"Fake CUDA Device\" n=7 -> ");
    cr_expect(l1000 && l50 && l7 && l1000 < l7 && !strstr(l50 + 20, "\" n=50 -> ") && !strstr(text + 1, "# tilec tune choices"),
              "%s", text);
    free(text);
    /* an OUT that is not a choices file: refused before anything is timed, left as it was */
    static const char *const junk[] = {"not a choice line\n", "mk sm_90a \"D\" n=1 -> variant 0 of 3 {}\nno newline"};
    for (int i = 0; i < 2; i++) {
        write_in(dir, "junk.txt", junk[i]);
        cr_expect_eq(sh(&out, "%s %s/bin/tilec tune %s/g.tile --sizes n=9 --dir %s/c --choices %s/junk.txt 2>&1", env,
                        TILEC_BUILD, dir, dir, dir),
                     1, "%s", out);
        cr_expect(strstr(out, i ? "its last line has no newline" : "junk.txt:1: not a choice line") &&
                      strstr(out, "; nothing timed\n"),
                  "%s", out);
        free(out);
        text = read_in(dir, "junk.txt");
        cr_expect_str_eq(text, junk[i]);
        free(text);
    }
    rm_dir(dir);
}

/* A choices file the module does not match, or that is not one, is an
 * error naming the file and line (then the emitter's failure for the
 * graph); nothing is written. */
Test(wrapper_run, aot_choices_refused, .timeout = 300)
{
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"mk sm_90a \"D\" n=1000 -> variant 1 of 3 {BLOCK=256,warps=4}\n",
         "error: --choices DIR/ch.txt:1: kernel mk's variant 1 is {BLOCK=128,warps=4} here, not "
         "{BLOCK=256,warps=4}: it was tuned for another form of the kernel (run tilec tune again)\n"},
        {"# c\nmk sm_90a \"D\" n=1000 -> variant 1 of 4 {BLOCK=128,warps=4}\n",
         "error: --choices DIR/ch.txt:2: kernel mk has 3 variants here, and the line chooses variant 1 of 4: it "
         "was tuned for another form of the kernel (run tilec tune again)\n"},
        {"nope sm_90a \"D\" n=1000 -> variant 1 of 3 {BLOCK=128,warps=4}\n",
         "error: --choices DIR/ch.txt:1: the module has no kernel 'nope'\n"},
        {"mk sm_90a \"D\" m=1000 -> variant 1 of 3 {BLOCK=128,warps=4}\n",
         "error: --choices DIR/ch.txt:1: 'm=1000' is not kernel mk's shape: its integer parameters in order, "
         "each a positive size (NAME=N,...)\n"},
        {"mk sm_9 \"D\" n=1000 -> variant 1 of 3 {BLOCK=128,warps=4}\n",
         "error: --choices DIR/ch.txt:1: the target is no GPU architecture\n"},
        {"mk sm_90a D n=1000 -> variant 1 of 3 {BLOCK=128,warps=4}\n",
         "error: --choices DIR/ch.txt:1: not a choice line (KERNEL TARGET \"DEVICE\" NAME=N,... -> variant V of "
         "N {HINTS}, as `tilec tune ... --choices FILE` writes)\n"},
        {"mk sm_90a \"D\" n=1000 -> variant 1 of 3 {BLOCK=128,warps=4}\n"
         "mk sm_90a \"D\" n=1000 -> variant 2 of 3 {BLOCK=256,warps=4}\n",
         "error: --choices DIR/ch.txt:2: a second choice for kernel mk on sm_90a \"D\" at n=1000 (the first at "
         "line 1)\n"},
    };
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    write_in(dir, "g.tile", ch_tile);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_in(dir, "ch.txt", bad[i].text);
        char *out = NULL;
        int st = sh(&out, "%s/bin/tilec %s/g.tile --emit c --aot sm_90a --choices %s/ch.txt -q -o %s/gen 2>&1",
                    TILEC_BUILD, dir, dir, dir);
        cr_expect_eq(st, 1, "case %zu: %s", i, out);
        char want[1024];
        const char *at = strstr(bad[i].msg, "DIR/");
        snprintf(want, sizeof want, "%.*s%s/%s", (int)(at - bad[i].msg), bad[i].msg, dir, at + 4);
        cr_expect(!strncmp(out, want, strlen(want)), "case %zu: %s", i, out);
        free(out);
        char gen[128];
        snprintf(gen, sizeof gen, "%s/gen/g.c", dir);
        cr_expect_neq(access(gen, F_OK), 0, "case %zu: %s written", i, gen);
    }
    char *out = NULL;
    cr_expect_eq(sh(&out, "%s/bin/tilec %s/g.tile --emit c --choices %s/ch.txt -o %s/gen 2>&1", TILEC_BUILD, dir, dir, dir),
                 2);
    cr_expect(strstr(out, "--choices needs --aot"), "%s", out);
    free(out);
    rm_dir(dir);
}

/* ---- tensor lists in graphs (issue 35): the C wrapper takes a
 * tilec_rt_list per list parameter and launches with it ---- */

/* lscale is a kernel the fake driver runs on its tables of 126 tensors
 * (tilec_rt_list_cap(3, 2)): y[t][j] = s * x[t][j] */
static const char lists_tile[] = "kernel lscale(x: [*f32], y: [*f32], s: f32) grid (len(x)) {\n"
                                 "    let i = pid(0);\n"
                                 "    let n = numel(x, i);\n"
                                 "    let j = range(256);\n"
                                 "    store(y[i] + j, s * load(x[i] + j, j < n), j < n);\n"
                                 "}\n"
                                 "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {\n"
                                 "    let i = pid(0) * 256 + range(256);\n"
                                 "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
                                 "}\n"
                                 "graph lsc(xs: [*f32], ys: [*f32], s: f32, w: f32[N]) -> f32[N] {\n"
                                 "    lscale(xs, ys, s);\n"
                                 "    let t = empty(f32, [N]);\n"
                                 "    scale2(w, t, N);\n"
                                 "    return t;\n"
                                 "}\n";

/* main(driver, n, mode): n tensors in each list, tensor t of t % 5 + 1
 * elements; mode 0 runs it and prints "rc=R launches=L lists=K n=A,B
 * sum=S t=T err=E" (K list launches of A and B tensors, S the sum of every
 * ys element, T the sum of the output); mode 1 passes ys one tensor short;
 * mode 2 passes NULL for xs; mode 3 gives tensor 2 of xs -1 elements;
 * mode 4 runs in graph mode (4 graphs) three times, ys zeroed before each
 * run, tensor 1 of ys moved to another buffer in the third, and prints
 * "graphs=G captured=C" (cuGraphLaunch calls, captured launches) before */
static const char lists_runner[] =
    FAKE_RUNNER_MAIN("lsc.h", "4")
    "    int n = atoi(argv[2]), mode = atoi(argv[3]);\n"
    "    char err[512] = \"\";\n"
    "    lsc_module *m = NULL;\n"
    "    if (lsc_load(rt, &m, err, sizeof err)) {\n        printf(\"load: %s\\n\", err);\n        tilec_rt_close(rt);\n        return 4;\n    }\n"
    "    if (mode == 4 && lsc_set_cuda_graph(m, 4, err, sizeof err)) {\n        printf(\"rc=1 err=%s\\n\", err);\n"
    "        lsc_unload(m);\n        tilec_rt_close(rt);\n        return 0;\n    }\n"
    "    uint64_t xp[300], yp[301];\n    int64_t num[300];\n"
    "    for (int t = 0; t < n; t++) {\n"
    "        float v[5], z[5] = {0};\n        num[t] = t % 5 + 1;\n"
    "        for (int j = 0; j < 5; j++)\n            v[j] = (float)(t + j);\n"
    "        if (tilec_rt_malloc(rt, 20, &xp[t]) || tilec_rt_malloc(rt, 20, &yp[t]) ||\n"
    "            tilec_rt_memcpy_htod(rt, xp[t], v, 20) || tilec_rt_memcpy_htod(rt, yp[t], z, 20))\n            return 5;\n"
    "    }\n"
    "    if (mode == 3)\n        num[2] = -1;\n"
    "    tilec_rt_list xs = {(uint32_t)n, xp, num}, ys = {(uint32_t)(mode == 1 ? n - 1 : n), yp, num};\n"
    "    float wv[3] = {1, 2, 3};\n"
    "    tilec_tensor w = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {3}, .strides = {1}}, out = {0};\n"
    "    if (tilec_rt_malloc(rt, 12, &w.data) || tilec_rt_memcpy_htod(rt, w.data, wv, 12))\n        return 5;\n"
    "    uint64_t y1 = yp[1];\n"
    "    if (mode == 4) { /* graph mode: a recording call, a replay, another buffer in the list */\n"
    "        if (tilec_rt_malloc(rt, 20, &yp[300]))\n            return 5;\n"
    "        uint64_t outs[2] = {0, 0};\n"
    "        for (int r = 0; r < 2; r++) {\n"
    "            if (lsc_run(m, &xs, &ys, 3.0f, &w, &out, err, sizeof err)) {\n"
    "                printf(\"run %d: %s\\n\", r, err);\n                return 6;\n            }\n"
    "            outs[r] = out.data;\n"
    "            tilec_rt_free(rt, out.data);\n"
    "            for (int t = 0; t < n; t++)\n"
    "                if (tilec_rt_memset_d32(rt, yp[t], 0, 5))\n                    return 6;\n"
    "        }\n"
    "        yp[1] = yp[300];\n"
    "        printf(\"graphs=%d captured=%d same_out=%d \", f->graph_launches, f->captured_launches, outs[0] == outs[1]);\n"
    "    }\n"
    "    int launches = f->launches, lists = f->list_launches;\n"
    "    int rc = lsc_run(m, mode == 2 ? NULL : &xs, &ys, 3.0f, &w, &out, err, sizeof err);\n"
    "    double sum = 0, tsum = 0;\n"
    "    for (int t = 0; t < n; t++) {\n"
    "        float v[5];\n"
    "        if (tilec_rt_memcpy_dtoh(rt, v, yp[t], 20))\n            return 6;\n"
    "        for (int j = 0; j < 5; j++)\n            sum += v[j];\n"
    "    }\n"
    "    if (!rc) {\n        float o[3];\n"
    "        if (tilec_rt_memcpy_dtoh(rt, o, out.data, 12))\n            return 6;\n"
    "        tsum = o[0] + o[1] + o[2];\n        tilec_rt_free(rt, out.data);\n    }\n"
    "    printf(\"rc=%d launches=%d lists=%d n=%d,%d sum=%g t=%g err=%s\\n\", rc, f->launches - launches,\n"
    "           f->list_launches - lists, f->list_n[lists % 8], f->list_launches - lists > 1 ? f->list_n[(lists + 1) % 8] : 0,\n"
    "           sum, tsum, err);\n"
    "    yp[1] = y1;\n"
    "    for (int t = 0; t < n; t++) {\n        tilec_rt_free(rt, xp[t]);\n        tilec_rt_free(rt, yp[t]);\n    }\n"
    "    if (mode == 4)\n        tilec_rt_free(rt, yp[300]);\n"
    "    tilec_rt_free(rt, w.data);\n"
    "    lsc_unload(m);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

/* A runner's five tensors a list: xs (x[t][j] = t + j) and ys (unset), tensor t of t % 5 + 1 elements */
#define RUNNER_LISTS5                                                                                                  \
    "    uint64_t xp[5], yp[5];\n    int64_t num[5];\n"                                                                \
    "    for (int t = 0; t < 5; t++) {\n"                                                                              \
    "        float v[5];\n        num[t] = t % 5 + 1;\n"                                                               \
    "        for (int j = 0; j < 5; j++)\n            v[j] = (float)(t + j);\n"                                        \
    "        if (tilec_rt_malloc(rt, 20, &xp[t]) || tilec_rt_malloc(rt, 20, &yp[t]) ||\n"                              \
    "            tilec_rt_memcpy_htod(rt, xp[t], v, 20))\n            return 5;\n"                                     \
    "    }\n"                                                                                                          \
    "    tilec_rt_list xs = {5, xp, num}, ys = {5, yp, num};\n"

/* Sub-lists (docs/language.md §9, "Tensor lists"): lsub passes xs[a:b]
 * and ys[a:b] of five tensors x[t][j] = t + j (t % 5 + 1 elements) to
 * lscale; main(driver, a, b, graphs) prints "rc=R launches=L n=N sum=S
 * err=E" (N the launch's tensors, S the sum of every ys element), running
 * twice in graph mode (graphs=1) and printing "replays=P" first */
static const char sub_tile[] = "kernel lscale(x: [*f32], y: [*f32], s: f32) grid (len(x)) {\n"
                               "    let i = pid(0);\n"
                               "    let n = numel(x, i);\n"
                               "    let j = range(256);\n"
                               "    store(y[i] + j, s * load(x[i] + j, j < n), j < n);\n"
                               "}\n"
                               "graph lsub(xs: [*f32], ys: [*f32], a: i64, b: i64) {\n"
                               "    lscale(xs[a:b], ys[a:b], 3.0);\n"
                               "}\n";

static const char sub_runner[] =
    FAKE_RUNNER_MAIN("lsub.h", "5")
    "    int64_t a = atoll(argv[2]), b = atoll(argv[3]);\n    int graphs = atoi(argv[4]);\n"
    "    char err[512] = \"\";\n"
    "    lsub_module *m = NULL;\n"
    "    if (lsub_load(rt, &m, err, sizeof err) || (graphs && lsub_set_cuda_graph(m, 4, err, sizeof err))) {\n"
    "        printf(\"load: %s\\n\", err);\n        return 4;\n    }\n"
    RUNNER_LISTS5
    "    int rc = 0, launches = f->launches, lists = f->list_launches;\n"
    "    for (int r = 0; r <= graphs; r++) {\n"
    "        for (int t = 0; t < 5; t++)\n"
    "            if (tilec_rt_memset_d32(rt, yp[t], 0, 5))\n                return 6;\n"
    "        launches = f->launches, lists = f->list_launches;\n"
    "        rc = lsub_run(m, &xs, &ys, a, b, err, sizeof err);\n"
    "    }\n"
    "    double sum = 0;\n"
    "    for (int t = 0; t < 5; t++) {\n"
    "        float v[5];\n"
    "        if (tilec_rt_memcpy_dtoh(rt, v, yp[t], 20))\n            return 6;\n"
    "        for (int j = 0; j < 5; j++)\n            sum += v[j];\n"
    "    }\n"
    "    if (graphs)\n        printf(\"replays=%d \", f->graph_launches);\n"
    "    printf(\"rc=%d launches=%d n=%d sum=%g err=%s\\n\", rc, f->launches - launches,\n"
    "           f->list_launches > lists ? f->list_n[lists % 8] : -1, sum, err);\n"
    "    for (int t = 0; t < 5; t++) {\n        tilec_rt_free(rt, xp[t]);\n        tilec_rt_free(rt, yp[t]);\n    }\n"
    "    lsub_unload(m);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

static char *run_sub(const char *dir, int a, int b, int graphs) { return run_args(dir, "%d %d %d", a, b, graphs); }

/* a graph passes tensors a to b - 1 of its lists: the launch sees b - a
 * tensors, the first of them tensor a (3 * (t + j) for t in a .. b - 1);
 * bounds out of the list's length are the wrapper's error before any
 * launch; in graph mode the second call replays */
Test(wrapper_run, a_graph_passes_a_sub_list, .timeout = 120)
{
    char dir[64], want[512];
    new_runner(dir, sizeof dir, sub_tile, "lsub", sub_runner);
    double s13 = 0; /* tensors 1 and 2: 2 and 3 elements */
    for (int t = 1; t < 3; t++)
        for (int j = 0; j < t + 1; j++)
            s13 += 3.0 * (t + j);
    char *out = run_sub(dir, 1, 3, 0);
    snprintf(want, sizeof want, "rc=0 launches=1 n=2 sum=%g err=\n", s13);
    cr_expect_str_eq(out, want);
    free(out);
    out = run_sub(dir, 1, 3, 1);
    snprintf(want, sizeof want, "replays=1 rc=0 launches=1 n=2 sum=%g err=\n", s13);
    cr_expect_str_eq(out, want);
    free(out);
    out = run_sub(dir, 5, 5, 0); /* an empty sub-list at the end: a grid of len(x) = 0 runs nothing */
    cr_expect_str_eq(out, "rc=0 launches=0 n=-1 sum=0 err=\n");
    free(out);
    out = run_sub(dir, 2, 7, 0);
    cr_expect_str_eq(out, "rc=1 launches=0 n=-1 sum=0 err=lsub: line 8: sub-list xs[a:b] is out of bounds: start 2, "
                          "stop 7, and 'xs' has 5 tensors\n");
    free(out);
    out = run_sub(dir, 3, 1, 0);
    cr_expect_str_eq(out, "rc=1 launches=0 n=-1 sum=0 err=lsub: line 8: sub-list xs[a:b] is out of bounds: start 3, "
                          "stop 1, and 'xs' has 5 tensors\n");
    free(out);
    out = run_sub(dir, -1, 1, 0);
    cr_expect_str_eq(out, "rc=1 launches=0 n=-1 sum=0 err=lsub: line 8: sub-list xs[a:b] is out of bounds: start -1, "
                          "stop 1, and 'xs' has 5 tensors\n");
    free(out);
    rm_dir(dir);
}

/* Lists a graph makes (docs/language.md §9, "Tensor lists"): lmix binds
 * sub-lists with let and passes a sub-list of one, and passes lists of its
 * tensors of mixed shapes ([a, b] and a let of [c, d], two it made);
 * lloop makes a list of a tensor its kept loop's body makes and a sub-list
 * in every iteration, the C wrapper's CUDA-graph mode queueing each step
 * with a copy of its lists. main(driver, graph, k, graphs) over five
 * tensors x[t][j] = t + j (t % 5 + 1 elements) prints "rc=R launches=L
 * ys=S c=C d=D err=E" (S the sum of every ys element, C and D of lmix's
 * results), after "replays=P " in graph mode (the second of two calls) */
static const char made_tile[] = "kernel lscale(x: [*f32], y: [*f32], s: f32) grid (len(x)) {\n"
                                "    let i = pid(0);\n"
                                "    let n = numel(x, i);\n"
                                "    let j = range(256);\n"
                                "    store(y[i] + j, s * load(x[i] + j, j < n), j < n);\n"
                                "}\n"
                                "graph lmix(xs: [*f32], ys: [*f32], a: f32[5], b: f32[2, 3], k: i64) -> (c: f32[5], "
                                "d: f32[2, 3]) {\n"
                                "    let head = xs[:k];\n"
                                "    let yh = ys[:k];\n"
                                "    lscale(head[1:], yh[1:], 2.0);\n"
                                "    let c = zeros(f32, [5]);\n"
                                "    let d = zeros(f32, [2, 3]);\n"
                                "    let outs = [c, d];\n"
                                "    lscale([a, b], outs, 3.0);\n"
                                "    return c, d;\n"
                                "}\n"
                                "graph lloop(xs: [*f32], ys: [*f32], n: i64) {\n"
                                "    for i in 0 .. n {\n"
                                "        let t = zeros(f32, [5]);\n"
                                "        lscale(xs[i:i + 1], [t], 2.0);\n"
                                "        lscale([t], ys[i:i + 1], 3.0);\n"
                                "    }\n"
                                "}\n";

static const char made_runner[] =
    "#include <string.h>\n#include \"lloop.h\"\n"
    FAKE_RUNNER_MAIN("lmix.h", "5")
    "    int loop = !strcmp(argv[2], \"lloop\");\n"
    "    int64_t k = atoll(argv[3]);\n    int graphs = atoi(argv[4]);\n"
    "    char err[512] = \"\";\n"
    "    lmix_module *m = NULL;\n    lloop_module *l = NULL;\n"
    "    if (loop ? (lloop_load(rt, &l, err, sizeof err) || (graphs && lloop_set_cuda_graph(l, 4, err, sizeof err)))\n"
    "             : (lmix_load(rt, &m, err, sizeof err) || (graphs && lmix_set_cuda_graph(m, 4, err, sizeof err)))) {\n"
    "        printf(\"load: %s\\n\", err);\n        return 4;\n    }\n"
    RUNNER_LISTS5
    "    float av[5] = {1, 2, 3, 4, 5}, bv[6] = {10, 20, 30, 40, 50, 60};\n"
    "    tilec_tensor a = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {5}, .strides = {1}};\n"
    "    tilec_tensor b = {.dtype = TILEC_DT_F32, .rank = 2, .sizes = {2, 3}, .strides = {3, 1}};\n"
    "    tilec_tensor c = {0}, d = {0};\n"
    "    if (tilec_rt_malloc(rt, 20, &a.data) || tilec_rt_memcpy_htod(rt, a.data, av, 20) ||\n"
    "        tilec_rt_malloc(rt, 24, &b.data) || tilec_rt_memcpy_htod(rt, b.data, bv, 24))\n        return 5;\n"
    "    int rc = 0, launches = 0;\n"
    "    double cs = 0, ds = 0;\n"
    "    for (int r = 0; r <= graphs; r++) {\n"
    "        for (int t = 0; t < 5; t++)\n"
    "            if (tilec_rt_memset_d32(rt, yp[t], 0, 5))\n                return 6;\n"
    "        launches = f->launches;\n"
    "        rc = loop ? lloop_run(l, &xs, &ys, k, err, sizeof err)\n"
    "                  : lmix_run(m, &xs, &ys, &a, &b, k, &c, &d, err, sizeof err);\n"
    "        cs = ds = 0;\n"
    "        if (!rc && !loop) {\n"
    "            float cv[5], dv[6];\n"
    "            if (tilec_rt_memcpy_dtoh(rt, cv, c.data, 20) || tilec_rt_memcpy_dtoh(rt, dv, d.data, 24))\n"
    "                return 6;\n"
    "            for (int j = 0; j < 6; j++)\n                cs += j < 5 ? cv[j] : 0, ds += dv[j];\n"
    "            lmix_release(m, &c);\n            lmix_release(m, &d);\n"
    "        }\n"
    "    }\n"
    "    double sum = 0;\n"
    "    for (int t = 0; t < 5; t++) {\n"
    "        float v[5];\n"
    "        if (tilec_rt_memcpy_dtoh(rt, v, yp[t], 20))\n            return 6;\n"
    "        for (int j = 0; j < t % 5 + 1; j++)\n            sum += v[j];\n"
    "    }\n"
    "    if (graphs)\n        printf(\"replays=%d \", f->graph_launches);\n"
    "    printf(\"rc=%d launches=%d ys=%g c=%g d=%g err=%s\\n\", rc, f->launches - launches, sum, cs, ds, err);\n"
    "    for (int t = 0; t < 5; t++) {\n        tilec_rt_free(rt, xp[t]);\n        tilec_rt_free(rt, yp[t]);\n    }\n"
    "    tilec_rt_free(rt, a.data);\n    tilec_rt_free(rt, b.data);\n"
    "    if (loop)\n        lloop_unload(l);\n    else\n        lmix_unload(m);\n"
    "    tilec_rt_close(rt);\n    return 0;\n}\n";

static char *run_made(const char *dir, const char *graph, int k, int graphs) { return run_args(dir, "%s %d %d", graph, k, graphs); }

/* The sum of s * x over tensors lo to hi - 1 of t % 5 + 1 elements x[t][j] = t + j. */
static double lists_sum(int lo, int hi, double s)
{
    double sum = 0;
    for (int t = lo; t < hi; t++)
        for (int j = 0; j < t % 5 + 1; j++)
            sum += s * (t + j);
    return sum;
}

Test(wrapper_run, a_graph_makes_lists_of_its_tensors_and_binds_sub_lists, .timeout = 180)
{
    char dir[64], want[512];
    new_runner(dir, sizeof dir, made_tile, "lmix lloop", made_runner);
    /* lmix, k = 4: ys[1..3] = 2 x (head[1:] of xs[:4]); c = 3 a, d = 3 b (each tensor its own size) */
    char *out = run_made(dir, "lmix", 4, 0);
    snprintf(want, sizeof want, "rc=0 launches=2 ys=%g c=45 d=630 err=\n", lists_sum(1, 4, 2));
    cr_expect_str_eq(out, want);
    free(out);
    out = run_made(dir, "lmix", 4, 1); /* graph mode: the second call replays */
    snprintf(want, sizeof want, "replays=1 rc=0 launches=2 ys=%g c=45 d=630 err=\n", lists_sum(1, 4, 2));
    cr_expect_str_eq(out, want);
    free(out);
    out = run_made(dir, "lmix", 9, 0); /* the let's bounds, checked where it stands, before any launch */
    cr_expect_str_eq(out, "rc=1 launches=0 ys=0 c=0 d=0 err=lmix: line 8: sub-list xs[0:k] is out of bounds: start "
                          "0, stop 9, and 'xs' has 5 tensors\n");
    free(out);
    out = run_made(dir, "lmix", 0, 0); /* head[1:] of an empty head: 1 > 0 */
    cr_expect_str_eq(out, "rc=1 launches=0 ys=0 c=0 d=0 err=lmix: line 10: sub-list head[1:] is out of bounds: start "
                          "1, stop 0, and 'head' has 0 tensors\n");
    free(out);
    /* lloop, n = 5: ys[i] = 3 * 2 x[i], through a buffer of the body's own, two launches an iteration */
    out = run_made(dir, "lloop", 5, 0);
    snprintf(want, sizeof want, "rc=0 launches=10 ys=%g c=0 d=0 err=\n", lists_sum(0, 5, 6));
    cr_expect_str_eq(out, want);
    free(out);
    /* graph mode: each queued step keeps its iteration's lists (before, every step read the last
       iteration's: a sub-list in a kept loop had no graph mode); the second call replays */
    out = run_made(dir, "lloop", 5, 1);
    snprintf(want, sizeof want, "replays=1 rc=0 launches=10 ys=%g c=0 d=0 err=\n", lists_sum(0, 5, 6));
    cr_expect_str_eq(out, want);
    free(out);
    rm_dir(dir);
}

/* dir/run on the fake driver once per case, its arguments cases[c] ("2 3 0"),
 * its output want[c]. */
static void expect_runs(const char *dir, const char *const *cases, const char *const *want, int n)
{
    for (int c = 0; c < n; c++) {
        char *out = run_args(dir, "%s", cases[c]);
        cr_expect_str_eq(out, want[c], "case %d", c);
        free(out);
    }
}

/* One tensor of a list, xs[i], as a kernel's pointer argument (docs/language.md
 * §9, "Tensor lists"): litem passes xs[k] and ys[k] (three elements), tensor 0
 * of a list [w, t] of its tensors to write tensor 1, and xs[i], ys[i + 1] in a
 * kept loop; main(driver, k, n, graphs) over five tensors x[t][j] = t + j
 * (t % 5 + 1 elements) prints "rc=R ys=S t=T err=E" (S the sum of every ys
 * element, T of the result), after "replays=P " in graph mode (two calls) */
static const char item_tile[] = "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {\n"
                                "    let i = pid(0) * 256 + range(256);\n"
                                "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
                                "}\n"
                                "graph litem(xs: [*f32], ys: [*f32], k: i64, n: i64, w: f32[N]) -> f32[N] {\n"
                                "    scale2(xs[k], ys[k], 3);\n"
                                "    let t = zeros(f32, [N]);\n"
                                "    let ws = [w, t];\n"
                                "    scale2(ws[0], ws[1], N);\n"
                                "    for i in 0 .. n {\n"
                                "        scale2(xs[i], ys[i + 1], 1);\n"
                                "    }\n"
                                "    return t;\n"
                                "}\n";

static const char item_runner[] =
    FAKE_RUNNER_MAIN("litem.h", "5")
    "    int64_t k = atoll(argv[2]), n = atoll(argv[3]);\n    int graphs = atoi(argv[4]);\n"
    "    char err[512] = \"\";\n"
    "    litem_module *m = NULL;\n"
    "    if (litem_load(rt, &m, err, sizeof err) || (graphs && litem_set_cuda_graph(m, 4, err, sizeof err))) {\n"
    "        printf(\"load: %s\\n\", err);\n        return 4;\n    }\n"
    RUNNER_LISTS5
    "    float wv[4] = {1, 2, 3, 4};\n"
    "    tilec_tensor w = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {4}, .strides = {1}}, out = {0};\n"
    "    if (tilec_rt_malloc(rt, 16, &w.data) || tilec_rt_memcpy_htod(rt, w.data, wv, 16))\n        return 5;\n"
    "    int rc = 0;\n    double ts = 0;\n"
    "    for (int r = 0; r <= graphs; r++) {\n"
    "        for (int t = 0; t < 5; t++)\n"
    "            if (tilec_rt_memset_d32(rt, yp[t], 0, 5))\n                return 6;\n"
    "        rc = litem_run(m, &xs, &ys, k, n, &w, &out, err, sizeof err);\n"
    "        ts = 0;\n"
    "        if (!rc) {\n            float o[4];\n"
    "            if (tilec_rt_memcpy_dtoh(rt, o, out.data, 16))\n                return 6;\n"
    "            ts = o[0] + o[1] + o[2] + o[3];\n            litem_release(m, &out);\n        }\n"
    "    }\n"
    "    double sum = 0;\n"
    "    for (int t = 0; t < 5; t++) {\n"
    "        float v[5];\n"
    "        if (tilec_rt_memcpy_dtoh(rt, v, yp[t], 20))\n            return 6;\n"
    "        for (int j = 0; j < t % 5 + 1; j++)\n            sum += v[j];\n"
    "    }\n"
    "    if (graphs)\n        printf(\"replays=%d \", f->graph_launches);\n"
    "    printf(\"rc=%d ys=%g t=%g err=%s\\n\", rc, sum, ts, err);\n"
    "    for (int t = 0; t < 5; t++) {\n        tilec_rt_free(rt, xp[t]);\n        tilec_rt_free(rt, yp[t]);\n    }\n"
    "    tilec_rt_free(rt, w.data);\n"
    "    litem_unload(m);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

Test(wrapper_run, a_graph_passes_one_tensor_of_a_list_to_a_kernel, .timeout = 180)
{
    char dir[64];
    new_runner(dir, sizeof dir, item_tile, "litem", item_runner);
    /* k = 2, n = 3: ys[2] = 2 x[2] = {4, 6, 8}; then ys[i + 1][0] = 2 x[i][0] = 2i for i < 3
       (ys[2][0] becomes 2): 0 + (2 + 6 + 8) + 4 = 20; t = 2 w = 20 */
    const char *cases[] = {"2 3 0", "2 3 1", "5 0 0", "-1 0 0", "0 5 0"};
    const char *want[] = {
        "rc=0 ys=20 t=20 err=\n",
        "replays=1 rc=0 ys=20 t=20 err=\n",
        "rc=1 ys=0 t=0 err=litem: line 6: xs[k] is out of bounds: index 5, and 'xs' has 5 tensors\n",
        "rc=1 ys=0 t=0 err=litem: line 6: xs[k] is out of bounds: index -1, and 'xs' has 5 tensors\n",
        /* the loop's fifth iteration: the four before it ran (eager), ys[1..4][0] = 0, 2, 4, 6, and
           ys[0] = 2 x[0] = 0 */
        "rc=1 ys=12 t=0 err=litem: line 11: ys[i + 1] is out of bounds: index 5, and 'ys' has 5 tensors\n",
    };
    expect_runs(dir, cases, want, 5);
    rm_dir(dir);
}

/* view(xs[k], f32[2, m]): tensor k of a list as a tensor of a shape, its
 * second row (a slice) doubled; main(driver, k, m) over five tensors
 * x[t][j] = t + j (t % 5 + 1 elements) prints "rc=R x3=A,B,C,D err=E" */
static const char view_tile[] = "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {\n"
                                "    let i = pid(0) * 256 + range(256);\n"
                                "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
                                "}\n"
                                "graph lview(xs: [*f32], k: i64, m: i64) {\n"
                                "    let w = view(xs[k], f32[2, m]);\n"
                                "    let r = w[1:];\n"
                                "    scale2(r, r, m);\n"
                                "}\n";

/* A runner's five tensors x[t][j] = t + j, tensor t of t % 5 + 1 elements (xp, num) */
#define RUNNER_XS5                                                                                                     \
    "    uint64_t xp[5];\n    int64_t num[5];\n"                                                                        \
    "    for (int t = 0; t < 5; t++) {\n"                                                                              \
    "        float v[5];\n        num[t] = t % 5 + 1;\n"                                                               \
    "        for (int j = 0; j < 5; j++)\n            v[j] = (float)(t + j);\n"                                        \
    "        if (tilec_rt_malloc(rt, 20, &xp[t]) || tilec_rt_memcpy_htod(rt, xp[t], v, 20))\n            return 5;\n" \
    "    }\n"

static const char view_runner[] =
    FAKE_RUNNER_MAIN("lview.h", "4")
    "    int64_t k = atoll(argv[2]), m = atoll(argv[3]);\n"
    "    char err[512] = \"\";\n"
    "    lview_module *mod = NULL;\n"
    "    if (lview_load(rt, &mod, err, sizeof err)) {\n        printf(\"load: %s\\n\", err);\n        return 4;\n    }\n"
    RUNNER_XS5
    "    tilec_rt_list xs = {5, xp, num};\n"
    "    (void)f;\n    int rc = lview_run(mod, &xs, k, m, err, sizeof err);\n"
    "    float x3[4];\n"
    "    if (tilec_rt_memcpy_dtoh(rt, x3, xp[3], 16))\n        return 6;\n"
    "    printf(\"rc=%d x3=%g,%g,%g,%g err=%s\\n\", rc, x3[0], x3[1], x3[2], x3[3], err);\n"
    "    for (int t = 0; t < 5; t++)\n        tilec_rt_free(rt, xp[t]);\n"
    "    lview_unload(mod);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

Test(wrapper_run, a_graph_views_one_tensor_of_a_list, .timeout = 180)
{
    char dir[64];
    new_runner(dir, sizeof dir, view_tile, "lview", view_runner);
    const char *cases[] = {"3 2", "9 2", "2 2"};
    const char *want[] = {
        "rc=0 x3=3,4,10,12 err=\n", /* tensor 3, [3, 4, 5, 6] as f32[2, 2]: its second row doubled */
        "rc=1 x3=3,4,5,6 err=lview: line 6: xs[k] is out of bounds: index 9, and 'xs' has 5 tensors\n",
        "rc=1 x3=3,4,5,6 err=lview: line 6: view w of xs[k] (3 elements, 12 bytes) as f32[2, m] (16 bytes) changes its "
        "size\n",
    };
    expect_runs(dir, cases, want, 3);
    rm_dir(dir);
}

/* xs[k] as an extern's argument: viewed as its parameter's f32[N] (N from
 * 'a'), the extern my.addto adds a into it; then a view of a tensor of a
 * list of the graph's tensors, [a, b], doubled in place by scale2.
 * main(driver, k, n) over five tensors x[t][j] = t + j (t % 5 + 1
 * elements), a = {1, 2, ...} of n elements, prints "rc=R x3=A,B,C,D
 * a=P,Q err=E" */
static const char ext_item_tile[] = "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {\n"
                                    "    let i = pid(0) * 256 + range(256);\n"
                                    "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
                                    "}\n"
                                    "extern addto(x: f32[N], y: f32[N]) = \"my.addto\";\n"
                                    "graph lext(a: f32[N], xs: [*f32], k: i64) {\n"
                                    "    addto(a, xs[k]);\n"
                                    "    let b = zeros(f32, [N]);\n"
                                    "    let ls = [b, a];\n"
                                    "    let w = view(ls[1], f32[N]);\n"
                                    "    scale2(w, w, N);\n"
                                    "}\n";

static const char ext_item_runner[] =
    FAKE_RUNNER_MAIN("lext.h", "4")
    "    int64_t k = atoll(argv[2]), n = atoll(argv[3]);\n"
    "    char err[512] = \"\";\n"
    "    lext_module *mod = NULL;\n"
    "    if (lext_load(rt, &mod, err, sizeof err) || tilec_externs_register(lext_externs(mod), \"my.addto\", addto, rt)) {\n"
    "        printf(\"load: %s\\n\", err);\n        return 4;\n    }\n"
    RUNNER_XS5
    "    float ah[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
    "    tilec_tensor a = {.dtype = TILEC_DT_F32, .rank = 1, .sizes = {n}, .strides = {1}};\n"
    "    if (tilec_rt_malloc(rt, 32, &a.data) || tilec_rt_memcpy_htod(rt, a.data, ah, 32))\n        return 5;\n"
    "    tilec_rt_list xs = {5, xp, num};\n"
    "    (void)f;\n    int rc = lext_run(mod, &a, &xs, k, err, sizeof err);\n"
    "    float x3[4];\n"
    "    if (tilec_rt_memcpy_dtoh(rt, x3, xp[3], 16) || tilec_rt_memcpy_dtoh(rt, ah, a.data, 8))\n        return 6;\n"
    "    printf(\"rc=%d x3=%g,%g,%g,%g a=%g,%g err=%s\\n\", rc, x3[0], x3[1], x3[2], x3[3], ah[0], ah[1], err);\n"
    "    for (int t = 0; t < 5; t++)\n        tilec_rt_free(rt, xp[t]);\n"
    "    tilec_rt_free(rt, a.data);\n"
    "    lext_unload(mod);\n    tilec_rt_close(rt);\n    return 0;\n}\n";

/* my.addto(x, y): y += x, element by element, through host copies (the fake
 * driver runs stream work at once) */
static const char ext_item_fn[] =
    "#include \"tilec/externs.h\"\n#include \"tilec/runtime.h\"\n"
    "static int addto(void *u, tilec_rt *r, void *stream, const tilec_tensor *in, uint32_t nin, tilec_tensor *out,\n"
    "                 uint32_t nout, char *err, size_t errlen)\n{\n"
    "    (void)u;\n    (void)stream;\n    (void)out;\n    (void)nout;\n    (void)err;\n    (void)errlen;\n"
    "    float x[8], y[8];\n    int64_t n = in[0].sizes[0];\n"
    "    if (nin != 2 || n > 8 || in[1].sizes[0] != n || tilec_rt_memcpy_dtoh(r, x, in[0].data, (size_t)n * 4) ||\n"
    "        tilec_rt_memcpy_dtoh(r, y, in[1].data, (size_t)n * 4))\n        return -1;\n"
    "    for (int64_t i = 0; i < n; i++)\n        y[i] += x[i];\n"
    "    return tilec_rt_memcpy_htod(r, in[1].data, y, (size_t)n * 4) ? -1 : 0;\n}\n";

Test(wrapper_run, a_graph_passes_one_tensor_of_a_list_to_an_extern, .timeout = 180)
{
    char dir[64];
    size_t n = strlen(ext_item_fn) + strlen(ext_item_runner) + 1;
    char *src = malloc(n);
    cr_assert(src);
    snprintf(src, n, "%s%s", ext_item_fn, ext_item_runner);
    new_runner(dir, sizeof dir, ext_item_tile, "lext", src);
    free(src);
    const char *cases[] = {"3 4", "9 4", "1 4"};
    const char *want[] = {
        /* tensor 3, [3, 4, 5, 6], plus a = [1, 2, 3, 4]; then a doubled through view(ls[1], f32[N]) */
        "rc=0 x3=4,6,8,10 a=2,4 err=\n",
        "rc=1 x3=3,4,5,6 a=1,2 err=lext: line 7: xs[k] is out of bounds: index 9, and 'xs' has 5 tensors\n",
        "rc=1 x3=3,4,5,6 a=1,2 err=lext: line 7: view addto_y of xs[k] (2 elements, 8 bytes) as f32[N] (16 bytes) "
        "changes its size\n",
    };
    expect_runs(dir, cases, want, 3);
    rm_dir(dir);
}

static char *run_mode(const char *dir, int n, int mode) { return run_args(dir, "%d %d", n, mode); }

Test(wrapper_run, a_graph_passes_its_tensor_lists_to_the_launch, .timeout = 120)
{
    char dir[64], want[512];
    new_runner(dir, sizeof dir, lists_tile, "lsc", lists_runner);
    char *out = run_mode(dir, 5, 0); /* one launch of the five tensors' table */
    snprintf(want, sizeof want, "rc=0 launches=2 lists=1 n=5,0 sum=%g t=12 err=\n", lists_sum(0, 5, 3));
    cr_expect_str_eq(out, want);
    free(out);
    out = run_mode(dir, 130, 0); /* past the table's 126: the launch splits, in order */
    snprintf(want, sizeof want, "rc=0 launches=3 lists=2 n=126,4 sum=%g t=12 err=\n", lists_sum(0, 130, 3));
    cr_expect_str_eq(out, want);
    free(out);
    out = run_mode(dir, 0, 0); /* an empty list: a grid of len(x) = 0 programs runs nothing */
    cr_expect_str_eq(out, "rc=0 launches=1 lists=0 n=0,0 sum=0 t=12 err=\n");
    free(out);
    out = run_mode(dir, 3, 1);
    cr_expect_str_eq(out, "rc=1 launches=0 lists=0 n=0,0 sum=0 t=0 err=lsc: launch of lscale failed: kernel 'lscale': "
                          "tensor list arguments 1 and 2 have 3 and 2 tensors; every list of a launch must have as many\n");
    free(out);
    out = run_mode(dir, 3, 2);
    cr_expect_str_eq(out, "rc=1 launches=0 lists=0 n=0,0 sum=0 t=0 err=lsc: xs must be a tensor list of f32: a "
                          "tilec_rt_list of n tensors, their addresses and element counts\n");
    free(out);
    out = run_mode(dir, 3, 3);
    const char *neg = "rc=1 launches=0 lists=0 n=0,0 sum=0 t=0 err=lsc: tensor 2 of list xs has -1 elements at address 0x";
    cr_expect(!strncmp(out, neg, strlen(neg)) && strstr(out, " (a count >= 0, at an address aligned to 4 bytes)\n"), "%s",
              out);
    free(out);
    /* graph mode: recorded (the eager run's two launches, then the capture's), replayed, and with
       tensor 1 of ys moved recorded at once and launched: its sum is read from the new buffer. The
       second call replays where the graph's output came back at the same address (the allocator
       reused it); where it did not (ASan's quarantine), it records again: two captures more */
    out = run_mode(dir, 5, 4);
    int same = strstr(out, "same_out=1 ") != NULL;
    snprintf(want, sizeof want, "graphs=1 captured=%d same_out=%d rc=0 launches=2 lists=1 n=5,0 sum=%g t=12 err=\n",
             same ? 2 : 4, same, lists_sum(0, 5, 3));
    cr_expect_str_eq(out, want);
    free(out);
    rm_dir(dir);
}
