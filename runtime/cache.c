/* cache.c: the two-level kernel cache. Memory (uthash by key, deep copies
 * of bundles) first, then one file per bundle, <dir>/<key>.tilecbundle,
 * published by write-to-temporary, fsync and rename so that processes
 * sharing the directory only ever see whole files. Disk I/O runs outside
 * the mutex; the mutex guards the table, the counters and the message. */
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

#include "tilec/cache.h"
#include "tilec/log.h"

/* Our checksum (XXH64) as the table's hash. */
#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = (unsigned)tilec_bundle_checksum((keyptr), (keylen)))

#include "util/hashtable.h"

#define CACHE_LOG_CHANNEL "cache"
#define BUNDLE_SUFFIX ".tilecbundle"
#define TMP_SUFFIX ".tmp.XXXXXX"

enum { ERR_MAX = 1024, PATH_CAP = 4096 };

typedef struct mem_entry {
    char key[TILEC_CACHE_MAX_KEY + 1];
    tilec_bundle *b;
    UT_hash_handle hh;
} mem_entry;

struct tilec_cache {
    pthread_mutex_t lock; /* guards everything below but dir and log */
    int disabled;         /* TILEC_FORCE_DISABLE_CACHES */
    int log;              /* TILEC_LOGS enables "cache" */
    char *dir;            /* NULL: disabled or memory only */
    mem_entry *mem;
    tilec_cache_stats stats;
    tilec_cache_fault_fn fault;
    void *fault_user;
    char err[ERR_MAX];
};

/* ---- helpers ---- */

