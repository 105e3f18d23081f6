/* wgattn.c: the sm_90a twin of a loop whose dots read cp.async rings
 * (ring.c): attention's S = dot(q, k^T), online softmax, acc = acc *
 * alpha + dot(p, v), and any loop of that shape. Every dot of the body
 * multiplies its A operand from registers (the mma accumulator layout a
 * register tile already has: q loaded, p computed) by its B operand from
 * its ring with the register-A form of wgmma.mma_async (or, for one A
 * operand the loop does not assign where the registers run short, from
 * shared memory where it is stored once before the loop: plan_smem_a): a wgmma
 * m64nNk16 accumulator gives each warp of a warp group 16 rows in the
 * mma.sync m16n8 fragment layout repeated along N, and the register A
 * operand is the mma.sync m16n8k16 A fragment, so the statements around
 * the dots (row max and sum across the quad, exp2, the pack of p) lower
 * as they do for mma.sync. What changes:
 *
 * - each ring's tile is stored in rows of 128 bytes along its contiguous
 *   axis in the 128-byte swizzle (row r's 16-byte chunk k at chunk k ^
 *   (r % 8), 64 halves of the contiguous axis a box), so a wgmma
 *   descriptor reads it: K-major when the dot reads it as B^T (K as
 *   stored [S, D], read transposed), MN-major with the transpose bit when
 *   the contiguous axis is the dot's N (V, or K given as [D, S]);
 * - one producer warp group fills a ring of stages, each with a *full*
 *   mbarrier and an *empty* one (one arrive per consumer warp when the
 *   iteration's wgmma are done): by TMA where a tensor map describes each
 *   ring's load (ring_maps: one thread expects the stage's bytes and
 *   issues its boxes, the layout the swizzled rows already are), else by
 *   cp.async (its 128 threads arrive on *full* once their copies of the
 *   stage have landed, after fence.proxy.async: the wgmma reads through
 *   the async proxy);
 * - BM / 16 consumer warps (one warp group per 64 rows) run the body:
 *   wait for the stage, and at each dot pack A's fragments, wgmma.fence,
 *   the K/16 wgmma, commit, wait_group 0;
 * - with two consumer warp groups and the last dot in flight (d = 64),
 *   the groups take turns to issue (FlashAttention-3's ping-pong): named
 *   barrier 2 + g is group g's turn, taken (bar.sync) before the last dot
 *   and passed on (bar.arrive on the other's) after the next iteration's
 *   first, before its wait, so one group's softmax runs while the other's
 *   wgmma multiply.
 *
 * The regular pass notes the loop (lower_wga_note, from ring.c) and says
 * why not in the remarks; the twin pass (lw.wg with wgp.attn) emits it
 * (lower_wga_loop) and lower_wga_finish wraps the twin in
 * #if defined(__CUDA_ARCH_FEAT_SM90_ALL). Its tensor maps (one a ring, or
 * none where its rings are filled by cp.async) follow the variant's
 * parameters (tilec/tma.h). docs/lowering.md ("wgmma for loops of dots on rings") says
 * which loops qualify. */
#include <string.h>

#include "lower/lower_internal.h"

enum {
    WGA_PRODUCER = 128,          /* the producer warp group */
    WGA_RING_MAX = 160 * 1024,   /* the ring's bytes at most (the rest: what the body converts) */
    WGA_MAX_STAGES = 4,
    WGA_REGS_PRODUCER = 56,      /* setmaxnreg: 2 x 128 x 224 + 128 x 56 <= 65536 */
    WGA_REGS_CONSUMER = 224,
    /* one thread issues the TMA copies: 2 x 128 x 240 + 128 x 24 <= 65536; at 232 / 40 ptxas serialized every
     * wgmma of the 128-key twin (C7512, insufficient registers: S's 64 accumulators, P's, acc's 32 and Q's) */
    WGA_REGS_PRODUCER_TMA = 24,
    WGA_REGS_CONSUMER_TMA = 240,
    WGA_DEFER_N = 64, /* the widest accumulator whose last dot stays in flight (plan_defer) */
    /* a loop-invariant A operand goes to shared memory past this many registers a consumer thread of the dots'
     * accumulators and A tiles: d128's 128-key twin (224) serialized every wgmma and spilled with Q in registers;
     * d128's 64-key twin (160) measured 1.5-2.4% slower with Q in shared memory (docs/lowering.md) */
    WGA_REGS_A_SMEM = 192,
    WGA_WG_WARPS = 4, /* warps of a warp group */
    /* one consumer warp group (M = 64) by TMA: two blocks an SM where their rings fit (wga_blocks), each block's
     * 256 threads then 128 registers at launch (65536 / 512): the producer's thread gives back to 24 and the
     * consumers take the rest, 2 x 128 - 24 = 232 */
    WGA_SM_SMEM = 228 * 1024, /* shared memory of an SM, 1 KiB of it reserved a block */
    WGA_SM_REGS = 65536,
};

/* One consumer warp group (M = 64 rows, 4 warps) leaves an SM to one block
 * of 4 consumer warps where the consumers take 240 registers a thread: the
 * docs-written d64 attention (BM = 64, issue 30) ran 0.38-0.45x SDPA there
 * while the two-group twins ran 0.65-0.9x. Two such blocks an SM where two
 * of its shared memory blocks (the ring, A in shared memory, the barriers)
 * fit: launched at 128 registers a thread, the producer's thread gives back
 * all but WGA_REGS_PRODUCER(_TMA) and the consumers take the rest (232 by
 * TMA); the program's grid and pid(0) stay the user's. Rings by cp.async
 * (no tensor map: a producer of 128 threads at 56 registers, the consumers
 * at 200) keep one block: measured and run on the GPU only by TMA. */
static void wga_blocks(wg_plan *w, int S, int tma)
{
    w->blocks = 1;
    w->preg = tma ? WGA_REGS_PRODUCER_TMA : WGA_REGS_PRODUCER;
    w->creg = tma ? WGA_REGS_CONSUMER_TMA : WGA_REGS_CONSUMER;
    if (w->warps != WGA_WG_WARPS || !tma || 2 * (lower_wg_block(S, w->stage_bytes, w->sa_bytes) + 1024) > WGA_SM_SMEM)
        return;
    int launch = WGA_SM_REGS / (2 * (WGA_WG_WARPS * 32 + WGA_PRODUCER)) / 8 * 8;
    w->blocks = 2;
    w->creg = (2 * launch - w->preg) / 8 * 8;
}

/* Consumer warps of an M tile: one warp group per 64 rows; 0 if none fits. */
static int wga_warps(int64_t M) { return M == 64 || M == 128 ? (int)(M / 16) : 0; }

int lower_wga_layout(const lw *L, int64_t M, int64_t N, lay *y)
{
    int cw = wga_warps(M);
    if (!cw || cw != L->nwarps || N % 8 || N > 256)
        return 0;
    lower_mma_grid(M, N, cw, 1, y); /* a 16 x N warp tile: wgmma's fragments */
    return 1;
}

/* ---- which loops qualify ---- */

/* A store, atomic or return anywhere in block b (the producer warps run
 * the statements before the loop too). */
static const tilec_stmt *writes(const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i], *in;
        const tilec_expr *v = s->value;
        if (s->kind == TILEC_ST_RETURN ||
            (v && v->kind == TILEC_EX_CALL && (tilec_is_builtin(v, BI_STORE) || tilec_is_builtin(v, BI_ATOMIC_ADD))))
            return s;
        if ((in = writes(&s->body)) != NULL || (in = writes(&s->orelse)) != NULL)
            return in;
    }
    return NULL;
}

/* The dots of e into d (at most max); -1 past max. */
static int dots_of(const tilec_expr *e, const tilec_expr **d, int n, int max)
{
    if (!e || n < 0)
        return n;
    if (tilec_is_builtin(e, BI_DOT)) {
        if (n >= max)
            return -1;
        d[n++] = e;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        n = dots_of(e->args[i], d, n, max);
    return n;
}

/* The ring op (or its trans alias) a dot's B operand names; *bt: read
 * as B^T (its contiguous axis is the dot's K). */
static const ring_op *b_ring(const tilec_expr *b, const ring_plan *rp, int *bt)
{
    int flip = 0;
    for (; tilec_is_builtin(b, BI_TRANS) && b->nargs == 1; b = b->args[0])
        flip ^= 1;
    if (b->kind != TILEC_EX_NAME)
        return NULL;
    for (int i = 0; i < rp->n; i++) {
        const ring_op *o = &rp->op[i];
        if (!strcmp(b->name, o->let->names[0])) {
            *bt = o->trans ^ flip;
            return o;
        }
        if (o->alias && !strcmp(b->name, o->alias->names[0])) {
            *bt = !o->trans ^ flip;
            return o;
        }
    }
    return NULL;
}

/* Is `name` let to a load among the statements of b? */
static int loaded_in(const tilec_block *b, const char *name)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_LET && !strcmp(s->names[0], name) && tilec_is_builtin(s->value, BI_LOAD))
            return 1;
    }
    return 0;
}

