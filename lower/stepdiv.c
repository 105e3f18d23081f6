/* stepdiv.c: step counters for the divisions of a loop's copies.
 *
 * An implicit GEMM's copies find the filter tap of a step by integer
 * division: `q0 / cp`, `q0 % cp`, then `q0 / cp / S` and `q0 / cp % S`
 * (examples/conv2d.tile), with q0 the loop variable and the divisors
 * loop-invariant scalars. Each is a run-time division (about 20
 * instructions) every step. For a numerator that only grows, quotient and
 * remainder follow it by counting: the remainder gains the step and gives
 * back the divisor (the quotient gaining one) while it is not below it;
 * a quotient that gains n makes the remainder of its own division by
 * another divisor gain n, and so on down. lower_stepdiv_begin finds, in
 * the loads' pointers and masks (through the index tiles let in the loop),
 * every scalar `N / D` and `N % D` with N the loop variable or such a
 * quotient and D a scalar computed before the loop, and keeps one counter
 * pair for each distinct (N, D); the walker (expr.c) reads a counter for
 * each such division; lower_stepdiv_advance moves them on by one step.
 * A numerator is followed through the names let to it (`let tap = q0 /
 * cp; tap / S`), and a remainder spelt `N - (N / D) * D` (C's N % D) reads
 * the remainder counter of N / D: tests/conv_forms/conv_gemm.tile spells
 * its tap so, and divided by S every step before (session 48).
 * The counters equal C's division when the divisors are positive, the
 * loop starts at 0 or above and steps up (then every numerator is at
 * least 0); a run-time flag checks that once, and otherwise each step
 * computes them by division, as written.
 *
 * The counters are 32-bit (unsigned) where every divisor is a scalar of
 * at most 32 bits: the gather producer's loop variable, its start and its
 * step are `int` (wgmma.c), so with the flag's facts (start >= 0, step
 * and divisors > 0) each counter is at most the numerator, and a
 * remainder plus its gain (the step, or a quotient's gain, each below
 * 2^31) stays below 2^32. In 64 bits the advance cost two instructions an
 * add, compare and subtract: in the SASS of conv2d.tile's twins about 40
 * of a step's 170 instructions (session 43). A wider divisor (`cdiv(C,
 * BK) * BK`, 64-bit where it may pass 2^31 - 1) is clamped to 2^31 for
 * the counters (tl_ddP): a numerator below 2^31 has quotient 0 by either,
 * which a truncated divisor would not give; a counter read as a wider
 * value goes through (int). Without the flag (a divisor not
 * positive, a negative start) each step divides as written, in 64 bits,
 * and keeps the value's low 32 bits: the source's i32 value. The caller
 * may ask for 64 bits (narrow 0): the gather twins of two blocks an SM,
 * whose producer has 56 registers a thread; ptxas spilled one of them
 * (conv2d_nhwc variant 3: 18 local loads and stores) with 32-bit counters. */
#include <string.h>

#include "lower/lower_internal.h"

enum { SD_MAX = 8, SD_NODES = 32 };

typedef struct sd_pair {
    int parent;      /* the pair whose quotient is the numerator, or -1: the loop variable */
    const char *den; /* the divisor, as C */
    int clamp;       /* a divisor wider than 32 bits under 32-bit counters: tl_ddP, it clamped to 2^31 */
} sd_pair;

struct lower_stepdiv {
    const char *var; /* the loop variable (source name) */
    sd_pair pair[SD_MAX];
    int npairs;
    const tilec_expr *node[SD_NODES]; /* each division read, with its pair and kind */
    int node_pair[SD_NODES], node_mod[SD_NODES];
    int nnodes;
    int taps; /* the hoist keeps values of the tap (hoist.c): the advance says when they move */
    int wide; /* a divisor wider than 32 bits: 64-bit counters */
};

static int sd_pair_of(const lower_stepdiv *s, const tilec_expr *e)
{
    for (int i = 0; i < s->nnodes; i++)
        if (s->node[i] == e)
            return i;
    return -1;
}

