/* graph_coll.c: the collectives of graphs (parser/graph_coll.h), read
 * from a call. */
#include <string.h>

#include "parser/graph_coll.h"
#include "util/poly.h"

static const struct {
    tilec_coll coll;
    int op, axis, root; /* which arguments follow the tensor */
    const char *form;
} gc_builtins[] = {
    {TILEC_COLL_ALL_REDUCE, 1, 0, 0, "all_reduce takes a tensor and an operation: all_reduce(x, sum)"},
    {TILEC_COLL_ALL_GATHER, 0, 1, 0, "all_gather takes a tensor and an axis: all_gather(x, 0)"},
    {TILEC_COLL_REDUCE_SCATTER, 1, 1, 0,
     "reduce_scatter takes a tensor, an operation and an axis: reduce_scatter(x, sum, 0)"},
    {TILEC_COLL_BROADCAST, 0, 0, 1, "broadcast takes a tensor and the root rank: broadcast(x, 0)"},
};
#define GC_N (sizeof gc_builtins / sizeof gc_builtins[0])

int gc_is_builtin(const char *name)
{
    for (size_t i = 0; i < GC_N; i++)
        if (!strcmp(name, tilec_coll_name(gc_builtins[i].coll)))
            return 1;
    return 0;
}

/* An integer literal, optionally negated. */
static int int_literal(const tilec_expr *e, int64_t *out)
{
    if (e->kind == TILEC_EX_INT) {
        *out = e->ival;
        return 1;
    }
    if (e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG && e->nargs == 1 && e->args[0]->kind == TILEC_EX_INT) {
        *out = -e->args[0]->ival;
        return 1;
    }
    return 0;
}

int gc_read(const tilec_expr *v, gc_form *f, const char **why, const tilec_expr **at)
{
    size_t i = 0;
    if (v->kind != TILEC_EX_CALL)
        return 0;
    while (i < GC_N && strcmp(v->name, tilec_coll_name(gc_builtins[i].coll)))
        i++;
    if (i == GC_N)
        return 0;
    memset(f, 0, sizeof *f);
    f->coll = gc_builtins[i].coll;
    *why = gc_builtins[i].form;
    *at = v;
    uint32_t want = 1u + (uint32_t)(gc_builtins[i].op + gc_builtins[i].axis + gc_builtins[i].root);
    if (v->nargs != want)
        return 1;
    if (v->args[0]->kind != TILEC_EX_NAME) {
        *at = v->args[0];
        return 1;
    }
    f->of = v->args[0];
    uint32_t a = 1;
    if (gc_builtins[i].op) {
        const tilec_expr *e = v->args[a++];
        int k = TILEC_REDOP_COUNT;
        if (e->kind == TILEC_EX_NAME)
            for (k = 0; k < TILEC_REDOP_COUNT && strcmp(e->name, tilec_redop_name((tilec_redop)k)); k++)
                ;
        if (k == TILEC_REDOP_COUNT) {
            *why = "the operation of a collective is one of sum, prod, max, min, avg";
            *at = e;
            return 1;
        }
        f->op = (tilec_redop)k;
        f->op_at = e;
    }
    if (gc_builtins[i].axis) {
        const tilec_expr *e = v->args[a++];
        if (!int_literal(e, &f->axis_value)) {
            *why = "the axis of a collective is an integer literal such as 0 or -1";
            *at = e;
            return 1;
        }
        f->axis = e;
    }
    if (gc_builtins[i].root) {
        const tilec_expr *e = v->args[a++];
        if (!int_literal(e, &f->root) || f->root < 0) {
            *why = "the root of broadcast is a rank: a non-negative integer literal such as 0";
            *at = e;
            return 1;
        }
        f->root_at = e;
    }
    *why = NULL;
    return 1;
}

static int block_has(const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_expr *v = b->stmts[i]->value;
        if ((v && v->kind == TILEC_EX_CALL && gc_is_builtin(v->name)) || block_has(&b->stmts[i]->body))
            return 1;
    }
    return 0;
}

int gc_graph_has(const tilec_graph *g) { return block_has(&g->body); }

/* A factor alone as a polynomial (a symbol or an opaque quotient). */
static poly *factor_poly(arena *a, const poly_factor *f)
{
    poly *p = ar_alloc(a, sizeof *p);
    poly_term *t = ar_alloc(a, sizeof *t);
    const poly_factor **v = ar_alloc(a, sizeof *v);
    if (!p || !t || !v)
        return NULL;
    *v = f;
    *t = (poly_term){.coef = 1, .natoms = 1, .atoms = v};
    *p = (poly){.terms = t, .n = 1};
    return p;
}

/* d / world when every term of d has the factor world (d = world * q);
 * else NULL with *no set (or clear: out of memory). */
static poly *div_world(arena *a, const poly *d, int *no)
{
    poly *q = poly_const(a, 0);
    for (uint32_t i = 0; q && i < d->n; i++) {
        const poly_term *t = &d->terms[i];
        poly *term = poly_const(a, t->coef);
        int dropped = 0;
        for (uint32_t j = 0; term && j < t->natoms; j++) {
            if (!dropped && !t->atoms[j]->op && !strcmp(t->atoms[j]->text, GC_WORLD)) {
                dropped = 1;
                continue;
            }
            poly *f = factor_poly(a, t->atoms[j]);
            term = f ? poly_mul(a, term, f, NULL) : NULL;
        }
        if (!dropped) {
            *no = 1;
            return NULL;
        }
        q = term ? poly_add(a, q, term, 1, NULL) : NULL;
    }
    return q;
}

poly *gc_result_dim(arena *a, tilec_coll coll, const poly *d, poly_why *why)
{
    poly *world = poly_atom(a, GC_WORLD);
    if (!world) {
        why->fail = POLY_FAIL_NOMEM;
        return NULL;
    }
    if (coll == TILEC_COLL_ALL_GATHER)
        return poly_mul(a, world, d, why);
    int no = 0;
    poly *q = div_world(a, d, &no);
    if (q || !no) {
        if (!q)
            why->fail = POLY_FAIL_NOMEM;
        return q;
    }
    /* not provably a multiple of world: the quotient, checked at run time */
    return poly_div_atom(a, POLY_DIV, d, world, why);
}
