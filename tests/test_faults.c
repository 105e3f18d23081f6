/* test_faults.c: the cache fault matrix where users meet it: building a
 * program (compile only: rt NULL, NVRTC for sm_90, no GPU) against a cache
 * directory that faults. In every case the build succeeds, compiling when
 * the cache cannot serve it; it never takes another module's or another
 * version's bundle and never reads a partial file: afterwards the module's
 * cache file is byte for byte the bundle a clean build wrote (or absent
 * where nothing can be written). Each test counts the faults it injected;
 * docs/reliability.md lists them. tests/test_cache.c covers the same faults
 * at the cache level, exhaustively (every bit, every length). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bundle_forge.h"
#include "fs_helpers.h"
#include "tilec/cache.h"
#include "tilec/program.h"

/* Two small modules: A's kernel adds, B's multiplies. */
static const char SRC_A[] = "kernel fa(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { B = 256 }\n"
                            "{ let i = pid(0) * B + range(B); store(y + i, load(x + i, i < n) + 1.0, i < n); }\n";
static const char SRC_B[] = "kernel fb(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { B = 256 }\n"
                            "{ let i = pid(0) * B + range(B); store(y + i, load(x + i, i < n) * 2.0, i < n); }\n";

static char tdir[64];  /* the cache directory */
static char other[64]; /* somewhere else */
static char key_a[65], key_b[65];
static char *ref_a, *ref_b; /* the bundles clean builds wrote */
static size_t ref_a_len, ref_b_len;

typedef struct outcome {
    tilec_status st;
    tilec_program_stats ps;
    char diags[512];
} outcome;

/* Build src against cache c (NULL: a cache opened on tdir, closed after). */
static outcome build_with(const char *src, tilec_cache *c)
{
    outcome o;
    memset(&o, 0, sizeof o);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "faults.tile", src, strlen(src), &m), TILEC_OK);
    tilec_cache *own = NULL;
    if (!c) {
        cr_assert_eq(tilec_cache_open(tdir, &own), TILEC_RT_OK);
        c = own;
    }
    tilec_build_options bo = {.arch = "sm_90", .threads = 1, .cache = c};
    tilec_program *p = NULL;
    o.st = tilec_program_build(ctx, NULL, m, &bo, &p);
    if (o.st == TILEC_OK)
        tilec_program_get_stats(p, &o.ps);
    membuf mb = {0};
    tilec_ctx_render_diags(ctx, membuf_sink(&mb));
    snprintf(o.diags, sizeof o.diags, "%s", mb.s ? mb.s : "");
    free(mb.s);
    tilec_program_free(p);
    tilec_cache_close(own);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return o;
}

static void bundle_path(char *path, size_t cap, const char *dir, const char *key)
{
    snprintf(path, cap, "%s/%s.tilecbundle", dir, key);
}

/* The module's cache file in dir is exactly ref (or absent when ref NULL). */
static void expect_file(const char *dir, const char *key, const char *ref, size_t ref_len, const char *what)
{
    char path[256];
    bundle_path(path, sizeof path, dir, key);
    size_t n = 0;
    char *got = read_file(path, &n);
    if (!ref) {
        cr_expect_null(got, "%s: a bundle was written", what);
    } else {
        cr_expect(got && n == ref_len && memcmp(got, ref, n) == 0, "%s: the cache file is not the clean build's bundle",
                  what);
    }
    free(got);
}

