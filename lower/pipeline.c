/* pipeline.c: software-pipelined dot loops.
 *
 * for k in lo .. hi step s { let (virtual index tiles); let a = load(...);
 * let b = load(...); acc = acc + dot(a, b); } with stages > 1 and acc in
 * tensor-core fragments (f16/bf16) or FMA register blocks (f32): the loads
 * become cp.async copies straight into a ring of `stages` shared-memory
 * buffers, issued stages-1 iterations ahead. */
#include <string.h>

#include "lower/lower_internal.h"

typedef lower_pipe_plan pipe_plan;

const tilec_expr *lower_operand_load(const tilec_block *b, const tilec_expr *e, int *tr, const char **names, int *nn)
{
    *tr = 0;
    *nn = 0;
    for (int depth = 0; e && depth < 32; depth++) {
        if (tilec_is_builtin(e, BI_LOAD))
            return e;
        if (tilec_is_builtin(e, BI_TRANS) && e->nargs == 1) {
            *tr ^= 1;
            e = e->args[0];
            continue;
        }
        if (e->kind != TILEC_EX_NAME || *nn >= LOWER_OPERAND_LETS)
            return NULL;
        const tilec_expr *v = NULL;
        for (uint32_t i = 0; i < b->nstmts && !v; i++)
            if (b->stmts[i]->kind == TILEC_ST_LET && !strcmp(b->stmts[i]->names[0], e->name))
                v = b->stmts[i]->value;
        names[(*nn)++] = e->name;
        e = v;
    }
    return NULL;
}

/* How often `name` is read in e. */
static int uses(const tilec_expr *e, const char *name)
{
    int n = e->kind == TILEC_EX_NAME && !strcmp(e->name, name);
    for (uint32_t i = 0; i < e->nargs; i++)
        n += uses(e->args[i], name);
    return n;
}

/* An f32 dot on FMA registers: both operands f32 (no conversion on the
 * way to shared memory), K a multiple of the four k one A read covers. */
static int fma_ok(lw *L, const val *acc, const tilec_expr *d)
{
    const tilec_type *at = lower_ty(L, d->args[0]), *bt = lower_ty(L, d->args[1]);
    return acc->ly.kind == LY_FMA && at->dtype == TILEC_DT_F32 && bt->dtype == TILEC_DT_F32 && at->dims[1] % 4 == 0;
}

static int pipeline_check(lw *L, const tilec_stmt *loop, pipe_plan *pp);

/* Bind the loop variable, the body's index tiles and its scalars
 * computed from indices (`let k0 = k * BK`: pure, never re-assigned,
 * no wider than declared), each computed where it is used, so a copy
 * issued for a later iteration computes them for that iteration (for
 * analysis and for the copies); undo with lower_leave(). */
void lower_bind_loop_scope(lw *L, const tilec_stmt *loop)
{
    L->depth++;
    tilec_type it = {.kind = TILEC_TY_VALUE, .dtype = TILEC_DT_I32};
    lower_bind(L, loop->names[0], lower_newval(L, VK_SCALAR, &it, lower_cname(L, loop->names[0])));
    for (uint32_t i = 0; i < loop->body.nstmts; i++) {
        const tilec_stmt *s = loop->body.stmts[i];
        if (s->kind == TILEC_ST_LET && !(tilec_is_builtin(s->value, BI_LOAD)) &&
            lower_is_virtual(L, s->value) &&
            (lower_ty(L, s->value)->rank > 0 || (!lower_in_list(L->assigned, L->nassigned, s->names[0]) &&
                                                 !lower_ix_wide_name(L, s->names[0])))) {
            val *x = lower_newval(L, VK_VIRT, lower_ty(L, s->value), lower_cname(L, s->names[0]));
            x->expr = s->value;
            lower_bind(L, s->names[0], x);
        }
    }
}

int lower_pipeline_plan(lw *L, const tilec_stmt *loop, pipe_plan *pp)
{
    lower_bind_loop_scope(L, loop);
    int ok = pipeline_check(L, loop, pp);
    lower_leave(L);
    return ok;
}

/* cp.async copies of load `e` ([R, C]) into shared memory at `dst` (a C
 * expression, bytes): row-major with row stride ld elements, or, when
 * `trans` (memory contiguous along axis 0), as [C][R] with row stride ld.
 * 16-byte chunks run along the contiguous axis. */
/* How many 16-byte chunks of load e ([R, C]) each thread copies. */
int lower_chunk_vec(lw *L, const tilec_expr *e) { return 16 / (int)tilec_dtype_size(lower_ty(L, e)->dtype); }

int lower_chunk_count(lw *L, const tilec_expr *e)
{
    const tilec_type *t = lower_ty(L, e);
    return (int)((t->dims[0] * t->dims[1] / lower_chunk_vec(L, e) + L->nt - 1) / L->nt);
}

/* Open the loop over this thread's chunks of load e: tl_q, its first
 * element tl_l, the element's row and column tl_i0, tl_i1. */
void lower_chunk_open(lw *L, const tilec_expr *e, int trans)
{
    const tilec_type *t = lower_ty(L, e);
    int64_t R = t->dims[0], C = t->dims[1], run = trans ? R : C;
    int vec = lower_chunk_vec(L, e), chunks = (int)(R * C / vec), per = lower_chunk_count(L, e);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_q = 0; tl_q < %d; ++tl_q) {", per);
    L->ind++;
    lower_line(L, "const int tl_l = (tl_q * %d + tl_tid) * %d;", L->nt, vec);
    if (per * L->nt != chunks)
        lower_line(L, "if (tl_l >= %d) break;", chunks * vec);
    if (trans)
        lower_line(L, "const int tl_i1 = tl_l / %lld, tl_i0 = tl_l %% %lld;", (long long)run, (long long)run);
    else
        lower_line(L, "const int tl_i0 = tl_l / %lld, tl_i1 = tl_l %% %lld;", (long long)run, (long long)run);
}

void lower_emit_async_load(lw *L, const tilec_expr *e, const char *dst, int ld, int trans)
{
    lower_emit_async_load_at(L, e, lower_fmt(L, "tl_smem + %s", dst), lower_smem_at(L, trans, ld), trans, 0);
}

/* The head of a chunk's copy, inside lower_chunk_open's loop: its source
 * tl_p, its place tl_d, the masks of its elements that decide it (tl_m<q>:
 * all 8 of a mask not monotone along the chunk, else its first and last),
 * and into *full and *any the C of "every element unmasked" and "some
 * element unmasked", their terms joined by `and` and `or`. mq[q]: each
 * element's mask, opened as `how` says (mask.c). Returns whether a mask
 * is there. */
