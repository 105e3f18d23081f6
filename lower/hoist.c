/* hoist.c: the loop-invariant parts of a pipelined loop's cp.async copies.
 *
 * Each 16-byte chunk a thread copies for a pipelined dot loop (pipeline.c)
 * has its address and mask computed from the load's pointer and mask
 * expressions. Their largest subexpressions that read an index tile
 * (`range`) but not the loop variable are the same in every iteration: they
 * are computed once per chunk before the loop, into registers
 * (tl_h<n>[tl_q], one a chunk), and the copies in the loop read those
 * (lower_walk asks lower_hoist_ref first). What is left in the loop is the
 * part that moves with the loop variable: for an implicit-GEMM convolution
 * the filter tap's offsets, the bounds checks of the shifted pixel and the
 * sum that makes the address. Where the step counters are there (the
 * gather producer, wggather.c; stepdiv.c), what moves only with a
 * counter's quotient (the tap: those offsets and bounds) is kept as well,
 * in registers the producer sets where the tap moves (lower_hoist_taps),
 * so the steps inside one tap add the channel offset and test c < C. */
#include <string.h>

#include "lower/lower_internal.h"

enum { HD_LOOP = 1, HD_TILE = 2, HD_OPAQUE = 4, HD_STEP = 8, HD_TAP = 16 };

/* What e depends on: the loop variable, an index tile, or something the
 * copies cannot recompute before the loop. Where the step counters are
 * there (stepdiv.c), what depends on the loop says how: HD_STEP, moves
 * every step (the loop variable, its remainder by a divisor); HD_TAP,
 * moves only when a quotient of the loop variable does (the filter tap). */
static int hoist_dep(lw *L, const tilec_expr *e, const char *var)
{
    if (lower_find_mat(L, e) || lower_is_materializing(e))
        return HD_OPAQUE;
    int kind = lower_stepdiv_kind(L, e);
    if (kind)
        return HD_LOOP | (kind == 1 ? HD_STEP : HD_TAP);
    if (e->kind == TILEC_EX_NAME) {
        if (!strcmp(e->name, var))
            return HD_LOOP | HD_STEP;
        val *x = lower_lookup(L, e->name);
        if (!x || x->kind == VK_SCALAR)
            return 0;
        return x->kind == VK_VIRT ? hoist_dep(L, x->expr, var) : HD_OPAQUE;
    }
    if (tilec_is_builtin(e, BI_RANGE))
        return HD_TILE;
    int d = 0;
    for (uint32_t i = 0; i < e->nargs; i++)
        d |= hoist_dep(L, e->args[i], var);
    return d;
}

/* Moves with the tap alone (not every step). */
static int hoist_tap(int d) { return (d & HD_TAP) && !(d & (HD_STEP | HD_OPAQUE)); }

/* A bare index tile or name: as cheap to recompute as to keep. */
static int hoist_cheap(lw *L, const tilec_expr *e)
{
    if (e->kind == TILEC_EX_INDEX)
        return hoist_cheap(L, e->args[0]);
    if (e->kind == TILEC_EX_NAME) {
        val *x = lower_lookup(L, e->name);
        return !x || x->kind == VK_SCALAR || (x->kind == VK_VIRT && hoist_cheap(L, x->expr));
    }
    return (tilec_is_builtin(e, BI_RANGE)) || e->kind == TILEC_EX_INT ||
           e->kind == TILEC_EX_BOOL;
}

/* The register of a new entry: one a chunk (tl_q), or, for transposed
 * copies whose rows repeat with period R in tl_q, one a row (tl_q % R)
 * when the value (text, chunk index tl_i1 absent) depends on the row alone. */
static void hoist_place(lw *L, lower_hoist *h, lower_hoisted *x, const char *text, const tilec_expr *ld)
{
    if (x->tap && !x->rank) { /* a scalar of the tap: one register */
        x->per = 0;
        x->ref = lower_fmt(L, "tl_h%d", h->n);
        return;
    }
    int R = h->at[h->cur] ? h->rows[h->cur] : 0;
    if (R && !strstr(text, h->kname[h->cur])) {
        x->per = R;
        x->ref = lower_fmt(L, "tl_h%d[tl_q %% %d]", h->n, R);
    } else {
        x->per = h->at[h->cur] ? lower_at_chunks(L, ld) : lower_chunk_count(L, ld);
        x->ref = lower_fmt(L, "tl_h%d[tl_q]", h->n);
    }
}

