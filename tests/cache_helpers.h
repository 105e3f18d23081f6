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

#include "tilec/program.h"

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

/* The variables the cache reads, unset. */
static inline void cache_clean_env(void)
{
    static const char *const vars[] = {"TILEC_FORCE_DISABLE_CACHES", "TILEC_LOGS", "TILEC_CACHE_DIR",
                                       "XDG_CACHE_HOME", "TILEC_CACHE_MAX_BYTES", "TILEC_CACHE_IDENTITY",
                                       "TILEC_CACHE_REDIS", "TILEC_CACHE_REDIS_PASSWORD", "TILEC_CACHE_REDIS_USER",
                                       "TILEC_CACHE_REDIS_TIMEOUT_MS", "TILEC_CACHE_REDIS_TTL",
                                       "TILEC_CACHE_REDIS_MAX_BYTES", "TILEC_HIREDIS", "TILEC_LINEINFO"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

#endif
