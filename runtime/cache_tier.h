/* cache_tier.h: the kernel cache as tiers of one interface, walked in
 * order (cache_tier.c). A tier is get/put/remove and its counters: memory
 * (cache_mem.c), the directory (cache_disk.c), Redis (cache_remote.c's
 * cache_tier_redis) and, in tests, any other. An entry kind (a bundle,
 * cache.c; a record, cache_record.c; a multi-kernel choice,
 * choice_entry.c) says how bytes are checked and how its object is
 * copied. One lookup walks the tiers: the first that has a
 * valid value answers, and the tiers before it get a copy (promotion);
 * a value that fails the kind's check is removed from its tier and
 * counted; a tier's fault is noted once, in the walk. A store goes to
 * every tier. Adding a tier (an S3 or HTTP store) is one file of ops and
 * one line where the cache is opened. */
#ifndef TILEC_RUNTIME_CACHE_TIER_H
#define TILEC_RUNTIME_CACHE_TIER_H

#include <stddef.h>
#include <sys/types.h>

#include "runtime/cache_shared.h"

/* A kind of entry: bundles, records and multi-kernel choices. */
typedef struct cache_kind cache_kind;
struct cache_kind {
    cache_kind_id id;
    const char *file_prefix;   /* before the key in the directory: NULL (none), "multikernel-" */
    const char *suffix;        /* the file's suffix in the directory */
    const char *remote_prefix; /* before the key in a remote tier: "", "record-" */
    const char *log_hit;       /* NULL: "local hit"/"remote hit" by the tier; else this ("record hit") */
    const char *log_miss;      /* "miss", "record miss" */
    const char *reject_what;   /* before a rejected file's message: "miss", "record miss" */
    const char *local_work;    /* after a remote fault on get: "compiling locally" */
    const char *not_stored;    /* after a remote fault on put: "not stored there" */
    int shared_counts;         /* hits, misses and writes count in the directory's counters */
    int bounded;               /* the directory's size bound applies (lru_enforce after a write) */
    /* key's object from its bytes: TILEC_RT_OK, TILEC_RT_NOMEM, or another
     * status with why (the value is rejected); k is this kind (its arg) */
    tilec_rt_status (*parse)(const cache_kind *k, const void *data, size_t len, const char *key, void **obj, char *why,
                             size_t why_size);
    /* a deep copy: TILEC_RT_OK or TILEC_RT_NOMEM */
    tilec_rt_status (*copy)(const void *obj, void **out);
    void (*free)(void *obj);
    const void *arg; /* what parse checks against beyond the key (a choice's variant count), or NULL */
};

extern const cache_kind cache_kind_bundle; /* cache.c */
extern const cache_kind cache_kind_record; /* cache_record.c */
extern const cache_kind cache_kind_choice; /* choice_entry.c (its arg: the kernel's variant count) */

typedef enum {
    TIER_HIT,      /* get: a value; put: stored */
    TIER_MISS,     /* get: the tier does not have it */
    TIER_REJECTED, /* the tier refused the value (foreign, unsigned, too big); why says how */
    TIER_FAULT,    /* the tier could not be used; why says how */
    TIER_SKIPPED,  /* nothing done (resting after a fault, a read-only tier) */
    TIER_NOMEM,
} tier_result;

/* A value between the walk and a tier: the kind's object (a tier that
 * keeps objects) and its bytes (a tier that keeps bytes); where a tier
 * found it, for messages and for removing it again. */
typedef struct cache_value {
    void *obj;
    void *data;
    size_t len;
    char where[PATH_CAP]; /* "memory", a file's path, "redis NAME" */
    dev_t dev;            /* the file read (cache_disk.c) */
    ino_t ino;
} cache_value;

typedef struct cache_tier cache_tier;
struct cache_tier {
    const char *name;  /* "memory", "disk", "redis": tilec_cache_tier_stats */
    int remote;        /* a hit is a remote hit; its faults are the remote tier's problem */
    int keeps_objects; /* get gives (and put takes) v->obj; else v->data, v->len */
    /* The value of key: TIER_HIT with v filled (the caller frees v->obj or
     * v->data), or another result with why. */
    tier_result (*get)(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, cache_value *v,
                       char *why, size_t why_size);
    /* Store v under key. promote: a copy of a value found in a later tier
     * (not durable, no fault hook, an entry already there is kept). */
    tier_result (*put)(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, cache_value *v,
                       int promote, char *why, size_t why_size);
    /* Remove the value get gave in v (NULL: the tier cannot; the next put
     * replaces it). */
    void (*remove)(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, const cache_value *v);
    void *state; /* the tier's own (a test tier's) */
};

extern const cache_tier cache_tier_memory; /* cache_mem.c */
extern const cache_tier cache_tier_disk;   /* cache_disk.c */
extern const cache_tier cache_tier_redis;  /* cache_remote.c */

/* Append a tier after the others (open: memory, disk when there is a
 * directory, redis when configured; tests add their own). 0, or -1 when
 * the cache has CACHE_MAX_TIERS. */
int cache_add_tier(tilec_cache *c, const cache_tier *t);

/* The walks: key's object (the caller's copy) from the first tier that
 * has a valid value, TILEC_RT_NOT_FOUND, or TILEC_RT_NOMEM; and a store
 * of obj (its bytes data, len) in every tier: TILEC_RT_OK,
 * TILEC_RT_NOMEM or TILEC_CACHE_IO_ERROR (a tier that is not remote
 * failed; a remote tier's faults are noted, never returned). */
tilec_rt_status cache_walk_get(tilec_cache *c, const cache_kind *k, const char *key, void **obj);
/* cache_walk_get, and more of what the walk saw: from (NULL or
 * ignored) the name of the tier that answered ("memory", "disk",
 * "redis"; NULL on a miss), refused (NULL or ignored) which value the
 * walk refused last and why ("" when none): "<where>: <why>", where a
 * remote tier's is "redis NAME, <its key>". */
tilec_rt_status cache_walk_find(tilec_cache *c, const cache_kind *k, const char *key, void **obj, const char **from,
                                char *refused, size_t refused_size);
tilec_rt_status cache_walk_put(tilec_cache *c, const cache_kind *k, const char *key, const void *obj, const void *data,
                               size_t len);

#endif
