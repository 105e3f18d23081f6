/* test_cache_remote.c: the Redis tier against a real redis-server, which
 * each test starts on a free loopback port in its own directory (no
 * persistence). Without redis-server on PATH (or $TILEC_TEST_REDIS_SERVER)
 * it prints one line "SKIP: no redis-server ..." and every test is
 * skipped. Shown: a second process with its own empty directory compiles
 * nothing; every remote fault (server killed, stopped, a wrong or missing
 * password, a corrupt, foreign, over-limit or wrong-type value, a
 * connection dropped in the middle of a value, no client shim) is a miss
 * with one log line and the right bundle after, never a failed call; a
 * corrupted value is rejected and replaced; 16 processes x 50 rounds share
 * one server and one directory without a failure. Values are planted by
 * speaking the protocol on a socket (resp), so only the server is needed. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#include "bundle_forge.h"
#include "runtime/cache_remote.h"
#include "cache_helpers.h"
#include "fs_helpers.h"

static char dir[64];

#include "redis_helpers.h"

static void setup(void)
{
    cache_clean_env();
    make_tmpdir(dir, sizeof dir);
}

static void teardown(void)
{
    stop_server();
    rm_dir(dir);
}

TestSuite(remote, .init = setup, .fini = teardown);
TestSuite(redis_url, .init = setup, .fini = teardown);

static tilec_cache *open_in(const char *name)
{
    tilec_cache *c = NULL;
    cr_assert_eq(tilec_cache_open(cache_path(dir, name), &c), TILEC_RT_OK);
    return c;
}

static tilec_cache_stats stats_of(const tilec_cache *c)
{
    tilec_cache_stats s;
    tilec_cache_get_stats(c, &s);
    return s;
}

#define KEY "0123456789abcdef0123456789abcdef"

/* Publish b under KEY through a cache on directory `name`. */
static void publish_from(const char *name, const tilec_bundle *b)
{
    tilec_cache *c = open_in(name);
    cr_assert_eq(tilec_cache_put(c, KEY, b), TILEC_RT_OK);
    cr_assert_eq(stats_of(c).remote_writes, 1, "%s", tilec_cache_last_error(c));
    tilec_cache_close(c);
}

/* Open a cache on directory `name` whose lookup of KEY must be b; the
 * cache is returned for more checks. */
static tilec_cache *expect_read_back(const char *name, const tilec_bundle *b)
{
    tilec_bundle *got = NULL;
    tilec_cache *c = open_in(name);
    cr_assert_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_expect(bundle_eq(got, b));
    tilec_bundle_free(got);
    return c;
}

/* ---- two machines ---- */

/* Build the matmul example through a cache on directory arg. */
static int build_in_child(void *arg)
{
    tilec_program_stats st;
    if (cache_build("examples/matmul.tile", arg, &st) != TILEC_OK)
        return 1;
    /* 10: compiled and lowered nothing (the source record hit); 11: lowered only */
    return st.nvrtc_compiles == 0 ? 10 + !st.source_hit : 20 + (int)st.nvrtc_compiles;
}

Test(remote, a_second_machine_compiles_nothing, .timeout = 120)
{
    start_server(NULL, 1);
    setenv("TILEC_LOGS", "cache", 1);
    char a[128], b[128];
    snprintf(a, sizeof a, "%s", cache_path(dir, "machine_a"));
    snprintf(b, sizeof b, "%s", cache_path(dir, "machine_b"));
    cr_expect_eq(cache_child(build_in_child, a, cache_path(dir, "a.log")), 23, "the first machine compiles the 3 variants");
    char *log = read_file(cache_path(dir, "a.log"), NULL);
    cr_expect(strstr(log, "tilec cache: miss ") && strstr(log, " in redis 127.0.0.1:"), "%s", log);
    free(log);
    cr_expect_eq(cache_child(build_in_child, b, cache_path(dir, "b.log")), 10,
                 "the second machine compiled or lowered (its source record is in Redis too)");
    log = read_file(cache_path(dir, "b.log"), NULL);
    cr_expect(strstr(log, "tilec cache: remote hit ") && strstr(log, "tilec cache: record hit "), "%s", log);
    cr_expect_null(strstr(log, "tilec cache: miss"), "%s", log);
    free(log);
    /* the remote hit was copied to b's directory: a local hit now, even
     * with the server gone */
    kill(server_pid, SIGKILL);
    waitpid(server_pid, NULL, 0);
    server_pid = 0;
    cr_expect_eq(cache_child(build_in_child, b, cache_path(dir, "b2.log")), 10);
    log = read_file(cache_path(dir, "b2.log"), NULL);
    cr_expect(strstr(log, "tilec cache: local hit ") && strstr(log, "tilec cache: record hit "), "%s", log);
    free(log);
}

/* ---- faults ---- */

typedef struct fault_case {
    const char *name;
    const char *want; /* in the one log line */
    int rejected;     /* counted as a rejected value, not a fault */
} fault_case;

/* A lookup that must be a miss within max_ms, with exactly one log line
 * about the server, then the put (the compile's result, which the fault
 * must not fail) and a hit with the right bundle. */
