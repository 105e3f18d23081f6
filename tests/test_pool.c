/* test_pool.c: the async compile pool (runtime/pool.c) and the log channel
 * check (runtime/log.c): every task runs once with 1, 2 and 8 threads,
 * results and errors per task, FIFO order, stats, TILEC_COMPILE_THREADS,
 * concurrent submitters and waiters, the TILEC_LOGS report on stderr, and
 * the progress bar (drawn on a pseudo-terminal only). Criterion runs each
 * test in its own process, so setenv and dup2 stay inside the test. */
#define _XOPEN_SOURCE 700 /* posix_openpt, grantpt, unlockpt, ptsname */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tilec/log.h"
#include "tilec/pool.h"

/* ---- helpers ---- */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* One task's record: how often it ran, where, in which order. */
typedef struct job {
    atomic_int runs;
    int result;      /* what the task returns */
    const char *msg; /* its error message (strdup'ed), or NULL */
    int sleep_ms;
    pthread_t thread; /* the thread it ran on */
    int order;        /* its rank among the starts (from start_seq) */
    atomic_int *start_seq;
} job;

static int job_fn(void *arg, char **error)
{
    job *j = arg;
    atomic_fetch_add(&j->runs, 1);
    j->thread = pthread_self();
    if (j->start_seq)
        j->order = atomic_fetch_add(j->start_seq, 1);
    if (j->sleep_ms)
        sleep_ms(j->sleep_ms);
    if (j->msg)
        *error = strdup(j->msg);
    return j->result;
}

/* A task that blocks until its gate opens. */
typedef struct gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    int open, entered;
} gate;

#define GATE_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0}

static int gate_fn(void *arg, char **error)
{
    (void)error;
    gate *g = arg;
    pthread_mutex_lock(&g->m);
    g->entered++;
    pthread_cond_broadcast(&g->c);
    while (!g->open)
        pthread_cond_wait(&g->c, &g->m);
    pthread_mutex_unlock(&g->m);
    return 0;
}

static void gate_wait_entered(gate *g, int n)
{
    pthread_mutex_lock(&g->m);
    while (g->entered < n)
        pthread_cond_wait(&g->c, &g->m);
    pthread_mutex_unlock(&g->m);
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->m);
    g->open = 1;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
}

static tilec_pool *new_pool(int threads)
{
    tilec_pool *p = NULL;
    int rc = tilec_pool_new(threads, &p);
    cr_assert_eq(rc, 0, "tilec_pool_new(%d): %s", threads, strerror(rc));
    cr_assert_not_null(p);
    return p;
}

static void expect_stats_consistent(const tilec_pool_stats *s)
{
    cr_expect_eq(s->enqueued, s->dequeued, "enqueued %llu, dequeued %llu", (unsigned long long)s->enqueued,
                 (unsigned long long)s->dequeued);
    cr_expect(s->queue_wait_p50 >= 0);
    cr_expect(s->queue_wait_p50 <= s->queue_wait_p95, "p50 %g > p95 %g", s->queue_wait_p50, s->queue_wait_p95);
    cr_expect(s->queue_wait_p95 <= s->queue_wait_max, "p95 %g > max %g", s->queue_wait_p95, s->queue_wait_max);
    cr_expect_leq(s->nslowest, 5);
    for (uint32_t i = 0; i < s->nslowest; i++) {
        cr_expect_not_null(s->slowest[i].name);
        if (i)
            cr_expect(s->slowest[i - 1].seconds >= s->slowest[i].seconds, "slowest[%u] %g < slowest[%u] %g", i - 1,
                      s->slowest[i - 1].seconds, i, s->slowest[i].seconds);
    }
}

/* ---- every task runs exactly once ---- */

enum { MANY = 200 };

