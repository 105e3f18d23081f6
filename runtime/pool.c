/* pool.c: the async compile pool: worker threads taking tasks from one FIFO
 * queue, futures joined one by one or all together (with a progress bar on
 * a terminal), and the stats written under TILEC_LOGS=async_compile.
 *
 * One mutex guards the whole pool: the task list (every task, in
 * submission order, kept until tilec_pool_free), the queue (a list through
 * the same records), each task's state and results, and the counters. A
 * task's fn runs without it. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tilec/log.h"
#include "tilec/pool.h"

enum { TASK_QUEUED, TASK_RUNNING, TASK_DONE };

enum {
    POOL_SLOWEST = 5,   /* entries of tilec_pool_stats.slowest */
    POOL_AUTONAME = 32, /* room for "task <uint64>" */
    BAR_WIDTH = 30,     /* cells of the progress bar */
    BAR_LINE = 128,     /* its longest line */
};

#define BAR_REDRAW 0.05 /* seconds between two drawings of the bar */

_Static_assert(POOL_SLOWEST == sizeof ((tilec_pool_stats *)0)->slowest / sizeof ((tilec_pool_stats *)0)->slowest[0],
               "POOL_SLOWEST is the size of tilec_pool_stats.slowest");

/* The message of a failed task whose own message could not be made. */
static const char no_memory_message[] = "task failed (out of memory for its message)";

struct tilec_task {
    tilec_pool *pool;
    tilec_task *next;  /* every task of the pool, in submission order */
    tilec_task *qnext; /* the queue */
    tilec_task_fn fn;
    void *arg;
    int state;         /* TASK_QUEUED, TASK_RUNNING, TASK_DONE */
    int result;        /* fn's result, once done */
    char *error;       /* malloc'd; NULL on success, or when out of memory */
    double submitted;  /* monotonic clock at submit */
    double wait;       /* seconds from submit to start, once started */
    double seconds;    /* fn's run time, once done */
    char name[];
};

struct tilec_pool {
    pthread_mutex_t lock;
    pthread_cond_t work; /* the queue has a task, or the pool stops */
    pthread_cond_t done; /* a task finished */
    pthread_t *workers;
    uint32_t nworkers;   /* 0: caller mode */
    int stopping;
    tilec_task *head, *tail;   /* every task */
    tilec_task *qhead, *qtail; /* the queue: submitted, not started */
    uint32_t depth, max_depth;
    uint64_t enqueued, dequeued, finished, failed;
    double wait_max;
    const char *slow_name[POOL_SLOWEST]; /* slowest first */
    double slow_seconds[POOL_SLOWEST];
    uint32_t nslowest;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- thread count ---- */

/* $TILEC_COMPILE_THREADS: digits only, 1 to TILEC_POOL_MAX_THREADS. */
static int parse_threads(const char *s, int *out)
{
    long v = 0;
    if (!*s)
        return EINVAL;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return EINVAL;
        v = v * 10 + (*s - '0');
        if (v > TILEC_POOL_MAX_THREADS)
            return EINVAL;
    }
    if (v < 1)
        return EINVAL;
    *out = (int)v;
    return 0;
}

/* The workers to start for tilec_pool_new(threads): 0 is caller mode. */
static int worker_count(int threads, uint32_t *workers)
{
    if (threads < 0 || threads > TILEC_POOL_MAX_THREADS)
        return EINVAL;
    if (threads == 0) {
        const char *env = getenv("TILEC_COMPILE_THREADS");
        if (env) {
            int rc = parse_threads(env, &threads);
            if (rc)
                return rc;
        } else {
            long cores = sysconf(_SC_NPROCESSORS_ONLN);
            if (cores < 1)
                cores = 1;
            if (cores > TILEC_POOL_MAX_THREADS)
                cores = TILEC_POOL_MAX_THREADS;
            *workers = (uint32_t)cores; /* one core: one worker, still async */
            return 0;
        }
    }
    *workers = threads == 1 ? 0 : (uint32_t)threads;
    return 0;
}

/* ---- running tasks (the lock is held by the *_locked functions) ---- */

static void start_locked(tilec_pool *p, tilec_task *t)
{
    double w = now() - t->submitted;
    t->state = TASK_RUNNING;
    t->wait = w > 0 ? w : 0;
    if (t->wait > p->wait_max)
        p->wait_max = t->wait;
    p->depth--;
    p->dequeued++;
}

static void note_slowest_locked(tilec_pool *p, const tilec_task *t)
{
    uint32_t i = 0;
    while (i < p->nslowest && p->slow_seconds[i] >= t->seconds)
        i++;
    if (i == POOL_SLOWEST)
        return;
    if (p->nslowest < POOL_SLOWEST)
        p->nslowest++;
    for (uint32_t j = p->nslowest - 1; j > i; j--) {
        p->slow_name[j] = p->slow_name[j - 1];
        p->slow_seconds[j] = p->slow_seconds[j - 1];
    }
    p->slow_name[i] = t->name;
    p->slow_seconds[i] = t->seconds;
}

