/* linlay.c: every register layout as a map of bits. Tile dimensions and
 * thread counts are powers of two, so each layout (canonical chunks,
 * mma.sync fragments, the FMA block, the row-blocked layout the plan picks
 * for row reductions, and the slices reductions leave) says, for each bit
 * of a thread's register index, of its lane and of its warp, which bit of
 * the element's row-major linear index it sets, or none (the value is
 * replicated over that lane or warp bit). From that map: the element index
 * of any layout (LY_LIN), whether a thread already holds the element a
 * broadcast reads (and in which register), which threads must not store a
 * replicated value, and the text --emit layouts prints. */
#include <string.h>

#include "lower/lower_internal.h"

static int lg(int64_t v)
{
    int r = 0;
    while ((INT64_C(1) << r) < v)
        r++;
    return r;
}

/* The first linear-index bit of dimension d. */
static int dim_off(const lay *y, int d)
{
    int o = 0;
    for (int i = y->rank - 1; i > d; i--)
        o += lg(y->dims[i]);
    return o;
}

/* The dimension of linear-index bit p, and its bit within the dimension. */
static int bit_dim(const lay *y, int p, int *within)
{
    for (int d = y->rank - 1; d >= 0; d--) {
        int n = lg(y->dims[d]);
        if (p < n) {
            *within = p;
            return d;
        }
        p -= n;
    }
    *within = 0;
    return -1;
}

static void bits_none(lbits *b)
{
    memset(b, -1, sizeof *b);
    b->nreg = 0;
}

/* Thread bit k of a thread-level map: lane bits 0-4, then warp bits. */
static signed char *thread_bit(lbits *b, int k) { return k < 5 ? &b->lane[k] : &b->warp[k - 5]; }

static void canon_bits(const lw *L, const lay *y, lbits *b)
{
    int tb = lg(L->nt);
    if (y->repl) {
        int n = lg(y->numel);
        for (int k = 0; k < tb; k++)
            *thread_bit(b, k) = (signed char)(k < n ? k : -1);
        return;
    }
    int v = lg(y->V), e = lg(y->E);
    b->nreg = e;
    for (int k = 0; k < v; k++)
        b->reg[k] = (signed char)k;
    for (int k = 0; k < tb; k++)
        *thread_bit(b, k) = (signed char)(v + k);
    for (int k = v; k < e; k++)
        b->reg[k] = (signed char)(tb + k);
}

static void mma_bits(const lay *y, lbits *b)
{
    int cb = lg(y->dims[1]); /* row bit r is linear bit cb + r */
    int nt8 = lg(y->wtn / 8), mt = lg(y->wtm / 16), wn = lg(y->wn), wm = lg(y->wm);
    int k = 0;
    b->reg[k++] = 0;
    b->reg[k++] = (signed char)(cb + 3);
    for (int i = 0; i < nt8; i++)
        b->reg[k++] = (signed char)(3 + i);
    for (int i = 0; i < mt; i++)
        b->reg[k++] = (signed char)(cb + 4 + i);
    b->nreg = k;
    b->lane[0] = 1;
    b->lane[1] = 2;
    for (int i = 0; i < 3; i++)
        b->lane[2 + i] = (signed char)(cb + i);
    for (int i = 0; i < wn; i++)
        b->warp[i] = (signed char)(lg(y->wtn) + i);
    for (int i = 0; i < wm; i++)
        b->warp[wn + i] = (signed char)(cb + lg(y->wtm) + i);
}

static void fma_bits(const lay *y, lbits *b)
{
    int cb = lg(y->dims[1]), tn = lg(y->tn), tm = lg(y->tm), tx = lg(y->tx), ty = lg(y->ty), q = lg(y->run);
    b->nreg = tn + tm;
    for (int i = 0; i < tn; i++) /* runs of y->run columns, tx runs apart */
        b->reg[i] = (signed char)(i < q ? i : i + tx);
    for (int i = 0; i < tm; i++)
        b->reg[tn + i] = (signed char)(cb + i);
    for (int i = 0; i < tx; i++)
        *thread_bit(b, i) = (signed char)(q + i);
    for (int i = 0; i < ty; i++)
        *thread_bit(b, tx + i) = (signed char)(cb + tm + i);
}

void lower_lin_bits(const lw *L, const lay *y, lbits *b)
{
    if (y->kind == LY_LIN) {
        *b = y->b;
        return;
    }
    bits_none(b);
    if (y->rank == 0)
        return;
    if (y->kind == LY_CANON)
        canon_bits(L, y, b);
    else if (y->kind == LY_MMA)
        mma_bits(y, b);
    else
        fma_bits(y, b);
}

