/* cache_helpers.h: what the cache tier suites share (test_cache_lru.c,
 * test_cache_remote.c): a module built without a GPU (rt NULL, sm_90,
 * NVRTC only) through a cache directory, a child process whose stderr
 * goes to a file, and the environment the cache reads. */
#ifndef TILEC_TESTS_CACHE_HELPERS_H
#define TILEC_TESTS_CACHE_HELPERS_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bundle_forge.h"
#include "tilec/program.h"

static char cache_paths[8][160];
static unsigned cache_npaths;

/* dir/name, in one of 8 rotating buffers. */
static inline char *cache_path(const char *dir, const char *name)
{
    char *p = cache_paths[cache_npaths++ % 8];
    snprintf(p, sizeof cache_paths[0], "%s/%s", dir, name);
    return p;
}

/* Build `tile` through a cache on dir; *st gets the program's stats. */
static inline tilec_status cache_build(const char *tile, const char *dir, tilec_program_stats *st)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_status s = tilec_parse_file(ctx, tile, &m);
    tilec_cache *cache = NULL;
    if (s == TILEC_OK && tilec_cache_open(dir, &cache) != TILEC_RT_OK)
        s = TILEC_ERR_NOMEM;
    tilec_build_options o = {.arch = "sm_90", .threads = 1, .cache = cache};
    tilec_program *p = NULL;
    if (s == TILEC_OK)
        s = tilec_program_build(ctx, NULL, m, &o, &p);
    memset(st, 0, sizeof *st);
    if (s == TILEC_OK)
        tilec_program_get_stats(p, st);
    tilec_program_free(p);
    tilec_cache_close(cache);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return s;
}

/* Run fn(arg) in a child whose stderr goes to log_path (NULL: kept);
 * returns its exit status (fn's return), or 200 + signal. */
static inline int cache_child(int (*fn)(void *), void *arg, const char *log_path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (log_path) {
            int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
            if (fd < 0 || dup2(fd, 2) < 0)
                _exit(99);
            close(fd);
        }
        int rc = fn(arg);
        fflush(NULL);
        _exit(rc);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid)
        return 250;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

/* Run fn(0) .. fn(n - 1) in n processes at once; how many did not exit
 * with 0 (at most 64 processes). */
static inline int cache_procs(int n, int (*fn)(int id))
{
    pid_t pids[64];
    int failed = 0;
    fflush(NULL);
    for (int i = 0; i < n && i < 64; i++) {
        pids[i] = fork();
        if (pids[i] == 0)
            _exit(fn(i));
        failed += pids[i] < 0;
    }
    for (int i = 0; i < n && i < 64; i++) {
        int status = 0;
        if (pids[i] > 0 && (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) || WEXITSTATUS(status)))
            failed++;
    }
    return failed;
}

/* One round of a process sharing a cache: open dir, get key, check a hit
 * is key's bundle (made from k) or put it on a miss; *s gets the stats.
 * 0, or what failed: 1 open, 2 a wrong bundle, a failed get or put. */
static inline int cache_use_key(const char *dir, const char *key, unsigned k, tilec_cache_stats *s)
{
    tilec_cache *c;
    if (tilec_cache_open(dir, &c) != TILEC_RT_OK)
        return 1;
    tilec_bundle *want = make_bundle(1 + k % 4, 40u + k), *got = NULL;
    tilec_rt_status st = tilec_cache_get(c, key, &got);
    int bad = st == TILEC_RT_OK ? !bundle_eq(got, want)
                                : st != TILEC_RT_NOT_FOUND || tilec_cache_put(c, key, want) != TILEC_RT_OK;
    tilec_cache_get_stats(c, s);
    tilec_bundle_free(got);
    tilec_bundle_free(want);
    tilec_cache_close(c);
    return bad ? 2 : 0;
}

/* The usage of directory dir (zeros when it cannot be read). */
static inline tilec_cache_usage cache_usage_in(const char *dir)
{
    tilec_cache_usage u;
    memset(&u, 0, sizeof u);
    tilec_cache *c;
    if (tilec_cache_open(dir, &c) == TILEC_RT_OK)
        tilec_cache_usage_get(c, &u);
    tilec_cache_close(c);
    return u;
}

/* The variables the cache reads, unset. */
static inline void cache_clean_env(void)
{
    static const char *const vars[] = {"TILEC_FORCE_DISABLE_CACHES", "TILEC_LOGS", "TILEC_CACHE_DIR",
                                       "XDG_CACHE_HOME", "TILEC_CACHE_MAX_BYTES", "TILEC_CACHE_IDENTITY",
                                       "TILEC_CACHE_REDIS", "TILEC_CACHE_REDIS_PASSWORD", "TILEC_CACHE_REDIS_USER",
                                       "TILEC_CACHE_REDIS_TIMEOUT_MS", "TILEC_CACHE_REDIS_TTL",
                                       "TILEC_CACHE_REDIS_MAX_BYTES", "TILEC_REDIS_SHIM", "TILEC_CACHE_REDIS_CACERT", "TILEC_LINEINFO",
                                       "TILEC_CACHE_REDIS_WRITE", "TILEC_CACHE_SECRET", "TILEC_CACHE_SECRET_FILE",
                                       "TILEC_LIBCRYPTO"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

#endif