/* "<name>: <msg>" (msg is consumed), or "<name>: failed with status <rc>". */
static char *failure_message(const char *name, int rc, char *msg)
{
    int n = msg ? snprintf(NULL, 0, "%s: %s", name, msg) : snprintf(NULL, 0, "%s: failed with status %d", name, rc);
    char *s = n < 0 ? NULL : malloc((size_t)n + 1);
    if (!s)
        return msg; /* NULL: tilec_task_error says no_memory_message */
    if (msg)
        snprintf(s, (size_t)n + 1, "%s: %s", name, msg);
    else
        snprintf(s, (size_t)n + 1, "%s: failed with status %d", name, rc);
    free(msg);
    return s;
}

/* Run a started task's fn (without the lock) and record its end. Returns
 * with the lock held. */
static void run_task(tilec_pool *p, tilec_task *t)
{
    char *msg = NULL;
    double t0 = now();
    int rc = t->fn(t->arg, &msg);
    double seconds = now() - t0;
    char *error = NULL;
    if (rc)
        error = failure_message(t->name, rc, msg);
    else
        free(msg);

    pthread_mutex_lock(&p->lock);
    t->result = rc;
    t->error = error;
    t->seconds = seconds > 0 ? seconds : 0;
    t->state = TASK_DONE;
    p->finished++;
    if (rc)
        p->failed++;
    note_slowest_locked(p, t);
    pthread_cond_broadcast(&p->done);
}

static void *worker_main(void *arg)
{
    tilec_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->qhead && !p->stopping)
            pthread_cond_wait(&p->work, &p->lock);
        tilec_task *t = p->qhead;
        if (!t)
            break; /* stopping, and the queue is drained */
        p->qhead = t->qnext;
        if (!p->qhead)
            p->qtail = NULL;
        start_locked(p, t);
        pthread_mutex_unlock(&p->lock);
        run_task(p, t);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* ---- the pool ---- */

static int init_sync(tilec_pool *p)
{
    pthread_condattr_t ca;
    int rc = pthread_mutex_init(&p->lock, NULL);
    if (rc)
        return rc;
    if ((rc = pthread_condattr_init(&ca)) != 0)
        goto no_attr;
    if ((rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) != 0)
        goto no_work;
    if ((rc = pthread_cond_init(&p->work, &ca)) != 0)
        goto no_work;
    if ((rc = pthread_cond_init(&p->done, &ca)) != 0)
        goto no_done;
    pthread_condattr_destroy(&ca);
    return 0;
no_done:
    pthread_cond_destroy(&p->work);
no_work:
    pthread_condattr_destroy(&ca);
no_attr:
    pthread_mutex_destroy(&p->lock);
    return rc;
}

static void destroy_sync(tilec_pool *p)
{
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
}

/* Stop the pool and join its first n workers. */
static void stop_workers(tilec_pool *p, uint32_t n)
{
    pthread_mutex_lock(&p->lock);
    p->stopping = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (uint32_t i = 0; i < n; i++)
        pthread_join(p->workers[i], NULL);
}

/* Start the workers with the asynchronous signals blocked (they inherit
 * the mask), so SIGINT and the like reach the application's threads. */
static int start_workers(tilec_pool *p)
{
    sigset_t all, old;
    sigfillset(&all);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
        sigdelset(&all, faults[i]);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = 0;
    uint32_t n = 0;
    for (; n < p->nworkers; n++)
        if ((rc = pthread_create(&p->workers[n], NULL, worker_main, p)) != 0)
            break;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc)
        stop_workers(p, n);
    return rc;
}

int tilec_pool_new(int threads, tilec_pool **out)
{
    if (!out)
        return EINVAL;
    *out = NULL;
    uint32_t workers;
    int rc = worker_count(threads, &workers);
    if (rc)
        return rc;
    tilec_pool *p = calloc(1, sizeof *p);
    if (!p)
        return ENOMEM;
    p->nworkers = workers;
    if (workers && !(p->workers = calloc(workers, sizeof *p->workers))) {
        free(p);
        return ENOMEM;
    }
    if ((rc = init_sync(p)) != 0) {
        free(p->workers);
        free(p);
        return rc;
    }
    if ((rc = start_workers(p)) != 0) {
        destroy_sync(p);
        free(p->workers);
        free(p);
        return rc;
    }
    *out = p;
    return 0;
}