/* Is `name` given a value (a let, an assignment, a loop variable) anywhere in b? */
static int assigned_in(const tilec_block *b, const char *name)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        for (uint32_t j = 0; j < s->nnames; j++)
            if (s->kind != TILEC_ST_EXPR && !strcmp(s->names[j], name))
                return 1;
        if (assigned_in(&s->body, name) || assigned_in(&s->orelse, name))
            return 1;
    }
    return 0;
}

/* A dot's A operand without its casts: the name of a tile. */
static const tilec_expr *a_tile(const tilec_expr *a)
{
    while (tilec_is_builtin(a, BI_CAST) && a->nargs >= 1)
        a = a->args[0];
    return a;
}

/* Which dot's A operand wgmma reads from shared memory (w->sa_*): one
 * that the loop does not assign (it holds the value the statements before
 * the loop gave it: FlashAttention-3's Q, stored once into the 128-byte
 * swizzle before the loop, its registers free in the loop), K a multiple
 * of 64 (whole swizzled rows), where the dots' accumulators and A tiles as
 * held pass WGA_REGS_A_SMEM registers a consumer thread; the others stay
 * in registers (P, assigned in the loop). The remark's clause for each
 * dot, NULL where no dot. */
static const char *plan_smem_a(lw *L, const tilec_stmt *loop, const tilec_expr *const *d, int nd, wg_plan *w)
{
    const char *how = NULL;
    int64_t regs = 0; /* a warp's 16 rows of [M, X] over 32 lanes: X / 2 elements a thread */
    for (int i = 0; i < nd; i++) {
        const tilec_type *t = lower_ty(L, d[i]), *a = lower_ty(L, a_tile(d[i]->args[0]));
        regs += t->dims[1] / 2 + a->dims[1] * (int64_t)tilec_dtype_size(a->dtype) / 8;
    }
    w->sa_dot = NULL;
    w->sa_name = NULL;
    w->sa_bytes = 0;
    for (int i = 0; i < nd; i++) {
        const tilec_expr *a = a_tile(d[i]->args[0]);
        const tilec_type *at = lower_ty(L, d[i]->args[0]);
        const char *why = NULL;
        if (assigned_in(&loop->body, a->name))
            why = "assigned in the loop";
        else if (at->dims[1] % 64)
            why = lower_fmt(L, "K %lld is not a multiple of 64 (whole rows of the 128-byte swizzle)", (long long)at->dims[1]);
        else if (w->sa_dot)
            why = "one loop-invariant A operand a twin in shared memory";
        else if (regs <= WGA_REGS_A_SMEM)
            why = lower_fmt(L, "loop-invariant; the dots' accumulators and A tiles take %lld registers a thread, not over %d",
                            (long long)regs, WGA_REGS_A_SMEM);
        if (!why) {
            w->sa_dot = d[i];
            w->sa_name = a->name;
            w->sa_bytes = at->dims[0] * at->dims[1] * (int64_t)tilec_dtype_size(at->dtype);
        }
        const char *c = why ? lower_fmt(L, "A %s of the dot at line %u from registers (%s)", a->name, d[i]->loc.line, why)
                            : lower_fmt(L, "A %s of the dot at line %u from shared memory (loop-invariant, the dots' "
                                           "accumulators and A tiles %lld registers a thread, over %d: stored once "
                                           "before the loop, %lld bytes)",
                                        a->name, d[i]->loc.line, (long long)regs, WGA_REGS_A_SMEM, (long long)w->sa_bytes);
        how = how ? lower_fmt(L, "%s, %s", how, c) : c;
    }
    return how;
}

/* One dot of the body: A a register tile the loop does not load (q, p),
 * M 64 or 128 rows, f16/bf16 into f32, B a ring whose rows are 128-byte
 * multiples along its contiguous axis. */
static int dot_ok(lw *L, const tilec_expr *dot, const tilec_block *body, const ring_plan *rp, int64_t *M)
{
    unsigned line = dot->loc.line;
    const tilec_type *at = lower_ty(L, dot->args[0]), *t = lower_ty(L, dot);
    const tilec_expr *a = dot->args[0];
    if (tilec_is_builtin(a, BI_CAST) && a->nargs >= 1)
        a = a->args[0];
    if (a->kind != TILEC_EX_NAME || loaded_in(body, a->name))
        return lower_miss(L, line, "a dot's A operand is not a register tile (a name, or its cast) that the loop does not "
                                   "load (wgmma takes A from the accumulator fragments)");
    int bt = 0;
    const ring_op *o = b_ring(dot->args[1], rp, &bt);
    if (!o)
        return lower_miss(L, line, "a dot's B operand is not a tile of the loop's cp.async rings");
    const tilec_type *bty = lower_ty(L, o->let->value);
    int64_t K = at->dims[1], N = t->dims[1], C = bty->dims[o->trans ? 0 : 1];
    if (at->dtype != bty->dtype || (at->dtype != TILEC_DT_F16 && at->dtype != TILEC_DT_BF16))
        return lower_miss(L, line, "a dot's operands are not both f16 or both bf16");
    if (t->dtype != TILEC_DT_F32)
        return lower_miss(L, line, "a dot's result is %s, not f32", tilec_dtype_name(t->dtype));
    if (!wga_warps(at->dims[0]) || (*M && *M != at->dims[0]))
        return lower_miss(L, line, "the dots' M tile %lld is not 64 or 128 rows (one or two m64 warp groups)",
                          (long long)at->dims[0]);
    *M = at->dims[0];
    if (K % 16 || N % 8 || N > 256)
        return lower_miss(L, line, "dot of K %lld, N %lld: wgmma takes K a multiple of 16, N a multiple of 8 up to 256",
                          (long long)K, (long long)N);
    if (C % 64 || C > 256)
        return lower_miss(L, line,
                          "load %s is %lld elements along its contiguous axis, not 64, 128, 192 or 256 (rows of the "
                          "128-byte swizzle)",
                          o->let->names[0], (long long)C);
    return 1;
}

/* The body's last dot may stay in flight into the next iteration when it
 * accumulates in place (`x = x [* alpha] + dot(a, b)`, x a tile the loop
 * carries) and nothing after it in the body, nor before the body's first
 * dot, names x: the next iteration's first dot waits for both (its
 * products then overlap the last one's), and x is not touched before. */
static void plan_defer(lw *L, const tilec_stmt *loop, wg_plan *w)
{
    const tilec_block *b = &loop->body;
    const tilec_expr *d[RING_MAX];
    int first = -1, last = -1;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        int n = dots_of(b->stmts[i]->value, d, 0, RING_MAX);
        if (n > 0 && first < 0)
            first = (int)i;
        if (n > 0)
            last = (int)i;
    }
    w->first_dot = w->defer_dot = NULL;
    w->wide_acc = 0;
    if (first < 0 || last == first)
        return;
    const tilec_stmt *s = b->stmts[last];
    if (dots_of(s->value, d, 0, RING_MAX) != 1 || s->kind != TILEC_ST_ASSIGN || lower_ty(L, d[0])->rank != 2)
        return;
    /* an accumulator of more than 64 columns (32 registers a thread) waits
     * as the other dots do: on the H100 d = 128 ran 7-8% slower in flight,
     * d = 64 6% faster, and d = 128 in flight with two groups in turns
     * 0.3-1.4% slower again in session 42 (docs/lowering.md) */
    if (lower_ty(L, d[0])->dims[1] > WGA_DEFER_N) {
        w->wide_acc = lower_ty(L, d[0])->dims[1];
        return;
    }
    const char *x = s->names[0];
    for (uint32_t i = 0; i < b->nstmts; i++)
        if ((i <= (uint32_t)first || i > (uint32_t)last) && lower_stmt_mentions(b->stmts[i], x))
            return;
    const tilec_expr *f[RING_MAX];
    dots_of(b->stmts[first]->value, f, 0, RING_MAX);
    w->first_dot = f[0];
    w->defer_dot = d[0];
    w->defer_acc = x;
}

/* Two consumer warp groups take turns to issue their wgmma (FlashAttention-3's
 * ping-pong) where the last dot stays in flight: with each dot waited (d =
 * 128) the turns measured 1-5% slower on the H100, d = 64 4% faster with
 * them (docs/lowering.md, "The two warp groups in turns"). */
