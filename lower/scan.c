/* scan.c: cumsum, cumprod, cummax, cummin and scan (a user-written
 * combine) along any axis of a tile, inclusive or exclusive, forward or
 * reverse (docs/lowering.md, "Scans").
 *
 * The operand goes to shared memory (row-major, its spill buffer). A line
 * along the axis has L elements (a power of two); min(L, 32) lanes of a
 * warp own a line, so a warp scans 32 / min(L, 32) lines at once and the
 * warps take the lines in turn. The lanes walk their line in chunks of
 * min(L, 32) consecutive elements (one conflict-free shared-memory access
 * each): an inclusive warp scan of the chunk by __shfl_up_sync within the
 * line's lanes, the carry of the chunks before it combined in front, the
 * chunk's last value shuffled to every lane as the next carry. The result
 * is written to a shared-memory buffer of its own, read back into
 * registers in the canonical layout, and that buffer is the result's
 * spill buffer.
 *
 * In registers (scan_regs), when the scan is inclusive and forward, the
 * operand's layout holds no replicated threads and the bits of the axis are
 * register and lane bits only (a row within one warp): the scan runs over
 * the bits of the axis from the lowest, Hillis-Steele style. After bit b
 * every element holds the scan of its aligned block of 2^(b+1) positions:
 * an element with bit b set combines in front the total of the lower half,
 * the value of the element with bit b clear and every lower axis bit set.
 * A register bit takes it from another register of the thread (or by a
 * shuffle from the lane with the lower axis lane bits set); a lane bit by
 * one shuffle per register group that shares the lower half's last
 * element. No shared memory, no barrier; the result keeps the operand's
 * layout. */
#include <string.h>

#include "lower/lower_internal.h"

typedef enum { SC_SUM, SC_PROD, SC_MAX, SC_MIN, SC_USER } sckind;

int lower_is_scan(const tilec_expr *e)
{
    return tilec_is_builtin_kind(e, BK_SCAN);
}

static sckind scan_kind(const tilec_expr *e)
{
    if (e->builtin == BI_SCAN)
        return SC_USER;
    return e->builtin == BI_CUMSUM    ? SC_SUM
           : e->builtin == BI_CUMPROD ? SC_PROD
           : e->builtin == BI_CUMMAX  ? SC_MAX
                                      : SC_MIN;
}

/* The identity an exclusive scan starts with (SC_USER: its init). */
static const char *scan_identity(lw *L, const tilec_expr *e, sckind k, tilec_dtype d)
{
    if (k == SC_USER) {
        const tilec_expr *init = e->args[2];
        lower_walk(L, init, NULL, 0, NULL, PREP);
        return lower_conv(L, lower_walk(L, init, NULL, 0, NULL, EMIT), lower_ty(L, init)->dtype, d);
    }
    const char *T = lower_ctype(d);
    if (k == SC_SUM || k == SC_PROD)
        return lower_fmt(L, "((%s)%d)", T, k == SC_PROD);
    int hi = k == SC_MIN;
    if (tilec_dtype_class(d) == 'f')
        return hi ? lower_inf_lit(L, d) : lower_fmt(L, "(-%s)", lower_inf_lit(L, d));
    static const char *const lo_v[] = {"0", "(-128)", "(-32768)", "(-2147483647 - 1)", "(-9223372036854775807LL - 1)",
                                       "0", "0", "0u", "0ull"};
    static const char *const hi_v[] = {"1", "127", "32767", "2147483647", "9223372036854775807LL",
                                       "255", "65535", "4294967295u", "18446744073709551615ull"};
    /* the bound of the language's type, also when index64.c widened it */
    tilec_dtype ld = e->type.dtype;
    return lower_fmt(L, "((%s)%s)", T, (hi ? hi_v : lo_v)[ld <= TILEC_DT_U64 ? ld : 0]);
}

