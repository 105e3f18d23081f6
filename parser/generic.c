/* generic.c: generic kernels (docs/language.md §4.2). A kernel written
 * `kernel k<T: f16 | bf16 | f32>(x: *T, ...)` becomes, before anything
 * is checked, one ordinary kernel per combination of its type parameters'
 * dtypes (k__f16, k__bf16, k__f32): a copy of its AST with every `T` (in
 * parameter types and as a name in expressions: casts, zeros(..., T))
 * replaced by the dtype. The checker checks each instance, the lowering
 * and NVRTC see ordinary kernels (each its own name, source and cache
 * entry), graphs pick the instance by the dtypes of the tensors they pass
 * (check_call.c). The generic kernel itself is kept in mod->generics. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "parser/parse.h"
#include "tilec/limits.h"

typedef struct gen {
    tilec_ctx *ctx;
    tilec_module *mod;
    arena *ar;
    const tilec_kernel *k;    /* the generic kernel */
    const tilec_dtype *targs; /* the instance's dtypes */
    int bad;                  /* an error was reported */
    int oom;
} gen;

__attribute__((format(printf, 3, 4))) static void gen_err(gen *g, const tilec_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_vat(g->ctx, &g->mod->src, loc, TILEC_SEV_ERROR, fmt, ap);
    va_end(ap);
    g->bad = 1;
}

static int tparam_index(const tilec_kernel *k, const char *name)
{
    for (uint32_t i = 0; name && i < k->ntparams; i++)
        if (!strcmp(k->tparams[i].name, name))
            return (int)i;
    return -1;
}

/* "T = bf16, U = f32" */
static const char *targs_text(arena *ar, const tilec_kernel *k, const tilec_dtype *targs)
{
    const char *s = "";
    for (uint32_t i = 0; s && i < k->ntparams; i++)
        s = ar_printf(ar, "%s%s%s = %s", s, i ? ", " : "", k->tparams[i].name, tilec_dtype_name(targs[i]));
    return s;
}

/* "f16 | bf16 | f32" */
const char *gen_dtype_set(arena *ar, const tilec_tparam *t)
{
    const char *s = "";
    for (uint32_t i = 0; s && i < t->ndtypes; i++)
        s = ar_printf(ar, "%s%s%s", s, i ? " | " : "", tilec_dtype_name(t->dtypes[i]));
    return s;
}

/* ---- the header: type parameters, their uses, names that would hide them ---- */

static void check_name(gen *g, const char *name, const tilec_loc *loc, const char *what)
{
    int t = tparam_index(g->k, name);
    if (t >= 0)
        gen_err(g, loc, "%s '%s' has the name of a type parameter of kernel '%s'; rename it", what, name, g->k->name);
}

static void check_block(gen *g, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_LET || s->kind == TILEC_ST_LET_TUPLE || s->kind == TILEC_ST_FOR)
            for (uint32_t n = 0; n < s->nnames; n++)
                check_name(g, s->names[n], &s->name_locs[n], s->kind == TILEC_ST_FOR ? "loop variable" : "variable");
        check_block(g, &s->body);
        check_block(g, &s->orelse);
    }
}

/* A type written as a name that no kernel declares (graphs, externs,
 * ordinary kernels), or that this generic kernel does not. */
static void check_types(gen *g, const tilec_param *ps, uint32_t n, const char *owner, const tilec_kernel *k)
{
    for (uint32_t i = 0; i < n; i++) {
        const tilec_param *p = &ps[i];
        if (!p->type.tparam || (k && tparam_index(k, p->type.tparam) >= 0))
            continue;
        if (k && k->ntparams)
            gen_err(g, &p->type.loc, "unknown type '%s': kernel '%s' has the type parameter%s %s%s", p->type.tparam,
                k->name, k->ntparams > 1 ? "s" : "", k->tparams[0].name, k->ntparams > 1 ? ", ..." : "");
        else if (k)
            gen_err(g, &p->type.loc,
                "unknown type '%s' (a generic kernel declares its type parameters: kernel %s<%s: f16 | bf16 | f32>(...))",
                p->type.tparam, k->name, p->type.tparam);
        else
            gen_err(g, &p->type.loc, "unknown type '%s': %s takes element types such as f32 (only kernels are generic)",
                p->type.tparam, owner);
    }
}