/* snprintf that may truncate: messages are cut, never overrun. */
static void say(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

static const char *errtext(int e, char *buf, size_t n)
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

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* One "tilec cache: ..." line on stderr when the channel is on, written
 * with one fwrite so that lines of several processes do not interleave. */
static void clog_line(const tilec_cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void clog_line(const tilec_cache *c, const char *fmt, ...)
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
    say(c->err, sizeof c->err, "%s", msg);
    clog_line(c, "%s", msg);
}

static void note(tilec_cache *c, uint64_t *counter, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Count an event (counter may be NULL) and record its message. */
static void note(tilec_cache *c, uint64_t *counter, const char *fmt, ...)
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

/* ---- the directory ---- */

/* 0 when path is a directory (made now, mode 0700, if it was missing),
 * else an errno value. */
static int ensure_dir(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    if (errno != ENOENT)
        return errno;
    if (mkdir(path, 0700) == 0) {
        chmod(path, 0700); /* whatever the umask took away */
        return 0;
    }
    if (errno != EEXIST)
        return errno;
    if (stat(path, &st) != 0) /* another process made it between stat and mkdir */
        return errno;
    return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

/* mkdir -p, each missing level made with mode 0700. 0, or -1 with errno
 * set and the prefix that failed in failed. */
static int make_dirs(char *path, char *failed, size_t failed_size)
{
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != 0)
            continue;
        char saved = *p;
        *p = 0;
        int e = ensure_dir(path);
        if (e)
            say(failed, failed_size, "%s", path);
        *p = saved;
        if (e) {
            errno = e;
            return -1;
        }
        if (!saved)
            return 0;
    }
}

/* Resolve, create and check the directory. On success returns a malloc'd
 * absolute path; else NULL and why (memory only). */
static char *resolve_dir(const char *dir, char *why, size_t why_size)
{
    char path[PATH_CAP], eb[128];
    const char *base = dir, *tail = "";
    if (!base && (base = env_nonempty("TILEC_CACHE_DIR")) == NULL) {
        const char *xdg = env_nonempty("XDG_CACHE_HOME");
        if (xdg && xdg[0] == '/') {
            base = xdg;
            tail = "/tilec";
        } else if ((base = env_nonempty("HOME")) != NULL) {
            tail = "/.cache/tilec";
        } else {
            say(why, why_size, "no cache directory (TILEC_CACHE_DIR, XDG_CACHE_HOME and HOME are unset)");
            return NULL;
        }
    }
    int n;
    if (base[0] == '/') {
        n = snprintf(path, sizeof path, "%s%s", base, tail);
    } else {
        char cwd[PATH_CAP];
        if (!getcwd(cwd, sizeof cwd)) {
            say(why, why_size, "cache directory %s is relative and the working directory is unknown: %s", base,
                errtext(errno, eb, sizeof eb));
            return NULL;
        }
        n = snprintf(path, sizeof path, "%s/%s%s", cwd, base, tail);
    }
    /* room for "/.<key>.tilecbundle.tmp.XXXXXX" */
    size_t room = 2 + TILEC_CACHE_MAX_KEY + sizeof BUNDLE_SUFFIX + sizeof TMP_SUFFIX;
    if (n < 0 || (size_t)n + room >= sizeof path) {
        say(why, why_size, "cache directory path too long (%d bytes)", n);
        return NULL;
    }
    while (n > 1 && path[n - 1] == '/')
        path[--n] = 0;
    char failed[PATH_CAP];
    if (make_dirs(path, failed, sizeof failed) != 0) {
        const char *err = errtext(errno, eb, sizeof eb);
        if (strcmp(failed, path) == 0)
            say(why, why_size, "cannot create cache directory %s: %s", path, err);
        else
            say(why, why_size, "cannot create cache directory %s: %s: %s", path, failed, err);
        return NULL;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        say(why, why_size, "cache directory %s is not a directory", path);
        return NULL;
    }
    if (st.st_mode & S_IWOTH) {
        say(why, why_size, "cache directory %s is writable by every user; not using it", path);
        return NULL;
    }
    if (st.st_mode & S_IWGRP) { /* a group member could plant a CUBIN as well as another user */
        say(why, why_size, "cache directory %s is writable by its group; not using it", path);
        return NULL;
    }
    if (st.st_uid != geteuid()) {
        say(why, why_size, "cache directory %s is owned by another user (uid %u); not using it", path,
            (unsigned)st.st_uid);
        return NULL;
    }
    if (access(path, R_OK | W_OK | X_OK) != 0) {
        say(why, why_size, "cache directory %s is not writable: %s", path, errtext(errno, eb, sizeof eb));
        return NULL;
    }
    char *out = strdup(path);
    if (!out)
        say(why, why_size, "out of memory");
    return out;
}

/* ---- open, close ---- */

/* A writer killed before its rename leaves .<key>.tilecbundle.tmp.XXXXXX
 * behind (never read). At open, at most once per STALE_SECONDS per
 * directory (a marker file's mtime says when), remove the temporary files
 * older than STALE_SECONDS: no live writer takes that long. */
enum { STALE_SECONDS = 3600 };
#define SWEEP_MARKER ".tilec-sweep"

/* The multi-kernel chooser keeps one small file per kernel and shape,
 * multikernel-<hash>.choice. Past TILEC_CACHE_MAX_CHOICES of them the
 * oldest (by mtime) are removed: a lost choice is only timed again. */
typedef struct choice_file {
    time_t mtime;
    char name[64];
} choice_file;

static int by_mtime(const void *a, const void *b)
{
    const choice_file *x = a, *y = b;
    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime ? 1 : strcmp(x->name, y->name);
}

static void sweep_choices(tilec_cache *c, int dfd, DIR *d)
{
    choice_file *v = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    struct stat st;
    rewinddir(d);
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        size_t l = strlen(nm);
        if (strncmp(nm, "multikernel-", 12) || l < 20 || l >= sizeof v->name || strcmp(nm + l - 7, ".choice") ||
            fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            choice_file *w = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof *v);
            if (!w)
                break;
            v = w;
        }
        v[n].mtime = st.st_mtime;
        memcpy(v[n++].name, nm, l + 1);
    }
    if (n > TILEC_CACHE_MAX_CHOICES) {
        qsort(v, n, sizeof *v, by_mtime);
        for (size_t i = 0; i < n - TILEC_CACHE_MAX_CHOICES; i++)
            if (unlinkat(dfd, v[i].name, 0) == 0)
                c->stats.choices_removed++;
        clog_line(c, "removed %llu multi-kernel choice files over %u", (unsigned long long)c->stats.choices_removed,
                  TILEC_CACHE_MAX_CHOICES);
    }
    free(v);
}

