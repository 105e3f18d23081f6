/* check_graph.c: graphs: their statements (empty, view, calls, return)
 * and declared results. */
#include <string.h>

#include "parser/check_internal.h"

static void check_graph_block(checker *ck, tilec_graph *g, const tilec_block *body, int top, chk_gone **gone);

/* A view keeps the bytes: numel * size of the tensor viewed (`from`, its
 * dims) must equal the view's as polynomials. `what` opens the message,
 * "view of 'x' (f32[N]"; 0 when equal (or unknown), else 1 (reported). */
int chk_view_bytes(checker *ck, const tilec_loc *at, const char *what, tilec_dtype from, const poly *const *fdims,
    uint32_t frank, tilec_dtype dt, const poly *const *dims, uint32_t rank)
{
    poly_why why = {0};
    poly *have = poly_const(&ck->scratch, tilec_dtype_size(from));
    poly *want = poly_const(&ck->scratch, tilec_dtype_size(dt));
    for (uint32_t d = 0; d < frank; d++)
        have = poly_mul(&ck->scratch, have, fdims[d], &why);
    for (uint32_t d = 0; d < rank; d++)
        want = poly_mul(&ck->scratch, want, dims[d], &why);
    if ((!have || !want) && chk_size_limit_err(ck, at, &why, "the byte size of the view"))
        return 1;
    if (have && want && !poly_eq(have, want)) {
        chk_err(ck, at, "%s, %s bytes) as %s (%s bytes) changes its size", what ? what : "view", poly_str(&ck->scratch, have),
            chk_tensor_text(ck, dt, (const poly **)dims, rank), poly_str(&ck->scratch, want));
        return 1;
    }
    return 0;
}

