/* ivstep.c: values a loop advances by a loop-invariant step, read as
 * affine functions of the loop variable (induction variables).
 *
 * Triton's canonical GEMM lets its pointer tiles before the K loop and
 * steps them at the end of each iteration:
 *
 *     let pa = a + rm[:, None] * K + range(BK)[None, :];
 *     for k in 0 .. K step BK { ... load(pa, ...) ...; pa = pa + BK; }
 *
 * Each iteration's pa is its value before the loop plus the number of
 * steps taken times the step: pa0 + (k - lo) / st * d. Read that way, pa
 * is no loop-carried register tile but a pure function of k, which is
 * what the cp.async pipeline (loads issued stages ahead), the analysis of
 * pointer tiles (lower_ptr_affine: the sm_90a twin's tensor maps) and
 * everything else that substitutes the loop variable need. lower_ivstep
 * rewrites the kernel so: the let before the loop binds a fresh name
 * (pa0), the loop body opens with `let pa = pa0 + off` and the step
 * statement goes. off is spelt as the analysis reads coordinates: `k`
 * when the step is the loop's own (pa + BK, step BK, from 0), `k * N` for
 * a step of BK * N, (k - lo) / st * d in general.
 *
 * It applies to `x = x + d`, `x = d + x` and `x = x - d` with x an
 * integer or pointer (scalar or tile), when
 *   - d is a scalar of the loop's invariants: no name in it is the loop
 *     variable, let in the loop or assigned anywhere; no call but cast;
 *   - the statement is in the loop's body itself (not under an `if`),
 *     the only assignment of x in the kernel, and x is read in the body
 *     before it and nowhere after it;
 *   - x is let once in the kernel, in the block of the loop, to a value
 *     that reads nothing the kernel assigns (x0 is computed where it is
 *     read), and nothing between that let and the loop, or after the
 *     loop, names x.
 * Anything else is left as written, and the reason is kept for the
 * remarks (lower_ivstep_why). */
#include <string.h>

#include "lower/lower_internal.h"

/* How many times e names `name`. */
static int names_in(const tilec_expr *e, const char *name)
{
    if (!e)
        return 0;
    int n = e->kind == TILEC_EX_NAME && !strcmp(e->name, name);
    for (uint32_t i = 0; i < e->nargs; i++)
        n += names_in(e->args[i], name);
    return n;
}

/* How many times statement s (with the blocks inside it) names `name`, read, let or assigned. */
static int stmt_names(const tilec_stmt *s, const char *name);
static int block_names(const tilec_block *b, const char *name)
{
    int n = 0;
    for (uint32_t i = 0; i < b->nstmts; i++)
        n += stmt_names(b->stmts[i], name);
    return n;
}

static int stmt_names(const tilec_stmt *s, const char *name)
{
    if (s->kind == TILEC_ST_DOC)
        return 0;
    int n = names_in(s->value, name) + names_in(s->lo, name) + names_in(s->hi, name) + names_in(s->step, name);
    for (uint32_t i = 0; i < s->nvalues; i++)
        n += names_in(s->values[i], name);
    for (uint32_t i = 0; s->names && i < s->nnames; i++)
        n += s->names[i] && !strcmp(s->names[i], name);
    return n + block_names(&s->body, name) + block_names(&s->orelse, name);
}

/* How many statements of b (and the blocks inside) bind (assign 0) or assign (assign 1) `name`. */
static int binds(const tilec_block *b, const char *name, int assign)
{
    int n = 0;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        int bind = s->kind == TILEC_ST_LET || s->kind == TILEC_ST_LET_TUPLE || s->kind == TILEC_ST_FOR;
        if ((assign ? s->kind == TILEC_ST_ASSIGN : bind) && s->names)
            for (uint32_t j = 0; j < s->nnames; j++)
                n += s->names[j] && !strcmp(s->names[j], name);
        n += binds(&s->body, name, assign) + binds(&s->orelse, name, assign);
    }
    return n;
}

/* The first NAME node of `name` in e, or NULL. */
static const tilec_expr *name_node(const tilec_expr *e, const char *name)
{
    if (!e)
        return NULL;
    if (e->kind == TILEC_EX_NAME && !strcmp(e->name, name))
        return e;
    for (uint32_t i = 0; i < e->nargs; i++) {
        const tilec_expr *r = name_node(e->args[i], name);
        if (r)
            return r;
    }
    return NULL;
}

static const tilec_expr *block_name_node(const tilec_block *b, uint32_t upto, const char *name)
{
    for (uint32_t i = 0; i < b->nstmts && i < upto; i++) {
        const tilec_stmt *s = b->stmts[i];
        const tilec_expr *r = name_node(s->value, name);
        if (!r)
            r = block_name_node(&s->body, s->body.nstmts, name);
        if (!r)
            r = block_name_node(&s->orelse, s->orelse.nstmts, name);
        if (r)
            return r;
    }
    return NULL;
}

