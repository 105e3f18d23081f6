/* workers.c: NVRTC compiles in separate worker processes.
 *
 * NVRTC serializes compiles within one process, and a forked child of a
 * process that has loaded NVRTC compiles several times slower than a fresh
 * process (both seen with NVRTC 13.0 on the H100 machine). So parallel
 * builds run `tilec --compile-worker` processes, started on demand, each
 * compiling job after job that the pool's threads hand it through pipes.
 *
 * Job:    "TLCJ", u64 length + source, u64 length + name, u64 length + arch
 * Result: u64 status, u64 image size, u64 log size, u64 peak resident MiB
 *         of the compile (0: unknown), image, log
 * (integers in host order: parent and worker are the same build). */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "runtime/watch.h"
#include "tilec/workers.h"
#include "util/fdio.h"

extern char **environ;

typedef struct worker {
    pid_t pid;
    int to, from; /* job pipe (write end), result pipe (read end) */
    int busy, dead;
} worker;

struct tilec_compile_workers {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char path[PATH_MAX];
    worker *w;
    unsigned n, max;
};



static int wr_str(int fd, const char *s)
{
    uint64_t n = s ? strlen(s) : 0;
    return fdio_write_all(fd, &n, sizeof n) || (n && fdio_write_all(fd, s, n));
}

/* A string of at most `cap` bytes, malloc'd and NUL-terminated. */
static char *rd_str(int fd, uint64_t cap)
{
    uint64_t n;
    if (fdio_read_all(fd, &n, sizeof n) || n > cap)
        return NULL;
    char *s = malloc(n + 1);
    if (!s || (n && fdio_read_all(fd, s, n))) {
        free(s);
        return NULL;
    }
    s[n] = 0;
    return s;
}

/* The worker executable: $TILEC_COMPILE_WORKER, else a `tilec` beside the
 * binary or library that holds this code, or in ../bin from it. */
static int find_worker(char *out, size_t size)
{
    const char *env = getenv("TILEC_COMPILE_WORKER");
    if (env && *env) {
        snprintf(out, size, "%s", env);
        return access(out, X_OK) == 0 ? 0 : -1;
    }
    Dl_info info;
    if (!dladdr((void *)find_worker, &info) || !info.dli_fname)
        return -1;
    char dir[PATH_MAX];
    if (!realpath(info.dli_fname, dir))
        return -1;
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    *slash = 0;
    static const char *const rel[] = {"/tilec", "/../bin/tilec"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        if ((size_t)snprintf(out, size, "%s%s", dir, rel[i]) >= size)
            continue;
        if (access(out, X_OK) == 0)
            return 0;
    }
    return -1;
}

tilec_compile_workers *tilec_compile_workers_new(unsigned max)
{
    if (max < 1)
        return NULL;
    tilec_compile_workers *ws = calloc(1, sizeof *ws);
    if (!ws)
        return NULL;
    ws->w = calloc(max, sizeof *ws->w);
    if (!ws->w || find_worker(ws->path, sizeof ws->path)) {
        free(ws->w);
        free(ws);
        return NULL;
    }
    ws->max = max;
    pthread_mutex_init(&ws->mu, NULL);
    pthread_cond_init(&ws->cv, NULL);
    return ws;
}

static int spawn(tilec_compile_workers *ws, worker *w)
{
    int job[2], res[2];
    if (pipe2(job, O_CLOEXEC))
        return -1;
    if (pipe2(res, O_CLOEXEC)) {
        close(job[0]);
        close(job[1]);
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, job[0], 0);
    posix_spawn_file_actions_adddup2(&fa, res[1], 1);
    char *argv[] = {ws->path, "--compile-worker", NULL};
    int err = posix_spawn(&w->pid, ws->path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(job[0]);
    close(res[1]);
    if (err) {
        close(job[1]);
        close(res[0]);
        return -1;
    }
    w->to = job[1];
    w->from = res[0];
    w->dead = 0;
    return 0;
}

static void reap(worker *w)
{
    if (w->to >= 0)
        close(w->to);
    if (w->from >= 0)
        close(w->from);
    w->to = w->from = -1;
    if (w->pid > 0)
        while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR) {
        }
    w->pid = 0;
}

/* An idle worker, started if need be; NULL when none can be started. */
static worker *acquire(tilec_compile_workers *ws)
{
    pthread_mutex_lock(&ws->mu);
    for (;;) {
        for (unsigned i = 0; i < ws->n; i++)
            if (!ws->w[i].busy && !ws->w[i].dead) {
                ws->w[i].busy = 1;
                pthread_mutex_unlock(&ws->mu);
                return &ws->w[i];
            }
        if (ws->n < ws->max) {
            worker *w = &ws->w[ws->n];
            if (spawn(ws, w) == 0) {
                ws->n++;
                w->busy = 1;
                pthread_mutex_unlock(&ws->mu);
                return w;
            }
            pthread_mutex_unlock(&ws->mu);
            return NULL;
        }
        int alive = 0;
        for (unsigned i = 0; i < ws->n; i++)
            alive += !ws->w[i].dead;
        if (!alive) {
            pthread_mutex_unlock(&ws->mu);
            return NULL;
        }
        pthread_cond_wait(&ws->cv, &ws->mu);
    }
}

/* A compile without a worker: in a forked child under the watchdog when a
 * compile limit is on (so that the limits hold on every path), else here. */
