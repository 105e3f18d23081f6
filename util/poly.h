/* poly.h: symbolic sizes as canonical polynomials over symbols, so that
 * "R * C" and "C * R" compare equal. Division, modulo and cdiv become
 * opaque atoms ("cdiv(N, 128)"). Everything lives in an arena. */
#ifndef TILEC_UTIL_POLY_H
#define TILEC_UTIL_POLY_H

#include <stdint.h>

#include "tilec/ast.h"
#include "util/arena.h"

typedef struct poly_term {
    int64_t coef;
    uint32_t natoms;
    const char **atoms; /* sorted by strcmp; repeated for powers */
} poly_term;

typedef struct poly {
    poly_term *terms; /* sorted, no zero coefficients */
    uint32_t n;
} poly;

/* Returns NULL on overflow, out of memory, or an unsupported node. */
poly *poly_const(arena *a, int64_t v);
poly *poly_atom(arena *a, const char *name);
poly *poly_add(arena *a, const poly *x, const poly *y, int sign);
poly *poly_mul(arena *a, const poly *x, const poly *y);
int poly_eq(const poly *x, const poly *y);
int poly_is_const(const poly *p, int64_t *v);
/* "R*C + 2", "0" for zero */
char *poly_str(arena *a, const poly *p);

/* The polynomial of a size expression: integer literals, names (resolved
 * by lookup, which returns NULL for an unknown name), + - * and unary -,
 * with / % cdiv as opaque atoms. */
typedef const poly *(*poly_lookup_fn)(void *user, const char *name);
poly *poly_from_expr(arena *a, const tilec_expr *e, poly_lookup_fn lookup, void *user);

#endif
