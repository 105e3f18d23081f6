/* cache_lru.c: the cache directory as a bounded store. Every use of a
 * bundle file sets its access time (explicitly: mounts with noatime or
 * relatime would not), so the access time orders entries by last use;
 * after a write, when the bundles exceed the bound (TILEC_CACHE_MAX_BYTES),
 * the least recently used are removed down to 90% of it, by one process at
 * a time (a non-blocking lock on .tilec-lock; the others skip). Removing a
 * file a reader has open is safe on POSIX: the reader reads it whole
 * through its descriptor; a reader that comes after finds no file (a
 * miss). Also the counters every process adds to (.tilec-stats, a page
 * mapped shared, atomic adds) and list, prune, clear. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cache_shared.h"

#define STATS_FILE ".tilec-stats"
#define LOCK_FILE ".tilec-lock"
#define STATS_MAGIC 0x3153544345544954ull /* "TILECTS1" */
enum { STATS_SIZE = 4096 };

/* ---- shared counters ---- */

void lru_open(tilec_cache *c)
{
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/" STATS_FILE, c->dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    struct stat st;
    void *m = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_size == STATS_SIZE || (st.st_size == 0 && ftruncate(fd, STATS_SIZE) == 0)))
        m = mmap(NULL, STATS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return;
    uint64_t *w = m, zero = 0;
    if (__atomic_compare_exchange_n(&w[0], &zero, STATS_MAGIC, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
        zero == STATS_MAGIC) {
        c->shared = w + 1;
        return;
    }
    munmap(m, STATS_SIZE); /* a foreign file: no shared counters */
}

void lru_close(tilec_cache *c)
{
    if (c->shared)
        munmap((void *)(c->shared - 1), STATS_SIZE);
    c->shared = NULL;
}

void lru_count(tilec_cache *c, shared_counter which)
{
    if (c->shared)
        __atomic_fetch_add(&c->shared[which], 1, __ATOMIC_RELAXED);
}

static void lru_add(tilec_cache *c, shared_counter which, uint64_t n)
{
    if (c->shared)
        __atomic_fetch_add(&c->shared[which], n, __ATOMIC_RELAXED);
}

static uint64_t lru_read(const tilec_cache *c, shared_counter which)
{
    return c->shared ? __atomic_load_n(&c->shared[which], __ATOMIC_RELAXED) : 0;
}

void lru_touch(const char *path)
{
    const struct timespec t[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    (void)utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW);
}

/* ---- scanning the directory ---- */

typedef struct entry {
    char key[TILEC_CACHE_MAX_KEY + 1];
    uint64_t bytes;
    struct timespec used, made;
    dev_t dev;
    ino_t ino;
} entry;

/* The key of a bundle file name, or 0. */
static int bundle_name(const char *n, char key[TILEC_CACHE_MAX_KEY + 1])
{
    size_t l = strlen(n), sl = sizeof BUNDLE_SUFFIX - 1;
    if (l <= sl || strcmp(n + l - sl, BUNDLE_SUFFIX) || !tilec_cache_key_ok(n, l - sl))
        return 0;
    memcpy(key, n, l - sl);
    key[l - sl] = 0;
    return 1;
}

/* Every bundle file of the directory. 0, or -1 with errno. */
static int scan(const char *dir, entry **out, size_t *n, uint64_t *total)
{
    *out = NULL;
    *n = 0;
    *total = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    size_t cap = 0;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)) != NULL) {
        char key[TILEC_CACHE_MAX_KEY + 1];
        if (!bundle_name(e->d_name, key) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (*n == cap) {
            entry *w = realloc(*out, (cap = cap ? cap * 2 : 64) * sizeof **out);
            if (!w) {
                closedir(d);
                free(*out);
                *out = NULL;
                errno = ENOMEM;
                return -1;
            }
            *out = w;
        }
        entry *x = &(*out)[(*n)++];
        memcpy(x->key, key, sizeof key);
        x->bytes = (uint64_t)st.st_size;
        x->used = st.st_atim;
        x->made = st.st_mtim;
        x->dev = st.st_dev;
        x->ino = st.st_ino;
        *total += x->bytes;
    }
    closedir(d);
    return 0;
}

