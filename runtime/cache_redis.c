/* cache_redis.c: the Redis tier (cache_tier.h) over the client of
 * cache_remote.c: an entry under its kind's prefix and key; the client's
 * results mapped onto the tiers' (a resting or read-only tier is
 * skipped). */
#include <stdio.h>

#include "runtime/cache_tier.h"

/* The Redis key of an entry: the kind's prefix, then the key. */
static void tier_key(const cache_kind *k, const char *key, char out[TILEC_CACHE_MAX_KEY + 16])
{
    snprintf(out, TILEC_CACHE_MAX_KEY + 16, "%s%s", k->remote_prefix, key);
}

static tier_result of_remote(remote_result r)
{
    switch (r) {
    case REMOTE_HIT: return TIER_HIT;
    case REMOTE_MISS: return TIER_MISS;
    case REMOTE_REJECTED: return TIER_REJECTED;
    case REMOTE_FAULT: return TIER_FAULT;
    case REMOTE_RESTING:
    case REMOTE_SKIPPED: break;
    }
    return TIER_SKIPPED;
}

static tier_result redis_get(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, cache_value *v,
                             char *why, size_t why_size)
{
    (void)t;
    char rkey[TILEC_CACHE_MAX_KEY + 16];
    tier_key(k, key, rkey);
    snprintf(v->where, sizeof v->where, "redis %s", cache_remote_name(c->remote));
    return of_remote(cache_remote_get(c->remote, rkey, &v->data, &v->len, why, why_size));
}

static tier_result redis_put(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, cache_value *v,
                             int promote, char *why, size_t why_size)
{
    (void)t;
    (void)promote;
    char rkey[TILEC_CACHE_MAX_KEY + 16];
    tier_key(k, key, rkey);
    snprintf(v->where, sizeof v->where, "redis %s", cache_remote_name(c->remote));
    tier_result r = of_remote(cache_remote_put(c->remote, rkey, v->data, v->len, why, why_size));
    if (r == TIER_HIT)
        cache_log(c, "stored %s in %s (%zu bytes)", rkey, v->where, v->len);
    return r; /* TIER_SKIPPED: a read-only tier, said once at open */
}

const cache_tier cache_tier_redis = {
    .name = "redis",
    .remote = 1,
    .get = redis_get,
    .put = redis_put,
};
