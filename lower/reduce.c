/* reduce.c: reductions (sum, max, min, argmax, argmin). To a scalar: in the
 * thread, across the warp with shuffles, across warps through shared
 * memory. Along one axis: through shared memory, each thread reducing the
 * rows of its result elements. NaN wins max/min; ties pick the smaller
 * index. */
#include <string.h>

#include "lower/lower_internal.h"

static const char *red_identity(lw *L, const char *fn, tilec_dtype d)
{
    char c = tilec_dtype_class(d);
    if (!strcmp(fn, "sum"))
        return lower_fmt(L, "((%s)0)", lower_cctype(d));
    int isf = c == 'f';
    int mx = !strcmp(fn, "max") || !strcmp(fn, "argmax");
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
static const char *red_step(lw *L, const char *fn, const char *a, const char *b)
{
    if (!strcmp(fn, "sum"))
        return lower_fmt(L, "%s = %s + %s;", a, a, b);
    if (!strcmp(fn, "max"))
        return lower_fmt(L, "%s = tl_max(%s, %s);", a, a, b);
    return lower_fmt(L, "%s = tl_min(%s, %s);", a, a, b);
}

/* sum/max/min/argmax/argmin(x, axis) into v (scalar or tile). */
void lower_emit_reduce(lw *L, const tilec_expr *e, val *v)
{
    const char *fn = e->name;
    int arg = fn[0] == 'a';
    const char *op = arg ? (fn[3] == 'm' && fn[4] == 'a' ? "max" : "min") : fn;
    val *x = lower_operand(L, e->args[0]);
    const tilec_type *xt = &x->ty;
    tilec_dtype cd = lower_compute_dt(xt->dtype);
    const char *ct = lower_cctype(xt->dtype);
    const tilec_type *t = lower_ty(L, e);
    int axis = (int)e->args[1]->ival;
    if (e->args[1]->kind == TILEC_EX_UNARY)
        axis = -(int)e->args[1]->args[0]->ival;
    if (axis < 0)
        axis += xt->rank;
    const char *r = v->c;
    if (xt->dtype == TILEC_DT_BOOL && !strcmp(fn, "sum"))
        ct = "int", cd = TILEC_DT_I32;
    if (t->rank == 0) {
        /* all elements: in the thread, across the warp, across warps */
        const char *rt = arg ? "int" : lower_cctype(t->dtype);
        lower_line(L, "%s %s;", rt, r);
        lower_line(L, "{");
        L->ind++;
        lower_line(L, "%s tl_a = %s;", ct, red_identity(L, op, cd));
        if (arg)
            lower_line(L, "int tl_ai = 0x7fffffff;");
        lower_loop_begin(L, &x->ly);
        const char *xe = lower_ld_elem(L, lower_fmt(L, "%s[tl_j]", x->c), xt->dtype);
        if (x->ly.repl)
            lower_line(L, "if (tl_tid < %lld) {", (long long)x->ly.numel);
        else
            lower_line(L, "{");
        if (arg) {
            lower_line(L, "    const %s tl_x = %s; const int tl_xi = %s;", ct, xe, lower_linear(L, xt->rank, xt->dims, lower_idx));
            lower_line(L, "    if (tl_x %s tl_a || (tl_x == tl_a && tl_xi < tl_ai) || (tl_x != tl_x && tl_a == tl_a)) { tl_a = tl_x; tl_ai = tl_xi; }",
                 op[1] == 'a' ? ">" : "<");
        } else {
            lower_line(L, "    %s", red_step(L, op, "tl_a", xe));
        }
        lower_line(L, "}");
        lower_loop_end(L);
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_o = 16; tl_o > 0; tl_o >>= 1) {");
        if (arg) {
            lower_line(L, "    const %s tl_x = __shfl_xor_sync(0xffffffffu, tl_a, tl_o); const int tl_xi = __shfl_xor_sync(0xffffffffu, tl_ai, tl_o);", ct);
            lower_line(L, "    if (tl_x %s tl_a || (tl_x == tl_a && tl_xi < tl_ai) || (tl_x != tl_x && tl_a == tl_a)) { tl_a = tl_x; tl_ai = tl_xi; }",
                 op[1] == 'a' ? ">" : "<");
        } else {
            lower_line(L, "    const %s tl_x = __shfl_xor_sync(0xffffffffu, tl_a, tl_o);", ct);
            lower_line(L, "    %s", red_step(L, op, "tl_a", "tl_x"));
        }
        lower_line(L, "}");
        if (L->nwarps > 1) {
            uint32_t off = lower_alloc_smem(L, (int64_t)L->nwarps * 16);
            lower_line(L, "__syncthreads();");
            lower_line(L, "if (tl_lane == 0) { ((%s *)(tl_smem + %u))[tl_warp] = tl_a;%s }", ct, off,
                 arg ? lower_fmt(L, " ((int *)(tl_smem + %u))[tl_warp] = tl_ai;", off + (uint32_t)L->nwarps * 8) : "");
            lower_line(L, "__syncthreads();");
            lower_line(L, "tl_a = ((const %s *)(tl_smem + %u))[0];", ct, off);
            if (arg)
                lower_line(L, "tl_ai = ((const int *)(tl_smem + %u))[0];", off + (uint32_t)L->nwarps * 8);
            lower_line(L, "#pragma unroll");
            lower_line(L, "for (int tl_w = 1; tl_w < %d; ++tl_w) {", L->nwarps);
            lower_line(L, "    const %s tl_x = ((const %s *)(tl_smem + %u))[tl_w];", ct, ct, off);
            if (arg) {
                lower_line(L, "    const int tl_xi = ((const int *)(tl_smem + %u))[tl_w];", off + (uint32_t)L->nwarps * 8);
                lower_line(L, "    if (tl_x %s tl_a || (tl_x == tl_a && tl_xi < tl_ai) || (tl_x != tl_x && tl_a == tl_a)) { tl_a = tl_x; tl_ai = tl_xi; }",
                     op[1] == 'a' ? ">" : "<");
            } else {
                lower_line(L, "    %s", red_step(L, op, "tl_a", "tl_x"));
            }
            lower_line(L, "}");
        }
        lower_line(L, "%s = %s;", r, arg ? "tl_ai" : "tl_a");
        L->ind--;
        lower_line(L, "}");
        v->ty.dtype = arg ? TILEC_DT_I32 : lower_compute_dt(t->dtype);
        return;
    }
    /* along one axis: through shared memory */
    lower_spill(L, x);
    v->ly = lower_canon(L, t);
    lower_line(L, "%s %s[%d];", lower_ctype(t->dtype), r, v->ly.E);
    lower_loop_begin(L, &v->ly);
    const char *xi[TILEC_MAX_RANK];
    for (int i = 0, k = 0; i < xt->rank; i++)
        xi[i] = i == axis ? "tl_r" : lower_idx[k++];
    lower_line(L, "%s tl_a = %s;", ct, red_identity(L, op, cd));
    if (arg)
        lower_line(L, "int tl_ai = 0;");
    lower_line(L, "for (int tl_r = 0; tl_r < %lld; ++tl_r) {", (long long)xt->dims[axis]);
    const char *xe = lower_ld_elem(L, lower_fmt(L, "((const %s *)(tl_smem + %d))[%s]", lower_ctype(xt->dtype), x->smem,
                                    lower_linear(L, xt->rank, xt->dims, xi)),
                             xt->dtype);
    if (arg) {
        lower_line(L, "    const %s tl_x = %s;", ct, xe);
        lower_line(L, "    if (tl_r == 0 || tl_x %s tl_a || (tl_x != tl_x && tl_a == tl_a)) { tl_a = tl_x; tl_ai = tl_r; }",
             op[1] == 'a' ? ">" : "<");
    } else {
        lower_line(L, "    %s", red_step(L, op, "tl_a", xe));
    }
    lower_line(L, "}");
    lower_line(L, "%s[tl_j] = %s;", r, arg ? "tl_ai" : lower_st_elem(L, "tl_a", t->dtype));
    lower_loop_end(L);
    L->nspilled = 0; /* the next statement spills again */
    lower_line(L, "__syncthreads();");
}
