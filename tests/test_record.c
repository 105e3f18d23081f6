/* test_record.c: warm starts without lowering. The cache keeps records
 * (short checksummed texts beside the bundles); a build keeps one per
 * module source naming its bundle and the launch metadata, so the next
 * build of the same text lowers nothing. The record's text reads back to
 * exactly what the lowering gave (the Hopper twin's tensor maps too);
 * anything that does not fit (a corrupt file, a record for other
 * variants, a bundle that is gone) is a miss, and the build lowers as
 * before. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/record.h"
#include "cache_helpers.h"
#include "fs_helpers.h"
#include "helpers.h"
#include "tilec/lower.h"

static char dir[64];

static void setup(void)
{
    cache_clean_env();
    make_tmpdir(dir, sizeof dir);
}

static void teardown(void) { rm_dir(dir); }

TestSuite(record, .init = setup, .fini = teardown);

static const char KEY[] = "0123456789abcdef0123456789abcdef";

Test(record, put_get_memory_file_and_clear)
{
    tilec_cache *c;
    char *t = NULL;
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_expect_eq(tilec_cache_record_get(c, KEY, &t), TILEC_RT_NOT_FOUND);
    cr_expect_null(t);
    cr_assert_eq(tilec_cache_record_put(c, KEY, "line one\nline two\n"), TILEC_RT_OK);
    cr_assert_eq(tilec_cache_record_get(c, KEY, &t), TILEC_RT_OK);
    cr_expect_str_eq(t, "line one\nline two\n");
    free(t);
    tilec_cache_close(c);
    /* another process: the file */
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_assert_eq(tilec_cache_record_get(c, KEY, &t), TILEC_RT_OK);
    cr_expect_str_eq(t, "line one\nline two\n");
    free(t);
    tilec_cache_stats s;
    tilec_cache_get_stats(c, &s);
    cr_expect_eq(s.record_hits, 1);
    cr_expect_eq(s.record_misses, 0);
    cr_expect_eq(s.misses, 0, "a record is not a bundle lookup");
    uint64_t removed = 0, freed = 0;
    cr_assert_eq(tilec_cache_clear(c, &removed, &freed), TILEC_RT_OK);
    cr_expect_eq(removed, 1);
    cr_expect_eq(tilec_cache_record_get(c, KEY, &t), TILEC_RT_NOT_FOUND, "clear empties memory and files");
    tilec_cache_close(c);
}

Test(record, bad_arguments_and_disabled)
{
    tilec_cache *c;
    char *t = (char *)"x";
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_expect_eq(tilec_cache_record_get(c, "../etc/passwd", &t), TILEC_RT_INVALID_ARG);
    cr_expect_null(t);
    cr_expect_eq(tilec_cache_record_get(NULL, KEY, &t), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_cache_record_get(c, KEY, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_cache_record_put(c, KEY, NULL), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_cache_record_put(c, "", "x"), TILEC_RT_INVALID_ARG);
    char *big = malloc(TILEC_CACHE_MAX_RECORD + 2);
    memset(big, 'a', TILEC_CACHE_MAX_RECORD + 1);
    big[TILEC_CACHE_MAX_RECORD + 1] = 0;
    cr_expect_eq(tilec_cache_record_put(c, KEY, big), TILEC_RT_INVALID_ARG, "over TILEC_CACHE_MAX_RECORD");
    free(big);
    tilec_cache_close(c);
    setenv("TILEC_FORCE_DISABLE_CACHES", "1", 1);
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_expect_eq(tilec_cache_record_put(c, KEY, "x"), TILEC_RT_OK);
    cr_expect_eq(tilec_cache_record_get(c, KEY, &t), TILEC_RT_NOT_FOUND);
    tilec_cache_close(c);
    unsetenv("TILEC_FORCE_DISABLE_CACHES");
}

/* Every damaged file is a miss, and is removed. */
Test(record, corrupt_files_are_misses)
{
#define K "0123456789abcdef0123456789abcdef"
    static const char *bad[] = {
        "",
        "tilec record 2 " K " 3 0000000000000000\nabc", /* wrong checksum */
        "tilec record 2 " K " 9 0000000000000000\nabc", /* wrong length */
        "not a record\nabc",                            /* no header */
        "tilec record 2 " K " 3 zz\nabc",               /* a malformed checksum */
        "tilec record 3 44bc2cf5ad770999\nabc",         /* the old header, without the key */
        "tilec record 2 " K " 3",                       /* ends inside the header */
        "tilec record 2 " K,                            /* ends with the key */
        "tilec record 2 " K " 00003 44bc2cf5ad770999\nabc", /* leading zeros */
        "tilec record 2 " K " 3 44BC2CF5AD770999\nabc", /* upper-case checksum */
    };
    /* the control: the same bytes with a well-formed header are a hit */
    write_in(dir, K ".tilecrecord", "tilec record 2 " K " 3 44bc2cf5ad770999\nabc");
    tilec_cache *good;
    char *text = NULL;
    cr_assert_eq(tilec_cache_open(dir, &good), TILEC_RT_OK);
    cr_assert_eq(tilec_cache_record_get(good, KEY, &text), TILEC_RT_OK, "%s", tilec_cache_last_error(good));
    cr_expect_str_eq(text, "abc");
    free(text);
    tilec_cache_close(good);
#undef K
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[64], path[256];
        snprintf(name, sizeof name, "%s.tilecrecord", KEY);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        write_in(dir, name, bad[i]);
        tilec_cache *c;
        char *t = NULL;
        cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
        cr_expect_eq(tilec_cache_record_get(c, KEY, &t), TILEC_RT_NOT_FOUND, "case %zu", i);
        cr_expect_null(t);
        cr_expect_neq(access(path, F_OK), 0, "case %zu: the damaged file stays", i);
        tilec_cache_close(c);
    }
}