static void survive(const fault_case *fc, long max_ms)
{
    setenv("TILEC_LOGS", "cache", 1);
    tilec_bundle *b = make_bundle(3, 21), *got = NULL;
    char log[160];
    snprintf(log, sizeof log, "%s/%s.log", dir, fc->name);
    fflush(stderr);
    int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tilec_cache *c = open_in(fc->name);
    tilec_rt_status st = tilec_cache_get(c, KEY, &got);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_expect_null(got);
    tilec_cache_stats s = stats_of(c);
    tilec_rt_status put = tilec_cache_put(c, KEY, b);
    tilec_rt_status again = tilec_cache_get(c, KEY, &got);
    tilec_cache_close(c);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    char *text = read_file(log, NULL);
    cr_expect_eq(st, TILEC_RT_NOT_FOUND, "%s: a fault is a miss", fc->name);
    cr_expect_leq(ms, max_ms, "%s: the lookup took %ld ms", fc->name, ms);
    cr_expect_eq(fc->rejected ? s.remote_rejected : s.remote_faults, 1, "%s: %s", fc->name, text);
    cr_expect_eq(put, TILEC_RT_OK, "%s: the put fails for a remote fault", fc->name);
    int lines = 0;
    for (const char *p = text; (p = strstr(p, "tilec cache: redis ")); p++)
        lines++;
    cr_expect_eq(lines, 1, "%s: one log line about the server:\n%s", fc->name, text);
    cr_expect(strstr(text, fc->want), "%s: wanted '%s' in:\n%s", fc->name, fc->want, text);
    cr_expect(strstr(text, "tilec cache: miss " KEY), "%s: %s", fc->name, text);
    free(text);
    cr_assert_eq(again, TILEC_RT_OK);
    cr_expect(bundle_eq(got, b), "%s: the right bundle after", fc->name);
    tilec_bundle_free(got);
    tilec_bundle_free(b);
    unsetenv("TILEC_LOGS");
}

Test(remote, server_killed)
{
    start_server(NULL, 0);
    kill(server_pid, SIGKILL);
    waitpid(server_pid, NULL, 0);
    server_pid = 0;
    survive(&(fault_case){"killed", "cannot connect", 0}, 2000);
}

Test(remote, server_stopped_is_a_timeout, .timeout = 60)
{
    start_server(NULL, 0);
    setenv("TILEC_CACHE_REDIS_TIMEOUT_MS", "200", 1);
    kill(server_pid, SIGSTOP);
    survive(&(fault_case){"stopped", "lookup failed", 0}, 2000);
    kill(server_pid, SIGCONT);
}

Test(remote, wrong_or_missing_password)
{
    start_server("s3cret", 0);
    setenv("TILEC_CACHE_REDIS_PASSWORD", "guess", 1);
    survive(&(fault_case){"wrong_password", "AUTH refused:", 0}, 2000);
    unsetenv("TILEC_CACHE_REDIS_PASSWORD");
    survive(&(fault_case){"no_password", "NOAUTH", 0}, 2000);
    /* the right one works both ways */
    setenv("TILEC_CACHE_REDIS_PASSWORD", "s3cret", 1);
    tilec_bundle *b = make_bundle(2, 4);
    publish_from("writer", b);
    tilec_cache *c = expect_read_back("reader", b);
    cr_expect_eq(stats_of(c).remote_hits, 1);
    tilec_cache_close(c);
    tilec_bundle_free(b);
}

Test(remote, foreign_values)
{
    start_server(NULL, 0);
    say_to_server("+OK", 3, (const char *[]){"SET", "tilec:" KEY, "hello, not a bundle"}, NULL);
    survive(&(fault_case){"foreign_string", "rejected the value of " KEY, 1}, 2000);
    say_to_server(":1", 2, (const char *[]){"DEL", "tilec:" KEY}, NULL);
    say_to_server(":3", 5, (const char *[]){"LPUSH", "tilec:" KEY, "a", "b", "c"}, NULL);
    survive(&(fault_case){"wrong_type", "holds no string", 1}, 2000);
    /* over the size limit (a bundle of ours is under it): not read */
    setenv("TILEC_CACHE_REDIS_MAX_BYTES", "1000", 1);
    char big[1500];
    memset(big, 0x5a, sizeof big);
    say_to_server("+OK", 3, (const char *[]){"SET", "tilec:" KEY, big}, (const size_t[]){3, strlen("tilec:" KEY), sizeof big});
    survive(&(fault_case){"over_limit", "over the 1000-byte limit", 1}, 2000);
}

/* A value bit-flipped on the server is rejected, compiled again and
 * replaced: the next machine gets the good one. */
Test(remote, corrupted_value_is_rejected_and_replaced)
{
    start_server(NULL, 0);
    tilec_bundle *b = make_bundle(3, 21), *got = NULL;
    publish_from("first", b);
    /* flip one payload byte: the value keeps its size, the checksum fails */
    static char value[4096];
    size_t n = resp(2, (const char *[]){"GET", "tilec:" KEY}, NULL, value, sizeof value);
    char *body = strstr(value, "\r\n") + 2;
    size_t len = n - (size_t)(body - value) - 2;
    cr_assert(value[0] == '$' && len > 200, "%.40s", value);
    body[100] ^= 0x40;
    say_to_server("+OK", 3, (const char *[]){"SET", "tilec:" KEY, body}, (const size_t[]){3, strlen("tilec:" KEY), len});
    survive(&(fault_case){"corrupt", "checksum", 1}, 2000);
    /* survive() published the good bundle again */
    tilec_cache *c = open_in("third");
    cr_assert_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_OK);
    cr_expect(bundle_eq(got, b));
    cr_expect_eq(stats_of(c).remote_hits, 1);
    tilec_bundle_free(got);
    tilec_cache_close(c);
    tilec_bundle_free(b);
}

/* A server that announces a value and hangs up halfway through it. */
static void *half_server(void *arg)
{
    int ls = *(int *)arg;
    for (int i = 0; i < 4; i++) {
        int s = accept(ls, NULL, NULL);
        if (s < 0)
            return NULL;
        char req[4096];
        if (read(s, req, sizeof req) > 0) {
            char reply[600];
            int n = snprintf(reply, sizeof reply, "$100000\r\n");
            memset(reply + n, 'x', 500);
            if (write(s, reply, (size_t)n + 500) < 0)
                break;
        }
        close(s);
    }
    return NULL;
}

