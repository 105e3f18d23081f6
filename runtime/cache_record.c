/* cache_record.c: records, the short texts the cache keeps beside its
 * bundles (tilec/cache.h): the record kind that tilec_cache_record_get
 * and _put walk the tiers with (cache_tier.c). In memory the text; as
 * bytes (<dir>/<key>.tilecrecord, and "record-<key>" in the Redis tier, so
 * a machine with an empty directory skips the lowering as well) one line
 * "tilec record 2 <key> <n> <checksum>\n" (the text's length and XXH64 in
 * hex), then the text. A value that fails the check is rejected like a
 * bundle. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_tier.h"

#define REC_MAGIC "tilec record 2 "
enum { HEAD_MAX = sizeof REC_MAGIC + TILEC_CACHE_MAX_KEY + 32 };

/* A cursor over bytes that need not end in a NUL: nothing past end is
 * read. */
typedef struct rcur {
    const char *p, *end;
} rcur;

static int take_lit(rcur *c, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
        return 0;
    c->p += n;
    return 1;
}

/* A decimal of 1 to 9 digits (no leading zero but "0"). */
static int take_dec(rcur *c, size_t *out)
{
    size_t v = 0, n = 0;
    while (c->p + n < c->end && n < 10 && c->p[n] >= '0' && c->p[n] <= '9')
        v = v * 10 + (size_t)(c->p[n++] - '0');
    if (n == 0 || n > 9 || (n > 1 && c->p[0] == '0'))
        return 0;
    c->p += n;
    *out = v;
    return 1;
}

/* Exactly 16 lowercase hex digits. */
static int take_hex64(rcur *c, uint64_t *out)
{
    uint64_t v = 0;
    if (c->end - c->p < 16)
        return 0;
    for (int i = 0; i < 16; i++) {
        char d = c->p[i];
        int x = d >= '0' && d <= '9' ? d - '0' : d >= 'a' && d <= 'f' ? d - 'a' + 10 : -1;
        if (x < 0)
            return 0;
        v = v << 4 | (uint64_t)x;
    }
    c->p += 16;
    *out = v;
    return 1;
}

/* The text of a record's bytes data[0..len) (never read past), which
 * must be key's record; NULL with why set. */
static char *rec_parse(const char *data, size_t len, const char *key, char *why, size_t why_size)
{
    rcur c = {data, data + len};
    size_t n = 0;
    uint64_t sum = 0;
    const char *k = NULL;
    if (!take_lit(&c, REC_MAGIC)) {
        cache_say(why, why_size, "no \"" REC_MAGIC "\" header line");
        return NULL;
    }
    k = c.p;
    while (c.p < c.end && c.p - k <= TILEC_CACHE_MAX_KEY && *c.p != ' ')
        c.p++;
    size_t klen = (size_t)(c.p - k);
    if (!take_lit(&c, " ") || !take_dec(&c, &n) || !take_lit(&c, " ") || !take_hex64(&c, &sum) ||
        !take_lit(&c, "\n") || !tilec_cache_key_ok(k, klen)) {
        cache_say(why, why_size, "a malformed \"" REC_MAGIC "\" header line");
        return NULL;
    }
    if (klen != strlen(key) || memcmp(k, key, klen) != 0) {
        cache_say(why, why_size, "the record of key %.*s, not %s", (int)klen, k, key);
        return NULL;
    }
    size_t body = (size_t)(c.end - c.p);
    if (n != body || n > TILEC_CACHE_MAX_RECORD) {
        cache_say(why, why_size, "the header says %zu bytes, the file holds %zu", n, body);
        return NULL;
    }
    if (memchr(c.p, 0, body) || tilec_bundle_checksum(c.p, body) != sum) {
        cache_say(why, why_size, "checksum mismatch");
        return NULL;
    }
    char *text = malloc(body + 1);
    if (!text) {
        cache_say(why, why_size, "out of memory for %zu bytes", body);
        return NULL;
    }
    memcpy(text, c.p, body);
    text[body] = 0;
    return text;
}

static tilec_rt_status record_parse(const cache_kind *k, const void *data, size_t len, const char *key, void **obj, char *why,
                                    size_t why_size)
{
    (void)k;
    *obj = rec_parse(data, len, key, why, why_size);
    return *obj ? TILEC_RT_OK : TILEC_RT_MODULE_ERROR;
}

static tilec_rt_status record_copy(const void *obj, void **out)
{
    *out = strdup(obj);
    return *out ? TILEC_RT_OK : TILEC_RT_NOMEM;
}

const cache_kind cache_kind_record = {
    .id = CACHE_KIND_RECORD,
    .suffix = RECORD_SUFFIX,
    .remote_prefix = "record-",
    .log_hit = "record hit",
    .log_miss = "record miss",
    .reject_what = "record miss",
    .local_work = "lowering locally",
    .not_stored = "the record is not stored there",
    .parse = record_parse,
    .copy = record_copy,
    .free = free,
};

tilec_rt_status tilec_cache_record_get(tilec_cache *c, const char *key, char **text)
{
    if (text)
        *text = NULL;
    if (!c || !text || !cache_key_valid(key))
        return TILEC_RT_INVALID_ARG;
    void *obj;
    tilec_rt_status st = cache_walk_get(c, &cache_kind_record, key, &obj);
    *text = obj;
    return st;
}

tilec_rt_status tilec_cache_record_put(tilec_cache *c, const char *key, const char *text)
{
    if (!c || !text || !cache_key_valid(key))
        return TILEC_RT_INVALID_ARG;
    size_t n = strnlen(text, TILEC_CACHE_MAX_RECORD + 1);
    if (n > TILEC_CACHE_MAX_RECORD)
        return TILEC_RT_INVALID_ARG;
    if (c->disabled)
        return TILEC_RT_OK;
    char *data = malloc(HEAD_MAX + n);
    if (!data)
        return TILEC_RT_NOMEM;
    int h = snprintf(data, HEAD_MAX, REC_MAGIC "%s %zu %016" PRIx64 "\n", key, n, tilec_bundle_checksum(text, n));
    memcpy(data + h, text, n);
    tilec_rt_status st = cache_walk_put(c, &cache_kind_record, key, text, data, (size_t)h + n);
    free(data);
    return st;
}
