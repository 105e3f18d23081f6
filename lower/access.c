/* access.c: conditions on whole tiles: a C condition under which a
 * boolean tile is true everywhere, decided at one corner of the tile from
 * the strides the analysis (axinfo.c) knows; and bound checks the grid
 * itself guarantees (lower_grid_true). */
#include <string.h>

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

/* Is e a view of its first operand: t[:, None], t[None, :], t[:]? */
static int is_view(const tilec_expr *e)
{
    if (e->kind != TILEC_EX_INDEX)
        return 0;
    for (uint32_t i = 1; i < e->nargs; i++)
        if (e->args[i]->kind != TILEC_EX_NONE && !(e->args[i]->kind == TILEC_EX_SLICE && e->args[i]->nargs == 0))
            return 0;
    return 1;
}

/* An upper bound of every element of the integer tile e in *hi: constants,
 * range(n) (n - 1), views and sums of such. */
static int upper(lw *L, const tilec_expr *e, int depth, int64_t *hi)
{
    e = lower_look(L, e);
    int64_t a, b;
    if (!e || depth > 32)
        return 0;
    if (lower_ty(L, e)->rank == 0 && lower_const_int(L, e, hi) == 0)
        return 1;
    if (tilec_is_builtin(e, BI_RANGE)) {
        *hi = lower_ty(L, e)->dims[0] - 1;
        return 1;
    }
    if (is_view(e))
        return upper(L, e->args[0], depth + 1, hi);
    if (e->kind == TILEC_EX_BINARY && e->op == TILEC_OP_ADD && upper(L, e->args[0], depth + 1, &a) &&
        upper(L, e->args[1], depth + 1, &b) && a < INT32_MAX && b < INT32_MAX && a > INT32_MIN && b > INT32_MIN) {
        *hi = a + b;
        return 1;
    }
    return 0;
}

/* Is the integer tile e, element by element, K * pid(axis) + t with a
 * constant K >= 0 and every t <= *t_hi? */
static int pid_affine(lw *L, const tilec_expr *e, int depth, int *axis, int64_t *K, int64_t *t_hi)
{
    e = lower_look(L, e);
    if (!e || depth > 32)
        return 0;
    if (tilec_is_builtin(e, BI_PID)) {
        *axis = lower_axis(L, e, 0, 3);
        *K = 1;
        *t_hi = 0;
        return 1;
    }
    if (is_view(e))
        return pid_affine(L, e->args[0], depth + 1, axis, K, t_hi);
    if (e->kind != TILEC_EX_BINARY || (e->op != TILEC_OP_MUL && e->op != TILEC_OP_ADD))
        return 0;
    for (int side = 0; side < 2; side++) {
        const tilec_expr *p = e->args[side], *q = e->args[1 - side];
        int64_t c;
        if (e->op == TILEC_OP_MUL) {
            const tilec_expr *x = lower_look(L, p);
            if (x && tilec_is_builtin(x, BI_PID) && lower_ty(L, q)->rank == 0 && lower_const_int(L, q, &c) == 0 &&
                c >= 0 && c <= INT32_MAX) {
                *axis = lower_axis(L, x, 0, 3);
                *K = c;
                *t_hi = 0;
                return 1;
            }
        } else if (pid_affine(L, p, depth + 1, axis, K, t_hi) && upper(L, q, depth + 1, &c)) {
            *t_hi += c;
            return 1;
        }
    }
    return 0;
}

/* Is the scalar e the parameter named `name` (parameters cannot be
 * assigned and no name is bound twice: the same value everywhere)? */
static int is_param(lw *L, const tilec_expr *e, const char **name)
{
    e = lower_look(L, e);
    if (!e || e->kind != TILEC_EX_NAME)
        return 0;
    for (uint32_t i = 0; i < L->k->nparams; i++)
        if (L->k->params[i].name && !strcmp(L->k->params[i].name, e->name) &&
            L->k->params[i].type.kind == TILEC_TE_SCALAR) {
            *name = e->name;
            return 1;
        }
    return 0;
}

/* Is the comparison m true in every program the grid launches: x < n
 * (or n > x) where x is K * pid(a) + t, every t <= 0, and the grid's
 * axis a is cdiv(n, G) with K <= G (or n itself, G = 1)? A program has
 * pid(a) <= cdiv(n, G) - 1, so K * pid(a) + t <= G * cdiv(n, G) - G <= n - 1
 * (a grid of 0 launches nothing, a negative one is refused). The row
 * check of a one-row program of a row kernel, `r < rows` with
 * r = pid(0) * ROWS + range(ROWS) under grid (cdiv(rows, ROWS)) and
 * ROWS = 1: kept, it cost the 2-D layernorm 13 registers the one-row
 * kernel does not spend (docs/lowering.md, "Bounds the grid proves"). */
int lower_grid_true(lw *L, const tilec_expr *m)
{
    if (m->kind != TILEC_EX_BINARY || (m->op != TILEC_OP_LT && m->op != TILEC_OP_GT))
        return 0;
    const tilec_expr *x = m->args[m->op == TILEC_OP_GT], *n = m->args[m->op == TILEC_OP_LT];
    const char *name;
    int axis;
    int64_t K, t_hi, G = 0;
    if (tilec_dtype_class(lower_ty(L, x)->dtype) != 's' || tilec_dtype_class(lower_ty(L, n)->dtype) != 's' ||
        lower_ty(L, n)->rank != 0 || lower_ty(L, n)->ptr || lower_ty(L, x)->ptr || !is_param(L, n, &name) ||
        !pid_affine(L, x, 0, &axis, &K, &t_hi) || t_hi > 0 || L->failed || (uint32_t)axis >= L->k->ngrid)
        return 0;
    const tilec_expr *g = L->k->grid[axis];
    if (g->kind == TILEC_EX_NAME && !strcmp(g->name, name))
        G = 1;
    else if (g->kind == TILEC_EX_CALL && !strcmp(g->name, "cdiv") && g->nargs == 2 && g->args[0]->kind == TILEC_EX_NAME &&
             !strcmp(g->args[0]->name, name) && lower_const_int(L, g->args[1], &G) != 0)
        G = 0;
    return G > 0 && K <= G;
}
