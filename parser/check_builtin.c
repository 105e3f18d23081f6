/* check_builtin.c: the built-in functions of kernels (pid, range, zeros,
 * load, store, dot, reductions, math, casts, ...): their arity and the
 * types and shapes of their arguments and results. */
#include <string.h>

#include "parser/builtins.h"
#include "parser/check_internal.h"

static int64_t numel(const tilec_type *t)
{
    int64_t c = 1;
    for (int i = 0; i < t->rank; i++)
        c *= t->dims[i];
    return c;
}

/* reshape(t, d0, d1, ...): t's elements in row-major order (torch.reshape
 * of a contiguous tensor) as a tile of constant power-of-two sizes d0,
 * d1, ... holding as many elements. */
static tilec_type check_reshape(checker *ck, tilec_expr *e)
{
    tilec_type s = chk_expr(ck, e->args[0]);
    if (s.kind == TILEC_TY_ERROR)
        return s;
    if (s.kind != TILEC_TY_VALUE || s.rank == 0) {
        chk_err(ck, chk_start_of(e->args[0]), "reshape needs a tile, got %s", chk_ty_str(ck, &s));
        return chk_ty_err();
    }
    tilec_type r = s;
    memset(r.dims, 0, sizeof r.dims);
    r.rank = (uint8_t)(e->nargs - 1);
    for (uint32_t i = 1; i < e->nargs; i++)
        if (chk_tile_dim(ck, e->args[i], &r.dims[i - 1]))
            return chk_ty_err();
    if (numel(&r) != numel(&s)) {
        chk_err(ck, &e->loc, "reshape cannot turn shape %s (%lld elements) into shape %s (%lld elements)",
            chk_shp_str(ck, &s), (long long)numel(&s), chk_shp_str(ck, &r), (long long)numel(&r));
        for (uint32_t i = 1; i < e->nargs; i++)
            chk_note_hint(ck, e->args[i], r.dims[i - 1]);
        return chk_ty_err();
    }
    return r;
}

/* min(a, b) or max(a, b) in a grid: the smaller or larger of two integer
 * scalars, computed on the host (tilec/iexpr.h); t holds their types. */
static tilec_type host_min_max(checker *ck, tilec_expr *e, const tilec_type *t, const char *fn)
{
    if (!chk_is_int(&t[0]) || !chk_is_int(&t[1]) || t[0].rank || t[1].rank) {
        chk_err(ck, &e->loc, "%s in a grid needs two scalar integers, got %s and %s", fn, chk_ty_str(ck, &t[0]),
            chk_ty_str(ck, &t[1]));
        return chk_ty_err();
    }
    tilec_type r = chk_promote(&t[0], &t[1]);
    chk_adapt(ck, e->args[0], r.dtype);
    chk_adapt(ck, e->args[1], r.dtype);
    return r;
}

