/* written.c: which pointer parameters a checked kernel may write through.
 *
 * A pointer value in a kernel comes only from pointer parameters (there is
 * no pointer to pointer, and a load never yields a pointer), through
 * pointer arithmetic, where/select, trans, reshaping, lets and
 * assignments. So the parameters a kernel writes are those that can reach
 * the pointer operand of a store() or atomic_add(), wherever that call
 * stands (a statement, nested in an expression, a loop bound, a branch).
 *
 * The analysis is flow-insensitive and conservative: every variable (by
 * name, so sibling blocks that reuse a name share one entry) holds the set
 * of pointer parameters any of its lets or assignments can give it, taken
 * to a fixed point over loops; a subexpression whose checked type is a
 * non-pointer value contributes nothing. Anything it cannot resolve (an
 * unchecked expression, a name it does not know in a pointer position, a
 * fixed point not reached in WR_MAX_ROUNDS) counts every pointer parameter
 * as written: a wrong "not written" would let multi-kernel timing run on a
 * caller's real output; a wrong "written" costs one scratch copy. */
#include <stdlib.h>
#include <string.h>

#include "parser/builtins.h"
#include "tilec/lower.h"

#define uthash_nonfatal_oom(e) (w->oom = 1)
#include "util/hashtable.h"

enum { WR_MAX_ROUNDS = 64 };

typedef struct wr_var {
    const char *name;
    uint64_t src; /* the pointer parameters it may hold */
    UT_hash_handle hh;
} wr_var;

typedef struct wr_bind {
    wr_var *var;
    const tilec_expr *value;
} wr_bind;

typedef struct wr {
    const tilec_kernel *k;
    uint64_t all;  /* every pointer parameter: the answer when in doubt */
    wr_var *vars;  /* by name */
    wr_bind *binds;
    size_t nbinds, cap;
    int oom;
} wr;

/* The bit of pointer parameter i; a parameter past bit 63 cannot be named
 * in the mask, so its kernel is all-written (the runtime refuses it). */
static uint64_t param_bit(uint32_t i) { return i < 64 ? UINT64_C(1) << i : 0; }

static wr_var *var_of(wr *w, const char *name, int add)
{
    wr_var *v = NULL;
    HASH_FIND_STR(w->vars, name, v);
    if (v || !add)
        return v;
    v = calloc(1, sizeof *v);
    if (!v) {
        w->oom = 1;
        return NULL;
    }
    v->name = name;
    HASH_ADD_KEYPTR(hh, w->vars, v->name, strlen(v->name), v);
    if (!v->hh.tbl) {
        free(v);
        return NULL;
    }
    return v;
}

/* The pointer parameters expression e can evaluate to (or point into). */
static uint64_t sources(wr *w, const tilec_expr *e)
{
    if (!e)
        return 0;
    if ((e->type.kind == TILEC_TY_VALUE && !e->type.ptr) || e->type.kind == TILEC_TY_DTYPE ||
        e->type.kind == TILEC_TY_VOID)
        return 0; /* no pointer flows out of a non-pointer value */
    if (e->kind == TILEC_EX_NAME) {
        for (uint32_t i = 0; i < w->k->nparams; i++)
            if (!strcmp(w->k->params[i].name, e->name))
                return w->k->params[i].type.kind == TILEC_TE_POINTER || w->k->params[i].type.kind == TILEC_TE_LIST
                           ? param_bit(i)
                           : 0;
        wr_var *v = var_of(w, e->name, 0);
        return v ? v->src : w->all;
    }
    if (tilec_is_builtin(e, BI_RESHAPE) && e->nargs)
        return sources(w, e->args[0]); /* the rest are sizes, constants the checker evaluated */
    uint64_t s = 0;
    for (uint32_t i = 0; i < e->nargs; i++)
        s |= sources(w, e->args[i]);
    return s;
}

static void add_bind(wr *w, const char *name, const tilec_expr *value)
{
    wr_var *v = var_of(w, name, 1);
    if (!v)
        return;
    if (w->nbinds == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        wr_bind *b = realloc(w->binds, cap * sizeof *b);
        if (!b) {
            w->oom = 1;
            return;
        }
        w->binds = b;
        w->cap = cap;
    }
    w->binds[w->nbinds++] = (wr_bind){v, value};
}

/* Every let and assignment of a block and the blocks inside it. */
static void collect(wr *w, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts && !w->oom; i++) {
        const tilec_stmt *s = b->stmts[i];
        if ((s->kind == TILEC_ST_LET || s->kind == TILEC_ST_ASSIGN) && s->nnames == 1)
            add_bind(w, s->names[0], s->value);
        else if (s->kind == TILEC_ST_LET_TUPLE) /* not in kernels; unknown if it were */
            for (uint32_t j = 0; j < s->nnames; j++)
                add_bind(w, s->names[j], NULL);
        collect(w, &s->body);
        collect(w, &s->orelse);
    }
}

/* The parameters every store/atomic_add address in e can point into. */
static uint64_t stores_in(wr *w, const tilec_expr *e)
{
    if (!e)
        return 0;
    uint64_t s = 0;
    if (tilec_is_builtin(e, BI_STORE) || tilec_is_builtin(e, BI_ATOMIC_ADD))
        s |= e->nargs ? sources(w, e->args[0]) : w->all;
    else if (e->kind == TILEC_EX_CALL && e->builtin == BI_NONE) /* a call the checker did not resolve: anything */
        s |= w->all;
    for (uint32_t i = 0; i < e->nargs; i++)
        s |= stores_in(w, e->args[i]);
    return s;
}

static uint64_t stores_in_block(wr *w, const tilec_block *b)
{
    uint64_t s = 0;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *st = b->stmts[i];
        s |= stores_in(w, st->value) | stores_in(w, st->lo) | stores_in(w, st->hi) | stores_in(w, st->step);
        for (uint32_t j = 0; j < st->nvalues; j++)
            s |= stores_in(w, st->values[j]);
        s |= stores_in_block(w, &st->body) | stores_in_block(w, &st->orelse);
    }
    return s;
}

uint64_t tilec_kernel_written_params(const tilec_kernel *k)
{
    if (!k)
        return 0;
    wr w = {.k = k};
    for (uint32_t i = 0; i < k->nparams; i++)
        if (k->params[i].type.kind == TILEC_TE_POINTER || k->params[i].type.kind == TILEC_TE_LIST)
            w.all |= param_bit(i);
    uint64_t out = w.all;
    collect(&w, &k->body);
    int fixed = 0;
    for (int round = 0; round < WR_MAX_ROUNDS && !w.oom && !fixed; round++) {
        fixed = 1;
        for (size_t i = 0; i < w.nbinds; i++) {
            uint64_t s = w.binds[i].value ? sources(&w, w.binds[i].value) : w.all;
            if (s & ~w.binds[i].var->src) {
                w.binds[i].var->src |= s;
                fixed = 0;
            }
        }
    }
    if (fixed && !w.oom)
        out = stores_in_block(&w, &k->body) & w.all;
    wr_var *v, *tmp;
    HASH_ITER(hh, w.vars, v, tmp)
    {
        HASH_DEL(w.vars, v);
        free(v);
    }
    free(w.binds);
    return out;
}
