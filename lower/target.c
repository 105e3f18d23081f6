/* target.c: the target hooks (lower_internal.h, lower_target): what the
 * shared lowering asks the target it lowers for, in the manner of a
 * compiler back end's target info. Two targets: the portable kernel of a
 * variant (any sm_80+: mma.sync, cp.async; its hooks are the twin
 * decision, taken while it is lowered) and the sm_90a twin (wgmma, TMA,
 * warp specialization: wgmma.c, wgattn.c, wgstore.c, wgpair.c), which
 * lower.c lowers only when the portable pass noted a loop it can take. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_internal.h"

/* ---- sm_90a: the twin's frame and strategies ---- */

/* the twin arranges its consumer warps itself (wgmma.c) */
static int sm90a_warps(const lw *L) { return L->tw.plan.warps; }

/* the consumers and a producer warp group, one block per SM */
static const char *sm90a_launch_bounds(lw *L, int64_t blocks)
{
    (void)blocks; /* the twin's own: two blocks an SM where a gather twin's halves fit (wggather.c) */
    return lower_fmt(L, "%d, %d", lower_wg_consumers(L) + (L->tw.plan.gather ? L->tw.plan.producers : 128),
                     L->tw.plan.blocks > 1 ? L->tw.plan.blocks : 1);
}

/* the TMA twin's tensor maps (the attention twin's where its rings are filled by TMA) */
static const char *sm90a_params(lw *L) { return L->tw.plan.attn && !L->tw.plan.nmaps ? "" : lower_wg_params(L); }

/* the attention twin's producer warp group runs the statements before the
 * loop as warps 0-3 (wgattn.c) */
static const char *sm90a_thread_ids(lw *L)
{
    if (!L->tw.plan.attn)
        return NULL;
    return lower_fmt(
        L, "const int tl_tid0 = threadIdx.x, tl_tid = tl_tid0 %% %d, tl_lane = tl_tid & 31, tl_warp = tl_tid >> 5;",
        L->nt);
}

static const char *sm90a_grid_value(lw *L, const tilec_expr *e, int a)
{
    if (L->tw.plan.persist) /* a persistent twin's tile and logical grid (wgmma.c) */
        return lower_fmt(L, "%s%d", e->builtin == BI_PID ? "tl_pid" : "tl_grid", a);
    if (e->builtin == BI_PID && a < 2) /* the grouped order (wgmma.c) */
        return a ? "tl_pid1" : "tl_pid0";
    return NULL;
}

/* wgmma fragments */
static int sm90a_dot_layout(const lw *L, int64_t M, int64_t N, lay *y)
{
    return L->tw.plan.attn ? lower_wga_layout(L, M, N, y) : lower_wg_layout(L, M, N, y);
}

/* the attention twin's loop (wgattn.c) */
static int sm90a_ring_loop(lw *L, const tilec_stmt *loop, ring_plan *rp)
{
    if (!L->tw.plan.attn || loop != L->tw.loop)
        return -1;
    return lower_wga_loop(L, loop, rp);
}

/* a dot whose B is the attention twin's swizzled ring: wgmma (wgattn.c) */
static int sm90a_ring_dot(lw *L, val *acc, const val *ra, const val *rb, int bt, int64_t K, int64_t N, tilec_dtype d)
{
    if (!rb->rwg)
        return 0;
    if (!lower_wga_dot(L, acc, ra, rb, bt, K, N, d))
        L->failed = 1;
    return 1;
}

/* One lowering of R's twin (role 0: the one-tile-per-block schedule; 1,
 * 2: a persistent twin's producer and consumers) into L. */
static void twin_pass(const lw *R, const wg_plan *w, int role, const char *tname, lw *L)
{
    memset(L, 0, sizeof *L);
    L->ctx = R->ctx;
    L->m = R->m;
    L->k = R->k;
    L->variant = R->variant;
    L->tg = &lower_target_sm90a;
    L->tw.on = 1;
    L->quiet = 1; /* a twin that does not come out leaves the variant alone */
    L->tw.loop = R->tw.loop;
    L->tw.plan = *w;
    L->tw.role = role;
    L->stages_cap = R->stages_cap; /* the other loops as the variant has them */
    ar_init(&L->ar);
    sb_init(&L->out);
    lower_emit_kernel(L, tname);
}