/* Shape and dtype checks of the builtins; args already counted. */
static tilec_type check_builtin(checker *ck, tilec_expr *e, tilec_builtin bi)
{
    const char *fn = tilec_builtin_get(bi)->name;
    tilec_expr **a = e->args;
    uint32_t n = e->nargs;
    tilec_type t[3] = {chk_ty_err(), chk_ty_err(), chk_ty_err()};

    switch (bi) {
    case BI_CUMSUM:
    case BI_CUMPROD:
    case BI_CUMMAX:
    case BI_CUMMIN:
    case BI_SCAN: return chk_scan(ck, e); /* check_scan.c */
    case BI_LEN: return chk_list_len(ck, e); /* check_list.c */
    case BI_NUMEL: return chk_list_numel(ck, e);
    case BI_PID:
    case BI_NUM_PROGRAMS: {
        int64_t axis;
        if (chk_const_eval(ck, a[0], "a grid axis", &axis) || !ck->k->ngrid)
            return chk_ty_err();
        if (axis < 0 || axis > 2 || (uint64_t)axis >= ck->k->ngrid) {
            chk_err(ck, chk_start_of(a[0]), "%s(%lld): the grid of '%s' has %u dimension%s", fn, (long long)axis, ck->k->name,
                ck->k->ngrid, ck->k->ngrid == 1 ? "" : "s");
            chk_note_hint(ck, a[0], axis);
            return chk_ty_err();
        }
        return chk_ty_scalar(TILEC_DT_I32);
    }
    case BI_RANGE: {
        int64_t d;
        if (chk_tile_dim(ck, a[0], &d))
            return chk_ty_err();
        tilec_type r = chk_ty_scalar(TILEC_DT_I32);
        r.rank = 1;
        r.dims[0] = d;
        return r;
    }
    case BI_ZEROS:
    case BI_FULL: {
        if (a[0]->kind != TILEC_EX_DTYPE) {
            chk_err(ck, chk_start_of(a[0]), "the first argument of %s is an element type such as f32", fn);
            return chk_ty_err();
        }
        tilec_type r = chk_ty_scalar(a[0]->dtype);
        uint32_t d0 = 1;
        if (bi == BI_FULL) {
            tilec_type v = chk_expr(ck, a[1]);
            if (v.kind == TILEC_TY_ERROR)
                return v;
            if (v.kind != TILEC_TY_VALUE || v.rank || v.ptr || (!chk_is_num(&v) && !chk_is_bool(&v))) {
                chk_err(ck, chk_start_of(a[1]), "the value of full is a number, got %s", chk_ty_str(ck, &v));
                return chk_ty_err();
            }
            if (chk_literal_fits(ck, a[1], a[0]->dtype, "the value of full"))
                return chk_ty_err();
            chk_adapt(ck, a[1], r.dtype); /* full(f64, 0.1, ...) is the double 0.1 */
            d0 = 2;
        }
        for (uint32_t i = d0; i < n; i++)
            if (chk_tile_dim(ck, a[i], &r.dims[i - d0]))
                return chk_ty_err();
        r.rank = (uint8_t)(n - d0);
        if (!chk_tile_numel_ok(ck, &e->loc, &r))
            return chk_ty_err();
        return r;
    }
    case BI_RESHAPE: return check_reshape(ck, e);
    default:
        break;
    }

    for (uint32_t i = 0; i < n && i < 3; i++) {
        if (bi == BI_CAST && i == 1)
            break;
        t[i] = chk_expr(ck, a[i]);
        if (t[i].kind == TILEC_TY_ERROR)
            return chk_ty_err();
        if (t[i].kind != TILEC_TY_VALUE) {
            chk_err(ck, chk_start_of(a[i]), "argument %u of %s must be a value, got %s", i + 1, fn, chk_ty_str(ck, &t[i]));
            return chk_ty_err();
        }
    }

    switch (bi) {
    case BI_LOAD:
    case BI_STORE:
    case BI_ATOMIC_ADD: {
        if (!t[0].ptr) {
            chk_err(ck, chk_start_of(a[0]), "the first argument of %s must be a pointer, got %s", fn, chk_ty_str(ck, &t[0]));
            return chk_ty_err();
        }
        tilec_type shape = t[0];
        int mask_arg = bi == BI_LOAD ? 1 : 2;
        for (uint32_t i = 1; i < n; i++) {
            const tilec_type *x = &t[i];
            if ((int)i == mask_arg && !chk_is_bool(x)) {
                chk_err(ck, chk_start_of(a[i]), "the mask of %s must be bool, got %s", fn, chk_ty_str(ck, x));
                return chk_ty_err();
            }
            if ((int)i != mask_arg && !chk_is_num(x) && !chk_is_bool(x)) {
                chk_err(ck, chk_start_of(a[i]), "the %s of %s must be a number, got %s", bi == BI_LOAD ? "other value" : "value",
                    fn, chk_ty_str(ck, x));
                return chk_ty_err();
            }
            if ((int)i != mask_arg &&
                chk_literal_fits(ck, a[i], t[0].dtype, ar_printf(&ck->scratch, "the %s of %s",
                                                                bi == BI_LOAD ? "other value" : "value", fn)))
                return chk_ty_err();
            tilec_type s = shape;
            if (chk_bcast(&shape, x, &s)) {
                chk_err(ck, chk_start_of(a[i]), "the %s of %s has shape %s, which does not broadcast with the pointer shape %s",
                    (int)i == mask_arg ? "mask" : bi == BI_LOAD ? "other value" : "value", fn, chk_shp_str(ck, x),
                    chk_shp_str(ck, &shape));
                return chk_ty_err();
            }
            if (bi != BI_LOAD && s.rank != shape.rank) {
                chk_err(ck, chk_start_of(a[i]), "%s of a %s value through a pointer of shape %s", fn, chk_shp_str(ck, x),
                    chk_shp_str(ck, &t[0]));
                return chk_ty_err();
            }
            shape = s;
            if ((int)i != mask_arg)
                chk_adapt(ck, a[i], t[0].dtype); /* the value or other meets the pointee */
        }
        if (bi != BI_LOAD && memcmp(shape.dims, t[0].dims, shape.rank * sizeof shape.dims[0]) != 0) {
            chk_err(ck, &e->loc, "%s through a pointer of shape %s would write a %s tile", fn, chk_shp_str(ck, &t[0]),
                chk_shp_str(ck, &shape));
            return chk_ty_err();
        }
        if (bi == BI_STORE)
            return chk_ty_void();
        if (bi == BI_ATOMIC_ADD) {
            tilec_dtype d = t[0].dtype;
            if (d != TILEC_DT_I32 && d != TILEC_DT_U32 && d != TILEC_DT_U64 && d != TILEC_DT_F32 &&
                d != TILEC_DT_F64 && d != TILEC_DT_F16 && d != TILEC_DT_BF16) {
                chk_err(ck, chk_start_of(a[0]), "atomic_add does not support %s (supported: i32 u32 u64 f16 bf16 f32 f64)",
                    tilec_dtype_name(d));
                return chk_ty_err();
            }
        }
        shape.ptr = false;
        shape.weak = false;
        shape.dtype = t[0].dtype;
        return shape;
    }
    case BI_DOT: {
        if (t[0].rank != 2 || t[1].rank != 2 || t[0].ptr || t[1].ptr) {
            chk_err(ck, &e->loc, "dot needs two 2-D tiles, got %s and %s", chk_ty_str(ck, &t[0]), chk_ty_str(ck, &t[1]));
            return chk_ty_err();
        }
        if (t[0].dims[1] != t[1].dims[0]) {
            chk_err(ck, &e->loc, "dot: the first operand has %lld columns but the second has %lld rows (%s @ %s)",
                (long long)t[0].dims[1], (long long)t[1].dims[0], chk_shp_str(ck, &t[0]), chk_shp_str(ck, &t[1]));
            return chk_ty_err();
        }
        tilec_dtype d = t[0].dtype;
        if (d != t[1].dtype || (d != TILEC_DT_F16 && d != TILEC_DT_BF16 && d != TILEC_DT_F32)) {
            chk_err(ck, &e->loc, "dot operands must both be f16, both bf16 or both f32, got %s and %s",
                tilec_dtype_name(d), tilec_dtype_name(t[1].dtype));
            return chk_ty_err();
        }
        if (d != TILEC_DT_F32 && (t[0].dims[0] < 16 || t[0].dims[1] < 16 || t[1].dims[1] < 16)) {
            chk_err(ck, &e->loc, "dot of %s tiles needs every dimension >= 16 (tensor cores), got %s @ %s",
                tilec_dtype_name(d), chk_shp_str(ck, &t[0]), chk_shp_str(ck, &t[1]));
            return chk_ty_err();
        }
        chk_tune_note_dot(ck, &t[0], &t[1]);
        tilec_type r = chk_ty_scalar(TILEC_DT_F32);
        r.rank = 2;
        r.dims[0] = t[0].dims[0];
        r.dims[1] = t[1].dims[1];
        if (!chk_tile_numel_ok(ck, &e->loc, &r))
            return chk_ty_err();
        return r;
    }
    case BI_SUM: case BI_PROD: case BI_MAX: case BI_MIN: case BI_ARGMAX: case BI_ARGMIN: {
        int64_t axis;
        if ((bi == BI_MIN || bi == BI_MAX) && ck->host)
            return host_min_max(ck, e, t, fn);
        if (t[0].ptr || !(chk_is_num(&t[0]) || (bi == BI_SUM && chk_is_bool(&t[0])))) {
            chk_err(ck, chk_start_of(a[0]), "%s needs a numeric tile, got %s", fn, chk_ty_str(ck, &t[0]));
            return chk_ty_err();
        }
        if (t[0].rank == 0) {
            chk_err(ck, chk_start_of(a[0]), "%s reduces a tile, got the scalar %s%s", fn, chk_ty_str(ck, &t[0]),
                bi == BI_MIN ? " (the smaller of two values is minimum(a, b))"
                : bi == BI_MAX ? " (the larger of two values is maximum(a, b))" : "");
            return chk_ty_err();
        }
        if (chk_axis(ck, a[1], "a reduction axis", &t[0], &axis))
            return chk_ty_err();
        tilec_type r = t[0];
        for (int i = (int)axis; i + 1 < r.rank; i++)
            r.dims[i] = r.dims[i + 1];
        r.rank--;
        r.dims[r.rank] = 0;
        r.weak = false;
        if (bi == BI_ARGMAX || bi == BI_ARGMIN)
            r.dtype = TILEC_DT_I32;
        else if (chk_is_bool(&t[0]))
            r.dtype = TILEC_DT_I32;
        return r;
    }
    case BI_MAXIMUM:
    case BI_MINIMUM:
    case BI_CDIV: {
        int ok = bi == BI_CDIV ? chk_is_int(&t[0]) && chk_is_int(&t[1]) : chk_is_num(&t[0]) && chk_is_num(&t[1]);
        if (!ok) {
            chk_err(ck, &e->loc, "%s needs %s operands, got %s and %s", fn, bi == BI_CDIV ? "integer" : "numeric",
                chk_ty_str(ck, &t[0]), chk_ty_str(ck, &t[1]));
            return chk_ty_err();
        }
        tilec_type r = chk_promote(&t[0], &t[1]);
        if (chk_bcast(&t[0], &t[1], &r)) {
            chk_err(ck, &e->loc, "shapes %s and %s do not broadcast in %s", chk_shp_str(ck, &t[0]), chk_shp_str(ck, &t[1]), fn);
            return chk_ty_err();
        }
        if (chk_literals_meet(ck, a[0], &t[0], a[1], &t[1], r.dtype, ar_printf(&ck->scratch, "an operand of %s", fn)))
            return chk_ty_err();
        int64_t divisor;
        if (bi == BI_CDIV && chk_known_int(ck, a[1], &divisor) && divisor <= 0) {
            chk_err(ck, chk_start_of(a[1]), "the divisor of cdiv must be positive, got %lld", (long long)divisor);
            return chk_ty_err();
        }
        chk_adapt(ck, a[0], r.dtype);
        chk_adapt(ck, a[1], r.dtype);
        return r;
    }
    case BI_WHERE: {
        if (!chk_is_bool(&t[0])) {
            chk_err(ck, chk_start_of(a[0]), "the condition of where must be bool, got %s", chk_ty_str(ck, &t[0]));
            return chk_ty_err();
        }
        tilec_type r;
        if (t[1].ptr || t[2].ptr) {
            if (!(t[1].ptr && t[2].ptr && t[1].dtype == t[2].dtype)) {
                chk_err(ck, &e->loc, "where cannot choose between %s and %s", chk_ty_str(ck, &t[1]), chk_ty_str(ck, &t[2]));
                return chk_ty_err();
            }
            r = t[1];
        } else if ((chk_is_bool(&t[1]) && chk_is_bool(&t[2]))) {
            r = t[1];
        } else if (chk_is_num(&t[1]) && chk_is_num(&t[2])) {
            r = chk_promote(&t[1], &t[2]);
            if (chk_literals_meet(ck, a[1], &t[1], a[2], &t[2], r.dtype, "a branch of where"))
                return chk_ty_err();
            chk_adapt(ck, a[1], r.dtype);
            chk_adapt(ck, a[2], r.dtype);
        } else {
            chk_err(ck, &e->loc, "where cannot choose between %s and %s", chk_ty_str(ck, &t[1]), chk_ty_str(ck, &t[2]));
            return chk_ty_err();
        }
        tilec_type s = t[0];
        if (chk_bcast(&t[0], &t[1], &s) || chk_bcast(&s, &t[2], &s)) {
            chk_err(ck, &e->loc, "shapes %s, %s and %s do not broadcast in where", chk_shp_str(ck, &t[0]),
                chk_shp_str(ck, &t[1]), chk_shp_str(ck, &t[2]));
            return chk_ty_err();
        }
        r.rank = s.rank;
        memcpy(r.dims, s.dims, sizeof r.dims);
        return r;
    }
    case BI_ABS:
        if (!chk_is_num(&t[0])) {
            chk_err(ck, chk_start_of(a[0]), "abs needs a numeric operand, got %s", chk_ty_str(ck, &t[0]));
            return chk_ty_err();
        }
        return t[0];
    case BI_FMA: {
        for (int i = 0; i < 3; i++)
            if (!chk_is_float(&t[i])) {
                chk_err(ck, chk_start_of(a[i]), "fma needs floating-point operands, got %s", chk_ty_str(ck, &t[i]));
                return chk_ty_err();
            }
        tilec_type r = chk_promote(&t[0], &t[1]);
        r = chk_promote(&r, &t[2]);
        for (int i = 0; i < 3; i++)
            chk_adapt(ck, a[i], r.dtype);
        tilec_type s = t[0];
        if (chk_bcast(&t[0], &t[1], &s) || chk_bcast(&s, &t[2], &s)) {
            chk_err(ck, &e->loc, "shapes %s, %s and %s do not broadcast in fma", chk_shp_str(ck, &t[0]), chk_shp_str(ck, &t[1]),
                chk_shp_str(ck, &t[2]));
            return chk_ty_err();
        }
        r.rank = s.rank;
        memcpy(r.dims, s.dims, sizeof r.dims);
        return r;
    }
    case BI_CAST: {
        if (a[1]->kind != TILEC_EX_DTYPE) {
            chk_err(ck, chk_start_of(a[1]), "the second argument of cast is an element type such as f16");
            return chk_ty_err();
        }
        if (t[0].ptr) {
            chk_err(ck, chk_start_of(a[0]), "cannot cast the pointer %s", chk_ty_str(ck, &t[0]));
            return chk_ty_err();
        }
        chk_adapt(ck, a[0], a[1]->dtype); /* cast(0.1, f64) is the double 0.1 */
        tilec_type r = t[0];
        r.dtype = a[1]->dtype;
        r.weak = false;
        return r;
    }
    case BI_TRANS: {
        if (t[0].rank != 2) {
            chk_err(ck, chk_start_of(a[0]), "trans needs a 2-D tile, got %s", chk_ty_str(ck, &t[0]));
            return chk_ty_err();
        }
        tilec_type r = t[0];
        r.dims[0] = t[0].dims[1];
        r.dims[1] = t[0].dims[0];
        return r;
    }
    default: /* exp, log, ... : floating-point elementwise */
        if (!chk_is_float(&t[0])) {
            chk_err(ck, chk_start_of(a[0]), "%s needs a floating-point operand, got %s%s", fn, chk_ty_str(ck, &t[0]),
                chk_is_int(&t[0]) ? " (use cast(x, f32))" : "");
            return chk_ty_err();
        }
        return t[0];
    }
}