/* The combine as a lambda tl_cmb(running, next). */
static void scan_combine(lw *L, const tilec_expr *e, sckind k, tilec_dtype d)
{
    const char *T = lower_ctype(d), *body;
    int flt = tilec_dtype_class(d) == 'f';
    switch (k) {
    case SC_SUM: body = "tl_sa + tl_sb"; break;
    case SC_PROD: body = "tl_sa * tl_sb"; break;
    case SC_MAX: body = flt ? "tl_max(tl_sa, tl_sb)" : "tl_sa > tl_sb ? tl_sa : tl_sb"; break;
    case SC_MIN: body = flt ? "tl_min(tl_sa, tl_sb)" : "tl_sa < tl_sb ? tl_sa : tl_sb"; break;
    default: { /* the user's expression, a and b bound to the lambda's parameters */
        tilec_type s = {.kind = TILEC_TY_VALUE, .dtype = d};
        L->depth++;
        lower_bind(L, e->args[3]->name, lower_newval(L, VK_SCALAR, &s, "tl_sa"));
        lower_bind(L, e->args[4]->name, lower_newval(L, VK_SCALAR, &s, "tl_sb"));
        lower_walk(L, e->args[5], NULL, 0, NULL, PREP);
        body = lower_conv(L, lower_walk(L, e->args[5], NULL, 0, NULL, EMIT), lower_ty(L, e->args[5])->dtype, d);
        lower_leave(L);
        break;
    }
    }
    lower_line(L, "auto tl_cmb = [&](const %s tl_sa, const %s tl_sb) -> %s { return %s; };", T, T, T, body);
}

static int scan_flag(const tilec_expr *e, uint32_t i) { return i < e->nargs && e->args[i]->ival; }

/* The geometry of one scan. */
typedef struct scgeo {
    int64_t len, st, numel, lanes, lpw, lines, chunks;
    int excl, rev;
    const char *T, *ident, *in; /* the element type, the identity, an element of x at tl_at */
    uint32_t ys;
} scgeo;

/* One chunk of tl_c: scanned, combined with the carry, written to ys. */
static void scan_chunk(lw *L, const scgeo *g)
{
    const char *T = g->T;
    lower_line(L, "const int tl_q = tl_c * %lld + tl_seg;", (long long)g->lanes);
    if (g->rev)
        lower_line(L, "const int tl_at = tl_base + (%lld - tl_q) * %lld;", (long long)(g->len - 1), (long long)g->st);
    else
        lower_line(L, "const int tl_at = tl_base + tl_q * %lld;", (long long)g->st);
    lower_line(L, "%s tl_v = tl_ok ? %s : (%s)0;", T, g->in, T);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_d = 1; tl_d < %lld; tl_d <<= 1) {", (long long)g->lanes);
    lower_line(L, "    const %s tl_y = __shfl_up_sync(0xffffffffu, tl_v, tl_d, %lld);", T, (long long)g->lanes);
    lower_line(L, "    if (tl_seg >= tl_d) tl_v = tl_cmb(tl_y, tl_v);");
    lower_line(L, "}");
    lower_line(L, "const %s tl_in = tl_has ? tl_cmb(tl_carry, tl_v) : tl_v;", T);
    if (g->excl) {
        lower_line(L, "const %s tl_x = __shfl_up_sync(0xffffffffu, tl_v, 1, %lld);", T, (long long)g->lanes);
        lower_line(L, "const %s tl_out = tl_seg ? (tl_has ? tl_cmb(tl_carry, tl_x) : tl_x) : (tl_has ? tl_carry : %s);",
                   T, g->ident);
    }
    lower_line(L, "if (tl_ok) ((%s *)(tl_smem + %u))[tl_at] = %s;", T, g->ys, g->excl ? "tl_out" : "tl_in");
    lower_line(L, "tl_carry = __shfl_sync(0xffffffffu, tl_in, %lld, %lld);", (long long)(g->lanes - 1),
               (long long)g->lanes);
    lower_line(L, "tl_has = true;");
}

