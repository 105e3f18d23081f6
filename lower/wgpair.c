/* wgpair.c: two program tiles along N a block of the persistent sm_90a
 * twin (wgmma.c). A user's 128 x 128 tile runs its wgmma as m64n128k16,
 * which reads twice the shared memory per product of m64n256k16, and
 * loads A once per 128 columns of C. When the program's tiles along N
 * are a grid axis a, 1 or 2 (B's N index is pid(a) * BN + ..., nothing
 * that A, the K loop or the batch reads depends on pid(a): pid(1) in a
 * plain or pid(2)-batched product, pid(2) in a head's, whose batch is
 * pid(1)), the twin runs the tiles pid(a) = 2j and 2j + 1 in one block:
 * one stage holds A once and B's 2 * BN columns, one m64(2BN)k16 wgmma a
 * k16 step writes both tiles' accumulators (its first BN / 2 registers a
 * thread are the first tile's fragments, the rest the second's, in the
 * same layout), and the statements after the loop run once per tile, the
 * second time with the lets before the loop again at pid(a) + 1 and the
 * second accumulator; a second tile past the program's grid (an odd
 * grid) is computed and not stored. The block walks the pairs of the
 * persistent grid (tilec_tma_meta.persistent 2 along y, 4 along z).
 * docs/lowering.md, "Two N tiles a block", says which twins take it and
 * what it measured. */
#include <string.h>

#include "lower/lower_internal.h"

enum { WP_MAX_N = 256, WP_MIN_STAGES = 3, WP_MIN_DEPTH = 256, WP_M = 64 };

/* The one `let name = value` of the kernel's body before `loop` or of
 * the loop's body, when name is let once (and, `fixed`, never assigned):
 * its value. */
static const tilec_expr *let_of(const lw *L, const char *name, const tilec_stmt *loop, int fixed)
{
    for (int i = 0; fixed && i < L->nassigned; i++)
        if (!strcmp(L->assigned[i], name))
            return NULL;
    const tilec_expr *v = NULL;
    int n = 0;
    const tilec_block *bs[2] = {&L->k->body, &loop->body};
    for (int j = 0; j < 2; j++)
        for (uint32_t i = 0; i < bs[j]->nstmts && bs[j]->stmts[i] != loop; i++) {
            const tilec_stmt *s = bs[j]->stmts[i];
            if (s->kind == TILEC_ST_LET && !strcmp(s->names[0], name))
                v = s->value, n++;
        }
    return n == 1 ? v : NULL;
}

/* A name that is the same in both tiles of a pair: the loop variable, a
 * parameter never assigned, a hint or constant. */
static int tile_invariant_name(lw *L, const char *name, const tilec_stmt *loop)
{
    int64_t v;
    if (!strcmp(name, loop->names[0]) || lower_hint_value(L, name, &v))
        return 1;
    for (int i = 0; i < L->nassigned; i++)
        if (!strcmp(L->assigned[i], name))
            return 0;
    for (uint32_t i = 0; i < L->k->nparams; i++)
        if (!strcmp(L->k->params[i].name, name))
            return 1;
    return 0;
}

/* The first element of expression e (a scalar, or an index tile through
 * broadcasts, casts and lets) as a * pid(ax) + b with b the same for every
 * pid(ax): 1 and *a, or 0 when e may read pid(ax) another way (a product
 * or quotient of it, a name this cannot follow). */
