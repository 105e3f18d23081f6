/* expr.c: expressions and elementwise math.
 *
 * lower_walk() runs in two modes over the same mapping of indices: PREP
 * emits what must exist before the element loop (materialized
 * subexpressions, spills), EMIT returns the C expression of one element.
 * `idx` are the C index expressions of the element in e's own shape; `same`
 * says they are exactly the current element of layout `cur`. Virtual tiles
 * (range, broadcasts, arithmetic on them) are re-computed here at each use;
 * materialized ones are read from registers or shared memory. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lower/lower_internal.h"

matnode *lower_find_mat(lw *L, const tilec_expr *e)
{
    for (int i = 0; i < L->nmats; i++)
        if (L->mats[i].e == e)
            return &L->mats[i];
    for (int i = 0; i < L->npre; i++) /* issued ahead with an earlier let's loads (stmt.c, issue_loads) */
        if (L->pre[i].e == e)
            return &L->pre[i];
    for (int i = 0; i < L->tw.nearly; i++) /* loaded before the twin's loop (wgmma.c, early_issue) */
        if (L->tw.early[i].e == e)
            return &L->tw.early[i];
    return NULL;
}

static void add_mat(lw *L, const tilec_expr *e, val *v)
{
    if (L->nmats == L->capmats) {
        int cap = L->capmats ? L->capmats * 2 : 16;
        matnode *m = realloc(L->mats, (size_t)cap * sizeof *m);
        if (!m) {
            L->failed = 1;
            return;
        }
        L->mats = m;
        L->capmats = cap;
    }
    L->mats[L->nmats++] = (matnode){e, v};
}

/* Map the index of a broadcast result (shape `to`, rank rt) onto an
 * operand of shape `from`. */
void lower_map_bcast(const tilec_type *from, int rt, const char *const *idx, const char **sub)
{
    for (int i = 0; i < from->rank; i++) {
        int k = i + rt - from->rank;
        sub[i] = from->dims[i] == 1 ? "0" : idx ? idx[k] : NULL;
    }
}

