/* test_cli_compile.c: the tilec command as a compiler driver: several
 * inputs at once, kernels compiled on -j workers and through the kernel
 * cache, progress (a bar on a terminal, plain lines otherwise), TILEC_LOGS,
 * the modes of what it writes, and the name generated code gives its
 * source (--source-name). */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_helpers.h"
#include "helpers.h"

#ifndef TILEC_BIN
#define TILEC_BIN "build/bin/tilec"
#endif

/* Run tilec under a cache of its own in dir/cache, umask 022. */
static int tilec(char **out, const char *dir, const char *env, const char *args)
{
    return sh(out, "cd . && umask 022 && TILEC_CACHE_DIR=%s/cache %s %s %s", dir, env, TILEC_BIN, args);
}

static mode_t mode_of(const char *dir, const char *file)
{
    char path[600];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    cr_assert_eq(stat(path, &st), 0, "no %s", path);
    return st.st_mode & 0777;
}

Test(cli_compile, several_inputs_on_workers_then_from_the_cache)
{
    char dir[64], args[512], *out;
    make_tmpdir(dir, sizeof dir);
    snprintf(args, sizeof args, "examples/add_relu.tile examples/matmul.tile --emit cubin -j 2 -o %s/k", dir);
    cr_expect_eq(tilec(&out, dir, "", args), 0, "%s", out);
    const char *want = "tilec: examples/add_relu.tile: 1 kernel variant compiled for sm_90 in ";
    cr_expect(!strncmp(out, want, strlen(want)), "%s", out);
    cr_expect(strstr(out, "\ntilec: examples/matmul.tile: 3 kernel variants compiled for sm_90 in "), "%s", out);
    free(out);
    char kdir[100];
    snprintf(kdir, sizeof kdir, "%s/k", dir);
    char *names = list_dir(kdir);
    cr_expect_str_eq(names, "add_relu_v0.cubin\nadd_relu_v0.meta\nmatmul_v0.cubin\nmatmul_v0.meta\nmatmul_v1.cubin\n"
                            "matmul_v1.meta\nmatmul_v2.cubin\nmatmul_v2.meta\n");
    free(names);
    /* outputs get the usual mode: 0666 less the umask */
    cr_expect_eq(mode_of(kdir, "matmul_v1.cubin"), 0644);
    cr_expect_eq(mode_of(kdir, "matmul_v1.meta"), 0644);
    /* again: every kernel from the cache, nothing compiled */
    cr_expect_eq(tilec(&out, dir, "", args), 0, "%s", out);
    cr_expect_str_eq(out, "tilec: examples/add_relu.tile: 1 kernel variant for sm_90 from the cache\n"
                          "tilec: examples/matmul.tile: 3 kernel variants for sm_90 from the cache\n");
    free(out);
    /* -q: nothing on stderr */
    cr_expect_eq(tilec(&out, dir, "", "examples/add_relu.tile --emit cubin -q -o /dev/null/never"), 1);
    free(out);
    snprintf(args, sizeof args, "examples/add_relu.tile --emit cubin -q -o %s/k", dir);
    cr_expect_eq(tilec(&out, dir, "", args), 0);
    cr_expect_str_eq(out, "");
    free(out);
    rm_dir(dir);
}

/* The channels of the library report in the command as in a program. */
Test(cli_compile, tilec_logs_channels)
{
    char dir[64], args[512], *out;
    make_tmpdir(dir, sizeof dir);
    snprintf(args, sizeof args, "examples/softmax.tile --emit cubin -q -j 2 -o %s/k", dir);
    cr_expect_eq(tilec(&out, dir, "TILEC_LOGS=async_compile,cache", args), 0, "%s", out);
    cr_expect(strstr(out, "tilec async_compile: threads 2\n"), "%s", out);
    cr_expect(strstr(out, "tilec async_compile: tasks enqueued 3, dequeued 3, failed 0\n"), "%s", out);
    cr_expect(strstr(out, "tilec cache: "), "%s", out);
    free(out);
    /* without TILEC_LOGS: silent */
    cr_expect_eq(tilec(&out, dir, "TILEC_LOGS=", args), 0, "%s", out);
    cr_expect_str_eq(out, "");
    free(out);
    rm_dir(dir);
}

