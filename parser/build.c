/* build.c: the grammar's actions: AST nodes built in the module arena. */
#include <string.h>

#include "grammar.h"
#include "parser/parse.h"
#include "util/strbuf.h"

static void *oom(prs_state *ps)
{
    if (!ps->failed)
        diag_at(ps->ctx, &ps->mod->src, NULL, TILEC_SEV_ERROR, "out of memory while parsing");
    ps->failed = 1;
    return NULL;
}

#define NEED(x)             \
    do {                    \
        if (!(x))           \
            return oom(ps); \
    } while (0)

ar_vec *prs_list(prs_state *ps)
{
    ar_vec *v = ar_alloc(ps->ar, sizeof *v);
    NEED(v);
    return v;
}

ar_vec *prs_push(prs_state *ps, ar_vec *list, void *item)
{
    NEED(list && item);
    NEED(ar_vec_push(ps->ar, list, item) == 0);
    return list;
}

/* ---- syntax errors ---- */

static int is_binop(int k) { return (k >= TK_OROR && k <= TK_PERCENT) || k == TK_LBRACKET; }
static int starts_expr(int k)
{
    return k == TK_INT || k == TK_FLOAT || k == TK_IDENT || k == TK_LPAREN || k == TK_MINUS ||
           k == TK_BANG || k == TK_TILDE || k == TK_TRUE || k == TK_FALSE || k == TK_INF ||
           k == TK_DTYPE || k == TK_LBRACKET;
}
static int starts_stmt(int k) { return k == TK_LET || k == TK_FOR || k == TK_IF || k == TK_RETURN; }

void prs_syntax_error(prs_state *ps, const lex_token *tok, const int *expected, int nexpected)
{
    if (ps->failed)
        return;
    ps->failed = 1;
    const char *found = lex_token_desc(ps->ar, tok);
    if (tok->kind == TK_DOC) {
        diag_at(ps->ctx, &ps->mod->src, &tok->loc, TILEC_SEV_ERROR,
                "a doc comment ('///') may only stand before an item or a statement; use '//' here");
        return;
    }
    /* Name what could come next: drop operators (any expression may go on
     * with one), fold the tokens that start an expression, and where a
     * statement may start, those that start a statement. */
    const char *names[8];
    int n = 0, nstart = 0, nexpr = 12, other = 0, stmt = 0;
    for (int i = 0; i < nexpected; i++) {
        if (starts_expr(expected[i]) && expected[i] != TK_LBRACKET)
            nstart++;
        stmt |= expected[i] == TK_LET;
    }
    int fold = nstart >= nexpr - 1;
    if (stmt)
        names[n++] = "a statement";
    else if (fold)
        names[n++] = "an expression";
    for (int i = 0; i < nexpected; i++) {
        int k = expected[i];
        if ((is_binop(k) && !(k == TK_LBRACKET && nexpected == 1)) || k == TK_ILLEGAL || k == TK_DOC)
            continue;
        if ((fold || stmt) && starts_expr(k))
            continue;
        if (stmt && starts_stmt(k))
            continue;
        if (n < 8)
            names[n++] = lex_kind_name(k);
        else
            other = 1;
    }
    strbuf b;
    sb_init(&b);
    if (n == 0 || n > 4 || other) {
        sb_printf(&b, "unexpected %s", found);
    } else {
        sb_puts(&b, "expected ");
        for (int i = 0; i < n; i++) {
            if (i)
                sb_puts(&b, i == n - 1 ? " or " : ", ");
            sb_puts(&b, names[i]);
        }
        sb_printf(&b, ", found %s", found);
    }
    diag_at(ps->ctx, &ps->mod->src, &tok->loc, TILEC_SEV_ERROR, "%s", sb_str(&b));
    sb_free(&b);
}

void prs_stack_overflow(prs_state *ps, const lex_token *tok)
{
    (void)tok;
    if (ps->failed)
        return;
    ps->failed = 1;
    ps->overflow = 1;
}

/* ---- items ---- */

void prs_doc_item(prs_state *ps, const lex_token *doc)
{
    ps->doc = ps->doc ? ar_printf(ps->ar, "%s\n%s", ps->doc, doc->str) : doc->str;
    if (!ps->doc)
        oom(ps);
}