int lower_same_shape(const tilec_type *a, const tilec_type *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

int lower_is_materializing(const tilec_expr *e)
{
    if (e->kind != TILEC_EX_CALL)
        return 0;
    if (lower_is_scan(e))
        return 1;
    return e->builtin == BI_LOAD || e->builtin == BI_ATOMIC_ADD || e->builtin == BI_DOT ||
           tilec_is_builtin_kind(e, BK_REDUCE);
}

int lower_calls(const tilec_expr *e, tilec_builtin b)
{
    if (!e)
        return 0;
    if (tilec_is_builtin(e, b))
        return 1;
    for (uint32_t i = 0; i < e->nargs; i++)
        if (lower_calls(e->args[i], b))
            return 1;
    return 0;
}

/* Does e need materialized data (loads, reductions, register tiles)? */
int lower_is_virtual(lw *L, const tilec_expr *e)
{
    if (lower_is_materializing(e))
        return 0;
    if (e->kind == TILEC_EX_NAME) {
        val *v = lower_lookup(L, e->name);
        return !v || v->kind != VK_MAT;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!lower_is_virtual(L, e->args[i]))
            return 0;
    return 1;
}

/* The element of materialized v at idx (compute type). */
static const char *mat_elem(lw *L, val *v, const char *const *idx, int same, const lay *cur, wmode mode)
{
    if (v->ty.rank == 0)
        return mode == EMIT ? v->c : NULL;
    int direct = same && cur && lower_same_layout(L, &v->ly, cur);
    /* a broadcast or another view this thread holds in its registers */
    const char *reg = direct ? NULL : lower_lin_reg(L, v, idx, cur);
    if (mode == PREP) {
        if (!direct && !reg)
            lower_spill(L, v, cur);
        return NULL;
    }
    if (reg)
        return lower_ld_val(L, lower_fmt(L, "%s[%s]", v->c, reg), &v->ty);
    if (direct)
        return lower_ld_val(L, L->joff ? lower_fmt(L, "%s[tl_j + %d]", v->c, L->joff) : lower_fmt(L, "%s[tl_j]", v->c), &v->ty);
    const char *ct = v->ty.ptr ? lower_fmt(L, "%s const", lower_vctype(L, &v->ty)) : lower_fmt(L, "const %s", lower_ctype(v->ty.dtype));
    return lower_ld_val(L, lower_fmt(L, "((%s *)(tl_smem + %d))[%s]", ct, v->smem, lower_linear(L, v->ty.rank, v->ty.dims, idx)),
                        &v->ty);
}

static const char *math1(lw *L, tilec_builtin bi, const char *x, tilec_dtype d, int neg)
{
    int dbl = lower_compute_dt(d) == TILEC_DT_F64;
    if (bi == BI_EXP && neg && !dbl) /* x <= 0 (sign.c): ex2.approx, an absolute error under 2^-22 */
        return lower_fmt(L, "tl_exp2((%s) * 1.4426950408889634f)", x);
    if (bi == BI_SIGMOID)
        return lower_fmt(L, dbl ? "tl_sigmoid((double)(%s))" : "tl_sigmoid((float)(%s))", x);
    if (bi == BI_ABS) {
        char c = tilec_dtype_class(d);
        if (c == 'f')
            return lower_fmt(L, "%s(%s)", dbl ? "fabs" : "fabsf", x);
        if (c == 'u')
            return x;
        return lower_fmt(L, "((%s) < 0 ? -(%s) : (%s))", x, x, x);
    }
    if (bi == BI_EXP2 && !dbl)
        return lower_fmt(L, "tl_exp2(%s)", x);
    return lower_fmt(L, "%s%s(%s)", tilec_builtin_get(bi)->name, dbl ? "" : "f", x);
}

const char *lower_walk_arg(lw *L, const tilec_expr *e, int i, const tilec_type *rt, const char *const *idx, int same,
                           const lay *cur)
{
    const char *sub[TILEC_MAX_RANK];
    const tilec_type *at = lower_ty(L, e->args[i]);
    lower_map_bcast(at, rt->rank, idx, sub);
    int s = same && lower_same_shape(at, rt);
    const char *x = lower_walk(L, e->args[i], sub, s, cur, EMIT);
    return lower_conv(L, x, at->dtype, rt->dtype);
}

/* The PREP pass over the operands of e, each at its broadcast index
 * (`whole`: over each operand entire, as trans reads it). */
static void prep_args(lw *L, const tilec_expr *e, const char *const *idx, int same, const lay *cur, int whole)
{
    const tilec_type *t = lower_ty(L, e);
    for (uint32_t i = 0; i < e->nargs; i++) {
        if (e->args[i]->kind == TILEC_EX_DTYPE)
            continue;
        if (whole) {
            lower_walk(L, e->args[i], NULL, 0, cur, PREP);
            continue;
        }
        const char *sub[TILEC_MAX_RANK];
        const tilec_type *at = lower_ty(L, e->args[i]);
        lower_map_bcast(at, t->rank, idx, sub);
        lower_walk(L, e->args[i], sub, same && lower_same_shape(at, t), cur, PREP);
    }
}

/* load, a reduction, a dot...: materialized in PREP, read in EMIT. */
static const char *walk_materializing(lw *L, const tilec_expr *e, const char *const *idx, int same, const lay *cur,
                                      wmode mode)
{
    if (mode == EMIT) {
        lower_fail(L, &e->loc, "internal error: '%s' was not materialized", e->name);
        return "0";
    }
    val *v = lower_materialize(L, e, NULL, NULL);
    add_mat(L, e, v);
    return mat_elem(L, v, idx, same, cur, mode);
}

static const char *literal(lw *L, const tilec_expr *e)
{
    switch (e->kind) {
    case TILEC_EX_INT: return lower_fmt(L, "%lld%s", (long long)e->ival, e->ival > INT32_MAX ? "LL" : "");
    case TILEC_EX_FLOAT: return lower_float_lit(L, e->fval, lower_ty(L, e)->dtype);
    case TILEC_EX_INF: return lower_inf_lit(L, lower_ty(L, e)->dtype);
    default: return e->ival ? "true" : "false";
    }
}

static const char *walk_name(lw *L, const tilec_expr *e, const char *const *idx, int same, const lay *cur, wmode mode)
{
    val *v = lower_lookup(L, e->name);
    if (!v) {
        int64_t h;
        if (lower_hint_value(L, e->name, &h))
            return mode == EMIT ? lower_cname(L, e->name) : NULL;
        lower_fail(L, &e->loc, "internal error: unbound name '%s'", e->name);
        return "0";
    }
    if (v->kind == VK_SCALAR)
        return mode == EMIT ? v->c : NULL;
    if (v->kind == VK_VIRT) { /* let t = full(bf16, s, 16) * 3.0: t holds bf16 values */
        const char *x = lower_walk(L, v->expr, idx, same, cur, mode);
        return mode == EMIT && !v->ty.ptr ? lower_round(L, x, v->ty.dtype) : x;
    }
    return mat_elem(L, v, idx, same, cur, mode);
}

/* EMIT of a binary operator. */
/* May e be evaluated where a && or || before it would have skipped it:
 * no load, no call but the pure index ones, no division but by a positive
 * constant or one a step counter serves (stepdiv.c), through the names
 * of index tiles it reads. */
static int eager_safe(lw *L, const tilec_expr *e, int depth)
{
    static const char *const pure[] = {"range", "pid", "cast", "maximum", "minimum"};
    int64_t d;
    if (!e || depth > 64)
        return 0;
    switch (e->kind) {
    case TILEC_EX_INT:
    case TILEC_EX_FLOAT:
    case TILEC_EX_BOOL:
    case TILEC_EX_DTYPE:
    case TILEC_EX_NONE:
        return 1;
    case TILEC_EX_NAME: {
        const tilec_expr *x = lower_look(L, e);
        return x == e || eager_safe(L, x, depth + 1);
    }
    case TILEC_EX_SLICE:
        return e->nargs == 0;
    case TILEC_EX_BINARY:
        if ((e->op == TILEC_OP_DIV || e->op == TILEC_OP_MOD) && !(L->stepdiv && lower_stepdiv_ref(L, e)) &&
            !(lower_const_int(L, e->args[1], &d) == 0 && d > 0))
            return 0;
        break;
    case TILEC_EX_UNARY:
    case TILEC_EX_INDEX:
        break;
    case TILEC_EX_CALL: {
        int ok = 0;
        for (size_t i = 0; i < sizeof pure / sizeof pure[0]; i++)
            ok |= !strcmp(e->name, pure[i]);
        if (!ok)
            return 0;
        break;
    }
    default:
        return 0;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!eager_safe(L, e->args[i], depth + 1))
            return 0;
    return 1;
}

static const char *binary(lw *L, const tilec_expr *e, const char *const *idx, int same, const lay *cur)
{
    const tilec_type *t = lower_ty(L, e);
    /* operands meet at the promoted dtype; comparisons at the operands' */
    tilec_type opt = *t;
    const tilec_type *a0 = lower_ty(L, e->args[0]), *a1 = lower_ty(L, e->args[1]);
    if (t->dtype == TILEC_DT_BOOL && !(a0->dtype == TILEC_DT_BOOL && a1->dtype == TILEC_DT_BOOL))
        opt.dtype = a0->ptr ? a0->dtype : tilec_promote(a0->dtype, a0->weak, a1->dtype, a1->weak); /* i < 0.5 in f32 */
    if (opt.dtype == TILEC_DT_I32 && (a0->dtype == TILEC_DT_I64 || a1->dtype == TILEC_DT_I64))
        opt.dtype = TILEC_DT_I64; /* an index computed in 64 bits (index64.c) */
    if (t->ptr) {
        const char *sub[TILEC_MAX_RANK];
        const char *x[2];
        for (int i = 0; i < 2; i++) {
            lower_map_bcast(lower_ty(L, e->args[i]), t->rank, idx, sub);
            x[i] = lower_walk(L, e->args[i], sub, same && lower_same_shape(lower_ty(L, e->args[i]), t), cur, EMIT);
        }
        return lower_fmt(L, "(%s %s %s)", x[0], tilec_op_spelling(e->op), x[1]);
    }
    if (lower_grid_true(L, e)) /* a bound check the grid proves (access.c) */
        return "true";
    tilec_type ta = *t;
    ta.dtype = opt.dtype;
    const char *rb = lower_run_bound(L, e, &ta, idx, same, cur); /* element q of a run (mask.c) */
    if (rb)
        return rb;
    const char *x = lower_walk_arg(L, e, 0, &ta, idx, same, cur);
    const char *y = lower_walk_arg(L, e, 1, &ta, idx, same, cur);
    if (e->op == TILEC_OP_ANDAND && (!strcmp(x, "true") || !strcmp(y, "true")))
        return !strcmp(x, "true") ? y : x; /* true && m is m */
    if (e->op == TILEC_OP_MOD && tilec_dtype_class(opt.dtype) == 'f')
        return lower_fmt(L, "%s(%s, %s)", lower_compute_dt(opt.dtype) == TILEC_DT_F64 ? "fmod" : "fmodf", x, y);
    const char *op = tilec_op_spelling(e->op);
    if (L->eager_bool && (e->op == TILEC_OP_ANDAND || e->op == TILEC_OP_OROR) && a0->dtype == TILEC_DT_BOOL &&
        a1->dtype == TILEC_DT_BOOL && eager_safe(L, e->args[1], 0))
        op = e->op == TILEC_OP_ANDAND ? "&" : "|"; /* both sides evaluated: predicates, no branch */
    return lower_wrap(L, lower_fmt(L, "(%s %s %s)", x, op, y), t->dtype);
}

/* Index i of an element pick on an axis of n elements, clamped to it (a
 * literal is in range: the checker saw it). */
static const char *pick_index(lw *L, const tilec_expr *i, int64_t n, wmode mode)
{
    const char *x = lower_walk(L, i, NULL, 0, NULL, mode);
    if (mode == PREP || i->kind == TILEC_EX_INT)
        return x;
    int uns = tilec_dtype_class(lower_ty(L, i)->dtype) == 'u';
    if (uns)
        return lower_fmt(L, "((%s) > %lldu ? %lld : (int)(%s))", x, (long long)(n - 1), (long long)(n - 1), x);
    return lower_fmt(L, "((%s) < 0 ? 0 : (%s) > %lld ? %lld : (int)(%s))", x, x, (long long)(n - 1), (long long)(n - 1), x);
}

/* The start and step of a slice slot (':' is 0:n:1); the checker saw
 * them evaluate under every variant's hints. */
void lower_slice_parts(lw *L, const tilec_expr *s, int64_t *lo, int64_t *step)
{
    *lo = 0;
    *step = 1;
    if (!s->nargs)
        return;
    if (((s->ival & 1) && lower_const_int(L, s->args[0], lo)) || ((s->ival & 4) && lower_const_int(L, s->args[2], step)))
        lower_fail(L, &s->loc, "internal error: a slice bound is not a constant");
}

/* The base index of each axis of t[…] for the element idx of the result:
 * ':' passes the result's index, lo:hi:step maps it to lo + step * it, an
 * integer is the clamped pick. NULL entries where idx is NULL. Returns 1
 * when every slot is ':' or None (a view of the same elements). */
static int index_sub(lw *L, const tilec_expr *e, const char *const *idx, const char **sub, wmode mode)
{
    const tilec_type *bt = lower_ty(L, e->args[0]);
    int k = 0, b = 0, view = 1;
    for (uint32_t i = 1; i < e->nargs; i++) {
        const tilec_expr *s = e->args[i];
        if (s->kind == TILEC_EX_NONE) {
            k++;
            continue;
        }
        if (s->kind != TILEC_EX_SLICE) {
            sub[b] = pick_index(L, s, bt->dims[b], mode);
            b++;
            view = 0;
            continue;
        }
        const char *x = idx ? idx[k] : NULL;
        int64_t lo, st;
        lower_slice_parts(L, s, &lo, &st);
        view &= !s->nargs;
        if (x && st != 1)
            x = lower_fmt(L, "(%lld * %s)", (long long)st, x);
        if (x && lo)
            x = lower_fmt(L, "(%s + %lld)", x, (long long)lo);
        sub[b++] = x;
        k++;
    }
    return view;
}

/* A field of tensor list l's table (tl_list, lower.c): its count n, or
 * ptr[i] and numel[i]. */
static const char *list_field(lw *L, const tilec_expr *l, const char *field, const tilec_expr *i, wmode mode)
{
    const char *x = i ? lower_walk(L, i, NULL, 0, NULL, mode) : NULL;
    if (mode == PREP)
        return NULL;
    const char *c = walk_name(L, l, NULL, 0, NULL, EMIT);
    return i ? lower_fmt(L, "%s.%s[%s]", c, field, x) : lower_fmt(L, "((int)%s.n)", c);
}

/* t[:, None]: result axes map to base axes at ':' slots; t[i, j] (an
 * element pick), t[8:24], t[i, 0:64:2]: the base at the shifted or
 * clamped indices, read where it is (a virtual tile recomputed there,
 * registers through shared memory unless this thread holds the element). */
static const char *walk_index(lw *L, const tilec_expr *e, const char *const *idx, const lay *cur, wmode mode)
{
    if (lower_ty(L, e->args[0])->list) /* p[i] of a tensor list: the address in its table */
        return list_field(L, e->args[0], "ptr", e->args[1], mode);
    const char *sub[TILEC_MAX_RANK];
    const tilec_type *bt = lower_ty(L, e->args[0]), *t = lower_ty(L, e);
    if (index_sub(L, e, idx, sub, mode))
        return lower_walk(L, e->args[0], sub, 0, cur, mode);
    if (mode == PREP && !lower_is_virtual(L, e->args[0]))
        lower_note(L, t->rank ? "  line %u: a slice of a register tile (read from shared memory where this thread does not hold it)"
                              : "  line %u: an element picked from a register tile (read from shared memory where this thread does not hold it)",
            L->line);
    for (int i = 0; i < bt->rank; i++)
        if (!sub[i]) /* PREP: no index known, the base is read from anywhere */
            return lower_walk(L, e->args[0], NULL, 0, NULL, mode);
    return lower_walk(L, e->args[0], sub, 0, t->rank ? cur : NULL, mode);
}

/* reshape(t, d...): result element idx is t's element at the same
 * row-major position, the flat index re-split into t's dims (all powers
 * of two: the unsigned / and % are shifts and masks); a virtual t is computed there, a register
 * tile is read from shared memory. */
static const char *walk_reshape(lw *L, const tilec_expr *e, const char *const *idx, const lay *cur, wmode mode)
{
    const tilec_type *t = lower_ty(L, e), *bt = lower_ty(L, e->args[0]);
    if (lower_same_shape(bt, t)) /* the same shape: the same elements in the same places */
        return lower_walk(L, e->args[0], idx, 0, cur, mode);
    if (mode == PREP) {
        if (!lower_is_virtual(L, e->args[0]))
            lower_note(L, "  line %u: a reshape of a register tile (read from shared memory)", L->line);
        return lower_walk(L, e->args[0], NULL, 0, NULL, PREP);
    }
    const char *flat = NULL, *sub[TILEC_MAX_RANK];
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i] == 1)
            continue;
        int64_t st = 1;
        for (int j = i + 1; j < t->rank; j++)
            st *= t->dims[j];
        const char *x = st == 1 ? lower_fmt(L, "(unsigned)(%s)", idx[i])
                                : lower_fmt(L, "(unsigned)(%s) * %lldu", idx[i], (long long)st);
        flat = flat ? lower_fmt(L, "%s + %s", flat, x) : x;
    }
    if (!flat)
        flat = "0u";
    for (int i = 0; i < bt->rank; i++) {
        int64_t st = 1;
        for (int j = i + 1; j < bt->rank; j++)
            st *= bt->dims[j];
        if (bt->dims[i] == 1)
            sub[i] = "0";
        else if (i == 0)
            sub[i] = st == 1 ? lower_fmt(L, "(int)(unsigned)(%s)", flat)
                             : lower_fmt(L, "(int)(unsigned)((%s) / %lldu)", flat, (long long)st);
        else
            sub[i] = st == 1 ? lower_fmt(L, "(int)(unsigned)((%s) %% %lldu)", flat, (long long)bt->dims[i])
                             : lower_fmt(L, "(int)(unsigned)((%s) / %lldu %% %lldu)", flat, (long long)st,
                                         (long long)bt->dims[i]);
    }
    return lower_walk(L, e->args[0], sub, 0, NULL, EMIT);
}

