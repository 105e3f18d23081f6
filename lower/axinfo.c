/* axinfo.c: the one analysis of index, pointer and mask tiles (in the
 * manner of Triton's AxisInfo). For each tile expression and each axis:
 * the constant stride where it is known, the contiguity (unit-stride runs
 * of that many elements starting at multiples of it), the constancy
 * (constant runs, likewise), the divisibility of each run's first element
 * (the largest power of two dividing it; a pointer's in elements of its
 * pointee, lower_ax_div_bytes in bytes) and, for boolean tiles, whether
 * the tile is true on a prefix of the axis (a run is all true when its
 * last element is, all false when its first is not). Followed through
 * lets (virtual ones by their expression, materialized ones by what their
 * let and every re-assignment `p = p + step` leave: lower_axinfo_let),
 * slices and None, broadcasting, casts, `where`, `trans`, `&`/`&&`/`|`/`||`
 * and comparisons against bounds. Answers are memoised on the lowering
 * state until the bindings change (lower_bind, lower_leave). Every
 * decision that needs to know how an index is spelt asks here: vector
 * widths (memory.c), cp.async and ring eligibility (pipeline.c, ring.c),
 * the twin's unit index tiles (wgmma.c), layouts (layplan.c). */
#include <string.h>

#include "lower/lower_internal.h"

enum { DIV_MAX = 1 << 30 }; /* the divisibility of 0 */

