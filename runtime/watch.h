/* watch.h: the limits on one NVRTC compile in a child process (a compile
 * worker or a forked child), and the watchdog that enforces them. */
#ifndef TILEC_RUNTIME_WATCH_H
#define TILEC_RUNTIME_WATCH_H

#include <sys/types.h>

/* TILEC_COMPILE_TIMEOUT_S (seconds of wall-clock time, a fraction allowed,
 * default 300) and TILEC_COMPILE_MAX_MB (resident memory of the compiling
 * process in MiB, default 8192); 0 = unlimited. Other text: the default. */
typedef struct rt_compile_limits {
    double timeout_s;
    unsigned long max_mb;
    int sample_ms; /* TILEC_COMPILE_SAMPLE_MS: the watchdog's period, default 50 */
} rt_compile_limits;

void rt_compile_limits_get(rt_compile_limits *l);
/* Either limit set. */
int rt_compile_limits_on(const rt_compile_limits *l);

/* Wait until fd (the child's result pipe) is readable or the child pid
 * passes a limit; then 0, or kill it (SIGKILL; the caller reaps it) and
 * return -1 with a malloc'd message naming `kernel` and the limit in *why. */
int rt_compile_watch(pid_t pid, int fd, const rt_compile_limits *l, const char *kernel, char **why);

/* The message for a compile of `kernel` that used mb MiB past the
 * TILEC_COMPILE_MAX_MB limit, stopped after_s seconds in (< 0: at its end);
 * the caller frees it (NULL when out of memory). */
char *rt_compile_over_memory(const char *kernel, unsigned long mb, unsigned long max_mb, double after_s);

/* A persistent compile worker's own peak resident set, per compile: reset
 * it to the current resident set (/proc/self/clear_refs, "5") before a
 * compile, read it (VmHWM) after. 0 when the kernel offers neither. */
void rt_peak_reset(void);
unsigned long rt_peak_mb(void);

#endif
