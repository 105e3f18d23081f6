/* test_cli_outputs.c: what one run of the tilec command writes, as a set:
 * never over an input (by inode: ./a.tile, symlinks, hard links), never
 * two outputs on one path (refused before anything is written), one valid
 * CUDA file for several inputs, the output directory checked before
 * anything compiles (and made with its parents), a run with nothing to
 * write said clearly, standard input as `-`. */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_helpers.h"
#include "helpers.h"
#include "tilec/runtime.h"

#ifndef TILEC_BIN
#define TILEC_BIN "build/bin/tilec"
#endif

static int tilec(char **out, const char *dir, const char *args)
{
    return sh(out, "cd %s && TILEC_CACHE_DIR=%s/cache %s/%s %s", dir, dir, getenv("PWD"), TILEC_BIN, args);
}

static int exists(const char *dir, const char *name)
{
    char path[600];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

/* A fresh directory in dir (dir_size bytes) holding example as each of
 * the names (NULL-ended); the example's text, which the caller frees. */
static char *dir_with(char *dir, size_t dir_size, const char *example, const char *const *names)
{
    make_tmpdir(dir, dir_size);
    char *src = read_file(example, NULL);
    cr_assert(src, "no %s", example);
    for (; *names; names++)
        write_in(dir, *names, src);
    return src;
}

/* The input survives byte for byte. */
static void same_text(const char *dir, const char *file, const char *want)
{
    char *got = read_in(dir, file);
    cr_assert(got, "%s/%s is gone", dir, file);
    cr_expect_str_eq(got, want, "%s/%s was overwritten", dir, file);
    free(got);
}

Test(cli_outputs, no_output_is_an_input)
{
    char dir[64], *out;
    make_tmpdir(dir, sizeof dir);
    char *src = read_file("examples/e2e.tile", NULL);
    cr_assert(src);
    write_in(dir, "a.tile", src);
    cr_assert_eq(
        sh(&out, "cd %s && ln -s a.tile sym.tile && ln a.tile hard.tile && mkdir gen && ln a.tile gen/e2e.c", dir), 0);
    free(out);
    static const char *const runs[][2] = {
        {"a.tile --emit cuda -o a.tile", "the output a.tile is the input a.tile"},
        {"a.tile --emit ast -o ./a.tile", "the output ./a.tile is the input a.tile"},
        {"a.tile --emit ir -o sym.tile", "the output sym.tile is the input a.tile"},
        {"sym.tile --emit layouts -o hard.tile", "the output hard.tile is the input sym.tile"},
        {"- --emit ast -o hard.tile < a.tile", "the output hard.tile is the input <stdin>"},
        /* an emitter's file in -o DIR that is an input through a hard link */
        {"hard.tile --emit c -o gen", "the output gen/e2e.c is the input hard.tile"},
    };
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        cr_expect_eq(tilec(&out, dir, runs[i][0]), 1, "tilec %s: %s", runs[i][0], out);
        char want[300];
        snprintf(want, sizeof want, "tilec: error: %s: refusing to overwrite it\n", runs[i][1]);
        cr_expect_str_eq(out, want, "tilec %s", runs[i][0]);
        free(out);
        same_text(dir, "a.tile", src);
    }
    cr_expect(!exists(dir, "gen/e2e.h"), "a refused run wrote e2e.h");
    free(src);
    rm_dir(dir);
}

/* Two inputs whose outputs meet in -o DIR: refused before anything is
 * written, and DIR is not made. */
Test(cli_outputs, outputs_of_one_run_never_collide)
{
    char dir[64], *out;
    free(dir_with(dir, sizeof dir, "examples/e2e.tile", (const char *[]){"a.tile", "b.tile", NULL}));
    static const char *const kinds[] = {"c", "py"};
    for (size_t i = 0; i < 2; i++) {
        char args[200];
        snprintf(args, sizeof args, "a.tile b.tile --emit %s -o gen", kinds[i]);
        cr_expect_eq(tilec(&out, dir, args), 1, "%s", out);
        cr_expect(!strncmp(out, "tilec: error: a.tile and b.tile both write gen/e2e.", 44), "%s", out);
        free(out);
        cr_expect(!exists(dir, "gen"), "--emit %s made gen", kinds[i]);
    }
    /* two names that are one file through a link in DIR */
    cr_assert_eq(sh(&out, "cd %s && mkdir gen && ln -s e2e.c gen/e2e.h && touch gen/e2e.c", dir), 0);
    free(out);
    cr_expect_eq(tilec(&out, dir, "a.tile --emit c -o gen"), 1, "%s", out);
    cr_expect(strstr(out, "are one file (a link): both are outputs"), "%s", out);
    free(out);
    rm_dir(dir);
}

