/* index64.c: the width of index arithmetic (docs/lowering.md, "Index
 * width"). Before a variant's body is lowered, every i32 expression gets an
 * interval of the values it can take: literals and hints exactly, range(N)
 * [0, N), pid(0) [0, 2^31), pid(1|2) [0, 65535), an i32 parameter or a
 * loaded value its whole type, operators by interval arithmetic, a
 * reduction or scan over n elements as n folds of its operand, a call not
 * modelled here any 64-bit value. An i32
 * expression whose interval can leave i32 is computed in 64 bits when it is
 * index arithmetic: built from pid, sizes, ranges and constants only, or
 * part of a pointer offset (a gathered index times a stride), or a name
 * that is later used in one. An expression with a 64-bit operand is 64-bit
 * too, so no value is cut back to 32 bits on the way (cast(x, i32) still
 * cuts: the user asked for it). A signed overflow has no defined value, so
 * computing it exactly changes nothing the language defines.
 *
 * The result is a table of the widened expressions, which lower_ty()
 * reports as i64, so the rest of the lowering declares and converts them
 * as it does any i64 value; and a comment line per kernel naming them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_internal.h"

typedef struct rng {
    int64_t lo, hi;
    int data; /* depends on memory (loads, reductions) or a float */
} rng;

typedef struct ixname {
    const char *name;
    rng r;
    int wide;
} ixname;

typedef struct namelist {
    const char **v;
    int n;
} namelist;

struct lower_ix {
    const tilec_expr **keys; /* open addressing; the widened expressions */
    tilec_type *types;
    uint32_t cap, n;
    namelist wide_assigned; /* assigned somewhere with a 64-bit value */
    namelist ptr_names;     /* used inside a pointer offset */
    int changed;
    int nomark;          /* evaluating the grid: nothing is lowered */
    rng grid[3];         /* the number of programs along each axis */
    ixname *sc; /* names in scope */
    int nsc, capsc;
    namelist shown;     /* widened let and loop names, for the comment */
    uint32_t lines[16]; /* statement lines with 64-bit arithmetic */
    int nlines;
    ar_vec safe;   /* loops (const tilec_stmt *) whose variable is proven not to wrap in 64 bits */
    ar_vec safe32; /* ... and of those, the ones proven in 32 bits too */
};

static const rng FULL64 = {INT64_MIN, INT64_MAX, 0};

