/* cache_tier.c: the one lookup and the one store of the kernel cache
 * (cache_tier.h): the tiers walked in order, the kind's check of what a
 * tier holds, promotion of a hit into the tiers before it, and every
 * fault, rejection and counter handled here, whatever the tier or the
 * kind. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/cache_tier.h"

int cache_add_tier(tilec_cache *c, const cache_tier *t)
{
    if (c->ntiers >= CACHE_MAX_TIERS)
        return -1;
    c->tiers[c->ntiers++] = t;
    return 0;
}

/* A fault of a remote tier (any lookup or store): kept as the tier's
 * problem (tilec_cache_remote_problem) and counted in the directory's
 * remote faults. */
static void remote_fault(tilec_cache *c, const char *why)
{
    pthread_mutex_lock(&c->lock);
    cache_say(c->remote_problem, sizeof c->remote_problem, "%s", why);
    pthread_mutex_unlock(&c->lock);
    lru_count(c, SC_REMOTE_FAULTS);
}

typedef enum { CT_HITS, CT_MISSES, CT_REJECTED, CT_FAULTS, CT_WRITES } tier_counter;

static uint64_t *counter(tilec_cache *c, const cache_kind *k, uint32_t slot, tier_counter which)
{
    tilec_cache_tier_stats *s = &c->ts[k->id][slot];
    uint64_t *f[] = {&s->hits, &s->misses, &s->rejected, &s->faults, &s->writes};
    return f[which];
}

static void bump(tilec_cache *c, uint64_t *n)
{
    pthread_mutex_lock(&c->lock);
    (*n)++;
    pthread_mutex_unlock(&c->lock);
}

/* A value the tier refused or the kind's check failed (by_tier: the tier
 * said so in why): removed where the tier can, counted, noted. */
static void reject(tilec_cache *c, const cache_kind *k, uint32_t slot, const char *key, const cache_value *v,
                   const char *why, int by_tier, char *refused, size_t refused_size)
{
    const cache_tier *t = c->tiers[slot];
    if (refused && t->remote)
        cache_say(refused, refused_size, "%s, %s%s: %s", v->where, k->remote_prefix, key, why);
    else if (refused)
        cache_say(refused, refused_size, "%s: %s", v->where, why);
    uint64_t *n = counter(c, k, slot, CT_REJECTED);
    if (t->remove) {
        t->remove(t, c, k, key, v);
        cache_note(c, n, "%s: rejected %s: %s; removed", k->reject_what, v->where, why);
    } else if (by_tier) {
        cache_note(c, n, "%s; rejected, the next put replaces it", why);
    } else {
        cache_note(c, n, "%s: rejected the value of %s: %s; the next put replaces it", v->where, key, why);
    }
    lru_count(c, SC_CORRUPT);
}

static void fault(tilec_cache *c, const cache_kind *k, uint32_t slot, const char *why, const char *then)
{
    const cache_tier *t = c->tiers[slot];
    if (t->remote) {
        cache_note(c, counter(c, k, slot, CT_FAULTS), "%s; %s", why, then);
        remote_fault(c, why);
    } else {
        cache_note(c, counter(c, k, slot, CT_FAULTS), "%s", why);
    }
}

/* A copy of a hit in slot into the tiers before it, each in the form it
 * keeps (best effort: a tier that cannot take it asks the next get again). */
static void promote(tilec_cache *c, const cache_kind *k, const char *key, uint32_t slot, const cache_value *v)
{
    for (uint32_t j = 0; j < slot; j++) {
        const cache_tier *t = c->tiers[j];
        if (!t->keeps_objects && !v->data)
            continue;
        cache_value p = {.obj = v->obj, .data = v->data, .len = v->len};
        char why[ERR_MAX];
        (void)t->put(t, c, k, key, &p, 1, why, sizeof why);
    }
}

tilec_rt_status cache_walk_get(tilec_cache *c, const cache_kind *k, const char *key, void **obj)
{
    return cache_walk_find(c, k, key, obj, NULL, NULL, 0);
}

tilec_rt_status cache_walk_find(tilec_cache *c, const cache_kind *k, const char *key, void **obj, const char **from,
                                char *refused, size_t refused_size)
{
    *obj = NULL;
    if (from)
        *from = NULL;
    if (refused && refused_size)
        refused[0] = 0;
    for (uint32_t s = 0; s < c->ntiers; s++) {
        const cache_tier *t = c->tiers[s];
        cache_value v;
        memset(&v, 0, sizeof v);
        char why[ERR_MAX] = "";
        tier_result r = t->get(t, c, k, key, &v, why, sizeof why);
        if (r == TIER_NOMEM)
            return TILEC_RT_NOMEM;
        if (r == TIER_MISS)
            bump(c, counter(c, k, s, CT_MISSES));
        if (r == TIER_FAULT)
            fault(c, k, s, why, k->local_work);
        if (r == TIER_REJECTED)
            reject(c, k, s, key, &v, why, 1, refused, refused_size);
        if (r != TIER_HIT)
            continue;
        if (!t->keeps_objects) {
            tilec_rt_status st = k->parse(k, v.data, v.len, key, &v.obj, why, sizeof why);
            if (st == TILEC_RT_NOMEM) {
                free(v.data);
                cache_note(c, NULL, "cannot read %s: %s", v.where, why);
                return st;
            }
            if (st != TILEC_RT_OK) {
                reject(c, k, s, key, &v, why, 0, refused, refused_size);
                free(v.data);
                continue;
            }
        }
        promote(c, k, key, s, &v);
        free(v.data);
        pthread_mutex_lock(&c->lock);
        c->ts[k->id][s].hits++;
        c->kind_hits[k->id]++;
        pthread_mutex_unlock(&c->lock);
        if (k->shared_counts)
            lru_count(c, t->remote ? SC_REMOTE_HITS : SC_LOCAL_HITS);
        cache_log(c, "%s %s (%s)", k->log_hit ? k->log_hit : t->remote ? "remote hit" : "local hit", key, v.where);
        *obj = v.obj;
        if (from)
            *from = t->name;
        return TILEC_RT_OK;
    }
    bump(c, &c->kind_misses[k->id]);
    if (k->shared_counts)
        lru_count(c, SC_MISSES);
    cache_log(c, "%s %s%s", k->log_miss, key, c->disabled ? " (caches disabled)" : c->dir ? "" : " (memory only)");
    return TILEC_RT_NOT_FOUND;
}