/* MANY tasks, every tenth fails (with a message when i % 20 == 3, else without). */
static void run_many(int threads)
{
    static job jobs[MANY];
    static tilec_task *tasks[MANY];
    tilec_pool *p = new_pool(threads);
    char name[32];
    for (int i = 0; i < MANY; i++) {
        jobs[i].result = i % 10 == 3 ? 100 + i : 0;
        jobs[i].msg = i % 20 == 3 ? "no such intrinsic" : NULL;
        jobs[i].sleep_ms = i % 50 == 0 ? 2 : 0;
        snprintf(name, sizeof name, "kernel_%d", i);
        tasks[i] = tilec_pool_submit(p, name, job_fn, &jobs[i]);
        cr_assert_not_null(tasks[i]);
    }
    cr_expect_eq(tilec_pool_wait(p, NULL), MANY / 10);
    for (int i = 0; i < MANY; i++) {
        snprintf(name, sizeof name, "kernel_%d", i);
        cr_expect_eq(atomic_load(&jobs[i].runs), 1, "task %d ran %d times", i, atomic_load(&jobs[i].runs));
        cr_expect_eq(tilec_task_wait(tasks[i]), jobs[i].result, "task %d", i);
        cr_expect_str_eq(tilec_task_name(tasks[i]), name);
        cr_expect(tilec_task_seconds(tasks[i]) >= 0);
        char want[96];
        if (i % 20 == 3) {
            snprintf(want, sizeof want, "kernel_%d: no such intrinsic", i);
            cr_expect_str_eq(tilec_task_error(tasks[i]), want);
        } else if (i % 10 == 3) {
            snprintf(want, sizeof want, "kernel_%d: failed with status %d", i, 100 + i);
            cr_expect_str_eq(tilec_task_error(tasks[i]), want);
        } else {
            cr_expect_null(tilec_task_error(tasks[i]), "task %d: %s", i, tilec_task_error(tasks[i]));
        }
    }
    cr_expect(tilec_task_seconds(tasks[0]) >= 0.002, "a 2 ms task ran %g s", tilec_task_seconds(tasks[0]));
    tilec_pool_stats s;
    tilec_pool_get_stats(p, &s);
    cr_expect_eq(s.enqueued, MANY);
    cr_expect_eq(s.dequeued, MANY);
    cr_expect_eq(s.failed, MANY / 10);
    cr_expect_eq(s.threads, (uint32_t)threads);
    cr_expect_geq(s.max_queue_depth, 1);
    cr_expect_leq(s.max_queue_depth, MANY);
    if (threads == 1)
        cr_expect_eq(s.max_queue_depth, 1, "caller mode queues one task at a time");
    cr_expect_eq(s.nslowest, 5);
    expect_stats_consistent(&s);
    /* the 2 ms tasks (0, 50, 100, 150) are the slowest four */
    for (uint32_t i = 0; i < 4; i++)
        cr_expect(s.slowest[i].seconds >= 0.002, "slowest[%u] = %s, %g s", i, s.slowest[i].name,
                  s.slowest[i].seconds);
    /* a second wait joins the same tasks and counts the same failures */
    cr_expect_eq(tilec_pool_wait(p, NULL), MANY / 10);
    tilec_pool_free(p);
}

Test(pool, many_tasks_run_once_in_caller_mode) { run_many(1); }
Test(pool, many_tasks_run_once_with_2_threads) { run_many(2); }
Test(pool, many_tasks_run_once_with_8_threads) { run_many(8); }

/* ---- failures ---- */

Test(pool, a_failing_task_names_itself_and_the_others_finish)
{
    tilec_pool *p = new_pool(4);
    job slow[6] = {{.sleep_ms = 20}, {.sleep_ms = 20}, {.sleep_ms = 20}, {.sleep_ms = 20}, {.sleep_ms = 20},
                   {.sleep_ms = 20}};
    job bad = {.result = 1, .msg = "kernel.tile:3:5: error: identifier \"tid\" is undefined"};
    tilec_task *ts[6];
    for (int i = 0; i < 3; i++)
        ts[i] = tilec_pool_submit(p, "ok_before", job_fn, &slow[i]);
    tilec_task *tb = tilec_pool_submit(p, "softmax_bad", job_fn, &bad);
    for (int i = 3; i < 6; i++)
        ts[i] = tilec_pool_submit(p, "ok_after", job_fn, &slow[i]);
    cr_assert_not_null(tb);
    cr_expect_eq(tilec_task_wait(tb), 1);
    cr_expect_str_eq(tilec_task_error(tb), "softmax_bad: kernel.tile:3:5: error: identifier \"tid\" is undefined");
    cr_expect_str_eq(tilec_task_name(tb), "softmax_bad");
    cr_expect_eq(tilec_pool_wait(p, NULL), 1);
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(tilec_task_wait(ts[i]), 0);
        cr_expect_null(tilec_task_error(ts[i]));
        cr_expect_eq(atomic_load(&slow[i].runs), 1);
        cr_expect(tilec_task_seconds(ts[i]) >= 0.02, "task %d ran %g s", i, tilec_task_seconds(ts[i]));
    }
    tilec_pool_stats s;
    tilec_pool_get_stats(p, &s);
    cr_expect_eq(s.failed, 1);
    cr_expect_eq(s.enqueued, 7);
    tilec_pool_free(p);
}

