/* wggather.c: the sm_90a twin (wgmma.c) of a dot loop whose operands
 * the tensor memory accelerator cannot read as tiles: a gathered A, each
 * of its rows a contiguous run along K from a base address of its own
 * (an implicit GEMM's A: a convolution's rows are output pixels, each
 * reading the C channels of one input pixel a filter tap), or a B whose
 * row index is computed. The pipelined loop's analysis (pipeline.c)
 * already proved what this needs: both loads are [rows, 16-byte chunks]
 * contiguous along their last axis, pointers and masks computed from
 * index tiles, zero where masked. So the producer warp group, all 128 of
 * its threads, copies them with cp.async, 16 bytes at a time, each chunk
 * at the place in the ring where TMA would have put it (the 32-, 64- or
 * 128-byte swizzle of the twin's boxes), and the consumers run the
 * twin's wgmma loop unchanged. A stage is complete when each producer
 * thread has arrived twice on its full barrier: once by
 * cp.async.mbarrier.arrive.noinc (when its copies have landed) and once
 * by a plain arrive after the element-wise stores of a partly masked or
 * misaligned chunk. The consumers fence the generic proxy's writes
 * against wgmma's async reads after the wait (fence.proxy.async).
 * Where one producer warp group copies, a B that is a plain strided tile
 * at a computed row (a filter tap's rows of an RSCK filter) goes by TMA
 * instead, through one tensor map, where each step proves its box's rows
 * unmasked (b_by_tma). Where A goes by TMA's im2col mode too, the ring
 * is all TMA and one producer thread a step waits, issues and arrives,
 * the full barrier of one arrival (lower_wg_gather_one). On a persistent
 * grid B may stay resident across the block's tiles (w->bres: wgmma.c,
 * persist_plan): step j's B then goes to slot j in the block's first
 * tile only (tl_bw, tl_bj).
 * docs/lowering.md ("wgmma with gathered operands") says why cp.async
 * and not TMA's im2col mode for A. */
#include <stdint.h>
#include <string.h>

#include "lower/lower_internal.h"

/* the producer's threads: one warp group, two when both loads' chunks
 * divide among 256 (a single warp a scheduler, computing each chunk's
 * address and mask, issued too slowly to feed wgmma: docs/lowering.md) */
enum { GA_PRODUCER = 128, GA_PRODUCER2 = 256, GA_ROW = 128 };
/* two producer warp groups when each thread copies at most GA_CHUNKS2
 * chunks a step: 96 registers a producer thread (its kept addresses and
 * masks, the counters, and each chunk's address, place and flag between
 * the two halves of a step's copies: lower_emit_async_prep; at 64 and 80
 * those spilled), the rest of the 64 Ki registers of the block to the
 * consumers (BM / 16 warps: 160 at BM = 128), 240 at most. More chunks
 * (BK = 64 at 128 x 128: 8 a thread) spilled at 64 and at 96: one warp
 * group then, no setmaxnreg (168 registers a thread at 384 threads). */
enum { GA_REGS = 65536, GA_PREG = 96, GA_CHUNKS2 = 4, GA_CREG_MAX = 240 };

/* Two blocks an SM when their halves of the SM fit (docs/lowering.md,
 * "wgmma with gathered operands"): one block of 512 threads has nothing
 * to run while its producer waits on a step's copies, or while its
 * consumers start and store; a second block's steps fill those. Each
 * block gets half the register file and half the ring: its threads (BM /
 * 16 consumer warps and the producer's two warp groups) share 32 Ki
 * registers, the producer keeps GA_PREG2 a thread, and a consumer needs
 * its m64 x N accumulator (N / 2 registers) and GA_CMARGIN more; the
 * ring keeps at least GA_STAGES2 stages of stage_bytes in half of
 * WG_RING_MAX's 192 KiB. A long reduction gains less from the second
 * block than a short one, but the multi-kernel times every variant: the
 * tiles that fit twice are the ones it may choose for short ones. */
enum { GA_PREG2 = 56, GA_CMARGIN = 24, GA_STAGES2 = 4, GA_RING2 = 96 * 1024 };