/* EMIT of the elementwise builtins that combine operands. */
static const char *builtin(lw *L, const tilec_expr *e, const char *const *idx, int same, const lay *cur)
{
    const tilec_type *t = lower_ty(L, e);
    if (e->builtin == BI_TRANS) {
        const char *sub[2] = {idx[1], idx[0]};
        return lower_walk(L, e->args[0], sub, 0, cur, EMIT);
    }
    if (e->builtin == BI_CAST) {
        const tilec_type *at = lower_ty(L, e->args[0]);
        tilec_type tt = *at;
        const char *x = lower_walk_arg(L, e, 0, &tt, idx, same, cur);
        if (t->dtype == TILEC_DT_BOOL)
            return lower_fmt(L, "((%s) != 0)", x);
        return lower_cast(L, x, at->dtype, t->dtype);
    }
    if (e->builtin == BI_WHERE) {
        tilec_type bt = *t;
        bt.dtype = TILEC_DT_BOOL;
        const char *c = lower_walk_arg(L, e, 0, &bt, idx, same, cur);
        const char *a = lower_walk_arg(L, e, 1, t, idx, same, cur);
        const char *b = lower_walk_arg(L, e, 2, t, idx, same, cur);
        return lower_fmt(L, "(%s ? %s : %s)", c, a, b);
    }
    if (e->builtin == BI_MAXIMUM || e->builtin == BI_MINIMUM) {
        const char *a = lower_walk_arg(L, e, 0, t, idx, same, cur);
        const char *b = lower_walk_arg(L, e, 1, t, idx, same, cur);
        /* NaN propagates like torch.maximum */
        const char *op = e->builtin == BI_MAXIMUM ? ">" : "<";
        if (tilec_dtype_class(t->dtype) == 'f')
            return lower_fmt(L, "tl_%s(%s, %s)", e->builtin == BI_MAXIMUM ? "max" : "min", a, b);
        return lower_fmt(L, "((%s) %s (%s) ? (%s) : (%s))", a, op, b, a, b);
    }
    if (e->builtin == BI_CDIV) {
        const char *a = lower_walk_arg(L, e, 0, t, idx, same, cur);
        const char *b = lower_walk_arg(L, e, 1, t, idx, same, cur);
        /* the ceiling for any a and b > 0, as the host computes it (tilec/iexpr.h):
         * a + b - 1 would overflow, and would round a negative a toward 0 */
        return lower_fmt(L, "((%s) / (%s) + ((%s) %% (%s) > 0))", a, b, a, b);
    }
    if (e->builtin == BI_FMA) {
        const char *a = lower_walk_arg(L, e, 0, t, idx, same, cur);
        const char *b = lower_walk_arg(L, e, 1, t, idx, same, cur);
        const char *c = lower_walk_arg(L, e, 2, t, idx, same, cur);
        return lower_fmt(L, "%s(%s, %s, %s)", lower_compute_dt(t->dtype) == TILEC_DT_F64 ? "fma" : "fmaf", a, b, c);
    }
    /* exp, log, ..., abs */
    const char *a = lower_walk_arg(L, e, 0, t, idx, same, cur);
    return lower_wrap(L, math1(L, (tilec_builtin)e->builtin, a, t->dtype, lower_exp_fast(L, e)), t->dtype); /* abs(-128) of i8 */
}