/* A record carries its key: the file of key A under key B's name (a
 * checksum-clean record of another module) is refused and removed. */
Test(record, another_keys_record_is_refused)
{
    static const char B[] = "fedcba9876543210fedcba9876543210";
    tilec_cache *c;
    char *t = NULL;
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_assert_eq(tilec_cache_record_put(c, KEY, "bundle of A\n"), TILEC_RT_OK);
    tilec_cache_close(c);
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/%s.tilecrecord", dir, KEY);
    snprintf(b, sizeof b, "%s/%s.tilecrecord", dir, B);
    size_t len = 0;
    char *bytes = read_file(a, &len);
    cr_assert(bytes && strstr(bytes, KEY), "the record names its key: %s", bytes ? bytes : "(none)");
    FILE *f = fopen(b, "w");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(bytes, 1, len, f), len);
    fclose(f);
    free(bytes);
    cr_assert_eq(tilec_cache_open(dir, &c), TILEC_RT_OK);
    cr_expect_eq(tilec_cache_record_get(c, B, &t), TILEC_RT_NOT_FOUND, "served A's record for B: %s", t ? t : "");
    cr_expect_null(t);
    tilec_cache_stats s;
    tilec_cache_get_stats(c, &s);
    cr_expect_eq(s.corrupt, 1);
    cr_expect(strstr(tilec_cache_last_error(c), "the record of key 0123456789abcdef0123456789abcdef, not fedcba"), "%s",
              tilec_cache_last_error(c));
    cr_expect_neq(access(b, F_OK), 0, "the foreign record is removed");
    cr_expect_eq(tilec_cache_record_get(c, KEY, &t), TILEC_RT_OK, "A's own still reads");
    cr_expect_str_eq(t, "bundle of A\n");
    free(t);
    tilec_cache_close(c);
}

static void lower_all(tilec_ctx *ctx, tilec_module *m, const char *kernel, tilec_kernel_code *codes, uint32_t n)
{
    const tilec_kernel *k = tilec_module_find_kernel(m, kernel);
    cr_assert_not_null(k);
    for (uint32_t v = 0; v < n; v++)
        cr_assert_eq(tilec_lower_kernel(ctx, m, k, (int)v, &codes[v]), TILEC_OK);
}

/* The lowering's own launch description goes through the bundle (its
 * entries, serialised and parsed) and back unchanged, twin and split-K
 * included; an entry that does not fit the kernel, a damaged one, a map
 * naming a parameter past the count is refused. */
