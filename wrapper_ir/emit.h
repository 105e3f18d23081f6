/* emit.h: the emit driver (emit.c), which tilec_module_emit (api/emitters.c)
 * calls with the context's registry and the API's compile step; and the
 * one graph pipeline it and `--emit ir` (print.c) share. */
#ifndef TILEC_WRAPPER_IR_EMIT_H
#define TILEC_WRAPPER_IR_EMIT_H

#include "wrapper_ir/registry.h"
#include "wrapper_ir/session.h"

/* The graph pipeline: each graph of m, in order, lowered to wrapper IR,
 * handed to before (may be NULL), planned when plan is set, handed to fn,
 * then freed. Stops at the first status that is not TILEC_OK and returns
 * it. */
typedef tilec_status (*wir_graph_fn)(void *user, tilec_wir *w, size_t index);
tilec_status wir_each_graph(tilec_ctx *ctx, const tilec_module *m, int plan, wir_graph_fn before, wir_graph_fn fn,
                            void *user);

/* Lower every graph of m to wrapper IR, plan it (unless o says not), and
 * write it with the emitter called `name` in reg; compile is the session's
 * compile step (NULL: none). The outputs go to o->dir, else to fn (each
 * named, when fn is not NULL), else to sink. What tilec_module_emit and
 * tilec_module_emit_outputs document. */
tilec_status wir_emit_module(tilec_ctx *ctx, const wir_registry *reg, wir_compile_fn compile, const tilec_module *m,
                             const char *name, const tilec_emit_options *o, tilec_sink sink, tilec_emit_output_fn fn,
                             void *user);

#endif
