/* iexpr.c: the one evaluator of integer expressions (tilec/iexpr.h): the
 * arithmetic rule of each operator, the walk of a tree, and making trees
 * in an arena (util/iexpr.h). */
#include "util/iexpr.h"

#include <stddef.h>

const char *tilec_ix_err_string(tilec_ix_err e)
{
    switch (e) {
    case TILEC_IX_OK: return "ok";
    case TILEC_IX_OVERFLOW: return "overflows 64 bits";
    case TILEC_IX_DIV_ZERO: return "divides by zero";
    case TILEC_IX_CDIV_DIVISOR: return "divides (cdiv) by a divisor that is not positive";
    case TILEC_IX_SHIFT: return "shifts a negative value or by a count outside 0 to 62";
    case TILEC_IX_UNKNOWN: return "uses an unknown symbol";
    case TILEC_IX_BAD: return "is not an integer expression";
    }
    return "is not an integer expression";
}

static int ix_unary(tilec_ix_op op) { return op == TILEC_IX_NEG || op == TILEC_IX_NOT || op == TILEC_IX_LNOT; }

static tilec_ix_err ix_divide(tilec_ix_op op, int64_t a, int64_t b, int64_t *out)
{
    if (op == TILEC_IX_CDIV) {
        if (b <= 0)
            return TILEC_IX_CDIV_DIVISOR;
        *out = a / b + (a % b > 0); /* the ceiling; a + b - 1 could overflow */
        return TILEC_IX_OK;
    }
    if (b == 0)
        return TILEC_IX_DIV_ZERO;
    if (b == -1) { /* INT64_MIN / -1 overflows; its remainder is 0 (C leaves both undefined) */
        if (op == TILEC_IX_MOD)
            *out = 0;
        else if (a == INT64_MIN)
            return TILEC_IX_OVERFLOW;
        else
            *out = -a;
        return TILEC_IX_OK;
    }
    *out = op == TILEC_IX_DIV ? a / b : a % b;
    return TILEC_IX_OK;
}

static tilec_ix_err ix_shift(tilec_ix_op op, int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0 || b > 62)
        return TILEC_IX_SHIFT;
    if (op == TILEC_IX_SHL && a > (INT64_MAX >> b))
        return TILEC_IX_OVERFLOW;
    *out = op == TILEC_IX_SHL ? a << b : a >> b;
    return TILEC_IX_OK;
}

tilec_ix_err tilec_ix_apply(tilec_ix_op op, int64_t a, int64_t b, int64_t *out)
{
    if (!out)
        return TILEC_IX_BAD;
    switch (op) {
    case TILEC_IX_NEG: return __builtin_sub_overflow((int64_t)0, a, out) ? TILEC_IX_OVERFLOW : TILEC_IX_OK;
    case TILEC_IX_NOT: *out = ~a; return TILEC_IX_OK;
    case TILEC_IX_LNOT: *out = !a; return TILEC_IX_OK;
    case TILEC_IX_ADD: return __builtin_add_overflow(a, b, out) ? TILEC_IX_OVERFLOW : TILEC_IX_OK;
    case TILEC_IX_SUB: return __builtin_sub_overflow(a, b, out) ? TILEC_IX_OVERFLOW : TILEC_IX_OK;
    case TILEC_IX_MUL: return __builtin_mul_overflow(a, b, out) ? TILEC_IX_OVERFLOW : TILEC_IX_OK;
    case TILEC_IX_DIV:
    case TILEC_IX_MOD:
    case TILEC_IX_CDIV: return ix_divide(op, a, b, out);
    case TILEC_IX_SHL:
    case TILEC_IX_SHR: return ix_shift(op, a, b, out);
    case TILEC_IX_AND: *out = a & b; return TILEC_IX_OK;
    case TILEC_IX_OR: *out = a | b; return TILEC_IX_OK;
    case TILEC_IX_XOR: *out = a ^ b; return TILEC_IX_OK;
    case TILEC_IX_MIN: *out = a < b ? a : b; return TILEC_IX_OK;
    case TILEC_IX_MAX: *out = a > b ? a : b; return TILEC_IX_OK;
    default: return TILEC_IX_BAD;
    }
}

/* Recursion is bounded by the tree's depth, which its makers bound (the
 * parser's nesting limit; polynomials within tilec/limits.h). */
static tilec_ix_err ix_walk(const tilec_ix *e, tilec_ix_lookup_fn lookup, void *user, int64_t *out,
                            const tilec_ix **at)
{
    tilec_ix_err r;
    int64_t a = 0, b = 0;
    if (!e)
        return TILEC_IX_BAD;
    switch (e->op) {
    case TILEC_IX_INT: *out = e->value; return TILEC_IX_OK;
    case TILEC_IX_SYM: r = lookup && e->name && !lookup(user, e, out) ? TILEC_IX_OK : TILEC_IX_UNKNOWN; break;
    default:
        if ((r = ix_walk(e->a, lookup, user, &a, at)) != TILEC_IX_OK ||
            (!ix_unary(e->op) && (r = ix_walk(e->b, lookup, user, &b, at)) != TILEC_IX_OK))
            return r;
        r = tilec_ix_apply(e->op, a, b, out);
    }
    if (r != TILEC_IX_OK && at)
        *at = e;
    return r;
}

tilec_ix_err tilec_ix_eval(const tilec_ix *e, tilec_ix_lookup_fn lookup, void *user, int64_t *out,
                           const tilec_ix **at)
{
    int64_t v = 0;
    tilec_ix_err r = ix_walk(e, lookup, user, &v, at);
    if (r == TILEC_IX_OK && out)
        *out = v;
    return r;
}

/* ---- making trees (util/iexpr.h) ---- */

static tilec_ix *ix_alloc(arena *a, tilec_ix_op op)
{
    tilec_ix *e = ar_alloc(a, sizeof *e);
    if (e)
        *e = (tilec_ix){.op = op};
    return e;
}

tilec_ix *ix_int(arena *a, int64_t v)
{
    tilec_ix *e = ix_alloc(a, TILEC_IX_INT);
    if (e)
        e->value = v;
    return e;
}

tilec_ix *ix_sym(arena *a, const char *name)
{
    tilec_ix *e = name ? ix_alloc(a, TILEC_IX_SYM) : NULL;
    if (e)
        e->name = name;
    return e;
}

tilec_ix *ix_new(arena *a, tilec_ix_op op, const tilec_ix *x, const tilec_ix *y)
{
    if (!x || (!ix_unary(op) && !y))
        return NULL;
    tilec_ix *e = ix_alloc(a, op);
    if (e) {
        e->a = x;
        e->b = ix_unary(op) ? NULL : y;
    }
    return e;
}
