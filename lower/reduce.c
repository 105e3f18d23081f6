/* reduce.c: reductions (sum, prod, max, min, argmax, argmin). To a scalar: in the
 * thread, across the warp with shuffles, across warps through shared
 * memory. Along one axis: through shared memory, each thread reducing the
 * rows of its result elements. NaN wins max/min; ties pick the smaller
 * index. */
#include <string.h>

#include "lower/lower_internal.h"

static const char *red_identity(lw *L, tilec_builtin bi, tilec_dtype d)
{
    char c = tilec_dtype_class(d);
    if (bi == BI_SUM)
        return lower_fmt(L, "((%s)0)", lower_cctype(d));
    if (bi == BI_PROD)
        return lower_fmt(L, "((%s)1)", lower_cctype(d));
    int isf = c == 'f';
    int mx = bi == BI_MAX || bi == BI_ARGMAX;
    if (isf)
        return mx ? lower_fmt(L, "(-%s)", lower_inf_lit(L, d)) : lower_inf_lit(L, d);
    if (c == 'b')
        return mx ? "false" : "true";
    static const char *const lo[] = {"0", "(-128)", "(-32768)", "(-2147483647 - 1)", "(-9223372036854775807LL - 1)",
                                     "0", "0", "0u", "0ull"};
    static const char *const hi[] = {"1", "127", "32767", "2147483647", "9223372036854775807LL",
                                     "255", "65535", "4294967295u", "18446744073709551615ull"};
    return mx ? lo[d] : hi[d];
}

/* combine "a" with "b" into a for the reduction */
static const char *red_step(lw *L, tilec_builtin bi, const char *a, const char *b)
{
    if (bi == BI_SUM)
        return lower_fmt(L, "%s = %s + %s;", a, a, b);
    if (bi == BI_PROD)
        return lower_fmt(L, "%s = %s * %s;", a, a, b);
    if (bi == BI_MAX)
        return lower_fmt(L, "%s = tl_max(%s, %s);", a, a, b);
    return lower_fmt(L, "%s = tl_min(%s, %s);", a, a, b);
}

/* One reduction: its combining op, whether it carries an index, the
 * operand in registers and the type the reduction runs in. */
typedef struct red {
    const char *op;   /* "sum", "prod", "max" or "min" (the generated comments') */
    tilec_builtin bop; /* BI_SUM, BI_PROD, BI_MAX or BI_MIN */
    int arg;        /* argmax/argmin: tl_ai carries the index */
    val *x;
    const char *ct; /* C type of the accumulator tl_a */
    tilec_dtype cd;
} red;

/* Combine x (its index in tl_xi) into tl_a: the larger (smaller) wins, the
 * smaller index on ties, NaN always. */
static void combine(lw *L, const red *rd, const char *x)
{
    if (rd->arg)
        lower_line(L, "    if (tl_x %s tl_a || (tl_x == tl_a && tl_xi < tl_ai) || (tl_x != tl_x && tl_a == tl_a)) { tl_a = tl_x; tl_ai = tl_xi; }",
             rd->bop == BI_MAX ? ">" : "<");
    else
        lower_line(L, "    %s", red_step(L, rd->bop, "tl_a", x));
}

/* Each thread's elements into tl_a. */
static void reduce_thread(lw *L, const red *rd)
{
    const val *x = rd->x;
    lower_loop_begin(L, &x->ly);
    const char *xe = lower_ld_elem(L, lower_fmt(L, "%s[tl_j]", x->c), x->ty.dtype);
    const char *g = lower_lay_guard(L, &x->ly);
    if (g)
        lower_line(L, "if (%s) {", g);
    else
        lower_line(L, "{");
    if (rd->arg)
        lower_line(L, "    const %s tl_x = %s; const int tl_xi = %s;", rd->ct, xe,
                   lower_linear(L, x->ty.rank, x->ty.dims, lower_idx));
    combine(L, rd, xe);
    lower_line(L, "}");
    lower_loop_end(L);
}

/* Across the warp with shuffles. */
static void reduce_warp(lw *L, const red *rd)
{
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_o = 16; tl_o > 0; tl_o >>= 1) {");
    if (rd->arg)
        lower_line(L, "    const %s tl_x = __shfl_xor_sync(0xffffffffu, tl_a, tl_o); const int tl_xi = __shfl_xor_sync(0xffffffffu, tl_ai, tl_o);", rd->ct);
    else
        lower_line(L, "    const %s tl_x = __shfl_xor_sync(0xffffffffu, tl_a, tl_o);", rd->ct);
    combine(L, rd, "tl_x");
    lower_line(L, "}");
}

