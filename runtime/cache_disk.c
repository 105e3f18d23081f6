/* cache_disk.c: the directory's tier (cache_tier.h): one file per entry,
 * <dir>/<prefix><key><suffix> (the kind's file_prefix and suffix), read whole (capped, never through a link, never
 * blocking on a FIFO) and published by write-to-temporary, fsync and
 * rename, so that processes sharing the directory only ever see whole
 * files. A file read is marked used (lru_touch) so that eviction takes it
 * last; a rejected one is removed if it is still the file that was read;
 * after a bundle is written the directory is held to its bound
 * (lru_enforce). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/cache_tier.h"

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
#define STEP(s, path)                                       \
    do {                                                    \
        if (fault && (e = fault(user, (s), (path))) != 0) { \
            errno = e;                                      \
            goto fail;                                      \
        }                                                   \
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

static tier_result disk_get(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, cache_value *v,
                            char *why, size_t why_size)
{
    (void)t;
    char name[PATH_CAP];
    cache_say(name, sizeof name, "%s%s", k->file_prefix ? k->file_prefix : "", key);
    rd_result r = cache_read_entry(c, name, k->suffix, v->where, &v->data, &v->len, &v->dev, &v->ino, why, why_size);
    if (r == RD_MISSING)
        return TIER_MISS;
    if (r == RD_CORRUPT)
        return TIER_REJECTED;
    lru_touch(v->where);
    return TIER_HIT;
}

static tier_result disk_put(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, cache_value *v,
                            int promote, char *why, size_t why_size)
{
    (void)t;
    pthread_mutex_lock(&c->lock);
    tilec_cache_fault_fn fault = promote ? NULL : c->fault;
    void *user = c->fault_user;
    pthread_mutex_unlock(&c->lock);
    char name[PATH_CAP];
    cache_say(name, sizeof name, "%s%s", k->file_prefix ? k->file_prefix : "", key);
    cache_say(v->where, sizeof v->where, "%s/%s%s", c->dir, name, k->suffix);
    if (cache_publish(c->dir, name, k->suffix, v->data, v->len, !promote, fault, user, why, why_size) != 0)
        return promote ? TIER_SKIPPED : TIER_FAULT;
    if (!promote)
        cache_log(c, "wrote %s (%zu bytes)", v->where, v->len);
    if (k->bounded)
        lru_enforce(c, key);
    return TIER_HIT;
}

static void disk_remove(const cache_tier *t, tilec_cache *c, const cache_kind *k, const char *key, const cache_value *v)
{
    (void)t;
    (void)c;
    (void)k;
    (void)key;
    cdir_remove_if_same(v->where, v->dev, v->ino);
}

const cache_tier cache_tier_disk = {
    .name = "disk",
    .get = disk_get,
    .put = disk_put,
    .remove = disk_remove,
};
