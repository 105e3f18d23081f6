/* wgim2col.c: a gather twin's A (wggather.c) read by TMA's im2col mode,
 * one cp.async.bulk.tensor copy a step from one elected producer thread,
 * where the analysis of the load's address and mask proves that the tile
 * is one im2col box: its rows consecutive output pixels p = P0 + i of the
 * flattened N x OH x OW (image p / (OH * OW), row p / OW % OH, column p %
 * OW), each reading the C contiguous channels c0 + j of input pixel
 * (image, row * stride + th, column * stride + tw), th and tw the filter
 * tap's offsets, masked to the image (the mask's four bounds and the
 * image count, which TMA's zero fill gives) and to the channels. The map
 * is of kind 2 (tilec/tma.h): the output's extents, not the filter's, fix
 * where its walk wraps, so whatever the kernel divides by is what the box
 * walks. Coordinates {c0, ow * stride - pad, oh * stride - pad, n} of the
 * box's first pixel, offsets {tw, th} a step, where `pad` is the
 * parameter both coordinates subtract (else 0: the rest of the scalars
 * are the offsets, checked each step to lie in 0..127, else A's chunks by
 * cp.async). docs/lowering.md
 * ("wgmma with gathered operands") has the conventions and the H200
 * figures. */
#include <string.h>

#include "lower/lower_internal.h"

/* e through lets, broadcasts and integer casts to 32 or 64 bits: the
 * narrowing ones too (`cast(ow * stride + q0 / cp % s1 - pad, i32)` of an
 * i64 sum), since a coordinate the map takes fits in 32 bits (its walk's
 * corners are 8-bit, the image's extents 32-bit: runtime/tma.c) */
static const tilec_expr *see(lw *L, const tilec_expr *e)
{
    for (int i = 0; e && i < 64; i++) {
        e = lower_index_canon(L, e);
        if (!e || !tilec_is_builtin(e, BI_CAST) || e->nargs < 1)
            break;
        const tilec_type *f = lower_ty(L, e->args[0]), *t = lower_ty(L, e);
        char fc = tilec_dtype_class(f->dtype), tc = tilec_dtype_class(t->dtype);
        if (f->ptr || t->ptr || (fc != 's' && fc != 'u') || (tc != 's' && tc != 'u') || tilec_dtype_size(t->dtype) < 4)
            break;
        e = e->args[0];
    }
    return e;
}

static int is_op(const tilec_expr *e, tilec_op op) { return e && e->kind == TILEC_EX_BINARY && e->op == op; }

/* An extent or stride as a map word: an integer parameter, or a constant
 * from 1 to 2^31 - 2; TILEC_TMA_NONE when neither. */
static uint32_t word_of(lw *L, const tilec_expr *e)
{
    int p = lower_param_of(L, e, 0, 1);
    int64_t c;
    if (p >= 0)
        return (uint32_t)p;
    if (lower_ty(L, e)->rank == 0 && lower_const_int(L, e, &c) == 0 && c >= 1 && c <= INT32_MAX - 1)
        return TILEC_TMA_CONST | (uint32_t)c;
    return TILEC_TMA_NONE;
}

typedef struct terms {
    const tilec_expr *e[IC_TERMS];
    int s[IC_TERMS];
    int n;
} terms;

/* The terms of a sum (+, -, unary -) with their signs, through lets and casts. */
static int split_sum(lw *L, const tilec_expr *e, int sign, terms *t, int depth)
{
    e = see(L, e);
    if (!e)
        return 0;
    if (depth < 16 && (is_op(e, TILEC_OP_ADD) || is_op(e, TILEC_OP_SUB)))
        return split_sum(L, e->args[0], sign, t, depth + 1) &&
               split_sum(L, e->args[1], is_op(e, TILEC_OP_SUB) ? -sign : sign, t, depth + 1);
    if (depth < 16 && e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG)
        return split_sum(L, e->args[0], -sign, t, depth + 1);
    if (t->n >= IC_TERMS)
        return 0;
    t->e[t->n] = e;
    t->s[t->n++] = sign;
    return 1;
}

/* e = x * k (either way round), x a 1-D tile (or a scalar too: any), k
 * a scalar extent: x and k's word. */
