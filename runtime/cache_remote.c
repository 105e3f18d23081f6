/* cache_remote.c: the cache's Redis tier (cache_remote.h). The client is
 * libhiredis, loaded with dlopen on first use and called through the few
 * functions declared here (no hiredis header at build time). Its reply and
 * context structs changed layout between 0.14 and 1.x; which one the
 * loaded library has is told by a symbol only 1.x exports. A lookup is one
 * round trip for a value of up to 64 KiB (STRLEN, GETRANGE of the first
 * piece and EXPIRE to renew the time to live, pipelined), then one per
 * further MiB: a value over the size limit is refused on its length, never
 * read whole. A store is SET with EX. The connection belongs to the
 * process that made it: a forked child makes its own. With a fleet secret
 * (cache_sign.h) every value is wrapped in a signed envelope that names
 * its key; without one the tier is read-only unless TILEC_CACHE_REDIS_WRITE
 * is 1. Socket timeouts bound every call; SIGPIPE is held back while the
 * socket is written (a server that hangs up must not kill the process). */
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
#include <unistd.h>

#include "runtime/cache_remote.h"
#include "runtime/cache_sign.h"

enum {
    REPLY_STRING = 1,
    REPLY_INTEGER = 3,
    REPLY_NIL = 4,
    REPLY_STATUS = 5,
    REPLY_ERROR = 6,
    REST_SECONDS = 30, /* after a fault, the tier rests this long */
    HOST_MAX = 256,
    HEAD_PIECE = 64 << 10, /* the first piece of a value, read with its length */
    PIECE = 1 << 20,       /* each further piece */
};

#define KEY_PREFIX "tilec:"
/* A signed value: ENVELOPE "<redis key>\n", the entry's bytes, then the
 * HMAC-SHA256 of everything before it (SIGN_TAG_LEN bytes). */
#define ENVELOPE "tilec signed 1 "

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
    pid_t owner; /* the process that made ctx: a forked child never uses it */
    time_t rest_until;
    cache_signer *signer; /* the fleet secret, or NULL */
    int writable;         /* stores are sent (a secret, or TILEC_CACHE_REDIS_WRITE=1) */
    uint64_t bytes_in;    /* value bytes received (tests: an over-limit value is not read) */
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
    cache_signer_free(r->signer);
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
    long long write = env_num("TILEC_CACHE_REDIS_WRITE", -1, 0, 1, why, why_size);
    if (!why[0] && mb >= 0 && parse_spec(r, spec, why, why_size) == 0)
        r->signer = cache_signer_from_env(why, why_size); /* a bad secret: no tier, never an unsigned one */
    if (why[0] || mb < 0) {
        if (!strstr(why, "no remote tier"))
            rsay(why + strlen(why), why_size - strlen(why), "; no remote tier");
        cache_remote_free(r);
        return NULL;
    }
    r->writable = write >= 0 ? (int)write : r->signer != NULL;
    return r;
}

const char *cache_remote_mode(const cache_remote *r)
{
    if (!r)
        return NULL;
    if (r->signer)
        return r->writable ? "signed, read-write" : "signed, read-only (TILEC_CACHE_REDIS_WRITE=0)";
    return r->writable ? "unsigned, read-write (TILEC_CACHE_REDIS_WRITE=1)"
                       : "unsigned, read-only (no TILEC_CACHE_SECRET_FILE or TILEC_CACHE_SECRET)";
}

