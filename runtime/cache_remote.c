/* cache_remote.c: the cache's Redis tier (cache_remote.h). The client is
 * libtilec_redis.so (runtime/redis_shim.h, shim/redis.c), a small shim
 * built against hiredis's own headers, loaded with dlopen on first use:
 * libtilec builds and runs without hiredis. A lookup is one round trip for
 * a value of up to 64 KiB (STRLEN, GETRANGE of the first piece and EXPIRE
 * to renew the time to live, pipelined), then one per further MiB: a value
 * over the size limit is refused on its length, never read whole. A store
 * is SET with EX. A new connection authenticates (AUTH [user] password)
 * and selects its database (SELECT db) first. The connection belongs to
 * the process that made it: a forked child makes its own. With a fleet
 * secret (cache_sign.h) every value is wrapped in a signed envelope that
 * names its key; without one the tier is read-only unless
 * TILEC_CACHE_REDIS_WRITE is 1. Socket timeouts bound every call; SIGPIPE
 * is held back while the socket is written (a server that hangs up must
 * not kill the process). No message carries a password: the tier is named
 * by its URL with the password masked. */
#define _GNU_SOURCE 1 /* dladdr */
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
#include "runtime/redis_shim.h"

enum {
    REST_SECONDS = 30, /* after a fault, the tier rests this long */
    HEAD_PIECE = 64 << 10, /* the first piece of a value, read with its length */
    PIECE = 1 << 20,       /* each further piece */
};

#define KEY_PREFIX "tilec:"
/* A signed value: ENVELOPE "<redis key>\n", the entry's bytes, then the
 * HMAC-SHA256 of everything before it (SIGN_TAG_LEN bytes). */
#define ENVELOPE "tilec signed 1 "
#define SHIM_NAME "libtilec_redis.so"

typedef tilec_redis_reply reply_view;

struct cache_remote {
    pthread_mutex_t lock; /* one request at a time on the connection */
    redis_url url;
    char *password, *user; /* the URL's, else TILEC_CACHE_REDIS_PASSWORD and _USER */
    long timeout_ms;
    long long ttl;
    size_t max_bytes;
    char *lib_path; /* TILEC_REDIS_SHIM */
    char *cacert;   /* TILEC_CACHE_REDIS_CACERT */
    const tilec_redis_shim *hi;
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

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* s[0..n) percent-decoded into a malloc'd string; NULL with why naming
 * `what` (never its text) on a bad escape or an encoded NUL. */
static char *pct_decode(const char *s, size_t n, const char *what, char *why, size_t why_size)
{
    char *out = malloc(n + 1), *o = out;
    if (!out) {
        rsay(why, why_size, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            *o++ = s[i];
            continue;
        }
        int hi = i + 2 < n ? hexval(s[i + 1]) : -1, lo = hi >= 0 ? hexval(s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi | lo) == 0) {
            rsay(why, why_size, "a bad percent escape in the %s (%%XX, two hex digits, not %%00)", what);
            free(out);
            return NULL;
        }
        *o++ = (char)(hi * 16 + lo);
        i += 2;
    }
    *o = 0;
    return out;
}

/* A decimal number of s[0..n) from lo to hi; -1 when it is not one. */
static long long span_num(const char *s, size_t n, long long lo, long long hi)
{
    if (n == 0 || n > 18)
        return -1;
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= lo && v <= hi ? v : -1;
}

/* host[:port] or [v6]:port of s[0..n) into u; port_needed: the bare form. */
static int parse_hostport(const char *s, size_t n, int port_needed, redis_url *u, char *why, size_t why_size)
{
    const char *h = s, *hend, *colon;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close) {
            rsay(why, why_size, "an unterminated [ in the host");
            return -1;
        }
        h = s + 1;
        hend = close;
        colon = close + 1 < s + n ? close + 1 : NULL;
        if (colon && *colon != ':') {
            rsay(why, why_size, "text after the ] of the host");
            return -1;
        }
    } else {
        colon = memchr(s, ':', n);
        hend = colon ? colon : s + n;
        if (colon && memchr(colon + 1, ':', (size_t)(s + n - colon - 1))) {
            rsay(why, why_size, "an IPv6 host must be in brackets ([::1]:6379)");
            return -1;
        }
    }
    if (hend == h) {
        rsay(why, why_size, "no host");
        return -1;
    }
    if ((size_t)(hend - h) >= sizeof u->addr) {
        rsay(why, why_size, "the host is longer than %zu bytes", sizeof u->addr - 1);
        return -1;
    }
    memcpy(u->addr, h, (size_t)(hend - h));
    u->addr[hend - h] = 0;
    u->port = 6379;
    if (!colon && port_needed) {
        rsay(why, why_size, "no port (host:port)");
        return -1;
    }
    if (colon) {
        long long p = span_num(colon + 1, (size_t)(s + n - colon - 1), 1, 65535);
        if (p < 0) {
            rsay(why, why_size, "the port '%.*s' is not a number from 1 to 65535", (int)(s + n - colon - 1), colon + 1);
            return -1;
        }
        u->port = (int)p;
    }
    return 0;
}

