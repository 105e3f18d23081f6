/* cache_remote.c: the cache's Redis tier (cache_remote.h). The client is
 * libhiredis, loaded with dlopen on first use and called through the few
 * functions declared here (no hiredis header at build time). Its reply and
 * context structs changed layout between 0.14 and 1.x; which one the
 * loaded library has is told by a symbol only 1.x exports. A lookup is one
 * round trip (GETRANGE of at most the size limit, and EXPIRE to renew the
 * time to live, pipelined); a store is SET with EX. Socket timeouts bound
 * every call; SIGPIPE is held back while the socket is written (a server
 * that hangs up must not kill the process). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "runtime/cache_remote.h"

enum {
    REPLY_STRING = 1,
    REPLY_INTEGER = 3,
    REPLY_NIL = 4,
    REPLY_STATUS = 5,
    REPLY_ERROR = 6,
    REST_SECONDS = 30, /* after a fault, the tier rests this long */
    HOST_MAX = 256,
};

#define KEY_PREFIX "tilec:"

/* hiredis 0.14's redisReply, then 1.x's (a double and a type tag added). */
typedef struct reply014 {
    int type;
    long long integer;
    size_t len;
    char *str;
} reply014;
typedef struct reply1 {
    int type;
    long long integer;
    double dval;
    size_t len;
    char *str;
} reply1;
/* The start of redisContext: 1.x puts a function table before err. */
typedef struct ctx014 {
    int err;
    char errstr[128];
} ctx014;
typedef struct ctx1 {
    const void *funcs;
    int err;
    char errstr[128];
} ctx1;

/* The reply fields we read, whichever layout. */
typedef struct reply_view {
    int type;
    long long integer;
    const char *str;
    size_t len;
} reply_view;

typedef struct hiredis {
    void *lib;
    int v1; /* the 1.x layouts */
    void *(*connect)(const char *ip, int port, struct timeval tv);
    int (*set_timeout)(void *c, struct timeval tv);
    int (*append_argv)(void *c, int argc, const char **argv, const size_t *argvlen);
    int (*get_reply)(void *c, void **reply);
    void (*free_reply)(void *reply);
    void (*free_ctx)(void *c);
} hiredis;

struct cache_remote {
    pthread_mutex_t lock; /* one request at a time on the connection */
    char host[HOST_MAX];
    int port;
    char name[HOST_MAX + 16];
    char *password, *user;
    long timeout_ms;
    long long ttl;
    size_t max_bytes;
    char *lib_path; /* TILEC_HIREDIS */
    hiredis hi;
    int loaded; /* 1: hi resolved, -1: could not be */
    void *ctx;  /* the connection, or NULL */
    time_t rest_until;
};

static void rsay(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void rsay(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

/* ---- configuration ---- */

static long long env_num(const char *name, long long dflt, long long lo, long long hi, char *why, size_t why_size)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || *end || n < lo || n > hi) {
        rsay(why, why_size, "%s=%s is not a number from %lld to %lld", name, v, lo, hi);
        return -1;
    }
    return n;
}

/* host:port or [addr]:port into r. 0, or -1 with why. */
static int parse_spec(cache_remote *r, const char *spec, char *why, size_t why_size)
{
    const char *colon = strrchr(spec, ':');
    const char *h = spec, *hend = colon;
    if (spec[0] == '[') {
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':')
            goto bad;
        h = spec + 1;
        hend = close;
        colon = close + 1;
    }
    if (!colon || hend == h || (size_t)(hend - h) >= sizeof r->host)
        goto bad;
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno || *end || colon[1] == 0 || port < 1 || port > 65535)
        goto bad;
    memcpy(r->host, h, (size_t)(hend - h));
    r->host[hend - h] = 0;
    r->port = (int)port;
    rsay(r->name, sizeof r->name, "%s", spec);
    return 0;
bad:
    rsay(why, why_size, "TILEC_CACHE_REDIS=%s is not host:port; no remote tier", spec);
    return -1;
}

static char *dup_env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strdup(v) : NULL;
}