static int64_t sat(__int128 x) { return x > INT64_MAX ? INT64_MAX : x < INT64_MIN ? INT64_MIN : (int64_t)x; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int fits32(rng r) { return r.lo >= INT32_MIN && r.hi <= INT32_MAX; }

static rng of_dtype(tilec_dtype d)
{
    switch (d) {
    case TILEC_DT_BOOL: return (rng){0, 1, 1};
    case TILEC_DT_I8: return (rng){INT8_MIN, INT8_MAX, 1};
    case TILEC_DT_I16: return (rng){INT16_MIN, INT16_MAX, 1};
    case TILEC_DT_I32: return (rng){INT32_MIN, INT32_MAX, 1};
    case TILEC_DT_U8: return (rng){0, UINT8_MAX, 1};
    case TILEC_DT_U16: return (rng){0, UINT16_MAX, 1};
    case TILEC_DT_U32: return (rng){0, UINT32_MAX, 1};
    default: return (rng){INT64_MIN, INT64_MAX, 1};
    }
}

static int in_list(const namelist *l, const char *name) { return lower_in_list(l->v, l->n, name); }

static void add_name(lw *L, namelist *l, const char *name)
{
    const char **v = ar_array(&L->ar, (size_t)l->n + 1, sizeof *v);
    if (!v) {
        L->failed = 1;
        return;
    }
    if (l->n)
        memcpy(v, l->v, (size_t)l->n * sizeof *v);
    v[l->n++] = name;
    l->v = v;
}

static uint32_t slot(const struct lower_ix *X, const tilec_expr *e)
{
    uint32_t h = (uint32_t)(((uintptr_t)e >> 4) * 2654435761u);
    for (uint32_t i = h & (X->cap - 1);; i = (i + 1) & (X->cap - 1))
        if (!X->keys[i] || X->keys[i] == e)
            return i;
}

static void mark(lw *L, const tilec_expr *e, const tilec_type *t)
{
    struct lower_ix *X = L->ix;
    if (X->nomark)
        return;
    if (2 * (X->n + 1) > X->cap) {
        struct lower_ix old = *X;
        X->cap = X->cap ? X->cap * 2 : 64;
        X->keys = ar_array(&L->ar, X->cap, sizeof *X->keys);
        X->types = ar_array(&L->ar, X->cap, sizeof *X->types);
        if (!X->keys || !X->types) {
            *X = old;
            L->failed = 1;
            return;
        }
        memset(X->keys, 0, X->cap * sizeof *X->keys);
        X->n = 0;
        for (uint32_t i = 0; i < old.cap; i++)
            if (old.keys[i])
                mark(L, old.keys[i], &old.types[i]);
    }
    uint32_t i = slot(X, e);
    if (!X->keys[i])
        X->n++;
    X->keys[i] = e;
    X->types[i] = *t;
    X->types[i].dtype = TILEC_DT_I64;
    X->types[i].weak = 0;
}

const tilec_type *lower_ix_type(const lw *L, const tilec_expr *e)
{
    const struct lower_ix *X = L->ix;
    if (!X || !X->n)
        return NULL;
    uint32_t i = slot(X, e);
    return X->keys[i] ? &X->types[i] : NULL;
}

static const tilec_type *raw_ty(const lw *L, const tilec_expr *e)
{
    return L->variant >= 0 && e->vtypes ? &e->vtypes[L->variant] : &e->type;
}

/* ---- interval arithmetic ---- */

static rng r_add(rng a, rng b, int sub)
{
    if (sub)
        return (rng){sat((__int128)a.lo - b.hi), sat((__int128)a.hi - b.lo), a.data | b.data};
    return (rng){sat((__int128)a.lo + b.lo), sat((__int128)a.hi + b.hi), a.data | b.data};
}

static rng r_mul(rng a, rng b)
{
    __int128 c[4] = {(__int128)a.lo * b.lo, (__int128)a.lo * b.hi, (__int128)a.hi * b.lo, (__int128)a.hi * b.hi};
    __int128 lo = c[0], hi = c[0];
    for (int i = 1; i < 4; i++) {
        lo = c[i] < lo ? c[i] : lo;
        hi = c[i] > hi ? c[i] : hi;
    }
    return (rng){sat(lo), sat(hi), a.data | b.data};
}

static int64_t mag(rng a) { return max64(a.hi, a.lo == INT64_MIN ? INT64_MAX : -a.lo); }

/* a / b and cdiv(a, b): by a positive divisor, monotone in a; otherwise
 * never larger in magnitude than a (plus 1 for cdiv) */
static rng r_div(rng a, rng b, int up)
{
    if (b.lo > 0) {
        int64_t lo = min64(a.lo / b.lo, a.lo / b.hi) - up, hi = max64(a.hi / b.lo, a.hi / b.hi) + up;
        return (rng){lo, hi, a.data | b.data};
    }
    int64_t m = sat((__int128)mag(a) + up);
    rng r = {a.lo >= 0 && b.lo > 0 ? 0 : -m, m, a.data | b.data};
    return r;
}

static rng r_mod(rng a, rng b)
{
    int64_t m = min64(mag(a), b.lo > 0 ? b.hi - 1 : mag(b));
    return (rng){a.lo >= 0 ? 0 : -m, a.hi <= 0 ? 0 : m, a.data | b.data};
}

static rng r_binary(tilec_op op, rng a, rng b)
{
    int data = a.data | b.data;
    switch (op) {
    case TILEC_OP_ADD: return r_add(a, b, 0);
    case TILEC_OP_SUB: return r_add(a, b, 1);
    case TILEC_OP_MUL: return r_mul(a, b);
    case TILEC_OP_DIV: return r_div(a, b, 0);
    case TILEC_OP_MOD: return r_mod(a, b);
    case TILEC_OP_SHL:
        if (b.lo >= 0 && b.hi <= 62)
            return r_mul(a, (rng){INT64_C(1) << b.lo, INT64_C(1) << b.hi, data});
        return (rng){INT64_MIN, INT64_MAX, data};
    case TILEC_OP_SHR: return (rng){min64(a.lo, 0), max64(a.hi, 0), data};
    case TILEC_OP_AND:
        if (a.lo >= 0 || b.lo >= 0)
            return (rng){0, a.lo >= 0 && b.lo >= 0 ? min64(a.hi, b.hi) : a.lo >= 0 ? a.hi : b.hi, data};
        __attribute__((fallthrough));
    default: /* | ^ &: within the wider operand's bits */
        if (fits32(a) && fits32(b))
            return (rng){a.lo >= 0 && b.lo >= 0 ? 0 : INT32_MIN, INT32_MAX, data};
        return (rng){INT64_MIN, INT64_MAX, data};
    }
}

/* ---- the walk ---- */

static ixname *find(lw *L, const char *name)
{
    struct lower_ix *X = L->ix;
    for (int i = X->nsc - 1; i >= 0; i--)
        if (!strcmp(X->sc[i].name, name))
            return &X->sc[i];
    return NULL;
}

static void push(lw *L, const char *name, rng r, int wide)
{
    struct lower_ix *X = L->ix;
    if (X->nsc == X->capsc) {
        int cap = X->capsc ? 2 * X->capsc : 32;
        ixname *v = ar_array(&L->ar, (size_t)cap, sizeof *v);
        if (!v) {
            L->failed = 1;
            return;
        }
        if (X->nsc)
            memcpy(v, X->sc, (size_t)X->nsc * sizeof *v);
        X->sc = v;
        X->capsc = cap;
    }
    X->sc[X->nsc++] = (ixname){name, r, wide};
}

static rng visit(lw *L, const tilec_expr *e, int inptr, int *w);

static rng r_name(lw *L, const tilec_expr *e, int inptr, int *w)
{
    struct lower_ix *X = L->ix;
    ixname *n = find(L, e->name);
    if (n) {
        if (inptr && !in_list(&X->ptr_names, e->name)) {
            add_name(L, &X->ptr_names, e->name);
            X->changed = 1;
        }
        *w = n->wide;
        return n->r;
    }
    int64_t h;
    if (lower_hint_value(L, e->name, &h))
        return (rng){h, h, 0};
    return of_dtype(raw_ty(L, e)->dtype);
}

static rng r_hull(rng a, rng b) { return (rng){min64(a.lo, b.lo), max64(a.hi, b.hi), a.data | b.data}; }

/* |a| */
static rng r_abs(rng a)
{
    if (a.lo >= 0)
        return a;
    rng n = {sat(-(__int128)a.hi), sat(-(__int128)a.lo), a.data};
    return a.hi <= 0 ? n : (rng){0, max64(a.hi, n.hi), a.data};
}

/* Whether an i32 expression of interval r is computed in 64 bits: an
 * operand is, or its value can leave i32 and it is index arithmetic (not
 * data) or part of an offset. */
static int wants64(const tilec_type *t, rng r, int inptr, int anyw)
{
    return t->kind == TILEC_TY_VALUE && !t->ptr && t->dtype == TILEC_DT_I32 &&
           (anyw || ((!r.data || inptr) && !fits32(r)));
}

/* The combine of scan(x, axis, init, a, b, combine) over a and b in ra and
 * rb (wide: they are 64-bit), in scope for it alone; *w: it is 64-bit. */
static rng r_combine(lw *L, const tilec_expr *e, rng ra, rng rb, int wide, int *w)
{
    struct lower_ix *X = L->ix;
    int nsc = X->nsc;
    push(L, e->args[3]->name, ra, wide);
    push(L, e->args[4]->name, rb, wide);
    rng r = visit(L, e->args[5], 0, w);
    X->nsc = nsc;
    return r;
}

typedef enum { F_SUM, F_PROD, F_HULL, F_USER } foldop;

/* Every value a fold of 1 .. n elements of `a` can take under op (a
 * reduction or a scan over n elements): n times a for a sum, a for
 * max/min, and by doubling for a product or a user's combine (which is
 * associative: a fold of up to 2m elements combines two folds of up to m),
 * up to where the interval stops growing. */
static rng r_fold(lw *L, const tilec_expr *e, foldop op, rng a, int64_t n)
{
    if (op == F_HULL || n <= 1)
        return a;
    if (op == F_SUM)
        return (rng){min64(a.lo, sat((__int128)a.lo * n)), max64(a.hi, sat((__int128)a.hi * n)), a.data};
    struct lower_ix *X = L->ix;
    int nomark = X->nomark, w = 0;
    X->nomark = 1;
    rng r = a;
    for (int64_t m = 1; m < n && !L->failed; m *= 2) {
        rng c = op == F_PROD ? r_mul(r, r) : r_combine(L, e, r, r, 0, &w);
        rng h = r_hull(r, c);
        if (h.lo == r.lo && h.hi == r.hi && h.data == r.data)
            break;
        r = h;
        if (r.lo == INT64_MIN && r.hi == INT64_MAX)
            break;
    }
    X->nomark = nomark;
    return r;
}

/* sum/max/min/argmax/argmin(x, axis) and the scans: the interval of n
 * elements of x folded by the op, with the exclusive scan's first value. */
static rng r_reduce(lw *L, const tilec_expr *e, const tilec_type *t, int inptr, int *anyw)
{
    const tilec_type *xt = raw_ty(L, e->args[0]);
    int arg = e->builtin == BI_ARGMAX || e->builtin == BI_ARGMIN, user = e->builtin == BI_SCAN, w = 0;
    rng x = visit(L, e->args[0], arg ? 0 : inptr, anyw);
    int64_t len = xt->rank ? xt->dims[lower_axis(L, e, 1, xt->rank)] : 1;
    if (arg) { /* an index along the axis, computed as int */
        *anyw = 0;
        return (rng){0, max64(len - 1, 0), 1};
    }
    foldop op = e->builtin == BI_SUM || e->builtin == BI_CUMSUM ? F_SUM
                : e->builtin == BI_CUMPROD || e->builtin == BI_PROD ? F_PROD
                : user                                   ? F_USER
                                                         : F_HULL;
    rng first = {0, 0, 0}; /* the exclusive scan's first value */
    uint32_t flags = user ? 6 : 2;
    int excl = e->nargs > flags && e->args[flags]->kind == TILEC_EX_BOOL && e->args[flags]->ival;
    if (user) {
        first = visit(L, e->args[2], 0, &w);
        x = r_hull(x, first); /* the init may be folded in */
        *anyw |= w;
    } else if (e->builtin == BI_CUMPROD) {
        first = (rng){1, 1, 0};
    } else if (e->builtin == BI_CUMMAX || e->builtin == BI_CUMMIN) {
        rng d = of_dtype(t->dtype);
        first = (rng){e->builtin == BI_CUMMAX ? d.lo : d.hi, e->builtin == BI_CUMMAX ? d.lo : d.hi, 0};
    }
    rng r = r_fold(L, e, op, x, user ? len + 1 : len);
    if (excl || user)
        r = r_hull(r, first);
    if (user) { /* the combine is 64-bit when the scan is, and then the scan */
        int wide = wants64(t, r, inptr, *anyw);
        r_combine(L, e, r, r, wide, &w);
        if (w && !wide)
            r_combine(L, e, r, r, 1, &w);
        *anyw |= w;
    }
    return r;
}

static rng r_call(lw *L, const tilec_expr *e, int inptr, int *anyw)
{
    const char *n = e->name;
    const tilec_type *t = raw_ty(L, e);
    int w[3] = {0, 0, 0};
    if (e->builtin == BI_PID || e->builtin == BI_NUM_PROGRAMS) {
        rng g = L->ix->grid[lower_axis(L, e, 0, 3)];
        return e->builtin == BI_PID ? (rng){0, g.hi - 1, 0} : g;
    }
    if (e->builtin == BI_RANGE)
        return (rng){0, t->dims[0] - 1, 0};
    if (e->builtin == BI_LEN) /* a launch's tensors of a list: at most its table's */
        return (rng){0, lower_list_cap(L->k), 0};
    if (e->builtin == BI_NUMEL) {
        visit(L, e->args[1], 0, &w[0]);
        return (rng){0, INT64_MAX, 0};
    }
    if (e->builtin == BI_ZEROS)
        return (rng){0, 0, 0};
    if (e->builtin == BI_FULL)
        return visit(L, e->args[1], inptr, anyw);
    if (e->builtin == BI_WHERE || e->builtin == BI_MAXIMUM || e->builtin == BI_MINIMUM || e->builtin == BI_CDIV ||
        e->builtin == BI_TRANS) {
        int k = n[0] == 'w';
        if (k)
            visit(L, e->args[0], 0, &w[0]);
        rng a = visit(L, e->args[k], inptr, &w[1]);
        *anyw = w[1];
        if (e->nargs == (uint32_t)k + 1)
            return a;
        rng b = visit(L, e->args[k + 1], inptr, &w[2]);
        *anyw |= w[2];
        if (n[0] == 'c')
            return r_div(a, b, 1);
        if (e->builtin == BI_MAXIMUM)
            return (rng){max64(a.lo, b.lo), max64(a.hi, b.hi), a.data | b.data};
        if (e->builtin == BI_MINIMUM)
            return (rng){min64(a.lo, b.lo), min64(a.hi, b.hi), a.data | b.data};
        return r_hull(a, b);
    }
    if (e->builtin == BI_RESHAPE) /* the same elements: its operand's interval, in its operand's place */
        return visit(L, e->args[0], inptr, anyw);
    if (e->builtin == BI_CAST) { /* an explicit conversion cuts: never widened */
        rng a = visit(L, e->args[0], inptr, &w[0]);
        const tilec_type *at = raw_ty(L, e->args[0]);
        if (tilec_dtype_class(at->dtype) == 'f')
            return of_dtype(t->dtype);
        rng d = of_dtype(t->dtype);
        return a.lo >= d.lo && a.hi <= d.hi ? a : d;
    }
    if (e->builtin == BI_ABS)
        return r_abs(visit(L, e->args[0], inptr, anyw));
    if (lower_is_reduce(e) || lower_is_scan(e)) /* the lowering's own lists: a new reduction is seen here too */
        return r_reduce(L, e, t, inptr, anyw);
    for (uint32_t i = 0; i < e->nargs; i++) {
        int wi = 0;
        visit(L, e->args[i], 0, &wi);
        *anyw |= wi;
    }
    /* loads and atomics: a value of the tensor's type, from memory; dot and
     * math: floats */
    if (e->builtin == BI_LOAD || e->builtin == BI_ATOMIC_ADD || tilec_dtype_class(t->dtype) == 'f') {
        *anyw = 0;
        return of_dtype(t->dtype);
    }
    return FULL64; /* a call not modelled here: any value, 64-bit */
}

/* The interval of e; *w: e is computed in 64 bits. */
static rng visit(lw *L, const tilec_expr *e, int inptr, int *w)
{
    *w = 0;
    const tilec_type *t = raw_ty(L, e);
    int anyw = 0, wa = 0, wb = 0;
    rng r = FULL64;
    switch (e->kind) {
    case TILEC_EX_INT: return (rng){e->ival, e->ival, 0};
    case TILEC_EX_NAME:
        r = r_name(L, e, inptr, w);
        if (*w)
            mark(L, e, t);
        return r;
    case TILEC_EX_UNARY: {
        rng a = visit(L, e->args[0], inptr, &anyw);
        if (e->op == TILEC_OP_NEG)
            r = (rng){sat(-(__int128)a.hi), sat(-(__int128)a.lo), a.data};
        else if (e->op == TILEC_OP_BITNOT)
            r = (rng){sat(-(__int128)a.hi - 1), sat(-(__int128)a.lo - 1), a.data};
        else
            r = (rng){0, 1, a.data};
        break;
    }
    case TILEC_EX_BINARY: {
        int p0 = raw_ty(L, e->args[0])->ptr, p1 = raw_ty(L, e->args[1])->ptr;
        if (t->ptr || t->dtype == TILEC_DT_BOOL) { /* a pointer offset, or a comparison */
            visit(L, e->args[0], t->ptr ? inptr || !p0 : 0, &wa);
            visit(L, e->args[1], t->ptr ? inptr || !p1 : 0, &wb);
            return t->ptr ? FULL64 : (rng){0, 1, 0};
        }
        rng a = visit(L, e->args[0], inptr, &wa), b = visit(L, e->args[1], inptr, &wb);
        anyw = wa | wb;
        r = r_binary(e->op, a, b);
        break;
    }
    case TILEC_EX_INDEX:
        if (raw_ty(L, e->args[0])->list) { /* p[i]: an address from a tensor list's table */
            visit(L, e->args[1], 0, &anyw);
            return FULL64;
        }
        r = visit(L, e->args[0], inptr, &anyw);
        break;
    case TILEC_EX_CALL:
        r = r_call(L, e, inptr, &anyw);
        if (e->builtin == BI_CAST)
            return r;
        break;
    default: return of_dtype(t->dtype);
    }
    if (wants64(t, r, inptr, anyw)) {
        *w = 1;
        mark(L, e, t);
    }
    return r;
}

static void note_line(lw *L, uint32_t line)
{
    struct lower_ix *X = L->ix;
    for (int i = 0; i < X->nlines; i++)
        if (X->lines[i] == line)
            return;
    if (X->nlines < (int)(sizeof X->lines / sizeof X->lines[0]))
        X->lines[X->nlines++] = line;
}

static void visit_block(lw *L, const tilec_block *b);

/* A value whose lowering reads it from memory in its own type (or, for
 * argmax/argmin, computes an int index): never widened in place. */
static int from_memory(const tilec_expr *e)
{
    return tilec_is_builtin(e, BI_LOAD) || tilec_is_builtin(e, BI_ATOMIC_ADD) || tilec_is_builtin(e, BI_ARGMAX) ||
           tilec_is_builtin(e, BI_ARGMIN);
}

int lower_ix_wide_name(const lw *L, const char *name)
{
    return L->ix && in_list(&L->ix->wide_assigned, name);
}

/* A value bound or assigned to `name`: forced to 64 bits when any value of
 * the name is; returns whether it is. */
static int bind_value(lw *L, const tilec_stmt *s, const char *name, rng *r)
{
    struct lower_ix *X = L->ix;
    int w = 0, before = X->n;
    *r = visit(L, s->value, in_list(&X->ptr_names, name), &w);
    if (in_list(&X->wide_assigned, name)) {
        /* a value read from memory stays as it is read; the let converts
         * it into the 64-bit variable (stmt.c, lower_ix_wide_name) */
        const tilec_type *t = raw_ty(L, s->value);
        if (!t->ptr && t->dtype == TILEC_DT_I32 && !from_memory(s->value))
            mark(L, s->value, t);
        *r = FULL64;
        w = 1;
    } else if (w && s->kind == TILEC_ST_ASSIGN) {
        add_name(L, &X->wide_assigned, name);
        X->changed = 1;
    } else if (lower_in_list(L->assigned, L->nassigned, name)) {
        /* any value of its type, whatever the iterations assign */
        rng d = of_dtype(raw_ty(L, s->value)->dtype);
        r->lo = min64(r->lo, d.lo);
        r->hi = max64(r->hi, d.hi);
    }
    if ((uint32_t)before != X->n || w)
        note_line(L, s->loc.line);
    return w;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* A constant every value of the i32 expression e is a multiple of (0: e is
 * 0; 1: nothing known): literals and hints, products, sums and differences,
 * negation and shifts by a constant. pid(0) * BLOCK is a multiple of BLOCK. */
static int64_t multiple_of(lw *L, const tilec_expr *e)
{
    int64_t h, a, b;
    switch (e->kind) {
    case TILEC_EX_INT: return e->ival < 0 ? (e->ival == INT64_MIN ? 1 : -e->ival) : e->ival;
    case TILEC_EX_NAME:
        if (!find(L, e->name) && lower_hint_value(L, e->name, &h) && h > INT64_MIN)
            return h < 0 ? -h : h;
        return 1;
    case TILEC_EX_UNARY: return e->op == TILEC_OP_NEG ? multiple_of(L, e->args[0]) : 1;
    case TILEC_EX_BINARY:
        a = multiple_of(L, e->args[0]);
        b = multiple_of(L, e->args[1]);
        switch (e->op) {
        case TILEC_OP_ADD: case TILEC_OP_SUB: return gcd64(a, b);
        case TILEC_OP_MUL: return (__int128)a * b > INT32_MAX ? 1 : a * b; /* beyond i32 it tells nothing */
        case TILEC_OP_SHL:
            return e->args[1]->kind == TILEC_EX_INT && e->args[1]->ival >= 0 && e->args[1]->ival < 31 &&
                           ((__int128)a << e->args[1]->ival) <= INT32_MAX
                       ? a << e->args[1]->ival
                       : 1;
        default: return 1;
        }
    default: return 1;
    }
}

static int64_t floor_div(int64_t a, int64_t g) { return a / g - (a % g != 0 && a < 0); }

/* The values of a loop variable: lo .. hi - 1, and with a constant start
 * and step only the values start + k * step; with a start and a step that
 * are multiples of g (pid(0) * BLOCK .. n step num_programs(0) * BLOCK: of
 * BLOCK), only multiples of g: the last below hi is at most
 * floor((hi - 1) / g) * g, so o + range(BLOCK) stays below hi rounded up
 * to g (2^31 - 1 at most for a power-of-two BLOCK, an i32 hi). */
static rng loop_range(rng lo, rng hi, rng step, int64_t g)
{
    int64_t top = sat((__int128)hi.hi - 1);
    rng r = {lo.lo, max64(lo.hi, top), 0};
    if (g > 1 && r.hi < INT64_MAX && r.lo > INT64_MIN) {
        rng m = {-floor_div(-r.lo, g) * g, floor_div(r.hi, g) * g, 0};
        if (m.lo <= m.hi)
            r = m;
    }
    if (lo.lo != lo.hi || top < lo.lo || step.lo != step.hi || step.lo <= 0)
        return r;
    r.hi = min64(r.hi, lo.lo + (int64_t)(((__int128)top - lo.lo) / step.lo * step.lo));
    return r;
}

/* A loop `for v in lo .. hi step st` advances v by st after its last
 * trip, from at most hi - 1: v + st must still be a value of v's type, or
 * v wraps, still passes v < hi, and the body runs at a negative index.
 * Proven safe when hi.hi - 1 + st.hi fits and st > 0; the lowering emits
 * a header that cannot wrap for every other loop (lower_loop_next). */
static void note_safe_loop(lw *L, const tilec_stmt *s, rng hi, rng st)
{
    struct lower_ix *X = L->ix;
    if (X->nomark || st.lo <= 0)
        return;
    __int128 last = (__int128)hi.hi - 1 + st.hi;
    if (last > INT64_MAX)
        return;
    void *loop = (void *)s; /* ar_vec holds void *: compared, never written through */
    if (ar_vec_push(&L->ar, &X->safe, loop) || (last <= INT32_MAX && ar_vec_push(&L->ar, &X->safe32, loop)))
        L->failed = 1;
}

static int has_loop(const ar_vec *v, const tilec_stmt *s)
{
    for (uint32_t i = 0; i < v->n; i++)
        if (v->v[i] == (const void *)s)
            return 1;
    return 0;
}

int lower_ix_loop_safe(const lw *L, const tilec_stmt *s, int wide)
{
    const struct lower_ix *X = L->ix;
    return X && has_loop(wide ? &X->safe : &X->safe32, s);
}

static void visit_stmt(lw *L, const tilec_stmt *s)
{
    struct lower_ix *X = L->ix;
    uint32_t before = X->n;
    int w[3] = {0, 0, 0};
    rng r;
    switch (s->kind) {
    case TILEC_ST_LET:
        w[0] = bind_value(L, s, s->names[0], &r);
        if (w[0] && !in_list(&X->shown, s->names[0]))
            add_name(L, &X->shown, s->names[0]);
        push(L, s->names[0], r, w[0]);
        return;
    case TILEC_ST_ASSIGN: bind_value(L, s, s->names[0], &r); return;
    case TILEC_ST_EXPR: visit(L, s->value, 0, &w[0]); break;
    case TILEC_ST_FOR: {
        rng lo = visit(L, s->lo, 0, &w[0]), hi = visit(L, s->hi, 0, &w[1]), st = {1, 1, 0};
        if (s->step)
            st = visit(L, s->step, 0, &w[2]);
        if (X->n != before)
            note_line(L, s->loc.line);
        int wide = w[0] | w[1];
        if (wide && !in_list(&X->shown, s->names[0]))
            add_name(L, &X->shown, s->names[0]);
        int nsc = X->nsc;
        int64_t g = gcd64(multiple_of(L, s->lo), s->step ? multiple_of(L, s->step) : 1);
        push(L, s->names[0], loop_range(lo, hi, st, g), wide);
        note_safe_loop(L, s, hi, st);
        visit_block(L, &s->body);
        X->nsc = nsc;
        return;
    }
    case TILEC_ST_IF: {
        visit(L, s->value, 0, &w[0]);
        if (X->n != before)
            note_line(L, s->loc.line);
        int nsc = X->nsc;
        visit_block(L, &s->body);
        X->nsc = nsc;
        visit_block(L, &s->orelse);
        X->nsc = nsc;
        return;
    }
    default: return;
    }
    if (X->n != before)
        note_line(L, s->loc.line);
}

static void visit_block(lw *L, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts && !L->failed; i++)
        visit_stmt(L, b->stmts[i]);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The comment that says which width each index value got. */
static void ix_comment(lw *L)
{
    struct lower_ix *X = L->ix;
    if (!X->n) {
        lower_line(L, "/* indexing: 32-bit, every index value is proven to fit */");
        return;
    }
    strbuf b;
    sb_init(&b);
    for (int i = 0; i < X->shown.n; i++)
        sb_printf(&b, "%s%s", i ? ", " : " for ", X->shown.v[i]);
    qsort(X->lines, (size_t)X->nlines, sizeof X->lines[0], cmp_u32);
    sb_puts(&b, X->nlines > 1 ? " (lines" : " (line");
    for (int i = 0; i < X->nlines; i++)
        sb_printf(&b, "%s %u", i ? "," : "", X->lines[i]);
    lower_line(L, "/* indexing: 64-bit%s), where a value may pass 2^31 - 1; 32-bit elsewhere, proven to fit */",
               sb_str(&b));
    L->failed |= b.failed;
    sb_free(&b);
}

void lower_index_widths(lw *L)
{
    struct lower_ix *X = ar_alloc(&L->ar, sizeof *X);
    if (!X) {
        L->failed = 1;
        return;
    }
    memset(X, 0, sizeof *X);
    L->ix = X;
    /* again while a name turns out 64-bit or used in an offset: each pass
     * only adds names, so this ends */
    do {
        X->changed = 0;
        X->nsc = 0;
        X->shown.n = 0;
        X->nlines = 0;
        X->safe.n = X->safe32.n = 0;
        if (X->cap)
            memset(X->keys, 0, X->cap * sizeof *X->keys);
        X->n = 0;
        for (uint32_t i = 0; i < L->k->nparams; i++) {
            const tilec_param *p = &L->k->params[i];
            rng r = p->type.kind == TILEC_TE_POINTER || p->type.kind == TILEC_TE_LIST ? FULL64 : of_dtype(p->type.dtype);
            r.data = 0; /* sizes, not data */
            push(L, p->name, r, 0);
        }
        /* pid(a) < the grid along a: what the grid can give bounds it */
        X->nomark = 1;
        for (int a = 0; a < 3; a++) {
            rng top = {1, a == 0 ? INT32_MAX : 65535, 0};
            int w = 0;
            rng g = (uint32_t)a < L->k->ngrid ? visit(L, L->k->grid[a], 0, &w) : (rng){1, 1, 0};
            X->grid[a] = (rng){max64(g.lo, top.lo), min64(max64(g.hi, 1), top.hi), 0};
        }
        X->nomark = 0;
        visit_block(L, &L->k->body);
    } while (X->changed && !L->failed);
    ix_comment(L);
}
