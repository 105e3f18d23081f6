/* size_poly.h: the polynomial of a size expression of the AST (graph
 * shapes, extern result dimensions), built over util/poly.h. Used by the
 * checker and by the lowering of graphs to the wrapper IR. */
#ifndef TILEC_PARSER_SIZE_POLY_H
#define TILEC_PARSER_SIZE_POLY_H

#include "tilec/ast.h"
#include "util/poly.h"

/* What a name stands for (NULL: unknown, which fails as POLY_FAIL_FORM). */
typedef const poly *(*poly_lookup_fn)(void *user, const char *name);

/* Why poly_from_expr failed, and at which node (NULL: none recorded). */
typedef struct size_why {
    poly_why poly;
    const tilec_expr *at;
} size_why;

/* The polynomial of a size expression: integer literals, names (resolved
 * by lookup), + - * and unary -, with / % cdiv as opaque atoms. NULL on
 * overflow, out of memory, an unsupported node or a limit passed; `why`
 * (may be NULL) then says which (the first failure) and where. */
poly *poly_from_expr(arena *a, const tilec_expr *e, poly_lookup_fn lookup, void *user, size_why *why);

#endif