static int chunk_head(lw *L, const tilec_expr *e, const char *dst, const char *at, int trans, const char *and_,
                      const char *or_, const char **mq, const char **full, const char **any, int *mono, int how)
{
    const tilec_type *t = lower_ty(L, e);
    const tilec_expr *mask = e->nargs > 1 ? e->args[1] : NULL;
    int vec = lower_chunk_vec(L, e);
    const char *sub[TILEC_MAX_RANK];
    lower_map_bcast(lower_ty(L, e->args[0]), 2, lower_idx, sub);
    const char *ptr = L->hoist ? lower_hoist_ptr(L, e->args[0], sub) : NULL;
    lower_line(L, "const %s *tl_p = %s;", lower_ctype(t->dtype), ptr ? ptr : lower_walk(L, e->args[0], sub, 0, NULL, EMIT));
    if (dst)
        lower_line(L, "%s *tl_d = (%s *)(%s) + %s;", lower_ctype(t->dtype), lower_ctype(t->dtype), dst, at);
    strbuf all, some;
    sb_init(&all);
    sb_init(&some);
    *mono = mask && lower_monotone_mask(L, mask, 2, trans ? 0 : 1);
    for (int q = 0; q < vec && mask; q++) {
        /* what only the slow path reads is not worth a register (hoist.c), nor a bound of its own (mask.c) */
        int slow = *mono && q != 0 && q != vec - 1, keep = L->hoist ? L->hoist->collect : 0;
        if (L->hoist && slow)
            L->hoist->collect = 0;
        mq[q] = lower_run_mask(L, mask, t, trans ? 0 : 1, q, slow ? LOWER_RUN_SLOW : how, NULL); /* the chunk's element q */
        if (L->hoist)
            L->hoist->collect = keep;
        /* a monotone mask needs its ends to decide; the rest only on the slow path */
        if (!*mono || q == 0 || q == vec - 1)
            lower_line(L, "const bool tl_m%d = %s;", q, mq[q]);
        if (!*mono || q == vec - 1)
            sb_printf(&all, "%stl_m%d", all.n ? and_ : "", q);
        if (!*mono || q == 0)
            sb_printf(&some, "%stl_m%d", some.n ? or_ : "", q);
    }
    *full = mask ? lower_fmt(L, "%s", sb_str(&all)) : "true";
    *any = mask ? lower_fmt(L, "%s", sb_str(&some)) : "true";
    sb_free(&all);
    sb_free(&some);
    return mask != NULL;
}

/* Element q of a 4-byte chunk by its own cp.async, `size` bytes of its
 * 4 read (4, or 0 where masked: zero fill). */
static void cp4_elem(lw *L, int q, const char *size)
{
    lower_line(L, "    asm volatile(\"cp.async.ca.shared.global [%%0], [%%1], 4, %%2;\" :: \"r\"((unsigned)__cvta_generic_to_shared(tl_d + %d)), \"l\"(tl_p + %d), \"r\"(%s));", q, q, size);
}

/* LOWER_ASYNC_ONE: a chunk that is whole or all masked takes one
 * cp.async, its source size 16 or 0 (zero fill), so the copy that issues
 * most (the gather twin's producer, wggather.c) has one branch a chunk,
 * not two. LOWER_ASYNC_OWN: the chunk's elements are checked at their
 * own indices, not against element 0's (the mask rule's bound K - 3 cost
 * the f32 FMA loop's [N][K] ring a tenth of its FFMAs' register banks). */
void lower_emit_async_load_at(lw *L, const tilec_expr *e, const char *dst, const char *at, int trans, int how)
{
    int one = how & LOWER_ASYNC_ONE;
    const tilec_type *t = lower_ty(L, e);
    int vec = lower_chunk_vec(L, e), mono;
    lower_chunk_open(L, e, trans);
    const char *mq[8], *full, *any;
    int mask = chunk_head(L, e, dst, at, trans, " && ", " || ", mq, &full, &any, &mono,
                          LOWER_RUN_CHUNK | (how & LOWER_ASYNC_OWN ? LOWER_RUN_OWN : 0));
    if (mask && one) {
        lower_line(L, "const bool tl_w = (%s) && ((unsigned long long)tl_p & 15) == 0;", full);
        lower_line(L, "if (tl_w || !(%s)) {", any);
        lower_line(L, "    tl_cp16(tl_d, tl_p, tl_w ? 16 : 0); /* whole, or zero fill */");
    } else {
        lower_line(L, "if ((%s) && ((unsigned long long)tl_p & 15) == 0) {", full);
        lower_line(L, "    tl_cp16(tl_d, tl_p, 16);");
    }
    /* 4-byte elements off the ring's thread (not the gather producer's,
     * whose mbarrier release covers plain stores): a partial or misaligned
     * chunk takes one 4-byte cp.async an element, zero-filled where masked,
     * so the copy stays asynchronous (an f32 NCHW convolution's A, shifted
     * by the filter tap, is misaligned at two of three taps:
     * examples/conv2d_f32.tile) */
    int cp4 = !one && tilec_dtype_size(t->dtype) == 4;
    if (mask) {
        if (!one) {
            lower_line(L, "} else if (!(%s)) {", any);
            lower_line(L, "    tl_cp16(tl_d, tl_p, 0); /* zero fill */");
        }
        lower_line(L, "} else {");
        for (int q = 0; q < vec; q++) {
            const char *m = !mono || q == 0 || q == vec - 1 ? lower_fmt(L, "tl_m%d", q) : lower_fmt(L, "(%s)", mq[q]);
            if (cp4)
                cp4_elem(L, q, lower_fmt(L, "%s ? 4 : 0", m));
            else
                lower_line(L, "    tl_d[%d] = %s ? tl_p[%d] : %s;", q, m, q, lower_st_elem(L, "0.0f", t->dtype));
        }
    } else {
        lower_line(L, "} else {");
        for (int q = 0; q < vec; q++)
            if (cp4)
                cp4_elem(L, q, "4");
            else
                lower_line(L, "    tl_d[%d] = tl_p[%d];", q, q);
    }
    lower_line(L, "}");
    L->ind--;
    lower_line(L, "}");
}

/* The gather producer's copies of load e in two halves (wggather.c), so
 * that no branch separates one chunk's arithmetic from the next and ptxas
 * can interleave them: lower_emit_async_prep computes every chunk's
 * source, its place (a shared-memory address: sdst, a 32-bit expression,
 * plus `at` elements) and whether it is whole, into registers tl_xp<n>,
 * tl_xd<n>, tl_xw<n>, and tl_xf<n>: every chunk whole or all masked (the
 * conditions joined by & and |: predicates, no branch);
 * lower_emit_async_issue then copies them, one cp.async a chunk with no
 * branch between. The caller takes that where tl_xf<n>, else
 * lower_emit_async_load_at's per-chunk path (a partial or misaligned
 * chunk), which recomputes all (so nothing of the first half stays live
 * through it: the producer's 56 or 64 registers). Only where the chunks
 * divide evenly among the threads (else prep returns 0 and emits
 * nothing: the caller takes the per-chunk path alone). */
