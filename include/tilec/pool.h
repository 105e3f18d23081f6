/* pool.h: the async compile pool: a fixed set of worker threads running
 * tasks (kernel compiles) in submission order behind futures.
 *
 * A task is a function and an argument. tilec_pool_submit queues it and
 * returns its future (a tilec_task, owned by the pool); tilec_task_wait
 * joins one task, tilec_pool_wait joins every task submitted so far. A
 * failing task never stops the others. Tasks, their names and their error
 * messages live until tilec_pool_free.
 *
 * The library prints only what the user asks for through the environment:
 *   TILEC_COMPILE_THREADS=n  the thread count when tilec_pool_new gets 0
 *                            (n = 1: every task runs in the submitting
 *                            thread, inside tilec_pool_submit, for debugging)
 *   TILEC_DISABLE_PROGRESS=1 no progress bar in tilec_pool_wait
 *   TILEC_LOGS=async_compile the pool's stats on stderr at tilec_pool_free
 *
 * Threads. Every call may be made from any thread, concurrently, except:
 *   - tilec_pool_free: once, after every other call on the pool and on its
 *     tasks has returned, and not from inside a task of the pool;
 *   - tilec_task_wait and tilec_pool_wait must not be called from inside a
 *     task of the same pool (the task would wait for itself, or for a task
 *     queued behind it while every worker waits).
 * A task may submit further tasks to its own pool. The strings and stats
 * the getters return stay valid until tilec_pool_free.
 *
 * Memory. One record per task (with its name and error message) until
 * tilec_pool_free; the FIFO queue is a list through those records and the
 * stats are of fixed size, so nothing else grows with the number of tasks. */
#ifndef TILEC_POOL_H
#define TILEC_POOL_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tilec_pool tilec_pool;
typedef struct tilec_task tilec_task; /* a future, owned by its pool */

/* The most threads a pool may have (larger requests are EINVAL; a larger
 * core count is cut to it). */
#define TILEC_POOL_MAX_THREADS 1024

/* The work of one task: return 0 on success; on failure return nonzero and
 * set *error to a malloc'd message (the pool frees it). A message set with
 * a result of 0 is freed and ignored. */
typedef int (*tilec_task_fn)(void *arg, char **error);

/* Make a pool of `threads` worker threads.
 *   threads > 1: that many workers (at most TILEC_POOL_MAX_THREADS);
 *   threads == 1: no worker: every task runs in the caller, inside
 *     tilec_pool_submit (for debugging: a stack trace shows the submitter);
 *   threads == 0: $TILEC_COMPILE_THREADS when it is set (digits only, 1 to
 *     TILEC_POOL_MAX_THREADS; anything else, even "", is EINVAL), else one
 *     worker per online core (one worker, not caller mode, on one core).
 * Returns 0 and sets *out, or returns an errno code and sets *out to NULL
 * (when out is not NULL): EINVAL (out NULL, threads < 0 or too large, a bad
 * $TILEC_COMPILE_THREADS), ENOMEM, or pthread_create's error (EAGAIN).
 * No global state: pools are independent. Workers block the asynchronous
 * signals (SIGINT, SIGTERM, ...), so those go to the application's threads. */
int tilec_pool_new(int threads, tilec_pool **out);

/* Queue fn(arg) under `name` (copied; NULL names it "task N", N counting
 * the pool's submissions from 1) and return its future. In caller mode the
 * task has run when this returns. NULL when out of memory, when p or fn is
 * NULL, or when the pool is being freed (a task submitting during
 * tilec_pool_free): nothing was queued then. */
tilec_task *tilec_pool_submit(tilec_pool *p, const char *name, tilec_task_fn fn, void *arg);

/* Wait for the task to finish and return its fn's result (0: success);
 * EINVAL for NULL. Any number of threads may wait for one task. */
int tilec_task_wait(tilec_task *t);

/* The task's name (never NULL for a task; NULL for NULL). */
const char *tilec_task_name(const tilec_task *t);

/* NULL when the task succeeded or has not finished yet. After a failure:
 * "<name>: <fn's message>", or "<name>: failed with status <result>" when
 * fn gave no message, so the message alone names the task. */
const char *tilec_task_error(const tilec_task *t);

/* Seconds the task's fn ran (wall clock); 0 until it has finished. */
double tilec_task_seconds(const tilec_task *t);

/* Join every task submitted so far (tasks submitted meanwhile by other
 * threads may be left running). While it waits, when `progress` is not NULL
 * and is a terminal (isatty) and TILEC_DISABLE_PROGRESS is not "1", a
 * one-line bar is drawn on it and redrawn at most every 50 ms:
 *     compiling [############..................] 12/32 kernels
 * (finished tasks of the pool / tasks of the pool), then erased. Nothing is
 * drawn when every task had already finished. Returns the number of failed
 * tasks among those joined (0 for NULL p). */
int tilec_pool_wait(tilec_pool *p, FILE *progress);

/* A snapshot of the pool's counters. Queue wait is the time from submit to
 * the start of a task's fn, over the tasks started so far; P50 and P95 are
 * exact (nearest rank). The queue depth counts tasks submitted but not
 * started (in caller mode each task is queued for an instant: depth 1). */
typedef struct tilec_pool_stats {
    uint64_t enqueued;        /* tasks submitted */
    uint64_t dequeued;        /* tasks started */
    uint64_t failed;          /* tasks finished with a nonzero result */
    uint32_t max_queue_depth; /* most tasks waiting at once */
    uint32_t threads;         /* worker threads (1 in caller mode) */
    double queue_wait_max, queue_wait_p50, queue_wait_p95; /* seconds */
    struct {
        const char *name; /* the task's name, owned by the pool */
        double seconds;   /* its run time */
    } slowest[5];         /* finished tasks, slowest first (ties: first finished first) */
    uint32_t nslowest;    /* entries used in slowest: min(5, tasks finished) */
} tilec_pool_stats;

/* Fill *s (zeros for NULL p). Reading the exact percentiles walks every
 * task started so far (about 64 passes), without allocating. */
void tilec_pool_get_stats(const tilec_pool *p, tilec_pool_stats *s);

/* Stop accepting work, let the workers finish every queued task, join
 * them, and free the pool, its tasks and their messages. When TILEC_LOGS
 * enables async_compile, first write the stats to stderr, one
 * "tilec async_compile: ..." line per item (see docs/runtime.md).
 * NULL is a no-op. */
void tilec_pool_free(tilec_pool *p);

#ifdef __cplusplus
}
#endif

#endif