/* On a terminal the pool draws its bar (carriage returns) and no plain
 * line is printed; `script` gives the command a terminal. */
Test(cli_compile, progress_bar_on_a_terminal)
{
    char *out;
    int no_script = sh(&out, "command -v script") != 0;
    free(out);
    if (no_script)
        cr_skip_test("no script(1) here to give the command a terminal");
    char dir[64], cmd[1024];
    make_tmpdir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "TILEC_CACHE_DIR=%s/cache %s examples/softmax.tile --emit cubin --no-cache -j 2 -o %s/k",
             dir, TILEC_BIN, dir);
    cr_expect_eq(sh(&out, "script -qec '%s' /dev/null", cmd), 0, "%s", out);
    cr_expect(strchr(out, '\r'), "no bar drawn: %s", out);
    cr_expect(!strstr(out, "kernel variants compiled"), "a plain line on a terminal: %s", out);
    free(out);
    rm_dir(dir);
}

/* Generated code names its source by the path as given, or --source-name;
 * never by a path the command made up (an absolute one). */
Test(cli_compile, source_name_in_generated_code)
{
    char dir[64], cwd[512], args[1024], *out;
    make_tmpdir(dir, sizeof dir);
    cr_assert(getcwd(cwd, sizeof cwd));
    snprintf(args, sizeof args, "examples/e2e.tile --emit c -o %s/rel", dir);
    cr_expect_eq(tilec(&out, dir, "", args), 0, "%s", out);
    free(out);
    char sub[100];
    snprintf(sub, sizeof sub, "%s/rel", dir);
    char *c = read_in(sub, "e2e.c");
    cr_assert(c);
    cr_expect(strstr(c, "from examples/e2e.tile\n") && strstr(c, "\"examples/e2e.tile\""), "no relative name");
    cr_expect(!strstr(c, cwd), "the absolute path %s is in the generated code", cwd);
    free(c);
    cr_expect_eq(mode_of(sub, "e2e.c"), 0644);
    cr_expect_eq(mode_of(sub, "e2e.h"), 0644);
    /* an absolute input path, renamed */
    snprintf(args, sizeof args, "%s/examples/e2e.tile --source-name e2e.tile --emit py -o %s/named", cwd, dir);
    cr_expect_eq(tilec(&out, dir, "", args), 0, "%s", out);
    free(out);
    snprintf(sub, sizeof sub, "%s/named", dir);
    char *py = read_in(sub, "e2e.py");
    cr_assert(py);
    cr_expect(strstr(py, "e2e.tile"), "no source name");
    cr_expect(!strstr(py, cwd), "the absolute path %s is in the generated code", cwd);
    free(py);
    /* diagnostics name it too */
    write_in(dir, "bad.tile", "kernel k(n: i32) grid (1) {\n    let x = y;\n}\n");
    snprintf(args, sizeof args, "%s/bad.tile --source-name src/bad.tile", dir);
    cr_expect_eq(tilec(&out, dir, "", args), 1);
    cr_expect_str_eq(out, "src/bad.tile:2:13: error: undefined name 'y'\n 2 |     let x = y;\n   |             ^\n");
    free(out);
    snprintf(args, sizeof args, "%s/missing.tile --source-name m.tile", dir);
    cr_expect_eq(tilec(&out, dir, "", args), 1);
    char want[300];
    snprintf(want, sizeof want, "%s/missing.tile: error: cannot read: No such file or directory\n", dir);
    cr_expect_str_eq(out, want);
    free(out);
    rm_dir(dir);
}