/* A build that must succeed by compiling (cached: from the cache). */
static void expect_build(const outcome *o, int cached, const char *what)
{
    cr_assert_eq(o->st, TILEC_OK, "%s: build failed:\n%s", what, o->diags);
    cr_expect_eq(o->ps.cache_hit, cached, "%s: cache_hit %d", what, o->ps.cache_hit);
    cr_expect_eq(o->ps.nvrtc_compiles, cached ? 0u : 1u, "%s: %u compiles", what, o->ps.nvrtc_compiles);
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static void setup(void)
{
    make_tmpdir(tdir, sizeof tdir);
    make_tmpdir(other, sizeof other);
    unsetenv("TILEC_FORCE_DISABLE_CACHES");
    outcome a = build_with(SRC_A, NULL), b = build_with(SRC_B, NULL);
    expect_build(&a, 0, "clean build of A");
    expect_build(&b, 0, "clean build of B");
    snprintf(key_a, sizeof key_a, "%s", a.ps.key);
    snprintf(key_b, sizeof key_b, "%s", b.ps.key);
    char path[256];
    bundle_path(path, sizeof path, tdir, key_a);
    ref_a = read_file(path, &ref_a_len);
    bundle_path(path, sizeof path, tdir, key_b);
    ref_b = read_file(path, &ref_b_len);
    cr_assert(ref_a && ref_b && ref_a_len > TILEC_BUNDLE_HEADER_SIZE);
    /* the same module compiled again gives the same bytes (what the checks below rely on) */
    cr_assert_eq(unlink(path), 0);
    outcome again = build_with(SRC_B, NULL);
    expect_build(&again, 0, "second clean build of B");
    expect_file(tdir, key_b, ref_b, ref_b_len, "NVRTC is deterministic");
}

static void teardown(void)
{
    chmod(tdir, 0700);
    rm_dir(tdir);
    rm_dir(other);
    free(ref_a);
    free(ref_b);
    ref_a = ref_b = NULL;
}

TestSuite(faults, .init = setup, .fini = teardown, .timeout = 300);

static void count(const char *what, int n) { fprintf(stderr, "faults: %-48s %4d injected\n", what, n); }

/* ---- writers that die or fail ---- */

/* Remove A's cache file, then fork (stdio flushed first). */
static pid_t remove_a_and_fork(void)
{
    char path[256];
    bundle_path(path, sizeof path, tdir, key_a);
    unlink(path);
    fflush(NULL);
    return fork();
}

static int die_at(void *user, tilec_cache_step step, const char *path)
{
    (void)path;
    if (step == *(tilec_cache_step *)user)
        _exit(42);
    return 0;
}

Test(faults, writer_killed_at_every_publishing_step)
{
    int n = 0;
    for (int at = 0; at < TILEC_CACHE_STEP_COUNT; at++, n++) {
        pid_t pid = remove_a_and_fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            tilec_cache *c = NULL;
            tilec_cache_step step = (tilec_cache_step)at;
            if (tilec_cache_open(tdir, &c) != TILEC_RT_OK)
                _exit(1);
            tilec_cache_set_fault_hook(c, die_at, &step);
            build_with(SRC_A, c);
            _exit(2);
        }
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 42, "step %d: the writer was not killed there", at);
        int published = at >= TILEC_CACHE_STEP_BEFORE_DIR_FSYNC;
        outcome o = build_with(SRC_A, NULL);
        expect_build(&o, published, "after a writer killed at a step");
        expect_file(tdir, key_a, ref_a, ref_a_len, "after a writer killed at a step");
    }
    count("writer killed at each publishing step", n);
}

typedef struct failing {
    tilec_cache_step at;
    int err;
} failing;

static int fail_at(void *user, tilec_cache_step step, const char *path)
{
    (void)path;
    const failing *f = user;
    return step == f->at ? f->err : 0;
}

Test(faults, failing_writes_at_every_step)
{
    static const int errs[] = {ENOSPC, EIO, EROFS, EDQUOT, EACCES};
    int n = 0;
    for (size_t e = 0; e < sizeof errs / sizeof errs[0]; e++)
        for (int at = 0; at < TILEC_CACHE_STEP_BEFORE_DIR_FSYNC; at++, n++) {
            char path[256];
            bundle_path(path, sizeof path, tdir, key_a);
            unlink(path);
            tilec_cache *c = NULL;
            cr_assert_eq(tilec_cache_open(tdir, &c), TILEC_RT_OK);
            failing f = {(tilec_cache_step)at, errs[e]};
            tilec_cache_set_fault_hook(c, fail_at, &f);
            outcome o = build_with(SRC_A, c);
            expect_build(&o, 0, "a write failing");
            tilec_cache_stats s;
            tilec_cache_get_stats(c, &s);
            cr_expect_eq(s.write_failures, 2, "step %d errno %d: the bundle and the source record", at, errs[e]);
            cr_expect(strstr(tilec_cache_last_error(c), strerror(errs[e])), "step %d: %s", at,
                      tilec_cache_last_error(c));
            /* the memory level still serves the module */
            outcome again = build_with(SRC_A, c);
            expect_build(&again, 1, "the memory level after a failed write");
            tilec_cache_close(c);
            expect_file(tdir, key_a, NULL, 0, "a write failing");
            char *names = list_dir(tdir);
            cr_expect_eq(strstr(names, ".tmp."), NULL, "a temporary file stayed:\n%s", names);
            free(names);
        }
    count("write failing at each step (5 errno values)", n);
}

/* A full disk: a file-size limit smaller than the bundle (it binds root too). */
Test(faults, full_disk)
{
    pid_t pid = remove_a_and_fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {(rlim_t)ref_a_len / 2, (rlim_t)ref_a_len / 2};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(1);
        outcome o = build_with(SRC_A, NULL);
        if (o.st != TILEC_OK || o.ps.nvrtc_compiles != 1)
            _exit(2);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the build under a file-size limit failed (%d)", status);
    expect_file(tdir, key_a, NULL, 0, "full disk");
    char *names = list_dir(tdir);
    cr_expect_eq(strstr(names, ".tmp."), NULL, "a temporary file stayed:\n%s", names);
    free(names);
    outcome o = build_with(SRC_A, NULL);
    expect_build(&o, 0, "after the disk was full");
    expect_file(tdir, key_a, ref_a, ref_a_len, "after the disk was full");
    count("full disk (RLIMIT_FSIZE)", 1);
}

