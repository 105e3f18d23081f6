/* dump.c: the stable text form of a checked module (`tilec --emit ast`).
 * Binary expressions are fully parenthesized so the dump shows precedence;
 * lets carry their checked types; statements end with @line:col. */
#include <string.h>

#include "parser/parse.h"
#include "parser/tune.h"
#include "util/strbuf.h"

/* Binding strength for the text a user writes: the grammar's precedence
 * table (grammar.y), binary operators in tilec_op order, then unary,
 * then calls, indexing and leaves. */
static int text_prec(const tilec_expr *e)
{
    static const signed char binary[] = {1, 2, 3, 4, 5, 6, 6, 7, 7, 7, 7, 8, 8, 9, 9, 10, 10, 10};
    if (e->kind == TILEC_EX_BINARY)
        return (unsigned)e->op < sizeof binary ? binary[e->op] : 0;
    return e->kind == TILEC_EX_UNARY ? 11 : 12;
}

enum { FULL = -1 }; /* expr_out's `min` for the dump: every operator in parentheses */

static void expr_out(strbuf *b, const tilec_expr *e, int min);

static void list_out(strbuf *b, tilec_expr *const *v, uint32_t n, int full)
{
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            sb_puts(b, ", ");
        expr_out(b, v[i], full ? FULL : 0);
    }
}

/* e as the dump writes it (min FULL), or as a user writes it: in
 * parentheses only where it binds less tightly than `min`. */
static void expr_out(strbuf *b, const tilec_expr *e, int min)
{
    int full = min == FULL, p = text_prec(e);
    int paren = full ? e->kind == TILEC_EX_UNARY || e->kind == TILEC_EX_BINARY : p < min;
    if (paren)
        sb_putc(b, '(');
    switch (e->kind) {
    case TILEC_EX_INT: sb_printf(b, "%lld", (long long)e->ival); break;
    case TILEC_EX_FLOAT: sb_puts(b, e->name); break;
    case TILEC_EX_BOOL: sb_puts(b, e->ival ? "true" : "false"); break;
    case TILEC_EX_INF: sb_puts(b, "inf"); break;
    case TILEC_EX_NAME: sb_puts(b, e->name); break;
    case TILEC_EX_DTYPE: sb_puts(b, tilec_dtype_name(e->dtype)); break;
    case TILEC_EX_UNARY:
        sb_puts(b, tilec_op_spelling(e->op));
        expr_out(b, e->args[0], full ? FULL : 11);
        break;
    case TILEC_EX_BINARY: { /* left-associative: a right operand of equal strength keeps its parentheses */
        /* a comparison under `|`, `^` or `&` keeps them too, as users write it: (c < N) & m */
        int bits = p >= 3 && p <= 5, lp = text_prec(e->args[0]), rp = text_prec(e->args[1]);
        expr_out(b, e->args[0], full ? FULL : bits && lp >= 6 && lp <= 7 ? 13 : p);
        sb_printf(b, " %s ", tilec_op_spelling(e->op));
        expr_out(b, e->args[1], full ? FULL : bits && rp >= 6 && rp <= 7 ? 13 : p + 1);
        break;
    }
    case TILEC_EX_CALL:
        sb_printf(b, "%s(", e->name);
        list_out(b, e->args, e->nargs, full);
        sb_putc(b, ')');
        break;
    case TILEC_EX_INDEX:
        expr_out(b, e->args[0], full ? FULL : 12);
        sb_putc(b, '[');
        list_out(b, e->args + 1, e->nargs - 1, full);
        sb_putc(b, ']');
        break;
    case TILEC_EX_LIST:
        sb_putc(b, '[');
        list_out(b, e->args, e->nargs, full);
        sb_putc(b, ']');
        break;
    case TILEC_EX_SLICE:
        if (e->nargs && e->ival & 1)
            expr_out(b, e->args[0], full ? FULL : 0);
        sb_putc(b, ':');
        if (e->nargs && e->ival & 2)
            expr_out(b, e->args[1], full ? FULL : 0);
        if (e->nargs && e->ival & 4) {
            sb_putc(b, ':');
            expr_out(b, e->args[2], full ? FULL : 0);
        }
        break;
    case TILEC_EX_NONE: sb_puts(b, "None"); break;
    }
    if (paren)
        sb_putc(b, ')');
}