static void scan_line_start(lw *L, const scgeo *g)
{
    lower_line(L, "const int tl_base = (tl_line / %lld) * %lld + tl_line %% %lld;", (long long)g->st,
               (long long)(g->len * g->st), (long long)g->st);
    lower_line(L, "%s tl_carry = (%s)0;", g->T, g->T);
    lower_line(L, "bool tl_has = false;");
}

/* Lines in turn over the warps, a warp (or part of one) a line. */
static void scan_by_lines(lw *L, const scgeo *g)
{
    int64_t passes = (g->lines + L->nwarps * g->lpw - 1) / (L->nwarps * g->lpw);
    lower_line(L, "for (int tl_p = 0; tl_p < %lld; ++tl_p) {", (long long)passes);
    L->ind++;
    lower_line(L, "const int tl_line = (tl_p * %d + tl_warp) * %lld + tl_lane / %lld, tl_seg = tl_lane %% %lld;",
               L->nwarps, (long long)g->lpw, (long long)g->lanes, (long long)g->lanes);
    lower_line(L, "const bool tl_ok = tl_line < %lld;", (long long)g->lines);
    scan_line_start(L, g);
    lower_line(L, "for (int tl_c = 0; tl_c < %lld; ++tl_c) {", (long long)g->chunks);
    L->ind++;
    scan_chunk(L, g);
    L->ind--;
    lower_line(L, "}");
    L->ind--;
    lower_line(L, "}");
}

/* Fewer lines than warps: G warps a line, each scanning chunks/G of it;
 * then each adds the combined totals of the parts before it (an identity
 * starts an exclusive part, so the builtin scans only). */
static void scan_by_parts(lw *L, const scgeo *g, int64_t parts)
{
    int64_t per = g->chunks / parts;
    uint32_t tot = lower_alloc_smem(L, L->nwarps * 8);
    lower_line(L, "const int tl_line = tl_warp / %lld, tl_part = tl_warp %% %lld, tl_seg = tl_lane;", (long long)parts,
               (long long)parts);
    lower_line(L, "const bool tl_ok = tl_line < %lld;", (long long)g->lines);
    scan_line_start(L, g);
    lower_line(L, "for (int tl_c = tl_part * %lld; tl_c < (tl_part + 1) * %lld; ++tl_c) {", (long long)per,
               (long long)per);
    L->ind++;
    scan_chunk(L, g);
    L->ind--;
    lower_line(L, "}");
    lower_line(L, "if (tl_ok && tl_lane == 0) ((%s *)(tl_smem + %u))[tl_warp] = tl_carry;", g->T, tot);
    lower_line(L, "__syncthreads();");
    lower_line(L, "if (tl_ok && tl_part > 0) {");
    L->ind++;
    lower_line(L, "%s tl_pre = ((const %s *)(tl_smem + %u))[tl_line * %lld];", g->T, g->T, tot, (long long)parts);
    lower_line(L, "for (int tl_g = 1; tl_g < tl_part; ++tl_g) tl_pre = tl_cmb(tl_pre, ((const %s *)(tl_smem + %u))[tl_line * %lld + tl_g]);",
               g->T, tot, (long long)parts);
    lower_line(L, "for (int tl_c = tl_part * %lld; tl_c < (tl_part + 1) * %lld; ++tl_c) {", (long long)per,
               (long long)per);
    L->ind++;
    lower_line(L, "const int tl_q = tl_c * 32 + tl_seg;");
    if (g->rev)
        lower_line(L, "const int tl_at = tl_base + (%lld - tl_q) * %lld;", (long long)(g->len - 1), (long long)g->st);
    else
        lower_line(L, "const int tl_at = tl_base + tl_q * %lld;", (long long)g->st);
    lower_line(L, "%s *tl_o = (%s *)(tl_smem + %u) + tl_at;", g->T, g->T, g->ys);
    lower_line(L, "*tl_o = tl_cmb(tl_pre, *tl_o);");
    L->ind--;
    lower_line(L, "}");
    L->ind--;
    lower_line(L, "}");
}

