/* test_multikernel.c: the multi-kernel dispatcher (runtime/multikernel.c,
 * tilec_program_launch_best) against the fake driver (libfakecuda.so beside
 * this binary). The module's kernel mk has three variants; the fake runs
 * each as y = 2 * x and, on its fake clock, makes one launch of variant v
 * take mk_ms[v], so the test decides which variant is the fastest. Checked:
 * the first launch of a shape times every variant (on scratch outputs) and
 * launches the fastest; later launches of that shape time nothing; shapes
 * are chosen separately; the choice file on disk is reused by a fresh
 * program, and a corrupt one is timed again and replaced;
 * TILEC_MULTI_KERNEL forces a variant (read at build), an out-of-range or
 * invalid one is TILEC_RT_INVALID_ARG; TILEC_DISABLE_MULTI_KERNEL_CACHE=1
 * writes no file. Every test has its own cache directory (Criterion runs
 * each test in its own process: the fake's state starts fresh). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include "cache_helpers.h"
#include "fake_load.h"
#include "fs_helpers.h"
#include "mk_tile_text.h"
#include "tilec/cache.h"
#include "tilec/program.h"

static const char mk_src[] = MK_TILE;

/* The same launches, but y is written only by an atomic_add nested in an
 * expression: the chooser must still see y as written (the fake runs it as
 * y = 2 * x like mk_src). */
static const char mk_nested_src[] = MK_TILE_HEAD "    let old = atomic_add(y + offs, load(x + offs, m) * 2.0, m) + 1.0;\n}\n";

/* The source env_build parses (a test may switch it before building). */
static const char *mk_text = mk_src;

enum { NMAX = 4096 };

static char dir[64];
static const char *cdir = dir; /* the cache directory env_build uses */
static char fake_path[4096];

#include "redis_helpers.h"
static fake_cuda_state *fake;

static void setup(void)
{
    fake_cuda_path(fake_path, sizeof fake_path);
    fake = fake_cuda_load(fake_path, NULL);
    fake->fake_clock = 1;
    unsetenv("FAKE_CUDA_MODE");
    unsetenv("TILEC_MULTI_KERNEL");
    unsetenv("TILEC_DISABLE_MULTI_KERNEL_CACHE");
    unsetenv("TILEC_FORCE_DISABLE_CACHES");
    unsetenv("TILEC_LOGS");
    unsetenv("FAKE_CUDA_DEVICE_NAME");
    unsetenv("FAKE_CUDA_DRIVER_VERSION");
    cache_clean_env();
    make_tmpdir(dir, sizeof dir);
    cdir = dir;
}

static void teardown(void)
{
    stop_server();
    rm_dir(dir);
}

TestSuite(multikernel, .init = setup, .fini = teardown);

/* A program of mk on the fake device, with the cache in dir. */
typedef struct env {
    tilec_rt *rt;
    tilec_ctx *ctx;
    tilec_module *m;
    tilec_cache *cache;
    tilec_program *p;
    uint64_t x, y;
} env;

static tilec_status env_build(env *e, tilec_rt *rt)
{
    memset(e, 0, sizeof *e);
    if (!rt)
        cr_assert_eq(tilec_rt_open_driver(fake_path, 0, &rt), TILEC_RT_OK);
    e->rt = rt;
    e->ctx = tilec_ctx_new();
    cr_assert_eq(tilec_parse_string(e->ctx, "mk.tile", mk_text, strlen(mk_text), &e->m), TILEC_OK);
    cr_assert_eq(tilec_cache_open(cdir, &e->cache), TILEC_RT_OK);
    tilec_build_options o = {.arch = "sm_90", .threads = 1, .cache = e->cache};
    tilec_status s = tilec_program_build(e->ctx, e->rt, e->m, &o, &e->p);
    if (s != TILEC_OK)
        return s;
    float host[NMAX];
    for (int i = 0; i < NMAX; i++)
        host[i] = (float)i;
    cr_assert_eq(tilec_rt_malloc(rt, sizeof host, &e->x), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, sizeof host, &e->y), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_htod(rt, e->x, host, sizeof host), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memset_d32(rt, e->y, 0, NMAX), TILEC_RT_OK);
    fake->out_watch = e->y;
    return s;
}

/* Free the program and its module; the driver stays unless close. */
static void env_free(env *e, int close)
{
    if (e->x)
        tilec_rt_free(e->rt, e->x);
    if (e->y)
        tilec_rt_free(e->rt, e->y);
    tilec_program_free(e->p);
    tilec_cache_close(e->cache);
    tilec_module_free(e->m);
    tilec_ctx_free(e->ctx);
    if (close)
        tilec_rt_close(e->rt);
}

static tilec_rt_status best(env *e, int n, int *chosen)
{
    tilec_rt_arg a[3];
    memset(a, 0, sizeof a);
    a[0].ptr = e->x;
    a[1].ptr = e->y;
    a[2].i32 = n;
    *chosen = -1;
    return tilec_program_launch_best(e->p, "mk", a, 3, NULL, chosen);
}

/* The event records of one timing (two a timed round) when one of the 3
 * variants is over 2x the fastest in the first round, and so timed in that
 * round only, the other two in all 15; TIMED_ALL when none is. */