static void dump_expr(strbuf *b, const tilec_expr *e)
{
    expr_out(b, e, FULL);
}

static void dump_list(strbuf *b, tilec_expr *const *v, uint32_t n)
{
    list_out(b, v, n, 1);
}

void dump_expr_text(strbuf *b, const tilec_expr *e)
{
    expr_out(b, e, 0);
}

static void dump_type(strbuf *b, const tilec_type *t)
{
    if (t->kind != TILEC_TY_VALUE)
        return;
    sb_printf(b, ": %s%s", t->ptr ? "*" : "", tilec_dtype_name(t->dtype));
    if (t->rank) {
        sb_putc(b, '[');
        for (unsigned i = 0; i < t->rank; i++)
            sb_printf(b, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
        sb_putc(b, ']');
    }
}

static void dump_tyexpr(strbuf *b, const tilec_tyexpr *t)
{
    if (t->kind == TILEC_TE_LIST) {
        sb_printf(b, "[*%s]", tilec_dtype_name(t->dtype));
        return;
    }
    sb_printf(b, "%s%s", t->kind == TILEC_TE_POINTER ? "*" : "", tilec_dtype_name(t->dtype));
    if (t->kind == TILEC_TE_TENSOR) {
        sb_putc(b, '[');
        dump_list(b, t->dims, t->ndims);
        sb_putc(b, ']');
    }
}

static void dump_params(strbuf *b, const tilec_param *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            sb_puts(b, ", ");
        if (p[i].name)
            sb_printf(b, "%s%s: ", p[i].out ? "out " : "", p[i].name);
        dump_tyexpr(b, &p[i].type);
    }
}

static void dump_results(strbuf *b, const tilec_param *r, uint32_t n)
{
    if (!n)
        return;
    sb_puts(b, " -> (");
    dump_params(b, r, n);
    sb_putc(b, ')');
}

static void indent(strbuf *b, int depth)
{
    for (int i = 0; i < depth; i++)
        sb_puts(b, "    ");
}

static void at(strbuf *b, const tilec_loc *l) { sb_printf(b, "  @%u:%u\n", l->line, l->col); }

static void dump_block(strbuf *b, const tilec_block *blk, int depth);

static void dump_doc(strbuf *b, const char *doc, int depth)
{
    if (!doc)
        return;
    const char *p = doc;
    for (;;) {
        const char *nl = strchr(p, '\n');
        indent(b, depth);
        sb_printf(b, "/// %.*s\n", (int)(nl ? nl - p : (long)strlen(p)), p);
        if (!nl)
            break;
        p = nl + 1;
    }
}