static int ts_cmp(struct timespec a, struct timespec b)
{
    return a.tv_sec != b.tv_sec ? (a.tv_sec < b.tv_sec ? -1 : 1) : (a.tv_nsec > b.tv_nsec) - (a.tv_nsec < b.tv_nsec);
}

static int oldest_first(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    int r = ts_cmp(x->used, y->used);
    return r ? r : strcmp(x->key, y->key);
}

static void remove_entry(tilec_cache *c, const entry *x)
{
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/%s" BUNDLE_SUFFIX, c->dir, x->key);
    cdir_remove_if_same(path, x->dev, x->ino);
}

/* Remove the least recently used entries of v (sorted oldest first) until
 * *total <= target, never `keep`. Returns how many. */
static uint64_t evict_to(tilec_cache *c, entry *v, size_t n, uint64_t *total, uint64_t target, const char *keep,
                         uint64_t *freed)
{
    uint64_t removed = 0;
    for (size_t i = 0; i < n && *total > target; i++) {
        if (keep && !strcmp(v[i].key, keep))
            continue;
        remove_entry(c, &v[i]);
        *total -= v[i].bytes;
        *freed += v[i].bytes;
        v[i].bytes = 0;
        removed++;
    }
    return removed;
}

/* The directory's lock, taken without waiting: its descriptor, or -1. */
static int lock_dir(const tilec_cache *c, int wait)
{
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/" LOCK_FILE, c->dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 && flock(fd, wait ? LOCK_EX : LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static void count_evicted(tilec_cache *c, uint64_t n, uint64_t freed, uint64_t bound)
{
    if (!n)
        return;
    pthread_mutex_lock(&c->lock);
    c->stats.evicted += n;
    pthread_mutex_unlock(&c->lock);
    lru_add(c, SC_EVICTED, n);
    cache_log(c, "evicted %llu least recently used entries (%llu bytes) to stay under %llu bytes",
              (unsigned long long)n, (unsigned long long)freed, (unsigned long long)bound);
}

void lru_enforce(tilec_cache *c, const char *keep)
{
    if (!c->dir || !c->max_bytes)
        return;
    int lk = lock_dir(c, 0);
    if (lk < 0)
        return; /* another process is evicting */
    entry *v;
    size_t n;
    uint64_t total, freed = 0, removed = 0;
    if (scan(c->dir, &v, &n, &total) == 0 && total > c->max_bytes) {
        qsort(v, n, sizeof *v, oldest_first);
        removed = evict_to(c, v, n, &total, c->max_bytes - c->max_bytes / 10, keep, &freed);
        if (total > c->max_bytes) /* keep alone is over the bound */
            removed += evict_to(c, v, n, &total, c->max_bytes, NULL, &freed);
    }
    free(v);
    close(lk);
    count_evicted(c, removed, freed, c->max_bytes);
}

/* ---- the public calls ---- */

uint64_t tilec_cache_max_bytes(const tilec_cache *c) { return c ? c->max_bytes : 0; }

const char *tilec_cache_remote(const tilec_cache *c) { return c ? cache_remote_name(c->remote) : NULL; }

const char *tilec_cache_remote_mode(const tilec_cache *c) { return c ? cache_remote_mode(c->remote) : NULL; }

uint64_t tilec_cache_remote_bytes_read(const tilec_cache *c)
{
    return c && c->remote ? cache_remote_bytes_in(c->remote) : 0;
}

/* The directory's bundles, for the calls that need a directory. */
typedef struct listing {
    entry *v;
    size_t n;
    uint64_t total;
} listing;

static tilec_rt_status need_dir(tilec_cache *c, listing *ls)
{
    entry **v = &ls->v;
    size_t *n = &ls->n;
    uint64_t *total = &ls->total;
    if (!c->dir) {
        cache_note(c, NULL, "no cache directory (%s)", c->disabled ? "caches disabled" : "memory only");
        return TILEC_RT_NOT_FOUND;
    }
    if (scan(c->dir, v, n, total) != 0) {
        char eb[128];
        int e = errno;
        cache_note(c, NULL, "cannot read cache directory %s: %s", c->dir, cache_errtext(e, eb, sizeof eb));
        return e == ENOMEM ? TILEC_RT_NOMEM : TILEC_RT_IO_ERROR;
    }
    return TILEC_RT_OK;
}

tilec_rt_status tilec_cache_usage_get(tilec_cache *c, tilec_cache_usage *u)
{
    if (!c || !u)
        return TILEC_RT_INVALID_ARG;
    memset(u, 0, sizeof *u);
    listing ls;
    tilec_rt_status st = need_dir(c, &ls);
    if (st != TILEC_RT_OK)
        return st;
    u->bytes = ls.total;
    u->entries = ls.n;
    u->max_bytes = c->max_bytes;
    for (const entry *x = ls.v; x < ls.v + ls.n; x++) {
        if (!u->oldest_use || x->used.tv_sec < u->oldest_use)
            u->oldest_use = x->used.tv_sec;
        if (x->used.tv_sec > u->newest_use)
            u->newest_use = x->used.tv_sec;
    }
    free(ls.v);
    u->local_hits = lru_read(c, SC_LOCAL_HITS);
    u->remote_hits = lru_read(c, SC_REMOTE_HITS);
    u->misses = lru_read(c, SC_MISSES);
    u->writes = lru_read(c, SC_WRITES);
    u->evicted = lru_read(c, SC_EVICTED);
    u->corrupt = lru_read(c, SC_CORRUPT);
    u->remote_faults = lru_read(c, SC_REMOTE_FAULTS);
    return TILEC_RT_OK;
}

/* The kernel count from a bundle file's header, or 0. */
static uint32_t header_kernels(const char *dir, const char *key)
{
    char path[PATH_CAP];
    uint8_t h[TILEC_BUNDLE_HEADER_SIZE];
    snprintf(path, sizeof path, "%s/%s" BUNDLE_SUFFIX, dir, key);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | CACHE_O_NOATIME);
    if (fd < 0)
        return 0;
    ssize_t got = pread(fd, h, sizeof h, 0);
    close(fd);
    if (got != (ssize_t)sizeof h || memcmp(h, TILEC_BUNDLE_MAGIC, 8))
        return 0;
    return (uint32_t)h[36] | (uint32_t)h[37] << 8 | (uint32_t)h[38] << 16 | (uint32_t)h[39] << 24;
}