Test(remote, connection_dropped_mid_value)
{
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(bind(ls, (struct sockaddr *)&a, sizeof a) == 0 && listen(ls, 4) == 0 &&
              getsockname(ls, (struct sockaddr *)&a, &len) == 0);
    char spec[64];
    snprintf(spec, sizeof spec, "127.0.0.1:%d", ntohs(a.sin_port));
    setenv("TILEC_CACHE_REDIS", spec, 1);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, half_server, &ls), 0);
    survive(&(fault_case){"dropped", "lookup failed", 0}, 2000);
    shutdown(ls, SHUT_RDWR);
    close(ls);
    pthread_join(t, NULL);
}

Test(remote, no_client_library_or_a_bad_spec)
{
    start_server(NULL, 0);
    setenv("TILEC_REDIS_SHIM", "/nonexistent/libtilec_redis.so", 1);
    survive(&(fault_case){"no_client", "cannot load the Redis client TILEC_REDIS_SHIM (/nonexistent/libtilec_redis.so",
                          0},
            2000);
    unsetenv("TILEC_REDIS_SHIM");
    static const char *const bad[] = {"localhost", "host:0", "host:99999", ":6379", "[::1", "h:12x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("TILEC_CACHE_REDIS", bad[i], 1);
        tilec_cache *c = open_in("bad");
        cr_expect_null(tilec_cache_remote(c), "%s", bad[i]);
        cr_expect(strstr(tilec_cache_last_error(c), "is malformed: "), "%s: %s", bad[i], tilec_cache_last_error(c));
        cr_expect_str_eq(tilec_cache_remote_problem(c), tilec_cache_last_error(c));
        tilec_cache_close(c);
    }
    setenv("TILEC_CACHE_REDIS", "127.0.0.1:6379", 1);
    setenv("TILEC_CACHE_REDIS_TIMEOUT_MS", "soon", 1);
    tilec_cache *c = open_in("bad");
    cr_expect_null(tilec_cache_remote(c));
    cr_expect(strstr(tilec_cache_last_error(c), "TILEC_CACHE_REDIS_TIMEOUT_MS=soon"), "%s", tilec_cache_last_error(c));
    tilec_cache_close(c);
}

/* ---- TILEC_CACHE_REDIS's forms ---- */

/* Every form parsed, and every malformed one with its exact reason (which
 * never quotes a credential); the password masked in the name. */