tilec_task *tilec_pool_submit(tilec_pool *p, const char *name, tilec_task_fn fn, void *arg)
{
    if (!p || !fn)
        return NULL;
    size_t len = name ? strlen(name) : POOL_AUTONAME - 1;
    if (len > SIZE_MAX - sizeof(tilec_task) - 1)
        return NULL;
    tilec_task *t = calloc(1, sizeof *t + len + 1);
    if (!t)
        return NULL;
    if (name)
        memcpy(t->name, name, len + 1);
    t->pool = p;
    t->fn = fn;
    t->arg = arg;
    t->state = TASK_QUEUED;

    pthread_mutex_lock(&p->lock);
    if (p->stopping) {
        pthread_mutex_unlock(&p->lock);
        free(t);
        return NULL;
    }
    p->enqueued++;
    if (!name)
        snprintf(t->name, POOL_AUTONAME, "task %" PRIu64, p->enqueued);
    if (p->tail)
        p->tail->next = t;
    else
        p->head = t;
    p->tail = t;
    t->submitted = now();
    if (++p->depth > p->max_depth)
        p->max_depth = p->depth;
    if (!p->nworkers) { /* caller mode: run it here, now */
        start_locked(p, t);
        pthread_mutex_unlock(&p->lock);
        run_task(p, t);
        pthread_mutex_unlock(&p->lock);
        return t;
    }
    if (p->qtail)
        p->qtail->qnext = t;
    else
        p->qhead = t;
    p->qtail = t;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->lock);
    return t;
}

int tilec_task_wait(tilec_task *t)
{
    if (!t)
        return EINVAL;
    tilec_pool *p = t->pool;
    pthread_mutex_lock(&p->lock);
    while (t->state != TASK_DONE)
        pthread_cond_wait(&p->done, &p->lock);
    int rc = t->result;
    pthread_mutex_unlock(&p->lock);
    return rc;
}

const char *tilec_task_name(const tilec_task *t) { return t ? t->name : NULL; }

const char *tilec_task_error(const tilec_task *t)
{
    if (!t)
        return NULL;
    pthread_mutex_lock(&t->pool->lock);
    const char *e = NULL;
    if (t->state == TASK_DONE && t->result)
        e = t->error ? t->error : no_memory_message;
    pthread_mutex_unlock(&t->pool->lock);
    return e;
}

double tilec_task_seconds(const tilec_task *t)
{
    if (!t)
        return 0;
    pthread_mutex_lock(&t->pool->lock);
    double s = t->state == TASK_DONE ? t->seconds : 0;
    pthread_mutex_unlock(&t->pool->lock);
    return s;
}

/* ---- progress bar ---- */

static int want_progress(FILE *f)
{
    const char *off = getenv("TILEC_DISABLE_PROGRESS");
    if (!f || (off && strcmp(off, "1") == 0))
        return 0;
    int fd = fileno(f);
    return fd >= 0 && isatty(fd);
}

/* Draw "compiling [###...] done/total kernels" over the line drawn before
 * (`shown` characters long); returns the new line's length. */
static int draw_bar(FILE *f, uint64_t done, uint64_t total, int shown)
{
    char cells[BAR_WIDTH + 1];
    uint64_t full = total ? done * BAR_WIDTH / total : 0;
    for (int i = 0; i < BAR_WIDTH; i++)
        cells[i] = (uint64_t)i < full ? '#' : '.';
    cells[BAR_WIDTH] = 0;
    char line[BAR_LINE];
    int n = snprintf(line, sizeof line, "compiling [%s] %" PRIu64 "/%" PRIu64 " kernels", cells, done, total);
    if (n < 0)
        return shown;
    if (n >= (int)sizeof line)
        n = (int)sizeof line - 1;
    fprintf(f, "\r%s%*s", line, shown > n ? shown - n : 0, "");
    fflush(f);
    return n;
}

static void erase_bar(FILE *f, int shown)
{
    fprintf(f, "\r%*s\r", shown, "");
    fflush(f);
}

static struct timespec deadline_in(double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long ns = ts.tv_nsec + (long)(seconds * 1e9);
    ts.tv_sec += ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    return ts;
}

int tilec_pool_wait(tilec_pool *p, FILE *progress)
{
    if (!p)
        return 0;
    int bar = want_progress(progress);
    int shown = 0, drawn = 0, failed = 0;
    double last_draw = 0;
    uint64_t shown_done = 0;

    pthread_mutex_lock(&p->lock);
    tilec_task *last = p->tail, *t = p->head;
    while (t) {
        if (t->state == TASK_DONE) {
            failed += t->result != 0;
            t = t == last ? NULL : t->next;
            continue;
        }
        if (!bar) {
            pthread_cond_wait(&p->done, &p->lock);
            continue;
        }
        double at = now();
        if (!drawn || (p->finished != shown_done && at - last_draw >= BAR_REDRAW)) {
            uint64_t done = p->finished, total = p->enqueued;
            pthread_mutex_unlock(&p->lock); /* no I/O under the lock */
            shown = draw_bar(progress, done, total, shown);
            pthread_mutex_lock(&p->lock);
            drawn = 1;
            last_draw = at;
            shown_done = done;
            continue; /* t may have finished meanwhile */
        }
        struct timespec until = deadline_in(BAR_REDRAW);
        pthread_cond_timedwait(&p->done, &p->lock, &until);
    }
    pthread_mutex_unlock(&p->lock);
    if (drawn)
        erase_bar(progress, shown);
    return failed;
}