static void gather_blocks(wg_plan *w, int64_t M, int64_t N, int64_t stage_bytes)
{
    int64_t threads = 2 * M + GA_PRODUCER2, cap = GA_REGS / (2 * threads) / 8 * 8;
    int64_t c = (threads * cap - (int64_t)GA_PRODUCER2 * GA_PREG2) / (2 * M) / 8 * 8;
    if (c > GA_CREG_MAX)
        c = GA_CREG_MAX;
    if (c < N / 2 + GA_CMARGIN || cap < N / 2 + GA_CMARGIN || GA_RING2 / stage_bytes < GA_STAGES2)
        return;
    w->blocks = 2;
    w->preg = GA_PREG2;
    w->creg = (int)c;
}

int lower_wg_gather_note(lw *L, const lower_pipe_plan *pp, wg_plan *w)
{
    const char *tma = L->miss ? L->miss : "(no reason recorded)";
    unsigned line = L->miss_line;
    const char *why = NULL;
    const tilec_type *at = lower_ty(L, pp->load[0]), *bt = lower_ty(L, pp->load[1]);
    int64_t es = (int64_t)tilec_dtype_size(at->dtype);
    if (pp->tr[0] || pp->tr[1])
        why = "an operand is a transposed load (the copies run along the rows of A [M, K] and B [K, N])";
    for (int i = 0; i < 2 && !why; i++) {
        const tilec_type *t = i ? bt : at;
        if ((t->dims[0] * t->dims[1] * es / 16) % GA_PRODUCER)
            why = lower_fmt(L, "operand %c's 16-byte chunks are not a multiple of the producer's %d threads",
                            i ? 'B' : 'A', GA_PRODUCER);
    }
    if (why) {
        L->miss = lower_fmt(L, "%s; nor by cp.async from the producer warp group: %s", tma, why);
        L->miss_line = line;
        return 0;
    }
    /* the producer's threads: B's chunks counted even where B goes by TMA (below), since they still go by
     * cp.async in a step whose box is partly masked, and their kept addresses take registers (two groups
     * at 8 chunks a thread spilled) */
    int64_t chunks = (at->dims[0] * at->dims[1] + bt->dims[0] * bt->dims[1]) * es / 16;
    w->producers = chunks <= GA_CHUNKS2 * GA_PRODUCER2 ? GA_PRODUCER2 : GA_PRODUCER;
    for (int i = 0; i < 2; i++) {
        const tilec_type *t = i ? bt : at;
        if ((t->dims[0] * t->dims[1] * es / 16) % GA_PRODUCER2)
            w->producers = GA_PRODUCER;
    }
    /* A by TMA's im2col mode where the load is one box a step (wgim2col.c): one producer thread issues it,
     * one warp group stays for A's chunks in a step whose tap the copy cannot take (and B's, below) */
    tilec_tma_map am;
    const char *icwhy = NULL;
    int atma = lower_wg_im2col(L, pp->load[0], &am, &w->ic, &icwhy);
    if (atma)
        w->producers = GA_PRODUCER;
    /* B by TMA where its rows are a plain strided tile and one warp group copies: its threads then gather
     * A alone, half the chunks a step (on the H100, variant 4 of conv2d.tile, 8 + 8 chunks a thread: 70.1
     * to 50.8 us on 3x3 28x28 C128). With two groups the 128 x 128 twins ran 7-9% slower with B by TMA
     * (docs/lowering.md): B stays on cp.async there. */
    tilec_tma_map bm;
    int brows = -1;
    const tilec_expr *bx = NULL, *bc0 = NULL, *bc = NULL;
    int btma = w->producers == GA_PRODUCER && lower_wg_match_rows(L, pp->load[1], &bm, &bx, &bc0, &brows, &bc) &&
               bm.box_rows <= 256 && bt->dims[1] % (int64_t)bm.box_cols == 0;
    w->preg = w->creg = 0;
    w->blocks = 1;
    if (w->producers == GA_PRODUCER2) { /* the register file split: the producer's share fixed, the rest the consumers' */
        w->preg = GA_PREG;
        int64_t c = (GA_REGS - (int64_t)GA_PRODUCER2 * w->preg) / (2 * at->dims[0]) / 8 * 8;
        w->creg = c > GA_CREG_MAX ? GA_CREG_MAX : (int)c;
        gather_blocks(w, at->dims[0], bt->dims[1], (at->dims[0] + bt->dims[1]) * at->dims[1] * es);
    }
    memset(w->maps, 0, sizeof w->maps);
    for (int i = 0; i < 2; i++) {
        w->maps[i].elem_bytes = (uint32_t)es;
        w->maps[i].bf16 = at->dtype == TILEC_DT_BF16;
        w->maps[i].box_cols = (uint32_t)(GA_ROW / es);
        w->R[i] = w->C[i] = w->Z[i] = w->Ra[i] = w->Ca[i] = NULL;
        w->ld[i] = pp->load[i];
    }
    w->btma = btma;
    w->atma = atma;
    if (atma) /* map 0: A's im2col map */
        w->maps[0] = am;
    if (btma) { /* B's map: map 0, or 1 after A's */
        w->maps[atma] = bm;
        w->bx = bx;
        w->bc0 = bc0;
        w->bc = bc;
        w->brows = brows;
    }
    w->gather = 1;
    w->one_why = "the producer copies one iteration's tiles at a time";
    const char *bhow = btma ? ", B by TMA (rows at a computed offset, each step's box taken where its rows are all "
                              "unmasked, else by cp.async)"
                            : "";
    if (atma)
        w->how = lower_fmt(L, ", A by TMA's im2col mode (one box of %lld output pixels x %lld channels a step, "
                              "issued by one producer thread, the filter tap as the copy's offsets; A by cp.async "
                              "in a step whose offsets are past 127), not a tiled map (line %u: %s)%s%s",
                           (long long)at->dims[0], (long long)at->dims[1], line ? line : pp->update->loc.line, tma,
                           btma ? bhow : ", B by cp.async from the producer warp group into the swizzled ring",
                           w->blocks > 1 ? ", two blocks an SM (each half the ring and the registers)" : "");
    else
        w->how = lower_fmt(L, ", %s by cp.async from the producer warp group into the swizzled ring, not TMA "
                              "(line %u: %s; nor its im2col mode: %s)%s%s",
                           btma ? "A" : "A and B", line ? line : pp->update->loc.line, tma, icwhy, bhow,
                           w->blocks > 1 ? ", two blocks an SM (each half the ring and the registers)" : "");
    lower_miss_reset(L);
    return 1;
}

