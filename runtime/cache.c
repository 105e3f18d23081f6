/* cache.c: the kernel cache's handle (open, settings, close, messages)
 * and its bundles: the bundle kind (checked by tilec_bundle_parse) that
 * tilec_cache_get and tilec_cache_put walk the tiers with (cache_tier.c):
 * memory, then <dir>/<key>.tilecbundle, then the Redis tier when there is
 * one; a store goes to every tier. Disk and network I/O run outside the
 * mutex; the mutex guards the tables, the counters and the message. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cache_tier.h"
#include "tilec/log.h"

/* ---- helpers ---- */

static int env_true(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* TILEC_CACHE_MAX_BYTES: a number of bytes with an optional K, M or G
 * (binary); 0 is no bound. -1 when malformed. */
static int parse_bytes(const char *v, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!v || *v < '0' || *v > '9')
        return -1;
    unsigned long long n = strtoull(v, &end, 10);
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (errno || *end || (shift && n > (UINT64_MAX >> shift)))
        return -1;
    *out = (uint64_t)n << shift;
    return 0;
}

/* The settings read at open: the bound, the test identity, the remote tier. */
static void read_settings(tilec_cache *c)
{
    const char *mb = getenv("TILEC_CACHE_MAX_BYTES");
    c->max_bytes = TILEC_CACHE_DEFAULT_MAX_BYTES;
    if (mb && *mb && parse_bytes(mb, &c->max_bytes) != 0) {
        c->max_bytes = TILEC_CACHE_DEFAULT_MAX_BYTES;
        char msg[ERR_MAX];
        cache_say(msg, sizeof msg, "TILEC_CACHE_MAX_BYTES=%.64s is not a size (bytes, or a number with K, M or G); "
                  "using %llu", mb, (unsigned long long)c->max_bytes);
        cache_set_err_locked(c, msg);
    }
    const char *id = getenv("TILEC_CACHE_IDENTITY"); /* for tests only: a rebuilt compiler */
    if (id && *id)
        cache_say(c->identity, sizeof c->identity, "%s", id);
    char why[ERR_MAX];
    c->remote = cache_remote_from_env(why, sizeof why);
    if (why[0]) {
        cache_set_err_locked(c, why);
        cache_say(c->remote_problem, sizeof c->remote_problem, "%s", why);
    }
    else if (c->remote)
        cache_log(c, "remote tier redis %s (%s)", cache_remote_name(c->remote), cache_remote_mode(c->remote));
}

tilec_rt_status tilec_cache_open(const char *dir, tilec_cache **out)
{
    if (!out)
        return TILEC_RT_INVALID_ARG;
    *out = NULL;
    if (dir && !*dir)
        return TILEC_RT_INVALID_ARG;
    tilec_cache *c = calloc(1, sizeof *c);
    if (!c)
        return TILEC_RT_NOMEM;
    if (pthread_mutex_init(&c->lock, NULL) != 0) {
        free(c);
        return TILEC_RT_NOMEM;
    }
    c->log = tilec_log_spec_enables(getenv("TILEC_LOGS"), CACHE_LOG_CHANNEL);
    if (env_true("TILEC_FORCE_DISABLE_CACHES")) {
        c->disabled = 1;
        cache_set_err_locked(c, "caches disabled by TILEC_FORCE_DISABLE_CACHES");
        *out = c;
        return TILEC_RT_OK;
    }
    char why[ERR_MAX];
    c->dir = cdir_resolve(dir, why, sizeof why);
    if (c->dir) {
        cache_log(c, "using %s", c->dir);
        cdir_sweep(c);
        lru_open(c);
    } else {
        char msg[ERR_MAX + 32];
        cache_say(msg, sizeof msg, "%s; caching in memory only", why);
        cache_set_err_locked(c, msg);
    }
    read_settings(c);
    cache_add_tier(c, &cache_tier_memory);
    if (c->dir)
        cache_add_tier(c, &cache_tier_disk);
    if (c->remote)
        cache_add_tier(c, &cache_tier_redis);
    *out = c;
    return TILEC_RT_OK;
}