static int64_t gcd64(int64_t a, int64_t b)
{
    a = a < 0 ? -a : a;
    b = b < 0 ? -b : b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The largest power of two dividing v (DIV_MAX for 0). */
static int64_t pow2_of(int64_t v)
{
    if (!v)
        return DIV_MAX;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    u &= ~u + 1;
    return u > DIV_MAX ? DIV_MAX : (int64_t)u;
}

static int64_t mul_div(int64_t a, int64_t b)
{
    return a >= DIV_MAX / b ? DIV_MAX : a * b;
}

/* Nothing known along any axis of a rank-`rank` tile of dims. */
static void unknown(lower_axinfo *r, const tilec_type *t)
{
    memset(r, 0, sizeof *r);
    r->rank = t->rank;
    r->div = 1;
    for (int a = 0; a < t->rank; a++) {
        r->ax[a] = (lower_axfact){.contig = 1, .cons = 1, .div = 1};
        if (t->dims[a] == 1) /* one element: constant, a run of one */
            r->ax[a].known = 1, r->ax[a].cons = 1, r->ax[a].mono = 1;
    }
}

/* What operand info x (of type xt) is along axis `axis` of a result of
 * rank rt (broadcast from the right: a missing or size-1 axis is constant). */
static lower_axfact along(const lower_axinfo *x, const tilec_type *xt, int rt, int axis, int64_t dim)
{
    int k = axis - (rt - xt->rank);
    if (k < 0 || xt->dims[k] == 1)
        return (lower_axfact){.stride = 0, .known = 1, .contig = 1, .cons = dim, .div = x->div, .mono = 1};
    return x->ax[k];
}

static const lower_axinfo *info(lw *L, const tilec_expr *e);

/* The integer value of a scalar e when it is a compile-time constant:
 * literals and hints (not shadowed by a let), and sums and products. */
static int const_value(lw *L, const tilec_expr *e, int64_t *v)
{
    if (lower_ty(L, e)->rank != 0)
        return 0;
    const lower_axinfo *x = info(L, e);
    *v = x->cval;
    return x->isconst;
}

static void binary(lw *L, const tilec_expr *e, const tilec_type *t, lower_axinfo *r)
{
    const tilec_expr *p = e->args[0], *q = e->args[1];
    const lower_axinfo *a = info(L, p), *b = info(L, q);
    const tilec_type *at = lower_ty(L, p), *bt = lower_ty(L, q);
    int boolean = t->dtype == TILEC_DT_BOOL && at->dtype == TILEC_DT_BOOL && bt->dtype == TILEC_DT_BOOL;
    r->virt = a->virt && b->virt;
    /* scalars: constant values, divisibility */
    if (t->rank == 0) {
        r->div = 1;
        if (a->isconst && b->isconst) {
            int64_t x = a->cval, y = b->cval, v = 0;
            int ok = 1;
            switch (e->op) {
            case TILEC_OP_ADD: ok = !__builtin_add_overflow(x, y, &v); break;
            case TILEC_OP_SUB: ok = !__builtin_sub_overflow(x, y, &v); break;
            case TILEC_OP_MUL: ok = !__builtin_mul_overflow(x, y, &v); break;
            default: ok = 0;
            }
            if (ok && !t->ptr) {
                r->isconst = 1;
                r->cval = v;
                r->div = pow2_of(v);
                return;
            }
        }
        if (e->op == TILEC_OP_ADD || e->op == TILEC_OP_SUB)
            r->div = min64(a->div, b->div);
        else if (e->op == TILEC_OP_MUL)
            r->div = mul_div(a->div, b->div);
        return;
    }
    int64_t c;
    r->div = 1;
    for (int k = 0; k < t->rank; k++) {
        lower_axfact x = along(a, at, t->rank, k, t->dims[k]), y = along(b, bt, t->rank, k, t->dims[k]);
        lower_axfact *o = &r->ax[k];
        *o = (lower_axfact){.contig = 1, .cons = gcd64(x.cons, y.cons), .div = 1};
        switch (e->op) {
        case TILEC_OP_ADD:
        case TILEC_OP_SUB:
            o->known = x.known && y.known;
            o->stride = e->op == TILEC_OP_ADD ? x.stride + y.stride : x.stride - y.stride;
            /* a run of x on a constant run of y, or (x + y only) the other way round */
            o->contig = gcd64(x.contig, y.cons);
            if (e->op == TILEC_OP_ADD && gcd64(x.cons, y.contig) > o->contig)
                o->contig = gcd64(x.cons, y.contig);
            o->div = min64(x.div, y.div);
            break;
        case TILEC_OP_MUL:
            if (x.known && y.known && x.stride == 0 && y.stride == 0) {
                o->known = 1, o->stride = 0;
            } else if (y.known && y.stride == 0 && const_value(L, q, &c)) {
                o->known = x.known, o->stride = c * x.stride;
                o->contig = c == 1 ? x.contig : 1;
            } else if (x.known && x.stride == 0 && const_value(L, p, &c)) {
                o->known = y.known, o->stride = c * y.stride;
                o->contig = c == 1 ? y.contig : 1;
            }
            o->div = mul_div(x.div, y.div);
            break;
        case TILEC_OP_LT:
        case TILEC_OP_LE:
        case TILEC_OP_GT:
        case TILEC_OP_GE: {
            o->known = x.known && y.known && x.stride == 0 && y.stride == 0;
            /* idx < bound with idx non-decreasing and the bound constant
             * along the axis: true on a prefix */
            int less = e->op == TILEC_OP_LT || e->op == TILEC_OP_LE;
            lower_axfact i = less ? x : y, n = less ? y : x;
            o->mono = i.known && i.stride >= 0 && n.known && n.stride == 0;
            break;
        }
        case TILEC_OP_ANDAND:
        case TILEC_OP_OROR:
        case TILEC_OP_AND:
        case TILEC_OP_OR:
            o->known = x.known && y.known && x.stride == 0 && y.stride == 0;
            /* prefixes meet and join in a prefix; `&` and `|` of booleans are `&&` and `||` */
            if (boolean || e->op == TILEC_OP_ANDAND || e->op == TILEC_OP_OROR)
                o->mono = x.mono && y.mono;
            break;
        default:
            o->known = x.known && y.known && x.stride == 0 && y.stride == 0;
            break;
        }
        if (o->known && o->stride == 0)
            o->cons = t->dims[k];
        if (o->cons == t->dims[k] && t->dtype == TILEC_DT_BOOL)
            o->mono = 1; /* constant along the axis: all of a run or none */
    }
}

static void call(lw *L, const tilec_expr *e, const tilec_type *t, lower_axinfo *r)
{
    if (tilec_is_builtin(e, BI_RANGE)) {
        r->virt = 1;
        r->ax[0] = (lower_axfact){.stride = 1, .known = 1, .contig = t->dims[0], .cons = 1, .div = DIV_MAX};
        if (t->dims[0] == 1)
            r->ax[0].cons = 1, r->ax[0].mono = 1;
        return;
    }
    if (tilec_is_builtin(e, BI_ZEROS) || tilec_is_builtin(e, BI_FULL)) {
        r->virt = 1;
        for (int k = 0; k < t->rank; k++)
            r->ax[k] = (lower_axfact){.known = 1, .contig = 1, .cons = t->dims[k], .div = 1, .mono = 1};
        return;
    }
    if (lower_is_materializing(e))
        return;
    r->virt = 1;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (e->args[i]->kind != TILEC_EX_DTYPE && !info(L, e->args[i])->virt)
            r->virt = 0;
    if (tilec_is_builtin(e, BI_TRANS) && t->rank == 2) {
        const lower_axinfo *x = info(L, e->args[0]);
        r->ax[0] = x->ax[1];
        r->ax[1] = x->ax[0];
        r->div = x->div;
        return;
    }
    if (tilec_is_builtin(e, BI_RESHAPE) && t->rank) {
        /* along the last axis, when it is no longer than the operand's
         * (both powers of two): a step stays inside one operand row */
        const tilec_type *bt = lower_ty(L, e->args[0]);
        int k = t->rank - 1;
        if (bt->rank && t->dims[k] <= bt->dims[bt->rank - 1]) {
            lower_axfact x = info(L, e->args[0])->ax[bt->rank - 1];
            r->ax[k].known = x.known, r->ax[k].stride = x.stride;
            if (x.known && x.stride == 1)
                r->ax[k].contig = t->dims[k];
        }
        return;
    }
    if (tilec_is_builtin(e, BI_CAST) && e->nargs) {
        /* an integer widened or kept (bool and float conversions keep only
         * constancy) */
        const tilec_type *at = lower_ty(L, e->args[0]);
        const lower_axinfo *x = info(L, e->args[0]);
        char fc = tilec_dtype_class(at->dtype), tc = tilec_dtype_class(t->dtype);
        int same = !at->ptr && !t->ptr && (fc == 's' || fc == 'u') && (tc == 's' || tc == 'u') &&
                   tilec_dtype_size(t->dtype) >= tilec_dtype_size(at->dtype) && (fc == tc || tilec_dtype_size(t->dtype) > tilec_dtype_size(at->dtype));
        for (int k = 0; k < t->rank; k++) {
            lower_axfact a = along(x, at, t->rank, k, t->dims[k]);
            if (same) {
                r->ax[k] = a;
                r->ax[k].mono = 0;
            } else {
                r->ax[k].cons = a.cons;
                r->ax[k].known = a.known && a.stride == 0;
            }
            if (t->dtype == TILEC_DT_BOOL && r->ax[k].cons == t->dims[k])
                r->ax[k].mono = 1;
        }
        if (same)
            r->div = x->div, r->isconst = x->isconst, r->cval = x->cval;
        return;
    }
    if (tilec_is_builtin(e, BI_WHERE) && e->nargs == 3) {
        /* on a run where the condition is constant, the result is one side */
        const lower_axinfo *c = info(L, e->args[0]), *a = info(L, e->args[1]), *b = info(L, e->args[2]);
        const tilec_type *ct = lower_ty(L, e->args[0]), *at = lower_ty(L, e->args[1]), *bt = lower_ty(L, e->args[2]);
        for (int k = 0; k < t->rank; k++) {
            lower_axfact z = along(c, ct, t->rank, k, t->dims[k]), x = along(a, at, t->rank, k, t->dims[k]),
                       y = along(b, bt, t->rank, k, t->dims[k]);
            lower_axfact *o = &r->ax[k];
            int ccons = z.known && z.stride == 0;
            o->known = ccons && x.known && y.known && x.stride == y.stride;
            o->stride = x.stride;
            o->cons = gcd64(z.cons, gcd64(x.cons, y.cons));
            o->contig = gcd64(z.cons, gcd64(x.contig, y.contig));
            o->div = min64(x.div, y.div);
            o->mono = ccons && x.mono && y.mono;
            if (t->dtype == TILEC_DT_BOOL && o->cons == t->dims[k])
                o->mono = 1;
        }
        return;
    }
    /* any other builtin: constant where all its tile operands are */
    for (int k = 0; k < t->rank; k++) {
        int64_t cons = t->dims[k];
        for (uint32_t i = 0; i < e->nargs; i++) {
            if (e->args[i]->kind == TILEC_EX_DTYPE)
                continue;
            lower_axfact a = along(info(L, e->args[i]), lower_ty(L, e->args[i]), t->rank, k, t->dims[k]);
            cons = gcd64(cons, a.cons);
        }
        r->ax[k].cons = cons;
        r->ax[k].known = cons == t->dims[k];
        if (t->dtype == TILEC_DT_BOOL && cons == t->dims[k])
            r->ax[k].mono = 1;
    }
}

static void index_of(lw *L, const tilec_expr *e, const tilec_type *t, lower_axinfo *r)
{
    /* result axis k is the slot keeping it: None is constant, a slice
     * steps its base axis `step` elements at a time */
    const lower_axinfo *x = info(L, e->args[0]);
    r->virt = x->virt;
    r->div = x->div;
    int k = 0, b = 0;
    for (uint32_t i = 1; i < e->nargs && k < t->rank; i++) {
        const tilec_expr *slot = e->args[i];
        if (slot->kind == TILEC_EX_NONE) {
            r->ax[k] = (lower_axfact){.known = 1, .contig = 1, .cons = t->dims[k], .div = x->div, .mono = 1};
            k++;
        } else if (slot->kind == TILEC_EX_SLICE) {
            int64_t lo, st;
            lower_slice_parts(L, slot, &lo, &st);
            lower_axfact a = x->ax[b];
            lower_axfact *o = &r->ax[k];
            *o = (lower_axfact){.contig = 1, .cons = 1, .div = 1};
            o->known = a.known, o->stride = a.stride * st;
            if (a.known && o->stride == 1)
                o->contig = t->dims[k];
            if (a.known && a.stride == 0) {
                o->cons = t->dims[k];
                o->mono = 1;
                o->div = a.div;
            } else if (lo == 0 && st == 1) {
                /* a prefix of the axis keeps its runs and its first element */
                o->contig = gcd64(a.contig, t->dims[k]);
                o->cons = gcd64(a.cons, t->dims[k]);
                o->div = a.div;
                o->mono = a.mono;
            }
            k++;
        }
        b += slot->kind != TILEC_EX_NONE;
    }
}

/* What a let bound to a materialized value left: lower_axinfo_let. */
static void name_of(lw *L, const tilec_expr *e, const tilec_type *t, lower_axinfo *r)
{
    val *v = lower_lookup(L, e->name);
    int64_t c;
    if (v && v->kind == VK_VIRT && v->expr) {
        *r = *info(L, v->expr);
        return;
    }
    if (v && v->ax && v->ax->rank == t->rank) {
        *r = *v->ax;
        r->virt = v->kind != VK_MAT;
        return;
    }
    r->virt = !v || v->kind != VK_MAT;
    if (!v && t->rank == 0 && lower_hint_value(L, e->name, &c)) {
        r->isconst = 1;
        r->cval = c;
        r->div = pow2_of(c);
    }
}

static void compute(lw *L, const tilec_expr *e, lower_axinfo *r)
{
    const tilec_type *t = lower_ty(L, e);
    unknown(r, t);
    switch (e->kind) {
    case TILEC_EX_INT:
        r->virt = 1;
        r->isconst = 1;
        r->cval = e->ival;
        r->div = pow2_of(e->ival);
        return;
    case TILEC_EX_FLOAT:
    case TILEC_EX_BOOL:
    case TILEC_EX_INF:
        r->virt = 1;
        return;
    case TILEC_EX_NAME:
        name_of(L, e, t, r);
        return;
    case TILEC_EX_INDEX:
        index_of(L, e, t, r);
        return;
    case TILEC_EX_UNARY: {
        const lower_axinfo *x = info(L, e->args[0]);
        r->virt = x->virt;
        if (t->rank == 0) {
            if (e->op == TILEC_OP_NEG && x->isconst && x->cval != INT64_MIN) {
                r->isconst = 1;
                r->cval = -x->cval;
            }
            r->div = e->op == TILEC_OP_NEG ? x->div : 1;
            return;
        }
        for (int k = 0; k < t->rank; k++) {
            lower_axfact a = x->ax[k];
            r->ax[k].cons = a.cons;
            r->ax[k].known = a.known && (e->op == TILEC_OP_NEG || a.stride == 0);
            r->ax[k].stride = e->op == TILEC_OP_NEG ? -a.stride : 0;
            r->ax[k].div = e->op == TILEC_OP_NEG ? a.div : 1;
            if (t->dtype == TILEC_DT_BOOL && a.cons == t->dims[k])
                r->ax[k].mono = 1;
        }
        return;
    }
    case TILEC_EX_BINARY:
        binary(L, e, t, r);
        return;
    case TILEC_EX_CALL:
        call(L, e, t, r);
        return;
    default:
        return;
    }
}

/* What one fact implies of the others: a stride of 0 is one constant
 * run (and a boolean prefix), a stride of 1 one contiguous run; the
 * divisibility of every element (what a broadcast of the tile has). */
static void normalize(lw *L, const tilec_expr *e, lower_axinfo *r)
{
    const tilec_type *t = lower_ty(L, e);
    if (!t->rank)
        return;
    int64_t div = DIV_MAX;
    for (int k = 0; k < t->rank; k++) {
        lower_axfact *a = &r->ax[k];
        if (a->known && a->stride == 0) {
            a->cons = t->dims[k];
            a->mono |= t->dtype == TILEC_DT_BOOL;
        }
        if (a->known && a->stride == 1)
            a->contig = t->dims[k];
        div = a->contig > 1 ? 1 : min64(div, a->div);
    }
    r->div = div;
}

/* ---- the memo: one answer per expression while the bindings stand ---- */

struct lower_axmemo {
    const tilec_expr **key;
    lower_axinfo **val;
    uint32_t cap, n;
    uint64_t gen; /* L->ax_gen the entries were computed at */
};

static uint32_t slot_of(const struct lower_axmemo *m, const tilec_expr *e)
{
    uint64_t h = (uint64_t)(uintptr_t)e * 0x9E3779B97F4A7C15ull;
    uint32_t i = (uint32_t)(h >> 32) & (m->cap - 1);
    while (m->key[i] && m->key[i] != e)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int memo_grow(lw *L, struct lower_axmemo *m)
{
    uint32_t cap = m->cap ? m->cap * 2 : 256;
    const tilec_expr **k = ar_array(&L->ar, cap, sizeof *k);
    lower_axinfo **v = ar_array(&L->ar, cap, sizeof *v);
    if (!k || !v)
        return 0;
    memset(k, 0, cap * sizeof *k);
    struct lower_axmemo o = *m;
    m->key = k, m->val = v, m->cap = cap;
    for (uint32_t i = 0; i < o.cap; i++)
        if (o.key[i]) {
            uint32_t s = slot_of(m, o.key[i]);
            m->key[s] = o.key[i];
            m->val[s] = o.val[i];
        }
    return 1;
}

static const lower_axinfo *info(lw *L, const tilec_expr *e)
{
    static const lower_axinfo none = {0};
    struct lower_axmemo *m = L->axmemo;
    if (!m) {
        m = L->axmemo = ar_alloc(&L->ar, sizeof *m);
        if (!m) {
            L->failed = 1;
            return &none;
        }
        memset(m, 0, sizeof *m);
        m->gen = L->ax_gen;
    }
    if (m->gen != L->ax_gen) { /* a name was bound or left: forget */
        if (m->cap)
            memset(m->key, 0, m->cap * sizeof *m->key);
        m->n = 0;
        m->gen = L->ax_gen;
    }
    if ((m->n + 1) * 2 > m->cap && !memo_grow(L, m)) {
        L->failed = 1;
        return &none;
    }
    uint32_t s = slot_of(m, e);
    if (m->key[s])
        return m->val[s];
    lower_axinfo *r = ar_alloc(&L->ar, sizeof *r);
    if (!r) {
        L->failed = 1;
        return &none;
    }
    compute(L, e, r);
    normalize(L, e, r);
    /* compute may have grown the table: find the slot again */
    s = slot_of(m, e);
    if (!m->key[s]) {
        m->key[s] = e;
        m->val[s] = r;
        m->n++;
    }
    return r;
}

const lower_axinfo *lower_axinfo_of(lw *L, const tilec_expr *e)
{
    return info(L, e);
}

int64_t lower_ax_div_bytes(lw *L, const tilec_expr *e, int axis)
{
    const tilec_type *t = lower_ty(L, e);
    const lower_axinfo *x = info(L, e);
    int64_t d = axis < 0 || axis >= x->rank ? x->div : x->ax[axis].div;
    return mul_div(d, t->ptr ? tilec_dtype_size(t->dtype) : 1);
}

/* ---- materialized lets ---- */

/* Is every assignment of `name` in b `name = name + s`, `s + name` or
 * `name - s` with s a scalar? The smallest divisibility of the steps in
 * *div. Also fails when b lets `name` more than once (a shadow). */
static int steps_only(lw *L, const tilec_block *b, const char *name, int *lets, int64_t *div)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if ((s->kind == TILEC_ST_LET || s->kind == TILEC_ST_LET_TUPLE || s->kind == TILEC_ST_FOR) && s->names)
            for (uint32_t j = 0; j < s->nnames; j++)
                if (s->names[j] && !strcmp(s->names[j], name) && ++*lets > 1)
                    return 0;
        if (s->kind == TILEC_ST_ASSIGN && !strcmp(s->names[0], name)) {
            const tilec_expr *v = s->value;
            if (v->kind != TILEC_EX_BINARY || (v->op != TILEC_OP_ADD && v->op != TILEC_OP_SUB))
                return 0;
            int self0 = v->args[0]->kind == TILEC_EX_NAME && !strcmp(v->args[0]->name, name);
            int self1 = v->op == TILEC_OP_ADD && v->args[1]->kind == TILEC_EX_NAME && !strcmp(v->args[1]->name, name);
            const tilec_expr *step = self0 ? v->args[1] : self1 ? v->args[0] : NULL;
            if (!step || lower_ty(L, step)->rank != 0)
                return 0;
            /* the step's names are not bound yet: literals and hints only */
            int64_t c;
            *div = min64(*div, lower_const_int(L, step, &c) == 0 ? pow2_of(c) : 1);
        }
        if (!steps_only(L, &s->body, name, lets, div) || !steps_only(L, &s->orelse, name, lets, div))
            return 0;
    }
    return 1;
}

