/* test_cache.c: the kernel cache without a GPU. SHA-256 and checksum
 * vectors; bundles serialized and parsed back; every corruption of a
 * bundle (each truncation, each header bit, payload bits, forged fields
 * with valid checksums); the cache's memory and disk levels, corrupt files,
 * directories and environment variables, failed and killed writers, and
 * many processes writing and reading one key at once. Each test runs in its
 * own temporary directory. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bundle_forge.h"
#include "tilec/cache.h"

/* ---- helpers ---- */

static char tdir[512]; /* this test's directory */

static void rm_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        chmod(path, 0700);
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[1024];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_tree(sub);
        }
        if (d)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void clean_env(void)
{
    unsetenv("TILEC_FORCE_DISABLE_CACHES");
    unsetenv("TILEC_LOGS");
    unsetenv("TILEC_CACHE_DIR");
    unsetenv("XDG_CACHE_HOME");
}

static void setup(void)
{
    snprintf(tdir, sizeof tdir, "/tmp/tilec_cache_test_XXXXXX");
    cr_assert_not_null(mkdtemp(tdir));
    chmod(tdir, 0700);
    clean_env();
}

static void teardown(void) { rm_tree(tdir); }

TestSuite(hash);
TestSuite(bundle);
TestSuite(cache, .init = setup, .fini = teardown);

static char *path_in(const char *name)
{
    static char buf[4][1024];
    static int i;
    char *p = buf[i++ % 4];
    snprintf(p, 1024, "%s/%s", tdir, name);
    return p;
}

/* The entries of a directory but . and .., counted; names appended to
 * list (comma separated) when list is not NULL. */
static int dir_entries(const char *dir, char *list, size_t size)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    if (list && size)
        list[0] = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strncmp(e->d_name, ".tilec-", 7))
            continue; /* the sweep's marker, the counters, the eviction lock: not bundles */
        n++;
        if (list)
            snprintf(list + strlen(list), size - strlen(list), "%s,", e->d_name);
    }
    closedir(d);
    return n;
}

static void *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

static void spit(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
}