const char *lower_hoist_ref(lw *L, const tilec_expr *e, const char *const *idx)
{
    lower_hoist *h = L->hoist;
    int rank = lower_ty(L, e)->rank;
    if (!idx || rank < 1 || rank > 2 || h->skip[h->cur])
        return NULL;
    for (int i = 0; i < h->n; i++) {
        const lower_hoisted *x = &h->ent[i];
        if (x->e == e && x->load == h->cur && x->rank == rank && !strcmp(x->idx[0], idx[0]) &&
            (rank < 2 || !strcmp(x->idx[1], idx[1])))
            return x->ref;
    }
    int d = h->collect && h->n < LOWER_MAX_HOIST && !hoist_cheap(L, e) ? hoist_dep(L, e, h->var) : 0;
    if (h->taps && d == (HD_LOOP | HD_TAP | HD_TILE)) {
        /* moves with the tap alone: kept, set anew where the tap moved
         * (lower_hoist_taps), computed there in full: its loop-invariant parts
         * kept too cost registers the steps do not read (variant 4 of
         * conv2d.tile spilled its pixels' rows and columns, 8 a thread) */
        L->hoist = NULL;
        const char *text = lower_walk(L, e, idx, 0, NULL, EMIT);
        L->hoist = h;
        if (h->n == LOWER_MAX_HOIST || L->failed)
            return NULL;
        lower_hoisted *x = &h->ent[h->n];
        *x = (lower_hoisted){.e = e, .load = h->cur, .rank = rank, .init = text, .tap = 1,
                             .ctype = lower_ty(L, e)->dtype == TILEC_DT_BOOL ? "bool" : NULL};
        for (int i = 0; i < rank; i++)
            x->idx[i] = lower_fmt(L, "%s", idx[i]);
        hoist_place(L, h, x, text, h->ld[h->cur]);
        h->n++;
        h->ntaps++;
        return x->ref;
    }
    if (d != HD_TILE)
        return NULL;
    lower_hoisted *x = &h->ent[h->n];
    *x = (lower_hoisted){.e = e, .load = h->cur, .rank = rank, .ctype = lower_ty(L, e)->dtype == TILEC_DT_BOOL ? "bool" : NULL};
    for (int i = 0; i < rank; i++)
        x->idx[i] = lower_fmt(L, "%s", idx[i]);
    L->hoist = NULL;
    /* walked here, where a run's element is open (mask.c): the value the loop would compute */
    const char *text = lower_walk(L, e, idx, 0, NULL, EMIT);
    L->hoist = h;
    x->init = text;
    hoist_place(L, h, x, text, h->ld[h->cur]);
    h->n++;
    return x->ref;
}

/* An integer index tile as a sum of terms that do not move with the loop
 * (inv: computed once per chunk) and terms that do not move with the
 * chunk (uni: once per iteration). Sums, differences, products by a
 * scalar, broadcasts and integer casts are split (a narrowing cast is
 * taken to hold its value: an index that wrapped would address outside
 * the tensor anyway); anything else is one term, or the split fails. */
typedef struct hsplit {
    strbuf inv, uni, tap; /* tap: terms that move with the tap alone (scalars), where the hoist keeps them */
    int ok, taps;
    int rowonly; /* terms that read the chunk's column tl_i1 go to uni */
} hsplit;

static void split_term(lw *L, hsplit *s, int d, const tilec_expr *e, const char *const *idx, const char *mul, int neg)
{
    const char *x = lower_walk(L, e, idx, 0, NULL, EMIT);
    const char *kn = L->hoist_kname;
    if (s->rowonly && !strcmp(x, kn)) {
        /* the column itself, tl_kc + tl_c1 (lower_at_open): the lane's
         * part is kept with the row, the chunk's constant added in the loop */
        const char *lane[TILEC_MAX_RANK];
        int rank = lower_ty(L, e)->rank;
        for (int i = 0; i < rank && i < TILEC_MAX_RANK; i++)
            lane[i] = strcmp(idx[i], kn) ? idx[i] : "tl_c1";
        s->rowonly = 0;
        split_term(L, s, 0, e, lane, mul, neg);
        s->rowonly = 1;
        x = "tl_kc";
        d = HD_LOOP;
    }
    strbuf *b = s->taps && hoist_tap(d) && !(d & HD_TILE) ? &s->tap
                : d & HD_LOOP || (s->rowonly && strstr(x, kn)) ? &s->uni : &s->inv;
    sb_printf(b, " %s (long long)(%s)", neg ? "-" : "+", x);
    if (mul)
        sb_printf(b, " * (long long)(%s)", mul);
}