/* The divisor: a scalar name bound before the loop (not the loop
 * variable, not a value let in the loop, not reassigned). */
static int sd_invariant(lw *L, const lower_stepdiv *s, const tilec_expr *d)
{
    if (d->kind != TILEC_EX_NAME || !strcmp(d->name, s->var) || lower_in_list(L->assigned, L->nassigned, d->name))
        return 0;
    val *x = lower_lookup(L, d->name);
    return x && x->kind == VK_SCALAR && lower_ty(L, d)->rank == 0 && tilec_dtype_class(lower_ty(L, d)->dtype) == 's';
}

/* The pair of numerator n: -1 for the loop variable, the pair of a
 * division already kept (through the names let to it: `let tap = q0 /
 * cp; tap / S`), -2 for anything else. */
static int sd_numerator(lw *L, lower_stepdiv *s, const tilec_expr *n)
{
    n = lower_look(L, n);
    if (n->kind == TILEC_EX_NAME && !strcmp(n->name, s->var))
        return -1;
    int k = sd_pair_of(s, n);
    return k >= 0 && !s->node_mod[k] ? s->node_pair[k] : -2;
}

/* Are a and b the same numerator: one node through the names let to it,
 * or one name (the loop variable). */
static int sd_same(lw *L, const tilec_expr *a, const tilec_expr *b)
{
    a = lower_look(L, a);
    b = lower_look(L, b);
    return a == b || (a->kind == TILEC_EX_NAME && b->kind == TILEC_EX_NAME && !strcmp(a->name, b->name));
}

/* A remainder spelt by subtraction, `n - (n / d) * d` (or `d * (n / d)`),
 * `n / d` a quotient kept (through names): that division's index, else
 * -1. It is C's n % d, which the remainder counter holds (conv_gemm of
 * tests/conv_forms: `q0 - tap * cp`, `tap - r * S`). */
static int sd_sub_mod(lw *L, const lower_stepdiv *s, const tilec_expr *e)
{
    if (e->kind != TILEC_EX_BINARY || e->op != TILEC_OP_SUB)
        return -1;
    const tilec_expr *m = lower_look(L, e->args[1]);
    if (m->kind != TILEC_EX_BINARY || m->op != TILEC_OP_MUL)
        return -1;
    for (int i = 0; i < 2; i++) {
        const tilec_expr *q = lower_look(L, m->args[i]);
        int k = sd_pair_of(s, q);
        if (k >= 0 && !s->node_mod[k] && sd_same(L, q->args[0], e->args[0]) && sd_same(L, q->args[1], m->args[1 - i]))
            return k;
    }
    return -1;
}

