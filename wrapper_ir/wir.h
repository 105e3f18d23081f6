/* wir.h: the wrapper IR (internal side): the line array of a graph, the
 * entry points of its stage (lower_graph.c, plan.c, size.c, query.c, print.c). */
#ifndef TILEC_WRAPPER_IR_WIR_H
#define TILEC_WRAPPER_IR_WIR_H

#include "parser/module.h"
#include "tilec/wir.h"
#include "util/arena.h"
#include "util/strbuf.h"

enum { WIR_ALIGN = 256, WIR_DEVICE = 0 };

struct tilec_wir {
    arena ar;                /* every line, string and array */
    const tilec_module *mod;
    const tilec_graph *graph;
    tilec_wir_line *lines;   /* n lines, cap allocated */
    uint32_t n, cap;
    const char **outputs;    /* the returned buffers */
    uint32_t noutputs;
    tilec_loc ret_loc;       /* the return statement (the graph when none) */
};

/* Append a zeroed line of `kind` at loc; NULL when out of memory. */
tilec_wir_line *wir_add(tilec_wir *w, tilec_wir_kind kind, const tilec_loc *loc);

/* Evaluate a size of a line with the given symbol values (the one
 * evaluator, tilec/iexpr.h): TILEC_ERR_ARG for an unknown symbol (named
 * in bad, may be NULL), TILEC_ERR_INPUT on overflow or division by zero. */
tilec_status wir_expr_eval(const tilec_ix *e, const tilec_wir_size *sizes, size_t n, int64_t *out, char bad[64]);

/* Run each line of w through its hook (query.c): 0; -1 when a line's
 * kind has no hook, 1 when a hook failed, with *at that line's index.
 * tilec_wir_dispatch reports either; the text form needs no context. */
int wir_each_line(const tilec_wir *w, const tilec_wir_hooks *hooks, void *user, uint32_t *at);

/* Place each COLLECTIVE's wait (an EXTERN_CALL of "tilec:wait:NAME") and
 * hold back the frees of its buffers until it (overlap.c); run by
 * tilec_wir_lower last. 0, or -1 out of memory. */
int wir_overlap(tilec_wir *w);

/* The text form's pieces, for the built-in "ir" emitter (hooks take a strbuf *). */
extern const tilec_wir_hooks wir_text_hooks;
void wir_text_header(strbuf *b, const tilec_wir *w);
void wir_text_return(strbuf *b, const tilec_wir *w);

#endif
