/* cache_note.c: the kernel cache's messages, below every file of the
 * cache: formatting that may truncate, errno's text, the "tilec cache:"
 * log lines (TILEC_LOGS=cache) and the last error with its counter; and
 * the check of a key every entry point makes. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/cache_shared.h"

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
void cache_set_err_locked(tilec_cache *c, const char *msg)
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
    cache_set_err_locked(c, msg);
    pthread_mutex_unlock(&c->lock);
}

int cache_key_valid(const char *k) { return k && tilec_cache_key_ok(k, strnlen(k, TILEC_CACHE_MAX_KEY + 1)); }