static const char KEY[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
static const char KEY2[] = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

/* Offset of kernel 0's record in a serialized bundle under a 64-byte key. */
enum { K0 = 64 + 64 };

/* Parse a copy of exactly len bytes (so ASan sees any over-read); expect a
 * rejection whose message contains `want` (NULL: any message). */
static void expect_rejected(const void *buf, size_t len, const char *key, const char *want, const char *what)
{
    void *copy = malloc(len ? len : 1);
    if (len)
        memcpy(copy, buf, len);
    tilec_bundle *b = (tilec_bundle *)1;
    char why[512] = "";
    tilec_rt_status st = tilec_bundle_parse(copy, len, key, &b, why, sizeof why);
    free(copy);
    cr_assert_eq(st, TILEC_RT_MODULE_ERROR, "%s: status %d", what, st);
    cr_assert_null(b, "%s: a partial bundle", what);
    cr_assert(why[0], "%s: no message", what);
    if (want)
        cr_assert(strstr(why, want), "%s: message '%s' lacks '%s'", what, why, want);
}

static void serialize_ok(const tilec_bundle *b, const char *key, uint8_t **buf, size_t *len)
{
    void *p = NULL;
    cr_assert_eq(tilec_bundle_serialize(b, key, &p, len), TILEC_RT_OK);
    *buf = p;
}

/* ---- SHA-256 and the checksum ---- */

static void sha_hex(const void *data, size_t len, char hex[65])
{
    tilec_hasher h;
    tilec_hasher_init(&h);
    tilec_hasher_update(&h, data, len);
    tilec_hasher_final(&h, hex);
}

Test(hash, sha256_vectors)
{
    static const struct {
        const char *in, *out;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopq"
         "rstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    char hex[65];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        sha_hex(v[i].in, strlen(v[i].in), hex);
        cr_expect_str_eq(hex, v[i].out, "vector %zu", i);
    }
    /* a million 'a', fed in uneven pieces */
    char a[1000];
    memset(a, 'a', sizeof a);
    tilec_hasher h;
    tilec_hasher_init(&h);
    size_t fed = 0;
    for (size_t piece = 1; fed < 1000000; piece = piece % 997 + 1) {
        size_t n = piece < 1000000 - fed ? piece : 1000000 - fed;
        tilec_hasher_update(&h, a, n);
        fed += n;
    }
    tilec_hasher_final(&h, hex);
    cr_expect_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Every split of every length up to 200 bytes gives the one-shot digest
 * (block boundaries, padding at 55/56/63/64 bytes). */
Test(hash, sha256_splits)
{
    uint8_t buf[200];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(i * 13 + 5);
    for (size_t n = 0; n <= sizeof buf; n++) {
        char whole[65], parts[65];
        sha_hex(buf, n, whole);
        for (size_t cut = 0; cut <= n; cut += 7) {
            tilec_hasher h;
            tilec_hasher_init(&h);
            tilec_hasher_update(&h, buf, cut);
            tilec_hasher_update(&h, NULL, 0);
            tilec_hasher_update(&h, buf + cut, n - cut);
            tilec_hasher_final(&h, parts);
            cr_assert_str_eq(whole, parts, "length %zu cut at %zu", n, cut);
        }
    }
}

static void str_digest(const char *const *s, size_t n, char hex[65])
{
    tilec_hasher h;
    tilec_hasher_init(&h);
    for (size_t i = 0; i < n; i++)
        tilec_hasher_update_str(&h, s[i]);
    tilec_hasher_final(&h, hex);
}

Test(hash, strings_are_length_prefixed)
{
    char x[65], y[65], z[65];
    const char *ab_c[] = {"ab", "c"}, *a_bc[] = {"a", "bc"}, *abc[] = {"abc"}, *abc_e[] = {"abc", ""};
    str_digest(ab_c, 2, x);
    str_digest(a_bc, 2, y);
    cr_expect_str_neq(x, y);
    str_digest(abc, 1, z);
    cr_expect_str_neq(x, z);
    str_digest(abc_e, 2, y);
    cr_expect_str_neq(y, z, "a trailing empty string changes nothing");
    const char *null1[] = {NULL}, *empty1[] = {""};
    str_digest(null1, 1, x);
    str_digest(empty1, 1, y);
    cr_expect_str_neq(x, y, "NULL and \"\" hash alike");
    /* the documented encoding: 8-byte little-endian length, then bytes */
    tilec_hasher h;
    tilec_hasher_init(&h);
    tilec_hasher_update(&h, "\x03\0\0\0\0\0\0\0abc", 11);
    tilec_hasher_final(&h, x);
    cr_expect_str_eq(x, z);
    tilec_hasher_init(&h);
    tilec_hasher_update_u64(&h, 0x0102030405060708ull);
    tilec_hasher_final(&h, x);
    sha_hex("\x08\x07\x06\x05\x04\x03\x02\x01", 8, y);
    cr_expect_str_eq(x, y);
}

/* XXH64, seed 0: values from the reference xxHash implementation. */
Test(hash, checksum_vectors)
{
    static const struct {
        const char *in;
        uint64_t sum;
    } v[] = {
        {"", 0xef46db3751d8e999ull},
        {"a", 0xd24ec4f1a98c6e5bull},
        {"abc", 0x44bc2cf5ad770999ull},
        {"123456789", 0x8cb841db40e6ae83ull},
        {"The quick brown fox jumps over the lazy dog", 0x0b242d361fda71bcull},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        cr_expect_eq(tilec_bundle_checksum(v[i].in, strlen(v[i].in)), v[i].sum, "\"%s\"", v[i].in);
    cr_expect_eq(tilec_bundle_checksum(NULL, 0), 0xef46db3751d8e999ull);
    uint8_t b[1000];
    for (int i = 0; i < 1000; i++)
        b[i] = (uint8_t)(i * 7 + 3);
    static const struct {
        size_t len;
        uint64_t sum;
    } w[] = {{31, 0xa2aa5f33cc4a6119ull},
             {32, 0x23c3c17ef790fd97ull},
             {33, 0x50a7cfc7ba588784ull},
             {100, 0xa61f8d4c170fe531ull},
             {1000, 0x5f235fa033f1a3fbull}};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        cr_expect_eq(tilec_bundle_checksum(b, w[i].len), w[i].sum, "%zu bytes", w[i].len);
}

/* ---- bundles ---- */

Test(bundle, round_trip)
{
    for (uint32_t n = 1; n <= 9; n += 4)
        for (unsigned seed = 0; seed < 5; seed++) {
            tilec_bundle *b = make_bundle(n, seed);
            uint8_t *buf, *buf2;
            size_t len, len2;
            serialize_ok(b, KEY, &buf, &len);
            serialize_ok(b, KEY, &buf2, &len2);
            cr_assert(len == len2 && !memcmp(buf, buf2, len), "serialize is not deterministic");
            tilec_bundle *p = NULL;
            char why[256] = "x";
            cr_assert_eq(tilec_bundle_parse(buf, len, KEY, &p, why, sizeof why), TILEC_RT_OK, "%s", why);
            cr_expect_str_eq(why, "");
            cr_assert(bundle_eq(b, p), "n %u seed %u", n, seed);
            tilec_bundle_free(p);
            cr_assert_eq(tilec_bundle_parse(buf, len, NULL, &p, NULL, 0), TILEC_RT_OK, "any key");
            cr_assert(bundle_eq(b, p));
            tilec_bundle_free(p);
            free(buf);
            free(buf2);
            tilec_bundle_free(b);
        }
    /* the largest metadata: 64 parameters, a 1024-byte name, a short key */
    tilec_bundle *b = make_bundle(1, 0);
    b->kernels[0].nparams = TILEC_RT_MAX_PARAMS;
    b->kernels[0].threads = TILEC_RT_MAX_BLOCK;
    b->kernels[0].smem_bytes = UINT32_MAX;
    free(b->kernels[0].name);
    b->kernels[0].name = malloc(TILEC_BUNDLE_MAX_NAME + 1);
    memset(b->kernels[0].name, 'n', TILEC_BUNDLE_MAX_NAME);
    b->kernels[0].name[TILEC_BUNDLE_MAX_NAME] = 0;
    uint8_t *buf;
    size_t len;
    serialize_ok(b, "k", &buf, &len);
    tilec_bundle *p = NULL;
    cr_assert_eq(tilec_bundle_parse(buf, len, "k", &p, NULL, 0), TILEC_RT_OK);
    cr_assert(bundle_eq(b, p));
    tilec_bundle_free(p);
    free(buf);
    tilec_bundle_free(b);
}

Test(bundle, copy_is_deep)
{
    tilec_bundle *b = make_bundle(3, 2), *c = NULL;
    cr_assert_eq(tilec_bundle_copy(b, &c), TILEC_RT_OK);
    cr_assert(bundle_eq(b, c));
    cr_assert_neq(b->kernels[1].image, c->kernels[1].image);
    ((uint8_t *)c->kernels[1].image)[0] ^= 1;
    cr_assert(!bundle_eq(b, c));
    tilec_bundle_free(c);
    tilec_bundle_free(b);
    cr_expect_eq(tilec_bundle_copy(NULL, &c), TILEC_RT_INVALID_ARG);
    tilec_bundle_free(NULL);
}

/* serialize refuses what parse would refuse: the two agree. */
Test(bundle, serialize_checks_the_bundle)
{
    void *buf = (void *)1;
    size_t len = 9;
    static const char *const bad_keys[] = {"", "../etc", "a/b", "a.b", "a b", "k\n"};
    tilec_bundle *b = make_bundle(2, 1);
    for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
        cr_expect_eq(tilec_bundle_serialize(b, bad_keys[i], &buf, &len), TILEC_RT_INVALID_ARG, "key '%s'", bad_keys[i]);
        cr_expect(buf == NULL && len == 0);
    }
    char long_key[TILEC_CACHE_MAX_KEY + 2];
    memset(long_key, 'a', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = 0;
    cr_expect_eq(tilec_bundle_serialize(b, long_key, &buf, &len), TILEC_RT_INVALID_ARG);
    long_key[TILEC_CACHE_MAX_KEY] = 0;
    cr_expect_eq(tilec_bundle_serialize(b, long_key, &buf, &len), TILEC_RT_OK, "a 128-byte key");
    free(buf);
    cr_expect_eq(tilec_bundle_serialize(NULL, KEY, &buf, &len), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_bundle_serialize(b, NULL, &buf, &len), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_bundle_serialize(b, KEY, NULL, &len), TILEC_RT_INVALID_ARG);

    tilec_bundle_kernel *k = &b->kernels[1];
    tilec_bundle_kernel saved = *k;
#define EXPECT_REFUSED(what)                                                                                           \
    do {                                                                                                               \
        cr_expect_eq(tilec_bundle_serialize(b, KEY, &buf, &len), TILEC_RT_INVALID_ARG, what);                          \
        cr_expect_null(buf);                                                                                           \
        *k = saved;                                                                                                    \
    } while (0)
    k->size = 0;
    EXPECT_REFUSED("a 0-byte image");
    k->image = NULL;
    EXPECT_REFUSED("no image");
    k->name = NULL;
    EXPECT_REFUSED("no name");
    k->name = "";
    EXPECT_REFUSED("an empty name");
    k->name = "9lives";
    EXPECT_REFUSED("a name starting with a digit");
    k->name = "a-b";
    EXPECT_REFUSED("a name with a dash");
    k->name = b->kernels[0].name;
    EXPECT_REFUSED("two kernels of one name");
    k->threads = 0;
    EXPECT_REFUSED("0 threads");
    k->threads = TILEC_RT_MAX_BLOCK + 1;
    EXPECT_REFUSED("1025 threads");
    k->nparams = TILEC_RT_MAX_PARAMS + 1;
    EXPECT_REFUSED("65 parameters");
    k->nparams = 1;
    k->kinds[0] = TILEC_RT_PARAM_KIND_COUNT;
    EXPECT_REFUSED("an unknown kind");
    k->kinds[0] = saved.kinds[0];
    cr_assert_gt(k->split_k, 1, "make_bundle's kernel 1 splits K");
    k->split_k = 1;
    EXPECT_REFUSED("split-K of 1 slice");
    k->split_k = 65;
    EXPECT_REFUSED("split-K of 65 slices");
    k->split_k = 0;
    EXPECT_REFUSED("partial bytes without split-K");
    k->written = 1ull << k->nparams;
    EXPECT_REFUSED("a written parameter past the count");
    k->twin = (tilec_tma_meta){.name = "k_tma", .threads = 128, .nmaps = 1, .maps = {{.ptr = k->nparams}}};
    EXPECT_REFUSED("a twin's map past the parameters");
    k->twin = (tilec_tma_meta){.name = "k-tma", .threads = 128};
    EXPECT_REFUSED("a twin's name with a dash");
    k->twin = (tilec_tma_meta){.name = "k_tma", .threads = 0};
    EXPECT_REFUSED("a twin of 0 threads");
    k->twin = (tilec_tma_meta){.name = "k_tma", .threads = 128, .nmaps = TILEC_TMA_MAX_MAPS + 1};
    EXPECT_REFUSED("a twin of 4 maps");
    k->twin = (tilec_tma_meta){.name = "k_tma", .threads = 128, .kbound = k->nparams, .kper = 64};
    EXPECT_REFUSED("a twin's K loop bound past the parameters");
    k->twin = (tilec_tma_meta){.name = "k_tma", .threads = 128, .persistent = 1, .one_tma = 1};
    EXPECT_REFUSED("one_tma on a twin of one tile a unit");
    k->twin = (tilec_tma_meta){.name = "k_tma", .threads = 128, .persistent = 2, .one_tma = 2};
    EXPECT_REFUSED("one_tma 2");
    k->twin = (tilec_tma_meta){.name = "k_tma", .threads = 128, .nmaps = 1, .maps = {{.bs = {TILEC_TMA_NONE, 0}}}};
    cr_expect_eq(tilec_bundle_serialize(b, KEY, &buf, &len), TILEC_RT_OK, "a twin of one map is all right");
    free(buf);
    *k = saved;
#undef EXPECT_REFUSED
    uint32_t n = b->nkernels;
    b->nkernels = 0;
    cr_expect_eq(tilec_bundle_serialize(b, KEY, &buf, &len), TILEC_RT_INVALID_ARG, "no kernels");
    b->nkernels = n;
    tilec_bundle_free(b);
}

Test(bundle, truncated_at_every_length)
{
    tilec_bundle *b = make_bundle(4, 3);
    uint8_t *buf;
    size_t len;
    serialize_ok(b, KEY, &buf, &len);
    for (size_t n = 0; n < len; n++) {
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu of %zu", n, len);
        expect_rejected(buf, n, KEY, "truncated", what);
    }
    expect_rejected(NULL, 0, KEY, "truncated", "no bytes");
    free(buf);
    tilec_bundle_free(b);
}

Test(bundle, every_header_bit_and_payload_bits, .timeout = 60)
{
    tilec_bundle *b = make_bundle(5, 4);
    uint8_t *buf;
    size_t len;
    serialize_ok(b, KEY, &buf, &len);
    char what[64];
    for (size_t bit = 0; bit < 64 * 8; bit++) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        snprintf(what, sizeof what, "header bit %zu", bit);
        expect_rejected(buf, len, KEY, NULL, what);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    /* every bit of the key and the first kernel record, then a sample */
    for (size_t bit = 64 * 8; bit < (K0 + 64) * 8; bit++) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        snprintf(what, sizeof what, "payload bit %zu", bit);
        expect_rejected(buf, len, KEY, "payload checksum", what);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    for (size_t bit = (K0 + 64) * 8; bit < len * 8; bit += 13) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        snprintf(what, sizeof what, "payload bit %zu", bit);
        expect_rejected(buf, len, KEY, "payload checksum", what);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    tilec_bundle *p = NULL;
    cr_assert_eq(tilec_bundle_parse(buf, len, KEY, &p, NULL, 0), TILEC_RT_OK, "restored");
    tilec_bundle_free(p);
    free(buf);
    tilec_bundle_free(b);
}

/* Each field made wrong, with the checksums made right again, is caught by
 * its own check. */
Test(bundle, forged_fields)
{
    tilec_bundle *b = make_bundle(3, 5); /* kernel 1 splits K, kernel 2 has a twin with 3 maps */
    uint8_t *good;
    size_t len;
    serialize_ok(b, KEY, &good, &len);
    uint8_t *buf = malloc(len + 64);
#define FORGE(stmt, want, what)                                                                                        \
    do {                                                                                                               \
        memcpy(buf, good, len);                                                                                        \
        size_t n = len;                                                                                                \
        stmt;                                                                                                          \
        bundle_reseal(buf, n);                                                                                                \
        expect_rejected(buf, n, KEY, want, what);                                                                      \
    } while (0)
    /* unsealed: the magic, another key, trailing bytes */
    memcpy(buf, good, len);
    memcpy(buf, "TILECBNE", 8);
    expect_rejected(buf, len, KEY, "bad magic", "wrong magic");
    expect_rejected(good, len, KEY2, "stored under key", "another key");
    memcpy(buf, good, len);
    memcpy(buf + len, "garbage", 7);
    expect_rejected(buf, len + 7, KEY, "trailing", "trailing garbage");
    bundle_put32(buf, 0);
    expect_rejected(buf, len, KEY, "bad magic", "zeroed magic");

    FORGE(bundle_put32(buf + 8, 1), "version 1", "an older version");
    FORGE(bundle_put32(buf + 8, 2), "version 2", "an older version (no batch axis or constant in a map)");
    FORGE(bundle_put32(buf + 8, 3), "version 3", "an older version (no loop trips in the twin)");
    FORGE(bundle_put32(buf + 8, 4), "version 4", "an older version (no constant map extent, no persistence 4)");
    FORGE(bundle_put32(buf + 8, 5), "version 5", "an older version (maps of 13 words, no im2col map)");
    FORGE(bundle_put32(buf + 8, 6), "version 6", "an older version (no im2col map of the output's extents)");
    FORGE(bundle_put32(buf + 8, 7), "version 7", "the previous version (no one-tile flag in the twin)");
    FORGE(bundle_put32(buf + 8, 9), "version 9", "a later version");
    FORGE(bundle_put32(buf + 8, 0), "version 0", "version 0");
    FORGE(bundle_put32(buf + 12, 1), "flags", "flags");
    FORGE(buf[47] = 1, "reserved", "reserved byte");
    FORGE(bundle_put32(buf + 36, 1u << 31), "kernels", "nkernels 2^31");
    FORGE(bundle_put32(buf + 36, 0), "kernels", "nkernels 0");
    FORGE(bundle_put32(buf + 36, TILEC_BUNDLE_MAX_KERNELS), "cannot fit", "nkernels 65536");
    FORGE(bundle_put32(buf + 36, 4), "truncated before", "one kernel too many");
    FORGE(bundle_put32(buf + 36, 2), "after the last kernel", "one kernel too few");
    FORGE(bundle_put32(buf + 32, 0), "key of 0 bytes", "key length 0");
    FORGE(bundle_put32(buf + 32, UINT32_MAX), "key of", "key length 2^32-1");
    FORGE(bundle_put32(buf + 32, 63), "stored under key", "key length one short");
    FORGE(buf[64] = '/', "malformed", "a slash in the stored key");
    FORGE((memcpy(buf + n, "garbage", 7), n += 7), "after the last kernel", "sealed trailing garbage");
    FORGE(bundle_put32(buf + K0, 0), "name of 0 bytes", "name length 0");
    FORGE(bundle_put32(buf + K0, UINT32_MAX), "name of", "name length 2^32-1");
    FORGE(bundle_put32(buf + K0, TILEC_BUNDLE_MAX_NAME), "runs past", "name past the end");
    FORGE(buf[K0 + 4] = '7', "not a C identifier", "a digit first");
    FORGE(buf[K0 + 5] = 0, "not a C identifier", "a NUL in the name");
    const size_t name0 = strlen(b->kernels[0].name);
    const size_t meta0 = K0 + 4 + name0; /* threads, smem, nparams */
    FORGE(bundle_put32(buf + meta0, 0), "block size", "0 threads");
    FORGE(bundle_put32(buf + meta0, 1025), "block size", "1025 threads");
    FORGE(bundle_put32(buf + meta0 + 8, 65), "more than 64 parameters", "65 parameters");
    FORGE(bundle_put32(buf + meta0 + 8, UINT32_MAX), "more than 64 parameters", "2^32-1 parameters");
    const size_t kinds0 = meta0 + 12, np0 = b->kernels[0].nparams;
    cr_assert_gt(np0, 0);
    FORGE(buf[kinds0] = TILEC_RT_PARAM_KIND_COUNT, "unknown kind", "kind 8, the count of kinds");
    FORGE(buf[kinds0 + np0 - 1] = 0xff, "unknown kind", "kind 255");
    const size_t written0 = kinds0 + np0; /* written (8), split-K slices and bytes, twin name length (4 each) */
    FORGE(bundle_put64(buf + written0, 1ull << np0), "written parameter past", "written past nparams");
    FORGE(bundle_put32(buf + written0 + 8, 1), "split-K", "split_k 1");
    FORGE(bundle_put32(buf + written0 + 8, 65), "split-K", "split_k 65");
    FORGE(bundle_put32(buf + written0 + 12, 4), "split-K", "partial bytes without split-K");
    FORGE(bundle_put32(buf + written0 + 16, TILEC_BUNDLE_MAX_NAME + 1), "twin name of", "twin name too long");
    FORGE(bundle_put32(buf + written0 + 16, 3), NULL, "a twin where there is none");
    const size_t size0 = written0 + 20;
    FORGE(bundle_put64(buf + size0, 0), "empty image", "0-byte image");
    FORGE(bundle_put64(buf + size0, UINT64_MAX), "runs past", "image size 2^64-1");
    FORGE(bundle_put64(buf + size0, 1ull << 40), "runs past", "image size 2^40");
    FORGE(bundle_put64(buf + size0, b->kernels[0].size + 1), NULL, "image one byte longer");
    /* a second kernel named like the first */
    const size_t k1 = size0 + 8 + b->kernels[0].size;
    FORGE(memcpy(buf + k1 + 4, buf + K0 + 4, name0), "appears twice", "duplicate names");
    /* kernel 2's twin: name, threads, smem, nmaps, persistent, kbound, kfrom, kper, one_tma, then maps of 20
     * words */
    const tilec_bundle_kernel *kb1 = &b->kernels[1], *kb2 = &b->kernels[2];
    const size_t k2 = k1 + 4 + strlen(kb1->name) + 12 + kb1->nparams + 20 + 8 + kb1->size;
    const size_t twin2 = k2 + 4 + strlen(kb2->name) + 12 + kb2->nparams + 20, tn2 = strlen(kb2->twin.name);
    cr_assert_eq(kb2->twin.nmaps, 3);
    FORGE(buf[twin2] = '-', "twin's name is not a C identifier", "a dash in the twin's name");
    FORGE(bundle_put32(buf + twin2 + tn2, 0), "twin with a block size", "a twin of 0 threads");
    FORGE(bundle_put32(buf + twin2 + tn2 + 8, 4), "tensor maps", "4 maps");
    /* 4: pairs along z; 5: a gather twin with its one-tile twin */
    FORGE(bundle_put32(buf + twin2 + tn2 + 12, 6), "persistence", "persistent 6");
    cr_assert(kb2->twin.kper, "kernel 2's twin knows its loop's trips");
    FORGE(bundle_put32(buf + twin2 + tn2 + 16, kb2->nparams), "K loop bound names a parameter past",
          "the loop's bound past the parameters");
    /* one_tma: 0, or 1 on a paired twin (persistence 2 or 4); kernel 2's twin walks one tile a unit */
    cr_assert_eq(kb2->twin.persistent, 1);
    FORGE(bundle_put32(buf + twin2 + tn2 + 28, 1), "one-tile flag", "one_tma on a twin that is not paired");
    FORGE((bundle_put32(buf + twin2 + tn2 + 12, 2), bundle_put32(buf + twin2 + tn2 + 28, 2)), "one-tile flag",
          "one_tma 2 on a paired twin");
    for (uint32_t pers = 2; pers <= 4; pers += 2) { /* pairs along y, along z: the flag reads back */
        memcpy(buf, good, len);
        bundle_put32(buf + twin2 + tn2 + 12, pers);
        bundle_put32(buf + twin2 + tn2 + 28, 1);
        bundle_reseal(buf, len);
        tilec_bundle *p = NULL;
        cr_expect_eq(tilec_bundle_parse(buf, len, KEY, &p, NULL, 0), TILEC_RT_OK, "one_tma 1, persistence %u", pers);
        cr_expect(p && p->kernels[2].twin.one_tma == 1 && p->kernels[2].twin.persistent == pers);
        tilec_bundle_free(p);
    }
    { /* trips not known (kper 0): the bound is not read */
        memcpy(buf, good, len);
        bundle_put32(buf + twin2 + tn2 + 16, UINT32_MAX);
        bundle_put32(buf + twin2 + tn2 + 24, 0);
        bundle_reseal(buf, len);
        tilec_bundle *p = NULL;
        cr_expect_eq(tilec_bundle_parse(buf, len, KEY, &p, NULL, 0), TILEC_RT_OK, "kper 0, kbound 2^32-1");
        cr_expect(p && p->kernels[2].twin.kper == 0);
        tilec_bundle_free(p);
    }
    FORGE(bundle_put32(buf + twin2 + tn2 + 32, kb2->nparams), "past the parameter count", "map 0's pointer");
    /* rows, cols and stride may be constants (TILEC_TMA_CONST | c, c >= 1: the attention twin's head size); a
     * pointer may not, nor a constant 0 */
    FORGE(bundle_put32(buf + twin2 + tn2 + 32, TILEC_TMA_CONST | 64), "past the parameter count",
          "map 0's pointer a constant");
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 2, TILEC_TMA_CONST), "past the parameter count",
          "map 0's columns the constant 0");
    {
        memcpy(buf, good, len);
        bundle_put32(buf + twin2 + tn2 + 32 + 4 * 1, TILEC_TMA_CONST | 300);
        bundle_put32(buf + twin2 + tn2 + 32 + 4 * 2, TILEC_TMA_CONST | 64);
        bundle_put32(buf + twin2 + tn2 + 32 + 4 * 3, TILEC_TMA_CONST | 64);
        bundle_reseal(buf, len);
        tilec_bundle *p = NULL;
        cr_expect_eq(tilec_bundle_parse(buf, len, KEY, &p, NULL, 0), TILEC_RT_OK, "map 0's extents and stride constants");
        cr_expect(p && p->kernels[2].twin.maps[0].rows == (TILEC_TMA_CONST | 300) &&
                      p->kernels[2].twin.maps[0].cols == (TILEC_TMA_CONST | 64) &&
                      p->kernels[2].twin.maps[0].stride == (TILEC_TMA_CONST | 64),
                  "the constants read back");
        tilec_bundle_free(p);
    }
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 + 4 * 9, kb2->nparams + 1), "past the parameter count",
          "map 1's batch stride");
    /* map 1 is an im2col map (words 13 to 19): of kind 0, 1 or 2, never batched, its image count named; its
     * extents, filter, padding and stride parameters below the count (or constants, or TILEC_TMA_NONE for the
     * filter, padding and stride); a tiled map's im2col words 0 */
    cr_assert(kb2->twin.maps[1].im2col && !kb2->twin.maps[0].im2col);
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 + 4 * 13, 3), "im2col", "map 1 of im2col kind 3");
    /* kind 2 (the output's extents in fr and fs): both named (map 1's fs is TILEC_TMA_NONE) */
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 + 4 * 13, TILEC_TMA_IM2COL_OUT), "output's extents",
          "map 1 of im2col kind 2 without its width");
    {
        memcpy(buf, good, len);
        bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 + 4 * 13, TILEC_TMA_IM2COL_OUT);
        bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 + 4 * 17, 2);
        bundle_reseal(buf, len);
        tilec_bundle *p = NULL;
        cr_expect_eq(tilec_bundle_parse(buf, len, KEY, &p, NULL, 0), TILEC_RT_OK, "map 1 of kind 2");
        cr_expect(p && p->kernels[2].twin.maps[1].im2col == TILEC_TMA_IM2COL_OUT && p->kernels[2].twin.maps[1].fs == 2,
                  "kind 2 reads back");
        tilec_bundle_free(p);
    }
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 + 4 * 1, TILEC_TMA_NONE), "im2col",
          "map 1's image count TILEC_TMA_NONE");
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 + 4 * 14, TILEC_TMA_NONE), "past the parameter count",
          "map 1's height TILEC_TMA_NONE");
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 + 4 * 18, kb2->nparams), "past the parameter count",
          "map 1's padding past the parameters");
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 + 4 * 19, TILEC_TMA_CONST), "past the parameter count",
          "map 1's stride the constant 0");
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 17, TILEC_TMA_NONE), "im2col words", "map 0 (tiled) with a filter");
    {
        memcpy(buf, good, len);
        bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 + 4 * 18, TILEC_TMA_CONST | 2);
        bundle_reseal(buf, len);
        tilec_bundle *p = NULL;
        cr_expect_eq(tilec_bundle_parse(buf, len, KEY, &p, NULL, 0), TILEC_RT_OK, "map 1's padding a constant");
        cr_expect(p && p->kernels[2].twin.maps[1].pad == (TILEC_TMA_CONST | 2) &&
                      p->kernels[2].twin.maps[1].fr == (TILEC_TMA_CONST | 3) && p->kernels[2].twin.maps[1].fs == TILEC_TMA_NONE,
                  "the im2col words read back");
        tilec_bundle_free(p);
    }
    /* map 2 is batched: its grid axis 1 or 2, its constant at least 1 */
    cr_assert(kb2->twin.maps[2].batched);
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 * 2 + 4 * 11, 0), "batch", "map 2's batch on grid axis 0");
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 * 2 + 4 * 11, 3), "batch", "map 2's batch on grid axis 3");
    FORGE(bundle_put32(buf + twin2 + tn2 + 32 + 4 * 20 * 2 + 4 * 12, 0), "batch", "map 2's batch stride times 0");
    /* a 0-byte image is refused by parse as by serialize */
    FORGE((bundle_put64(buf + size0, 0),
           memmove(buf + size0 + 8, buf + size0 + 8 + b->kernels[0].size, len - size0 - 8 - b->kernels[0].size),
           n -= b->kernels[0].size),
          "empty image", "a well-formed 0-byte image");
    /* sizes in the header: total, then total > the cap */
    memcpy(buf, good, len);
    bundle_put64(buf + 16, len - 1);
    bundle_put64(buf + 56, tilec_bundle_checksum(buf, 56));
    expect_rejected(buf, len, KEY, "trailing", "total one short");
    bundle_put64(buf + 16, len + 1);
    bundle_put64(buf + 56, tilec_bundle_checksum(buf, 56));
    expect_rejected(buf, len, KEY, "truncated", "total one long");
    bundle_put64(buf + 16, 1ull << 62);
    bundle_put64(buf + 56, tilec_bundle_checksum(buf, 56));
    expect_rejected(buf, len, KEY, "total size", "total 2^62");
    bundle_put64(buf + 16, 10);
    bundle_put64(buf + 56, tilec_bundle_checksum(buf, 56));
    expect_rejected(buf, len, KEY, "total size", "total under the header");