static void check_graph_stmt(checker *ck, tilec_graph *g, tilec_stmt *s, int last, chk_gone **gone)
{
    const tilec_expr *v = s->value;
    switch (s->kind) {
    case TILEC_ST_DOC:
        return;
    case TILEC_ST_FOR:
        if (chk_graph_gone(ck, *gone, s))
            return;
        if (chk_graph_for_head(ck, s))
            check_graph_block(ck, g, &s->body, 0, gone);
        chk_graph_for_end(ck, gone);
        return;
    case TILEC_ST_IF:
    case TILEC_ST_ASSIGN:
        chk_err(ck, &s->loc, "%s is not allowed in a graph: a graph is host code without branches",
            s->kind == TILEC_ST_IF ? "'if'" : "assignment");
        return;
    case TILEC_ST_RETURN: {
        if (!last)
            chk_err(ck, &s->loc, "return must be the last statement of graph '%s'", g->name);
        if (s->nvalues != g->nresults) {
            chk_err(ck, &s->loc, "graph '%s' returns %u value%s, but its signature declares %u", g->name, s->nvalues,
                s->nvalues == 1 ? "" : "s", g->nresults);
            return;
        }
        for (uint32_t i = 0; i < s->nvalues; i++) {
            const tilec_expr *a = s->values[i];
            const tilec_param *r = &g->results[i];
            for (uint32_t j = 0; j < i && a->kind == TILEC_EX_NAME; j++)
                if (s->values[j]->kind == TILEC_EX_NAME && !strcmp(s->values[j]->name, a->name))
                    chk_err(ck, &a->loc, "graph '%s' returns '%s' twice: each result is a buffer of its own (copy it "
                        "into a second one to return it twice)", g->name, a->name);
            const poly **dims = ck->rdims ? ck->rdims[i] : NULL;
            int item;
            const binding *list = chk_list_item(ck, a, &item, NULL);
            if (item) {
                if (list)
                    chk_err(ck, chk_start_of(a), "result %u of graph '%s' is %s, one tensor of tensor list '%s': the caller "
                        "has that tensor (a graph returns the tensors it makes)", i + 1, g->name, chk_spelled(ck, a),
                        list->name);
                continue;
            }
            binding *b = chk_tensor_arg(ck, a, ar_printf(&ck->scratch, "result %u of graph '%s'", i + 1, g->name),
                                    dims ? chk_tensor_text(ck, r->type.dtype, dims, r->type.ndims) : "a tensor");
            if (b && b->listed) {
                chk_err(ck, &a->loc, "result %u of graph '%s' is '%s', a view of one tensor of a tensor list: the caller "
                    "has that tensor (not yet returned as a view)", i + 1, g->name, a->name);
                continue;
            }
            if (!b || !dims)
                continue;
            int same = b->dtype == r->type.dtype && b->rank == r->type.ndims;
            for (uint32_t d = 0; same && d < b->rank; d++)
                same = poly_eq(b->dims[d], dims[d]);
            if (!same)
                chk_err(ck, &a->loc, "result %u of graph '%s'%s%s%s is declared %s, but '%s' is %s", i + 1, g->name,
                    r->name ? " ('" : "", r->name ? r->name : "", r->name ? "')" : "",
                    chk_tensor_text(ck, r->type.dtype, dims, r->type.ndims), b->name, b->text);
        }
        return;
    }
    case TILEC_ST_LET:
    case TILEC_ST_LET_TUPLE:
    case TILEC_ST_EXPR:
        break;
    }
    if (chk_graph_gone(ck, *gone, s) || chk_graph_let_list(ck, s) || chk_graph_slice(ck, s))
        return;
    if (v->kind != TILEC_EX_CALL) {
        if (s->kind == TILEC_ST_EXPR)
            chk_err(ck, chk_start_of(v), "a graph statement is a call of a kernel or an extern");
        else
            chk_err(ck, chk_start_of(v), "a graph 'let' binds empty(...), view(...), a slice x[a:b], a collective, the "
                "result of an extern call or a tensor list (a sub-list xs[a:b], a list [a, b] of tensors)");
        return;
    }
    item_name *it = NULL;
    HASH_FIND_STR(ck->items, v->name, it);
    s->types = ar_array(ck->ar, s->nnames ? s->nnames : 1, sizeof *s->types);
    if (!s->types) {
        ck->oom = 1;
        return;
    }
    if (chk_graph_alloc(ck, s) || chk_graph_coll(ck, s))
        return;
    if (!strcmp(v->name, "view")) {
        if (s->kind != TILEC_ST_LET) {
            chk_err(ck, &v->loc, "bind the result of %s with let name = %s(...)", v->name, v->name);
            return;
        }
        if (v->nargs != 2) {
            chk_err(ck, &v->loc, "%s takes 2 arguments, got %u", v->name, v->nargs);
            return;
        }
        int item;
        const binding *elem; /* view(xs[i], T[...]): sizes checked at run time, or here where the tensor is known */
        const binding *list = chk_list_item(ck, v->args[0], &item, &elem);
        binding *base = item ? NULL : chk_tensor_arg(ck, v->args[0], "the first argument of view", NULL);
        const tilec_expr *shape = v->args[1];
        if (shape->kind != TILEC_EX_INDEX || shape->args[0]->kind != TILEC_EX_DTYPE) {
            chk_err(ck, &shape->loc, "the second argument of view is a tensor type such as f32[R * C]");
            return;
        }
        tilec_dtype dt = shape->args[0]->dtype;
        uint32_t rank = shape->nargs - 1;
        const poly **dims = ar_array(&ck->scratch, rank ? rank : 1, sizeof *dims);
        if (!dims) {
            ck->oom = 1;
            return;
        }
        for (uint32_t d = 0; d < rank; d++)
            if (!(dims[d] = chk_size_expr(ck, shape->args[1 + d], "a tensor size")))
                return;
        const binding *from = elem ? elem : base;
        const char *what = !from ? NULL
                           : elem ? ar_printf(&ck->scratch, "view of %s ('%s', %s", chk_spelled(ck, v->args[0]), elem->name,
                                              elem->text)
                                  : ar_printf(&ck->scratch, "view of '%s' (%s", base->name, base->text);
        if (from && chk_view_bytes(ck, &shape->args[0]->loc, what, from->dtype, from->dims, from->rank, dt, dims, rank))
            return;
        if (!base && !(item && list))
            return;
        binding *b = chk_bind_tensor(ck, s->names[0], &s->name_locs[0], dt, dims, rank);
        if (b) {
            s->types[0] = b->text;
            b->listed = item || base->listed;
        }
        return;
    }
    if (!it) {
        chk_err(ck, &v->loc, "unknown kernel or extern '%s'", v->name);
        return;
    }
    if (it->kind == TILEC_ITEM_GRAPH) {
        chk_err(ck, &v->loc, "'%s' is a graph; a graph calls kernels and externs", v->name);
        return;
    }
    if (it->kind == TILEC_ITEM_KERNEL) {
        if (s->kind != TILEC_ST_EXPR) {
            chk_err(ck, &v->loc, "kernel '%s' returns nothing; allocate its output with empty(...) and pass it", v->name);
            return;
        }
        const tilec_kernel *k = it->node;
        if (k->ntparams && !(k = chk_pick_instance(ck, k, s->value)))
            return;
        chk_kernel_call(ck, k, v);
        return;
    }
    const tilec_extern *x = it->node;
    uint32_t want = s->kind == TILEC_ST_EXPR ? 0 : s->nnames;
    if (x->nresults != want) {
        if (s->kind == TILEC_ST_EXPR)
            chk_err(ck, &v->loc, "the result%s of extern '%s' must be bound with let", x->nresults == 1 ? "" : "s", x->name);
        else if (x->nresults == 0)
            chk_err(ck, &v->loc, "extern '%s' returns nothing; it writes into its arguments", x->name);
        else
            chk_err(ck, &v->loc, "extern '%s' returns %u result%s, but %u name%s bound", x->name, x->nresults,
                x->nresults == 1 ? "" : "s", want, want == 1 ? " is" : "s are");
        return;
    }
    const poly ***res = chk_extern_call(ck, x, v);
    if (!res)
        return;
    for (uint32_t r = 0; r < want; r++) {
        binding *b = chk_bind_tensor(ck, s->names[r], &s->name_locs[r], x->results[r].type.dtype, res[r],
                                 x->results[r].type.ndims);
        if (b)
            s->types[r] = b->text;
    }
}

