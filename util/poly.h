/* poly.h: symbolic sizes as canonical polynomials over symbols, so that
 * "R * C" and "C * R" compare equal. Division, modulo and cdiv become
 * opaque atoms ("cdiv(N, 128)") that keep their operands. A polynomial is
 * printed as text (poly_str) or made an expression tree (poly_ix) that
 * the one evaluator reads. Everything lives in an arena. */
#ifndef TILEC_UTIL_POLY_H
#define TILEC_UTIL_POLY_H

#include <stdint.h>

#include "tilec/iexpr.h"
#include "tilec/limits.h"
#include "util/arena.h"

/* A factor of a term: a symbol, or an opaque quotient ("(x)/(y)",
 * "(x)%(y)", "cdiv(x, y)") that keeps its operands, so that the
 * polynomial can be written as an expression tree (poly_ix). */
typedef struct poly_factor {
    const char *text; /* the symbol, or the quotient's canonical text */
    int op;           /* 0: a symbol; else 1 + its poly_div */
    const struct poly *x, *y;
} poly_factor;

typedef struct poly_term {
    int64_t coef;
    uint32_t natoms;
    const poly_factor **atoms; /* sorted by text; repeated for powers */
} poly_term;

typedef struct poly {
    poly_term *terms; /* sorted, no zero coefficients */
    uint32_t n;
} poly;

/* Why a polynomial could not be made: the limit (TILEC_MAX_POLY_* of
 * tilec/limits.h) and the value that passed it. */
typedef enum poly_fail {
    POLY_FAIL_NONE = 0,
    POLY_FAIL_NOMEM,
    POLY_FAIL_OVERFLOW, /* a coefficient past 64 bits */
    POLY_FAIL_TERMS,    /* value: the terms (partial products) it would have */
    POLY_FAIL_DEGREE,   /* value: the symbols in one term */
    POLY_FAIL_TEXT,     /* value: the bytes of an opaque atom's text */
    POLY_FAIL_FORM,     /* not a size expression (parser/size_poly.h) */
    POLY_FAIL_DIV_ZERO, /* a constant divisor 0 (cdiv: <= 0); value: it */
} poly_fail;

typedef struct poly_why {
    poly_fail fail;
    int64_t value;
} poly_why;

/* Returns NULL on overflow, out of memory or a limit passed; `why` (may be NULL) then says which (the first failure). */
poly *poly_const(arena *a, int64_t v);
poly *poly_atom(arena *a, const char *name);
poly *poly_add(arena *a, const poly *x, const poly *y, int sign, poly_why *why);
poly *poly_mul(arena *a, const poly *x, const poly *y, poly_why *why);
int poly_eq(const poly *x, const poly *y);
int poly_is_const(const poly *p, int64_t *v);
/* "R*C + 2", "0" for zero; NULL when out of memory or longer than
 * TILEC_MAX_POLY_TEXT bytes (poly_text_len says which). */
char *poly_str(arena *a, const poly *p);
/* The length of poly_str(p), counted up to a little past `stop`. */
size_t poly_text_len(const poly *p, size_t stop);

/* Division as an opaque atom: "(x)/(y)", "(x)%(y)" or "cdiv(x, y)"; of
 * two constants, their quotient by tilec_ix_apply (overflow fails). A
 * constant divisor 0 (for cdiv, <= 0) fails with POLY_FAIL_DIV_ZERO. */
typedef enum poly_div { POLY_DIV, POLY_MOD, POLY_CDIV } poly_div;
poly *poly_div_atom(arena *a, poly_div op, const poly *x, const poly *y, poly_why *why);

/* p as an integer expression (tilec/iexpr.h) of exactly the shape its text
 * (poly_str) reads: terms in the text's order, a leading '-' negating the
 * first term, a coefficient times its factors left to right, a quotient
 * over its operands' trees. NULL when out of memory. */
tilec_ix *poly_ix(arena *a, const poly *p);

#endif