/* Several inputs into one CUDA file: one prelude, every kernel; a kernel
 * name defined twice is an error at the second, and nothing is written. */
Test(cli_outputs, emit_cuda_of_several_files_is_one_translation_unit)
{
    char dir[64], *out;
    free(dir_with(dir, sizeof dir, "examples/add_relu.tile", (const char *[]){"copy.tile", NULL}));
    char args[600];
    snprintf(args, sizeof args, "%s/examples/add_relu.tile %s/examples/softmax.tile --emit cuda -o k.cu", getenv("PWD"),
             getenv("PWD"));
    cr_expect_eq(tilec(&out, dir, args), 0, "%s", out);
    free(out);
    char *cu = read_in(dir, "k.cu");
    cr_assert(cu);
    const char *first = strstr(cu, "void tl_cp_commit()");
    cr_expect(first && !strstr(first + 1, "void tl_cp_commit()"), "the prelude is not there once");
    cr_expect(strstr(cu, " add_relu_v0(") && strstr(cu, " softmax_v0("), "a kernel is missing");
    /* and it compiles (twice-defined helpers did not) */
    void *cubin = NULL;
    size_t size = 0;
    char *log = NULL;
    cr_expect_eq(tilec_nvrtc_compile(cu, "k.cu", "sm_90", NULL, 0, &cubin, &size, &log), TILEC_RT_OK, "%s",
                 log ? log : "");
    free(cubin);
    free(log);
    free(cu);
    snprintf(args, sizeof args, "%s/examples/add_relu.tile copy.tile --emit cuda -o dup.cu", getenv("PWD"));
    cr_expect_eq(tilec(&out, dir, args), 1, "%s", out);
    char want[600];
    snprintf(want, sizeof want,
             "copy.tile:2:1: error: kernel 'add_relu' is also defined at %s/examples/add_relu.tile:2:1: one CUDA "
             "file cannot hold both (add_relu_v0 would be defined twice); rename one\n",
             getenv("PWD"));
    cr_expect(!strncmp(out, want, strlen(want)), "%s", out);
    free(out);
    cr_expect(!exists(dir, "dup.cu"), "a refused run wrote dup.cu");
    rm_dir(dir);
}

/* --emit c/py of files without a graph: a note for each, an error when
 * the whole run has nothing to write (and no directory is made). */
Test(cli_outputs, nothing_to_write_is_said)
{
    char dir[64], args[600], *out;
    make_tmpdir(dir, sizeof dir);
    const char *pwd = getenv("PWD");
    static const char *const kinds[] = {"c", "py"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "%s/examples/add_relu.tile --emit %s -o gen", pwd, kinds[i]);
        cr_expect_eq(tilec(&out, dir, args), 1, "%s", out);
        char want[800];
        snprintf(want, sizeof want,
                 "%s/examples/add_relu.tile: note: no graph, so --emit %s writes nothing for it\n"
                 "tilec: error: nothing to write: no input has a graph (--emit %s writes a wrapper per graph)\n",
                 pwd, kinds[i], kinds[i]);
        cr_expect_str_eq(out, want);
        free(out);
        cr_expect(!exists(dir, "gen"));
        /* with a file that has a graph: the note, and its wrapper */
        snprintf(args, sizeof args, "%s/examples/add_relu.tile %s/examples/e2e.tile --emit %s -o gen", pwd, pwd,
                 kinds[i]);
        cr_expect_eq(tilec(&out, dir, args), 0, "%s", out);
        cr_expect(strstr(out, "add_relu.tile: note: no graph"), "%s", out);
        free(out);
        cr_expect(exists(dir, i ? "gen/e2e.py" : "gen/e2e.c"));
        cr_assert_eq(sh(&out, "rm -r %s/gen", dir), 0);
        free(out);
    }
    rm_dir(dir);
}

/* -o DIR is checked before anything compiles: a file in the way is an
 * error at once (no kernel compiled); missing parents are made. */
Test(cli_outputs, output_directory_checked_before_compiling)
{
    char dir[64], args[600], *out;
    make_tmpdir(dir, sizeof dir);
    write_in(dir, "file", "x");
    snprintf(args, sizeof args, "%s/examples/add_relu.tile --emit cubin --no-cache -o file/sub/k", getenv("PWD"));
    cr_expect_eq(tilec(&out, dir, args), 1, "%s", out);
    cr_expect_str_eq(out, "tilec: error: cannot write into file/sub/k: file is not a directory\n");
    free(out);
    snprintf(args, sizeof args, "%s/examples/e2e.tile --emit c -o file", getenv("PWD"));
    cr_expect_eq(tilec(&out, dir, args), 1, "%s", out);
    cr_expect_str_eq(out, "tilec: error: cannot write into file: file is not a directory\n");
    free(out);
    snprintf(args, sizeof args, "%s/examples/add_relu.tile --emit cubin -q -o out/cubin", getenv("PWD"));
    cr_expect_eq(tilec(&out, dir, args), 0, "%s", out);
    free(out);
    cr_expect(exists(dir, "out/cubin/add_relu_v0.cubin") && exists(dir, "out/cubin/add_relu_v0.meta"));
    rm_dir(dir);
}