#undef FORGE
    /* a bundle that is all right after resealing parses */
    memcpy(buf, good, len);
    bundle_reseal(buf, len);
    tilec_bundle *p = NULL;
    cr_assert_eq(tilec_bundle_parse(buf, len, KEY, &p, NULL, 0), TILEC_RT_OK);
    cr_assert(bundle_eq(b, p));
    tilec_bundle_free(p);
    free(buf);
    free(good);
    tilec_bundle_free(b);
}

Test(bundle, parse_arguments)
{
    tilec_bundle *p = (tilec_bundle *)1;
    char why[64];
    cr_expect_eq(tilec_bundle_parse("x", 1, KEY, NULL, why, sizeof why), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_bundle_parse(NULL, 5, KEY, &p, why, sizeof why), TILEC_RT_INVALID_ARG);
    cr_expect_null(p);
    /* a tiny why buffer truncates the message, never overruns */
    char tiny[4] = "abc";
    cr_expect_eq(tilec_bundle_parse("x", 1, KEY, &p, tiny, 1), TILEC_RT_MODULE_ERROR);
    cr_expect_eq(tiny[0], 0);
    cr_expect_eq(tiny[1], 'b');
}

/* Random bytes and random mutations never crash and never half-succeed. */
Test(bundle, random_mutations, .timeout = 60)
{
    tilec_bundle *b = make_bundle(3, 6);
    uint8_t *good;
    size_t len;
    serialize_ok(b, KEY, &good, &len);
    uint8_t *buf = malloc(len);
    unsigned long long s = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 20000; round++) {
        memcpy(buf, good, len);
        int edits = 1 + (int)((s >> 60) & 3);
        for (int e = 0; e < edits; e++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            buf[(s >> 33) % len] = (uint8_t)(s >> 20);
        }
        if (round % 2)
            bundle_reseal(buf, len); /* get past the checksums to the structure checks */
        tilec_bundle *p = NULL;
        tilec_rt_status st = tilec_bundle_parse(buf, len, NULL, &p, NULL, 0);
        cr_assert(st == TILEC_RT_OK || st == TILEC_RT_MODULE_ERROR, "status %d", st);
        cr_assert((st == TILEC_RT_OK) == (p != NULL));
        if (p) { /* what parses must serialize back to the same bytes */
            uint8_t *again;
            size_t n;
            char key[129];
            uint32_t kl = buf[32] | (uint32_t)buf[33] << 8;
            memcpy(key, buf + 64, kl);
            key[kl] = 0;
            serialize_ok(p, key, &again, &n);
            cr_assert(n == len && !memcmp(again, buf, len), "round %d", round);
            free(again);
            tilec_bundle_free(p);
        }
    }
    free(buf);
    free(good);
    tilec_bundle_free(b);
}

