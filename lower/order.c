/* order.c: the launch order of pid(0). Blocks start in blockIdx order, x
 * fastest; where a loop of the kernel runs more steps the larger pid(0)
 * is (causal attention: `hi = minimum(S, (pid(0) + 1) * BM)`), the
 * heaviest blocks would start last and run alone in the tail. When the
 * analysis below shows that every loop's trip count is a nondecreasing
 * function of pid(0) and one's grows, pid(0) is read in reverse
 * (gridDim.x - 1 - blockIdx.x, and the same in the sm_90a twin's grouped
 * and persistent orders): a bijection of the grid, so results are
 * unchanged, and the heavy blocks start first. docs/lowering.md,
 * "Launch order". */
#include <string.h>

#include "lower/lower_internal.h"

/* How a value moves as pid(0) grows, for every value of everything else:
 * bits of what it may do. */
enum { MO_CONST = 0, MO_UP = 1, MO_DOWN = 2, MO_ANY = 3 };

enum { MO_MEMO = 64 };

typedef struct order_cx {
    lw *L;
    const tilec_stmt *def; /* a definition that grows with pid(0) (the remark's witness) */
    /* names met: their answer, or the guess while being worked out (a cycle) */
    const char *name[MO_MEMO];
    int mo[MO_MEMO], nname;
} order_cx;

static int mo_neg(int m) { return ((m & MO_UP) << 1) | ((m & MO_DOWN) >> 1); }

static int mo_expr(order_cx *c, const tilec_expr *e, int depth);

/* Does b define `name` (a let, an assignment, a loop variable)? */
static int defines(const tilec_block *b, const char *name)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        for (uint32_t j = 0; j < s->nnames; j++)
            if (s->names[j] && !strcmp(s->names[j], name))
                return 1;
        if (defines(&s->body, name) || defines(&s->orelse, name))
            return 1;
    }
    return 0;
}

/* Every definition of `name` in b (a let, an assignment, a loop's
 * variable) joined into *m; in_loop: b runs in a loop, guard: the ifs
 * around b test only what pid(0) does not move. */
static void mo_defs(order_cx *c, const tilec_block *b, const char *name, int in_loop, int guard, int depth, int *m)
{
    for (uint32_t i = 0; i < b->nstmts && *m != MO_ANY; i++) {
        const tilec_stmt *s = b->stmts[i];
        int named = 0;
        for (uint32_t j = 0; j < s->nnames; j++)
            named |= s->names[j] && !strcmp(s->names[j], name);
        if (named) {
            int v = MO_ANY;
            if ((s->kind == TILEC_ST_LET || s->kind == TILEC_ST_ASSIGN) && !in_loop && guard)
                v = mo_expr(c, s->value, depth + 1);
            else if (s->kind == TILEC_ST_FOR && guard) /* a loop variable: within lo .. hi */
                v = mo_expr(c, s->lo, depth + 1) | mo_expr(c, s->hi, depth + 1);
            if (v == MO_UP && s->kind != TILEC_ST_FOR) /* the last to finish: the outermost */
                c->def = s;
            *m |= v;
        }
        if (!defines(&s->body, name) && !defines(&s->orelse, name))
            continue;
        int g = guard && (s->kind != TILEC_ST_IF || mo_expr(c, s->value, depth + 1) == MO_CONST);
        mo_defs(c, &s->body, name, in_loop || s->kind == TILEC_ST_FOR, g, depth, m);
        mo_defs(c, &s->orelse, name, in_loop || s->kind == TILEC_ST_FOR, g, depth, m);
    }
}

static int mo_name(order_cx *c, const char *name, int depth)
{
    int64_t v;
    if (lower_hint_value(c->L, name, &v))
        return MO_CONST;
    for (int i = 0; i < c->nname; i++)
        if (!strcmp(c->name[i], name))
            return c->mo[i];
    if (c->nname == MO_MEMO)
        return MO_ANY;
    /* A definition may read the name itself (fa_d64_exp2's `nblk =
     * minimum(nblk, ...)`: its previous value): the least answer that
     * its definitions reproduce, from MO_CONST up (the transfers are
     * monotone and the lattice two high, so at most three rounds); what
     * was worked out under a smaller guess is forgotten each round. */
    int at = c->nname++, m = MO_CONST, guess = -1;
    c->name[at] = name;
    for (int round = 0; round < 4 && m != guess; round++) {
        guess = c->mo[at] = m;
        c->nname = at + 1;
        m = MO_CONST; /* a parameter's value on entry, or a module constant */
        mo_defs(c, &c->L->k->body, name, 0, 1, depth, &m);
        m |= guess;
    }
    return c->mo[at] = m == guess ? m : MO_ANY;
}

