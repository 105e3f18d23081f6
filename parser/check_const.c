/* check_const.c: compile-time constants of kernels (integer expressions
 * over literals and hints, evaluated by tilec/iexpr.h), tile dimensions, and the
 * register limit of tiles. */
#include <string.h>

#include "parser/ast_ix.h"
#include "parser/check_internal.h"

typedef struct const_env {
    checker *ck;
    const char *what;
} const_env;

/* A name of a constant: a hint bound before it, else an error reported. */
static int const_lookup(void *user, const tilec_ix *sym, int64_t *out)
{
    const_env *c = user;
    checker *ck = c->ck;
    const tilec_expr *e = sym->origin;
    binding *b = chk_lookup(ck, e->name);
    if (b && b->kind == B_HINT) {
        *out = b->value;
        return 0;
    }
    const tilec_hint *later = NULL;
    for (uint32_t i = 0; !b && ck->k && i < ck->k->nhints && !later; i++)
        if (!strcmp(ck->k->hints[i].name, e->name))
            later = &ck->k->hints[i];
    if (later) {
        chk_err(ck, &e->loc, "hint '%s' is used before it is defined (a hint may only use the hints before it)",
            e->name);
        chk_note(ck, &later->loc, "'%s' is defined here", e->name);
    } else if (!b) {
        chk_err(ck, &e->loc, "undefined name '%s'", e->name);
        chk_tune_note_undefined(ck, e->name);
    }
    else
        chk_err(ck, &e->loc, "%s must be a compile-time constant (integer literals, hints and module constants), but '%s' is %s",
            c->what, e->name, b->kind == B_PARAM ? "a parameter" : "a run-time value");
    return 1;
}

/* Why the evaluation of a constant failed at node `at`, reported. */
static void const_err(checker *ck, const_env *c, tilec_ix_err r, const tilec_ix *at)
{
    const tilec_expr *e = at->origin;
    int64_t a = 0, b = 0;
    switch (r) {
    case TILEC_IX_UNKNOWN: return; /* const_lookup said why */
    case TILEC_IX_DIV_ZERO: chk_err(ck, &e->loc, "division by zero in %s", c->what); return;
    case TILEC_IX_CDIV_DIVISOR: /* its operands evaluated: say what they were */
        tilec_ix_eval(at->a, const_lookup, c, &a, NULL);
        tilec_ix_eval(at->b, const_lookup, c, &b, NULL);
        chk_err(ck, &e->loc, "cdiv in %s needs b > 0, got cdiv(%lld, %lld)", c->what, (long long)a, (long long)b);
        return;
    default: chk_err(ck, &e->loc, "%s overflows a 64-bit integer", c->what); return;
    }
}

/* Evaluate an integer constant expression over literals and hints, with
 * the one evaluator (tilec/iexpr.h). On failure reports why (naming
 * `what`) and returns -1. */
int chk_const_eval(checker *ck, const tilec_expr *e, const char *what, int64_t *out)
{
    aix_why why = {0};
    const tilec_ix *x = ast_to_ix(&ck->scratch, e, 0, &why);
    if (!x) {
        const tilec_expr *at = why.at;
        if (why.fail == AIX_NOMEM)
            ck->oom = 1;
        else if (why.fail == AIX_FLOAT)
            chk_err(ck, &at->loc, "%s must be an integer, got the float %s", what,
                at->kind == TILEC_EX_INF ? "inf" : at->name);
        else
            chk_err(ck, &at->loc, "%s must be a compile-time integer constant (integer literals, hints and module constants)", what);
        return -1;
    }
    const_env c = {ck, what};
    const tilec_ix *at = NULL;
    tilec_ix_err r = tilec_ix_eval(x, const_lookup, &c, out, &at);
    if (r != TILEC_IX_OK && at)
        const_err(ck, &c, r, at);
    return r == TILEC_IX_OK ? 0 : -1;
}

/* A name of a constant for chk_const_try: a hint bound before it, else
 * silently not a constant. */
static int const_lookup_quiet(void *user, const tilec_ix *sym, int64_t *out)
{
    const tilec_expr *e = sym->origin;
    binding *b = chk_lookup(user, e->name);
    if (b && b->kind == B_HINT) {
        *out = b->value;
        return 0;
    }
    return 1;
}

/* The value of e if it is an integer constant expression (0), else -1 with
 * nothing reported: a run-time value where a constant is optional. */
int chk_const_try(checker *ck, const tilec_expr *e, int64_t *out)
{
    aix_why why = {0};
    const tilec_ix *x = ast_to_ix(&ck->scratch, e, 0, &why);
    if (!x) {
        if (why.fail == AIX_NOMEM)
            ck->oom = 1;
        return -1;
    }
    return tilec_ix_eval(x, const_lookup_quiet, ck, out, NULL) == TILEC_IX_OK ? 0 : -1;
}