Test(pool, a_message_with_success_is_dropped)
{
    tilec_pool *p = new_pool(2);
    job j = {.result = 0, .msg = "warning: unused variable"};
    tilec_task *t = tilec_pool_submit(p, "k", job_fn, &j);
    cr_expect_eq(tilec_task_wait(t), 0);
    cr_expect_null(tilec_task_error(t));
    cr_expect_eq(tilec_pool_wait(p, NULL), 0);
    tilec_pool_free(p); /* the sanitizer build proves the message was freed */
}

Test(pool, unnamed_tasks_are_numbered)
{
    tilec_pool *p = new_pool(1);
    job j[3] = {{0}, {0}, {.result = 2}};
    tilec_task *t1 = tilec_pool_submit(p, "first", job_fn, &j[0]);
    tilec_task *t2 = tilec_pool_submit(p, NULL, job_fn, &j[1]);
    tilec_task *t3 = tilec_pool_submit(p, NULL, job_fn, &j[2]);
    cr_expect_str_eq(tilec_task_name(t1), "first");
    cr_expect_str_eq(tilec_task_name(t2), "task 2");
    cr_expect_str_eq(tilec_task_name(t3), "task 3");
    cr_expect_str_eq(tilec_task_error(t3), "task 3: failed with status 2");
    tilec_pool_free(p);
}

Test(pool, bad_arguments)
{
    tilec_pool *p = (tilec_pool *)1;
    cr_expect_eq(tilec_pool_new(-1, &p), EINVAL);
    cr_expect_null(p);
    cr_expect_eq(tilec_pool_new(TILEC_POOL_MAX_THREADS + 1, &p), EINVAL);
    cr_expect_eq(tilec_pool_new(2, NULL), EINVAL);
    p = new_pool(2);
    job j = {0};
    cr_expect_null(tilec_pool_submit(NULL, "x", job_fn, &j));
    cr_expect_null(tilec_pool_submit(p, "x", NULL, &j));
    cr_expect_eq(tilec_task_wait(NULL), EINVAL);
    cr_expect_null(tilec_task_name(NULL));
    cr_expect_null(tilec_task_error(NULL));
    cr_expect(tilec_task_seconds(NULL) == 0);
    cr_expect_eq(tilec_pool_wait(NULL, stderr), 0);
    tilec_pool_stats s;
    memset(&s, 0xff, sizeof s);
    tilec_pool_get_stats(NULL, &s);
    cr_expect_eq(s.enqueued, 0);
    cr_expect_eq(s.nslowest, 0);
    tilec_pool_get_stats(p, NULL);
    tilec_pool_get_stats(p, &s); /* an empty pool */
    cr_expect_eq(s.enqueued, 0);
    cr_expect_eq(s.dequeued, 0);
    cr_expect_eq(s.max_queue_depth, 0);
    cr_expect_eq(s.threads, 2);
    cr_expect(s.queue_wait_max == 0 && s.queue_wait_p50 == 0 && s.queue_wait_p95 == 0);
    cr_expect_eq(s.nslowest, 0);
    cr_expect_eq(tilec_pool_wait(p, NULL), 0);
    tilec_pool_free(p);
    tilec_pool_free(NULL);
    cr_expect_eq(atomic_load(&j.runs), 0);
}

/* ---- futures before they finish ---- */

Test(pool, a_running_task_has_no_error_and_no_time_yet)
{
    tilec_pool *p = new_pool(2);
    gate g = GATE_INIT;
    tilec_task *t = tilec_pool_submit(p, "blocked", gate_fn, &g);
    gate_wait_entered(&g, 1);
    cr_expect_null(tilec_task_error(t));
    cr_expect(tilec_task_seconds(t) == 0);
    sleep_ms(10);
    gate_open(&g);
    cr_expect_eq(tilec_task_wait(t), 0);
    cr_expect(tilec_task_seconds(t) >= 0.01, "ran %g s", tilec_task_seconds(t));
    tilec_pool_free(p);
}

typedef struct waiter {
    tilec_task *t;
    int rc;
} waiter;

static void *wait_thread(void *arg)
{
    waiter *w = arg;
    w->rc = tilec_task_wait(w->t);
    return NULL;
}

Test(pool, many_threads_wait_for_one_task)
{
    tilec_pool *p = new_pool(2);
    gate g = GATE_INIT;
    tilec_task *t = tilec_pool_submit(p, "blocked", gate_fn, &g);
    pthread_t th[8];
    waiter w[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (waiter){t, -1};
        cr_assert_eq(pthread_create(&th[i], NULL, wait_thread, &w[i]), 0);
    }
    sleep_ms(10);
    gate_open(&g);
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(w[i].rc, 0);
    }
    tilec_pool_free(p);
}