tilec_rt_status cache_walk_put(tilec_cache *c, const cache_kind *k, const char *key, const void *obj, const void *data,
                               size_t len)
{
    tilec_rt_status st = TILEC_RT_OK;
    for (uint32_t s = 0; s < c->ntiers; s++) {
        const cache_tier *t = c->tiers[s];
        cache_value v = {.obj = (void *)obj, .data = (void *)data, .len = len};
        char why[ERR_MAX] = "";
        tier_result r = t->put(t, c, k, key, &v, 0, why, sizeof why);
        if (r == TIER_NOMEM) {
            cache_note(c, NULL, "put %s: out of memory", key);
            return TILEC_RT_NOMEM;
        }
        if (r == TIER_HIT) {
            bump(c, counter(c, k, s, CT_WRITES));
            if (k->shared_counts && !t->remote && !t->keeps_objects)
                lru_count(c, SC_WRITES);
        }
        if (r == TIER_FAULT) {
            fault(c, k, s, why, k->not_stored);
            if (!t->remote)
                st = TILEC_CACHE_IO_ERROR;
        }
        if (r == TIER_REJECTED)
            cache_note(c, NULL, "%s", why);
    }
    return st;
}

tilec_rt_status tilec_cache_get_tier_stats(const tilec_cache *c, uint32_t i, tilec_cache_tier_stats *s)
{
    if (!c || !s)
        return TILEC_RT_INVALID_ARG;
    memset(s, 0, sizeof *s);
    if (i >= c->ntiers)
        return TILEC_RT_NOT_FOUND;
    tilec_cache *m = (tilec_cache *)c; /* the lock is not part of the value */
    pthread_mutex_lock(&m->lock);
    for (int k = 0; k < CACHE_KINDS; k++) {
        const tilec_cache_tier_stats *t = &c->ts[k][i];
        s->hits += t->hits;
        s->misses += t->misses;
        s->rejected += t->rejected;
        s->faults += t->faults;
        s->writes += t->writes;
    }
    pthread_mutex_unlock(&m->lock);
    s->name = c->tiers[i]->name;
    return TILEC_RT_OK;
}

/* The slot of tier t, or -1. */
static int slot_of(const tilec_cache *c, const cache_tier *t)
{
    for (uint32_t i = 0; i < c->ntiers; i++)
        if (c->tiers[i] == t)
            return (int)i;
    return -1;
}

void tilec_cache_get_stats(const tilec_cache *c, tilec_cache_stats *s)
{
    if (!s)
        return;
    memset(s, 0, sizeof *s);
    if (!c)
        return;
    tilec_cache *m = (tilec_cache *)c;
    int mem = slot_of(c, &cache_tier_memory), disk = slot_of(c, &cache_tier_disk),
        redis = slot_of(c, &cache_tier_redis);
    tilec_cache_tier_stats none = {0};
    pthread_mutex_lock(&m->lock);
    *s = c->stats;
    const tilec_cache_tier_stats *b = c->ts[CACHE_KIND_BUNDLE], *r = c->ts[CACHE_KIND_RECORD];
    const tilec_cache_tier_stats *bm = mem < 0 ? &none : &b[mem], *bd = disk < 0 ? &none : &b[disk],
                                 *rd = disk < 0 ? &none : &r[disk], *br = redis < 0 ? &none : &b[redis],
                                 *rr = redis < 0 ? &none : &r[redis];
    s->mem_hits = bm->hits;
    s->disk_hits = bd->hits;
    s->misses = c->kind_misses[CACHE_KIND_BUNDLE];
    s->corrupt = bd->rejected + rd->rejected;
    s->writes = bd->writes;
    s->write_failures = bd->faults + rd->faults;
    s->remote_hits = br->hits;
    s->remote_misses = br->misses;
    s->remote_rejected = br->rejected + rr->rejected;
    s->remote_faults = br->faults + rr->faults;
    s->remote_writes = br->writes;
    s->record_hits = c->kind_hits[CACHE_KIND_RECORD];
    s->record_misses = c->kind_misses[CACHE_KIND_RECORD];
    pthread_mutex_unlock(&m->lock);
}