static void check_header(gen *g)
{
    const tilec_kernel *k = g->k;
    uint64_t count = 1;
    if (k->ntparams > TILEC_MAX_TPARAMS) {
        gen_err(g, &k->tparams[TILEC_MAX_TPARAMS].loc, "kernel '%s' has more than %d type parameters", k->name,
            TILEC_MAX_TPARAMS);
        return;
    }
    for (uint32_t i = 0; i < k->ntparams; i++) {
        const tilec_tparam *t = &k->tparams[i];
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(k->tparams[j].name, t->name))
                gen_err(g, &t->loc, "type parameter '%s' of kernel '%s' is declared twice", t->name, k->name);
        for (uint32_t a = 0; a < t->ndtypes; a++)
            for (uint32_t b = 0; b < a; b++)
                if (t->dtypes[a] == t->dtypes[b])
                    gen_err(g, &t->loc, "type parameter '%s' of kernel '%s' lists %s twice", t->name, k->name,
                        tilec_dtype_name(t->dtypes[a]));
        int typed = 0;
        for (uint32_t p = 0; p < k->nparams; p++)
            typed |= (k->params[p].type.kind == TILEC_TE_POINTER || k->params[p].type.kind == TILEC_TE_LIST) && k->params[p].type.tparam &&
                     !strcmp(k->params[p].type.tparam, t->name);
        if (!typed)
            gen_err(g, &t->loc,
                "type parameter '%s' of kernel '%s' is the element type of no pointer parameter, so no call can choose it "
                "(write one such as x: *%s)", t->name, k->name, t->name);
        count *= t->ndtypes;
        if (count > TILEC_MAX_INSTANCES) {
            gen_err(g, &t->loc, "kernel '%s' would have more than %d instances (one per combination of its type "
                "parameters' dtypes)", k->name, TILEC_MAX_INSTANCES);
            break;
        }
    }
    check_types(g, k->params, k->nparams, NULL, k);
    for (uint32_t p = 0; p < k->nparams; p++)
        check_name(g, k->params[p].name, &k->params[p].loc, "parameter");
    for (uint32_t h = 0; h < k->nhints; h++)
        check_name(g, k->hints[h].name, &k->hints[h].loc, "hint");
    check_block(g, &k->body);
}

/* ---- instances: the AST copied with the type parameters bound ---- */

static tilec_expr *clone_expr(gen *g, const tilec_expr *e)
{
    if (!e)
        return NULL;
    tilec_expr *c = ar_alloc(g->ar, sizeof *c);
    if (!c) {
        g->oom = 1;
        return NULL;
    }
    *c = *e;
    c->type = (tilec_type){0};
    c->vtypes = NULL;
    int t = e->kind == TILEC_EX_NAME ? tparam_index(g->k, e->name) : -1;
    if (t >= 0) {
        c->kind = TILEC_EX_DTYPE;
        c->dtype = g->targs[t];
        c->name = tilec_dtype_name(c->dtype);
    }
    if (e->nargs) {
        c->args = ar_array(g->ar, e->nargs, sizeof *c->args);
        if (!c->args) {
            g->oom = 1;
            return NULL;
        }
        for (uint32_t i = 0; i < e->nargs; i++)
            c->args[i] = clone_expr(g, e->args[i]);
    }
    return c;
}