/* A layout of kind LY_LIN from its bits (E, run and the rest derived). */
static lay lin_make(const lw *L, int rank, const int64_t *dims, const lbits *b)
{
    lay y;
    memset(&y, 0, sizeof y);
    y.kind = LY_LIN;
    y.rank = rank;
    y.numel = 1;
    for (int i = 0; i < rank; i++) {
        y.dims[i] = dims[i];
        y.numel *= dims[i];
    }
    y.b = *b;
    y.E = 1 << b->nreg;
    /* run: register bits 0.. setting linear bits 0.. */
    int r = 0;
    while (r < b->nreg && b->reg[r] == r)
        r++;
    y.run = 1 << r;
    y.V = y.run;
    (void)L;
    return y;
}

/* Rows of a 2-D tile split over warps, each row over the lanes of a warp
 * with up to 4 contiguous elements per access, so a reduction along the
 * last axis stays within a warp (Triton: sizePerThread [1, 4],
 * threadsPerWarp [32 / t, t], warpsPerCTA [warps, 1]). */
lay lower_lin_rows(const lw *L, const tilec_type *t)
{
    lay canon = lower_canon(L, t);
    if (t->rank != 2 || canon.repl)
        return canon;
    int cb = lg(t->dims[1]), rb = lg(t->dims[0]), tb = lg(L->nt), wb = tb - 5;
    /* up to 16 bytes per access: 4 f32, 8 f16; 8 of an f32 tile too where a
     * load or store at its shape moves f16 or bf16 (lower_chunk_elems), so a
     * zeros(f32, ...) accumulator meets the cast of a bf16 load in registers */
    int vb = tilec_dtype_size(t->dtype) <= 2 || lower_chunk_elems(L, t) == 8 ? 3 : 2;
    int n = cb + rb, v = cb < vb ? cb : vb;
    if (n - tb < v)
        return canon;
    lbits b;
    bits_none(&b);
    int nc = 0, nr = 0; /* column and row bits given out */
    for (int k = 0; k < v; k++)
        b.reg[b.nreg++] = (signed char)nc++;
    for (int k = 0; k < 5; k++)
        b.lane[k] = (signed char)(nc < cb ? nc++ : nr < rb ? cb + nr++ : -1);
    /* warps take rows first; with rows used up, the column bits right
     * above the lanes' (as the canonical 1-D layout: a thread's vectors
     * warps * 32 * vec columns apart, each access of the block one
     * contiguous stretch of the row), the registers the rest */
    int wr = rb - nr < wb ? rb - nr : wb, wc = wb - wr;
    if (wc > cb - nc)
        return canon;
    for (int k = 0; k < wr; k++)
        b.warp[k] = (signed char)(cb + nr++);
    for (int k = 0; k < wc; k++)
        b.warp[wr + k] = (signed char)nc++;
    while (nc < cb)
        b.reg[b.nreg++] = (signed char)nc++;
    while (nr < rb)
        b.reg[b.nreg++] = (signed char)(cb + nr++);
    return lin_make(L, 2, t->dims, &b);
}

/* A 2-D tile contiguous in memory along axis 0 (a transposed view such as
 * k + n[None, :] * D + d[:, None]): the row-blocked layout of its
 * transpose, so consecutive lanes read consecutive addresses. */
lay lower_lin_cols(const lw *L, const tilec_type *t)
{
    tilec_type tt = *t;
    tt.dims[0] = t->dims[1];
    tt.dims[1] = t->dims[0];
    lay r = lower_lin_rows(L, &tt);
    if (r.kind != LY_LIN)
        return lower_canon(L, t);
    int b0 = lg(t->dims[0]), b1 = lg(t->dims[1]);
    lbits b = r.b;
#define SWAP(p) ((p) < 0 ? (p) : (p) < b0 ? (p) + b1 : (p) - b0)
    for (int k = 0; k < b.nreg; k++)
        b.reg[k] = (signed char)SWAP(b.reg[k]);
    for (int k = 0; k < 5; k++) {
        b.lane[k] = (signed char)SWAP(b.lane[k]);
        b.warp[k] = (signed char)SWAP(b.warp[k]);
    }
#undef SWAP
    return lin_make(L, 2, t->dims, &b);
}