static const char *take_doc(prs_state *ps)
{
    const char *d = ps->doc;
    ps->doc = NULL;
    return d;
}

void prs_add_item(prs_state *ps, tilec_item_kind kind, void *node)
{
    if (!node) {
        oom(ps);
        return;
    }
    tilec_item *it = ar_alloc(ps->ar, sizeof *it);
    if (!it) {
        oom(ps);
        return;
    }
    it->kind = kind;
    it->u.kernel = node;
    ar_vec *which = kind == TILEC_ITEM_KERNEL   ? &ps->mod->kernels
                    : kind == TILEC_ITEM_EXTERN ? &ps->mod->externs
                                                : &ps->mod->graphs;
    if (ar_vec_push(ps->ar, &ps->mod->items, it) || ar_vec_push(ps->ar, which, node))
        oom(ps);
}

void prs_const_kw(prs_state *ps, const lex_token *kw)
{
    if (strcmp(kw->str, "const") && !ps->failed) {
        diag_at(ps->ctx, &ps->mod->src, &kw->loc, TILEC_SEV_ERROR,
                "expected 'kernel', 'extern', 'graph' or 'const', found identifier '%s'", kw->str);
        ps->failed = 1;
    }
}

void prs_const(prs_state *ps, const lex_token *name, tilec_expr *value)
{
    if (ps->failed)
        return;
    tilec_const *c = ar_alloc(ps->ar, sizeof *c);
    if (!c || !value) {
        oom(ps);
        return;
    }
    c->name = name->str;
    c->loc = name->loc;
    c->expr = value;
    if (ar_vec_push(ps->ar, &ps->mod->consts, c))
        oom(ps);
}

/* Copy a list of struct pointers into an array of structs. */
static void *flatten(prs_state *ps, const ar_vec *v, size_t size, uint32_t *n)
{
    *n = v ? v->n : 0;
    if (!*n)
        return NULL;
    char *out = ar_array(ps->ar, *n, size);
    if (!out)
        return NULL;
    for (uint32_t i = 0; i < *n; i++)
        memcpy(out + i * size, v->v[i], size);
    return out;
}

#define FLATTEN(ps, vec, arr, count)                                   \
    do {                                                               \
        (arr) = flatten(ps, vec, sizeof *(arr), &(count));             \
        NEED((arr) || !(count));                                       \
    } while (0)

tilec_kernel *prs_kernel(prs_state *ps, const lex_token *kw, const lex_token *name, ar_vec *params,
                         ar_vec *grid, ar_vec *hints, prs_tune *tune, prs_variants *variants, ar_vec *body)
{
    NEED(params && body);
    tilec_kernel *k = ar_alloc(ps->ar, sizeof *k);
    NEED(k);
    k->name = name->str;
    k->loc = kw->loc;
    k->doc = take_doc(ps);
    FLATTEN(ps, params, k->params, k->nparams);
    if (grid) {
        k->grid = (tilec_expr **)grid->v;
        k->ngrid = grid->n;
    }
    FLATTEN(ps, hints, k->hints, k->nhints);
    if (tune) {
        NEED(tune->axes);
        k->tune_loc = tune->loc;
        k->tune_keep = (uint32_t)tune->keep;
        FLATTEN(ps, tune->axes, k->tune, k->ntune);
        if (tune->classes) {
            FLATTEN(ps, tune->classes, k->tune_for, k->ntune_for);
            if (!k->tune_for) { /* for { }: the checker reports it */
                k->tune_for = ar_alloc(ps->ar, sizeof *k->tune_for);
                NEED(k->tune_for);
            }
        }
        if (!k->tune) { /* tune { }: the checker reports it */
            k->tune = ar_alloc(ps->ar, sizeof *k->tune);
            NEED(k->tune);
        }
    }
    if (variants) {
        k->has_variants = true;
        k->variants_keyed = variants->keyed;
        k->variant_loc = variants->loc;
        FLATTEN(ps, variants->list, k->variants, k->nvariants);
    }
    k->body.stmts = (tilec_stmt **)body->v;
    k->body.nstmts = body->n;
    return k;
}