/* ---- order and stats ---- */

enum { QUEUED = 50 };

/* Both workers block in gates; QUEUED tasks wait behind them. Then one gate
 * opens, so a single worker drains the queue: the start order is exact. */
Test(pool, the_queue_is_fifo_and_its_depth_and_waits_are_counted)
{
    tilec_pool *p = new_pool(2);
    gate g1 = GATE_INIT, g2 = GATE_INIT;
    atomic_int seq = 0;
    static job jobs[QUEUED];
    static tilec_task *queued[QUEUED];
    tilec_task *a = tilec_pool_submit(p, "gate1", gate_fn, &g1);
    gate_wait_entered(&g1, 1);
    tilec_task *b = tilec_pool_submit(p, "gate2", gate_fn, &g2);
    gate_wait_entered(&g2, 1);
    for (int i = 0; i < QUEUED; i++) {
        jobs[i].start_seq = &seq;
        queued[i] = tilec_pool_submit(p, "queued", job_fn, &jobs[i]);
        cr_assert_not_null(queued[i]);
    }
    tilec_pool_stats s;
    tilec_pool_get_stats(p, &s);
    cr_expect_eq(s.enqueued, QUEUED + 2);
    cr_expect_eq(s.dequeued, 2);
    cr_expect_eq(s.max_queue_depth, QUEUED);
    sleep_ms(30);
    gate_open(&g1);
    cr_expect_eq(tilec_task_wait(a), 0);
    for (int i = 0; i < QUEUED; i++)
        cr_expect_eq(tilec_task_wait(queued[i]), 0); /* gate2 still holds the other worker */
    for (int i = 0; i < QUEUED; i++)
        cr_expect_eq(jobs[i].order, i, "task %d started as number %d", i, jobs[i].order);
    sleep_ms(30); /* gate2 runs 30 ms longer than gate1 */
    gate_open(&g2);
    cr_expect_eq(tilec_task_wait(b), 0);
    cr_expect_eq(tilec_pool_wait(p, NULL), 0);
    tilec_pool_get_stats(p, &s);
    cr_expect_eq(s.enqueued, QUEUED + 2);
    cr_expect_eq(s.dequeued, QUEUED + 2);
    cr_expect_eq(s.max_queue_depth, QUEUED);
    expect_stats_consistent(&s);
    /* 50 of the 52 tasks waited >= 30 ms for the gate */
    cr_expect(s.queue_wait_p50 >= 0.03, "p50 %g", s.queue_wait_p50);
    cr_expect(s.queue_wait_max >= 0.03, "max %g", s.queue_wait_max);
    cr_expect_str_eq(s.slowest[0].name, "gate2");
    cr_expect_str_eq(s.slowest[1].name, "gate1");
    tilec_pool_free(p);
}

Test(pool, the_five_slowest_are_kept_in_order)
{
    tilec_pool *p = new_pool(2);
    job jobs[20] = {{0}};
    char name[16];
    for (int i = 0; i < 20; i++) {
        int slow = i % 4 == 1 ? i / 4 : -1; /* 5 slow tasks: 0..4 */
        jobs[i].sleep_ms = slow >= 0 ? 15 * (slow + 1) : 0;
        if (slow >= 0)
            snprintf(name, sizeof name, "slow%d", slow);
        else
            snprintf(name, sizeof name, "fast%d", i);
        cr_assert_not_null(tilec_pool_submit(p, name, job_fn, &jobs[i]));
    }
    cr_expect_eq(tilec_pool_wait(p, NULL), 0);
    tilec_pool_stats s;
    tilec_pool_get_stats(p, &s);
    expect_stats_consistent(&s);
    cr_assert_eq(s.nslowest, 5);
    for (int k = 0; k < 5; k++) {
        snprintf(name, sizeof name, "slow%d", 4 - k);
        cr_expect_str_eq(s.slowest[k].name, name);
        cr_expect(s.slowest[k].seconds >= 0.015 * (5 - k), "%s ran %g s", name, s.slowest[k].seconds);
    }
    tilec_pool_free(p);
}

/* ---- TILEC_COMPILE_THREADS ---- */