static void hoist_split(lw *L, hsplit *s, const tilec_expr *e, const char *const *idx, const char *mul, int neg)
{
    int d = hoist_dep(L, e, L->hoist_var);
    const tilec_type *t = lower_ty(L, e);
    if (!s->ok || (d & HD_OPAQUE) || tilec_dtype_class(t->dtype) != 's') {
        s->ok = 0;
        return;
    }
    if (!(d & HD_LOOP) || !(d & HD_TILE)) {
        split_term(L, s, d, e, idx, mul, neg);
        return;
    }
    const char *sub[TILEC_MAX_RANK];
    if (e->kind == TILEC_EX_NAME) {
        val *x = lower_lookup(L, e->name);
        hoist_split(L, s, x->expr, idx, mul, neg);
    } else if (e->kind == TILEC_EX_INDEX) {
        int k = 0;
        for (uint32_t i = 1; i < e->nargs; i++)
            if (e->args[i]->kind != TILEC_EX_NONE && (e->args[i]->kind != TILEC_EX_SLICE || e->args[i]->nargs)) {
                s->ok = 0; /* a slice or a pick: not split */
                return;
            }
        for (uint32_t i = 1; i < e->nargs; i++)
            if (e->args[i]->kind == TILEC_EX_SLICE)
                sub[k++] = idx[i - 1];
        hoist_split(L, s, e->args[0], sub, mul, neg);
    } else if (tilec_is_builtin(e, BI_CAST)) {
        hoist_split(L, s, e->args[0], idx, mul, neg);
    } else if (e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG) {
        hoist_split(L, s, e->args[0], idx, mul, !neg);
    } else if (e->kind == TILEC_EX_BINARY && (e->op == TILEC_OP_ADD || e->op == TILEC_OP_SUB)) {
        for (int i = 0; i < 2; i++) {
            lower_map_bcast(lower_ty(L, e->args[i]), t->rank, idx, sub);
            hoist_split(L, s, e->args[i], sub, mul, i && e->op == TILEC_OP_SUB ? !neg : neg);
        }
    } else if (e->kind == TILEC_EX_BINARY && e->op == TILEC_OP_MUL &&
               (!hoist_dep(L, e->args[0], L->hoist_var) || !hoist_dep(L, e->args[1], L->hoist_var))) {
        int f = hoist_dep(L, e->args[0], L->hoist_var) ? 1 : 0; /* the scalar factor */
        const char *m = lower_walk(L, e->args[f], NULL, 0, NULL, EMIT);
        lower_map_bcast(lower_ty(L, e->args[!f]), t->rank, idx, sub);
        hoist_split(L, s, e->args[!f], sub, mul ? lower_fmt(L, "(long long)(%s) * (long long)(%s)", mul, m) : m, neg);
    } else {
        s->ok = 0;
    }
}

/* The register kept for pointer e's scalar part `init` of the current
 * load (tap: the part that moves with the tap, else the invariant one),
 * or NULL. */
static const char *kept_base(const lower_hoist *h, const tilec_expr *e, int tap, const char *init)
{
    for (int i = 0; i < h->n; i++) {
        const lower_hoisted *x = &h->ent[i];
        if (x->e == e && x->load == h->cur && !x->rank && x->tap == tap && !strcmp(x->init, init))
            return x->ref;
    }
    return NULL;
}

/* A copy's pointer p + off + ...: the base and the inv terms in one
 * register a chunk, the uni terms added in the loop; NULL when it does
 * not split. */
