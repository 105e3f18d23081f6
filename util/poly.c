/* poly.c: canonical polynomials for symbolic size comparison. */
#include "util/poly.h"

#include <stdlib.h>
#include <string.h>

#include "util/strbuf.h"

poly *poly_const(arena *a, int64_t v)
{
    poly *p = ar_alloc(a, sizeof *p);
    if (!p || v == 0)
        return p;
    p->terms = ar_alloc(a, sizeof *p->terms);
    if (!p->terms)
        return NULL;
    p->terms[0].coef = v;
    p->n = 1;
    return p;
}

poly *poly_atom(arena *a, const char *name)
{
    poly *p = poly_const(a, 1);
    if (!p)
        return NULL;
    p->terms[0].atoms = ar_alloc(a, sizeof(char *));
    if (!p->terms[0].atoms)
        return NULL;
    p->terms[0].atoms[0] = name;
    p->terms[0].natoms = 1;
    return p;
}

static int cmp_atoms(const poly_term *x, const poly_term *y)
{
    for (uint32_t i = 0; i < x->natoms && i < y->natoms; i++) {
        int c = strcmp(x->atoms[i], y->atoms[i]);
        if (c)
            return c;
    }
    return (x->natoms > y->natoms) - (x->natoms < y->natoms);
}

/* Merge two sorted term lists. */
poly *poly_add(arena *a, const poly *x, const poly *y, int sign)
{
    if (!x || !y)
        return NULL;
    poly *p = ar_alloc(a, sizeof *p);
    if (!p)
        return NULL;
    p->terms = ar_array(a, (size_t)x->n + y->n + 1, sizeof *p->terms);
    if (!p->terms)
        return NULL;
    uint32_t i = 0, j = 0;
    while (i < x->n || j < y->n) {
        int c = i == x->n ? 1 : j == y->n ? -1 : cmp_atoms(&x->terms[i], &y->terms[j]);
        poly_term t;
        if (c < 0)
            t = x->terms[i++];
        else {
            t = y->terms[j++];
            if (sign < 0) {
                if (t.coef == INT64_MIN)
                    return NULL;
                t.coef = -t.coef;
            }
            if (c == 0 && __builtin_add_overflow(t.coef, x->terms[i++].coef, &t.coef))
                return NULL;
        }
        if (t.coef)
            p->terms[p->n++] = t;
    }
    return p;
}

static int cmp_str(const void *x, const void *y) { return strcmp(*(const char *const *)x, *(const char *const *)y); }

poly *poly_mul(arena *a, const poly *x, const poly *y)
{
    if (!x || !y)
        return NULL;
    poly *acc = poly_const(a, 0);
    for (uint32_t i = 0; acc && i < x->n; i++)
        for (uint32_t j = 0; acc && j < y->n; j++) {
            const poly_term *s = &x->terms[i], *t = &y->terms[j];
            poly *one = poly_const(a, 1);
            if (!one || __builtin_mul_overflow(s->coef, t->coef, &one->terms[0].coef))
                return NULL;
            uint32_t n = s->natoms + t->natoms;
            one->terms[0].natoms = n;
            one->terms[0].atoms = ar_array(a, n ? n : 1, sizeof(char *));
            if (!one->terms[0].atoms)
                return NULL;
            if (s->natoms)
                memcpy(one->terms[0].atoms, s->atoms, s->natoms * sizeof(char *));
            if (t->natoms)
                memcpy(one->terms[0].atoms + s->natoms, t->atoms, t->natoms * sizeof(char *));
            qsort(one->terms[0].atoms, n, sizeof(char *), cmp_str);
            acc = poly_add(a, acc, one, 1);
        }
    return acc;
}

int poly_eq(const poly *x, const poly *y)
{
    if (!x || !y || x->n != y->n)
        return 0;
    for (uint32_t i = 0; i < x->n; i++)
        if (x->terms[i].coef != y->terms[i].coef || cmp_atoms(&x->terms[i], &y->terms[i]))
            return 0;
    return 1;
}

int poly_is_const(const poly *p, int64_t *v)
{
    if (!p || p->n > 1 || (p->n == 1 && p->terms[0].natoms))
        return 0;
    *v = p->n ? p->terms[0].coef : 0;
    return 1;
}

char *poly_str(arena *a, const poly *p)
{
    if (!p)
        return NULL;
    strbuf b;
    sb_init(&b);
    if (!p->n)
        sb_putc(&b, '0');
    /* constants sort first; print them last, as people write "N + 1" */
    uint32_t first = p->n && p->terms[0].natoms == 0 ? 1 : 0;
    for (uint32_t k = 0; k < p->n; k++) {
        const poly_term *t = &p->terms[first ? (k + 1) % p->n : k];
        int64_t c = t->coef;
        if (k) {
            sb_puts(&b, c < 0 ? " - " : " + ");
        } else if (c < 0) {
            sb_putc(&b, '-');
        }
        uint64_t mag = c < 0 ? (uint64_t)0 - (uint64_t)c : (uint64_t)c;
        if (mag != 1 || !t->natoms)
            sb_printf(&b, "%llu%s", (unsigned long long)mag, t->natoms ? "*" : "");
        for (uint32_t i = 0; i < t->natoms; i++)
            sb_printf(&b, "%s%s", i ? "*" : "", t->atoms[i]);
    }
    char *s = b.failed ? NULL : ar_strdup(a, sb_str(&b));
    sb_free(&b);
    return s;
}

poly *poly_from_expr(arena *a, const tilec_expr *e, poly_lookup_fn lookup, void *user)
{
    switch (e->kind) {
    case TILEC_EX_INT:
        return poly_const(a, e->ival);
    case TILEC_EX_NAME: {
        const poly *p = lookup(user, e->name);
        return (poly *)p;
    }
    case TILEC_EX_UNARY:
        if (e->op != TILEC_OP_NEG)
            return NULL;
        return poly_add(a, poly_const(a, 0), poly_from_expr(a, e->args[0], lookup, user), -1);
    case TILEC_EX_BINARY: {
        poly *x = poly_from_expr(a, e->args[0], lookup, user);
        poly *y = poly_from_expr(a, e->args[1], lookup, user);
        if (!x || !y)
            return NULL;
        switch (e->op) {
        case TILEC_OP_ADD: return poly_add(a, x, y, 1);
        case TILEC_OP_SUB: return poly_add(a, x, y, -1);
        case TILEC_OP_MUL: return poly_mul(a, x, y);
        case TILEC_OP_DIV:
        case TILEC_OP_MOD: {
            char *xs = poly_str(a, x), *ys = poly_str(a, y);
            if (!xs || !ys)
                return NULL;
            return poly_atom(a, ar_printf(a, "(%s)%s(%s)", xs, e->op == TILEC_OP_DIV ? "/" : "%", ys));
        }
        default: return NULL;
        }
    }
    case TILEC_EX_CALL: {
        if (strcmp(e->name, "cdiv") != 0 || e->nargs != 2)
            return NULL;
        poly *x = poly_from_expr(a, e->args[0], lookup, user);
        poly *y = poly_from_expr(a, e->args[1], lookup, user);
        char *xs = poly_str(a, x), *ys = poly_str(a, y);
        if (!xs || !ys)
            return NULL;
        return poly_atom(a, ar_printf(a, "cdiv(%s, %s)", xs, ys));
    }
    default:
        return NULL;
    }
}
