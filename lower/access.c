/* access.c: static analysis for vector accesses. The stride of an index or
 * pointer expression along an axis, when it is a compile-time constant (a
 * contiguous run is one 8- or 16-byte access), and masks that are true on
 * a prefix of the last axis (a run's last element decides for the run). */
#include <string.h>

#include "lower/lower_internal.h"

static int stride_bcast(lw *L, const tilec_expr *e, const tilec_type *rt, int axis, int64_t *s)
{
    const tilec_type *at = lower_ty(L, e);
    int k = axis - (rt->rank - at->rank);
    if (axis < 0 || k < 0 || at->dims[k] == 1) {
        return lower_stride(L, e, -1, s);
    }
    return lower_stride(L, e, k, s);
}

static int const_value(lw *L, const tilec_expr *e, int64_t *v)
{
    if (e->kind == TILEC_EX_INT) {
        *v = e->ival;
        return 1;
    }
    if (e->kind == TILEC_EX_NAME)
        return !lower_lookup(L, e->name) && lower_hint_value(L, e->name, v);
    return 0;
}

int lower_stride(lw *L, const tilec_expr *e, int axis, int64_t *s)
{
    const tilec_type *t = lower_ty(L, e);
    if (axis < 0 || t->rank == 0) {
        /* constant along the axis unless it reads materialized data */
        *s = 0;
        return lower_is_virtual(L, e) || t->rank == 0;
    }
    switch (e->kind) {
    case TILEC_EX_NAME: {
        val *v = lower_lookup(L, e->name);
        if (v && v->kind == VK_VIRT)
            return lower_stride(L, v->expr, axis, s);
        return 0;
    }
    case TILEC_EX_INDEX: {
        /* result axis `axis` is the slot keeping it: None is constant, a
         * slice steps its base axis `step` elements at a time */
        int k = 0, b = 0;
        for (uint32_t i = 1; i < e->nargs; i++) {
            const tilec_expr *slot = e->args[i];
            int keeps = slot->kind == TILEC_EX_SLICE || slot->kind == TILEC_EX_NONE;
            if (keeps && k == axis) {
                if (slot->kind == TILEC_EX_NONE) {
                    *s = 0;
                    return lower_is_virtual(L, e->args[0]);
                }
                int64_t lo, st;
                lower_slice_parts(L, slot, &lo, &st);
                if (!lower_stride(L, e->args[0], b, s))
                    return 0;
                *s *= st;
                return 1;
            }
            k += keeps;
            b += slot->kind != TILEC_EX_NONE;
        }
        return 0;
    }
    case TILEC_EX_UNARY:
        if (e->op != TILEC_OP_NEG || !lower_stride(L, e->args[0], axis, s))
            return 0;
        *s = -*s;
        return 1;
    case TILEC_EX_BINARY: {
        int64_t a, b;
        if (!stride_bcast(L, e->args[0], t, axis, &a) || !stride_bcast(L, e->args[1], t, axis, &b))
            return 0;
        int64_t c;
        switch (e->op) {
        case TILEC_OP_ADD: *s = a + b; return 1;
        case TILEC_OP_SUB: *s = a - b; return 1;
        case TILEC_OP_MUL:
            if (a == 0 && b == 0) {
                *s = 0;
                return 1;
            }
            if (a == 0 && const_value(L, e->args[0], &c)) {
                *s = c * b;
                return 1;
            }
            if (b == 0 && const_value(L, e->args[1], &c)) {
                *s = c * a;
                return 1;
            }
            return 0;
        default:
            *s = 0;
            return a == 0 && b == 0;
        }
    }
    case TILEC_EX_CALL:
        if (!strcmp(e->name, "range")) {
            *s = 1;
            return 1;
        }
        if (!strcmp(e->name, "reshape")) {
            /* along the last axis, when it is no longer than the operand's
             * (both powers of two): a step stays inside one operand row */
            const tilec_type *bt = lower_ty(L, e->args[0]);
            if (axis != t->rank - 1 || t->dims[axis] > bt->dims[bt->rank - 1])
                return 0;
            return lower_stride(L, e->args[0], bt->rank - 1, s);
        }
        if (!strcmp(e->name, "zeros") || !strcmp(e->name, "full")) {
            *s = 0;
            return 1;
        }
        return 0;
    default:
        return 0;
    }
}

/* A mask that, along the last axis, is true on a prefix: comparisons
 * `i < bound` / `i <= bound` (or `bound > i`) of non-decreasing index
 * expressions with scalar bounds, and tiles broadcast along the axis
 * (`ok[:, None]`), joined by &&. Then a run of elements is
 * all in bounds when its last element is, and none is when its first is
 * not. */
int lower_monotone_mask(lw *L, const tilec_expr *m, int axis)
{
    if (m->kind == TILEC_EX_NAME) {
        val *v = lower_lookup(L, m->name);
        return v && v->kind == VK_VIRT && lower_same_shape(lower_ty(L, v->expr), lower_ty(L, m)) && lower_monotone_mask(L, v->expr, axis);
    }
    if (m->kind == TILEC_EX_BINARY && m->op == TILEC_OP_ANDAND)
        return lower_monotone_mask(L, m->args[0], axis) && lower_monotone_mask(L, m->args[1], axis);
    int64_t s0;
    if (m->kind == TILEC_EX_INDEX && lower_stride(L, m, axis, &s0) && s0 == 0)
        return 1; /* broadcast along the axis: all of a run or none (a row's pixel test) */
    if (m->kind != TILEC_EX_BINARY)
        return 0;
    const tilec_expr *idx, *bound;
    if (m->op == TILEC_OP_LT || m->op == TILEC_OP_LE)
        idx = m->args[0], bound = m->args[1];
    else if (m->op == TILEC_OP_GT || m->op == TILEC_OP_GE)
        idx = m->args[1], bound = m->args[0];
    else
        return 0;
    const tilec_type *mt = lower_ty(L, m);
    int64_t si, sb;
    return lower_ty(L, bound)->rank == 0 && stride_bcast(L, idx, mt, axis, &si) && si >= 0 &&
           stride_bcast(L, bound, mt, axis, &sb) && sb == 0;
}

/* A C condition under which the boolean tile m holds for every element,
 * or NULL when none is found: scalars as they are, && and || of such, and
 * comparisons of affine index tiles, decided at the one corner of the tile
 * where the difference of their sides is smallest. */
const char *lower_all_true(lw *L, const tilec_expr *m)
{
    const tilec_type *t = lower_ty(L, m);
    if (t->dtype != TILEC_DT_BOOL || L->failed)
        return NULL;
    if (t->rank == 0) {
        lower_walk(L, m, NULL, 0, NULL, PREP);
        return lower_walk(L, m, NULL, 0, NULL, EMIT);
    }
    if (m->kind == TILEC_EX_NAME) {
        val *v = lower_lookup(L, m->name);
        return v && v->kind == VK_VIRT ? lower_all_true(L, v->expr) : NULL;
    }
    if (m->kind != TILEC_EX_BINARY)
        return NULL;
    if (m->op == TILEC_OP_ANDAND || m->op == TILEC_OP_OROR) {
        const char *a = lower_all_true(L, m->args[0]), *b = lower_all_true(L, m->args[1]);
        if (m->op == TILEC_OP_ANDAND)
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