const char *lower_hoist_ptr(lw *L, const tilec_expr *e, const char *const *idx)
{
    lower_hoist *h = L->hoist;
    const tilec_expr *base = e;
    const tilec_expr *off[8];
    int n = 0;
    while (base->kind == TILEC_EX_BINARY && base->op == TILEC_OP_ADD && lower_ty(L, base->args[0])->ptr && n < 8) {
        off[n++] = base->args[1];
        base = base->args[0];
    }
    if (!n || hoist_dep(L, base, h->var) || lower_ty(L, base)->rank || h->skip[h->cur])
        return NULL;
    hsplit s = {.ok = 1, .taps = h->taps, .rowonly = h->at[h->cur] && h->rows[h->cur]};
    sb_init(&s.inv);
    sb_init(&s.uni);
    sb_init(&s.tap);
    L->hoist = NULL;
    L->hoist_var = h->var;
    L->hoist_kname = h->kname[h->cur];
    int rank = lower_ty(L, e)->rank;
    for (int i = 0; i < n; i++) {
        const char *sub[TILEC_MAX_RANK];
        lower_map_bcast(lower_ty(L, off[i]), rank, idx, sub);
        hoist_split(L, &s, off[i], sub, NULL, 0);
    }
    const char *init = s.ok ? lower_fmt(L, "%s + (0LL%s)", lower_walk(L, base, NULL, 0, NULL, EMIT), sb_str(&s.inv)) : NULL;
    const char *uni = s.ok ? lower_fmt(L, "(0LL%s)", sb_str(&s.uni)) : NULL;
    const char *tap = s.ok && s.tap.n ? lower_fmt(L, "(0LL%s)", sb_str(&s.tap)) : NULL;
    L->hoist = h;
    sb_free(&s.inv);
    sb_free(&s.uni);
    sb_free(&s.tap);
    if (!init || L->failed)
        return NULL;
    const char *ref = kept_base(h, e, 0, init), *tref = tap ? kept_base(h, e, 1, tap) : NULL;
    if (!ref && h->collect && h->n < LOWER_MAX_HOIST) {
        lower_hoisted *x = &h->ent[h->n];
        *x = (lower_hoisted){.e = e, .load = h->cur, .rank = 0, .init = init,
                             .ctype = lower_fmt(L, "const %s *", lower_ctype(lower_ty(L, e)->dtype))};
        hoist_place(L, h, x, init, h->ld[h->cur]);
        ref = x->ref;
        h->n++;
    }
    if (tap && !tref && h->collect && h->n < LOWER_MAX_HOIST) {
        /* the pointer's terms that move with the tap alone (the tap's row of
         * the filter, the shifted pixel's offset): one register, set anew
         * when the tap moves */
        lower_hoisted *x = &h->ent[h->n];
        *x = (lower_hoisted){.e = e, .load = h->cur, .rank = 0, .init = tap, .tap = 1, .ctype = "long long"};
        hoist_place(L, h, x, tap, h->ld[h->cur]);
        tref = x->ref;
        h->n++;
        h->ntaps++;
    }
    if (tap && !tref)
        uni = lower_fmt(L, "(%s + %s)", tap, uni); /* not kept: computed in the step */
    else if (tap)
        uni = lower_fmt(L, "(%s + %s)", tref, uni);
    return ref ? lower_fmt(L, "(%s + %s)", ref, uni) : NULL;
}

/* Find what load `i` (ld) can keep: run its copies' emission with the
 * table collecting, and drop the text. */
static void hoist_collect(lw *L, lower_hoist *h, int i, const tilec_expr *ld)
{
    size_t at = L->out.n;
    int nsync = L->nsync;
    h->collect = 1;
    h->cur = i;
    if (h->at[i])
        lower_emit_at_copies(L, ld, "0", 8, h->mode[i] == LOWER_CP_T1);
    else
        lower_emit_async_load(L, ld, "0", 8, h->mode[i] == LOWER_CP_COLS);
    h->collect = 0;
    L->out.n = at;
    if (L->out.s)
        L->out.s[at] = 0;
    L->nsync = nsync;
}

/* The loop over load i's chunks that sets its kept values of one kind
 * (tap: those that move with the tap, else the loop-invariant ones). */
static void hoist_fill(lw *L, lower_hoist *h, int i, const tilec_expr *ld, int tap)
{
    int any = 0;
    for (int j = 0; j < h->n; j++)
        any |= h->ent[j].load == i && h->ent[j].tap == tap && h->ent[j].per;
    if (!any)
        return;
    if (h->at[i])
        lower_at_open(L, ld, h->mode[i] == LOWER_CP_T1);
    else
        lower_chunk_open(L, ld, h->mode[i] == LOWER_CP_COLS);
    for (int j = 0; j < h->n; j++) {
        const lower_hoisted *x = &h->ent[j];
        if (x->load != i || x->tap != tap || !x->per)
            continue;
        const char *v = x->init;
        if (x->per < (h->at[i] ? lower_at_chunks(L, ld) : lower_chunk_count(L, ld))) /* one a row: the first R chunks */
            lower_line(L, "if (tl_q < %d) tl_h%d[tl_q] = %s;", x->per, j, v);
        else
            lower_line(L, "tl_h%d[tl_q] = %s;", j, v);
    }
    L->ind--;
    lower_line(L, "}");
}

/* The registers of load i's kept values and the loop that fills the
 * loop-invariant ones (those of the tap: lower_hoist_taps). */