static int pid_affine(lw *L, const tilec_expr *e, const tilec_stmt *loop, int ax, int64_t *a, int depth)
{
    int64_t c, a1;
    *a = 0;
    e = lower_look(L, e);
    if (!e || depth > 64)
        return 0;
    if (e->kind == TILEC_EX_NAME) {
        const tilec_expr *v = let_of(L, e->name, loop, 1);
        return v ? pid_affine(L, v, loop, ax, a, depth + 1) : tile_invariant_name(L, e->name, loop);
    }
    if (tilec_is_builtin(e, BI_PID) && e->nargs == 1 && !lower_const_int(L, e->args[0], &c)) {
        *a = c == ax;
        return 1;
    }
    if (tilec_is_builtin(e, BI_CAST) && e->nargs >= 1)
        return pid_affine(L, e->args[0], loop, ax, a, depth + 1);
    if (e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG) {
        int ok = pid_affine(L, e->args[0], loop, ax, a, depth + 1);
        *a = -*a;
        return ok;
    }
    if (e->kind == TILEC_EX_BINARY && (e->op == TILEC_OP_ADD || e->op == TILEC_OP_SUB)) {
        if (!pid_affine(L, e->args[0], loop, ax, a, depth + 1) || !pid_affine(L, e->args[1], loop, ax, &a1, depth + 1))
            return 0;
        *a = e->op == TILEC_OP_ADD ? *a + a1 : *a - a1;
        return 1;
    }
    if (e->kind == TILEC_EX_BINARY && e->op == TILEC_OP_MUL)
        for (int i = 0; i < 2; i++)
            if (!lower_const_int(L, e->args[i], &c)) {
                int ok = pid_affine(L, e->args[1 - i], loop, ax, a, depth + 1);
                *a *= c;
                return ok;
            }
    /* anything else (an index tile's broadcast, range, a product of two
     * variables, cdiv, min, ...): the same in both tiles if no operand reads
     * pid(ax); a broadcast x[None, :] keeps x's coefficient */
    int keep = e->kind == TILEC_EX_INDEX;
    for (uint32_t i = 0; i < e->nargs; i++) {
        if (!pid_affine(L, e->args[i], loop, ax, &a1, depth + 1) || (a1 && !(keep && i == 0)))
            return 0;
        if (keep && i == 0)
            *a = a1;
    }
    return 1;
}

/* Does e have pid(ax) coefficient `want` and no other dependence on it? */
static int pid_is(lw *L, const tilec_expr *e, const tilec_stmt *loop, int ax, int64_t want)
{
    int64_t a;
    return !e || (pid_affine(L, e, loop, ax, &a, 0) && a == want);
}

int lower_wg_pid_free(lw *L, const tilec_expr *e, const tilec_stmt *loop, int ax) { return pid_is(L, e, loop, ax, 0); }

/* Does e + add (add maybe NULL) have pid(ax) coefficient `want` and no other dependence on it? */
static int pid_sum_is(lw *L, const tilec_expr *e, const tilec_expr *add, const tilec_stmt *loop, int ax, int64_t want)
{
    int64_t a, b = 0;
    return pid_affine(L, e, loop, ax, &a, 0) && (!add || pid_affine(L, add, loop, ax, &b, 0)) && a + b == want;
}

/* Why the tiles pid(a) = 2j and 2j + 1 of plan w cannot share a block,
 * or NULL; a (w->pax) the grid axis of B's N index: 1, or 2 (a head's
 * product: the batch in pid(1), the N tiles in pid(2)). */
