/* program_internal.h: what program.c and multikernel.c share. */
#ifndef TILEC_RUNTIME_PROGRAM_INTERNAL_H
#define TILEC_RUNTIME_PROGRAM_INTERNAL_H

#include <limits.h>
#include <pthread.h>

#include "tilec/program.h"

typedef struct mk_choice mk_choice;

typedef struct pkernel {
    const tilec_kernel *k; /* NULL when loaded ahead of time */
    const char *kname;     /* the kernel's name */
    uint32_t nvariants;
    uint64_t written;      /* bit i: the kernel may store through parameter i (lowering's analysis) */
    int (*grid)(const int64_t *args, uint32_t grid[3]); /* ahead of time */
    int variant;
    tilec_kernel_code code;
    tilec_rt_param_kind kinds[64];
    void *cubin;
    size_t size;
    char *log; /* NVRTC log of a failed compile */
    const char *arch;
    int isolate; /* compile in a child process (parallel builds) */
    tilec_compile_workers *workers; /* compile on a worker process */
    tilec_rt_module *mod;
    tilec_rt_kernel *kern;
} pkernel;

struct tilec_program {
    tilec_rt *rt;
    const tilec_module *m;
    pkernel *ks;
    uint32_t n;
    tilec_program_stats st;
    /* multi-kernel: the chosen variant per kernel and shape */
    pthread_mutex_t mk_mu;   /* guards choices */
    pthread_mutex_t mk_tune; /* held while a new shape is timed: one at a time */
    mk_choice *choices;
    int mk_forced; /* TILEC_MULTI_KERNEL at build time: -1 unset, -2 invalid */
    char cache_dir[PATH_MAX];
};

void mk_init(tilec_program *p); /* the locks, and TILEC_MULTI_KERNEL */
void mk_free(tilec_program *p);
int mk_forced_from_env(void);

#endif