/* Why step d of the loop over var with body `body` is not invariant, or NULL. */
static const char *variant_why(lw *L, const tilec_expr *d, const char *var, const tilec_block *body)
{
    if (d->kind == TILEC_EX_NAME) {
        if (!strcmp(d->name, var))
            return lower_fmt(L, "its step reads the loop variable %s", var);
        if (binds(body, d->name, 0))
            return lower_fmt(L, "its step reads %s, let in the loop", d->name);
        if (binds(&L->k->body, d->name, 1))
            return lower_fmt(L, "its step reads %s, which is assigned", d->name);
    }
    if (d->kind == TILEC_EX_CALL && !tilec_is_builtin(d, BI_CAST))
        return lower_fmt(L, "its step calls %s", d->name);
    for (uint32_t i = 0; i < d->nargs; i++) {
        const char *w = variant_why(L, d->args[i], var, body);
        if (w)
            return w;
    }
    return NULL;
}

/* The first name e reads that the kernel assigns, or NULL. */
static const char *assigned_read(lw *L, const tilec_expr *e)
{
    if (!e)
        return NULL;
    if (e->kind == TILEC_EX_NAME && binds(&L->k->body, e->name, 1))
        return e->name;
    for (uint32_t i = 0; i < e->nargs; i++) {
        const char *r = assigned_read(L, e->args[i]);
        if (r)
            return r;
    }
    return NULL;
}

static void keep_why(lw *L, const tilec_stmt *s, const char *why)
{
    if (L->nivs < LOWER_IVS_MAX) {
        L->ivs_stmt[L->nivs] = s;
        L->ivs_why[L->nivs++] = why;
    }
}

const char *lower_ivstep_why(const lw *L, const tilec_stmt *s)
{
    for (int i = 0; i < L->nivs; i++)
        if (L->ivs_stmt[i] == s)
            return L->ivs_why[i];
    return NULL;
}

/* A new node of the kernel's arena. */
static tilec_expr *node(lw *L, tilec_expr_kind kind, const tilec_loc *loc)
{
    tilec_expr *e = ar_alloc(&L->ar, sizeof *e);
    if (!e) {
        L->failed = 1;
        return NULL;
    }
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->loc = *loc;
    e->depth = 1;
    return e;
}

tilec_expr *lower_scalar_op(lw *L, tilec_op op, tilec_expr *a, tilec_expr *b, const tilec_loc *loc)
{
    tilec_expr *e = node(L, TILEC_EX_BINARY, loc);
    tilec_expr **args = ar_alloc(&L->ar, 2 * sizeof *args);
    if (!e || !args || !a || !b) {
        L->failed = 1;
        return NULL;
    }
    const tilec_type *ta = lower_ty(L, a), *tb = lower_ty(L, b);
    e->op = op;
    args[0] = a;
    args[1] = b;
    e->args = args;
    e->nargs = 2;
    e->depth = 1 + (a->depth > b->depth ? a->depth : b->depth);
    e->type = (tilec_type){.kind = TILEC_TY_VALUE, .dtype = tilec_promote(ta->dtype, ta->weak, tb->dtype, tb->weak),
                           .weak = ta->weak && tb->weak};
    return e;
}

/* The loop's count of steps times d as the analysis reads coordinates: it = k - lo (k when lo is 0);
 * it * (d / st) when st divides d as written (d itself, BK * N); for a step of 1, (it * c) * r of d = c * r
 * (the coordinate it * c a node of its own); else it / st * d. */
static tilec_expr *offset(lw *L, const tilec_stmt *loop, tilec_expr *var, tilec_expr *d, const tilec_loc *loc)
{
    int64_t lo, st = 1, dv, c;
    tilec_expr *it = var;
    if (lower_const_int(L, loop->lo, &lo) || lo != 0)
        it = lower_scalar_op(L, TILEC_OP_SUB, var, loop->lo, loc);
    if (loop->step && lower_const_int(L, loop->step, &st))
        st = 0; /* a run-time step */
    if (st == 1 && d->kind == TILEC_EX_BINARY && d->op == TILEC_OP_MUL)
        for (int i = 0; i < 2; i++) /* BK * N: (k * BK) * N, the coordinate a product of its own */
            if (lower_ty(L, d->args[i])->rank == 0 && lower_const_int(L, d->args[i], &c) == 0)
                return lower_scalar_op(L, TILEC_OP_MUL, lower_scalar_op(L, TILEC_OP_MUL, it, d->args[i], loc),
                                       d->args[1 - i], loc);
    if (st == 1)
        return lower_const_int(L, d, &dv) == 0 && dv == 1 ? it : lower_scalar_op(L, TILEC_OP_MUL, it, d, loc);
    if (st && lower_const_int(L, d, &dv) == 0 && dv == st)
        return it;
    if (st && d->kind == TILEC_EX_BINARY && d->op == TILEC_OP_MUL)
        for (int i = 0; i < 2; i++)
            if (lower_ty(L, d->args[i])->rank == 0 && lower_const_int(L, d->args[i], &c) == 0 && c == st)
                return lower_scalar_op(L, TILEC_OP_MUL, it, d->args[1 - i], loc);
    if (lower_const_int(L, d, &dv) == 0 && dv == 1)
        return lower_scalar_op(L, TILEC_OP_DIV, it, loop->step, loc);
    return lower_scalar_op(L, TILEC_OP_MUL, lower_scalar_op(L, TILEC_OP_DIV, it, loop->step, loc), d, loc);
}