/* Across warps: one value (and index) per warp through shared memory. */
static void reduce_warps(lw *L, const red *rd)
{
    const char *ct = rd->ct;
    uint32_t off = lower_alloc_smem(L, (int64_t)L->nwarps * 16), ioff = off + (uint32_t)L->nwarps * 8;
    lower_line(L, "__syncthreads();");
    lower_line(L, "if (tl_lane == 0) { ((%s *)(tl_smem + %u))[tl_warp] = tl_a;%s }", ct, off,
         rd->arg ? lower_fmt(L, " ((int *)(tl_smem + %u))[tl_warp] = tl_ai;", ioff) : "");
    lower_line(L, "__syncthreads();");
    lower_line(L, "tl_a = ((const %s *)(tl_smem + %u))[0];", ct, off);
    if (rd->arg)
        lower_line(L, "tl_ai = ((const int *)(tl_smem + %u))[0];", ioff);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_w = 1; tl_w < %d; ++tl_w) {", L->nwarps);
    lower_line(L, "    const %s tl_x = ((const %s *)(tl_smem + %u))[tl_w];", ct, ct, off);
    if (rd->arg)
        lower_line(L, "    const int tl_xi = ((const int *)(tl_smem + %u))[tl_w];", ioff);
    combine(L, rd, "tl_x");
    lower_line(L, "}");
}

/* All elements to scalar v: in the thread, across the warp, across warps. */
static void reduce_all(lw *L, const red *rd, val *v, const tilec_type *t)
{
    const char *rt = rd->arg ? "int" : lower_cctype(t->dtype);
    lower_line(L, "%s %s;", rt, v->c);
    lower_line(L, "{");
    L->ind++;
    lower_line(L, "%s tl_a = %s;", rd->ct, red_identity(L, rd->bop, rd->cd));
    if (rd->arg)
        lower_line(L, "int tl_ai = 0x7fffffff;");
    reduce_thread(L, rd);
    reduce_warp(L, rd);
    if (L->nwarps > 1)
        reduce_warps(L, rd);
    lower_line(L, "%s = %s;", v->c, rd->arg ? "tl_ai" : lower_round(L, "tl_a", t->dtype)); /* a bf16 sum is a bf16 */
    L->ind--;
    lower_line(L, "}");
    v->ty.dtype = rd->arg ? TILEC_DT_I32 : lower_compute_dt(t->dtype);
}

/* Along `axis` into tile v: through shared memory, each thread reducing
 * the rows of its result elements. */
static void reduce_axis(lw *L, const red *rd, int axis, val *v, const tilec_type *t)
{
    val *x = rd->x;
    const tilec_type *xt = &x->ty;
    lower_line(L, "/* %s%s along axis %d through shared memory */", rd->arg ? "arg" : "", rd->op, axis);
    lower_spill(L, x, NULL);
    v->ly = lower_canon(L, t);
    lower_line(L, "%s %s[%d];", lower_ctype(t->dtype), v->c, v->ly.E);
    lower_loop_begin(L, &v->ly);
    const char *xi[TILEC_MAX_RANK];
    for (int i = 0, k = 0; i < xt->rank; i++)
        xi[i] = i == axis ? "tl_r" : lower_idx[k++];
    lower_line(L, "%s tl_a = %s;", rd->ct, red_identity(L, rd->bop, rd->cd));
    if (rd->arg)
        lower_line(L, "int tl_ai = 0;");
    lower_line(L, "for (int tl_r = 0; tl_r < %lld; ++tl_r) {", (long long)xt->dims[axis]);
    const char *xe = lower_ld_elem(L, lower_fmt(L, "((const %s *)(tl_smem + %d))[%s]", lower_ctype(xt->dtype), x->smem,
                                                lower_linear(L, xt->rank, xt->dims, xi)),
                                   xt->dtype);
    if (rd->arg) {
        lower_line(L, "    const %s tl_x = %s;", rd->ct, xe);
        lower_line(L, "    if (tl_r == 0 || tl_x %s tl_a || (tl_x != tl_x && tl_a == tl_a)) { tl_a = tl_x; tl_ai = tl_r; }",
             rd->bop == BI_MAX ? ">" : "<");
    } else {
        lower_line(L, "    %s", red_step(L, rd->bop, "tl_a", xe));
    }
    lower_line(L, "}");
    lower_line(L, "%s[tl_j] = %s;", v->c, rd->arg ? "tl_ai" : lower_st_elem(L, "tl_a", t->dtype));
    lower_loop_end(L);
    L->nspilled = 0; /* the next statement spills again */
    lower_line(L, "__syncthreads();");
}

/* Along `axis` in registers (any layout, through its map of bits): each
 * thread combines its elements of one result element, the lanes that hold
 * the axis meet with __shfl_xor_sync, and only when warps split the axis
 * one partial per warp goes through shared memory. The result is left in
 * the slice of x's layout. */