static void hoist_emit(lw *L, lower_hoist *h, int i, const tilec_expr *ld)
{
    const char *zero[2] = {"0", "0"};
    for (int j = 0; j < h->n; j++) {
        const lower_hoisted *x = &h->ent[j];
        if (x->load != i)
            continue;
        if (!x->per)
            lower_line(L, "%s tl_h%d = 0;", x->ctype, j);
        else if (x->ctype)
            lower_line(L, "%s tl_h%d[%d];", x->ctype, j, x->per);
        else /* the type of the expression itself (the walker's promotions) */
            lower_line(L, "decltype((%s) + 0) tl_h%d[%d];", lower_walk(L, x->e, zero, 0, NULL, EMIT), j, x->per);
    }
    hoist_fill(L, h, i, ld, 0);
}

/* The values of the tap (an implicit GEMM's shifted pixel's bounds, the
 * filter's rows of the tap), set where the caller's loop enters a tap:
 * the gather producer (wggather.c) runs its steps in an inner loop that
 * leaves when the tap moved (tl_tnew, stepdiv.c; every step when the
 * counters were refused), so the steps inside one tap read them from
 * registers and have no branch to skip them (ptxas predicated an `if`
 * around them, issuing them every step). Returns whether there are any. */
int lower_hoist_taps(lw *L)
{
    lower_hoist *h = L->hoist;
    if (!h || !h->ntaps)
        return 0;
    lower_line(L, "/* the tap's kept values: a quotient of the loop variable moved */");
    for (int j = 0; j < h->n; j++)
        if (h->ent[j].tap && !h->ent[j].per)
            lower_line(L, "tl_h%d = %s;", j, h->ent[j].init);
    for (int i = 0; i < 2; i++)
        if (h->ld[i])
            hoist_fill(L, h, i, h->ld[i], 1);
    return 1;
}

/* Past this many kept registers a thread (all loads together: one a chunk,
 * or one a row for the transposed copies) the kept bases and masks cost
 * more registers than the loop can spare: the tf32 128x256 ring (12
 * chunks) spilled with them, and so did the f32 128x256, BK = 32 loop with
 * B's 8 chunks and A's 2 rows (255 registers, 40 bytes of stack; A's
 * alone: 245 registers, none; A's 4 rows since its copies cover 4 rows
 * by 8 k a warp: 247, none). */
enum { HOIST_MAX_CHUNKS = 8 };

void lower_hoist_begin(lw *L, lower_hoist *h, const char *var, const tilec_expr *const *loads, const int *mode, int n)
{
    memset(h, 0, sizeof *h);
    int regs = 0, kept = 0, cost[2] = {0, 0};
    for (int i = 0; i < n; i++) {
        h->ld[i] = loads[i];
        h->mode[i] = mode[i];
        h->at[i] = mode[i] == LOWER_CP_T1 || mode[i] == LOWER_CP_T0;
        h->kname[i] = mode[i] == LOWER_CP_T0 ? "tl_i0" : "tl_i1";
        h->rows[i] = h->at[i] ? lower_at_rows(L, loads[i], mode[i] == LOWER_CP_T1) : 0;
        cost[i] = h->rows[i] ? h->rows[i] : h->at[i] ? lower_at_chunks(L, loads[i]) : lower_chunk_count(L, loads[i]);
        regs += cost[i];
    }
    /* over the budget, the loads kept one register a row (the transposed
     * copies: A's 4 at 128x256) are kept, in operand order, while they
     * fit; the others' chunks compute their addresses in the loop */
    for (int i = 0, used = 0; i < n; i++) {
        h->skip[i] = regs > HOIST_MAX_CHUNKS && (!h->rows[i] || used + cost[i] > HOIST_MAX_CHUNKS);
        used += h->skip[i] ? 0 : cost[i];
        kept += !h->skip[i];
    }
    if (!kept) {
        L->hoist = NULL; /* addresses and masks computed in the loop, as before */
        return;
    }
    h->var = var;
    h->taps = L->stepdiv != NULL; /* the counters say which divisions move with the tap alone */
    L->hoist = h;
    for (int i = 0; i < n; i++)
        hoist_collect(L, h, i, loads[i]);
    /* the values are computed by the plain walker */
    L->hoist = NULL;
    if (h->n)
        lower_line(L, "/* loop-invariant parts of the copies' addresses and masks, one register a chunk */");
    for (int i = 0; i < n; i++)
        hoist_emit(L, h, i, loads[i]);
    if (h->ntaps) {
        lower_line(L, "bool tl_tnew = true; /* whether a step moved the tap (the counters' advance; stays true when they are refused) */");
        lower_stepdiv_taps(L);
    }
    L->hoist = h;
}

void lower_hoist_end(lw *L)
{
    L->hoist = NULL;
}
