/* layout.c: layouts of materialized tiles and indexing. Which elements a
 * thread holds in registers (canonical chunks, mma.sync fragments, an FMA
 * register block), the index variables tl_i* of element tl_j, row-major
 * linear indices, the per-thread element loop, and a tile written to shared
 * memory to be read at another shape or layout. */
#include <stdlib.h>
#include <string.h>

#include "lower/lower_internal.h"

static int ilog2(int64_t v)
{
    int r = 0;
    while ((INT64_C(1) << r) < v)
        r++;
    return r;
}

static int64_t numel_of(const tilec_type *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

lay lower_canon(const lw *L, const tilec_type *t)
{
    lay y;
    memset(&y, 0, sizeof y);
    y.kind = LY_CANON;
    y.rank = t->rank;
    memcpy(y.dims, t->dims, sizeof y.dims);
    y.numel = numel_of(t);
    if (y.numel >= L->nt) {
        y.E = (int)(y.numel / L->nt);
        int64_t last = t->rank ? t->dims[t->rank - 1] : 1;
        int vmax = lower_chunk_elems(L, t); /* one 16-byte access (layplan.c) */
        y.V = y.E < vmax ? y.E : vmax;
        if (y.V > last)
            y.V = (int)last;
    } else {
        y.E = 1;
        y.V = 1;
        y.repl = 1;
    }
    y.run = y.V;
    return y;
}

/* mma.sync m16n8k16 accumulators for [M, N]; 0 when the tile does not
 * split over the warps in 16x16 pieces. */
static int mma_layout(const lw *L, int64_t M, int64_t N, lay *y)
{
    int best = -1;
    int64_t bestd = 0;
    for (int wm = 1; wm <= L->nwarps; wm *= 2) {
        int wn = L->nwarps / wm;
        if (M % (16 * wm) || N % (16 * wn))
            continue;
        int64_t d = M / wm - N / wn;
        if (d < 0)
            d = -d;
        if (best < 0 || d < bestd) {
            best = wm;
            bestd = d;
        }
    }
    /* rows reduced in the kernel: every warp owns whole rows */
    if (L->rows_mma && M % (16 * L->nwarps) == 0 && N % 16 == 0)
        best = L->nwarps;
    if (best < 0)
        return 0;
    lower_mma_grid(M, N, best, L->nwarps / best, y);
    return 1;
}

void lower_mma_grid(int64_t M, int64_t N, int wm, int wn, lay *y)
{
    memset(y, 0, sizeof *y);
    y->kind = LY_MMA;
    y->rank = 2;
    y->dims[0] = M;
    y->dims[1] = N;
    y->numel = M * N;
    y->wm = wm;
    y->wn = wn;
    y->wtm = (int)(M / wm);
    y->wtn = (int)(N / wn);
    y->E = (y->wtm / 16) * (y->wtn / 8) * 4;
    y->run = 2;
}

/* A TM x TN register block per thread for [M, N] (f32 dot). A thread's
 * columns come in runs of 4 (FMA_QUAD), the runs tx * 4 columns apart:
 * neighbouring threads read neighbouring 16 bytes of a B row, so each
 * 16-byte shared-memory read of a warp is free of bank conflicts. */
static int fma_layout(const lw *L, int64_t M, int64_t N, lay *y)
{
    int best = -1;
    int64_t bestd = 0;
    for (int tx = 1; tx <= L->nt; tx *= 2) {
        int ty = L->nt / tx;
        if (N % tx || M % ty)
            continue;
        int64_t tn = N / tx, tm = M / ty;
        int64_t d = (tm > tn ? tm - tn : tn - tm) + (tn < 4 ? 64 : 0);
        if (best < 0 || d < bestd) {
            best = tx;
            bestd = d;
        }
    }
    if (best < 0)
        return 0;
    memset(y, 0, sizeof *y);
    y->kind = LY_FMA;
    y->rank = 2;
    y->dims[0] = M;
    y->dims[1] = N;
    y->numel = M * N;
    y->tx = best;
    y->ty = L->nt / best;
    y->tn = (int)(N / y->tx);
    y->tm = (int)(M / y->ty);
    y->E = y->tm * y->tn;
    y->run = y->tn < FMA_QUAD ? y->tn : FMA_QUAD;
    return 1;
}

/* Emit the index variables tl_i0.. of element `j` (a C expression) of
 * layout y. */
void lower_emit_index(lw *L, const lay *y, const char *j)
{
    if (y->rank == 0)
        return;
    if (y->kind == LY_CANON) {
        if (y->repl)
            lower_line(L, "const int tl_l = tl_tid %% %lld;", (long long)y->numel);
        else
            lower_line(L, "const int tl_l = ((%s / %d) * %d + tl_tid) * %d + (%s %% %d);", j, y->V, L->nt, y->V, j, y->V);
        int64_t stride = y->numel;
        strbuf b;
        sb_init(&b);
        sb_puts(&b, "const int ");
        for (int i = 0; i < y->rank; i++) {
            stride /= y->dims[i];
            sb_printf(&b, "%stl_i%d = (tl_l >> %d) & %lld", i ? ", " : "", i, ilog2(stride),
                      (long long)(y->dims[i] - 1));
        }
        sb_putc(&b, ';');
        lower_line(L, "%s", sb_str(&b));
        sb_free(&b);
    } else if (y->kind == LY_MMA) {
        int nt8 = y->wtn / 8;
        lower_line(L, "const int tl_i0 = (tl_warp / %d) * %d + (%s / %d) * 16 + (tl_lane >> 2) + ((%s >> 1) & 1) * 8;", y->wn,
             y->wtm, j, nt8 * 4, j);
        lower_line(L, "const int tl_i1 = (tl_warp %% %d) * %d + ((%s >> 2) %% %d) * 8 + (tl_lane & 3) * 2 + (%s & 1);", y->wn,
             y->wtn, j, nt8, j);
    } else if (y->kind == LY_LIN) {
        lower_lin_index(L, y, j);
    } else {
        lower_line(L, "const int tl_i0 = (tl_tid / %d) * %d + %s / %d;", y->tx, y->tm, j, y->tn);
        lower_line(L, "const int tl_i1 = ((%s %% %d) / %d) * %d + (tl_tid %% %d) * %d + %s %% %d;", j, y->tn, y->run,
                   y->run * y->tx, y->tx, y->run, j, y->run);
    }
}

/* Row-major linear index of the current element (tl_i*) of a tile. */
const char *lower_linear(lw *L, int rank, const int64_t *dims, const char *const *idx)
{
    if (rank == 0)
        return "0";
    strbuf b;
    sb_init(&b);
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; i--) {
        if (dims[i] != 1)
            sb_printf(&b, "%s(%s) * %lld", b.n ? " + " : "", idx[i], (long long)stride);
        stride *= dims[i];
    }
    const char *s = lower_fmt(L, "(%s)", b.n ? sb_str(&b) : "0");
    sb_free(&b);
    return s;
}