#define TIMED_ONE_PRUNED ((3 + 2 * 14) * 2)
#define TIMED_ALL (3 * 15 * 2)

static void set_ms(float a, float b, float c)
{
    fake->mk_ms[0] = a;
    fake->mk_ms[1] = b;
    fake->mk_ms[2] = c;
}

static int total_launches(void) { return fake->mk_launches[0] + fake->mk_launches[1] + fake->mk_launches[2]; }

/* y[0, n) is 2 * x and the rest of y is untouched (0). */
static void expect_output(env *e, int n)
{
    static float y[NMAX];
    cr_assert_eq(tilec_rt_memcpy_dtoh(e->rt, y, e->y, sizeof y), TILEC_RT_OK);
    for (int i = 0; i < NMAX; i++)
        if (y[i] != (i < n ? 2.0f * (float)i : 0.0f)) {
            cr_expect_fail("n = %d: y[%d] = %g", n, i, (double)y[i]);
            return;
        }
}

/* The names of the choice files in dir, and the content of the last one. */
static int choice_files(char *path, size_t size, char *content, size_t csize)
{
    DIR *d = opendir(cdir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (strncmp(de->d_name, "multikernel-", 12) || len < 7 || strcmp(de->d_name + len - 7, ".choice"))
            continue;
        n++;
        if (path)
            snprintf(path, size, "%s/%s", cdir, de->d_name);
        if (content) {
            char p[512];
            snprintf(p, sizeof p, "%s/%s", cdir, de->d_name);
            FILE *f = fopen(p, "r");
            cr_assert_not_null(f);
            size_t got = fread(content, 1, csize - 1, f);
            content[got] = 0;
            fclose(f);
        }
    }
    closedir(d);
    return n;
}

/* The line of a choice file at path holding variant v: its hash is the
 * file name's. */
/* The entry of variant v under a 40-digit hash (choice_entry.h), its
 * checksum right whatever v is. */
static const char *entry_of(const char *hash, int v)
{
    static char line[160];
    char body[64];
    int n = snprintf(body, sizeof body, "%d %.40s", v, hash);
    snprintf(line, sizeof line, "tilec multi-kernel choice 2 %s %016llx\n", body,
             (unsigned long long)tilec_bundle_checksum(body, (size_t)n));
    return line;
}

static const char *choice_line(const char *path, int v)
{
    const char *h = strstr(path, "multikernel-");
    cr_assert_not_null(h);
    return entry_of(h + 12, v);
}

static int leftover_temp_files(void)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strstr(de->d_name, ".choice."))
            n++;
    closedir(d);
    return n;
}

Test(multikernel, first_launch_times_then_the_choice_is_kept, .timeout = 300)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    set_ms(3, 1, 2);
    int v;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 1, "variant 1 is the fastest on the fake clock");
    /* each variant: a warm-up and 15 timed rounds, two events per round,
     * but variant 0, 3x the fastest in the first round, is timed no further */
    cr_expect_eq(fake->mk_launches[0], 2);
    cr_expect_eq(fake->mk_launches[2], 16);
    cr_expect_eq(fake->mk_launches[1], 17, "the winner is launched once more, for real");
    cr_expect_eq(fake->event_records, TIMED_ONE_PRUNED);
    cr_expect_eq(fake->out_watch_hits, 1, "timing writes scratch copies: the output is written once");
    cr_expect_eq(fake->live_events, 0, "the timing events are destroyed");
    expect_output(&e, 1000);

    int records = fake->event_records, launches = total_launches();
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
        cr_expect_eq(v, 1);
    }
    cr_expect_eq(fake->event_records, records, "the same shape is not timed again");
    cr_expect_eq(total_launches(), launches + 3);
    cr_expect_eq(fake->mk_launches[1], 17 + 3);
    cr_expect_eq(fake->out_watch_hits, 4);

    /* a NULL chosen is fine */
    tilec_rt_arg a[3] = {{.ptr = e.x}, {.ptr = e.y}, {.i32 = 1000}};
    cr_expect_eq(tilec_program_launch_best(e.p, "mk", a, 3, NULL, NULL), TILEC_RT_OK);
    env_free(&e, 1);
}

/* The rounds go round the variants: on a GPU whose clock falls as it
 * warms up (each launch 1% longer than the one before), variant 1, 5%
 * faster, still wins. Timed one variant after the other, variant 0's 15
 * rounds came first and at the faster clock, and it won. Variants within
 * 2x of the fastest are all timed in full. */
Test(multikernel, rounds_go_round_the_variants, .timeout = 300)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    set_ms(1.05f, 1.0f, 1.9f);
    fake->mk_drift = 0.01f;
    int v;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 1, "the faster variant wins under a drifting clock");
    cr_expect_eq(fake->mk_launches[0], 16);
    cr_expect_eq(fake->mk_launches[2], 16, "1.9x the fastest: timed in full");
    cr_expect_eq(fake->mk_launches[1], 17);
    expect_output(&e, 1000);
    env_free(&e, 1);
}

