/* fold.c: a loop body's scale folded into the exponent (lower_fold_scale).
 *
 * Online softmax scales a product and then takes its row max and the
 * exponent of its difference to the max:
 *
 *     let s = dot(q, k) * c;  let sm = where(ok, s, -inf);
 *     let m = maximum(m_i, max(sm, 1));  let p = exp2(sm - m[:, None]);
 *
 * one FMUL, one FMNMX and one FADD an element. Where c > 0 the max commutes
 * with the scale exactly (rounding is monotone, and c * -inf is -inf), so
 * the copy this builds takes the max of the unscaled tile, scales the row
 * (one multiply a row), and writes each difference as `sm0 * c - m`, which
 * the compiler contracts into one FFMA: 32 FMUL a warp and 64-key iteration
 * fewer on attention's twin (docs/lowering.md, "The softmax side"). The
 * copy is exact but for that contraction (within an ulp of the exponent's
 * argument); the caller runs it only where c is positive and finite (an
 * infinite c times a zero is a NaN the unscaled max would not see), the
 * body as written otherwise. */
#include <string.h>

#include "lower/lower_internal.h"
#include "parser/builtins.h"

#define FOLD_MAX 8

typedef struct {
    const char *name, *raw; /* the scaled let and its unscaled twin */
    const tilec_expr *c;    /* the scale (a scalar name) */
} fold_ent;

typedef struct {
    lw *L;
    const tilec_block *body;
    fold_ent e[FOLD_MAX];
    int n, maxes; /* the max reductions rewritten */
} fold_st;

static const fold_ent *find(const fold_st *f, const tilec_expr *x)
{
    if (x->kind != TILEC_EX_NAME)
        return NULL;
    for (int i = f->n - 1; i >= 0; i--)
        if (!strcmp(f->e[i].name, x->name))
            return &f->e[i];
    return NULL;
}

/* How many statements of block b (nested ones too) bind `name`: let, assignment, loop variable. */
static int binds(const tilec_block *b, const char *name)
{
    int n = 0;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        for (uint32_t k = 0; k < s->nnames; k++)
            n += !strcmp(s->names[k], name);
        n += binds(&s->body, name) + binds(&s->orelse, name);
    }
    return n;
}

/* Does block b bind or read `name` anywhere? */
static int mentions(const tilec_block *b, const char *name)
{
    for (uint32_t i = 0; i < b->nstmts; i++)
        if (lower_stmt_mentions(b->stmts[i], name))
            return 1;
    return 0;
}

static tilec_expr *node(fold_st *f, const tilec_expr *like)
{
    tilec_expr *x = ar_alloc(&f->L->ar, sizeof *x);
    if (!x) {
        f->L->failed = 1;
        return NULL;
    }
    *x = *like;
    lower_exp_copied(f->L, like, x); /* a rewritten exp keeps its argument's sign (sign.c) */
    return x;
}

static tilec_expr *binary(fold_st *f, tilec_op op, tilec_expr *a, const tilec_expr *b, const tilec_expr *like)
{
    tilec_expr *x = node(f, like);
    tilec_expr **args = ar_alloc(&f->L->ar, 2 * sizeof *args);
    if (!x || !args || !a) {
        f->L->failed = 1;
        return NULL;
    }
    args[0] = a;
    args[1] = (tilec_expr *)b;
    x->kind = TILEC_EX_BINARY;
    x->op = op;
    x->name = NULL;
    x->builtin = 0;
    x->args = args;
    x->nargs = 2;
    x->depth = 1 + (a->depth > b->depth ? a->depth : b->depth);
    return x;
}

static tilec_expr *raw_name(fold_st *f, const fold_ent *e, const tilec_expr *like)
{
    tilec_expr *x = node(f, like);
    if (x)
        x->name = e->raw;
    return x;
}

/* e with max(y, ax) -> max(y0, ax) * c and y - z -> y0 * c - z for each
 * folded y; e itself when nothing changes. */