const lower_axinfo *lower_axinfo_let(lw *L, const char *name, const tilec_expr *value)
{
    int lets = 0;
    int64_t div = DIV_MAX;
    if (!steps_only(L, &L->k->body, name, &lets, &div))
        return NULL;
    lower_axinfo *r = ar_alloc(&L->ar, sizeof *r);
    if (!r) {
        L->failed = 1;
        return NULL;
    }
    *r = *info(L, value);
    /* a scalar step moves every element alike: strides, runs and
     * prefixes stay; the first elements are divisible by less */
    r->isconst = 0;
    r->div = min64(r->div, div);
    for (int k = 0; k < r->rank; k++)
        r->ax[k].div = min64(r->ax[k].div, div);
    return r;
}

/* ---- the questions the lowering asks ---- */

int lower_stride(lw *L, const tilec_expr *e, int axis, int64_t *s)
{
    const lower_axinfo *x = info(L, e);
    if (axis < 0 || x->rank == 0) {
        *s = 0;
        return 1;
    }
    *s = x->ax[axis].stride;
    return x->ax[axis].known;
}

int lower_monotone_mask(lw *L, const tilec_expr *m, int rank, int axis)
{
    const lower_axinfo *x = info(L, m);
    int k = axis - (rank - x->rank); /* broadcast from the right */
    if (axis < 0 || axis >= rank || x->rank > rank)
        return 0;
    return k < 0 || x->ax[k].mono; /* a missing axis: constant along it */
}