static tilec_rt_status compile_here(const char *source, const char *name, const char *arch, void **cubin,
                                    size_t *size, char **log)
{
    rt_compile_limits lim;
    rt_compile_limits_get(&lim);
    if (rt_compile_limits_on(&lim))
        return tilec_nvrtc_compile_isolated(source, name, arch, NULL, 0, cubin, size, log);
    return tilec_nvrtc_compile(source, name, arch, NULL, 0, cubin, size, log);
}

static void release(tilec_compile_workers *ws, worker *w, int dead)
{
    pthread_mutex_lock(&ws->mu);
    w->busy = 0;
    w->dead = dead;
    pthread_cond_broadcast(&ws->cv);
    pthread_mutex_unlock(&ws->mu);
}

tilec_rt_status tilec_compile_workers_compile(tilec_compile_workers *ws, const char *source, const char *name,
                                              const char *arch, void **cubin, size_t *size, char **log)
{
    if (log)
        *log = NULL;
    if (!ws || !source || !name || !arch || !cubin || !size)
        return TILEC_RT_INVALID_ARG;
    *cubin = NULL;
    *size = 0;
    *log = NULL;
    worker *w = acquire(ws);
    if (!w) /* no worker could be started: compile here */
        return compile_here(source, name, arch, cubin, size, log);
    /* a worker that died turns writes into EPIPE, not a SIGPIPE for us */
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    static const char magic[4] = {'T', 'L', 'C', 'J'};
    int bad = fdio_write_all(w->to, magic, 4) || wr_str(w->to, source) || wr_str(w->to, name) || wr_str(w->to, arch);
    if (bad) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero); /* drop the SIGPIPE we caused */
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    rt_compile_limits lim;
    rt_compile_limits_get(&lim);
    char *why = NULL;
    if (!bad && rt_compile_watch(w->pid, w->from, &lim, name, &why)) {
        release(ws, w, 1); /* killed: retired, and no second try here, which would pass no limit */
        *log = why;
        return TILEC_RT_COMPILE_ERROR;
    }
    uint64_t hdr[4];
    tilec_rt_status st = TILEC_RT_COMPILE_ERROR;
    if (!bad && fdio_read_all(w->from, hdr, sizeof hdr) == 0 && hdr[1] < ((uint64_t)1 << 31) && hdr[2] < ((uint64_t)1 << 30)) {
        void *img = hdr[1] ? malloc(hdr[1]) : NULL;
        char *lg = malloc(hdr[2] + 1);
        if ((hdr[1] && !img) || !lg || (hdr[1] && fdio_read_all(w->from, img, hdr[1])) || (hdr[2] && fdio_read_all(w->from, lg, hdr[2]))) {
            free(img);
            free(lg);
            bad = 1;
        } else {
            lg[hdr[2]] = 0;
            st = (tilec_rt_status)hdr[0];
            if (st == TILEC_RT_OK && img) {
                *cubin = img;
                *size = (size_t)hdr[1];
                if (lg[0])
                    *log = lg;
                else
                    free(lg);
            } else {
                free(img);
                *log = lg;
                if (st == TILEC_RT_OK)
                    st = TILEC_RT_COMPILE_ERROR;
            }
        }
    } else {
        bad = 1;
    }
    if (!bad && st == TILEC_RT_OK && lim.max_mb && hdr[3] > lim.max_mb) {
        /* it ended between two samples: held to the limit by its peak, and
         * retired, since its heap may keep what the compile took */
        free(*cubin);
        free(*log);
        *cubin = NULL;
        *size = 0;
        *log = rt_compile_over_memory(name, (unsigned long)hdr[3], lim.max_mb, -1);
        kill(w->pid, SIGKILL);
        release(ws, w, 1);
        return TILEC_RT_COMPILE_ERROR;
    }
    release(ws, w, bad);
    if (bad) /* the worker died or spoke nonsense: it is retired, compile here */
        return compile_here(source, name, arch, cubin, size, log);
    return st;
}

void tilec_compile_workers_free(tilec_compile_workers *ws)
{
    if (!ws)
        return;
    for (unsigned i = 0; i < ws->n; i++)
        reap(&ws->w[i]); /* EOF on its job pipe ends a worker */
    pthread_cond_destroy(&ws->cv);
    pthread_mutex_destroy(&ws->mu);
    free(ws->w);
    free(ws);
}

int tilec_compile_worker_main(int in, int out)
{
    for (;;) {
        char magic[4];
        if (fdio_read_all(in, magic, 4))
            return 0; /* EOF: the parent is done */
        if (memcmp(magic, "TLCJ", 4))
            return 1;
        char *src = rd_str(in, (uint64_t)1 << 30), *name = rd_str(in, 4096), *arch = rd_str(in, 64);
        if (!src || !name || !arch) {
            free(src);
            free(name);
            free(arch);
            return 1;
        }
        void *img = NULL;
        size_t size = 0;
        char *lg = NULL;
        rt_peak_reset();
        tilec_rt_status st = tilec_nvrtc_compile(src, name, arch, NULL, 0, &img, &size, &lg);
        uint64_t hdr[4] = {(uint64_t)st, st == TILEC_RT_OK ? size : 0, lg ? strlen(lg) : 0, rt_peak_mb()};
        int bad = fdio_write_all(out, hdr, sizeof hdr) || (hdr[1] && fdio_write_all(out, img, hdr[1])) || (hdr[2] && fdio_write_all(out, lg, hdr[2]));
        free(img);
        free(lg);
        free(src);
        free(name);
        free(arch);
        if (bad)
            return 1;
    }
}