static int mul_of(lw *L, const tilec_expr *e, const tilec_expr **x, uint32_t *k, int any)
{
    e = see(L, e);
    if (!is_op(e, TILEC_OP_MUL))
        return 0;
    for (int i = 0; i < 2; i++)
        if (lower_ty(L, e->args[i])->rank == 0 && lower_ty(L, e->args[1 - i])->rank <= 1 &&
            (any || lower_ty(L, e->args[1 - i])->rank == 1) &&
            (*k = word_of(L, e->args[i])) != TILEC_TMA_NONE) {
            *x = e->args[1 - i];
            return 1;
        }
    return 0;
}

static int mul_by(lw *L, const tilec_expr *e, const tilec_expr **x, uint32_t *k) { return mul_of(L, e, x, k, 0); }

/* The pixels: one unit-stride index p, their column p % OW, row p / OW % OH
 * and image p / (OH * OW) (or p / OW / OH). */
typedef struct pix {
    const tilec_expr *p;
    uint32_t oh, ow;
} pix;

static int same_p(lw *L, pix *q, const tilec_expr *p)
{
    p = see(L, p);
    if (q->p)
        return q->p == p;
    int64_t s;
    if (lower_ty(L, p)->rank != 1 || !lower_stride(L, p, 0, &s) || s != 1)
        return 0;
    q->p = p;
    return 1;
}

/* the column: p % OW */
static int col_of(lw *L, const tilec_expr *e, pix *q)
{
    e = see(L, e);
    uint32_t w;
    return is_op(e, TILEC_OP_MOD) && (w = word_of(L, e->args[1])) != TILEC_TMA_NONE &&
           (q->ow == TILEC_TMA_NONE || q->ow == w) && same_p(L, q, e->args[0]) && ((q->ow = w), 1);
}

/* the row: p / OW % OH */
static int row_of(lw *L, const tilec_expr *e, pix *q)
{
    e = see(L, e);
    uint32_t h, w;
    if (!is_op(e, TILEC_OP_MOD) || (h = word_of(L, e->args[1])) == TILEC_TMA_NONE || (q->oh != TILEC_TMA_NONE && q->oh != h))
        return 0;
    const tilec_expr *d = see(L, e->args[0]);
    if (!is_op(d, TILEC_OP_DIV) || (w = word_of(L, d->args[1])) == TILEC_TMA_NONE ||
        (q->ow != TILEC_TMA_NONE && q->ow != w) || !same_p(L, q, d->args[0]))
        return 0;
    q->oh = h;
    q->ow = w;
    return 1;
}

/* the image: p / (OH * OW), p / (OW * OH) or p / OW / OH */
static int img_of(lw *L, const tilec_expr *e, pix *q)
{
    e = see(L, e);
    if (!is_op(e, TILEC_OP_DIV))
        return 0;
    const tilec_expr *d = see(L, e->args[1]), *n = see(L, e->args[0]);
    uint32_t a, b;
    if (is_op(d, TILEC_OP_MUL)) {
        a = word_of(L, d->args[0]);
        b = word_of(L, d->args[1]);
        return a != TILEC_TMA_NONE && ((a == q->oh && b == q->ow) || (a == q->ow && b == q->oh)) && same_p(L, q, n);
    }
    return (b = word_of(L, d)) == q->oh && b != TILEC_TMA_NONE && is_op(n, TILEC_OP_DIV) &&
           word_of(L, n->args[1]) == q->ow && same_p(L, q, n->args[0]);
}

/* One coordinate of the input pixel: x * stride + (scalars), x the output
 * column (W) or row (H) of the pixels. Its row term, its stride's word
 * (TILEC_TMA_NONE: 1), the padding subtracted (a parameter, or NULL) and
 * the rest, the filter tap's offset, into row, st, pad, off. */