/* A name that nothing in the kernel names: stem_at0, stem_at1, ... */
static const char *fresh(lw *L, const char *stem)
{
    for (int i = 0;; i++) {
        const char *n = lower_fmt(L, "%s_at%d", stem, i);
        int used = block_names(&L->k->body, n) > 0;
        for (uint32_t j = 0; j < L->k->nparams && !used; j++)
            used = L->k->params[j].name && !strcmp(L->k->params[j].name, n);
        for (uint32_t j = 0; j < L->k->nhints && !used; j++)
            used = !strcmp(L->k->hints[j].name, n);
        if (!used || L->failed)
            return n;
    }
}

/* Statement j of loop body, `x = x + d`: rewritten into b (statement li the loop, the
 * block's statements copied into b already) when it qualifies; else its reason kept. */
static int step_one(lw *L, tilec_block *b, uint32_t li, tilec_stmt *loop, uint32_t j)
{
    const tilec_stmt *s = loop->body.stmts[j];
    const char *x = s->names[0], *var = loop->names[0];
    const tilec_expr *v = s->value;
    if (v->kind != TILEC_EX_BINARY || (v->op != TILEC_OP_ADD && v->op != TILEC_OP_SUB))
        return 0;
    int self0 = v->args[0]->kind == TILEC_EX_NAME && !strcmp(v->args[0]->name, x);
    int self1 = v->op == TILEC_OP_ADD && v->args[1]->kind == TILEC_EX_NAME && !strcmp(v->args[1]->name, x);
    if (!self0 && !self1)
        return 0;
    tilec_expr *d = v->args[self0 ? 1 : 0];
    const tilec_type *xt = lower_ty(L, v), *dt = lower_ty(L, d);
    char cls = tilec_dtype_class(xt->dtype);
    const char *why = NULL;
    if (!xt->ptr && cls != 's' && cls != 'u')
        why = "not an integer or a pointer";
    else if (dt->rank != 0 || dt->ptr || (tilec_dtype_class(dt->dtype) != 's' && tilec_dtype_class(dt->dtype) != 'u'))
        why = "its step is not an integer scalar";
    else if ((why = variant_why(L, d, var, &loop->body)) != NULL)
        ;
    else if (binds(&L->k->body, x, 1) != 1)
        why = lower_fmt(L, "%s is assigned more than once", x);
    else if (names_in(d, x))
        why = "its step reads it";
    if (!why)
        for (uint32_t i = j + 1; i < loop->body.nstmts && !why; i++)
            if (stmt_names(loop->body.stmts[i], x))
                why = lower_fmt(L, "%s is read after its step in the loop body", x);
    const tilec_expr *use = block_name_node(&loop->body, j, x);
    if (!why && !use)
        why = lower_fmt(L, "%s is not read before its step", x);
    /* its one let: in the loop's block, nothing naming x between it and the loop or after the loop */
    uint32_t p = li;
    if (!why) {
        for (uint32_t i = 0; i < li; i++)
            if (b->stmts[i]->kind == TILEC_ST_LET && !strcmp(b->stmts[i]->names[0], x))
                p = i;
        if (p == li || binds(&L->k->body, x, 0) != 1)
            why = lower_fmt(L, "%s is not let once, in the block of the loop", x);
    }
    /* its let's value is computed where x0 is read (a virtual tile): nothing it reads may change on the way */
    if (!why && (why = assigned_read(L, b->stmts[p]->value)) != NULL)
        why = lower_fmt(L, "its let reads %s, which is assigned", why);
    for (uint32_t i = p + 1; !why && i < b->nstmts; i++)
        if (i != li && stmt_names(b->stmts[i], x))
            why = lower_fmt(L, "%s is named %s the loop", x, i < li ? "between its let and" : "after");
    if (why) {
        keep_why(L, s, why);
        return 0;
    }
    /* let x0 = (the let's value) before the loop; let x = x0 + off opening the body; the step gone */
    const char *x0 = fresh(L, x);
    tilec_stmt *let0 = ar_alloc(&L->ar, sizeof *let0), *letk = ar_alloc(&L->ar, sizeof *letk);
    const char **n0 = ar_alloc(&L->ar, sizeof *n0), **nk = ar_alloc(&L->ar, sizeof *nk);
    tilec_expr *r0 = node(L, TILEC_EX_NAME, &s->loc), *var_e = node(L, TILEC_EX_NAME, &s->loc);
    tilec_stmt **body = ar_alloc(&L->ar, loop->body.nstmts * sizeof *body);
    if (!let0 || !letk || !n0 || !nk || !r0 || !var_e || !body) {
        L->failed = 1;
        return 0;
    }
    *let0 = *b->stmts[p];
    n0[0] = x0;
    let0->names = n0;
    b->stmts[p] = let0;
    /* x0 as x is read in the loop (its type under every variant) */
    *r0 = *use;
    r0->name = x0;
    /* the loop variable as the body reads it, else as its bounds meet */
    const tilec_expr *vn = block_name_node(&loop->body, loop->body.nstmts, var);
    if (vn) {
        *var_e = *vn;
        var_e->loc = s->loc;
    } else {
        const tilec_type *lt = lower_ty(L, loop->lo), *ht = lower_ty(L, loop->hi);
        var_e->name = var;
        var_e->type = (tilec_type){.kind = TILEC_TY_VALUE, .dtype = lt->weak && ht->weak ? TILEC_DT_I32
                                                                   : tilec_promote(lt->dtype, lt->weak, ht->dtype, ht->weak)};
    }
    var_e->name = var;
    tilec_expr *sum = lower_scalar_op(L, v->op, r0, offset(L, loop, var_e, d, &s->loc), &s->loc);
    if (!sum)
        return 0;
    sum->type = use->type; /* x's own type */
    sum->vtypes = use->vtypes;
    memset(letk, 0, sizeof *letk);
    letk->kind = TILEC_ST_LET;
    letk->loc = s->loc;
    nk[0] = x;
    letk->names = nk;
    letk->name_locs = s->name_locs;
    letk->nnames = 1;
    letk->value = sum;
    uint32_t n = 0;
    body[n++] = letk;
    for (uint32_t i = 0; i < loop->body.nstmts; i++)
        if (i != j)
            body[n++] = loop->body.stmts[i];
    loop->body.stmts = body;
    loop->body.nstmts = n;
    return 1;
}