Test(redis_url, good_and_bad_forms)
{
    static const struct {
        const char *spec, *addr;
        int port, db, tls, unix_socket;
        const char *user, *password, *shown;
    } good[] = {
        {"127.0.0.1:6379", "127.0.0.1", 6379, 0, 0, 0, NULL, NULL, "127.0.0.1:6379"},
        {"[::1]:7000", "::1", 7000, 0, 0, 0, NULL, NULL, "[::1]:7000"},
        {"redis://cache.example", "cache.example", 6379, 0, 0, 0, NULL, NULL, "redis://cache.example"},
        {"redis://h:6380/3", "h", 6380, 3, 0, 0, NULL, NULL, "redis://h:6380/3"},
        {"redis://h/", "h", 6379, 0, 0, 0, NULL, NULL, "redis://h/"},
        {"redis://:s3cret@h:1/15", "h", 1, 15, 0, 0, NULL, "s3cret", "redis://:***@h:1/15"},
        {"redis://fleet:p%40ss%3Aw%2Frd%25@[::1]:6379/2", "::1", 6379, 2, 0, 0, "fleet", "p@ss:w/rd%",
         "redis://fleet:***@[::1]:6379/2"},
        {"redis://u:a@b@h", "h", 6379, 0, 0, 0, "u", "a@b", "redis://u:***@h"},
        {"rediss://u:pw@h:6390", "h", 6390, 0, 1, 0, "u", "pw", "rediss://u:***@h:6390"},
        {"unix:///run/redis.sock", "/run/redis.sock", 0, 0, 0, 1, NULL, NULL, "unix:///run/redis.sock"},
        {"unix://:pw@/run/redis.sock?db=4", "/run/redis.sock", 0, 4, 0, 1, NULL, "pw", "unix://:***@/run/redis.sock?db=4"},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        redis_url u;
        char why[256];
        cr_assert_eq(redis_url_parse(good[i].spec, &u, why, sizeof why), 0, "%s: %s", good[i].spec, why);
        cr_expect_str_eq(u.addr, good[i].addr, "%s", good[i].spec);
        if (!good[i].unix_socket)
            cr_expect_eq(u.port, good[i].port, "%s", good[i].spec);
        cr_expect_eq(u.db, good[i].db, "%s", good[i].spec);
        cr_expect_eq(u.tls, good[i].tls, "%s", good[i].spec);
        cr_expect_eq(u.unix_socket, good[i].unix_socket, "%s", good[i].spec);
        cr_expect_str_eq(u.user ? u.user : "(none)", good[i].user ? good[i].user : "(none)", "%s", good[i].spec);
        cr_expect_str_eq(u.password ? u.password : "(none)", good[i].password ? good[i].password : "(none)", "%s",
                         good[i].spec);
        cr_expect_str_eq(u.shown, good[i].shown);
        redis_url_free(&u);
    }
    static const char *const bad[][2] = {
        {"localhost", "no port (host:port)"},
        {"host:0", "the port '0' is not a number from 1 to 65535"},
        {"host:99999", "the port '99999' is not a number from 1 to 65535"},
        {":6379", "no host"},
        {"[::1", "an unterminated [ in the host"},
        {"h:12x", "the port '12x' is not a number from 1 to 65535"},
        {"::1:6379", "an IPv6 host must be in brackets ([::1]:6379)"},
        {"user@h:1", "not host:port, redis://, rediss:// or unix://"},
        {"http://h:1", "unknown scheme 'http' (redis://, rediss://, unix:// or host:port)"},
        {"redis://", "no host"},
        {"redis://h:1/x", "the database 'x' is not a number from 0 to 2147483647"},
        {"redis://h:1/-1", "the database '-1' is not a number from 0 to 2147483647"},
        {"redis://h:1/0?timeout=1", "query parameters are not supported (redis://[user:password@]host[:port][/db])"},
        {"redis://u:p%zzsecret@h", "a bad percent escape in the password (%XX, two hex digits, not %00)"},
        {"redis://u:p%00@h", "a bad percent escape in the password (%XX, two hex digits, not %00)"},
        {"redis://u:p%4@h", "a bad percent escape in the password (%XX, two hex digits, not %00)"},
        {"redis://us%er:p@h", "a bad percent escape in the user (%XX, two hex digits, not %00)"},
        {"redis://fleet@h", "a user without a password (redis://user:password@host)"},
        {"unix://run/redis.sock", "unix:// wants an absolute socket path (unix:///path/to.sock)"},
        {"unix://", "unix:// wants an absolute socket path (unix:///path/to.sock)"},
        {"unix:///s.sock?database=1", "unknown query '?database=1' (unix:///path?db=N)"},
        {"unix:///s.sock?db=", "the database '' is not a number from 0 to 2147483647"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        redis_url u;
        char why[256];
        cr_expect_eq(redis_url_parse(bad[i][0], &u, why, sizeof why), -1, "%s", bad[i][0]);
        cr_expect_str_eq(why, bad[i][1], "%s", bad[i][0]);
        cr_expect_null(u.password);
        cr_expect_null(u.user);
    }
    /* through the cache: the variable named, the password masked */
    cache_clean_env();
    setenv("TILEC_CACHE_REDIS", "redis://fleet:hunter2@h:1/x", 1);
    tilec_cache *c = open_in("bad_url");
    cr_expect_null(tilec_cache_remote(c));
    cr_expect_str_eq(tilec_cache_remote_problem(c), "TILEC_CACHE_REDIS=redis://fleet:***@h:1/x is malformed: the "
                                                    "database 'x' is not a number from 0 to 2147483647; no remote tier");
    cr_expect_null(strstr(tilec_cache_last_error(c), "hunter2"));
    tilec_cache_close(c);
}

/* A password given in the URL (requirepass), percent-encoded, and never
 * shown: not in the log, not in the problem, not in the name. */
Test(remote, a_password_in_the_url)
{
    start_server("p@ss:w/rd", 0);
    char spec[128];
    snprintf(spec, sizeof spec, "redis://:p%%40ss%%3Aw%%2Frd@127.0.0.1:%d", server_port);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    tilec_bundle *b = make_bundle(2, 5);
    publish_from("writer", b);
    tilec_cache *c = expect_read_back("reader", b);
    snprintf(spec, sizeof spec, "redis://:***@127.0.0.1:%d", server_port);
    cr_expect_str_eq(tilec_cache_remote(c), spec);
    cr_expect_eq(tilec_cache_remote_ping(c), TILEC_RT_OK);
    tilec_cache_close(c);
    snprintf(spec, sizeof spec, "redis://:wrong-guess@127.0.0.1:%d", server_port);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    survive(&(fault_case){"wrong_url_password", "AUTH refused:", 0}, 2000);
    c = open_in("wrong");
    cr_expect_eq(tilec_cache_remote_ping(c), TILEC_RT_IO_ERROR);
    cr_expect(strstr(tilec_cache_remote_problem(c), "redis redis://:***@127.0.0.1:") &&
                  strstr(tilec_cache_remote_problem(c), ": AUTH refused: "),
              "%s", tilec_cache_remote_problem(c));
    cr_expect_null(strstr(tilec_cache_remote_problem(c), "wrong-guess"));
    tilec_cache_close(c);
    char *log = read_file(cache_path(dir, "wrong_url_password.log"), NULL);
    cr_expect_null(strstr(log, "wrong-guess"), "%s", log);
    free(log);
    tilec_bundle_free(b);
}

/* An ACL user (AUTH user password) from the URL: it works with its own
 * password, is refused with another's, and the default user's password
 * (the server has none here) is not what is sent. */
Test(remote, an_acl_user)
{
    start_server(NULL, 0);
    const char *acl[] = {"ACL", "SETUSER", "fleet", "on", ">fleet pw", "~tilec:*", "+@all"};
    say_to_server("+OK", 7, acl, NULL);
    char spec[128];
    snprintf(spec, sizeof spec, "redis://fleet:fleet%%20pw@127.0.0.1:%d", server_port);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    tilec_bundle *b = make_bundle(2, 7);
    publish_from("writer", b);
    tilec_cache_close(expect_read_back("reader", b));
    snprintf(spec, sizeof spec, "redis://fleet:other@127.0.0.1:%d", server_port);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    survive(&(fault_case){"acl_wrong", "AUTH refused: WRONGPASS", 0}, 2000);
    /* the user from the variables, as before URLs */
    snprintf(spec, sizeof spec, "127.0.0.1:%d", server_port);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    setenv("TILEC_CACHE_REDIS_USER", "fleet", 1);
    setenv("TILEC_CACHE_REDIS_PASSWORD", "fleet pw", 1);
    tilec_cache_close(expect_read_back("reader_env", b));
    tilec_bundle_free(b);
}

/* unix:///path (with ?db=N): the same tier through a socket. */
Test(remote, a_unix_socket)
{
    char sock[128];
    snprintf(sock, sizeof sock, "%s/redis.sock", dir);
    unix_sock = sock;
    start_server(NULL, 0);
    unix_sock = NULL;
    for (int i = 0; i < 500 && access(sock, F_OK) != 0; i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    char spec[200];
    snprintf(spec, sizeof spec, "unix://%s?db=1", sock);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    tilec_bundle *b = make_bundle(3, 9);
    publish_from("writer", b);
    tilec_cache *c = expect_read_back("reader", b);
    cr_expect_str_eq(tilec_cache_remote(c), spec);
    tilec_cache_close(c);
    /* it is in database 1 of that server: seen over TCP with /1, not /0 */
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d/1", server_port);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    tilec_cache_close(expect_read_back("tcp_db1", b));
    snprintf(spec, sizeof spec, "unix://%s/missing.sock", dir);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    survive(&(fault_case){"no_socket", "cannot connect: No such file or directory", 0}, 2000);
    tilec_bundle_free(b);
}

/* SELECT db: entries stored through /1 are not in /2 or /0, and a
 * database the server lacks is a fault that names SELECT. */
Test(remote, select_db_isolates)
{
    start_server(NULL, 0);
    char spec[128];
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d/1", server_port);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    tilec_bundle *b = make_bundle(2, 11), *got = NULL;
    publish_from("writer", b);
    for (int db = 0; db <= 2; db += 2) {
        snprintf(spec, sizeof spec, "redis://127.0.0.1:%d/%d", server_port, db);
        setenv("TILEC_CACHE_REDIS", spec, 1);
        tilec_cache *c = open_in(db ? "other_db2" : "other_db0");
        cr_expect_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_NOT_FOUND, "db %d", db);
        cr_expect_eq(stats_of(c).remote_misses, 1, "db %d: %s", db, tilec_cache_last_error(c));
        tilec_cache_close(c);
    }
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d/1", server_port);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    tilec_cache_close(expect_read_back("same_db", b));
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d/99", server_port);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    survive(&(fault_case){"no_such_db", "SELECT refused: ERR DB index is out of range", 0}, 2000);
    tilec_bundle_free(b);
}

/* ---- many processes ---- */

enum { PROCS = 16, ROUNDS = 50, NKEYS = 10 };

static int round_worker(int id)
{
    for (int r = 0; r < ROUNDS; r++) {
        char key[40];
        int k = (r * 3 + id) % NKEYS;
        snprintf(key, sizeof key, "fleet_key_%02d", k);
        tilec_cache_stats s;
        int rc = cache_use_key(dir, key, (unsigned)k, &s);
        if (rc)
            return rc;
        if (s.remote_faults || s.remote_rejected || s.corrupt)
            return 3;
    }
    return 0;
}

Test(remote, sixteen_processes_fifty_rounds, .timeout = 120)
{
    start_server(NULL, 0);
    tilec_bundle *b = make_bundle(4, 63);
    void *buf;
    size_t one;
    cr_assert_eq(tilec_bundle_serialize(b, KEY, &buf, &one), TILEC_RT_OK);
    free(buf);
    tilec_bundle_free(b);
    char cap[32];
    snprintf(cap, sizeof cap, "%zu", one * 4); /* the directory evicts while the server keeps everything */
    setenv("TILEC_CACHE_MAX_BYTES", cap, 1);
    cr_expect_eq(cache_procs(PROCS, round_worker), 0, "processes failed");
    tilec_cache_usage u = cache_usage_in(dir);
    cr_assert_gt(u.writes, 0);
    cr_expect_eq(u.local_hits + u.remote_hits + u.misses, PROCS * ROUNDS);
    cr_expect_gt(u.remote_hits, 0, "evicted entries come back from the server");
    cr_expect_leq(u.misses, PROCS * NKEYS, "a key compiles at most once per process");
    cr_expect_eq(u.remote_faults + u.corrupt, 0);
    char keys[64];
    resp(1, (const char *[]){"DBSIZE"}, NULL, keys, sizeof keys);
    cr_expect_eq(atoi(keys + 1), NKEYS, "%s", keys);
}

/* ---- every entry is its own key's; a fork makes its own connection (issue 28, 1) ---- */

/* SET tilec:<key> to bytes. */
static void plant(const char *key, const void *bytes, size_t len)
{
    char k[200];
    snprintf(k, sizeof k, "tilec:%s", key);
    say_to_server("+OK", 3, (const char *[]){"SET", k, bytes}, (const size_t[]){3, strlen(k), len});
}

/* The server's value of tilec:<key> (malloc'd, *len bytes). */
static char *value_of(const char *key, size_t *len)
{
    static char reply[1 << 16];
    char k[200];
    snprintf(k, sizeof k, "tilec:%s", key);
    size_t n = resp(2, (const char *[]){"GET", k}, NULL, reply, sizeof reply);
    cr_assert(reply[0] == '$' && reply[1] != '-', "no value under %s", k);
    char *body = strstr(reply, "\r\n") + 2;
    *len = n - (size_t)(body - reply) - 2;
    char *out = malloc(*len + 1);
    memcpy(out, body, *len);
    return out;
}

/* Copy the server's value of key a under key b (a relabelling). */
static void relabel(const char *a, const char *b)
{
    size_t len;
    char *v = value_of(a, &len);
    plant(b, v, len);
    free(v);
}

#define KEY_B "fedcba9876543210fedcba9876543210"

Test(remote, another_keys_entry_is_refused)
{
    start_server(NULL, 0);
    tilec_cache *w = open_in("writer");
    tilec_bundle *a = make_bundle(2, 5), *got = NULL;
    cr_assert_eq(tilec_cache_put(w, KEY, a), TILEC_RT_OK);
    cr_assert_eq(tilec_cache_record_put(w, KEY, "the record of A\n"), TILEC_RT_OK);
    tilec_cache_close(w);
    relabel(KEY, KEY_B);
    relabel("record-" KEY, "record-" KEY_B);
    tilec_cache *c = open_in("reader");
    char *t = NULL;
    cr_expect_eq(tilec_cache_get(c, KEY_B, &got), TILEC_RT_NOT_FOUND, "A's bundle served for B");
    cr_expect_eq(tilec_cache_record_get(c, KEY_B, &t), TILEC_RT_NOT_FOUND, "A's record served for B: %s",
                 t ? t : "");
    cr_expect_eq(stats_of(c).remote_rejected, 2, "%s", tilec_cache_last_error(c));
    cr_expect(strstr(tilec_cache_last_error(c), "the record of key " KEY ", not " KEY_B), "%s",
              tilec_cache_last_error(c));
    /* A's own entries still read */
    cr_expect_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_OK);
    cr_expect(bundle_eq(got, a));
    cr_expect_eq(tilec_cache_record_get(c, KEY, &t), TILEC_RT_OK);
    cr_expect_str_eq(t, "the record of A\n");
    free(t);
    tilec_bundle_free(got);
    tilec_bundle_free(a);
    tilec_cache_close(c);
}

