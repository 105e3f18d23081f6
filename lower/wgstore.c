/* wgstore.c: the sm_90a twin's epilogue store through the tensor memory
 * accelerator. When the kernel ends with store(P + R[:, None] * S +
 * C[None, :], value, R[:, None] < rows && C[None, :] < cols) of the whole
 * wgmma tile, the twin writes the value (bias, activation, cast: whatever
 * the statement computes) from the accumulator fragments into the ring's
 * shared memory, now free, in the 128-byte swizzle (so a warp's stores
 * meet 32 banks), and one thread writes it out with
 * cp.async.bulk.tensor stores, one box of 128 bytes per row at a time.
 * The tensor map's extents are rows x cols, so the copy engine leaves
 * what lies past them unwritten, as the mask does. A misaligned output
 * sends the launch to the variant's own kernel (runtime/tma.c). Replaces
 * per-thread 4-byte stores from the fragments, which wrote each row in
 * 16-byte pieces (docs/lowering.md, "The epilogue"). A gather twin has
 * no store map (vstore): its tile goes into the same staging, then every
 * consumer thread stores 16-byte chunks of whole rows. */
#include <string.h>

#include "lower/lower_internal.h"

enum { WS_ROW = 128 }; /* bytes per swizzled row of a box */

/* The store statement s as the tile of the twin's accumulators: its map
 * into m with its index tiles. */
static int ws_match(lw *L, const tilec_stmt *s, tilec_tma_map *m, const tilec_expr **R, const tilec_expr **C,
                    const tilec_expr **Z, const tilec_expr **Ra, const tilec_expr **Ca)
{
    const wg_plan *w = &L->tw.plan;
    const tilec_expr *e = s->value;
    if (s->kind != TILEC_ST_EXPR || !tilec_is_builtin(e, BI_STORE) || e->nargs != 3)
        return 0;
    const tilec_type *pt = lower_ty(L, e->args[0]);
    if (pt->rank != 2 || pt->dims[0] != w->M || pt->dims[1] != w->N)
        return 0;
    return lower_wg_match(L, e->args[0], e->args[2], pt->dtype, w->M, m, R, C, Z, Ra, Ca);
}

/* The store statement s as a tile of the twin's accumulators written by
 * rows: store(ptr, value, mask) of f16, bf16 or f32 whose pointer tile is
 * unit-stride along the columns in runs of whole 16-byte chunks (the
 * axis analysis: any row offsets, e.g. P + R[:, None] * S + C[None, :]),
 * so a chunk is one st.global.v4 where aligned; any mask and pointer that
 * read no register tile (both walked again at a 16-byte chunk's indices);
 * *size its elements' bytes. Else 0 and *why the reason, for the remark. */
static int ws_rows_match(lw *L, const tilec_stmt *s, unsigned *size, const char **why)
{
    const wg_plan *w = &L->tw.plan;
    const tilec_expr *e = s->value;
    *why = NULL;
    if (s->kind != TILEC_ST_EXPR || !tilec_is_builtin(e, BI_STORE) || e->nargs < 2)
        return 0;
    const tilec_type *pt = lower_ty(L, e->args[0]);
    if (pt->rank != 2 || pt->dims[0] != w->M || pt->dims[1] != w->N) {
        *why = lower_fmt(L, "it stores a %s tile, not the product's [%lld, %lld]", lower_dims_text(L, pt->dims, pt->rank),
                         (long long)w->M, (long long)w->N);
        return 0;
    }
    if (pt->dtype != TILEC_DT_F16 && pt->dtype != TILEC_DT_BF16 && pt->dtype != TILEC_DT_F32) {
        *why = lower_fmt(L, "its elements are %s (f16, bf16 or f32 are staged)", tilec_dtype_name(pt->dtype));
        return 0;
    }
    const lower_axinfo *pi = lower_axinfo_of(L, e->args[0]);
    if (!pi->virt || (e->nargs > 2 && !lower_axinfo_of(L, e->args[2])->virt)) {
        *why = "its address or mask reads a tile held in registers";
        return 0;
    }
    *size = tilec_dtype_size(pt->dtype);
    int64_t vec = 16 / *size; /* a chunk's elements: contiguous where the columns' runs hold whole chunks */
    if (pi->rank != 2 || pi->ax[1].contig < vec || pi->ax[1].contig % vec) {
        *why = lower_fmt(L, "its columns are not unit-stride in runs of %lld elements (16 bytes)", (long long)vec);
        return 0;
    }
    if (w->N * *size % WS_ROW) { /* whole 128-byte rows of the staging's boxes */
        *why = lower_fmt(L, "a row of %lld elements is not whole 128-byte rows", (long long)w->N);
        return 0;
    }
    return 1;
}