tilec_kernel *prs_generic(prs_state *ps, tilec_kernel *k, ar_vec *tparams)
{
    NEED(k && tparams);
    FLATTEN(ps, tparams, k->tparams, k->ntparams);
    return k;
}

tilec_tparam *prs_tparam(prs_state *ps, const lex_token *name, ar_vec *dtypes)
{
    NEED(dtypes);
    tilec_tparam *t = ar_alloc(ps->ar, sizeof *t);
    NEED(t);
    t->name = name->str;
    t->loc = name->loc;
    t->ndtypes = dtypes->n;
    t->dtypes = ar_array(ps->ar, dtypes->n, sizeof *t->dtypes);
    NEED(t->dtypes);
    for (uint32_t i = 0; i < dtypes->n; i++)
        t->dtypes[i] = (tilec_dtype)((const lex_token *)dtypes->v[i])->ival;
    return t;
}

tilec_extern *prs_extern(prs_state *ps, const lex_token *kw, const lex_token *name, ar_vec *params,
                         ar_vec *results, const lex_token *symbol)
{
    NEED(params && results);
    tilec_extern *e = ar_alloc(ps->ar, sizeof *e);
    NEED(e);
    e->name = name->str;
    e->loc = kw->loc;
    e->doc = take_doc(ps);
    FLATTEN(ps, params, e->params, e->nparams);
    FLATTEN(ps, results, e->results, e->nresults);
    e->symbol = symbol->str;
    e->symbol_loc = symbol->loc;
    return e;
}

tilec_graph *prs_graph(prs_state *ps, const lex_token *kw, const lex_token *name, ar_vec *params,
                       ar_vec *results, ar_vec *body)
{
    NEED(params && results && body);
    tilec_graph *g = ar_alloc(ps->ar, sizeof *g);
    NEED(g);
    g->name = name->str;
    g->loc = kw->loc;
    g->doc = take_doc(ps);
    FLATTEN(ps, params, g->params, g->nparams);
    FLATTEN(ps, results, g->results, g->nresults);
    g->body.stmts = (tilec_stmt **)body->v;
    g->body.nstmts = body->n;
    return g;
}

tilec_param *prs_param(prs_state *ps, const lex_token *name, tilec_tyexpr *type)
{
    NEED(type);
    tilec_param *p = ar_alloc(ps->ar, sizeof *p);
    NEED(p);
    p->name = name ? name->str : NULL;
    p->loc = name ? name->loc : type->loc;
    p->type = *type;
    return p;
}

tilec_param *prs_param_out(prs_state *ps, const lex_token *qual, const lex_token *name, tilec_tyexpr *type)
{
    if (strcmp(qual->str, "out")) {
        if (!ps->failed)
            diag_at(ps->ctx, &ps->mod->src, &name->loc, TILEC_SEV_ERROR,
                    "expected ':' after parameter '%s', found '%s' (only 'out' may stand before a parameter name)",
                    qual->str, name->str);
        ps->failed = 1;
    }
    tilec_param *p = prs_param(ps, name, type);
    if (p) {
        p->out = true;
        p->out_loc = qual->loc;
    }
    return p;
}

tilec_tyexpr *prs_type(prs_state *ps, tilec_tyexpr_kind kind, const lex_token *at, const lex_token *dtype,
                       ar_vec *dims)
{
    tilec_tyexpr *t = ar_alloc(ps->ar, sizeof *t);
    NEED(t);
    t->kind = kind;
    t->dtype = (tilec_dtype)dtype->ival;
    t->loc = at->loc;
    if (kind == TILEC_TE_TENSOR || dims) { /* a tensor's shape, or a let's tile of pointers' (`*f16[BLOCK]`) */
        NEED(dims);
        t->dims = (tilec_expr **)dims->v;
        t->ndims = dims->n;
    }
    return t;
}

tilec_tyexpr *prs_type_param(prs_state *ps, tilec_tyexpr_kind kind, const lex_token *at, const lex_token *name)
{
    tilec_tyexpr *t = ar_alloc(ps->ar, sizeof *t);
    NEED(t);
    t->kind = kind;
    t->dtype = TILEC_DT_F32; /* until an instance binds it (parser/generic.c) */
    t->loc = at->loc;
    t->tparam = name->str;
    return t;
}