/* A record whose bytes end exactly at the end of the value read (no NUL
 * after them): the parser reads nothing past it (an ASan build caught
 * the sscanf of the old one), and a hit is its text. */
Test(remote, a_record_read_ends_at_its_last_byte)
{
    start_server(NULL, 0);
    static const char rec[] = "tilec record 2 " KEY " 3 44bc2cf5ad770999\nabc";
    plant("record-" KEY, rec, sizeof rec - 1);
    tilec_cache *c = open_in("reader");
    char *t = NULL;
    cr_assert_eq(tilec_cache_record_get(c, KEY, &t), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_expect_str_eq(t, "abc");
    free(t);
    tilec_cache_close(c);
}

enum { FORK_CHILDREN = 4, FORK_KEYS = 150 };

static tilec_cache *fork_cache; /* the parent's, inherited by the children */

static void fork_key(char *out, size_t n, const char *what, int child, int j)
{
    snprintf(out, n, "fork_%s_%d_%03d", what, child, j);
}

/* Read this child's keys through the inherited handle; each must be a
 * remote hit with its own record and bundle. 0, or 1 + how many were not. */
static int fork_reader(int id)
{
    int wrong = 0;
    for (int j = 0; j < FORK_KEYS; j++) {
        char key[64], want[96];
        fork_key(key, sizeof key, "rec", id, j);
        snprintf(want, sizeof want, "record of %s\n", key);
        char *t = NULL;
        wrong += tilec_cache_record_get(fork_cache, key, &t) != TILEC_RT_OK || strcmp(t, want) != 0;
        free(t);
        fork_key(key, sizeof key, "bnd", id, j);
        tilec_bundle *b = make_bundle(1 + (unsigned)j % 3, 100u + (unsigned)(id * FORK_KEYS + j)), *got = NULL;
        wrong += tilec_cache_get(fork_cache, key, &got) != TILEC_RT_OK || !bundle_eq(got, b);
        tilec_bundle_free(b);
        tilec_bundle_free(got);
    }
    if (wrong)
        fprintf(stderr, "child %d: %d of %d reads were not its own key's: %s\n", id, wrong, 2 * FORK_KEYS,
                tilec_cache_last_error(fork_cache));
    return wrong ? 1 + (wrong > 200 ? 200 : wrong) : 0;
}

Test(remote, forked_children_read_their_own_keys, .timeout = 120)
{
    start_server(NULL, 1);
    tilec_cache *w = open_in("writer");
    for (int i = 0; i < FORK_CHILDREN; i++)
        for (int j = 0; j < FORK_KEYS; j++) {
            char key[64], text[96];
            fork_key(key, sizeof key, "rec", i, j);
            snprintf(text, sizeof text, "record of %s\n", key);
            cr_assert_eq(tilec_cache_record_put(w, key, text), TILEC_RT_OK);
            fork_key(key, sizeof key, "bnd", i, j);
            tilec_bundle *b = make_bundle(1 + (unsigned)j % 3, 100u + (unsigned)(i * FORK_KEYS + j));
            cr_assert_eq(tilec_cache_put(w, key, b), TILEC_RT_OK);
            tilec_bundle_free(b);
        }
    tilec_cache_close(w);
    /* the parent uses its connection (a miss leaves it open), then forks */
    fork_cache = open_in("parent");
    tilec_bundle *none = NULL;
    cr_assert_eq(tilec_cache_get(fork_cache, "not_there", &none), TILEC_RT_NOT_FOUND);
    cr_assert_eq(stats_of(fork_cache).remote_misses, 1, "%s", tilec_cache_last_error(fork_cache));
    cr_expect_eq(cache_procs(FORK_CHILDREN, fork_reader), 0, "a child read another key's entry (stderr says)");
    /* the parent's connection still answers for the parent */
    char *t = NULL;
    cr_expect_eq(tilec_cache_record_get(fork_cache, "fork_rec_0_000", &t), TILEC_RT_OK, "%s",
                 tilec_cache_last_error(fork_cache));
    cr_expect_str_eq(t ? t : "", "record of fork_rec_0_000\n");
    free(t);
    cr_expect_eq(stats_of(fork_cache).remote_faults, 0, "%s", tilec_cache_last_error(fork_cache));
    tilec_cache_close(fork_cache);
}

/* ---- values over the limit are refused on their length (issue 28, 7) ---- */

/* The server's total_net_output_bytes (INFO stats). */
static long long server_output(void)
{
    static char info[16384];
    resp(2, (const char *[]){"INFO", "stats"}, NULL, info, sizeof info);
    const char *p = strstr(info, "total_net_output_bytes:");
    cr_assert_not_null(p, "%.200s", info);
    return atoll(p + strlen("total_net_output_bytes:"));
}

Test(remote, an_over_limit_value_is_not_read, .timeout = 60)
{
    start_server(NULL, 0);
    setenv("TILEC_CACHE_REDIS_MAX_BYTES", "1048576", 1);
    size_t big = 4u << 20;
    char *v = malloc(big);
    memset(v, 0x5a, big);
    plant(KEY, v, big);
    free(v);
    tilec_cache *c = open_in("reader");
    long long before = server_output();
    tilec_bundle *got = NULL;
    cr_expect_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_NOT_FOUND);
    long long sent = server_output() - before;
    cr_expect_eq(stats_of(c).remote_rejected, 1);
    cr_expect(strstr(tilec_cache_last_error(c), "over the 1048576-byte limit"), "%s", tilec_cache_last_error(c));
    cr_expect_leq(sent, 70 << 10, "the server sent %lld bytes for a refused 4 MiB value", sent);
    cr_expect_leq(tilec_cache_remote_bytes_read(c), 64 << 10);
    tilec_cache_close(c);
}