/* Where along axis k of e the stride stops being known: the operand of
 * a product that is a run-time value (*scale set: `r * ldb`), or the
 * sub-expression the rules know nothing of (`c % 4`, a loaded tile),
 * followed through the names, sums, slices, casts, `where`s and `trans`
 * whose facts (info) say unknown; NULL when none is found. */
static const tilec_expr *stride_cause(lw *L, const tilec_expr *e, int k, int *scale)
{
    *scale = 0;
    for (int depth = 0; e && depth < 64; depth++) {
        const tilec_type *t = lower_ty(L, e);
        if (k < 0 || k >= t->rank || (info(L, e)->ax[k].known))
            return NULL;
        if (e->kind == TILEC_EX_NAME) {
            val *v = lower_lookup(L, e->name);
            if (!v || v->kind != VK_VIRT || !v->expr)
                return e;
            e = v->expr;
        } else if (e->kind == TILEC_EX_INDEX) {
            int r = 0, b = 0, found = 0; /* result axis k is base axis b */
            for (uint32_t i = 1; i < e->nargs && !found; i++) {
                int none = e->args[i]->kind == TILEC_EX_NONE;
                if (r == k) {
                    if (none)
                        return NULL;
                    found = 1;
                } else {
                    r++;
                    b += !none;
                }
            }
            if (!found)
                return e;
            e = e->args[0];
            k = b;
        } else if (e->kind == TILEC_EX_BINARY && (e->op == TILEC_OP_ADD || e->op == TILEC_OP_SUB || e->op == TILEC_OP_MUL)) {
            const tilec_expr *p = e->args[0], *q = e->args[1];
            const tilec_type *pt = lower_ty(L, p), *qt = lower_ty(L, q);
            lower_axfact x = along(info(L, p), pt, t->rank, k, t->dims[k]), y = along(info(L, q), qt, t->rank, k, t->dims[k]);
            int64_t c;
            if (e->op == TILEC_OP_MUL && x.known && x.stride && y.known && !y.stride && !const_value(L, q, &c)) {
                *scale = 1;
                return q;
            }
            if (e->op == TILEC_OP_MUL && y.known && y.stride && x.known && !x.stride && !const_value(L, p, &c)) {
                *scale = 1;
                return p;
            }
            if (!x.known) {
                k -= t->rank - pt->rank;
                e = p;
            } else if (!y.known) {
                k -= t->rank - qt->rank;
                e = q;
            } else {
                return e;
            }
        } else if (tilec_is_builtin(e, BI_TRANS) && e->nargs == 1 && t->rank == 2) {
            e = e->args[0];
            k = 1 - k;
        } else if (tilec_is_builtin(e, BI_CAST) && e->nargs && lower_ty(L, e->args[0])->rank == t->rank) {
            e = e->args[0];
        } else {
            return e;
        }
    }
    return e;
}

int lower_contiguous_why(lw *L, const tilec_expr *e, int axis, int64_t n, int show, const char **why)
{
    const lower_axinfo *x = info(L, e);
    if (axis >= 0 && axis < x->rank && x->ax[axis].contig >= n && x->ax[axis].contig % n == 0)
        return 1;
    if (!why)
        return 0;
    const tilec_type *t = lower_ty(L, e);
    if (axis < 0 || axis >= x->rank || t->dims[axis] == 1 || (x->ax[axis].known && x->ax[axis].stride == 0)) {
        *why = lower_fmt(L, "the pointer is the same along axis %d (stride 0)", show);
        return 0;
    }
    const lower_axfact *a = &x->ax[axis];
    if (a->known) {
        *why = lower_fmt(L, "the stride along axis %d is %lld elements, not 1", show, (long long)a->stride);
        return 0;
    }
    if (a->contig > 1) {
        *why = lower_fmt(L, "contiguous runs of %lld elements along axis %d, not %lld", (long long)a->contig, show,
                         (long long)n);
        return 0;
    }
    int scale = 0;
    const tilec_expr *c = stride_cause(L, e, axis, &scale);
    val *v = c && c->kind == TILEC_EX_NAME ? lower_lookup(L, c->name) : NULL;
    if (!c)
        *why = lower_fmt(L, "the stride along axis %d is not known", show);
    else if (scale)
        *why = lower_fmt(L, "the stride along axis %d is the run-time value `%s`, not 1", show, lower_expr_text(L, c));
    else if (v && v->kind == VK_MAT && !lower_ty(L, c)->ptr)
        *why = lower_fmt(L, "the offsets along axis %d are values in registers (`%s`: loaded or re-assigned data)", show,
                         lower_expr_text(L, c));
    else
        *why = lower_fmt(L, "the stride along axis %d is not known: `%s`", show, lower_expr_text(L, c));
    return 0;
}

int lower_contiguous(lw *L, const tilec_expr *e, int axis, int64_t n)
{
    return lower_contiguous_why(L, e, axis, n, axis, NULL);
}

void lower_axinfo_trace(lw *L, const char *what, const tilec_expr *ptr, const tilec_expr *mask, int axis, int w)
{
    if (!L->axlog)
        return;
    const lower_axinfo *p = info(L, ptr);
    sb_printf(L->axlog, "line %u %s axis %d vec %d:", ptr->loc.line, what, axis, w);
    for (int k = 0; k < p->rank; k++) {
        const lower_axfact *a = &p->ax[k];
        sb_printf(L->axlog, " [%d] stride ", k);
        if (a->known)
            sb_printf(L->axlog, "%lld", (long long)a->stride);
        else
            sb_printf(L->axlog, "?");
        sb_printf(L->axlog, " contig %lld cons %lld div %lld", (long long)a->contig, (long long)a->cons, (long long)lower_ax_div_bytes(L, ptr, k));
    }
    if (mask) {
        const lower_axinfo *m = info(L, mask);
        sb_printf(L->axlog, "; mask");
        for (int k = 0; k < m->rank; k++)
            sb_printf(L->axlog, " [%d] cons %lld%s", k, (long long)m->ax[k].cons, m->ax[k].mono ? " prefix" : "");
    }
    sb_printf(L->axlog, "\n");
}

/* ---- pointer tiles as tensor maps see them ---- */

/* How many times `name` is let in b and the blocks inside it. */
int lower_lets_of(const tilec_block *b, const char *name)
{
    int n = 0;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        for (uint32_t j = 0; j < s->nnames; j++)
            if ((s->kind == TILEC_ST_LET || s->kind == TILEC_ST_LET_TUPLE || s->kind == TILEC_ST_FOR) && s->names[j] &&
                !strcmp(s->names[j], name))
                n++;
        n += lower_lets_of(&s->body, name) + lower_lets_of(&s->orelse, name);
    }
    return n;
}

static int is_param_name(const lw *L, const char *name)
{
    for (uint32_t i = 0; i < L->k->nparams; i++)
        if (!strcmp(L->k->params[i].name, name))
            return 1;
    return 0;
}

/* The let of `name` in b or a block inside it, or NULL. */
static const tilec_stmt *let_in(const tilec_block *b, const char *name)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i], *t;
        if (s->kind == TILEC_ST_LET && s->nnames && !strcmp(s->names[0], name))
            return s;
        if ((t = let_in(&s->body, name)) != NULL || (t = let_in(&s->orelse, name)) != NULL)
            return t;
    }
    return NULL;
}