void cache_remote_free(cache_remote *r)
{
    if (!r)
        return;
    if (r->ctx)
        r->hi.free_ctx(r->ctx);
    /* the library stays loaded: unloading it while another cache of the
     * process uses it would pull the code from under that one */
    free(r->password);
    free(r->user);
    free(r->lib_path);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

cache_remote *cache_remote_from_env(char *why, size_t why_size)
{
    why[0] = 0;
    const char *spec = getenv("TILEC_CACHE_REDIS");
    if (!spec || !*spec)
        return NULL;
    cache_remote *r = calloc(1, sizeof *r);
    if (!r) {
        rsay(why, why_size, "out of memory; no remote tier");
        return NULL;
    }
    if (pthread_mutex_init(&r->lock, NULL) != 0) {
        free(r);
        rsay(why, why_size, "cannot make a mutex; no remote tier");
        return NULL;
    }
    r->timeout_ms = (long)env_num("TILEC_CACHE_REDIS_TIMEOUT_MS", 500, 1, 600000, why, why_size);
    r->ttl = env_num("TILEC_CACHE_REDIS_TTL", 7 * 24 * 3600, 1, 100LL * 365 * 24 * 3600, why, why_size);
    long long mb = env_num("TILEC_CACHE_REDIS_MAX_BYTES", 64 << 20, 64, 512LL << 20, why, why_size);
    r->max_bytes = (size_t)mb;
    r->password = dup_env("TILEC_CACHE_REDIS_PASSWORD");
    r->user = dup_env("TILEC_CACHE_REDIS_USER");
    r->lib_path = dup_env("TILEC_HIREDIS");
    if (why[0] || mb < 0 || parse_spec(r, spec, why, why_size) != 0) {
        if (!strstr(why, "no remote tier"))
            rsay(why + strlen(why), why_size - strlen(why), "; no remote tier");
        cache_remote_free(r);
        return NULL;
    }
    return r;
}

const char *cache_remote_name(const cache_remote *r) { return r ? r->name : NULL; }

/* ---- the library ---- */

static int load_hiredis(cache_remote *r, char *why, size_t why_size)
{
    if (r->loaded)
        return r->loaded > 0 ? 0 : -1;
    static const char *const names[] = {"libhiredis.so.1.1.0", "libhiredis.so.1", "libhiredis.so.0.14",
                                        "libhiredis.so"};
    void *lib = NULL;
    if (r->lib_path)
        lib = dlopen(r->lib_path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    /* one already loaded (by an earlier cache of this process) first: a
     * search of the library path for names that are absent costs more
     * than the lookup itself */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; !lib && !r->lib_path && i < sizeof names / sizeof names[0]; i++)
            lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE | (pass ? 0 : RTLD_NOLOAD));
    r->loaded = -1;
    if (!lib) {
        rsay(why, why_size, "redis %s: cannot load libhiredis (%s): %s", r->name,
             r->lib_path ? r->lib_path : "libhiredis.so*", dlerror());
        return -1;
    }
    hiredis *h = &r->hi;
    h->lib = lib;
    h->v1 = dlsym(lib, "redisSetPushCallback") != NULL;
    *(void **)&h->connect = dlsym(lib, "redisConnectWithTimeout");
    *(void **)&h->set_timeout = dlsym(lib, "redisSetTimeout");
    *(void **)&h->append_argv = dlsym(lib, "redisAppendCommandArgv");
    *(void **)&h->get_reply = dlsym(lib, "redisGetReply");
    *(void **)&h->free_reply = dlsym(lib, "freeReplyObject");
    *(void **)&h->free_ctx = dlsym(lib, "redisFree");
    if (!h->connect || !h->set_timeout || !h->append_argv || !h->get_reply || !h->free_reply || !h->free_ctx) {
        rsay(why, why_size, "redis %s: the libhiredis loaded lacks a function tilec needs", r->name);
        return -1;
    }
    r->loaded = 1;
    return 0;
}

static int ctx_err(const cache_remote *r, const char **msg)
{
    if (r->hi.v1) {
        const ctx1 *c = r->ctx;
        *msg = c->errstr;
        return c->err;
    }
    const ctx014 *c = r->ctx;
    *msg = c->errstr;
    return c->err;
}

static reply_view view(const cache_remote *r, const void *reply)
{
    reply_view v;
    if (r->hi.v1) {
        const reply1 *x = reply;
        v = (reply_view){x->type, x->integer, x->str, x->len};
    } else {
        const reply014 *x = reply;
        v = (reply_view){x->type, x->integer, x->str, x->len};
    }
    return v;
}

/* ---- requests ---- */

static void drop(cache_remote *r)
{
    if (r->ctx)
        r->hi.free_ctx(r->ctx);
    r->ctx = NULL;
}