static void dump_stmt(strbuf *b, const tilec_stmt *s, int depth)
{
    indent(b, depth);
    switch (s->kind) {
    case TILEC_ST_LET:
        sb_printf(b, "let %s", s->names[0]);
        if (s->types && s->types[0])
            sb_printf(b, ": %s", s->types[0]);
        else
            dump_type(b, &s->value->type);
        sb_puts(b, " = ");
        dump_expr(b, s->value);
        sb_putc(b, ';');
        break;
    case TILEC_ST_LET_TUPLE:
        sb_puts(b, "let (");
        for (uint32_t i = 0; i < s->nnames; i++) {
            sb_printf(b, "%s%s", i ? ", " : "", s->names[i]);
            if (s->types && s->types[i])
                sb_printf(b, ": %s", s->types[i]);
        }
        sb_puts(b, ") = ");
        dump_expr(b, s->value);
        sb_putc(b, ';');
        break;
    case TILEC_ST_ASSIGN:
        sb_printf(b, "%s = ", s->names[0]);
        dump_expr(b, s->value);
        sb_putc(b, ';');
        break;
    case TILEC_ST_EXPR:
        dump_expr(b, s->value);
        sb_putc(b, ';');
        break;
    case TILEC_ST_FOR:
        sb_printf(b, "for %s in ", s->names[0]);
        dump_expr(b, s->lo);
        sb_puts(b, " .. ");
        dump_expr(b, s->hi);
        if (s->step) {
            sb_puts(b, " step ");
            dump_expr(b, s->step);
        }
        sb_puts(b, " {");
        at(b, &s->loc);
        dump_block(b, &s->body, depth + 1);
        indent(b, depth);
        sb_puts(b, "}\n");
        return;
    case TILEC_ST_IF:
        sb_puts(b, "if ");
        dump_expr(b, s->value);
        sb_puts(b, " {");
        at(b, &s->loc);
        dump_block(b, &s->body, depth + 1);
        indent(b, depth);
        sb_puts(b, "}\n");
        if (s->has_else) {
            indent(b, depth);
            sb_puts(b, "else {\n");
            dump_block(b, &s->orelse, depth + 1);
            indent(b, depth);
            sb_puts(b, "}\n");
        }
        return;
    case TILEC_ST_RETURN:
        sb_puts(b, "return");
        if (s->nvalues)
            sb_putc(b, ' ');
        dump_list(b, s->values, s->nvalues);
        sb_putc(b, ';');
        break;
    case TILEC_ST_DOC:
        sb_printf(b, "/// %s", s->text);
        break;
    }
    at(b, &s->loc);
}

static void dump_block(strbuf *b, const tilec_block *blk, int depth)
{
    for (uint32_t i = 0; i < blk->nstmts; i++)
        dump_stmt(b, blk->stmts[i], depth);
}

static void dump_hints(strbuf *b, const tilec_hint *h, uint32_t n)
{
    sb_puts(b, "{ ");
    for (uint32_t i = 0; i < n; i++)
        sb_printf(b, "%s%s = %lld", i ? ", " : "", h[i].name, (long long)h[i].value);
    sb_puts(b, n ? " }" : "}");
}