int lower_emit_async_prep(lw *L, const tilec_expr *e, const char *sdst, const char *at, int n)
{
    const tilec_type *t = lower_ty(L, e);
    int vec = lower_chunk_vec(L, e), per = lower_chunk_count(L, e), mono;
    if ((int64_t)per * L->nt * vec != t->dims[0] * t->dims[1])
        return 0;
    const char *ct = lower_ctype(t->dtype);
    lower_line(L, "const %s *tl_xp%d[%d];", ct, n, per);
    lower_line(L, "unsigned tl_xd%d[%d];", n, per);
    lower_line(L, "bool tl_xw%d[%d], tl_xf%d = true;", n, per, n);
    lower_chunk_open(L, e, 0);
    const char *mq[8], *full, *any;
    /* each element's own index: against the bound less 7, ptxas no longer
     * issued variant 4's eight copies back to back (test_wgconv
     * the_copies_issue_in_two_halves: 2), docs/lowering.md "The mask rule" */
    int mask = chunk_head(L, e, NULL, at, 0, " & ", " | ", mq, &full, &any, &mono, LOWER_RUN_SLOW);
    lower_line(L, "tl_xp%d[tl_q] = tl_p;", n);
    lower_line(L, "tl_xd%d[tl_q] = %s + (unsigned)(%s) * %du;", n, sdst, at, (int)tilec_dtype_size(t->dtype));
    lower_line(L, "tl_xw%d[tl_q] = (%s) & (((unsigned long long)tl_p & 15) == 0);", n, full);
    if (mask)
        lower_line(L, "tl_xf%d = tl_xf%d & (tl_xw%d[tl_q] | !(%s));", n, n, n, any);
    else
        lower_line(L, "tl_xf%d = tl_xf%d & tl_xw%d[tl_q];", n, n, n);
    L->ind--;
    lower_line(L, "}");
    return 1;
}

void lower_emit_async_issue(lw *L, const tilec_expr *e, int n)
{
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_q = 0; tl_q < %d; ++tl_q)", lower_chunk_count(L, e));
    lower_line(L, "    asm volatile(\"cp.async.cg.shared.global [%%0], [%%1], 16, %%2;\" :: \"r\"(tl_xd%d[tl_q]), "
                  "\"l\"(tl_xp%d[tl_q]), \"r\"(tl_xw%d[tl_q] ? 16 : 0));", n, n, n);
}

/* The ring of shared-memory buffers: `stages` tiles of A and of B. */
typedef struct ring {
    int S;
    uint32_t sa, sb;        /* byte offsets of the rings */
    int64_t abytes, bbytes; /* bytes of one tile */
    int lda, ldb;           /* row strides in elements, padded by 16 bytes */
    int64_t K;
    int at; /* FMA: A stored [K][M] with rows of lda elements */
    int bt; /* tensor cores: B is trans of a [N, K] load, stored as loaded, [N][K] with rows of ldb elements */
    int cp[2]; /* how operand i's load is copied (LOWER_CP_*; FMA: see fma_kc_ok) */
    int swa, swb; /* FMA: the swizzle unit of A's and B's 4-byte copies (lower_at_sw), 0: none */
    int bnk; /* FMA: B contiguous along K, stored as loaded, [N][K] rows of K, swizzled (fma_bnk_ok) */
} ring;

/* FMA loops read both operands K-major from their rings, A as [K][M] and
 * B as [K][N], so that one 16-byte read brings four rows of A, or four
 * columns of B, at one k (see lower_emit_fma_kloop), whichever way the
 * operands lie in memory: x @ W and x @ W.T run the same inner loop. An
 * operand whose load is contiguous along M or N (A^T stored [K, M], B
 * stored [K, N]) is copied as it is, 16 bytes a cp.async. One contiguous
 * along K (A stored [M, K], W of x @ W.T stored [N, K]: its load is
 * [rows, K], `trans` of it the operand) is transposed by the copies: 4
 * bytes each (cp.async.ca; zero-filled when masked, no branch), a warp
 * covering 4 rows by 8 k (lower_at_kw): one whole 32-byte sector of each
 * of 4 rows in global memory, and with rows of the ring 4 (mod 32)
 * elements apart, 32 distinct banks in shared memory. A K tile that is
 * not a multiple of 8 takes 8 rows by 4 k, rows 8 (mod 32) apart (half
 * sectors of 8 rows: twice the L1 requests a copy); a K tile of whole
 * 128-byte lines takes one row by 32 k, in a swizzled ring (lower_at_kw,
 * lower_at_open, dot.c's fma_sw). The same holds with
 * the load's axes the other way round ([K, rows] contiguous along K: x @ W
 * with W's tile loaded by strides as [K, N], its K axis the contiguous
 * one): the copies are the same, only which index is the row changes
 * (lower_at_open). fma_kax: the K axis of load i; fma_kc_ok: may it be
 * copied so? */
static int fma_kax(const pipe_plan *pp, int i) { return i ? pp->tr[1] : !pp->tr[0]; }

static int fma_kc_ok(lw *L, const pipe_plan *pp, int i)
{
    const tilec_type *t = lower_ty(L, pp->load[i]);
    int kax = fma_kax(pp, i), kw = lower_at_kw(L, pp->load[i], kax);
    int64_t R = t->dims[1 - kax], K = t->dims[kax];
    return pp->acc->ly.kind == LY_FMA && (i || pp->acc->ly.tm % 4 == 0) && L->nt % 32 == 0 && R % (32 / kw) == 0 &&
           K % kw == 0 && (R * K) % L->nt == 0;
}

/* B contiguous along K (x @ W.T: W stored [N, K]) without transposing
 * copies: its tile is copied as it lies, 16 bytes a cp.async (the copies
 * of x @ W's B, along the other axis), into a ring of [N][K] rows of K
 * (no padding) whose 16-byte chunks are swizzled: element (n, k) at
 * (n * K + k) ^ ((n / 4) % 8) * 4 (lower_fma_bnk_at). The FMA loop reads
 * four k of one of the thread's columns a 16-byte read (dot.c,
 * fma_bnk_reads): per four k TN such reads and four times A's TM / 4, as
 * x @ W's loop reads per four k, and the eight threads of a quarter warp
 * (columns 4 apart, n / 4 consecutive) hit eight distinct 16-byte bank
 * groups. Needs the thread's columns in runs of 4 (the FMA layout's
 * FMA_QUAD) and K a multiple of 8 (then n * K has no bit the swizzle
 * flips for n a multiple of 4, which the read splits off). The hint
 * `transpose_b = 1` keeps the transposing 4-byte copies instead (a
 * variant the tuner may time against this one: docs/language.md). */
static int fma_bnk_ok(lw *L, const pipe_plan *pp)
{
    const tilec_type *t = lower_ty(L, pp->load[1]);
    int kax = fma_kax(pp, 1);
    int64_t K = t->dims[kax];
    return pp->acc->ly.kind == LY_FMA && pp->cax[1] == kax && pp->acc->ly.run == FMA_QUAD && K % 8 == 0 &&
           tilec_kernel_hint(L->k, L->variant, "transpose_b", 0) <= 0;
}