/* The statements of the graph (top) or of a for loop's body. */
/* `let y: T = ...` in a graph: T the element type of the tensor bound
 * (docs/language.md §5); nothing converts. */
static void check_graph_let_type(checker *ck, const tilec_stmt *s)
{
    const tilec_tyexpr *a = s->ann;
    const binding *b = chk_lookup(ck, s->names[0]);
    if (!b || chk_poisoned(b))
        return;
    if (a->kind != TILEC_TE_SCALAR || a->tparam) {
        chk_err(ck, &a->loc, "the type of a graph's let is the element type of its tensor, such as f32 (its sizes "
            "are the value's)");
        return;
    }
    if (b->kind != B_TENSOR) {
        chk_err(ck, &a->loc, "'%s' is a tensor list; its let takes no type", s->names[0]);
        return;
    }
    if (b->dtype != a->dtype) {
        chk_err(ck, &s->name_locs[0], "'%s' is declared %s, but its value is %s", s->names[0],
            tilec_dtype_name(a->dtype), b->text);
        chk_note(ck, &a->loc, "the type of '%s' is written here", s->names[0]);
    }
}

static void check_graph_block(checker *ck, tilec_graph *g, const tilec_block *body, int top, chk_gone **gone)
{
    /* trailing doc comments do not count as statements after return */
    uint32_t last_real = 0;
    for (uint32_t i = 0; i < body->nstmts; i++)
        if (body->stmts[i]->kind != TILEC_ST_DOC)
            last_real = i;
    for (uint32_t i = 0; i < body->nstmts && !chk_stop(ck); i++) {
        tilec_stmt *s = body->stmts[i];
        check_graph_stmt(ck, g, s, top && i >= last_real, gone);
        if (s->kind == TILEC_ST_LET && s->ann)
            check_graph_let_type(ck, s);
        /* a let that failed still defines its names, so that their uses
         * do not repeat the error as "undefined name" */
        for (uint32_t j = 0; (s->kind == TILEC_ST_LET || s->kind == TILEC_ST_LET_TUPLE) && j < s->nnames; j++)
            if (!chk_lookup(ck, s->names[j]))
                chk_bind(ck, s->names[j], &s->name_locs[j], B_TENSOR, "tensor");
    }
}