static void sweep_stale(tilec_cache *c)
{
    int dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    struct stat st;
    time_t now = time(NULL);
    if (fstatat(dfd, SWEEP_MARKER, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        now - st.st_mtime < STALE_SECONDS && st.st_mtime <= now + 60) { /* file times may run a tick ahead of time() */
        close(dfd);
        return;
    }
    int mfd = openat(dfd, SWEEP_MARKER, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (mfd >= 0) {
        futimens(mfd, NULL);
        close(mfd);
    }
    int dfd2 = dup(dfd);
    DIR *d = dfd2 >= 0 ? fdopendir(dfd2) : NULL;
    if (!d) {
        if (dfd2 >= 0)
            close(dfd2);
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        const char *t = strstr(n, BUNDLE_SUFFIX ".tmp.");
        if (n[0] != '.' || !t || strlen(t) != sizeof BUNDLE_SUFFIX - 1 + sizeof TMP_SUFFIX - 1)
            continue;
        if (fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            now - st.st_mtime < STALE_SECONDS)
            continue;
        if (unlinkat(dfd, n, 0) == 0) {
            c->stats.stale_removed++;
            clog_line(c, "removed %s, a killed writer's temporary file", n);
        }
    }
    sweep_choices(c, dfd, d);
    closedir(d);
    close(dfd);
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
    } else {
        char why[ERR_MAX];
        c->dir = resolve_dir(dir, why, sizeof why);
        if (c->dir) {
            clog_line(c, "using %s", c->dir);
            sweep_stale(c);
        } else {
            char msg[ERR_MAX + 32];
            say(msg, sizeof msg, "%s; caching in memory only", why);
            set_err_locked(c, msg);
        }
    }
    *out = c;
    return TILEC_RT_OK;
}

void tilec_cache_close(tilec_cache *c)
{
    if (!c)
        return;
    mem_entry *e, *tmp;
    HASH_ITER(hh, c->mem, e, tmp)
    {
        HASH_DEL(c->mem, e);
        tilec_bundle_free(e->b);
        free(e);
    }
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

typedef enum { RD_OK, RD_MISSING, RD_UNREADABLE, RD_CORRUPT } rd_result;

/* Read the whole regular file at path (at most TILEC_BUNDLE_MAX_SIZE
 * bytes) into a malloc'd *data; dev/ino identify what was read. */
static rd_result read_file_capped(const char *path, void **data, size_t *len, dev_t *dev, ino_t *ino, char *why,
                                  size_t why_size)
{
    char eb[128];
    *data = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO planted under the name must not hang us */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        say(why, why_size, "%s", errtext(e, eb, sizeof eb));
        if (e == ENOENT)
            return RD_MISSING;
        struct stat lst;
        if (e != ELOOP || lstat(path, &lst) != 0)
            return RD_UNREADABLE;
        *dev = lst.st_dev; /* a symbolic link: foreign, removed like a corrupt file */
        *ino = lst.st_ino;
        say(why, why_size, "a symbolic link, not a bundle");
        return RD_CORRUPT;
    }
    struct stat st;
    rd_result r = RD_OK;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) != 0) {
        say(why, why_size, "fstat: %s", errtext(errno, eb, sizeof eb));
        r = RD_UNREADABLE;
        goto done;
    }
    *dev = st.st_dev;
    *ino = st.st_ino;
    if (!S_ISREG(st.st_mode)) {
        say(why, why_size, "not a regular file");
        r = RD_CORRUPT;
        goto done;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > TILEC_BUNDLE_MAX_SIZE) {
        say(why, why_size, "%lld bytes, over the %u-byte limit", (long long)st.st_size, TILEC_BUNDLE_MAX_SIZE);
        r = RD_CORRUPT;
        goto done;
    }
    size_t want = (size_t)st.st_size, got = 0;
    buf = malloc(want + 1); /* one more byte tells a growing file */
    if (!buf) {
        say(why, why_size, "out of memory for %zu bytes", want);
        r = RD_UNREADABLE;
        goto done;
    }
    while (got < want + 1) {
        ssize_t k = read(fd, buf + got, want + 1 - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            say(why, why_size, "read: %s", errtext(errno, eb, sizeof eb));
            r = RD_UNREADABLE;
            goto done;
        }
        if (k == 0)
            break;
        got += (size_t)k;
    }
    if (got != want) {
        say(why, why_size, "changed size while being read (%zu bytes, then %zu)", want, got);
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

/* Remove a rejected file, unless another writer has published a new one
 * over it since it was read (a small window remains: then a good file is
 * removed, and the next get is a miss). */
static void remove_if_same(const char *path, dev_t dev, ino_t ino)
{
    struct stat st;
    if (lstat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
        unlink(path);
}

/* ---- get ---- */

tilec_rt_status tilec_cache_get(tilec_cache *c, const char *key, tilec_bundle **out)
{
    if (out)
        *out = NULL;
    if (!c || !out || !key_ok(key))
        return TILEC_RT_INVALID_ARG;
    pthread_mutex_lock(&c->lock);
    if (c->disabled) {
        c->stats.misses++;
        pthread_mutex_unlock(&c->lock);
        return TILEC_RT_NOT_FOUND;
    }
    mem_entry *e;
    HASH_FIND_STR(c->mem, key, e);
    if (e) {
        tilec_rt_status st = tilec_bundle_copy(e->b, out);
        if (st == TILEC_RT_OK)
            c->stats.mem_hits++;
        pthread_mutex_unlock(&c->lock);
        if (st == TILEC_RT_OK)
            clog_line(c, "memory hit %s", key);
        return st;
    }
    pthread_mutex_unlock(&c->lock);
    if (!c->dir) {
        count(c, &c->stats.misses);
        clog_line(c, "miss %s (memory only)", key);
        return TILEC_RT_NOT_FOUND;
    }

    char path[PATH_CAP], why[ERR_MAX];
    snprintf(path, sizeof path, "%s/%s" BUNDLE_SUFFIX, c->dir, key);
    void *data;
    size_t len;
    dev_t dev = 0;
    ino_t ino = 0;
    rd_result r = read_file_capped(path, &data, &len, &dev, &ino, why, sizeof why);
    if (r == RD_MISSING) {
        count(c, &c->stats.misses);
        clog_line(c, "miss %s", key);
        return TILEC_RT_NOT_FOUND;
    }
    if (r == RD_UNREADABLE) {
        note(c, &c->stats.misses, "miss: cannot read %s: %s", path, why);
        return TILEC_RT_NOT_FOUND;
    }
    tilec_bundle *b = NULL;
    tilec_rt_status st = TILEC_RT_MODULE_ERROR;
    if (r == RD_OK) {
        st = tilec_bundle_parse(data, len, key, &b, why, sizeof why);
        free(data);
    }
    if (st == TILEC_RT_NOMEM) {
        note(c, NULL, "cannot read %s: %s", path, why);
        return st;
    }
    if (st != TILEC_RT_OK) {
        remove_if_same(path, dev, ino);
        pthread_mutex_lock(&c->lock);
        c->stats.misses++;
        pthread_mutex_unlock(&c->lock);
        note(c, &c->stats.corrupt, "miss: rejected %s: %s; removed", path, why);
        return TILEC_RT_NOT_FOUND;
    }
    /* a hit: keep b in memory (unless a put got there first), return a copy */
    st = tilec_bundle_copy(b, out);
    pthread_mutex_lock(&c->lock);
    mem_entry *have;
    HASH_FIND_STR(c->mem, key, have);
    if (have || mem_store_locked(c, key, b) != 0)
        tilec_bundle_free(b);
    if (st == TILEC_RT_OK)
        c->stats.disk_hits++;
    pthread_mutex_unlock(&c->lock);
    if (st == TILEC_RT_OK)
        clog_line(c, "disk hit %s", path);
    return st;
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

/* Publish data as <dir>/<key>.tilecbundle. 0, or -1 with why set and
 * nothing left behind. */
static int publish(const char *dir, const char *key, const void *data, size_t len, tilec_cache_fault_fn fault,
                   void *user, char *why, size_t why_size)
{
    char tmp[PATH_CAP], final[PATH_CAP], eb[128];
    snprintf(final, sizeof final, "%s/%s" BUNDLE_SUFFIX, dir, key);
    snprintf(tmp, sizeof tmp, "%s/.%s" BUNDLE_SUFFIX TMP_SUFFIX, dir, key);
    const char *doing = "create a temporary file";
    int fd = mkstemp(tmp);
    if (fd < 0) {
        say(why, why_size, "cannot write %s: cannot create a temporary file in %s: %s", final, dir,
            errtext(errno, eb, sizeof eb));
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
    if (fsync(fd) != 0)
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
    int dfd = open(dir, O_RDONLY | O_CLOEXEC);
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
    say(why, why_size, "cannot write %s: %s %s: %s", final, doing, tmp, errtext(e, eb, sizeof eb));
    return -1;
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
        note(c, NULL, "put %s: %s", key,
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
        note(c, NULL, "put %s: out of memory", key);
        return st;
    }
    if (!c->dir) {
        free(data);
        return TILEC_RT_OK;
    }
    char why[ERR_MAX];
    int rc = publish(c->dir, key, data, len, fault, user, why, sizeof why);
    free(data);
    if (rc != 0) {
        note(c, &c->stats.write_failures, "%s", why);
        return TILEC_CACHE_IO_ERROR;
    }
    count(c, &c->stats.writes);
    clog_line(c, "wrote %s/%s" BUNDLE_SUFFIX " (%zu bytes)", c->dir, key, len);
    return TILEC_RT_OK;
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