static int parse_db(const char *s, size_t n, redis_url *u, char *why, size_t why_size)
{
    long long d = span_num(s, n, 0, 2147483647);
    if (d < 0) {
        rsay(why, why_size, "the database '%.*s' is not a number from 0 to 2147483647", (int)n, s);
        return -1;
    }
    u->db = (int)d;
    return 0;
}

/* user[:password] of s[0..n) */
static int parse_userinfo(const char *s, size_t n, redis_url *u, char *why, size_t why_size)
{
    const char *colon = memchr(s, ':', n);
    size_t ulen = colon ? (size_t)(colon - s) : n;
    if (ulen && !(u->user = pct_decode(s, ulen, "user", why, why_size)))
        return -1;
    if (colon && !(u->password = pct_decode(colon + 1, (size_t)(s + n - colon - 1), "password", why, why_size)))
        return -1;
    if (!u->password) {
        rsay(why, why_size, "a user without a password (redis://user:password@host)");
        return -1;
    }
    return 0;
}

/* The value as messages show it: the password (everything between the
 * user's ':' and the last '@' after "://") as ***. */
static void mask(const char *spec, char *out, size_t size)
{
    const char *sep = strstr(spec, "://");
    const char *at = sep ? strrchr(sep + 3, '@') : NULL;
    const char *colon = at ? memchr(sep + 3, ':', (size_t)(at - sep - 3)) : NULL;
    if (!colon)
        rsay(out, size, "%s", spec);
    else
        rsay(out, size, "%.*s:***%s", (int)(colon - spec), spec, at);
}

int redis_url_parse(const char *spec, redis_url *u, char *why, size_t why_size)
{
    memset(u, 0, sizeof *u);
    why[0] = 0;
    mask(spec, u->shown, sizeof u->shown);
    const char *sep = strstr(spec, "://");
    size_t n = strlen(spec);
    int r = -1;
    if (!sep) {
        if (strchr(spec, '@') || strchr(spec, '/'))
            rsay(why, why_size, "not host:port, redis://, rediss:// or unix://");
        else
            r = parse_hostport(spec, n, 1, u, why, why_size);
    } else if (!strncmp(spec, "unix://", 7)) {
        u->unix_socket = 1;
        const char *p = spec + 7, *at = strrchr(p, '@'), *q = strchr(p, '?');
        if (at && (!q || at < q)) {
            if (parse_userinfo(p, (size_t)(at - p), u, why, why_size) != 0)
                goto done;
            p = at + 1;
            q = strchr(p, '?');
        }
        size_t plen = q ? (size_t)(q - p) : strlen(p);
        if (plen == 0 || p[0] != '/') {
            rsay(why, why_size, "unix:// wants an absolute socket path (unix:///path/to.sock)");
            goto done;
        }
        if (plen >= 108) {
            rsay(why, why_size, "the socket path is longer than 107 bytes");
            goto done;
        }
        memcpy(u->addr, p, plen);
        u->addr[plen] = 0;
        if (q && strncmp(q, "?db=", 4)) {
            rsay(why, why_size, "unknown query '%s' (unix:///path?db=N)", q);
            goto done;
        }
        r = q ? parse_db(q + 4, strlen(q + 4), u, why, why_size) : 0;
    } else if (!strncmp(spec, "redis://", 8) || !strncmp(spec, "rediss://", 9)) {
        u->tls = spec[5] == 's';
        const char *p = sep + 3, *slash = strchr(p, '/'), *q = strchr(p, '?');
        const char *end = slash ? slash : spec + n;
        const char *at = NULL;
        for (const char *x = p; x < end; x++) /* the last '@' before the path: a password may hold one */
            if (*x == '@')
                at = x;
        if (q) {
            rsay(why, why_size, "query parameters are not supported (redis://[user:password@]host[:port][/db])");
            goto done;
        }
        if (at) {
            if (parse_userinfo(p, (size_t)(at - p), u, why, why_size) != 0)
                goto done;
            p = at + 1;
        }
        if (parse_hostport(p, (size_t)(end - p), 0, u, why, why_size) != 0)
            goto done;
        r = slash && slash[1] ? parse_db(slash + 1, strlen(slash + 1), u, why, why_size) : 0;
    } else {
        rsay(why, why_size, "unknown scheme '%.*s' (redis://, rediss://, unix:// or host:port)", (int)(sep - spec),
             spec);
    }
done:
    if (r != 0)
        redis_url_free(u);
    return r;
}

