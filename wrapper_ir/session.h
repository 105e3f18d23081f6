/* session.h: the emit session (session.c): what an emitter writes into
 * while the driver (emit.c) walks the graphs, and the built-in "ir"
 * emitter (print.c) as much as any other: named output buffers, written
 * to a directory all or nothing, and the steps above this layer that the
 * API hands down (compiling a kernel, for --aot). */
#ifndef TILEC_WRAPPER_IR_SESSION_H
#define TILEC_WRAPPER_IR_SESSION_H

#include <stdint.h>

#include "tilec/emitter.h"
#include "tilec/kernel_desc.h"
#include "util/strbuf.h"

/* One compiled kernel variant, as the API's compile step hands it to an
 * emitter (--aot): the kernel and its description (tilec/kernel_desc.h;
 * its image lives for the call, its grid is NULL: the emitter writes one). */
typedef struct wir_compiled {
    const tilec_kernel *k;
    tilec_kernel_desc d;
} wir_compiled;

/* The emitter's callback: nonzero stops the walk. */
typedef int (*wir_compiled_fn)(void *user, const wir_compiled *c);

/* Compile every variant of every kernel of m for arch, each handed to fn
 * in module order (tilec_program_compile's shape; `build` is the emit
 * options' tilec_build_options, or NULL): the API's step, handed down so
 * that no emitter calls up to it. */
typedef tilec_status (*wir_compile_fn)(tilec_ctx *ctx, const tilec_module *m, const char *arch, const void *build,
                                       wir_compiled_fn fn, void *user);

typedef struct emit_out {
    char *file;
    char *tmp; /* its temporary file while the outputs are written */
    strbuf b;
} emit_out;

struct tilec_emit {
    tilec_ctx *ctx;
    const tilec_module *m;
    const tilec_wir *w;
    const tilec_emit_options *o;
    wir_compile_fn compile; /* NULL: this session cannot compile kernels */
    emit_out *outs;
    size_t nouts, cap;
    int failed;
    int has_bad;
    char bad[80]; /* the first bad output name, for the message */
};

/* The session's compile step, or NULL (for --aot: emit_c/c_aot.c), and
 * the build options it takes (the emit options' `build`, or NULL). */
wir_compile_fn emit_session_compile(const tilec_emit *e);
const void *emit_session_build(const tilec_emit *e);

/* Every output to dir: all temporary files first, then the renames, so a
 * write that fails (disk full, a directory in the way) leaves every file
 * as it was. */
tilec_status emit_session_write_dir(tilec_ctx *ctx, tilec_emit *e, const char *dir);
/* The output buffers of e (not e itself). */
void emit_session_free(tilec_emit *e);

#endif
