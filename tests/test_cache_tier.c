/* test_cache_tier.c: the kernel cache's tiers behind one interface
 * (runtime/cache_tier.h), with a test tier after memory and the
 * directory: a lookup walks the tiers in order and stops at the first
 * hit, a hit is promoted into the tiers before it, a value the kind's check
 * rejects is removed from its tier and counted, a fault is noted and
 * counted in one place, a store reaches every tier, and each tier's
 * counters come through tilec_cache_get_tier_stats; bundles, records and
 * the multi-kernel's choices alike. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle_forge.h"
#include "runtime/cache_tier.h"
#include "runtime/choice_entry.h"

static char tdir[512];

static void setup(void)
{
    snprintf(tdir, sizeof tdir, "/tmp/tilec_tier_test_XXXXXX");
    cr_assert_not_null(mkdtemp(tdir));
    chmod(tdir, 0700);
    unsetenv("TILEC_FORCE_DISABLE_CACHES");
    unsetenv("TILEC_CACHE_REDIS");
    unsetenv("TILEC_LOGS");
}

static void teardown(void)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tdir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(tier, .init = setup, .fini = teardown);

static const char KEY[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* The test tier: one value of bytes, what to answer, and a trace of calls. */
typedef struct fake {
    void *data;
    size_t len;
    tier_result answer; /* what get answers when it has no value (TIER_MISS, TIER_FAULT, ...) */
    int removed, puts, promotes;
    char trace[256];
} fake;

static tier_result fake_get(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, cache_value *v,
                            char *why, size_t why_size)
{
    (void)c;
    fake *f = t->state;
    snprintf(f->trace + strlen(f->trace), sizeof f->trace - strlen(f->trace), "get %s%s;", k->remote_prefix, key);
    snprintf(v->where, sizeof v->where, "fake tier");
    if (!f->data) {
        snprintf(why, why_size, "fake tier: down");
        return f->answer;
    }
    v->data = malloc(f->len);
    memcpy(v->data, f->data, f->len);
    v->len = f->len;
    return TIER_HIT;
}

static tier_result fake_put(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, cache_value *v,
                            int promote, char *why, size_t why_size)
{
    (void)c;
    (void)k;
    (void)key;
    fake *f = t->state;
    if (f->answer == TIER_FAULT) {
        snprintf(why, why_size, "fake tier: down");
        return TIER_FAULT;
    }
    free(f->data);
    f->data = malloc(v->len);
    memcpy(f->data, v->data, v->len);
    f->len = v->len;
    f->puts += !promote;
    f->promotes += promote;
    return TIER_HIT;
}

static void fake_remove(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, const cache_value *v)
{
    (void)c;
    (void)k;
    (void)key;
    (void)v;
    fake *f = t->state;
    free(f->data);
    f->data = NULL;
    f->removed++;
}

static fake F;
static const cache_tier fake_tier = {
    .name = "fake", .remote = 1, .get = fake_get, .put = fake_put, .remove = fake_remove, .state = &F};

static tilec_cache *open_with_fake(void)
{
    tilec_cache *c = NULL;
    cr_assert_eq(tilec_cache_open(tdir, &c), TILEC_RT_OK);
    cr_assert_eq(cache_add_tier(c, &fake_tier), 0);
    return c;
}

static tilec_cache_tier_stats tier(const tilec_cache *c, uint32_t i, const char *name)
{
    tilec_cache_tier_stats s;
    cr_assert_eq(tilec_cache_get_tier_stats(c, i, &s), TILEC_RT_OK, "tier %u", i);
    cr_assert_str_eq(s.name, name, "tier %u", i);
    return s;
}

/* Close c, remove KEY's file of suffix from the directory (its path in
 * path), and open a fresh handle (empty memory) with the fake tier. */
static tilec_cache *reopen_without(tilec_cache *c, const char *suffix, char *path, size_t size)
{
    tilec_cache_close(c);
    snprintf(path, size, "%s/%s%s", tdir, KEY, suffix);
    cr_assert_eq(unlink(path), 0, "%s", path);
    F.trace[0] = 0;
    return open_with_fake();
}