/* A read-only directory: the build compiles and works from memory. As root,
 * drop to nobody first (root writes anywhere); skip where that fails. */
Test(faults, read_only_directory)
{
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (geteuid() == 0 && (chown(tdir, 65534, 65534) != 0 || setgid(65534) != 0 || setuid(65534) != 0))
            _exit(77);
        char path[256];
        bundle_path(path, sizeof path, tdir, key_a);
        unlink(path);
        if (chmod(tdir, 0500) != 0)
            _exit(3);
        outcome o = build_with(SRC_A, NULL);
        if (o.st != TILEC_OK || o.ps.nvrtc_compiles != 1 || access(path, F_OK) == 0)
            _exit(4);
        _exit(0);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    if (geteuid() == 0)
        cr_expect_eq(chown(tdir, 0, 0), 0);
    chmod(tdir, 0700);
    cr_assert(WIFEXITED(status), "the child died");
    if (WEXITSTATUS(status) == 77)
        cr_skip_test("cannot drop root to make a directory read-only here");
    cr_expect_eq(WEXITSTATUS(status), 0, "read-only directory: check %d failed", WEXITSTATUS(status));
    count("read-only directory", 1);
}

/* ---- bad cache files ---- */

/* Put bytes in place of A's cache file; the next build must miss, compile
 * and replace it with the clean bundle. */
static void expect_replaced(const void *bytes, size_t n, const char *what)
{
    char path[256];
    bundle_path(path, sizeof path, tdir, key_a);
    write_bytes(path, bytes, n);
    outcome o = build_with(SRC_A, NULL);
    expect_build(&o, 0, what);
    expect_file(tdir, key_a, ref_a, ref_a_len, what);
}

Test(faults, flipped_bits)
{
    char *b = malloc(ref_a_len);
    cr_assert(b);
    int n = 0;
    /* one bit in every header byte, and 64 bytes spread over the rest */
    for (size_t i = 0; i < ref_a_len; i += i < TILEC_BUNDLE_HEADER_SIZE ? 1 : (ref_a_len - 64) / 64, n++) {
        memcpy(b, ref_a, ref_a_len);
        b[i] ^= (char)(1 << (i % 8));
        expect_replaced(b, ref_a_len, "a flipped bit");
    }
    free(b);
    count("bit flipped in the cache file", n);
}

Test(faults, truncated_files)
{
    size_t lens[] = {0, 1, 8, 56, 63, 64, 65, ref_a_len / 2, ref_a_len - 1};
    int n = 0;
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++, n++)
        expect_replaced(ref_a, lens[i], "a truncated file");
    /* and one byte too many */
    char *b = malloc(ref_a_len + 1);
    cr_assert(b);
    memcpy(b, ref_a, ref_a_len);
    b[ref_a_len] = 0;
    expect_replaced(b, ref_a_len + 1, "a trailing byte");
    free(b);
    count("truncated or extended cache file", n + 1);
}

/* The other module's bundle under A's key: a whole, valid file, but not A's. */
Test(faults, another_modules_bundle)
{
    expect_replaced(ref_b, ref_b_len, "B's bundle in A's place");
    count("another module's bundle", 1);
}

/* A's bundle claiming another format version, checksums made to match. */
Test(faults, another_versions_bundle)
{
    char *b = malloc(ref_a_len);
    cr_assert(b);
    static const uint32_t versions[] = {0, TILEC_BUNDLE_VERSION - 1, TILEC_BUNDLE_VERSION + 1, 0xffffffffu};
    for (size_t v = 0; v < sizeof versions / sizeof versions[0]; v++) {
        memcpy(b, ref_a, ref_a_len);
        bundle_put32((uint8_t *)b + 8, versions[v]);
        bundle_reseal((uint8_t *)b, ref_a_len);
        expect_replaced(b, ref_a_len, "a bundle of another version");
    }
    free(b);
    count("bundle of another format version", 4);
}

/* Things that are not regular files in A's place: a link to a valid copy
 * (never followed), a FIFO (never blocks), a directory (never replaced:
 * the build still succeeds from a compile). */
