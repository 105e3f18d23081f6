/* size.c: evaluating the wrapper IR's sizes (integer expressions,
 * tilec/iexpr.h) with the values of the size symbols; and, for the public
 * API's callers (tilec_wir_size_parse, tilec_wir_eval), size texts
 * ("4*C*R + 2", "2*(R)/(4) - cdiv(N, 128)"), the canonical polynomials of
 * util/poly.c as lowering prints them, parsed into a tree. Nothing inside
 * tilec parses a size text back: the lines carry the expressions.
 *
 * expr   := ['-'] term (('+' | '-') term)*
 * term   := factor ('*' factor)*
 * factor := INT | NAME | 'cdiv' '(' expr ',' expr ')' | '(' expr ')' [('/' | '%') '(' expr ')']
 *
 * The leading '-' negates the whole first term, and an opaque quotient
 * "(x)/(y)" binds tighter than the '*' of its coefficient: not C's
 * precedence, which is why emitters print the tree, not the text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/iexpr.h"
#include "wrapper_ir/wir.h"

typedef struct sp {
    const char *p;
    tilec_wir_size_node *nodes;
    size_t cap, n;
    int depth; /* of sp_expr calls: bounded, since it recurses */
    tilec_status st;
} sp;

static int32_t sp_expr(sp *s);
static int32_t sp_sum(sp *s);

static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int sp_eat(sp *s, char c)
{
    while (*s->p == ' ')
        s->p++;
    if (*s->p != c)
        return 0;
    s->p++;
    return 1;
}

static int32_t sp_fail(sp *s, tilec_status st)
{
    if (s->st == TILEC_OK)
        s->st = st;
    return -1;
}

static int32_t sp_node(sp *s, tilec_wir_size_op op, int32_t a, int32_t b)
{
    if (s->st != TILEC_OK)
        return -1;
    if (s->n == s->cap || s->n >= INT32_MAX)
        return sp_fail(s, TILEC_ERR_NOMEM);
    s->nodes[s->n] = (tilec_wir_size_node){.op = op, .a = a, .b = b};
    return (int32_t)s->n++;
}

static int32_t sp_paren(sp *s)
{
    if (!sp_eat(s, '('))
        return sp_fail(s, TILEC_ERR_ARG);
    int32_t v = sp_expr(s);
    if (!sp_eat(s, ')'))
        return sp_fail(s, TILEC_ERR_ARG);
    return v;
}

static int32_t sp_factor(sp *s)
{
    while (*s->p == ' ')
        s->p++;
    const char *t = s->p;
    if (is_digit(*t)) {
        errno = 0;
        char *end;
        long long v = strtoll(t, &end, 10);
        s->p = end;
        if (errno)
            return sp_fail(s, TILEC_ERR_INPUT);
        int32_t i = sp_node(s, TILEC_WIR_SZ_INT, -1, -1);
        if (i >= 0)
            s->nodes[i].value = v;
        return i;
    }
    if (is_alpha(*t)) {
        size_t len = 0;
        while (is_alpha(t[len]) || is_digit(t[len]))
            len++;
        s->p = t + len;
        if (len == 4 && !memcmp(t, "cdiv", 4) && sp_eat(s, '(')) {
            int32_t a = sp_expr(s);
            if (!sp_eat(s, ','))
                return sp_fail(s, TILEC_ERR_ARG);
            int32_t b = sp_expr(s);
            if (!sp_eat(s, ')'))
                return sp_fail(s, TILEC_ERR_ARG);
            return sp_node(s, TILEC_WIR_SZ_CDIV, a, b);
        }
        if (len > 63)
            return sp_fail(s, TILEC_ERR_ARG);
        int32_t i = sp_node(s, TILEC_WIR_SZ_SYM, -1, -1);
        if (i >= 0) {
            memcpy(s->nodes[i].name, t, len);
            s->nodes[i].name[len] = 0;
        }
        return i;
    }
    int32_t a = sp_paren(s);
    while (*s->p == ' ')
        s->p++;
    char op = *s->p;
    if (op != '/' && op != '%')
        return a;
    s->p++;
    int32_t b = sp_paren(s);
    return sp_node(s, op == '/' ? TILEC_WIR_SZ_DIV : TILEC_WIR_SZ_MOD, a, b);
}

static int32_t sp_term(sp *s)
{
    int32_t v = sp_factor(s);
    while (s->st == TILEC_OK && sp_eat(s, '*'))
        v = sp_node(s, TILEC_WIR_SZ_MUL, v, sp_factor(s));
    return v;
}

static int32_t sp_expr(sp *s)
{
    if (++s->depth > 256)
        return sp_fail(s, TILEC_ERR_NOMEM);
    int32_t r = sp_sum(s);
    s->depth--;
    return r;
}