static const char *pair_why(lw *L, const tilec_stmt *loop, const char *acc, wg_plan *w)
{
    if (2 * w->N > WP_MAX_N)
        return lower_fmt(L, "N tile %lld: two would pass wgmma's N of %d", (long long)w->N, WP_MAX_N);
    if (!w->persist_ok)
        return "a statement after the loop can return (no persistent grid)";
    const tilec_expr *init = let_of(L, acc, loop, 0);
    if (!init || !tilec_is_builtin(init, BI_ZEROS))
        return lower_fmt(L, "the accumulator %s does not start as zeros", acc);
    /* B's N index: pid(a) * N + ..., so tile 2j + 1's columns follow 2j's */
    const tilec_expr *bn = w->bk ? w->R[1] : w->C[1], *bkx = w->bk ? w->C[1] : w->R[1];
    /* with the scalars the pointers add to the coordinates (lower_ptraff.add) */
    const tilec_expr *bna = w->bk ? w->Ra[1] : w->Ca[1], *bka = w->bk ? w->Ca[1] : w->Ra[1];
    int a = 0;
    for (int x = 1; x <= 2 && !a; x++)
        if (pid_sum_is(L, bn, bna, loop, x, w->N))
            a = x;
    if (!a)
        return lower_fmt(L, "B's N index is neither pid(1) * %lld nor pid(2) * %lld plus what does not read that pid",
                         (long long)w->N, (long long)w->N);
    w->pax = a;
    if (!pid_is(L, w->Ra[0], loop, a, 0) || !pid_is(L, w->Ca[0], loop, a, 0) || !pid_is(L, bka, loop, a, 0) ||
        !pid_is(L, w->R[0], loop, a, 0) || !pid_is(L, w->C[0], loop, a, 0) || !pid_is(L, bkx, loop, a, 0) ||
        !pid_is(L, w->Z[0], loop, a, 0) || !pid_is(L, w->Z[1], loop, a, 0))
        return lower_fmt(L, "A's tile, the K index or the batch reads pid(%d)", a);
    if (!pid_is(L, loop->lo, loop, a, 0) || !pid_is(L, loop->hi, loop, a, 0) || !pid_is(L, loop->step, loop, a, 0))
        return lower_fmt(L, "the loop's bounds read pid(%d)", a);
    if (!lower_wg_pair_deep(w, w->pair_S))
        return lower_fmt(L, "%d stages of %lld KiB fit", w->pair_S, (long long)(w->pair_stage_bytes / 1024));
    return NULL;
}

int lower_wg_pair_deep(const wg_plan *w, int S) { return S >= WP_MIN_STAGES && S * w->K >= WP_MIN_DEPTH; }

void lower_wg_pair_note(lw *L, const tilec_stmt *loop, const char *acc, wg_plan *w)
{
    w->pair_ok = 0;
    w->pax = 1;
    w->pair_stage_bytes = (w->M + 2 * w->N) * w->K * (int64_t)w->maps[0].elem_bytes;
    w->pair_S = lower_wg_ring_stages(w, w->pair_stage_bytes);
    if (w->N == WP_MAX_N)
        return; /* the widest wgmma already: nothing to say */
    lower_bind_loop_scope(L, loop);
    const char *why = pair_why(L, loop, acc, w);
    lower_leave(L);
    w->pair_ok = !why;
    w->how = why ? lower_fmt(L, "%s, one N tile a block (not two: %s)", w->how, why)
                 : lower_fmt(L, "%s, two N tiles a block on a persistent grid (pid(%d) 2j and 2j + 1: m64n%lld wgmma, "
                                "%d stages)",
                             w->how, w->pax, (long long)(2 * w->N), w->pair_S);
}

int64_t lower_wg_n(const wg_plan *w) { return w->pair ? 2 * w->N : w->N; }

void lower_wg_pair_acc(lw *L, const char *acc)
{
    L->tw.acc = acc;
    if (!L->tw.plan.pair || L->tw.role != 2)
        return;
    lower_line(L, "float tl_acc1[%lld]; /* the second N tile's accumulator (pid(%d) + 1) */",
               (long long)(L->tw.plan.N / 2), L->tw.plan.pax);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_j = 0; tl_j < %lld; ++tl_j)", (long long)(L->tw.plan.N / 2));
    lower_line(L, "    tl_acc1[tl_j] = 0.0f;");
}

int lower_wg_early_words(const val *v) { return tilec_dtype_size(v->ty.dtype) == 2 && v->ly.E % 2 == 0; }

void lower_wg_early_copy(strbuf *out, const char *ind, const val *v, const char *dst, const char *src)
{
    int w = lower_wg_early_words(v); /* 32-bit words: no half split out before the loop */
    sb_printf(out, "%s#pragma unroll\n%sfor (int tl_j = 0; tl_j < %d; ++tl_j)\n", ind, ind, w ? v->ly.E / 2 : v->ly.E);
    if (w)
        sb_printf(out, "%s    ((unsigned int *)%s)[tl_j] = ((const unsigned int *)%s)[tl_j];\n", ind, dst, src);
    else
        sb_printf(out, "%s    %s[tl_j] = %s[tl_j];\n", ind, dst, src);
}

