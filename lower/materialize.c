/* materialize.c: a tile expression into registers. Picks the layout (the
 * dot's fragments, the one a caller wants, or canonical) and hands the
 * work to the load, reduction, dot or elementwise code. */
#include <string.h>

#include "lower/lower_internal.h"

static val *materialize(lw *L, const tilec_expr *e, const char *name, const lay *want)
{
    const tilec_type *t = lower_ty(L, e);
    const char *c = name ? name : lower_newtmp(L, "t");
    if (t->rank == 0 && e->kind == TILEC_EX_CALL && e->builtin != BI_LOAD && e->builtin != BI_ATOMIC_ADD) {
        val *v = lower_newval(L, VK_SCALAR, t, c);
        lower_emit_reduce(L, e, v);
        return v;
    }
    val *v = lower_newval(L, VK_MAT, t, c);
    if (tilec_is_builtin(e, BI_DOT)) {
        const tilec_type *at = lower_ty(L, e->args[0]);
        if (!want || want->kind == LY_CANON) {
            lay y;
            if (lower_dot_layout(L, at, t->dims[0], t->dims[1], &y))
                v->ly = y;
            else
                v->ly = lower_canon(L, t);
        } else {
            v->ly = *want;
        }
        lower_line(L, "float %s[%d];", c, v->ly.E);
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) %s[tl_j] = 0.0f;", v->ly.E, c);
        L->curdot = e;
        lower_emit_dot_into(L, e->args[0], e->args[1], v);
        return v;
    }
    v->ly = want ? *want : lower_pick_for(L, e);
    if (t->rank == 0) {
        v->kind = VK_SCALAR;
        v->ly.E = 1;
    }
    if (tilec_is_builtin(e, BI_LOAD)) {
        if (t->rank == 0) {
            for (uint32_t i = 0; i < e->nargs; i++)
                lower_walk(L, e->args[i], NULL, 0, NULL, PREP);
            const char *p = lower_walk(L, e->args[0], NULL, 0, NULL, EMIT);
            const char *x = lower_fmt(L, "*(%s)", p);
            if (e->nargs > 1) {
                const char *o = e->nargs > 2 ? lower_conv(L, lower_walk(L, e->args[2], NULL, 0, NULL, EMIT), lower_ty(L, e->args[2])->dtype, t->dtype)
                                             : "0";
                x = lower_fmt(L, "((%s) ? %s : (%s)(%s))", lower_walk(L, e->args[1], NULL, 0, NULL, EMIT), lower_ld_elem(L, x, t->dtype),
                        lower_cctype(t->dtype), o);
            } else {
                x = lower_ld_elem(L, x, t->dtype);
            }
            lower_line(L, "%s %s = %s;", lower_cctype(t->dtype), c, x);
            lower_remark_mem(L, e, lower_fmt(L, "ld, %s", lower_remark_width(L, 1, tilec_dtype_size(t->dtype), "vector")), NULL);
            v->ty.dtype = lower_compute_dt(t->dtype);
            return v;
        }
        lower_emit_load(L, e, v);
        return v;
    }
    if (tilec_is_builtin(e, BI_ATOMIC_ADD)) {
        lay y = lower_canon(L, lower_ty(L, e->args[0]));
        v->ly = y;
        lower_emit_store(L, e, &y, v);
        return v;
    }
    if (lower_is_scan(e)) {
        lower_emit_scan(L, e, v);
        return v;
    }
    if (lower_is_reduce(e) && lower_ty(L, e->args[0])->rank > 0) {
        lower_emit_reduce(L, e, v);
        return v;
    }
    /* elementwise: compute each element of the layout */
    lower_walk(L, e, lower_idx, 1, &v->ly, PREP);
    if (t->rank == 0) {
        const char *ct = t->ptr ? lower_vctype(L, t) : lower_cctype(t->dtype);
        const char *x = lower_walk(L, e, NULL, 0, NULL, EMIT);
        lower_line(L, "%s %s = %s;", ct, c, t->ptr ? x : lower_round(L, x, t->dtype));
        if (!t->ptr)
            v->ty.dtype = lower_compute_dt(t->dtype);
        return v;
    }
    lower_line(L, "%s %s[%d];", lower_vctype(L, t), c, v->ly.E);
    lower_loop_begin(L, &v->ly);
    lower_line(L, "%s[tl_j] = %s;", c, lower_st_val(L, lower_walk(L, e, lower_idx, 1, &v->ly, EMIT), t));
    lower_loop_end(L);
    return v;
}

val *lower_materialize(lw *L, const tilec_expr *e, const char *name, const lay *want)
{
    val *v = materialize(L, e, name, want);
    lower_note_value(L, v);
    return v;
}

/* A materialized operand for a reduction or a dot. */
val *lower_operand(lw *L, const tilec_expr *e)
{
    if (e->kind == TILEC_EX_NAME) {
        val *v = lower_lookup(L, e->name);
        if (v && v->kind == VK_MAT)
            return v;
    }
    matnode *mn = lower_find_mat(L, e);
    if (mn)
        return mn->v;
    return lower_materialize(L, e, NULL, NULL);
}
