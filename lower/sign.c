/* sign.c: which `exp` calls have an argument known to be <= 0, from what
 * the expression means (lower_sign_scan), so that they lower to the
 * special-function unit's ex2.approx of x * log2(e) instead of expf.
 *
 * The scan walks the kernel once, before its statements are lowered, and
 * gives every value a symbolic form: a `let` or an assignment stands for
 * its value's form, a name assigned inside a loop or an `if` is a fresh
 * unknown at the body's start and after the statement (a loop-carried
 * value), a parameter or hint is an unknown of its own. Two forms are the
 * same value when they are the same node, or the same pure operation of the
 * same values (a load never equals another load). An argument is <= 0
 * (or NaN, which both lowerings propagate) by these rules:
 *
 *   a - b           where a <= b is known (below);
 *   x * c, c * x    x <= 0 and c a positive constant (a literal, or a
 *                   product or quotient of positive literals);
 *   where(k, x, y)  both x and y; maximum(x, y) both; minimum(x, y) either;
 *   x + y           both; a reduction, a cast to a float or an index of x: x;
 *   a constant <= 0, -inf.
 *
 * and a <= b (elementwise, b broadcast back along an axis or not):
 *
 *   a and b the same value; a -inf;
 *   b = maximum(p, q) with a <= p or a <= q;
 *   b = max(t, ax)[.., None at ax, ..] with a <= t (a row max broadcast back
 *   along the axis it folded), or b = max(t, 0) of a 1-D t (a scalar);
 *   a = where(k, p, q) with p <= b and q <= b; a = maximum(p, q) with both,
 *   minimum with either;
 *   a = x * c, b = y * c with x <= y and c a positive constant.
 *
 * Every value a rule reads is a float (an integer difference or product
 * may wrap). Float rounding keeps each rule: subtraction and multiplication by c >= 0
 * are monotone and map 0 to 0, a max is exact. The result lists each
 * exp call of the kernel with what was decided and why (the remark). */
#include <string.h>

#include "lower/lower_internal.h"
#include "parser/builtins.h"

typedef struct sv {
    const tilec_expr *e; /* the node it stands for (kind, op, builtin, literal); NULL: an unknown */
    struct sv **a;
    uint32_t n;
    const char *name; /* an unknown: the name and its version */
    unsigned ver;
    const tilec_expr *te; /* a node of its type: e, or for an unknown a use or a value of it */
} sv;

typedef struct {
    const char *name;
    sv *v;
} sbind;

enum { SIGN_DEPTH = 48 };    /* deepest rule recursion (small trees: no proof needs more) */
enum { SIGN_STEPS = 4096 };  /* rule applications an exp call at most (the rules branch: a bound on the time) */
enum { R_MAXIMUM = 1, R_REDUCE = 2, R_WHERE = 4, R_SCALE = 8, R_POSMUL = 16, R_SAME = 32, R_NEGINF = 64 };

typedef struct {
    lw *L;
    sbind *env;
    uint32_t n, cap;
    unsigned ver;
    int steps;   /* rule applications left for this exp call */
    int dotloop; /* inside a loop whose body holds a dot */
} sscan;

static sv *mk(sscan *s, const tilec_expr *e, uint32_t n)
{
    sv *v = ar_alloc(&s->L->ar, sizeof *v);
    sv **a = n ? ar_alloc(&s->L->ar, n * sizeof *a) : NULL;
    if (!v || (n && !a)) {
        s->L->failed = 1;
        return NULL;
    }
    memset(v, 0, sizeof *v);
    v->e = e;
    v->te = e;
    v->a = a;
    v->n = n;
    return v;
}

static sv *unknown(sscan *s, const char *name, const tilec_expr *te)
{
    sv *v = mk(s, NULL, 0);
    if (v) {
        v->te = te;
        v->name = name;
        v->ver = ++s->ver;
    }
    return v;
}

static void bind(sscan *s, const char *name, sv *v)
{
    if (!v)
        return;
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 64;
        sbind *e = ar_alloc(&s->L->ar, cap * sizeof *e);
        if (!e) {
            s->L->failed = 1;
            return;
        }
        if (s->n)
            memcpy(e, s->env, s->n * sizeof *e);
        s->env = e;
        s->cap = cap;
    }
    s->env[s->n++] = (sbind){name, v};
}