void chk_graph(checker *ck, tilec_graph *g)
{
    chk_reset_graph(ck);
    if (g->body.nstmts > TILEC_MAX_GRAPH_STMTS) {
        chk_err(ck, &g->loc, "graph '%s' has %u statements (the limit is %d)", g->name, g->body.nstmts,
            TILEC_MAX_GRAPH_STMTS);
        return;
    }
    char owner[300];
    snprintf(owner, sizeof owner, "graph '%.200s'", g->name);
    chk_graph_world(ck, g);
    for (uint32_t i = 0; i < g->nparams; i++) {
        const tilec_param *p = &g->params[i];
        if (p->type.kind == TILEC_TE_POINTER) {
            chk_err(ck, &p->type.loc, "a graph parameter is a tensor such as %s[R, C], a tensor list such as [*%s] or "
                "a scalar, not a pointer", tilec_dtype_name(p->type.dtype), tilec_dtype_name(p->type.dtype));
            chk_bind(ck, p->name, &p->loc, B_TENSOR, "parameter"); /* in error: its uses are silent */
            continue;
        }
        if (p->type.kind == TILEC_TE_LIST) { /* the caller's tensors, handed whole to kernels' list parameters */
            binding *b = chk_bind(ck, p->name, &p->loc, B_LIST, "parameter");
            if (b) {
                b->type = chk_ty_scalar(p->type.dtype);
                b->type.list = true;
                b->dtype = p->type.dtype;
                b->text = chk_list_text(ck, p->type.dtype);
            }
            continue;
        }
        if (p->type.kind == TILEC_TE_SCALAR) {
            binding *b = chk_bind(ck, p->name, &p->loc, B_SCALAR, "parameter");
            if (b)
                b->type = chk_ty_scalar(p->type.dtype);
            continue;
        }
        const poly **dims = chk_bind_dims(ck, p, owner) ? NULL : chk_tensor_dims(ck, &p->type, "a dimension");
        if (dims)
            chk_bind_tensor(ck, p->name, &p->loc, p->type.dtype, dims, p->type.ndims);
        else
            chk_bind(ck, p->name, &p->loc, B_TENSOR, "parameter"); /* in error: its uses are silent */
    }
    ck->rdims = ar_array(&ck->scratch, g->nresults ? g->nresults : 1, sizeof *ck->rdims);
    if (!ck->rdims)
        ck->oom = 1;
    for (uint32_t i = 0; i < g->nresults && ck->rdims; i++) {
        const tilec_param *r = &g->results[i];
        if (r->type.kind != TILEC_TE_TENSOR)
            chk_err(ck, &r->type.loc, "a graph result is a tensor type such as %s[R, C], got %s",
                tilec_dtype_name(r->type.dtype), chk_tyexpr_str(ck, &r->type));
        else
            ck->rdims[i] = chk_tensor_dims(ck, &r->type, "a result dimension");
        for (uint32_t j = 0; j < i && r->name; j++)
            if (g->results[j].name && !strcmp(g->results[j].name, r->name)) {
                chk_err(ck, &r->loc, "result name '%s' is used twice", r->name);
                chk_note(ck, &g->results[j].loc, "the first '%s' is here", r->name);
                break;
            }
    }
    int returned = 0;
    for (uint32_t i = 0; i < g->body.nstmts; i++)
        returned |= g->body.stmts[i]->kind == TILEC_ST_RETURN;
    chk_gone *gone = NULL;
    check_graph_block(ck, g, &g->body, 1, &gone);
    chk_graph_gone_free(&gone);
    chk_graph_outs(ck, g);
    if (!returned && g->nresults)
        chk_err(ck, &g->loc, "graph '%s' declares %u result%s but has no return", g->name, g->nresults,
            g->nresults == 1 ? "" : "s");
}
