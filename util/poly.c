/* poly.c: canonical polynomials for symbolic size comparison. The work is
 * bounded (tilec/limits.h): a product may have at most
 * TILEC_MAX_POLY_TERMS partial products and a term TILEC_MAX_POLY_DEGREE
 * symbols; an opaque atom's text at most TILEC_MAX_POLY_TEXT bytes. A
 * product sorts its partial products and merges like terms once, so it
 * costs O(nm log nm) time and memory, not a merge per partial product. */
#include "util/poly.h"

#include <stdlib.h>
#include <string.h>

#include "util/iexpr.h"
#include "util/strbuf.h"

/* Record the first failure; always NULL. */
static poly *fail(poly_why *why, poly_fail f, int64_t value)
{
    if (why && !why->fail) {
        why->fail = f;
        why->value = value;
    }
    return NULL;
}

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

/* The polynomial 1 * atom. */
static poly *atom_poly(arena *a, const char *text, int op, const poly *x, const poly *y)
{
    poly *p = poly_const(a, 1);
    poly_factor *at = ar_alloc(a, sizeof *at);
    if (!p || !at)
        return NULL;
    *at = (poly_factor){.text = text, .op = op, .x = x, .y = y};
    p->terms[0].atoms = ar_alloc(a, sizeof *p->terms[0].atoms);
    if (!p->terms[0].atoms)
        return NULL;
    p->terms[0].atoms[0] = at;
    p->terms[0].natoms = 1;
    return p;
}

poly *poly_atom(arena *a, const char *name) { return atom_poly(a, name, 0, NULL, NULL); }

static int cmp_atoms(const poly_term *x, const poly_term *y)
{
    for (uint32_t i = 0; i < x->natoms && i < y->natoms; i++) {
        int c = strcmp(x->atoms[i]->text, y->atoms[i]->text);
        if (c)
            return c;
    }
    return (x->natoms > y->natoms) - (x->natoms < y->natoms);
}

/* Merge two sorted term lists. */
poly *poly_add(arena *a, const poly *x, const poly *y, int sign, poly_why *why)
{
    if (!x || !y)
        return NULL;
    if ((size_t)x->n + y->n > TILEC_MAX_POLY_TERMS)
        return fail(why, POLY_FAIL_TERMS, (int64_t)x->n + y->n);
    poly *p = ar_alloc(a, sizeof *p);
    if (!p)
        return fail(why, POLY_FAIL_NOMEM, 0);
    p->terms = ar_array(a, (size_t)x->n + y->n + 1, sizeof *p->terms);
    if (!p->terms)
        return fail(why, POLY_FAIL_NOMEM, 0);
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
                    return fail(why, POLY_FAIL_OVERFLOW, 0);
                t.coef = -t.coef;
            }
            if (c == 0 && __builtin_add_overflow(t.coef, x->terms[i++].coef, &t.coef))
                return fail(why, POLY_FAIL_OVERFLOW, 0);
        }
        if (t.coef)
            p->terms[p->n++] = t;
    }
    return p;
}

static int cmp_atom(const void *x, const void *y)
{
    return strcmp((*(const poly_factor *const *)x)->text, (*(const poly_factor *const *)y)->text);
}

static int cmp_terms(const void *x, const void *y) { return cmp_atoms(x, y); }

