/* batch.h: many NVRTC compiles at once, for a program build: on the compile
 * pool, through worker processes, forked children or in process, under the
 * compile limits (TILEC_COMPILE_TIMEOUT_S, TILEC_COMPILE_MAX_MB). */
#ifndef TILEC_RUNTIME_BATCH_H
#define TILEC_RUNTIME_BATCH_H

#include <stdint.h>
#include <stdio.h>

#include "tilec/workers.h"

typedef struct rt_compile_job {
    const char *source, *name;      /* in: a CUDA C unit and its program name */
    void *cubin;                    /* out: the image (free()), NULL when the compile failed */
    size_t size;
    char *log;                      /* out: NVRTC's log of a failed compile (free()), or NULL */
    /* private to batch.c */
    const char *arch;
    int isolate;                    /* compile in a forked child */
    tilec_compile_workers *workers; /* compile on a worker process */
} rt_compile_job;

enum {
    RT_BATCH_OK = 0,
    RT_BATCH_FAILED = 1,    /* a compile failed: its cubin is NULL, its log may say why */
    RT_BATCH_NO_POOL = -1,  /* the compile threads could not start */
    RT_BATCH_NOMEM = -2     /* out of memory while queueing compiles */
};

/* Compile the n jobs for arch with `threads` compile threads (0: the
 * pool's default). Several compiles at once run in processes: `workers`
 * when given, else workers of its own; without a worker process, one
 * compile after another on one thread (each in a forked child under the
 * compile limits); progress as tilec_pool_wait draws it. An RT_BATCH_ value. */
int rt_compile_batch(rt_compile_job *jobs, uint32_t n, const char *arch, int threads, tilec_compile_workers *workers,
                     FILE *progress);

#endif