tilec_hint *prs_hint(prs_state *ps, const lex_token *name, tilec_expr *value)
{
    NEED(value);
    tilec_hint *h = ar_alloc(ps->ar, sizeof *h);
    NEED(h);
    h->name = name->str;
    h->loc = name->loc;
    h->expr = value;
    return h;
}

prs_variants *prs_variants_new(prs_state *ps, const lex_token *kw, bool keyed, ar_vec *list)
{
    NEED(list);
    prs_variants *v = ar_alloc(ps->ar, sizeof *v);
    NEED(v);
    v->loc = kw->loc;
    v->keyed = keyed;
    v->list = list;
    return v;
}

tilec_variant *prs_variant(prs_state *ps, const lex_token *at, ar_vec *overrides)
{
    NEED(overrides);
    tilec_variant *v = ar_alloc(ps->ar, sizeof *v);
    NEED(v);
    v->loc = at->loc;
    FLATTEN(ps, overrides, v->overrides, v->noverrides);
    return v;
}

prs_tune *prs_tune_new(prs_state *ps, const lex_token *kw, const lex_token *word, const lex_token *n, ar_vec *classes,
                       ar_vec *axes)
{
    NEED(axes);
    if (word && strcmp(word->str, "keep") != 0) {
        diag_at(ps->ctx, &ps->mod->src, &word->loc, TILEC_SEV_ERROR,
                "expected '{' or 'keep N' after 'tune', got '%s'", word->str);
        ps->failed = 1;
        return NULL;
    }
    prs_tune *t = ar_alloc(ps->ar, sizeof *t);
    NEED(t);
    t->loc = kw->loc;
    t->axes = axes;
    t->classes = classes;
    if (n) {
        t->keep = n->ival;
        t->keep_loc = n->loc;
        if (n->ival < 1 || n->ival > TILEC_MAX_VARIANTS) {
            diag_at(ps->ctx, &ps->mod->src, &n->loc, TILEC_SEV_ERROR,
                    "tune keep %lld: keep from 1 to %d candidates a shape class", (long long)n->ival,
                    TILEC_MAX_VARIANTS);
            ps->failed = 1;
            return NULL;
        }
    }
    return t;
}

tilec_tune_axis *prs_tune_axis(prs_state *ps, const lex_token *name, ar_vec *values, bool range)
{
    NEED(values);
    tilec_tune_axis *a = ar_alloc(ps->ar, sizeof *a);
    NEED(a);
    a->name = name->str;
    a->loc = name->loc;
    a->range = range;
    a->nvalues = values->n;
    a->values = ar_array(ps->ar, values->n, sizeof *a->values);
    a->value_locs = ar_array(ps->ar, values->n, sizeof *a->value_locs);
    NEED(a->values && a->value_locs);
    for (uint32_t i = 0; i < values->n; i++) {
        const tilec_expr *e = values->v[i];
        NEED(e);
        a->values[i] = e->ival;
        a->value_locs[i] = e->loc;
    }
    return a;
}

/* ---- statements ---- */

static tilec_stmt *stmt_new(prs_state *ps, tilec_stmt_kind kind, tilec_loc loc)
{
    tilec_stmt *s = ar_alloc(ps->ar, sizeof *s);
    if (!s)
        return oom(ps);
    s->kind = kind;
    s->loc = loc;
    return s;
}

static int one_name(prs_state *ps, tilec_stmt *s, const lex_token *name)
{
    s->names = ar_alloc(ps->ar, sizeof *s->names);
    s->name_locs = ar_alloc(ps->ar, sizeof *s->name_locs);
    if (!s->names || !s->name_locs)
        return -1;
    s->names[0] = name->str;
    s->name_locs[0] = name->loc;
    s->nnames = 1;
    return 0;
}