/* A call of an elementwise builtin. */
static const char *walk_call(lw *L, const tilec_expr *e, const char *const *idx, int same, const lay *cur, wmode mode)
{
    const tilec_type *t = lower_ty(L, e);
    if (e->builtin == BI_PID || e->builtin == BI_NUM_PROGRAMS) {
        if (mode == PREP)
            return NULL;
        static const char *const ax[] = {"x", "y", "z"};
        int a = lower_axis(L, e, 0, 3);
        const char *g = L->tg->grid_value ? L->tg->grid_value(L, e, a) : NULL;
        if (g) /* the target's own grid (the sm_90a twin's grouped order, a persistent twin's tiles) */
            return g;
        if (a == 0 && e->builtin == BI_PID && L->order.rev) /* the heaviest blocks first (order.c) */
            return "((int)gridDim.x - 1 - (int)blockIdx.x)";
        if (L->split && a == 2) /* split_k: grid axis 2 holds the K slices too (splitk.c) */
            return lower_fmt(L, "((int)%s.z / %d)", e->builtin == BI_PID ? "blockIdx" : "gridDim", L->split);
        return lower_fmt(L, "((int)%s.%s)", e->builtin == BI_PID ? "blockIdx" : "gridDim", ax[a]);
    }
    if (e->builtin == BI_RANGE)
        return mode == EMIT ? idx[0] : NULL;
    if (e->builtin == BI_LEN || e->builtin == BI_NUMEL)
        return list_field(L, e->args[0], "numel", e->nargs > 1 ? e->args[1] : NULL, mode);
    if (e->builtin == BI_ZEROS)
        return mode == EMIT ? lower_fmt(L, "((%s)0)", lower_cctype(t->dtype)) : NULL;
    if (e->builtin == BI_FULL) {
        const char *v = lower_walk(L, e->args[1], NULL, 0, cur, mode);
        if (mode == PREP)
            return NULL;
        tilec_dtype vd = lower_ty(L, e->args[1])->dtype; /* full(bf16, s, n) holds s rounded to bf16 */
        return t->dtype == TILEC_DT_BOOL || vd == TILEC_DT_BOOL ? lower_conv(L, v, vd, t->dtype) : lower_cast(L, v, vd, t->dtype);
    }
    if (e->builtin == BI_RESHAPE)
        return walk_reshape(L, e, idx, cur, mode);
    if (mode == PREP) {
        prep_args(L, e, idx, same, cur, e->builtin == BI_TRANS);
        return NULL;
    }
    return builtin(L, e, idx, same, cur);
}