/* `-` is standard input, named <stdin> in diagnostics and output; `-o -`
 * is standard output (no file named '-'). */
Test(cli_outputs, standard_input)
{
    char dir[64], args[600], *out;
    make_tmpdir(dir, sizeof dir);
    snprintf(args, sizeof args, "%s/examples/add_relu.tile --emit cuda -o -", getenv("PWD"));
    cr_expect_eq(tilec(&out, dir, args), 0, "%s", out);
    cr_expect(strstr(out, "add_relu_v0"), "-o - wrote no CUDA to standard output: %s", out);
    free(out);
    char *dash = read_in(dir, "-");
    cr_expect_null(dash, "-o - wrote a file named '-'");
    free(dash);
    snprintf(args, sizeof args, "- --emit py -o gen < %s/examples/e2e.tile", getenv("PWD"));
    cr_expect_eq(tilec(&out, dir, args), 0, "%s", out);
    free(out);
    char *py = read_in(dir, "gen/e2e.py");
    cr_assert(py);
    cr_expect(strstr(py, "TILE_FILE = \"<stdin>\""), "no <stdin> in the wrapper");
    free(py);
    write_in(dir, "bad.tile", "kernel k(n: i32) grid (1) {\n    let x = y;\n}\n");
    cr_expect_eq(tilec(&out, dir, "- < bad.tile"), 1, "%s", out);
    cr_expect_str_eq(out, "<stdin>:2:13: error: undefined name 'y'\n 2 |     let x = y;\n   |             ^\n");
    free(out);
    rm_dir(dir);
}

/* A graph named like a standard-library module (or tilec, torch, numpy,
 * cupy) is written as NAME_.py, so `import NAME` beside it still finds
 * the real one; one named like a C or POSIX header is g_NAME.h/.c, so
 * -I DIR cannot hide the system's. */
Test(cli_outputs, generated_module_names_shadow_nothing)
{
    char dir[64], *out;
    make_tmpdir(dir, sizeof dir);
    static const char *const names[] = {"functools", "typing", "enum",   "re",  "threading",
                                        "numpy",     "stdio",  "string", "math"};
    static const char *const py[] = {"functools_", "typing_", "enum_",   "re_",  "threading_",
                                     "numpy_",     "stdio",   "string_", "math_"};
    static const char *const c[] = {"functools", "typing",  "enum",     "re",    "threading",
                                    "numpy",     "g_stdio", "g_string", "g_math"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char text[600], args[200], file[100];
        snprintf(text, sizeof text,
                 "kernel copy(x: *f32, y: *f32, n: i32) grid (cdiv(n, 128)) {\n"
                 "    let i = pid(0) * 128 + range(128);\n    store(y + i, load(x + i, i < n), i < n);\n}\n"
                 "graph %s(x: f32[N]) -> (y: f32[N]) {\n    let y = empty(f32, [N]);\n    copy(x, y, N);\n"
                 "    return y;\n}\n",
                 names[i]);
        write_in(dir, "m.tile", text);
        cr_expect_eq(tilec(&out, dir, "m.tile --emit py -o py"), 0, "%s", out);
        free(out);
        cr_expect_eq(tilec(&out, dir, "m.tile --emit c -o c"), 0, "%s", out);
        free(out);
        snprintf(file, sizeof file, "py/%s.py", py[i]);
        cr_expect(exists(dir, file), "graph %s: no %s", names[i], file);
        snprintf(file, sizeof file, "c/%s.h", c[i]);
        cr_expect(exists(dir, file), "graph %s: no %s", names[i], file);
        snprintf(args, sizeof args,
                 "cd %s/py && python3 -c 'import %s, sys; assert \"/py/\" not in (%s.__file__ or \"\")'", dir, names[i],
                 names[i]);
        if (strcmp(names[i], "numpy") && strcmp(names[i], "stdio")) {
            cr_expect_eq(sh(&out, "%s", args), 0, "graph %s shadows the module: %s", names[i], out);
            free(out);
        }
        cr_assert_eq(sh(&out, "rm -rf %s/py %s/c", dir, dir), 0);
        free(out);
    }
    rm_dir(dir);
}