/* s followed by sfx, malloc'd; NULL out of memory. */
static char *suffixed(const char *s, const char *sfx)
{
    size_t n = strlen(s), m = strlen(sfx) + 1;
    char *r = malloc(n + m);
    if (r) {
        memcpy(r, s, n);
        memcpy(r + n, sfx, m);
    }
    return r;
}

/* Why lower_wg_finish refuses the persistent passes P (the producer's)
 * and C (the consumers'), in words for the remark, into buf. */
static void persist_why(const lw *C, const lw *P, char *buf, size_t n)
{
    if (C->failed || P->failed || C->out.failed || P->out.failed)
        snprintf(buf, n, "a persistent pass did not lower");
    else if (C->smem > SMEM_LIMIT || P->smem > SMEM_LIMIT)
        snprintf(buf, n, "its passes need %lld and %lld bytes of shared memory, more than a block may have (%d)",
                 (long long)P->smem_need, (long long)C->smem_need, SMEM_LIMIT);
    else if (P->smem != C->smem)
        snprintf(buf, n, "the producer's and the consumers' passes need different shared memory (%u and %u bytes)",
                 P->smem, C->smem);
    else if (C->tw.done && P->tw.done && C->tw.plan.mpair && !lower_wg_mpair_alone(C))
        snprintf(buf, n, "the statements after the loop take shared memory, which the two warp groups would share");
    else
        snprintf(buf, n, "a persistent pass did not reach the dot loop");
}

/* What the twin that came out runs, as emit_twin's steps found it (the
 * plan's words, R->tw.plan.how, name what it planned before lowering):
 * twin_remark writes the remark's tail from this alone. */
typedef struct twin_ran {
    int persist;           /* 1: on a persistent grid; 0: one tile a block */
    int S;                 /* its stages */
    int64_t other;         /* the statements after the loop's shared memory, where it cut the stages; else 0 */
    int64_t kept;          /* a persistent twin's: what they take on the unit that runs (its stages' room) */
    const char *tiles;     /* a persistent twin's unit: "two N tiles a block", ... */
    char mpair_why[200];   /* why one M tile a block runs where the plan named two; "" */
    char persist_why[200]; /* why one tile a block runs where the plan named a persistent grid; "" */
    unsigned early_line;   /* its consumers load the epilogue's tile of this .tile line before the loop; 0 */
    int early_tma;         /* ... by TMA into the store's staging */
    char early_no[200];    /* ... or why not (wgmma.c, staged_load): "" */
    int one_tma;           /* a pair's one-tile twin (single_twin) reads it so */
    char one_no[200];      /* ... or why not: "" */
    int single;            /* a persistent gather twin's one-tile twin beside it (gather_single) */
    int bres_cap;          /* a persistent gather twin's resident B: its slots (wgmma.c, persist_plan); 0 none */
    int64_t bres_slot;     /* ... their bytes each */
    int bres_sa;           /* ... A's stages then, where more than S; else 0 */
} twin_ran;

