/* layplan.c: which layout each materialized tile gets, and the report of
 * the choices (--emit layouts).
 *
 * Before a variant is lowered, lower_plan scans its body for reductions
 * along the last axis of 2-D tiles and for dots. A tile of a shape reduced
 * along its rows gets the row-blocked layout (each row within one warp),
 * or, when a dot produces that shape, the dot's accumulator layout with
 * the warps stacked along the rows (mma warps n x 1), so the reduction
 * needs no shared memory. A 1-D tile as long as such rows have is placed
 * in the slice that reduction leaves, so m[:, None] is read from the
 * thread's own registers; one as long as the rows, in the slice along the
 * other axis (a row of weights, w[None, :]). Otherwise a 1-D tile as long as
 * a vector broadcast against an [M, N] tile in a binary operator (a row of
 * cos for RoPE, a bias added to a dot's result) takes the slice of [M, N]'s
 * layout (a dot's accumulators first), so the broadcast reads registers.
 * An elementwise result takes the layout of a
 * materialized operand of its shape; anything else is canonical. With
 * rows per warp, a tile named as a dot's A operand is kept in the
 * accumulator layout, which is its A fragments already. */
#include <stdarg.h>
#include <string.h>

#include "lower/lower_internal.h"

/* sum, prod, max, min, argmax or argmin(x, axis) */
int lower_is_reduce(const tilec_expr *e)
{
    return tilec_is_builtin_kind(e, BK_REDUCE) && e->nargs == 2;
}

static int reduce_axis_of(lw *L, const tilec_expr *e) { return lower_axis(L, e, 1, lower_ty(L, e->args[0])->rank); }

/* Operand o of an elementwise result t of rank 3 or more, broadcast along
 * one axis (o's size 1 there, t's more; the same sizes elsewhere): that
 * axis, else -1. */
static int bcast_axis_n(const tilec_type *t, const tilec_type *o)
{
    int ax = -1;
    if (o->rank != t->rank || o->ptr)
        return -1;
    for (int i = 0; i < t->rank; i++) {
        if (o->dims[i] == t->dims[i])
            continue;
        if (o->dims[i] != 1 || ax >= 0)
            return -1;
        ax = i;
    }
    return ax;
}

/* A vector meeting an [M, N] tile in a binary operator: a row ([N],
 * [1, N]) or a column ([M, 1]) stretched over it; of a tile of rank 3 or
 * more, an operand of its rank broadcast along one axis (bcast_axis_n). */
static void plan_bcast(lw *L, const tilec_expr *e)
{
    const tilec_type *t = lower_ty(L, e);
    if (t->rank >= 3) { /* `x * c` with x [R, 2, 64] and c [R, 1, 64] */
        for (int i = 0; i < 2; i++) {
            const tilec_type *o = lower_ty(L, e->args[i]);
            int ax = bcast_axis_n(t, o), known = 0;
            for (int k = 0; ax >= 0 && k < L->nbcastn; k++)
                known |= lower_same_shape(&L->bcastn[k], t) && L->bcastn_ax[k] == ax;
            if (ax >= 0 && !known && L->nbcastn < LP_MAX) {
                L->bcastn[L->nbcastn] = *t;
                L->bcastn_ax[L->nbcastn++] = ax;
            }
        }
        return;
    }
    if (t->rank != 2 || t->dims[0] == 1 || t->dims[1] == 1)
        return;
    for (int i = 0; i < 2; i++) {
        const tilec_type *o = lower_ty(L, e->args[i]);
        int ax = o->rank == 1 || (o->rank == 2 && o->dims[0] == 1) ? 1 : o->rank == 2 && o->dims[1] == 1 ? 0 : -1;
        int known = 0, fl = tilec_dtype_class(o->dtype) == 'f';
        if (ax < 0 || o->ptr)
            continue;
        for (int k = 0; k < L->nbcast; k++)
            known |= L->bcast[k][0] == t->dims[0] && L->bcast[k][1] == t->dims[1] && L->bcast[k][2] == ax &&
                     L->bcast[k][3] == fl;
        if (!known && L->nbcast < LP_MAX) {
            L->bcast[L->nbcast][0] = t->dims[0];
            L->bcast[L->nbcast][1] = t->dims[1];
            L->bcast[L->nbcast][2] = ax;
            L->bcast[L->nbcast++][3] = fl;
        }
    }
}

/* A memory access at pointer tile p: its shape and element size; `red`:
 * an f32 atomic_add, which lowers to vector atomics (memory.c). */