/* The owner of bit `bit` of the linear index in layout bits xb: 'r' with
 * *k the register bit, 'l' a lane bit, 'w' a warp bit, 0 none. */
static char scan_owner(const lbits *xb, int bit, int *k)
{
    for (*k = 0; *k < xb->nreg; ++*k)
        if (xb->reg[*k] == bit)
            return 'r';
    for (*k = 0; *k < 5; ++*k)
        if (xb->lane[*k] == bit)
            return 'l';
    for (*k = 0; *k < 5; ++*k)
        if (xb->warp[*k] == bit)
            return 'w';
    return 0;
}

/* One level of scan_regs: axis bit owned by ('r' or 'l') bit k; lrm and
 * llm the register and lane masks of the lower axis bits. */
static void scan_level(lw *L, const val *v, const char *T, char own, int k, unsigned lrm, unsigned llm)
{
    int E = v->ly.E;
    if (own == 'r' && !llm) {
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j)", E);
        lower_line(L, "    if (tl_j >> %d & 1) %s[tl_j] = tl_cmb(%s[(tl_j & ~%d) | %u], %s[tl_j]);", k, v->c, v->c, 1 << k,
                   lrm, v->c);
        return;
    }
    /* the lower half's last element is in another lane: one shuffle per
     * register holding such an element (lower axis register bits set, and a
     * register bit of the level clear) */
    unsigned rep = lrm | (own == 'r' ? 1u << k : 0);
    lower_line(L, "{");
    L->ind++;
    lower_line(L, "%s tl_t[%d];", T, E);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j)", E);
    if (own == 'r') {
        lower_line(L, "    if ((tl_j & %u) == %u) tl_t[tl_j] = __shfl_sync(0xffffffffu, %s[tl_j], tl_lane | %u);", rep, lrm,
                   v->c, llm);
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j)", E);
        lower_line(L, "    if (tl_j >> %d & 1) %s[tl_j] = tl_cmb(tl_t[(tl_j & ~%d) | %u], %s[tl_j]);", k, v->c, 1 << k, lrm,
                   v->c);
    } else {
        lower_line(L, "    if ((tl_j & %u) == %u) tl_t[tl_j] = __shfl_sync(0xffffffffu, %s[tl_j], (tl_lane & ~%d) | %u);",
                   rep, lrm, v->c, 1 << k, llm);
        lower_line(L, "if (tl_lane >> %d & 1) {", k);
        lower_line(L, "    #pragma unroll");
        lower_line(L, "    for (int tl_j = 0; tl_j < %d; ++tl_j) %s[tl_j] = tl_cmb(tl_t[tl_j | %u], %s[tl_j]);", E, v->c,
                   lrm, v->c);
        lower_line(L, "}");
    }
    L->ind--;
    lower_line(L, "}");
}

/* The scan in registers (the header comment); 0 when the layout does not
 * allow it (nothing emitted). */
