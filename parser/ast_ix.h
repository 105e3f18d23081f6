/* ast_ix.h: an integer expression of the AST (a grid dimension, a
 * compile-time constant) as a tree of tilec/iexpr.h (ast_ix.c). */
#ifndef TILEC_PARSER_AST_IX_H
#define TILEC_PARSER_AST_IX_H

#include "tilec/ast.h"
#include "tilec/iexpr.h"
#include "util/arena.h"

typedef enum aix_fail_kind {
    AIX_OK = 0,
    AIX_FLOAT, /* a float literal or inf */
    AIX_FORM,  /* an operator or call the evaluator does not know */
    AIX_NOMEM,
} aix_fail_kind;

/* Why ast_to_ix failed, and at which node (the first one met). */
typedef struct aix_why {
    aix_fail_kind fail;
    const tilec_expr *at;
} aix_why;

/* The tree of e in arena a; `logical` admits ! (grids do, constants do
 * not). NULL on failure; `why` (may be NULL) then says why and where. */
const tilec_ix *ast_to_ix(arena *a, const tilec_expr *e, int logical, aix_why *why);

#endif