/* Outputs written only by a nested atomic_add are copied for timing too:
 * the real y is written once (timing on it would add 48 more times). */
Test(multikernel, nested_atomic_output_is_timed_on_a_scratch_copy, .timeout = 300)
{
    mk_text = mk_nested_src;
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    set_ms(3, 1, 2);
    int v;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 1);
    cr_expect_eq(total_launches(), 2 + 2 * 16 + 1, "every variant was timed (variant 0 once: 3x the fastest)");
    cr_expect_eq(fake->out_watch_hits, 1, "the real output is written once, not %d times", fake->out_watch_hits);
    expect_output(&e, 1000);
    env_free(&e, 1);
}

typedef struct racer {
    env *e;
    pthread_barrier_t *go;
    int chosen;
    tilec_rt_status st;
} racer;

static void *race_best(void *arg)
{
    racer *r = arg;
    pthread_barrier_wait(r->go);
    r->st = best(r->e, 777, &r->chosen);
    return NULL;
}

/* Threads launching one new shape at once: one times it, the others wait
 * for its choice (timing twice would waste the time and skew both). */
Test(multikernel, threads_on_a_new_shape_time_it_once, .timeout = 300)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    set_ms(3, 1, 2);
    enum { N = 4 };
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N);
    racer r[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        r[i] = (racer){.e = &e, .go = &go, .chosen = -1};
        cr_assert_eq(pthread_create(&t[i], NULL, race_best, &r[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        cr_expect_eq(r[i].st, TILEC_RT_OK, "thread %d", i);
        cr_expect_eq(r[i].chosen, 1, "thread %d chose %d", i, r[i].chosen);
    }
    pthread_barrier_destroy(&go);
    cr_expect_eq(fake->event_records, TIMED_ONE_PRUNED, "the shape was timed %d times",
                 fake->event_records / TIMED_ONE_PRUNED);
    char content[64];
    cr_expect_eq(choice_files(NULL, 0, content, sizeof content), 1);
    env_free(&e, 1);
}

/* No memory for a scratch copy of the output: no timing on the real buffer
 * (wrong for kernels that read what they write), variant 0, nothing stored
 * on disk. */
Test(multikernel, no_scratch_memory_means_no_timing, .timeout = 300)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    set_ms(3, 1, 2);
    int v = -1;
    fake->fail_allocs = 1;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    fake->fail_allocs = 0;
    cr_expect_eq(v, 0);
    cr_expect_eq(fake->event_records, 0, "not timed");
    cr_expect_eq(fake->out_watch_hits, 1, "the output is written once");
    cr_expect_eq(total_launches(), 1);
    expect_output(&e, 1000);
    cr_expect_eq(choice_files(NULL, 0, NULL, 0), 0, "no choice stored on disk");
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 0, "kept for this process");
    cr_expect_eq(fake->event_records, 0);
    env_free(&e, 1);
}

Test(multikernel, shapes_are_chosen_separately, .timeout = 300)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    int v;
    set_ms(3, 1, 2);
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 1);
    set_ms(1, 3, 2);
    int records = fake->event_records;
    cr_assert_eq(best(&e, 50, &v), TILEC_RT_OK);
    cr_expect_eq(v, 0, "a new shape is timed: variant 0 is now the fastest");
    cr_expect_eq(fake->event_records, records + TIMED_ONE_PRUNED);
    cr_assert_eq(tilec_rt_memset_d32(e.rt, e.y, 0, NMAX), TILEC_RT_OK);
    cr_assert_eq(best(&e, 50, &v), TILEC_RT_OK);
    expect_output(&e, 50);
    set_ms(2, 2, 1);
    records = fake->event_records;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 1, "the first shape keeps its choice");
    cr_assert_eq(best(&e, 50, &v), TILEC_RT_OK);
    cr_expect_eq(v, 0);
    cr_expect_eq(fake->event_records, records);
    cr_assert_eq(best(&e, 4096, &v), TILEC_RT_OK);
    cr_expect_eq(v, 2);
    cr_expect_eq(fake->event_records, records + TIMED_ALL);
    expect_output(&e, 4096);
    cr_expect_eq(choice_files(NULL, 0, NULL, 0), 3, "one file per shape");
    env_free(&e, 1);
}

Test(multikernel, stored_choice_is_reused_by_a_fresh_program, .timeout = 300)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    tilec_rt *rt = e.rt;
    int v;
    set_ms(3, 2, 1);
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 2);
    char path[512], content[128];
    cr_assert_eq(choice_files(path, sizeof path, content, sizeof content), 1);
    cr_expect_str_eq(content, choice_line(path, 2));
    cr_expect_eq(leftover_temp_files(), 0);
    env_free(&e, 0);

    /* a new process, as far as the program goes: same cache directory,
     * nothing in memory; the clock now says variant 0, the file says 2 */
    set_ms(1, 2, 3);
    cr_assert_eq(env_build(&e, rt), TILEC_OK);
    tilec_program_stats st;
    tilec_program_get_stats(e.p, &st);
    cr_expect_eq(st.cache_hit, 1, "the bundle comes from the cache too");
    int records = fake->event_records, launches = total_launches();
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 2, "the stored choice wins over timing");
    cr_expect_eq(fake->event_records, records, "a stored choice is not timed");
    cr_expect_eq(total_launches(), launches + 1);
    expect_output(&e, 1000);
    /* another shape still gets timed */
    cr_assert_eq(best(&e, 100, &v), TILEC_RT_OK);
    cr_expect_eq(v, 0);
    cr_expect_eq(fake->event_records, records + TIMED_ONE_PRUNED);
    env_free(&e, 1);
}