void tilec_cache_close(tilec_cache *c)
{
    if (!c)
        return;
    cache_mem_clear(c);
    lru_close(c);
    cache_remote_free(c->remote);
    pthread_mutex_destroy(&c->lock);
    free(c->dir);
    free(c);
}

const char *tilec_cache_remote_problem(const tilec_cache *c) { return c ? c->remote_problem : ""; }

tilec_rt_status tilec_cache_remote_ping(tilec_cache *c)
{
    if (!c)
        return TILEC_RT_INVALID_ARG;
    if (!c->remote)
        return TILEC_RT_NOT_FOUND;
    char why[ERR_MAX];
    if (cache_remote_ping(c->remote, why, sizeof why) == REMOTE_HIT)
        return TILEC_RT_OK;
    pthread_mutex_lock(&c->lock);
    cache_say(c->remote_problem, sizeof c->remote_problem, "%s", why);
    pthread_mutex_unlock(&c->lock);
    cache_note(c, NULL, "%s", why);
    return TILEC_RT_IO_ERROR;
}

/* ---- the bundle kind ---- */

static tilec_rt_status bundle_parse(const cache_kind *k, const void *data, size_t len, const char *key, void **obj, char *why,
                                    size_t why_size)
{
    (void)k;
    tilec_bundle *b = NULL;
    tilec_rt_status st = tilec_bundle_parse(data, len, key, &b, why, why_size);
    *obj = b;
    return st;
}

static tilec_rt_status bundle_copy(const void *obj, void **out)
{
    tilec_bundle *b = NULL;
    tilec_rt_status st = tilec_bundle_copy(obj, &b);
    *out = b;
    return st;
}

static void bundle_free(void *obj) { tilec_bundle_free(obj); }

const cache_kind cache_kind_bundle = {
    .id = CACHE_KIND_BUNDLE,
    .suffix = BUNDLE_SUFFIX,
    .remote_prefix = "",
    .log_miss = "miss",
    .reject_what = "miss",
    .local_work = "compiling locally",
    .not_stored = "not stored there",
    .shared_counts = 1,
    .bounded = 1,
    .parse = bundle_parse,
    .copy = bundle_copy,
    .free = bundle_free,
};

tilec_rt_status tilec_cache_get(tilec_cache *c, const char *key, tilec_bundle **out)
{
    if (out)
        *out = NULL;
    if (!c || !out || !cache_key_valid(key))
        return TILEC_RT_INVALID_ARG;
    void *obj;
    tilec_rt_status st = cache_walk_get(c, &cache_kind_bundle, key, &obj);
    *out = obj;
    return st;
}

tilec_rt_status tilec_cache_put(tilec_cache *c, const char *key, const tilec_bundle *b)
{
    if (!c || !b || !cache_key_valid(key))
        return TILEC_RT_INVALID_ARG;
    if (c->disabled)
        return TILEC_RT_OK;
    void *data;
    size_t len;
    tilec_rt_status st = tilec_bundle_serialize(b, key, &data, &len);
    if (st != TILEC_RT_OK) {
        cache_note(c, NULL, "put %s: %s", key,
             st == TILEC_RT_NOMEM ? "out of memory" : "the bundle is malformed (see tilec_bundle_serialize)");
        return st;
    }
    st = cache_walk_put(c, &cache_kind_bundle, key, b, data, len);
    free(data);
    return st;
}

/* ---- queries ---- */

const char *tilec_cache_dir(const tilec_cache *c) { return c ? c->dir : NULL; }

const char *tilec_cache_last_error(const tilec_cache *c) { return c ? c->err : "no cache (NULL)"; }

void tilec_cache_set_fault_hook(tilec_cache *c, tilec_cache_fault_fn fn, void *user)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->fault = fn;
    c->fault_user = user;
    pthread_mutex_unlock(&c->lock);
}