/* R's remark (rendered after the twin) says what runs: t appended to the plan's words. */
static void twin_remark(lw *R, const twin_ran *t)
{
    const char *h = R->tw.plan.how ? R->tw.plan.how : "";
    if (t->mpair_why[0])
        h = lower_fmt(R, "%s; but one M tile a block runs: %s", h, t->mpair_why);
    if (t->other && t->persist && t->kept < t->other)
        h = lower_fmt(R,
                      "%s; the statements after the loop take %lld bytes of shared memory, so %s on a persistent "
                      "grid, where they take %lld: %d stages",
                      h, (long long)t->other, t->tiles, (long long)t->kept, t->S);
    else if (t->other && t->persist)
        h = lower_fmt(R,
                      "%s; the statements after the loop take %lld bytes of shared memory, so %s on a persistent "
                      "grid, %d stages",
                      h, (long long)t->other, t->tiles, t->S);
    else if (t->other)
        h = lower_fmt(R, "%s; the statements after the loop take %lld bytes of shared memory, so %d stages", h,
                      (long long)t->other, t->S);
    else if (t->persist && R->tw.plan.gather) /* the GEMM twins' plain persistent grid is the default, unsaid */
        h = lower_fmt(R, "%s; on a persistent grid, %d stages: the producer copies the block's next tile while the "
                         "consumers store this one%s",
                      h, t->S,
                      t->single ? " (beside it, one tile a block where the tiles are few a multiprocessor)" : "");
    if (t->persist && R->tw.plan.attn)
        h = lower_fmt(R, "%s; on a persistent grid: a block walks (query tile, head) units (min(units, SMs) blocks "
                         "where the units are few a multiprocessor, else a block a unit), its producer copying the "
                         "next unit's tiles while the consumers store this one%s%s", h,
                      R->order.rev ? ", a head's query tiles in mirrored pairs (the heaviest with the lightest), a "
                                     "walking block taking a pair a step"
                                   : "",
                      lower_wga_takes_turns(&R->tw.plan) ? ", the two warp groups' turns begun and ended per unit" : "");
    if (t->persist && R->tw.plan.gather && t->bres_cap) /* B resident (wgmma.c, persist_plan) */
        h = lower_fmt(R, "%s; B resident: a block copies B's steps once, in its first tile, into %d slots of %lld KiB "
                         "and the ring carries A alone%s, where a tile's steps are at most %d%s (a run-time test; else B "
                         "in the ring)",
                      h, t->bres_cap, (long long)(t->bres_slot / 1024),
                      t->bres_sa ? lower_fmt(R, " in %d stages (B's ring slots A's)", t->bres_sa) : "", t->bres_cap,
                      R->tw.plan.bres_axes ? " and the grid has one tile along B's axis" : "");
    else if (t->persist && R->tw.plan.gather && R->tw.plan.atma)
        h = lower_fmt(R, "%s; B not resident: %s", h, R->tw.plan.bres_no ? R->tw.plan.bres_no : "no room");
    if (t->persist_why[0])
        h = lower_fmt(R, "%s; but one tile a block runs, not a persistent grid: %s", h, t->persist_why);
    if (t->early_line)
        h = lower_fmt(R, "%s; its consumers load the epilogue's tile of line %u before the loop%s", h, t->early_line,
                      t->early_tma     ? ", by TMA into the store's staging"
                      : t->early_no[0] ? lower_fmt(R, ", not by TMA into the store's staging: %s", t->early_no)
                      : t->one_tma     ? " (its one-tile twin: by TMA into the store's staging)"
                      : t->one_no[0] ? lower_fmt(R, " (its one-tile twin: not by TMA into the store's staging: %s)",
                                                 t->one_no)
                                     : "");
    R->tw.plan.how = h;
}

/* The persistent twin `name` of plan `base` (w: base with
 * lower_wg_persist applied), lowered twice (the producer's and the
 * consumers' bodies) and appended to tu: lower_wg_finish's result, 0
 * when base has no persistent plan; when a plan did not come out, why
 * (may be NULL) says why in words. Where a pass took more shared memory
 * than a block may have, plan again from base leaving room for what the
 * passes take besides the ring block (lower_wg_over: what the statements
 * after the loop allocate), and lower that; *cut (may be NULL) is that
 * room, the bytes that decided the unit, 0 where none did. Where the
 * unit so chosen takes less than that room (two N tiles a block converted
 * an f32 tile through 64 KiB, which one N tile's consumers load before
 * the loop instead: wgmma.c, early_issue), plan once more with what it
 * takes, the unit kept: its stages come back (mm_add's 4 -> 6). */
