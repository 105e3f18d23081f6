/* cache_remote.h: the kernel cache's remote tier, a Redis server that a
 * fleet shares (cache_remote.c). Values are entries (serialized bundles,
 * records) under "tilec:<key>", validated by the caller exactly like
 * files; with a fleet secret each is signed (HMAC-SHA256 over its Redis
 * key and bytes) and a value without a valid tag is REMOTE_REJECTED. The client is
 * libtilec_redis.so (redis_shim.h), a shim over hiredis opened with dlopen
 * on first use: tilec builds and runs without hiredis. Every fault (no library, server down, slow, refused, a
 * dropped connection) comes back as REMOTE_FAULT with a sentence; after
 * one the tier rests for a while, so a dead server costs one timeout, not
 * one per lookup. Thread-safe. */
#ifndef TILEC_RUNTIME_CACHE_REMOTE_H
#define TILEC_RUNTIME_CACHE_REMOTE_H

#include <stddef.h>
#include <stdint.h>

typedef struct cache_remote cache_remote;

/* TILEC_CACHE_REDIS parsed: host:port, [v6addr]:port,
 * redis://[user[:password]@]host[:port][/db], rediss://... (TLS) or
 * unix://[user[:password]@]/path[?db=N]; user and password
 * percent-decoded; the port 6379 and the database 0 by default. */
typedef struct redis_url {
    int tls;         /* rediss:// */
    int unix_socket; /* unix://: addr is the socket's path */
    char addr[256];  /* the host, or the socket's path */
    int port;
    int db;
    char *user, *password; /* malloc'd, or NULL */
    char shown[512];       /* the value with the password as *** (every message uses it) */
} redis_url;

/* 0, or -1 with why (exact, never a credential) and nothing to free. */
int redis_url_parse(const char *spec, redis_url *u, char *why, size_t why_size);
void redis_url_free(redis_url *u);

typedef enum {
    REMOTE_HIT,      /* *data holds the value */
    REMOTE_MISS,     /* the server does not have it */
    REMOTE_REJECTED, /* the value is over the size limit, foreign or unsigned; why says how */
    REMOTE_FAULT,    /* the server could not be used; why says how */
    REMOTE_RESTING,  /* skipped: a fault happened less than a while ago */
    REMOTE_SKIPPED,  /* a put to a read-only tier (no secret, no TILEC_CACHE_REDIS_WRITE=1) */
} remote_result;

/* The tier TILEC_CACHE_REDIS names (redis_url), with
 * TILEC_CACHE_REDIS_PASSWORD and _USER (when the URL has none),
 * _TIMEOUT_MS, _TTL, _MAX_BYTES, _CACERT (rediss://: the CA bundle) and
 * TILEC_REDIS_SHIM (the client shim's path), the fleet secret
 * (TILEC_CACHE_SECRET_FILE or TILEC_CACHE_SECRET, cache_sign.h) and
 * TILEC_CACHE_REDIS_WRITE (0 or 1; default 1 with a secret, 0 without).
 * NULL with why "" when the variable is unset; NULL with why set when any
 * of them is malformed. Connects lazily, and again in a forked child. */
cache_remote *cache_remote_from_env(char *why, size_t why_size);
void cache_remote_free(cache_remote *r);
/* The value of TILEC_CACHE_REDIS with its password masked. */
const char *cache_remote_name(const cache_remote *r);
/* "signed, read-write", "unsigned, read-only (...)", ... */
const char *cache_remote_mode(const cache_remote *r);
/* The value bytes received so far (for tests: a refused value's are not). */
uint64_t cache_remote_bytes_in(cache_remote *r);

/* Connect now (even while resting) and PING: REMOTE_HIT, or REMOTE_FAULT
 * with why ("redis NAME: cannot connect: ...", "AUTH refused: ..."). */
remote_result cache_remote_ping(cache_remote *r, char *why, size_t why_size);

/* The value of key: a malloc'd *data of *len bytes on REMOTE_HIT. A hit
 * also renews the value's time to live. */
remote_result cache_remote_get(cache_remote *r, const char *key, void **data, size_t *len, char *why,
                               size_t why_size);
/* Store the value with the time to live. REMOTE_HIT when stored,
 * REMOTE_SKIPPED when the tier is read-only, REMOTE_REJECTED when over the
 * size limit (not sent), else as get. */
remote_result cache_remote_put(cache_remote *r, const char *key, const void *data, size_t len, char *why,
                               size_t why_size);

#endif