/* The element offset in its slot of the chunk at (tl_i0, tl_i1) of an
 * operand of `rows` rows in boxes of rows x rb bytes (the box's rows
 * swizzled rb bytes wide, Swizzle<log2(rb / 16), 4, 3>: the 16-byte unit
 * of address bits 4.. XORed with bits 7..): where TMA puts it. */
static const char *swizzled(lw *L, int64_t rows, int rb, int64_t es)
{
    const char *lin = lower_fmt(L, "((unsigned)tl_i1 / %lld * %lldu + (unsigned)tl_i0 * %du + (unsigned)tl_i1 %% %lld * %lldu)",
                                (long long)(rb / es), (long long)(rows * rb), rb, (long long)(rb / es), (long long)es);
    return lower_fmt(L, "((%s ^ (((%s >> 7) & %du) << 4)) / %lldu)", lin, lin, rb / 16 - 1, (long long)es);
}

/* B by TMA (map 0, or 1 after A's im2col map) in a step of the producer's loop: its box's first
 * row, column and first index along the bounded tile, and whether every
 * row of the box is unmasked (first + K <= the bound) at coordinates TMA
 * takes (0 .. INT32_MAX); then the first producer thread expects the
 * slot's bytes and issues N / 64 boxes of K rows x 128 bytes (where the
 * chunks would have gone), or only arrives when the box is partly masked
 * (the chunks then go by cp.async, all threads). Each thread computes the
 * same tl_bt. */