/* ---- the cache ---- */

static tilec_cache *open_ok(const char *dir)
{
    tilec_cache *c = NULL;
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_assert_not_null(c);
    return c;
}

static tilec_cache_stats stats_of(const tilec_cache *c)
{
    tilec_cache_stats s;
    tilec_cache_get_stats(c, &s);
    return s;
}

static void expect_hit(tilec_cache *c, const char *key, const tilec_bundle *want)
{
    tilec_bundle *got = NULL;
    cr_assert_eq(tilec_cache_get(c, key, &got), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_assert(bundle_eq(got, want));
    tilec_bundle_free(got);
}

static void expect_miss(tilec_cache *c, const char *key)
{
    tilec_bundle *got = (tilec_bundle *)1;
    cr_assert_eq(tilec_cache_get(c, key, &got), TILEC_RT_NOT_FOUND);
    cr_assert_null(got);
}

Test(cache, put_then_get_in_memory_and_from_disk)
{
    tilec_cache *c = open_ok(tdir);
    cr_expect_str_eq(tilec_cache_dir(c), tdir);
    cr_expect_str_eq(tilec_cache_last_error(c), "");
    tilec_bundle *b = make_bundle(3, 7);
    expect_miss(c, KEY);
    cr_assert_eq(tilec_cache_put(c, KEY, b), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    expect_hit(c, KEY, b);
    /* the caller's copy is its own */
    tilec_bundle *got = NULL;
    cr_assert_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_OK);
    ((uint8_t *)got->kernels[0].image)[0] ^= 0xff;
    tilec_bundle_free(got);
    expect_hit(c, KEY, b);
    tilec_cache_stats s = stats_of(c);
    cr_expect_eq(s.mem_hits, 3);
    cr_expect_eq(s.disk_hits, 0);
    cr_expect_eq(s.misses, 1);
    cr_expect_eq(s.writes, 1);
    cr_expect_eq(s.corrupt + s.write_failures, 0);
    tilec_cache_close(c);

    /* one file, 0600, named by the key; nothing else */
    char names[256];
    cr_expect_eq(dir_entries(tdir, names, sizeof names), 1, "%s", names);
    char file[160];
    snprintf(file, sizeof file, "%s.tilecbundle", KEY);
    struct stat st;
    cr_assert_eq(stat(path_in(file), &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600);

    /* a fresh cache: a disk hit, kept in memory afterwards */
    c = open_ok(tdir);
    expect_hit(c, KEY, b);
    unlink(path_in(file));
    expect_hit(c, KEY, b);
    s = stats_of(c);
    cr_expect_eq(s.disk_hits, 1);
    cr_expect_eq(s.mem_hits, 1);
    cr_expect_eq(s.misses, 0);
    /* put replaces */
    tilec_bundle *b2 = make_bundle(2, 8);
    cr_assert_eq(tilec_cache_put(c, KEY, b2), TILEC_RT_OK);
    expect_hit(c, KEY, b2);
    tilec_cache_close(c);
    c = open_ok(tdir);
    expect_hit(c, KEY, b2);
    expect_miss(c, KEY2);
    tilec_cache_close(c);
    tilec_bundle_free(b);
    tilec_bundle_free(b2);
}

Test(cache, bad_arguments)
{
    tilec_cache *c = (tilec_cache *)1;
    cr_expect_eq(tilec_cache_open(tdir, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_cache_open("", &c), TILEC_RT_INVALID_ARG);
    cr_expect_null(c);
    c = open_ok(tdir);
    tilec_bundle *b = make_bundle(1, 0), *got = (tilec_bundle *)1;
    static const char *const keys[] = {"", "../x", "a/b", ".hidden", "a.tilecbundle", NULL};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        cr_expect_eq(tilec_cache_put(c, keys[i], b), TILEC_RT_INVALID_ARG, "key %zu", i);
        cr_expect_eq(tilec_cache_get(c, keys[i], &got), TILEC_RT_INVALID_ARG, "key %zu", i);
        cr_expect_null(got);
    }
    cr_expect_eq(tilec_cache_put(NULL, KEY, b), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_cache_put(c, KEY, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_cache_get(NULL, KEY, &got), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_cache_get(c, KEY, NULL), TILEC_RT_INVALID_ARG);
    /* a malformed bundle is stored nowhere */
    b->kernels[0].size = 0;
    cr_expect_eq(tilec_cache_put(c, KEY, b), TILEC_RT_INVALID_ARG);
    cr_expect(strstr(tilec_cache_last_error(c), "malformed"), "%s", tilec_cache_last_error(c));
    b->kernels[0].size = 1;
    expect_miss(c, KEY);
    cr_expect_eq(dir_entries(tdir, NULL, 0), 0);
    tilec_cache_stats s;
    tilec_cache_get_stats(NULL, &s);
    cr_expect_eq(s.misses, 0);
    tilec_cache_get_stats(c, NULL);
    cr_expect_null(tilec_cache_dir(NULL));
    cr_expect_str_eq(tilec_cache_last_error(NULL), "no cache (NULL)");
    tilec_cache_close(c);
    tilec_cache_close(NULL);
    tilec_bundle_free(b);
}

/* Write a good bundle under KEY, then spoil the file with `spoil`. */
typedef void (*spoiler)(const char *path, const uint8_t *good, size_t len);

static void spoil_truncate(const char *path, const uint8_t *good, size_t len) { spit(path, good, len / 2); }
static void spoil_empty(const char *path, const uint8_t *good, size_t len)
{
    (void)len;
    spit(path, good, 0);
}
static void spoil_flip(const char *path, const uint8_t *good, size_t len)
{
    uint8_t *b = malloc(len);
    memcpy(b, good, len);
    b[len - 3] ^= 0x10;
    spit(path, b, len);
    free(b);
}
static void spoil_header(const char *path, const uint8_t *good, size_t len)
{
    uint8_t *b = malloc(len);
    memcpy(b, good, len);
    b[20] ^= 0x01;
    spit(path, b, len);
    free(b);
}
static void spoil_trailing(const char *path, const uint8_t *good, size_t len)
{
    uint8_t *b = malloc(len + 1);
    memcpy(b, good, len);
    b[len] = 0;
    spit(path, b, len + 1);
    free(b);
}
static void spoil_version(const char *path, const uint8_t *good, size_t len)
{
    uint8_t *b = malloc(len);
    memcpy(b, good, len);
    bundle_put32(b + 8, TILEC_BUNDLE_VERSION + 1);
    bundle_reseal(b, len);
    spit(path, b, len);
    free(b);
}
static void spoil_other_key(const char *path, const uint8_t *good, size_t len)
{
    (void)good;
    (void)len;
    tilec_bundle *o = make_bundle(1, 9);
    void *buf;
    size_t n;
    cr_assert_eq(tilec_bundle_serialize(o, KEY2, &buf, &n), TILEC_RT_OK);
    spit(path, buf, n);
    free(buf);
    tilec_bundle_free(o);
}
static void spoil_text(const char *path, const uint8_t *good, size_t len)
{
    (void)good;
    (void)len;
    static const char text[] = "not a bundle at all, but long enough to have a header's worth of bytes in it\n";
    spit(path, text, sizeof text - 1);
}
static void spoil_symlink(const char *path, const uint8_t *good, size_t len)
{
    char target[1100];
    snprintf(target, sizeof target, "%s.elsewhere", path);
    spit(target, good, len);
    unlink(path);
    cr_assert_eq(symlink(target, path), 0);
}
static void spoil_fifo(const char *path, const uint8_t *good, size_t len)
{
    (void)good;
    (void)len;
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
}

Test(cache, corrupt_files_are_misses_removed_and_replaced)
{
    static const struct {
        spoiler fn;
        const char *what, *why;
    } cases[] = {
        {spoil_truncate, "truncated", "truncated"},
        {spoil_empty, "empty", "truncated"},
        {spoil_flip, "a payload bit", "payload checksum"},
        {spoil_header, "a header bit", "header checksum"},
        {spoil_trailing, "a trailing byte", "trailing"},
        {spoil_version, "another version", "version"},
        {spoil_other_key, "another key's bundle", "stored under key"},
        {spoil_text, "text", "bad magic"},
        {spoil_symlink, "a symbolic link", "symbolic link"},
        {spoil_fifo, "a FIFO", "not a regular file"},
    };
    tilec_bundle *b = make_bundle(2, 10);
    uint8_t *good;
    size_t len;
    serialize_ok(b, KEY, &good, &len);
    char file[160];
    snprintf(file, sizeof file, "%s.tilecbundle", KEY);
    const char *path = path_in(file);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spit(path, good, len);
        cases[i].fn(path, good, len);
        tilec_cache *c = open_ok(tdir);
        expect_miss(c, KEY);
        tilec_cache_stats s = stats_of(c);
        cr_expect_eq(s.corrupt, 1, "%s", cases[i].what);
        cr_expect_eq(s.misses, 1, "%s", cases[i].what);
        cr_expect(strstr(tilec_cache_last_error(c), cases[i].why), "%s: %s", cases[i].what, tilec_cache_last_error(c));
        struct stat st;
        cr_expect_neq(lstat(path, &st), 0, "%s: the file was not removed", cases[i].what);
        expect_miss(c, KEY); /* gone: a plain miss now */
        cr_expect_eq(stats_of(c).corrupt, 1);
        cr_assert_eq(tilec_cache_put(c, KEY, b), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
        tilec_cache_close(c);
        c = open_ok(tdir);
        expect_hit(c, KEY, b);
        cr_expect_eq(stats_of(c).disk_hits, 1);
        tilec_cache_close(c);
        char target[1100];
        snprintf(target, sizeof target, "%s.elsewhere", path);
        unlink(target);
    }
    free(good);
    tilec_bundle_free(b);
}

/* Run fn with stderr going to a file; return what was written. */
static char *capture_stderr(void (*fn)(void))
{
    char log[1024];
    snprintf(log, sizeof log, "%s", path_in("stderr.txt"));
    fflush(stderr);
    int saved = dup(2);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    size_t n;
    char *text = slurp(log, &n);
    text[n] = 0;
    unlink(log);
    return text;
}

static void corrupt_get(void)
{
    mkdir(path_in("c"), 0700);
    char file[200];
    snprintf(file, sizeof file, "c/%s.tilecbundle", KEY);
    spit(path_in(file), "junk", 4);
    tilec_cache *c = open_ok(path_in("c"));
    expect_miss(c, KEY);
    tilec_cache_close(c);
}

Test(cache, logs_only_when_asked)
{
    char *quiet = capture_stderr(corrupt_get);
    cr_expect_str_eq(quiet, "");
    free(quiet);
    static const char *const specs[] = {"cache", "async_compile, cache", "all", "x,all"};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        setenv("TILEC_LOGS", specs[i], 1);
        char *log = capture_stderr(corrupt_get);
        cr_expect(strstr(log, "tilec cache: using "), "%s: %s", specs[i], log);
        cr_expect(strstr(log, "tilec cache: miss: rejected "), "%s: %s", specs[i], log);
        cr_expect(strstr(log, "truncated: 4 bytes"), "%s: %s", specs[i], log);
        free(log);
    }
    setenv("TILEC_LOGS", "async_compile,caches", 1);
    char *none = capture_stderr(corrupt_get);
    cr_expect_str_eq(none, "");
    free(none);
}

Test(cache, force_disable)
{
    setenv("TILEC_FORCE_DISABLE_CACHES", "1", 1);
    tilec_cache *c = open_ok(path_in("sub"));
    cr_expect_null(tilec_cache_dir(c));
    cr_expect(strstr(tilec_cache_last_error(c), "TILEC_FORCE_DISABLE_CACHES"));
    tilec_bundle *b = make_bundle(1, 11);
    cr_expect_eq(tilec_cache_put(c, KEY, b), TILEC_RT_OK);
    expect_miss(c, KEY);
    cr_expect_eq(stats_of(c).misses, 1);
    cr_expect_eq(stats_of(c).writes, 0);
    tilec_cache_close(c);
    cr_expect_eq(dir_entries(tdir, NULL, 0), 0, "the disabled cache touched the disk");
    /* a bundle already on disk is not read either */
    setenv("TILEC_FORCE_DISABLE_CACHES", "0", 1);
    c = open_ok(tdir);
    cr_assert_eq(tilec_cache_put(c, KEY, b), TILEC_RT_OK);
    tilec_cache_close(c);
    setenv("TILEC_FORCE_DISABLE_CACHES", "1", 1);
    c = open_ok(tdir);
    expect_miss(c, KEY);
    tilec_cache_close(c);
    tilec_bundle_free(b);
}

static void expect_dir_0700(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s missing", path);
    cr_expect(S_ISDIR(st.st_mode));
    cr_expect_eq(st.st_mode & 0777, 0700, "%s has mode %o", path, st.st_mode & 0777);
}

Test(cache, default_directories)
{
    char want[1024];
    umask(022);
    /* TILEC_CACHE_DIR, nested, created 0700 at every level */
    setenv("TILEC_CACHE_DIR", path_in("env/a/b"), 1);
    setenv("XDG_CACHE_HOME", path_in("xdg"), 1);
    setenv("HOME", path_in("home"), 1);
    tilec_cache *c = open_ok(NULL);
    cr_expect_str_eq(tilec_cache_dir(c), path_in("env/a/b"));
    tilec_cache_close(c);
    expect_dir_0700(path_in("env"));
    expect_dir_0700(path_in("env/a"));
    expect_dir_0700(path_in("env/a/b"));
    /* an explicit directory wins over the environment */
    c = open_ok(path_in("explicit/"));
    cr_expect_str_eq(tilec_cache_dir(c), path_in("explicit"));
    tilec_cache_close(c);
    /* empty means unset: $XDG_CACHE_HOME/tilec */
    setenv("TILEC_CACHE_DIR", "", 1);
    c = open_ok(NULL);
    snprintf(want, sizeof want, "%s/tilec", path_in("xdg"));
    cr_expect_str_eq(tilec_cache_dir(c), want);
    tilec_cache_close(c);
    expect_dir_0700(path_in("xdg"));
    expect_dir_0700(want);
    /* a relative XDG_CACHE_HOME is ignored: $HOME/.cache/tilec */
    unsetenv("TILEC_CACHE_DIR");
    setenv("XDG_CACHE_HOME", "relative/xdg", 1);
    c = open_ok(NULL);
    snprintf(want, sizeof want, "%s/.cache/tilec", path_in("home"));
    cr_expect_str_eq(tilec_cache_dir(c), want);
    tilec_cache_close(c);
    expect_dir_0700(path_in("home/.cache"));
    expect_dir_0700(want);
    /* an existing directory keeps its mode */
    mkdir(path_in("mine"), 0750);
    chmod(path_in("mine"), 0750);
    c = open_ok(path_in("mine"));
    cr_expect_str_eq(tilec_cache_dir(c), path_in("mine"));
    tilec_cache_close(c);
    struct stat st;
    stat(path_in("mine"), &st);
    cr_expect_eq(st.st_mode & 0777, 0750);
    /* nothing set at all: memory only, and why */
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    c = open_ok(NULL);
    cr_expect_null(tilec_cache_dir(c));
    cr_expect(strstr(tilec_cache_last_error(c), "HOME"), "%s", tilec_cache_last_error(c));
    tilec_cache_close(c);
    /* a relative directory is made absolute */
    char cwd[1024];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    cr_assert_eq(chdir(tdir), 0);
    c = open_ok("rel/dir");
    cr_expect_str_eq(tilec_cache_dir(c), path_in("rel/dir"));
    tilec_cache_close(c);
    cr_assert_eq(chdir(cwd), 0);
    /* a symbolic link to a directory is followed */
    mkdir(path_in("real"), 0700);
    cr_assert_eq(symlink(path_in("real"), path_in("link")), 0);
    c = open_ok(path_in("link"));
    tilec_bundle *b = make_bundle(1, 12);
    cr_assert_eq(tilec_cache_put(c, KEY, b), TILEC_RT_OK);
    tilec_cache_close(c);
    cr_expect_eq(dir_entries(path_in("real"), NULL, 0), 1);
    tilec_bundle_free(b);
}

/* A directory that cannot be used: memory only, said why, never an error. */
Test(cache, unusable_directory_means_memory_only)
{
    spit(path_in("file"), "x", 1);
    static const char *const dirs[] = {"file", "file/sub", "everyone", "group"};
    static const char *const why[] = {"Not a directory", "Not a directory", "writable by every user",
                                      "writable by its group"};
    mkdir(path_in("everyone"), 0777);
    chmod(path_in("everyone"), 0777);
    mkdir(path_in("group"), 0770);
    chmod(path_in("group"), 0770);
    tilec_bundle *b = make_bundle(2, 13);
    for (size_t i = 0; i < 4; i++) {
        tilec_cache *c = open_ok(path_in(dirs[i]));
        cr_expect_null(tilec_cache_dir(c), "%s", dirs[i]);
        const char *e = tilec_cache_last_error(c);
        cr_expect(strstr(e, why[i]) && strstr(e, "caching in memory only"), "%s: %s", dirs[i], e);
        cr_expect_eq(tilec_cache_put(c, KEY, b), TILEC_RT_OK);
        expect_hit(c, KEY, b);
        expect_miss(c, KEY2);
        cr_expect_eq(stats_of(c).writes, 0);
        tilec_cache_close(c);
    }
    cr_expect_eq(dir_entries(path_in("everyone"), NULL, 0), 0);
    cr_expect_eq(dir_entries(path_in("group"), NULL, 0), 0);
    char name[201];
    memset(name, 'd', sizeof name - 1);
    name[sizeof name - 1] = 0;
    char longdir[4400];
    int n = snprintf(longdir, sizeof longdir, "%s", tdir);
    while (n < 4000)
        n += snprintf(longdir + n, sizeof longdir - (size_t)n, "/%s", name);
    tilec_cache *c = open_ok(longdir);
    cr_expect_null(tilec_cache_dir(c));
    cr_expect(strstr(tilec_cache_last_error(c), "too long"), "%s", tilec_cache_last_error(c));
    tilec_cache_close(c);
    tilec_bundle_free(b);
}

/* No temporary file may be left: only final bundles (and `extra`). */
static void expect_only_bundles(const char *dir, int bundles)
{
    char names[2048];
    int n = dir_entries(dir, names, sizeof names);
    cr_expect_eq(n, bundles, "entries: %s", names);
    cr_expect_null(strstr(names, ".tmp."), "a temporary file was left: %s", names);
}

/* As a user root is not: drop to nobody in a forked child. Exit codes:
 * 0 passed, 77 cannot test here, others name the failed check. */
static int read_only_child(void)
{
    if (geteuid() == 0) {
        if (chown(tdir, 65534, 65534) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
            return 77;
    }
    tilec_cache *c = NULL;
    if (tilec_cache_open(tdir, &c) != TILEC_RT_OK || !tilec_cache_dir(c))
        return 2;
    tilec_bundle *b = make_bundle(2, 14), *got = NULL;
    if (tilec_cache_put(c, KEY, b) != TILEC_RT_OK)
        return 3;
    if (chmod(tdir, 0500) != 0)
        return 4;
    /* does chmod stop writes here? */
    char probe[1024];
    snprintf(probe, sizeof probe, "%s/probe", tdir);
    int fd = open(probe, O_WRONLY | O_CREAT, 0600);
    if (fd >= 0) {
        close(fd);
        unlink(probe);
        return 77;
    }
    tilec_bundle *b2 = make_bundle(3, 15);
    if (tilec_cache_put(c, KEY2, b2) != TILEC_CACHE_IO_ERROR)
        return 5;
    if (!strstr(tilec_cache_last_error(c), "Permission denied"))
        return 6;
    tilec_cache_stats s;
    tilec_cache_get_stats(c, &s);
    if (s.write_failures != 1 || s.writes != 1)
        return 7;
    if (tilec_cache_get(c, KEY2, &got) != TILEC_RT_OK || !bundle_eq(got, b2)) /* memory still has it */
        return 8;
    tilec_bundle_free(got);
    tilec_cache_close(c);
    /* a fresh cache on a read-only directory: memory only, the old file read */
    if (tilec_cache_open(tdir, &c) != TILEC_RT_OK || tilec_cache_dir(c) ||
        !strstr(tilec_cache_last_error(c), "not writable"))
        return 9;
    tilec_cache_close(c);
    if (dir_entries(tdir, NULL, 0) != 1)
        return 10;
    tilec_bundle_free(b);
    tilec_bundle_free(b2);
    return 0;
}

Test(cache, read_only_directory)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0)
        _exit(read_only_child());
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status), "the child died");
    if (WEXITSTATUS(status) == 77)
        cr_skip_test("chmod 0500 does not stop writes here (root without a user to drop to)");
    cr_expect_eq(WEXITSTATUS(status), 0, "read-only check %d failed", WEXITSTATUS(status));
    chmod(tdir, 0700);
}