uint64_t cache_remote_bytes_in(cache_remote *r)
{
    pthread_mutex_lock(&r->lock);
    uint64_t n = r->bytes_in;
    pthread_mutex_unlock(&r->lock);
    return n;
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
    r->owner = getpid();
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
    if (r->ctx && r->owner != getpid()) {
        /* a forked child: the socket is shared with the parent, whose
         * replies would come here (and ours there). Free the child's copy
         * of the descriptor and its buffers (redisFree sends nothing: no
         * QUIT, no shutdown) and connect anew. */
        drop(r);
        r->rest_until = 0;
    }
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

/* A reply that is not what a lookup expects: a foreign value (WRONGTYPE),
 * or a fault. */
static remote_result odd_reply(cache_remote *r, reply_view v, const char *k, char *why, size_t why_size)
{
    if (v.type == REPLY_ERROR && v.str && !strncmp(v.str, "WRONGTYPE", 9)) {
        rsay(why, why_size, "redis %s: %s holds no string (a foreign value)", r->name, k);
        return REMOTE_REJECTED; /* the next put replaces it */
    }
    if (v.type == REPLY_ERROR) {
        char said[160];
        rsay(said, sizeof said, "lookup refused: %.*s", (int)(v.len < 120 ? v.len : 120), v.str ? v.str : "");
        return fault(r, why, why_size, said);
    }
    return fault(r, why, why_size, "lookup answered with an unexpected reply type");
}

/* GETRANGE k from..to into buf (exactly to - from + 1 bytes expected),
 * one round trip. */
static remote_result get_piece(cache_remote *r, const char *k, size_t from, size_t to, char *buf, char *why,
                               size_t why_size)
{
    char a[32], b[32];
    rsay(a, sizeof a, "%zu", from);
    rsay(b, sizeof b, "%zu", to);
    const char *get[4] = {"GETRANGE", k, a, b};
    size_t get_len[4] = {8, strlen(k), strlen(a), strlen(b)};
    const char *const *argv[1] = {get};
    const size_t *const lens[1] = {get_len};
    int argc[1] = {4};
    void *raw;
    if (roundtrip(r, 1, argc, argv, lens, &raw) != 0)
        return fault(r, why, why_size, "lookup failed");
    reply_view v = view(r, raw);
    remote_result res = REMOTE_HIT;
    if (v.type != REPLY_STRING) {
        res = odd_reply(r, v, k, why, why_size);
    } else if (v.len != to - from + 1) {
        rsay(why, why_size, "redis %s: the value of %s changed while it was read", r->name, k);
        res = REMOTE_REJECTED;
    } else {
        memcpy(buf, v.str, v.len);
        r->bytes_in += v.len;
    }
    r->hi.free_reply(raw);
    return res;
}

/* The value's length (STRLEN), its first piece and EXPIRE, pipelined;
 * then the rest in pieces when the length is within the limit. */
static remote_result do_get(cache_remote *r, void *arg, char *why, size_t why_size)
{
    get_arg *a = arg;
    char k[160], last[32], ttl[32];
    size_t head = r->max_bytes < HEAD_PIECE ? r->max_bytes : HEAD_PIECE;
    rsay(k, sizeof k, KEY_PREFIX "%s", a->key);
    rsay(last, sizeof last, "%zu", head - 1);
    rsay(ttl, sizeof ttl, "%lld", r->ttl);
    const char *len[2] = {"STRLEN", k}, *get[4] = {"GETRANGE", k, "0", last}, *exp[3] = {"EXPIRE", k, ttl};
    size_t len_len[2] = {6, strlen(k)}, get_len[4] = {8, strlen(k), 1, strlen(last)},
           exp_len[3] = {6, strlen(k), strlen(ttl)};
    const char *const *argv[3] = {len, get, exp};
    const size_t *const lens[3] = {len_len, get_len, exp_len};
    int argc[3] = {2, 4, 3};
    void *raw[3];
    if (roundtrip(r, 3, argc, argv, lens, raw) != 0)
        return fault(r, why, why_size, "lookup failed");
    reply_view n = view(r, raw[0]), v = view(r, raw[1]);
    remote_result res = REMOTE_MISS;
    size_t total = n.type == REPLY_INTEGER && n.integer > 0 ? (size_t)n.integer : 0;
    if (v.type == REPLY_STRING)
        r->bytes_in += v.len;
    if (n.type != REPLY_INTEGER) {
        res = odd_reply(r, n, k, why, why_size);
    } else if (total > r->max_bytes) {
        rsay(why, why_size, "redis %s: the value of %s is over the %zu-byte limit", r->name, k, r->max_bytes);
        res = REMOTE_REJECTED;
    } else if (total > 0 && v.type != REPLY_STRING) {
        res = odd_reply(r, v, k, why, why_size);
    } else if (total > 0 && v.len != (total < head ? total : head)) {
        rsay(why, why_size, "redis %s: the value of %s changed while it was read", r->name, k);
        res = REMOTE_REJECTED;
    } else if (total > 0 && !(*a->data = malloc(total))) {
        rsay(why, why_size, "redis %s: out of memory for %zu bytes", r->name, total);
        res = REMOTE_FAULT;
    } else if (total > 0) {
        memcpy(*a->data, v.str, v.len);
        res = REMOTE_HIT;
    }
    r->hi.free_reply(raw[0]);
    r->hi.free_reply(raw[1]);
    r->hi.free_reply(raw[2]);
    for (size_t at = head; res == REMOTE_HIT && at < total; at += PIECE) {
        size_t to = total - at > PIECE ? at + PIECE : total;
        res = get_piece(r, k, at, to - 1, (char *)*a->data + at, why, why_size);
    }
    if (res == REMOTE_HIT) {
        *a->len = total;
    } else {
        free(*a->data);
        *a->data = NULL;
    }
    return res;
}

/* A signed value's envelope for redis key k: "tilec signed 1 <k>\n". */
static size_t envelope(const char *k, char *out, size_t cap)
{
    int n = snprintf(out, cap, ENVELOPE "%s\n", k);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* The entry inside a value: with a secret, only a value signed for this
 * key with the secret; without one, an enveloped value is unwrapped (not
 * checked: nothing is) and a bare one taken as it is. */
static remote_result unwrap(cache_remote *r, const char *key, void **data, size_t *len, char *why, size_t why_size)
{
    char k[160], env[200];
    rsay(k, sizeof k, KEY_PREFIX "%s", key);
    size_t elen = envelope(k, env, sizeof env), plen = strlen(ENVELOPE);
    char *p = *data;
    int enveloped = *len >= plen && !memcmp(p, ENVELOPE, plen);
    const char *bad = NULL;
    if (enveloped && (*len < elen + SIGN_TAG_LEN || memcmp(p, env, elen) != 0))
        bad = "it is signed for another key";
    else if (r->signer && !enveloped)
        bad = "it is not signed (a secret is configured)";
    else if (r->signer && !cache_sign_check(r->signer, p, *len - SIGN_TAG_LEN, (const uint8_t *)p + *len - SIGN_TAG_LEN))
        bad = "its signature is not the fleet secret's";
    if (bad) {
        rsay(why, why_size, "redis %s: the value of %s is refused: %s", r->name, k, bad);
        free(*data);
        *data = NULL;
        *len = 0;
        return REMOTE_REJECTED;
    }
    if (enveloped) {
        *len -= elen + SIGN_TAG_LEN;
        memmove(p, p + elen, *len);
    }
    return REMOTE_HIT;
}

remote_result cache_remote_get(cache_remote *r, const char *key, void **data, size_t *len, char *why,
                               size_t why_size)
{
    *data = NULL;
    *len = 0;
    get_arg a = {key, data, len};
    remote_result res = with_connection(r, do_get, &a, why, why_size);
    return res == REMOTE_HIT ? unwrap(r, key, data, len, why, why_size) : res;
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
    why[0] = 0;
    if (!r->writable)
        return REMOTE_SKIPPED;
    char k[160], env[200];
    rsay(k, sizeof k, KEY_PREFIX "%s", key);
    size_t elen = r->signer ? envelope(k, env, sizeof env) : 0, total = len + (r->signer ? elen + SIGN_TAG_LEN : 0);
    if (total > r->max_bytes) {
        rsay(why, why_size, "redis %s: a %zu-byte entry is over the %zu-byte limit; not stored there", r->name, total,
             r->max_bytes);
        return REMOTE_REJECTED;
    }
    char *signed_value = NULL;
    if (r->signer) {
        if (!(signed_value = malloc(total))) {
            rsay(why, why_size, "redis %s: out of memory for %zu bytes; not stored there", r->name, total);
            return REMOTE_REJECTED;
        }
        memcpy(signed_value, env, elen);
        memcpy(signed_value + elen, data, len);
        if (cache_sign(r->signer, signed_value, elen + len, (uint8_t *)signed_value + elen + len) != 0) {
            free(signed_value);
            rsay(why, why_size, "redis %s: libcrypto could not sign %s; not stored there", r->name, k);
            return REMOTE_REJECTED;
        }
        data = signed_value;
        len = total;
    }
    put_arg a = {key, data, len};
    remote_result res = with_connection(r, do_put, &a, why, why_size);
    free(signed_value);
    return res;
}