tilec_type chk_call(checker *ck, tilec_expr *e)
{
    tilec_builtin bi = tilec_builtin_find(e->name);
    e->builtin = bi; /* resolved once: the lowering switches on it */
    if (bi == BI_NONE) {
        item_name *it = NULL;
        HASH_FIND_STR(ck->items, e->name, it);
        if (it && it->kind == TILEC_ITEM_KERNEL)
            chk_err(ck, &e->loc, "a kernel cannot call another kernel ('%s'); call kernels from a graph", e->name);
        else if (it)
            chk_err(ck, &e->loc, "'%s' is %s; call it from a graph", e->name,
                it->kind == TILEC_ITEM_EXTERN ? "an extern" : "a graph");
        else
            chk_err(ck, &e->loc, "unknown function '%s'", e->name);
        for (uint32_t i = 0; i < e->nargs; i++)
            chk_expr(ck, e->args[i]);
        return chk_ty_err();
    }
    const tilec_builtin_info *info = tilec_builtin_get(bi);
    if ((int)e->nargs < info->lo || (int)e->nargs > info->hi) {
        if (info->lo == info->hi)
            chk_err(ck, &e->loc, "%s takes %d argument%s, got %u", e->name, info->lo, info->lo == 1 ? "" : "s", e->nargs);
        else
            chk_err(ck, &e->loc, "%s takes %d to %d arguments, got %u", e->name, info->lo, info->hi, e->nargs);
        return chk_ty_err();
    }
    return check_builtin(ck, e, bi);
}