/* A fault: drop the connection, rest, and say why. */
static remote_result fault(cache_remote *r, char *why, size_t why_size, const char *what)
{
    const char *msg = "";
    if (r->ctx && ctx_err(r, &msg) == 0)
        msg = "";
    rsay(why, why_size, "redis %s: %s%s%s", r->name, what, *msg ? ": " : "", msg);
    drop(r);
    r->rest_until = time(NULL) + REST_SECONDS;
    return REMOTE_FAULT;
}

/* Send argc commands' worth of argv (pipelined) and read n replies into
 * replies (the caller frees them). 0, or -1 (the connection is broken). */
static int roundtrip(cache_remote *r, int ncmd, const int *argc, const char *const *const *argv,
                     const size_t *const *argvlen, void **replies)
{
    for (int i = 0; i < ncmd; i++)
        if (r->hi.append_argv(r->ctx, argc[i], (const char **)argv[i], argvlen[i]) != 0)
            return -1;
    for (int i = 0; i < ncmd; i++) {
        replies[i] = NULL;
        if (r->hi.get_reply(r->ctx, &replies[i]) != 0 || !replies[i]) {
            for (int j = 0; j < i; j++)
                r->hi.free_reply(replies[j]);
            return -1;
        }
    }
    return 0;
}

/* One command whose reply is a status ("+OK"): REMOTE_HIT, or a fault
 * named `what` (the server's error quoted). */
static remote_result status_command(cache_remote *r, int argc, const char *const *argv, const size_t *argvlen,
                                    const char *what, char *why, size_t why_size)
{
    void *raw;
    char said[160];
    rsay(said, sizeof said, "%s failed", what);
    if (roundtrip(r, 1, &argc, &argv, &argvlen, &raw) != 0)
        return fault(r, why, why_size, said);
    reply_view v = view(r, raw);
    int ok = v.type == REPLY_STATUS;
    rsay(said, sizeof said, "%s refused: %.*s", what, (int)(v.len < 120 ? v.len : 120), v.str ? v.str : "");
    r->hi.free_reply(raw);
    return ok ? REMOTE_HIT : fault(r, why, why_size, said);
}

/* Connected (and authenticated), or a fault. */
static remote_result connect_once(cache_remote *r, char *why, size_t why_size)
{
    if (r->ctx)
        return REMOTE_HIT;
    if (load_hiredis(r, why, why_size) != 0) {
        r->rest_until = time(NULL) + REST_SECONDS;
        return REMOTE_FAULT;
    }
    struct timeval tv = {r->timeout_ms / 1000, (r->timeout_ms % 1000) * 1000};
    r->ctx = r->hi.connect(r->host, r->port, tv);
    if (!r->ctx) {
        rsay(why, why_size, "redis %s: out of memory", r->name);
        return REMOTE_FAULT;
    }
    const char *msg;
    if (ctx_err(r, &msg) != 0)
        return fault(r, why, why_size, "cannot connect");
    if (r->hi.set_timeout(r->ctx, tv) != 0)
        return fault(r, why, why_size, "cannot set the timeout");
    if (!r->password)
        return REMOTE_HIT;
    const char *argv[3] = {"AUTH", r->user ? r->user : r->password, r->password};
    size_t len[3] = {4, strlen(argv[1]), strlen(r->password)};
    return status_command(r, r->user ? 3 : 2, argv, len, "AUTH", why, why_size);
}

/* Hold SIGPIPE back in this thread while the socket is used; a SIGPIPE
 * raised meanwhile is taken off the pending set before unblocking. */
typedef struct pipe_guard {
    sigset_t old;
} pipe_guard;

static void pipe_block(pipe_guard *g)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &s, &g->old);
}