static void b_by_tma(lw *L, const wg_plan *w, int64_t aslot, int64_t bslot)
{
    if (!w->btma)
        return;
    const char *z[1] = {"0"};
    lower_hoist *h = L->hoist; /* the coordinates are scalars of the step, no chunk's kept registers */
    L->hoist = NULL;
    lower_walk(L, w->bx, z, 0, NULL, PREP);
    lower_walk(L, w->bc, z, 0, NULL, PREP);
    lower_walk(L, w->bc0, z, 0, NULL, PREP);
    const char *row = lower_walk(L, w->bx, z, 0, NULL, EMIT), *col = lower_walk(L, w->bc, z, 0, NULL, EMIT),
               *c0 = lower_walk(L, w->bc0, z, 0, NULL, EMIT);
    L->hoist = h;
    int nb = (int)(w->N / w->maps[w->atma].box_cols);
    lower_line(L, "const long long tl_brow = (long long)(%s), tl_bcol = (long long)(%s);", row, col);
    lower_line(L, "const bool tl_bt = (long long)(%s) + %lld <= (long long)(%s) && tl_brow >= 0 && tl_brow <= %lld && "
                  "tl_bcol >= 0 && tl_bcol <= %lld; /* B's box: every row unmasked */",
               c0, (long long)w->K, lower_cname(L, L->k->params[w->brows].name), (long long)(INT32_MAX - w->K),
               (long long)(INT32_MAX - w->N));
    if (w->atma) /* the one thread's copies of A and B (tma_issue) */
        return;
    lower_line(L, "if (tl_tid == 0) {");
    L->ind++;
    lower_line(L, "if (tl_bt) {");
    L->ind++;
    lower_line(L, "tl_mbar_expect(tl_full + tl_s * 8, %lld);", (long long)bslot);
    for (int b = 0; b < nb; b++)
        lower_line(L, "tl_tma_2d(tl_ring + %lld + tl_s * %lld + %lld, &tl_tm0, (int)tl_bcol + %d, (int)tl_brow, tl_full + tl_s * 8);",
                   (long long)(w->S * aslot), (long long)bslot, (long long)b * w->K * GA_ROW, b * (int)w->maps[0].box_cols);
    L->ind--;
    lower_line(L, "} else {");
    lower_line(L, "    tl_mbar_arrive(tl_full + tl_s * 8);");
    lower_line(L, "}");
    L->ind--;
    lower_line(L, "}");
}

/* A by TMA's im2col mode (wgim2col.c), and B's boxes where B goes by TMA
 * too: the first producer thread expects the bytes of the copies the step
 * takes (0: a plain arrival) and issues them. */
static void tma_issue(lw *L, const wg_plan *w, int64_t aslot, int64_t bslot)
{
    if (!w->atma)
        return;
    lower_line(L, "if (tl_tid == 0) {");
    L->ind++;
    const char *bt = w->bres ? "tl_bt && tl_bw" : "tl_bt"; /* B resident: its boxes in the block's first tile only */
    lower_line(L, "tl_mbar_expect(tl_full + tl_s * 8, (tl_at ? %lldu : 0u)%s);", (long long)aslot,
               w->btma ? lower_fmt(L, " + (%s ? %lldu : 0u)", w->bres ? "(tl_bt && tl_bw)" : "tl_bt", (long long)bslot)
                       : "");
    lower_line(L, "if (tl_at) {");
    L->ind++;
    lower_wg_im2col_copy(L, w, lower_fmt(L, "tl_ring + tl_s * %lldu", (long long)aslot));
    L->ind--;
    lower_line(L, "}");
    if (w->btma) {
        lower_line(L, "if (%s) {", bt);
        L->ind++;
        for (int b = 0; b < (int)(w->N / w->maps[1].box_cols); b++)
            lower_line(L, "tl_tma_2d(tl_ring + %s + %s * %lld + %lld, &tl_tm1, (int)tl_bcol + %d, (int)tl_brow, "
                          "tl_full + tl_s * 8);",
                       lower_wg_b_base(L, w), w->bres ? "tl_bj" : "tl_s", (long long)bslot,
                       (long long)b * w->K * GA_ROW, b * (int)w->maps[1].box_cols);
        L->ind--;
        lower_line(L, "}");
    }
    L->ind--;
    lower_line(L, "}");
}