void lower_wg_store_note(lw *L, const tilec_stmt *s)
{
    wg_plan *w = &L->tw.plan;
    const tilec_block *b = &L->k->body;
    if (L->tw.on || !L->tw.loop || w->store)
        return;
    const tilec_stmt *last = NULL;
    int after = 0;
    int other = 0; /* statements between the loop and the store other than lets */
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *t = b->stmts[i];
        if (t == L->tw.loop) {
            after = 1;
        } else if (after && t->kind != TILEC_ST_DOC) {
            if (last && last->kind != TILEC_ST_LET)
                other = 1;
            last = t;
        }
    }
    /* only lets before it: every consumer thread reaches the store's
     * barriers; matched here, at the store, where the lets after the loop
     * (an offset or a mask named first) are bound */
    const char *miss = L->miss;
    unsigned miss_line = L->miss_line;
    if (w->gather) { /* no tensor maps (an im2col box is no store's map): vstore */
        unsigned size = 0;
        const char *why = NULL;
        if (s != last)
            return; /* not the kernel's final store: its own stores, no remark */
        int rows = !other && ws_rows_match(L, last, &size, &why); /* else why: its reason */
        if (other)
            why = "statements other than lets lie between the loop and it";
        else if (rows && w->M * w->N * (int64_t)size > w->S * w->stage_bytes)
            why = lower_fmt(L, "its tile's %lld bytes do not fit in the ring's %lld", (long long)(w->M * w->N * size),
                            (long long)(w->S * w->stage_bytes));
        else if (rows) {
            w->store = last;
            w->vstore = 1;
            w->maps[2].elem_bytes = size;
            return;
        }
        w->vstore_miss = last;
        w->vstore_no = why ? lower_fmt(L, "; sm_90a twin: 4-byte stores from the fragments (not staged: %s)", why) : NULL;
        return;
    }
    int ok = s == last && !other && ws_match(L, last, &w->maps[2], &w->R[2], &w->C[2], &w->Z[2], &w->Ra[2], &w->Ca[2]);
    L->miss = miss; /* a store's refusal is no dot loop's reason */
    L->miss_line = miss_line;
    if (!ok)
        return;
    if (w->M * w->N * (int64_t)w->maps[2].elem_bytes > w->S * w->stage_bytes)
        return; /* the tile does not fit in the ring */
    if (w->Z[2] && w->maps[2].elem_bytes == 4)
        return; /* a batched tile of 4-byte elements (split-K partials) keeps the fragments' own stores,
                 * whole 32-byte sectors a quad: through shared memory and a 3-D map it measured slower
                 * (llm.tile's gemm_nn_sk: 1.645 against 1.506 ms, docs/lowering.md "The epilogue") */
    w->store = last;
    w->nmaps = 3;
}

/* Element q of the run at tl_j: the value in the output's type. */
static void ws_value(lw *L, const tilec_expr *value, const tilec_type *pt, const lay *y, int q)
{
    const char *qidx[TILEC_MAX_RANK];
    lower_run_idx(L, pt, pt->rank - 1, q, LOWER_RUN_REGS, qidx); /* as memory.c's stores (mask.c) */
    const char *v = lower_walk_at(L, value, pt, qidx, y);
    lower_line(L, "const %s tl_v%d = %s;", lower_ctype(pt->dtype), q,
               lower_st_elem(L, lower_conv(L, v, lower_ty(L, value)->dtype, pt->dtype), pt->dtype));
    lower_run_done(L);
}

/* The staging's writes of one part: the fragments' values, in the
 * output's type, into the boxes of 128-byte swizzled rows at tl_so (nq a
 * pair of fragment registers: one store of vt). */