static const char *coord_of(lw *L, const tilec_expr *e, int h, pix *q, const tilec_expr **row, uint32_t *st,
                            const tilec_expr **pad, terms *off)
{
    terms t = {.n = 0};
    if (!split_sum(L, e, 1, &t, 0))
        return "a coordinate of the input pixel has too many terms";
    *row = *pad = NULL;
    *st = TILEC_TMA_NONE;
    off->n = 0;
    for (int i = 0; i < t.n; i++) {
        const tilec_expr *x = t.e[i];
        if (lower_ty(L, x)->rank == 1) {
            if (*row || t.s[i] < 0)
                return "a coordinate of the input pixel is not one output coordinate times the stride plus scalars";
            const tilec_expr *y = x;
            if (!mul_by(L, x, &y, st))
                *st = TILEC_TMA_NONE;
            if (!(h ? row_of(L, y, q) : col_of(L, y, q)))
                return h ? "the input row is not (p / OW % OH) * stride + the tap for one unit-stride index p"
                         : "the input column is not (p % OW) * stride + the tap for one unit-stride index p";
            *row = x;
            continue;
        }
        if (lower_ty(L, x)->rank != 0)
            return "a coordinate of the input pixel has a term of two dimensions";
        if (t.s[i] < 0 && !*pad && lower_param_of(L, x, 0, 1) >= 0) { /* the padding: the map's lower corner */
            *pad = x;
            continue;
        }
        off->e[off->n] = x;
        off->s[off->n++] = t.s[i];
    }
    return *row ? NULL : "a coordinate of the input pixel does not vary with the row";
}

/* The conjunction's terms of a mask, each with the axis it is broadcast
 * along (0: a row's, 1: a column's, -1: neither). */
typedef struct conj {
    const tilec_expr *e[IC_TERMS];
    int ax[IC_TERMS];
    int n;
} conj;

/* x[:, None] (0), x[None, :] (1), else -1 */
static int bcast_axis(const tilec_expr *e)
{
    if (e->kind != TILEC_EX_INDEX || e->nargs != 3)
        return -1;
    int s1 = e->args[1]->kind == TILEC_EX_SLICE && !e->args[1]->nargs, n1 = e->args[1]->kind == TILEC_EX_NONE;
    int s2 = e->args[2]->kind == TILEC_EX_SLICE && !e->args[2]->nargs, n2 = e->args[2]->kind == TILEC_EX_NONE;
    return s1 && n2 ? 0 : n1 && s2 ? 1 : -1;
}

static int split_and(lw *L, const tilec_expr *e, int ax, conj *t, int depth)
{
    e = lower_look(L, e);
    if (!e)
        return 0;
    if (depth < 16 && (is_op(e, TILEC_OP_ANDAND) || is_op(e, TILEC_OP_AND)) && lower_ty(L, e)->dtype == TILEC_DT_BOOL)
        return split_and(L, e->args[0], ax, t, depth + 1) && split_and(L, e->args[1], ax, t, depth + 1);
    int b = bcast_axis(e);
    if (b >= 0 && depth < 16)
        return (ax < 0 || ax == b) && split_and(L, e->args[0], b, t, depth + 1);
    if (t->n >= IC_TERMS)
        return 0;
    t->e[t->n] = e;
    t->ax[t->n++] = ax;
    return 1;
}

/* e as x >= 0 (0 <= x): x; else NULL */
static const tilec_expr *nonneg(lw *L, const tilec_expr *e)
{
    int64_t z;
    if (is_op(e, TILEC_OP_GE) && lower_const_int(L, e->args[1], &z) == 0 && z == 0)
        return e->args[0];
    if (is_op(e, TILEC_OP_LE) && lower_const_int(L, e->args[0], &z) == 0 && z == 0)
        return e->args[1];
    return NULL;
}

/* e as x < b (b > x): x, b's word into *b; else NULL */
static const tilec_expr *below(lw *L, const tilec_expr *e, uint32_t *b)
{
    int i = is_op(e, TILEC_OP_LT) ? 0 : is_op(e, TILEC_OP_GT) ? 1 : -1;
    if (i < 0 || (*b = word_of(L, e->args[1 - i])) == TILEC_TMA_NONE)
        return NULL;
    return e->args[i];
}

/* e = x[:, None] * k (either way round), k a scalar extent: x, k's word
 * into *k; else NULL */
static const tilec_expr *bcast_times(lw *L, const tilec_expr *e, uint32_t *k)
{
    e = see(L, e);
    if (!is_op(e, TILEC_OP_MUL))
        return NULL;
    for (int i = 0; i < 2; i++) {
        const tilec_expr *x = lower_look(L, e->args[1 - i]);
        if (lower_ty(L, e->args[i])->rank == 0 && x && bcast_axis(x) == 0 && lower_ty(L, x->args[0])->rank == 1 &&
            (*k = word_of(L, e->args[i])) != TILEC_TMA_NONE)
            return x->args[0];
    }
    return NULL;
}

