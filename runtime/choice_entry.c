/* choice_entry.c: the multi-kernel's stored choices (choice_entry.h), the
 * choice kind of the cache's tiers (cache_tier.h): an entry's line, its
 * check, and the lookup and store through the walk. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_tier.h"
#include "runtime/choice_entry.h"

#define CHOICE_MAGIC "tilec multi-kernel choice 2 "
enum { LINE_MAX_ = 128 };

/* The entry's line for v under hash. */
static int entry_line(const char *hash, int v, char line[LINE_MAX_])
{
    char body[64];
    int n = snprintf(body, sizeof body, "%d %s", v, hash);
    return snprintf(line, LINE_MAX_, CHOICE_MAGIC "%s %016" PRIx64 "\n", body,
                    tilec_bundle_checksum(body, (size_t)n));
}

/* The variant of an entry's bytes (never read past len), or -1 with why. */
static int entry_parse(const char *data, size_t len, const char *hash, uint32_t nvariants, char *why, size_t wsize)
{
    const char *m = CHOICE_MAGIC;
    size_t ml = strlen(m);
    if (len < ml || memcmp(data, m, ml)) {
        snprintf(why, wsize, "not a multi-kernel choice (no \"%s\" line)", CHOICE_MAGIC);
        return -1;
    }
    int v = 0;
    size_t i = ml, digits = 0;
    while (i < len && data[i] >= '0' && data[i] <= '9' && digits < 3)
        v = v * 10 + (data[i++] - '0'), digits++;
    if (!digits || (uint32_t)v >= nvariants) {
        snprintf(why, wsize, "no variant of the %u this kernel has", nvariants);
        return -1;
    }
    char want[LINE_MAX_];
    int n = entry_line(hash, v, want);
    if ((size_t)n != len || memcmp(want, data, len)) {
        snprintf(why, wsize, "the entry of another key, or torn (want %.*s)", n - 1, want);
        return -1;
    }
    return v;
}

/* The kind: the object is the variant (an int); arg is the kernel's
 * variant count. */
static tilec_rt_status kind_parse(const cache_kind *k, const void *data, size_t len, const char *key, void **obj,
                                  char *why, size_t why_size)
{
    *obj = NULL;
    int v = entry_parse(data, len, key, *(const uint32_t *)k->arg, why, why_size);
    if (v < 0)
        return TILEC_RT_MODULE_ERROR;
    int *o = malloc(sizeof *o);
    if (!o)
        return TILEC_RT_NOMEM;
    *o = v;
    *obj = o;
    return TILEC_RT_OK;
}

static tilec_rt_status kind_copy(const void *obj, void **out)
{
    int *o = malloc(sizeof *o);
    if (o)
        *o = *(const int *)obj;
    *out = o;
    return o ? TILEC_RT_OK : TILEC_RT_NOMEM;
}

static const uint32_t no_variants = 0; /* a walk with the bare kind refuses every entry */

const cache_kind cache_kind_choice = {
    .id = CACHE_KIND_CHOICE,
    .file_prefix = "multikernel-",
    .suffix = ".choice",
    .remote_prefix = "choice-",
    .log_hit = "choice hit",
    .log_miss = "choice miss",
    .reject_what = "choice miss",
    .local_work = "timing locally",
    .not_stored = "not stored there",
    .parse = kind_parse,
    .copy = kind_copy,
    .free = free,
    .arg = &no_variants,
};

void choice_store_use(choice_store *s, tilec_cache *c)
{
    s->tried = 1;
    s->kind = cache_kind_choice;
    s->kind.arg = &s->nvariants;
    s->cache = c;
}

static tilec_cache *cache_of(choice_store *s)
{
    if (!s->tried && s->dir[0]) {
        tilec_cache *c = NULL;
        choice_store_use(s, tilec_cache_open(s->dir, &c) == TILEC_RT_OK ? c : NULL); /* NULL: timed, never stored */
    }
    return s->cache;
}

int choice_get(choice_store *s, const char *hash, uint32_t nvariants, const char **from, char *refused,
               size_t refused_size)
{
    *from = NULL;
    refused[0] = 0;
    tilec_cache *c = cache_of(s);
    if (!c)
        return -1;
    s->nvariants = nvariants;
    void *obj = NULL;
    if (cache_walk_find(c, &s->kind, hash, &obj, from, refused, refused_size) != TILEC_RT_OK)
        return -1; /* a miss, a refused entry or a fault: timed here */
    int v = *(int *)obj;
    free(obj);
    return v;
}

void choice_put(choice_store *s, const char *hash, int v)
{
    tilec_cache *c = cache_of(s);
    if (!c)
        return;
    char line[LINE_MAX_];
    int n = entry_line(hash, v, line);
    (void)cache_walk_put(c, &s->kind, hash, &v, line, (size_t)n); /* a lost choice is timed again */
}

void choice_store_close(choice_store *s)
{
    tilec_cache_close(s->cache);
    s->cache = NULL;
    s->tried = 0;
}