/* A value of several MiB within the limit comes in pieces, whole. */
Test(remote, a_large_value_comes_in_pieces, .timeout = 60)
{
    start_server(NULL, 0);
    setenv("TILEC_CACHE_REDIS_MAX_BYTES", "8388608", 1);
    tilec_bundle *b = make_bundle(3, 1200000);
    publish_from("writer", b);
    tilec_cache *c = expect_read_back("reader", b);
    cr_expect_gt(tilec_cache_remote_bytes_read(c), 3u << 20);
    tilec_bundle_free(b);
    tilec_cache_close(c);
}

/* ---- signed entries: a writer without the secret cannot plant a kernel ---- */

#define SECRET "fleet secret: 0123456789abcdef"

static void use_secret(const char *secret)
{
    unsetenv("TILEC_CACHE_REDIS_WRITE"); /* the default: stores with a secret */
    if (secret)
        setenv("TILEC_CACHE_SECRET", secret, 1);
    else
        unsetenv("TILEC_CACHE_SECRET");
}

/* The attacker's bundle: made for the victim's key, every checksum right
 * (serialized under KEY), and another key's bundle relabelled as KEY and
 * resealed. */
static void forge(int relabel_other, size_t *len_out, void **out)
{
    tilec_bundle *evil = make_bundle(2, 66);
    void *buf;
    size_t len;
    cr_assert_eq(tilec_bundle_serialize(evil, relabel_other ? KEY_B : KEY, &buf, &len), TILEC_RT_OK);
    if (relabel_other) {
        uint8_t *p = buf;
        size_t at = 0;
        while (at + strlen(KEY_B) <= len && memcmp(p + at, KEY_B, strlen(KEY_B)))
            at++;
        cr_assert_leq(at + strlen(KEY_B), len, "the key is in the bundle");
        memcpy(p + at, KEY, strlen(KEY));
        bundle_reseal(p, len);
    }
    tilec_bundle_free(evil);
    *out = buf;
    *len_out = len;
}

