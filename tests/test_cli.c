/* test_cli.c: the tilec command: exit statuses, options, output files. */
#define _DEFAULT_SOURCE 1
#include <criterion/criterion.h>
#include <ctype.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs_helpers.h"
#include "helpers.h"
#include "mk_tile_text.h"

#ifndef TILEC_BIN
#define TILEC_BIN "build/bin/tilec"
#endif

/* Run the command line through sh; returns the exit status, output in *out. */
/* A shell command's exit status, *out its output. */
static int run_shell(const char *cmd, char **out)
{
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    membuf mb = {0};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
        membuf_write(&mb, buf, n);
    int st = pclose(p);
    if (out)
        *out = mb.s ? mb.s : calloc(1, 1);
    else
        free(mb.s);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* tilec ARGS: its exit status, *out its standard output and error. */
static int run(const char *args, char **out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", TILEC_BIN, args);
    return run_shell(cmd, out);
}

Test(cli, help_and_version)
{
    char *out;
    cr_expect_eq(run("--help", &out), 0);
    cr_expect(!strncmp(out, "usage: tilec [OPTION]... FILE.tile...\n", 38), "%s", out);
    static const char *const parts[] = {"  -o, --output PATH", "  -j, --jobs N", "      --source-name NAME",
                                        "      --no-cache", "Exit status: 0 success, 1 errors in the input or the output, 2 usage error",
                                        "See tilec(1)", "tilec cache stats|list|prune|clear",
                                        "plug-in emitters", "TILEC_CACHE_REDIS", "FILE - is standard"};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        cr_expect(strstr(out, parts[i]), "no '%s' in --help", parts[i]);
    free(out);
    cr_expect_eq(run("-h", &out), 0);
    cr_expect(!strncmp(out, "usage: tilec", 12), "%s", out);
    free(out);
    cr_expect_eq(run("--version", &out), 0);
    cr_expect_str_eq(out, "tilec " TILEC_VERSION_STRING "\n");
    free(out);
    cr_expect_eq(run("-V", &out), 0);
    cr_expect_str_eq(out, "tilec " TILEC_VERSION_STRING "\n");
    free(out);
}

#define HINT "\n(run 'tilec --help' for usage)\n"

/* Every misuse: one message, exit status 2, and nothing created: the
 * output named by -o (a directory or a file under a fresh directory) must
 * not exist afterwards. %s in args is that output's path. */
static const struct {
    const char *args, *want;
} misuses[] = {
    {"", "tilec: error: no input file" HINT},
    {"examples/add_relu.tile --bogus", "tilec: error: unknown option '--bogus'" HINT},
    {"examples/add_relu.tile --bogus=1 -o %s", "tilec: error: unknown option '--bogus'" HINT},
    {"examples/add_relu.tile -Z", "tilec: error: unknown option '-Z'" HINT},
    {"examples/add_relu.tile --emit", "tilec: error: option '--emit' needs an argument" HINT},
    {"examples/add_relu.tile -o", "tilec: error: option '-o' needs an argument" HINT},
    {"examples/add_relu.tile --emit nonsense -o %s",
     "tilec: error: unknown --emit kind 'nonsense' (known: ast, cuda, layouts, tune, cubin, ir, c, py)" HINT},
    {"examples/add_relu.tile --emit cubin --arch sm_99 -o %s", "tilec: error: unknown --arch 'sm_99' (NVRTC "},
    {"examples/add_relu.tile --emit cubin --arch 90 -o %s", "tilec: error: unknown --arch '90' (NVRTC "},
    {"examples/e2e.tile --emit c --aot sm_1 -o %s", "tilec: error: unknown --aot 'sm_1' (NVRTC "},
    {"examples/e2e.tile --emit py --aot sm_90 -o %s", "tilec: error: --aot needs --emit c" HINT},
    {"examples/block.tile --emit ir --sizes R=4,c=8 -o %s",
     "examples/block.tile: error: --sizes names 'c', which no graph of the module has (known: R, C)\n"},
    {"examples/block.tile --emit ir --sizes R=oops -o %s",
     "tilec: error: --sizes takes NAME=N,NAME=N,... with positive sizes, got 'R=oops'" HINT},
    {"examples/block.tile --emit ast --sizes R=1 -o %s", "tilec: error: --sizes needs --emit ir" HINT},
    {"examples/add_relu.tile --emit cubin", "tilec: error: --emit cubin needs -o DIR" HINT},
    {"examples/add_relu.tile -o %s", "tilec: error: -o needs --emit" HINT},
    {"examples/add_relu.tile --emit cubin -j 0 -o %s", "tilec: error: -j takes a number from 1 to 1024, got '0'" HINT},
    {"examples/add_relu.tile --emit cubin -j x -o %s", "tilec: error: -j takes a number from 1 to 1024, got 'x'" HINT},
    {"examples/add_relu.tile --max-errors 0", "tilec: error: --max-errors takes a number from 1 to 100000, got '0'" HINT},
    {"examples/add_relu.tile examples/e2e.tile --source-name x.tile --emit c -o %s",
     "tilec: error: --source-name names one input file, got 2" HINT},
    /* numbers are decimal digits only: no space, sign, empty string or overflow */
    {"examples/add_relu.tile --emit cubin -j ' 4' -o %s", "tilec: error: -j takes a number from 1 to 1024, got ' 4'" HINT},
    {"examples/add_relu.tile --emit cubin -j '4 ' -o %s", "tilec: error: -j takes a number from 1 to 1024, got '4 '" HINT},
    {"examples/add_relu.tile --emit cubin -j +4 -o %s", "tilec: error: -j takes a number from 1 to 1024, got '+4'" HINT},
    {"examples/add_relu.tile --emit cubin -j -4 -o %s", "tilec: error: -j takes a number from 1 to 1024, got '-4'" HINT},
    {"examples/add_relu.tile --emit cubin -j '' -o %s", "tilec: error: -j takes a number from 1 to 1024, got ''" HINT},
    {"examples/add_relu.tile --emit cubin -j 18446744073709551620 -o %s",
     "tilec: error: -j takes a number from 1 to 1024, got '18446744073709551620'" HINT},
    {"examples/add_relu.tile --emit cubin -j 4k -o %s", "tilec: error: -j takes a number from 1 to 1024, got '4k'" HINT},
    {"examples/add_relu.tile --max-errors ' 5'", "tilec: error: --max-errors takes a number from 1 to 100000, got ' 5'" HINT},
    {"examples/e2e.tile --emit ir --sizes 'R= 4' -o %s",
     "tilec: error: --sizes takes NAME=N,NAME=N,... with positive sizes, got 'R= 4'" HINT},
    {"examples/add_relu.tile --emit ast -o ''", "tilec: error: -o takes a path, got ''" HINT},
    {"- - --check", "tilec: error: '-' (standard input) is given more than once" HINT},
    {"examples/add_relu.tile --emit cubin -o -",
     "tilec: error: --emit cubin writes files into a directory: -o - (standard output) cannot hold them" HINT},
};

Test(cli, each_misuse_is_one_error_exit_2_and_creates_nothing)
{
    char dir[] = "/tmp/tilec_misuse_XXXXXX";
    cr_assert(mkdtemp(dir));
    char target[300];
    snprintf(target, sizeof target, "%s/out", dir);
    for (size_t i = 0; i < sizeof misuses / sizeof *misuses; i++) {
        char args[1024], *out;
        const char *at = strstr(misuses[i].args, "%s");
        if (at)
            snprintf(args, sizeof args, "%.*s%s%s", (int)(at - misuses[i].args), misuses[i].args, target, at + 2);
        else
            snprintf(args, sizeof args, "%s", misuses[i].args);
        cr_expect_eq(run(args, &out), 2, "tilec %s: %s", args, out);
        if (strstr(misuses[i].want, HINT))
            cr_expect_str_eq(out, misuses[i].want, "tilec %s", args);
        else /* the arch lists depend on NVRTC: the start, one error, nothing else */
            cr_expect(!strncmp(out, misuses[i].want, strlen(misuses[i].want)) && !strstr(out + 1, "tilec:") &&
                          !strstr(out, "error: kernel"),
                      "tilec %s: %s", args, out);
        free(out);
        struct stat st;
        cr_expect_neq(stat(target, &st), 0, "tilec %s created %s", args, target);
    }
    cr_expect_eq(rmdir(dir), 0);
}

/* The list of architectures is NVRTC's own, sm_90 among them */
Test(cli, unknown_arch_lists_the_known_ones)
{
    char *out;
    cr_expect_eq(run("examples/add_relu.tile --emit cubin --arch sm_99 -o /tmp/tilec_never_made", &out), 2);
    cr_expect(strstr(out, " compiles for sm_") && strstr(out, ", sm_90, ") &&
                  strstr(out, "; a suffix a or f may follow)" HINT),
              "%s", out);
    free(out);
}

Test(cli, check_examples_exit_0)
{
    char *out;
    cr_expect_eq(run("examples/add_relu.tile examples/matmul.tile --check", &out), 0);
    cr_expect_str_eq(out, "");
    free(out);
}

Test(cli, input_errors_exit_1_with_diagnostic)
{
    char path[] = "/tmp/tilec_cli_XXXXXX.tile";
    int fd = mkstemps(path, 5);
    cr_assert(fd >= 0);
    const char *src = "kernel k(n: i32) grid (1) {\n    let x = y;\n}\n";
    cr_assert_eq(write(fd, src, strlen(src)), (ssize_t)strlen(src));
    close(fd);
    char args[256], *out;
    snprintf(args, sizeof args, "%s --check", path);
    cr_expect_eq(run(args, &out), 1);
    char want[512];
    snprintf(want, sizeof want, "%s:2:13: error: undefined name 'y'\n 2 |     let x = y;\n   |             ^\n", path);
    cr_expect_str_eq(out, want);
    free(out);
    cr_expect_eq(run("/nonexistent.tile", &out), 1);
    cr_expect_str_eq(out, "/nonexistent.tile: error: cannot open: No such file or directory\n");
    free(out);
    unlink(path);
}

Test(cli, output_file_is_never_partial)
{
    char dir[] = "/tmp/tilec_out_XXXXXX";
    cr_assert(mkdtemp(dir));
    char args[512], out_path[300], *out;
    snprintf(out_path, sizeof out_path, "%s/ast.txt", dir);
    snprintf(args, sizeof args, "examples/softmax.tile --emit ast -o %s", out_path);
    cr_expect_eq(run(args, &out), 0);
    free(out);
    size_t len;
    char *got = read_file(out_path, &len);
    cr_assert(got);
    cr_expect(strstr(got, "kernel softmax(x: *f32, y: *f32, rows: i32, cols: i32)"));
    free(got);
    unlink(out_path);
    /* a failing input leaves no file behind (and no temporary) */
    snprintf(args, sizeof args, "examples/softmax.tile /nonexistent.tile --emit ast -o %s", out_path);
    cr_expect_eq(run(args, &out), 1);
    free(out);
    struct stat st;
    cr_expect_neq(stat(out_path, &st), 0, "partial output left behind");
    cr_expect_eq(rmdir(dir), 0, "temporary files left in %s", dir);
}

/* An output that is not a regular file (/dev/null, a FIFO) is written in
 * place: the temporary-file-and-rename of regular outputs would replace
 * it with a file (as root, `-o /dev/null` replaced the device). A FIFO
 * stands in for the device; a regular output gets the usual mode. */
Test(cli, special_output_files_are_written_in_place)
{
    char dir[] = "/tmp/tilec_fifo_XXXXXX";
    cr_assert(mkdtemp(dir));
    char fifo[300], got_path[300], args[1024], *out;
    snprintf(fifo, sizeof fifo, "%s/out.fifo", dir);
    snprintf(got_path, sizeof got_path, "%s/got.txt", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    /* a reader on the FIFO, then the command writing into it */
    snprintf(args, sizeof args, "examples/softmax.tile --emit ast -o %s & timeout 20 cat %s > %s; wait $!", fifo, fifo,
             got_path);
    cr_expect_eq(run(args, &out), 0, "%s", out);
    free(out);
    struct stat st;
    cr_assert_eq(stat(fifo, &st), 0);
    cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced by a file");
    size_t len;
    char *got = read_file(got_path, &len);
    cr_assert(got);
    cr_expect(strstr(got, "kernel softmax("), "%s", got);
    free(got);
    /* a regular output: 0666 less the umask, not mkstemp's 0600 */
    char reg[300];
    snprintf(reg, sizeof reg, "%s/ast.txt", dir);
    mode_t mask = umask(022);
    snprintf(args, sizeof args, "examples/softmax.tile --emit ast -o %s", reg);
    cr_expect_eq(run(args, &out), 0);
    free(out);
    umask(mask);
    cr_assert_eq(stat(reg, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0644, "mode %o", st.st_mode & 0777);
    /* a directory is an error that names it */
    snprintf(args, sizeof args, "examples/softmax.tile --emit ast -o %s", dir);
    cr_expect_eq(run(args, &out), 1);
    cr_expect(strstr(out, "Is a directory"), "%s", out);
    free(out);
    unlink(fifo);
    unlink(got_path);
    unlink(reg);
    cr_expect_eq(rmdir(dir), 0);
}

Test(cli, emit_cubin_writes_every_variant)
{
    char dir[] = "/tmp/tilec_cubin_XXXXXX";
    cr_assert(mkdtemp(dir));
    char args[512], *out;
    snprintf(args, sizeof args, "examples/matmul.tile --emit cubin --arch sm_90 -o %s", dir);
    cr_expect_eq(run(args, &out), 0, "%s", out);
    free(out);
    for (int v = 0; v < 3; v++) {
        char path[400];
        snprintf(path, sizeof path, "%s/matmul_v%d.cubin", dir, v);
        size_t len = 0;
        char *cubin = read_file(path, &len);
        cr_assert(cubin, "missing %s", path);
        cr_expect(len > 4 && !memcmp(cubin, "\177ELF", 4));
        free(cubin);
        unlink(path);
        snprintf(path, sizeof path, "%s/matmul_v%d.meta", dir, v);
        char *meta = read_file(path, NULL);
        cr_assert(meta, "missing %s", path);
        cr_expect(strstr(meta, "params ptr ptr ptr i32 i32 i32\n"), "%s", meta);
        cr_expect(strstr(meta, v == 0 ? "threads 128\n" : "threads 256\n"), "%s", meta);
        free(meta);
        unlink(path);
    }
    cr_expect_eq(rmdir(dir), 0, "unexpected files left in %s", dir);
}

/* A kernel the --arch cannot run (matmul's pipelined loads and tensor-core
 * dots need sm_80) is an error at the kernel naming the variant, what needs
 * the newer GPU and its line, before NVRTC; nothing is written and the
 * output directory is not created. A kernel that needs nothing newer
 * (add_relu) compiles for sm_75; matmul compiles for sm_80 (and sm_90,
 * above). NVRTC's own failures: test_api's nvrtc_failure_headline_*. */
Test(cli, emit_cubin_refuses_an_arch_too_old, .timeout = 120)
{
    static const char *const wants[][2] = {
        {"examples/matmul.tile", "examples/matmul.tile:3:1: error: kernel 'matmul' (variant 0, matmul_v0) needs sm_80 "
                                 "or newer: it copies global to shared memory with cp.async (line 11); --arch sm_75 "
                                 "cannot run it\n"},
        {"examples/attention.tile", "error: kernel 'attention_d64' (variant 0, attention_d64_v0) needs sm_80 or newer: it "},
        {"examples/conv2d.tile", "error: kernel 'conv2d_f16' (variant 0, conv2d_f16_v0) needs sm_80 or newer: it "},
    };
    char dir[] = "/tmp/tilec_cubin_XXXXXX", sub[64], args[512], *out;
    cr_assert(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/out", dir);
    for (size_t i = 0; i < sizeof wants / sizeof wants[0]; i++) {
        snprintf(args, sizeof args, "%s --emit cubin --no-cache --arch sm_75 -o %s", wants[i][0], sub);
        cr_expect_eq(run(args, &out), 1, "%s", out);
        cr_expect(strstr(out, wants[i][1]), "%s: %s", wants[i][0], out);
        cr_expect(!strstr(out, "NVRTC"), "NVRTC ran: %s", out);
        free(out);
        struct stat st;
        cr_expect_neq(stat(sub, &st), 0, "%s was created", sub);
    }
    const char *fine[][2] = {{"examples/add_relu.tile", "sm_75"}, {"examples/matmul.tile", "sm_80"}};
    for (size_t i = 0; i < 2; i++) {
        snprintf(args, sizeof args, "%s --emit cubin --no-cache -q --arch %s -o %s", fine[i][0], fine[i][1], sub);
        cr_expect_eq(run(args, &out), 0, "%s", out);
        free(out);
        snprintf(args, sizeof args, "rm -rf %s", sub);
        cr_expect_eq(system(args), 0);
    }
    cr_expect_eq(rmdir(dir), 0);
}

Test(cli, emit_ir_with_sizes)
{
    char *out;
    cr_expect_eq(run("examples/block.tile --emit ir --sizes R=4096,C=1024", &out), 0, "%s", out);
    cr_expect(strstr(out, "reuse y <- t: f32[R, C]"), "%s", out);
    cr_expect(strstr(out, "peak bytes with R=4096, C=1024: 33587200 planned, 50364416 unplanned"), "%s", out);
    free(out);
}

/* --emit layouts: the layout report, per variant; an input error is an
 * error, not a partial report. */
Test(cli, emit_layouts)
{
    char *out;
    cr_expect_eq(run("examples/softmax_rows.tile --emit layouts", &out), 0, "%s", out);
    cr_expect(strstr(out, "softmax_multirow_v0: 128 threads, 0 bytes of shared memory, 0 __syncthreads\n"), "%s", out);
    cr_expect(strstr(out, "v_v [16, 128] f32: blocked regs[4, 4] lanes[1, 32] warps[4, 1] E=16"), "%s", out);
    cr_expect(strstr(out, "loop at line 24: 0 __syncthreads per iteration"), "%s", out);
    free(out);
    cr_expect_eq(run("examples/attention.tile --emit layouts", &out), 0, "%s", out);
    cr_expect(strstr(out, "dot operand v_p read from its mma registers"), "%s", out);
    cr_expect(strstr(out, "1 __syncthreads per iteration (cp.async ring)"), "%s", out);
    cr_expect(strstr(out, "v_tk copied by cp.async into a 2-stage ring (9216 bytes a stage, stored transposed)"), "%s", out);
    cr_expect(strstr(out, "dot operand v_tv read from its cp.async ring"), "%s", out);
    cr_expect(strstr(out, "v_acc scaled in place, the dot accumulating into it"), "%s", out);
    free(out);
    cr_expect_eq(run("tests/golden/bad/name_undefined.tile --emit layouts", &out), 1);
    cr_expect(strstr(out, "error"), "%s", out);
    free(out);
}

/* An output that cannot be written (here: past the file size limit) is an
 * error naming the file and the reason, for every --emit that writes one
 * stream, and leaves no file behind. */
Test(cli, unwritable_output_is_an_error_with_the_path)
{
    char dir[] = "/tmp/tilec_out_XXXXXX";
    cr_assert(mkdtemp(dir));
    static const char *const kinds[] = {"cuda", "ast", "ir"};
    for (size_t i = 0; i < 3; i++) {
        char cmd[1024], *out;
        snprintf(cmd, sizeof cmd, "sh -c \"trap '' XFSZ; ulimit -f 1; %s examples/e2e.tile --emit %s -o %s/out\"",
                 TILEC_BIN, kinds[i], dir);
        int st = sh(&out, "%s", cmd);
        cr_expect_eq(st, 1, "--emit %s", kinds[i]);
        char want[512];
        snprintf(want, sizeof want, "tilec: error: cannot write %s/out: File too large\n", dir);
        cr_expect_str_eq(out, want, "--emit %s", kinds[i]);
        free(out);
    }
    cr_expect_eq(rmdir(dir), 0, "files left in %s", dir);
}

/* The words of text that look like options (--name, -x) or, with env,
 * TILEC_ variables, each once, into the set string " a b c " (for
 * strstr). The man page is read as troff: \- is -, font
 * changes (\fB, \fR, ...) are nothing. */
static void words_of(const char *text, int env, membuf *set)
{
    if (!set->s)
        membuf_write(set, " ", 1);
    for (const char *p = text; *p; p++) {
        int start = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '-' || p[-1] == '_');
        size_t n = 0;
        if (env && start && !strncmp(p, "TILEC_", 6))
            n = 6 + strspn(p + 6, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
        else if (!env && start && p[0] == '-' && p[1] == '-' && islower((unsigned char)p[2]))
            n = 2 + strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");
        else if (!env && start && p[0] == '-' && isalpha((unsigned char)p[1]) && !isalnum((unsigned char)p[2]) &&
                 p[2] != '-')
            n = 2;
        if (!n)
            continue;
        char w[80];
        snprintf(w, sizeof w, " %.*s ", (int)n, p);
        if (!set->s || !strstr(set->s, w))
            membuf_write(set, w + 1, strlen(w + 1));
        p += n - 1;
    }
}

/* The man page as text: \- is -, font changes dropped; up to EXAMPLES
 * (whose cc line has cc's options). */
static char *man_text(void)
{
    char *man = read_file("docs/tilec.1", NULL);
    cr_assert(man);
    char *end = strstr(man, ".SH EXAMPLES");
    if (end)
        *end = '\0';
    char *w = man;
    for (const char *r = man; *r;) {
        if (r[0] == '\\' && r[1] == '-') {
            *w++ = '-';
            r += 2;
        } else if (r[0] == '\\' && r[1] == 'f' && r[2]) {
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
    return man;
}

/* Every option of `tilec --help` and `tilec cache --help` is in the man
 * page and every option of the man page is in one of them; every TILEC_
 * variable the help names is in the man page. */
Test(cli, help_and_man_page_name_the_same_options)
{
    char *help, *cache_help;
    cr_assert_eq(run("--help", &help), 0);
    cr_assert_eq(run("cache --help", &cache_help), 0);
    char *man = man_text();
    static const char *const topics[] = {".B layouts", ".SH COMMANDS", "tilec cache prune", "TILEC_CACHE_REDIS",
                                         "PLUG-IN EMITTERS", "<stdin>"};
    for (size_t i = 0; i < sizeof topics / sizeof *topics; i++)
        cr_expect(strstr(man, topics[i]), "the man page lacks '%s'", topics[i]);
    for (int env = 0; env < 2; env++) {
        membuf h = {0}, m = {0};
        words_of(help, env, &h);
        words_of(cache_help, env, &h);
        words_of(man, env, &m);
        for (int dir = 0; dir < 2 - env; dir++) { /* variables: help -> man only */
            const char *from = dir ? m.s : h.s, *to = dir ? h.s : m.s;
            for (const char *p = from + 1; *p;) {
                const char *sp = strchr(p, ' ');
                char w[80];
                snprintf(w, sizeof w, " %.*s ", (int)(sp - p), p);
                cr_expect(strstr(to, w), "'%.*s' is in %s but not in %s", (int)(sp - p), p,
                          dir ? "the man page" : "--help", dir ? "--help" : "the man page");
                p = sp + 1;
            }
        }
        free(h.s);
        free(m.s);
    }
    free(help);
    free(cache_help);
    free(man);
}

/* `tilec cache stats` says why the Redis tier is not in use: a malformed
 * TILEC_CACHE_REDIS (never "unset"), a server it cannot connect to; the
 * password masked. A build says it once on standard error. */
Test(cli, cache_stats_reports_the_redis_tier, .timeout = 60)
{
    char dir[] = "/tmp/tilec_stats_XXXXXX", args[512], *out;
    cr_assert(mkdtemp(dir));
    static const char *const cases[][2] = {
        {"localhost", "remote         none: TILEC_CACHE_REDIS=localhost is malformed: no port (host:port); no remote "
                      "tier\n"},
        {"redis://fleet:hunter2@h:1/x", "remote         none: TILEC_CACHE_REDIS=redis://fleet:***@h:1/x is malformed: "
                                        "the database 'x' is not a number from 0 to 2147483647; no remote tier\n"},
        {"redis://:hunter2@127.0.0.1:1", "remote         redis redis://:***@127.0.0.1:1: cannot connect: Connection "
                                         "refused\n"},
        {"", "remote         none (TILEC_CACHE_REDIS is unset)\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(args, sizeof args, "cache stats --dir %s/c", dir);
        setenv("TILEC_CACHE_REDIS", cases[i][0], 1);
        cr_expect_eq(run(args, &out), 0, "%s", out);
        cr_expect(strstr(out, cases[i][1]), "%s: %s", cases[i][0], out);
        cr_expect_null(strstr(out, "hunter2"), "%s", out);
        free(out);
    }
    /* the build: one warning, the password masked */
    setenv("TILEC_CACHE_REDIS", "redis://:hunter2@127.0.0.1:1", 1);
    setenv("TILEC_CACHE_DIR", dir, 1);
    snprintf(args, sizeof args, "examples/add_relu.tile --emit cubin -q --arch sm_80 -o %s/out", dir);
    cr_expect_eq(run(args, &out), 0, "%s", out);
    const char *want = "tilec: warning: the kernel cache's Redis tier: redis redis://:***@127.0.0.1:1: cannot connect: "
                       "Connection refused";
    const char *at = strstr(out, want);
    cr_expect(at && !strstr(at + 1, "tilec: warning"), "one warning wanted: %s", out);
    cr_expect_null(strstr(out, "hunter2"), "%s", out);
    free(out);
    unsetenv("TILEC_CACHE_REDIS");
    unsetenv("TILEC_CACHE_DIR");
    snprintf(args, sizeof args, "rm -rf %s", dir);
    cr_expect_eq(system(args), 0);
}

/* MK_TILE written as DIR/mk.tile, its path in path. */
static void write_mk_tile(const char *dir, char *path, size_t size)
{
    snprintf(path, size, "%s/mk.tile", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs(MK_TILE, f);
    fclose(f);
}

/* `tilec tune` on a terminal (script(1) gives it one): a progress bar on
 * standard error, redrawn per kernel and --sizes set, ending at N/N with a
 * newline, and no per-set lines (issue 31, item 3). */
Test(cli, tune_shows_a_progress_bar_on_a_terminal, .timeout = 120)
{
    if (system("command -v script >/dev/null 2>&1"))
        cr_skip_test("no script(1) to give tilec tune a terminal");
    char dir[] = "/tmp/tilec_tunebar_XXXXXX", cmd[2048], path[256], fake[512];
    cr_assert(mkdtemp(dir));
    write_mk_tile(dir, path, sizeof path);
    snprintf(fake, sizeof fake, "%s", TILEC_BIN);
    char *slash = strrchr(fake, '/');
    cr_assert(slash);
    snprintf(slash, sizeof fake - (size_t)(slash - fake), "/../tests/libfakecuda.so");
    unsetenv("TILEC_CACHE_REDIS");
    snprintf(cmd, sizeof cmd,
             "TILEC_CUDA_DRIVER=%s script -qec '%s tune %s --sizes n=1000 --sizes n=50 --dir %s/c' /dev/null 2>&1",
             fake, TILEC_BIN, path, dir);
    char *out;
    cr_expect_eq(run_shell(cmd, &out), 0, "%s", out);
    cr_expect(strstr(out, "\r\033[Ktilec tune [###############               ] 1/2 mk n=1000"), "%s", out);
    cr_expect(strstr(out, "\r\033[Ktilec tune [##############################] 2/2 mk n=50\r\n"), "%s", out);
    cr_expect_null(strstr(out, "(timed, stored)"), "no per-set lines on a terminal: %s", out);
    free(out);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* `tilec tune`: without a GPU one line and exit 1, nothing written; on the
 * fake driver each kernel with variants is timed once per --sizes set and
 * stored, and a second run (another process) times nothing; a kernel
 * parameter with no size is refused before anything is timed. */
Test(cli, tune_times_ahead_of_time, .timeout = 120)
{
    char dir[] = "/tmp/tilec_tune_XXXXXX", args[1024], path[256], *out;
    cr_assert(mkdtemp(dir));
    write_mk_tile(dir, path, sizeof path);
    unsetenv("TILEC_CACHE_REDIS");
    setenv("TILEC_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
    snprintf(args, sizeof args, "tune %s --sizes n=1000 --dir %s/c", path, dir);
    cr_expect_eq(run(args, &out), 1, "%s", out);
    cr_expect(!strncmp(out, "tilec: error: tune: no GPU: ", 28), "%s", out);
    cr_expect(strstr(out, "; nothing timed, nothing written\n"), "%s", out);
    cr_expect_eq(strchr(out, '\n') - out + 1, (long)strlen(out), "one line: %s", out);
    free(out);
    snprintf(args, sizeof args, "%s/c", dir);
    cr_expect_neq(access(args, F_OK), 0, "nothing written: %s exists", args);

    char fake[512];
    snprintf(fake, sizeof fake, "%s", TILEC_BIN);
    char *slash = strrchr(fake, '/');
    cr_assert(slash);
    snprintf(slash, sizeof fake - (size_t)(slash - fake), "/../tests/libfakecuda.so");
    setenv("TILEC_CUDA_DRIVER", fake, 1);
    snprintf(args, sizeof args, "tune %s --sizes m=1000 --dir %s/c", path, dir);
    cr_expect_eq(run(args, &out), 1, "%s", out);
    cr_expect_str_eq(out, "tilec: error: tune: kernel mk's parameter n has no size in --sizes m=1000; nothing timed\n");
    free(out);
    snprintf(args, sizeof args, "%s/c", dir);
    cr_expect_neq(access(args, F_OK), 0, "nothing written: %s exists", args);

    snprintf(args, sizeof args, "tune %s --sizes n=1000 --sizes n=50 --dir %s/c", path, dir);
    /* the fake's events time with the host's clock: any variant may win */
    int v1 = -1, v2 = -1, w1 = -2, w2 = -2, end = 0;
    cr_expect_eq(run(args, &out), 0, "%s", out);
    cr_expect(sscanf(out, "mk n=1000: variant %d of 3 (timed, stored)\nmk n=50: variant %d of 3 (timed, stored)\n%n",
                     &v1, &v2, &end) == 2 && end == (int)strlen(out),
              "%s", out);
    free(out);
    cr_expect_eq(run(args, &out), 0, "%s", out);
    end = 0;
    cr_expect(sscanf(out,
                     "mk n=1000: variant %d of 3 (choice from cache, not timed)\n"
                     "mk n=50: variant %d of 3 (choice from cache, not timed)\n%n",
                     &w1, &w2, &end) == 2 && end == (int)strlen(out),
              "%s", out);
    cr_expect(v1 == w1 && v2 == w2, "the stored choices: %d %d, then %d %d", v1, v2, w1, w2);
    free(out);
    unsetenv("TILEC_CUDA_DRIVER");
    snprintf(args, sizeof args, "rm -rf %s", dir);
    cr_expect_eq(system(args), 0);
}
