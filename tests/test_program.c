/* test_program.c: building a module without a GPU (rt NULL: compile only):
 * every variant compiled once through the pool, stored as one bundle; a
 * second build with a fresh cache object on the same directory compiles
 * nothing; a corrupt bundle is rebuilt; a broken kernel is reported at its
 * .tile line with the other kernels still compiled. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_helpers.h"
#include "helpers.h"
#include "tilec/program.h"

static char dir[64];

static void make_dir(void) { make_tmpdir(dir, sizeof dir); }

static void remove_dir(void) { rm_dir(dir); }

TestSuite(program, .init = make_dir, .fini = remove_dir);

static tilec_status build(const char *path, int threads, tilec_program_stats *st, char **diags)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, path, &m), TILEC_OK);
    tilec_cache *cache = NULL;
    cr_assert_eq(tilec_cache_open(dir, &cache), TILEC_RT_OK);
    tilec_build_options o = {.arch = "sm_90", .threads = threads, .cache = cache};
    tilec_program *p = NULL;
    tilec_status s = tilec_program_build(ctx, NULL, m, &o, &p);
    if (s == TILEC_OK && st)
        tilec_program_get_stats(p, st);
    membuf mb = {0};
    tilec_ctx_render_diags(ctx, membuf_sink(&mb));
    if (diags)
        *diags = mb.s ? mb.s : calloc(1, 1);
    else
        free(mb.s);
    tilec_program_free(p);
    tilec_cache_close(cache);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return s;
}

static int count_files(const char *suffix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, suffix))
            n++;
    if (d)
        closedir(d);
    return n;
}

Test(program, warm_build_compiles_nothing, .timeout = 300)
{
    tilec_program_stats cold, warm;
    cr_assert_eq(build("examples/matmul.tile", 2, &cold, NULL), TILEC_OK);
    cr_expect_eq(cold.kernels, 3);
    cr_expect_eq(cold.nvrtc_compiles, 3);
    cr_expect_eq(cold.cache_hit, 0);
    cr_expect_eq(count_files(".tilecbundle"), 1, "one bundle per module");
    cr_assert_eq(build("examples/matmul.tile", 2, &warm, NULL), TILEC_OK);
    cr_expect_eq(warm.nvrtc_compiles, 0);
    cr_expect_eq(warm.cache_hit, 1);
    cr_expect_str_eq(warm.key, cold.key);
}

/* A kernel name of the longest length the language allows still finds its
 * bundle on a warm build (a 600-byte buffer once truncated the comparison). */