static sv *sym(sscan *s, const tilec_expr *e)
{
    if (!e)
        return NULL;
    if (e->kind == TILEC_EX_NAME) {
        for (uint32_t i = s->n; i-- > 0;)
            if (!strcmp(s->env[i].name, e->name))
                return s->env[i].v;
        sv *u = unknown(s, e->name, e); /* a parameter or a hint: the same unknown at every use */
        bind(s, e->name, u);
        return u;
    }
    sv *v = mk(s, e, e->nargs);
    for (uint32_t i = 0; v && i < e->nargs; i++)
        if (!(v->a[i] = sym(s, e->args[i])))
            return NULL;
    return v;
}

static int is_lit(const sv *v, double *x)
{
    if (!v || !v->e)
        return 0;
    if (v->e->kind == TILEC_EX_INT)
        *x = (double)v->e->ival;
    else if (v->e->kind == TILEC_EX_FLOAT)
        *x = v->e->fval;
    else
        return 0;
    return 1;
}

static int is_neg_inf(const sv *v)
{
    return v && v->e && v->e->kind == TILEC_EX_UNARY && v->e->op == TILEC_OP_NEG && v->a[0]->e &&
           v->a[0]->e->kind == TILEC_EX_INF;
}

static int is_call(const sv *v, tilec_builtin b) { return v && v->e && tilec_is_builtin(v->e, b); }

static int is_bin(const sv *v, tilec_op op) { return v && v->e && v->e->kind == TILEC_EX_BINARY && v->e->op == op; }

/* A positive constant: a literal > 0, or a product or quotient of them. */
static int positive(const sv *v)
{
    double x;
    if (is_lit(v, &x))
        return x > 0;
    return (is_bin(v, TILEC_OP_MUL) || is_bin(v, TILEC_OP_DIV)) && positive(v->a[0]) && positive(v->a[1]);
}

/* The same value: the same node, or the same pure operation of the same values. */
static int same(const sv *a, const sv *b, int d)
{
    if (a == b)
        return 1;
    if (!a || !b || !a->e || !b->e || d > SIGN_DEPTH)
        return 0;
    const tilec_expr *x = a->e, *y = b->e;
    if (x->kind != y->kind || x->op != y->op || x->builtin != y->builtin || a->n != b->n ||
        x->type.dtype != y->type.dtype)
        return 0;
    switch (x->kind) {
    case TILEC_EX_INT:
    case TILEC_EX_BOOL: return x->ival == y->ival;
    case TILEC_EX_FLOAT: return x->fval == y->fval;
    case TILEC_EX_DTYPE: return x->dtype == y->dtype;
    case TILEC_EX_SLICE: if (x->ival != y->ival) return 0; break;
    case TILEC_EX_CALL:
        if (x->builtin == BI_NONE || tilec_is_builtin_kind(x, BK_MEMORY)) /* a load reads memory as it is then */
            return 0;
        break;
    default: break;
    }
    for (uint32_t i = 0; i < a->n; i++)
        if (!same(a->a[i], b->a[i], d + 1))
            return 0;
    return 1;
}

/* b = t[...] that adds one axis (one None, every other index a whole `:`): that axis, else -1. */
static int bcast_axis(const sv *b)
{
    if (!b || !b->e || b->e->kind != TILEC_EX_INDEX)
        return -1;
    int ax = -1;
    for (uint32_t i = 1; i < b->n; i++) {
        const tilec_expr *x = b->a[i]->e;
        if (x && x->kind == TILEC_EX_NONE && ax < 0)
            ax = (int)i - 1;
        else if (!x || x->kind != TILEC_EX_SLICE || x->nargs || x->ival)
            return -1;
    }
    return ax;
}

static int rank(sscan *s, const sv *v) { return v->e ? lower_ty(s->L, v->e)->rank : -1; }

/* The axis a reduction folds, or -1. */
static int red_axis(sscan *s, const sv *r)
{
    int64_t a;
    const tilec_type *t = lower_ty(s->L, r->e->args[0]);
    if (r->e->nargs != 2 || lower_const_int(s->L, r->e->args[1], &a) || (a < 0 && (a += t->rank) < 0) || a >= t->rank)
        return -1;
    return (int)a;
}

/* A float value (integers wrap: their differences, sums and products are not monotone). */
static int is_float(sscan *s, const sv *v) { return v && v->te && tilec_dtype_class(lower_ty(s->L, v->te)->dtype) == 'f'; }

