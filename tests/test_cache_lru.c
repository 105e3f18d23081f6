/* test_cache_lru.c: cache keys and the bounded local tier. Keys change with
 * every field that decides the code (arch, NVRTC options, each kernel's
 * name, source and launch metadata, the compiler's identity), and a
 * rebuilt compiler (TILEC_CACHE_IDENTITY, the tests-only stand-in) does not
 * use the old entries of a real build. The directory stays under
 * TILEC_CACHE_MAX_BYTES by evicting the least recently used entry, also
 * while many processes read and write it; counters are shared by every
 * process using it; list, prune, clear and the `tilec cache` command. */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include <time.h>

#include "bundle_forge.h"
#include "cache_helpers.h"
#include "fs_helpers.h"

static char dir[64];

static void setup(void)
{
    cache_clean_env();
    make_tmpdir(dir, sizeof dir);
}

static void teardown(void) { rm_dir(dir); }

TestSuite(key, .init = setup, .fini = teardown);
TestSuite(lru, .init = setup, .fini = teardown);

static const tilec_rt_param_kind kinds[3] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_I32};

/* The key of one made-up kernel, with one field changed by `vary`. */
static void key_of(tilec_cache *c, const char *arch, int vary, char key[TILEC_CACHE_KEY_LEN + 1])
{
    tilec_cache_keyer *k = NULL;
    cr_assert_eq(tilec_cache_keyer_new(c, arch, &k), TILEC_RT_OK);
    tilec_rt_param_kind kk[3] = {kinds[0], kinds[1], vary == 5 ? TILEC_RT_PARAM_I64 : kinds[2]};
    const char *src = vary == 2 ? "int x; // a.tile:1" : vary == 7 ? "int y; // b.tile:1" : "int y; // a.tile:1";
    tilec_cache_keyer_add_kernel(k, vary == 1 ? "add_v1" : "add_v0", src, vary >= 6 ? "b.tile" : "a.tile",
                                 vary == 3 ? 256 : 128, vary == 4 ? 16 : 0, 3, kk);
    tilec_cache_keyer_final(k, key);
}

Test(key, every_field_changes_the_key)
{
    char base[TILEC_CACHE_KEY_LEN + 1], again[TILEC_CACHE_KEY_LEN + 1], other[TILEC_CACHE_KEY_LEN + 1];
    key_of(NULL, "sm_90", 0, base);
    cr_expect_eq(strlen(base), TILEC_CACHE_KEY_LEN);
    cr_expect(tilec_cache_key_ok(base, strlen(base)));
    key_of(NULL, "sm_90", 0, again);
    cr_expect_str_eq(base, again, "the same inputs, the same key");
    for (int vary = 1; vary <= 6; vary++) {
        key_of(NULL, "sm_90", vary, other);
        cr_expect_str_neq(base, other, "field %d", vary);
    }
    key_of(NULL, "sm_90", 7, other); /* the module's own path, elsewhere */
    cr_expect_str_eq(base, other, "the path in comments changed the key");
    key_of(NULL, "sm_90a", 0, other);
    cr_expect_str_neq(base, other, "arch");
    setenv("TILEC_LINEINFO", "1", 1); /* an NVRTC option that changes the code */
    key_of(NULL, "sm_90", 0, other);
    cr_expect_str_neq(base, other, "-lineinfo");
    unsetenv("TILEC_LINEINFO");
    tilec_cache *c;
    setenv("TILEC_CACHE_IDENTITY", "a-rebuilt-compiler", 1);
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_expect_str_eq(tilec_cache_identity(c), "a-rebuilt-compiler");
    key_of(c, "sm_90", 0, other);
    cr_expect_str_neq(base, other, "identity");
    tilec_cache_close(c);
    unsetenv("TILEC_CACHE_IDENTITY");
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_expect_str_eq(tilec_cache_identity(c), tilec_cache_identity(NULL), "the build's identity by default");
    cr_expect_eq(strlen(tilec_cache_identity(NULL)), 32);
    key_of(c, "sm_90", 0, other);
    cr_expect_str_eq(base, other);
    tilec_cache_close(c);
}