Test(tier, the_walk_goes_down_the_tiers_and_promotes_a_hit)
{
    memset(&F, 0, sizeof F);
    F.answer = TIER_MISS;
    tilec_bundle *b = make_bundle(2, 7);
    tilec_cache *c = open_with_fake();
    cr_assert_eq(tilec_cache_put(c, KEY, b), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_expect_eq(F.puts, 1, "a store reaches every tier");
    cr_expect_eq(tier(c, 0, "memory").writes, 1);
    cr_expect_eq(tier(c, 1, "disk").writes, 1);
    cr_expect_eq(tier(c, 2, "fake").writes, 1);
    tilec_cache_tier_stats none;
    cr_expect_eq(tilec_cache_get_tier_stats(c, 3, &none), TILEC_RT_NOT_FOUND);

    /* A fresh handle without the file: memory and disk miss, the fake
     * tier answers, and the hit is copied into both. */
    char path[1024];
    c = reopen_without(c, ".tilecbundle", path, sizeof path);
    tilec_bundle *got = NULL;
    cr_assert_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_expect_eq(got->nkernels, 2);
    tilec_bundle_free(got);
    cr_expect_str_eq(F.trace, "get "
                              "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef;");
    cr_expect_eq(access(path, F_OK), 0, "the hit was not promoted to the directory");
    cr_expect_eq(tier(c, 0, "memory").misses, 1);
    cr_expect_eq(tier(c, 1, "disk").misses, 1);
    cr_expect_eq(tier(c, 2, "fake").hits, 1);
    /* the next lookup stops at memory */
    cr_assert_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_OK);
    tilec_bundle_free(got);
    cr_expect_eq(tier(c, 0, "memory").hits, 1);
    cr_expect_eq(tier(c, 2, "fake").hits, 1, "a memory hit went on to the fake tier");
    tilec_cache_stats s;
    tilec_cache_get_stats(c, &s);
    cr_expect_eq(s.mem_hits, 1);
    cr_expect_eq(s.disk_hits, 0);
    tilec_cache_close(c);
    tilec_bundle_free(b);
    free(F.data);
}

Test(tier, a_rejected_value_is_removed_from_its_tier_and_a_fault_is_a_miss)
{
    memset(&F, 0, sizeof F);
    F.data = strdup("not a bundle");
    F.len = strlen(F.data);
    tilec_cache *c = open_with_fake();
    tilec_bundle *got = NULL;
    cr_expect_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_NOT_FOUND);
    cr_expect_null(got);
    cr_expect_eq(F.removed, 1, "the rejected value stayed in its tier");
    cr_expect_eq(tier(c, 2, "fake").rejected, 1);
    cr_expect(strstr(tilec_cache_last_error(c), "rejected fake tier"), "%s", tilec_cache_last_error(c));

    F.answer = TIER_FAULT;
    cr_expect_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_NOT_FOUND);
    cr_expect_eq(tier(c, 2, "fake").faults, 1);
    cr_expect(strstr(tilec_cache_last_error(c), "fake tier: down; compiling locally"), "%s", tilec_cache_last_error(c));
    cr_expect_str_eq(tilec_cache_remote_problem(c), "fake tier: down", "a remote tier's fault is its problem");
    /* a remote tier's failed store is noted, not returned */
    tilec_bundle *b = make_bundle(1, 3);
    cr_expect_eq(tilec_cache_put(c, KEY, b), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_expect_eq(tier(c, 2, "fake").faults, 2);
    cr_expect(strstr(tilec_cache_last_error(c), "fake tier: down; not stored there"), "%s", tilec_cache_last_error(c));
    tilec_bundle_free(b);
    tilec_cache_close(c);
}