void redis_url_free(redis_url *u)
{
    if (u->password) /* out of the heap's free lists too */
        memset(u->password, 0, strlen(u->password));
    free(u->password);
    free(u->user);
    u->password = u->user = NULL;
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
        r->hi->close(r->ctx);
    /* the library stays loaded: unloading it while another cache of the
     * process uses it would pull the code from under that one */
    if (r->password != r->url.password)
        free(r->password);
    if (r->user != r->url.user)
        free(r->user);
    redis_url_free(&r->url);
    free(r->lib_path);
    free(r->cacert);
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
    char bad[512];
    if (redis_url_parse(spec, &r->url, bad, sizeof bad) != 0) {
        char shown[sizeof r->url.shown];
        mask(spec, shown, sizeof shown);
        rsay(why, why_size, "TILEC_CACHE_REDIS=%s is malformed: %s; no remote tier", shown, bad);
        cache_remote_free(r);
        return NULL;
    }
    r->timeout_ms = (long)env_num("TILEC_CACHE_REDIS_TIMEOUT_MS", 500, 1, 600000, why, why_size);
    r->ttl = env_num("TILEC_CACHE_REDIS_TTL", 7 * 24 * 3600, 1, 100LL * 365 * 24 * 3600, why, why_size);
    long long mb = env_num("TILEC_CACHE_REDIS_MAX_BYTES", 64 << 20, 64, 512LL << 20, why, why_size);
    r->max_bytes = (size_t)mb;
    r->password = r->url.password ? r->url.password : dup_env("TILEC_CACHE_REDIS_PASSWORD");
    r->user = r->url.user ? r->url.user : dup_env("TILEC_CACHE_REDIS_USER");
    r->lib_path = dup_env("TILEC_REDIS_SHIM");
    r->cacert = dup_env("TILEC_CACHE_REDIS_CACERT");
    long long write = env_num("TILEC_CACHE_REDIS_WRITE", -1, 0, 1, why, why_size);
    if (!why[0] && mb >= 0)
        r->signer = cache_signer_from_env(why, why_size); /* a bad secret: no tier, never an unsigned one */
    if (!why[0] && r->user && !r->password)
        rsay(why, why_size, "TILEC_CACHE_REDIS_USER without a password (TILEC_CACHE_REDIS_PASSWORD)");
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

const char *cache_remote_name(const cache_remote *r) { return r ? r->url.shown : NULL; }

/* ---- the client ---- */

#ifdef TILEC_NO_REDIS
static int load_shim(cache_remote *r, char *why, size_t why_size)
{
    r->loaded = -1;
    rsay(why, why_size, "redis %s: built without Redis support (no hiredis headers when libtilec was built: "
         "install libhiredis-dev and rebuild)", r->url.shown);
    return -1;
}
#else
/* dlopen the shim at dir/name; NULL with the error appended to tried. */
static void *open_at(const char *dir, const char *rel, char *tried, size_t size)
{
    char path[4096];
    rsay(path, sizeof path, "%s%s%s", dir ? dir : "", dir ? "/" : "", rel);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
        const char *e = dlerror();
        size_t n = strlen(tried);
        rsay(tried + n, size - n, "%s%s", n ? "; " : "", e ? e : path);
    }
    return lib;
}

/* The shim: TILEC_REDIS_SHIM; else beside the object holding this code
 * (libtilec.so, or a program linking libtilec.a) and in ../lib from there;
 * else the loader's search. */