Test(key, strings_are_length_prefixed)
{
    char a[TILEC_CACHE_KEY_LEN + 1], b[TILEC_CACHE_KEY_LEN + 1], n[TILEC_CACHE_KEY_LEN + 1];
    const char *parts[3][2] = {{"ab", "c"}, {"a", "bc"}, {NULL, ""}};
    char *out[3] = {a, b, n};
    for (int i = 0; i < 3; i++) {
        tilec_cache_keyer *k;
        cr_assert_eq(tilec_cache_keyer_new(NULL, "sm_90", &k), TILEC_RT_OK);
        tilec_cache_keyer_add_str(k, parts[i][0]);
        tilec_cache_keyer_add_str(k, parts[i][1]);
        tilec_cache_keyer_final(k, out[i]);
    }
    cr_expect_str_neq(a, b);
    cr_expect_str_neq(a, n);
    tilec_cache_keyer *k = NULL;
    cr_expect_eq(tilec_cache_keyer_new(NULL, NULL, &k), TILEC_RT_INVALID_ARG);
    cr_expect_null(k);
    tilec_cache_keyer_add_str(NULL, "x"); /* no-ops */
    tilec_cache_keyer_final(NULL, a);
    cr_expect_str_eq(a, "");
}

/* A real build: the same compiler hits its entry; a rebuilt one (another
 * identity) compiles again and leaves the old entry to the old compiler. */
Test(key, rebuilt_compiler_does_not_use_old_entries, .timeout = 120)
{
    tilec_program_stats cold, warm, rebuilt, back;
    cr_assert_eq(cache_build("examples/add_relu.tile", dir, &cold), TILEC_OK);
    cr_expect_eq(cold.nvrtc_compiles, 1);
    cr_assert_eq(cache_build("examples/add_relu.tile", dir, &warm), TILEC_OK);
    cr_expect_eq(warm.nvrtc_compiles, 0);
    cr_expect_str_eq(warm.key, cold.key);
    setenv("TILEC_CACHE_IDENTITY", "tilec-with-a-changed-lowering", 1);
    cr_assert_eq(cache_build("examples/add_relu.tile", dir, &rebuilt), TILEC_OK);
    cr_expect_eq(rebuilt.nvrtc_compiles, 1, "the old compiler's entry was used");
    cr_expect_eq(rebuilt.cache_hit, 0);
    cr_expect_str_neq(rebuilt.key, cold.key);
    unsetenv("TILEC_CACHE_IDENTITY");
    cr_assert_eq(cache_build("examples/add_relu.tile", dir, &back), TILEC_OK);
    cr_expect_eq(back.nvrtc_compiles, 0);
    tilec_cache *c;
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    tilec_cache_usage u;
    cr_assert_eq(tilec_cache_usage_get(c, &u), TILEC_RT_OK);
    cr_expect_eq(u.entries, 2);
    tilec_cache_close(c);
}

/* The module's path is in the generated source only as comments: the
 * same module from another checkout (another directory, another machine)
 * has the same key and compiles nothing. */
Test(key, the_same_module_under_another_path_hits, .timeout = 120)
{
    char *text = read_file("examples/add_relu.tile", NULL);
    cr_assert(text);
    mkdir(cache_path(dir, "one"), 0700);
    mkdir(cache_path(dir, "other_checkout"), 0700);
    write_in(cache_path(dir, "one"), "add_relu.tile", text);
    write_in(cache_path(dir, "other_checkout"), "renamed.tile", text);
    free(text);
    char a[200], b[200];
    snprintf(a, sizeof a, "%s/add_relu.tile", cache_path(dir, "one"));
    snprintf(b, sizeof b, "%s/renamed.tile", cache_path(dir, "other_checkout"));
    tilec_program_stats first, second;
    cr_assert_eq(cache_build(a, cache_path(dir, "cache"), &first), TILEC_OK);
    cr_expect_eq(first.nvrtc_compiles, 1);
    cr_assert_eq(cache_build(b, cache_path(dir, "cache"), &second), TILEC_OK);
    cr_expect_eq(second.nvrtc_compiles, 0, "another path compiled again");
    cr_expect_str_eq(second.key, first.key);
}

/* What a caller that wants the CUBINs does (the tilec command's --emit
 * cubin): build with rt NULL and a cache, then take the bundle by the
 * program's key; the second time it comes from the directory. */