tilec_stmt *prs_let(prs_state *ps, const lex_token *kw, const lex_token *name, tilec_tyexpr *ann, tilec_expr *value)
{
    NEED(value);
    tilec_stmt *s = stmt_new(ps, TILEC_ST_LET, kw->loc);
    NEED(s && one_name(ps, s, name) == 0);
    s->value = value;
    s->ann = ann; /* `let x: T = e`, checked against the value's type (check_stmt.c) */
    return s;
}

tilec_stmt *prs_let_tuple(prs_state *ps, const lex_token *kw, ar_vec *names, tilec_expr *value)
{
    NEED(names && value);
    tilec_stmt *s = stmt_new(ps, TILEC_ST_LET_TUPLE, kw->loc);
    NEED(s);
    s->nnames = names->n;
    s->names = ar_array(ps->ar, names->n, sizeof *s->names);
    s->name_locs = ar_array(ps->ar, names->n, sizeof *s->name_locs);
    NEED(s->names && s->name_locs);
    for (uint32_t i = 0; i < names->n; i++) {
        const lex_token *t = names->v[i];
        s->names[i] = t->str;
        s->name_locs[i] = t->loc;
    }
    s->value = value;
    return s;
}

tilec_stmt *prs_assign(prs_state *ps, const lex_token *name, tilec_expr *value)
{
    NEED(value);
    tilec_stmt *s = stmt_new(ps, TILEC_ST_ASSIGN, name->loc);
    NEED(s && one_name(ps, s, name) == 0);
    s->value = value;
    return s;
}

tilec_stmt *prs_expr_stmt(prs_state *ps, tilec_expr *value)
{
    NEED(value);
    tilec_stmt *s = stmt_new(ps, TILEC_ST_EXPR, value->loc);
    NEED(s);
    s->value = value;
    return s;
}

tilec_stmt *prs_for(prs_state *ps, const lex_token *kw, const lex_token *var, tilec_expr *lo,
                    tilec_expr *hi, tilec_expr *step, ar_vec *body)
{
    NEED(lo && hi && body);
    tilec_stmt *s = stmt_new(ps, TILEC_ST_FOR, kw->loc);
    NEED(s && one_name(ps, s, var) == 0);
    s->lo = lo;
    s->hi = hi;
    s->step = step;
    s->body.stmts = (tilec_stmt **)body->v;
    s->body.nstmts = body->n;
    return s;
}

tilec_stmt *prs_if(prs_state *ps, const lex_token *kw, tilec_expr *cond, ar_vec *then, ar_vec *orelse)
{
    NEED(cond && then);
    tilec_stmt *s = stmt_new(ps, TILEC_ST_IF, kw->loc);
    NEED(s);
    s->value = cond;
    s->body.stmts = (tilec_stmt **)then->v;
    s->body.nstmts = then->n;
    if (orelse) {
        s->has_else = true;
        s->orelse.stmts = (tilec_stmt **)orelse->v;
        s->orelse.nstmts = orelse->n;
    }
    return s;
}

tilec_stmt *prs_return(prs_state *ps, const lex_token *kw, ar_vec *values)
{
    NEED(values);
    tilec_stmt *s = stmt_new(ps, TILEC_ST_RETURN, kw->loc);
    NEED(s);
    s->values = (tilec_expr **)values->v;
    s->nvalues = values->n;
    return s;
}

tilec_stmt *prs_doc_stmt(prs_state *ps, const lex_token *doc)
{
    tilec_stmt *s = stmt_new(ps, TILEC_ST_DOC, doc->loc);
    NEED(s);
    s->text = doc->str;
    return s;
}

lex_token *prs_token(prs_state *ps, const lex_token *tok)
{
    lex_token *t = ar_alloc(ps->ar, sizeof *t);
    NEED(t);
    *t = *tok;
    return t;
}

/* ---- expressions ---- */

/* Left-associative chains (a + b + c ...) do not grow the parser stack, so
 * expression depth is bounded here: every later pass may recurse. */
static tilec_expr *deep_enough(prs_state *ps, tilec_expr *e)
{
    for (uint32_t i = 0; i < e->nargs; i++)
        if (e->args[i]->depth >= e->depth)
            e->depth = e->args[i]->depth + 1;
    if (e->depth > PRS_MAX_NESTING && !ps->failed) {
        diag_at(ps->ctx, &ps->mod->src, &e->loc, TILEC_SEV_ERROR,
                "expression is too deeply nested: more than %d levels of operators and calls", PRS_MAX_NESTING);
        ps->failed = 1;
    }
    return e;
}