static tilec_expr **clone_exprs(gen *g, tilec_expr *const *v, uint32_t n)
{
    if (!n)
        return NULL;
    tilec_expr **out = ar_array(g->ar, n, sizeof *out);
    if (!out) {
        g->oom = 1;
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        out[i] = clone_expr(g, v[i]);
    return out;
}

static tilec_block clone_block(gen *g, const tilec_block *b)
{
    tilec_block out = {0};
    if (!b->nstmts)
        return out;
    out.stmts = ar_array(g->ar, b->nstmts, sizeof *out.stmts);
    if (!out.stmts) {
        g->oom = 1;
        return out;
    }
    out.nstmts = b->nstmts;
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        tilec_stmt *c = ar_alloc(g->ar, sizeof *c);
        if (!c) {
            g->oom = 1;
            out.nstmts = i;
            return out;
        }
        *c = *s;
        c->value = clone_expr(g, s->value);
        c->lo = clone_expr(g, s->lo);
        c->hi = clone_expr(g, s->hi);
        c->step = clone_expr(g, s->step);
        c->values = clone_exprs(g, s->values, s->nvalues);
        c->body = clone_block(g, &s->body);
        c->orelse = clone_block(g, &s->orelse);
        c->types = NULL;
        int t = s->ann ? tparam_index(g->k, s->ann->tparam) : -1;
        if (t >= 0) { /* let x: T = e: T bound in this instance */
            tilec_tyexpr *ann = ar_alloc(g->ar, sizeof *ann);
            if (!ann) {
                g->oom = 1;
                out.nstmts = i;
                return out;
            }
            *ann = *s->ann;
            ann->dtype = g->targs[t];
            ann->tparam = NULL;
            c->ann = ann;
        }
        out.stmts[i] = c;
    }
    return out;
}

static tilec_hint *clone_hints(gen *g, const tilec_hint *h, uint32_t n)
{
    if (!n)
        return NULL;
    tilec_hint *out = ar_array(g->ar, n, sizeof *out);
    if (!out) {
        g->oom = 1;
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++) {
        out[i] = h[i];
        out[i].expr = clone_expr(g, h[i].expr);
        out[i].value = 0;
    }
    return out;
}

static tilec_kernel *instance(gen *g, const tilec_dtype *bound)
{
    g->targs = bound;
    const tilec_kernel *k = g->k;
    tilec_kernel *c = ar_alloc(g->ar, sizeof *c);
    tilec_dtype *targs = ar_array(g->ar, k->ntparams, sizeof *targs);
    tilec_param *params = k->nparams ? ar_array(g->ar, k->nparams, sizeof *params) : NULL;
    tilec_variant *vs = k->nvariants ? ar_array(g->ar, k->nvariants, sizeof *vs) : NULL;
    const char *name = k->name;
    for (uint32_t i = 0; name && i < k->ntparams; i++)
        name = ar_printf(g->ar, "%s__%s", name, tilec_dtype_name(g->targs[i]));
    if (!c || !targs || (k->nparams && !params) || (k->nvariants && !vs) || !name) {
        g->oom = 1;
        return NULL;
    }
    *c = *k;
    c->name = name;
    c->generic = k->name;
    memcpy(targs, g->targs, k->ntparams * sizeof *targs);
    c->targs = targs;
    c->instances = NULL;
    c->ninstances = 0;
    c->gridx = NULL;
    for (uint32_t i = 0; i < k->nparams; i++) {
        params[i] = k->params[i];
        int t = tparam_index(k, params[i].type.tparam);
        if (t >= 0)
            params[i].type.dtype = g->targs[t];
    }
    c->params = params;
    c->grid = clone_exprs(g, k->grid, k->ngrid);
    c->hints = clone_hints(g, k->hints, k->nhints);
    for (uint32_t i = 0; i < k->nvariants; i++) {
        vs[i] = k->variants[i];
        vs[i].overrides = clone_hints(g, k->variants[i].overrides, k->variants[i].noverrides);
        vs[i].values = NULL;
    }
    c->variants = vs;
    c->body = clone_block(g, &k->body);
    g->targs = NULL;
    return g->oom ? NULL : c;
}

/* Every instance of g->k, in the order of the type parameters' dtypes as
 * written (the last type parameter varies fastest), appended to items and
 * kernels. */