const char *lower_fma_bnk_at(lw *L, const char *n, const char *k, int64_t K)
{
    return lower_fmt(L, "((%s * %lld + %s) ^ (((%s / 4) %% 8) * 4))", n, (long long)K, k, n);
}

/* The least stride >= n that is 32 / kw (mod 32) elements: the rows of a
 * ring filled by the transposing copies, a warp's kw k apart on distinct
 * banks (fma_kc_ok). */
static int ld_kc(int64_t n, int kw)
{
    int m = kw >= 8 ? 4 : 8;
    return (int)(n + ((m - n) % 32 + 32) % 32);
}

/* A name bound to a computed-where-used value (a `let` of an index,
 * mask or pointer tile, or of a scalar in a pipelined loop): its
 * expression, followed through further such names; any other e as is. */
const tilec_expr *lower_look(lw *L, const tilec_expr *e)
{
    for (int depth = 0; e && e->kind == TILEC_EX_NAME && depth < 32; depth++) {
        val *v = lower_lookup(L, e->name);
        if (!v || v->kind != VK_VIRT || !v->expr)
            break;
        e = v->expr;
    }
    return e;
}

/* Is e zero however it is spelt: 0, 0.0, -0.0, a hint or constant that
 * is 0, cast(zero, T), a name let to one of those? */
int lower_is_zero(lw *L, const tilec_expr *e)
{
    e = lower_look(L, e);
    int64_t v;
    if (!e || e->kind == TILEC_EX_BOOL)
        return 0;
    if (e->kind == TILEC_EX_FLOAT)
        return e->fval == 0.0;
    if (e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG)
        return lower_is_zero(L, e->args[0]);
    if (tilec_is_builtin(e, BI_CAST) && e->nargs >= 1)
        return lower_is_zero(L, e->args[0]);
    const tilec_type *t = lower_ty(L, e);
    return t->rank == 0 && !t->ptr && lower_const_int(L, e, &v) == 0 && v == 0;
}

int lower_stages(lw *L, int64_t stage_bytes)
{
    int64_t h = tilec_kernel_hint(L->k, L->variant, "stages", 0);
    if (h > 0)
        return (int)h;
    int64_t base = ((int64_t)L->smem + 15) & ~(int64_t)15;
    for (int S = L->stages_cap ? L->stages_cap : LOWER_STAGES_MAX; S >= 2; S--)
        if (base + S * stage_bytes <= SMEM_LIMIT) {
            if (S > L->stages_auto)
                L->stages_auto = S;
            return S;
        }
    return 1;
}

/* The geometry of a pipelined loop's ring (r->S left to the caller). */
static void ring_geometry(lw *L, const pipe_plan *pp, ring *r)
{
    const tilec_type *at = lower_ty(L, pp->load[0]), *bt = lower_ty(L, pp->load[1]);
    int64_t M = at->dims[pp->tr[0] ? 1 : 0], K = at->dims[pp->tr[0] ? 0 : 1], N = bt->dims[pp->tr[1] ? 0 : 1];
    int es = (int)tilec_dtype_size(at->dtype), pad = 16 / es;
    int bpad = pp->acc->ly.kind == LY_MMA && es == 4 ? 8 : pad; /* tf32: B read by words, four k rows apart */
    memset(r, 0, sizeof *r);
    r->K = K;
    if (pp->acc->ly.kind == LY_FMA) { /* both K-major (fma_kc_ok) */
        int ka = fma_kax(pp, 0), kb = fma_kax(pp, 1);
        int kca = pp->cax[0] == ka && fma_kc_ok(L, pp, 0);
        r->bnk = fma_bnk_ok(L, pp);
        int kcb = pp->cax[1] == kb && !r->bnk;
        /* A: [K][M] by 4-byte copies, or as it lies along M; else [M][K] */
        r->at = kca || pp->cax[0] != ka;
        r->cp[0] = kca ? (ka ? LOWER_CP_T1 : LOWER_CP_T0) : (r->at ? ka : !ka) ? LOWER_CP_COLS : LOWER_CP_ROWS;
        /* B as loaded: [N][K] rows along K (bnk), else [K][N] */
        r->cp[1] = kcb ? (kb ? LOWER_CP_T1 : LOWER_CP_T0) : (r->bnk ? !kb : kb) ? LOWER_CP_COLS : LOWER_CP_ROWS;
        r->lda = kca ? ld_kc(M, lower_at_kw(L, pp->load[0], ka)) : (int)(r->at ? M : K) + pad;
        r->ldb = kcb ? ld_kc(N, lower_at_kw(L, pp->load[1], kb)) : r->bnk ? (int)K : (int)N + pad;
        r->swa = kca ? lower_at_sw(lower_at_kw(L, pp->load[0], ka)) : 0;
        r->swb = kcb ? lower_at_sw(lower_at_kw(L, pp->load[1], kb)) : 0;
    } else {
        r->bt = pp->tr[1];
        r->lda = (int)K + pad;
        r->ldb = (int)(r->bt ? K : N) + bpad;
    }
    r->abytes = (r->at ? K : M) * r->lda * es;
    r->bbytes = (r->bt || r->bnk ? N : K) * r->ldb * es;
}

/* May statement s stay in a pipelined loop? Lets of index, mask and
 * pointer tiles and of scalars computed where they are used
 * (lower_bind_loop_scope binds them), the loads, the one dot update. */
static int pipeline_stmt_ok(lw *L, const tilec_stmt *s, pipe_plan *pp, const char **via, int nvia)
{
    unsigned line = s->loc.line;
    if (s->kind == TILEC_ST_DOC)
        return 1;
    if (s->kind == TILEC_ST_ASSIGN && lower_dot_update(s) && !pp->update) {
        pp->update = s;
        return 1;
    }
    if (s->kind == TILEC_ST_ASSIGN && lower_dot_update(s))
        return lower_miss(L, line, "a second dot update in the loop (a pipelined loop has one)");
    if (s->kind == TILEC_ST_ASSIGN && lower_ivstep_why(L, s))
        return lower_miss(L, line, "%s is re-assigned in the loop body, and its step is not read as its value before "
                                   "the loop plus the steps taken: %s",
                          s->names[0], lower_ivstep_why(L, s));
    if (s->kind != TILEC_ST_LET)
        return lower_miss(L, line, "a statement other than a let or the dot update in the loop body");
    if (lower_in_list(L->assigned, L->nassigned, s->names[0]))
        return lower_miss(L, line, "%s is re-assigned", s->names[0]);
    if (tilec_is_builtin(s->value, BI_LOAD))
        return 1;
    if (lower_in_list(via, nvia, s->names[0])) /* `let bt = trans(tb)` on the way to a dot operand's load */
        return 1;
    val *x = lower_lookup(L, s->names[0]);
    if (!x || x->kind != VK_VIRT)
        return lower_miss(L, line,
                          "let %s needs loaded data or a reduction (a pipelined loop keeps lets of indices, "
                          "masks, pointers and scalars computed from them)",
                          s->names[0]);
    return 1;
}

