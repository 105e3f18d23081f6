/* cache_record.c: records, the short texts the cache keeps beside its
 * bundles (tilec/cache.h). Memory first (uthash by key, under the cache's
 * lock), then <dir>/<key>.tilecrecord: one line "tilec record <n>
 * <checksum>\n" (the text's length and XXH64 in hex), then the text. A
 * file that fails the check is removed and read as a miss. With a Redis
 * tier the same bytes go there too, under "record-<key>", so a machine
 * with an empty directory skips the lowering as well. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_internal.h"

#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = (unsigned)tilec_bundle_checksum((keyptr), (keylen)))

#include "util/hashtable.h"

typedef struct mem_record {
    char key[TILEC_CACHE_MAX_KEY + 1];
    char *text;
    UT_hash_handle hh;
} mem_record;

#define REC_MAGIC "tilec record 2 "
enum { HEAD_MAX = sizeof REC_MAGIC + TILEC_CACHE_MAX_KEY + 32 };

static int rec_key_ok(const char *k) { return k && tilec_cache_key_ok(k, strnlen(k, TILEC_CACHE_MAX_KEY + 1)); }

void cache_records_clear(tilec_cache *c)
{
    pthread_mutex_lock(&c->lock);
    mem_record *e, *tmp;
    HASH_ITER(hh, c->records, e, tmp)
    {
        HASH_DEL(c->records, e);
        free(e->text);
        free(e);
    }
    pthread_mutex_unlock(&c->lock);
}

/* Keep a copy of text under key (the caller holds the lock). 0, or -1
 * when out of memory. */
static int rec_store_locked(tilec_cache *c, const char *key, const char *text)
{
    char *copy = strdup(text);
    if (!copy)
        return -1;
    mem_record *e;
    HASH_FIND_STR(c->records, key, e);
    if (e) {
        free(e->text);
        e->text = copy;
        return 0;
    }
    if (!(e = calloc(1, sizeof *e))) {
        free(copy);
        return -1;
    }
    snprintf(e->key, sizeof e->key, "%s", key);
    e->text = copy;
    HASH_ADD_STR(c->records, key, e);
    if (!e->hh.tbl) {
        free(copy);
        free(e);
        return -1;
    }
    return 0;
}

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

/* The record file under key: TILEC_RT_OK, NOT_FOUND or NOMEM. */
static tilec_rt_status rec_from_file(tilec_cache *c, const char *key, char **text)
{
    char path[PATH_CAP], why[ERR_MAX];
    void *data;
    size_t len;
    dev_t dev;
    ino_t ino;
    rd_result r = cache_read_entry(c, key, RECORD_SUFFIX, path, &data, &len, &dev, &ino, why, sizeof why);
    if (r == RD_MISSING)
        return TILEC_RT_NOT_FOUND;
    if (r == RD_OK) {
        *text = rec_parse(data, len, key, why, sizeof why);
        free(data);
    }
    if (!*text) {
        cache_reject(c, path, dev, ino, "record miss", why);
        return TILEC_RT_NOT_FOUND;
    }
    lru_touch(path); /* the sweep keeps the records used last */
    pthread_mutex_lock(&c->lock);
    (void)rec_store_locked(c, key, *text); /* out of memory: the next get reads the file again */
    pthread_mutex_unlock(&c->lock);
    return TILEC_RT_OK;
}

static void remote_key(const char *key, char out[TILEC_CACHE_MAX_KEY + 16])
{
    snprintf(out, TILEC_CACHE_MAX_KEY + 16, "record-%s", key);
}

/* The record in the Redis tier: checked like a file, then kept in memory
 * and copied to the directory (not fsync'd: a lost copy is only a miss). */