static int32_t sp_sum(sp *s)
{
    int neg = sp_eat(s, '-');
    int32_t v = sp_term(s);
    if (neg)
        v = sp_node(s, TILEC_WIR_SZ_NEG, v, -1);
    for (;;) {
        if (s->st != TILEC_OK)
            return -1;
        if (sp_eat(s, '+'))
            v = sp_node(s, TILEC_WIR_SZ_ADD, v, sp_term(s));
        else if (sp_eat(s, '-'))
            v = sp_node(s, TILEC_WIR_SZ_SUB, v, sp_term(s));
        else
            return v;
    }
}

tilec_status tilec_wir_size_parse(const char *text, tilec_wir_size_node *nodes, size_t cap, size_t *n,
                                  int32_t *root)
{
    if (!text || !n || !root || (!nodes && cap))
        return TILEC_ERR_ARG;
    sp s = {.p = text, .nodes = nodes, .cap = cap, .st = TILEC_OK};
    int32_t r = sp_expr(&s);
    while (*s.p == ' ')
        s.p++;
    if (s.st == TILEC_OK && *s.p)
        s.st = TILEC_ERR_ARG;
    if (s.st != TILEC_OK)
        return s.st;
    *n = s.n;
    *root = r;
    return TILEC_OK;
}

/* ---- evaluation, by the one evaluator (tilec/iexpr.h) ---- */

typedef struct sz_env {
    const tilec_wir_size *sizes;
    size_t n;
    char *bad; /* the first unknown symbol, or NULL */
} sz_env;

static int sz_lookup(void *user, const tilec_ix *sym, int64_t *out)
{
    sz_env *env = user;
    for (size_t k = 0; k < env->n; k++)
        if (!strcmp(env->sizes[k].name, sym->name)) {
            *out = env->sizes[k].value;
            return 0;
        }
    if (env->bad && !env->bad[0])
        snprintf(env->bad, 64, "%s", sym->name);
    return 1;
}

tilec_status wir_expr_eval(const tilec_ix *e, const tilec_wir_size *sizes, size_t n, int64_t *out, char bad[64])
{
    sz_env env = {sizes, n, bad};
    if (bad)
        bad[0] = 0;
    tilec_ix_err r = tilec_ix_eval(e, sz_lookup, &env, out, NULL);
    return r == TILEC_IX_OK ? TILEC_OK : r == TILEC_IX_UNKNOWN || r == TILEC_IX_BAD ? TILEC_ERR_ARG : TILEC_ERR_INPUT;
}

/* Node i of a parsed size text as an integer expression. */
static const tilec_ix *sz_ix(arena *a, const tilec_wir_size_node *t, int32_t i)
{
    static const tilec_ix_op ops[] = {
        [TILEC_WIR_SZ_NEG] = TILEC_IX_NEG, [TILEC_WIR_SZ_ADD] = TILEC_IX_ADD, [TILEC_WIR_SZ_SUB] = TILEC_IX_SUB,
        [TILEC_WIR_SZ_MUL] = TILEC_IX_MUL, [TILEC_WIR_SZ_DIV] = TILEC_IX_DIV, [TILEC_WIR_SZ_MOD] = TILEC_IX_MOD,
        [TILEC_WIR_SZ_CDIV] = TILEC_IX_CDIV,
    };
    const tilec_wir_size_node *x = &t[i];
    if (x->op == TILEC_WIR_SZ_INT)
        return ix_int(a, x->value);
    if (x->op == TILEC_WIR_SZ_SYM)
        return ix_sym(a, x->name);
    return ix_new(a, ops[x->op], sz_ix(a, t, x->a), x->op == TILEC_WIR_SZ_NEG ? NULL : sz_ix(a, t, x->b));
}

tilec_status tilec_wir_eval(const char *text, const tilec_wir_size *sizes, size_t n, int64_t *out)
{
    if (!text || !out || (!sizes && n))
        return TILEC_ERR_ARG;
    size_t cap = strlen(text) + 1, count = 0; /* a node takes at least one byte of text */
    tilec_wir_size_node *t = malloc(cap * sizeof *t);
    if (!t)
        return TILEC_ERR_NOMEM;
    int32_t root = -1;
    tilec_status st = tilec_wir_size_parse(text, t, cap, &count, &root);
    arena a;
    ar_init(&a);
    const tilec_ix *e = st == TILEC_OK ? sz_ix(&a, t, root) : NULL;
    int64_t v = 0;
    if (st == TILEC_OK)
        st = e ? wir_expr_eval(e, sizes, n, &v, NULL) : TILEC_ERR_NOMEM;
    if (st == TILEC_OK)
        *out = v;
    ar_free(&a);
    free(t);
    return st;
}
