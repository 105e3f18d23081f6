/* graph_alloc.c: the allocating builtins of graphs (parser/graph_alloc.h):
 * empty, zeros, ones, full and their *_like forms, read from a call. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "parser/graph_alloc.h"

static const struct {
    const char *name;
    ga_fill fill;
    int like;
    const char *form;
} ga_builtins[] = {
    {"empty", GA_EMPTY, 0, "empty takes an element type and a list of sizes: empty(f32, [R, C])"},
    {"zeros", GA_ZEROS, 0, "zeros takes an element type and a list of sizes: zeros(f32, [R, C])"},
    {"ones", GA_ONES, 0, "ones takes an element type and a list of sizes: ones(f32, [R, C])"},
    {"full", GA_FULL, 0, "full takes an element type, a list of sizes and a value: full(f32, [R, C], 0.5)"},
    {"empty_like", GA_EMPTY, 1, "empty_like takes a tensor: empty_like(x)"},
    {"zeros_like", GA_ZEROS, 1, "zeros_like takes a tensor: zeros_like(x)"},
    {"ones_like", GA_ONES, 1, "ones_like takes a tensor: ones_like(x)"},
    {"full_like", GA_FULL, 1, "full_like takes a tensor and a value: full_like(x, 0.5)"},
};

int ga_is_builtin(const char *name)
{
    for (size_t i = 0; i < sizeof ga_builtins / sizeof ga_builtins[0]; i++)
        if (!strcmp(name, ga_builtins[i].name))
            return 1;
    return 0;
}

int ga_read(const tilec_expr *v, ga_form *f, const char **why)
{
    size_t i = 0, n = sizeof ga_builtins / sizeof ga_builtins[0];
    if (v->kind != TILEC_EX_CALL)
        return 0;
    while (i < n && strcmp(v->name, ga_builtins[i].name))
        i++;
    if (i == n)
        return 0;
    memset(f, 0, sizeof *f);
    f->fill = ga_builtins[i].fill;
    f->like = ga_builtins[i].like;
    *why = ga_builtins[i].form;
    uint32_t want = (f->like ? 1 : 2) + (f->fill == GA_FULL);
    if (v->nargs != want)
        return 1;
    if (f->like) {
        if (v->args[0]->kind != TILEC_EX_NAME)
            return 1;
        f->of = v->args[0];
    } else {
        if (v->args[0]->kind != TILEC_EX_DTYPE || v->args[1]->kind != TILEC_EX_LIST)
            return 1;
        f->dtype = v->args[0]->dtype;
        f->dims = v->args[1]->args;
        f->ndims = v->args[1]->nargs;
    }
    f->value = f->fill == GA_FULL ? v->args[want - 1] : NULL;
    *why = NULL;
    return 1;
}

int ga_value(const ga_form *f, tilec_dtype dt, fill_value *out)
{
    memset(out, 0, sizeof *out);
    out->kind = FILL_V_INT;
    if (f->fill != GA_FULL) {
        out->kind = dt == TILEC_DT_BOOL ? FILL_V_BOOL : FILL_V_INT;
        out->i = f->fill == GA_ONES;
        return 0;
    }
    return ga_literal(f->value, out);
}

int ga_literal(const tilec_expr *e, fill_value *out)
{
    memset(out, 0, sizeof *out);
    out->kind = FILL_V_INT;
    if (e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG) {
        out->neg = 1;
        e = e->args[0];
    }
    switch (e->kind) {
    case TILEC_EX_INT: out->i = e->ival; return 0;
    case TILEC_EX_FLOAT:
    case TILEC_EX_INF:
        out->kind = FILL_V_FLOAT;
        out->f = e->kind == TILEC_EX_INF ? HUGE_VAL : e->fval;
        out->f = out->neg ? -out->f : out->f;
        return 0;
    case TILEC_EX_BOOL:
        out->kind = FILL_V_BOOL;
        out->i = e->ival;
        return out->neg ? -1 : 0;
    default: return -1;
    }
}

const char *ga_value_text(const ga_form *f, tilec_dtype dt, char *buf, size_t n)
{
    if (f->fill != GA_FULL && dt == TILEC_DT_BOOL)
        return f->fill == GA_ONES ? "true" : "false";
    if (f->fill != GA_FULL)
        return f->fill == GA_ONES ? "1" : "0";
    return ga_literal_text(f->value, buf, n);
}

const char *ga_literal_text(const tilec_expr *e, char *buf, size_t n)
{
    int neg = e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG;
    e = neg ? e->args[0] : e;
    switch (e->kind) {
    case TILEC_EX_INT: snprintf(buf, n, "%s%lld", neg ? "-" : "", (long long)e->ival); break;
    case TILEC_EX_FLOAT: snprintf(buf, n, "%s%.60s", neg ? "-" : "", e->name ? e->name : "?"); break;
    case TILEC_EX_INF: snprintf(buf, n, "%sinf", neg ? "-" : ""); break;
    case TILEC_EX_BOOL: snprintf(buf, n, "%s", e->ival ? "true" : "false"); break;
    default: snprintf(buf, n, "?"); break;
    }
    return buf;
}
