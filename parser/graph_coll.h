/* graph_coll.h: the collectives of graphs, read one way for the checker
 * (check_coll.c) and the wrapper IR (wrapper_ir/lower_graph.c):
 *   all_reduce(x, op)   all_gather(x, axis)   reduce_scatter(x, op, axis)
 *   broadcast(x, root)
 * op is a word (sum, prod, max, min, avg); axis and root are integer
 * literals (axis optionally negated: counted from the end). */
#ifndef TILEC_PARSER_GRAPH_COLL_H
#define TILEC_PARSER_GRAPH_COLL_H

#include <stdint.h>

#include "tilec/ast.h"
#include "tilec/collective.h"
#include "util/poly.h"

/* The size symbol a graph with collectives has for the communicator's
 * number of ranks (torch.distributed's world size). */
#define GC_WORLD "world"

typedef struct gc_form {
    tilec_coll coll;
    const tilec_expr *of;    /* the tensor argument */
    tilec_redop op;          /* all_reduce, reduce_scatter */
    const tilec_expr *op_at; /* where op is written */
    const tilec_expr *axis;  /* all_gather, reduce_scatter: the literal as written */
    int64_t axis_value;      /* as written (negative: from the end) */
    int64_t root;            /* broadcast */
    const tilec_expr *root_at;
} gc_form;

/* 0: v is no call of a collective. 1: it is one, read into *f when its
 * arguments have the form it takes; otherwise *why is the message naming
 * that form and *at the argument at fault (or v). */
int gc_read(const tilec_expr *v, gc_form *f, const char **why, const tilec_expr **at);

/* 1 when name is a collective (an item may not take it). */
int gc_is_builtin(const char *name);

/* The size on the axis of the result of all_gather (world * d) or
 * reduce_scatter (d / world: exact when every term of d has the factor
 * world, else the opaque quotient "(d)/(world)", which the runtime checks
 * divides evenly). NULL when a limit passed (*why says which). */
poly *gc_result_dim(arena *a, tilec_coll coll, const poly *d, poly_why *why);

/* 1 when some statement of graph g calls a collective. */
int gc_graph_has(const tilec_graph *g);

#endif
