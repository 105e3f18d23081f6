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
    int inloop;     /* made in a for loop's body: its address is set per iteration (py_loop.c) */
    int given;      /* a root that is a caller's tensor, one of a list (view(xs[i], ...)): its address
                       _NAME_p is set by call(), nothing allocates or frees it */
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
    int late_items; /* a tensor of a list of the graph's tensors (xs[i]) is taken: its address is this call's */
    int failed;
    strbuf colls; /* set_comm's registrations, one per COLLECTIVE line */
    /* a graph with for loops (py_loop.c): call() runs the plan in parts,
     * the steps between LOOP and END_LOOP markers, from Python loops */
    int loops;               /* the graph has for loops */
    strbuf code;             /* call()'s statements after the allocations */
    uint32_t depth;          /* loops open */
    const char *loopvars[64];
    size_t loop_at[64];      /* where each open loop's body starts in code */
    unsigned loopid[64];     /* each open loop's serial number */
    unsigned nloops;         /* loops opened so far */
    size_t nsteps, part_first; /* steps written; the first of the current part */
    unsigned part;           /* the current part */
    char **slotkeys;         /* every size and scalar slot's key, in slot order */
    size_t nslotkeys, capslotkeys;
    strset assigned;         /* "slot loop": a loop's body sets that slot */
    strbuf lists;            /* ("xs", _xs_list), per tensor list parameter: Graph.begin's lists */
    const char *first_list;  /* the first tensor list parameter: its device where no tensor has one */
    int kept;                /* call() has its _kept list (sub-lists made in loops) */
    strbuf late;             /* the lists made after the allocations (LIST_OF, sub-lists of them), "NAME\n" each */
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
void py_shape(strbuf *b, const tilec_graph *g, const tilec_wir_line *l);
int buf_find(const pystate *s, const char *name); /* the index of buffer name, or -1 */
/* The Python address of buffer i: its root's plus its offset. */
void py_buf_ptr(const pystate *s, size_t i, strbuf *b);

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

/* py_loop.c: graphs with for loops */
/* Add text (lines indented for call()'s top level) to s->code at the
 * current depth; checks that name a loop variable go there. */
void py_code(pystate *s, const char *text);
/* Does e name the variable of an open loop? */
int py_in_loop(const pystate *s, const tilec_ix *e);
/* Slot j (key) with value e: set at the top of the innermost open loop
 * whose variable e names, once per loop; 0 when e names none. */
int py_loop_slot(pystate *s, size_t j, const tilec_ix *e);
/* The address of buffer i set in the body, where it is made (a body's
 * root is allocated there, per iteration). */
void py_loop_buf(pystate *s, size_t i);
/* A plan value for size t (text) with expression e: an integer constant,
 * or the slot "$t" (its value e, set in the loop body where e names an open
 * loop's variable). */
void py_size_ref(pystate *s, strbuf *b, const char *t, const tilec_ix *e, const char *kind);
int py_h_loop(void *u, const tilec_wir_line *l);
int py_h_end_loop(void *u, const tilec_wir_line *l);
/* call()'s run of the plan for a graph with loops: the slot lists, then
 * s->code and the last part's run. */
void py_loop_run(strbuf *c, pystate *s);

#endif
