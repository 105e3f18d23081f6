/* py_spell.c: how the "py" emitter spells things in Python, below its
 * other files: string literals, names (util/mangle.h), sizes from their
 * integer expressions with Python's precedence, shapes; and finding a
 * buffer by name and its address (py_buf_ptr).
 * The size slots themselves (py_size_ref) are py_loop.c's: a slot set in a
 * loop's body is computed there. */
#include <string.h>

#include "emit_py/py_internal.h"
#include "parser/module.h"
#include "util/escape.h"
#include "util/mangle.h"

void py_str(strbuf *b, const char *s)
{
    sb_putc(b, '"');
    esc_py_str(b, s, 0);
    sb_putc(b, '"');
}

/* The Python name of a parameter or buffer (util/mangle.h). */
void py_name(strbuf *b, const char *name) { mg_py(b, name, strlen(name)); }

/* The Python name of size symbol `name`. */
void py_sym(strbuf *b, const char *name) { mg_py_helper(b, name, strlen(name), "s"); }

/* Is `name` (n bytes) a scalar parameter of g (else a size symbol)? */
static int scalar_param(const tilec_graph *g, const char *name, size_t n)
{
    for (uint32_t i = 0; i < g->nparams; i++)
        if (g->params[i].type.kind != TILEC_TE_TENSOR && !strncmp(g->params[i].name, name, n) && !g->params[i].name[n])
            return 1;
    return 0;
}

/* Is `name` a scalar parameter of g with a floating-point type? */
int py_scalar_is_float(const tilec_graph *g, const char *name)
{
    for (uint32_t i = 0; i < g->nparams; i++)
        if (g->params[i].type.kind != TILEC_TE_TENSOR && !strcmp(g->params[i].name, name))
            return tilec_dtype_class(g->params[i].type.dtype) == 'f';
    return 0;
}

int py_is_ident(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

/* Size e as Python, parenthesized where its precedence (4 atom, 3 unary,
 * 2 product, 1 sum) is below `need`; / % and cdiv go through tilec.div,
 * tilec.mod and tilec.cdiv, which spell the rules of tilec/iexpr.h. */
static void py_tree(strbuf *b, const tilec_graph *g, const tilec_ix *x, int need)
{
    static const int prec[] = {[TILEC_IX_NEG] = 3, [TILEC_IX_ADD] = 1, [TILEC_IX_SUB] = 1, [TILEC_IX_MUL] = 2};
    int p = x->op == TILEC_IX_NEG || x->op == TILEC_IX_ADD || x->op == TILEC_IX_SUB || x->op == TILEC_IX_MUL
                ? prec[x->op]
                : 4;
    sb_puts(b, p < need ? "(" : "");
    switch (x->op) {
    case TILEC_IX_INT: sb_printf(b, "%lld", (long long)x->value); break;
    case TILEC_IX_SYM: /* a scalar parameter, or a size symbol (_NAME_s) */
        if (scalar_param(g, x->name, strlen(x->name)))
            py_name(b, x->name);
        else
            py_sym(b, x->name);
        break;
    case TILEC_IX_NEG:
        sb_putc(b, '-');
        py_tree(b, g, x->a, 3);
        break;
    case TILEC_IX_ADD:
    case TILEC_IX_SUB:
    case TILEC_IX_MUL:
        py_tree(b, g, x->a, p);
        sb_puts(b, x->op == TILEC_IX_ADD ? " + " : x->op == TILEC_IX_SUB ? " - " : " * ");
        py_tree(b, g, x->b, p + 1);
        break;
    case TILEC_IX_DIV:
    case TILEC_IX_MOD:
    case TILEC_IX_CDIV:
        sb_printf(b, "tilec.%s(", x->op == TILEC_IX_DIV ? "div" : x->op == TILEC_IX_MOD ? "mod" : "cdiv");
        py_tree(b, g, x->a, 1);
        sb_puts(b, ", ");
        py_tree(b, g, x->b, 1);
        sb_putc(b, ')');
        break;
    default: b->failed = 1; /* no size has this operator: the emitter fails */
    }
    sb_puts(b, p < need ? ")" : "");
}

/* Python spelling of a size of g, from its integer expression (never its
 * text): scalar parameters through mg_py, size symbols through py_sym. */
void py_size(strbuf *b, const tilec_graph *g, const tilec_ix *e)
{
    if (!e)
        b->failed = 1;
    else
        py_tree(b, g, e, 1);
}

/* "(R, C)" */
void py_shape(strbuf *b, const tilec_graph *g, const tilec_wir_line *l)
{
    sb_putc(b, '(');
    for (uint32_t d = 0; d < l->rank; d++) {
        sb_puts(b, d ? ", " : "");
        py_size(b, g, l->size_exprs ? l->size_exprs[d] : NULL);
    }
    sb_puts(b, l->rank == 1 ? ",)" : ")");
}

int buf_find(const pystate *s, const char *name)
{
    for (size_t i = s->nbufs; i-- > 0;)
        if (!strcmp(s->bufs[i].l->name, name))
            return (int)i;
    return -1;
}

/* The Python address of buffer i: its root's (_NAME_info.ptr of an input,
 * _NAME_p of a root) plus its offset. */
void py_buf_ptr(const pystate *s, size_t i, strbuf *b)
{
    const pybuf *x = &s->bufs[i], *r = &s->bufs[x->root];
    sb_puts(b, x->off[0] ? "(" : "");
    mg_py_helper(b, r->l->name, strlen(r->l->name), r->input ? "info" : "p");
    sb_puts(b, r->input ? ".ptr" : "");
    if (x->off[0])
        sb_printf(b, " + %s)", x->off);
}