Test(record, launch_fields_read_back_through_the_bundle)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = parse(ctx, "tests/gemm_variants.tile");
    const tilec_kernel *k = tilec_module_find_kernel(m, "matmul_f16");
    uint32_t n = tilec_kernel_variant_count(k);
    cr_assert_geq(n, 2);
    cr_assert_leq(n, 16);
    tilec_kernel_code codes[16], back[16];
    tilec_bundle_kernel entries[16];
    tilec_rt_param_kind kinds[TILEC_RT_MAX_PARAMS] = {0};
    static unsigned char image[] = {1, 2, 3};
    lower_all(ctx, m, "matmul_f16", codes, n);
    for (uint32_t v = 0; v < n; v++)
        rec_to_bundle(&entries[v], &codes[v], image, sizeof image, kinds);
    tilec_bundle in = {n, entries}, *out = NULL;
    void *buf = NULL;
    size_t len = 0;
    char why[256];
    cr_assert_eq(tilec_bundle_serialize(&in, KEY, &buf, &len), TILEC_RT_OK);
    cr_assert_eq(tilec_bundle_parse(buf, len, KEY, &out, why, sizeof why), TILEC_RT_OK, "%s", why);
    int twins = 0;
    for (uint32_t v = 0; v < n; v++) {
        cr_assert_eq(rec_from_bundle(&out->kernels[v], &back[v], k->nparams, kinds), 0, "variant %u", v);
        cr_expect_str_eq(back[v].name, codes[v].name);
        cr_expect_eq(back[v].threads, codes[v].threads);
        cr_expect_eq(back[v].smem_bytes, codes[v].smem_bytes);
        cr_expect_eq(back[v].nparams, codes[v].nparams);
        cr_expect_eq(back[v].written, codes[v].written);
        cr_expect_eq(back[v].split_k, codes[v].split_k);
        cr_expect_eq(back[v].split_bytes, codes[v].split_bytes);
        cr_expect_eq(!back[v].tma.name, !codes[v].tma.name);
        if (codes[v].tma.name) {
            twins++;
            cr_expect_str_eq(back[v].tma.name, codes[v].tma.name);
            cr_expect_eq(back[v].tma.threads, codes[v].tma.threads);
            cr_expect_eq(back[v].tma.smem_bytes, codes[v].tma.smem_bytes);
            cr_expect_eq(back[v].tma.nmaps, codes[v].tma.nmaps);
            cr_expect_eq(back[v].tma.persistent, codes[v].tma.persistent);
            cr_expect_eq(memcmp(back[v].tma.maps, codes[v].tma.maps, sizeof codes[v].tma.maps), 0, "variant %u maps", v);
        }
        tilec_kernel_code_free(&back[v]);
    }
    cr_expect_geq(twins, 1, "the gemm variants have Hopper twins");
    /* an entry for another parameter count or other kinds does not fit */
    cr_expect_eq(rec_from_bundle(&out->kernels[0], &back[0], k->nparams + 1, kinds), -1, "another parameter count");
    kinds[0] = TILEC_RT_PARAM_I64;
    cr_expect_eq(rec_from_bundle(&out->kernels[0], &back[0], k->nparams, kinds), -1, "another kind");
    tilec_bundle_free(out);
    /* every truncation is refused with a sentence */
    for (size_t cut = 0; cut < len; cut += 13) {
        cr_expect_eq(tilec_bundle_parse(buf, cut, KEY, &out, why, sizeof why), TILEC_RT_MODULE_ERROR, "cut at %zu", cut);
        cr_expect_neq(why[0], 0);
    }
    free(buf);
    /* a twin's map naming a parameter past the count is not written, nor read */
    uint32_t t = 0;
    while (t < n && !entries[t].twin.name)
        t++;
    cr_assert_lt(t, n);
    entries[t].twin.maps[0].ptr = k->nparams + 5;
    cr_expect_eq(tilec_bundle_serialize(&in, KEY, &buf, &len), TILEC_RT_INVALID_ARG, "a map's pointer past the parameters");
    entries[t].twin.maps[0].ptr = codes[t].tma.maps[0].ptr;
    for (uint32_t v = 0; v < n; v++)
        tilec_kernel_code_free(&codes[v]);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

static int count_files(const char *suffix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name), ls = strlen(suffix);
        n += l > ls && !strcmp(e->d_name + l - ls, suffix) && e->d_name[0] != '.';
    }
    if (d)
        closedir(d);
    return n;
}