static void ws_stage(lw *L, const tilec_expr *value, const tilec_type *pt, const lay *y, unsigned size, int nq,
                     const char *vt, int parts, int bpp, int part)
{
    const wg_plan *w = &L->tw.plan;
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_c = 0; tl_c < %d; tl_c += %d) {", y->E, nq);
    L->ind++;
    lower_line(L, "const int tl_j = tl_c;");
    lower_emit_index(L, y, "tl_j");
    lower_line(L, "const unsigned tl_b = (unsigned)tl_i1 * %u;", size);
    if (parts > 1) { /* this part's boxes only (known after unrolling: a run stays in one box) */
        lower_line(L, "if (tl_b / %d / %d != %d)", WS_ROW, bpp, part);
        lower_line(L, "    continue;");
    }
    const char *o = lower_fmt(L, "const unsigned tl_o = (tl_b / %d%s) * %lld + (unsigned)tl_i0 * %d + ((((tl_b %% %d) >> 4) ^ ((unsigned)tl_i0 & 7)) << 4) + (tl_b & 15);",
                              WS_ROW, part ? lower_fmt(L, " - %d", part * bpp) : "", (long long)(w->M * WS_ROW), WS_ROW, WS_ROW);
    if (L->tw.sload) { /* the tile read into the staging (wgmma.c, staged_issue) where this run is written */
        /* the run's elements adjacent in the staging's row (one 16-byte chunk, aligned as the write of tl_vec
         * below): one read of vt (LDS.32 for a pair of bf16, not two LDS.U16); 0 bits where no copy was made */
        lower_line(L, "%s", o);
        lower_line(L, "const %s tl_rw = tl_sc ? *(const %s *)(tl_so + tl_o) : %s;", vt, vt,
                   !strcmp(vt, "uint2") ? "make_uint2(0u, 0u)" : lower_fmt(L, "(%s)0", vt));
        for (int q = 0; q < nq; q++)
            lower_line(L, "const %s tl_r%d = ((const %s *)&tl_rw)[%d];", lower_ctype(pt->dtype), q,
                       lower_ctype(pt->dtype), q);
    }
    for (int q = 0; q < nq; q++) {
        L->tw.sq = q; /* lower_walk names tl_r<q> for the staged load */
        ws_value(L, value, pt, y, q);
    }
    if (!L->tw.sload)
        lower_line(L, "%s", o);
    lower_line(L, "%s tl_vec;", vt);
    for (int q = 0; q < nq; q++)
        lower_line(L, "((%s *)&tl_vec)[%d] = tl_v%d;", lower_ctype(pt->dtype), q, q);
    lower_line(L, "*(%s *)(tl_so + tl_o) = tl_vec;", vt);
    L->ind--;
    lower_line(L, "}");
}

/* vstore's writes of one part from the staging: every consumer thread
 * reads 16-byte chunks of whole rows (8 threads a box's row, a row of the
 * swizzle's 8 chunks: no bank conflict) and stores each with one
 * st.global.v4 where its elements are unmasked and the address aligned,
 * else element by element. */
static void ws_rows_out(lw *L, const tilec_expr *e, const tilec_type *pt, unsigned size, int bpp, int part)
{
    const wg_plan *w = &L->tw.plan;
    const tilec_expr *mask = e->nargs > 2 ? e->args[2] : NULL;
    int vec = 16 / (int)size, cpr = bpp * WS_ROW / 16; /* elements a chunk, chunks a row of this part */
    int64_t total = w->M * cpr;
    int nt = L->nt, iters = (int)((total + nt - 1) / nt);
    const char *ct = lower_ctype(pt->dtype);
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_n = 0; tl_n < %d; ++tl_n) {", iters);
    L->ind++;
    lower_line(L, "const int tl_u = tl_n * %d + tl_tid;", nt);
    if (total % nt) {
        lower_line(L, "if (tl_u >= %lld)", (long long)total);
        lower_line(L, "    break;");
    }
    lower_line(L, "const int tl_i0 = tl_u / %d, tl_k = tl_u %% %d;", cpr, cpr);
    lower_line(L, "const int tl_i1 = %d + tl_k * %d;", part * bpp * (WS_ROW / (int)size), vec);
    lower_line(L, "const uint4 tl_vec = *(const uint4 *)(tl_so + (tl_k >> 3) * %lld + tl_i0 * %d + (((tl_k & 7) ^ (tl_i0 & 7)) << 4));",
               (long long)(w->M * WS_ROW), WS_ROW);
    lower_line(L, "%s *tl_p = %s;", ct, lower_walk(L, e->args[0], lower_idx, 0, NULL, EMIT));
    int mono = mask && lower_monotone_mask(L, mask, 2, 1);
    strbuf all;
    sb_init(&all);
    for (int q = 0; q < vec && mask; q++) {
        lower_line(L, "const bool tl_m%d = %s;", q, lower_run_mask(L, mask, pt, 1, q, LOWER_RUN_CHUNK, NULL));
        if (!mono || q == vec - 1) /* a monotone mask: its last element decides the whole chunk */
            sb_printf(&all, "tl_m%d && ", q);
    }
    lower_line(L, "if (%s((unsigned long long)tl_p & 15) == 0) {", sb_str(&all));
    lower_line(L, "    *(uint4 *)tl_p = tl_vec;");
    lower_line(L, "} else {");
    for (int q = 0; q < vec; q++)
        lower_line(L, "    %stl_p[%d] = ((const %s *)&tl_vec)[%d];", mask ? lower_fmt(L, "if (tl_m%d) ", q) : "", q, ct, q);
    lower_line(L, "}");
    sb_free(&all);
    L->ind--;
    lower_line(L, "}");
}