static int persist_twin(const lw *R, const wg_plan *base, wg_plan *w, const char *name, strbuf *tu,
                        tilec_tma_meta *meta, char *why, size_t nwhy, int64_t *cut)
{
    wg_plan b = *base;
    *w = b;
    if (cut)
        *cut = 0;
    if (!lower_wg_persist(w))
        return 0;
    int regain = 1;
    for (;;) {
        lw P, C;
        twin_pass(R, w, 1, name, &P);
        twin_pass(R, w, 2, name, &C);
        int64_t op = lower_wg_over(&P), oc = lower_wg_over(&C), other = op > oc ? op : oc;
        int64_t rp = lower_wg_rest(&P), rc = lower_wg_rest(&C), rest = rp > rc ? rp : rc;
        if (regain && other <= w->other && rp >= 0 && rc >= 0 && rest < w->other) {
            wg_plan v = b;
            v.pair_ok = b.pair_ok && w->pair;
            v.mpair_ok = b.mpair_ok && w->mpair;
            v.other = rest;
            regain = 0;
            if (lower_wg_persist(&v) && v.S > w->S && v.pair == w->pair && v.mpair == w->mpair) {
                lower_free(&P);
                lower_free(&C);
                b.pair_ok = v.pair_ok;
                b.mpair_ok = v.mpair_ok;
                *w = v;
                continue;
            }
        }
        int r = lower_wg_finish(&C, &P, tu, meta, name);
        w->early_line = C.tw.plan.early_line;
        w->early_tma = C.tw.plan.early_tma;
        memcpy(w->early_no, C.tw.plan.early_no, sizeof w->early_no);
        if (!r && why)
            persist_why(&C, &P, why, nwhy);
        lower_free(&P);
        lower_free(&C);
        if (r || other <= w->other)
            return r;
        *w = b;
        w->other = other;
        if (cut && other > *cut)
            *cut = other;
        if (!lower_wg_persist(w))
            return 0;
    }
}

/* The one-tile twin `tname` of R's plan, lowered and appended to tu;
 * where the pass took more shared memory than a block may have, with
 * fewer stages, leaving room for what it takes besides the ring block
 * (wgattn.c's twin too): lower_wg_finish's (or lower_wga_finish's)
 * result; t says what it runs. */
static int one_tile_twin(lw *R, const char *tname, strbuf *tu, tilec_tma_meta *meta, twin_ran *t)
{
    wg_plan w = R->tw.plan;
    for (;;) {
        lw L;
        twin_pass(R, &w, 0, tname, &L);
        int64_t other = lower_wg_over(&L);
        if (other <= w.other || !lower_wg_one_replan(&w, other)) {
            int r = w.attn ? lower_wga_finish(&L, tu, meta, tname) : lower_wg_finish(&L, NULL, tu, meta, tname);
            lower_free(&L);
            t->persist = 0;
            t->S = w.S;
            t->other = w.other;
            return r;
        }
        lower_free(&L);
    }
}


/* The persistent attention twin `tname` of R's plan (wgattn.c: its rings
 * by TMA, a block walking (query tile, head) units), lowered and appended
 * to tu: lower_wga_finish's result; 0, with t->persist_why saying why,
 * where it does not apply, and the one-tile twin then runs. */
static int persist_attn_twin(lw *R, const char *tname, strbuf *tu, tilec_tma_meta *meta, twin_ran *t)
{
    wg_plan w = R->tw.plan;
    if (!w.nmaps) {
        snprintf(t->persist_why, sizeof t->persist_why, "its rings are filled by cp.async (the persistent twin's "
                                                        "producer is one thread issuing TMA copies)");
        return 0;
    }
    if (lower_wga_takes_turns(&w) && w.key_n && w.key_n < WGA_TURNS_WALK_N) { /* bench/results/merged_s49.md */
        snprintf(t->persist_why, sizeof t->persist_why,
                 "its two warp groups take turns over %lld keys a step (the persistent form measured 5-17%% "
                 "slower than one tile a block below %d keys a step)",
                 (long long)w.key_n, WGA_TURNS_WALK_N);
        return 0;
    }
    w.persist = 1;
    lw L;
    twin_pass(R, &w, 0, tname, &L);
    const char *no = L.failed || L.out.failed ? "its pass did not lower"
                     : lower_wg_over(&L) > w.other ? "the statements after the loop take shared memory beside the ring"
                                                   : lower_wga_persist_no(&L);
    int r = no ? 0 : lower_wga_finish(&L, tu, meta, tname);
    if (!r)
        snprintf(t->persist_why, sizeof t->persist_why, "%s", no ? no : "its pass did not lower");
    lower_free(&L);
    if (r > 0) {
        t->persist = 1;
        t->S = w.S;
    }
    return r;
}