/* What name e stands for: a virtual let's expression, or the value of a
 * scalar let, the kernel's only let of that name (not a parameter's),
 * never assigned, bound where e is read (`let lda = K`, `let ab = a +
 * pid(2) * M * K`); e itself otherwise. */
static const tilec_expr *def_of(lw *L, const tilec_expr *e)
{
    if (!e || e->kind != TILEC_EX_NAME)
        return e;
    val *v = lower_lookup(L, e->name);
    if (!v)
        return e;
    if (v->kind == VK_VIRT && v->expr)
        return v->expr;
    if (v->kind != VK_SCALAR || is_param_name(L, e->name) || lower_in_list(L->assigned, L->nassigned, e->name) ||
        lower_lets_of(&L->k->body, e->name) != 1)
        return e;
    const tilec_stmt *s = let_in(&L->k->body, e->name);
    return s ? s->value : e;
}

/* An integer cast of an integer (what the index keeps): its operand. */
static const tilec_expr *int_cast_of(lw *L, const tilec_expr *e)
{
    if (!tilec_is_builtin(e, BI_CAST) || e->nargs < 1)
        return NULL;
    const tilec_type *f = lower_ty(L, e->args[0]), *t = lower_ty(L, e);
    char fc = tilec_dtype_class(f->dtype), tc = tilec_dtype_class(t->dtype);
    unsigned fs = tilec_dtype_size(f->dtype), ts = tilec_dtype_size(t->dtype);
    int ok = !f->ptr && !t->ptr && (fc == 's' || fc == 'u') && (tc == 's' || tc == 'u') && ts >= fs &&
             (fc == tc || ts > fs);
    return ok ? e->args[0] : NULL; /* widened or kept: the same value */
}

/* x[:, None], x[None, :], x[:] ...: slots of None and bare slices only
 * (a broadcast, the same elements): x. */
static const tilec_expr *bcast_inner(const tilec_expr *e)
{
    if (e->kind != TILEC_EX_INDEX)
        return NULL;
    for (uint32_t i = 1; i < e->nargs; i++)
        if (e->args[i]->kind != TILEC_EX_NONE && (e->args[i]->kind != TILEC_EX_SLICE || e->args[i]->nargs))
            return NULL;
    return e->args[0];
}

int lower_param_of(lw *L, const tilec_expr *e, int ptr, int follow)
{
    int anyint = ptr == 2;
    ptr = ptr == 1;
    for (int depth = 0; follow && e && depth < 32; depth++) {
        const tilec_expr *x = ptr ? NULL : int_cast_of(L, e);
        const tilec_expr *d = x ? x : def_of(L, e);
        if (d == e)
            break;
        e = d;
    }
    if (!e || e->kind != TILEC_EX_NAME)
        return -1;
    for (uint32_t i = 0; i < L->k->nparams; i++) {
        const tilec_param *p = &L->k->params[i];
        if (strcmp(p->name, e->name))
            continue;
        if (lower_in_list(L->assigned, L->nassigned, p->name))
            return -1;
        if (ptr != (p->type.kind == TILEC_TE_POINTER))
            return -1;
        char cls = tilec_dtype_class(p->type.dtype);
        if (!ptr && (anyint ? cls != 's' && cls != 'u' : p->type.dtype != TILEC_DT_I32 && p->type.dtype != TILEC_DT_I64))
            return -1;
        /* the name must still be the parameter (no let shadows it) */
        val *v = lower_lookup(L, e->name);
        if (!v || v->kind != VK_SCALAR || strcmp(v->c, lower_cname(L, p->name)))
            return -1;
        return (int)i;
    }
    return -1;
}

/* pid(a) for a grid axis in the bits of zaxes (pid(2) always; pid(1)
 * where it is read as a batch), or an integer cast of it: the pid call. */
static const tilec_expr *zpid_of(lw *L, const tilec_expr *e, int zaxes)
{
    const tilec_expr *x = int_cast_of(L, e);
    if (x)
        e = x;
    return tilec_is_builtin(e, BI_PID) && e->nargs == 1 && e->args[0]->kind == TILEC_EX_INT &&
                   e->args[0]->ival >= 0 && e->args[0]->ival < 3 && (zaxes >> e->args[0]->ival & 1)
               ? e
               : NULL;
}

enum { PA_MAX = 6 };

/* One term of the pointer's sum as a product: a constant, integer
 * parameters, the batch pid (of the axes in zaxes) and index tiles (the
 * leaves). */
typedef struct pa_prod {
    int64_t c;
    int sym[PA_MAX], nsym;
    const tilec_expr *leaf[PA_MAX];
    int nleaf;
    const tilec_expr *z;
    int zaxes;
    int ok, twoz; /* twoz: a batch pid met twice */
} pa_prod;

static void factor(lw *L, const tilec_expr *e, pa_prod *f, int depth)
{
    int64_t v;
    const tilec_expr *x;
    int p;
    if (depth > 32 || !f->ok) {
        f->ok = 0;
        return;
    }
    if (lower_ty(L, e)->rank == 0 && !lower_ty(L, e)->ptr && lower_const_int(L, e, &v) == 0) {
        f->ok = !__builtin_mul_overflow(f->c, v, &f->c);
        return;
    }
    if ((p = lower_param_of(L, e, 0, 0)) >= 0) {
        if (f->nsym == PA_MAX)
            f->ok = 0;
        else
            f->sym[f->nsym++] = p;
        return;
    }
    if ((x = zpid_of(L, e, f->zaxes)) != NULL) {
        f->twoz |= f->z != NULL;
        f->ok = !f->z;
        f->z = x;
        return;
    }
    if (e->kind == TILEC_EX_BINARY && e->op == TILEC_OP_MUL) {
        factor(L, e->args[0], f, depth + 1);
        factor(L, e->args[1], f, depth + 1);
        return;
    }
    if ((x = int_cast_of(L, e)) != NULL || (x = bcast_inner(e)) != NULL) {
        factor(L, x, f, depth + 1);
        return;
    }
    if (e->kind == TILEC_EX_NAME && (x = def_of(L, e)) != e && lower_ty(L, e)->rank == 0) {
        /* a scalar let: its factors where it names a parameter or pid(2) (`let lda = K`, `let za = pid(2) * M *
         * K`); else the scalar itself (`let row0 = pid(0) * BM`: a coordinate) */
        pa_prod g = {.c = 1, .ok = 1, .zaxes = f->zaxes};
        factor(L, x, &g, depth + 1);
        if (g.ok && !g.nsym && !g.z && !g.nleaf) { /* a constant (`let sb = 4096 * 4096`) */
            f->ok = !__builtin_mul_overflow(f->c, g.c, &f->c);
            return;
        }
        if (g.ok && !g.nsym && !g.z) {
            if (f->nleaf == PA_MAX)
                f->ok = 0;
            else
                f->leaf[f->nleaf++] = e;
            return;
        }
        for (int i = 0; i < g.nsym && f->ok; i++)
            f->ok = f->nsym < PA_MAX && (f->sym[f->nsym++] = g.sym[i]) >= 0;
        for (int i = 0; i < g.nleaf && f->ok; i++)
            f->ok = f->nleaf < PA_MAX && (f->leaf[f->nleaf++] = g.leaf[i]) != NULL;
        f->twoz |= g.twoz || (f->z && g.z);
        f->ok = f->ok && g.ok && !(f->z && g.z) && !__builtin_mul_overflow(f->c, g.c, &f->c);
        if (g.z)
            f->z = g.z;
        return;
    }
    if (e->kind == TILEC_EX_NAME && (x = def_of(L, e)) != e) {
        /* a tile let to a product, broadcast or cast: what it stands for; a let index (rm) stays */
        if ((x->kind == TILEC_EX_BINARY && x->op == TILEC_OP_MUL) || int_cast_of(L, x) || bcast_inner(x) ||
            x->kind == TILEC_EX_NAME) {
            factor(L, x, f, depth + 1);
            return;
        }
    }
    if (f->nleaf == PA_MAX)
        f->ok = 0;
    else
        f->leaf[f->nleaf++] = e;
}