/* bytes with "%s" get the file's own hash there (len is then ignored). */
static void corrupt_case(const char *bytes, size_t len, const char *what)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    tilec_rt *rt = e.rt;
    int v;
    set_ms(3, 1, 2);
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 1);
    char path[512], content[128];
    cr_assert_eq(choice_files(path, sizeof path, NULL, 0), 1);
    env_free(&e, 0);
    char hashed[160];
    const char *h = strstr(path, "multikernel-") + 12;
    const char *at = strstr(bytes, "%s");
    if (at) {
        len = (size_t)snprintf(hashed, sizeof hashed, "%.*s%.40s%s", (int)(at - bytes), bytes, h, at + 2);
        bytes = hashed;
    } else if (!strncmp(bytes, "entry ", 6)) { /* "entry V[ TAIL]": a checksummed entry of variant V */
        int vv = atoi(bytes + 6);
        const char *tail = strchr(bytes + 6, ' ');
        len = (size_t)snprintf(hashed, sizeof hashed, "%s", entry_of(h, vv));
        if (tail) /* the newline replaced by the tail */
            len = (size_t)snprintf(hashed + len - 1, sizeof hashed - len + 1, "%s", tail + 1) + len - 1;
        bytes = hashed;
    }

    int fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
    close(fd);

    set_ms(2, 3, 1);
    cr_assert_eq(env_build(&e, rt), TILEC_OK);
    int records = fake->event_records;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK, "%s", what);
    cr_expect_eq(v, 2, "%s: ignored and timed again", what);
    cr_expect_eq(fake->event_records, records + TIMED_ONE_PRUNED, "%s", what);
    expect_output(&e, 1000);
    cr_assert_eq(choice_files(NULL, 0, content, sizeof content), 1);
    cr_expect_str_eq(content, choice_line(path, 2), "%s: replaced", what);
    env_free(&e, 1);
}

Test(multikernel, corrupt_choice_garbage, .timeout = 300)
{
    static const char junk[] = "\x7f\x45LF\0\xff\xfe garbage\n";
    corrupt_case(junk, sizeof junk - 1, "garbage");
}

Test(multikernel, corrupt_choice_out_of_range, .timeout = 300)
{
    corrupt_case("entry 3", 0, "variant 3 of 3");
}

Test(multikernel, corrupt_choice_trailing_junk, .timeout = 300)
{
    corrupt_case("entry 1 junk\n", 0, "trailing junk");
}

Test(multikernel, corrupt_choice_negative, .timeout = 300)
{
    corrupt_case("entry -1", 0, "variant -1");
}

/* One digit changed (variant 1 read as 0): the checksum refuses it. */
Test(multikernel, corrupt_choice_bad_checksum, .timeout = 300)
{
    corrupt_case("tilec multi-kernel choice 2 0 %s 0000000000000000\n", 0, "a wrong checksum");
}

/* The entry before device models and drivers were in the key. */
Test(multikernel, corrupt_choice_old_form, .timeout = 300)
{
    corrupt_case("tilec multi-kernel choice 1 %s\n", 0, "the old one-line form");
}

/* A valid choice of another shape (another hash) copied under this
 * shape's name: refused (issue 28: every entry carries its own key). */
Test(multikernel, corrupt_choice_of_another_shape, .timeout = 300)
{
    static char other[160];
    snprintf(other, sizeof other, "%s", entry_of("0123456789abcdef0123456789abcdef01234567", 0));
    corrupt_case(other, strlen(other), "another shape's");
}

Test(multikernel, corrupt_choice_no_key, .timeout = 300)
{
    corrupt_case("tilec multi-kernel choice 0\n", 28, "the old line without its key");
}

Test(multikernel, corrupt_choice_truncated, .timeout = 300)
{
    corrupt_case("tilec multi-kern", 16, "truncated");
}

Test(multikernel, corrupt_choice_empty, .timeout = 300)
{
    corrupt_case("", 0, "empty");
}

Test(multikernel, forced_variant, .timeout = 300)
{
    setenv("TILEC_MULTI_KERNEL", "2", 1);
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    unsetenv("TILEC_MULTI_KERNEL"); /* read at build: the program keeps it */
    set_ms(1, 2, 3);
    int v;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 2);
    cr_assert_eq(best(&e, 7, &v), TILEC_RT_OK);
    cr_expect_eq(v, 2, "forced for every shape");
    cr_expect_eq(fake->event_records, 0, "a forced variant is not timed");
    cr_expect_eq(fake->mk_launches[2], 2);
    cr_expect_eq(fake->mk_launches[0] + fake->mk_launches[1], 0);
    cr_expect_eq(choice_files(NULL, 0, NULL, 0), 0, "a forced choice is not stored");
    expect_output(&e, 1000);
    env_free(&e, 1);
}