Test(faults, not_a_regular_file)
{
    char path[256], copy[256];
    bundle_path(path, sizeof path, tdir, key_a);
    snprintf(copy, sizeof copy, "%s/copy", other);
    write_bytes(copy, ref_a, ref_a_len);
    unlink(path);
    cr_assert_eq(symlink(copy, path), 0);
    outcome o = build_with(SRC_A, NULL);
    expect_build(&o, 0, "a symlink in place of the bundle");
    expect_file(tdir, key_a, ref_a, ref_a_len, "a symlink in place of the bundle");

    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkfifo(path, 0600), 0);
    o = build_with(SRC_A, NULL);
    expect_build(&o, 0, "a FIFO in place of the bundle");
    expect_file(tdir, key_a, ref_a, ref_a_len, "a FIFO in place of the bundle");

    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(mkdir(path, 0700), 0);
    o = build_with(SRC_A, NULL);
    expect_build(&o, 0, "a directory in place of the bundle");
    struct stat st;
    cr_expect(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "the directory was replaced");
    cr_assert_eq(rmdir(path), 0);
    count("link, FIFO or directory in place of the bundle", 3);
}

/* ---- TILEC_CACHE_DIR through a symlink ---- */

static outcome build_env(const char *src)
{
    tilec_cache *c = NULL;
    cr_assert_eq(tilec_cache_open(NULL, &c), TILEC_RT_OK);
    outcome o = build_with(src, c);
    tilec_cache_close(c);
    return o;
}

Test(faults, cache_dir_through_a_symlink)
{
    char link[128], target[128], path[256];
    snprintf(link, sizeof link, "%s/link", other);
    snprintf(target, sizeof target, "%s/target", other);
    cr_assert_eq(mkdir(target, 0700), 0);
    cr_assert_eq(symlink(target, link), 0);
    setenv("TILEC_CACHE_DIR", link, 1);

    /* a link to a directory of ours: used; the bundle lands in the target */
    outcome o = build_env(SRC_A);
    expect_build(&o, 0, "through a symlink, cold");
    expect_file(target, key_a, ref_a, ref_a_len, "through a symlink");
    o = build_env(SRC_A);
    expect_build(&o, 1, "through a symlink, warm");

    /* a link to a directory every user may write: not used (anyone could
     * plant a bundle there); the build compiles and writes nothing */
    char open_dir[128];
    snprintf(open_dir, sizeof open_dir, "%s/open", other);
    cr_assert_eq(mkdir(open_dir, 0700), 0);
    cr_assert_eq(chmod(open_dir, 0777), 0);
    cr_assert_eq(unlink(link), 0);
    cr_assert_eq(symlink(open_dir, link), 0);
    tilec_cache *c = NULL;
    cr_assert_eq(tilec_cache_open(NULL, &c), TILEC_RT_OK);
    cr_expect_null(tilec_cache_dir(c));
    cr_expect(strstr(tilec_cache_last_error(c), "writable by every user"), "%s", tilec_cache_last_error(c));
    tilec_cache_close(c);
    bundle_path(path, sizeof path, open_dir, key_a);
    write_bytes(path, ref_b, ref_b_len); /* a planted bundle is never read */
    o = build_env(SRC_A);
    expect_build(&o, 0, "through a symlink to a world-writable directory");
    expect_file(open_dir, key_a, ref_b, ref_b_len, "the planted file is left alone");

    /* a dangling link, a link to a file, a loop: memory only, the build works */
    const char *targets[] = {"/nonexistent/tilec/cache", path, link};
    const char *expect[] = {"No such file", "Not a directory", "Too many levels"};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(unlink(link), 0);
        cr_assert_eq(symlink(targets[i], link), 0);
        c = NULL;
        cr_assert_eq(tilec_cache_open(NULL, &c), TILEC_RT_OK);
        cr_expect_null(tilec_cache_dir(c), "link to %s used", targets[i]);
        cr_expect(strstr(tilec_cache_last_error(c), expect[i]), "link to %s: %s", targets[i],
                  tilec_cache_last_error(c));
        tilec_cache_close(c);
        o = build_env(SRC_A);
        expect_build(&o, 0, "a bad symlink as the cache directory");
    }
    unsetenv("TILEC_CACHE_DIR");
    count("TILEC_CACHE_DIR as a symlink (good, open, dangling, file, loop)", 5);
}

/* A directory owned by another user is not used either: its owner could
 * plant bundles. Needs root to make one; skipped otherwise. */
Test(faults, cache_dir_of_another_user)
{
    if (geteuid() != 0)
        cr_skip_test("needs root to give a directory to another user");
    char dir[128];
    snprintf(dir, sizeof dir, "%s/theirs", other);
    cr_assert_eq(mkdir(dir, 0700), 0);
    cr_assert_eq(chown(dir, 65534, 65534), 0);
    tilec_cache *c = NULL;
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_expect_null(tilec_cache_dir(c));
    cr_expect(strstr(tilec_cache_last_error(c), "owned by another user"), "%s", tilec_cache_last_error(c));
    outcome o = build_with(SRC_A, c);
    expect_build(&o, 0, "a directory of another user");
    tilec_cache_close(c);
    count("cache directory of another user", 1);
}