typedef struct fault_plan {
    tilec_cache_step at;
    int err;
    int calls[TILEC_CACHE_STEP_COUNT];
} fault_plan;

static int fault_at(void *user, tilec_cache_step step, const char *path)
{
    fault_plan *p = user;
    p->calls[step]++;
    cr_assert_not_null(path);
    return step == p->at ? p->err : 0;
}

/* A failing write at any step leaves the old file whole, no temporary file,
 * and the new bundle in memory. */
Test(cache, failed_writes_leave_nothing_partial)
{
    tilec_bundle *old = make_bundle(2, 16), *fresh = make_bundle(4, 17);
    for (int at = 0; at < TILEC_CACHE_STEP_COUNT; at++) {
        tilec_cache *c = open_ok(tdir);
        cr_assert_eq(tilec_cache_put(c, KEY, old), TILEC_RT_OK);
        fault_plan plan = {.at = (tilec_cache_step)at, .err = at % 2 ? ENOSPC : EIO};
        tilec_cache_set_fault_hook(c, fault_at, &plan);
        tilec_rt_status st = tilec_cache_put(c, KEY, fresh);
        tilec_cache_set_fault_hook(c, NULL, NULL);
        for (int s = 0; s <= at; s++)
            cr_expect_eq(plan.calls[s], 1, "step %d reached %d times", s, plan.calls[s]);
        expect_hit(c, KEY, fresh);
        if (at == TILEC_CACHE_STEP_BEFORE_DIR_FSYNC) { /* already published */
            cr_expect_eq(st, TILEC_RT_OK);
            tilec_cache_close(c);
            c = open_ok(tdir);
            expect_hit(c, KEY, fresh);
            tilec_cache_close(c);
            continue;
        }
        cr_expect_eq(st, TILEC_CACHE_IO_ERROR, "step %d", at);
        const char *e = tilec_cache_last_error(c);
        cr_expect(strstr(e, at % 2 ? "No space left on device" : "Input/output error"), "step %d: %s", at, e);
        cr_expect(strstr(e, KEY), "step %d: %s", at, e);
        cr_expect_eq(stats_of(c).write_failures, 1);
        tilec_cache_close(c);
        expect_only_bundles(tdir, 1);
        c = open_ok(tdir);
        expect_hit(c, KEY, old);
        tilec_cache_close(c);
    }
    tilec_bundle_free(old);
    tilec_bundle_free(fresh);
}

