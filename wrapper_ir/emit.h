/* emit.h: the emit driver (emit.c), which tilec_module_emit (api/emitters.c)
 * calls with the context's registry and the API's compile step. */
#ifndef TILEC_WRAPPER_IR_EMIT_H
#define TILEC_WRAPPER_IR_EMIT_H

#include "wrapper_ir/registry.h"
#include "wrapper_ir/session.h"

/* Lower every graph of m to wrapper IR, plan it (unless o says not), and
 * write it with the emitter called `name` in reg; compile is the session's
 * compile step (NULL: none). The outputs go to o->dir, else to fn (each
 * named, when fn is not NULL), else to sink. What tilec_module_emit and
 * tilec_module_emit_outputs document. */
tilec_status wir_emit_module(tilec_ctx *ctx, const wir_registry *reg, wir_compile_fn compile, const tilec_module *m,
                             const char *name, const tilec_emit_options *o, tilec_sink sink, tilec_emit_output_fn fn,
                             void *user);

#endif
