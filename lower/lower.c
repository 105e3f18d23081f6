/* lower.c: a checked kernel variant to CUDA C.
 *
 * One CUDA block runs one program instance with 32*warps threads. A tile
 * value is either virtual (a pure function of the element index: range,
 * broadcasts, arithmetic on them), re-computed inline wherever it is used,
 * or materialized in registers: each thread holds E elements in a layout.
 * The canonical layout gives each thread V contiguous elements of the
 * row-major tile, chunk after chunk, so loads and stores of contiguous
 * pointers become vector accesses. Dot accumulators live in the layout of
 * the instruction that produces them (mma.sync fragments for f16/bf16, a
 * TMxTN register block for f32). A materialized tile read at another shape
 * or layout goes through shared memory. See docs/lowering.md. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl/diag.h"
#include "lower/marker.h"
#include "parser/parse.h"
#include "tilec/limits.h"
#include "tilec/lower.h"
#include "util/escape.h"
#include "util/mangle.h"
#include "util/strbuf.h"

enum { SMEM_LIMIT = 227 * 1024 }; /* opt-in shared memory per block on sm_90 */

typedef enum { LY_CANON, LY_MMA, LY_FMA } lykind;

typedef struct lay {
    lykind kind;
    int rank;
    int64_t dims[TILEC_MAX_RANK];
    int64_t numel;
    int E;    /* elements per thread */
    int V;    /* canonical: elements per contiguous chunk */
    int repl; /* canonical, numel < threads: thread t holds element t % numel */
    int run;  /* consecutive elements j along the last dimension */
    int wm, wn, wtm, wtn;  /* mma: warp grid and warp tile */
    int ty, tx, tm, tn;    /* fma: thread grid and thread tile */
} lay;

typedef enum { VK_SCALAR, VK_VIRT, VK_MAT } vkind;

typedef struct val {
    vkind kind;
    tilec_type ty;
    const char *c;          /* C name of the scalar or the register array */
    const tilec_expr *expr; /* VK_VIRT */
    lay ly;                 /* VK_MAT */
    int smem;               /* VK_MAT: its spill buffer in shared memory, or -1 */
} val;

typedef struct lbind {
    const char *name;
    val *v;
    int depth;
} lbind;

typedef struct matnode {
    const tilec_expr *e;
    val *v;
} matnode;

typedef struct lw {
    tilec_ctx *ctx;
    const tilec_module *m;
    const tilec_kernel *k;
    int variant;  /* -1: the base hints */
    arena ar;
    strbuf out;
    int ind;
    int nt, nwarps;
    uint32_t smem;
    int tmp;
    lbind *binds;
    int nbinds, capbinds, depth;
    matnode *mats; /* materialized subexpressions of the current statement */
    int nmats, capmats;
    const val **spilled; /* values spilled for the current statement */
    int nspilled, capspilled;
    int failed;
    int joff; /* EMIT: read register element tl_j + joff (a vector run) */
    const char **assigned; /* names assigned somewhere in the body */
    int nassigned;
    const char **dotacc; /* names updated as x = x + dot(a, b) */
    int ndotacc;
} lw;

/* ---- small helpers ---- */

__attribute__((format(printf, 3, 4))) static void fail(lw *L, const tilec_loc *loc, const char *fmt, ...)
{
    if (L->failed)
        return;
    L->failed = 1;
    strbuf b;
    sb_init(&b);
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(&b, fmt, ap);
    va_end(ap);
    if (L->k->nvariants)
        diag_at(L->ctx, &L->m->src, loc, TILEC_SEV_ERROR, "kernel '%s' (variant %s = %lld): %s", L->k->name,
                L->k->variant_sym, (long long)L->k->variants[L->variant].size, sb_str(&b));
    else
        diag_at(L->ctx, &L->m->src, loc, TILEC_SEV_ERROR, "kernel '%s': %s", L->k->name, sb_str(&b));
    sb_free(&b);
}

__attribute__((format(printf, 2, 3))) static const char *fmt(lw *L, const char *f, ...)
{
    strbuf b;
    sb_init(&b);
    va_list ap;
    va_start(ap, f);
    sb_vprintf(&b, f, ap);
    va_end(ap);
    const char *s = ar_strdup(&L->ar, sb_str(&b));
    sb_free(&b);
    if (!s)
        L->failed = 1;
    return s ? s : "0";
}

__attribute__((format(printf, 2, 3))) static void line(lw *L, const char *f, ...)
{
    for (int i = 0; i < L->ind; i++)
        sb_puts(&L->out, "    ");
    va_list ap;
    va_start(ap, f);
    sb_vprintf(&L->out, f, ap);
    va_end(ap);
    sb_putc(&L->out, '\n');
}

static const char *newtmp(lw *L, const char *stem) { return fmt(L, "tl_%s%d", stem, L->tmp++); }

static const tilec_type *TY(const lw *L, const tilec_expr *e)
{
    return L->variant >= 0 && e->vtypes ? &e->vtypes[L->variant] : &e->type;
}

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

/* C types: how a dtype is stored, and the type arithmetic happens in. */
static const char *ctype(tilec_dtype d)
{
    static const char *const names[] = {"bool", "signed char", "short", "int", "long long", "unsigned char",
                                        "unsigned short", "unsigned int", "unsigned long long", "__half",
                                        "__nv_bfloat16", "float", "double"};
    return (unsigned)d < TILEC_DT_COUNT ? names[d] : "int";
}

static tilec_dtype compute_dt(tilec_dtype d) { return d == TILEC_DT_F16 || d == TILEC_DT_BF16 ? TILEC_DT_F32 : d; }
static const char *cctype(tilec_dtype d) { return ctype(compute_dt(d)); }

/* Convert a C expression of compute type `from` to compute type `to`. */
static const char *conv(lw *L, const char *x, tilec_dtype from, tilec_dtype to)
{
    if (compute_dt(from) == compute_dt(to))
        return x;
    return fmt(L, "((%s)(%s))", cctype(to), x);
}

/* A stored element (e.g. arr[j], *p) as a compute-type C expression. */
static const char *ld_elem(lw *L, const char *x, tilec_dtype d)
{
    if (d == TILEC_DT_F16)
        return fmt(L, "__half2float(%s)", x);
    if (d == TILEC_DT_BF16)
        return fmt(L, "__bfloat162float(%s)", x);
    return x;
}

/* A compute-type value converted for storing as dtype d. */
static const char *st_elem(lw *L, const char *x, tilec_dtype d)
{
    if (d == TILEC_DT_F16)
        return fmt(L, "__float2half_rn(%s)", x);
    if (d == TILEC_DT_BF16)
        return fmt(L, "__float2bfloat16_rn(%s)", x);
    return x;
}

/* The CUDA name of a .tile parameter, hint, let or loop variable:
 * v_NAME (util/mangle.h), which no C++ or CUDA name and none of ours meets. */
static const char *cname(lw *L, const char *name)
{
    strbuf b;
    sb_init(&b);
    mg_cuda(&b, name);
    const char *c = b.failed ? NULL : ar_strdup(&L->ar, sb_str(&b));
    sb_free(&b);
    if (!c) {
        L->failed = 1;
        return "v_";
    }
    return c;
}

/* ---- bindings ---- */

static val *lookup(lw *L, const char *name)
{
    for (int i = L->nbinds - 1; i >= 0; i--)
        if (!strcmp(L->binds[i].name, name))
            return L->binds[i].v;
    return NULL;
}

static void bind(lw *L, const char *name, val *v)
{
    if (L->nbinds == L->capbinds) {
        int cap = L->capbinds ? L->capbinds * 2 : 32;
        lbind *b = realloc(L->binds, (size_t)cap * sizeof *b);
        if (!b) {
            L->failed = 1;
            return;
        }
        L->binds = b;
        L->capbinds = cap;
    }
    L->binds[L->nbinds++] = (lbind){name, v, L->depth};
}

static void leave(lw *L)
{
    while (L->nbinds && L->binds[L->nbinds - 1].depth == L->depth)
        L->nbinds--;
    L->depth--;
}

static val *newval(lw *L, vkind kind, const tilec_type *t, const char *c)
{
    val *v = ar_alloc(&L->ar, sizeof *v);
    if (!v) {
        L->failed = 1;
        static val dummy;
        return &dummy;
    }
    v->kind = kind;
    v->ty = *t;
    v->c = c;
    v->smem = -1;
    return v;
}

static int hint_value(const lw *L, const char *name, int64_t *out)
{
    for (uint32_t i = 0; i < L->k->nhints; i++)
        if (!strcmp(L->k->hints[i].name, name)) {
            *out = tilec_kernel_hint(L->k, L->variant, name, 0);
            return 1;
        }
    return 0;
}

static uint32_t alloc_smem(lw *L, int64_t bytes)
{
    uint32_t off = (L->smem + 15u) & ~15u;
    if (bytes < 0 || off + (uint64_t)bytes > SMEM_LIMIT) {
        L->smem = SMEM_LIMIT + 1;
        return 0;
    }
    L->smem = off + (uint32_t)bytes;
    return off;
}

/* ---- layouts ---- */

static lay canon(const lw *L, const tilec_type *t)
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
        y.V = y.E < 4 ? y.E : 4;
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

static int same_layout(const lay *a, const lay *b)
{
    if (a->kind != b->kind || a->rank != b->rank || a->E != b->E)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return a->V == b->V && a->repl == b->repl && a->wm == b->wm && a->wn == b->wn && a->tx == b->tx &&
           a->ty == b->ty;
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
    if (best < 0)
        return 0;
    memset(y, 0, sizeof *y);
    y->kind = LY_MMA;
    y->rank = 2;
    y->dims[0] = M;
    y->dims[1] = N;
    y->numel = M * N;
    y->wm = best;
    y->wn = L->nwarps / best;
    y->wtm = (int)(M / y->wm);
    y->wtn = (int)(N / y->wn);
    y->E = (y->wtm / 16) * (y->wtn / 8) * 4;
    y->run = 2;
    return 1;
}

/* A TM x TN register block per thread for [M, N] (f32 dot). */
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
    y->run = y->tn;
    return 1;
}

/* Emit the index variables tl_i0.. of element `j` (a C expression) of
 * layout y. */
static void emit_index(lw *L, const lay *y, const char *j)
{
    if (y->rank == 0)
        return;
    if (y->kind == LY_CANON) {
        if (y->repl)
            line(L, "const int tl_l = tl_tid %% %lld;", (long long)y->numel);
        else
            line(L, "const int tl_l = ((%s / %d) * %d + tl_tid) * %d + (%s %% %d);", j, y->V, L->nt, y->V, j, y->V);
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
        line(L, "%s", sb_str(&b));
        sb_free(&b);
    } else if (y->kind == LY_MMA) {
        int nt8 = y->wtn / 8;
        line(L, "const int tl_i0 = (tl_warp / %d) * %d + (%s / %d) * 16 + (tl_lane >> 2) + ((%s >> 1) & 1) * 8;", y->wn,
             y->wtm, j, nt8 * 4, j);
        line(L, "const int tl_i1 = (tl_warp %% %d) * %d + ((%s >> 2) %% %d) * 8 + (tl_lane & 3) * 2 + (%s & 1);", y->wn,
             y->wtn, j, nt8, j);
    } else {
        line(L, "const int tl_i0 = (tl_tid / %d) * %d + %s / %d;", y->tx, y->tm, j, y->tn);
        line(L, "const int tl_i1 = (tl_tid %% %d) * %d + %s %% %d;", y->tx, y->tn, j, y->tn);
    }
}

/* Row-major linear index of the current element (tl_i*) of a tile. */
static const char *linear(lw *L, int rank, const int64_t *dims, const char *const *idx)
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
    const char *s = fmt(L, "(%s)", b.n ? sb_str(&b) : "0");
    sb_free(&b);
    return s;
}

static const char *const IDX[TILEC_MAX_RANK] = {"tl_i0", "tl_i1", "tl_i2", "tl_i3"};

static void loop_begin(lw *L, const lay *y)
{
    line(L, "#pragma unroll");
    line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) {", y->E);
    L->ind++;
    emit_index(L, y, "tl_j");
}

