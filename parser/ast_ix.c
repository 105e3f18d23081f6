/* ast_ix.c: integer expressions of the AST (grids, compile-time
 * constants) as trees of tilec/iexpr.h, the one form the evaluator reads:
 * literals, names, - ~ (and ! where allowed), + - * / % << >> & | ^,
 * cdiv(a, b), min(a, b) and max(a, b). Each node's origin is the AST node it comes from. */
#include "parser/ast_ix.h"

#include <string.h>

#include "util/iexpr.h"

static const tilec_ix *aix_fail(aix_why *why, aix_fail_kind f, const tilec_expr *at)
{
    if (why && !why->fail)
        *why = (aix_why){.fail = f, .at = at};
    return NULL;
}

static int aix_binop(tilec_op op, tilec_ix_op *out)
{
    static const struct {
        tilec_op op;
        tilec_ix_op ix;
    } map[] = {
        {TILEC_OP_ADD, TILEC_IX_ADD}, {TILEC_OP_SUB, TILEC_IX_SUB}, {TILEC_OP_MUL, TILEC_IX_MUL},
        {TILEC_OP_DIV, TILEC_IX_DIV}, {TILEC_OP_MOD, TILEC_IX_MOD}, {TILEC_OP_SHL, TILEC_IX_SHL},
        {TILEC_OP_SHR, TILEC_IX_SHR}, {TILEC_OP_AND, TILEC_IX_AND}, {TILEC_OP_OR, TILEC_IX_OR},
        {TILEC_OP_XOR, TILEC_IX_XOR},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (map[i].op == op) {
            *out = map[i].ix;
            return 1;
        }
    return 0;
}

/* The operator of e into *op: 1, or 0 when the evaluator has none. */
static int aix_op(const tilec_expr *e, int logical, tilec_ix_op *op)
{
    switch (e->kind) {
    case TILEC_EX_UNARY:
        if (e->op == TILEC_OP_NEG || e->op == TILEC_OP_BITNOT || (logical && e->op == TILEC_OP_NOT)) {
            *op = e->op == TILEC_OP_NEG ? TILEC_IX_NEG : e->op == TILEC_OP_BITNOT ? TILEC_IX_NOT : TILEC_IX_LNOT;
            return 1;
        }
        return 0;
    case TILEC_EX_BINARY: return aix_binop(e->op, op);
    case TILEC_EX_CALL: /* cdiv(a, b), min(a, b), max(a, b) */
        *op = !strcmp(e->name, "min") ? TILEC_IX_MIN : !strcmp(e->name, "max") ? TILEC_IX_MAX : TILEC_IX_CDIV;
        return (*op != TILEC_IX_CDIV || !strcmp(e->name, "cdiv")) && e->nargs == 2;
    default: return 0;
    }
}

const tilec_ix *ast_to_ix(arena *a, const tilec_expr *e, int logical, aix_why *why)
{
    tilec_ix *x = NULL;
    tilec_ix_op op;
    int len = e->kind == TILEC_EX_CALL && !strcmp(e->name, "len") && e->nargs == 1 && e->args[0]->kind == TILEC_EX_NAME;
    switch (len ? TILEC_EX_NAME : e->kind) { /* len(p) of a tensor list: the launch passes the count as p's argument */
    case TILEC_EX_INT: x = ix_int(a, e->ival); break;
    case TILEC_EX_NAME: x = ix_sym(a, (len ? e->args[0] : e)->name); break;
    case TILEC_EX_FLOAT:
    case TILEC_EX_INF: return aix_fail(why, AIX_FLOAT, e);
    default: {
        if (!aix_op(e, logical, &op))
            return aix_fail(why, AIX_FORM, e);
        const tilec_ix *l = ast_to_ix(a, e->args[0], logical, why);
        const tilec_ix *r = l && e->nargs > 1 ? ast_to_ix(a, e->args[1], logical, why) : NULL;
        if (!l || (e->nargs > 1 && !r))
            return NULL;
        x = ix_new(a, op, l, r);
    }
    }
    if (!x)
        return aix_fail(why, AIX_NOMEM, e);
    x->origin = e;
    return x;
}