/* The layout a reduction along `axis` leaves: the axis's register bits
 * dropped, its lane and warp bits replicated; *regs, *lanes, *warps get
 * the masks of the input's bits that lie on the axis. */
lay lower_lin_slice(const lw *L, const lay *x, int axis, unsigned *regs, unsigned *lanes, unsigned *warps)
{
    lbits in, out;
    lower_lin_bits(L, x, &in);
    bits_none(&out);
    int lo = dim_off(x, axis), n = lg(x->dims[axis]);
    int64_t dims[TILEC_MAX_RANK];
    for (int i = 0, k = 0; i < x->rank; i++)
        if (i != axis)
            dims[k++] = x->dims[i];
    *regs = *lanes = *warps = 0;
    /* linear bit p of the input, in the output: -1 on the axis */
#define MAPBIT(p) ((p) < 0 ? -1 : (p) < lo ? (p) : (p) < lo + n ? -1 : (p) - n)
    for (int k = 0; k < in.nreg; k++) {
        int q = MAPBIT(in.reg[k]);
        if (q < 0)
            *regs |= 1u << k;
        else
            out.reg[out.nreg++] = (signed char)q;
    }
    for (int k = 0; k < 5; k++) {
        out.lane[k] = (signed char)MAPBIT(in.lane[k]);
        if (in.lane[k] >= 0 && out.lane[k] < 0)
            *lanes |= 1u << k;
        out.warp[k] = (signed char)MAPBIT(in.warp[k]);
        if (in.warp[k] >= 0 && out.warp[k] < 0)
            *warps |= 1u << k;
    }
#undef MAPBIT
    return lin_make(L, x->rank - 1, dims, &out);
}

/* OR of source bits of `x` moved to destination bits: pairs (src[i],
 * dst[i]) for i < n, dst < 0 skipped; runs of consecutive bits merged. */
static const char *gather(lw *L, const char *x, const int *src, const int *dst, int n)
{
    strbuf s;
    sb_init(&s);
    for (int i = 0; i < n; i++) {
        if (dst[i] < 0)
            continue;
        int len = 1;
        while (i + len < n && dst[i + len] == dst[i] + len && src[i + len] == src[i] + len)
            len++;
        sb_printf(&s, "%s((%s >> %d) & %d) << %d", s.n ? " | " : "", x, src[i], (1 << len) - 1, dst[i]);
        i += len - 1;
    }
    const char *r = lower_fmt(L, "(%s)", s.n ? sb_str(&s) : "0");
    sb_free(&s);
    return r;
}

/* The index of dimension d gathered from one kind of source. */
static const char *dim_from(lw *L, const lay *y, int d, const char *x, const signed char *map, int nmap)
{
    int src[32], dst[32], n = 0, lo = dim_off(y, d), nb = lg(y->dims[d]);
    for (int k = 0; k < nmap; k++)
        if (map[k] >= lo && map[k] < lo + nb) {
            src[n] = k;
            dst[n++] = map[k] - lo;
        }
    return n ? gather(L, x, src, dst, n) : NULL;
}

void lower_lin_index(lw *L, const lay *y, const char *j)
{
    for (int d = 0; d < y->rank; d++) {
        const char *part[3] = {dim_from(L, y, d, lower_fmt(L, "(%s)", j), y->b.reg, y->b.nreg),
                               dim_from(L, y, d, "tl_lane", y->b.lane, 5), dim_from(L, y, d, "tl_warp", y->b.warp, 5)};
        strbuf s;
        sb_init(&s);
        for (int i = 0; i < 3; i++)
            if (part[i])
                sb_printf(&s, "%s%s", s.n ? " | " : "", part[i]);
        lower_line(L, "const int tl_i%d = %s;", d, s.n ? sb_str(&s) : "0");
        sb_free(&s);
    }
}

int lower_lay_run(const lw *L, const lay *y, int *axis)
{
    *axis = y->rank - 1;
    if (y->kind != LY_LIN || y->rank == 0 || !y->b.nreg)
        return y->run;
    int w, d = bit_dim(y, y->b.reg[0], &w), r = 1;
    if (d < 0 || w != 0)
        return 1;
    while (r < y->b.nreg && y->b.reg[r] == y->b.reg[0] + r && bit_dim(y, y->b.reg[r], &w) == d)
        r++;
    *axis = d;
    (void)L;
    return 1 << r;
}