tilec_rt_status tilec_cache_list(tilec_cache *c, tilec_cache_entry **out, size_t *count)
{
    if (out)
        *out = NULL;
    if (count)
        *count = 0;
    if (!c || !out || !count)
        return TILEC_RT_INVALID_ARG;
    listing ls;
    tilec_rt_status st = need_dir(c, &ls);
    if (st != TILEC_RT_OK)
        return st;
    entry *v = ls.v;
    size_t n = ls.n;
    if (n) /* v may be NULL */
        qsort(v, n, sizeof *v, oldest_first);
    tilec_cache_entry *r = calloc(n ? n : 1, sizeof *r);
    if (!r) {
        free(v);
        return TILEC_RT_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const entry *x = &v[n - 1 - i];
        memcpy(r[i].key, x->key, sizeof r[i].key);
        r[i].bytes = x->bytes;
        r[i].kernels = header_kernels(c->dir, x->key);
        r[i].created = x->made.tv_sec;
        r[i].last_use = x->used.tv_sec;
    }
    free(v);
    *out = r;
    *count = n;
    return TILEC_RT_OK;
}

/* Whether the entry's file is a valid bundle of its key. */
static int entry_valid(const tilec_cache *c, const entry *x)
{
    char path[PATH_CAP], why[ERR_MAX];
    snprintf(path, sizeof path, "%s/%s" BUNDLE_SUFFIX, c->dir, x->key);
    void *data;
    size_t len;
    dev_t dev;
    ino_t ino;
    if (cache_read_capped(path, &data, &len, &dev, &ino, why, sizeof why) != RD_OK)
        return 0;
    tilec_bundle *b = NULL;
    tilec_rt_status st = tilec_bundle_parse(data, len, x->key, &b, why, sizeof why);
    free(data);
    tilec_bundle_free(b);
    return st == TILEC_RT_OK || st == TILEC_RT_NOMEM;
}