void lower_wg_pair_open(strbuf *out, const char *ind, int a, const char *what)
{
    sb_printf(out,
              "%s{ /* %s: pid(%d) + 1, when the program's grid has it */\n"
              "%sconst int tl_pidn = tl_pid%d + 1;\n"
              "%sif (tl_pidn < tl_grid%d) {\n"
              "%sconst int tl_pid%d = tl_pidn;\n"
              "%s(void)tl_pid%d;\n",
              ind, what, a, ind, a, ind, a, ind, a, ind, a);
}

void lower_wg_pair_epilogue(strbuf *tu, const lw *C)
{
    const char *cb = sb_str((strbuf *)&C->out);
    lower_wg_add_consumers(tu, cb, C->tw.epi, C->tw.epi, C->tw.end, C->nt);
    lower_wg_pair_open(tu, "        ", C->tw.plan.pax, "the second N tile of the pair");
    lower_wg_add_consumers(tu, cb, C->tw.body, C->tw.body, C->tw.pre, C->nt);
    sb_printf(tu, "        #pragma unroll\n"
                  "        for (int tl_j = 0; tl_j < %lld; ++tl_j)\n"
                  "            %s[tl_j] = tl_acc1[tl_j];\n",
              (long long)(C->tw.plan.N / 2), C->tw.acc);
    for (int i = 0; i < C->tw.nearly; i++) { /* its early tiles (wgmma.c, early_pair), as they were copied */
        const val *v = C->tw.early[i].v;
        char n1[128];
        snprintf(n1, sizeof n1, "%s_n1", v->c);
        lower_wg_early_copy(tu, "        ", v, v->c, n1);
    }
    lower_wg_add_consumers(tu, cb, C->tw.epi, C->tw.epi, C->tw.end, C->nt);
    sb_puts(tu, "        }\n        }\n");
}

/* ---- two M tiles a block: one a consumer warp group ---- */

/* Why the tiles pid(0) = 2i and 2i + 1 of plan w (BM = 64) cannot share
 * a block, one a consumer warp group, or NULL. */
static const char *mpair_why(lw *L, const tilec_stmt *loop, const char *acc, const wg_plan *w)
{
    if (!w->persist_ok)
        return "a statement after the loop can return (no persistent grid)";
    const tilec_expr *init = let_of(L, acc, loop, 0);
    if (!init || !tilec_is_builtin(init, BI_ZEROS))
        return lower_fmt(L, "the accumulator %s does not start as zeros", acc);
    /* A's M index (its map's rows, or columns when A is MN-major): pid(0) * 64 + ..., so tile 2i + 1's rows
     * follow 2i's in one box of 128 */
    int mc = w->amn;
    if (!pid_sum_is(L, mc ? w->C[0] : w->R[0], mc ? w->Ca[0] : w->Ra[0], loop, 0, w->M))
        return lower_fmt(L, "A's M index is not pid(0) * %lld plus what does not read pid(0)", (long long)w->M);
    if (!pid_is(L, mc ? w->R[0] : w->C[0], loop, 0, 0) || !pid_is(L, mc ? w->Ra[0] : w->Ca[0], loop, 0, 0) ||
        !pid_is(L, w->R[1], loop, 0, 0) || !pid_is(L, w->C[1], loop, 0, 0) || !pid_is(L, w->Ra[1], loop, 0, 0) ||
        !pid_is(L, w->Ca[1], loop, 0, 0) || !pid_is(L, w->Z[0], loop, 0, 0) || !pid_is(L, w->Z[1], loop, 0, 0))
        return "B's tile, the K index or the batch reads pid(0)";
    if (!pid_is(L, loop->lo, loop, 0, 0) || !pid_is(L, loop->hi, loop, 0, 0) || !pid_is(L, loop->step, loop, 0, 0))
        return "the loop's bounds read pid(0)";
    if (!lower_wg_pair_deep(w, w->mpair_S))
        return lower_fmt(L, "%d stages of %lld KiB fit", w->mpair_S, (long long)(w->mpair_stage_bytes / 1024));
    return NULL;
}