Test(multikernel, env_after_build_changes_nothing, .timeout = 300)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    setenv("TILEC_MULTI_KERNEL", "0", 1);
    set_ms(3, 1, 2);
    int v;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 1, "TILEC_MULTI_KERNEL is read when the program is built");
    cr_expect_eq(fake->event_records, TIMED_ONE_PRUNED);
    env_free(&e, 1);
}

Test(multikernel, forced_variant_out_of_range, .timeout = 300)
{
    static const char *bad[] = {"3", "64", "-1", "two", "1x"};
    tilec_rt *rt = NULL;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("TILEC_MULTI_KERNEL", bad[i], 1);
        env e;
        cr_assert_eq(env_build(&e, rt), TILEC_OK, "the build does not check TILEC_MULTI_KERNEL");
        rt = e.rt;
        int v;
        cr_expect_eq(best(&e, 1000, &v), TILEC_RT_INVALID_ARG, "TILEC_MULTI_KERNEL=%s", bad[i]);
        cr_expect_eq(v, -1, "TILEC_MULTI_KERNEL=%s: *chosen untouched", bad[i]);
        const char *want = i < 2 ? (i == 0 ? "TILEC_MULTI_KERNEL=3, but kernel mk has 3 variants (0 to 2)"
                                           : "TILEC_MULTI_KERNEL=64, but kernel mk has 3 variants (0 to 2)")
                                 : "TILEC_MULTI_KERNEL is not a variant number (when the program was built)";
        cr_expect_str_eq(tilec_rt_last_error(rt), want, "TILEC_MULTI_KERNEL=%s", bad[i]);
        env_free(&e, 0);
    }
    cr_expect_eq(total_launches(), 0, "nothing launched");
    cr_expect_eq(fake->event_records, 0);
    cr_expect_eq(choice_files(NULL, 0, NULL, 0), 0);
    tilec_rt_close(rt);
}

Test(multikernel, disabled_choice_cache_writes_no_file, .timeout = 300)
{
    setenv("TILEC_DISABLE_MULTI_KERNEL_CACHE", "1", 1);
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    tilec_rt *rt = e.rt;
    set_ms(3, 1, 2);
    int v;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 1);
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(fake->event_records, TIMED_ONE_PRUNED, "still kept in memory");
    cr_expect_eq(choice_files(NULL, 0, NULL, 0), 0, "no choice file");
    env_free(&e, 0);
    cr_assert_eq(env_build(&e, rt), TILEC_OK);
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(fake->event_records, 2 * TIMED_ONE_PRUNED, "a fresh program times again");
    env_free(&e, 1);
}

Test(multikernel, stored_choice_read_even_when_writing_is_off, .timeout = 300)
{
    /* a file from an earlier run with the disk on, read with it off: the
     * switch skips the files both ways */
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    tilec_rt *rt = e.rt;
    set_ms(3, 1, 2);
    int v;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    env_free(&e, 0);
    setenv("TILEC_DISABLE_MULTI_KERNEL_CACHE", "1", 1);
    set_ms(1, 2, 3);
    cr_assert_eq(env_build(&e, rt), TILEC_OK);
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 0, "the stored choice is not read either");
    cr_expect_eq(fake->event_records, 2 * TIMED_ONE_PRUNED);
    env_free(&e, 1);
}

/* Standard error into <dir>/stderr.txt with TILEC_LOGS=channels, until
 * log_end, which gives what was written. */
static int log_begin_on(const char *channels)
{
    char logpath[128];
    snprintf(logpath, sizeof logpath, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    dup2(fd, 2);
    close(fd);
    setenv("TILEC_LOGS", channels, 1);
    return saved;
}

/* TILEC_LOGS=multi_kernel */
static int log_begin(void) { return log_begin_on("multi_kernel"); }

static const char *log_end(int saved)
{
    static char log[8192];
    char logpath[128];
    snprintf(logpath, sizeof logpath, "%s/stderr.txt", dir);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    unsetenv("TILEC_LOGS");
    FILE *f = fopen(logpath, "r");
    cr_assert_not_null(f);
    size_t n = fread(log, 1, sizeof log - 1, f);
    log[n] = 0;
    fclose(f);
    return log;
}

/* With TILEC_LOGS=channels: a first program times shape 1000 (variant 1
 * the fastest), a second one takes the stored choice; the log. */
static const char *log_of_a_choice_timed_then_stored(const char *channels)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    tilec_rt *rt = e.rt;
    set_ms(3, 1, 2);
    int saved = log_begin_on(channels);
    int v, v2;
    tilec_rt_status s1 = best(&e, 1000, &v);
    env_free(&e, 0);
    tilec_status b = env_build(&e, rt);
    tilec_rt_status s2 = b == TILEC_OK ? best(&e, 1000, &v2) : TILEC_RT_INVALID_ARG;
    const char *log = log_end(saved);
    cr_assert_eq(s1, TILEC_RT_OK);
    cr_assert_eq(s2, TILEC_RT_OK);
    env_free(&e, 1);
    return log;
}

