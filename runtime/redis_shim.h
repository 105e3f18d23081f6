/* redis_shim.h: the Redis client interface that libtilec loads at run time
 * from libtilec_redis.so (shim/redis.c), a small shared object built
 * against hiredis's own headers and linked with -lhiredis (and
 * -lhiredis_ssl where hiredis has TLS). libtilec never sees a hiredis
 * struct: connections are opaque, replies are copied into this flat,
 * tilec-owned struct. The one exported symbol is
 * tilec_redis_shim_v1(), which returns the function table; `abi` must be
 * TILEC_REDIS_SHIM_ABI (a shim of another build is refused). Plain C, no
 * hiredis header: cache_remote.c includes it. */
#ifndef TILEC_RUNTIME_REDIS_SHIM_H
#define TILEC_RUNTIME_REDIS_SHIM_H

#include <stddef.h>

#define TILEC_REDIS_SHIM_ABI 1
#define TILEC_REDIS_SHIM_SYMBOL "tilec_redis_shim_v1"

enum {
    TILEC_REDIS_STRING = 1,
    TILEC_REDIS_INTEGER,
    TILEC_REDIS_NIL,
    TILEC_REDIS_STATUS,
    TILEC_REDIS_ERROR,
    TILEC_REDIS_OTHER, /* an array or a RESP3 type: no command tilec sends answers one */
};

/* Where to connect: a TCP host and port, or a unix socket path. */
typedef struct tilec_redis_target {
    const char *host; /* a name or address (TCP), else NULL */
    int port;
    const char *path; /* the socket's path (unix), else NULL */
    int tls;          /* rediss://: TLS over TCP */
    const char *cacert; /* TLS: a CA bundle file, or NULL for the system's */
    long timeout_ms;    /* connect, and every read and write */
} tilec_redis_target;

/* One reply; str (len bytes, NUL-terminated) lives until free_reply. */
typedef struct tilec_redis_reply {
    int type;
    long long integer;
    const char *str;
    size_t len;
    void *own; /* the shim's */
} tilec_redis_reply;

typedef struct tilec_redis_shim {
    int abi;                     /* TILEC_REDIS_SHIM_ABI */
    const char *hiredis_version; /* "0.14.1": the headers it was built with */
    int tls;                     /* 1: built with hiredis_ssl */
    /* A connection, or NULL with a sentence in why (never a credential). */
    void *(*connect)(const tilec_redis_target *t, char *why, size_t why_size);
    /* Queue one command (pipelined): 0, or -1 (the connection is broken). */
    int (*append)(void *conn, int argc, const char **argv, const size_t *lens);
    /* The next reply: 0, or -1 (broken: the connection's error says why). */
    int (*get_reply)(void *conn, tilec_redis_reply *out);
    void (*free_reply)(tilec_redis_reply *r);
    /* The connection's error, "" when none. */
    const char *(*error)(void *conn);
    void (*close)(void *conn);
} tilec_redis_shim;

typedef const tilec_redis_shim *(*tilec_redis_shim_fn)(void);

#endif