/* a <= b elementwise (or a NaN on either side), b read broadcast along axis bax (-1: as it is). */
static int le(sscan *s, const sv *a, const sv *b, int bax, int d, unsigned *why)
{
    if (!is_float(s, a) || !is_float(s, b) || d > SIGN_DEPTH || --s->steps < 0)
        return 0;
    if (is_neg_inf(a))
        return *why |= R_NEGINF, 1;
    if (bax < 0 && same(a, b, 0))
        return *why |= R_SAME, 1;
    int k;
    if (bax < 0 && (k = bcast_axis(b)) >= 0 && le(s, a, b->a[0], k, d + 1, why))
        return 1;
    if (is_call(b, BI_MAXIMUM) && (le(s, a, b->a[0], bax, d + 1, why) || le(s, a, b->a[1], bax, d + 1, why)))
        return *why |= R_MAXIMUM, 1;
    if (is_call(b, BI_MAX) && rank(s, a) == rank(s, b->a[0]) &&
        ((bax >= 0 && red_axis(s, b) == bax) || (bax < 0 && rank(s, b) == 0)) && le(s, a, b->a[0], -1, d + 1, why))
        return *why |= R_REDUCE, 1;
    if (is_call(a, BI_WHERE) && le(s, a->a[1], b, bax, d + 1, why) && le(s, a->a[2], b, bax, d + 1, why))
        return *why |= R_WHERE, 1;
    if (is_call(a, BI_MAXIMUM) && le(s, a->a[0], b, bax, d + 1, why) && le(s, a->a[1], b, bax, d + 1, why))
        return 1;
    if (is_call(a, BI_MINIMUM) && (le(s, a->a[0], b, bax, d + 1, why) || le(s, a->a[1], b, bax, d + 1, why)))
        return 1;
    if (is_bin(a, TILEC_OP_MUL) && is_bin(b, TILEC_OP_MUL))
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                if (positive(a->a[1 - i]) && same(a->a[1 - i], b->a[1 - j], 0) && le(s, a->a[i], b->a[j], bax, d + 1, why))
                    return *why |= R_SCALE, 1;
    return 0;
}

/* x <= 0 (or NaN) */
static int nonpos(sscan *s, const sv *x, int d, unsigned *why)
{
    double c;
    if (!is_float(s, x) || !x->e || d > SIGN_DEPTH || --s->steps < 0)
        return 0;
    if (is_lit(x, &c))
        return c <= 0;
    if (is_neg_inf(x))
        return 1;
    if (is_bin(x, TILEC_OP_SUB))
        return le(s, x->a[0], x->a[1], -1, d + 1, why);
    if (is_bin(x, TILEC_OP_MUL))
        for (int i = 0; i < 2; i++)
            if (positive(x->a[1 - i]) && nonpos(s, x->a[i], d + 1, why))
                return *why |= R_POSMUL, 1;
    if (is_bin(x, TILEC_OP_ADD) || is_call(x, BI_MAXIMUM))
        return nonpos(s, x->a[0], d + 1, why) && nonpos(s, x->a[1], d + 1, why);
    if (is_call(x, BI_MINIMUM))
        return nonpos(s, x->a[0], d + 1, why) || nonpos(s, x->a[1], d + 1, why);
    if (is_call(x, BI_WHERE))
        return nonpos(s, x->a[1], d + 1, why) && nonpos(s, x->a[2], d + 1, why);
    if (is_call(x, BI_MAX) || is_call(x, BI_MIN) || is_call(x, BI_SUM) || is_call(x, BI_CAST) ||
        x->e->kind == TILEC_EX_INDEX)
        return nonpos(s, x->a[0], d + 1, why);
    return 0;
}

static const char *why_text(lw *L, unsigned why)
{
    static const struct {
        unsigned bit;
        const char *text;
    } rules[] = {
        {R_MAXIMUM, "a running maximum taken over it"},
        {R_REDUCE, "a max over it, broadcast back along the axis it folded"},
        {R_WHERE, "its masked elements -inf"},
        {R_SCALE, "both sides scaled by one positive constant"},
        {R_POSMUL, "a difference <= 0 times a positive constant"},
    };
    strbuf b;
    sb_init(&b);
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
        if (why & rules[i].bit)
            sb_printf(&b, "%s%s", b.n ? ", " : "", rules[i].text);
    const char *r = b.failed ? "?" : lower_fmt(L, "%s", b.n ? sb_str(&b) : "a constant");
    sb_free(&b);
    return r;
}

static void record(sscan *s, const tilec_expr *e, int fast, unsigned why)
{
    lw *L = s->L;
    if (L->nexp >= LOWER_EXP_MAX) /* past the table: expf, as unproven */
        return;
    lower_exp_fact *f = &L->exps[L->nexp++];
    f->e = e;
    f->fast = fast;
    f->dotloop = s->dotloop;
    f->why = fast ? why_text(L, why) : NULL;
}