static void reduce_regs(lw *L, const red *rd, int axis, val *v, const tilec_type *t)
{
    const val *x = rd->x;
    unsigned regs, lanes, warps;
    v->ly = lower_lin_slice(L, &x->ly, axis, &regs, &lanes, &warps);
    int eo = v->ly.E;
    lbits xb;
    lower_lin_bits(L, &x->ly, &xb);
    /* the result register of input register tl_j: its bits off the axis */
    strbuf jr;
    sb_init(&jr);
    for (int k = 0, o = 0; k < xb.nreg; k++)
        if (!(regs >> k & 1))
            sb_printf(&jr, "%s((tl_j >> %d) & 1) << %d", jr.n ? " | " : "", k, o++);
    const char *jo = lower_fmt(L, "(%s)", jr.n ? sb_str(&jr) : "0");
    sb_free(&jr);
    lower_line(L, "%s %s[%d];", lower_ctype(t->dtype), v->c, eo);
    lower_line(L, "{ /* %s along axis %d in registers */", rd->op, axis);
    L->ind++;
    lower_line(L, "%s tl_r[%d];", rd->ct, eo);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) tl_r[tl_j] = %s;", eo, red_identity(L, rd->bop, rd->cd));
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) {", x->ly.E);
    lower_line(L, "    %s", red_step(L, rd->bop, lower_fmt(L, "tl_r[%s]", jo),
                                     lower_ld_elem(L, lower_fmt(L, "%s[tl_j]", x->c), x->ty.dtype)));
    lower_line(L, "}");
    for (int k = 0; k < 5; k++) {
        if (!(lanes >> k & 1))
            continue;
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) {", eo);
        lower_line(L, "    const %s tl_x = __shfl_xor_sync(0xffffffffu, tl_r[tl_j], %d);", rd->ct, 1 << k);
        lower_line(L, "    %s", red_step(L, rd->bop, "tl_r[tl_j]", "tl_x"));
        lower_line(L, "}");
    }
    if (warps) {
        /* one partial per warp along the axis: slot (axis warps, element) */
        int nw = 0, wsrc[5];
        for (int k = 0; k < 5; k++)
            if (warps >> k & 1)
                wsrc[nw++] = k;
        strbuf w;
        sb_init(&w);
        for (int i = 0; i < nw; i++)
            sb_printf(&w, "%s((tl_warp >> %d) & 1) << %d", i ? " | " : "", wsrc[i], i);
        int64_t on = v->ly.numel;
        uint32_t off = lower_alloc_smem(L, ((int64_t)1 << nw) * on * 8);
        const char *slot = lower_fmt(L, "((%s *)(tl_smem + %u))", rd->ct, off);
        const char *lin = lower_linear(L, v->ly.rank, v->ly.dims, lower_idx);
        lower_line(L, "__syncthreads();");
        lower_loop_begin(L, &v->ly);
        lower_line(L, "%s[(%s) * %lld + %s] = tl_r[tl_j];", slot, sb_str(&w), (long long)on, lin);
        lower_loop_end(L);
        sb_free(&w);
        lower_line(L, "__syncthreads();");
        lower_loop_begin(L, &v->ly);
        lower_line(L, "tl_r[tl_j] = %s[%s];", slot, lin);
        lower_line(L, "for (int tl_w = 1; tl_w < %d; ++tl_w) {", 1 << nw);
        lower_line(L, "    const %s tl_x = %s[tl_w * %lld + %s];", rd->ct, slot, (long long)on, lin);
        lower_line(L, "    %s", red_step(L, rd->bop, "tl_r[tl_j]", "tl_x"));
        lower_line(L, "}");
        lower_loop_end(L);
    }
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) %s[tl_j] = %s;", eo, v->c, lower_st_elem(L, "tl_r[tl_j]", t->dtype));
    L->ind--;
    lower_line(L, "}");
}

/* sum/prod/max/min/argmax/argmin(x, axis) into v (scalar or tile). */
void lower_emit_reduce(lw *L, const tilec_expr *e, val *v)
{
    red rd;
    tilec_builtin bi = (tilec_builtin)e->builtin;
    rd.arg = bi == BI_ARGMAX || bi == BI_ARGMIN;
    rd.bop = bi == BI_ARGMAX ? BI_MAX : bi == BI_ARGMIN ? BI_MIN : bi;
    rd.op = tilec_builtin_get(rd.bop)->name;
    rd.x = lower_operand(L, e->args[0]);
    const tilec_type *xt = &rd.x->ty;
    rd.cd = lower_compute_dt(xt->dtype);
    rd.ct = lower_cctype(xt->dtype);
    const tilec_type *t = lower_ty(L, e);
    int axis = lower_axis(L, e, 1, xt->rank);
    /* a sum of bool counts in int; an index sum or product widened to
     * 64 bits (index64.c) adds or multiplies in 64 bits */
    if ((bi == BI_SUM || bi == BI_PROD) && tilec_dtype_class(t->dtype) != 'f' && t->dtype != xt->dtype)
        rd.cd = lower_compute_dt(t->dtype), rd.ct = lower_cctype(t->dtype);
    if (t->rank == 0)
        reduce_all(L, &rd, v, t);
    else if (!rd.arg && !lower_lay_guard(L, &rd.x->ly))
        reduce_regs(L, &rd, axis, v, t);
    else
        reduce_axis(L, &rd, axis, v, t);
}
