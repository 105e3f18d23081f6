/* check_out.c: `out` graph parameters (`graph g(x: f32[N], out y: f32[N])`):
 * a tensor the caller provides for the graph to write, checked for dtype
 * and shape like an input. Only a graph's tensor parameter may be out; the
 * graph must pass it to a kernel or an extern (or view it) and must not
 * return it (the caller has it already). */
#include <string.h>

#include "parser/check_internal.h"

void chk_no_out(checker *ck, const tilec_param *p, uint32_t n, const char *owner)
{
    for (uint32_t i = 0; i < n; i++)
        if (p[i].out)
            chk_err(ck, &p[i].out_loc, "'out' marks a graph's tensor parameter that the caller provides for the graph "
                    "to write; %s takes no 'out' (drop it)", owner);
}

/* Does statement s hand tensor `name` to something that may write it? */
static int out_written_by(const tilec_stmt *s, const char *name)
{
    const tilec_expr *v = s->value;
    for (uint32_t i = 0; s->kind == TILEC_ST_FOR && i < s->body.nstmts; i++)
        if (out_written_by(s->body.stmts[i], name))
            return 1;
    if (v && v->kind == TILEC_EX_INDEX && v->nargs && v->args[0]->kind == TILEC_EX_NAME &&
        !strcmp(v->args[0]->name, name))
        return 1; /* a slice, as a view */
    if (v && v->kind == TILEC_EX_LIST && s->kind == TILEC_ST_LET) /* let ys = [a, y]: a list a kernel may write */
        for (uint32_t a = 0; a < v->nargs; a++)
            if (v->args[a]->kind == TILEC_EX_NAME && !strcmp(v->args[a]->name, name))
                return 1;
    if (!v || v->kind != TILEC_EX_CALL || (s->kind != TILEC_ST_EXPR && strcmp(v->name, "view")))
        return 0;
    for (uint32_t a = 0; a < v->nargs; a++) {
        const tilec_expr *e = v->args[a];
        if (e->kind == TILEC_EX_NAME && !strcmp(e->name, name))
            return 1;
        for (uint32_t j = 0; e->kind == TILEC_EX_LIST && j < e->nargs; j++) /* k([a, y]) */
            if (e->args[j]->kind == TILEC_EX_NAME && !strcmp(e->args[j]->name, name))
                return 1;
    }
    return 0;
}

void chk_graph_outs(checker *ck, const tilec_graph *g)
{
    for (uint32_t i = 0; i < g->nparams; i++) {
        const tilec_param *p = &g->params[i];
        if (!p->out)
            continue;
        if (p->type.kind == TILEC_TE_LIST) {
            chk_err(ck, &p->out_loc, "'out' marks a tensor parameter; '%s' is a tensor list, whose tensors the kernels "
                    "it is passed to write in place (drop 'out')", p->name);
            continue;
        }
        if (p->type.kind != TILEC_TE_TENSOR) {
            chk_err(ck, &p->out_loc, "'out' marks a tensor parameter, but '%s' is the scalar %s", p->name,
                    tilec_dtype_name(p->type.dtype));
            continue;
        }
        int written = 0;
        for (uint32_t j = 0; j < g->body.nstmts; j++) {
            const tilec_stmt *s = g->body.stmts[j];
            written |= out_written_by(s, p->name);
            for (uint32_t r = 0; s->kind == TILEC_ST_RETURN && r < s->nvalues; r++)
                if (s->values[r]->kind == TILEC_EX_NAME && !strcmp(s->values[r]->name, p->name))
                    chk_err(ck, &s->values[r]->loc, "'%s' is an out parameter of graph '%s': the caller has it "
                            "already, so it is not returned", p->name, g->name);
        }
        if (!written)
            chk_err(ck, &p->loc, "out parameter '%s' of graph '%s' is never written: pass it to a kernel or an "
                    "extern, or drop 'out'", p->name, g->name);
    }
}