Test(tier, records_walk_the_same_tiers)
{
    memset(&F, 0, sizeof F);
    F.answer = TIER_MISS;
    tilec_cache *c = open_with_fake();
    cr_assert_eq(tilec_cache_record_put(c, KEY, "bundle x\n"), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_expect_eq(F.puts, 1);
    char path[1024];
    c = reopen_without(c, ".tilecrecord", path, sizeof path);
    char *text = NULL;
    cr_assert_eq(tilec_cache_record_get(c, KEY, &text), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_expect_str_eq(text, "bundle x\n");
    free(text);
    cr_expect(strstr(F.trace, "get record-"), "%s", F.trace);
    cr_expect_eq(access(path, F_OK), 0, "the record was not promoted to the directory");
    tilec_cache_stats s;
    tilec_cache_get_stats(c, &s);
    cr_expect_eq(s.record_hits, 1);
    tilec_cache_close(c);
    free(F.data);
}

/* A multi-kernel choice is one more kind: stored in every tier (the file
 * multikernel-<hash>.choice, "choice-<hash>" in the remote tier), found
 * by the walk and promoted, and an entry that is not this key's (a
 * variant the kernel lacks, other bytes) refused with where and why. */
Test(tier, choices_walk_the_same_tiers)
{
    static const char H[] = "0123456789abcdef0123456789abcdef01234567";
    memset(&F, 0, sizeof F);
    F.answer = TIER_MISS;
    choice_store s = {.dir = tdir};
    choice_store_use(&s, open_with_fake());
    choice_put(&s, H, 2);
    cr_expect_eq(F.puts, 1);
    cr_assert_not_null(F.data);
    cr_expect(F.len > 30 && !memcmp(F.data, "tilec multi-kernel choice 2 2 ", 30), "%.*s", (int)F.len, (char *)F.data);
    char path[1024];
    snprintf(path, sizeof path, "%s/multikernel-%s.choice", tdir, H);
    cr_assert_eq(access(path, F_OK), 0, "%s", path);

    /* a fresh handle, the directory's entry gone: the remote tier answers */
    tilec_cache_close(s.cache);
    cr_assert_eq(unlink(path), 0);
    F.trace[0] = 0;
    choice_store_use(&s, open_with_fake());
    const char *from = NULL;
    char refused[2048];
    cr_expect_eq(choice_get(&s, H, 3, &from, refused, sizeof refused), 2);
    cr_expect_str_eq(from ? from : "(none)", "fake");
    cr_expect_str_eq(refused, "");
    cr_expect(strstr(F.trace, "get choice-0123456789abcdef"), "%s", F.trace);
    cr_expect_eq(access(path, F_OK), 0, "the choice was not promoted to the directory");

    /* the kernel has two variants now: variant 2 is no entry of its */
    tilec_cache_close(s.cache);
    choice_store_use(&s, open_with_fake());
    cr_expect_eq(choice_get(&s, H, 2, &from, refused, sizeof refused), -1);
    cr_expect_null(from);
    cr_expect(strstr(refused, "fake tier, choice-0123456789abcdef") && strstr(refused, "no variant of the 2"), "%s",
              refused);
    cr_expect_neq(access(path, F_OK), 0, "the refused file was not removed");
    cr_expect_eq(F.removed, 1);

    /* other bytes in the remote tier */
    F.data = strdup("garbage");
    F.len = 7;
    cr_expect_eq(choice_get(&s, H, 3, &from, refused, sizeof refused), -1);
    cr_expect(strstr(refused, "not a multi-kernel choice"), "%s", refused);
    choice_store_close(&s);
    free(F.data);
}

Test(tier, a_disabled_cache_has_no_tiers)
{
    setenv("TILEC_FORCE_DISABLE_CACHES", "1", 1);
    tilec_cache *c = NULL;
    cr_assert_eq(tilec_cache_open(tdir, &c), TILEC_RT_OK);
    tilec_cache_tier_stats s;
    cr_expect_eq(tilec_cache_get_tier_stats(c, 0, &s), TILEC_RT_NOT_FOUND);
    cr_expect_eq(tilec_cache_get_tier_stats(NULL, 0, &s), TILEC_RT_INVALID_ARG);
    tilec_bundle *got = NULL;
    cr_expect_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_NOT_FOUND);
    tilec_cache_stats st;
    tilec_cache_get_stats(c, &st);
    cr_expect_eq(st.misses, 1);
    tilec_cache_close(c);
}
