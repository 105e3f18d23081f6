/* graph_alloc.h: the allocating builtins of graphs, read one way for the
 * checker (check_fill.c) and the wrapper IR (wrapper_ir/lower_graph.c):
 * empty, zeros, ones, full (T, [sizes] ...) and their *_like forms, which
 * take the dtype and shape of a tensor. */
#ifndef TILEC_PARSER_GRAPH_ALLOC_H
#define TILEC_PARSER_GRAPH_ALLOC_H

#include <stdint.h>

#include "tilec/ast.h"
#include "util/fill.h"

typedef enum { GA_EMPTY, GA_ZEROS, GA_ONES, GA_FULL } ga_fill;

typedef struct ga_form {
    ga_fill fill;
    int like;                 /* zeros_like(x): dtype and shape of args[0] */
    const tilec_expr *of;     /* like: the tensor argument */
    tilec_dtype dtype;        /* not like: the element type */
    tilec_expr *const *dims;  /* not like: the sizes in the list */
    uint32_t ndims;
    const tilec_expr *value;  /* full: the value as written */
} ga_form;

/* 0: v is no call of an allocating builtin. 1: it is one, read into *f when
 * its arguments have the form the builtin takes; otherwise *why is the
 * message naming that form (and *f is not all set). */
int ga_read(const tilec_expr *v, ga_form *f, const char **why);

/* The value each element of a dt tensor starts with (0 for zeros, 1 for
 * ones, false and true for bool, the literal of full), as fill_value; 0, or
 * -1 when full's value is no literal of a number, inf or bool, optionally
 * negated. */
int ga_value(const ga_form *f, tilec_dtype dt, fill_value *out);

/* A literal of a number, inf or bool, optionally negated, as fill_value:
 * 0, or -1 when e is none. */
int ga_literal(const tilec_expr *e, fill_value *out);

/* Such a literal as written: "300", "-2.5", "1e39", "-inf", "true". */
const char *ga_literal_text(const tilec_expr *e, char *buf, size_t n);

/* The value as text for the IR and the emitters: "0", "1", "-0.5", "inf",
 * "true"; into buf (at least 64 bytes). */
const char *ga_value_text(const ga_form *f, tilec_dtype dt, char *buf, size_t n);

/* 1 when name is one of the builtins (an item may not take it). */
int ga_is_builtin(const char *name);

#endif