Test(pool, compile_threads_from_the_environment)
{
    setenv("TILEC_COMPILE_THREADS", "3", 1);
    tilec_pool *p = new_pool(0);
    tilec_pool_stats s;
    tilec_pool_get_stats(p, &s);
    cr_expect_eq(s.threads, 3);
    tilec_pool_free(p);
    /* an explicit count ignores the variable */
    setenv("TILEC_COMPILE_THREADS", "nonsense", 1);
    p = new_pool(2);
    tilec_pool_get_stats(p, &s);
    cr_expect_eq(s.threads, 2);
    tilec_pool_free(p);
}

Test(pool, compile_threads_invalid_is_an_error)
{
    static const char *const bad[] = {"", "0", "-1", "+2", " 2", "2 ", "abc", "4x", "2.5", "0x10", "1025",
                                      "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("TILEC_COMPILE_THREADS", bad[i], 1);
        tilec_pool *p = (tilec_pool *)1;
        cr_expect_eq(tilec_pool_new(0, &p), EINVAL, "TILEC_COMPILE_THREADS=\"%s\"", bad[i]);
        cr_expect_null(p, "TILEC_COMPILE_THREADS=\"%s\"", bad[i]);
    }
}

Test(pool, compile_threads_unset_is_the_online_cores)
{
    unsetenv("TILEC_COMPILE_THREADS");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    tilec_pool *p = new_pool(0);
    tilec_pool_stats s;
    tilec_pool_get_stats(p, &s);
    cr_expect_eq((long)s.threads, cores < 1 ? 1 : cores > TILEC_POOL_MAX_THREADS ? TILEC_POOL_MAX_THREADS : cores);
    tilec_pool_free(p);
}

Test(pool, compile_threads_1_runs_each_task_inside_submit)
{
    setenv("TILEC_COMPILE_THREADS", "1", 1);
    tilec_pool *p = new_pool(0);
    job j = {.result = 5, .msg = "bad"};
    tilec_task *t = tilec_pool_submit(p, "inline", job_fn, &j);
    /* no wait: it ran during submit, on this thread */
    cr_expect_eq(atomic_load(&j.runs), 1);
    cr_expect(pthread_equal(j.thread, pthread_self()));
    cr_expect_str_eq(tilec_task_error(t), "inline: bad");
    cr_expect_eq(tilec_task_wait(t), 5);
    tilec_pool_stats s;
    tilec_pool_get_stats(p, &s);
    cr_expect_eq(s.threads, 1);
    cr_expect_eq(s.enqueued, 1);
    cr_expect_eq(s.dequeued, 1);
    cr_expect_eq(s.max_queue_depth, 1);
    tilec_pool_free(p);
}

Test(pool, workers_are_other_threads)
{
    tilec_pool *p = new_pool(2);
    job j = {0};
    tilec_task *t = tilec_pool_submit(p, "async", job_fn, &j);
    cr_expect_eq(tilec_task_wait(t), 0);
    cr_expect(!pthread_equal(j.thread, pthread_self()));
    tilec_pool_free(p);
}

/* ---- concurrent submitters and waiters ---- */

enum { SUBMITTERS = 4, PER_SUBMITTER = 100 };

typedef struct submitter {
    tilec_pool *p;
    int id;
    job jobs[PER_SUBMITTER];
    tilec_task *tasks[PER_SUBMITTER];
    int ok; /* 1 when every one of its tasks had finished after its wait */
} submitter;

static void *submit_thread(void *arg)
{
    submitter *sb = arg;
    char name[32];
    for (int i = 0; i < PER_SUBMITTER; i++) {
        sb->jobs[i].result = i % 25 == 7;
        sb->jobs[i].sleep_ms = i % 30 == 0;
        snprintf(name, sizeof name, "s%d_k%d", sb->id, i);
        sb->tasks[i] = tilec_pool_submit(sb->p, name, job_fn, &sb->jobs[i]);
        if (!sb->tasks[i])
            return NULL;
    }
    int failed = tilec_pool_wait(sb->p, NULL); /* joins at least its own tasks */
    sb->ok = failed >= PER_SUBMITTER / 25;
    for (int i = 0; i < PER_SUBMITTER; i++) {
        snprintf(name, sizeof name, "s%d_k%d", sb->id, i);
        if (atomic_load(&sb->jobs[i].runs) != 1 || strcmp(tilec_task_name(sb->tasks[i]), name) != 0)
            sb->ok = 0;
    }
    return NULL;
}