static void expand(gen *g, tilec_kernel *k, ar_vec *items, ar_vec *kernels)
{
    uint32_t idx[TILEC_MAX_TPARAMS] = {0};
    tilec_dtype targs[TILEC_MAX_TPARAMS];
    uint64_t n = 1;
    for (uint32_t i = 0; i < k->ntparams; i++)
        n *= k->tparams[i].ndtypes;
    k->instances = ar_array(g->ar, n, sizeof *k->instances);
    if (!k->instances) {
        g->oom = 1;
        return;
    }
    for (uint64_t m = 0; m < n && !g->oom; m++) {
        for (uint32_t i = 0; i < k->ntparams; i++)
            targs[i] = k->tparams[i].dtypes[idx[i]];
        tilec_kernel *c = instance(g, targs);
        tilec_item *it = ar_alloc(g->ar, sizeof *it);
        if (!c || !it || ar_vec_push(g->ar, items, it) || ar_vec_push(g->ar, kernels, c)) {
            g->oom = 1;
            return;
        }
        it->kind = TILEC_ITEM_KERNEL;
        it->u.kernel = c;
        k->instances[k->ninstances++] = c;
        for (uint32_t i = k->ntparams; i-- > 0;) {
            if (++idx[i] < k->tparams[i].ndtypes)
                break;
            idx[i] = 0;
        }
    }
}

int gen_expand(tilec_ctx *ctx, tilec_module *mod)
{
    gen g = {.ctx = ctx, .mod = mod, .ar = &mod->ar};
    int any = 0;
    for (uint32_t i = 0; i < mod->items.n; i++) {
        tilec_item *it = mod->items.v[i];
        char owner[300];
        g.k = NULL;
        if (it->kind == TILEC_ITEM_KERNEL && it->u.kernel->ntparams) {
            g.k = it->u.kernel;
            any = 1;
            check_header(&g);
        } else if (it->kind == TILEC_ITEM_KERNEL) {
            check_types(&g, it->u.kernel->params, it->u.kernel->nparams, NULL, it->u.kernel);
        } else if (it->kind == TILEC_ITEM_EXTERN) {
            snprintf(owner, sizeof owner, "extern '%.200s'", it->u.ext->name);
            check_types(&g, it->u.ext->params, it->u.ext->nparams, owner, NULL);
            check_types(&g, it->u.ext->results, it->u.ext->nresults, owner, NULL);
        } else {
            snprintf(owner, sizeof owner, "graph '%.200s'", it->u.graph->name);
            check_types(&g, it->u.graph->params, it->u.graph->nparams, owner, NULL);
            check_types(&g, it->u.graph->results, it->u.graph->nresults, owner, NULL);
        }
    }
    if (g.bad || !any)
        return g.bad ? -1 : 0;
    ar_vec items = {0}, kernels = {0};
    for (uint32_t i = 0; i < mod->items.n && !g.oom; i++) {
        tilec_item *it = mod->items.v[i];
        if (it->kind != TILEC_ITEM_KERNEL || !it->u.kernel->ntparams) {
            if (ar_vec_push(g.ar, &items, it) || (it->kind == TILEC_ITEM_KERNEL && ar_vec_push(g.ar, &kernels, it->u.kernel)))
                g.oom = 1;
            continue;
        }
        g.k = it->u.kernel;
        if (ar_vec_push(g.ar, &mod->generics, it->u.kernel))
            g.oom = 1;
        else
            expand(&g, it->u.kernel, &items, &kernels);
    }
    if (g.oom) {
        diag_at(ctx, &mod->src, NULL, TILEC_SEV_ERROR, "out of memory while expanding generic kernels");
        return -1;
    }
    mod->items = items;
    mod->kernels = kernels;
    return 0;
}

const char *gen_instance_text(arena *ar, const tilec_kernel *k)
{
    return k->generic ? targs_text(ar, k, k->targs) : NULL;
}