static int takes_turns(const wg_plan *w) { return w->warps == 2 * WGA_WG_WARPS && w->defer_dot; }

int lower_wga_takes_turns(const wg_plan *w) { return takes_turns(w); }

/* Nothing before the loop writes memory or returns, and the loop is a
 * statement of the kernel's body (every producer thread reaches it). */
static int placed_ok(lw *L, const tilec_stmt *loop)
{
    const tilec_block *b = &L->k->body;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s == loop)
            return 1;
        tilec_block one = {.stmts = (tilec_stmt **)&b->stmts[i], .nstmts = 1};
        const tilec_stmt *w = writes(&one);
        if (w)
            return lower_miss(L, w->loc.line, "a statement before the loop stores or returns (the producer warp group "
                                              "runs those statements too)");
    }
    return lower_miss(L, 0, "the loop is not a statement of the kernel's body (inside a branch or another loop)");
}

/* A map's rows, cols or stride: parameter p, else the constant c
 * (TILEC_TMA_CONST | c); TILEC_TMA_NONE when c does not fit. */
static uint32_t map_field(int p, int64_t c)
{
    return p >= 0 ? (uint32_t)p : c >= 1 && c < INT32_MAX ? TILEC_TMA_CONST | (uint32_t)c : TILEC_TMA_NONE;
}

/* The tensor map of ring op i's load into plan w (maps[i], R, C, Z, Ra,
 * Ca): P + R[:, None] * S + C[None, :] [+ a batch or head offset], S a
 * parameter or a constant (a hint: K and V [S, D], D = 64), under a mask
 * bounding R, C or both, an unbounded axis's index range(n) from 0 (the
 * map's extent n), the unit-stride axis the ring's contiguous one; boxes
 * of all the tile's rows x 64 elements (128 bytes, the ring's swizzle).
 * NULL, or why not (the producer then copies by cp.async). */
static const char *ring_map(lw *L, const ring_op *o, wg_plan *w, int i)
{
    const tilec_expr *ld = o->let->value;
    const tilec_type *ty = lower_ty(L, ld);
    lower_ptraff pa;
    int bound[2];
    if (!lower_ptr_map_const(L, ld->args[0], ld->nargs >= 2 ? ld->args[1] : NULL, &pa, bound))
        return lower_fmt(L, "load %s: %s", o->let->names[0], pa.why ? pa.why : "the mask is not R < rows && C < cols");
    int cax = pa.stride[1] < 0 && !pa.kstride[1] ? 1 : 0, rax = 1 - cax;
    if (cax != (o->trans ? 0 : 1))
        return lower_fmt(L, "load %s: its unit-stride axis is not the ring's contiguous one", o->let->names[0]);
    if (L->k->params[pa.base].type.dtype != ty->dtype)
        return lower_fmt(L, "load %s: pointer %s's elements are not the loaded type", o->let->names[0],
                         L->k->params[pa.base].name);
    tilec_tma_map *m = &w->maps[i];
    memset(m, 0, sizeof *m);
    m->ptr = (uint32_t)pa.base;
    m->rows = map_field(bound[rax], pa.kext[rax]);
    m->cols = map_field(bound[cax], pa.kext[cax]);
    m->stride = map_field(pa.stride[rax], pa.kstride[rax]);
    if (m->rows == TILEC_TMA_NONE || m->cols == TILEC_TMA_NONE || m->stride == TILEC_TMA_NONE || ty->dims[rax] > 256)
        return lower_fmt(L, "load %s: an extent or stride past a tensor map's", o->let->names[0]);
    m->box_rows = (uint32_t)ty->dims[rax];
    m->elem_bytes = tilec_dtype_size(ty->dtype);
    m->box_cols = 128 / m->elem_bytes;
    m->bf16 = ty->dtype == TILEC_DT_BF16;
    lower_map_batch(m, &pa);
    w->R[i] = pa.idx[rax];
    w->C[i] = pa.idx[cax];
    w->Ra[i] = pa.add[rax];
    w->Ca[i] = pa.add[cax];
    w->Z[i] = pa.z;
    return NULL;
}

/* Every ring of rp by TMA (w->nmaps its count), or none (0, *why says
 * which load no map describes). */
static void ring_maps(lw *L, const tilec_stmt *loop, const ring_plan *rp, wg_plan *w, const char **why)
{
    *why = rp->n > TILEC_TMA_MAX_MAPS ? "more rings than a twin's tensor maps" : NULL;
    lower_bind_loop_scope(L, loop);
    for (int i = 0; i < rp->n && !*why; i++)
        *why = ring_map(L, &rp->op[i], w, i);
    lower_leave(L);
    w->nmaps = *why ? 0 : rp->n;
}

/* The value of the let or assignment that binds `name` in block b (nested blocks too; the last one), or NULL. */
static const tilec_expr *bound_value(const tilec_block *b, const char *name)
{
    const tilec_expr *v = NULL;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        const tilec_expr *x;
        if ((s->kind == TILEC_ST_LET || s->kind == TILEC_ST_ASSIGN) && !strcmp(s->names[0], name))
            v = s->value;
        if ((x = bound_value(&s->body, name)) != NULL || (x = bound_value(&s->orelse, name)) != NULL)
            v = x;
    }
    return v;
}

/* The hint n of a `range(n)` that e's rows come from: e, through lets, up to
 * an index `x[:, None]`, then x's ranges. rows: inside such an x. NULL: none,
 * or more than one. */