static void loop_end(lw *L)
{
    L->ind--;
    line(L, "}");
}

/* ---- walking expressions ----
 * walk() runs in two modes over the same mapping of indices: PREP emits
 * what must exist before the element loop (materialized subexpressions,
 * spills), EMIT returns the C expression of one element. `idx` are the C
 * index expressions of the element in e's own shape; `same` says they are
 * exactly the current element of layout `cur`. */

typedef enum { PREP, EMIT } wmode;

static const char *walk(lw *L, const tilec_expr *e, const char *const *idx, int same, const lay *cur, wmode mode);
static val *materialize(lw *L, const tilec_expr *e, const char *name, const lay *want);

static matnode *find_mat(lw *L, const tilec_expr *e)
{
    for (int i = 0; i < L->nmats; i++)
        if (L->mats[i].e == e)
            return &L->mats[i];
    return NULL;
}

static void add_mat(lw *L, const tilec_expr *e, val *v)
{
    if (L->nmats == L->capmats) {
        int cap = L->capmats ? L->capmats * 2 : 16;
        matnode *m = realloc(L->mats, (size_t)cap * sizeof *m);
        if (!m) {
            L->failed = 1;
            return;
        }
        L->mats = m;
        L->capmats = cap;
    }
    L->mats[L->nmats++] = (matnode){e, v};
}

/* Map the index of a broadcast result (shape `to`, rank rt) onto an
 * operand of shape `from`. */
static void map_bcast(const tilec_type *from, int rt, const char *const *idx, const char **sub)
{
    for (int i = 0; i < from->rank; i++) {
        int k = i + rt - from->rank;
        sub[i] = from->dims[i] == 1 ? "0" : idx ? idx[k] : NULL;
    }
}