static int load_shim(cache_remote *r, char *why, size_t why_size)
{
    if (r->loaded)
        return r->loaded > 0 ? 0 : -1;
    r->loaded = -1;
    char tried[1024] = "", dir[4096] = "";
    void *lib = NULL;
    if (r->lib_path) {
        lib = open_at(NULL, r->lib_path, tried, sizeof tried);
    } else {
        Dl_info info;
        if (dladdr((void *)cache_remote_from_env, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
            rsay(dir, sizeof dir, "%s", info.dli_fname);
        } else { /* the main program (it links libtilec.a): the loader names it "" */
            ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
            dir[n > 0 ? n : 0] = 0;
        }
        if (strchr(dir, '/')) {
            *strrchr(dir, '/') = 0;
            lib = open_at(dir, SHIM_NAME, tried, sizeof tried);
            if (!lib)
                lib = open_at(dir, "../lib/" SHIM_NAME, tried, sizeof tried);
        }
        if (!lib)
            lib = open_at(NULL, SHIM_NAME, tried, sizeof tried);
    }
    if (!lib) {
        rsay(why, why_size, "redis %s: cannot load the Redis client %s (%s)", r->url.shown,
             r->lib_path ? "TILEC_REDIS_SHIM" : SHIM_NAME, tried);
        return -1;
    }
    tilec_redis_shim_fn get;
    *(void **)&get = dlsym(lib, TILEC_REDIS_SHIM_SYMBOL);
    const tilec_redis_shim *hi = get ? get() : NULL;
    if (!hi || hi->abi != TILEC_REDIS_SHIM_ABI) {
        rsay(why, why_size, "redis %s: the Redis client loaded is not this libtilec's (no %s of ABI %d)",
             r->url.shown, TILEC_REDIS_SHIM_SYMBOL, TILEC_REDIS_SHIM_ABI);
        return -1;
    }
    r->hi = hi;
    r->loaded = 1;
    return 0;
}
#endif

/* ---- requests ---- */

static void drop(cache_remote *r)
{
    if (r->ctx)
        r->hi->close(r->ctx);
    r->ctx = NULL;
}

/* A fault: drop the connection, rest, and say why. */
static remote_result fault(cache_remote *r, char *why, size_t why_size, const char *what)
{
    const char *msg = r->ctx ? r->hi->error(r->ctx) : "";
    rsay(why, why_size, "redis %s: %s%s%s", r->url.shown, what, *msg ? ": " : "", msg);
    drop(r);
    r->rest_until = time(NULL) + REST_SECONDS;
    return REMOTE_FAULT;
}

/* Send argc commands' worth of argv (pipelined) and read n replies into
 * replies (the caller frees them). 0, or -1 (the connection is broken). */
static int roundtrip(cache_remote *r, int ncmd, const int *argc, const char *const *const *argv,
                     const size_t *const *argvlen, reply_view *replies)
{
    for (int i = 0; i < ncmd; i++)
        if (r->hi->append(r->ctx, argc[i], (const char **)argv[i], argvlen[i]) != 0)
            return -1;
    for (int i = 0; i < ncmd; i++) {
        if (r->hi->get_reply(r->ctx, &replies[i]) != 0) {
            for (int j = 0; j < i; j++)
                r->hi->free_reply(&replies[j]);
            return -1;
        }
    }
    return 0;
}

/* One command whose reply is a status ("+OK", "+PONG"): REMOTE_HIT, or a
 * fault named `what` (the server's error quoted). */
static remote_result status_command(cache_remote *r, int argc, const char *const *argv, const size_t *argvlen,
                                    const char *what, char *why, size_t why_size)
{
    reply_view v;
    char said[160];
    rsay(said, sizeof said, "%s failed", what);
    if (roundtrip(r, 1, &argc, &argv, &argvlen, &v) != 0)
        return fault(r, why, why_size, said);
    int ok = v.type == TILEC_REDIS_STATUS;
    rsay(said, sizeof said, "%s refused: %.*s", what, (int)(v.len < 120 ? v.len : 120), v.str ? v.str : "");
    r->hi->free_reply(&v);
    return ok ? REMOTE_HIT : fault(r, why, why_size, said);
}

/* Connected, authenticated and on its database, or a fault. */
static remote_result connect_once(cache_remote *r, char *why, size_t why_size)
{
    if (r->ctx)
        return REMOTE_HIT;
    if (load_shim(r, why, why_size) != 0) {
        r->rest_until = time(NULL) + REST_SECONDS;
        return REMOTE_FAULT;
    }
    const redis_url *u = &r->url;
    tilec_redis_target t = {u->unix_socket ? NULL : u->addr, u->port, u->unix_socket ? u->addr : NULL, u->tls,
                            r->cacert, r->timeout_ms};
    char msg[256];
    r->ctx = r->hi->connect(&t, msg, sizeof msg);
    r->owner = getpid();
    if (!r->ctx) {
        rsay(why, why_size, "redis %s: cannot connect: %s", u->shown, msg);
        r->rest_until = time(NULL) + REST_SECONDS;
        return REMOTE_FAULT;
    }
    if (r->password) {
        const char *argv[3] = {"AUTH", r->user ? r->user : r->password, r->password};
        size_t len[3] = {4, strlen(argv[1]), strlen(r->password)};
        remote_result res = status_command(r, r->user ? 3 : 2, argv, len, "AUTH", why, why_size);
        if (res != REMOTE_HIT)
            return res;
    }
    if (!u->db)
        return REMOTE_HIT;
    char db[16];
    rsay(db, sizeof db, "%d", u->db);
    const char *argv[2] = {"SELECT", db};
    size_t len[2] = {6, strlen(db)};
    return status_command(r, 2, argv, len, "SELECT", why, why_size);
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

static remote_result do_ping(cache_remote *r, void *arg, char *why, size_t why_size)
{
    (void)arg;
    const char *argv[1] = {"PING"};
    size_t len[1] = {4};
    return status_command(r, 1, argv, len, "PING", why, why_size);
}

remote_result cache_remote_ping(cache_remote *r, char *why, size_t why_size)
{
    pthread_mutex_lock(&r->lock);
    r->rest_until = 0; /* asked for: try now */
    pthread_mutex_unlock(&r->lock);
    return with_connection(r, do_ping, NULL, why, why_size);
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
    if (v.type == TILEC_REDIS_ERROR && v.str && !strncmp(v.str, "WRONGTYPE", 9)) {
        rsay(why, why_size, "redis %s: %s holds no string (a foreign value)", r->url.shown, k);
        return REMOTE_REJECTED; /* the next put replaces it */
    }
    if (v.type == TILEC_REDIS_ERROR) {
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
    reply_view v;
    if (roundtrip(r, 1, argc, argv, lens, &v) != 0)
        return fault(r, why, why_size, "lookup failed");
    remote_result res = REMOTE_HIT;
    if (v.type != TILEC_REDIS_STRING) {
        res = odd_reply(r, v, k, why, why_size);
    } else if (v.len != to - from + 1) {
        rsay(why, why_size, "redis %s: the value of %s changed while it was read", r->url.shown, k);
        res = REMOTE_REJECTED;
    } else {
        memcpy(buf, v.str, v.len);
        r->bytes_in += v.len;
    }
    r->hi->free_reply(&v);
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
    reply_view raw[3];
    if (roundtrip(r, 3, argc, argv, lens, raw) != 0)
        return fault(r, why, why_size, "lookup failed");
    reply_view n = raw[0], v = raw[1];
    remote_result res = REMOTE_MISS;
    size_t total = n.type == TILEC_REDIS_INTEGER && n.integer > 0 ? (size_t)n.integer : 0;
    if (v.type == TILEC_REDIS_STRING)
        r->bytes_in += v.len;
    if (n.type != TILEC_REDIS_INTEGER) {
        res = odd_reply(r, n, k, why, why_size);
    } else if (total > r->max_bytes) {
        rsay(why, why_size, "redis %s: the value of %s is over the %zu-byte limit", r->url.shown, k, r->max_bytes);
        res = REMOTE_REJECTED;
    } else if (total > 0 && v.type != TILEC_REDIS_STRING) {
        res = odd_reply(r, v, k, why, why_size);
    } else if (total > 0 && v.len != (total < head ? total : head)) {
        rsay(why, why_size, "redis %s: the value of %s changed while it was read", r->url.shown, k);
        res = REMOTE_REJECTED;
    } else if (total > 0 && !(*a->data = malloc(total))) {
        rsay(why, why_size, "redis %s: out of memory for %zu bytes", r->url.shown, total);
        res = REMOTE_FAULT;
    } else if (total > 0) {
        memcpy(*a->data, v.str, v.len);
        res = REMOTE_HIT;
    }
    r->hi->free_reply(&raw[0]);
    r->hi->free_reply(&raw[1]);
    r->hi->free_reply(&raw[2]);
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
        rsay(why, why_size, "redis %s: the value of %s is refused: %s", r->url.shown, k, bad);
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
        rsay(why, why_size, "redis %s: a %zu-byte entry is over the %zu-byte limit; not stored there", r->url.shown, total,
             r->max_bytes);
        return REMOTE_REJECTED;
    }
    char *signed_value = NULL;
    if (r->signer) {
        if (!(signed_value = malloc(total))) {
            rsay(why, why_size, "redis %s: out of memory for %zu bytes; not stored there", r->url.shown, total);
            return REMOTE_REJECTED;
        }
        memcpy(signed_value, env, elen);
        memcpy(signed_value + elen, data, len);
        if (cache_sign(r->signer, signed_value, elen + len, (uint8_t *)signed_value + elen + len) != 0) {
            free(signed_value);
            rsay(why, why_size, "redis %s: libcrypto could not sign %s; not stored there", r->url.shown, k);
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