/* Say how many files and bytes went (either pointer may be NULL). */
static void tell(uint64_t *removed, uint64_t *freed, uint64_t rm, uint64_t fr)
{
    if (removed)
        *removed = rm;
    if (freed)
        *freed = fr;
}

tilec_rt_status tilec_cache_prune(tilec_cache *c, uint64_t max_bytes, int64_t unused_for_seconds, uint64_t *removed,
                                  uint64_t *freed)
{
    uint64_t rm = 0, fr = 0;
    tell(removed, freed, 0, 0);
    if (!c || unused_for_seconds < 0)
        return TILEC_RT_INVALID_ARG;
    int lk = c->dir ? lock_dir(c, 1) : -1;
    listing ls;
    tilec_rt_status st = need_dir(c, &ls);
    entry *v = ls.v;
    size_t n = ls.n;
    uint64_t total = ls.total;
    if (st != TILEC_RT_OK) {
        if (lk >= 0)
            close(lk);
        return st;
    }
    time_t now = time(NULL);
    for (size_t i = 0; i < n; i++) {
        int old = unused_for_seconds > 0 && now - v[i].used.tv_sec >= unused_for_seconds;
        if (!old && entry_valid(c, &v[i]))
            continue;
        remove_entry(c, &v[i]);
        total -= v[i].bytes;
        fr += v[i].bytes;
        v[i].bytes = 0;
        rm++;
    }
    uint64_t bound = max_bytes ? max_bytes : c->max_bytes;
    if (bound && bound != UINT64_MAX && total > bound) {
        qsort(v, n, sizeof *v, oldest_first);
        uint64_t f2 = 0, r2 = evict_to(c, v, n, &total, bound, NULL, &f2);
        count_evicted(c, r2, f2, bound);
        rm += r2;
        fr += f2;
    }
    free(v);
    if (lk >= 0)
        close(lk);
    tell(removed, freed, rm, fr);
    return TILEC_RT_OK;
}

tilec_rt_status tilec_cache_clear(tilec_cache *c, uint64_t *removed, uint64_t *freed)
{
    uint64_t rm = 0, fr = 0;
    tell(removed, freed, 0, 0);
    if (!c)
        return TILEC_RT_INVALID_ARG;
    cache_mem_clear(c);
    listing ls;
    tilec_rt_status st = need_dir(c, &ls);
    if (st != TILEC_RT_OK)
        return st;
    for (size_t i = 0; i < ls.n; i++) {
        remove_entry(c, &ls.v[i]);
        rm++;
        fr += ls.v[i].bytes;
    }
    free(ls.v);
    DIR *d = opendir(c->dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        struct stat sb;
        if ((cdir_is_small(e->d_name, 0) || cdir_is_small(e->d_name, 1)) &&
            fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && unlinkat(dirfd(d), e->d_name, 0) == 0) {
            rm++;
            fr += (uint64_t)sb.st_size;
        }
    }
    if (d)
        closedir(d);
    tell(removed, freed, rm, fr);
    return TILEC_RT_OK;
}