/* The words of a product of up to 3 scalar factors (through lets and
 * casts), into w; their count, or 0 where a factor is no word. */
static int factors(lw *L, const tilec_expr *e, uint32_t *w, int n, int depth)
{
    e = see(L, e);
    if (!e || depth > 4)
        return 0;
    if (is_op(e, TILEC_OP_MUL)) {
        int a = factors(L, e->args[0], w, n, depth + 1);
        return a ? factors(L, e->args[1], w, a, depth + 1) : 0;
    }
    uint32_t x = lower_ty(L, e)->rank == 0 ? word_of(L, e) : TILEC_TMA_NONE;
    if (x == TILEC_TMA_NONE || n >= 3)
        return 0;
    w[n] = x;
    return n + 1;
}

/* e as p < N * OH * OW (or N * OH * OW > p), the factors in any order, p
 * the pixels' index and OH, OW the walk's: 1, N's word into *b (the image
 * count: p / (OH * OW) < N for p >= 0); else 0 */
static int pixels_below(lw *L, const tilec_expr *e, const pix *q, uint32_t *b)
{
    int i = is_op(e, TILEC_OP_LT) ? 0 : is_op(e, TILEC_OP_GT) ? 1 : -1;
    uint32_t w[3];
    if (i < 0 || !q->p || see(L, e->args[i]) != q->p || factors(L, e->args[1 - i], w, 0, 0) != 3)
        return 0;
    for (int a = 0; a < 3; a++) /* w[a] the image count, the other two OH and OW */
        if ((w[(a + 1) % 3] == q->oh && w[(a + 2) % 3] == q->ow) || (w[(a + 1) % 3] == q->ow && w[(a + 2) % 3] == q->oh)) {
            *b = w[a];
            return 1;
        }
    return 0;
}

