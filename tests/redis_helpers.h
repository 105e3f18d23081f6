/* redis_helpers.h: a real redis-server for a test (test_cache_remote.c,
 * test_multikernel.c): started on a free loopback port with its files in
 * <dir>/redis, TILEC_CACHE_REDIS pointed at it; the test is skipped
 * without redis-server on PATH (or $TILEC_TEST_REDIS_SERVER). The file
 * that includes this defines `static char dir[64]` (the test's directory)
 * first, and kills server_pid in its teardown (stop_server). */
#ifndef TILEC_TESTS_REDIS_HELPERS_H
#define TILEC_TESTS_REDIS_HELPERS_H

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fs_helpers.h"

static pid_t server_pid;
static int server_port;
static char server_bin[512];

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

static const char *unix_sock; /* start_server_with: also listen on this socket */

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
        const char *argv[20] = {server_bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                "--dir", rdir};
        int n = 11;
        if (password) {
            argv[n++] = "--requirepass";
            argv[n++] = password;
        }
        if (unix_sock) {
            argv[n++] = "--unixsocket";
            argv[n++] = unix_sock;
        }
        argv[n] = NULL;
        execv(server_bin, (char *const *)argv);
        _exit(127);
    }
    for (int i = 0; i < 500 && !can_connect(server_port); i++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    cr_assert(can_connect(server_port), "redis-server did not start: %s", read_file(log, NULL));
    char spec[64];
    snprintf(spec, sizeof spec, "127.0.0.1:%d", server_port);
    setenv("TILEC_CACHE_REDIS", spec, 1);
    setenv("TILEC_CACHE_REDIS_WRITE", "1", 1); /* unsigned stores, as the tests before signing; see "trust" */
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

/* Kill the test's server (nothing when none was started). */
static void stop_server(void)
{
    if (server_pid > 0) {
        kill(server_pid, SIGCONT);
        kill(server_pid, SIGKILL);
        waitpid(server_pid, NULL, 0);
        server_pid = 0;
    }
}

#endif