static void submit_concurrently(int threads)
{
    static submitter sb[SUBMITTERS];
    tilec_pool *p = new_pool(threads);
    pthread_t th[SUBMITTERS];
    for (int k = 0; k < SUBMITTERS; k++) {
        memset(&sb[k], 0, sizeof sb[k]);
        sb[k].p = p;
        sb[k].id = k;
        cr_assert_eq(pthread_create(&th[k], NULL, submit_thread, &sb[k]), 0);
    }
    for (int k = 0; k < SUBMITTERS; k++) {
        pthread_join(th[k], NULL);
        cr_expect(sb[k].ok, "submitter %d: a task had not finished after its wait", k);
    }
    cr_expect_eq(tilec_pool_wait(p, NULL), SUBMITTERS * (PER_SUBMITTER / 25));
    for (int k = 0; k < SUBMITTERS; k++)
        for (int i = 0; i < PER_SUBMITTER; i++) {
            cr_expect_eq(atomic_load(&sb[k].jobs[i].runs), 1);
            cr_expect_eq(tilec_task_wait(sb[k].tasks[i]), i % 25 == 7);
        }
    tilec_pool_stats s;
    tilec_pool_get_stats(p, &s);
    cr_expect_eq(s.enqueued, SUBMITTERS * PER_SUBMITTER);
    cr_expect_eq(s.dequeued, SUBMITTERS * PER_SUBMITTER);
    cr_expect_eq(s.failed, SUBMITTERS * (PER_SUBMITTER / 25));
    expect_stats_consistent(&s);
    tilec_pool_free(p);
}

Test(pool, four_threads_submit_and_wait_at_once) { submit_concurrently(3); }
Test(pool, four_threads_submit_and_wait_at_once_in_caller_mode) { submit_concurrently(1); }

/* ---- lifetime ---- */

Test(pool, free_finishes_the_queued_tasks)
{
    static job jobs[50];
    tilec_pool *p = new_pool(2);
    for (int i = 0; i < 50; i++) {
        jobs[i].sleep_ms = 1;
        cr_assert_not_null(tilec_pool_submit(p, "late", job_fn, &jobs[i]));
    }
    tilec_pool_free(p); /* no wait */
    for (int i = 0; i < 50; i++)
        cr_expect_eq(atomic_load(&jobs[i].runs), 1, "task %d", i);
}

typedef struct nested {
    tilec_pool *p;
    job inner;
    tilec_task *t;
} nested;

static int nest_fn(void *arg, char **error)
{
    (void)error;
    nested *n = arg;
    n->t = tilec_pool_submit(n->p, "inner", job_fn, &n->inner);
    return n->t ? 0 : 1;
}

static void nested_submit(int threads)
{
    tilec_pool *p = new_pool(threads);
    nested n = {.p = p};
    tilec_task *outer = tilec_pool_submit(p, "outer", nest_fn, &n);
    cr_expect_eq(tilec_task_wait(outer), 0);
    cr_assert_not_null(n.t);
    cr_expect_eq(tilec_task_wait(n.t), 0);
    cr_expect_eq(atomic_load(&n.inner.runs), 1);
    cr_expect_eq(tilec_pool_wait(p, NULL), 0);
    tilec_pool_free(p);
}

Test(pool, a_task_may_submit_tasks) { nested_submit(2); }
Test(pool, a_task_may_submit_tasks_in_caller_mode) { nested_submit(1); }

/* ---- TILEC_LOGS ---- */

/* Run a small pool (one failure, one slow task with a newline in its
 * name) and return what the library wrote to stderr meanwhile. */
static char *stderr_of_a_pool_run(int threads)
{
    char path[] = "/tmp/tilec_pool_stderr_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    cr_assert(saved >= 0);
    cr_assert_eq(dup2(fd, 2), 2);

    tilec_pool *p = NULL;
    int rc = tilec_pool_new(threads, &p);
    job jobs[10] = {{0}};
    char name[16];
    for (int i = 0; i < 10 && rc == 0; i++) {
        jobs[i].result = i == 3 ? 1 : 0;
        jobs[i].msg = i == 3 ? "syntax error" : NULL;
        jobs[i].sleep_ms = i == 6 ? 30 : 0;
        snprintf(name, sizeof name, i == 6 ? "big\nname" : "k%d", i);
        tilec_pool_submit(p, name, job_fn, &jobs[i]);
    }
    int failed = tilec_pool_wait(p, NULL);
    tilec_pool_free(p);

    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    cr_assert_eq(rc, 0);
    cr_expect_eq(failed, 1);
    off_t size = lseek(fd, 0, SEEK_END);
    char *out = calloc(1, (size_t)size + 1);
    cr_assert_not_null(out);
    cr_assert_eq(pread(fd, out, (size_t)size, 0), (ssize_t)size);
    close(fd);
    return out;
}

