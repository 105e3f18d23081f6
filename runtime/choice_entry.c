/* choice_entry.c: the multi-kernel's stored choices in the directory and
 * the Redis tier (choice_entry.h). The Redis calls are cache_remote_get
 * and cache_remote_put (cache_remote.h) under the key "choice-<hash>". */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/choice_entry.h"
#include "tilec/cache.h"

#define CHOICE_MAGIC "tilec multi-kernel choice 2 "
enum { LINE_MAX_ = 128 };

/* The entry's line for v under hash. */
static int entry_line(const char *hash, int v, char line[LINE_MAX_])
{
    char body[64];
    int n = snprintf(body, sizeof body, "%d %s", v, hash);
    return snprintf(line, LINE_MAX_, CHOICE_MAGIC "%s %016" PRIx64 "\n", body,
                    tilec_bundle_checksum(body, (size_t)n));
}

/* The variant of an entry's bytes (never read past len), or -1 with why. */
static int entry_parse(const char *data, size_t len, const char *hash, uint32_t nvariants, char *why, size_t wsize)
{
    const char *m = CHOICE_MAGIC;
    size_t ml = strlen(m);
    if (len < ml || memcmp(data, m, ml)) {
        snprintf(why, wsize, "not a multi-kernel choice (no \"%s\" line)", CHOICE_MAGIC);
        return -1;
    }
    int v = 0;
    size_t i = ml, digits = 0;
    while (i < len && data[i] >= '0' && data[i] <= '9' && digits < 3)
        v = v * 10 + (data[i++] - '0'), digits++;
    if (!digits || (uint32_t)v >= nvariants) {
        snprintf(why, wsize, "no variant of the %u this kernel has", nvariants);
        return -1;
    }
    char want[LINE_MAX_];
    int n = entry_line(hash, v, want);
    if ((size_t)n != len || memcmp(want, data, len)) {
        snprintf(why, wsize, "the entry of another key, or torn (want %.*s)", n - 1, want);
        return -1;
    }
    return v;
}

static void file_path(const choice_store *s, const char *hash, char *out, size_t size)
{
    snprintf(out, size, "%s/multikernel-%s.choice", s->dir, hash);
}

/* Write bytes as the file of hash: a temporary file, fsync, rename. */
static void file_put(const choice_store *s, const char *hash, const char *data, size_t len)
{
    char path[PATH_MAX], tmp[PATH_MAX + 16];
    file_path(s, hash, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return;
    if (write(fd, data, len) != (ssize_t)len || fsync(fd) != 0) {
        close(fd);
        unlink(tmp);
        return;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0)
        unlink(tmp);
}

static cache_remote *remote_of(choice_store *s)
{
    if (!s->remote_tried) {
        char why[256]; /* a malformed setting: the kernel cache's handle reports it */
        s->remote = cache_remote_from_env(why, sizeof why);
        s->remote_tried = 1;
    }
    return s->remote;
}

static void redis_key(const char *hash, char out[64]) { snprintf(out, 64, "choice-%s", hash); }

int choice_get(choice_store *s, const char *hash, uint32_t nvariants, choice_where *where, char *refused,
               size_t refused_size)
{
    *where = CHOICE_NONE;
    refused[0] = 0;
    if (s->dir[0]) {
        char path[PATH_MAX], buf[LINE_MAX_];
        file_path(s, hash, path, sizeof path);
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
            ssize_t n = read(fd, buf, sizeof buf);
            close(fd);
            char why[200];
            int v = n > 0 ? entry_parse(buf, (size_t)n, hash, nvariants, why, sizeof why) : -1;
            if (v >= 0) {
                *where = CHOICE_DISK;
                return v;
            }
            snprintf(refused, refused_size, "%s: %s", path, n > 0 ? why : "empty or unreadable");
        }
    }
    cache_remote *r = remote_of(s);
    if (!r)
        return -1;
    char key[64], why[512];
    void *data = NULL;
    size_t len = 0;
    redis_key(hash, key);
    if (cache_remote_get(r, key, &data, &len, why, sizeof why) != REMOTE_HIT)
        return -1; /* a miss, or a fault: timed here (the tier rests after a fault) */
    int v = entry_parse(data, len, hash, nvariants, why, sizeof why);
    if (v >= 0) {
        *where = CHOICE_REDIS;
        if (s->dir[0])
            file_put(s, hash, data, len); /* the next process reads the directory */
    } else {
        snprintf(refused, refused_size, "redis %s, %s: %s", cache_remote_name(r), key, why);
    }
    free(data);
    return v;
}

void choice_put(choice_store *s, const char *hash, int v)
{
    char line[LINE_MAX_];
    int n = entry_line(hash, v, line);
    if (s->dir[0])
        file_put(s, hash, line, (size_t)n);
    cache_remote *r = remote_of(s);
    if (r) {
        char key[64], why[512];
        redis_key(hash, key);
        (void)cache_remote_put(r, key, line, (size_t)n, why, sizeof why); /* read-only, resting or down: skipped */
    }
}

void choice_store_close(choice_store *s)
{
    cache_remote_free(s->remote);
    s->remote = NULL;
    s->remote_tried = 0;
}