static int same_shape(const tilec_type *a, const tilec_type *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

static int is_materializing(const tilec_expr *e)
{
    if (e->kind != TILEC_EX_CALL)
        return 0;
    static const char *const names[] = {"load", "atomic_add", "sum", "max", "min", "argmax", "argmin", "dot"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(e->name, names[i]))
            return 1;
    return 0;
}

/* Does e need materialized data (loads, reductions, register tiles)? */
static int is_virtual(lw *L, const tilec_expr *e)
{
    if (is_materializing(e))
        return 0;
    if (e->kind == TILEC_EX_NAME) {
        val *v = lookup(L, e->name);
        return !v || v->kind != VK_MAT;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!is_virtual(L, e->args[i]))
            return 0;
    return 1;
}

/* Write a materialized value to its shared-memory buffer (row-major). */
static void spill(lw *L, val *v)
{
    for (int i = 0; i < L->nspilled; i++)
        if (L->spilled[i] == v)
            return;
    if (v->smem < 0)
        v->smem = (int)alloc_smem(L, v->ly.numel * (int64_t)tilec_dtype_size(v->ty.dtype));
    line(L, "__syncthreads();");
    line(L, "{ /* %s to shared memory */", v->c);
    L->ind++;
    loop_begin(L, &v->ly);
    if (v->ly.repl)
        line(L, "if (tl_tid < %lld)", (long long)v->ly.numel);
    line(L, "((%s *)(tl_smem + %d))[%s] = %s[tl_j];", ctype(v->ty.dtype), v->smem,
         linear(L, v->ly.rank, v->ly.dims, IDX), v->c);
    loop_end(L);
    L->ind--;
    line(L, "}");
    line(L, "__syncthreads();");
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

/* The element of materialized v at idx (compute type). */
static const char *mat_elem(lw *L, val *v, const char *const *idx, int same, const lay *cur, wmode mode)
{
    if (v->ty.rank == 0)
        return mode == EMIT ? v->c : NULL;
    int direct = same && cur && same_layout(&v->ly, cur);
    if (mode == PREP) {
        if (!direct)
            spill(L, v);
        return NULL;
    }
    if (direct)
        return ld_elem(L, L->joff ? fmt(L, "%s[tl_j + %d]", v->c, L->joff) : fmt(L, "%s[tl_j]", v->c), v->ty.dtype);
    return ld_elem(L, fmt(L, "((const %s *)(tl_smem + %d))[%s]", ctype(v->ty.dtype), v->smem,
                          linear(L, v->ty.rank, v->ty.dims, idx)),
                   v->ty.dtype);
}

static const char *float_lit(lw *L, double x, tilec_dtype d)
{
    char buf[64];
    snprintf(buf, sizeof buf, d == TILEC_DT_F64 ? "%.17g" : "%.9g", x);
    if (!strpbrk(buf, ".e"))
        strcat(buf, ".0");
    return fmt(L, "%s%s", buf, d == TILEC_DT_F64 ? "" : "f");
}

static const char *inf_lit(lw *L, tilec_dtype d)
{
    return d == TILEC_DT_F64 ? "__longlong_as_double(0x7ff0000000000000LL)" : fmt(L, "__int_as_float(0x7f800000)");
}

static const char *math1(lw *L, const char *fn, const char *x, tilec_dtype d)
{
    int dbl = compute_dt(d) == TILEC_DT_F64;
    if (!strcmp(fn, "sigmoid"))
        return dbl ? fmt(L, "(1.0 / (1.0 + exp(-(%s))))", x) : fmt(L, "(1.0f / (1.0f + expf(-(%s))))", x);
    if (!strcmp(fn, "abs")) {
        char c = tilec_dtype_class(d);
        if (c == 'f')
            return fmt(L, "%s(%s)", dbl ? "fabs" : "fabsf", x);
        if (c == 'u')
            return x;
        return fmt(L, "((%s) < 0 ? -(%s) : (%s))", x, x, x);
    }
    return fmt(L, "%s%s(%s)", fn, dbl ? "" : "f", x);
}

static const char *walk_args_emit(lw *L, const tilec_expr *e, int i, const tilec_type *rt, const char *const *idx,
                                  int same, const lay *cur)
{
    const char *sub[TILEC_MAX_RANK];
    const tilec_type *at = TY(L, e->args[i]);
    map_bcast(at, rt->rank, idx, sub);
    int s = same && same_shape(at, rt);
    const char *x = walk(L, e->args[i], sub, s, cur, EMIT);
    return conv(L, x, at->dtype, rt->dtype);
}

static const char *walk(lw *L, const tilec_expr *e, const char *const *idx, int same, const lay *cur, wmode mode)
{
    if (L->failed)
        return "0";
    const tilec_type *t = TY(L, e);
    matnode *mn = find_mat(L, e);
    if (mn)
        return mat_elem(L, mn->v, idx, same, cur, mode);
    if (is_materializing(e)) {
        if (mode == EMIT) {
            fail(L, &e->loc, "internal error: '%s' was not materialized", e->name);
            return "0";
        }
        val *v = materialize(L, e, NULL, NULL);
        add_mat(L, e, v);
        return mat_elem(L, v, idx, same, cur, mode);
    }
    switch (e->kind) {
    case TILEC_EX_INT:
        return mode == EMIT ? fmt(L, "%lld%s", (long long)e->ival, e->ival > INT32_MAX ? "LL" : "") : NULL;
    case TILEC_EX_FLOAT:
        return mode == EMIT ? float_lit(L, e->fval, t->dtype) : NULL;
    case TILEC_EX_INF:
        return mode == EMIT ? inf_lit(L, t->dtype) : NULL;
    case TILEC_EX_BOOL:
        return mode == EMIT ? (e->ival ? "true" : "false") : NULL;
    case TILEC_EX_NAME: {
        val *v = lookup(L, e->name);
        if (!v) {
            int64_t h;
            if (hint_value(L, e->name, &h))
                return mode == EMIT ? cname(L, e->name) : NULL;
            fail(L, &e->loc, "internal error: unbound name '%s'", e->name);
            return "0";
        }
        if (v->kind == VK_SCALAR)
            return mode == EMIT ? v->c : NULL;
        if (v->kind == VK_VIRT)
            return walk(L, v->expr, idx, same, cur, mode);
        return mat_elem(L, v, idx, same, cur, mode);
    }
    case TILEC_EX_UNARY: {
        const char *a = walk(L, e->args[0], idx, same, cur, mode);
        if (mode == PREP)
            return NULL;
        return fmt(L, "(%s%s)", tilec_op_spelling(e->op), a);
    }
    case TILEC_EX_BINARY: {
        if (mode == PREP) {
            for (int i = 0; i < 2; i++) {
                const char *sub[TILEC_MAX_RANK];
                const tilec_type *at = TY(L, e->args[i]);
                map_bcast(at, t->rank, idx, sub);
                walk(L, e->args[i], sub, same && same_shape(at, t), cur, PREP);
            }
            return NULL;
        }
        /* operands meet at the promoted dtype; comparisons at the operands' */
        tilec_type opt = *t;
        const tilec_type *a0 = TY(L, e->args[0]), *a1 = TY(L, e->args[1]);
        if (t->dtype == TILEC_DT_BOOL && !(a0->dtype == TILEC_DT_BOOL && a1->dtype == TILEC_DT_BOOL))
            opt.dtype = a0->weak ? a1->dtype : a0->dtype;
        if (t->ptr) {
            const char *sub[TILEC_MAX_RANK];
            const char *x[2];
            for (int i = 0; i < 2; i++) {
                map_bcast(TY(L, e->args[i]), t->rank, idx, sub);
                x[i] = walk(L, e->args[i], sub, same && same_shape(TY(L, e->args[i]), t), cur, EMIT);
            }
            return fmt(L, "(%s %s %s)", x[0], tilec_op_spelling(e->op), x[1]);
        }
        tilec_type ta = *t;
        ta.dtype = opt.dtype;
        const char *x = walk_args_emit(L, e, 0, &ta, idx, same, cur);
        const char *y = walk_args_emit(L, e, 1, &ta, idx, same, cur);
        if (e->op == TILEC_OP_MOD && tilec_dtype_class(opt.dtype) == 'f')
            return fmt(L, "%s(%s, %s)", compute_dt(opt.dtype) == TILEC_DT_F64 ? "fmod" : "fmodf", x, y);
        return fmt(L, "(%s %s %s)", x, tilec_op_spelling(e->op), y);
    }
    case TILEC_EX_INDEX: {
        /* t[:, None]: result axes map to base axes at ':' slots */
        const tilec_type *bt = TY(L, e->args[0]);
        const char *sub[TILEC_MAX_RANK];
        int k = 0;
        for (uint32_t i = 1; i < e->nargs; i++)
            if (e->args[i]->kind == TILEC_EX_SLICE)
                sub[k++] = idx ? idx[i - 1] : NULL;
        (void)bt;
        return walk(L, e->args[0], sub, 0, cur, mode);
    }
    case TILEC_EX_CALL:
        break;
    default:
        fail(L, &e->loc, "internal error: unexpected expression");
        return "0";
    }

    /* elementwise builtins */
    const char *n = e->name;
    if (!strcmp(n, "pid") || !strcmp(n, "num_programs")) {
        if (mode == PREP)
            return NULL;
        static const char *const ax[] = {"x", "y", "z"};
        return fmt(L, "((int)%s.%s)", n[0] == 'p' ? "blockIdx" : "gridDim", ax[e->args[0]->ival & 3]);
    }
    if (!strcmp(n, "range"))
        return mode == EMIT ? idx[0] : NULL;
    if (!strcmp(n, "zeros"))
        return mode == EMIT ? fmt(L, "((%s)0)", cctype(t->dtype)) : NULL;
    if (!strcmp(n, "full")) {
        const char *v = walk(L, e->args[1], NULL, 0, cur, mode);
        return mode == EMIT ? conv(L, v, TY(L, e->args[1])->dtype, t->dtype) : NULL;
    }
    if (mode == PREP) {
        for (uint32_t i = 0; i < e->nargs; i++) {
            if (e->args[i]->kind == TILEC_EX_DTYPE)
                continue;
            const char *sub[TILEC_MAX_RANK];
            const tilec_type *at = TY(L, e->args[i]);
            if (!strcmp(n, "trans")) {
                walk(L, e->args[i], NULL, 0, cur, PREP);
                continue;
            }
            map_bcast(at, t->rank, idx, sub);
            walk(L, e->args[i], sub, same && same_shape(at, t), cur, PREP);
        }
        return NULL;
    }
    if (!strcmp(n, "trans")) {
        const char *sub[2] = {idx[1], idx[0]};
        return walk(L, e->args[0], sub, 0, cur, EMIT);
    }
    if (!strcmp(n, "cast")) {
        const tilec_type *at = TY(L, e->args[0]);
        tilec_type tt = *at;
        const char *x = walk_args_emit(L, e, 0, &tt, idx, same, cur);
        if (t->dtype == TILEC_DT_BOOL)
            return fmt(L, "((%s) != 0)", x);
        return conv(L, x, at->dtype, t->dtype);
    }
    if (!strcmp(n, "where")) {
        tilec_type bt = *t;
        bt.dtype = TILEC_DT_BOOL;
        const char *c = walk_args_emit(L, e, 0, &bt, idx, same, cur);
        const char *a = walk_args_emit(L, e, 1, t, idx, same, cur);
        const char *b = walk_args_emit(L, e, 2, t, idx, same, cur);
        return fmt(L, "(%s ? %s : %s)", c, a, b);
    }
    if (!strcmp(n, "maximum") || !strcmp(n, "minimum")) {
        const char *a = walk_args_emit(L, e, 0, t, idx, same, cur);
        const char *b = walk_args_emit(L, e, 1, t, idx, same, cur);
        /* NaN propagates like torch.maximum */
        const char *op = n[1] == 'a' ? ">" : "<";
        if (tilec_dtype_class(t->dtype) == 'f')
            return fmt(L, "tl_%s(%s, %s)", n[1] == 'a' ? "max" : "min", a, b);
        return fmt(L, "((%s) %s (%s) ? (%s) : (%s))", a, op, b, a, b);
    }
    if (!strcmp(n, "cdiv")) {
        const char *a = walk_args_emit(L, e, 0, t, idx, same, cur);
        const char *b = walk_args_emit(L, e, 1, t, idx, same, cur);
        return fmt(L, "(((%s) + (%s) - 1) / (%s))", a, b, b);
    }
    if (!strcmp(n, "fma")) {
        const char *a = walk_args_emit(L, e, 0, t, idx, same, cur);
        const char *b = walk_args_emit(L, e, 1, t, idx, same, cur);
        const char *c = walk_args_emit(L, e, 2, t, idx, same, cur);
        return fmt(L, "%s(%s, %s, %s)", compute_dt(t->dtype) == TILEC_DT_F64 ? "fma" : "fmaf", a, b, c);
    }
    /* exp, log, ..., abs */
    const char *a = walk_args_emit(L, e, 0, t, idx, same, cur);
    return math1(L, n, a, t->dtype);
}

/* ---- strides for vector accesses ----
 * The change of e per step of its axis `axis` (-1: none), when it is a
 * compile-time constant. */
static int stride(lw *L, const tilec_expr *e, int axis, int64_t *s);

static int stride_bcast(lw *L, const tilec_expr *e, const tilec_type *rt, int axis, int64_t *s)
{
    const tilec_type *at = TY(L, e);
    int k = axis - (rt->rank - at->rank);
    if (axis < 0 || k < 0 || at->dims[k] == 1) {
        return stride(L, e, -1, s);
    }
    return stride(L, e, k, s);
}

static int const_value(lw *L, const tilec_expr *e, int64_t *v)
{
    if (e->kind == TILEC_EX_INT) {
        *v = e->ival;
        return 1;
    }
    if (e->kind == TILEC_EX_NAME)
        return !lookup(L, e->name) && hint_value(L, e->name, v);
    return 0;
}

static int stride(lw *L, const tilec_expr *e, int axis, int64_t *s)
{
    const tilec_type *t = TY(L, e);
    if (axis < 0 || t->rank == 0) {
        /* constant along the axis unless it reads materialized data */
        *s = 0;
        return is_virtual(L, e) || t->rank == 0;
    }
    switch (e->kind) {
    case TILEC_EX_NAME: {
        val *v = lookup(L, e->name);
        if (v && v->kind == VK_VIRT)
            return stride(L, v->expr, axis, s);
        return 0;
    }
    case TILEC_EX_INDEX: {
        const tilec_expr *slot = e->args[axis + 1];
        if (slot->kind == TILEC_EX_NONE) {
            *s = 0;
            return is_virtual(L, e->args[0]);
        }
        int k = 0;
        for (int i = 0; i < axis; i++)
            k += e->args[i + 1]->kind == TILEC_EX_SLICE;
        return stride(L, e->args[0], k, s);
    }
    case TILEC_EX_UNARY:
        if (e->op != TILEC_OP_NEG || !stride(L, e->args[0], axis, s))
            return 0;
        *s = -*s;
        return 1;
    case TILEC_EX_BINARY: {
        int64_t a, b;
        if (!stride_bcast(L, e->args[0], t, axis, &a) || !stride_bcast(L, e->args[1], t, axis, &b))
            return 0;
        int64_t c;
        switch (e->op) {
        case TILEC_OP_ADD: *s = a + b; return 1;
        case TILEC_OP_SUB: *s = a - b; return 1;
        case TILEC_OP_MUL:
            if (a == 0 && b == 0) {
                *s = 0;
                return 1;
            }
            if (a == 0 && const_value(L, e->args[0], &c)) {
                *s = c * b;
                return 1;
            }
            if (b == 0 && const_value(L, e->args[1], &c)) {
                *s = c * a;
                return 1;
            }
            return 0;
        default:
            *s = 0;
            return a == 0 && b == 0;
        }
    }
    case TILEC_EX_CALL:
        if (!strcmp(e->name, "range")) {
            *s = 1;
            return 1;
        }
        if (!strcmp(e->name, "zeros") || !strcmp(e->name, "full")) {
            *s = 0;
            return 1;
        }
        return 0;
    default:
        return 0;
    }
}

/* ---- materializing ---- */

static int monotone_mask(lw *L, const tilec_expr *m, int axis);

static const char *vec_type(int bytes)
{
    return bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : bytes == 4 ? "unsigned int" : bytes == 2 ? "unsigned short" : NULL;
}

/* Elements per vector access for a layout and element size (0: none). */
static int vec_width(const lay *y, unsigned size)
{
    int w = y->run;
    while (w > 1 && (unsigned)w * size > 16)
        w /= 2;
    if (w < 2 || !vec_type(w * (int)size))
        return 0;
    return w;
}

/* load(ptr, mask?, other?) into array `name` of layout y. */
static void emit_load(lw *L, const tilec_expr *e, val *v)
{
    const lay *y = &v->ly;
    const tilec_type *t = TY(L, e);
    const tilec_expr *ptr = e->args[0], *mask = e->nargs > 1 ? e->args[1] : NULL, *other = e->nargs > 2 ? e->args[2] : NULL;
    for (uint32_t i = 0; i < e->nargs; i++) {
        const char *sub[TILEC_MAX_RANK];
        map_bcast(TY(L, e->args[i]), t->rank, IDX, sub);
        walk(L, e->args[i], sub, same_shape(TY(L, e->args[i]), t), y, PREP);
    }
    const char *sub[TILEC_MAX_RANK];
    unsigned size = tilec_dtype_size(t->dtype);
    int64_t st = 0;
    int w = t->rank ? vec_width(y, size) : 0;
    if (w && !(stride(L, ptr, t->rank - 1, &st) && st == 1))
        w = 0;
    line(L, "%s %s[%d];", ctype(t->dtype), v->c, y->E);
    line(L, "#pragma unroll");
    line(L, "for (int tl_c = 0; tl_c < %d; tl_c += %d) {", y->E, w ? w : 1);
    L->ind++;
    line(L, "const int tl_j = tl_c;");
    emit_index(L, y, "tl_j");
    map_bcast(TY(L, ptr), t->rank, IDX, sub);
    line(L, "const %s *tl_p = %s;", ctype(t->dtype), walk(L, ptr, sub, same_shape(TY(L, ptr), t), y, EMIT));
    const char *otherc = "0";
    if (other) {
        map_bcast(TY(L, other), t->rank, IDX, sub);
        otherc = st_elem(L, conv(L, walk(L, other, sub, same_shape(TY(L, other), t), y, EMIT), TY(L, other)->dtype, t->dtype),
                         t->dtype);
    } else if (t->dtype == TILEC_DT_F16 || t->dtype == TILEC_DT_BF16) {
        otherc = st_elem(L, "0.0f", t->dtype);
    }
    if (!w) {
        if (mask) {
            map_bcast(TY(L, mask), t->rank, IDX, sub);
            line(L, "%s[tl_j] = (%s) ? *tl_p : %s;", v->c, walk(L, mask, sub, same_shape(TY(L, mask), t), y, EMIT),
                 other ? otherc : fmt(L, "(%s)%s", ctype(t->dtype), otherc));
        } else {
            line(L, "%s[tl_j] = *tl_p;", v->c);
        }
    } else {
        /* a contiguous run: one vector access when every element is in
         * bounds and the address is aligned, element by element otherwise */
        const char *vt = vec_type(w * (int)size);
        strbuf all;
        sb_init(&all);
        if (mask) {
            int mono = TY(L, mask)->rank == t->rank && monotone_mask(L, mask, t->rank - 1);
            for (int q = 0; q < w; q++) {
                const char *qidx[TILEC_MAX_RANK];
                for (int r = 0; r < t->rank; r++)
                    qidx[r] = r == t->rank - 1 && q ? fmt(L, "(tl_i%d + %d)", r, q) : IDX[r];
                map_bcast(TY(L, mask), t->rank, qidx, sub);
                L->joff = q;
                line(L, "const bool tl_m%d = %s;", q, walk(L, mask, sub, same_shape(TY(L, mask), t), y, EMIT));
                L->joff = 0;
                if (!mono || q == w - 1)
                    sb_printf(&all, "tl_m%d && ", q);
            }
        }
        line(L, "if (%s((unsigned long long)tl_p & %u) == 0) {", sb_str(&all), w * size - 1);
        line(L, "    *(%s *)&%s[tl_j] = *(const %s *)tl_p;", vt, v->c, vt);
        line(L, "} else {");
        for (int q = 0; q < w; q++) {
            if (mask)
                line(L, "    %s[tl_j + %d] = tl_m%d ? tl_p[%d] : %s;", v->c, q, q, q,
                     other ? otherc : fmt(L, "(%s)%s", ctype(t->dtype), otherc));
            else
                line(L, "    %s[tl_j + %d] = tl_p[%d];", v->c, q, q);
        }
        line(L, "}");
        sb_free(&all);
    }
    L->ind--;
    line(L, "}");
}

/* store(ptr, value, mask?) / atomic_add(ptr, value, mask?) over layout y. */
static void emit_store(lw *L, const tilec_expr *e, const lay *y, val *old)
{
    int atomic = e->name[0] == 'a';
    const tilec_type *pt = TY(L, e->args[0]);
    tilec_dtype d = pt->dtype;
    for (uint32_t i = 0; i < e->nargs; i++) {
        const char *sub[TILEC_MAX_RANK];
        map_bcast(TY(L, e->args[i]), pt->rank, IDX, sub);
        walk(L, e->args[i], sub, same_shape(TY(L, e->args[i]), pt), y, PREP);
    }
    const tilec_expr *ptr = e->args[0], *value = e->args[1], *mask = e->nargs > 2 ? e->args[2] : NULL;
    unsigned size = tilec_dtype_size(d);
    int64_t st = 0;
    int w = !atomic && pt->rank ? vec_width(y, size) : 0;
    if (w && !(stride(L, ptr, pt->rank - 1, &st) && st == 1))
        w = 0;
    if (old && pt->rank == 0) /* a scalar is a plain variable, in the compute type */
        line(L, "%s %s;", cctype(d), old->c);
    else if (old)
        line(L, "%s %s[%d];", ctype(d), old->c, y->E);
    if (pt->rank == 0) {
        line(L, "{");
        L->ind++;
    } else {
        line(L, "#pragma unroll");
        line(L, "for (int tl_c = 0; tl_c < %d; tl_c += %d) {", y->E, w ? w : 1);
        L->ind++;
        line(L, "const int tl_j = tl_c;");
        emit_index(L, y, "tl_j");
    }
    const char *sub[TILEC_MAX_RANK];
    map_bcast(TY(L, ptr), pt->rank, IDX, sub);
    line(L, "%s *tl_p = %s;", ctype(d), walk(L, ptr, sub, same_shape(TY(L, ptr), pt), y, EMIT));
    int nq = w ? w : 1;
    int mono = mask && TY(L, mask)->rank == pt->rank && pt->rank && monotone_mask(L, mask, pt->rank - 1);
    strbuf all;
    sb_init(&all);
    for (int q = 0; q < nq; q++) {
        const char *qidx[TILEC_MAX_RANK];
        for (int r = 0; r < pt->rank; r++)
            qidx[r] = r == pt->rank - 1 && q ? fmt(L, "(tl_i%d + %d)", r, q) : IDX[r];
        /* element q of the run: register tiles of this layout at tl_j + q */
        L->joff = q;
        map_bcast(TY(L, value), pt->rank, qidx, sub);
        const char *vq = walk(L, value, sub, same_shape(TY(L, value), pt), y, EMIT);
        line(L, "const %s tl_v%d = %s;", ctype(d), q, st_elem(L, conv(L, vq, TY(L, value)->dtype, d), d));
        if (mask) {
            map_bcast(TY(L, mask), pt->rank, qidx, sub);
            line(L, "const bool tl_m%d = %s;", q, walk(L, mask, sub, same_shape(TY(L, mask), pt), y, EMIT));
        } else {
            line(L, "const bool tl_m%d = true;", q);
        }
        L->joff = 0;
        if (!mono || q == nq - 1)
            sb_printf(&all, "tl_m%d && ", q);
    }
    const char *guard = y->repl ? fmt(L, "tl_tid < %lld && ", (long long)y->numel) : pt->rank == 0 ? "tl_tid == 0 && " : "";
    if (atomic && old && y->repl) {
        /* a replicated layout (a scalar, or fewer elements than threads):
         * one thread per element does the atomic; every replica reads the
         * old value back through shared memory */
        uint32_t off = alloc_smem(L, y->numel * (int64_t)size);
        const char *slot = fmt(L, "((%s *)(tl_smem + %u))[%s]", ctype(d), off, pt->rank ? "tl_l" : "0");
        line(L, "if (%stl_m0) %s = atomicAdd(tl_p, tl_v0);", guard, slot);
        line(L, "__syncthreads();");
        line(L, "%s%s = %s;", old->c, pt->rank ? "[0]" : "", pt->rank ? slot : ld_elem(L, slot, d));
        line(L, "__syncthreads();");
    } else if (atomic) {
        line(L, "if (%stl_m0) %satomicAdd(tl_p, tl_v0);", guard, old ? fmt(L, "%s[tl_j] = ", old->c) : "");
    } else if (!w) {
        line(L, "if (%stl_m0) *tl_p = tl_v0;", guard);
    } else {
        const char *vt = vec_type(w * (int)size);
        line(L, "if (%s%s((unsigned long long)tl_p & %u) == 0) {", guard, sb_str(&all), w * size - 1);
        L->ind++;
        line(L, "%s tl_vec;", vt);
        for (int q = 0; q < w; q++)
            line(L, "((%s *)&tl_vec)[%d] = tl_v%d;", ctype(d), q, q);
        line(L, "*(%s *)tl_p = tl_vec;", vt);
        L->ind--;
        line(L, "} else {");
        for (int q = 0; q < w; q++)
            line(L, "    if (%stl_m%d) tl_p[%d] = tl_v%d;", guard, q, q, q);
        line(L, "}");
    }
    sb_free(&all);
    L->ind--;
    line(L, "}");
}

/* Materialize expression e (of tile type) into a register array named
 * `name` (or a temporary) in layout `want` (or the natural one). */
static void emit_reduce(lw *L, const tilec_expr *e, val *v);
static void emit_dot_into(lw *L, const tilec_expr *a, const tilec_expr *b, val *acc);

static int dot_layout(lw *L, const tilec_type *at, int64_t M, int64_t N, lay *y)
{
    if (at->dtype == TILEC_DT_F32)
        return fma_layout(L, M, N, y);
    return mma_layout(L, M, N, y);
}

static val *materialize(lw *L, const tilec_expr *e, const char *name, const lay *want)
{
    const tilec_type *t = TY(L, e);
    const char *c = name ? name : newtmp(L, "t");
    if (t->rank == 0 && e->kind == TILEC_EX_CALL && strcmp(e->name, "load") && strcmp(e->name, "atomic_add")) {
        val *v = newval(L, VK_SCALAR, t, c);
        emit_reduce(L, e, v);
        return v;
    }
    val *v = newval(L, VK_MAT, t, c);
    if (e->kind == TILEC_EX_CALL && !strcmp(e->name, "dot")) {
        const tilec_type *at = TY(L, e->args[0]);
        if (!want || want->kind == LY_CANON) {
            lay y;
            if (dot_layout(L, at, t->dims[0], t->dims[1], &y))
                v->ly = y;
            else
                v->ly = canon(L, t);
        } else {
            v->ly = *want;
        }
        line(L, "float %s[%d];", c, v->ly.E);
        line(L, "#pragma unroll");
        line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) %s[tl_j] = 0.0f;", v->ly.E, c);
        emit_dot_into(L, e->args[0], e->args[1], v);
        return v;
    }
    v->ly = want ? *want : canon(L, t);
    if (t->rank == 0) {
        v->kind = VK_SCALAR;
        v->ly.E = 1;
    }
    if (e->kind == TILEC_EX_CALL && !strcmp(e->name, "load")) {
        if (t->rank == 0) {
            for (uint32_t i = 0; i < e->nargs; i++)
                walk(L, e->args[i], NULL, 0, NULL, PREP);
            const char *p = walk(L, e->args[0], NULL, 0, NULL, EMIT);
            const char *x = fmt(L, "*(%s)", p);
            if (e->nargs > 1) {
                const char *o = e->nargs > 2 ? conv(L, walk(L, e->args[2], NULL, 0, NULL, EMIT), TY(L, e->args[2])->dtype, t->dtype)
                                             : "0";
                x = fmt(L, "((%s) ? %s : (%s)(%s))", walk(L, e->args[1], NULL, 0, NULL, EMIT), ld_elem(L, x, t->dtype),
                        cctype(t->dtype), o);
            } else {
                x = ld_elem(L, x, t->dtype);
            }
            line(L, "%s %s = %s;", cctype(t->dtype), c, x);
            v->ty.dtype = compute_dt(t->dtype);
            return v;
        }
        emit_load(L, e, v);
        return v;
    }
    if (e->kind == TILEC_EX_CALL && !strcmp(e->name, "atomic_add")) {
        lay y = canon(L, TY(L, e->args[0]));
        v->ly = y;
        emit_store(L, e, &y, v);
        return v;
    }
    if (e->kind == TILEC_EX_CALL && e->nargs == 2 && TY(L, e->args[0])->rank > 0 &&
        (!strcmp(e->name, "sum") || !strcmp(e->name, "max") || !strcmp(e->name, "min") || !strcmp(e->name, "argmax") ||
         !strcmp(e->name, "argmin"))) {
        emit_reduce(L, e, v);
        return v;
    }
    /* elementwise: compute each element of the layout */
    walk(L, e, IDX, 1, &v->ly, PREP);
    if (t->rank == 0) {
        line(L, "%s %s = %s;", cctype(t->dtype), c, walk(L, e, NULL, 0, NULL, EMIT));
        v->ty.dtype = compute_dt(t->dtype);
        return v;
    }
    line(L, "%s %s[%d];", ctype(t->dtype), c, v->ly.E);
    loop_begin(L, &v->ly);
    line(L, "%s[tl_j] = %s;", c, st_elem(L, walk(L, e, IDX, 1, &v->ly, EMIT), t->dtype));
    loop_end(L);
    return v;
}

/* A materialized operand for a reduction or a dot. */
static val *operand(lw *L, const tilec_expr *e)
{
    if (e->kind == TILEC_EX_NAME) {
        val *v = lookup(L, e->name);
        if (v && v->kind == VK_MAT)
            return v;
    }
    matnode *mn = find_mat(L, e);
    if (mn)
        return mn->v;
    return materialize(L, e, NULL, NULL);
}

static const char *red_identity(lw *L, const char *fn, tilec_dtype d)
{
    char c = tilec_dtype_class(d);
    if (!strcmp(fn, "sum"))
        return fmt(L, "((%s)0)", cctype(d));
    int isf = c == 'f';
    int mx = !strcmp(fn, "max") || !strcmp(fn, "argmax");
    if (isf)
        return mx ? fmt(L, "(-%s)", inf_lit(L, d)) : inf_lit(L, d);
    if (c == 'b')
        return mx ? "false" : "true";
    static const char *const lo[] = {"0", "(-128)", "(-32768)", "(-2147483647 - 1)", "(-9223372036854775807LL - 1)",
                                     "0", "0", "0u", "0ull"};
    static const char *const hi[] = {"1", "127", "32767", "2147483647", "9223372036854775807LL",
                                     "255", "65535", "4294967295u", "18446744073709551615ull"};
    return mx ? lo[d] : hi[d];
}

/* combine "a" with "b" into a for the reduction */
static const char *red_step(lw *L, const char *fn, const char *a, const char *b)
{
    if (!strcmp(fn, "sum"))
        return fmt(L, "%s = %s + %s;", a, a, b);
    if (!strcmp(fn, "max"))
        return fmt(L, "%s = tl_max(%s, %s);", a, a, b);
    return fmt(L, "%s = tl_min(%s, %s);", a, a, b);
}

/* sum/max/min/argmax/argmin(x, axis) into v (scalar or tile). */
static void emit_reduce(lw *L, const tilec_expr *e, val *v)
{
    const char *fn = e->name;
    int arg = fn[0] == 'a';
    const char *op = arg ? (fn[3] == 'm' && fn[4] == 'a' ? "max" : "min") : fn;
    val *x = operand(L, e->args[0]);
    const tilec_type *xt = &x->ty;
    tilec_dtype cd = compute_dt(xt->dtype);
    const char *ct = cctype(xt->dtype);
    const tilec_type *t = TY(L, e);
    int axis = (int)e->args[1]->ival;
    if (e->args[1]->kind == TILEC_EX_UNARY)
        axis = -(int)e->args[1]->args[0]->ival;
    if (axis < 0)
        axis += xt->rank;
    const char *r = v->c;
    if (xt->dtype == TILEC_DT_BOOL && !strcmp(fn, "sum"))
        ct = "int", cd = TILEC_DT_I32;
    if (t->rank == 0) {
        /* all elements: in the thread, across the warp, across warps */
        const char *rt = arg ? "int" : cctype(t->dtype);
        line(L, "%s %s;", rt, r);
        line(L, "{");
        L->ind++;
        line(L, "%s tl_a = %s;", ct, red_identity(L, op, cd));
        if (arg)
            line(L, "int tl_ai = 0x7fffffff;");
        loop_begin(L, &x->ly);
        const char *xe = ld_elem(L, fmt(L, "%s[tl_j]", x->c), xt->dtype);
        if (x->ly.repl)
            line(L, "if (tl_tid < %lld) {", (long long)x->ly.numel);
        else
            line(L, "{");
        if (arg) {
            line(L, "    const %s tl_x = %s; const int tl_xi = %s;", ct, xe, linear(L, xt->rank, xt->dims, IDX));
            line(L, "    if (tl_x %s tl_a || (tl_x == tl_a && tl_xi < tl_ai) || (tl_x != tl_x && tl_a == tl_a)) { tl_a = tl_x; tl_ai = tl_xi; }",
                 op[1] == 'a' ? ">" : "<");
        } else {
            line(L, "    %s", red_step(L, op, "tl_a", xe));
        }
        line(L, "}");
        loop_end(L);
        line(L, "#pragma unroll");
        line(L, "for (int tl_o = 16; tl_o > 0; tl_o >>= 1) {");
        if (arg) {
            line(L, "    const %s tl_x = __shfl_xor_sync(0xffffffffu, tl_a, tl_o); const int tl_xi = __shfl_xor_sync(0xffffffffu, tl_ai, tl_o);", ct);
            line(L, "    if (tl_x %s tl_a || (tl_x == tl_a && tl_xi < tl_ai) || (tl_x != tl_x && tl_a == tl_a)) { tl_a = tl_x; tl_ai = tl_xi; }",
                 op[1] == 'a' ? ">" : "<");
        } else {
            line(L, "    const %s tl_x = __shfl_xor_sync(0xffffffffu, tl_a, tl_o);", ct);
            line(L, "    %s", red_step(L, op, "tl_a", "tl_x"));
        }
        line(L, "}");
        if (L->nwarps > 1) {
            uint32_t off = alloc_smem(L, (int64_t)L->nwarps * 16);
            line(L, "__syncthreads();");
            line(L, "if (tl_lane == 0) { ((%s *)(tl_smem + %u))[tl_warp] = tl_a;%s }", ct, off,
                 arg ? fmt(L, " ((int *)(tl_smem + %u))[tl_warp] = tl_ai;", off + (uint32_t)L->nwarps * 8) : "");
            line(L, "__syncthreads();");
            line(L, "tl_a = ((const %s *)(tl_smem + %u))[0];", ct, off);
            if (arg)
                line(L, "tl_ai = ((const int *)(tl_smem + %u))[0];", off + (uint32_t)L->nwarps * 8);
            line(L, "#pragma unroll");
            line(L, "for (int tl_w = 1; tl_w < %d; ++tl_w) {", L->nwarps);
            line(L, "    const %s tl_x = ((const %s *)(tl_smem + %u))[tl_w];", ct, ct, off);
            if (arg) {
                line(L, "    const int tl_xi = ((const int *)(tl_smem + %u))[tl_w];", off + (uint32_t)L->nwarps * 8);
                line(L, "    if (tl_x %s tl_a || (tl_x == tl_a && tl_xi < tl_ai) || (tl_x != tl_x && tl_a == tl_a)) { tl_a = tl_x; tl_ai = tl_xi; }",
                     op[1] == 'a' ? ">" : "<");
            } else {
                line(L, "    %s", red_step(L, op, "tl_a", "tl_x"));
            }
            line(L, "}");
        }
        line(L, "%s = %s;", r, arg ? "tl_ai" : "tl_a");
        L->ind--;
        line(L, "}");
        v->ty.dtype = arg ? TILEC_DT_I32 : compute_dt(t->dtype);
        return;
    }
    /* along one axis: through shared memory */
    spill(L, x);
    v->ly = canon(L, t);
    line(L, "%s %s[%d];", ctype(t->dtype), r, v->ly.E);
    loop_begin(L, &v->ly);
    const char *xi[TILEC_MAX_RANK];
    for (int i = 0, k = 0; i < xt->rank; i++)
        xi[i] = i == axis ? "tl_r" : IDX[k++];
    line(L, "%s tl_a = %s;", ct, red_identity(L, op, cd));
    if (arg)
        line(L, "int tl_ai = 0;");
    line(L, "for (int tl_r = 0; tl_r < %lld; ++tl_r) {", (long long)xt->dims[axis]);
    const char *xe = ld_elem(L, fmt(L, "((const %s *)(tl_smem + %d))[%s]", ctype(xt->dtype), x->smem,
                                    linear(L, xt->rank, xt->dims, xi)),
                             xt->dtype);
    if (arg) {
        line(L, "    const %s tl_x = %s;", ct, xe);
        line(L, "    if (tl_r == 0 || tl_x %s tl_a || (tl_x != tl_x && tl_a == tl_a)) { tl_a = tl_x; tl_ai = tl_r; }",
             op[1] == 'a' ? ">" : "<");
    } else {
        line(L, "    %s", red_step(L, op, "tl_a", xe));
    }
    line(L, "}");
    line(L, "%s[tl_j] = %s;", r, arg ? "tl_ai" : st_elem(L, "tl_a", t->dtype));
    loop_end(L);
    L->nspilled = 0; /* the next statement spills again */
    line(L, "__syncthreads();");
}

/* Stage a [R, C] tile expression into shared memory at `off` with row
 * stride `ld` elements (transposed when `trans`). */
static void stage(lw *L, const tilec_expr *e, uint32_t off, int ld, int trans, tilec_dtype d)
{
    const tilec_type *t = TY(L, e);
    lay y = canon(L, t);
    val *mv = NULL;
    if (e->kind == TILEC_EX_NAME) {
        val *v = lookup(L, e->name);
        if (v && v->kind == VK_MAT) {
            mv = v;
            y = v->ly;
        }
    }
    if (!mv)
        walk(L, e, IDX, 1, &y, PREP);
    loop_begin(L, &y);
    const char *x = mv ? fmt(L, "%s[tl_j]", mv->c) : st_elem(L, walk(L, e, IDX, 1, &y, EMIT), d);
    if (mv && mv->ty.dtype != d)
        x = st_elem(L, conv(L, ld_elem(L, x, mv->ty.dtype), mv->ty.dtype, d), d);
    if (y.repl)
        line(L, "if (tl_tid < %lld)", (long long)y.numel);
    if (trans)
        line(L, "((%s *)(tl_smem + %u))[tl_i1 * %d + tl_i0] = %s;", ctype(d), off, ld, x);
    else
        line(L, "((%s *)(tl_smem + %u))[tl_i0 * %d + tl_i1] = %s;", ctype(d), off, ld, x);
    loop_end(L);
}

/* The tensor-core inner loop: acc += A @ B with A [M, K] at byte offset
 * `sa` (row stride lda halves) and B [K, N] at `sb` (row stride ldb) in
 * shared memory; sa and sb are C expressions. */
static void emit_mma_kloop(lw *L, val *acc, const char *sa, const char *sb, int lda, int ldb, int64_t K, tilec_dtype d)
{
    const lay *y = &acc->ly;
    int mt = y->wtm / 16, nt8 = y->wtn / 8;
    const char *kind = d == TILEC_DT_BF16 ? "bf16" : "f16";
    line(L, "#pragma unroll");
    line(L, "for (int tl_k = 0; tl_k < %lld; tl_k += 16) {", (long long)K);
    L->ind++;
    line(L, "unsigned tl_fa[%d][4], tl_fb[%d][2];", mt, nt8);
    line(L, "#pragma unroll");
    line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m)", mt);
    line(L, "    tl_ldsm_x4(tl_fa[tl_m], tl_smem + %s + (((tl_warp / %d) * %d + tl_m * 16 + (tl_lane & 15)) * %d + tl_k + (tl_lane >> 4) * 8) * 2);",
         sa, y->wn, y->wtm, lda);
    line(L, "#pragma unroll");
    line(L, "for (int tl_n = 0; tl_n < %d; tl_n += 2)", nt8);
    line(L, "    tl_ldsm_x4_t(tl_fb[tl_n], tl_fb[tl_n + 1], tl_smem + %s + ((tl_k + (tl_lane & 15)) * %d + (tl_warp %% %d) * %d + tl_n * 8 + (tl_lane >> 4) * 8) * 2);",
         sb, ldb, y->wn, y->wtn);
    line(L, "#pragma unroll");
    line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m)", mt);
    line(L, "    #pragma unroll");
    line(L, "    for (int tl_n = 0; tl_n < %d; ++tl_n)", nt8);
    line(L, "        tl_mma_%s(%s + (tl_m * %d + tl_n) * 4, tl_fa[tl_m], tl_fb[tl_n]);", kind, acc->c, nt8);
    L->ind--;
    line(L, "}");
}