/* The gather twin's store (vstore): the tile through shared memory, then
 * whole rows (lower_wg_store_note decided it). */
static int ws_rows(lw *L, const tilec_stmt *s, const lay *y)
{
    const wg_plan *w = &L->tw.plan;
    unsigned size = 0;
    const char *why;
    lay wy;
    if (!L->tw.done || s != w->store || !ws_rows_match(L, s, &size, &why) || size != w->maps[2].elem_bytes ||
        !lower_wg_layout(L, w->M, w->N, &wy) || !lower_same_layout(L, y, &wy))
        return 0; /* the names mean something else here: the plain store */
    const tilec_expr *e = s->value, *value = e->args[1];
    const tilec_type *pt = lower_ty(L, e->args[0]);
    int nq = y->run >= 2 && (y->run % 2) == 0 ? 2 : 1;
    const char *vt = nq * size == 8 ? "uint2" : nq * size == 4 ? "unsigned int" : "unsigned short";
    const char *sub[TILEC_MAX_RANK];
    lower_map_bcast(lower_ty(L, value), pt->rank, lower_idx, sub);
    lower_walk(L, value, sub, lower_same_shape(lower_ty(L, value), pt), y, PREP);
    for (uint32_t i = 0; i < e->nargs; i += 2) { /* the pointer and the mask, at a chunk's indices */
        lower_map_bcast(lower_ty(L, e->args[i]), pt->rank, lower_idx, sub);
        lower_walk(L, e->args[i], sub, 0, NULL, PREP);
    }
    int nb = (int)(w->N * size / WS_ROW);
    int parts = w->persist ? w->epi_parts : 1, bpp = nb / parts;
    lower_line(L, "{ /* the tile into %s (128-byte swizzle, %d boxes of %lld rows%s), then 16-byte stores of whole rows */",
               w->persist ? "its staging" : "the ring", nb, (long long)w->M,
               parts > 1 ? lower_fmt(L, ", %d at a time", bpp) : "");
    L->ind++;
    lower_line(L, "unsigned char *tl_so = tl_smem + (((tl_sa(tl_smem + %u) + 1023u) & ~1023u) - tl_sa(tl_smem))%s;",
               w->ring_base, w->epi_off ? lower_fmt(L, " + %lld", (long long)w->epi_off) : "");
    for (int part = 0; part < parts; part++) {
        lower_line(L, "tl_bar_consumers(%d); /* %s */", L->nt,
                   w->persist ? "every thread has read the staging's last part" : "every wgmma has read its stage");
        ws_stage(L, value, pt, y, size, nq, vt, parts, bpp, part);
        lower_line(L, "tl_bar_consumers(%d);", L->nt);
        ws_rows_out(L, e, pt, size, bpp, part);
    }
    L->ind--;
    lower_line(L, "}");
    return 1;
}