static int scan_regs(lw *L, const tilec_expr *e, sckind k, int64_t axis, const scgeo *g, val *v)
{
    val *x = lower_operand(L, e->args[0]);
    if (g->excl || g->rev || x->kind != VK_MAT || lower_lay_guard(L, &x->ly))
        return 0;
    lbits xb;
    lower_lin_bits(L, &x->ly, &xb);
    if (x->ly.E != 1 << xb.nreg)
        return 0;
    int sb = 0, nb = 0;
    while ((int64_t)1 << sb < g->st)
        sb++;
    while ((int64_t)1 << nb < g->len)
        nb++;
    char own[64];
    int bitk[64];
    for (int b = 0; b < nb; b++)
        if ((own[b] = scan_owner(&xb, sb + b, &bitk[b])) != 'r' && own[b] != 'l')
            return 0;
    v->ly = x->ly;
    lower_line(L, "%s %s[%d];", g->T, v->c, x->ly.E);
    lower_line(L, "{ /* %s = %s along axis %lld in registers: %d bits of the axis, lowest first: %.*s */", v->c, e->name,
               (long long)axis, nb, nb, own);
    L->ind++;
    scan_combine(L, e, k, v->ty.dtype);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) %s[tl_j] = %s;", x->ly.E, v->c,
               lower_conv(L, lower_ld_elem(L, lower_fmt(L, "%s[tl_j]", x->c), x->ty.dtype), x->ty.dtype, v->ty.dtype));
    unsigned lrm = 0, llm = 0;
    for (int b = 0; b < nb; b++) {
        scan_level(L, v, g->T, own[b], bitk[b], lrm, llm);
        if (own[b] == 'r')
            lrm |= 1u << bitk[b];
        else
            llm |= 1u << bitk[b];
    }
    L->ind--;
    lower_line(L, "}");
    return 1;
}

void lower_emit_scan(lw *L, const tilec_expr *e, val *v)
{
    const tilec_type *t = lower_ty(L, e);
    sckind k = scan_kind(e);
    uint32_t f = k == SC_USER ? 6 : 2;
    scgeo g = {.excl = scan_flag(e, f), .rev = scan_flag(e, f + 1), .st = 1, .numel = 1};
    int64_t axis = lower_axis(L, e, 1, t->rank);
    if (L->failed)
        return;
    tilec_dtype d = lower_compute_dt(t->dtype);
    v->ty.dtype = d;
    g.T = lower_ctype(d);
    g.len = t->dims[axis];
    for (int i = 0; i < t->rank; i++)
        g.numel *= t->dims[i];
    for (int i = (int)axis + 1; i < t->rank; i++)
        g.st *= t->dims[i];
    if (scan_regs(L, e, k, axis, &g, v))
        return;
    val *x = lower_operand(L, e->args[0]);
    lower_spill(L, x, NULL);
    g.lanes = g.len < 32 ? g.len : 32;
    g.lpw = 32 / g.lanes;
    g.lines = g.numel / g.len;
    g.chunks = g.len / g.lanes;
    g.ys = lower_alloc_smem(L, g.numel * (int64_t)tilec_dtype_size(d));
    g.ident = g.excl ? scan_identity(L, e, k, d) : NULL;
    g.in = lower_conv(L, lower_ld_elem(L, lower_fmt(L, "((const %s *)(tl_smem + %d))[tl_at]", lower_ctype(x->ty.dtype), x->smem),
                                       x->ty.dtype),
                      x->ty.dtype, d);
    int64_t parts = 1; /* warps a line, when lines are fewer than warps */
    while (k != SC_USER && g.lpw == 1 && g.lines * parts * 2 <= L->nwarps && parts * 2 <= g.chunks)
        parts *= 2;
    lower_line(L, "{ /* %s = %s along axis %lld: %lld lines of %lld, %lld lanes a line, %lld warps a line */", v->c,
               e->name, (long long)axis, (long long)g.lines, (long long)g.len, (long long)g.lanes, (long long)parts);
    L->ind++;
    scan_combine(L, e, k, d);
    if (parts > 1)
        scan_by_parts(L, &g, parts);
    else
        scan_by_lines(L, &g);
    L->ind--;
    lower_line(L, "}");
    lower_line(L, "__syncthreads();");
    /* into registers, canonical; the buffer is the result's spill */
    v->ly = lower_canon(L, t);
    v->smem = (int)g.ys;
    lower_line(L, "%s %s[%d];", g.T, v->c, v->ly.E);
    lower_loop_begin(L, &v->ly);
    lower_line(L, "%s[tl_j] = ((const %s *)(tl_smem + %u))[%s];", v->c, g.T, g.ys,
               lower_linear(L, v->ly.rank, v->ly.dims, lower_idx));
    lower_loop_end(L);
}