/* acc += a @ b, acc materialized in an MMA, FMA or canonical layout. */
static void emit_dot_into(lw *L, const tilec_expr *a, const tilec_expr *b, val *acc)
{
    const tilec_type *at = TY(L, a), *bt = TY(L, b);
    int64_t M = at->dims[0], K = at->dims[1], N = bt->dims[1];
    tilec_dtype d = at->dtype;
    const lay *y = &acc->ly;
    line(L, "{ /* %s += dot: [%lld, %lld] @ [%lld, %lld] */", acc->c, (long long)M, (long long)K, (long long)K,
         (long long)N);
    L->ind++;
    if (y->kind == LY_MMA) {
        int lda = (int)K + 8, ldb = (int)N + 8;
        uint32_t sa = alloc_smem(L, M * lda * 2), sb = alloc_smem(L, K * ldb * 2);
        line(L, "__syncthreads();");
        stage(L, a, sa, lda, 0, d);
        stage(L, b, sb, ldb, 0, d);
        line(L, "__syncthreads();");
        emit_mma_kloop(L, acc, fmt(L, "%u", sa), fmt(L, "%u", sb), lda, ldb, K, d);
    } else if (y->kind == LY_FMA) {
        int lda = (int)M + 4, ldb = (int)N + 4;
        uint32_t sa = alloc_smem(L, K * lda * 4), sb = alloc_smem(L, K * ldb * 4);
        line(L, "__syncthreads();");
        stage(L, a, sa, lda, 1, TILEC_DT_F32);
        stage(L, b, sb, ldb, 0, TILEC_DT_F32);
        line(L, "__syncthreads();");
        line(L, "const float *tl_sa = (const float *)(tl_smem + %u) + (tl_tid / %d) * %d;", sa, y->tx, y->tm);
        line(L, "const float *tl_sb = (const float *)(tl_smem + %u) + (tl_tid %% %d) * %d;", sb, y->tx, y->tn);
        line(L, "#pragma unroll 4");
        line(L, "for (int tl_k = 0; tl_k < %lld; ++tl_k) {", (long long)K);
        L->ind++;
        line(L, "float tl_ra[%d], tl_rb[%d];", y->tm, y->tn);
        line(L, "#pragma unroll");
        line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m) tl_ra[tl_m] = tl_sa[tl_k * %d + tl_m];", y->tm, lda);
        line(L, "#pragma unroll");
        line(L, "for (int tl_n = 0; tl_n < %d; ++tl_n) tl_rb[tl_n] = tl_sb[tl_k * %d + tl_n];", y->tn, ldb);
        line(L, "#pragma unroll");
        line(L, "for (int tl_m = 0; tl_m < %d; ++tl_m)", y->tm);
        line(L, "    #pragma unroll");
        line(L, "    for (int tl_n = 0; tl_n < %d; ++tl_n)", y->tn);
        line(L, "        %s[tl_m * %d + tl_n] = fmaf(tl_ra[tl_m], tl_rb[tl_n], %s[tl_m * %d + tl_n]);", acc->c, y->tn,
             acc->c, y->tn);
        L->ind--;
        line(L, "}");
    } else {
        /* any layout: every element sums its row of a times its column of b */
        tilec_dtype sd = d == TILEC_DT_F32 ? TILEC_DT_F32 : d;
        unsigned es = tilec_dtype_size(sd);
        uint32_t sa = alloc_smem(L, M * K * es), sb = alloc_smem(L, K * N * es);
        line(L, "__syncthreads();");
        stage(L, a, sa, (int)K, 0, sd);
        stage(L, b, sb, (int)N, 0, sd);
        line(L, "__syncthreads();");
        loop_begin(L, y);
        line(L, "float tl_s = 0.0f;");
        line(L, "for (int tl_k = 0; tl_k < %lld; ++tl_k)", (long long)K);
        line(L, "    tl_s += %s * %s;",
             ld_elem(L, fmt(L, "((const %s *)(tl_smem + %u))[tl_i0 * %lld + tl_k]", ctype(sd), sa, (long long)K), sd),
             ld_elem(L, fmt(L, "((const %s *)(tl_smem + %u))[tl_k * %lld + tl_i1]", ctype(sd), sb, (long long)N), sd));
        line(L, "%s[tl_j] += tl_s;", acc->c);
        loop_end(L);
    }
    L->ind--;
    line(L, "}");
}