const char *const lower_idx[TILEC_MAX_RANK] = {"tl_i0", "tl_i1", "tl_i2", "tl_i3"};

void lower_loop_begin(lw *L, const lay *y)
{
    lower_line(L, "#pragma unroll");
    lower_line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) {", y->E);
    L->ind++;
    lower_emit_index(L, y, "tl_j");
}

void lower_loop_end(lw *L)
{
    L->ind--;
    lower_line(L, "}");
}

/* f32 dots go to tensor cores (tf32, m16n8k8) only under the kernel's
 * `tf32` hint (docs/language.md: its precision contract), K a multiple of 8. */
int lower_tf32(const lw *L, const tilec_type *at)
{
    return at->dtype == TILEC_DT_F32 && at->rank == 2 && at->dims[1] % 8 == 0 &&
           tilec_kernel_hint(L->k, L->variant, "tf32", 0) > 0;
}

int lower_dot_layout(lw *L, const tilec_type *at, int64_t M, int64_t N, lay *y)
{
    if (at->dtype == TILEC_DT_F32 && !(lower_tf32(L, at) && mma_layout(L, M, N, y)))
        return fma_layout(L, M, N, y);
    if (at->dtype == TILEC_DT_F32)
        return 1;
    if (L->tg->dot_layout && L->tg->dot_layout(L, M, N, y)) /* the target's own (the sm_90a twin: wgmma fragments) */
        return 1;
    return mma_layout(L, M, N, y);
}

/* Write a materialized value to its shared-memory buffer (row-major). */
void lower_spill(lw *L, val *v, const lay *to)
{
    for (int i = 0; i < L->nspilled; i++)
        if (L->spilled[i] == v)
            return;
    if (v->smem < 0)
        v->smem = (int)lower_alloc_smem(L, v->ly.numel * lower_vsize(&v->ty));
    /* two layouts --emit layouts prints alike differ in the order of a
     * thread's elements: say how, or the report reads as a conversion
     * between equal layouts */
    const char *how = "";
    strbuf a, b;
    sb_init(&a);
    sb_init(&b);
    if (to && to->rank == v->ly.rank) {
        lower_lin_describe(L, &v->ly, &a);
        lower_lin_describe(L, to, &b);
        if (!strcmp(sb_str(&a), sb_str(&b)))
            how = v->ly.run != to->run
                      ? lower_fmt(L, ": the same counts, but runs of %d contiguous elements a thread where the tile "
                                     "it meets holds runs of %d", v->ly.run, to->run)
                      : ": the same counts, its elements in another order";
    }
    L->failed |= a.failed | b.failed;
    sb_free(&a);
    sb_free(&b);
    lower_note(L, "  line %u: %s converted through shared memory (%lld bytes)%s", L->line, v->c,
               (long long)(v->ly.numel * lower_vsize(&v->ty)), how);
    lower_line(L, "__syncthreads();");
    lower_line(L, "{ /* %s to shared memory */", v->c);
    L->ind++;
    lower_loop_begin(L, &v->ly);
    const char *g = lower_lay_guard(L, &v->ly);
    if (g)
        lower_line(L, "if (%s)", g);
    lower_line(L, "((%s *)(tl_smem + %d))[%s] = %s[tl_j];", lower_vctype(L, &v->ty), v->smem,
         lower_linear(L, v->ly.rank, v->ly.dims, lower_idx), v->c);
    lower_loop_end(L);
    L->ind--;
    lower_line(L, "}");
    lower_line(L, "__syncthreads();");
    if (L->nspilled == L->capspilled) {
        int cap = L->capspilled ? L->capspilled * 2 : 8;
        const val **s = realloc(L->spilled, (size_t)cap * sizeof *s);
        if (!s) {
            L->failed = 1;
            return;
        }
        L->spilled = s;
        L->capspilled = cap;
    }
    L->spilled[L->nspilled++] = v;
}