/* A tile dimension: a positive power of two up to TILEC_MAX_TILE_DIM. */
int chk_tile_dim(checker *ck, const tilec_expr *e, int64_t *out)
{
    if (chk_const_eval(ck, e, "a tile size", out))
        return -1;
    chk_tune_mark_tile(ck, e);
    int64_t v = *out;
    if (v <= 0 || v > TILEC_MAX_TILE_DIM || (v & (v - 1))) {
        chk_err(ck, &e->loc, "tile size must be a power of two from 1 to %d, got %lld", TILEC_MAX_TILE_DIM,
            (long long)v);
        chk_note_hint(ck, e, v);
        return -1;
    }
    return 0;
}

void chk_note_hint(checker *ck, const tilec_expr *e, int64_t v)
{
    binding *b = e->kind == TILEC_EX_NAME ? chk_lookup(ck, e->name) : NULL;
    if (b && b->kind == B_HINT)
        chk_note(ck, &b->loc, "hint '%s' is set to %lld here", e->name, (long long)v);
}

int chk_axis(checker *ck, const tilec_expr *e, const char *what, const tilec_type *shape, int64_t *out)
{
    int64_t v;
    if (chk_const_eval(ck, e, what, &v))
        return -1;
    *out = v < 0 ? v + shape->rank : v;
    if (*out < 0 || *out >= shape->rank) {
        chk_err(ck, chk_start_of(e), "axis %lld is out of range for shape %s (axes %d to %d)", (long long)v,
            chk_shp_str(ck, shape), -(int)shape->rank, (int)shape->rank - 1);
        chk_note_hint(ck, e, v);
        return -1;
    }
    return 0;
}

/* 32-bit registers per element of a tile of dtype d held by one thread:
 * f16 and bf16 pack two to a register, 8- and 16-bit integers and bools
 * take one each, 64-bit types two. Times 2, so that halves are exact. */
static int64_t regs2_per_elem(tilec_dtype d)
{
    unsigned size = tilec_dtype_size(d);
    if (d == TILEC_DT_F16 || d == TILEC_DT_BF16)
        return 1;
    return size <= 4 ? 2 : 4;
}

/* The registers one thread needs for tile t with `warps` warps: its
 * elements spread over 32*warps threads, each holding its share (lowering's
 * layouts, docs/lowering.md); at least one element each. */
static int64_t tile_regs(const tilec_type *t, int64_t n, int64_t warps)
{
    int64_t threads = 32 * warps, per = (n + threads - 1) / threads;
    return (per * regs2_per_elem(t->dtype) + 1) / 2;
}

int chk_tile_numel_ok(checker *ck, const tilec_loc *loc, const tilec_type *t)
{
    int64_t n = 1;
    for (unsigned i = 0; i < t->rank; i++) {
        if (__builtin_mul_overflow(n, t->dims[i], &n) || n > TILEC_MAX_TILE_ELEMS) {
            chk_err(ck, loc, "tile %s has more than %d elements (the largest tile tilec accepts)", chk_shp_str(ck, t),
                TILEC_MAX_TILE_ELEMS);
            return 0;
        }
    }
    /* registers: a tile a thread cannot hold makes NVRTC spill it all,
     * which takes minutes and gigabytes (a 256x256 f32 tile at warps = 1:
     * 2048 registers a thread, 105 s and 5.9 GB), for a kernel that would
     * crawl; the limit is per tile, a bound every kernel we know keeps */
    binding *w = chk_lookup(ck, "warps");
    int64_t warps = w && w->kind == B_HINT && w->value >= 1 && w->value <= 32 ? w->value : 4;
    int64_t regs = tile_regs(t, n, warps);
    chk_tune_note_tile(ck, regs);
    if (regs <= TILEC_MAX_TILE_REGS)
        return 1;
    int64_t need = warps;
    while (need < 32 && tile_regs(t, n, need) > TILEC_MAX_TILE_REGS)
        need *= 2;
    int64_t fit = TILEC_MAX_TILE_REGS * 2 / regs2_per_elem(t->dtype) * 32 * warps;
    if (tile_regs(t, n, need) <= TILEC_MAX_TILE_REGS)
        chk_err(ck, loc,
            "tile %s needs %lld registers in each of the %lld threads of warps = %lld, more than %d: at warps = %lld "
            "a tile of %s holds at most %lld elements; this one needs warps = %lld",
            chk_shp_str(ck, t), (long long)regs, (long long)(32 * warps), (long long)warps, TILEC_MAX_TILE_REGS,
            (long long)warps, tilec_dtype_name(t->dtype), (long long)fit, (long long)need);
    else
        chk_err(ck, loc,
            "tile %s needs %lld registers in each of the %lld threads of warps = %lld, more than %d: at warps = %lld "
            "a tile of %s holds at most %lld elements, and even warps = 32 is not enough; use a smaller tile",
            chk_shp_str(ck, t), (long long)regs, (long long)(32 * warps), (long long)warps, TILEC_MAX_TILE_REGS,
            (long long)warps, tilec_dtype_name(t->dtype), (long long)fit);
    return 0;
}