static int die_at(void *user, tilec_cache_step step, const char *path)
{
    (void)path;
    if (step == *(tilec_cache_step *)user)
        _exit(42);
    return 0;
}

/* A writer killed at any step: readers see the old bundle or the new one,
 * whole (the killed writer's temporary file stays, and is never read). */
Test(cache, killed_writers)
{
    tilec_bundle *old = make_bundle(2, 18), *fresh = make_bundle(3, 19);
    tilec_cache *c = open_ok(tdir);
    cr_assert_eq(tilec_cache_put(c, KEY, old), TILEC_RT_OK);
    tilec_cache_close(c);
    for (int at = 0; at < TILEC_CACHE_STEP_COUNT; at++) {
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            tilec_cache *w = NULL;
            tilec_cache_step step = (tilec_cache_step)at;
            if (tilec_cache_open(tdir, &w) != TILEC_RT_OK)
                _exit(1);
            tilec_cache_set_fault_hook(w, die_at, &step);
            tilec_cache_put(w, KEY, fresh);
            _exit(2);
        }
        int status;
        waitpid(pid, &status, 0);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 42, "step %d", at);
        c = open_ok(tdir);
        expect_hit(c, KEY, at >= TILEC_CACHE_STEP_BEFORE_DIR_FSYNC ? fresh : old);
        cr_expect_eq(stats_of(c).corrupt, 0);
        tilec_cache_close(c);
    }
    /* the four killed before the rename each left a temporary file */
    char names[2048];
    cr_expect_eq(dir_entries(tdir, names, sizeof names), 5, "%s", names);
    tilec_bundle_free(old);
    tilec_bundle_free(fresh);
}