const char *lower_walk(lw *L, const tilec_expr *e, const char *const *idx, int same, const lay *cur, wmode mode)
{
    if (L->failed)
        return "0";
    const char *kept = L->hoist && mode == EMIT ? lower_hoist_ref(L, e, idx) : NULL;
    if (kept) /* computed before the loop (hoist.c) */
        return kept;
    if (L->stepdiv && mode == EMIT && (kept = lower_stepdiv_ref(L, e)) != NULL) /* a step counter (stepdiv.c) */
        return kept;
    if (e == L->tw.sload) /* read by TMA into the store's staging: the staging loop's element (wgstore.c) */
        return mode == EMIT ? lower_ld_elem(L, lower_fmt(L, "tl_r%d", L->tw.sq), lower_ty(L, e)->dtype) : NULL;
    matnode *mn = lower_find_mat(L, e);
    if (mn)
        return mat_elem(L, mn->v, idx, same, cur, mode);
    if (lower_is_materializing(e))
        return walk_materializing(L, e, idx, same, cur, mode);
    switch (e->kind) {
    case TILEC_EX_INT:
    case TILEC_EX_FLOAT:
    case TILEC_EX_INF:
    case TILEC_EX_BOOL:
        return mode == EMIT ? literal(L, e) : NULL;
    case TILEC_EX_NAME:
        return walk_name(L, e, idx, same, cur, mode);
    case TILEC_EX_UNARY: {
        const char *a = lower_walk(L, e->args[0], idx, same, cur, mode);
        return mode == PREP ? NULL : lower_wrap(L, lower_fmt(L, "(%s%s)", tilec_op_spelling(e->op), a), lower_ty(L, e)->dtype);
    }
    case TILEC_EX_BINARY:
        if (mode == EMIT)
            return binary(L, e, idx, same, cur);
        prep_args(L, e, idx, same, cur, 0);
        return NULL;
    case TILEC_EX_INDEX:
        return walk_index(L, e, idx, cur, mode);
    case TILEC_EX_CALL:
        return walk_call(L, e, idx, same, cur, mode);
    default:
        lower_fail(L, &e->loc, "internal error: unexpected expression");
        return "0";
    }
}