static void expect_stats_report(const char *out, int threads)
{
    char want[128];
    snprintf(want, sizeof want, "tilec async_compile: threads %d%s\n", threads, threads == 1 ? " (caller mode)" : "");
    cr_expect(strncmp(out, want, strlen(want)) == 0, "got:\n%s", out);
    cr_expect_not_null(strstr(out, "\ntilec async_compile: tasks enqueued 10, dequeued 10, failed 1\n"), "got:\n%s",
                       out);
    const char *d = strstr(out, "\ntilec async_compile: queue depth max ");
    cr_assert_not_null(d, "got:\n%s", out);
    unsigned depth = 0;
    cr_expect_eq(sscanf(d, "\ntilec async_compile: queue depth max %u", &depth), 1);
    cr_expect(depth >= 1 && depth <= 10, "depth %u", depth);
    if (threads == 1)
        cr_expect_eq(depth, 1);
    const char *w = strstr(out, "\ntilec async_compile: queue wait max ");
    cr_assert_not_null(w, "got:\n%s", out);
    double max = -1, p50 = -1, p95 = -1;
    cr_expect_eq(sscanf(w, "\ntilec async_compile: queue wait max %lf ms, p50 %lf ms, p95 %lf ms", &max, &p50, &p95),
                 3);
    cr_expect(0 <= p50 && p50 <= p95 && p95 <= max, "max %g p50 %g p95 %g", max, p50, p95);
    const char *s1 = strstr(out, "\ntilec async_compile: slowest 1: ");
    cr_assert_not_null(s1, "got:\n%s", out);
    double ms = 0;
    char nm[32] = "";
    cr_expect_eq(sscanf(s1, "\ntilec async_compile: slowest 1: %lf ms %31s", &ms, nm), 2);
    cr_expect(ms >= 30, "slowest ran %g ms", ms);
    cr_expect_str_eq(nm, "big\\x0aname");
    for (int i = 2; i <= 5; i++) {
        snprintf(want, sizeof want, "\ntilec async_compile: slowest %d: ", i);
        cr_expect_not_null(strstr(out, want), "no line %d in:\n%s", i, out);
    }
    cr_expect_null(strstr(out, "slowest 6"));
    int lines = 0;
    for (const char *c = out; *c; c++)
        lines += *c == '\n';
    cr_expect_eq(lines, 9, "got:\n%s", out);
    cr_expect_null(strstr(out, "syntax error"), "the library printed a task's error");
}

Test(pool, logs_async_compile_writes_the_stats_to_stderr)
{
    setenv("TILEC_LOGS", "cache,async_compile", 1);
    char *out = stderr_of_a_pool_run(2);
    expect_stats_report(out, 2);
    free(out);
}

Test(pool, logs_all_writes_the_stats_in_caller_mode)
{
    setenv("TILEC_LOGS", "all", 1);
    char *out = stderr_of_a_pool_run(1);
    expect_stats_report(out, 1);
    free(out);
}

Test(pool, the_library_prints_nothing_by_itself)
{
    unsetenv("TILEC_LOGS");
    char *out = stderr_of_a_pool_run(2);
    cr_expect_str_eq(out, "");
    free(out);
    setenv("TILEC_LOGS", "cache,async", 1);
    out = stderr_of_a_pool_run(2);
    cr_expect_str_eq(out, "");
    free(out);
}

Test(log, channels)
{
    cr_expect_eq(tilec_log_spec_enables(NULL, "async_compile"), 0);
    cr_expect_eq(tilec_log_spec_enables("", "async_compile"), 0);
    cr_expect_eq(tilec_log_spec_enables("async_compile", "async_compile"), 1);
    cr_expect_eq(tilec_log_spec_enables("cache,async_compile", "async_compile"), 1);
    cr_expect_eq(tilec_log_spec_enables(" cache , async_compile\t", "async_compile"), 1);
    cr_expect_eq(tilec_log_spec_enables("all", "async_compile"), 1);
    cr_expect_eq(tilec_log_spec_enables("cache, all", "anything"), 1);
    cr_expect_eq(tilec_log_spec_enables("async", "async_compile"), 0);
    cr_expect_eq(tilec_log_spec_enables("async_compile_x", "async_compile"), 0);
    cr_expect_eq(tilec_log_spec_enables("ASYNC_COMPILE", "async_compile"), 0);
    cr_expect_eq(tilec_log_spec_enables(",,", "async_compile"), 0);
    cr_expect_eq(tilec_log_spec_enables("allx,xall", "async_compile"), 0);
    cr_expect_eq(tilec_log_spec_enables("all", ""), 0);
    cr_expect_eq(tilec_log_spec_enables("all", NULL), 0);

    unsetenv("TILEC_LOGS");
    cr_expect_eq(tilec_log_enabled(TILEC_LOG_ASYNC_COMPILE), 0);
    setenv("TILEC_LOGS", "cache,async_compile", 1);
    cr_expect_eq(tilec_log_enabled(TILEC_LOG_ASYNC_COMPILE), 1);
    cr_expect_eq(tilec_log_enabled("cache"), 1);
    cr_expect_eq(tilec_log_enabled("launch"), 0);
    setenv("TILEC_LOGS", "launch", 1); /* read at each call */
    cr_expect_eq(tilec_log_enabled(TILEC_LOG_ASYNC_COMPILE), 0);
}