int lower_wg_store(lw *L, const tilec_stmt *s, const lay *y)
{
    const wg_plan *w = &L->tw.plan;
    if (w->vstore)
        return ws_rows(L, s, y);
    tilec_tma_map m;
    const tilec_expr *R, *C, *Z, *Ra, *Ca;
    lay wy;
    if (!L->tw.done || s != w->store || !ws_match(L, s, &m, &R, &C, &Z, &Ra, &Ca) || memcmp(&m, &w->maps[2], sizeof m) ||
        !lower_same_first(L, R, w->R[2]) || !lower_same_first(L, C, w->C[2]) || !lower_same_first(L, Z, w->Z[2]) ||
        !lower_same_first(L, Ra, w->Ra[2]) || !lower_same_first(L, Ca, w->Ca[2]) || !lower_wg_layout(L, w->M, w->N, &wy) ||
        !lower_same_layout(L, y, &wy))
        return 0; /* the names mean something else here: the plain store */
    const tilec_expr *e = s->value, *value = e->args[1];
    const tilec_type *pt = lower_ty(L, e->args[0]);
    unsigned size = m.elem_bytes;
    int nq = y->run >= 2 && (y->run % 2) == 0 ? 2 : 1; /* a pair of fragment registers: one 4- or 8-byte store */
    const char *vt = nq * size == 8 ? "uint2" : nq * size == 4 ? "unsigned int" : "unsigned short";
    const char *sub[TILEC_MAX_RANK];
    lower_map_bcast(lower_ty(L, value), pt->rank, lower_idx, sub);
    lower_walk(L, value, sub, lower_same_shape(lower_ty(L, value), pt), y, PREP);
    const char *col, *row;
    lower_wg_coords(L, w, 2, &col, &row);
    int nb = (int)(w->N * size / WS_ROW);
    int parts = w->persist ? w->epi_parts : 1, bpp = nb / parts; /* boxes per part */
    lower_line(L, "{ /* store by TMA: the tile into %s, 128-byte swizzle, then %d boxes of %lld x %u%s */",
               w->persist ? "its staging" : "the ring", nb, (long long)w->M, m.box_cols,
               parts > 1 ? lower_fmt(L, ", %d at a time", bpp) : "");
    L->ind++;
    /* two M tiles a block: warp group tl_g's staging after the first's (wgpair.c) */
    lower_line(L, "unsigned char *tl_so = tl_smem + (((tl_sa(tl_smem + %u) + 1023u) & ~1023u) - tl_sa(tl_smem))%s%s;",
               w->ring_base, w->epi_off ? lower_fmt(L, " + %lld", (long long)w->epi_off) : "",
               w->mpair ? lower_fmt(L, " + tl_g * %lld", (long long)(lower_wg_staging(w) / 2)) : "");
    const char *z = lower_wg_batch(L, w, 2);
    for (int part = 0; part < parts; part++) {
        if (L->tw.sload) { /* the tile read into the staging (wgmma.c, staged_issue), after the last store's read */
            lower_line(L, "tl_mbar_wait(tl_full0 + %d, ((tl_u - (int)blockIdx.x) / (int)gridDim.x) & 1); /* the "
                          "staging holds the tile line %u reads */", 16 * w->S, L->tw.sload->loc.line);
        } else if (w->persist) { /* a staging of its own, free once the last copies from it have read it */
            lower_line(L, "if (tl_tid == 0)");
            lower_line(L, "    tl_bulk_wait_read();");
            lower_line(L, "tl_bar_consumers(%d);", L->nt);
        } else {
            lower_line(L, "tl_bar_consumers(%d); /* every wgmma has read its stage */", L->nt);
        }
        ws_stage(L, value, pt, y, size, nq, vt, parts, bpp, part);
        lower_line(L, "tl_fence_async_smem();");
        lower_line(L, "tl_bar_consumers(%d);", L->nt);
        lower_line(L, "if (tl_tid == 0) {");
        L->ind++;
        for (int b = part * bpp; b < (part + 1) * bpp; b++)
            lower_line(L, "tl_tma_store_%dd(&tl_tm2, %s + %u, %s%s, tl_sa(tl_so) + %lld);", z[0] ? 3 : 2, col,
                       b * m.box_cols, row, z, (long long)((b - part * bpp) * w->M * WS_ROW));
        lower_line(L, "tl_bulk_commit();");
        if (!w->persist) /* a persistent twin waits before it writes the staging again, and at its end */
            lower_line(L, "tl_bulk_wait_read(); /* the shared memory stays until the copy engine has read it */");
        L->ind--;
        lower_line(L, "}");
    }
    L->ind--;
    lower_line(L, "}");
    return 1;
}