/* Beside a paired twin `tname` (lower/wgpair.c), the persistent twin of
 * one tile a unit, `tname`_1, with the same parameters and tensor maps,
 * which the runtime launches where too few pairs would leave
 * multiprocessors idle; meta's shared memory the larger of the two;
 * *staged and meta's one_tma: whether it reads the epilogue's tile by TMA
 * into its store's staging (wgmma.c, staged_load), which the pairs do not
 * (the runtime then takes it for short loops too).
 * 1, or -1 out of memory (none made is no error: the pairs run alone). */
static int single_twin(const lw *R, const char *tname, strbuf *tu, tilec_tma_meta *meta, int *staged, char *no,
                       size_t nno)
{
    wg_plan base = R->tw.plan, w;
    base.pair_ok = 0;
    char *name = suffixed(tname, "_1");
    if (!name)
        return -1;
    tilec_tma_meta one;
    int r = persist_twin(R, &base, &w, name, tu, &one, NULL, 0, NULL);
    free(name);
    if (r > 0) {
        if (one.smem_bytes > meta->smem_bytes)
            meta->smem_bytes = one.smem_bytes;
        free(one.name);
        *staged = w.early_tma;
        snprintf(no, nno, "%s", w.early_no);
        meta->one_tma = w.early_tma ? 1u : 0u;
    }
    return r < 0 ? -1 : 1;
}

/* Beside a persistent gather twin `tname` (A by TMA's im2col mode:
 * lower/wgmma.c, wggather.c), its one-tile twin `tname`_1, with the same
 * parameters and tensor maps, which the runtime launches on the program's
 * grid where the tiles are too few a multiprocessor for walking them to pay
 * (tilec_tma_meta.persistent 5); meta's shared memory the larger of the
 * two. 1, -1 out of memory, 0 when it did not come out (the persistent
 * twin runs alone). */
static int gather_single(lw *R, const char *tname, strbuf *tu, tilec_tma_meta *meta)
{
    char *name = suffixed(tname, "_1");
    if (!name)
        return -1;
    tilec_tma_meta one;
    twin_ran t = {0};
    size_t at = tu->n;
    int r = one_tile_twin(R, name, tu, &one, &t);
    free(name);
    if (r > 0) {
        if (one.smem_bytes > meta->smem_bytes)
            meta->smem_bytes = one.smem_bytes;
        meta->persistent = 5;
        free(one.name);
    } else if (!r) { /* nothing of it stays */
        tu->n = at;
        if (tu->s)
            tu->s[at] = 0;
    }
    return r;
}

/* The fewest stages of two tiles a block (wgpair.c's lower_wg_pair_deep). */
static int pair_min_stages(const wg_plan *w)
{
    int S = 2;
    while (S < 64 && !lower_wg_pair_deep(w, S))
        S++;
    return S;
}

/* The sm_90a twin of variant R (lower/wgmma.c) appended to tu when R's
 * dot loop qualifies: the kernel lowered again with wgmma accumulators,
 * on a persistent grid when that applies (lowered twice: the producer's
 * and the consumers' bodies), else one tile per block; the remark says
 * which (twin_remark). -1 only when out of memory. */