static tilec_expr *rewrite(fold_st *f, tilec_expr *e)
{
    if (!e)
        return e;
    const fold_ent *y;
    if (tilec_is_builtin(e, BI_MAX) && e->nargs == 2 && (y = find(f, e->args[0]))) {
        tilec_expr *m = node(f, e);
        tilec_expr **args = ar_alloc(&f->L->ar, 2 * sizeof *args);
        if (!m || !args) {
            f->L->failed = 1;
            return e;
        }
        args[0] = raw_name(f, y, e->args[0]);
        args[1] = e->args[1];
        m->args = args;
        f->maxes++;
        return binary(f, TILEC_OP_MUL, m, y->c, e);
    }
    if (e->kind == TILEC_EX_BINARY && e->op == TILEC_OP_SUB && (y = find(f, e->args[0])))
        return binary(f, TILEC_OP_SUB, binary(f, TILEC_OP_MUL, raw_name(f, y, e->args[0]), y->c, e->args[0]),
                      rewrite(f, e->args[1]), e);
    tilec_expr **args = NULL;
    for (uint32_t i = 0; i < e->nargs; i++) {
        tilec_expr *a = rewrite(f, e->args[i]);
        if (a == e->args[i])
            continue;
        if (!args) {
            args = ar_alloc(&f->L->ar, e->nargs * sizeof *args);
            if (!args) {
                f->L->failed = 1;
                return e;
            }
            memcpy(args, e->args, e->nargs * sizeof *args);
        }
        args[i] = a;
    }
    if (!args)
        return e;
    tilec_expr *x = node(f, e);
    if (x)
        x->args = args;
    return x ? x : e;
}

static int is_neg_inf(const tilec_expr *e)
{
    return e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG && e->nargs == 1 && e->args[0]->kind == TILEC_EX_INF;
}

/* A scalar f32 name that the body never assigns: the scale c. */
static const tilec_expr *scale_of(fold_st *f, const tilec_expr *c)
{
    const tilec_type *t = lower_ty(f->L, c);
    if (c->kind != TILEC_EX_NAME || t->rank != 0 || t->ptr || t->dtype != TILEC_DT_F32 || binds(f->body, c->name))
        return NULL;
    val *v = lower_lookup(f->L, c->name);
    return v && v->kind == VK_SCALAR ? c : NULL;
}

/* A fresh name `<stem>_unscaled[N]` that the kernel does not bind. */
static const char *fresh(fold_st *f, const char *stem)
{
    for (int i = 0; i < 100; i++) {
        const char *n = i ? lower_fmt(f->L, "%s_unscaled%d", stem, i) : lower_fmt(f->L, "%s_unscaled", stem);
        if (!lower_lookup(f->L, n) && !mentions(f->body, n) && !mentions(&f->L->k->body, n))
            return n;
    }
    return NULL;
}

static tilec_stmt *let(fold_st *f, const tilec_stmt *like, const char *name, tilec_expr *value)
{
    tilec_stmt *s = ar_alloc(&f->L->ar, sizeof *s);
    const char **names = ar_alloc(&f->L->ar, sizeof *names);
    if (!s || !names || !value) {
        f->L->failed = 1;
        return NULL;
    }
    *s = *like;
    names[0] = name;
    s->names = names;
    s->value = value;
    return s;
}

/* Record `let y = x * c` (x an f32 tile, c a scalar not assigned in the
 * body, y never assigned) or `let y = where(k, s, -inf)` of a recorded s:
 * emit `let y0 = x` (or where(k, s0, -inf)) and `let y = y0 * c` into out. */