int lower_wg_im2col(lw *L, const tilec_expr *ld, tilec_tma_map *m, lower_im2col *ic, const char **why)
{
    const tilec_type *ty = lower_ty(L, ld);
    memset(ic, 0, sizeof *ic);
    *why = NULL;
    if (ty->rank != 2 || (ty->dtype != TILEC_DT_F16 && ty->dtype != TILEC_DT_BF16) || ld->nargs < 2 ||
        (ld->nargs >= 3 && !lower_is_zero(L, ld->args[2])))
        return *why = "A is not a masked f16 or bf16 load with zeros where masked", 0;
    int64_t M = ty->dims[0], K = ty->dims[1];
    if (M > 256)
        return *why = "A's rows are more than the 256 pixels of a box", 0;
    /* the pointer: a parameter + E[:, None] + c[None, :] */
    const tilec_expr *t[4], *E = NULL, *c = NULL, *x = lower_look(L, ld->args[0]);
    int n = 0, base = -1;
    while (is_op(x, TILEC_OP_ADD) && n < 3) {
        t[n++] = lower_look(L, x->args[1]);
        x = lower_look(L, x->args[0]);
    }
    t[n++] = x;
    const tilec_expr *X = NULL;
    uint32_t cs = TILEC_TMA_NONE;
    for (int i = 0; i < n; i++) {
        int b = bcast_axis(t[i]);
        const tilec_expr *r;
        uint32_t k;
        if (b == 0 && !E)
            E = t[i]->args[0];
        else if (!E && (r = bcast_times(L, t[i], &k)) != NULL)
            E = t[i], X = r, cs = k; /* (pixel index)[:, None] * C: the broadcast before the stride */
        else if (b == 1 && !c)
            c = t[i]->args[0];
        else if (lower_ty(L, t[i])->ptr && base < 0 && lower_ty(L, t[i])->rank == 0)
            base = lower_param_of(L, t[i], 1, 1);
        else
            base = -2;
    }
    int64_t s;
    if (base < 0 || !E || !c || lower_ty(L, c)->rank != 1 || !lower_stride(L, c, 0, &s) || s != 1)
        return *why = "A's pointer is not a pointer parameter + (pixel offsets)[:, None] + (channels)[None, :]", 0;
    /* E = (((img * H + h) * W + v) * C, C the pixel stride (or X[:, None] * C above) */
    uint32_t wp = 0, hp = 0;
    const tilec_expr *Y = NULL, *I = NULL, *Hh = NULL, *V = NULL;
    if (!X && !mul_by(L, E, &X, &cs))
        return *why = "A's pixel offsets are not (pixel index) * (pixel stride)", 0;
    X = see(L, X);
    for (int o = 0; is_op(X, TILEC_OP_ADD) && o < 2 && !I; o++) {
        if (!mul_by(L, X->args[o], &Y, &wp))
            continue;
        Y = see(L, Y);
        for (int o2 = 0; is_op(Y, TILEC_OP_ADD) && o2 < 2 && !I; o2++)
            if (mul_of(L, Y->args[o2], &I, &hp, 1)) {
                Hh = Y->args[1 - o2];
                V = X->args[1 - o];
            }
    }
    if (!I)
        return *why = "A's pixel index is not (image * H + h) * W + w", 0;
    pix q = {NULL, TILEC_TMA_NONE, TILEC_TMA_NONE};
    terms ow, oh;
    const tilec_expr *padw, *padh;
    uint32_t stw, sth;
    const char *bad = coord_of(L, V, 0, &q, &ic->wrow, &stw, &padw, &ow);
    if (!bad)
        bad = coord_of(L, Hh, 1, &q, &ic->hrow, &sth, &padh, &oh);
    if (bad)
        return *why = bad, 0;
    if (q.oh == TILEC_TMA_NONE || !img_of(L, I, &q))
        return *why = "the image is not p / (OH * OW) of the pixels' index p", 0;
    if (stw != sth)
        return *why = "the stride differs along H and W (a map has one)", 0;
    if ((padw == NULL) != (padh == NULL) || (padw && lower_param_of(L, padw, 0, 1) != lower_param_of(L, padh, 0, 1)))
        return *why = "the padding differs along H and W (a map has one)", 0;
    /* the mask: h >= 0, h < H, w >= 0, w < W and img < N of the rows, c < C of the channels, nothing else */
    conj mk = {.n = 0};
    if (!split_and(L, ld->args[1], -1, &mk, 0))
        return *why = "A's mask is not a conjunction of a row's bounds and the channels' bound", 0;
    const tilec_expr *sh = see(L, Hh), *sv = see(L, V), *si = see(L, I), *sc = see(L, c);
    int got = 0; /* bits: h >= 0, h < H, w >= 0, w < W, img < N, c < C */
    uint32_t nimg = TILEC_TMA_NONE, cols = TILEC_TMA_NONE, b;
    for (int i = 0; i < mk.n; i++) {
        const tilec_expr *e = see(L, mk.e[i]), *y;
        if ((y = nonneg(L, e)) != NULL && (y = see(L, y)) != NULL && (y == sh || y == sv)) {
            got |= y == sh ? 1 : 4;
            continue;
        }
        if (pixels_below(L, e, &q, &b)) { /* p < N * OH * OW: img < N */
            got |= 16;
            nimg = b;
            continue;
        }
        if ((y = below(L, e, &b)) != NULL && (y = see(L, y)) != NULL) {
            if (y == sh && b == hp) {
                got |= 2;
                continue;
            }
            if (y == sv && b == wp) {
                got |= 8;
                continue;
            }
            if (y == si) {
                got |= 16;
                nimg = b;
                continue;
            }
            if (y == sc) {
                got |= 32;
                cols = b;
                continue;
            }
        }
        return *why = "A's mask has a term other than the input pixel's bounds (h >= 0, h < H, w >= 0, w < W), the "
                      "image count and the channels' bound",
               0;
    }
    if (got != 63)
        return *why = "A's mask lacks one of the input pixel's bounds, the image count or the channels' bound (TMA "
                      "gives zeros outside the image and past C)",
               0;
    int64_t es = (int64_t)tilec_dtype_size(ty->dtype), kb = K * es;
    if (kb != 32 && kb != 64 && kb % 128)
        return *why = "the K tile is not 32 or 64 bytes or a multiple of 128 (a box's swizzled row)", 0;
    memset(m, 0, sizeof *m);
    m->ptr = (uint32_t)base;
    m->rows = nimg;
    m->cols = cols;
    m->stride = cs;
    m->box_rows = (uint32_t)M;
    m->box_cols = (uint32_t)((kb < 128 ? kb : 128) / es);
    m->elem_bytes = (uint32_t)es;
    m->bf16 = ty->dtype == TILEC_DT_BF16;
    m->bs[0] = m->bs[1] = TILEC_TMA_NONE;
    m->im2col = TILEC_TMA_IM2COL_OUT;
    m->ih = hp;
    m->iw = wp;
    m->fr = q.oh;
    m->fs = q.ow;
    m->pad = padw ? (uint32_t)lower_param_of(L, padw, 0, 1) : TILEC_TMA_NONE;
    m->cstride = stw;
    ic->img = I;
    ic->pad = padw;
    ic->c = c;
    ic->nw = ow.n;
    ic->nh = oh.n;
    for (int i = 0; i < ow.n; i++)
        ic->tw[i] = ow.e[i], ic->sw[i] = ow.s[i];
    for (int i = 0; i < oh.n; i++)
        ic->th[i] = oh.e[i], ic->sh[i] = oh.s[i];
    return 1;
}