/* The ring all TMA (A by the im2col mode, B by its tiled map): one producer
 * thread a step. It alone waits on the empty barrier and arrives on the
 * full one (count 1: its arrive.expect_tx); the warp group's other
 * threads walk the steps only to meet it in a step whose copies need them
 * (a tap's offsets past 127, B's box partly masked): the group at named
 * barrier WG_GATHER_BAR (the slot free), their chunks by cp.async, each
 * waits for its own, the group meets again and the one thread expects the
 * step's TMA bytes and arrives. Where B goes by cp.async every step would
 * be such a step, so the whole group arrives as before. Only in the
 * persistent twins whose A takes more stages where B is resident
 * (wgmma.c, res_stages): on the H200 (bench/results/conv_s49b.md) every
 * rows twin was 1.03-1.08x faster with it on 3x3 56x56 C64 (B resident,
 * about six tiles a block), but the 128 x 128 one (variant 0, 6 stages
 * either way, the multi-kernel's choice there) 5-7% slower on the layers
 * of one or two tiles a block (3x3 28x28 C128, 14x14 C256, s2 C128); not
 * explained without a profile, so it and the one-tile twins keep the
 * group's arrivals. In these twins the threads that copied a step by
 * cp.async fence (generic to async proxy) before the one arrival, so the
 * consumers fence no step, and the consumers hand each slot back when its
 * own wgmma are done (wgmma.c, consumer; bench/results/conv_s50b.md). */
int lower_wg_gather_one(const wg_plan *w)
{
    return w->gather && w->atma && w->btma && lower_wg_nbar(w) != w->S;
}
enum { WG_GATHER_BAR = 8 };