/* The terms of the sum e (conj 0), through lets of pointers and of 2-D
 * offsets (`let pa = a + rm[:, None] * K`, `let offs = rm[:, None] * K +
 * rk[None, :]`; a 1-D sum is an index, pid(0) * BM + range(BM), one
 * term), or the conjuncts of mask e (conj 1, `&&` or `&` of booleans),
 * through lets: into t from n, the new count (-1: too many). */
static int split(lw *L, const tilec_expr *e, int conj, const tilec_expr **t, int n, int depth)
{
    const tilec_expr *d = e;
    for (int i = 0; i < 32 && d->kind == TILEC_EX_NAME; i++) {
        const tilec_expr *x = def_of(L, d);
        if (x == d)
            break;
        d = x;
    }
    const tilec_type *ty = lower_ty(L, d);
    int sum = !conj && d->kind == TILEC_EX_BINARY && d->op == TILEC_OP_ADD && (ty->ptr || ty->rank >= 2);
    int both = conj && d->kind == TILEC_EX_BINARY && (d->op == TILEC_OP_ANDAND || d->op == TILEC_OP_AND) &&
              lower_ty(L, d->args[0])->dtype == TILEC_DT_BOOL && lower_ty(L, d->args[1])->dtype == TILEC_DT_BOOL;
    if (depth < 32 && n >= 0 && (sum || both)) {
        n = split(L, d->args[0], conj, t, n, depth + 1);
        return split(L, d->args[1], conj, t, n, depth + 1);
    }
    if (n < 0 || n >= PA_MAX)
        return -1;
    t[n] = conj ? d : e; /* a term keeps its name: a scalar let is a coordinate (factor) */
    return n + 1;
}

/* The axes of a rank-`rank` tile along which e (broadcast from the right)
 * may vary: a bit per axis. */
static int varying(lw *L, const tilec_expr *e, const tilec_type *tile)
{
    const lower_axinfo *x = info(L, e);
    const tilec_type *t = lower_ty(L, e);
    int m = 0;
    for (int k = 0; k < tile->rank; k++) {
        lower_axfact a = along(x, t, tile->rank, k, tile->dims[k]);
        if (tile->dims[k] > 1 && !(a.known && a.stride == 0))
            m |= 1 << k;
    }
    return m;
}

/* The coordinate of scalar term e, a product with integer parameter p (the
 * row stride) among its factors: the operand of the product by p, as
 * written (`pid(0) * BM * K`: pid(0) * BM; `kt * BK * N`), through casts;
 * NULL when p is not an operand of the outer product. The node itself,
 * not a copy: the twin compares coordinates by identity. */
static const tilec_expr *coord_of(lw *L, const tilec_expr *e, int p)
{
    const tilec_expr *x;
    for (int depth = 0; e && depth < 32; depth++) {
        if ((x = int_cast_of(L, e)) != NULL) {
            e = x;
            continue;
        }
        if (e->kind != TILEC_EX_BINARY || e->op != TILEC_OP_MUL)
            return NULL;
        for (int i = 0; i < 2; i++)
            if (lower_param_of(L, e->args[i], 0, 0) == p)
                return e->args[1 - i];
        return NULL;
    }
    return NULL;
}

/* The batch stride c * X [* Y] of a term's product f into pa (more than
 * two parameters, or a constant past 2^31: refused with why). */
static int batch_of(lw *L, const pa_prod *f, lower_ptraff *pa)
{
    if (f->nleaf)
        return pa->why = "a scalar offset of the pointer is not pid(2) (or a head's pid(1)) times constants and "
                         "integer parameters",
               0;
    if (f->nsym > 2)
        return pa->why = "the batch stride is a product of more than two integer parameters (a tensor map's "
                         "batch stride names two)",
               0;
    if (f->c < 1 || f->c > INT32_MAX)
        return pa->why = "the batch stride's constant factor is not from 1 to 2^31 - 1", 0;
    if (f->c == 1 && !f->nsym)
        return pa->why = "the batch stride is 1 element (the matrices would overlap)", 0;
    pa->z = f->z;
    pa->zaxis = (int)zpid_of(L, f->z, 6)->args[0]->ival;
    pa->bscale = f->c;
    /* the last factor first (pid(2) * M * K: K, M), as the maps have always listed them */
    pa->bs[0] = f->nsym ? f->sym[f->nsym - 1] : -1;
    pa->bs[1] = f->nsym == 2 ? f->sym[0] : -1;
    return 1;
}

/* Does pa's axis ax have unit stride (no parameter, no constant)? */
static int unit_axis(const lower_ptraff *pa, int ax) { return pa->stride[ax] < 0 && !pa->kstride[ax]; }

/* lower_ptr_affine with the batch index a pid of the grid axes in zaxes;
 * konst: a row stride may be a constant (pa->kstride). */
static int affine(lw *L, const tilec_expr *ptr, lower_ptraff *pa, int zaxes, int konst)
{
    const tilec_expr *t[PA_MAX];
    const tilec_type *tile = lower_ty(L, ptr);
    memset(pa, 0, sizeof *pa);
    pa->tile = tile;
    pa->base = pa->stride[0] = pa->stride[1] = pa->bs[0] = pa->bs[1] = -1;
    if (tile->rank != 2 || !tile->ptr)
        return pa->why = "the pointer is not a 2-D tile", 0;
    int n = split(L, ptr, 0, t, 0, 0);
    const tilec_expr *scal[PA_MAX];
    int sstride[PA_MAX], ns = 0;
    if (n < 0)
        return pa->why = "the pointer is not P + R[:, None] * S + C[None, :] (with at most one batch offset)", 0;
    for (int i = 0; i < n; i++) {
        if (lower_ty(L, t[i])->ptr) {
            int p = lower_param_of(L, t[i], 1, 1);
            if (p < 0 || pa->base >= 0)
                return pa->why = "the pointer is not a pointer parameter plus offsets", 0;
            pa->base = p;
            continue;
        }
        pa_prod f = {.c = 1, .ok = 1, .zaxes = zaxes};
        factor(L, t[i], &f, 0);
        int m = varying(L, t[i], tile);
        if (!f.ok)
            return pa->why = f.twoz ? "the pointer has two batch offsets (pid(1) and pid(2), or one twice): a "
                                      "tensor map here has one batch dimension"
                                    : "a term of the pointer is not the pointer parameter, R[:, None] * S or "
                                      "C[None, :]",
                   0;
        if (!m && !f.z && f.nsym <= 1 && lower_ty(L, t[i])->rank == 0) {
            /* a scalar: added to the coordinate of the axis of its stride (none: the unit-stride axis); a
             * constant factor stays with the coordinate (`kt * BK * N`: kt * BK rows of stride N) */
            if (f.nsym == 1 && (f.nleaf > 1 || (f.nleaf == 1 && lower_ty(L, f.leaf[0])->rank != 0)))
                return pa->why = "a scalar offset of the pointer is not pid(2) times one or two integer parameters "
                                 "or a coordinate times the row stride",
                       0;
            scal[ns] = !f.nsym ? t[i] : f.c == 1 && f.nleaf == 1 ? f.leaf[0] : coord_of(L, t[i], f.sym[0]);
            if (!scal[ns])
                return pa->why = "a scalar offset of the pointer is not a coordinate times the row stride as one "
                                 "product (`(kt * BK) * N`)",
                       0;
            sstride[ns++] = f.nsym ? f.sym[0] : -1;
            continue;
        }
        if (!m) { /* constant over the tile: the batch offset pid(2) * c * X [* Y] */
            if (!f.z)
                return pa->why = "a scalar offset of the pointer is not pid(2) times one or two integer parameters",
                       0;
            if (pa->z)
                return pa->why = "the pointer has two batch offsets (pid(1) and pid(2), or one twice): a tensor "
                                 "map here has one batch dimension",
                       0;
            if (!batch_of(L, &f, pa))
                return 0;
            continue;
        }
        if (f.c != 1 && !(konst && f.c > 1 && f.c <= INT32_MAX && !f.nsym)) /* konst: R[:, None] * D, D a hint */
            return pa->why = "a term of the pointer is not the pointer parameter, R[:, None] * S or C[None, :]", 0;
        int ax = m == 1 ? 0 : m == 2 ? 1 : -1;
        if (ax < 0 || f.z || f.nleaf != 1 || f.nsym > 1 || pa->idx[ax])
            return pa->why = "the pointer's offsets are not R[:, None] * S + C[None, :] of 1-D index tiles", 0;
        pa->kstride[ax] = f.c != 1 ? f.c : 0;
        if (f.nsym == 1 && f.sym[0] < 0)
            return pa->why = "the row stride is not an integer parameter", 0;
        const tilec_expr *I = f.leaf[0];
        const lower_axinfo *ix = info(L, I);
        if (lower_ty(L, I)->rank != 1 || !ix->virt || !ix->ax[0].known || ix->ax[0].stride != 1)
            return pa->why = "an index of the pointer is not a unit-stride start + range(n)", 0;
        pa->idx[ax] = I;
        pa->stride[ax] = f.nsym ? f.sym[0] : -1;
    }
    if (pa->base < 0)
        return pa->why = "the pointer is not a pointer parameter plus offsets", 0;
    if (!pa->idx[0] || !pa->idx[1] || unit_axis(pa, 0) == unit_axis(pa, 1))
        return pa->why = "the pointer's offsets are not R[:, None] * S + C[None, :] of 1-D index tiles", 0;
    for (int i = 0; i < ns; i++) { /* sstride -1: the unit axis (not one of a constant stride) */
        int ax = sstride[i] < 0 ? (unit_axis(pa, 0) ? 0 : 1)
                 : pa->stride[0] == sstride[i] ? 0
                 : pa->stride[1] == sstride[i] ? 1
                                               : -1;
        if (ax < 0)
            return pa->why = "a scalar offset of the pointer is not pid(2) times one or two integer parameters", 0;
        /* two scalars on one axis: their sum, one coordinate (compared by linear form: lower_same_first) */
        pa->add[ax] = !pa->add[ax] ? scal[i]
                                   : lower_scalar_op(L, TILEC_OP_ADD, (tilec_expr *)pa->add[ax], (tilec_expr *)scal[i],
                                                     &scal[i]->loc);
        if (!pa->add[ax])
            return pa->why = "out of memory", 0;
    }
    return 1;
}

