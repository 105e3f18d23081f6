/* watch.c: time and memory limits on a compile in a child process. The
 * parent polls the child's result pipe every 50 ms (TILEC_COMPILE_SAMPLE_MS)
 * and reads the child's resident set from /proc/PID/statm; a child past
 * either limit is killed. A compile that ends between two samples is held
 * to the memory limit by its peak: a forked child's from wait4, a
 * persistent worker's from its own VmHWM, reset before each compile.
 * A watchdog, not setrlimit(RLIMIT_AS): NVRTC and sanitizers reserve far
 * more address space than they use, and what hurts is memory in use. */
#define _GNU_SOURCE 1
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/watch.h"

/* digits, with a fraction when `frac` ("0.5"); else dflt */
static double env_num(const char *name, double dflt, int frac)
{
    const char *v = getenv(name);
    size_t n = v ? strspn(v, "0123456789") : 0;
    if (!v || !n || n > 9 || (v[n] && !(frac && v[n] == '.' && strspn(v + n + 1, "0123456789") == strlen(v + n + 1))))
        return dflt;
    return strtod(v, NULL);
}

void rt_compile_limits_get(rt_compile_limits *l)
{
    l->timeout_s = env_num("TILEC_COMPILE_TIMEOUT_S", 300, 1);
    l->max_mb = (unsigned long)env_num("TILEC_COMPILE_MAX_MB", 8192, 0);
    l->sample_ms = (int)env_num("TILEC_COMPILE_SAMPLE_MS", 50, 0);
    if (l->sample_ms < 1)
        l->sample_ms = 50;
}

int rt_compile_limits_on(const rt_compile_limits *l) { return l->timeout_s > 0 || l->max_mb; }

/* The resident set of pid in MiB; 0 when it cannot be read. */
static unsigned long rss_mb(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/statm", (long)pid);
    FILE *f = fopen(path, "r");
    unsigned long size = 0, rss = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &rss) != 2)
        rss = 0;
    fclose(f);
    return (unsigned long)((unsigned long long)rss * (unsigned long long)sysconf(_SC_PAGESIZE) >> 20);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int rt_compile_watch(pid_t pid, int fd, const rt_compile_limits *l, const char *kernel, char **why)
{
    *why = NULL;
    double start = now_s();
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, l->sample_ms);
        if (r > 0 || (r < 0 && errno != EINTR))
            return 0; /* a result, EOF, or an error the read will see */
        double t = now_s() - start;
        unsigned long mb = l->max_mb ? rss_mb(pid) : 0;
        int late = l->timeout_s > 0 && t > l->timeout_s, big = l->max_mb && mb > l->max_mb;
        if (!late && !big)
            continue;
        kill(pid, SIGKILL);
        if (!late) {
            *why = rt_compile_over_memory(kernel, mb, l->max_mb, t);
            return -1;
        }
        char buf[512];
        snprintf(buf, sizeof buf,
                 "%s: NVRTC did not finish within %g s (TILEC_COMPILE_TIMEOUT_S): the compile was stopped; a "
                 "smaller tile or more warps makes it cheaper",
                 kernel ? kernel : "kernel", l->timeout_s);
        *why = strdup(buf);
        return -1;
    }
}

char *rt_compile_over_memory(const char *kernel, unsigned long mb, unsigned long max_mb, double after_s)
{
    char after[32] = "";
    if (after_s >= 0)
        snprintf(after, sizeof after, " after %.1f s", after_s);
    char buf[512];
    snprintf(buf, sizeof buf,
             "%s: NVRTC used %lu MiB, more than TILEC_COMPILE_MAX_MB=%lu: the compile was stopped%s; a smaller tile "
             "or more warps makes it cheaper",
             kernel ? kernel : "kernel", mb, max_mb, after);
    return strdup(buf);
}

void rt_peak_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

unsigned long rt_peak_mb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb >> 10;
}