/* ---- statements ---- */

static int in_list(const char **v, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v[i], name))
            return 1;
    return 0;
}

/* x = x + dot(a, b) or x = dot(a, b) + x: returns the dot */
static const tilec_expr *dot_update(const tilec_stmt *s)
{
    if (s->kind != TILEC_ST_ASSIGN || s->value->kind != TILEC_EX_BINARY || s->value->op != TILEC_OP_ADD)
        return NULL;
    for (int i = 0; i < 2; i++) {
        const tilec_expr *x = s->value->args[i], *d = s->value->args[1 - i];
        if (x->kind == TILEC_EX_NAME && !strcmp(x->name, s->names[0]) && d->kind == TILEC_EX_CALL &&
            !strcmp(d->name, "dot"))
            return d;
    }
    return NULL;
}

static void scan_assigned(lw *L, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_ASSIGN) {
            const char **v = ar_array(&L->ar, (size_t)L->nassigned + 1, sizeof *v);
            if (!v) {
                L->failed = 1;
                return;
            }
            if (L->nassigned)
                memcpy(v, L->assigned, (size_t)L->nassigned * sizeof *v);
            v[L->nassigned++] = s->names[0];
            L->assigned = v;
            if (dot_update(s)) {
                const char **d = ar_array(&L->ar, (size_t)L->ndotacc + 1, sizeof *d);
                if (!d) {
                    L->failed = 1;
                    return;
                }
                if (L->ndotacc)
                    memcpy(d, L->dotacc, (size_t)L->ndotacc * sizeof *d);
                d[L->ndotacc++] = s->names[0];
                L->dotacc = d;
            }
        }
        scan_assigned(L, &s->body);
        scan_assigned(L, &s->orelse);
    }
}