Test(remote, signed_entries_round_trip)
{
    start_server(NULL, 0);
    use_secret(SECRET);
    tilec_cache *w = open_in("writer");
    cr_expect_str_eq(tilec_cache_remote_mode(w), "signed, read-write");
    tilec_bundle *b = make_bundle(3, 9), *got = NULL;
    cr_assert_eq(tilec_cache_put(w, KEY, b), TILEC_RT_OK);
    cr_assert_eq(tilec_cache_record_put(w, KEY, "signed record\n"), TILEC_RT_OK);
    cr_expect_eq(stats_of(w).remote_writes, 1, "%s", tilec_cache_last_error(w));
    tilec_cache_close(w);
    size_t len;
    char *v = value_of(KEY, &len);
    cr_expect(!strncmp(v, "tilec signed 1 tilec:" KEY "\n", strlen("tilec signed 1 tilec:" KEY "\n")), "%.60s", v);
    free(v);
    tilec_cache *c = open_in("reader");
    char *t = NULL;
    cr_assert_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_expect(bundle_eq(got, b));
    cr_assert_eq(tilec_cache_record_get(c, KEY, &t), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_expect_str_eq(t, "signed record\n");
    free(t);
    tilec_bundle_free(got);
    tilec_cache_close(c);
    /* a reader without the secret (it trusts the server anyway) reads them too */
    use_secret(NULL);
    c = open_in("plain_reader");
    cr_expect_str_eq(tilec_cache_remote_mode(c),
                     "unsigned, read-only (no TILEC_CACHE_SECRET_FILE or TILEC_CACHE_SECRET)");
    cr_assert_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_expect(bundle_eq(got, b));
    tilec_bundle_free(got);
    tilec_cache_close(c);
    tilec_bundle_free(b);
}

/* The threat of issue 28: whoever can write the server plants a bundle
 * under the victim's key. With the fleet secret the victim refuses it
 * (one log line), compiles its own (the miss) and stores it signed. */
Test(remote, a_writer_without_the_secret_cannot_plant_a_kernel)
{
    start_server(NULL, 0);
    use_secret(SECRET);
    setenv("TILEC_LOGS", "cache", 1);
    tilec_bundle *own = make_bundle(3, 21), *got = NULL;
    static const char *const how[] = {"made for the key", "relabelled", "relabelled in a forged envelope",
                                      "a signed value of another key", "signed with a wrong secret"};
    for (int i = 0; i < 5; i++) {
        void *buf;
        size_t len;
        forge(i >= 1, &len, &buf);
        if (i == 2) { /* the envelope's form with a made-up tag */
            const char *env = "tilec signed 1 tilec:" KEY "\n";
            char *e = malloc(strlen(env) + len + 32);
            memcpy(e, env, strlen(env));
            memcpy(e + strlen(env), buf, len);
            memset(e + strlen(env) + len, 0x42, 32);
            free(buf);
            buf = e;
            len += strlen(env) + 32;
        }
        if (i < 3) {
            plant(KEY, buf, len);
        } else { /* an entry the fleet (or another fleet) signed, copied under the victim's key */
            use_secret(i == 3 ? SECRET : "another fleet's secret, 32 bytes");
            tilec_cache *w = open_in(i == 3 ? "signer" : "other_fleet");
            tilec_bundle *evil = make_bundle(2, 66);
            cr_assert_eq(tilec_cache_put(w, i == 3 ? KEY_B : KEY, evil), TILEC_RT_OK);
            tilec_bundle_free(evil);
            tilec_cache_close(w);
            if (i == 3)
                relabel(KEY_B, KEY);
            use_secret(SECRET);
        }
        free(buf);
        char name[32];
        snprintf(name, sizeof name, "victim_%d", i);
        tilec_cache *c = open_in(name);
        cr_expect_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_NOT_FOUND, "%s: the planted bundle was loaded",
                     how[i]);
        tilec_bundle_free(got);
        got = NULL;
        cr_expect_eq(stats_of(c).remote_rejected, 1, "%s", how[i]);
        cr_expect(strstr(tilec_cache_last_error(c), "the value of tilec:" KEY " is refused"), "%s: %s", how[i],
                  tilec_cache_last_error(c));
        /* the victim compiles its own and stores it signed: the next victim hits it */
        cr_assert_eq(tilec_cache_put(c, KEY, own), TILEC_RT_OK);
        tilec_cache_close(c);
        snprintf(name, sizeof name, "next_%d", i);
        c = open_in(name);
        cr_assert_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
        cr_expect(bundle_eq(got, own), "%s", how[i]);
        tilec_bundle_free(got);
        got = NULL;
        tilec_cache_close(c);
    }
    /* without the secret the same plant is loaded: what signing protects against */
    use_secret(NULL);
    void *buf;
    size_t len;
    forge(1, &len, &buf);
    plant(KEY, buf, len);
    free(buf);
    tilec_cache *c = open_in("unsigned_victim");
    cr_expect_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_OK, "an unsigned tier trusts its writers");
    tilec_bundle_free(got);
    tilec_cache_close(c);
    tilec_bundle_free(own);
    unsetenv("TILEC_LOGS");
}