Test(program, long_kernel_names_hit_the_cache, .timeout = 300)
{
    char path[128], name[1025];
    memset(name, 'k', 1024);
    name[1024] = 0;
    snprintf(path, sizeof path, "%s/long.tile", dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fprintf(f, "kernel %s(x: *f32) grid (1) { store(x + range(32), 1.0); }\n", name);
    fclose(f);
    tilec_program_stats cold, warm;
    cr_assert_eq(build(path, 1, &cold, NULL), TILEC_OK);
    cr_expect_eq(cold.nvrtc_compiles, 1);
    cr_expect_eq(count_files(".tilecbundle"), 1);
    cr_assert_eq(build(path, 1, &warm, NULL), TILEC_OK);
    cr_expect_eq(warm.nvrtc_compiles, 0);
    cr_expect_eq(warm.cache_hit, 1);
}

Test(program, key_follows_the_source, .timeout = 300)
{
    tilec_program_stats a, b;
    cr_assert_eq(build("examples/add_relu.tile", 1, &a, NULL), TILEC_OK);
    cr_assert_eq(build("examples/softmax.tile", 1, &b, NULL), TILEC_OK);
    cr_expect_str_neq(a.key, b.key);
    cr_expect_eq(b.nvrtc_compiles, 3);
    cr_expect_eq(count_files(".tilecbundle"), 2);
}

Test(program, corrupt_bundle_is_rebuilt, .timeout = 300)
{
    tilec_program_stats a, b, c;
    cr_assert_eq(build("examples/add_relu.tile", 1, &a, NULL), TILEC_OK);
    char path[256];
    snprintf(path, sizeof path, "%s/%s.tilecbundle", dir, a.key);
    FILE *f = fopen(path, "r+b");
    cr_assert(f, "no bundle at %s", path);
    fseek(f, 100, SEEK_SET);
    fputc(0x5a ^ fgetc(f), f);
    fclose(f);
    cr_assert_eq(build("examples/add_relu.tile", 1, &b, NULL), TILEC_OK);
    cr_expect_eq(b.cache_hit, 0, "a flipped byte must be a miss");
    cr_expect_eq(b.nvrtc_compiles, 1);
    cr_assert_eq(build("examples/add_relu.tile", 1, &c, NULL), TILEC_OK);
    cr_expect_eq(c.cache_hit, 1, "the rebuilt bundle replaced the bad one");
}

Test(program, disabled_caches_compile_every_time, .timeout = 300)
{
    setenv("TILEC_FORCE_DISABLE_CACHES", "1", 1);
    tilec_program_stats a, b;
    cr_assert_eq(build("examples/add_relu.tile", 1, &a, NULL), TILEC_OK);
    cr_assert_eq(build("examples/add_relu.tile", 1, &b, NULL), TILEC_OK);
    cr_expect_eq(b.nvrtc_compiles, 1);
    cr_expect_eq(count_files(".tilecbundle"), 0);
    unsetenv("TILEC_FORCE_DISABLE_CACHES");
}

Test(program, parallel_build_survives_a_dead_worker, .timeout = 300)
{
    /* a worker that exits at once: every job falls back to an in-process compile */
    setenv("TILEC_COMPILE_WORKER", "/bin/true", 1);
    tilec_program_stats st;
    cr_assert_eq(build("examples/softmax.tile", 2, &st, NULL), TILEC_OK);
    cr_expect_eq(st.nvrtc_compiles, 3);
    unsetenv("TILEC_COMPILE_WORKER");
}

Test(program, parallel_build_with_worker_processes, .timeout = 300)
{
    setenv("TILEC_COMPILE_WORKER", "build/bin/tilec", 1);
    if (access("build/bin/tilec", X_OK) != 0)
        setenv("TILEC_COMPILE_WORKER", "build-asan/bin/tilec", 1);
    tilec_program_stats par, warm;
    cr_assert_eq(build("examples/layernorm.tile", 3, &par, NULL), TILEC_OK);
    cr_expect_eq(par.nvrtc_compiles, 3);
    cr_assert_eq(build("examples/layernorm.tile", 3, &warm, NULL), TILEC_OK);
    cr_expect_eq(warm.cache_hit, 1, "the bundle the workers built is whole");
    unsetenv("TILEC_COMPILE_WORKER");
}

/* TILEC_COMPILE_MAX_MB: a compile whose NVRTC holds more memory is killed,
 * with a message naming the kernel and the limit; one kernel on one thread
 * compiles in a child too, so that the limit holds. */
Test(program, compile_memory_limit_stops_the_compile, .timeout = 300)
{
    setenv("TILEC_COMPILE_MAX_MB", "1", 1);
    char *d = NULL;
    cr_expect_eq(build("examples/add_relu.tile", 1, NULL, &d), TILEC_ERR_INPUT);
    cr_expect(strstr(d, "add_relu_v0: NVRTC used ") && strstr(d, " MiB, more than TILEC_COMPILE_MAX_MB=1: the compile "
                                                                 "was stopped"), "%s", d);
    free(d);
    unsetenv("TILEC_COMPILE_MAX_MB");
    cr_expect_eq(build("examples/add_relu.tile", 1, NULL, NULL), TILEC_OK);
}

/* A compile that ends between two of the watchdog's samples is still held
 * to TILEC_COMPILE_MAX_MB by its peak resident set: a persistent worker's
 * own VmHWM (reset before each compile), a forked child's from wait4. With
 * sampling every 600 s only the peak can stop it: the message says "at
 * its end" by having no "after N s". */
Test(program, compile_memory_peak_holds_between_samples, .timeout = 300)
{
    setenv("TILEC_COMPILE_SAMPLE_MS", "600000", 1);
    setenv("TILEC_COMPILE_MAX_MB", "1", 1);
    setenv("TILEC_FORCE_DISABLE_CACHES", "1", 1);
    const char *tilec = access("build/bin/tilec", X_OK) == 0 ? "build/bin/tilec" : "build-asan/bin/tilec";
    const char *workers[] = {tilec, "/bin/true"}; /* a persistent worker; a dead one, so a fork */
    for (int i = 0; i < 2; i++) {
        setenv("TILEC_COMPILE_WORKER", workers[i], 1);
        char *d = NULL;
        cr_expect_eq(build("examples/add_relu.tile", 1, NULL, &d), TILEC_ERR_INPUT, "%s", workers[i]);
        cr_expect(strstr(d, "add_relu_v0: NVRTC used ") &&
                      strstr(d, " MiB, more than TILEC_COMPILE_MAX_MB=1: the compile was stopped; "),
                  "%s: %s", workers[i], d);
        free(d);
    }
    unsetenv("TILEC_COMPILE_WORKER");
    unsetenv("TILEC_FORCE_DISABLE_CACHES");
    unsetenv("TILEC_COMPILE_MAX_MB");
    unsetenv("TILEC_COMPILE_SAMPLE_MS");
}

/* TILEC_COMPILE_TIMEOUT_S: worker processes past it are killed; the next
 * build starts new ones. */
Test(program, compile_time_limit_stops_worker_processes, .timeout = 300)
{
    setenv("TILEC_COMPILE_WORKER", "build/bin/tilec", 1);
    if (access("build/bin/tilec", X_OK) != 0)
        setenv("TILEC_COMPILE_WORKER", "build-asan/bin/tilec", 1);
    setenv("TILEC_COMPILE_TIMEOUT_S", "0.01", 1);
    char *d = NULL;
    cr_expect_eq(build("examples/layernorm.tile", 3, NULL, &d), TILEC_ERR_INPUT);
    cr_expect(strstr(d, "NVRTC did not finish within 0.01 s (TILEC_COMPILE_TIMEOUT_S): the compile was stopped"), "%s",
              d);
    free(d);
    setenv("TILEC_COMPILE_TIMEOUT_S", "0", 1); /* 0: no limit */
    tilec_program_stats st;
    cr_expect_eq(build("examples/layernorm.tile", 3, &st, NULL), TILEC_OK);
    unsetenv("TILEC_COMPILE_TIMEOUT_S");
    unsetenv("TILEC_COMPILE_WORKER");
}

/* A worker executable that appends a line to `log` each time it starts,
 * then runs the real worker: the line count is the worker processes. */
static void counting_worker(char *script, size_t size, const char *log)
{
    char cwd[2048];
    cr_assert(getcwd(cwd, sizeof cwd));
    const char *tilec = access("build/bin/tilec", X_OK) == 0 ? "build/bin/tilec" : "build-asan/bin/tilec";
    snprintf(script, size, "%s/worker.sh", dir);
    FILE *f = fopen(script, "w");
    cr_assert(f);
    fprintf(f, "#!/bin/sh\necho started >> '%s'\nexec '%s/%s' \"$@\"\n", log, cwd, tilec);
    fclose(f);
    cr_assert_eq(chmod(script, 0755), 0);
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = 0, c;
    while (f && (c = fgetc(f)) != EOF)
        n += c == '\n';
    if (f)
        fclose(f);
    return n;
}

/* Under the compile limits (on by default) a one-thread build of several
 * kernels compiles on ONE worker process, not in a fresh fork per kernel
 * (each paid NVRTC's start-up: 32 kernels took 8 s instead of 0.5 s). */
Test(program, one_thread_limited_build_uses_one_worker, .timeout = 300)
{
    char script[256], log[256];
    snprintf(log, sizeof log, "%s/starts", dir);
    counting_worker(script, sizeof script, log);
    setenv("TILEC_COMPILE_WORKER", script, 1);
    tilec_program_stats st;
    cr_assert_eq(build("examples/softmax.tile", 1, &st, NULL), TILEC_OK);
    cr_expect_eq(st.nvrtc_compiles, 3);
    cr_expect_eq(count_lines(log), 1, "one worker process for 3 kernels on one thread");
    /* the limits hold on that worker */
    setenv("TILEC_FORCE_DISABLE_CACHES", "1", 1);
    setenv("TILEC_COMPILE_MAX_MB", "1", 1);
    char *d = NULL;
    cr_expect_eq(build("examples/softmax.tile", 1, NULL, &d), TILEC_ERR_INPUT);
    cr_expect(strstr(d, "MiB, more than TILEC_COMPILE_MAX_MB=1: the compile was stopped"), "%s", d);
    free(d);
    unsetenv("TILEC_COMPILE_MAX_MB");
    unsetenv("TILEC_FORCE_DISABLE_CACHES");
    unsetenv("TILEC_COMPILE_WORKER");
}

/* A worker that dies at once: its job compiles in a fork, still under the
 * limits (not in the caller, which no limit would bound), on one thread
 * or several. */
Test(program, dead_worker_keeps_the_compile_limits, .timeout = 300)
{
    setenv("TILEC_COMPILE_WORKER", "/bin/true", 1);
    setenv("TILEC_COMPILE_MAX_MB", "1", 1);
    for (int threads = 1; threads <= 2; threads++) {
        char *d = NULL;
        cr_expect_eq(build("examples/softmax.tile", threads, NULL, &d), TILEC_ERR_INPUT, "%d threads", threads);
        cr_expect(strstr(d, "MiB, more than TILEC_COMPILE_MAX_MB=1: the compile was stopped"), "%d threads: %s",
                  threads, d);
        free(d);
    }
    unsetenv("TILEC_COMPILE_MAX_MB");
    unsetenv("TILEC_COMPILE_WORKER");
}

/* No worker executable at all: the build still compiles every kernel,
 * one after another on one thread (NVRTC serializes them in one process
 * anyway), never forking beside another compiling thread; under the
 * compile limits each compile is a forked child that the limits stop. */
Test(program, no_worker_executable_compiles_one_at_a_time, .timeout = 300)
{
    setenv("TILEC_COMPILE_WORKER", "/nonexistent/tilec", 1);
    setenv("TILEC_FORCE_DISABLE_CACHES", "1", 1);
    tilec_program_stats st;
    cr_assert_eq(build("examples/softmax.tile", 4, &st, NULL), TILEC_OK);
    cr_expect_eq(st.nvrtc_compiles, 3);
    setenv("TILEC_COMPILE_MAX_MB", "1", 1);
    char *d = NULL;
    cr_expect_eq(build("examples/softmax.tile", 4, NULL, &d), TILEC_ERR_INPUT);
    cr_expect(strstr(d, "MiB, more than TILEC_COMPILE_MAX_MB=1: the compile was stopped"), "%s", d);
    free(d);
    unsetenv("TILEC_COMPILE_MAX_MB");
    unsetenv("TILEC_FORCE_DISABLE_CACHES");
    unsetenv("TILEC_COMPILE_WORKER");
}