static void dump_kernel(strbuf *b, const tilec_kernel *k)
{
    dump_doc(b, k->doc, 0);
    sb_printf(b, "kernel %s(", k->name);
    dump_params(b, k->params, k->nparams);
    sb_putc(b, ')');
    at(b, &k->loc);
    if (k->generic) {
        sb_printf(b, "    instance of %s<", k->generic);
        for (uint32_t i = 0; i < k->ntparams; i++) {
            sb_printf(b, "%s%s: ", i ? ", " : "", k->tparams[i].name);
            for (uint32_t d = 0; d < k->tparams[i].ndtypes; d++)
                sb_printf(b, "%s%s", d ? " | " : "", tilec_dtype_name(k->tparams[i].dtypes[d]));
        }
        sb_puts(b, "> with ");
        for (uint32_t i = 0; i < k->ntparams; i++)
            sb_printf(b, "%s%s = %s", i ? ", " : "", k->tparams[i].name, tilec_dtype_name(k->targs[i]));
        sb_putc(b, '\n');
    }
    sb_puts(b, "    grid (");
    dump_list(b, k->grid, k->ngrid);
    sb_puts(b, ")\n    hints ");
    dump_hints(b, k->hints + k->ntune_hints, k->nhints - k->ntune_hints);
    sb_putc(b, '\n');
    if (k->ntune) {
        sb_puts(b, "    tune");
        if (k->tune_default)
            sb_printf(b, " (the default space of %s kernel)", chk_tune_kind_name(chk_tune_kind(k)));
        if (k->tune_keep)
            sb_printf(b, " keep %u", k->tune_keep);
        if (k->ntune_for) {
            sb_puts(b, " for {");
            for (uint32_t i = 0; i < k->ntune_for; i++) {
                sb_printf(b, "%s %s =", i ? "," : "", k->tune_for[i].name);
                for (uint32_t j = 0; j < k->tune_for[i].nvalues; j++)
                    sb_printf(b, "%s %lld", j ? " |" : "", (long long)k->tune_for[i].values[j]);
            }
            sb_puts(b, " }");
        }
        sb_puts(b, " {");
        for (uint32_t i = 0; i < k->ntune; i++) {
            sb_printf(b, "%s %s =", i ? "," : "", k->tune[i].name);
            for (uint32_t j = 0; j < k->tune[i].nvalues; j++)
                sb_printf(b, "%s %lld", j ? " |" : "", (long long)k->tune[i].values[j]);
        }
        sb_printf(b, " }  @%u:%u\n", k->tune_loc.line, k->tune_loc.col);
        for (uint32_t i = 0; i < k->nvariants; i++) {
            sb_printf(b, "        candidate %u:", i);
            for (uint32_t j = 0; j < k->variants[i].noverrides; j++)
                sb_printf(b, " %s = %lld", k->variants[i].overrides[j].name,
                          (long long)k->variants[i].overrides[j].expr->ival);
            sb_puts(b, "\n");
        }
    }
    if (k->has_variants) {
        sb_puts(b, "    variants {\n");
        for (uint32_t i = 0; i < k->nvariants; i++) {
            sb_printf(b, "        /* %u */ ", i);
            dump_hints(b, k->variants[i].overrides, k->variants[i].noverrides);
            sb_puts(b, "\n");
        }
        sb_puts(b, "    }\n");
    }
    sb_puts(b, "{\n");
    dump_block(b, &k->body, 1);
    sb_puts(b, "}\n");
}

static void dump_extern(strbuf *b, const tilec_extern *x)
{
    dump_doc(b, x->doc, 0);
    sb_printf(b, "extern %s(", x->name);
    dump_params(b, x->params, x->nparams);
    sb_putc(b, ')');
    dump_results(b, x->results, x->nresults);
    sb_printf(b, " = \"%s\";", x->symbol);
    at(b, &x->loc);
}

static void dump_graph(strbuf *b, const tilec_graph *g)
{
    dump_doc(b, g->doc, 0);
    sb_printf(b, "graph %s(", g->name);
    dump_params(b, g->params, g->nparams);
    sb_putc(b, ')');
    dump_results(b, g->results, g->nresults);
    at(b, &g->loc);
    sb_puts(b, "{\n");
    dump_block(b, &g->body, 1);
    sb_puts(b, "}\n");
}

tilec_status dump_module(const tilec_module *m, tilec_sink sink)
{
    strbuf b;
    sb_init(&b);
    for (uint32_t i = 0; i < m->consts.n; i++) {
        const tilec_const *c = m->consts.v[i];
        sb_printf(&b, "const %s = %lld  @%u:%u\n\n", c->name, (long long)c->value, c->loc.line, c->loc.col);
    }
    for (uint32_t i = 0; i < m->items.n; i++) {
        const tilec_item *it = m->items.v[i];
        if (i)
            sb_putc(&b, '\n');
        if (it->kind == TILEC_ITEM_KERNEL)
            dump_kernel(&b, it->u.kernel);
        else if (it->kind == TILEC_ITEM_EXTERN)
            dump_extern(&b, it->u.ext);
        else
            dump_graph(&b, it->u.graph);
    }
    tilec_status st = TILEC_OK;
    if (b.failed)
        st = TILEC_ERR_NOMEM;
    else if (b.n && sink.write(sink.user, sb_str(&b), b.n))
        st = TILEC_ERR_IO;
    sb_free(&b);
    return st;
}
