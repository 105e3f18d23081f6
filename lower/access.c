/* access.c: conditions on whole tiles: a C condition under which a
 * boolean tile is true everywhere, decided at one corner of the tile from
 * the strides the analysis (axinfo.c) knows. */
#include "lower/lower_internal.h"

/* The stride of operand e of a result of type rt along axis (broadcast
 * from the right). */
static int stride_bcast(lw *L, const tilec_expr *e, const tilec_type *rt, int axis, int64_t *s)
{
    const tilec_type *at = lower_ty(L, e);
    int k = axis - (rt->rank - at->rank);
    if (k < 0 || at->dims[k] == 1) {
        *s = 0;
        return 1;
    }
    return lower_stride(L, e, k, s);
}

/* A C condition under which the boolean tile m holds for every element,
 * or NULL when none is found: scalars as they are, &&, || (and & and |
 * of booleans) of such, slices and broadcasts of such (`ok[:, None]`),
 * and comparisons of affine index tiles, decided at the one corner of
 * the tile where the difference of their sides is smallest. */
const char *lower_all_true(lw *L, const tilec_expr *m)
{
    const tilec_type *t = lower_ty(L, m);
    if (t->dtype != TILEC_DT_BOOL || L->failed)
        return NULL;
    if (t->rank == 0) {
        lower_walk(L, m, NULL, 0, NULL, PREP);
        return lower_walk(L, m, NULL, 0, NULL, EMIT);
    }
    if (!lower_is_virtual(L, m)) /* a corner of materialized data is in some thread's registers */
        return NULL;
    if (m->kind == TILEC_EX_NAME) {
        val *v = lower_lookup(L, m->name);
        return v && v->kind == VK_VIRT ? lower_all_true(L, v->expr) : NULL;
    }
    if (m->kind == TILEC_EX_INDEX) /* a part of a tile true everywhere, or a broadcast of one */
        return lower_all_true(L, m->args[0]);
    if (m->kind != TILEC_EX_BINARY)
        return NULL;
    int both = lower_ty(L, m->args[0])->dtype == TILEC_DT_BOOL && lower_ty(L, m->args[1])->dtype == TILEC_DT_BOOL;
    if (m->op == TILEC_OP_ANDAND || m->op == TILEC_OP_OROR || (both && (m->op == TILEC_OP_AND || m->op == TILEC_OP_OR))) {
        const char *a = lower_all_true(L, m->args[0]), *b = lower_all_true(L, m->args[1]);
        if (m->op == TILEC_OP_ANDAND || m->op == TILEC_OP_AND)
            return a && b ? lower_fmt(L, "(%s && %s)", a, b) : NULL;
        return a && b ? lower_fmt(L, "(%s || %s)", a, b) : a ? a : b;
    }
    /* x < y (x <= y): min of y - x over the tile; x > y (x >= y): of x - y */
    int less = m->op == TILEC_OP_LT || m->op == TILEC_OP_LE;
    if (!less && m->op != TILEC_OP_GT && m->op != TILEC_OP_GE)
        return NULL;
    if (tilec_dtype_class(lower_ty(L, m->args[0])->dtype) == 'f' || tilec_dtype_class(lower_ty(L, m->args[1])->dtype) == 'f')
        return NULL;
    const char *corner[TILEC_MAX_RANK];
    for (int a = 0; a < t->rank; a++) {
        int64_t s0, s1;
        if (!stride_bcast(L, m->args[0], t, a, &s0) || !stride_bcast(L, m->args[1], t, a, &s1))
            return NULL;
        int64_t d = less ? s1 - s0 : s0 - s1;
        corner[a] = d >= 0 ? "0" : lower_fmt(L, "%lld", (long long)(t->dims[a] - 1));
    }
    lower_walk(L, m, corner, 0, NULL, PREP);
    return lower_walk(L, m, corner, 0, NULL, EMIT);
}
