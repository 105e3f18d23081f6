/* program.h: a .tile module built for the GPU: every variant of every
 * kernel lowered, compiled by NVRTC through the async pool (or found in
 * the kernel cache: a warm start compiles nothing), loaded, and ready for
 * static launch by name. This is what the generated wrappers call. The
 * build is the API's (api/build.c); the program it gives, its loading and
 * launching are the runtime's (tilec/aot.h, included here). */
#ifndef TILEC_PROGRAM_H
#define TILEC_PROGRAM_H

#include <stdio.h>

#include "tilec/aot.h"
#include "tilec/cache.h"
#include "tilec/lower.h"
#include "tilec/runtime.h"
#include "tilec/tilec.h"
#include "tilec/workers.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tilec_build_options {
    const char *arch;   /* "sm_90"; NULL: the device's own (rt required) */
    int threads;        /* compile threads: 0 = $TILEC_COMPILE_THREADS or the cores */
    tilec_cache *cache; /* NULL: compile every time */
    FILE *progress;     /* progress bar while compiling, when a terminal; NULL: none */
    tilec_compile_workers *workers; /* worker processes kept across builds (their
                                     * NVRTC stays warm); NULL: the build starts
                                     * its own when it has more than one thread */
} tilec_build_options;

/* Build module m. With rt NULL the kernels are compiled (and cached) but
 * not loaded. Failures are diagnostics in ctx (a compile error at its .tile
 * line, a driver error with the driver's message). */
tilec_status tilec_program_build(tilec_ctx *ctx, tilec_rt *rt, const tilec_module *m, const tilec_build_options *o,
                                 tilec_program **out);

#ifdef __cplusplus
}
#endif
#endif
