/* py_internal.h: what the py emitter's files share: the emitter's state
 * per graph (pystate, its buffers), the spelling helpers (py_spell.c)
 * that the emitter (emit_py.c) and the plan writer (py_plan.c) use, and
 * the plan writer's entry points. */
#ifndef TILEC_EMIT_PY_INTERNAL_H
#define TILEC_EMIT_PY_INTERNAL_H

#include <stddef.h>

#include "tilec/emitter.h"
#include "util/strbuf.h"
#include "util/strset.h"

/* A buffer of the graph: an input, a root (memory of its own: an output's
 * allocation or a piece of the workspace), or an alias of another's memory
 * (reuse, view) at a byte offset. */
typedef struct pybuf {
    const tilec_wir_line *l; /* its shape and dtype */
    int root;                /* index of the buffer that owns the memory (itself for inputs and roots) */
    int input;
    int standalone; /* a root that backs an output: allocated apart, not in the workspace */
    char *off;      /* Python byte offset from the root's address ("" for 0) */
} pybuf;

typedef struct pystate {
    const tilec_wir *w;
    const tilec_graph *g;
    strbuf checks;  /* the argument checks of call(): before load() */
    strbuf steps;   /* the plan's steps */
    strbuf scalars; /* the plan's size and scalar slots */
    strbuf values;  /* their values, in call() */
    int externs;    /* the graph calls externs */
    strset checked; /* sizes and tensors already checked: "i32 C*R", "f32 (R, C)" */
    strset slots;   /* size and scalar slots made */
    pybuf *bufs;
    size_t nbufs, capbufs;
    int cacheable;  /* every output is a root of its own: call() keeps Recipes (py_call_prologue) */
    int failed;
    tilec_ctx *ctx; /* for diagnostics */
    const struct dsl_source *src; /* the module's source, for diagnostics at a line */
    strbuf colls; /* set_comm's registrations, one per COLLECTIVE line */
} pystate;

/* ---- py_spell.c ---- */
void py_str(strbuf *b, const char *s);
void py_name(strbuf *b, const char *name);
/* The Python name of size symbol `name`. */
void py_sym(strbuf *b, const char *name);
/* Is `name` a scalar parameter of g with a floating-point type? */
int py_scalar_is_float(const tilec_graph *g, const char *name);
int py_is_ident(char c);
void py_size(strbuf *b, const tilec_graph *g, const tilec_ix *e);
void py_size_ref(pystate *s, strbuf *b, const char *t, const tilec_ix *e, const char *kind);
void py_shape(strbuf *b, const tilec_graph *g, const tilec_wir_line *l);
int buf_find(const pystate *s, const char *name); /* the index of buffer name, or -1 */

/* ---- py_plan.c ---- */
void py_plan(strbuf *c, pystate *s);
/* call()'s first lines: each input's TensorInfo, and the Recipe of a
 * known key run at once (torch's current stream); then the checks, then
 * py_call_body. */
/* Does call() keep Recipes (every output a root of its own, and tensor
 * inputs)? Sets s->cacheable; marks the roots that back outputs. */
int py_call_cacheable(pystate *s);
/* call()'s parameters as tilec.fast_entry's kinds: 't' a tensor, 'i' an
 * integer scalar, 'f' a float one. */
void py_call_kinds(strbuf *c, const pystate *s);
void py_call_prologue(strbuf *c, pystate *s);
void py_call_body(strbuf *c, pystate *s);

#endif