int lower_ptr_affine(lw *L, const tilec_expr *ptr, lower_ptraff *pa) { return affine(L, ptr, pa, 1 << 2, 0); }

/* Does a scalar term of ptr's sum read pid(1)? */
static int reads_pid1(lw *L, const tilec_expr *ptr)
{
    const tilec_expr *t[PA_MAX];
    int n = split(L, ptr, 0, t, 0, 0);
    for (int i = 0; i < n; i++) {
        pa_prod f = {.c = 1, .ok = 1, .zaxes = 1 << 1};
        if (!lower_ty(L, t[i])->ptr && !varying(L, t[i], lower_ty(L, ptr)) && (factor(L, t[i], &f, 0), f.z))
            return 1;
    }
    return 0;
}

static int mask_bounds(lw *L, const tilec_expr *m, lower_ptraff *pa, int bound[2], int konst, const tilec_expr **cond);

/* lower_ptr_map; konst: lower_ptr_map_const. */
static int ptr_map(lw *L, const tilec_expr *ptr, const tilec_expr *m, lower_ptraff *pa, int bound[2], int konst,
                   const tilec_expr **cond)
{
    bound[0] = bound[1] = -1;
    int ok = affine(L, ptr, pa, 1 << 2, konst);
    if (ok && mask_bounds(L, m, pa, bound, konst, cond))
        return 1;
    if (!reads_pid1(L, ptr)) /* no head offset to read otherwise */
        return ok ? (pa->why = "the mask is not R[:, None] < rows && C[None, :] < cols", 0) : 0;
    /* pid(1) times what the mask does not bound: the batch index (a head), not a coordinate; where that
     * is no map either, the first reading's reason, unless only the second read every term */
    lower_ptraff p1;
    if (!affine(L, ptr, &p1, 1 << 2 | 1 << 1, konst)) {
        pa->why = ok ? "the mask is not R[:, None] < rows && C[None, :] < cols" : p1.why;
        return 0;
    }
    *pa = p1;
    if (!mask_bounds(L, m, pa, bound, konst, cond))
        return pa->why = "the mask is not R[:, None] < rows && C[None, :] < cols", 0;
    return 1;
}

int lower_ptr_map(lw *L, const tilec_expr *ptr, const tilec_expr *m, lower_ptraff *pa, int bound[2])
{
    return m && ptr_map(L, ptr, m, pa, bound, 0, NULL);
}

int lower_ptr_map_cond(lw *L, const tilec_expr *ptr, const tilec_expr *m, lower_ptraff *pa, int bound[2],
                       const tilec_expr **cond)
{
    *cond = NULL;
    return m && ptr_map(L, ptr, m, pa, bound, 0, cond);
}

/* Do a + add_a and b + add_b (adds maybe NULL) have the same first element? */
static int same_first2(lw *L, const tilec_expr *a, const tilec_expr *adda, const tilec_expr *b, const tilec_expr *addb);

int lower_same_tile(lw *L, const lower_ptraff *a, const lower_ptraff *b)
{
    if (a->base != b->base || !lower_same_shape(a->tile, b->tile) || a->tile->rank != 2 || !a->z != !b->z ||
        a->bscale != b->bscale || a->bs[0] != b->bs[0] || a->bs[1] != b->bs[1] ||
        (a->z && (a->zaxis != b->zaxis || !same_first2(L, a->z, NULL, b->z, NULL))))
        return 0;
    for (int ax = 0; ax < 2; ax++)
        if (a->stride[ax] != b->stride[ax] || a->kstride[ax] != b->kstride[ax] ||
            !same_first2(L, a->idx[ax], a->add[ax], b->idx[ax], b->add[ax]))
            return 0;
    return 1;
}

int lower_ptr_map_const(lw *L, const tilec_expr *ptr, const tilec_expr *m, lower_ptraff *pa, int bound[2])
{
    return ptr_map(L, ptr, m, pa, bound, 1, NULL);
}

void lower_map_batch(tilec_tma_map *m, const lower_ptraff *pa)
{
    m->bs[0] = m->bs[1] = TILEC_TMA_NONE;
    if (!pa->z)
        return;
    m->batched = 1;
    m->bs[0] = pa->bs[0] < 0 ? TILEC_TMA_NONE : (uint32_t)pa->bs[0];
    m->bs[1] = pa->bs[1] < 0 ? TILEC_TMA_NONE : (uint32_t)pa->bs[1];
    m->bgrid = (uint32_t)pa->zaxis;
    m->bscale = (uint32_t)pa->bscale;
}

/* ---- first elements as linear forms: sum of coef * atom + c ---- */

enum { LIN_MAX = 8 };
typedef struct lin {
    int n;
    const tilec_expr *atom[LIN_MAX]; /* a name (compared by name), pid(i) (by i), or any other expression */
    int64_t coef[LIN_MAX];
    int64_t c;
    int ok;
} lin;

static int same_atom(const tilec_expr *a, const tilec_expr *b)
{
    if (a->kind == TILEC_EX_NAME && b->kind == TILEC_EX_NAME)
        return !strcmp(a->name, b->name);
    if (tilec_is_builtin(a, BI_PID) && tilec_is_builtin(b, BI_PID) && a->nargs == 1 && b->nargs == 1 &&
        a->args[0]->kind == TILEC_EX_INT && b->args[0]->kind == TILEC_EX_INT)
        return a->args[0]->ival == b->args[0]->ival;
    return a == b;
}

