/* cache_shared.h: the kernel cache's handle and what its files share (no
 * one file's header; the files form layers, lowest first):
 * cache_note.c (messages), cache_dir.c (finding and checking the
 * directory, sweeping stale files, reading a file whole), cache_mem.c (the
 * memory tier), cache_lru.c (the size bound, least-recently-used eviction,
 * the directory's shared counters, list, prune, clear), cache_disk.c (the
 * directory's tier), cache_redis.c (the Redis tier over cache_remote.c's
 * client), cache_tier.c (the tiers walked in order, cache_tier.h),
 * cache_record.c (the record kind), cache.c (open, close, the bundle
 * kind); cache_key.c (keys). */
#ifndef TILEC_RUNTIME_CACHE_SHARED_H
#define TILEC_RUNTIME_CACHE_SHARED_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/cache_remote.h"
#include "tilec/cache.h"

#define CACHE_LOG_CHANNEL "cache"
#define BUNDLE_SUFFIX ".tilecbundle"
#define RECORD_SUFFIX ".tilecrecord"
#define TMP_SUFFIX ".tmp.XXXXXX"

enum { ERR_MAX = 1024, PATH_CAP = 4096 };

/* Reading a file is not using it: last use is set explicitly (lru_touch),
 * and relatime mounts would otherwise move it on a read by list or prune. */
#ifdef O_NOATIME
#define CACHE_O_NOATIME O_NOATIME
#else
#define CACHE_O_NOATIME 01000000 /* Linux's value; POSIX has no such flag */
#endif

/* The counters kept in the directory (.tilec-stats), for every process
 * that uses it. ORDER SHARED_COUNTERS: the file's layout; append only. */
typedef enum {
    SC_LOCAL_HITS = 0,
    SC_REMOTE_HITS,
    SC_MISSES,
    SC_WRITES,
    SC_EVICTED,
    SC_CORRUPT,
    SC_REMOTE_FAULTS,
    SC_COUNT
} shared_counter;

struct mem_entry;
struct cache_tier;

/* The kinds of entry (cache_tier.h's cache_kind: bundles, records, the
 * multi-kernel's choices) and the most tiers. */
typedef enum { CACHE_KIND_BUNDLE, CACHE_KIND_RECORD, CACHE_KIND_CHOICE, CACHE_KINDS } cache_kind_id;
enum { CACHE_MAX_TIERS = 8 };

struct tilec_cache {
    pthread_mutex_t lock; /* guards everything below but dir, log, max_bytes, identity, shared and remote */
    int disabled;         /* TILEC_FORCE_DISABLE_CACHES */
    int log;              /* TILEC_LOGS enables "cache" */
    char *dir;            /* NULL: disabled or memory only */
    uint64_t max_bytes;   /* the bound on the directory's bundles; 0: none */
    char identity[65];    /* the compiler identity in keys */
    volatile uint64_t *shared; /* the directory's counters (mapped .tilec-stats), or NULL */
    cache_remote *remote; /* the Redis tier, or NULL */
    struct mem_entry *mem[CACHE_KINDS]; /* the memory tier's tables (cache_mem.c) */
    const struct cache_tier *tiers[CACHE_MAX_TIERS]; /* walked in order (cache_tier.c) */
    uint32_t ntiers;
    tilec_cache_tier_stats ts[CACHE_KINDS][CACHE_MAX_TIERS]; /* each kind's counters in each tier */
    uint64_t kind_hits[CACHE_KINDS], kind_misses[CACHE_KINDS]; /* lookups of each kind */
    tilec_cache_stats stats; /* the counters of no tier (sweeps, evictions); the rest come from ts */
    tilec_cache_fault_fn fault;
    void *fault_user;
    char err[ERR_MAX];
    char remote_problem[ERR_MAX]; /* TILEC_CACHE_REDIS malformed, or the tier's last fault; "" */
};

/* cache_note.c: snprintf that may truncate: messages are cut, never
 * overrun. */
void cache_say(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *cache_errtext(int e, char *buf, size_t n);
/* One "tilec cache: ..." line on stderr when the channel is on. */
void cache_log(const tilec_cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record msg as the last error and log it (the caller holds the lock). */
void cache_set_err_locked(tilec_cache *c, const char *msg);
/* Is k a key (not NULL, tilec_cache_key_ok)? */
int cache_key_valid(const char *k);
/* Count an event (counter may be NULL), record its message as the last
 * error and log it. */
void cache_note(tilec_cache *c, uint64_t *counter, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* cache_dir.c: read the whole regular file at path (at most
 * TILEC_BUNDLE_MAX_SIZE bytes, not through a link, never blocking on a
 * FIFO) into a malloc'd *data; dev/ino identify what was read. */
typedef enum { RD_OK, RD_MISSING, RD_UNREADABLE, RD_CORRUPT } rd_result;
rd_result cache_read_capped(const char *path, void **data, size_t *len, dev_t *dev, ino_t *ino, char *why,
                            size_t why_size);
/* cache_disk.c: read <dir>/<key><suffix> (path: PATH_CAP bytes) for parsing: RD_OK
 * with its bytes, RD_MISSING (an unreadable file too, noted), or
 * RD_CORRUPT with dev/ino to remove it by (cache_reject). */
rd_result cache_read_entry(tilec_cache *c, const char *key, const char *suffix, char *path, void **data, size_t *len,
                           dev_t *dev, ino_t *ino, char *why, size_t why_size);
/* cache_mem.c: empty the memory tier (every kind). */
void cache_mem_clear(tilec_cache *c);
/* Publish data as <dir>/<key><suffix> by a temporary file, fsync (when
 * durable) and rename. 0, or -1 with why set and nothing left behind. */
int cache_publish(const char *dir, const char *key, const char *suffix, const void *data, size_t len, int durable,
                  tilec_cache_fault_fn fault, void *user, char *why, size_t why_size);

/* cache_dir.c: the directory to use, made and checked (a malloc'd
 * absolute path), or NULL and why (the cache is then memory only). */
char *cdir_resolve(const char *dir, char *why, size_t why_size);
/* At most once an hour per directory: remove killed writers' temporary
 * files, the multi-kernel choice files over TILEC_CACHE_MAX_CHOICES and
 * the records over TILEC_CACHE_MAX_RECORDS. */
void cdir_sweep(tilec_cache *c);
/* Whether a directory entry is a multi-kernel choice file (record 0) or
 * a record file (record 1). */
int cdir_is_small(const char *name, int record);
/* Remove path if it is still the file (dev, ino) that was read. */
void cdir_remove_if_same(const char *path, dev_t dev, ino_t ino);

/* cache_lru.c */
/* Map the directory's counters (made on first use); no counters when the
 * file cannot be made or is foreign. */
void lru_open(tilec_cache *c);
void lru_close(tilec_cache *c);
/* Add one to a shared counter (nothing without the file). */
void lru_count(tilec_cache *c, shared_counter which);
/* A bundle file was used: mark it so eviction takes it last. */
void lru_touch(const char *path);
/* After a write: when the directory's bundles exceed max_bytes, remove
 * the least recently used (never `keep`, the one just written, unless it
 * alone is over the bound) down to 90% of it. One process evicts at a
 * time; the others skip. */
void lru_enforce(tilec_cache *c, const char *keep);

#endif