Test(key, a_build_leaves_its_bundle_to_the_caller, .timeout = 120)
{
    for (int round = 0; round < 2; round++) {
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = parse(ctx, "examples/matmul.tile");
        tilec_cache *c;
        cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
        tilec_build_options o = {.arch = "sm_90", .threads = 1, .cache = c};
        tilec_program *p = NULL;
        cr_assert_eq(tilec_program_build(ctx, NULL, m, &o, &p), TILEC_OK);
        tilec_program_stats st;
        tilec_program_get_stats(p, &st);
        cr_expect_eq(st.nvrtc_compiles, round ? 0u : 3u);
        tilec_bundle *b = NULL;
        cr_assert_eq(tilec_cache_get(c, st.key, &b), TILEC_RT_OK);
        cr_assert_eq(b->nkernels, 3);
        for (uint32_t i = 0; i < b->nkernels; i++) {
            char want[32];
            snprintf(want, sizeof want, "matmul_v%u", i);
            cr_expect_str_eq(b->kernels[i].name, want);
            cr_expect_gt(b->kernels[i].size, 1000, "a CUBIN");
        }
        tilec_cache_stats cs;
        tilec_cache_get_stats(c, &cs);
        cr_expect_eq(cs.mem_hits, 1, "the caller's get is a memory hit");
        tilec_bundle_free(b);
        tilec_program_free(p);
        tilec_cache_close(c);
        tilec_module_free(m);
        tilec_ctx_free(ctx);
    }
}

/* ---- the bound ---- */

static const char *const keys[] = {"aaaa", "bbbb", "cccc", "dddd", "eeee"};

static size_t bundle_bytes(const tilec_bundle *b)
{
    void *buf;
    size_t len;
    cr_assert_eq(tilec_bundle_serialize(b, "aaaa", &buf, &len), TILEC_RT_OK);
    free(buf);
    return len;
}

static int exists(const char *key)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s.tilecbundle", dir, key);
    return stat(path, &st) == 0;
}

/* File times move in clock ticks: let one pass between uses. */
static void tick(void) { nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL); }

static void fresh_get(const char *key, const tilec_bundle *want)
{
    tilec_cache *c;
    tilec_bundle *got = NULL;
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_assert_eq(tilec_cache_get(c, key, &got), TILEC_RT_OK, "%s", key);
    cr_expect(bundle_eq(got, want));
    tilec_bundle_free(got);
    tilec_cache_close(c);
}

Test(lru, evicts_the_least_recently_used)
{
    tilec_bundle *b = make_bundle(4, 3);
    size_t one = bundle_bytes(b);
    char cap[32];
    snprintf(cap, sizeof cap, "%zu", one * 3 + one / 2); /* room for three */
    setenv("TILEC_CACHE_MAX_BYTES", cap, 1);
    tilec_cache *c;
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_expect_eq(tilec_cache_max_bytes(c), one * 3 + one / 2);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(tilec_cache_put(c, keys[i], b), TILEC_RT_OK);
        tick();
    }
    fresh_get("aaaa", b); /* a's file is used: b is now the oldest */
    tick();
    cr_assert_eq(tilec_cache_put(c, keys[3], b), TILEC_RT_OK);
    cr_expect(exists("aaaa"), "a was used last but one, yet evicted");
    cr_expect_not(exists("bbbb"), "b, the least recently used, stayed");
    cr_expect(exists("cccc") && exists("dddd"));
    tilec_cache_stats s;
    tilec_cache_get_stats(c, &s);
    cr_expect_eq(s.evicted, 1);
    tilec_cache_usage u;
    cr_assert_eq(tilec_cache_usage_get(c, &u), TILEC_RT_OK);
    cr_expect_eq(u.entries, 3);
    cr_expect_leq(u.bytes, u.max_bytes);
    cr_expect_eq(u.evicted, 1);
    /* a memory hit still answers for an evicted entry */
    tilec_bundle *got = NULL;
    cr_expect_eq(tilec_cache_get(c, "bbbb", &got), TILEC_RT_OK);
    tilec_bundle_free(got);
    tilec_cache_close(c);
    tilec_bundle_free(b);
}

Test(lru, an_entry_over_the_bound_is_not_kept)
{
    tilec_bundle *b = make_bundle(4, 3);
    setenv("TILEC_CACHE_MAX_BYTES", "64", 1);
    tilec_cache *c;
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_assert_eq(tilec_cache_put(c, "aaaa", b), TILEC_RT_OK, "a put never fails for the bound");
    cr_expect_not(exists("aaaa"));
    tilec_cache_close(c);
    tilec_bundle_free(b);
}