static tilec_rt_status rec_from_remote(tilec_cache *c, const char *key, char **text)
{
    char rkey[TILEC_CACHE_MAX_KEY + 16], why[ERR_MAX];
    void *data;
    size_t len;
    remote_key(key, rkey);
    remote_result r = cache_remote_get(c->remote, rkey, &data, &len, why, sizeof why);
    if (r == REMOTE_FAULT) {
        cache_note(c, &c->stats.remote_faults, "%s; lowering locally", why);
        cache_remote_fault(c, why);
    }
    if (r == REMOTE_REJECTED) {
        cache_note(c, &c->stats.remote_rejected, "%s; rejected, the next put replaces it", why);
        lru_count(c, SC_CORRUPT);
    }
    if (r != REMOTE_HIT)
        return TILEC_RT_NOT_FOUND;
    *text = rec_parse(data, len, key, why, sizeof why);
    if (!*text) {
        free(data);
        cache_note(c, &c->stats.remote_rejected, "redis %s: rejected the record %s: %s; the next put replaces it",
                   cache_remote_name(c->remote), key, why);
        lru_count(c, SC_CORRUPT);
        return TILEC_RT_NOT_FOUND;
    }
    if (c->dir)
        (void)cache_publish(c->dir, key, RECORD_SUFFIX, data, len, 0, NULL, NULL, why, sizeof why);
    free(data);
    pthread_mutex_lock(&c->lock);
    (void)rec_store_locked(c, key, *text);
    pthread_mutex_unlock(&c->lock);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_cache_record_get(tilec_cache *c, const char *key, char **text)
{
    if (text)
        *text = NULL;
    if (!c || !text || !rec_key_ok(key))
        return TILEC_RT_INVALID_ARG;
    tilec_rt_status st = TILEC_RT_NOT_FOUND;
    if (!c->disabled) {
        pthread_mutex_lock(&c->lock);
        mem_record *e;
        HASH_FIND_STR(c->records, key, e);
        if (e)
            st = (*text = strdup(e->text)) ? TILEC_RT_OK : TILEC_RT_NOMEM;
        pthread_mutex_unlock(&c->lock);
        if (st == TILEC_RT_NOT_FOUND && c->dir)
            st = rec_from_file(c, key, text);
        if (st == TILEC_RT_NOT_FOUND && c->remote)
            st = rec_from_remote(c, key, text);
    }
    pthread_mutex_lock(&c->lock);
    if (st == TILEC_RT_OK)
        c->stats.record_hits++;
    else if (st == TILEC_RT_NOT_FOUND)
        c->stats.record_misses++;
    pthread_mutex_unlock(&c->lock);
    cache_log(c, "record %s %s", st == TILEC_RT_OK ? "hit" : "miss", key);
    return st;
}

tilec_rt_status tilec_cache_record_put(tilec_cache *c, const char *key, const char *text)
{
    if (!c || !text || !rec_key_ok(key))
        return TILEC_RT_INVALID_ARG;
    size_t n = strnlen(text, TILEC_CACHE_MAX_RECORD + 1);
    if (n > TILEC_CACHE_MAX_RECORD)
        return TILEC_RT_INVALID_ARG;
    if (c->disabled)
        return TILEC_RT_OK;
    pthread_mutex_lock(&c->lock);
    int bad = rec_store_locked(c, key, text);
    tilec_cache_fault_fn fault = c->fault;
    void *user = c->fault_user;
    pthread_mutex_unlock(&c->lock);
    if (bad)
        return TILEC_RT_NOMEM;
    if (!c->dir && !c->remote)
        return TILEC_RT_OK;
    char *data = malloc(HEAD_MAX + n);
    if (!data)
        return TILEC_RT_NOMEM;
    int h = snprintf(data, HEAD_MAX, REC_MAGIC "%s %zu %016" PRIx64 "\n", key, n, tilec_bundle_checksum(text, n));
    memcpy(data + h, text, n);
    char why[ERR_MAX];
    tilec_rt_status st = TILEC_RT_OK;
    if (c->dir && cache_publish(c->dir, key, RECORD_SUFFIX, data, (size_t)h + n, 1, fault, user, why, sizeof why)) {
        cache_note(c, &c->stats.write_failures, "%s", why);
        st = TILEC_CACHE_IO_ERROR;
    } else if (c->dir) {
        cache_log(c, "wrote %s/%s" RECORD_SUFFIX " (%zu bytes)", c->dir, key, (size_t)h + n);
    }
    char rkey[TILEC_CACHE_MAX_KEY + 16];
    remote_key(key, rkey);
    remote_result r = c->remote ? cache_remote_put(c->remote, rkey, data, (size_t)h + n, why, sizeof why)
                                : REMOTE_SKIPPED;
    if (r == REMOTE_FAULT) {
        cache_note(c, &c->stats.remote_faults, "%s; the record is not stored there", why);
        cache_remote_fault(c, why);
    } else if (r == REMOTE_REJECTED) {
        cache_note(c, NULL, "%s", why);
    }
    free(data);
    return st;
}
