/* session.h: the emit session (session.c): what an emitter writes into
 * while the driver (emit.c) walks the graphs, and the built-in "ir"
 * emitter (print.c) as much as any other: named output buffers, written
 * to a directory all or nothing. */
#ifndef TILEC_WRAPPER_IR_SESSION_H
#define TILEC_WRAPPER_IR_SESSION_H

#include "tilec/emitter.h"
#include "util/strbuf.h"

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
    emit_out *outs;
    size_t nouts, cap;
    int failed;
    int has_bad;
    char bad[80]; /* the first bad output name, for the message */
};

/* Every output to dir: all temporary files first, then the renames, so a
 * write that fails (disk full, a directory in the way) leaves every file
 * as it was. */
tilec_status emit_session_write_dir(tilec_ctx *ctx, tilec_emit *e, const char *dir);
/* The output buffers of e (not e itself). */
void emit_session_free(tilec_emit *e);

#endif
