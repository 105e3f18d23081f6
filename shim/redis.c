/* redis.c: libtilec_redis.so, the Redis client shim (runtime/redis_shim.h).
 * Built against hiredis's headers and linked with it, so the reply and
 * context structs are hiredis's own, whichever version is installed; TLS
 * where hiredis_ssl is (TILEC_REDIS_TLS, set by the Makefile when
 * <hiredis/hiredis_ssl.h> exists: hiredis >= 1.0 built with SSL). libtilec
 * dlopen()s it when TILEC_CACHE_REDIS is set (runtime/cache_remote.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>
#ifdef TILEC_REDIS_TLS
#include <hiredis/hiredis_ssl.h>
#endif

#include "runtime/redis_shim.h"

#define STR_(x) #x
#define STR(x) STR_(x)

const tilec_redis_shim *tilec_redis_shim_v1(void);

/* A connection: hiredis's context, and the TLS context it uses (hiredis
 * wants that kept for the connection's life). */
typedef struct conn {
    redisContext *c;
    void *ssl;
} conn;

static void shim_free(redisContext *c, void *ssl)
{
    redisFree(c);
#ifdef TILEC_REDIS_TLS
    if (ssl)
        redisFreeSSLContext(ssl);
#else
    (void)ssl;
#endif
}

static void *shim_connect(const tilec_redis_target *t, char *why, size_t why_size)
{
    void *tls_ctx = NULL;
    struct timeval tv = {t->timeout_ms / 1000, (t->timeout_ms % 1000) * 1000};
#ifndef TILEC_REDIS_TLS
    if (t->tls) {
        snprintf(why, why_size,
                 "TLS (rediss://) needs hiredis >= 1.0 with SSL (libhiredis-ssl); this client was built against "
                 "hiredis " STR(HIREDIS_MAJOR) "." STR(HIREDIS_MINOR) "." STR(HIREDIS_PATCH) " without it");
        return NULL;
    }
#endif
    redisContext *c = t->path ? redisConnectUnixWithTimeout(t->path, tv) : redisConnectWithTimeout(t->host, t->port, tv);
    if (!c) {
        snprintf(why, why_size, "out of memory");
        return NULL;
    }
    if (c->err) {
        snprintf(why, why_size, "%s", c->errstr);
        redisFree(c);
        return NULL;
    }
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        snprintf(why, why_size, "cannot set the timeout: %s", c->errstr);
        redisFree(c);
        return NULL;
    }
#ifdef TILEC_REDIS_TLS
    if (t->tls) {
        redisSSLContextError err = REDIS_SSL_CTX_NONE;
        redisSSLContext *ssl = redisCreateSSLContext(t->cacert, NULL, NULL, NULL, t->host, &err);
        if (!ssl) {
            snprintf(why, why_size, "TLS: %s", redisSSLContextGetError(err));
            redisFree(c);
            return NULL;
        }
        if (redisInitiateSSLWithContext(c, ssl) != REDIS_OK) {
            snprintf(why, why_size, "TLS handshake: %s", c->errstr);
            redisFree(c);
            redisFreeSSLContext(ssl);
            return NULL;
        }
        tls_ctx = ssl;
    }
#endif
    conn *k = malloc(sizeof *k);
    if (!k) {
        snprintf(why, why_size, "out of memory");
        shim_free(c, tls_ctx);
        return NULL;
    }
    k->c = c;
    k->ssl = tls_ctx;
    return k;
}

static int shim_append(void *k, int argc, const char **argv, const size_t *lens)
{
    return redisAppendCommandArgv(((conn *)k)->c, argc, argv, lens) == REDIS_OK ? 0 : -1;
}

static int shim_get_reply(void *k, tilec_redis_reply *out)
{
    redisContext *c = ((conn *)k)->c;
    memset(out, 0, sizeof *out);
    void *raw = NULL;
    if (redisGetReply(c, &raw) != REDIS_OK || !raw)
        return -1;
    redisReply *r = raw;
    out->own = r;
    out->integer = r->integer;
    out->str = r->str;
    out->len = r->str ? r->len : 0;
    switch (r->type) {
    case REDIS_REPLY_STRING:
        out->type = TILEC_REDIS_STRING;
        break;
    case REDIS_REPLY_INTEGER:
        out->type = TILEC_REDIS_INTEGER;
        break;
    case REDIS_REPLY_NIL:
        out->type = TILEC_REDIS_NIL;
        break;
    case REDIS_REPLY_STATUS:
        out->type = TILEC_REDIS_STATUS;
        break;
    case REDIS_REPLY_ERROR:
        out->type = TILEC_REDIS_ERROR;
        break;
    default:
        out->type = TILEC_REDIS_OTHER;
        break;
    }
    return 0;
}

static void shim_free_reply(tilec_redis_reply *r)
{
    if (r && r->own)
        freeReplyObject(r->own);
    if (r)
        memset(r, 0, sizeof *r);
}

static const char *shim_error(void *k)
{
    const redisContext *c = k ? ((conn *)k)->c : NULL;
    return c && c->err ? c->errstr : "";
}

/* Frees the descriptor and buffers; sends nothing (no QUIT): a forked
 * child's copy of its parent's connection is closed so. */
static void shim_close(void *k)
{
    if (!k)
        return;
    shim_free(((conn *)k)->c, ((conn *)k)->ssl);
    free(k);
}

const tilec_redis_shim *tilec_redis_shim_v1(void)
{
    static const tilec_redis_shim shim = {
        TILEC_REDIS_SHIM_ABI,
        STR(HIREDIS_MAJOR) "." STR(HIREDIS_MINOR) "." STR(HIREDIS_PATCH),
#ifdef TILEC_REDIS_TLS
        1,
#else
        0,
#endif
        shim_connect, shim_append, shim_get_reply, shim_free_reply, shim_error, shim_close,
    };
    return &shim;
}