/* ---- stats ---- */

/* Waits are >= 0, and non-negative doubles order as their bit patterns. */
static uint64_t wait_bits(double w)
{
    uint64_t b;
    memcpy(&b, &w, sizeof b);
    return b;
}

/* The nearest-rank percentile pct of the started tasks' waits: the least
 * wait w such that at least ceil(n * pct / 100) tasks waited <= w. A binary
 * search over bit patterns, counting at each step: exact, and no memory. */
static double wait_percentile_locked(const tilec_pool *p, unsigned pct)
{
    uint64_t n = p->dequeued;
    if (!n)
        return 0;
    uint64_t rank = n / 100 * pct + ((n % 100) * pct + 99) / 100;
    uint64_t lo = 0, hi = wait_bits(p->wait_max);
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2, count = 0;
        for (const tilec_task *t = p->head; t; t = t->next)
            count += t->state != TASK_QUEUED && wait_bits(t->wait) <= mid;
        if (count >= rank)
            hi = mid;
        else
            lo = mid + 1;
    }
    double w;
    memcpy(&w, &lo, sizeof w);
    return w;
}

void tilec_pool_get_stats(const tilec_pool *cp, tilec_pool_stats *s)
{
    if (!s)
        return;
    memset(s, 0, sizeof *s);
    if (!cp)
        return;
    tilec_pool *p = (tilec_pool *)cp; /* the lock is not part of the value */
    pthread_mutex_lock(&p->lock);
    s->enqueued = p->enqueued;
    s->dequeued = p->dequeued;
    s->failed = p->failed;
    s->max_queue_depth = p->max_depth;
    s->threads = p->nworkers ? p->nworkers : 1;
    s->queue_wait_max = p->wait_max;
    s->queue_wait_p50 = wait_percentile_locked(p, 50);
    s->queue_wait_p95 = wait_percentile_locked(p, 95);
    s->nslowest = p->nslowest;
    for (uint32_t i = 0; i < p->nslowest; i++) {
        s->slowest[i].name = p->slow_name[i];
        s->slowest[i].seconds = p->slow_seconds[i];
    }
    pthread_mutex_unlock(&p->lock);
}

/* A task name on one line: control bytes and '\' as \xNN. */
static void put_name(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f || c == '\\')
            fprintf(f, "\\x%02x", c);
        else
            putc(c, f);
    }
}

static void log_stats(const tilec_pool *p, FILE *f)
{
    tilec_pool_stats s;
    tilec_pool_get_stats(p, &s);
    const char *tag = "tilec " TILEC_LOG_ASYNC_COMPILE ":";
    flockfile(f);
    fprintf(f, "%s threads %" PRIu32 "%s\n", tag, s.threads, p->nworkers ? "" : " (caller mode)");
    fprintf(f, "%s tasks enqueued %" PRIu64 ", dequeued %" PRIu64 ", failed %" PRIu64 "\n", tag, s.enqueued,
            s.dequeued, s.failed);
    fprintf(f, "%s queue depth max %" PRIu32 "\n", tag, s.max_queue_depth);
    fprintf(f, "%s queue wait max %.3f ms, p50 %.3f ms, p95 %.3f ms\n", tag, s.queue_wait_max * 1e3,
            s.queue_wait_p50 * 1e3, s.queue_wait_p95 * 1e3);
    for (uint32_t i = 0; i < s.nslowest; i++) {
        fprintf(f, "%s slowest %" PRIu32 ": %.3f ms ", tag, i + 1, s.slowest[i].seconds * 1e3);
        put_name(f, s.slowest[i].name);
        putc('\n', f);
    }
    fflush(f);
    funlockfile(f);
}

void tilec_pool_free(tilec_pool *p)
{
    if (!p)
        return;
    stop_workers(p, p->nworkers); /* they drain the queue first */
    if (tilec_log_enabled(TILEC_LOG_ASYNC_COMPILE))
        log_stats(p, stderr);
    for (tilec_task *t = p->head, *next; t; t = next) {
        next = t->next;
        free(t->error);
        free(t);
    }
    destroy_sync(p);
    free(p->workers);
    free(p);
}