/* e at the rows' first element, as C (no kept registers: a scalar of the step or the tile) */
static const char *at0(lw *L, const tilec_expr *e)
{
    static const char *const z[2] = {"0", "0"};
    lower_hoist *h = L->hoist;
    L->hoist = NULL;
    lower_walk(L, e, z, 0, NULL, PREP);
    const char *s = lower_walk(L, e, z, 0, NULL, EMIT);
    L->hoist = h;
    return s;
}

/* the signed sum of terms, as C */
static const char *sum_of(lw *L, const tilec_expr *const *e, const int *sg, int n)
{
    const char *s = "0";
    for (int i = 0; i < n; i++)
        s = lower_fmt(L, "%s %c (int)(%s)", s, sg[i] < 0 ? '-' : '+', at0(L, e[i]));
    return s;
}

void lower_wg_im2col_pre(lw *L, const wg_plan *w)
{
    const lower_im2col *ic = &w->ic;
    const char *pad = ic->pad ? lower_fmt(L, " - (int)(%s)", at0(L, ic->pad)) : "";
    lower_line(L, "/* A by TMA's im2col mode: its first pixel's image, column and row at the tap (0, 0) */");
    lower_line(L, "const int tl_an = (int)(%s), tl_aw = (int)(%s)%s, tl_ah = (int)(%s)%s;", at0(L, ic->img),
               at0(L, ic->wrow), pad, at0(L, ic->hrow), pad);
}

void lower_wg_im2col_step(lw *L, const wg_plan *w)
{
    const lower_im2col *ic = &w->ic;
    lower_line(L, "const int tl_ac = (int)(%s), tl_aow = %s, tl_aoh = %s;", at0(L, ic->c), sum_of(L, ic->tw, ic->sw, ic->nw),
               sum_of(L, ic->th, ic->sh, ic->nh));
    lower_line(L, "const bool tl_at = (unsigned)tl_aow <= 127u && (unsigned)tl_aoh <= 127u; /* the tap's offsets "
                  "as the copy takes them, else A by cp.async */");
}

void lower_wg_im2col_copy(lw *L, const wg_plan *w, const char *dst)
{
    int64_t rb = (int64_t)w->maps[0].box_cols * w->maps[0].elem_bytes, boxes = w->K * (int64_t)w->maps[0].elem_bytes / rb;
    for (int64_t j = 0; j < boxes; j++)
        lower_line(L, "asm volatile(\"cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
                      " [%%0], [%%1, {%%2, %%3, %%4, %%5}], [%%6], {%%7, %%8};\" :: \"r\"(%s + %lldu), "
                      "\"l\"((unsigned long long)&tl_tm0), \"r\"(tl_ac + %lld), \"r\"(tl_aw), \"r\"(tl_ah), \"r\"(tl_an), "
                      "\"r\"(tl_full + tl_s * 8), \"h\"((unsigned short)tl_aow), \"h\"((unsigned short)tl_aoh) : \"memory\");",
                   dst, (long long)(j * w->M * rb), (long long)(j * w->maps[0].box_cols));
}