static void plan_mem(lw *L, const tilec_type *p, int red)
{
    unsigned sz = tilec_dtype_size(p->dtype);
    if (!p->rank || !sz)
        return;
    red = red && p->dtype == TILEC_DT_F32;
    for (int i = 0; i < L->nmem; i++)
        if (lower_same_shape(&L->memshape[i], p)) {
            if (sz < L->memsize[i])
                L->memsize[i] = sz;
            if (red)
                L->memred[i] = sz;
            return;
        }
    if (L->nmem < LP_MAX) {
        L->memshape[L->nmem] = *p;
        L->memred[L->nmem] = red ? sz : 0;
        L->memsize[L->nmem++] = sz;
    }
}

/* The elements of a canonical chunk of shape t: one 16-byte access of the
 * narrowest element a load or store moves at that shape (8 of f16/bf16),
 * 4 otherwise (4 of f32: 16 bytes; a shape no access moves). A vector
 * atomic at t sizes the chunk by its own element whatever the loads move
 * (4 of f32 beside a bf16 load): the L2 runs an atomic per 32-byte sector
 * of each request, so a warp's 16-byte REDs must lie side by side, each
 * sector filled by one request, not half by two (the bf16 operand is then
 * read 8 bytes a thread, still whole sectors a warp). */
int lower_chunk_elems_why(const lw *L, const tilec_type *t, const char **why)
{
    for (int i = 0; i < L->nmem; i++)
        if (lower_same_shape(&L->memshape[i], t)) {
            int n = L->memsize[i] <= 2 ? 8 : 4;
            if (L->memred[i] && 16 / (int)L->memred[i] < n) {
                n = 16 / (int)L->memred[i];
                if (why) /* memred is f32's 4 bytes */
                    *why = "an f32 vector atomic_add at the same shape sizes its chunks (4 elements)";
            }
            return n;
        }
    return 4;
}

int lower_chunk_elems(const lw *L, const tilec_type *t)
{
    return lower_chunk_elems_why(L, t, NULL);
}

static void plan_expr(lw *L, const tilec_expr *e)
{
    if (!e)
        return;
    for (uint32_t i = 0; i < e->nargs; i++)
        plan_expr(L, e->args[i]);
    if (e->kind == TILEC_EX_BINARY)
        plan_bcast(L, e);
    if (e->kind != TILEC_EX_CALL)
        return;
    const tilec_type *t = lower_ty(L, e);
    if (e->builtin == BI_LOAD || e->builtin == BI_STORE || e->builtin == BI_ATOMIC_ADD)
        plan_mem(L, lower_ty(L, e->args[0]), e->builtin == BI_ATOMIC_ADD);
    if (e->builtin == BI_DOT && L->ndots < LP_MAX) {
        L->dots[L->ndots++] = e;
        const tilec_expr *a = e->args[0];
        if (tilec_is_builtin(a, BI_CAST))
            a = a->args[0];
        if (a->kind == TILEC_EX_NAME && L->naops < LP_MAX)
            L->aops[L->naops++] = a->name;
    } else if (lower_is_reduce(e) && lower_ty(L, e->args[0])->rank == 2 && reduce_axis_of(L, e) == 1 &&
               L->nrowred < LP_MAX) {
        const tilec_type *xt = lower_ty(L, e->args[0]);
        L->rowred[L->nrowred][0] = xt->dims[0];
        L->rowred[L->nrowred++][1] = xt->dims[1];
    }
    (void)t;
}

static void plan_block(lw *L, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts; i++) {
        const tilec_stmt *s = b->stmts[i];
        plan_expr(L, s->value);
        plan_expr(L, s->lo);
        plan_expr(L, s->hi);
        plan_expr(L, s->step);
        plan_block(L, &s->body);
        plan_block(L, &s->orelse);
    }
}

/* The dot producing [M, N], or NULL. */
static const tilec_expr *dot_of(lw *L, int64_t M, int64_t N)
{
    for (int i = 0; i < L->ndots; i++) {
        const tilec_type *t = lower_ty(L, L->dots[i]);
        if (t->rank == 2 && t->dims[0] == M && t->dims[1] == N)
            return L->dots[i];
    }
    return NULL;
}

void lower_plan(lw *L)
{
    plan_block(L, &L->k->body);
    for (int i = 0; i < L->nrowred; i++)
        if (dot_of(L, L->rowred[i][0], L->rowred[i][1]))
            L->rows_mma = 1;
}

static lay expand(const lw *L, const lay *x, const tilec_type *t);