/* the dot that updates name (for its layout), or NULL */
static const tilec_expr *find_dot_for(const tilec_block *b, const char *name)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        const tilec_expr *d = dot_update(s);
        if (d && !strcmp(s->names[0], name))
            return d;
        if ((d = find_dot_for(&s->body, name)) || (d = find_dot_for(&s->orelse, name)))
            return d;
    }
    return NULL;
}

static void emit_block(lw *L, const tilec_block *b);
static void comment_loc(lw *L, const tilec_loc *loc);

/* ---- software-pipelined dot loops ----
 * for k in lo .. hi step s { let (virtual index tiles); let a = load(...);
 * let b = load(...); acc = acc + dot(a, b); } with stages > 1 and acc in
 * tensor-core fragments: the loads become cp.async copies straight into a
 * ring of `stages` shared-memory buffers, issued stages-1 iterations ahead. */

typedef struct pipe_plan {
    const tilec_stmt *update;     /* acc = acc + dot(a, b) */
    const tilec_expr *load[2];    /* the loads feeding a and b */
    val *acc;
} pipe_plan;

static const tilec_expr *find_load_let(const tilec_block *b, const tilec_expr *operand)
{
    if (operand->kind == TILEC_EX_CALL && !strcmp(operand->name, "load"))
        return operand;
    if (operand->kind != TILEC_EX_NAME)
        return NULL;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_LET && !strcmp(s->names[0], operand->name) && s->value->kind == TILEC_EX_CALL &&
            !strcmp(s->value->name, "load"))
            return s->value;
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

static int pipeline_check(lw *L, const tilec_stmt *loop, pipe_plan *pp);

/* Bind the loop variable and the body's index tiles (for analysis and
 * for the copies); undo with leave(). */
static void bind_loop_scope(lw *L, const tilec_stmt *loop)
{
    L->depth++;
    tilec_type it = {.kind = TILEC_TY_VALUE, .dtype = TILEC_DT_I32};
    bind(L, loop->names[0], newval(L, VK_SCALAR, &it, cname(L, loop->names[0])));
    for (uint32_t i = 0; i < loop->body.nstmts; i++) {
        const tilec_stmt *s = loop->body.stmts[i];
        if (s->kind == TILEC_ST_LET && !(s->value->kind == TILEC_EX_CALL && !strcmp(s->value->name, "load")) &&
            TY(L, s->value)->rank > 0 && is_virtual(L, s->value)) {
            val *x = newval(L, VK_VIRT, TY(L, s->value), cname(L, s->names[0]));
            x->expr = s->value;
            bind(L, s->names[0], x);
        }
    }
}

static int pipeline_plan(lw *L, const tilec_stmt *loop, pipe_plan *pp)
{
    bind_loop_scope(L, loop);
    int ok = pipeline_check(L, loop, pp);
    leave(L);
    return ok;
}

static int pipeline_check(lw *L, const tilec_stmt *loop, pipe_plan *pp)
{
    memset(pp, 0, sizeof *pp);
    if (tilec_kernel_hint(L->k, L->variant, "stages", 1) < 2)
        return 0;
    const tilec_block *b = &loop->body;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_DOC)
            continue;
        if (s->kind == TILEC_ST_ASSIGN && dot_update(s) && !pp->update) {
            pp->update = s;
            continue;
        }
        if (s->kind != TILEC_ST_LET || in_list(L->assigned, L->nassigned, s->names[0]))
            return 0;
        if (s->value->kind == TILEC_EX_CALL && !strcmp(s->value->name, "load"))
            continue;
        val *x = lookup(L, s->names[0]);
        if (!x || x->kind != VK_VIRT)
            return 0;
    }
    if (!pp->update)
        return 0;
    pp->acc = lookup(L, pp->update->names[0]);
    const tilec_expr *d = dot_update(pp->update);
    if (!pp->acc || pp->acc->kind != VK_MAT || pp->acc->ly.kind != LY_MMA)
        return 0;
    for (int i = 0; i < 2; i++) {
        const tilec_expr *ld = find_load_let(b, d->args[i]);
        if (!ld)
            return 0;
        pp->load[i] = ld;
        const tilec_type *t = TY(L, ld);
        if (t->rank != 2 || t->dims[1] % 8 || (t->dims[0] * t->dims[1] / 8) % L->nt)
            return 0;
        /* the loaded tile is read by the dot only */
        if (d->args[i]->kind == TILEC_EX_NAME) {
            int n = 0;
            for (uint32_t j = 0; j < b->nstmts; j++)
                if (b->stmts[j]->kind != TILEC_ST_DOC)
                    n += uses(b->stmts[j]->value, d->args[i]->name);
            if (n != 1)
                return 0;
        }
        /* contiguous rows, masks and pointers from index tiles, zero fill */
        for (uint32_t j = 0; j < ld->nargs; j++)
            if (!is_virtual(L, ld->args[j]))
                return 0;
        int64_t st;
        if (!stride(L, ld->args[0], 1, &st) || st != 1)
            return 0;
        if (ld->nargs > 2 && !((ld->args[2]->kind == TILEC_EX_FLOAT && ld->args[2]->fval == 0.0) ||
                               (ld->args[2]->kind == TILEC_EX_INT && ld->args[2]->ival == 0)))
            return 0;
    }
    return 1;
}

/* A mask that, along the last axis, is true on a prefix: comparisons
 * `i < bound` / `i <= bound` (or `bound > i`) of non-decreasing index
 * expressions with scalar bounds, joined by &&. Then a run of elements is
 * all in bounds when its last element is, and none is when its first is
 * not. */
static int monotone_mask(lw *L, const tilec_expr *m, int axis)
{
    if (m->kind == TILEC_EX_NAME) {
        val *v = lookup(L, m->name);
        return v && v->kind == VK_VIRT && same_shape(TY(L, v->expr), TY(L, m)) && monotone_mask(L, v->expr, axis);
    }
    if (m->kind == TILEC_EX_BINARY && m->op == TILEC_OP_ANDAND)
        return monotone_mask(L, m->args[0], axis) && monotone_mask(L, m->args[1], axis);
    if (m->kind != TILEC_EX_BINARY)
        return 0;
    const tilec_expr *idx, *bound;
    if (m->op == TILEC_OP_LT || m->op == TILEC_OP_LE)
        idx = m->args[0], bound = m->args[1];
    else if (m->op == TILEC_OP_GT || m->op == TILEC_OP_GE)
        idx = m->args[1], bound = m->args[0];
    else
        return 0;
    const tilec_type *mt = TY(L, m);
    int64_t si, sb;
    return TY(L, bound)->rank == 0 && stride_bcast(L, idx, mt, axis, &si) && si >= 0 &&
           stride_bcast(L, bound, mt, axis, &sb) && sb == 0;
}

/* cp.async copies of load `e` ([R, C]) into shared memory at `dst` (a C
 * expression, bytes) with row stride ld elements. */
static void emit_async_load(lw *L, const tilec_expr *e, const char *dst, int ld)
{
    const tilec_type *t = TY(L, e);
    int64_t R = t->dims[0], C = t->dims[1];
    int chunks = (int)(R * C / 8), per = chunks / L->nt;
    unsigned size = tilec_dtype_size(t->dtype);
    const tilec_expr *mask = e->nargs > 1 ? e->args[1] : NULL;
    line(L, "#pragma unroll");
    line(L, "for (int tl_q = 0; tl_q < %d; ++tl_q) {", per);
    L->ind++;
    line(L, "const int tl_l = (tl_q * %d + tl_tid) * 8;", L->nt);
    line(L, "const int tl_i0 = tl_l / %lld, tl_i1 = tl_l %% %lld;", (long long)C, (long long)C);
    const char *sub[TILEC_MAX_RANK];
    map_bcast(TY(L, e->args[0]), 2, IDX, sub);
    line(L, "const %s *tl_p = %s;", ctype(t->dtype), walk(L, e->args[0], sub, 0, NULL, EMIT));
    line(L, "%s *tl_d = (%s *)(tl_smem + %s) + tl_i0 * %d + tl_i1;", ctype(t->dtype), ctype(t->dtype), dst, ld);
    strbuf all, any;
    sb_init(&all);
    sb_init(&any);
    int mono = mask && monotone_mask(L, mask, 1);
    const char *mq[8];
    for (int q = 0; q < 8; q++) {
        if (!mask)
            break;
        const char *qidx[2] = {"tl_i0", q ? fmt(L, "(tl_i1 + %d)", q) : "tl_i1"};
        map_bcast(TY(L, mask), 2, qidx, sub);
        mq[q] = walk(L, mask, sub, 0, NULL, EMIT);
        /* a monotone mask needs its ends to decide; the rest only on the slow path */
        if (!mono || q == 0 || q == 7)
            line(L, "const bool tl_m%d = %s;", q, mq[q]);
        if (!mono || q == 7)
            sb_printf(&all, "%stl_m%d", all.n ? " && " : "", q);
        if (!mono || q == 0)
            sb_printf(&any, "%stl_m%d", any.n ? " || " : "", q);
    }
    const char *full = mask ? sb_str(&all) : "true";
    line(L, "if ((%s) && ((unsigned long long)tl_p & 15) == 0) {", full);
    line(L, "    tl_cp16(tl_d, tl_p, 16);");
    if (mask) {
        line(L, "} else if (!(%s)) {", sb_str(&any));
        line(L, "    tl_cp16(tl_d, tl_p, 0); /* zero fill */");
        line(L, "} else {");
        for (int q = 0; q < 8; q++)
            if (!mono || q == 0 || q == 7)
                line(L, "    tl_d[%d] = tl_m%d ? tl_p[%d] : %s;", q, q, q, st_elem(L, "0.0f", t->dtype));
            else
                line(L, "    tl_d[%d] = (%s) ? tl_p[%d] : %s;", q, mq[q], q, st_elem(L, "0.0f", t->dtype));
    } else {
        line(L, "} else {");
        for (int q = 0; q < 8; q++)
            line(L, "    tl_d[%d] = tl_p[%d];", q, q);
    }
    line(L, "}");
    (void)size;
    sb_free(&all);
    sb_free(&any);
    L->ind--;
    line(L, "}");
}