const char *lower_lay_guard(lw *L, const lay *y)
{
    if (y->kind == LY_CANON)
        return y->repl ? lower_fmt(L, "tl_tid < %lld", (long long)y->numel) : NULL;
    if (y->kind != LY_LIN)
        return NULL;
    unsigned m = 0;
    for (int k = 0; k < 10; k++)
        if (k < lg(L->nt) && *thread_bit((lbits *)&y->b, k) < 0)
            m |= 1u << k;
    return m ? lower_fmt(L, "(tl_tid & %u) == 0", m) : NULL;
}

int lower_same_layout(const lw *L, const lay *a, const lay *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    lbits x, y;
    lower_lin_bits(L, a, &x);
    lower_lin_bits(L, b, &y);
    return !memcmp(&x, &y, sizeof x);
}

/* The consumer dimension an index text names ("tl_i1", "(tl_i1 + 2)"),
 * -2 for "0", -1 for anything else. */
static int idx_dim(const char *s)
{
    if (!s)
        return -1;
    if (!strcmp(s, "0"))
        return -2;
    if (s[0] == '(')
        s++;
    if (strncmp(s, "tl_i", 4) || s[4] < '0' || s[4] > '3')
        return -1;
    return s[5] == 0 || s[5] == ' ' ? s[4] - '0' : -1;
}

const char *lower_lin_reg(lw *L, const val *v, const char *const *idx, const lay *cur)
{
    if (!cur || !idx || v->ly.rank == 0)
        return NULL;
    lbits vb, cb;
    lower_lin_bits(L, &v->ly, &vb);
    lower_lin_bits(L, cur, &cb);
    /* linear bit of v -> linear bit of the consumer */
    int map[32];
    for (int p = 0; p < 32; p++)
        map[p] = -1;
    for (int d = 0; d < v->ly.rank; d++) {
        int k = idx_dim(idx[d]);
        if (k == -2 && v->ly.dims[d] == 1)
            continue;
        if (k < 0 || k >= cur->rank || cur->dims[k] != v->ly.dims[d])
            return NULL;
        for (int i = 0, vo = dim_off(&v->ly, d), co = dim_off(cur, k); i < lg(v->ly.dims[d]); i++)
            map[vo + i] = co + i;
    }
    for (int k = 0; k < 5; k++)
        if ((vb.lane[k] >= 0 && map[vb.lane[k]] != cb.lane[k]) || (vb.warp[k] >= 0 && map[vb.warp[k]] != cb.warp[k]))
            return NULL;
    int src[32], dst[32];
    for (int k = 0; k < vb.nreg; k++) {
        int q = map[vb.reg[k]], r = -1;
        for (int i = 0; i < cb.nreg && q >= 0; i++)
            if (cb.reg[i] == q)
                r = i;
        if (r < 0)
            return NULL;
        src[k] = r;
        dst[k] = k;
    }
    const char *j = L->joff ? lower_fmt(L, "(tl_j + %d)", L->joff) : "tl_j";
    return vb.nreg ? gather(L, j, src, dst, vb.nreg) : "0";
}

/* "[4, 4]" of per-dimension counts of the bits of one source kind. */
static void counts(strbuf *s, const lay *y, const signed char *map, int n)
{
    sb_putc(s, '[');
    for (int d = 0; d < y->rank; d++) {
        int c = 0;
        for (int k = 0; k < n; k++) {
            int w;
            if (map[k] >= 0 && bit_dim(y, map[k], &w) == d)
                c++;
        }
        sb_printf(s, "%s%d", d ? ", " : "", 1 << c);
    }
    sb_putc(s, ']');
}

void lower_lin_describe(const lw *L, const lay *y, strbuf *s)
{
    static const char *const kinds[] = {"canonical", "mma", "fma", "blocked"};
    lbits b;
    lower_lin_bits(L, y, &b);
    sb_printf(s, "%s", kinds[y->kind]);
    if (y->kind == LY_MMA)
        sb_printf(s, " m16n8k16 warps %dx%d", y->wm, y->wn);
    sb_puts(s, " regs");
    counts(s, y, b.reg, b.nreg);
    sb_puts(s, " lanes");
    counts(s, y, b.lane, 5);
    sb_puts(s, " warps");
    counts(s, y, b.warp, 5);
    sb_printf(s, " E=%d", y->E);
    int rl = 0, rw = 0;
    for (int k = 0; k < 5; k++) {
        rl += b.lane[k] < 0;
        rw += k < lg(L->nwarps) && b.warp[k] < 0;
    }
    if (rl || rw)
        sb_printf(s, " replicated x%d", 1 << (rl + rw));
}