poly *poly_mul(arena *a, const poly *x, const poly *y, poly_why *why)
{
    if (!x || !y)
        return NULL;
    uint64_t n = (uint64_t)x->n * y->n;
    if (n > TILEC_MAX_POLY_TERMS)
        return fail(why, POLY_FAIL_TERMS, (int64_t)n);
    poly *p = ar_alloc(a, sizeof *p);
    poly_term *t = ar_array(a, n ? n : 1, sizeof *t);
    if (!p || !t)
        return fail(why, POLY_FAIL_NOMEM, 0);
    uint32_t k = 0;
    for (uint32_t i = 0; i < x->n; i++)
        for (uint32_t j = 0; j < y->n; j++, k++) {
            const poly_term *s = &x->terms[i], *u = &y->terms[j];
            uint32_t na = s->natoms + u->natoms;
            if (na > TILEC_MAX_POLY_DEGREE)
                return fail(why, POLY_FAIL_DEGREE, na);
            if (__builtin_mul_overflow(s->coef, u->coef, &t[k].coef))
                return fail(why, POLY_FAIL_OVERFLOW, 0);
            t[k].natoms = na;
            t[k].atoms = ar_array(a, na ? na : 1, sizeof *t[k].atoms);
            if (!t[k].atoms)
                return fail(why, POLY_FAIL_NOMEM, 0);
            if (s->natoms)
                memcpy(t[k].atoms, s->atoms, s->natoms * sizeof *t[k].atoms);
            if (u->natoms)
                memcpy(t[k].atoms + s->natoms, u->atoms, u->natoms * sizeof *t[k].atoms);
            qsort(t[k].atoms, na, sizeof *t[k].atoms, cmp_atom);
        }
    /* like terms meet after sorting: add their coefficients, drop zeros */
    qsort(t, n, sizeof *t, cmp_terms);
    p->terms = t;
    p->n = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (p->n && !cmp_atoms(&t[p->n - 1], &t[i])) {
            if (__builtin_add_overflow(t[p->n - 1].coef, t[i].coef, &t[p->n - 1].coef))
                return fail(why, POLY_FAIL_OVERFLOW, 0);
        } else {
            if (p->n && !t[p->n - 1].coef)
                p->n--;
            t[p->n++] = t[i];
        }
    }
    if (p->n && !t[p->n - 1].coef)
        p->n--;
    return p;
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

/* Write p as text into b, stopping once it is longer than stop. */
static void write_poly(strbuf *b, const poly *p, size_t stop)
{
    if (!p->n)
        sb_putc(b, '0');
    /* constants sort first; print them last, as people write "N + 1" */
    uint32_t first = p->n && p->terms[0].natoms == 0 ? 1 : 0;
    for (uint32_t k = 0; k < p->n && b->n <= stop && !b->failed; k++) {
        const poly_term *t = &p->terms[first ? (k + 1) % p->n : k];
        int64_t c = t->coef;
        if (k) {
            sb_puts(b, c < 0 ? " - " : " + ");
        } else if (c < 0) {
            sb_putc(b, '-');
        }
        uint64_t mag = c < 0 ? (uint64_t)0 - (uint64_t)c : (uint64_t)c;
        if (mag != 1 || !t->natoms)
            sb_printf(b, "%llu%s", (unsigned long long)mag, t->natoms ? "*" : "");
        for (uint32_t i = 0; i < t->natoms; i++)
            sb_printf(b, "%s%s", i ? "*" : "", t->atoms[i]->text);
    }
}

size_t poly_text_len(const poly *p, size_t stop)
{
    if (!p)
        return 0;
    strbuf b;
    sb_init(&b);
    write_poly(&b, p, stop);
    size_t n = b.failed ? stop + 1 : b.n;
    sb_free(&b);
    return n;
}

char *poly_str(arena *a, const poly *p)
{
    if (!p)
        return NULL;
    strbuf b;
    sb_init(&b);
    write_poly(&b, p, TILEC_MAX_POLY_TEXT);
    char *s = b.failed || b.n > TILEC_MAX_POLY_TEXT ? NULL : ar_strdup(a, sb_str(&b));
    sb_free(&b);
    return s;
}

/* The quotient of two constants, by the one evaluator's rules. */
static poly *const_quotient(arena *a, poly_div op, int64_t x, int64_t y, poly_why *why)
{
    static const tilec_ix_op ops[] = {
        [POLY_DIV] = TILEC_IX_DIV, [POLY_MOD] = TILEC_IX_MOD, [POLY_CDIV] = TILEC_IX_CDIV};
    int64_t v = 0;
    tilec_ix_err r = tilec_ix_apply(ops[op], x, y, &v);
    if (r == TILEC_IX_DIV_ZERO || r == TILEC_IX_CDIV_DIVISOR)
        return fail(why, POLY_FAIL_DIV_ZERO, y);
    if (r != TILEC_IX_OK)
        return fail(why, POLY_FAIL_OVERFLOW, 0);
    poly *p = poly_const(a, v);
    return p ? p : fail(why, POLY_FAIL_NOMEM, 0);
}

