/* cache.c: the kernel cache's lookups and stores. Memory (uthash by key,
 * deep copies of bundles) first, then one file per bundle,
 * <dir>/<key>.tilecbundle, published by write-to-temporary, fsync and
 * rename so that processes sharing the directory only ever see whole
 * files, then the Redis tier (cache_remote.c) when there is one; a store
 * goes to every tier. Disk and network I/O run outside the mutex; the
 * mutex guards the table, the counters and the message. */
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

#include "runtime/cache_internal.h"
#include "tilec/log.h"

/* Our checksum (XXH64) as the table's hash. */
#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = (unsigned)tilec_bundle_checksum((keyptr), (keylen)))

#include "util/hashtable.h"

typedef struct mem_entry {
    char key[TILEC_CACHE_MAX_KEY + 1];
    tilec_bundle *b;
    UT_hash_handle hh;
} mem_entry;


/* ---- helpers ---- */

void cache_say(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

const char *cache_errtext(int e, char *buf, size_t n)
{
#if defined(_GNU_SOURCE)
    return strerror_r(e, buf, n);
#else
    if (strerror_r(e, buf, n) != 0)
        snprintf(buf, n, "errno %d", e);
    return buf;
#endif
}

static int key_ok(const char *k)
{
    return k && tilec_cache_key_ok(k, strnlen(k, TILEC_CACHE_MAX_KEY + 1));
}

static int env_true(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* Written with one fwrite so that lines of several processes do not
 * interleave. */
void cache_log(const tilec_cache *c, const char *fmt, ...)
{
    if (!c->log)
        return;
    char line[ERR_MAX + 64];
    int n = snprintf(line, sizeof line, "tilec cache: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    line[len++] = '\n';
    fwrite(line, 1, len, stderr);
}

/* Record the message (under the lock: the caller holds it) and log it. */
static void set_err_locked(tilec_cache *c, const char *msg)
{
    cache_say(c->err, sizeof c->err, "%s", msg);
    cache_log(c, "%s", msg);
}

void cache_note(tilec_cache *c, uint64_t *counter, const char *fmt, ...)
{
    char msg[ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&c->lock);
    if (counter)
        (*counter)++;
    set_err_locked(c, msg);
    pthread_mutex_unlock(&c->lock);
}

static void count(tilec_cache *c, uint64_t *counter)
{
    pthread_mutex_lock(&c->lock);
    (*counter)++;
    pthread_mutex_unlock(&c->lock);
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
        set_err_locked(c, msg);
    }
    const char *id = getenv("TILEC_CACHE_IDENTITY"); /* for tests only: a rebuilt compiler */
    if (id && *id)
        cache_say(c->identity, sizeof c->identity, "%s", id);
    char why[ERR_MAX];
    c->remote = cache_remote_from_env(why, sizeof why);
    if (why[0]) {
        set_err_locked(c, why);
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
        set_err_locked(c, "caches disabled by TILEC_FORCE_DISABLE_CACHES");
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
        set_err_locked(c, msg);
    }
    read_settings(c);
    *out = c;
    return TILEC_RT_OK;
}

void cache_mem_clear(tilec_cache *c)
{
    pthread_mutex_lock(&c->lock);
    mem_entry *e, *tmp;
    HASH_ITER(hh, c->mem, e, tmp)
    {
        HASH_DEL(c->mem, e);
        tilec_bundle_free(e->b);
        free(e);
    }
    pthread_mutex_unlock(&c->lock);
}

void tilec_cache_close(tilec_cache *c)
{
    if (!c)
        return;
    cache_mem_clear(c);
    cache_records_clear(c);
    lru_close(c);
    cache_remote_free(c->remote);
    pthread_mutex_destroy(&c->lock);
    free(c->dir);
    free(c);
}

/* ---- the memory level (caller holds the lock) ---- */

/* Take ownership of b under key, replacing any entry. 0, or -1 when out
 * of memory (b is then not taken). */
static int mem_store_locked(tilec_cache *c, const char *key, tilec_bundle *b)
{
    mem_entry *e;
    HASH_FIND_STR(c->mem, key, e);
    if (e) {
        tilec_bundle_free(e->b);
        e->b = b;
        return 0;
    }
    e = calloc(1, sizeof *e);
    if (!e)
        return -1;
    snprintf(e->key, sizeof e->key, "%s", key);
    e->b = b;
    HASH_ADD_STR(c->mem, key, e);
    if (!e->hh.tbl) { /* uthash ran out of memory */
        free(e);
        return -1;
    }
    return 0;
}

/* ---- reading a file ---- */

rd_result cache_read_capped(const char *path, void **data, size_t *len, dev_t *dev, ino_t *ino, char *why,
                                  size_t why_size)
{
    char eb[128];
    *data = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO planted under the name must not hang us */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | CACHE_O_NOATIME);
    if (fd < 0 && errno == EPERM) /* O_NOATIME: only for the file's owner */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        cache_say(why, why_size, "%s", cache_errtext(e, eb, sizeof eb));
        if (e == ENOENT)
            return RD_MISSING;
        struct stat lst;
        if (e != ELOOP || lstat(path, &lst) != 0)
            return RD_UNREADABLE;
        *dev = lst.st_dev; /* a symbolic link: foreign, removed like a corrupt file */
        *ino = lst.st_ino;
        cache_say(why, why_size, "a symbolic link, not a bundle");
        return RD_CORRUPT;
    }
    struct stat st;
    rd_result r = RD_OK;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) != 0) {
        cache_say(why, why_size, "fstat: %s", cache_errtext(errno, eb, sizeof eb));
        r = RD_UNREADABLE;
        goto done;
    }
    *dev = st.st_dev;
    *ino = st.st_ino;
    if (!S_ISREG(st.st_mode)) {
        cache_say(why, why_size, "not a regular file");
        r = RD_CORRUPT;
        goto done;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > TILEC_BUNDLE_MAX_SIZE) {
        cache_say(why, why_size, "%lld bytes, over the %u-byte limit", (long long)st.st_size, TILEC_BUNDLE_MAX_SIZE);
        r = RD_CORRUPT;
        goto done;
    }
    size_t want = (size_t)st.st_size, got = 0;
    buf = malloc(want + 1); /* one more byte tells a growing file */
    if (!buf) {
        cache_say(why, why_size, "out of memory for %zu bytes", want);
        r = RD_UNREADABLE;
        goto done;
    }
    while (got < want + 1) {
        ssize_t k = read(fd, buf + got, want + 1 - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            cache_say(why, why_size, "read: %s", cache_errtext(errno, eb, sizeof eb));
            r = RD_UNREADABLE;
            goto done;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    if (got != want) {
        cache_say(why, why_size, "changed size while being read (%zu bytes, then %zu)", want, got);
        r = RD_CORRUPT;
        goto done;
    }
    *data = buf;
    *len = got;
    buf = NULL;
done:
    free(buf);
    close(fd);
    return r;
}

/* ---- get ---- */

enum { LK_MISS = 0, LK_HIT = 1 }; /* or a failing tilec_rt_status, negated */

/* Keep b in memory (unless a put got there first) and give the caller a
 * copy; counts the hit in *counter. */
static int keep_and_copy(tilec_cache *c, const char *key, tilec_bundle *b, tilec_bundle **out, uint64_t *counter)
{
    tilec_rt_status st = tilec_bundle_copy(b, out);
    pthread_mutex_lock(&c->lock);
    mem_entry *have;
    HASH_FIND_STR(c->mem, key, have);
    if (have || mem_store_locked(c, key, b) != 0)
        tilec_bundle_free(b);
    if (st == TILEC_RT_OK)
        (*counter)++;
    pthread_mutex_unlock(&c->lock);
    return st == TILEC_RT_OK ? LK_HIT : -(int)st;
}

static int from_memory(tilec_cache *c, const char *key, tilec_bundle **out)
{
    pthread_mutex_lock(&c->lock);
    mem_entry *e;
    HASH_FIND_STR(c->mem, key, e);
    tilec_rt_status st = e ? tilec_bundle_copy(e->b, out) : TILEC_RT_NOT_FOUND;
    if (st == TILEC_RT_OK)
        c->stats.mem_hits++;
    pthread_mutex_unlock(&c->lock);
    if (st == TILEC_RT_OK)
        cache_log(c, "local hit %s (memory)", key);
    return st == TILEC_RT_OK ? LK_HIT : st == TILEC_RT_NOT_FOUND ? LK_MISS : -(int)st;
}

rd_result cache_read_entry(tilec_cache *c, const char *key, const char *suffix, char *path, void **data, size_t *len,
                           dev_t *dev, ino_t *ino, char *why, size_t why_size)
{
    snprintf(path, PATH_CAP, "%s/%s%s", c->dir, key, suffix);
    *dev = 0;
    *ino = 0;
    rd_result r = cache_read_capped(path, data, len, dev, ino, why, why_size);
    if (r == RD_UNREADABLE)
        cache_note(c, NULL, "cannot read %s: %s", path, why);
    return r == RD_UNREADABLE ? RD_MISSING : r;
}

void cache_reject(tilec_cache *c, const char *path, dev_t dev, ino_t ino, const char *what, const char *why)
{
    cdir_remove_if_same(path, dev, ino);
    cache_note(c, &c->stats.corrupt, "%s: rejected %s: %s; removed", what, path, why);
}

static int from_file(tilec_cache *c, const char *key, tilec_bundle **out)
{
    char path[PATH_CAP], why[ERR_MAX];
    void *data;
    size_t len;
    dev_t dev;
    ino_t ino;
    rd_result r = cache_read_entry(c, key, BUNDLE_SUFFIX, path, &data, &len, &dev, &ino, why, sizeof why);
    if (r == RD_MISSING)
        return LK_MISS;
    tilec_bundle *b = NULL;
    tilec_rt_status st = TILEC_RT_MODULE_ERROR;
    if (r == RD_OK) {
        st = tilec_bundle_parse(data, len, key, &b, why, sizeof why);
        free(data);
    }
    if (st == TILEC_RT_NOMEM) {
        cache_note(c, NULL, "cannot read %s: %s", path, why);
        return -(int)st;
    }
    if (st != TILEC_RT_OK) {
        cache_reject(c, path, dev, ino, "miss", why);
        lru_count(c, SC_CORRUPT);
        return LK_MISS;
    }
    lru_touch(path);
    int hit = keep_and_copy(c, key, b, out, &c->stats.disk_hits);
    if (hit == LK_HIT)
        cache_log(c, "local hit %s (%s)", key, path);
    return hit;
}

void cache_remote_fault(tilec_cache *c, const char *why)
{
    pthread_mutex_lock(&c->lock);
    cache_say(c->remote_problem, sizeof c->remote_problem, "%s", why);
    pthread_mutex_unlock(&c->lock);
    lru_count(c, SC_REMOTE_FAULTS);
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

/* The Redis tier: a value is validated exactly like a file; a hit is
 * copied to the directory (not fsync'd: a copy lost in a crash is only a
 * miss) so that the next start is local. */
static int from_remote(tilec_cache *c, const char *key, tilec_bundle **out)
{
    void *data;
    size_t len;
    char why[ERR_MAX];
    remote_result r = cache_remote_get(c->remote, key, &data, &len, why, sizeof why);
    if (r == REMOTE_MISS)
        count(c, &c->stats.remote_misses);
    if (r == REMOTE_FAULT) {
        cache_note(c, &c->stats.remote_faults, "%s; compiling locally", why);
        cache_remote_fault(c, why);
    }
    if (r == REMOTE_REJECTED) {
        cache_note(c, &c->stats.remote_rejected, "%s; rejected, the next put replaces it", why);
        lru_count(c, SC_CORRUPT);
    }
    if (r != REMOTE_HIT)
        return LK_MISS;
    tilec_bundle *b = NULL;
    tilec_rt_status st = tilec_bundle_parse(data, len, key, &b, why, sizeof why);
    if (st != TILEC_RT_OK) {
        free(data);
        if (st == TILEC_RT_NOMEM)
            return -(int)st;
        cache_note(c, &c->stats.remote_rejected, "redis %s: rejected the value of %s: %s; the next put replaces it",
                   cache_remote_name(c->remote), key, why);
        lru_count(c, SC_CORRUPT);
        return LK_MISS;
    }
    if (c->dir && cache_publish(c->dir, key, BUNDLE_SUFFIX, data, len, 0, NULL, NULL, why, sizeof why) == 0)
        lru_enforce(c, key);
    free(data);
    int hit = keep_and_copy(c, key, b, out, &c->stats.remote_hits);
    if (hit == LK_HIT) {
        lru_count(c, SC_REMOTE_HITS);
        cache_log(c, "remote hit %s (redis %s)", key, cache_remote_name(c->remote));
    }
    return hit;
}

tilec_rt_status tilec_cache_get(tilec_cache *c, const char *key, tilec_bundle **out)
{
    if (out)
        *out = NULL;
    if (!c || !out || !key_ok(key))
        return TILEC_RT_INVALID_ARG;
    if (c->disabled) {
        count(c, &c->stats.misses);
        return TILEC_RT_NOT_FOUND;
    }
    int r = from_memory(c, key, out);
    if (r == LK_HIT) {
        lru_count(c, SC_LOCAL_HITS);
        return TILEC_RT_OK;
    }
    if (r == LK_MISS && c->dir) {
        r = from_file(c, key, out);
        if (r == LK_HIT)
            lru_count(c, SC_LOCAL_HITS);
    }
    if (r == LK_MISS && c->remote)
        r = from_remote(c, key, out);
    if (r == LK_HIT)
        return TILEC_RT_OK;
    if (r < 0)
        return (tilec_rt_status)-r;
    count(c, &c->stats.misses);
    lru_count(c, SC_MISSES);
    cache_log(c, "miss %s%s", key, c->dir ? "" : " (memory only)");
    return TILEC_RT_NOT_FOUND;
}

/* ---- put ---- */

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0) {
            errno = EIO;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int cache_publish(const char *dir, const char *key, const char *suffix, const void *data, size_t len, int durable,
                  tilec_cache_fault_fn fault, void *user, char *why, size_t why_size)
{
    char tmp[PATH_CAP], final[PATH_CAP], eb[128];
    snprintf(final, sizeof final, "%s/%s%s", dir, key, suffix);
    snprintf(tmp, sizeof tmp, "%s/.%s%s" TMP_SUFFIX, dir, key, suffix);
    const char *doing = "create a temporary file";
    int fd = mkstemp(tmp);
    if (fd < 0) {
        cache_say(why, why_size, "cannot write %s: cannot create a temporary file in %s: %s", final, dir,
            cache_errtext(errno, eb, sizeof eb));
        return -1;
    }
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    size_t half = len / 2;
    int e;
#define STEP(s, path)                                                                                                  \
    do {                                                                                                               \
        if (fault && (e = fault(user, (s), (path))) != 0) {                                                            \
            errno = e;                                                                                                 \
            goto fail;                                                                                                 \
        }                                                                                                              \
    } while (0)
    doing = "write";
    STEP(TILEC_CACHE_STEP_BEFORE_WRITE, tmp);
    if (write_all(fd, data, half) != 0)
        goto fail;
    STEP(TILEC_CACHE_STEP_MID_WRITE, tmp);
    if (write_all(fd, (const uint8_t *)data + half, len - half) != 0)
        goto fail;
    doing = "fsync";
    STEP(TILEC_CACHE_STEP_BEFORE_FSYNC, tmp);
    if (durable && fsync(fd) != 0)
        goto fail;
    doing = "close";
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0)
        goto fail;
    doing = "rename";
    STEP(TILEC_CACHE_STEP_BEFORE_RENAME, tmp);
    if (rename(tmp, final) != 0)
        goto fail;
    /* published; the directory fsync makes the rename durable (best
     * effort: some file systems refuse fsync on a directory) */
    if (fault && fault(user, TILEC_CACHE_STEP_BEFORE_DIR_FSYNC, final) != 0)
        return 0;
#undef STEP
    int dfd = durable ? open(dir, O_RDONLY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return 0;
fail:
    e = errno;
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    cache_say(why, why_size, "cannot write %s: %s %s: %s", final, doing, tmp, cache_errtext(e, eb, sizeof eb));
    return -1;
}

/* Publish to the Redis tier too; its faults are logged, never returned. */
static void to_remote(tilec_cache *c, const char *key, const void *data, size_t len)
{
    char why[ERR_MAX];
    remote_result r = cache_remote_put(c->remote, key, data, len, why, sizeof why);
    if (r == REMOTE_HIT) {
        count(c, &c->stats.remote_writes);
        cache_log(c, "stored %s in redis %s (%zu bytes)", key, cache_remote_name(c->remote), len);
    } else if (r == REMOTE_FAULT) {
        cache_note(c, &c->stats.remote_faults, "%s; not stored there", why);
        cache_remote_fault(c, why);
    } else if (r == REMOTE_REJECTED) {
        cache_note(c, NULL, "%s", why);
    } /* REMOTE_SKIPPED: a read-only tier, said once at open */
}

tilec_rt_status tilec_cache_put(tilec_cache *c, const char *key, const tilec_bundle *b)
{
    if (!c || !b || !key_ok(key))
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
    tilec_bundle *copy;
    st = tilec_bundle_copy(b, &copy);
    pthread_mutex_lock(&c->lock);
    if (st == TILEC_RT_OK && mem_store_locked(c, key, copy) != 0) {
        tilec_bundle_free(copy);
        st = TILEC_RT_NOMEM;
    }
    tilec_cache_fault_fn fault = c->fault;
    void *user = c->fault_user;
    pthread_mutex_unlock(&c->lock);
    if (st != TILEC_RT_OK) {
        free(data);
        cache_note(c, NULL, "put %s: out of memory", key);
        return st;
    }
    st = TILEC_RT_OK;
    if (c->dir) {
        char why[ERR_MAX];
        if (cache_publish(c->dir, key, BUNDLE_SUFFIX, data, len, 1, fault, user, why, sizeof why) != 0) {
            cache_note(c, &c->stats.write_failures, "%s", why);
            st = TILEC_CACHE_IO_ERROR;
        } else {
            count(c, &c->stats.writes);
            lru_count(c, SC_WRITES);
            cache_log(c, "wrote %s/%s" BUNDLE_SUFFIX " (%zu bytes)", c->dir, key, len);
            lru_enforce(c, key);
        }
    }
    if (c->remote)
        to_remote(c, key, data, len);
    free(data);
    return st;
}

/* ---- queries ---- */

void tilec_cache_get_stats(const tilec_cache *c, tilec_cache_stats *s)
{
    if (!s)
        return;
    memset(s, 0, sizeof *s);
    if (!c)
        return;
    tilec_cache *m = (tilec_cache *)c; /* the lock is not part of the value */
    pthread_mutex_lock(&m->lock);
    *s = c->stats;
    pthread_mutex_unlock(&m->lock);
}

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