static void emit_pipelined(lw *L, const tilec_stmt *loop, const pipe_plan *pp)
{
    int S = (int)tilec_kernel_hint(L->k, L->variant, "stages", 1);
    const tilec_expr *d = dot_update(pp->update);
    const tilec_type *at = TY(L, pp->load[0]), *bt = TY(L, pp->load[1]);
    int64_t M = at->dims[0], K = at->dims[1], N = bt->dims[1];
    int lda = (int)K + 8, ldb = (int)N + 8;
    int64_t abytes = M * lda * 2, bbytes = K * ldb * 2;
    uint32_t sa = alloc_smem(L, abytes * S), sb = alloc_smem(L, bbytes * S);
    const char *v = cname(L, loop->names[0]);
    walk(L, loop->lo, NULL, 0, NULL, PREP);
    walk(L, loop->hi, NULL, 0, NULL, PREP);
    line(L, "{ /* %s += dot, %d-stage cp.async pipeline */", pp->acc->c, S);
    L->ind++;
    line(L, "const int tl_lo = %s, tl_hi = %s, tl_st = %s;", walk(L, loop->lo, NULL, 0, NULL, EMIT),
         walk(L, loop->hi, NULL, 0, NULL, EMIT), loop->step ? walk(L, loop->step, NULL, 0, NULL, EMIT) : "1");
    bind_loop_scope(L, loop);
    line(L, "#pragma unroll");
    line(L, "for (int tl_s = 0; tl_s < %d; ++tl_s) {", S - 1);
    L->ind++;
    line(L, "const int %s = tl_lo + tl_s * tl_st;", v);
    line(L, "if (%s < tl_hi) {", v);
    L->ind++;
    emit_async_load(L, pp->load[0], fmt(L, "%u + tl_s * %lld", sa, (long long)abytes), lda);
    emit_async_load(L, pp->load[1], fmt(L, "%u + tl_s * %lld", sb, (long long)bbytes), ldb);
    L->ind--;
    line(L, "}");
    line(L, "tl_cp_commit();");
    L->ind--;
    line(L, "}");
    comment_loc(L, &loop->loc);
    line(L, "int tl_it = 0;");
    line(L, "for (int %s = tl_lo; %s < tl_hi; %s += tl_st, ++tl_it) {", v, v, v);
    L->ind++;
    /* tile tl_it has landed and every warp is done with tile tl_it - 1,
     * whose buffer the copies for tile tl_it + stages - 1 reuse */
    line(L, "tl_cp_wait<%d>();", S - 2);
    line(L, "__syncthreads();");
    line(L, "{");
    L->ind++;
    line(L, "const int tl_next = %s + %d * tl_st, tl_ns = (tl_it + %d) %% %d;", v, S - 1, S - 1, S);
    line(L, "if (tl_next < tl_hi) {");
    L->ind++;
    line(L, "const int %s = tl_next;", v);
    emit_async_load(L, pp->load[0], fmt(L, "%u + tl_ns * %lld", sa, (long long)abytes), lda);
    emit_async_load(L, pp->load[1], fmt(L, "%u + tl_ns * %lld", sb, (long long)bbytes), ldb);
    L->ind--;
    line(L, "}");
    line(L, "tl_cp_commit();");
    L->ind--;
    line(L, "}");
    comment_loc(L, &pp->update->loc);
    line(L, "const int tl_cs = tl_it %% %d;", S);
    emit_mma_kloop(L, pp->acc, fmt(L, "(%u + tl_cs * %lld)", sa, (long long)abytes),
                   fmt(L, "(%u + tl_cs * %lld)", sb, (long long)bbytes), lda, ldb, K, at->dtype);
    L->ind--;
    line(L, "}");
    line(L, "tl_cp_wait<0>();");
    line(L, "__syncthreads();");
    leave(L);
    L->ind--;
    line(L, "}");
    (void)d;
}

static void comment_loc(lw *L, const tilec_loc *loc)
{
    /* the file name escaped so the comment stays one comment line
     * (lower_loc_marker; compile.c finds the .tile line by it) */
    strbuf f;
    sb_init(&f);
    lower_loc_marker(&f, L->m->src.name);
    line(L, "%s%u", sb_str(&f), loc->line);
    L->failed |= f.failed;
    sb_free(&f);
}

static void emit_stmt(lw *L, const tilec_stmt *s)
{
    L->nmats = 0;
    L->nspilled = 0;
    if (s->kind != TILEC_ST_DOC)
        comment_loc(L, &s->loc);
    switch (s->kind) {
    case TILEC_ST_DOC: {
        strbuf b;
        sb_init(&b);
        esc_c_comment(&b, s->text);
        line(L, "// %s", sb_str(&b));
        L->failed |= b.failed;
        sb_free(&b);
        return;
    }
    case TILEC_ST_LET: {
        const tilec_type *t = TY(L, s->value);
        const char *c = cname(L, s->names[0]);
        int assigned = in_list(L->assigned, L->nassigned, s->names[0]);
        if (t->rank == 0) {
            if (is_materializing(s->value)) {
                val *v = materialize(L, s->value, c, NULL);
                bind(L, s->names[0], v);
                return;
            }
            walk(L, s->value, NULL, 0, NULL, PREP);
            val *v = newval(L, VK_SCALAR, t, c);
            v->ty.dtype = compute_dt(t->dtype);
            /* a pointer stays writable through: `T *const p`, never `const T *p` */
            const char *decl = t->ptr ? fmt(L, "%s *%s", ctype(t->dtype), assigned ? "" : "const ")
                                      : fmt(L, "%s%s", assigned ? "" : "const ", cctype(t->dtype));
            line(L, "%s %s = %s;", decl, c, walk(L, s->value, NULL, 0, NULL, EMIT));
            bind(L, s->names[0], v);
            return;
        }
        if (!assigned && is_virtual(L, s->value)) {
            val *v = newval(L, VK_VIRT, t, c);
            v->expr = s->value;
            bind(L, s->names[0], v);
            line(L, "// %s: %s tile computed where it is used", c, t->ptr ? "pointer" : "index");
            return;
        }
        lay want, *wp = NULL;
        if (in_list(L->dotacc, L->ndotacc, s->names[0])) {
            const tilec_expr *d = find_dot_for(&L->k->body, s->names[0]);
            if (d && dot_layout(L, TY(L, d->args[0]), t->dims[0], t->dims[1], &want))
                wp = &want;
        }
        val *v = materialize(L, s->value, c, wp);
        bind(L, s->names[0], v);
        return;
    }
    case TILEC_ST_ASSIGN: {
        val *v = lookup(L, s->names[0]);
        if (!v) {
            fail(L, &s->loc, "internal error: assignment to unbound '%s'", s->names[0]);
            return;
        }
        if (v->kind == VK_SCALAR) {
            walk(L, s->value, NULL, 0, NULL, PREP);
            line(L, "%s = %s;", v->c, conv(L, walk(L, s->value, NULL, 0, NULL, EMIT), TY(L, s->value)->dtype, v->ty.dtype));
            return;
        }
        const tilec_expr *d = dot_update(s);
        if (d) {
            emit_dot_into(L, d->args[0], d->args[1], v);
            return;
        }
        walk(L, s->value, IDX, 1, &v->ly, PREP);
        const char *tmp = newtmp(L, "n");
        line(L, "%s %s[%d];", ctype(v->ty.dtype), tmp, v->ly.E);
        loop_begin(L, &v->ly);
        line(L, "%s[tl_j] = %s;", tmp,
             st_elem(L, conv(L, walk(L, s->value, IDX, 1, &v->ly, EMIT), TY(L, s->value)->dtype, v->ty.dtype), v->ty.dtype));
        loop_end(L);
        line(L, "#pragma unroll");
        line(L, "for (int tl_j = 0; tl_j < %d; ++tl_j) %s[tl_j] = %s[tl_j];", v->ly.E, v->c, tmp);
        return;
    }
    case TILEC_ST_EXPR: {
        const tilec_expr *e = s->value;
        if (e->kind == TILEC_EX_CALL && (!strcmp(e->name, "store") || !strcmp(e->name, "atomic_add"))) {
            const tilec_type *pt = TY(L, e->args[0]);
            lay y = canon(L, pt);
            const tilec_expr *value = e->args[1];
            if (value->kind == TILEC_EX_NAME) {
                val *v = lookup(L, value->name);
                if (v && v->kind == VK_MAT && same_shape(&v->ty, pt))
                    y = v->ly;
            }
            emit_store(L, e, &y, NULL);
            return;
        }
        /* any other call: evaluate for its effects */
        walk(L, e, NULL, 0, NULL, PREP);
        return;
    }
    case TILEC_ST_FOR: {
        pipe_plan pp;
        if (pipeline_plan(L, s, &pp)) {
            emit_pipelined(L, s, &pp);
            return;
        }
        const char *v = cname(L, s->names[0]);
        walk(L, s->lo, NULL, 0, NULL, PREP);
        walk(L, s->hi, NULL, 0, NULL, PREP);
        if (s->step)
            walk(L, s->step, NULL, 0, NULL, PREP);
        const char *lo = walk(L, s->lo, NULL, 0, NULL, EMIT), *hi = walk(L, s->hi, NULL, 0, NULL, EMIT);
        const char *st = s->step ? walk(L, s->step, NULL, 0, NULL, EMIT) : "1";
        const char *ty = TY(L, s->lo)->dtype == TILEC_DT_I64 || TY(L, s->hi)->dtype == TILEC_DT_I64 ? "long long" : "int";
        line(L, "for (%s %s = %s; %s < %s; %s += %s) {", ty, v, lo, v, hi, v, st);
        L->ind++;
        L->depth++;
        tilec_type it = {.kind = TILEC_TY_VALUE, .dtype = ty[0] == 'l' ? TILEC_DT_I64 : TILEC_DT_I32};
        bind(L, s->names[0], newval(L, VK_SCALAR, &it, v));
        emit_block(L, &s->body);
        leave(L);
        L->ind--;
        line(L, "}");
        return;
    }
    case TILEC_ST_IF: {
        walk(L, s->value, NULL, 0, NULL, PREP);
        line(L, "if (%s) {", walk(L, s->value, NULL, 0, NULL, EMIT));
        L->ind++;
        L->depth++;
        emit_block(L, &s->body);
        leave(L);
        L->ind--;
        if (s->has_else) {
            line(L, "} else {");
            L->ind++;
            L->depth++;
            emit_block(L, &s->orelse);
            leave(L);
            L->ind--;
        }
        line(L, "}");
        return;
    }
    default:
        fail(L, &s->loc, "internal error: statement not allowed in a kernel");
        return;
    }
}

static void emit_block(lw *L, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts && !L->failed; i++)
        emit_stmt(L, b->stmts[i]);
}

/* ---- the kernel ---- */

/* Half-precision headers cost NVRTC a noticeable part of a compile: only
 * a translation unit that uses f16 or bf16 includes them. */
static const char half_headers[] = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";

static int needs_half(const char *src) { return strstr(src, "__half") || strstr(src, "bfloat16"); }

static const char prelude[] =
    "\n"
    "/* NaN-propagating max/min, as torch.maximum/minimum */\n"
    "static __device__ __forceinline__ float tl_max(float a, float b) { return (a > b || a != a) ? a : b; }\n"
    "static __device__ __forceinline__ float tl_min(float a, float b) { return (a < b || a != a) ? a : b; }\n"
    "static __device__ __forceinline__ double tl_max(double a, double b) { return (a > b || a != a) ? a : b; }\n"
    "static __device__ __forceinline__ double tl_min(double a, double b) { return (a < b || a != a) ? a : b; }\n"
    "template <class T> static __device__ __forceinline__ T tl_max(T a, T b) { return a > b ? a : b; }\n"
    "template <class T> static __device__ __forceinline__ T tl_min(T a, T b) { return a < b ? a : b; }\n"
    "\n"
    "/* tensor-core pieces: ldmatrix from shared memory, mma.sync m16n8k16 */\n"
    "static __device__ __forceinline__ void tl_ldsm_x4(unsigned r[4], const void *p)\n"
    "{\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "                 : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n"
    "}\n"
    "static __device__ __forceinline__ void tl_ldsm_x4_t(unsigned b0[2], unsigned b1[2], const void *p)\n"
    "{\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\\n\"\n"
    "                 : \"=r\"(b0[0]), \"=r\"(b0[1]), \"=r\"(b1[0]), \"=r\"(b1[1]) : \"r\"(a));\n"
    "}\n"
    "/* cp.async: 16 bytes global to shared, src_bytes 0 fills zeros */\n"
    "static __device__ __forceinline__ void tl_cp16(void *dst, const void *src, int src_bytes)\n"
    "{\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(dst);\n"
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(a), \"l\"(src), \"r\"(src_bytes));\n"
    "}\n"
    "static __device__ __forceinline__ void tl_cp_commit() { asm volatile(\"cp.async.commit_group;\\n\" ::); }\n"
    "template <int N> static __device__ __forceinline__ void tl_cp_wait() { asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(N)); }\n"
    "static __device__ __forceinline__ void tl_mma_f16(float *c, const unsigned a[4], const unsigned b[2])\n"
    "{\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
    "                 : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n"
    "static __device__ __forceinline__ void tl_mma_bf16(float *c, const unsigned a[4], const unsigned b[2])\n"
    "{\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n\"\n"
    "                 : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));\n"
    "}\n";