static void sd_scan(lw *L, lower_stepdiv *s, const tilec_expr *e, int depth)
{
    if (!e || depth > 64)
        return;
    if (e->kind == TILEC_EX_NAME) {
        val *x = lower_lookup(L, e->name);
        if (x && x->kind == VK_VIRT && x->expr)
            sd_scan(L, s, x->expr, depth + 1);
        return;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        sd_scan(L, s, e->args[i], depth + 1);
    int sub = sd_sub_mod(L, s, e);
    if (sub >= 0 && sd_pair_of(s, e) < 0 && s->nnodes < SD_NODES && lower_ty(L, e)->rank == 0) {
        s->node[s->nnodes] = e; /* the remainder counter of that division's pair */
        s->node_pair[s->nnodes] = s->node_pair[sub];
        s->node_mod[s->nnodes] = 1;
        s->nnodes++;
        return;
    }
    if (e->kind != TILEC_EX_BINARY || (e->op != TILEC_OP_DIV && e->op != TILEC_OP_MOD) || lower_ty(L, e)->rank ||
        tilec_dtype_class(lower_ty(L, e)->dtype) != 's' || sd_pair_of(s, e) >= 0 || s->nnodes == SD_NODES)
        return;
    int parent = sd_numerator(L, s, e->args[0]); /* the numerator's divisions are kept first (scanned above) */
    if (parent == -2 || !sd_invariant(L, s, e->args[1]))
        return;
    const char *den = lower_walk(L, e->args[1], NULL, 0, NULL, EMIT);
    int p = 0;
    while (p < s->npairs && (s->pair[p].parent != parent || strcmp(s->pair[p].den, den)))
        p++;
    if (p == s->npairs) {
        if (p == SD_MAX)
            return;
        s->pair[p] = (sd_pair){parent, den, tilec_dtype_size(lower_ty(L, e->args[1])->dtype) > 4};
        s->npairs++;
    }
    s->node[s->nnodes] = e;
    s->node_pair[s->nnodes] = p;
    s->node_mod[s->nnodes] = e->op == TILEC_OP_MOD;
    s->nnodes++;
}

/* Pair p's numerator as C: the loop variable's name or the parent's
 * quotient (as the signed value it is, where the counters are 32-bit). */
static const char *sd_num(lw *L, const lower_stepdiv *s, int p, const char *v)
{
    return s->pair[p].parent < 0 ? v : lower_fmt(L, s->wide ? "tl_dq%d" : "(int)tl_dq%d", s->pair[p].parent);
}

/* The counters' C type. */
static const char *sd_type(const lower_stepdiv *s) { return s->wide ? "long long" : "unsigned"; }

/* Pair p's divisor as the counters divide by it: a wider one clamped
 * (tl_ddP) where they are 32-bit. */
static const char *sd_den(lw *L, const lower_stepdiv *s, int p)
{
    return s->pair[p].clamp && !s->wide ? lower_fmt(L, "tl_dd%d", p) : s->pair[p].den;
}

void lower_stepdiv_begin(lw *L, const char *var, const tilec_expr *const *loads, int n, int narrow)
{
    lower_stepdiv *s = ar_alloc(&L->ar, sizeof *s);
    L->stepdiv = NULL;
    if (!s) {
        L->failed = 1;
        return;
    }
    memset(s, 0, sizeof *s);
    s->var = var;
    s->wide = !narrow;
    for (int i = 0; i < n; i++)
        for (uint32_t j = 0; j < loads[i]->nargs; j++)
            sd_scan(L, s, loads[i]->args[j], 0);
    if (!s->npairs)
        return;
    strbuf ok;
    sb_init(&ok);
    sb_puts(&ok, "tl_lo >= 0 && tl_st > 0");
    for (int p = 0; p < s->npairs; p++)
        sb_printf(&ok, " && (%s) > 0", s->pair[p].den);
    lower_line(L, "/* step counters: the copies' %d division%s by loop-invariant divisors, no division a step */",
               s->nnodes, s->nnodes > 1 ? "s" : "");
    lower_line(L, "const bool tl_dok = %s;", sb_str(&ok));
    sb_free(&ok);
    for (int p = 0; p < s->npairs; p++)
        if (s->pair[p].clamp && !s->wide) /* q0 < 2^31 <= the clamped divisor: quotient 0, remainder q0, as unclamped */
            lower_line(L, "const unsigned tl_dd%d = (unsigned)((%s) < 2147483648LL ? (%s) : 2147483648LL);", p,
                       s->pair[p].den, s->pair[p].den);
    for (int p = 0; p < s->npairs; p++) {
        const char *num = sd_num(L, s, p, "tl_lo"), *d = sd_den(L, s, p), *t = sd_type(s);
        lower_line(L, "%s tl_dq%d = tl_dok ? (%s)(%s) / (%s)(%s) : 0, tl_dr%d = tl_dok ? (%s)(%s) %% (%s)(%s) : 0;", t, p, t,
                   num, t, d, p, t, num, t, d);
    }
    L->stepdiv = s;
}

/* At the top of a step: without the counters, the divisions as written. */
void lower_stepdiv_step(lw *L, const char *v)
{
    lower_stepdiv *s = L->stepdiv;
    if (!s)
        return;
    lower_line(L, "if (!tl_dok) {");
    for (int p = 0; p < s->npairs; p++)
        lower_line(L, "    tl_dq%d = (%s)((long long)(%s) / (%s)), tl_dr%d = (%s)((long long)(%s) %% (%s));", p, sd_type(s),
                   sd_num(L, s, p, v), s->pair[p].den, p, sd_type(s), sd_num(L, s, p, v), s->pair[p].den);
    lower_line(L, "}");
}

void lower_stepdiv_advance(lw *L)
{
    lower_stepdiv *s = L->stepdiv;
    if (!s)
        return;
    lower_line(L, "if (tl_dok) { /* the counters one step on */");
    L->ind++;
    for (int p = 0; p < s->npairs; p++) {
        const char *t = sd_type(s);
        const char *gain = s->pair[p].parent < 0 ? lower_fmt(L, "(%s)tl_st", t) : lower_fmt(L, "tl_dn%d", s->pair[p].parent);
        lower_line(L, "%s tl_dn%d = 0;", t, p);
        lower_line(L, "tl_dr%d += %s;", p, gain);
        lower_line(L, "while (tl_dr%d >= (%s)(%s)) {", p, t, sd_den(L, s, p));
        lower_line(L, "    tl_dr%d -= (%s)(%s);", p, t, sd_den(L, s, p));
        lower_line(L, "    ++tl_dn%d;", p);
        lower_line(L, "}");
        lower_line(L, "tl_dq%d += tl_dn%d;", p, p);
    }
    if (s->taps) {
        strbuf b;
        sb_init(&b);
        for (int p = 0; p < s->npairs; p++)
            if (s->pair[p].parent < 0)
                sb_printf(&b, "%stl_dn%d", b.n ? " | " : "", p);
        lower_line(L, "tl_tnew = (%s) != 0; /* a quotient of the loop variable moved: the tap's kept values anew */", sb_str(&b));
        sb_free(&b);
    }
    L->ind--;
    lower_line(L, "}");
}

/* The loop variable v and the counters as values the compiler cannot
 * know (an empty asm that may change them; it does not): what a rare path
 * of the step computes from them then cannot reuse what the common path
 * computed, so nothing of the common path stays live into it (the gather
 * producer's per-chunk path, wggather.c: ptxas had kept each chunk's
 * masks from the fast half, packed into a register, for it). */
void lower_stepdiv_opaque(lw *L, const char *v)
{
    lower_stepdiv *s = L->stepdiv;
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "asm volatile(\"\" : \"+r\"(%s)", v);
    for (int p = 0; s && p < s->npairs; p++)
        sb_printf(&b, ", \"+%c\"(tl_dq%d), \"+%c\"(tl_dr%d)", s->wide ? 'l' : 'r', p, s->wide ? 'l' : 'r', p);
    sb_puts(&b, "); /* recomputed here, not kept from above */");
    lower_line(L, "%s", sb_str(&b));
    sb_free(&b);
}