static void pipe_restore(pipe_guard *g)
{
    if (!sigismember(&g->old, SIGPIPE)) {
        sigset_t s, pend;
        sigemptyset(&s);
        sigaddset(&s, SIGPIPE);
        struct timespec zero = {0, 0};
        if (sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE))
            (void)sigtimedwait(&s, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* Lock, skip while resting, connect; then run fn. */
typedef remote_result (*remote_op)(cache_remote *r, void *arg, char *why, size_t why_size);

static remote_result with_connection(cache_remote *r, remote_op fn, void *arg, char *why, size_t why_size)
{
    why[0] = 0;
    pthread_mutex_lock(&r->lock);
    remote_result res = REMOTE_RESTING;
    if (time(NULL) >= r->rest_until) {
        pipe_guard g;
        pipe_block(&g);
        res = connect_once(r, why, why_size);
        if (res == REMOTE_HIT)
            res = fn(r, arg, why, why_size);
        pipe_restore(&g);
    }
    pthread_mutex_unlock(&r->lock);
    return res;
}

typedef struct get_arg {
    const char *key;
    void **data;
    size_t *len;
} get_arg;

static remote_result do_get(cache_remote *r, void *arg, char *why, size_t why_size)
{
    get_arg *a = arg;
    char k[160], last[32], ttl[32];
    rsay(k, sizeof k, KEY_PREFIX "%s", a->key);
    rsay(last, sizeof last, "%zu", r->max_bytes); /* one byte past the limit tells a value over it */
    rsay(ttl, sizeof ttl, "%lld", r->ttl);
    const char *get[4] = {"GETRANGE", k, "0", last}, *exp[3] = {"EXPIRE", k, ttl};
    size_t get_len[4] = {8, strlen(k), 1, strlen(last)}, exp_len[3] = {6, strlen(k), strlen(ttl)};
    const char *const *argv[2] = {get, exp};
    const size_t *const lens[2] = {get_len, exp_len};
    int argc[2] = {4, 3};
    void *raw[2];
    if (roundtrip(r, 2, argc, argv, lens, raw) != 0)
        return fault(r, why, why_size, "lookup failed");
    reply_view v = view(r, raw[0]);
    remote_result res = REMOTE_MISS;
    if (v.type == REPLY_ERROR && v.str && !strncmp(v.str, "WRONGTYPE", 9)) {
        rsay(why, why_size, "redis %s: %s holds no string (a foreign value)", r->name, k);
        res = REMOTE_REJECTED; /* the next put replaces it */
    } else if (v.type == REPLY_ERROR) {
        char said[160];
        rsay(said, sizeof said, "lookup refused: %.*s", (int)(v.len < 120 ? v.len : 120), v.str ? v.str : "");
        res = fault(r, why, why_size, said);
    } else if (v.type != REPLY_STRING && v.type != REPLY_NIL) {
        res = fault(r, why, why_size, "lookup answered with an unexpected reply type");
    } else if (v.type == REPLY_STRING && v.len > r->max_bytes) {
        rsay(why, why_size, "redis %s: the value of %s is over the %zu-byte limit", r->name, k, r->max_bytes);
        res = REMOTE_REJECTED;
    } else if (v.type == REPLY_STRING && v.len > 0) {
        *a->data = malloc(v.len);
        if (*a->data) {
            memcpy(*a->data, v.str, v.len);
            *a->len = v.len;
            res = REMOTE_HIT;
        } else {
            rsay(why, why_size, "redis %s: out of memory for %zu bytes", r->name, v.len);
            res = REMOTE_FAULT;
        }
    }
    r->hi.free_reply(raw[0]);
    r->hi.free_reply(raw[1]);
    return res;
}

remote_result cache_remote_get(cache_remote *r, const char *key, void **data, size_t *len, char *why,
                               size_t why_size)
{
    *data = NULL;
    *len = 0;
    get_arg a = {key, data, len};
    return with_connection(r, do_get, &a, why, why_size);
}

typedef struct put_arg {
    const char *key;
    const void *data;
    size_t len;
} put_arg;

static remote_result do_put(cache_remote *r, void *arg, char *why, size_t why_size)
{
    put_arg *a = arg;
    char k[160], ttl[32];
    rsay(k, sizeof k, KEY_PREFIX "%s", a->key);
    rsay(ttl, sizeof ttl, "%lld", r->ttl);
    const char *argv[5] = {"SET", k, a->data, "EX", ttl};
    size_t len[5] = {3, strlen(k), a->len, 2, strlen(ttl)};
    return status_command(r, 5, argv, len, "store", why, why_size);
}

remote_result cache_remote_put(cache_remote *r, const char *key, const void *data, size_t len, char *why,
                               size_t why_size)
{
    if (len > r->max_bytes) {
        rsay(why, why_size, "redis %s: a %zu-byte bundle is over the %zu-byte limit; not stored there", r->name, len,
             r->max_bytes);
        return REMOTE_REJECTED;
    }
    put_arg a = {key, data, len};
    return with_connection(r, do_put, &a, why, why_size);
}
