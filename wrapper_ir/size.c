/* size.c: size texts ("4*C*R + 2", "2*(R)/(4) - cdiv(N, 128)"), the
 * canonical polynomials of util/poly.c as lowering prints them, parsed
 * once into a tree (tilec_wir_size_parse) that emitters print in their
 * own language, and evaluated with overflow checks (tilec_wir_eval).
 *
 * expr   := ['-'] term (('+' | '-') term)*
 * term   := factor ('*' factor)*
 * factor := INT | NAME | 'cdiv' '(' expr ',' expr ')' | '(' expr ')' [('/' | '%') '(' expr ')']
 *
 * The leading '-' negates the whole first term, and an opaque quotient
 * "(x)/(y)" binds tighter than the '*' of its coefficient: not C's
 * precedence, which is why emitters print the tree, not the text. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- evaluation ---- */

static tilec_status ev_node(const tilec_wir_size_node *t, int32_t i, const tilec_wir_size *sizes, size_t n,
                            int64_t *out, char bad[64])
{
    const tilec_wir_size_node *x = &t[i];
    int64_t a = 0, b = 0;
    tilec_status st;
    switch (x->op) {
    case TILEC_WIR_SZ_INT: *out = x->value; return TILEC_OK;
    case TILEC_WIR_SZ_SYM:
        for (size_t k = 0; k < n; k++)
            if (!strcmp(sizes[k].name, x->name)) {
                *out = sizes[k].value;
                return TILEC_OK;
            }
        if (bad)
            memcpy(bad, x->name, sizeof x->name);
        return TILEC_ERR_ARG;
    default: break;
    }
    if ((st = ev_node(t, x->a, sizes, n, &a, bad)) != TILEC_OK ||
        (x->op != TILEC_WIR_SZ_NEG && (st = ev_node(t, x->b, sizes, n, &b, bad)) != TILEC_OK))
        return st;
    switch (x->op) {
    case TILEC_WIR_SZ_NEG: return __builtin_sub_overflow((int64_t)0, a, out) ? TILEC_ERR_INPUT : TILEC_OK;
    case TILEC_WIR_SZ_ADD: return __builtin_add_overflow(a, b, out) ? TILEC_ERR_INPUT : TILEC_OK;
    case TILEC_WIR_SZ_SUB: return __builtin_sub_overflow(a, b, out) ? TILEC_ERR_INPUT : TILEC_OK;
    case TILEC_WIR_SZ_MUL: return __builtin_mul_overflow(a, b, out) ? TILEC_ERR_INPUT : TILEC_OK;
    case TILEC_WIR_SZ_DIV:
    case TILEC_WIR_SZ_MOD:
        if (!b || (a == INT64_MIN && b == -1))
            return TILEC_ERR_INPUT;
        *out = x->op == TILEC_WIR_SZ_DIV ? a / b : a % b;
        return TILEC_OK;
    case TILEC_WIR_SZ_CDIV:
        if (b <= 0)
            return TILEC_ERR_INPUT;
        *out = a / b + (a % b > 0);
        return TILEC_OK;
    default: return TILEC_ERR_ARG;
    }
}

tilec_status wir_size_eval(const char *text, const tilec_wir_size *sizes, size_t n, int64_t *out, char bad[64])
{
    size_t cap = strlen(text) + 1, count = 0; /* a node takes at least one byte of text */
    tilec_wir_size_node *t = malloc(cap * sizeof *t);
    if (!t)
        return TILEC_ERR_NOMEM;
    int32_t root = -1;
    tilec_status st = tilec_wir_size_parse(text, t, cap, &count, &root);
    if (bad)
        bad[0] = 0;
    if (st == TILEC_OK)
        st = ev_node(t, root, sizes, n, out, bad);
    free(t);
    return st;
}

tilec_status tilec_wir_eval(const char *text, const tilec_wir_size *sizes, size_t n, int64_t *out)
{
    if (!text || !out || (!sizes && n))
        return TILEC_ERR_ARG;
    int64_t v = 0;
    tilec_status st = wir_size_eval(text, sizes, n, &v, NULL);
    if (st == TILEC_OK)
        *out = v;
    return st;
}