/* Loops in b (and the blocks inside) whose steps qualify, rewritten: b's
 * statements and each changed statement copied first (the module's
 * kernel stays as it is). 1 when something changed. */
static int rewrite_block(lw *L, tilec_block *b, int depth)
{
    if (depth > 64 || L->failed)
        return 0;
    int changed = 0;
    tilec_stmt **own = NULL;
    for (uint32_t i = 0; i < b->nstmts && !L->failed; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind != TILEC_ST_FOR && s->kind != TILEC_ST_IF)
            continue;
        tilec_stmt *c = ar_alloc(&L->ar, sizeof *c);
        if (!own && (own = ar_alloc(&L->ar, b->nstmts * sizeof *own)) != NULL) {
            memcpy(own, b->stmts, b->nstmts * sizeof *own);
            b->stmts = own;
        }
        if (!c || !own) {
            L->failed = 1;
            return 0;
        }
        *c = *s;
        int ch = rewrite_block(L, &c->body, depth + 1);
        ch |= rewrite_block(L, &c->orelse, depth + 1);
        for (uint32_t j = 0; s->kind == TILEC_ST_FOR && j < c->body.nstmts; j++)
            if (c->body.stmts[j]->kind == TILEC_ST_ASSIGN && !lower_dot_update(c->body.stmts[j]) &&
                step_one(L, b, i, c, j)) {
                ch = 1;
                j = (uint32_t)-1; /* the body changed: from its start again */
            }
        if (ch) {
            own[i] = c;
            changed = 1;
        }
    }
    return changed;
}

const tilec_kernel *lower_ivstep(lw *L, const tilec_kernel *k)
{
    tilec_kernel *c = ar_alloc(&L->ar, sizeof *c);
    if (!c) {
        L->failed = 1;
        return k;
    }
    *c = *k;
    L->k = c; /* the rewrite's own questions (names, assignments) read the kernel as it stands */
    if (!rewrite_block(L, &c->body, 0) || L->failed) {
        L->k = k;
        return k;
    }
    return c;
}