const char *lower_wg_mpair_note(lw *L, const tilec_stmt *loop, const char *acc, wg_plan *w)
{
    w->mpair_ok = 0;
    if (w->M != WP_M || L->nwarps < 2 * w->warps || w->pair_ok)
        return NULL; /* the `warps` hint asks for one warp group, or N tiles pair already */
    w->mpair_stage_bytes = (2 * w->M + w->N) * w->K * (int64_t)w->maps[0].elem_bytes;
    w->mpair_S = lower_wg_ring_stages(w, w->mpair_stage_bytes);
    lower_bind_loop_scope(L, loop);
    const char *why = mpair_why(L, loop, acc, w);
    lower_leave(L);
    w->mpair_ok = !why;
    return why ? lower_fmt(L, ", %d consumer warps (one m64 warp group for BM = %lld) where the `warps` hint says %d, "
                              "one M tile a block (not two: %s)",
                           w->warps, (long long)w->M, L->nwarps, why)
               : lower_fmt(L, ", two M tiles a block on a persistent grid (pid(0) 2i and 2i + 1, one a consumer warp "
                              "group: the `warps` hint's %d warps; m64n%lld wgmma, %d stages)",
                           2 * w->warps, (long long)w->N, w->mpair_S);
}

int lower_wg_mpair_alone(const lw *C)
{
    const wg_plan *w = &C->tw.plan;
    return C->smem == w->ring_base + lower_wg_block(w->S, w->stage_bytes, lower_wg_staging(w));
}

void lower_wg_mpair_epilogue(strbuf *tu, const lw *C)
{
    const char *cb = sb_str((strbuf *)&C->out);
    long long n = (long long)(C->tw.plan.N / 2); /* a thread's accumulator registers: 64 x N over 128 threads */
    strbuf e;
    sb_init(&e);
    sb_printf(&e, "        { /* two M tiles a block: warp group tl_g's is pid(0) + tl_g, when the program's grid has it */\n"
                  "        const int tl_g = tl_tid >> 7, tl_pidm = tl_pid0 + tl_g;\n"
                  "        if (tl_pidm < tl_grid0) {\n"
                  "        const int tl_tidm = tl_tid & 127, tl_warpm = tl_warp & 3;\n"
                  "        float tl_accm[%lld];\n"
                  "        #pragma unroll\n"
                  "        for (int tl_j = 0; tl_j < %lld; ++tl_j)\n"
                  "            tl_accm[tl_j] = %s[tl_j];\n"
                  "        {\n"
                  "        const int tl_pid0 = tl_pidm, tl_tid = tl_tidm, tl_warp = tl_warpm;\n"
                  "        (void)tl_pid0; (void)tl_tid; (void)tl_warp;\n",
              n, n, C->tw.acc);
    /* the lets before the loop again, at this warp group's pid(0) (they declare the accumulator again) */
    lower_wg_add_consumers(&e, cb, C->tw.body, C->tw.body, C->tw.pre, C->nt);
    sb_printf(&e, "        #pragma unroll\n"
                  "        for (int tl_j = 0; tl_j < %lld; ++tl_j)\n"
                  "            %s[tl_j] = tl_accm[tl_j];\n",
              n, C->tw.acc);
    lower_wg_add_consumers(&e, cb, C->tw.epi, C->tw.epi, C->tw.end, C->nt);
    sb_puts(&e, "        }\n        }\n        }\n");
    /* each warp group meets at a named barrier of its own (1 + tl_g): the two store apart */
    const char *from = "tl_bar_consumers(", *to = "tl_bar_group(tl_g, ", *p = sb_str(&e);
    for (const char *q; (q = strstr(p, from)) != NULL; p = q + strlen(from)) {
        sb_add(tu, p, (size_t)(q - p));
        sb_puts(tu, to);
    }
    sb_puts(tu, p);
    if (e.failed)
        tu->failed = 1;
    sb_free(&e);
}
