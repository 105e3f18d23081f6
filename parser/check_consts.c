/* check_consts.c: module-level constants, `const CH = 4096;`. Each value is
 * an integer constant expression over literals and the constants defined
 * before it (check_const.c evaluates it). The name is one of the module's
 * item names, and no parameter, hint, let, loop variable or dimension
 * symbol may take it. Every use, in any kernel (hints, variants, grid,
 * body), extern or graph (sizes, dimensions, arguments) after the
 * definition, becomes an integer literal of the value before the items are
 * checked: one CH serves the kernel and the graph that sizes its buffers. */
#include <string.h>

#include "parser/check_internal.h"

typedef struct cst {
    checker *ck;
    const tilec_loc *item; /* the item being rewritten */
} cst;

static const tilec_const *cst_find(const checker *ck, const char *name)
{
    for (uint32_t i = 0; i < ck->mod->consts.n; i++) {
        const tilec_const *c = ck->mod->consts.v[i];
        if (!strcmp(c->name, name))
            return c;
    }
    return NULL;
}

/* before: a use at `at` comes after the definition of c */
static int cst_before(const tilec_const *c, const tilec_loc *at)
{
    return c->loc.line < at->line || (c->loc.line == at->line && c->loc.col < at->col);
}

static void cst_expr(cst *x, tilec_expr *e)
{
    if (!e)
        return;
    if (e->kind == TILEC_EX_NAME) {
        const tilec_const *c = cst_find(x->ck, e->name);
        if (!c)
            return;
        if (!cst_before(c, x->item)) {
            chk_err(x->ck, &e->loc, "constant '%s' is used before its definition", e->name);
            chk_note(x->ck, &c->loc, "'%s' is defined here", c->name);
        }
        e->kind = TILEC_EX_INT;
        e->ival = c->value;
        return;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        cst_expr(x, e->args[i]);
}

/* a name bound by a parameter, hint, let or loop may not be a constant's */
static void cst_binder(cst *x, const char *name, const tilec_loc *loc, const char *what)
{
    const tilec_const *c = name ? cst_find(x->ck, name) : NULL;
    if (!c)
        return;
    chk_err(x->ck, loc, "'%s' is a module constant; a %s cannot take its name", name, what);
    chk_note(x->ck, &c->loc, "the constant '%s' is defined here", name);
}

static void cst_block(cst *x, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        tilec_stmt *s = b->stmts[i];
        for (uint32_t n = 0; s->kind != TILEC_ST_ASSIGN && n < s->nnames; n++)
            cst_binder(x, s->names[n], &s->name_locs[n], s->kind == TILEC_ST_FOR ? "loop variable" : "let");
        cst_expr(x, s->value);
        cst_expr(x, s->lo);
        cst_expr(x, s->hi);
        cst_expr(x, s->step);
        for (uint32_t v = 0; v < s->nvalues; v++)
            cst_expr(x, s->values[v]);
        cst_block(x, &s->body);
        cst_block(x, &s->orelse);
    }
}

static void cst_params(cst *x, tilec_param *p, uint32_t n, int results)
{
    for (uint32_t i = 0; i < n; i++) {
        if (!results)
            cst_binder(x, p[i].name, &p[i].loc, "parameter");
        for (uint32_t d = 0; d < p[i].type.ndims; d++)
            cst_expr(x, p[i].type.dims[d]);
    }
}

static void cst_item(cst *x, tilec_item *it)
{
    if (it->kind == TILEC_ITEM_KERNEL) {
        tilec_kernel *k = it->u.kernel;
        x->item = &k->loc;
        cst_params(x, k->params, k->nparams, 0);
        for (uint32_t i = 0; i < k->nhints; i++) {
            cst_binder(x, k->hints[i].name, &k->hints[i].loc, "hint");
            cst_expr(x, k->hints[i].expr);
        }
        for (uint32_t v = 0; v < k->nvariants; v++)
            for (uint32_t i = 0; i < k->variants[v].noverrides; i++)
                cst_expr(x, k->variants[v].overrides[i].expr);
        for (uint32_t i = 0; i < k->ngrid; i++)
            cst_expr(x, k->grid[i]);
        cst_block(x, &k->body);
    } else if (it->kind == TILEC_ITEM_EXTERN) {
        x->item = &it->u.ext->loc;
        cst_params(x, it->u.ext->params, it->u.ext->nparams, 0);
        cst_params(x, it->u.ext->results, it->u.ext->nresults, 1);
    } else {
        tilec_graph *g = it->u.graph;
        x->item = &g->loc;
        cst_params(x, g->params, g->nparams, 0);
        cst_params(x, g->results, g->nresults, 1);
        cst_block(x, &g->body);
    }
}

void chk_consts(checker *ck)
{
    tilec_module *mod = ck->mod;
    cst x = {ck, NULL};
    for (uint32_t i = 0; i < mod->consts.n && !chk_stop(ck); i++) {
        tilec_const *c = mod->consts.v[i];
        item_name *it = NULL;
        HASH_FIND_STR(ck->items, c->name, it);
        const tilec_const *first = cst_find(ck, c->name);
        const tilec_loc *prev = first != c ? &first->loc : it ? &it->loc : NULL;
        if (prev) { /* the later of the two is the error */
            int later = prev->line < c->loc.line || (prev->line == c->loc.line && prev->col < c->loc.col);
            chk_err(ck, later ? &c->loc : prev, "'%s' is defined twice", c->name);
            chk_note(ck, later ? prev : &c->loc, "the first definition of '%s' is here", c->name);
        }
        x.item = &c->loc;
        cst_expr(&x, c->expr);
        char what[300];
        snprintf(what, sizeof what, "the value of constant '%.200s'", c->name);
        c->value = 1; /* in error: uses go on quietly */
        int64_t v;
        if (!chk_const_eval(ck, c->expr, what, &v))
            c->value = v;
    }
    for (uint32_t i = 0; i < mod->items.n && !chk_stop(ck); i++)
        cst_item(&x, mod->items.v[i]);
}