/* A full disk, as a file-size limit (which binds root too). */
Test(cache, file_size_limit)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(1);
        tilec_cache *c = NULL;
        if (tilec_cache_open(tdir, &c) != TILEC_RT_OK || !tilec_cache_dir(c))
            _exit(2);
        tilec_bundle *small = make_bundle(1, 1), *big = make_bundle(40, 20), *got = NULL;
        if (tilec_cache_put(c, KEY2, small) != TILEC_RT_OK)
            _exit(3);
        if (tilec_cache_put(c, KEY, big) != TILEC_CACHE_IO_ERROR)
            _exit(4);
        if (!strstr(tilec_cache_last_error(c), "File too large"))
            _exit(5);
        if (tilec_cache_get(c, KEY, &got) != TILEC_RT_OK || !bundle_eq(got, big))
            _exit(6);
        tilec_bundle_free(got);
        tilec_cache_close(c);
        tilec_bundle_free(small);
        tilec_bundle_free(big);
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status), "the child died");
    cr_expect_eq(WEXITSTATUS(status), 0, "check %d failed", WEXITSTATUS(status));
    expect_only_bundles(tdir, 1);
}

/* ---- many processes, one key ---- */

enum { WRITERS = 8, READERS = 4, ROUNDS = 50 };

/* Writer w's bundle: distinct sizes and bytes, so a mix of two is visible. */
static tilec_bundle *writer_bundle(int w) { return make_bundle(1 + (uint32_t)w % 4, 100 + (unsigned)w * 3); }

/* Which writer's bundle got is, or -1. */
static int whose(const tilec_bundle *got)
{
    for (int w = 0; w < WRITERS; w++) {
        tilec_bundle *b = writer_bundle(w);
        int same = bundle_eq(got, b);
        tilec_bundle_free(b);
        if (same)
            return w;
    }
    return -1;
}

static int reader_child(const char *done)
{
    int hits = 0;
    for (int i = 0;; i++) {
        int last = access(done, F_OK) == 0;
        tilec_cache *c = NULL;
        if (tilec_cache_open(tdir, &c) != TILEC_RT_OK || !tilec_cache_dir(c))
            return 2;
        tilec_bundle *got = NULL;
        tilec_rt_status st = tilec_cache_get(c, KEY, &got);
        tilec_cache_stats s;
        tilec_cache_get_stats(c, &s);
        tilec_cache_close(c);
        if (s.corrupt)
            return 3; /* a torn or partial file was read */
        if (st == TILEC_RT_OK) {
            int w = whose(got);
            tilec_bundle_free(got);
            if (w < 0)
                return 4;
            hits++;
        } else if (st != TILEC_RT_NOT_FOUND) {
            return 5;
        }
        if (last)
            return hits && st == TILEC_RT_OK ? 0 : 6;
    }
}