static void remove_files(const char *suffix)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name), ls = strlen(suffix);
        char path[512];
        if (l > ls && !strcmp(e->d_name + l - ls, suffix) &&
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
            unlink(path);
    }
    if (d)
        closedir(d);
}

/* A real build: the second start lowers nothing and takes the same
 * bundle; a record without its bundle, or damaged, lowers again. */
Test(record, warm_build_lowers_nothing, .timeout = 120)
{
    tilec_program_stats cold, warm, lost, damaged;
    cr_assert_eq(cache_build("examples/add_relu.tile", dir, &cold), TILEC_OK);
    cr_expect_eq(cold.source_hit, 0);
    cr_expect_eq(cold.nvrtc_compiles, 1);
    cr_expect_eq(count_files(".tilecrecord"), 1, "the build kept its record");
    cr_assert_eq(cache_build("examples/add_relu.tile", dir, &warm), TILEC_OK);
    cr_expect_eq(warm.source_hit, 1);
    cr_expect_eq(warm.cache_hit, 1);
    cr_expect_eq(warm.nvrtc_compiles, 0);
    cr_expect(warm.lower_ms == 0.0, "lowered for %.3f ms", warm.lower_ms);
    cr_expect_str_eq(warm.key, cold.key, "the record names the lowering's bundle");
    cr_expect_eq(warm.kernels, cold.kernels);
    remove_files(".tilecbundle");
    cr_assert_eq(cache_build("examples/add_relu.tile", dir, &lost), TILEC_OK);
    cr_expect_eq(lost.source_hit, 0, "the record's bundle is gone");
    cr_expect_eq(lost.nvrtc_compiles, 1);
    cr_expect_str_eq(lost.key, cold.key);
    remove_files(".tilecrecord");
    cr_assert_eq(cache_build("examples/add_relu.tile", dir, &damaged), TILEC_OK);
    cr_expect_eq(damaged.source_hit, 0);
    cr_expect_eq(damaged.cache_hit, 1, "the lowering's key still finds the bundle");
    cr_expect_eq(count_files(".tilecrecord"), 1, "and the record is kept again");
}

/* Another text is another record, even when it lowers to the same code;
 * a record for other variants (here: forged for a 2-variant module) is a
 * miss, never a wrong launch. */
Test(record, other_text_and_forged_records_miss, .timeout = 120)
{
    tilec_program_stats a, b, c;
    cr_assert_eq(cache_build("examples/add_relu.tile", dir, &a), TILEC_OK);
    size_t len = 0;
    char *text = read_file("examples/add_relu.tile", &len);
    cr_assert_not_null(text);
    char path[128];
    snprintf(path, sizeof path, "%s/copy.tile", dir);
    char *more = malloc(len + 32);
    snprintf(more, len + 32, "%s\n// a comment\n", text);
    write_in(dir, "copy.tile", more);
    cr_assert_eq(cache_build(path, dir, &b), TILEC_OK);
    cr_expect_eq(b.source_hit, 0, "another text");
    cr_expect_eq(b.cache_hit, 1, "the same code");
    cr_expect_eq(count_files(".tilecrecord"), 2);
    /* forge: every record now names one kernel more than there is */
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 12 || strcmp(e->d_name + l - 12, ".tilecrecord"))
            continue;
        char key[TILEC_CACHE_KEY_LEN + 1];
        snprintf(key, sizeof key, "%.*s", (int)(l - 12), e->d_name);
        tilec_cache *cc;
        char *rec;
        cr_assert_eq(tilec_cache_open(dir, &cc), TILEC_RT_OK);
        cr_assert_eq(tilec_cache_record_get(cc, key, &rec), TILEC_RT_OK);
        char *forged = malloc(strlen(rec) + 64);
        sprintf(forged, "%skernel extra_v0 128 0 0 twin -\n", rec);
        cr_assert_eq(tilec_cache_record_put(cc, key, forged), TILEC_RT_OK);
        free(forged);
        free(rec);
        tilec_cache_close(cc);
    }
    closedir(d);
    cr_assert_eq(cache_build(path, dir, &c), TILEC_OK);
    cr_expect_eq(c.source_hit, 0, "a record of other variants");
    cr_expect_eq(c.cache_hit, 1);
    free(more);
    free(text);
}