lay lower_pick(lw *L, const tilec_type *t)
{
    /* a tile of rank 3 or more broadcast along its one size-1 axis: the
     * slice of the full tile's layout there, so that each thread holds
     * the elements its part of the full tile meets */
    for (int i = 0; i < L->nbcastn && t->rank >= 3; i++) {
        int ax = L->bcastn_ax[i];
        tilec_type full = L->bcastn[i];
        if (bcast_axis_n(&full, t) != ax)
            continue;
        full.dtype = t->dtype;
        lay x = lower_pick(L, &full), s;
        unsigned r, l, w;
        s = lower_lin_slice(L, &x, ax, &r, &l, &w);
        return expand(L, &s, t);
    }
    for (int i = 0; i < L->nrowred; i++) {
        const int64_t *rr = L->rowred[i];
        if (t->rank == 2 && t->dims[0] == rr[0] && t->dims[1] == rr[1]) {
            const tilec_expr *d = dot_of(L, rr[0], rr[1]);
            lay y;
            if (d && lower_dot_layout(L, lower_ty(L, d->args[0]), rr[0], rr[1], &y))
                return y;
            return lower_lin_rows(L, t);
        }
    }
    /* a row's statistics (the slice along axis 1), else a row of
     * weights (the slice along axis 0) */
    for (int ax = 1; ax >= 0 && t->rank == 1; ax--)
        for (int i = 0; i < L->nrowred; i++) {
            if (L->rowred[i][1 - ax] != t->dims[0])
                continue;
            tilec_type rt = *t;
            rt.rank = 2;
            rt.dims[0] = L->rowred[i][0];
            rt.dims[1] = L->rowred[i][1];
            lay x = lower_pick(L, &rt);
            unsigned r, l, w;
            if (x.kind != LY_CANON)
                return lower_lin_slice(L, &x, ax, &r, &l, &w);
        }
    /* a vector broadcast against an [M, N] tile: the slice of that tile's
     * layout along the other axis, so that each thread holds the elements
     * its own part of the tile meets (no shared memory at the broadcast);
     * a dot's result first (a bias), then a broadcast of a vector of t's
     * kind (a float's, not an index's: of a square tile, `h[:, None] * D +
     * d[None, :]` spans the other axis than `x * c[None, :]`), then any */
    int fl = tilec_dtype_class(t->dtype) == 'f';
    for (int pass = 0; pass < 3 && t->rank == 1; pass++)
        for (int i = 0; i < L->nbcast; i++) {
            int ax = (int)L->bcast[i][2];
            tilec_type rt = *t;
            rt.rank = 2;
            rt.dims[0] = L->bcast[i][0];
            rt.dims[1] = L->bcast[i][1];
            const tilec_expr *d = dot_of(L, rt.dims[0], rt.dims[1]);
            lay x;
            if (L->bcast[i][ax] != t->dims[0] || (!pass && !d) || (pass == 1 && L->bcast[i][3] != fl))
                continue;
            if (!d || !lower_dot_layout(L, lower_ty(L, d->args[0]), rt.dims[0], rt.dims[1], &x))
                x = lower_pick(L, &rt);
            unsigned r, l, w;
            return lower_lin_slice(L, &x, 1 - ax, &r, &l, &w);
        }
    return lower_canon(L, t);
}

/* A layout with another shape holding the same elements in the same
 * places: t[:, None] and the like (a size-1 dimension takes no bits). */
static lay expand(const lw *L, const lay *x, const tilec_type *t)
{
    lay y = *x;
    lower_lin_bits(L, x, &y.b);
    y.kind = LY_LIN;
    y.rank = t->rank;
    memcpy(y.dims, t->dims, sizeof y.dims);
    return y;
}

/* The layout e will have when materialized, as far as its operands say:
 * a register tile's own, a dot's accumulators, a load's plan, the slice a
 * reduction leaves, a view's, an elementwise operand's of e's shape. */
