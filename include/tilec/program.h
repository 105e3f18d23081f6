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

/* Lower variant `variant` of k and compile it with NVRTC for `arch`
 * ("sm_90"); no GPU needed. An arch older than the code's min_sm is an
 * error before NVRTC (TILEC_ERR_INPUT, at the kernel's .tile location,
 * naming the variant, the use and its line). On success *code holds the source and launch
 * metadata and *cubin (free with free()) the image; on failure the context
 * holds a diagnostic at the .tile line of the failing statement with the
 * NVRTC log as a note. (api/compile.c) */
tilec_status tilec_compile_kernel(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, int variant,
                                  const char *arch, tilec_kernel_code *code, void **cubin, size_t *size);

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

/* Compile every variant of every kernel of m as tilec_program_build does
 * (the cache first, then NVRTC on the compile threads and workers of o;
 * o->arch is required) and load nothing: each variant goes to fn in module
 * order as an ahead-of-time table entry (grid NULL; the strings and the
 * image live for the call). A kernel whose parameters no launch can pass
 * yet (an i8 or f16 scalar) is still compiled: its kinds are NULL, and
 * such a module skips the cache. fn returning nonzero stops the walk:
 * TILEC_ERR_IO. Failures are diagnostics in ctx, as for a build. The
 * build's statistics go to *stats when it is not NULL. `tilec --emit
 * cubin` writes its files this way. */
typedef int (*tilec_compiled_fn)(void *user, const tilec_aot_kernel *k);
tilec_status tilec_program_compile(tilec_ctx *ctx, const tilec_module *m, const tilec_build_options *o,
                                   tilec_compiled_fn fn, void *user, tilec_program_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