void lower_stepdiv_end(lw *L) { L->stepdiv = NULL; }

/* A division the counters follow: 1 when its counter moves every step
 * (the remainder of the loop variable's own division), 2 when it moves
 * only when a quotient of the loop variable does (that quotient, and
 * every division of it: the filter tap of a convolution, which stays
 * for cp / BK steps); 0 for anything else. */
int lower_stepdiv_kind(lw *L, const tilec_expr *e)
{
    lower_stepdiv *s = L->stepdiv;
    int k = s ? sd_pair_of(s, e) : -1;
    if (k < 0)
        return 0;
    return s->pair[s->node_pair[k]].parent < 0 && s->node_mod[k] ? 1 : 2;
}

void lower_stepdiv_taps(lw *L)
{
    if (L->stepdiv)
        L->stepdiv->taps = 1;
}

const char *lower_stepdiv_ref(lw *L, const tilec_expr *e)
{
    lower_stepdiv *s = L->stepdiv;
    int k = sd_pair_of(s, e);
    if (k < 0)
        return NULL;
    tilec_dtype t = lower_ty(L, e)->dtype;
    return lower_fmt(L, "((%s)%stl_d%c%d)", lower_ctype(t), !s->wide && tilec_dtype_size(t) > 4 ? "(int)" : "",
                     s->node_mod[k] ? 'r' : 'q', s->node_pair[k]); /* 32-bit counters: the i32 value, signed */
}