static int emit_twin(lw *R, const char *fname, strbuf *tu, tilec_tma_meta *meta)
{
    if (!R->tw.loop || R->failed)
        return 0;
    char *tname = suffixed(fname, "_tma");
    if (!tname)
        return -1;
    const wg_plan *plan = &R->tw.plan;
    twin_ran t = {0};
    wg_plan w = *plan;
    int64_t cut = 0;
    int r = 0;
    if (!plan->attn) { /* not wgattn.c's loop of dots on cp.async rings, which runs one tile a block */
        r = persist_twin(R, plan, &w, tname, tu, meta, t.persist_why, sizeof t.persist_why, &cut);
        if (!r && plan->mpair_ok) { /* two M tiles a block did not come out (lower/wgpair.c): one */
            wg_plan one = *plan;
            one.mpair_ok = 0;
            memcpy(t.mpair_why, t.persist_why, sizeof t.mpair_why);
            t.persist_why[0] = '\0';
            r = persist_twin(R, &one, &w, tname, tu, meta, t.persist_why, sizeof t.persist_why, &cut);
        } else if (r > 0 && plan->mpair_ok && !w.mpair) /* lower_wg_persist's staging left too few stages */
            snprintf(t.mpair_why, sizeof t.mpair_why, "fewer than %d stages fit beside the two warp groups' stagings",
                     pair_min_stages(&w));
        if (r > 0) {
            t.persist = 1;
            t.S = w.S;
            t.other = cut > w.other ? cut : w.other;
            t.kept = w.other;
            t.tiles = w.pair           ? "two N tiles a block"
                      : w.mpair        ? "two M tiles a block"
                      : plan->mpair_ok ? "one M tile a block"
                                       : "one N tile a block";
            t.early_line = w.early_line;
            t.early_tma = w.early_tma;
            memcpy(t.early_no, w.early_no, sizeof t.early_no);
            t.persist_why[0] = '\0';
            t.bres_cap = w.bres ? w.bres_cap : 0;
            t.bres_slot = w.N * w.K * (int64_t)w.maps[1].elem_bytes;
            t.bres_sa = w.bres && w.bres_sa > w.S ? w.bres_sa : 0;
        }
        if (r <= 0)
            t.mpair_why[0] = '\0'; /* one tile a block runs: the persistent grid's refusal says why */
        if (!r && plan->persist_no && !t.persist_why[0]) /* a gather twin not planned on one (wgmma.c) */
            snprintf(t.persist_why, sizeof t.persist_why, "%s", plan->persist_no);
        if (r > 0 && w.pair)       /* two N tiles a block: its one-tile twin beside it (lower/wgpair.c) */
            r = single_twin(R, tname, tu, meta, &t.one_tma, t.one_no, sizeof t.one_no);
        else if (r > 0 && w.gather) /* and beside a gather twin */
            r = (t.single = gather_single(R, tname, tu, meta)) < 0 ? -1 : r;
    }
    if (plan->attn)
        r = persist_attn_twin(R, tname, tu, meta, &t);
    if (!r)
        r = one_tile_twin(R, tname, tu, meta, &t);
    if (r > 0)
        twin_remark(R, &t);
    free(tname);
    return r;
}

const lower_target lower_target_sm90a = {
    .name = "sm_90a",
    .split_k = 0, /* docs/lowering.md, "Split-K": no twin for a split variant */
    .remarks = 0, /* the twin's own passes remark nothing */
    .warps = sm90a_warps,
    .launch_bounds = sm90a_launch_bounds,
    .params = sm90a_params,
    .thread_ids = sm90a_thread_ids,
    .preamble = lower_wg_preamble,
    .grid_value = sm90a_grid_value,
    .dot_layout = sm90a_dot_layout,
    .dot_loop = lower_wg_loop,
    .ring_loop = sm90a_ring_loop,
    .ring_dot = sm90a_ring_dot,
    .store = lower_wg_store, /* the epilogue by TMA (wgstore.c) */
};

/* ---- portable: the variant's kernel, which takes the twin decision ---- */

const lower_target lower_target_portable = {
    .name = "portable",
    .split_k = 1,
    .remarks = 1,
    /* whether the sm_90a twin may take a pipelined dot loop (wgmma.c),
     * a loop of dots on rings (wgattn.c), the final store (wgstore.c) */
    .note_dot_loop = lower_wg_note,
    .note_ring_loop = lower_wga_note,
    .note_store = lower_wg_store_note,
    .emit_twins = emit_twin,
};