/* Does load ld, operand i of a dot in loop body b reached through the lets
 * names[0..nn), qualify for a ring? */
static int pipeline_load_ok(lw *L, const tilec_block *b, int i, const tilec_expr *ld, const char *const *names, int nn,
                            int fma, int *cax)
{
    unsigned line = ld->loc.line;
    const tilec_type *t = lower_ty(L, ld);
    int vec = 16 / (int)tilec_dtype_size(t->dtype);
    /* an FMA dot's operands may lie along either axis (the copies put K on
     * the ring's rows): their chunks are checked once that axis is known;
     * so may a tensor-core dot's A (MN-major: the sm_90a twin's, pipeline_check) */
    int anyax = fma || i == 0;
    if (t->rank != 2 || (!anyax && t->dims[1] % vec))
        return lower_miss(L, line, "the loaded tile's rows are not whole 16-byte chunks");
    if (!anyax && (t->dims[0] * t->dims[1] / vec) % L->nt)
        return lower_miss(L, line, "the tile's %lld 16-byte chunks are not a multiple of the %d threads",
                          (long long)(t->dims[0] * t->dims[1] / vec), L->nt);
    /* the loaded tile is read by the dot only (each let on the way once) */
    for (int k = 0; k < nn; k++) {
        int n = 0;
        for (uint32_t j = 0; j < b->nstmts; j++)
            if (b->stmts[j]->kind != TILEC_ST_DOC)
                n += uses(b->stmts[j]->value, names[k]);
        if (n != 1)
            return lower_miss(L, line, "%s is read by more than the dot", names[k]);
    }
    /* contiguous rows, masks and pointers from index tiles, zero fill */
    for (uint32_t j = 0; j < ld->nargs; j++)
        if (!lower_is_virtual(L, ld->args[j]))
            return lower_miss(L, line, "the load's %s needs loaded data", j == 0 ? "pointer" : j == 1 ? "mask" : "`other`");
    int64_t st;
    *cax = 1;
    if (anyax && !(lower_stride(L, ld->args[0], 1, &st) && st == 1) && lower_stride(L, ld->args[0], 0, &st) && st == 1)
        *cax = 0;
    if (!lower_stride(L, ld->args[0], *cax, &st) || st != 1)
        return lower_miss(L, line, anyax ? "dot operand %c is contiguous along neither axis"
                                         : "dot operand %c is not contiguous along its last axis", i ? 'B' : 'A');
    if (anyax && t->dims[*cax] % vec)
        return lower_miss(L, line, "the loaded tile is not whole 16-byte chunks along its contiguous axis");
    if (anyax && (t->dims[0] * t->dims[1] / vec) % L->nt)
        return lower_miss(L, line, "the tile's %lld 16-byte chunks are not a multiple of the %d threads",
                          (long long)(t->dims[0] * t->dims[1] / vec), L->nt);
    if (ld->nargs > 2 && !lower_is_zero(L, ld->args[2]))
        return lower_miss(L, line, "the load's `other` is not zero (cp.async fills with zeros)");
    return 1;
}

static int pipeline_check(lw *L, const tilec_stmt *loop, pipe_plan *pp)
{
    memset(pp, 0, sizeof *pp);
    const tilec_block *b = &loop->body;
    /* the dot's operands and the lets on their way to their loads (`let bt
     * = trans(tb)`), which the copies into the ring replace */
    const char *via[2 * LOWER_OPERAND_LETS];
    const tilec_expr *ld[2] = {NULL, NULL}, *d = NULL;
    int nvia[2] = {0, 0};
    for (uint32_t i = 0; i < b->nstmts && !d; i++)
        d = lower_dot_update(b->stmts[i]);
    for (int i = 0; d && i < 2; i++)
        ld[i] = lower_operand_load(b, d->args[i], &pp->tr[i], via + (i ? nvia[0] : 0), &nvia[i]);
    for (uint32_t i = 0; i < b->nstmts; i++)
        if (!pipeline_stmt_ok(L, b->stmts[i], pp, via, nvia[0] + nvia[1]))
            return 0;
    if (!pp->update)
        return lower_miss(L, 0, "no `acc = acc + dot(a, b)` update in the loop body");
    pp->acc = lower_lookup(L, pp->update->names[0]);
    unsigned dl = pp->update->loc.line;
    if (!pp->acc || pp->acc->kind != VK_MAT)
        return lower_miss(L, dl, "the accumulator is not a register tile");
    if (pp->acc->ly.kind != LY_MMA && !fma_ok(L, pp->acc, d))
        return lower_miss(L, dl, "the dot is on neither tensor cores nor f32 FMA register blocks");
    for (int i = 0; i < 2; i++) {
        if (!ld[i])
            return lower_miss(L, dl, "dot operand %c is not a load in the loop (or trans of one)", i ? 'B' : 'A');
        pp->load[i] = ld[i];
        if (!pipeline_load_ok(L, b, i, ld[i], via + (i ? nvia[0] : 0), nvia[i], pp->acc->ly.kind == LY_FMA, &pp->cax[i]))
            return 0;
    }
    if (pp->acc->ly.kind == LY_FMA) {
        if (pp->cax[1] == fma_kax(pp, 1) && !fma_bnk_ok(L, pp) && !fma_kc_ok(L, pp, 1))
            return lower_miss(L, dl, "dot operand B is contiguous along K, and its [%lld, %lld] load is not whole "
                                     "blocks of 4 rows by 8 k or 8 rows by 4 k, or its 4-byte copies do not divide among the %d threads",
                              (long long)lower_ty(L, ld[1])->dims[0], (long long)lower_ty(L, ld[1])->dims[1], L->nt);
    } else if (pp->tr[0] || pp->cax[0] != 1) {
        /* A as loaded is not [M][K] rows of K: the mma.sync ring does not take it, the sm_90a twin may
         * (lower_pipelined_loop notes it; TMA boxes of K rows along M and wgmma's transpose bit) */
        pp->twin_only = pp->cax[0] != (pp->tr[0] ? 0 : 1)
                            ? "dot operand A is MN-major (its load's unit stride runs along M; the mma.sync "
                              "pipeline reads A as [M][K] rows of K from its ring)"
                            : "dot operand A is trans of a load contiguous along K (the mma.sync pipeline reads A "
                              "as loaded, [M][K], from its ring)";
    } else if (pp->tr[1] && tilec_dtype_size(lower_ty(L, ld[1])->dtype) != 2) {
        return lower_miss(L, dl, "dot operand B is a transposed tf32 load (B^T is read by ldmatrix: f16 and bf16)");
    }
    int64_t hint = tilec_kernel_hint(L->k, L->variant, "stages", 0);
    /* f32 FMA loops pipeline when asked: cp.async would make a kernel that
     * runs anywhere need sm_80 (docs/language.md, "stages") */
    if (pp->acc->ly.kind == LY_FMA && hint < 1)
        return lower_miss(L, loop->loc.line, "no `stages` hint (an f32 FMA loop pipelines when asked: cp.async needs sm_80)");
    ring r;
    ring_geometry(L, pp, &r);
    pp->S = lower_stages(L, r.abytes + r.bbytes);
    if (pp->S < 2)
        return lower_miss(L, loop->loc.line, hint ? "the `stages` hint is 1"
                                                  : "no two stages of its ring (%lld bytes a stage) fit in shared memory "
                                                    "with what the rest of the kernel takes",
                          (long long)(r.abytes + r.bbytes));
    return 1;
}