static void lin_atom(lin *f, const tilec_expr *e, int64_t mul)
{
    for (int i = 0; i < f->n; i++)
        if (same_atom(f->atom[i], e)) {
            f->ok &= !__builtin_add_overflow(f->coef[i], mul, &f->coef[i]);
            return;
        }
    if (f->n == LIN_MAX) {
        f->ok = 0;
        return;
    }
    f->atom[f->n] = e;
    f->coef[f->n++] = mul;
}

/* f += mul * (e's first element): through lets, broadcasts, widening
 * casts, + - and products by constants; range(n) starts at 0. */
static void lin_of(lw *L, const tilec_expr *e, int64_t mul, lin *f, int depth)
{
    int64_t v;
    const tilec_expr *x;
    if (!f->ok || depth > 64) {
        f->ok = 0;
        return;
    }
    if (lower_ty(L, e)->rank == 0 && !lower_ty(L, e)->ptr && lower_const_int(L, e, &v) == 0) {
        f->ok &= !__builtin_mul_overflow(mul, v, &v) && !__builtin_add_overflow(f->c, v, &f->c);
        return;
    }
    if (tilec_is_builtin(e, BI_RANGE))
        return;
    if ((x = int_cast_of(L, e)) != NULL || (x = bcast_inner(e)) != NULL ||
        (e->kind == TILEC_EX_NAME && (x = def_of(L, e)) != e)) {
        lin_of(L, x, mul, f, depth + 1);
        return;
    }
    if (e->kind == TILEC_EX_BINARY && (e->op == TILEC_OP_ADD || e->op == TILEC_OP_SUB)) {
        lin_of(L, e->args[0], mul, f, depth + 1);
        lin_of(L, e->args[1], e->op == TILEC_OP_SUB ? -mul : mul, f, depth + 1);
        return;
    }
    if (e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG) {
        lin_of(L, e->args[0], -mul, f, depth + 1);
        return;
    }
    if (e->kind == TILEC_EX_BINARY && e->op == TILEC_OP_MUL)
        for (int i = 0; i < 2; i++)
            if (lower_ty(L, e->args[i])->rank == 0 && lower_const_int(L, e->args[i], &v) == 0) {
                f->ok &= !__builtin_mul_overflow(mul, v, &v);
                lin_of(L, e->args[1 - i], v, f, depth + 1);
                return;
            }
    lin_atom(f, e, mul);
}

static int same_first2(lw *L, const tilec_expr *a, const tilec_expr *adda, const tilec_expr *b, const tilec_expr *addb)
{
    lin f = {.ok = 1};
    lin_of(L, a, 1, &f, 0);
    if (adda)
        lin_of(L, adda, 1, &f, 0);
    lin_of(L, b, -1, &f, 0);
    if (addb)
        lin_of(L, addb, -1, &f, 0);
    if (!f.ok || f.c)
        return 0;
    for (int i = 0; i < f.n; i++)
        if (f.coef[i])
            return 0;
    return 1;
}

/* Do a and b + add (add maybe NULL) have the same first element? */
static int same_first(lw *L, const tilec_expr *a, const tilec_expr *b, const tilec_expr *add)
{
    return same_first2(L, a, NULL, b, add);
}

int lower_same_first(lw *L, const tilec_expr *a, const tilec_expr *b)
{
    if (!a || !b)
        return !a && !b;
    return a == b || same_first(L, a, b, NULL);
}

/* e without lets, broadcasts and integer casts: an index's identity. */
static const tilec_expr *canon(lw *L, const tilec_expr *e)
{
    for (int i = 0; e && i < 64; i++) {
        const tilec_expr *x = int_cast_of(L, e);
        if (!x)
            x = bcast_inner(e);
        if (!x)
            x = def_of(L, e);
        if (x == e || !x)
            break;
        e = x;
    }
    return e;
}

const tilec_expr *lower_index_canon(lw *L, const tilec_expr *e) { return canon(L, e); }

/* Is x (a bound's index) the coordinate of pa's axis ax along the whole
 * tile: the same index, or one of unit stride along that axis whose first
 * element is the coordinate's (`(k + range(BK))[None, :]` against
 * range(BK) + k)? */
static int bound_index(lw *L, const tilec_expr *x, const lower_ptraff *pa, int ax)
{
    if (!pa->add[ax] && canon(L, x) == canon(L, pa->idx[ax]))
        return 1;
    lower_axfact a = along(info(L, x), lower_ty(L, x), pa->tile->rank, ax, pa->tile->dims[ax]);
    return a.known && a.stride == 1 && same_first(L, x, pa->idx[ax], pa->add[ax]);
}

/* Is index x's first element 0 (range(n), `0 + range(n)`)? */
static int starts_at_zero(lw *L, const tilec_expr *x)
{
    lin f = {.ok = 1};
    lin_of(L, x, 1, &f, 0);
    for (int i = 0; f.ok && i < f.n; i++)
        f.ok = !f.coef[i];
    return f.ok && !f.c;
}

int lower_mask_bounds(lw *L, const tilec_expr *m, const lower_ptraff *pa, int bound[2])
{
    return m && mask_bounds(L, m, (lower_ptraff *)pa, bound, 0, NULL);
}

/* lower_mask_bounds; konst: a bound may be a constant (pa->kext: it),
 * and m may bound one axis or none (m NULL), an unbounded axis's index
 * range(n) from 0 with nothing added (pa->kext: n); cond (may be NULL):
 * one scalar conjunct of m besides the bounds, anywhere in it, into
 * *cond (`m && add != 0`, `add != 0 && R < rows && C < cols`). */
static int mask_bounds(lw *L, const tilec_expr *m, lower_ptraff *pa, int bound[2], int konst, const tilec_expr **cond)
{
    const tilec_expr *t[PA_MAX];
    int64_t kb[2] = {0, 0}, c0;
    bound[0] = bound[1] = -1;
    int n = m ? split(L, m, 1, t, 0, 0) : 0;
    if (cond) {
        *cond = NULL;
        int k = 0;
        for (int i = 0; i < n; i++) {
            if (lower_ty(L, t[i])->rank == 0 && !*cond)
                *cond = t[i];
            else if (lower_ty(L, t[i])->rank == 0)
                return 0;
            else
                t[k++] = t[i];
        }
        n = n < 0 ? n : k;
    }
    if (konst ? n < 0 || n > 2 : n != 2)
        return 0;
    for (int i = 0; i < n; i++) {
        const tilec_expr *c = t[i], *x, *b;
        if (c->kind == TILEC_EX_INDEX && bcast_inner(c)) /* (R < rows)[:, None] */
            c = canon(L, c);
        if (c->kind != TILEC_EX_BINARY || (c->op != TILEC_OP_LT && c->op != TILEC_OP_GT))
            return 0;
        x = c->op == TILEC_OP_LT ? c->args[0] : c->args[1];
        b = c->op == TILEC_OP_LT ? c->args[1] : c->args[0];
        int p = lower_param_of(L, b, 0, 1);
        /* konst: a constant bound (`rd[None, :] < D`, D a hint), the map's extent along that axis */
        int k = p < 0 && konst && lower_ty(L, b)->rank == 0 && lower_const_int(L, b, &c0) == 0 && c0 >= 1 &&
                c0 < INT32_MAX;
        if (p < 0 && !k)
            return 0;
        /* the bound's index is the pointer's along that axis, broadcast along it alone */
        int m2 = varying(L, t[i], pa->tile), done = 0;
        for (int ax = 0; ax < 2 && !done; ax++)
            if (bound[ax] < 0 && !kb[ax] && m2 == 1 << ax && bound_index(L, x, pa, ax)) {
                if (k)
                    kb[ax] = c0;
                else
                    bound[ax] = p;
                done = 1;
            }
        if (!done)
            return 0;
    }
    for (int ax = 0; konst && ax < 2; ax++) {
        pa->kext[ax] = kb[ax];
        if (bound[ax] < 0 && !kb[ax] && !pa->add[ax] && starts_at_zero(L, pa->idx[ax]))
            pa->kext[ax] = pa->tile->dims[ax];
    }
    return (bound[0] >= 0 || pa->kext[0]) && (bound[1] >= 0 || pa->kext[1]);
}