/* ---- the progress bar ---- */

/* Submit 8 tasks of 20 ms to 2 threads and wait with `f` as progress. */
static void wait_for_slow_tasks(FILE *f)
{
    tilec_pool *p = new_pool(2);
    job jobs[8] = {{0}};
    for (int i = 0; i < 8; i++) {
        jobs[i].sleep_ms = 20;
        cr_assert_not_null(tilec_pool_submit(p, "k", job_fn, &jobs[i]));
    }
    cr_expect_eq(tilec_pool_wait(p, f), 0);
    for (int i = 0; i < 8; i++)
        cr_expect_eq(atomic_load(&jobs[i].runs), 1);
    tilec_pool_free(p);
}

Test(pool, no_progress_bar_on_a_file_that_is_not_a_terminal)
{
    unsetenv("TILEC_DISABLE_PROGRESS");
    FILE *f = tmpfile();
    cr_assert_not_null(f);
    wait_for_slow_tasks(f);
    cr_expect_eq(ftell(f), 0, "the bar was drawn on a file");
    fclose(f);
    wait_for_slow_tasks(NULL);
}

/* A pseudo-terminal: *out writes to its slave end; returns the master fd
 * (-1 when this machine has none). */
static int open_pty(FILE **out)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0)
        return -1;
    const char *name = NULL;
    int s = -1;
    if (grantpt(m) == 0 && unlockpt(m) == 0 && (name = ptsname(m)) != NULL)
        s = open(name, O_RDWR | O_NOCTTY);
    if (s < 0) {
        close(m);
        return -1;
    }
    *out = fdopen(s, "w");
    return m;
}

/* What has come out of the terminal within 200 ms of the last byte. */
static char *drain_pty(int m)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = calloc(1, cap + 1);
    cr_assert_not_null(buf);
    struct pollfd pfd = {m, POLLIN, 0};
    while (n < cap && poll(&pfd, 1, 200) > 0) {
        ssize_t got = read(m, buf + n, cap - n);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    buf[n] = 0;
    return buf;
}

Test(pool, progress_bar_on_a_terminal)
{
    unsetenv("TILEC_DISABLE_PROGRESS");
    FILE *f = NULL;
    int m = open_pty(&f);
    if (m < 0)
        cr_skip_test("no pseudo-terminal on this machine");
    cr_assert(isatty(fileno(f)));
    wait_for_slow_tasks(f);
    char *out = drain_pty(m);
    cr_expect(strncmp(out, "\rcompiling [", 12) == 0, "got \"%s\"", out);
    cr_expect_not_null(strstr(out, " kernels"), "got \"%s\"", out);
    cr_expect_not_null(strstr(out, "/8 kernels"), "got \"%s\"", out);
    cr_expect_null(strchr(out, '\n'), "the bar is one line");
    /* erased at the end: the last line is blanks between two carriage returns */
    size_t n = strlen(out);
    cr_assert(n > 2);
    cr_expect_eq(out[n - 1], '\r');
    const char *cr = out + n - 2;
    while (cr > out && *cr == ' ')
        cr--;
    cr_expect_eq(*cr, '\r', "not erased: \"%s\"", out);
    cr_expect(out + n - 2 - cr >= (ptrdiff_t)strlen("compiling [] 0/8 kernels") - 1, "erased too little");
    free(out);
    fclose(f);
    close(m);
}

Test(pool, progress_bar_disabled_on_a_terminal)
{
    setenv("TILEC_DISABLE_PROGRESS", "1", 1);
    FILE *f = NULL;
    int m = open_pty(&f);
    if (m < 0)
        cr_skip_test("no pseudo-terminal on this machine");
    wait_for_slow_tasks(f);
    char *out = drain_pty(m);
    cr_expect_str_eq(out, "");
    free(out);
    fclose(f);
    close(m);
}
