/* size_poly.c: size expressions of the AST to canonical polynomials
 * (util/poly.c): literals and names become constants and symbols, + - *
 * combine them, and / % cdiv become opaque atoms. */
#include "parser/size_poly.h"

#include <string.h>

/* Record the first failure; always NULL. */
static poly *fail(poly_why *why, poly_fail f)
{
    if (!why->fail)
        *why = (poly_why){.fail = f};
    return NULL;
}

static poly *from_expr(arena *a, const tilec_expr *e, poly_lookup_fn lookup, void *user, size_why *why);

/* The two operands of a binary node or a cdiv call, then their combination. */
static poly *pair(arena *a, const tilec_expr *e, poly_lookup_fn lookup, void *user, size_why *why)
{
    poly *x = from_expr(a, e->args[0], lookup, user, why);
    poly *y = x ? from_expr(a, e->args[1], lookup, user, why) : NULL;
    if (!x || !y)
        return NULL;
    if (e->kind == TILEC_EX_CALL)
        return poly_div_atom(a, POLY_CDIV, x, y, &why->poly);
    switch (e->op) {
    case TILEC_OP_ADD: return poly_add(a, x, y, 1, &why->poly);
    case TILEC_OP_SUB: return poly_add(a, x, y, -1, &why->poly);
    case TILEC_OP_MUL: return poly_mul(a, x, y, &why->poly);
    case TILEC_OP_DIV: return poly_div_atom(a, POLY_DIV, x, y, &why->poly);
    default: return poly_div_atom(a, POLY_MOD, x, y, &why->poly);
    }
}

static poly *node(arena *a, const tilec_expr *e, poly_lookup_fn lookup, void *user, size_why *why)
{
    switch (e->kind) {
    case TILEC_EX_INT: {
        poly *p = poly_const(a, e->ival);
        return p ? p : fail(&why->poly, POLY_FAIL_NOMEM);
    }
    case TILEC_EX_NAME: {
        const poly *p = lookup(user, e->name);
        return p ? (poly *)p : fail(&why->poly, POLY_FAIL_FORM);
    }
    case TILEC_EX_UNARY:
        if (e->op != TILEC_OP_NEG)
            return fail(&why->poly, POLY_FAIL_FORM);
        return poly_add(a, poly_const(a, 0), from_expr(a, e->args[0], lookup, user, why), -1, &why->poly);
    case TILEC_EX_BINARY:
        if (e->op != TILEC_OP_ADD && e->op != TILEC_OP_SUB && e->op != TILEC_OP_MUL && e->op != TILEC_OP_DIV &&
            e->op != TILEC_OP_MOD)
            return fail(&why->poly, POLY_FAIL_FORM);
        return pair(a, e, lookup, user, why);
    case TILEC_EX_CALL:
        if (strcmp(e->name, "cdiv") != 0 || e->nargs != 2)
            return fail(&why->poly, POLY_FAIL_FORM);
        return pair(a, e, lookup, user, why);
    default:
        return fail(&why->poly, POLY_FAIL_FORM);
    }
}

/* The innermost node that failed is recorded first. */
static poly *from_expr(arena *a, const tilec_expr *e, poly_lookup_fn lookup, void *user, size_why *why)
{
    poly *p = node(a, e, lookup, user, why);
    if (!p && why->poly.fail && !why->at)
        why->at = e;
    return p;
}

poly *poly_from_expr(arena *a, const tilec_expr *e, poly_lookup_fn lookup, void *user, size_why *why)
{
    size_why local = {0};
    return from_expr(a, e, lookup, user, why ? why : &local);
}