/* The 4-byte copies' chunk loop (lower_emit_at_copies): `for (tl_q ...) {`
 * defining the chunk's indices tl_i0 and tl_i1, one indent in, a warp
 * covering 32 / kw rows by kw k (lower_at_kw), K on axis kax of the load
 * (tl_i1 when 1, tl_i0 when 0). When every warp's row blocks repeat with
 * period R in tl_q, the row is a function of tl_q % R and lower_at_rows
 * returns R (hoist.c keeps row-only values in R registers); else 0. */
int lower_at_kw(lw *L, const tilec_expr *e, int kax)
{
    const tilec_type *t = lower_ty(L, e);
    int64_t K = t->dims[kax], R = t->dims[1 - kax];
    int W = L->nt / 32;
    /* a whole 128-byte line a copy (32 k of one row), where the rows
     * repeat in tl_q (lower_at_rows) and the swizzle's two warp bits
     * divide the warps (lower_at_open); else whole 32-byte sectors */
    if (W > 0 && K % 32 == 0 && W % 4 == 0 && R % W == 0)
        return 32;
    return K % 8 ? 4 : 8;
}

int lower_at_sw(int kw) { return kw >= 16 ? 32 / kw : 0; }

int lower_at_chunks(lw *L, const tilec_expr *e)
{
    const tilec_type *t = lower_ty(L, e);
    return (int)(t->dims[0] * t->dims[1] / L->nt);
}

int lower_at_rows(lw *L, const tilec_expr *e, int kax)
{
    int64_t mb = lower_ty(L, e)->dims[1 - kax] / (32 / lower_at_kw(L, e, kax)), W = L->nt / 32;
    return mb % W == 0 ? (int)(mb / W) : 0;
}

void lower_at_open(lw *L, const tilec_expr *e, int kax)
{
    int kw = lower_at_kw(L, e, kax), rb = 32 / kw;
    int64_t mb = lower_ty(L, e)->dims[1 - kax] / rb;
    int W = L->nt / 32, R = lower_at_rows(L, e, kax);
    const char *ri = kax ? "tl_i0" : "tl_i1", *ki = kax ? "tl_i1" : "tl_i0";
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_q = 0; tl_q < %d; ++tl_q) {", lower_at_chunks(L, e));
    L->ind++;
    /* block tl_q * W + tl_warp of the (rows / rb) x (K / kw) blocks, row blocks first */
    int u = lower_at_sw(kw);
    if (R && u) /* the row swizzled for the shared address: row ^ s(k), s(k) = ((k / 8) % (4 / u)) * u, u = rb */
        lower_line(L, "const int %s = ((tl_q %% %d) * %d + tl_warp) * %d + tl_lane / %d, tl_kc = (tl_q / %d) * %d, tl_c1 = tl_lane %% %d, %s = tl_kc + tl_c1, "
                      "tl_sr = ((tl_q %% %d) * %d + (tl_warp ^ ((tl_c1 / 8) %% %d))) * %d + tl_lane / %d;",
                   ri, R, W, rb, kw, R, kw, kw, ki, R, W, 4 / u, rb, kw);
    else if (R) /* tl_warp < W: the row block and k block fold to constants and tl_warp */
        lower_line(L, "const int %s = ((tl_q %% %d) * %d + tl_warp) * %d + tl_lane / %d, tl_kc = (tl_q / %d) * %d, tl_c1 = tl_lane %% %d, %s = tl_kc + tl_c1;",
                   ri, R, W, rb, kw, R, kw, kw, ki);
    else
        lower_line(L, "const int %s = ((tl_q * %d + tl_warp) %% %lld) * %d + tl_lane / %d, %s = ((tl_q * %d + tl_warp) / %lld) * %d + tl_lane %% %d;",
                   ri, W, (long long)mb, rb, kw, ki, W, (long long)mb, kw, kw);
}

void lower_emit_at_copies(lw *L, const tilec_expr *e, const char *dst, int ld, int kax)
{
    const tilec_expr *mask = e->nargs > 1 ? e->args[1] : NULL;
    lower_at_open(L, e, kax);
    const char *sub[TILEC_MAX_RANK];
    lower_map_bcast(lower_ty(L, e->args[0]), 2, lower_idx, sub);
    const char *ptr = L->hoist ? lower_hoist_ptr(L, e->args[0], sub) : NULL;
    lower_line(L, "const float *tl_p = %s;", ptr ? ptr : lower_walk(L, e->args[0], sub, 0, NULL, EMIT));
    const char *n = "4";
    if (mask) {
        lower_map_bcast(lower_ty(L, mask), 2, lower_idx, sub);
        n = lower_fmt(L, "(%s) ? 4 : 0", lower_walk(L, mask, sub, 0, NULL, EMIT));
    }
    /* the shared address in 32 bits: a base plus constants of the unrolled chunk */
    lower_line(L, "asm volatile(\"cp.async.ca.shared.global [%%0], [%%1], 4, %%2;\\n\" :: \"r\"((unsigned)__cvta_generic_to_shared(tl_smem) + "
                  "(unsigned)(%s) + (unsigned)(%s * %d + %s) * 4u), \"l\"(tl_p), \"r\"(%s));",
               dst, kax ? "tl_i1" : "tl_i0", ld, lower_at_sw(lower_at_kw(L, e, kax)) ? "tl_sr" : kax ? "tl_i0" : "tl_i1", n);
    L->ind--;
    lower_line(L, "}");
}

/* The remarks of a pipelined loop's operand loads (remark.c): 16-byte
 * cp.async chunks, or the 4-byte copies that transpose an FMA operand
 * contiguous along K; with the loop's bindings, so named masks are seen. */
static void remark_copies(lw *L, const pipe_plan *pp, const ring *r)
{
    for (int i = 0; i < 2; i++) {
        const tilec_expr *ld = pp->load[i], *mask = ld->nargs > 1 ? ld->args[1] : NULL;
        unsigned size = tilec_dtype_size(lower_ty(L, ld)->dtype);
        int m = r->cp[i];
        if (m == LOWER_CP_T1 || m == LOWER_CP_T0) {
            lower_remark_mem(L, ld, lower_fmt(L, "cp.async.ca into the pipeline's ring (%d stages), %s", r->S,
                                              lower_remark_width(L, 1, size, "copy")),
                             lower_fmt(L, "contiguous along K (axis %d), its copies transpose it into the ring's K-major rows",
                                       m == LOWER_CP_T1));
            continue;
        }
        int mono = mask && lower_monotone_mask(L, mask, 2, m == LOWER_CP_COLS ? 0 : 1);
        lower_remark_mem(L, ld, lower_fmt(L, "cp.async into the pipeline's ring (%d stages), %s%s", r->S,
                                          lower_remark_width(L, lower_chunk_vec(L, ld), size, "chunk"), lower_remark_mask(L, mask, mono)),
                         NULL);
    }
}