static int writer_child(int w)
{
    tilec_cache *c = NULL;
    if (tilec_cache_open(tdir, &c) != TILEC_RT_OK || !tilec_cache_dir(c))
        return 2;
    tilec_bundle *b = writer_bundle(w);
    for (int r = 0; r < ROUNDS; r++)
        if (tilec_cache_put(c, KEY, b) != TILEC_RT_OK)
            return 3;
    tilec_cache_stats s;
    tilec_cache_get_stats(c, &s);
    tilec_cache_close(c);
    tilec_bundle_free(b);
    return s.writes == ROUNDS && s.write_failures == 0 ? 0 : 4;
}

Test(cache, concurrent_writers_and_readers, .timeout = 240)
{
    char done[1024];
    snprintf(done, sizeof done, "%s.done", tdir);
    unlink(done);
    pid_t readers[READERS], writers[WRITERS];
    for (int i = 0; i < READERS; i++)
        if ((readers[i] = fork()) == 0)
            _exit(reader_child(done));
    for (int w = 0; w < WRITERS; w++)
        if ((writers[w] = fork()) == 0)
            _exit(writer_child(w));
    for (int w = 0; w < WRITERS; w++) {
        int status;
        cr_assert_gt(writers[w], 0);
        waitpid(writers[w], &status, 0);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d: status %d", w, status);
    }
    spit(done, "", 0);
    for (int i = 0; i < READERS; i++) {
        int status;
        cr_assert_gt(readers[i], 0);
        waitpid(readers[i], &status, 0);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "reader %d: status %d", i, status);
    }
    unlink(done);
    /* the final file parses and is one writer's whole bundle; no temporary file */
    expect_only_bundles(tdir, 1);
    char file[160];
    snprintf(file, sizeof file, "%s.tilecbundle", KEY);
    size_t len;
    void *data = slurp(path_in(file), &len);
    cr_assert_not_null(data);
    tilec_bundle *b = NULL;
    char why[256];
    cr_assert_eq(tilec_bundle_parse(data, len, KEY, &b, why, sizeof why), TILEC_RT_OK, "%s", why);
    cr_expect_geq(whose(b), 0);
    tilec_bundle_free(b);
    free(data);
}

/* ---- many threads, one cache ---- */

typedef struct thread_job {
    tilec_cache *c;
    int id, failures;
} thread_job;

static void *cache_thread(void *arg)
{
    thread_job *j = arg;
    char key[16];
    for (int i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "key%d", (i + j->id) % 5);
        tilec_bundle *b = make_bundle(1 + (uint32_t)(i % 3), (unsigned)((i + j->id) % 5)), *got = NULL;
        if (i % 3 == 0) {
            if (tilec_cache_put(j->c, key, b) != TILEC_RT_OK)
                j->failures++;
        } else {
            tilec_rt_status st = tilec_cache_get(j->c, key, &got);
            if (st != TILEC_RT_OK && st != TILEC_RT_NOT_FOUND)
                j->failures++;
            tilec_bundle_free(got);
        }
        tilec_bundle_free(b);
    }
    return NULL;
}

Test(cache, threads_share_one_cache, .timeout = 120)
{
    tilec_cache *c = open_ok(tdir);
    pthread_t t[8];
    thread_job jobs[8];
    for (int i = 0; i < 8; i++) {
        jobs[i] = (thread_job){c, i, 0};
        cr_assert_eq(pthread_create(&t[i], NULL, cache_thread, &jobs[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        cr_expect_eq(jobs[i].failures, 0, "thread %d", i);
    }
    tilec_cache_stats s = stats_of(c);
    cr_expect_eq(s.corrupt + s.write_failures, 0);
    cr_expect_eq(s.mem_hits + s.disk_hits + s.misses, 8 * 200 - 8 * 67);
    tilec_cache_close(c);
    expect_only_bundles(tdir, 5);
}

/* Many processes creating one new directory tree at once all get it. */
/* Temporary files that killed writers left are removed at open once they
 * are an hour old, at most once an hour per directory; fresh ones (a live
 * writer's) and other files stay. */
Test(cache, stale_temporary_files_are_swept)
{
    char stale[1100], fresh[1100], other[1100], marker[1100];
    snprintf(stale, sizeof stale, "%s/.%s.tilecbundle.tmp.AbC123", tdir, KEY);
    snprintf(fresh, sizeof fresh, "%s/.%s.tilecbundle.tmp.XyZ789", tdir, KEY2);
    snprintf(other, sizeof other, "%s/.notes.tmp.AbC123", tdir);
    snprintf(marker, sizeof marker, "%s/.tilec-sweep", tdir);
    const char *files[] = {stale, fresh, other};
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(files[i], "w");
        cr_assert(f);
        fclose(f);
    }
    struct timespec old[2] = {{.tv_sec = time(NULL) - 7200}, {.tv_sec = time(NULL) - 7200}};
    cr_assert_eq(utimensat(AT_FDCWD, stale, old, 0), 0);
    cr_assert_eq(utimensat(AT_FDCWD, other, old, 0), 0);
    tilec_cache *c = open_ok(tdir);
    cr_expect_eq(stats_of(c).stale_removed, 1);
    tilec_cache_close(c);
    cr_expect_neq(access(stale, F_OK), 0, "the stale temporary file stayed");
    cr_expect_eq(access(fresh, F_OK), 0, "a live writer's file was removed");
    cr_expect_eq(access(other, F_OK), 0, "a file that is not a temporary bundle was removed");
    cr_expect_eq(access(marker, F_OK), 0);
    /* within the hour: no second sweep */
    FILE *f = fopen(stale, "w");
    cr_assert(f);
    fclose(f);
    cr_assert_eq(utimensat(AT_FDCWD, stale, old, 0), 0);
    c = open_ok(tdir);
    cr_expect_eq(stats_of(c).stale_removed, 0);
    tilec_cache_close(c);
    cr_expect_eq(access(stale, F_OK), 0);
    /* an hour later */
    cr_assert_eq(utimensat(AT_FDCWD, marker, old, 0), 0);
    c = open_ok(tdir);
    cr_expect_eq(stats_of(c).stale_removed, 1);
    tilec_cache_close(c);
    cr_expect_neq(access(stale, F_OK), 0);
}

/* Multi-kernel choice files are bounded: past TILEC_CACHE_MAX_CHOICES the
 * oldest go at open (they were kept forever, one per kernel and shape). */
Test(cache, choice_files_are_bounded, .timeout = 60)
{
    const unsigned extra = 5, n = TILEC_CACHE_MAX_CHOICES + extra;
    char path[1100];
    for (unsigned i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/multikernel-%040u.choice", tdir, i);
        FILE *f = fopen(path, "w");
        cr_assert(f);
        fputs("tilec multi-kernel choice 1\n", f);
        fclose(f);
        /* file i is i seconds newer than file 0 */
        struct timespec t[2] = {{.tv_sec = time(NULL) - 100000 + i}, {.tv_sec = time(NULL) - 100000 + i}};
        cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0);
    }
    snprintf(path, sizeof path, "%s/notes.choice", tdir); /* not ours: stays */
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fclose(f);
    tilec_cache *c = open_ok(tdir);
    cr_expect_eq(stats_of(c).choices_removed, extra);
    tilec_cache_close(c);
    for (unsigned i = 0; i < extra + 1; i++) {
        snprintf(path, sizeof path, "%s/multikernel-%040u.choice", tdir, i);
        cr_expect_eq(access(path, F_OK) == 0, i == extra, "%s", path);
    }
    snprintf(path, sizeof path, "%s/notes.choice", tdir);
    cr_expect_eq(access(path, F_OK), 0);
}

Test(cache, processes_create_the_directory_at_once, .timeout = 60)
{
    enum { N = 16 };
    pid_t pids[N];
    const char *dir = path_in("new/a/b/c");
    int gate[2]; /* the children start together when the parent closes it */
    cr_assert_eq(pipe(gate), 0);
    for (int i = 0; i < N; i++)
        if ((pids[i] = fork()) == 0) {
            char ch;
            close(gate[1]);
            while (read(gate[0], &ch, 1) > 0)
                ;
            tilec_cache *c = NULL;
            if (tilec_cache_open(dir, &c) != TILEC_RT_OK || !tilec_cache_dir(c))
                _exit(2);
            tilec_bundle *b = make_bundle(1, (unsigned)i);
            int rc = tilec_cache_put(c, KEY, b) == TILEC_RT_OK ? 0 : 3;
            tilec_bundle_free(b);
            tilec_cache_close(c);
            _exit(rc);
        }
    close(gate[0]);
    nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    close(gate[1]);
    for (int i = 0; i < N; i++) {
        int status;
        cr_assert_gt(pids[i], 0);
        waitpid(pids[i], &status, 0);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d: status %d", i, status);
    }
    expect_dir_0700(path_in("new/a"));
    expect_only_bundles(dir, 1);
}