static const char *rows_hint(lw *L, const tilec_expr *e, int rows, int depth, const char *found)
{
    int64_t h;
    if (!e || depth > 16 || (found && !*found))
        return found;
    if (e->kind == TILEC_EX_NAME)
        return rows_hint(L, bound_value(&L->k->body, e->name), rows, depth + 1, found);
    if (rows && tilec_is_builtin(e, BI_RANGE) && e->nargs == 1 && e->args[0]->kind == TILEC_EX_NAME &&
        lower_hint_value(L, e->args[0]->name, &h))
        return found && strcmp(found, e->args[0]->name) ? "" : e->args[0]->name;
    if (e->kind == TILEC_EX_INDEX) {
        if (e->nargs != 3 || e->args[1]->kind != TILEC_EX_SLICE || e->args[2]->kind != TILEC_EX_NONE)
            return found;
        rows = 1;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        found = rows_hint(L, e->args[i], rows, depth + 1, found);
    return found;
}

/* The hint n of a `range(n)` that tile e's axis `axis` comes from: e,
 * through lets, up to an index `x[:, None]` (axis 0) or `x[None, :]` (axis
 * 1), then x's ranges; inside: within such an x. NULL: none, "": more
 * than one (rows_hint along either axis). */
static const char *axis_hint(lw *L, const tilec_expr *e, int axis, int inside, int depth, const char *found)
{
    int64_t h;
    if (!e || depth > 16 || (found && !*found))
        return found;
    if (e->kind == TILEC_EX_NAME)
        return axis_hint(L, bound_value(&L->k->body, e->name), axis, inside, depth + 1, found);
    if (inside && tilec_is_builtin(e, BI_RANGE) && e->nargs == 1 && e->args[0]->kind == TILEC_EX_NAME &&
        lower_hint_value(L, e->args[0]->name, &h))
        return found && strcmp(found, e->args[0]->name) ? "" : e->args[0]->name;
    if (e->kind == TILEC_EX_INDEX) {
        if (e->nargs != 3)
            return found;
        int a0 = e->args[1]->kind == TILEC_EX_SLICE && e->args[2]->kind == TILEC_EX_NONE;
        int a1 = e->args[1]->kind == TILEC_EX_NONE && e->args[2]->kind == TILEC_EX_SLICE;
        if (!(axis == 0 ? a0 : axis == 1 ? a1 : 0))
            return found;
        return axis_hint(L, e->args[0], axis, 1, depth + 1, found);
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        found = axis_hint(L, e->args[i], axis, inside, depth + 1, found);
    return found;
}

/* The remark's clause where two consumer warp groups take turns over
 * fewer than WGA_TURNS_WALK_N keys a step (the first dot's N: S = Q K^T's
 * columns) and no variant of the kernel gives that dot WGA_TURNS_WALK_N:
 * such a twin runs one tile a block (target.c), and the example's d64
 * picks its 128-key variant, whose twin a docs-written form's `{ BN = 128
 * }` reproduces line for line (bench/results/attnforms_s51.md). The ring
 * must hold two stages of the wider K and V tiles. "" otherwise. */
static const char *short_keys(lw *L, const tilec_expr *d0, const ring_plan *rp, const wg_plan *w)
{
    const tilec_kernel *k = L->k;
    if (!takes_turns(w) || !w->key_n || w->key_n >= WGA_TURNS_WALK_N || WGA_TURNS_WALK_N % w->key_n)
        return "";
    for (uint32_t v = 0; d0->vtypes && v < tilec_kernel_variant_count(k); v++)
        if (d0->vtypes[v].rank == 2 && d0->vtypes[v].dims[1] >= WGA_TURNS_WALK_N)
            return "";
    if ((WGA_RING_MAX - w->sa_bytes) / (w->stage_bytes * (WGA_TURNS_WALK_N / w->key_n)) < 2)
        return "";
    /* the keys' hint: the axis of B's load that is the dot's N (axis 1 of B as read, through trans) */
    const tilec_expr *b = d0->args[1];
    int axis = 1;
    for (; tilec_is_builtin(b, BI_TRANS) && b->nargs == 1; b = b->args[0])
        axis ^= 1;
    const tilec_expr *ld = NULL;
    for (int i = 0; b->kind == TILEC_EX_NAME && i < rp->n && !ld; i++)
        if (!strcmp(b->name, rp->op[i].let->names[0]))
            ld = rp->op[i].let->value;
        else if (rp->op[i].alias && !strcmp(b->name, rp->op[i].alias->names[0]))
            ld = rp->op[i].let->value, axis ^= 1; /* y = trans(x) */
    const char *h = ld && ld->nargs >= 1 ? axis_hint(L, ld->args[0], axis, 0, 0, NULL) : NULL;
    return lower_fmt(L, ", %lld keys a step and no variant with %d: add one (%s) for the twin that walks a "
                        "persistent grid",
                     (long long)w->key_n, WGA_TURNS_WALK_N,
                     h && *h ? lower_fmt(L, "`variants { {}, { %s = %d } }`", h, WGA_TURNS_WALK_N)
                             : lower_fmt(L, "its keys' hint at %d", WGA_TURNS_WALK_N));
}

/* The remark's clause where the twin runs one consumer warp group (M = 64
 * rows) and no variant of the kernel gives the dot 128: two groups would
 * take turns there (ring stages, with A in shared memory twice as large,
 * permitting). "" otherwise. */
static const char *lone_group(lw *L, const tilec_expr *d0, const wg_plan *w)
{
    const tilec_kernel *k = L->k;
    if (w->warps != WGA_WG_WARPS)
        return "";
    for (uint32_t v = 0; d0->vtypes && v < tilec_kernel_variant_count(k); v++)
        if (d0->vtypes[v].rank == 2 && d0->vtypes[v].dims[0] == 2 * w->M)
            return "";
    if ((WGA_RING_MAX - 2 * w->sa_bytes) / w->stage_bytes < 2)
        return "";
    const char *h = rows_hint(L, d0->args[0], 0, 0, NULL);
    return lower_fmt(L, ", one consumer warp group (M = %lld rows) and no variant with %lld: add one (%s) for two groups "
                        "taking turns",
                     (long long)w->M, (long long)(2 * w->M),
                     h && *h ? lower_fmt(L, "`variants { {}, { %s = %lld } }`", h, (long long)(2 * w->M))
                             : lower_fmt(L, "its rows' hint at %lld", (long long)(2 * w->M)));
}

/* The most trips of the attention loop a unit (lower_wg_trips, shared
 * with the GEMM twins): S over BN for the docs-written forms and the
 * example, however the bound is spelt (`minimum` assigned in a branch, a
 * scalar `where`, `cdiv(S, BN)` steps of one). The launch walks many units
 * a multiprocessor where they are few trips (runtime/tma.c), so a bound
 * below P (a causal diagonal) counts only where the walk balances the
 * units' trips: pid(0) reversed (order.c), the persistent twin's walk
 * taking the heaviest and lightest query tiles in pairs (unit_walk); a
 * plain round robin over tiles of 1 to n trips gives a block twice
 * another's (fa_d64_lets before order.c read its `where`: 6% slower
 * walking, causal S = 1024, bench/results/merged_s49.md). */
static void wga_trips(lw *L, const tilec_stmt *loop, wg_plan *w) { lower_wg_trips(L, loop, L->order.rev, w); }

int lower_wga_note(lw *L, const tilec_stmt *loop, const ring_plan *rp)
{
    if (L->tw.on)
        return 0;
    if (L->tw.seen++) { /* one dot loop a twin: the earlier one's twin is off */
        for (int i = 0; i < L->nrem; i++)
            if (L->rem[i].wg) {
                L->rem[i].wg = 0;
                L->rem[i].missed = L->rem[i].wg_path ? "wgmma (the sm_90a twin)" : "wgmma + TMA";
                L->rem[i].why = lower_fmt(L, "the kernel has another dot loop (line %u; the twin takes one)", loop->loc.line);
                L->rem[i].why_line = 0;
            }
        L->tw.loop = NULL;
        return lower_miss(L, 0, "the kernel has more than one dot loop (the twin takes one)");
    }
    if (L->split)
        return lower_miss(L, 0, "the `split_k` hint (split-K has no twin)");
    if (!placed_ok(L, loop))
        return 0;
    const tilec_expr *d[RING_MAX];
    int nd = 0;
    for (uint32_t i = 0; i < loop->body.nstmts && nd >= 0; i++)
        nd = dots_of(loop->body.stmts[i]->value, d, nd, RING_MAX);
    if (nd < 0 || nd != lower_block_dots(&loop->body))
        return lower_miss(L, 0, "a dot of the loop is inside a branch (wgmma needs every warp of its group)");
    int64_t M = 0, stage = 0;
    lower_bind_loop_scope(L, loop);
    int ok = 1;
    for (int i = 0; i < nd && ok; i++)
        ok = dot_ok(L, d[i], &loop->body, rp, &M);
    lower_leave(L);
    if (!ok)
        return 0;
    if (nd != rp->n)
        return lower_miss(L, 0, "the loop's rings and its dots do not pair one to one");
    for (int i = 0; i < rp->n; i++) {
        const tilec_type *t = lower_ty(L, rp->op[i].let->value);
        stage += t->dims[0] * t->dims[1] * (int64_t)tilec_dtype_size(t->dtype);
    }
    wg_plan *w = &L->tw.plan;
    memset(w, 0, sizeof *w);
    lower_bind_loop_scope(L, loop);
    const char *sa = plan_smem_a(L, loop, d, nd, w);
    const tilec_type *t0 = lower_ty(L, d[0]);
    w->key_n = t0 && t0->rank == 2 ? t0->dims[1] : 0;
    lower_leave(L);
    int S = (int)((WGA_RING_MAX - w->sa_bytes) / stage); /* A in shared memory counts in the ring's bytes */
    if (S > WGA_MAX_STAGES)
        S = WGA_MAX_STAGES;
    if (S < 2)
        return lower_miss(L, 0, "fewer than two stages of its rings (%lld bytes a stage%s) fit", (long long)stage,
                          w->sa_bytes ? lower_fmt(L, ", beside %lld bytes of A", (long long)w->sa_bytes) : "");
    w->attn = 1;
    w->M = M;
    w->S = S;
    w->stage_bytes = stage;
    w->warps = wga_warps(M);
    wga_trips(L, loop, w);
    plan_defer(L, loop, w);
    const char *nomap;
    ring_maps(L, loop, rp, w, &nomap);
    wga_blocks(w, S, w->nmaps > 0);
    w->how = lower_fmt(L, ", %d stages of %lld bytes, %d consumer warps%s%s%s%s%s%s%s%s%s", S, (long long)stage, w->warps,
                       w->warps != L->nwarps ? lower_fmt(L, " where the `warps` hint says %d", L->nwarps) : "",
                       lone_group(L, d[0], w),
                       takes_turns(w) ? ", two warp groups taking turns to issue, the last dot in flight" : "",
                       short_keys(L, d[0], rp, w),
                       w->wide_acc ? lower_fmt(L, ", each dot waited (the last dot's accumulator is %lld columns, "
                                                  "wider than the %d kept in flight)",
                                               (long long)w->wide_acc, WGA_DEFER_N)
                                   : "",
                       sa ? lower_fmt(L, ", %s", sa) : "",
                       nomap ? "" : lower_fmt(L, ", setmaxnreg %d for the consumers, %d for the producer's thread",
                                              w->creg, w->preg),
                       w->blocks > 1 ? lower_fmt(L, ", two blocks an SM (64 rows a block; each block "
                                                    "%lld bytes of shared memory, 128 registers a thread at launch)",
                                                 (long long)lower_wg_block(S, w->stage_bytes, w->sa_bytes))
                       : w->warps == WGA_WG_WARPS && !w->nmaps
                           ? ", one block an SM (64 rows, but its rings by cp.async: two blocks an SM "
                             "are built only where TMA fills them)"
                       : w->warps == WGA_WG_WARPS
                           ? lower_fmt(L, ", one block an SM (64 rows, but %lld bytes of shared memory a "
                                          "block do not fit twice)",
                                       (long long)lower_wg_block(S, w->stage_bytes, w->sa_bytes))
                           : "",
                       nomap ? lower_fmt(L, "; not by TMA: %s", nomap) : "");
    L->tw.loop = loop;
    return 1;
}

/* ---- the twin's loop ---- */

/* The producer warp group: for each iteration, wait for its stage to be
 * empty, copy its tiles (128 threads, 16 bytes a cp.async, zero-filled
 * where the masks say), and once the previous iteration's copies have
 * landed, fence them for the async proxy and arrive on its *full*. */
static void producer(lw *L, const tilec_stmt *loop, ring_plan *rp, const char *v)
{
    int S = rp->S, nt = L->nt;
    lower_line(L, "if (tl_tid0 >= %d) { /* the producer warp group */", nt);
    L->ind++;
    lower_line(L, "tl_setmaxnreg_dec<%d>();", L->tw.plan.preg);
    lower_line(L, "const int tl_tid = tl_tid0 - %d;", nt);
    lower_line(L, "int tl_it = 0;");
    lower_line(L, "for (tl_ix %s = tl_lo; %s < tl_hi; %s += tl_st, ++tl_it) {", v, v, v);
    L->ind++;
    lower_line(L, "const int tl_ps = tl_it %% %d;", S);
    lower_line(L, "if (tl_it >= %d)", S);
    lower_line(L, "    tl_mbar_wait(tl_empty + tl_ps * 8, ((tl_it / %d) + 1) & 1);", S);
    L->nt = WGA_PRODUCER; /* the copies spread over the producer's threads */
    lower_bind_loop_scope(L, loop);
    lower_ring_issue(L, rp, "tl_ps");
    lower_leave(L);
    L->nt = nt;
    lower_line(L, "tl_cp_commit();");
    lower_line(L, "if (tl_it > 0) { /* the previous stage has landed */");
    lower_line(L, "    tl_cp_wait<1>();");
    lower_line(L, "    tl_fence_async_smem();");
    lower_line(L, "    tl_mbar_arrive(tl_full + ((tl_it - 1) %% %d) * 8);", S);
    lower_line(L, "}");
    L->ind--;
    lower_line(L, "}");
    lower_line(L, "if (tl_it > 0) {");
    lower_line(L, "    tl_cp_wait<0>();");
    lower_line(L, "    tl_fence_async_smem();");
    lower_line(L, "    tl_mbar_arrive(tl_full + ((tl_it - 1) %% %d) * 8);", S);
    lower_line(L, "}");
    lower_line(L, "return;");
    L->ind--;
    lower_line(L, "}");
}

/* The producer's loop by TMA (plan w's maps, one a ring; tl_it its
 * counter, which a persistent twin carries over the block's tiles): one
 * thread waits for each iteration's stage to be empty, expects its bytes
 * on its *full* and issues each ring's boxes (all the tile's rows x 64
 * elements, box j at j x rows x 128 bytes of the slot, as the cp.async
 * copies lay them). */
static void producer_tma_loop(lw *L, const tilec_stmt *loop, const ring_plan *rp, const wg_plan *w, const char *v)
{
    int S = rp->S;
    lower_line(L, "for (tl_ix %s = tl_lo; %s < tl_hi; %s += tl_st, ++tl_it) {", v, v, v);
    L->ind++;
    lower_line(L, "const int tl_s = tl_it %% %d;", S);
    lower_line(L, "if (tl_it >= %d)", S);
    lower_line(L, "    tl_mbar_wait(tl_empty + tl_s * 8, ((tl_it / %d) + 1) & 1);", S);
    lower_line(L, "tl_mbar_expect(tl_full + tl_s * 8, %lld);", (long long)w->stage_bytes);
    lower_bind_loop_scope(L, loop);
    for (int i = 0; i < rp->n; i++) {
        const ring_op *o = &rp->op[i];
        const tilec_type *t = lower_ty(L, o->let->value);
        int64_t rows = w->maps[i].box_rows, nb = t->dims[o->trans ? 0 : 1] / w->maps[i].box_cols;
        const char *col, *row;
        lower_wg_coords(L, w, i, &col, &row);
        const char *z = lower_wg_batch(L, w, i);
        for (int64_t j = 0; j < nb; j++)
            lower_line(L, "tl_tma_%dd(tl_sa(tl_smem) + tl_wro + %u + tl_s * %lld + %lld, &tl_tm%d, (int)(%s) + %lld, (int)(%s)%s, "
                          "tl_full + tl_s * 8); /* %s */",
                       z[0] ? 3 : 2, o->off, (long long)o->bytes, (long long)(j * rows * 128), i, col,
                       (long long)(j * w->maps[i].box_cols), row, z, lower_cname(L, o->let->names[0]));
    }
    lower_leave(L);
    L->ind--;
    lower_line(L, "}");
}

/* The producer warp group of a one-tile twin by TMA: one thread runs the loop. */
static void producer_tma(lw *L, const tilec_stmt *loop, const ring_plan *rp, const wg_plan *w, const char *v)
{
    int nt = L->nt;
    lower_line(L, "if (tl_tid0 >= %d) { /* the producer warp group: one thread issues the TMA copies */", nt);
    L->ind++;
    lower_line(L, "tl_setmaxnreg_dec<%d>();", w->preg);
    lower_line(L, "if (tl_tid0 == %d) {", nt);
    L->ind++;
    lower_line(L, "int tl_it = 0;");
    producer_tma_loop(L, loop, rp, w, v);
    L->ind--;
    lower_line(L, "}");
    lower_line(L, "return;");
    L->ind--;
    lower_line(L, "}");
}

/* Plan w's A operand into shared memory at tl_wro (the consumers' copy:
 * the producer's threads hold the same values as warps 0-3): element
 * (r, k) in row r of box k / 64 (M rows of 128 bytes a box), its 16-byte
 * chunk (k / 8) % 8 at chunk ((k / 8) % 8) ^ (r % 8), as a ring's K-major
 * tile is; then fenced for the async proxy (wgmma reads through it). 0
 * where the tile is not a register tile here. */
static int store_smem_a(lw *L, const wg_plan *w)
{
    val *x = lower_lookup(L, w->sa_name);
    const tilec_type *at = lower_ty(L, w->sa_dot->args[0]);
    if (!x || x->kind != VK_MAT || x->ty.rank != 2)
        return 0;
    tilec_dtype d = at->dtype;
    lay y = x->ly;
    int ax, run = x->ty.dtype == d && !lower_lay_guard(L, &y) ? lower_lay_run(L, &y, &ax) : 1;
    if (run < 2 || ax != 1)
        run = 1;
    while (run > 8) /* a 16-byte chunk at most: runs stay inside one swizzled chunk */
        run /= 2;
    const char *vt = run == 8 ? "uint4" : run == 4 ? "uint2" : run == 2 ? "unsigned" : lower_ctype(d);
    lower_line(L, "if (tl_tid0 < %d) { /* %s into shared memory for wgmma: K-major, the 128-byte swizzle */", L->nt,
               lower_cname(L, w->sa_name));
    L->ind++;
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_c = 0; tl_c < %d; tl_c += %d) {", y.E, run);
    L->ind++;
    lower_line(L, "const int tl_j = tl_c;");
    lower_emit_index(L, &y, "tl_j");
    const char *g = lower_lay_guard(L, &y);
    const char *v = run > 1 || x->ty.dtype == d
                        ? lower_fmt(L, "*(const %s *)&%s[tl_j]", vt, x->c)
                        : lower_st_elem(L, lower_conv(L, lower_ld_elem(L, lower_fmt(L, "%s[tl_j]", x->c), x->ty.dtype),
                                                      x->ty.dtype, d),
                                        d);
    lower_line(L, "%s*(%s *)(tl_smem + tl_wro + (tl_i1 >> 6) * %lld + tl_i0 * 128 + ((((tl_i1 >> 3) & 7) ^ (tl_i0 & 7)) << 4) + "
                  "(tl_i1 & 7) * %u) = %s;",
               g ? lower_fmt(L, "if (%s) ", g) : "", vt, (long long)(at->dims[0] * 128), tilec_dtype_size(d), v);
    L->ind--;
    lower_line(L, "}");
    lower_line(L, "tl_fence_async_smem();");
    L->ind--;
    lower_line(L, "}");
    return 1;
}

/* The consumer warp groups' turns begin (FlashAttention-3's ping-pong:
 * group 0 issues first) and end (group 0 takes group 1's last arrive, so
 * none is left pending; constant ids after the wait: a computed id there,
 * with P V in flight, had ptxas serialize every wgmma, C7515), around
 * the loop of a one-tile twin (a persistent twin's per unit: turns_unit_end). */
static const char *const turns_begin[] = {
    "const int tl_wgi = tl_warp >> 2; /* this consumer warp group: its turn is barrier 2 + tl_wgi */",
    "if (tl_wgi == 1)", "    tl_bar_arrive_n(2, 256);", "tl_bar_sync_n(2 + tl_wgi, 256);", NULL};
static const char *const turns_end[] = {"if (tl_wgi == 0) {", "    tl_bar_arrive_n(3, 256);", "    tl_bar_sync_n(2, 256);",
                                        "} else {", "    tl_bar_arrive_n(2, 256);", "}", NULL};
/* A persistent twin's turns per unit: a token passed from group to group
 * (group g takes it by bar.sync on 2 + g, passes it by bar.arrive on the
 * other's), group 1 passing it to group 0 once before the walk and group 0
 * taking the last pass after it. Each unit: each group takes its turn
 * before the loop (group 0 first; group 1 once group 0's first S is
 * issued) and passes it on after the loop's last wait, before its
 * epilogue, so neither group's last P V waits behind the other's
 * epilogue or next unit. Each group alternates take and pass, so no group
 * arrives on a barrier twice before the other has synced on it. */
static const char *const turns_unit_end[] = {"if (tl_wgi == 0) /* the turn passes on before the epilogue */",
                                             "    tl_bar_arrive_n(3, 256);", "else", "    tl_bar_arrive_n(2, 256);", NULL};

static void wga_lines(lw *L, const char *const *l)
{
    for (; *l; l++)
        lower_line(L, "%s", *l);
}

/* The ring's place (tl_wro: its block at byte base, 1024-aligned) and its
 * barriers past its `ring` bytes: each stage's *full* (one arrival, the
 * TMA thread's expect, or the cp.async producer's 128) and *empty* (one a
 * consumer warp), set up by thread 0. */
static void ring_barriers(lw *L, uint32_t base, int64_t ring, int S)
{
    lower_line(L, "const unsigned tl_wro = ((tl_sa(tl_smem + %u) + 1023u) & ~1023u) - tl_sa(tl_smem);", base);
    lower_line(L, "const unsigned tl_full = tl_sa(tl_smem) + tl_wro + %lld, tl_empty = tl_full + %d;", (long long)ring,
               8 * S);
    lower_line(L, "if (tl_tid0 == 0) {");
    lower_line(L, "    for (int tl_s = 0; tl_s < %d; ++tl_s) {", S);
    lower_line(L, "        tl_mbar_init(tl_full + tl_s * 8, %d);", L->tw.plan.nmaps ? 1 : WGA_PRODUCER);
    lower_line(L, "        tl_mbar_init(tl_empty + tl_s * 8, %d);", L->nwarps);
    lower_line(L, "    }");
    lower_line(L, "    tl_mbar_fence_init();");
    lower_line(L, "}");
}

int lower_wga_loop(lw *L, const tilec_stmt *loop, ring_plan *rp)
{
    if (!L->tw.on || !L->tw.plan.attn || loop != L->tw.loop)
        return 0;
    wg_plan *w = &L->tw.plan;
    int S = w->S;
    int64_t ring = w->sa_bytes; /* A in shared memory first (1024-byte multiples), then the rings */
    for (int i = 0; i < rp->n; i++) { /* unpadded tiles, each ring's slots side by side (1024-byte multiples) */
        ring_op *o = &rp->op[i];
        const tilec_type *t = lower_ty(L, o->let->value);
        o->bytes = t->dims[0] * t->dims[1] * (int64_t)tilec_dtype_size(t->dtype);
        o->off = (uint32_t)ring;
        ring += o->bytes * S;
    }
    plan_defer(L, loop, w);
    w->pingpong = takes_turns(w);
    rp->S = S;
    rp->base = "tl_wro + ";
    rp->wg = 1;
    uint32_t base = lower_alloc_smem(L, lower_wg_block(S, w->stage_bytes, w->sa_bytes));
    lower_plan_loop(L, loop, 1);
    const char *v = lower_cname(L, loop->names[0]);
    int persist = w->persist; /* the parts lower_wga_finish walks per tile (L->tw.hdr, prod, cons) */
    L->tw.pre = L->out.n;
    if (persist) { /* the barriers once, before the block's walk */
        ring_barriers(L, base, ring, S);
        lower_line(L, "__syncthreads();");
        L->tw.hdr = L->out.n;
    }
    lower_line(L, "{ /* dots on wgmma, %d-stage ring by %s (sm_90a) */", S,
               w->nmaps ? "TMA" : "a cp.async producer warp group");
    L->ind++;
    lower_cp_bounds(L, loop);
    if (!persist) {
        ring_barriers(L, base, ring, S);
        if (w->sa_dot && !store_smem_a(L, w))
            L->failed = 1;
        lower_line(L, "__syncthreads();");
    }
    if (persist) { /* this tile's K / V copies into the ring the walk carries (tl_it) */
        L->tw.prod = L->out.n;
        producer_tma_loop(L, loop, rp, w, v);
        L->tw.cons = L->out.n;
    } else if (w->nmaps)
        producer_tma(L, loop, rp, w, v);
    else
        producer(L, loop, rp, v);
    if (!persist) {
        L->tw.epi = L->out.n; /* from here on only the consumer warps run: their own named barrier */
        lower_line(L, "tl_setmaxnreg_inc<%d>();", w->creg);
    }
    int wide = lower_loop_wide(L, loop);
    if (persist) {
        /* tl_it counts on over the block's tiles (the stages' phases); this tile's first */
        lower_line(L, "const int tl_it0 = tl_it;");
        if (w->sa_dot) { /* each warp group writes and reads its own 64 rows of A: its previous tile's wgmma are done */
            lower_line(L, "asm volatile(\"bar.sync %%0, 128;\" :: \"r\"(4 + (tl_warp >> 2)) : \"memory\"); /* this warp "
                          "group's previous A is read */");
            if (!store_smem_a(L, w))
                L->failed = 1;
            lower_line(L, "asm volatile(\"bar.sync %%0, 128;\" :: \"r\"(4 + (tl_warp >> 2)) : \"memory\"); /* its A is "
                          "written */");
        }
        if (w->pingpong) /* this unit's turn (turns_unit_end) */
            lower_line(L, "tl_bar_sync_n(2 + tl_wgi, 256);");
    } else {
        lower_line(L, "int tl_it = 0;");
        if (w->pingpong) /* warp group 0 issues first; its turn for the first iteration's first dot starts here */
            wga_lines(L, turns_begin);
    }
    lower_comment_loc(L, &loop->loc);
    lower_line(L, "for (tl_ix %s = tl_lo; %s < tl_hi; %s += tl_st, ++tl_it) {", v, v, v);
    L->ind++;
    lower_line(L, "tl_mbar_wait(tl_full + (tl_it %% %d) * 8, (tl_it / %d) & 1);", S, S);
    lower_ring_body(L, loop, rp, wide);
    if (!w->defer_dot) {
        lower_line(L, "if (tl_lane == 0) /* this warp's wgmma are done with the stage */");
        lower_line(L, "    tl_mbar_arrive(tl_empty + (tl_it %% %d) * 8);", S);
    }
    L->ind--;
    lower_line(L, "}");
    if (w->defer_dot) { /* the last iteration's last products */
        val *x = lower_lookup(L, w->defer_acc);
        lower_line(L, "tl_wg_wait<0>();");
        if (x && x->kind == VK_MAT)
            lower_line(L, "tl_wg_pin(%s, %d);", x->c, x->ly.E);
        else
            L->failed = 1;
        lower_line(L, "if (tl_it > %s && tl_lane == 0)", persist ? "tl_it0" : "0");
        lower_line(L, "    tl_mbar_arrive(tl_empty + ((tl_it - 1) %% %d) * 8);", S);
    }
    if (w->pingpong)
        wga_lines(L, persist ? turns_unit_end : turns_end);
    L->ind--;
    lower_line(L, "}");
    if (persist)
        L->tw.epi = L->out.n;
    L->tw.done = 1;
    return 1;
}

/* The wgmma form of the twin's dots (N, B K-major, A from registers or
 * `ss` from shared memory), noted for lower_wga_finish; its name. */
static const char *rs_form(lw *L, int64_t N, int bk, tilec_dtype d, int ss)
{
    wg_plan *w = &L->tw.plan;
    int i = 0, form = bk | (d == TILEC_DT_BF16) << 1 | ss << 2;
    while (i < w->nfn && (w->fn_n[i] != N || w->fn_bk[i] != form))
        i++;
    if (i == w->nfn) {
        if (w->nfn == 4)
            return NULL;
        w->fn_n[i] = N;
        w->fn_bk[i] = form;
        w->nfn++;
    }
    return lower_fmt(L, "tl_wg%s_%s_n%lld%s", ss ? "mma" : "rs", d == TILEC_DT_BF16 ? "bf16" : "f16", (long long)N,
                     bk ? "_bk" : "");
}

int lower_wga_dot(lw *L, val *acc, const val *ra, const val *rb, int bt, int64_t K, int64_t N, tilec_dtype d)
{
    const lay *y = &acc->ly;
    wg_plan *w = &L->tw.plan;
    int ss = w->sa_dot && L->curdot == w->sa_dot; /* A from shared memory (store_smem_a) */
    if ((!ra && !ss) || y->kind != LY_MMA || y->wn != 1 || y->wtm != 16 || y->wm != L->nwarps || y->wtn != N || K % 16)
        return 0;
    const char *fn = rs_form(L, N, bt, d, ss);
    if (!fn)
        return 0;
    const char *bn = lower_cname(L, rb->rlet->names[0]), *bk = bt ? "K-major" : "MN-major, transposed";
    if (ss) {
        /* this warp group's 64 rows of each box (M rows x 128 bytes), a k16 step 32 bytes along them, the next
         * 64 of K a box further: the descriptor's low word plus that offset / 16 (no carry, as B's below) */
        lower_line(L, "/* A %s from shared memory (loop-invariant, K-major), B %s from its swizzled ring (%s) */",
                   lower_cname(L, w->sa_name), bn, bk);
        lower_line(L, "const unsigned long long tl_ad = tl_wg_desc(tl_sa(tl_smem) + tl_wro + (tl_warp >> 2) * 8192, 16, 1024, 1);");
        lower_line(L, "const unsigned tl_adlo = (unsigned)tl_ad, tl_adhi = (unsigned)(tl_ad >> 32);");
    } else {
        lower_line(L, "/* A %s from registers, B %s from its swizzled ring (%s) */", ra->c, bn, bk);
        lower_line(L, "unsigned tl_fw[%lld][4];", (long long)(K / 16));
        lower_line(L, "#pragma unroll");
        lower_line(L, "for (int tl_k = 0; tl_k < %lld; tl_k += 16) {", (long long)K);
        L->ind++;
        lower_frag_a_regs(L, ra, 1, d, "tl_fw[tl_k >> 4]");
        L->ind--;
        lower_line(L, "}");
    }
    const char *fa = ss ? lower_fmt(L, "(unsigned long long)tl_adhi << 32 | (tl_adlo + (((tl_q >> 2) * %lld + (tl_q & 3) * 32) >> 4))",
                                    (long long)(w->M * 128))
                        : "tl_fw[tl_q]";
    /* one descriptor for the stage, each k16 step's its start address plus
     * the step's offset / 16 in the low word (no carry: shared addresses are
     * below 2^18), so a step costs one add, not the descriptor's masks and
     * shifts again (6 uniform instructions a wgmma on the H100's SASS) */
    lower_line(L, "const unsigned long long tl_bd = tl_wg_desc(tl_sa(tl_smem) + %s, %lld, 1024, 1);", rb->c,
               bt ? 16LL : (long long)(K * 128));
    lower_line(L, "const unsigned tl_bdlo = (unsigned)tl_bd, tl_bdhi = (unsigned)(tl_bd >> 32);");
    int defer = w->defer_dot && L->curdot == w->defer_dot, first = w->defer_dot && L->curdot == w->first_dot;
    if (w->pingpong && !first) /* this group's turn (the first dot's began before the last one, in flight) */
        lower_line(L, "tl_bar_sync_n(2 + tl_wgi, 256);");
    lower_line(L, "tl_wg_fence();");
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_q = 0; tl_q < %lld; ++tl_q)", (long long)(K / 16));
    /* K-major: rows of N, a k16 step 32 bytes along them, the next 64 of K
     * a box of N rows further; MN-major: rows of K, a k16 step 16 rows,
     * the next 64 of N a box (K rows) further (leading byte offset) */
    if (bt)
        lower_line(L,
                   "    %s(%s, %s, (unsigned long long)tl_bdhi << 32 | (tl_bdlo + (((tl_q >> 2) * %lld + (tl_q & 3) * "
                   "32) >> 4)));",
                   fn, acc->c, fa, (long long)(N * 128));
    else
        lower_line(L, "    %s(%s, %s, (unsigned long long)tl_bdhi << 32 | (tl_bdlo + ((tl_q * 2048) >> 4)));", fn, acc->c,
                   fa);
    lower_line(L, "tl_wg_commit();");
    if (w->pingpong && !defer) /* the last dot's turn goes on to the next iteration's first dot */
        lower_line(L, "tl_bar_arrive_n(3 - tl_wgi, 256); /* the other group's turn */");
    if (defer) { /* in flight into the next iteration's first dot */
        val *x = lower_lookup(L, w->defer_acc);
        if (!x || x != acc)
            return 0;
        lower_line(L, "/* %s's wgmma stay in flight: the next iteration's first dot waits for them */", acc->c);
        return 1;
    }
    lower_line(L, "tl_wg_wait<0>();"); /* and the previous iteration's deferred products */
    lower_line(L, "tl_wg_pin(%s, %d);", acc->c, acc->ly.E);
    if (first) {
        val *x = lower_lookup(L, w->defer_acc);
        if (!x || x->kind != VK_MAT)
            return 0;
        lower_line(L, "tl_wg_pin(%s, %d);", x->c, x->ly.E);
        lower_line(L, "if (tl_it > %s && tl_lane == 0) /* the previous iteration's wgmma are done with its stage */",
                   w->persist ? "tl_it0" : "0");
        lower_line(L, "    tl_mbar_arrive(tl_empty + ((tl_it - 1) %% %d) * 8);", w->S);
    }
    return 1;
}

/* ---- the twin in the translation unit ---- */

/* tl_wgrs_<t>_n<N>[_bk](acc, a[4], descB): acc += A (the m16n8k16 A
 * fragment of each warp's 16 rows, from registers) @ B, m64nNk16; B
 * MN-major with the transpose bit, or K-major (_bk) without. */
static void rs_fn(strbuf *tu, const char *t, int64_t N, int bk)
{
    const char *sfx = bk ? "_bk" : "", *SFX = bk ? "_BK" : "";
    long long h = (long long)(N / 2);
    sb_printf(tu, "#ifndef TL_WGRS_%s_N%lld%s\n#define TL_WGRS_%s_N%lld%s\n", t, (long long)N, SFX, t, (long long)N, SFX);
    sb_printf(tu, "static __device__ __forceinline__ void tl_wgrs_%s_n%lld%s(float *d, const unsigned *a, unsigned long long db)\n{\n",
              t, (long long)N, sfx);
    sb_printf(tu, "    asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %%%lld, 0; "
                  "wgmma.mma_async.sync.aligned.m64n%lldk16.f32.%s.%s {",
              h + 5, (long long)N, t, t);
    for (long long i = 0; i < h; i++)
        sb_printf(tu, "%s%%%lld", i ? ", " : "", i);
    sb_printf(tu, "}, {%%%lld, %%%lld, %%%lld, %%%lld}, %%%lld, p, 1, 1, %d; }\"\n        : ", h, h + 1, h + 2, h + 3, h + 4,
              !bk);
    for (long long i = 0; i < h; i++)
        sb_printf(tu, "%s\"+f\"(d[%lld])", i ? ", " : "", i);
    sb_printf(tu, "\n        : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"l\"(db), \"n\"(1) : \"memory\");\n}\n#endif\n");
}

/* Why the persistent form of twin pass L (lowered with plan.persist) may
 * not run, or NULL: its walk runs the statements before the loop in each
 * role apart, so no block-wide barrier may stand among them, and nothing
 * may return after the loop. */
const char *lower_wga_persist_no(lw *L)
{
    const char *s = sb_str(&L->out), *sync = "__syncthreads();";
    if (!L->tw.done || !L->tw.plan.persist)
        return "the persistent pass did not reach the dot loop";
    const char *q = strstr(s + L->tw.body, sync);
    if (q && q < s + L->tw.pre)
        return "a statement before the loop meets at a block-wide barrier (each role runs them apart)";
    const char *r = strstr(s + L->tw.epi, "return");
    return r && r < s + L->tw.end ? "a statement after the loop returns" : NULL;
}

/* The persistent attention twin from pass L (lower_wga_loop's parts):
 * the barriers set up once; then the producer's thread (in its warp
 * group's branch, which returns) and the consumer warps each walk the block's
 * units (tl_u = blockIdx.x, + gridDim.x, ...: a query tile of a head,
 * lower_wg_unit_pids), each running the statements before the loop for its
 * unit, the ring's stage counter tl_it carried over the units (the
 * barriers' phases), so the producer copies the next unit's K and V while
 * the consumers finish this one, waiting on the ring's empty barriers
 * alone. */
/* The walk over the block's units and each unit's tl_pid0..2. Where
 * order.c reversed pid(0) (a causal loop: query tile i runs i + 1 key
 * tiles), a head's query tiles are taken in mirrored pairs, the heaviest
 * and the lightest, then the next two (tile n0 - 1, 0, n0 - 2, 1, ...,
 * pid(0) fastest, then pid(1), pid(2)), and a block that walks
 * (gridDim.x < units) takes a pair a step (units 2b, 2b + 1, then 2b +
 * 2 gridDim.x ...), so every block's steps add to about the same: a plain
 * round robin over the reversed tiles gave a block tiles of one or two
 * weights (8 query tiles a head and 132 blocks: b + 132 k mod 8 takes two
 * values), the heaviest blocks twice the lightest. Else the GEMM twins'
 * order (lower_wg_unit_pids) one unit a step. */
static void unit_walk(strbuf *tu, const wg_plan *w, int rev)
{
    if (!rev) {
        sb_puts(tu, "        for (int tl_u = (int)blockIdx.x; tl_u < tl_units; tl_u += (int)gridDim.x) {\n");
        lower_wg_unit_pids(tu, w, 0);
        return;
    }
    sb_puts(tu, "        for (int tl_u = tl_pairs ? 2 * (int)blockIdx.x : (int)blockIdx.x; tl_u < tl_units;\n"
                "             tl_u += !tl_pairs ? (int)gridDim.x : (tl_u & 1) ? 2 * (int)gridDim.x - 1 : 1) {\n"
                "        const int tl_h = tl_u / tl_grid0, tl_i = tl_u - tl_h * tl_grid0;\n"
                "        const int tl_pid0 = (tl_i & 1) ? tl_i >> 1 : tl_grid0 - 1 - (tl_i >> 1);\n"
                "        const int tl_pid1 = tl_h % tl_grid1, tl_pid2 = tl_h / tl_grid1;\n"
                "        (void)tl_pid0; (void)tl_pid1; (void)tl_pid2;\n");
}

static void persist_attn(lw *L, strbuf *tu)
{
    const wg_plan *w = &L->tw.plan;
    const char *b = sb_str(&L->out);
    const size_t body = L->tw.body, pre = L->tw.pre, hdr = L->tw.hdr, prod = L->tw.prod, cons = L->tw.cons;
    sb_add(tu, b, body);
    sb_add(tu, b + pre, hdr - pre);
    sb_puts(tu, "    const int tl_units = tl_grid0 * tl_grid1 * tl_grid2; /* a persistent grid: each block walks units */\n");
    if (L->order.rev) /* unit_walk */
        sb_puts(tu, "    const int tl_pairs = (int)gridDim.x < tl_units; /* mirrored query tiles two a step */\n");
    sb_printf(tu, "    if (tl_tid0 >= %d) { /* the producer warp group: one thread issues the TMA copies */\n"
                  "        tl_setmaxnreg_dec<%d>();\n"
                  "        if (tl_tid0 == %d) {\n"
                  "        int tl_it = 0;\n",
              L->nt, w->preg, L->nt);
    unit_walk(tu, w, L->order.rev);
    sb_add(tu, b + body, pre - body);
    sb_add(tu, b + hdr, cons - hdr);
    sb_puts(tu, "    }\n        }\n        }\n        return;\n    }\n");
    sb_printf(tu, "    tl_setmaxnreg_inc<%d>();\n    int tl_it = 0;\n", w->creg);
    if (w->pingpong) /* group 0 takes the first turn: turns_unit_end */
        sb_puts(tu, "    const int tl_wgi = tl_warp >> 2; /* this consumer warp group: its turn is barrier 2 + tl_wgi */\n"
                    "    if (tl_wgi == 1)\n"
                    "        tl_bar_arrive_n(2, 256);\n");
    unit_walk(tu, w, L->order.rev);
    sb_add(tu, b + body, pre - body);
    sb_add(tu, b + hdr, prod - hdr);
    lower_wg_add_consumers(tu, b, cons, cons, L->tw.end, L->nt);
    sb_puts(tu, "        }\n");
    if (w->pingpong) /* group 0 takes group 1's last pass: none is left pending */
        sb_puts(tu, "    if (tl_wgi == 0)\n        tl_bar_sync_n(2, 256);\n");
    sb_add(tu, b + L->tw.end, L->out.n - L->tw.end);
}

int lower_wga_finish(lw *L, strbuf *tu, tilec_tma_meta *meta, const char *fname)
{
    if (!L->tw.done || L->failed || L->out.failed || L->ar.failed || L->smem > SMEM_LIMIT)
        return 0;
    const wg_plan *w = &L->tw.plan;
    sb_puts(tu, "\n#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n");
    sb_puts(tu, lower_wg_helpers());
    sb_puts(tu, "#ifndef TL_WG_PIN\n#define TL_WG_PIN\n"
                "/* the accumulators a wgmma wrote, read only after its wait (the compiler moves no read above it) */\n"
                "static __device__ __forceinline__ void tl_wg_pin(float *d, int n)\n"
                "{\n#pragma unroll\n    for (int i = 0; i < n; ++i)\n        asm volatile(\"\" : \"+f\"(d[i]) :: \"memory\");\n}\n"
                "#endif\n");
    if (w->pingpong)
        sb_puts(tu, "#ifndef TL_BAR_TURN\n#define TL_BAR_TURN\n"
                    "/* the consumer warp groups' turns: named barrier id over n threads (bar.sync waits, bar.arrive does not) */\n"
                    "static __device__ __forceinline__ void tl_bar_sync_n(int id, int n)\n"
                    "{ asm volatile(\"bar.sync %0, %1;\" :: \"r\"(id), \"r\"(n) : \"memory\"); }\n"
                    "static __device__ __forceinline__ void tl_bar_arrive_n(int id, int n)\n"
                    "{ asm volatile(\"bar.arrive %0, %1;\" :: \"r\"(id), \"r\"(n) : \"memory\"); }\n"
                    "#endif\n");
    for (int i = 0; i < w->nfn; i++)
        if (w->fn_bk[i] & 4)
            lower_wg_ss_fn(tu, w->fn_bk[i] & 2 ? "bf16" : "f16", w->fn_n[i], w->fn_bk[i] & 1);
        else
            rs_fn(tu, w->fn_bk[i] & 2 ? "bf16" : "f16", w->fn_n[i], w->fn_bk[i] & 1);
    if (w->persist)
        persist_attn(L, tu);
    else
        lower_wg_add_consumers(tu, sb_str(&L->out), 0, L->tw.epi, L->out.n, L->nt);
    sb_puts(tu, "#endif\n");
    memset(meta, 0, sizeof *meta); /* no tensor maps (rings by cp.async): the variant's parameters alone */
    meta->threads = (uint32_t)(L->nt + WGA_PRODUCER);
    meta->smem_bytes = L->smem;
    meta->nmaps = (uint32_t)w->nmaps; /* the rings' maps, after the variant's parameters */
    memcpy(meta->maps, w->maps, sizeof w->maps);
    /* a persistent twin: the program's grid as parameters, min(units, SMs) blocks, or a block a unit where
     * there are many units a multiprocessor and each unit's loop runs many trips (at most kbound's value
     * over kper: a causal loop's diagonal fewer; wga_trips, runtime/tma.c persist_walks) */
    meta->persistent = (uint32_t)w->persist;
    meta->kbound = w->kbound;
    meta->kfrom = w->kfrom;
    meta->kper = w->kper;
    return (meta->name = strdup(fname)) != NULL ? 1 : -1;
}