/* Without a secret the tier is read-only unless TILEC_CACHE_REDIS_WRITE=1;
 * a malformed secret is no tier at all (never an unsigned one). */
Test(remote, read_only_without_a_secret_and_bad_secrets)
{
    start_server(NULL, 0);
    unsetenv("TILEC_CACHE_REDIS_WRITE");
    tilec_bundle *b = make_bundle(2, 3);
    tilec_cache *c = open_in("plain");
    cr_expect_str_eq(tilec_cache_remote_mode(c), "unsigned, read-only (no TILEC_CACHE_SECRET_FILE or TILEC_CACHE_SECRET)");
    cr_assert_eq(tilec_cache_put(c, KEY, b), TILEC_RT_OK);
    cr_assert_eq(tilec_cache_record_put(c, KEY, "r\n"), TILEC_RT_OK);
    cr_expect_eq(stats_of(c).remote_writes, 0);
    tilec_cache_close(c);
    char keys[64];
    resp(1, (const char *[]){"DBSIZE"}, NULL, keys, sizeof keys);
    cr_expect_eq(atoi(keys + 1), 0, "a read-only tier stored something: %s", keys);
    setenv("TILEC_CACHE_REDIS_WRITE", "1", 1);
    c = open_in("opted_in");
    cr_expect_str_eq(tilec_cache_remote_mode(c), "unsigned, read-write (TILEC_CACHE_REDIS_WRITE=1)");
    tilec_cache_close(c);
    unsetenv("TILEC_CACHE_REDIS_WRITE");
    /* bad settings: no remote tier, with a message */
    char file[160];
    snprintf(file, sizeof file, "%s/secret", dir);
    write_in(dir, "secret", SECRET "\n");
    chmod(file, 0644);
    struct {
        const char *var, *value, *want;
    } bad[] = {
        {"TILEC_CACHE_SECRET", "short", "at least 16 are needed"},
        {"TILEC_CACHE_SECRET_FILE", "/nonexistent/secret", "cannot be read"},
        {"TILEC_CACHE_SECRET_FILE", file, "may be read or written by other users"},
        {"TILEC_CACHE_SECRET_FILE", dir, "is not a regular file"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv(bad[i].var, bad[i].value, 1);
        c = open_in("bad");
        cr_expect_null(tilec_cache_remote(c), "%s=%s", bad[i].var, bad[i].value);
        cr_expect(strstr(tilec_cache_last_error(c), bad[i].want), "%s: %s", bad[i].value, tilec_cache_last_error(c));
        tilec_cache_close(c);
        unsetenv(bad[i].var);
    }
    setenv("TILEC_CACHE_SECRET", SECRET, 1);
    setenv("TILEC_CACHE_SECRET_FILE", file, 1);
    c = open_in("both");
    cr_expect_null(tilec_cache_remote(c));
    cr_expect(strstr(tilec_cache_last_error(c), "set one"), "%s", tilec_cache_last_error(c));
    tilec_cache_close(c);
    unsetenv("TILEC_CACHE_SECRET");
    /* the file, private: a signed tier */
    chmod(file, 0600);
    c = open_in("file");
    cr_expect_str_eq(tilec_cache_remote_mode(c), "signed, read-write");
    tilec_cache_close(c);
    setenv("TILEC_LIBCRYPTO", "/nonexistent/libcrypto.so", 1);
    c = open_in("nolib");
    cr_expect_null(tilec_cache_remote(c));
    cr_expect(strstr(tilec_cache_last_error(c), "libcrypto cannot be loaded"), "%s", tilec_cache_last_error(c));
    tilec_cache_close(c);
    tilec_bundle_free(b);
}
