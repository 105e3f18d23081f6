/* cache_dir.c: the kernel cache's directory: which one (an argument,
 * $TILEC_CACHE_DIR, $XDG_CACHE_HOME/tilec, ~/.cache/tilec), made 0700 and
 * refused when another user or the group could plant a bundle in it; and
 * the hourly sweep of what killed writers leave behind and of surplus
 * multi-kernel choice files; reading one of its files whole. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/cache_shared.h"

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

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
            cache_say(failed, failed_size, "%s", path);
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
char *cdir_resolve(const char *dir, char *why, size_t why_size)
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
            cache_say(why, why_size, "no cache directory (TILEC_CACHE_DIR, XDG_CACHE_HOME and HOME are unset)");
            return NULL;
        }
    }
    int n;
    if (base[0] == '/') {
        n = snprintf(path, sizeof path, "%s%s", base, tail);
    } else {
        char cwd[PATH_CAP];
        if (!getcwd(cwd, sizeof cwd)) {
            cache_say(why, why_size, "cache directory %s is relative and the working directory is unknown: %s", base,
                cache_errtext(errno, eb, sizeof eb));
            return NULL;
        }
        n = snprintf(path, sizeof path, "%s/%s%s", cwd, base, tail);
    }
    /* room for "/.<key>.tilecbundle.tmp.XXXXXX" */
    size_t room = 2 + TILEC_CACHE_MAX_KEY + sizeof BUNDLE_SUFFIX + sizeof TMP_SUFFIX;
    if (n < 0 || (size_t)n + room >= sizeof path) {
        cache_say(why, why_size, "cache directory path too long (%d bytes)", n);
        return NULL;
    }
    while (n > 1 && path[n - 1] == '/')
        path[--n] = 0;
    char failed[PATH_CAP];
    if (make_dirs(path, failed, sizeof failed) != 0) {
        const char *err = cache_errtext(errno, eb, sizeof eb);
        if (strcmp(failed, path) == 0)
            cache_say(why, why_size, "cannot create cache directory %s: %s", path, err);
        else
            cache_say(why, why_size, "cannot create cache directory %s: %s: %s", path, failed, err);
        return NULL;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        cache_say(why, why_size, "cache directory %s is not a directory", path);
        return NULL;
    }
    if (st.st_mode & S_IWOTH) {
        cache_say(why, why_size, "cache directory %s is writable by every user; not using it", path);
        return NULL;
    }
    if (st.st_mode & S_IWGRP) { /* a group member could plant a CUBIN as well as another user */
        cache_say(why, why_size, "cache directory %s is writable by its group; not using it", path);
        return NULL;
    }
    if (st.st_uid != geteuid()) {
        cache_say(why, why_size, "cache directory %s is owned by another user (uid %u); not using it", path,
            (unsigned)st.st_uid);
        return NULL;
    }
    if (access(path, R_OK | W_OK | X_OK) != 0) {
        cache_say(why, why_size, "cache directory %s is not writable: %s", path, cache_errtext(errno, eb, sizeof eb));
        return NULL;
    }
    char *out = strdup(path);
    if (!out)
        cache_say(why, why_size, "out of memory");
    return out;
}

/* ---- open, close ---- */

/* A writer killed before its rename leaves .<key>.tilecbundle.tmp.XXXXXX
 * behind (never read). At open, at most once per STALE_SECONDS per
 * directory (a marker file's mtime says when), remove the temporary files
 * older than STALE_SECONDS: no live writer takes that long. */
enum { STALE_SECONDS = 3600 };
#define SWEEP_MARKER ".tilec-sweep"

/* Small files kept per key, swept by count: the multi-kernel chooser's
 * multikernel-<hash>.choice (one per kernel and shape) and the records
 * <key>.tilecrecord. Past `cap` of a kind the oldest (by the later of
 * mtime and atime: lru_touch marks a record's use) are removed: a lost choice is only timed again, a lost record only lowers
 * again. */
typedef struct small_file {
    time_t mtime;
    char name[TILEC_CACHE_MAX_KEY + 32];
} small_file;

typedef struct small_kind {
    const char *prefix, *suffix;
    uint32_t cap;
    const char *what;
} small_kind;

static const small_kind choices = {"multikernel-", ".choice", TILEC_CACHE_MAX_CHOICES, "multi-kernel choice"};
static const small_kind records = {"", RECORD_SUFFIX, TILEC_CACHE_MAX_RECORDS, "record"};

static int by_mtime(const void *a, const void *b)
{
    const small_file *x = a, *y = b;
    return x->mtime < y->mtime ? -1 : x->mtime > y->mtime ? 1 : strcmp(x->name, y->name);
}

int cdir_is_small(const char *name, int record)
{
    const small_kind *k = record ? &records : &choices;
    size_t l = strlen(name), lp = strlen(k->prefix), ls = strlen(k->suffix);
    return name[0] != '.' && l > lp + ls && l < sizeof ((small_file *)0)->name && !strncmp(name, k->prefix, lp) &&
           !strcmp(name + l - ls, k->suffix);
}

static uint64_t sweep_small(tilec_cache *c, int dfd, DIR *d, const small_kind *k)
{
    small_file *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t removed = 0;
    struct dirent *e;
    struct stat st;
    rewinddir(d);
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        if (!cdir_is_small(nm, k == &records) || fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            small_file *w = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof *v);
            if (!w)
                break;
            v = w;
        }
        v[n].mtime = st.st_atime > st.st_mtime ? st.st_atime : st.st_mtime; /* a record's get touches atime */
        memcpy(v[n++].name, nm, strlen(nm) + 1); /* cdir_is_small checked the length */
    }
    if (n > k->cap) {
        qsort(v, n, sizeof *v, by_mtime);
        for (size_t i = 0; i < n - k->cap; i++)
            if (unlinkat(dfd, v[i].name, 0) == 0)
                removed++;
        cache_log(c, "removed %llu %s files over %u", (unsigned long long)removed, k->what, k->cap);
    }
    free(v);
    return removed;
}

void cdir_sweep(tilec_cache *c)
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
        const char *t = strstr(n, BUNDLE_SUFFIX ".tmp."), *r = strstr(n, RECORD_SUFFIX ".tmp.");
        if (n[0] != '.' || !((t && strlen(t) == sizeof BUNDLE_SUFFIX - 1 + sizeof TMP_SUFFIX - 1) ||
                             (r && strlen(r) == sizeof RECORD_SUFFIX - 1 + sizeof TMP_SUFFIX - 1)))
            continue;
        if (fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            now - st.st_mtime < STALE_SECONDS)
            continue;
        if (unlinkat(dfd, n, 0) == 0) {
            c->stats.stale_removed++;
            cache_log(c, "removed %s, a killed writer's temporary file", n);
        }
    }
    c->stats.choices_removed += sweep_small(c, dfd, d, &choices);
    c->stats.records_removed += sweep_small(c, dfd, d, &records);
    closedir(d);
    close(dfd);
}

/* Remove a rejected file, unless another writer has published a new one
 * over it since it was read (a small window remains: then a good file is
 * removed, and the next get is a miss). */
void cdir_remove_if_same(const char *path, dev_t dev, ino_t ino)
{
    struct stat st;
    if (lstat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
        unlink(path);
}

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