Test(lru, max_bytes_settings)
{
    static const struct {
        const char *v;
        uint64_t want;
        int bad;
    } cases[] = {{"0", 0, 0}, {"4096", 4096, 0}, {"64K", 64 << 10, 0}, {"10M", 10 << 20, 0}, {"2G", 2ull << 30, 0},
                 {"", TILEC_CACHE_DEFAULT_MAX_BYTES, 0}, {"lots", TILEC_CACHE_DEFAULT_MAX_BYTES, 1},
                 {"-5", TILEC_CACHE_DEFAULT_MAX_BYTES, 1}, {"12Q", TILEC_CACHE_DEFAULT_MAX_BYTES, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("TILEC_CACHE_MAX_BYTES", cases[i].v, 1);
        tilec_cache *c;
        cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
        cr_expect_eq(tilec_cache_max_bytes(c), cases[i].want, "'%s'", cases[i].v);
        cr_expect_eq(strstr(tilec_cache_last_error(c), "TILEC_CACHE_MAX_BYTES") != NULL, cases[i].bad, "'%s': %s",
                     cases[i].v, tilec_cache_last_error(c));
        tilec_cache_close(c);
    }
}

static void set_last_use(const char *key, time_t when)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s.tilecbundle", dir, key);
    struct timespec t[2] = {{when, 0}, {when, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

Test(lru, list_prune_clear)
{
    tilec_bundle *b = make_bundle(3, 5);
    tilec_cache *c;
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(tilec_cache_put(c, keys[i], b), TILEC_RT_OK);
    time_t now = time(NULL);
    for (int i = 0; i < 5; i++)
        set_last_use(keys[i], now - 100 * (5 - i)); /* e newest, a oldest */
    tilec_cache_entry *v;
    size_t n;
    cr_assert_eq(tilec_cache_list(c, &v, &n), TILEC_RT_OK);
    cr_assert_eq(n, 5);
    for (size_t i = 0; i < n; i++) {
        cr_expect_str_eq(v[i].key, keys[4 - i], "most recently used first");
        cr_expect_eq(v[i].kernels, 3);
        cr_expect_eq(v[i].bytes, bundle_bytes(b));
        cr_expect_eq(v[i].last_use, now - 100 * (long)(i + 1));
    }
    free(v);
    write_in(dir, "cccc.tilecbundle", "not a bundle"); /* corrupt: pruned whatever its age */
    set_last_use("cccc", now);
    uint64_t removed, freed;
    tilec_rt_status st = tilec_cache_prune(c, 0, 450, &removed, &freed);
    cr_assert_eq(st, TILEC_RT_OK);
    cr_expect_eq(removed, 2, "the invalid one and a (unused for 500 s)");
    cr_expect(!exists("aaaa") && !exists("cccc") && exists("bbbb") && exists("dddd") && exists("eeee"));
    uint64_t two = bundle_bytes(b) * 2;
    st = tilec_cache_prune(c, two, 0, &removed, &freed);
    cr_assert_eq(st, TILEC_RT_OK);
    cr_expect_eq(removed, 1, "down to two entries: b, the oldest, goes");
    cr_expect_eq(freed, two / 2);
    cr_expect(!exists("bbbb") && exists("dddd") && exists("eeee"));
    write_in(dir, "multikernel-0123456789abcdef.choice", "tilec multi-kernel choice 1\n");
    st = tilec_cache_clear(c, &removed, &freed);
    cr_assert_eq(st, TILEC_RT_OK);
    cr_expect_eq(removed, 3);
    tilec_bundle *got = NULL;
    cr_expect_eq(tilec_cache_get(c, "dddd", &got), TILEC_RT_NOT_FOUND, "clear empties the memory level too");
    cr_assert_eq(tilec_cache_list(c, &v, &n), TILEC_RT_OK);
    cr_expect_eq(n, 0);
    free(v);
    tilec_cache_close(c);
    /* a cache without a directory has nothing to list */
    setenv("TILEC_FORCE_DISABLE_CACHES", "1", 1);
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_expect_eq(tilec_cache_list(c, &v, &n), TILEC_RT_NOT_FOUND);
    cr_expect_eq(tilec_cache_prune(c, 0, 0, NULL, NULL), TILEC_RT_NOT_FOUND);
    cr_expect(strstr(tilec_cache_last_error(c), "no cache directory"));
    tilec_cache_close(c);
    tilec_bundle_free(b);
}

static int count_lookups(void *arg)
{
    (void)arg;
    tilec_cache *c;
    tilec_bundle *b = make_bundle(2, 9), *got = NULL;
    if (tilec_cache_open(dir, &c) != TILEC_RT_OK)
        return 1;
    int rc = tilec_cache_get(c, "aaaa", &got) == TILEC_RT_NOT_FOUND && tilec_cache_put(c, "aaaa", b) == TILEC_RT_OK
                 ? 0
                 : 2;
    tilec_bundle_free(got);
    tilec_cache_close(c);
    if (tilec_cache_open(dir, &c) != TILEC_RT_OK || tilec_cache_get(c, "aaaa", &got) != TILEC_RT_OK)
        rc = 3;
    tilec_bundle_free(got);
    tilec_cache_close(c);
    tilec_bundle_free(b);
    return rc;
}

Test(lru, counters_are_shared_by_processes)
{
    cr_assert_eq(cache_child(count_lookups, NULL, NULL), 0);
    tilec_cache *c;
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    tilec_cache_usage u;
    cr_assert_eq(tilec_cache_usage_get(c, &u), TILEC_RT_OK);
    cr_expect_eq(u.misses, 1);
    cr_expect_eq(u.writes, 1);
    cr_expect_eq(u.local_hits, 1);
    tilec_cache_close(c);
}

/* Many processes read, write and evict in one small directory: every hit
 * is the right bundle, and nothing fails. */
enum { LRU_PROCS = 8, LRU_ROUNDS = 60, LRU_KEYS = 12 };

static int lru_worker(int id)
{
    for (int r = 0; r < LRU_ROUNDS; r++) {
        char key[16];
        int k = (r * 7 + id * 3) % LRU_KEYS;
        snprintf(key, sizeof key, "key%d", k);
        tilec_cache_stats s;
        int rc = cache_use_key(dir, key, (unsigned)k, &s);
        if (rc)
            return rc;
    }
    return 0;
}

Test(lru, processes_share_a_bounded_directory, .timeout = 120)
{
    tilec_bundle *b = make_bundle(4, 52);
    char cap[32];
    snprintf(cap, sizeof cap, "%zu", bundle_bytes(b) * 4); /* about a third of the keys fit */
    tilec_bundle_free(b);
    setenv("TILEC_CACHE_MAX_BYTES", cap, 1);
    cr_expect_eq(cache_procs(LRU_PROCS, lru_worker), 0, "processes failed");
    tilec_cache_usage u = cache_usage_in(dir);
    cr_assert_gt(u.writes, 0);
    cr_expect_leq(u.bytes, u.max_bytes);
    cr_expect_gt(u.evicted, 0);
    cr_expect_eq(u.local_hits + u.misses, LRU_PROCS * LRU_ROUNDS);
    cr_expect_eq(u.corrupt, 0);
}

/* ---- the command ---- */

Test(lru, tilec_cache_command)
{
    tilec_bundle *b = make_bundle(2, 7);
    tilec_cache *c;
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_assert_eq(tilec_cache_put(c, "aaaa", b), TILEC_RT_OK);
    cr_assert_eq(tilec_cache_put(c, "bbbb", b), TILEC_RT_OK);
    tilec_cache_close(c);
    fresh_get("aaaa", b);
    char *out;
    cr_expect_eq(sh(&out, "build/bin/tilec cache stats --dir %s", dir), 0, "%s", out);
    cr_expect(strstr(out, "entries        2\n"), "%s", out);
    cr_expect(strstr(out, "hits           local 1, remote 0\n"), "%s", out);
    cr_expect(strstr(out, "writes         2\n"), "%s", out);
    cr_expect(strstr(out, "of 1073741824 (1.0 GiB)"), "%s", out);
    free(out);
    cr_expect_eq(sh(&out, "build/bin/tilec cache list --dir %s", dir), 0, "%s", out);
    cr_expect(strstr(out, "KEY") && strstr(out, "aaaa") && strstr(out, "bbbb"), "%s", out);
    free(out);
    cr_expect_eq(sh(&out, "TILEC_CACHE_DIR=%s build/bin/tilec cache prune --max-bytes 1", dir), 0, "%s", out);
    cr_expect(strstr(out, "pruned 2 files"), "%s", out);
    free(out);
    cr_expect_eq(sh(&out, "build/bin/tilec cache clear --dir %s", dir), 0, "%s", out);
    cr_expect(strstr(out, "removed 0 files"), "%s", out);
    free(out);
    cr_expect_eq(sh(&out, "build/bin/tilec cache frobnicate"), 2);
    cr_expect(strstr(out, "unknown command: frobnicate"), "%s", out);
    free(out);
    cr_expect_eq(sh(&out, "build/bin/tilec cache prune --max-bytes lots"), 2);
    cr_expect(strstr(out, "--max-bytes wants a size"), "%s", out);
    free(out);
    cr_expect_eq(sh(&out, "build/bin/tilec cache prune --unused-for 3x --dir %s", dir), 2);
    free(out);
    cr_expect_eq(sh(&out, "TILEC_FORCE_DISABLE_CACHES=1 build/bin/tilec cache stats --dir %s", dir), 1);
    cr_expect(strstr(out, "no cache directory"), "%s", out);
    free(out);
    tilec_bundle_free(b);
}