/* The opaque atom "(x)/(y)", "(x)%(y)" or "cdiv(x, y)"; of two constants,
 * the constant (cdiv(7, 2) is 4, as the wrappers compute it). */
poly *poly_div_atom(arena *a, poly_div op, const poly *x, const poly *y, poly_why *why)
{
    int is_cdiv = op == POLY_CDIV;
    int64_t v, u;
    if (poly_is_const(y, &v) && poly_is_const(x, &u))
        return const_quotient(a, op, u, v, why);
    if (poly_is_const(y, &v) && (v == 0 || (is_cdiv && v < 0)))
        return fail(why, POLY_FAIL_DIV_ZERO, v);
    size_t len = poly_text_len(x, TILEC_MAX_POLY_TEXT) + poly_text_len(y, TILEC_MAX_POLY_TEXT) + 8;
    if (len > TILEC_MAX_POLY_TEXT)
        return fail(why, POLY_FAIL_TEXT, (int64_t)len);
    char *xs = poly_str(a, x), *ys = poly_str(a, y);
    if (!xs || !ys)
        return fail(why, POLY_FAIL_NOMEM, 0);
    const char *text =
        is_cdiv ? ar_printf(a, "cdiv(%s, %s)", xs, ys) : ar_printf(a, "(%s)%s(%s)", xs, op == POLY_DIV ? "/" : "%", ys);
    poly *p = text ? atom_poly(a, text, 1 + (int)op, x, y) : NULL;
    return p ? p : fail(why, POLY_FAIL_NOMEM, 0);
}

/* ---- as an expression tree ---- */

static tilec_ix *atom_ix(arena *a, const poly_factor *at)
{
    static const tilec_ix_op ops[] = {
        [POLY_DIV] = TILEC_IX_DIV, [POLY_MOD] = TILEC_IX_MOD, [POLY_CDIV] = TILEC_IX_CDIV};
    if (!at->op)
        return ix_sym(a, at->text);
    return ix_new(a, ops[at->op - 1], poly_ix(a, at->x), poly_ix(a, at->y));
}

/* A term of magnitude mag (0: INT64_MIN, whose magnitude no int64_t holds)
 * as the text writes it: the magnitude (unless 1 before a factor) times
 * the factors, left to right. */
static tilec_ix *term_ix(arena *a, const poly_term *t, uint64_t mag)
{
    tilec_ix *e = mag != 1 || !t->natoms ? ix_int(a, mag ? (int64_t)mag : INT64_MIN) : NULL;
    for (uint32_t i = 0; i < t->natoms; i++) {
        tilec_ix *f = atom_ix(a, t->atoms[i]);
        e = e ? ix_new(a, TILEC_IX_MUL, e, f) : f;
    }
    return e;
}

tilec_ix *poly_ix(arena *a, const poly *p)
{
    if (!p)
        return NULL;
    if (!p->n)
        return ix_int(a, 0);
    uint32_t first = p->terms[0].natoms == 0 ? 1 : 0; /* the constant last, as write_poly */
    tilec_ix *e = NULL;
    for (uint32_t k = 0; k < p->n; k++) {
        const poly_term *t = &p->terms[first ? (k + 1) % p->n : k];
        int64_t c = t->coef;
        uint64_t mag = c == INT64_MIN ? 0 : c < 0 ? (uint64_t)-c : (uint64_t)c;
        tilec_ix *x = term_ix(a, t, mag);
        if (!k)
            e = c < 0 && mag ? ix_new(a, TILEC_IX_NEG, x, NULL) : x;
        else
            e = ix_new(a, c < 0 && mag ? TILEC_IX_SUB : TILEC_IX_ADD, e, x);
        if (!e)
            return NULL;
    }
    return e;
}