static int fold_let(fold_st *f, const tilec_stmt *s, tilec_stmt **out, uint32_t *n)
{
    if (s->kind != TILEC_ST_LET || f->n >= FOLD_MAX || binds(f->body, s->names[0]) > 1)
        return 0;
    const tilec_expr *v = s->value;
    const tilec_type *t = lower_ty(f->L, v);
    if (t->rank < 1 || t->ptr || t->dtype != TILEC_DT_F32)
        return 0;
    tilec_expr *raw = NULL;
    const tilec_expr *c = NULL;
    const fold_ent *y;
    if (v->kind == TILEC_EX_BINARY && v->op == TILEC_OP_MUL) {
        for (int side = 0; side < 2 && !c; side++) {
            const tilec_type *a = lower_ty(f->L, v->args[side]);
            if (lower_same_shape(a, t) && a->dtype == TILEC_DT_F32 && (c = scale_of(f, v->args[1 - side])))
                raw = rewrite(f, v->args[side]);
        }
    } else if (tilec_is_builtin(v, BI_WHERE) && v->nargs == 3 && (y = find(f, v->args[1])) && is_neg_inf(v->args[2]) &&
               lower_ty(f->L, v->args[1])->rank == t->rank) {
        c = y->c;
        raw = node(f, v);
        tilec_expr **args = ar_alloc(&f->L->ar, 3 * sizeof *args);
        if (!raw || !args) {
            f->L->failed = 1;
            return 0;
        }
        args[0] = rewrite(f, v->args[0]);
        args[1] = raw_name(f, y, v->args[1]);
        args[2] = v->args[2];
        raw->args = args;
    }
    const char *rn = c ? fresh(f, s->names[0]) : NULL;
    if (!rn || !raw)
        return 0;
    fold_ent *e = &f->e[f->n++];
    e->name = s->names[0];
    e->raw = rn;
    e->c = c;
    tilec_expr *nm = node(f, v);
    if (!nm)
        return 0;
    nm->kind = TILEC_EX_NAME;
    nm->name = rn;
    nm->args = NULL;
    nm->nargs = 0;
    nm->builtin = 0;
    nm->depth = 1;
    out[(*n)++] = let(f, s, rn, raw);
    out[(*n)++] = let(f, s, s->names[0], binary(f, TILEC_OP_MUL, nm, c, v));
    return 1;
}

int lower_fold_scale(lw *L, const tilec_block *body, tilec_block *out, const char **cond)
{
    fold_st f = {.L = L, .body = body};
    tilec_stmt **st = ar_alloc(&L->ar, (2 * body->nstmts + 1) * sizeof *st);
    if (!st) {
        L->failed = 1;
        return 0;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < body->nstmts; i++) {
        const tilec_stmt *s = body->stmts[i];
        if (fold_let(&f, s, st, &n))
            continue;
        tilec_expr *v = f.n && (s->kind == TILEC_ST_LET || s->kind == TILEC_ST_ASSIGN) ? rewrite(&f, s->value) : s->value;
        if (v == s->value) {
            st[n++] = (tilec_stmt *)s;
            continue;
        }
        tilec_stmt *c = ar_alloc(&L->ar, sizeof *c);
        if (!c) {
            L->failed = 1;
            return 0;
        }
        *c = *s;
        c->value = v;
        st[n++] = c;
    }
    if (!f.maxes || L->failed)
        return 0;
    strbuf b;
    sb_init(&b);
    for (int i = 0, k = 0; i < f.n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= !strcmp(f.e[j].c->name, f.e[i].c->name);
        if (!seen) { /* positive and finite (0 * inf would make a NaN the max of the unscaled tile misses): the
                      * f32 bits in 1 .. 0x7f7fffff, one unsigned compare that stays on the uniform datapath
                      * (`c > 0 && c < inf` put an FSETP in every iteration's test) */
            const char *c = lower_lookup(L, f.e[i].c->name)->c;
            sb_printf(&b, "%s((unsigned)__float_as_int(%s) - 1u < 0x7f7fffffu)", k++ ? " && " : "", c);
        }
    }
    *cond = b.failed ? NULL : lower_fmt(L, "%s", sb_str(&b));
    sb_free(&b);
    if (!*cond) {
        L->failed = 1;
        return 0;
    }
    out->stmts = st;
    out->nstmts = n;
    return 1;
}
