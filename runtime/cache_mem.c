/* cache_mem.c: the memory tier (cache_tier.h): one table per entry kind
 * (uthash by key, under the cache's lock) of the kind's objects, deep
 * copies in and out, so that a caller never shares one with the cache. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_tier.h"

/* Our checksum (XXH64) as the table's hash. */
#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = (unsigned)tilec_bundle_checksum((keyptr), (keylen)))

#include "util/hashtable.h"

typedef struct mem_entry {
    char key[TILEC_CACHE_MAX_KEY + 1];
    void *obj;
    const cache_kind *kind; /* how obj is freed */
    UT_hash_handle hh;
} mem_entry;

void cache_mem_clear(tilec_cache *c)
{
    pthread_mutex_lock(&c->lock);
    for (int k = 0; k < CACHE_KINDS; k++) {
        mem_entry *e, *tmp;
        HASH_ITER(hh, c->mem[k], e, tmp)
        {
            HASH_DEL(c->mem[k], e);
            e->kind->free(e->obj);
            free(e);
        }
    }
    pthread_mutex_unlock(&c->lock);
}

static tier_result mem_get(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, cache_value *v,
                           char *why, size_t why_size)
{
    (void)t;
    (void)why;
    (void)why_size;
    pthread_mutex_lock(&c->lock);
    mem_entry *e;
    HASH_FIND_STR(c->mem[k->id], key, e);
    tilec_rt_status st = e ? k->copy(e->obj, &v->obj) : TILEC_RT_NOT_FOUND;
    pthread_mutex_unlock(&c->lock);
    snprintf(v->where, sizeof v->where, "memory");
    return st == TILEC_RT_OK ? TIER_HIT : st == TILEC_RT_NOT_FOUND ? TIER_MISS : TIER_NOMEM;
}

/* A copy of v->obj under key, replacing the entry (a promotion keeps one
 * that a put made meanwhile). */
static tier_result mem_put(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, cache_value *v,
                           int promote, char *why, size_t why_size)
{
    (void)t;
    (void)why;
    (void)why_size;
    void *copy;
    if (k->copy(v->obj, &copy) != TILEC_RT_OK)
        return TIER_NOMEM;
    pthread_mutex_lock(&c->lock);
    mem_entry *e;
    HASH_FIND_STR(c->mem[k->id], key, e);
    if (e && promote) {
        pthread_mutex_unlock(&c->lock);
        k->free(copy);
        return TIER_HIT;
    }
    if (e) {
        k->free(e->obj);
        e->obj = copy;
        pthread_mutex_unlock(&c->lock);
        return TIER_HIT;
    }
    e = calloc(1, sizeof *e);
    if (e) {
        snprintf(e->key, sizeof e->key, "%s", key);
        e->obj = copy;
        e->kind = k;
        HASH_ADD_STR(c->mem[k->id], key, e);
        if (!e->hh.tbl) { /* uthash ran out of memory */
            free(e);
            e = NULL;
        }
    }
    pthread_mutex_unlock(&c->lock);
    if (!e)
        k->free(copy);
    return e ? TIER_HIT : TIER_NOMEM;
}

static void mem_remove(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, const cache_value *v)
{
    (void)t;
    (void)v;
    pthread_mutex_lock(&c->lock);
    mem_entry *e;
    HASH_FIND_STR(c->mem[k->id], key, e);
    if (e) {
        HASH_DEL(c->mem[k->id], e);
        k->free(e->obj);
        free(e);
    }
    pthread_mutex_unlock(&c->lock);
}

const cache_tier cache_tier_memory = {
    .name = "memory",
    .keeps_objects = 1,
    .get = mem_get,
    .put = mem_put,
    .remove = mem_remove,
};