Test(multikernel, log_names_the_choice, .timeout = 300)
{
    const char *log = log_of_a_choice_timed_then_stored("multi_kernel");
    cr_expect(strstr(log, "tilec multi_kernel: mk shape (1000): variant 1 of 3.0000 1.0000 2.0000 ms (L2 cleared before "
                          "each)\n"),
              "%s", log);
    cr_expect(strstr(log, "tilec multi_kernel: mk shape (1000): variant 1 (choice from cache (disk), not timed)\n"),
              "%s", log);
}

/* TILEC_LOGS=tune alone names, per shape, the variants timed with their
 * times and the winner, or where the winner came from untimed (issue 31,
 * item 4; before, those lines were only on multi_kernel). */
Test(multikernel, tune_log_names_timed_variants_and_the_winner, .timeout = 300)
{
    const char *log = log_of_a_choice_timed_then_stored("tune");
    cr_expect(strstr(log, "tilec tune: mk shape (1000): timed 3 variants (0: 3.0000 ms, 1: 1.0000 ms, 2: 2.0000 ms; "
                          "L2 cleared before each); winner variant 1\n"),
              "%s", log);
    cr_expect(strstr(log, "tilec tune: mk shape (1000): winner variant 1 (choice from cache (disk), not timed)\n"), "%s",
              log);
    cr_expect_null(strstr(log, "tilec multi_kernel:"), "%s", log);
}

/* Issue 31: every timed launch starts with the L2 cleared, as the
 * benchmark times (a write of twice the L2's bytes between launches, not
 * inside the events): timed with what the launch before left in L2, a
 * kernel whose inputs fit there ranked its variants otherwise than a
 * benchmark that clears L2 (softmax 8192x1024: warps 1 at 0.0289 ms over
 * warps 4 at 0.0299 ms warm, bench/results/rows_tuned.md). The warm-ups
 * and the real launch after the choice are not flushed. Without memory
 * for the flush buffer the shape is still timed, and the log says L2 was
 * not cleared. */
Test(multikernel, every_timed_launch_starts_with_l2_cleared, .timeout = 300)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    set_ms(3, 1, 2);
    int v;
    int memsets = fake->memsets;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 1);
    int timed = TIMED_ONE_PRUNED / 2; /* one launch a timed round */
    cr_expect_eq(fake->mk_flushed, timed, "%d of the %d timed launches came after a flush", fake->mk_flushed, timed);
    cr_expect_eq(fake->memsets - memsets, timed, "one flush a timed launch");
    cr_expect_eq(fake->event_records, TIMED_ONE_PRUNED, "the flushes are outside the events");
    cr_expect_eq(fake->live_allocs, 2, "the flush buffer is freed (x and y stay)");
    env_free(&e, 1);

    fake_cuda_state *f = fake;
    memset(f->mk_launches, 0, sizeof f->mk_launches);
    f->mk_flushed = f->event_records = 0;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    f->fail_allocs_over = 1 << 20; /* the scratch copy of y fits, the flush buffer does not */
    int saved = log_begin_on("multi_kernel");
    cr_assert_eq(best(&e, 2000, &v), TILEC_RT_OK);
    const char *log = log_end(saved);
    f->fail_allocs_over = 0;
    cr_expect_eq(v, 1, "timed all the same");
    cr_expect_eq(f->event_records, TIMED_ONE_PRUNED);
    cr_expect_eq(f->mk_flushed, 0);
    cr_expect(strstr(log, "tilec multi_kernel: mk shape (2000): variant 1 of 3.0000 1.0000 2.0000 ms (L2 not cleared: "
                          "no flush buffer)\n"),
              "%s", log);
    env_free(&e, 1);
}

Test(multikernel, bad_arguments, .timeout = 300)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    tilec_rt_arg a[3] = {{.ptr = e.x}, {.ptr = e.y}, {.i32 = 10}};
    int v = -7;
    cr_expect_eq(tilec_program_launch_best(e.p, "nope", a, 3, NULL, &v), TILEC_RT_NOT_FOUND);
    cr_expect_eq(tilec_program_launch_best(e.p, "mk", a, 2, NULL, &v), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_program_launch_best(e.p, NULL, a, 3, NULL, &v), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_program_launch_best(NULL, "mk", a, 3, NULL, &v), TILEC_RT_INVALID_ARG);
    cr_expect_eq(v, -7);
    cr_expect_eq(total_launches(), 0);
    env_free(&e, 1);
}

/* ---- choices for the fleet: the key names the device model and driver;
 * the Redis tier carries a choice to a machine with an empty directory ---- */

static tilec_program_stats stats_of(const env *e)
{
    tilec_program_stats st;
    tilec_program_get_stats(e->p, &st);
    return st;
}

/* Another device model, or another driver, is another key: timed anew
 * (a choice made on an H100 says nothing of an A100). A fresh runtime
 * each time: the device is read when it is opened. */
