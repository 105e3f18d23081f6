/* workers.h: NVRTC compiles in worker processes (`tilec --compile-worker`),
 * for builds that compile many kernels at once: NVRTC serializes compiles
 * within a process, so only processes compile in parallel. */
#ifndef TILEC_WORKERS_H
#define TILEC_WORKERS_H

#include "tilec/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tilec_compile_workers tilec_compile_workers;

/* Up to `max` worker processes, started on demand. The executable is
 * $TILEC_COMPILE_WORKER, else a `tilec` beside the binary or library that
 * holds libtilec, or in ../bin from it. NULL when there is none: compile in
 * the process then. */
tilec_compile_workers *tilec_compile_workers_new(unsigned max);

/* Compile on an idle worker (starting one if fewer than max run), as
 * tilec_nvrtc_compile would, under the compile limits (runtime/watch.h).
 * Thread-safe. A worker killed by a limit is a TILEC_RT_COMPILE_ERROR whose
 * log says so; one that cannot start or dies is retired and its job
 * compiled in the process (in a forked child under the limits when they
 * are on); the others go on. */
tilec_rt_status tilec_compile_workers_compile(tilec_compile_workers *ws, const char *source, const char *name,
                                              const char *arch, void **cubin, size_t *size, char **log);

/* End every worker (EOF on its job pipe) and wait for it. */
void tilec_compile_workers_free(tilec_compile_workers *ws);

/* The worker's loop: jobs from fd `in`, results to fd `out`, until EOF.
 * `tilec --compile-worker` is this on stdin and stdout. */
int tilec_compile_worker_main(int in, int out);

#ifdef __cplusplus
}
#endif
#endif