static tilec_expr *expr_new(prs_state *ps, tilec_expr_kind kind, tilec_loc loc, uint32_t nargs)
{
    tilec_expr *e = ar_alloc(ps->ar, sizeof *e);
    if (!e)
        return oom(ps);
    e->kind = kind;
    e->loc = loc;
    e->depth = 1;
    if (nargs) {
        e->args = ar_array(ps->ar, nargs, sizeof *e->args);
        if (!e->args)
            return oom(ps);
        e->nargs = nargs;
    }
    return e;
}

tilec_expr *prs_literal(prs_state *ps, tilec_expr_kind kind, const lex_token *tok)
{
    tilec_expr *e = expr_new(ps, kind, tok->loc, 0);
    NEED(e);
    e->ival = tok->ival;
    e->fval = tok->fval;
    e->name = tok->str;
    if (kind == TILEC_EX_DTYPE)
        e->dtype = (tilec_dtype)tok->ival;
    return e;
}

tilec_expr *prs_unary(prs_state *ps, tilec_op op, const lex_token *optok, tilec_expr *a)
{
    NEED(a);
    tilec_expr *e = expr_new(ps, TILEC_EX_UNARY, optok->loc, 1);
    NEED(e);
    e->op = op;
    e->args[0] = a;
    return deep_enough(ps, e);
}

tilec_expr *prs_binary(prs_state *ps, tilec_op op, const lex_token *optok, tilec_expr *a, tilec_expr *b)
{
    NEED(a && b);
    tilec_expr *e = expr_new(ps, TILEC_EX_BINARY, optok->loc, 2);
    NEED(e);
    e->op = op;
    e->args[0] = a;
    e->args[1] = b;
    return deep_enough(ps, e);
}

tilec_expr *prs_call(prs_state *ps, const lex_token *name, ar_vec *args)
{
    NEED(args);
    tilec_expr *e = expr_new(ps, TILEC_EX_CALL, name->loc, 0);
    NEED(e);
    e->name = name->str;
    e->args = (tilec_expr **)args->v;
    e->nargs = args->n;
    return deep_enough(ps, e);
}

tilec_expr *prs_index(prs_state *ps, const lex_token *bracket, tilec_expr *base, ar_vec *items)
{
    NEED(base && items);
    tilec_expr *e = expr_new(ps, TILEC_EX_INDEX, bracket->loc, items->n + 1);
    NEED(e);
    e->args[0] = base;
    memcpy(e->args + 1, items->v, items->n * sizeof *e->args);
    return deep_enough(ps, e);
}

/* lo:hi:step inside an index (a bounded slice, tilec/ast.h): the parts
 * not written are literals (0, 0 standing for the axis' end, 1) and ival
 * says which were written. */
tilec_expr *prs_slice(prs_state *ps, const lex_token *colon, tilec_expr *lo, tilec_expr *hi, tilec_expr *step)
{
    if (ps->failed)
        return NULL;
    tilec_expr *e = expr_new(ps, TILEC_EX_SLICE, colon->loc, 3);
    NEED(e);
    tilec_expr *part[3] = {lo, hi, step};
    for (int i = 0; i < 3; i++) {
        if (part[i]) {
            e->ival |= (int64_t)1 << i;
        } else {
            part[i] = expr_new(ps, TILEC_EX_INT, colon->loc, 0);
            NEED(part[i]);
            part[i]->ival = i == 2;
        }
        e->args[i] = part[i];
    }
    return deep_enough(ps, e);
}

tilec_expr *prs_list_expr(prs_state *ps, const lex_token *bracket, ar_vec *items)
{
    NEED(items);
    tilec_expr *e = expr_new(ps, TILEC_EX_LIST, bracket->loc, 0);
    NEED(e);
    e->args = (tilec_expr **)items->v;
    e->nargs = items->n;
    return deep_enough(ps, e);
}
