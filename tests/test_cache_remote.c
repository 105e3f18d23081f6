/* test_cache_remote.c: the Redis tier against a real redis-server, which
 * each test starts on a free loopback port in its own directory (no
 * persistence). Without redis-server on PATH (or $TILEC_TEST_REDIS_SERVER)
 * it prints one line "SKIP: no redis-server ..." and every test is
 * skipped. Shown: a second process with its own empty directory compiles
 * nothing; every remote fault (server killed, stopped, a wrong or missing
 * password, a corrupt, foreign, over-limit or wrong-type value, a
 * connection dropped in the middle of a value, no libhiredis) is a miss
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
#include "cache_helpers.h"
#include "fs_helpers.h"

static char dir[64];
static pid_t server_pid;
static int server_port;
static char server_bin[512];

static void setup(void)
{
    cache_clean_env();
    make_tmpdir(dir, sizeof dir);
}

static void teardown(void)
{
    if (server_pid > 0) {
        kill(server_pid, SIGCONT);
        kill(server_pid, SIGKILL);
        waitpid(server_pid, NULL, 0);
    }
    rm_dir(dir);
}

TestSuite(remote, .init = setup, .fini = teardown);

static int runnable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* redis-server: $TILEC_TEST_REDIS_SERVER, else the first on PATH. */
static int find_server(void)
{
    const char *env = getenv("TILEC_TEST_REDIS_SERVER");
    if (env && *env) {
        snprintf(server_bin, sizeof server_bin, "%s", env);
        return runnable(server_bin);
    }
    const char *path = getenv("PATH");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path ? path : "/usr/bin:/bin");
    for (char *save, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(server_bin, sizeof server_bin, "%s/redis-server", d);
        if (runnable(server_bin))
            return 1;
    }
    return 0;
}

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
              getsockname(s, (struct sockaddr *)&a, &len) == 0);
    close(s);
    return ntohs(a.sin_port);
}

static int can_connect(int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0;
    if (s >= 0)
        close(s);
    return ok;
}

/* Start a server (password NULL: none) and point TILEC_CACHE_REDIS at it,
 * or skip the test; only the test that announces prints the SKIP line. */
static void start_server(const char *password, int announce)
{
    if (!find_server()) {
        if (announce)
            fprintf(stderr, "SKIP: no redis-server on PATH (apt-get install redis-server): the remote cache tier "
                            "is not tested\n");
        cr_skip_test("no redis-server");
    }
    server_port = free_port();
    char port[16], rdir[128], log[160];
    snprintf(port, sizeof port, "%d", server_port);
    snprintf(rdir, sizeof rdir, "%s/redis", dir);
    snprintf(log, sizeof log, "%s/redis.log", dir);
    mkdir(rdir, 0700);
    fflush(NULL);
    server_pid = fork();
    cr_assert_geq(server_pid, 0);
    if (server_pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        if (password)
            execl(server_bin, server_bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                  "--dir", rdir, "--requirepass", password, (char *)NULL);
        else
            execl(server_bin, server_bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                  "--dir", rdir, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500 && !can_connect(server_port); i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    cr_assert(can_connect(server_port), "redis-server did not start: %s", read_file(log, NULL));
    char spec[64];
    snprintf(spec, sizeof spec, "127.0.0.1:%d", server_port);
    setenv("TILEC_CACHE_REDIS", spec, 1);
}

/* One command to the test's server in the protocol's own words (no
 * redis-cli needed: a GPU machine may carry only the server). The whole
 * reply goes to buf; returns its length (the first byte is its type). */
static size_t resp(int argc, const char *const *argv, const size_t *lens, char *buf, size_t cap)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)server_port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert(s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0);
    FILE *f = fdopen(s, "r+");
    cr_assert(f);
    fprintf(f, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        size_t n = lens ? lens[i] : strlen(argv[i]);
        fprintf(f, "$%zu\r\n", n);
        fwrite(argv[i], 1, n, f);
        fputs("\r\n", f);
    }
    fflush(f);
    cr_assert(fgets(buf, (int)cap, f), "no reply");
    size_t got = strlen(buf);
    long bulk = buf[0] == '$' ? atol(buf + 1) : -1;
    if (bulk > 0) {
        cr_assert_lt(got + (size_t)bulk + 2, cap);
        cr_assert_eq(fread(buf + got, 1, (size_t)bulk + 2, f), (size_t)bulk + 2);
        got += (size_t)bulk + 2;
    }
    fclose(f);
    return got;
}

/* A command of plain words; its reply must start with `want`. */
static void say_to_server(const char *want, int argc, const char *const *argv, const size_t *lens)
{
    char reply[256];
    resp(argc, argv, lens, reply, sizeof reply);
    cr_assert(!strncmp(reply, want, strlen(want)), "%s: %s", argv[0], reply);
}

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
    tilec_bundle *b = make_bundle(2, 4), *got = NULL;
    publish_from("writer", b);
    tilec_cache *c = open_in("reader");
    cr_assert_eq(tilec_cache_get(c, KEY, &got), TILEC_RT_OK, "%s", tilec_cache_last_error(c));
    cr_expect(bundle_eq(got, b));
    cr_expect_eq(stats_of(c).remote_hits, 1);
    tilec_bundle_free(got);
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
    setenv("TILEC_HIREDIS", "/nonexistent/libhiredis.so", 1);
    survive(&(fault_case){"no_hiredis", "cannot load libhiredis", 0}, 2000);
    unsetenv("TILEC_HIREDIS");
    static const char *const bad[] = {"localhost", "host:0", "host:99999", ":6379", "[::1", "h:12x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("TILEC_CACHE_REDIS", bad[i], 1);
        tilec_cache *c = open_in("bad");
        cr_expect_null(tilec_cache_remote(c), "%s", bad[i]);
        cr_expect(strstr(tilec_cache_last_error(c), "is not host:port"), "%s: %s", bad[i],
                  tilec_cache_last_error(c));
        tilec_cache_close(c);
    }
    setenv("TILEC_CACHE_REDIS", "127.0.0.1:6379", 1);
    setenv("TILEC_CACHE_REDIS_TIMEOUT_MS", "soon", 1);
    tilec_cache *c = open_in("bad");
    cr_expect_null(tilec_cache_remote(c));
    cr_expect(strstr(tilec_cache_last_error(c), "TILEC_CACHE_REDIS_TIMEOUT_MS=soon"), "%s", tilec_cache_last_error(c));
    tilec_cache_close(c);
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