/* Copies of both operands into ring slot `slot` (a C expression). */
static void issue_copies(lw *L, const void *ctx, const char *slot)
{
    const pipe_plan *pp = ((const void *const *)ctx)[0];
    const ring *r = ((const void *const *)ctx)[1];
    remark_copies(L, pp, r);
    const char *da = lower_fmt(L, "%u + %s * %lld", r->sa, slot, (long long)r->abytes);
    if (L->hoist)
        L->hoist->cur = 0;
    const char *db = lower_fmt(L, "%u + %s * %lld", r->sb, slot, (long long)r->bbytes);
    for (int i = 0; i < 2; i++) {
        if (L->hoist)
            L->hoist->cur = i;
        int m = r->cp[i];
        if (m == LOWER_CP_T1 || m == LOWER_CP_T0)
            lower_emit_at_copies(L, pp->load[i], i ? db : da, i ? r->ldb : r->lda, m == LOWER_CP_T1);
        else if (i && r->bnk) /* [N][K] as loaded, swizzled: n is the row index, k the contiguous one */
            lower_emit_async_load_at(L, pp->load[1], lower_fmt(L, "tl_smem + %s", db),
                                     lower_fma_bnk_at(L, m == LOWER_CP_COLS ? "tl_i1" : "tl_i0",
                                                      m == LOWER_CP_COLS ? "tl_i0" : "tl_i1", r->K),
                                     m == LOWER_CP_COLS, LOWER_ASYNC_OWN);
        else
            lower_emit_async_load(L, pp->load[i], i ? db : da, i ? r->ldb : r->lda, m == LOWER_CP_COLS);
    }
}

void lower_cp_bounds(lw *L, const tilec_stmt *loop)
{
    lower_walk(L, loop->lo, NULL, 0, NULL, PREP);
    lower_walk(L, loop->hi, NULL, 0, NULL, PREP);
    if (loop->step)
        lower_walk(L, loop->step, NULL, 0, NULL, PREP);
    int wide = lower_loop_wide(L, loop);
    lower_line(L, "typedef %s tl_ix; /* the loop variable's type */", wide ? "long long" : "int");
    L->cp_wraps = !lower_ix_loop_safe(L, loop, wide);
    int split = L->split && loop == L->split_loop;
    lower_line(L, "const tl_ix tl_lo%s = %s, tl_hi%s = %s, tl_st = %s;", split ? "0" : "", lower_walk(L, loop->lo, NULL, 0, NULL, EMIT),
               split ? "0" : "", lower_walk(L, loop->hi, NULL, 0, NULL, EMIT),
               loop->step ? lower_walk(L, loop->step, NULL, 0, NULL, EMIT) : "1");
    if (split)
        lower_split_bounds(L);
}

void lower_cp_prologue(lw *L, int S, const char *v, lower_issue_fn issue, const void *ctx)
{
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_s = 0; tl_s < %d; ++tl_s) {", S - 1);
    L->ind++;
    if (L->cp_wraps) /* tl_lo + tl_s * tl_st may pass 2^31 - 1: tested in 64 bits first */
        lower_line(L, "const tl_ix %s = (long long)tl_lo + (long long)tl_s * tl_st < tl_hi ? tl_lo + tl_s * tl_st : tl_hi;", v);
    else
        lower_line(L, "const tl_ix %s = tl_lo + tl_s * tl_st;", v);
    lower_line(L, "if (%s < tl_hi) {", v);
    L->ind++;
    issue(L, ctx, "tl_s");
    L->ind--;
    lower_line(L, "}");
    lower_line(L, "tl_cp_commit();");
    L->ind--;
    lower_line(L, "}");
}

void lower_cp_advance(lw *L, int S, const char *v, lower_issue_fn issue, const void *ctx)
{
    /* tile tl_it has landed and every warp is done with tile tl_it - 1,
     * whose buffer the copies for tile tl_it + stages - 1 reuse */
    lower_line(L, "tl_cp_wait<%d>();", S - 2);
    lower_line(L, "__syncthreads();");
    lower_line(L, "{");
    L->ind++;
    if (L->cp_wraps) /* as in lower_cp_prologue */
        lower_line(L, "const tl_ix tl_next = (long long)%s + %dLL * tl_st < tl_hi ? %s + %d * tl_st : tl_hi;", v, S - 1, v, S - 1);
    else
        lower_line(L, "const tl_ix tl_next = %s + %d * tl_st;", v, S - 1);
    lower_line(L, "const int tl_ns = (tl_it + %d) %% %d;", S - 1, S);
    lower_line(L, "if (tl_next < tl_hi) {");
    L->ind++;
    lower_line(L, "const tl_ix %s = tl_next;", v);
    issue(L, ctx, "tl_ns");
    L->ind--;
    lower_line(L, "}");
    lower_line(L, "tl_cp_commit();");
    L->ind--;
    lower_line(L, "}");
}

/* One iteration: wait for tile tl_it, issue the copies of tile
 * tl_it + stages - 1, then the tensor-core loop on tile tl_it. */
static void steady(lw *L, const tilec_stmt *loop, const pipe_plan *pp, const ring *r, const char *v, tilec_dtype d)
{
    int S = r->S;
    const void *ctx[2] = {pp, r};
    lower_line(L, "int tl_it = 0;");
    lower_line(L, "for (tl_ix %s = tl_lo; %s < tl_hi; %s, ++tl_it) {", v, v, lower_loop_next(L, loop, v, "tl_hi", "tl_st", 1));
    L->ind++;
    lower_cp_advance(L, S, v, issue_copies, ctx);
    lower_comment_loc(L, &pp->update->loc);
    lower_line(L, "const int tl_cs = tl_it %% %d;", S);
    const char *sa = lower_fmt(L, "(%u + tl_cs * %lld)", r->sa, (long long)r->abytes);
    const char *sb = lower_fmt(L, "(%u + tl_cs * %lld)", r->sb, (long long)r->bbytes);
    if (pp->acc->ly.kind == LY_FMA)
        lower_emit_fma_kloop(L, pp->acc, sa, sb, r->lda, r->ldb, r->K, r->at, r->swa, r->swb, r->bnk);
    else
        lower_emit_mma_kloop(L, pp->acc, sa, sb, r->bt, r->lda, r->ldb, r->K, d);
    L->ind--;
    lower_line(L, "}");
}