static void scan_expr(sscan *s, const tilec_expr *e)
{
    if (!e)
        return;
    for (uint32_t i = 0; i < e->nargs; i++)
        scan_expr(s, e->args[i]);
    if (!tilec_is_builtin(e, BI_EXP) || e->nargs != 1 || lower_compute_dt(lower_ty(s->L, e)->dtype) != TILEC_DT_F32)
        return;
    unsigned why = 0;
    s->steps = SIGN_STEPS;
    int fast = nonpos(s, sym(s, e->args[0]), 0, &why);
    record(s, e, fast, why);
}

/* Each name that block b (nested blocks too) assigns: a fresh unknown. */
static void forget(sscan *s, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *t = b->stmts[i];
        if (t->kind == TILEC_ST_ASSIGN)
            bind(s, t->names[0], unknown(s, t->names[0], t->value));
        forget(s, &t->body);
        forget(s, &t->orelse);
    }
}

static void scan_block(sscan *s, const tilec_block *b);

static void scan_stmt(sscan *s, const tilec_stmt *t)
{
    switch (t->kind) {
    case TILEC_ST_LET:
    case TILEC_ST_ASSIGN:
        scan_expr(s, t->value);
        bind(s, t->names[0], sym(s, t->value));
        return;
    case TILEC_ST_LET_TUPLE:
        scan_expr(s, t->value);
        for (uint32_t i = 0; i < t->nnames; i++)
            bind(s, t->names[i], unknown(s, t->names[i], NULL));
        return;
    case TILEC_ST_FOR: {
        scan_expr(s, t->lo);
        scan_expr(s, t->hi);
        scan_expr(s, t->step);
        uint32_t n = s->n;
        int dl = s->dotloop;
        forget(s, &t->body); /* loop-carried: unknown at the body's start */
        bind(s, t->names[0], unknown(s, t->names[0], t->lo));
        s->dotloop = dl || lower_block_dots(&t->body) > 0;
        scan_block(s, &t->body);
        s->dotloop = dl;
        s->n = n;
        forget(s, &t->body); /* and after the loop */
        return;
    }
    case TILEC_ST_IF: {
        scan_expr(s, t->value);
        uint32_t n = s->n;
        scan_block(s, &t->body);
        s->n = n;
        scan_block(s, &t->orelse);
        s->n = n;
        forget(s, &t->body);
        forget(s, &t->orelse);
        return;
    }
    default: scan_expr(s, t->value); return;
    }
}

static void scan_block(sscan *s, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts && !s->L->failed; i++)
        scan_stmt(s, b->stmts[i]);
}

void lower_sign_scan(lw *L)
{
    sscan s = {.L = L};
    L->nexp = 0;
    scan_block(&s, &L->k->body);
}

static const lower_exp_fact *fact(const lw *L, const tilec_expr *e)
{
    for (int i = 0; i < L->nexp; i++)
        if (L->exps[i].e == e)
            return &L->exps[i];
    return NULL;
}

int lower_exp_fast(const lw *L, const tilec_expr *e)
{
    const lower_exp_fact *f = fact(L, e);
    return f && f->fast;
}

void lower_exp_copied(lw *L, const tilec_expr *from, const tilec_expr *to)
{
    const lower_exp_fact *f = fact(L, from);
    if (!f || L->nexp >= LOWER_EXP_MAX)
        return;
    lower_exp_fact *c = &L->exps[L->nexp++];
    *c = *f;
    c->e = to;
    c->copy = 1;
}

void lower_exp_remarks(lw *L, strbuf *out)
{
    for (int i = 0; i < L->nexp; i++) {
        const lower_exp_fact *f = &L->exps[i];
        if (f->copy)
            continue;
        if (f->fast)
            sb_printf(out, "line %u:%u: exp: ex2.approx of x * log2(e) (MUFU.EX2), its argument `%s` <= 0: %s\n",
                      f->e->loc.line, f->e->loc.col, lower_expr_text(L, f->e->args[0]), f->why);
        else if (f->dotloop)
            sb_printf(out, "line %u:%u: exp: expf in a dot loop, its argument `%s` not known <= 0 (write it as x - m with m a "
                           "maximum over x, or use exp2)\n",
                      f->e->loc.line, f->e->loc.col, lower_expr_text(L, f->e->args[0]));
    }
}