static int layout_of(lw *L, const tilec_expr *e, lay *y)
{
    const tilec_type *t = lower_ty(L, e);
    if (t->rank == 0)
        return 0;
    if (e->kind == TILEC_EX_NAME) {
        val *v = lower_lookup(L, e->name);
        if (v && v->kind == VK_MAT)
            *y = v->ly;
        return v && v->kind == VK_MAT;
    }
    if (e->kind == TILEC_EX_INDEX) {
        lay x;
        for (uint32_t i = 1; i < e->nargs; i++)
            if ((e->args[i]->kind != TILEC_EX_SLICE || e->args[i]->nargs) && e->args[i]->kind != TILEC_EX_NONE)
                return 0; /* a slice or a pick: the planner's default */
        if (!layout_of(L, e->args[0], &x))
            return 0;
        *y = expand(L, &x, t);
        return 1;
    }
    if (tilec_is_builtin(e, BI_DOT))
        return lower_dot_layout(L, lower_ty(L, e->args[0]), t->dims[0], t->dims[1], y);
    if (tilec_is_builtin(e, BI_LOAD)) {
        /* a load keeps whole rows in a warp, for wide accesses (whole
         * columns when memory is contiguous along axis 0); one that is a
         * dot's A operand takes the accumulator layout (lower_pick_let) */
        int64_t s0 = 0, s1 = 0;
        *y = lower_pick(L, t);
        if (y->kind == LY_MMA)
            *y = lower_lin_rows(L, t);
        if (t->rank == 2 && lower_stride(L, e->args[0], 0, &s0) && s0 == 1 && !(lower_stride(L, e->args[0], 1, &s1) && s1 == 1))
            *y = lower_lin_cols(L, t);
        return 1;
    }
    if (lower_is_reduce(e)) {
        lay x = lower_pick_for(L, e->args[0]);
        unsigned r, l, w;
        if (e->name[0] == 'a' || lower_lay_guard(L, &x))
            return 0;
        *y = lower_lin_slice(L, &x, reduce_axis_of(L, e), &r, &l, &w);
        return 1;
    }
    if (lower_is_materializing(e) || tilec_is_builtin(e, BI_TRANS) || tilec_is_builtin(e, BI_RESHAPE))
        return 0;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (lower_same_shape(lower_ty(L, e->args[i]), t) && layout_of(L, e->args[i], y))
            return 1;
    return 0;
}

int lower_pick_let(lw *L, const char *name, const tilec_expr *e, lay *y)
{
    const tilec_type *t = lower_ty(L, e);
    return L->rows_mma && t->rank == 2 && t->dtype != TILEC_DT_F32 && lower_in_list(L->aops, L->naops, name) &&
           lower_dot_layout(L, t, t->dims[0], t->dims[1], y) && y->wn == 1;
}

lay lower_pick_for(lw *L, const tilec_expr *e)
{
    lay y;
    if (layout_of(L, e, &y))
        return y;
    /* a computed tile of a dot's shape meets the dot's accumulators */
    const tilec_type *t = lower_ty(L, e);
    const tilec_expr *d = t->rank == 2 && !lower_is_materializing(e) ? dot_of(L, t->dims[0], t->dims[1]) : NULL;
    if (d && lower_dot_layout(L, lower_ty(L, d->args[0]), t->dims[0], t->dims[1], &y))
        return y;
    return lower_pick(L, t);
}

static int count_dots(const tilec_expr *e, const tilec_expr **out, int n)
{
    if (!e)
        return n;
    for (uint32_t i = 0; i < e->nargs; i++)
        n = count_dots(e->args[i], out, n);
    if (tilec_is_builtin(e, BI_DOT) && n < LP_MAX)
        out[n++] = e;
    return n;
}

/* A dot stages its operands in buffers of its own, between a barrier
 * before (the last iteration's reads of them are done) and one after.
 * When a loop body runs two or more dots on every iteration, the barrier
 * after one dot's staging already stands between the other's reads and
 * its next writes (in this iteration or around the back edge), so their
 * barriers before are left out. */
void lower_plan_loop(lw *L, const tilec_stmt *s, int min)
{
    const tilec_expr *d[LP_MAX];
    int n = 0;
    for (uint32_t i = 0; i < s->body.nstmts; i++) {
        const tilec_stmt *b = s->body.stmts[i];
        if (b->kind == TILEC_ST_LET || b->kind == TILEC_ST_ASSIGN || b->kind == TILEC_ST_EXPR)
            n = count_dots(b->value, d, n);
    }
    for (int i = 0; n >= min && i < n && L->nnobar < LP_MAX; i++)
        L->nobar[L->nnobar++] = d[i];
}

int lower_dot_barrier_free(const lw *L)
{
    for (int i = 0; i < L->nnobar; i++)
        if (L->nobar[i] == L->curdot)
            return 1;
    return 0;
}

void lower_note(lw *L, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    sb_vprintf(&L->notes, f, ap);
    va_end(ap);
    sb_putc(&L->notes, '\n');
}

void lower_note_value(lw *L, const val *v)
{
    if (v->kind != VK_MAT || v->ty.rank == 0)
        return;
    strbuf s;
    sb_init(&s);
    sb_puts(&s, "[");
    for (int i = 0; i < v->ty.rank; i++)
        sb_printf(&s, "%s%lld", i ? ", " : "", (long long)v->ty.dims[i]);
    sb_printf(&s, "] %s: ", tilec_dtype_name(v->ty.dtype));
    lower_lin_describe(L, &v->ly, &s);
    lower_note(L, "  line %u: %s %s", L->line, v->c, sb_str(&s));
    L->failed |= s.failed;
    sb_free(&s);
}