uint32_t tilec_kernel_variant_count(const tilec_kernel *k) { return !k ? 0 : k->nvariants ? k->nvariants : 1; }

static tilec_arg_kind arg_kind(const tilec_param *p)
{
    if (p->type.kind == TILEC_TE_POINTER)
        return TILEC_ARG_PTR;
    static const tilec_arg_kind kinds[] = {TILEC_ARG_BOOL, TILEC_ARG_I8, TILEC_ARG_I16, TILEC_ARG_I32, TILEC_ARG_I64,
                                           TILEC_ARG_U8, TILEC_ARG_U16, TILEC_ARG_U32, TILEC_ARG_U64, TILEC_ARG_F16,
                                           TILEC_ARG_BF16, TILEC_ARG_F32, TILEC_ARG_F64};
    return kinds[p->type.dtype];
}

/* The __global__ function of one variant into L->out. */
static void emit_kernel(lw *L, const char *fname)
{
    const tilec_kernel *k = L->k;
    L->nwarps = (int)tilec_kernel_hint(k, L->variant, "warps", 4);
    L->nt = 32 * L->nwarps;
    strbuf hints;
    sb_init(&hints);
    for (uint32_t i = 0; i < k->nhints; i++)
        sb_printf(&hints, "%s%s = %lld", i ? ", " : "", k->hints[i].name,
                  (long long)tilec_kernel_hint(k, L->variant, k->hints[i].name, 0));
    if (k->nvariants)
        line(L, "/* %s, variant %s = %lld: %s */", k->name, k->variant_sym, (long long)k->variants[L->variant].size,
             sb_str(&hints));
    else
        line(L, "/* %s: %s */", k->name, sb_str(&hints));
    sb_free(&hints);
    strbuf sig;
    sb_init(&sig);
    for (uint32_t i = 0; i < k->nparams; i++) {
        const tilec_param *p = &k->params[i];
        sb_printf(&sig, "%s%s%s%s", i ? ", " : "", ctype(p->type.dtype), p->type.kind == TILEC_TE_POINTER ? " *" : " ",
                  cname(L, p->name));
    }
    line(L, "extern \"C\" __global__ void __launch_bounds__(%d) %s(%s)", L->nt, fname, sb_str(&sig));
    sb_free(&sig);
    line(L, "{");
    L->ind++;
    line(L, "extern __shared__ __align__(16) unsigned char tl_smem[];");
    line(L, "const int tl_tid = threadIdx.x, tl_lane = tl_tid & 31, tl_warp = tl_tid >> 5;");
    line(L, "(void)tl_smem; (void)tl_lane; (void)tl_warp;");
    for (uint32_t i = 0; i < k->nhints; i++) {
        int64_t v = tilec_kernel_hint(k, L->variant, k->hints[i].name, 0);
        line(L, "constexpr %s %s = %lld%s;", v > INT32_MAX || v < INT32_MIN ? "long long" : "int",
             cname(L, k->hints[i].name), (long long)v, v > INT32_MAX || v < INT32_MIN ? "LL" : "");
    }
    for (uint32_t i = 0; i < k->nparams; i++) {
        const tilec_param *p = &k->params[i];
        tilec_type t = {.kind = TILEC_TY_VALUE, .dtype = p->type.dtype, .ptr = p->type.kind == TILEC_TE_POINTER};
        val *v = newval(L, VK_SCALAR, &t, cname(L, p->name));
        if (!t.ptr && compute_dt(t.dtype) != t.dtype) { /* an f16/bf16 scalar: computed in f32 */
            v->c = fmt(L, "tl_arg%u", i);
            line(L, "const %s %s = %s;", cctype(t.dtype), v->c, ld_elem(L, cname(L, p->name), t.dtype));
        }
        if (!t.ptr)
            v->ty.dtype = compute_dt(t.dtype);
        bind(L, p->name, v);
    }
    scan_assigned(L, &k->body);
    L->depth = 1;
    emit_block(L, &k->body);
    L->ind--;
    line(L, "}");
}

static void lw_free(lw *L)
{
    ar_free(&L->ar);
    sb_free(&L->out);
    free(L->binds);
    free(L->mats);
    free(L->spilled);
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

tilec_status tilec_lower_kernel(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, int variant,
                                tilec_kernel_code *out)
{
    if (!ctx || !m || !k || !out || variant < 0 || (uint32_t)variant >= tilec_kernel_variant_count(k))
        return TILEC_ERR_ARG;
    memset(out, 0, sizeof *out);
    lw L;
    memset(&L, 0, sizeof L);
    L.ctx = ctx;
    L.m = m;
    L.k = k;
    L.variant = k->nvariants ? variant : -1;
    ar_init(&L.ar);
    sb_init(&L.out);
    /* names up to TILEC_MAX_IDENT: no fixed buffer (one truncated long names) */
    const char *fname = fmt(&L, "%s_v%d", k->name, variant);
    emit_kernel(&L, fname);
    /* the translation unit: a header line, the headers it needs, the prelude, the kernel */
    strbuf tu;
    sb_init(&tu);
    sb_printf(&tu, "// Generated by tilec %s from %s: kernel %s\n", TILEC_VERSION_STRING, "<module>", k->name);
    if (needs_half(sb_str(&L.out)))
        sb_puts(&tu, half_headers);
    sb_puts(&tu, prelude);
    sb_putc(&tu, '\n');
    sb_add(&tu, sb_str(&L.out), L.out.n);
    sb_free(&L.out);
    L.out = tu;
    if (!L.failed && L.smem > SMEM_LIMIT)
        fail(&L, &k->loc, "needs more than %d bytes of shared memory (the most a block may have on sm_90)", SMEM_LIMIT);
    if (L.failed || L.out.failed || L.ar.failed) {
        if (!L.failed)
            diag_at(ctx, &m->src, &k->loc, TILEC_SEV_ERROR, "out of memory while lowering kernel '%s'", k->name);
        lw_free(&L);
        return TILEC_ERR_INPUT;
    }
    out->name = dupstr(fname);
    out->source = sb_take(&L.out);
    out->threads = (uint32_t)L.nt;
    out->smem_bytes = L.smem;
    out->variant = variant;
    out->kernel = k;
    out->written = tilec_kernel_written_params(k);
    out->nparams = k->nparams;
    out->params = calloc(k->nparams ? k->nparams : 1, sizeof *out->params);
    for (uint32_t i = 0; out->params && i < k->nparams; i++)
        out->params[i] = arg_kind(&k->params[i]);
    lw_free(&L);
    if (!out->name || !out->source || !out->params) {
        tilec_kernel_code_free(out);
        return TILEC_ERR_NOMEM;
    }
    return TILEC_OK;
}

void tilec_kernel_code_free(tilec_kernel_code *code)
{
    if (!code)
        return;
    free(code->name);
    free(code->source);
    free(code->params);
    memset(code, 0, sizeof *code);
}

tilec_status tilec_module_emit_cuda(tilec_ctx *ctx, const tilec_module *m, tilec_sink sink)
{
    if (!ctx || !m || !sink.write)
        return TILEC_ERR_ARG;
    strbuf body;
    sb_init(&body);
    tilec_status st = TILEC_OK;
    for (uint32_t i = 0; i < m->kernels.n && st == TILEC_OK; i++) {
        const tilec_kernel *k = m->kernels.v[i];
        for (uint32_t v = 0; v < tilec_kernel_variant_count(k) && st == TILEC_OK; v++) {
            tilec_kernel_code code;
            st = tilec_lower_kernel(ctx, m, k, (int)v, &code);
            if (st == TILEC_OK) {
                const char *fn = strstr(code.source, prelude);
                sb_puts(&body, fn ? fn + sizeof prelude - 1 : code.source);
                tilec_kernel_code_free(&code);
            }
        }
    }
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "// Generated by tilec %s from ", TILEC_VERSION_STRING);
    esc_c_comment(&b, m->src.name);
    sb_putc(&b, '\n');
    if (needs_half(sb_str(&body)))
        sb_puts(&b, half_headers);
    sb_puts(&b, prelude);
    sb_add(&b, sb_str(&body), body.n);
    sb_free(&body);
    if (st == TILEC_OK && b.failed)
        st = TILEC_ERR_NOMEM;
    if (st == TILEC_OK && sink.write(sink.user, sb_str(&b), b.n))
        st = TILEC_ERR_IO;
    sb_free(&b);
    return st;
}

/* ---- grids ---- */

static int eval_grid(const tilec_kernel *k, int variant, const tilec_expr *e, const int64_t *args, int64_t *out)
{
    int64_t a, b;
    switch (e->kind) {
    case TILEC_EX_INT:
        *out = e->ival;
        return 0;
    case TILEC_EX_NAME:
        for (uint32_t i = 0; i < k->nparams; i++)
            if (!strcmp(k->params[i].name, e->name)) {
                *out = args[i];
                return 0;
            }
        for (uint32_t i = 0; i < k->nhints; i++)
            if (!strcmp(k->hints[i].name, e->name)) {
                *out = tilec_kernel_hint(k, variant, e->name, 0);
                return 0;
            }
        return -1;
    case TILEC_EX_UNARY:
        if (eval_grid(k, variant, e->args[0], args, &a))
            return -1;
        if (e->op == TILEC_OP_NEG)
            return __builtin_sub_overflow((int64_t)0, a, out) ? -1 : 0;
        *out = e->op == TILEC_OP_BITNOT ? ~a : !a;
        return 0;
    case TILEC_EX_CALL:
        if (strcmp(e->name, "cdiv") || e->nargs != 2)
            return -1;
        if (eval_grid(k, variant, e->args[0], args, &a) || eval_grid(k, variant, e->args[1], args, &b) || b <= 0)
            return -1;
        *out = a <= 0 ? 0 : a / b + (a % b > 0); /* a + b - 1 could overflow */
        return 0;
    case TILEC_EX_BINARY:
        if (eval_grid(k, variant, e->args[0], args, &a) || eval_grid(k, variant, e->args[1], args, &b))
            return -1;
        switch (e->op) {
        case TILEC_OP_ADD: return __builtin_add_overflow(a, b, out) ? -1 : 0;
        case TILEC_OP_SUB: return __builtin_sub_overflow(a, b, out) ? -1 : 0;
        case TILEC_OP_MUL: return __builtin_mul_overflow(a, b, out) ? -1 : 0;
        case TILEC_OP_DIV: if (!b || (a == INT64_MIN && b == -1)) return -1; *out = a / b; return 0;
        case TILEC_OP_MOD: if (!b || (a == INT64_MIN && b == -1)) return -1; *out = a % b; return 0;
        case TILEC_OP_SHL: /* of a value >= 0 whose result fits: no bit lost */
            if (a < 0 || b < 0 || b > 62 || a > (INT64_MAX >> b)) return -1;
            *out = a << b;
            return 0;
        case TILEC_OP_SHR: if (a < 0 || b < 0 || b > 62) return -1; *out = a >> b; return 0;
        default: return -1;
        }
    default:
        return -1;
    }
}

tilec_status tilec_kernel_grid(const tilec_kernel *k, int variant, const int64_t *args, uint32_t grid[3])
{
    if (!k || !grid || (!args && k->nparams) || variant < 0 || (uint32_t)variant >= tilec_kernel_variant_count(k))
        return TILEC_ERR_ARG;
    int v = k->nvariants ? variant : -1;
    for (int i = 0; i < 3; i++) {
        int64_t g = 1;
        if ((uint32_t)i < k->ngrid && eval_grid(k, v, k->grid[i], args, &g))
            return TILEC_ERR_ARG;
        if (g < 0 || g > (i == 0 ? INT64_C(2147483647) : 65535))
            return TILEC_ERR_ARG;
        grid[i] = (uint32_t)g;
    }
    return TILEC_OK;
}
