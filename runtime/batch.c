/* batch.c: many NVRTC compiles at once (batch.h). NVRTC serializes the
 * compiles of one process, so several at once need processes: worker
 * processes (`tilec --compile-worker`) when the tilec executable is found.
 * Without one, the compiles run one after another on a single pool thread
 * (a forked child per compile under the compile limits, so that the limits
 * hold): this process never forks while several of its threads compile,
 * since a child forked then can inherit a lock another thread held (seen as
 * a hang under ASan) and compiles several times slower than a fresh worker.
 * With no limits and nothing to run in parallel, in the caller. */
#include <stdlib.h>
#include <string.h>

#include "runtime/batch.h"
#include "runtime/watch.h"
#include "tilec/pool.h"

/* A pool task: one NVRTC compile. */
static int compile_task(void *arg, char **error)
{
    rt_compile_job *j = arg;
    tilec_rt_status st =
        j->workers ? tilec_compile_workers_compile(j->workers, j->source, j->name, j->arch, &j->cubin, &j->size,
                                                   &j->log)
        : j->isolate ? tilec_nvrtc_compile_isolated(j->source, j->name, j->arch, NULL, 0, &j->cubin, &j->size,
                                                   &j->log)
                     : tilec_nvrtc_compile(j->source, j->name, j->arch, NULL, 0, &j->cubin, &j->size, &j->log);
    if (st == TILEC_RT_OK) {
        free(j->log);
        j->log = NULL;
        return 0;
    }
    size_t n = strlen(j->name) + 64;
    *error = malloc(n);
    if (*error)
        snprintf(*error, n, "%s: %s", j->name, tilec_rt_status_string(st));
    return -1;
}

int rt_compile_batch(rt_compile_job *jobs, uint32_t n, const char *arch, int threads, tilec_compile_workers *given,
                     FILE *progress)
{
    tilec_pool *pool = NULL;
    if (tilec_pool_new(threads, &pool) != 0)
        return RT_BATCH_NO_POOL;
    tilec_pool_stats ps;
    tilec_pool_get_stats(pool, &ps);
    /* a compile with a time or memory limit runs in a child that a
     * watchdog can stop, even for one kernel or one thread: on worker
     * processes (one for one thread), else a fork per compile from the
     * one compiling thread */
    rt_compile_limits lim;
    rt_compile_limits_get(&lim);
    int limited = rt_compile_limits_on(&lim);
    int parallel = ps.threads > 1 && n > 1;
    tilec_compile_workers *own = NULL;
    if (!given && (parallel || limited))
        own = tilec_compile_workers_new(parallel ? (unsigned)ps.threads : 1);
    tilec_compile_workers *workers = parallel || limited ? (given ? given : own) : NULL;
    if (!workers && ps.threads > 1) {
        /* no worker process: one compile at a time, never a fork beside
         * another compiling thread */
        tilec_pool_free(pool);
        pool = NULL;
        if (tilec_pool_new(1, &pool) != 0)
            return RT_BATCH_NO_POOL;
    }
    for (uint32_t i = 0; i < n; i++) {
        jobs[i].arch = arch;
        jobs[i].workers = workers;
        jobs[i].isolate = !workers && limited;
    }
    for (uint32_t i = 0; i < n; i++)
        if (!tilec_pool_submit(pool, jobs[i].name, compile_task, &jobs[i])) {
            tilec_pool_wait(pool, NULL);
            tilec_pool_free(pool);
            tilec_compile_workers_free(own);
            return RT_BATCH_NOMEM;
        }
    int failed = tilec_pool_wait(pool, progress);
    tilec_pool_free(pool);
    tilec_compile_workers_free(own);
    return failed ? RT_BATCH_FAILED : RT_BATCH_OK;
}