Test(multikernel, another_device_model_or_driver_times_again, .timeout = 300)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    set_ms(3, 1, 2);
    int v;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(stats_of(&e).choices_timed, 1);
    env_free(&e, 1);
    static const char *const what[][2] = {{"FAKE_CUDA_DEVICE_NAME", "Fake CUDA Device B"},
                                          {"FAKE_CUDA_DRIVER_VERSION", "12090"}};
    for (int i = 0; i < 2; i++) {
        setenv(what[i][0], what[i][1], 1);
        cr_assert_eq(env_build(&e, NULL), TILEC_OK);
        int records = fake->event_records;
        cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
        cr_expect_neq(fake->event_records, records, "%s=%s: timed again", what[i][0], what[i][1]);
        cr_expect_eq(stats_of(&e).choices_timed, 1, "%s", what[i][0]);
        cr_expect_eq(stats_of(&e).choices_stored, 0, "%s", what[i][0]);
        env_free(&e, 1);
        unsetenv(what[i][0]);
    }
    cr_expect_eq(choice_files(NULL, 0, NULL, 0), 3, "one entry per device model and driver");
    /* and the first machine's choice is still its own */
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    int records = fake->event_records;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(fake->event_records, records);
    cr_expect_eq(stats_of(&e).choices_stored, 1);
    env_free(&e, 1);
}

/* Machine A times a shape; machine B (a fresh runtime and program, its
 * own empty cache directory, the same Redis server) launches it without
 * timing, says so in the log, and keeps the entry in its directory. */
Test(multikernel, a_second_machine_takes_the_choice_from_redis, .timeout = 300)
{
    start_server(NULL, 1);
    char a[128], b[128];
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    cdir = a;
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    set_ms(3, 1, 2);
    int v;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    cr_expect_eq(v, 1);
    cr_expect_eq(stats_of(&e).choices_timed, 1);
    env_free(&e, 1);

    cdir = b;
    set_ms(1, 2, 3); /* B's clock would choose variant 0: it must not be asked */
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    int records = fake->event_records, launches = total_launches();
    int saved = log_begin();
    tilec_rt_status st = best(&e, 1000, &v);
    const char *log = log_end(saved);
    cr_assert_eq(st, TILEC_RT_OK);
    cr_expect_eq(v, 1, "A's choice");
    cr_expect_eq(fake->event_records, records, "nothing timed on B");
    cr_expect_eq(total_launches(), launches + 1);
    cr_expect_eq(stats_of(&e).choices_timed, 0);
    cr_expect_eq(stats_of(&e).choices_stored, 1);
    cr_expect(strstr(log, "tilec multi_kernel: mk shape (1000): variant 1 (choice from cache (redis), not timed)\n"),
              "%s", log);
    expect_output(&e, 1000);
    char path[512], content[160];
    cr_expect_eq(choice_files(path, sizeof path, content, sizeof content), 1, "copied into B's directory");
    cr_expect_str_eq(content, choice_line(path, 1));
    env_free(&e, 1);
}

/* A value in Redis that is not this key's entry (another key's, a wrong
 * variant, garbage) is refused, the shape is timed, and the store
 * replaces the value. */
Test(multikernel, a_foreign_or_corrupt_redis_choice_is_refused, .timeout = 300)
{
    start_server(NULL, 1);
    char a[128];
    snprintf(a, sizeof a, "%s/a", dir);
    cdir = a;
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    set_ms(3, 1, 2);
    int v;
    cr_assert_eq(best(&e, 1000, &v), TILEC_RT_OK);
    char path[512];
    cr_assert_eq(choice_files(path, sizeof path, NULL, 0), 1);
    env_free(&e, 1);
    char hash[41], key[64];
    snprintf(hash, sizeof hash, "%.40s", strstr(path, "multikernel-") + 12);
    snprintf(key, sizeof key, "tilec:choice-%s", hash);
    char other[160], wrong[160];
    snprintf(other, sizeof other, "%s", entry_of("0123456789abcdef0123456789abcdef01234567", 2));
    snprintf(wrong, sizeof wrong, "%s", entry_of(hash, 7));
    const char *bad[] = {other, wrong, "garbage\n"};
    for (int i = 0; i < 3; i++) {
        const char *set[] = {"SET", key, bad[i]};
        say_to_server("+OK", 3, set, NULL);
        char fresh[128];
        snprintf(fresh, sizeof fresh, "%s/b%d", dir, i);
        cdir = fresh; /* an empty directory: only Redis can answer */
        set_ms(2, 3, 1);
        cr_assert_eq(env_build(&e, NULL), TILEC_OK);
        int records = fake->event_records;
        int saved = log_begin();
        tilec_rt_status st = best(&e, 1000, &v);
        const char *log = log_end(saved);
        cr_assert_eq(st, TILEC_RT_OK);
        cr_expect_eq(v, 2, "value %d: refused, timed", i);
        cr_expect_neq(fake->event_records, records, "value %d: timed", i);
        cr_expect(strstr(log, "refused the stored choice redis "), "value %d: %s", i, log);
        env_free(&e, 1);
        char reply[256];
        const char *get[] = {"GET", key};
        resp(2, get, NULL, reply, sizeof reply);
        cr_expect(strstr(reply, entry_of(hash, 2)), "value %d replaced on the server: %s", i, reply);
    }
}

