/* mask.c: the one builder of the bound checks of a vector run's elements
 * (docs/lowering.md, "The mask rule"). Every access that checks the
 * elements of a run of consecutive elements together opens element q with
 * lower_run_idx, walks its mask there (lower_run_mask) and closes it with
 * lower_run_done: a load's, a store's or a vector atomic's run (memory.c),
 * a 16-byte cp.async chunk of a pipelined dot loop, of a ring or of the
 * gather twin's producer (pipeline.c), and the values of the sm_90a
 * twin's TMA store (wgstore.c), with any `where` in the values they walk.
 * A bound check `i < n` met in such a walk (expr.c asks
 * lower_run_bound first) is written against element 0's index, in the
 * comparison's own width (i32 or i64), the bound saturating. */
#include <stdint.h>

#include "lower/lower_internal.h"

void lower_run_idx(lw *L, const tilec_type *t, int vax, int q, int how, const char **qidx)
{
    int one_row = vax >= 0 && vax < t->rank; /* the access is one run axis: no other extent */
    for (int r = 0; r < t->rank; r++) {
        qidx[r] = r == vax && q ? lower_fmt(L, "(tl_i%d + %d)", r, q) : lower_idx[r];
        one_row &= r == vax || t->dims[r] == 1;
    }
    L->joff = how & LOWER_RUN_REGS ? q : 0;
    /* a register tile of several rows keeps each element's own index
     * (there the rewrite made ptxas hold the bounds beside the row masks);
     * a copy's chunk is one run whatever the tile's other extents */
    L->run_sub = q && (one_row || (how & LOWER_RUN_CHUNK)) && !(how & (LOWER_RUN_SLOW | LOWER_RUN_OWN)) ? qidx[vax] : NULL;
    L->run_base = L->run_sub ? lower_idx[vax] : NULL;
    L->run_q = L->run_sub ? q : 0;
}

void lower_run_done(lw *L)
{
    L->joff = L->run_q = 0;
    L->run_sub = L->run_base = NULL;
}

const char *lower_walk_at(lw *L, const tilec_expr *x, const tilec_type *t, const char *const *idx, const lay *y)
{
    const char *sub[TILEC_MAX_RANK];
    const tilec_type *xt = lower_ty(L, x);
    lower_map_bcast(xt, t->rank, idx, sub);
    return lower_walk(L, x, sub, y && lower_same_shape(xt, t), y, EMIT);
}

const char *lower_run_mask(lw *L, const tilec_expr *mask, const tilec_type *t, int vax, int q, int how, const lay *y)
{
    const char *qidx[TILEC_MAX_RANK];
    lower_run_idx(L, t, vax, q, how, qidx);
    const char *m = lower_walk_at(L, mask, t, qidx, y);
    lower_run_done(L);
    return m;
}

/* The C literal of the minimum of i32 or i64, as an expression. */
static const char *min_lit(int wide) { return wide ? "(-9223372036854775807LL - 1)" : "-2147483647 - 1"; }

/* A bound check of element q > 0 of the open run: `i < n` or `n > i`
 * (`<=`, `>=`) of i32 or i64 operands, i affine along the run with
 * stride s > 0 (axinfo.c) and n constant along it. With d = s * q,
 * i(q) = i(0) + d, so `i(q) < n` is `i(0) < n - d` and `i(q) <= n` is
 * `i(0) < n - (d - 1)`; the subtraction saturates at the type's minimum
 * (where n - d would wrap, i(0) + d < n is false, and so is i(0) < MIN).
 * Every element then compares one index with a bound that is the same
 * for every thread (a kernel parameter's n - d is computed once), where
 * i(0) + q, i(0) + 2q, ... are each a register live as long as the masks
 * are (issue 31: the [ROWS, BLOCK] layernorm at 41 registers, 39 so).
 * NULL when the check is not of that form. */
const char *lower_run_bound(lw *L, const tilec_expr *e, const tilec_type *ta, const char *const *idx, int same,
                            const lay *cur)
{
    int op = e->op;
    if (!L->run_sub || !idx || (op != TILEC_OP_LT && op != TILEC_OP_GT && op != TILEC_OP_LE && op != TILEC_OP_GE) ||
        (ta->dtype != TILEC_DT_I32 && ta->dtype != TILEC_DT_I64))
        return NULL;
    const tilec_type *t = lower_ty(L, e);
    int r = -1;
    for (int k = 0; k < t->rank; k++)
        if (idx[k] == L->run_sub)
            r = k;
    if (r < 0)
        return NULL;
    int ia = op == TILEC_OP_LT || op == TILEC_OP_LE ? 0 : 1; /* the index side */
    const tilec_type *it = lower_ty(L, e->args[ia]), *nt = lower_ty(L, e->args[1 - ia]);
    int ka = r - (t->rank - it->rank), kn = r - (t->rank - nt->rank);
    int64_t s, sn;
    if ((it->dtype != TILEC_DT_I32 && it->dtype != TILEC_DT_I64) || (nt->dtype != TILEC_DT_I32 && nt->dtype != TILEC_DT_I64) ||
        ka < 0 || it->dims[ka] == 1 || !lower_stride(L, e->args[ia], ka, &s) || s <= 0 || s > 65536)
        return NULL;
    if (kn >= 0 && nt->dims[kn] != 1 && !(lower_stride(L, e->args[1 - ia], kn, &sn) && sn == 0))
        return NULL;
    /* an i32 bound beside a 64-bit index stays: ptxas compares the two
     * widened i32s in 32 bits, where n - q in 64 bits would cost a
     * register pair (tests/forms/i64_bounds.tile's copies: 183 -> 208) */
    if (ta->dtype == TILEC_DT_I64 && nt->dtype != TILEC_DT_I64)
        return NULL;
    const char *base[TILEC_MAX_RANK];
    for (int k = 0; k < t->rank; k++)
        base[k] = k == r ? L->run_base : idx[k];
    const char *i0 = lower_walk_arg(L, e, ia, ta, base, same, cur);
    const char *n = lower_walk_arg(L, e, 1 - ia, ta, idx, same, cur);
    int wide = ta->dtype == TILEC_DT_I64;
    long long d = (long long)(s * L->run_q) - (op == TILEC_OP_LE || op == TILEC_OP_GE); /* i(0) < n - d */
    long long lo = (wide ? INT64_MIN : INT32_MIN) + d;                                   /* n - d wraps below */
    const char *nd = !d ? n : lower_fmt(L, "(%s >= %lld%s ? %s - %lld%s : %s)", n, lo, wide ? "LL" : "", n, d, wide ? "LL" : "", min_lit(wide));
    return lower_wrap(L, ia ? lower_fmt(L, "(%s > %s)", nd, i0) : lower_fmt(L, "(%s < %s)", i0, nd), t->dtype);
}