static int mo_expr(order_cx *c, const tilec_expr *e, int depth)
{
    int64_t k;
    if (!e)
        return MO_CONST;
    if (depth > 64)
        return MO_ANY;
    switch (e->kind) {
    case TILEC_EX_INT:
    case TILEC_EX_FLOAT:
    case TILEC_EX_BOOL:
    case TILEC_EX_INF:
    case TILEC_EX_DTYPE:
    case TILEC_EX_NONE:
        return MO_CONST;
    case TILEC_EX_NAME:
        return mo_name(c, e->name, depth);
    default:
        break;
    }
    if (e->kind == TILEC_EX_CALL && e->builtin == BI_PID && e->nargs == 1)
        return lower_const_int(c->L, e->args[0], &k) ? MO_ANY : k == 0 ? MO_UP : MO_CONST;
    if (e->kind == TILEC_EX_CALL && e->builtin == BI_NUM_PROGRAMS)
        return MO_CONST;
    int a = e->nargs > 0 ? mo_expr(c, e->args[0], depth + 1) : MO_CONST;
    int b = e->nargs > 1 ? mo_expr(c, e->args[1], depth + 1) : MO_CONST;
    if (e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG)
        return mo_neg(a);
    if (e->kind == TILEC_EX_BINARY && e->op == TILEC_OP_ADD)
        return a | b;
    if (e->kind == TILEC_EX_BINARY && e->op == TILEC_OP_SUB)
        return a | mo_neg(b);
    /* times a constant, or over a positive one: its sign decides */
    if (e->kind == TILEC_EX_BINARY && (e->op == TILEC_OP_MUL || e->op == TILEC_OP_DIV)) {
        for (int i = 0; i < 2; i++) {
            if ((e->op == TILEC_OP_DIV && i == 1) || lower_const_int(c->L, e->args[1 - i], &k))
                continue;
            int m = i ? b : a;
            if (e->op == TILEC_OP_DIV)
                return k > 0 ? m : MO_ANY;
            return k > 0 ? m : k < 0 ? mo_neg(m) : MO_CONST;
        }
    }
    if (e->kind == TILEC_EX_CALL && e->builtin == BI_CDIV && e->nargs == 2 && !lower_const_int(c->L, e->args[1], &k))
        return k > 0 ? a : MO_ANY;
    if (e->kind == TILEC_EX_CALL && (e->builtin == BI_MINIMUM || e->builtin == BI_MAXIMUM))
        return a | b;
    if (e->kind == TILEC_EX_CALL && e->builtin == BI_CAST) /* narrowing casts are not followed: pid < 2^31 */
        return a;
    /* where(c, x, y) with a test that pid(0) does not move: for every value
     * of everything else it is x throughout or y throughout, so it moves as
     * their join (fa_d64_lets' `kv_stop = where(is_causal, diag_end, S)`) */
    if (e->kind == TILEC_EX_CALL && e->builtin == BI_WHERE && e->nargs == 3 && a == MO_CONST)
        return b | mo_expr(c, e->args[2], depth + 1);
    /* anything else: constant where nothing it reads moves with pid(0) */
    if (a != MO_CONST || b != MO_CONST)
        return MO_ANY;
    for (uint32_t i = 2; i < e->nargs; i++)
        if (mo_expr(c, e->args[i], depth + 1) != MO_CONST)
            return MO_ANY;
    return MO_CONST;
}

/* The loops of b joined into *trip (how their trip counts move with
 * pid(0)), the first whose count grows into *up; guard as mo_defs. */
static void mo_loops(order_cx *c, const tilec_block *b, int guard, int *trip, const tilec_stmt **up)
{
    int64_t k;
    for (uint32_t i = 0; i < b->nstmts && *trip != MO_ANY; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_RETURN && !guard) /* an early exit that pid(0) decides */
            *trip = MO_ANY;
        if (s->kind == TILEC_ST_FOR) {
            int step = !s->step || (!lower_const_int(c->L, s->step, &k) && k > 0);
            int m = step && guard ? mo_expr(c, s->hi, 0) | mo_neg(mo_expr(c, s->lo, 0)) : MO_ANY;
            if (m == MO_UP && !*up)
                *up = s;
            *trip |= m;
        }
        int g = guard && (s->kind != TILEC_ST_IF || mo_expr(c, s->value, 0) == MO_CONST);
        mo_loops(c, &s->body, g, trip, up);
        mo_loops(c, &s->orelse, g, trip, up);
    }
}

void lower_launch_order(lw *L)
{
    order_cx c = {.L = L};
    int trip = MO_CONST;
    const tilec_stmt *up = NULL;
    mo_loops(&c, &L->k->body, 1, &trip, &up);
    c.def = NULL;
    c.nname = 0;
    if (up) /* the witness: a definition of that loop's bound (worked out again, nothing memoized) */
        mo_expr(&c, up->hi, 0);
    L->order.rev = trip == MO_UP && up && L->k->ngrid >= 1;
    L->order.loop = L->order.rev ? up : NULL;
    L->order.def = L->order.rev ? c.def : NULL;
}

void lower_launch_order_remark(lw *L, strbuf *out)
{
    const tilec_stmt *s = L->order.loop, *d = L->order.def;
    if (!L->order.rev || !s)
        return;
    sb_printf(out, "line %u: launch order: pid(0) reversed, the blocks with the most steps first: the loop's bound `%s`",
              s->loc.line, lower_expr_text(L, s->hi));
    if (d && d->value)
        sb_printf(out, " (`%s = %s`, line %u)", d->names[0], lower_expr_text(L, d->value), d->loc.line);
    sb_puts(out, " grows with pid(0)\n");
}