/* tilec_program_use_choices (an --aot wrapper's embedded choices): a
 * choice for this device model is launched untimed, one for another model
 * is left out (that shape is timed); a choice naming a kernel, variant or
 * key length the program does not have is refused, nothing taken. */
Test(multikernel, choices_taken_ahead_of_time_are_not_timed, .timeout = 300)
{
    env e;
    cr_assert_eq(env_build(&e, NULL), TILEC_OK);
    set_ms(3, 1, 2);
    static const int64_t k1000[] = {1000}, k2000[] = {2000}, k2[] = {1, 2};
    const tilec_aot_choice bad[][1] = {{{"nope", "Fake CUDA Device", 1, k1000, 0}},
                                       {{"mk", "Fake CUDA Device", 1, k1000, 3}},
                                       {{"mk", "Fake CUDA Device", 2, k2, 0}},
                                       {{"mk", NULL, 1, k1000, 0}}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_expect_eq(tilec_program_use_choices(e.p, bad[i], 1), TILEC_RT_INVALID_ARG, "case %zu", i);
    const tilec_aot_choice good[] = {{"mk", "Fake CUDA Device", 1, k1000, 2}, {"mk", "Another GPU", 1, k2000, 0}};
    cr_assert_eq(tilec_program_use_choices(e.p, good, 2), TILEC_RT_OK);
    int v, records = fake->event_records;
    int saved = log_begin();
    tilec_rt_status st = best(&e, 1000, &v);
    const char *log = log_end(saved);
    cr_assert_eq(st, TILEC_RT_OK);
    cr_expect_eq(v, 2, "the embedded choice, not the fastest");
    cr_expect_eq(fake->event_records, records, "nothing timed");
    cr_expect(strstr(log, "tilec multi_kernel: mk shape (1000): variant 2 (chosen ahead of time, not timed)\n"), "%s",
              log);
    expect_output(&e, 1000);
    cr_assert_eq(best(&e, 2000, &v), TILEC_RT_OK);
    cr_expect_neq(fake->event_records, records, "another model's choice is not taken: timed");
    cr_expect_eq(v, 1);
    cr_expect_eq(stats_of(&e).choices_timed, 1);
    env_free(&e, 1);
}

/* Two machines as two processes: `tilec tune` on machine A (its own cache
 * directory) times a shape and stores the choice in Redis; `tilec tune` on
 * machine B (another empty directory, the same Redis server) finds it
 * there, times nothing (its line says so, and TILEC_LOGS=multi_kernel names
 * Redis) and keeps the entry in its directory. */
Test(multikernel, a_second_process_takes_the_choice_from_redis, .timeout = 300)
{
    start_server(NULL, 1);
    char tile[128], cmd[8192];
    snprintf(tile, sizeof tile, "%s/mk.tile", dir);
    FILE *f = fopen(tile, "w");
    cr_assert(f);
    fputs(mk_src, f);
    fclose(f);
    char *out[2] = {NULL, NULL};
    for (int m = 0; m < 2; m++) {
        snprintf(cmd, sizeof cmd,
                 "TILEC_CUDA_DRIVER=%s TILEC_LOGS=multi_kernel %s/bin/tilec tune %s --sizes n=1000 --dir %s/%c 2>&1",
                 fake_path, TILEC_BUILD, tile, dir, "ab"[m]);
        FILE *p = popen(cmd, "r");
        cr_assert(p);
        static char buf[2][4096];
        size_t n = fread(buf[m], 1, sizeof buf[m] - 1, p);
        buf[m][n] = 0;
        cr_assert_eq(pclose(p), 0, "machine %c: %s", "AB"[m], buf[m]);
        out[m] = buf[m];
    }
    int va = -1, vb = -2;
    cr_expect(strstr(out[0], "mk n=1000: variant ") && strstr(out[0], " of 3 (timed, stored)\n"), "A: %s", out[0]);
    cr_expect(!strstr(out[0], "not timed"), "A: %s", out[0]);
    const char *la = strstr(out[0], "mk n=1000: variant "), *lb = strstr(out[1], "mk n=1000: variant ");
    cr_assert(la && lb, "A: %s\nB: %s", out[0], out[1]);
    cr_expect_eq(sscanf(la, "mk n=1000: variant %d", &va), 1);
    cr_expect_eq(sscanf(lb, "mk n=1000: variant %d", &vb), 1);
    cr_expect_eq(va, vb, "B launches A's choice");
    cr_expect(strstr(out[1], " of 3 (choice from cache, not timed)\n"), "B: %s", out[1]);
    char want[128];
    snprintf(want, sizeof want, "tilec multi_kernel: mk shape (1000): variant %d (choice from cache (redis), not timed)\n",
             va);
    cr_expect(strstr(out[1], want), "B: %s", out[1]);
    snprintf(cmd, sizeof cmd, "ls %s/b | grep -c '^multikernel-.*\\.choice$'", dir);
    FILE *p = popen(cmd, "r");
    cr_assert(p);
    int files = -1;
    cr_expect_eq(fscanf(p, "%d", &files), 1);
    pclose(p);
    cr_expect_eq(files, 1, "B keeps the entry in its directory");
}