static void emit_pipelined(lw *L, const tilec_stmt *loop, const pipe_plan *pp)
{
    const tilec_type *at = lower_ty(L, pp->load[0]);
    ring r;
    ring_geometry(L, pp, &r);
    r.S = pp->S;
    for (int i = 0; i < 2; i++) {
        const tilec_expr *dx = lower_dot_update(pp->update)->args[i];
        while (tilec_is_builtin(dx, BI_TRANS) && dx->nargs == 1)
            dx = dx->args[0];
        const char *nm = dx->kind == TILEC_EX_NAME ? dx->name : i ? "B" : "A";
        if (r.cp[i] == LOWER_CP_T1 || r.cp[i] == LOWER_CP_T0) {
            int kw = lower_at_kw(L, pp->load[i], fma_kax(pp, i));
            lower_note(L, "  line %u: dot operand %s stored %s in its ring (4-byte cp.async%s, a warp %d %s by %d k%s), four %s a 16-byte read",
                       pp->update->loc.line, nm, i ? "[K][N]" : "[K][M]", r.cp[i] == LOWER_CP_T1 ? ", transposed" : "",
                       32 / kw, kw == 32 ? "row" : "rows", kw, lower_at_sw(kw) ? ", swizzled" : "", i ? "columns" : "rows");
        }
        else if (i == 1 && r.bnk)
            lower_note(L, "  line %u: dot operand %s stored [N][K] in its ring (16-byte cp.async as loaded, swizzled), "
                          "four k a 16-byte read", pp->update->loc.line, nm);
        else if ((i == 0 && r.at) || (i == 1 && pp->acc->ly.kind == LY_FMA && r.cp[i] == LOWER_CP_COLS))
            lower_note(L, "  line %u: dot operand %s stored %s in its ring (16-byte cp.async%s), four %s a 16-byte read",
                       pp->update->loc.line, nm, i ? "[K][N]" : "[K][M]", r.cp[i] == LOWER_CP_COLS ? ", transposed" : "",
                       i ? "columns" : "rows");
    }
    r.sa = lower_alloc_smem(L, r.abytes * r.S);
    r.sb = lower_alloc_smem(L, r.bbytes * r.S);
    const char *v = lower_cname(L, loop->names[0]);
    lower_line(L, "{ /* %s += dot, %d-stage cp.async pipeline */", pp->acc->c, r.S);
    L->ind++;
    lower_cp_bounds(L, loop);
    lower_bind_loop_scope(L, loop);
    const void *ctx[2] = {pp, &r};
    lower_hoist h;
    lower_hoist_begin(L, &h, loop->names[0], pp->load, r.cp, 2);
    lower_cp_prologue(L, r.S, v, issue_copies, ctx);
    lower_comment_loc(L, &loop->loc);
    steady(L, loop, pp, &r, v, at->dtype);
    lower_hoist_end(L);
    lower_line(L, "tl_cp_wait<0>();");
    lower_line(L, "__syncthreads();");
    lower_leave(L);
    L->ind--;
    lower_line(L, "}");
    if (L->split && loop == L->split_loop)
        L->split_acc = pp->acc; /* stmt.c adds the slices' partials after the loop */
}

/* Whether the sm_90a twin takes the loop of plan pp (lower_wg_note
 * records it, or the reason it does not as the first miss). */
static void note_twin(lw *L, const tilec_stmt *loop, const pipe_plan *pp)
{
    lower_miss_reset(L);
    if (L->split) /* no sm_90a twin for a split-K variant (docs/lowering.md, "Split-K") */
        lower_miss(L, 0, "a split-K variant has no sm_90a twin");
    else if (L->tg->note_dot_loop) /* the twin decision (wgmma.c) */
        L->tg->note_dot_loop(L, loop, pp);
    if (L->tw.loop == loop) { /* its loads' remarks name what the twin does instead */
        L->tw_ld[0] = pp->load[0];
        L->tw_ld[1] = pp->load[1];
    }
}

/* The remark of a pipelined loop: its path and stages; for f16/bf16
 * operands whether the sm_90a twin runs it on wgmma + TMA, and if not,
 * why (lower_wg_note records it). */
static void remark_pipelined(lw *L, const tilec_stmt *loop, const pipe_plan *pp)
{
    tilec_dtype ad = lower_ty(L, pp->load[0])->dtype;
    int hinted = tilec_kernel_hint(L->k, L->variant, "stages", 0) > 0;
    ring g;
    ring_geometry(L, pp, &g);
    const lay *y = &pp->acc->ly;
    /* f32: the same words for x @ W and x @ W.T (both operands K-major in the ring) */
    const char *engine = pp->acc->ly.kind == LY_FMA ? lower_fmt(L, "FMA register blocks (%dx%d a thread; A %s, B %s in the ring)",
                                                                y->tm, y->tn, g.at ? "[K][M]" : "[M][K]", g.bnk ? "[N][K]" : "[K][N]")
                         : ad == TILEC_DT_F32       ? "mma.sync (tf32)"
                         : pp->tr[1]                ? "mma.sync (B^T: [N][K] in its ring, plain ldmatrix)"
                                                    : "mma.sync";
    const char *path = lower_fmt(L, "cp.async pipeline + %s, %d stages (%s)", engine, pp->S,
                                 hinted ? "the `stages` hint" : "no hint: the deepest of 2..4 that fits");
    if (pp->acc->ly.kind == LY_FMA) { /* f32 without tf32: the pipeline is the best path */
        lower_remark_dot(L, loop, path, NULL);
        return;
    }
    note_twin(L, loop, pp);
    lower_dot_remark *r = lower_remark_dot(L, loop, path, L->tw.loop == loop ? NULL : "wgmma + TMA");
    if (r) {
        r->wg = L->tw.loop == loop;
        r->wg_bk = r->wg && L->tw.plan.bk;
    }
}

int lower_pipelined_loop(lw *L, const tilec_stmt *loop)
{
    if (L->tg->dot_loop && L->tg->dot_loop(L, loop)) /* the target's own (the sm_90a twin's wgmma + TMA loop) */
        return 1;
    pipe_plan pp;
    int ok = lower_pipeline_plan(L, loop, &pp);
    if (ok && pp.twin_only) {
        /* an operand the sm_90a twin alone reads: the twin noted (its remark is the path the variant's loop
         * takes, stmt.c or ring.c), the variant's loop not a pipelined dot loop, for the reason pp says */
        note_twin(L, loop, &pp);
        const char *why = L->miss;
        unsigned line = L->miss_line;
        lower_miss_reset(L);
        if (L->tw.loop == loop)
            lower_miss(L, pp.update->loc.line, "%s", pp.twin_only);
        else
            lower_miss(L, line ? line : pp.update->loc.line, "%s; not on wgmma + TMA either: %s", pp.twin_only,
                       why ? why : "(no reason recorded)");
        ok = 0;
    }
    if (!lower_split_check_loop(L, loop, ok) || !ok)
        return 0;
    remark_pipelined(L, loop, &pp);
    emit_pipelined(L, loop, &pp);
    return 1;
}