void lower_wg_gather_producer(lw *L, const wg_plan *w, const tilec_stmt *loop, const char *v)
{
    int S = w->S, nt = L->nt, one = lower_wg_gather_one(w);
    int64_t es = w->maps[0].elem_bytes, aslot = w->M * w->K * es, bslot = w->N * w->K * es;
    /* a persistent twin (wgmma.c, persist_body): this tile's steps inside the producer's walk over the
     * block's tiles, which splits the roles, sets the registers and counts tl_it on */
    if (!w->persist) {
        lower_line(L,
                   "if (tl_tid >= %d) { /* the producer, %d threads: A and B by cp.async, each chunk where TMA would "
                   "put it */",
                   nt, w->producers);
        L->ind++;
        if (w->preg)
            lower_line(L, "tl_setmaxnreg_dec<%d>();", w->preg);
    }
    lower_line(L, "const int tl_ptid = tl_tid - %d;", nt);
    lower_line(L, "unsigned char *const tl_r0 = tl_smem + (tl_ring - tl_sa(tl_smem)); /* the aligned ring */");
    lower_line(L, "{");
    L->ind++;
    lower_line(L, "const int tl_tid = tl_ptid; /* the chunks divide among the producer's threads */");
    L->nt = w->producers;
    lower_bind_loop_scope(L, loop);
    /* the parts of the addresses and masks that do not move with the loop
     * (a pixel's base, its bounds), kept in registers as the pipeline does */
    static const int rows[2] = {LOWER_CP_ROWS, LOWER_CP_ROWS};
    lower_hoist h;
    /* the counters first: the hoist keeps what moves only with the tap (a quotient's counter) too; 32-bit
     * where one block has the SM (stepdiv.c: two blocks' 56-register producer spilled with them) */
    lower_stepdiv_begin(L, loop->names[0], w->ld, 2, w->blocks == 1);
    /* variant 4 of conv2d.tile (A's 8 chunks and B's 8 a thread) is over the budget and keeps
     * nothing, taps included: keeping A's alone (B by TMA) took it from 47.3 to 49.0 us on the
     * H200 (3x3 28x28 C128, session 43), so its twin stays main's */
    lower_hoist_begin(L, &h, loop->names[0], w->ld, rows, 2);
    if (w->atma)
        lower_wg_im2col_pre(L, w);
    if (!w->persist)
        lower_line(L, "int tl_it = 0;");
    if (w->bres) { /* B resident (wgmma.c, persist_plan): step j of a tile in B's slot j */
        lower_line(L, "const int tl_it0 = tl_it;");
        lower_wg_res_test(L, w);
        lower_line(L, "const bool tl_bw = !tl_res || tl_u == (int)blockIdx.x; /* B copied: each step into the ring, "
                      "or the block's first tile into the resident slots */");
    }
    /* with values of the tap kept (hoist.c): an outer loop over taps that
     * sets them, an inner one over the steps of one tap */
    int taps = L->hoist && L->hoist->ntaps;
    if (taps)
        lower_line(L, "for (int %s = tl_lo; %s < tl_hi;) {", v, v);
    else
        lower_line(L, "for (int %s = tl_lo; %s < tl_hi; %s += tl_st, ++tl_it) {", v, v, v);
    L->ind++;
    lower_stepdiv_step(L, v);
    if (taps) {
        lower_hoist_taps(L);
        lower_line(L, "do { /* the steps of one tap */");
        L->ind++;
    }
    /* A's stages: S, or where B is resident and they are more, tl_res's (wgmma.c, res_stages) */
    lower_line(L, "const int tl_s = %s;", lower_wg_ring_of(L, w, "tl_it", "%"));
    if (w->bres)
        lower_line(L, "const int tl_bj = tl_res ? tl_it - tl_it0 : tl_s; /* B's slot */");
    const char *who = one ? "tl_tid == 0 && " : ""; /* one thread a step: it alone waits for the slot */
    if (lower_wg_nbar(w) == S)
        lower_line(L, "if (%stl_it >= %d)", who, S);
    else
        lower_line(L, "if (%stl_it >= (tl_res ? %d : %d))", who, lower_wg_nbar(w), S);
    lower_line(L, "    tl_mbar_wait(tl_empty + tl_s * 8, ((%s) + 1) & 1);", lower_wg_ring_of(L, w, "tl_it", "/"));
    if (w->atma)
        lower_wg_im2col_step(L, w);
    b_by_tma(L, w, aslot, bslot);
    if (one) {
        lower_line(L, "const bool tl_one = tl_at && %s; /* the step's copies all TMA: one thread's */",
                   w->bres ? "(tl_bt || !tl_bw)" : "tl_bt");
        lower_line(L, "if (!tl_one) { /* chunks by cp.async: the group meets the thread that waited for the slot */");
        L->ind++;
        lower_line(L, "asm volatile(\"bar.sync %d, %d;\" ::: \"memory\");", WG_GATHER_BAR, w->producers);
    } else {
        tma_issue(L, w, aslot, bslot);
    }
    L->eager_bool = 1; /* the masks' && as &: predicates, no branch a term (expr.c) */
    /* every chunk's address, place and masks first, then the copies: no branch between one chunk's arithmetic
     * and the next one's (lower_emit_async_prep). The H100 profile of the one-chunk-at-a-time producer
     * (docs/lowering.md): its warps issued one instruction every 7 cycles, mostly waiting on the previous
     * one, each chunk's arithmetic behind the last chunk's branch. Not where two blocks share an SM: the
     * producer's 56 registers spilled with it (the kept registers, reloaded each step). */
    const char *ad = lower_fmt(L, "tl_r0 + tl_s * %lld", (long long)aslot), *aat = swizzled(L, w->M, w->arow, es);
    const char *bd = lower_fmt(L, "tl_r0 + %s + %s * %lld", lower_wg_b_base(L, w), w->bres ? "tl_bj" : "tl_s",
                               (long long)bslot),
               *bat = swizzled(L, w->K, GA_ROW, es);
    if (L->hoist)
        L->hoist->cur = 0; /* which load's kept registers the copies read */
    int pa = w->blocks == 1 && !w->atma && lower_emit_async_prep(L, w->ld[0], lower_fmt(L, "tl_ring + tl_s * %lldu", (long long)aslot), aat, 0);
    if (L->hoist)
        L->hoist->cur = 1;
    int pb = pa && !w->btma && lower_emit_async_prep(L, w->ld[1], lower_fmt(L, "tl_ring + %lldu + tl_s * %lldu",
                                                                      (long long)(S * aslot), (long long)bslot),
                                               bat, 1);
    /* both loads' chunks whole or all masked (B's by TMA: A's): the copies, no branch between; else each
     * chunk's own path, as before */
    int fast = pa && (pb || w->btma);
    if (fast) {
        lower_line(L, "if (tl_xf0%s) { /* every chunk whole or all masked: one cp.async each */", pb ? " & tl_xf1" : "");
        L->ind++;
        lower_emit_async_issue(L, w->ld[0], 0);
        if (pb)
            lower_emit_async_issue(L, w->ld[1], 1);
        L->ind--;
        lower_line(L, "} else {");
        L->ind++;
        lower_stepdiv_opaque(L, v);
    }
    if (L->hoist)
        L->hoist->cur = 0;
    if (w->atma) {
        lower_line(L, "if (!tl_at) { /* a tap's offsets the copy cannot take: A's chunks by cp.async */");
        L->ind++;
    }
    lower_emit_async_load_at(L, w->ld[0], ad, aat, 0, LOWER_ASYNC_ONE);
    if (w->atma) {
        L->ind--;
        lower_line(L, "}");
    }
    if (L->hoist)
        L->hoist->cur = 1;
    if (pb || !w->btma)
        lower_emit_async_load_at(L, w->ld[1], bd, bat, 0, LOWER_ASYNC_ONE);
    if (fast) {
        L->ind--;
        lower_line(L, "}");
    }
    if (w->btma && !pb) {
        lower_line(L, "if (%s) { /* B's box partly masked: its chunks by cp.async */", w->bres ? "!tl_bt && tl_bw" : "!tl_bt");
        L->ind++;
        lower_emit_async_load_at(L, w->ld[1], bd, bat, 0, LOWER_ASYNC_ONE);
        L->ind--;
        lower_line(L, "}");
    }
    L->eager_bool = 0;
    if (one) { /* each thread's copies landed, the element-wise stores made: then the one arrival */
        lower_line(L, "asm volatile(\"cp.async.wait_all;\" ::: \"memory\");");
        /* the writer's proxy fence (its chunks and stores, generic proxy, before wgmma reads them through the
         * async one): the consumers then fence no step (wgmma.c, consumer) */
        lower_line(L, "tl_fence_async_smem();");
        lower_line(L, "asm volatile(\"bar.sync %d, %d;\" ::: \"memory\");", WG_GATHER_BAR, w->producers);
        L->ind--;
        lower_line(L, "}");
        tma_issue(L, w, aslot, bslot);
    } else {
        lower_line(L, "asm volatile(\"cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%%0];\" :: \"r\"(tl_full + tl_s * 8) : \"memory\");");
        lower_line(L, "tl_mbar_arrive(tl_full + tl_s * 8); /* the element-wise stores of a partial chunk */");
    }
    lower_stepdiv_advance(L);
    if (taps) {
        lower_line(L, "%s += tl_st, ++tl_it;", v);
        L->ind--;
        lower_line(L, "} while (!tl_tnew && %s < tl_hi);", v);
    }
    L->ind--;
    lower_line(L, "}");
    lower_stepdiv_end(L);
    lower_hoist_end(L);
    lower_leave(L);
    L->nt = nt;
    L->ind--;
    lower_line(L, "}");
    if (w->persist)
        return; /* the walk's end waits for the copies (persist_body) */
    lower_line(L, "asm volatile(\"cp.async.wait_all;\" ::: \"memory\"); /* no copy outlives its thread */");
    lower_line(L, "return;");
    L->ind--;
    lower_line(L, "}");
}
