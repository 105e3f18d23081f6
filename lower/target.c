/* target.c: the target hooks (lower_internal.h, lower_target): what the
 * shared lowering asks the target it lowers for, in the manner of a
 * compiler back end's target info. Two targets: the portable kernel of a
 * variant (any sm_80+: mma.sync, cp.async; its hooks are the twin
 * decision, taken while it is lowered) and the sm_90a twin (wgmma, TMA,
 * warp specialization: wgmma.c, wgattn.c, wgstore.c, wgpair.c), which
 * lower.c lowers only when the portable pass noted a loop it can take. */
#include "lower/lower_internal.h"

/* ---- sm_90a: the twin's frame and strategies ---- */

/* the twin arranges its consumer warps itself (wgmma.c) */
static int sm90a_warps(const lw *L) { return L->tw.plan.warps; }

/* the consumers and a producer warp group, one block per SM */
static const char *sm90a_launch_bounds(lw *L, int64_t blocks)
{
    (void)blocks;
    return lower_fmt(L, "%d, 1", L->nt + (L->tw.plan.gather ? L->tw.plan.producers : 128));
}

/* the TMA twin's tensor maps (the attention twin has none) */
static const char *sm90a_params(lw *L) { return L->tw.plan.attn ? "" : lower_wg_params(L); }

/* the attention twin's producer warp group runs the statements before the
 * loop as warps 0-3 (wgattn.c) */
static const char *sm90a_thread_ids(lw *L)
{
    if (!L->tw.plan.attn)
        return NULL;
    return lower_fmt(L, "const int tl_tid0 = threadIdx.x, tl_tid = tl_tid0 %% %d, tl_lane = tl_tid & 31, tl_warp = tl_tid >> 5;",
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
};
