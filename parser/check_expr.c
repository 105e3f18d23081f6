/* check_expr.c: the types of kernel expressions: literals, names,
 * operators, indexing; calls go to check_builtin.c. */
#include <stdio.h>

#include "parser/check_internal.h"

/* The value of a literal, a hint or their negation, without reporting
 * anything: 1 when known. */
int chk_known_int(checker *ck, const tilec_expr *e, int64_t *out)
{
    if (e->kind == TILEC_EX_INT) {
        *out = e->ival;
        return 1;
    }
    if (e->kind == TILEC_EX_NAME) {
        binding *b = chk_lookup(ck, e->name);
        if (!b || b->kind != B_HINT)
            return 0;
        *out = b->value;
        return 1;
    }
    if (e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG && chk_known_int(ck, e->args[0], out) && *out != INT64_MIN) {
        *out = -*out;
        return 1;
    }
    return 0;
}

/* Where an error about a whole expression points: its first token (a binary
 * or index expression's own location is its operator). */
const tilec_loc *chk_start_of(const tilec_expr *e)
{
    while (e->kind == TILEC_EX_BINARY || e->kind == TILEC_EX_INDEX)
        e = e->args[0];
    return &e->loc;
}

tilec_type chk_set(checker *ck, tilec_expr *e, tilec_type t)
{
    if (ck->annotate)
        e->type = t;
    if (ck->k && ck->k->nvariants && ck->variant >= 0) {
        if (!e->vtypes)
            e->vtypes = ar_array(ck->ar, ck->k->nvariants, sizeof *e->vtypes);
        if (e->vtypes)
            e->vtypes[ck->variant] = t;
        else
            ck->oom = 1;
    }
    return t;
}

static const char *const op_names[] = {
#define X(e, s) s,
    TILEC_BINOPS(X) TILEC_UNOPS(X)
#undef X
};

static tilec_type check_binary(checker *ck, tilec_expr *e)
{
    tilec_type a = chk_expr(ck, e->args[0]), b = chk_expr(ck, e->args[1]);
    if (a.kind == TILEC_TY_ERROR || b.kind == TILEC_TY_ERROR)
        return chk_ty_err();
    const char *op = op_names[e->op];
    if (a.kind != TILEC_TY_VALUE || b.kind != TILEC_TY_VALUE) {
        chk_err(ck, &e->loc, "operands of '%s' must be values, got %s and %s", op, chk_ty_str(ck, &a), chk_ty_str(ck, &b));
        return chk_ty_err();
    }
    tilec_type r = a;
    if (chk_bcast(&a, &b, &r)) {
        chk_err(ck, &e->loc, "shapes %s and %s do not broadcast in '%s'", chk_shp_str(ck, &a), chk_shp_str(ck, &b), op);
        return chk_ty_err();
    }
    tilec_type p;
    switch (e->op) {
    case TILEC_OP_ADD:
    case TILEC_OP_SUB:
        if (a.ptr || b.ptr) {
            const tilec_type *ptr = a.ptr ? &a : &b, *off = a.ptr ? &b : &a;
            if (a.ptr && b.ptr) {
                chk_err(ck, &e->loc, "cannot apply '%s' to two pointers (%s and %s)", op, chk_ty_str(ck, &a), chk_ty_str(ck, &b));
                return chk_ty_err();
            }
            if (!chk_is_int(off) || (e->op == TILEC_OP_SUB && b.ptr)) {
                chk_err(ck, &e->loc, "pointer arithmetic needs an integer offset, got %s %s %s", chk_ty_str(ck, &a), op,
                    chk_ty_str(ck, &b));
                return chk_ty_err();
            }
            r.ptr = true;
            r.weak = false;
            r.dtype = ptr->dtype;
            return r;
        }
        __attribute__((fallthrough));
    case TILEC_OP_MUL:
    case TILEC_OP_DIV:
    case TILEC_OP_MOD:
        if (!chk_is_num(&a) || !chk_is_num(&b)) {
            chk_err(ck, &e->loc, "'%s' needs numeric operands, got %s and %s", op, chk_ty_str(ck, &a), chk_ty_str(ck, &b));
            return chk_ty_err();
        }
        p = chk_promote(&a, &b);
        if (chk_literals_meet(ck, e->args[0], &a, e->args[1], &b, p.dtype, ar_printf(&ck->scratch, "an operand of '%s'", op)))
            return chk_ty_err();
        int64_t divisor;
        if ((e->op == TILEC_OP_DIV || e->op == TILEC_OP_MOD) && chk_dclass(p.dtype) != 'f' &&
            chk_known_int(ck, e->args[1], &divisor) && divisor == 0) {
            chk_err(ck, &e->loc, "integer division by zero in '%s'", op);
            return chk_ty_err();
        }
        chk_adapt(ck, e->args[0], p.dtype);
        chk_adapt(ck, e->args[1], p.dtype);
        r.dtype = p.dtype;
        r.weak = p.weak;
        r.ptr = false;
        return r;
    case TILEC_OP_EQ: case TILEC_OP_NE: case TILEC_OP_LT:
    case TILEC_OP_LE: case TILEC_OP_GT: case TILEC_OP_GE:
        if (a.ptr || b.ptr || (chk_is_bool(&a) != chk_is_bool(&b) )) {
            if (!(a.ptr && b.ptr && a.dtype == b.dtype)) {
                chk_err(ck, &e->loc, "cannot compare %s with %s", chk_ty_str(ck, &a), chk_ty_str(ck, &b));
                return chk_ty_err();
            }
        }
        if (!a.ptr && chk_is_num(&a) && chk_is_num(&b)) { /* 0.1 compared with an f64 is the double 0.1 */
            p = chk_promote(&a, &b);
            if (chk_literals_meet(ck, e->args[0], &a, e->args[1], &b, p.dtype,
                                  ar_printf(&ck->scratch, "an operand of '%s'", op)))
                return chk_ty_err();
            chk_adapt(ck, e->args[0], p.dtype);
            chk_adapt(ck, e->args[1], p.dtype);
        }
        r.dtype = TILEC_DT_BOOL;
        r.weak = r.ptr = false;
        return r;
    case TILEC_OP_ANDAND:
    case TILEC_OP_OROR:
        if (!chk_is_bool(&a) || !chk_is_bool(&b)) {
            chk_err(ck, &e->loc, "'%s' needs bool operands, got %s and %s", op, chk_ty_str(ck, &a), chk_ty_str(ck, &b));
            return chk_ty_err();
        }
        r.dtype = TILEC_DT_BOOL;
        r.weak = false;
        return r;
    case TILEC_OP_AND:
    case TILEC_OP_OR:
    case TILEC_OP_XOR:
        if (chk_is_bool(&a) && chk_is_bool(&b)) {
            r.dtype = TILEC_DT_BOOL;
            r.weak = false;
            return r;
        }
        __attribute__((fallthrough));
    case TILEC_OP_SHL:
    case TILEC_OP_SHR:
        if (!chk_is_int(&a) || !chk_is_int(&b)) {
            chk_err(ck, &e->loc, "'%s' needs integer operands, got %s and %s", op, chk_ty_str(ck, &a), chk_ty_str(ck, &b));
            return chk_ty_err();
        }
        p = chk_promote(&a, &b);
        if (chk_literals_meet(ck, e->args[0], &a, e->args[1], &b, p.dtype, ar_printf(&ck->scratch, "an operand of '%s'", op)))
            return chk_ty_err();
        r.dtype = p.dtype;
        r.weak = p.weak;
        return r;
    default:
        return chk_ty_err();
    }
}

static tilec_type check_unary(checker *ck, tilec_expr *e)
{
    tilec_type a = chk_expr(ck, e->args[0]);
    if (a.kind == TILEC_TY_ERROR)
        return a;
    int ok = e->op == TILEC_OP_NEG ? chk_is_num(&a) : e->op == TILEC_OP_NOT ? chk_is_bool(&a) : chk_is_int(&a);
    if (!ok) {
        static const char *const need[] = {"a numeric", "a bool", "an integer"};
        chk_err(ck, &e->loc, "unary '%s' needs %s operand, got %s", op_names[e->op],
            need[e->op - TILEC_OP_NEG], chk_ty_str(ck, &a));
        return chk_ty_err();
    }
    return a;
}

/* An integer index i of axis `axis` of a: a scalar integer; a constant
 * must lie on the axis (a run-time one is clamped by the lowering). */
static int check_int_index(checker *ck, tilec_expr *i, const tilec_type *a, unsigned axis)
{
    tilec_type x = chk_expr(ck, i);
    if (x.kind == TILEC_TY_ERROR)
        return -1;
    if (x.kind != TILEC_TY_VALUE || x.ptr || x.rank || !chk_is_int(&x)) {
        chk_err(ck, chk_start_of(i), "an element index must be a scalar integer, got %s", chk_ty_str(ck, &x));
        return -1;
    }
    int64_t v, n = a->dims[axis];
    if (!chk_const_try(ck, i, &v) && (v < 0 || v >= n)) {
        chk_err(ck, chk_start_of(i), "index %lld is out of range for axis %u of shape %s (0 to %lld)",
            (long long)v, axis, chk_shp_str(ck, a), (long long)(n - 1));
        chk_note_hint(ck, i, v);
        return -1;
    }
    return 0;
}

/* lo:hi:step on axis `axis` of a: constant parts (literals, hints, module
 * constants), 0 <= lo < hi <= n, step >= 1, and a power-of-two count of
 * elements (a tile size), stored in *len. */
static int check_slice(checker *ck, tilec_expr *s, const tilec_type *a, unsigned axis, int64_t *len)
{
    static const char *const what[3] = {"a slice's start", "a slice's end", "a slice's step"};
    int64_t n = a->dims[axis], v[3];
    if (!s->nargs) {
        *len = n;
        return 0;
    }
    for (int i = 0; i < 3; i++)
        if (!(s->ival >> i & 1))
            v[i] = i == 1 ? n : s->args[i]->ival;
        else if (chk_const_eval(ck, s->args[i], what[i], &v[i]))
            return -1;
    if (v[2] < 1) {
        chk_err(ck, chk_start_of(s->args[2]), "a slice's step must be at least 1, got %lld", (long long)v[2]);
        chk_note_hint(ck, s->args[2], v[2]);
        return -1;
    }
    char txt[72];
    if (v[2] == 1)
        snprintf(txt, sizeof txt, "%lld:%lld", (long long)v[0], (long long)v[1]);
    else
        snprintf(txt, sizeof txt, "%lld:%lld:%lld", (long long)v[0], (long long)v[1], (long long)v[2]);
    if (v[0] < 0 || v[1] > n || v[0] >= v[1]) {
        chk_err(ck, &s->loc, "slice %s does not fit axis %u of shape %s (0 <= start < end <= %lld)", txt, axis,
            chk_shp_str(ck, a), (long long)n);
        for (int i = 0; i < 2; i++)
            if (s->ival >> i & 1)
                chk_note_hint(ck, s->args[i], v[i]);
        return -1;
    }
    int64_t c = (v[1] - v[0] - 1) / v[2] + 1;
    if (c & (c - 1)) {
        chk_err(ck, &s->loc, "slice %s of axis %u of shape %s has %lld elements; a tile size must be a power of two", txt,
            axis, chk_shp_str(ck, a), (long long)c);
        return -1;
    }
    *len = c;
    return 0;
}

/* t[i, j]: one element of t, every axis indexed by a scalar integer. */
static tilec_type check_pick(checker *ck, tilec_expr *e, const tilec_type *a)
{
    if (a->rank == 0) {
        chk_err(ck, &e->loc, "cannot pick an element of the scalar %s", chk_ty_str(ck, a));
        return chk_ty_err();
    }
    if (e->nargs - 1 != a->rank) {
        chk_err(ck, &e->loc, "picking an element of a value of shape %s needs %u indices (one per axis), got %u",
            chk_shp_str(ck, a), a->rank, e->nargs - 1);
        return chk_ty_err();
    }
    for (uint32_t i = 1; i < e->nargs; i++)
        if (check_int_index(ck, e->args[i], a, i - 1))
            return chk_ty_err();
    tilec_type r = *a;
    memset(r.dims, 0, sizeof r.dims);
    r.rank = 0;
    return r;
}

/* t[:, None], t[0:64, :], t[i, 8:24]: one slot per axis of t, each ':'
 * (keep the axis), lo:hi:step (keep part of it) or an integer (pick along
 * it, dropping it), and None slots inserting axes of 1 anywhere; all
 * integers is an element pick. */
static tilec_type check_index(checker *ck, tilec_expr *e)
{
    binding *lb = e->args[0]->kind == TILEC_EX_NAME ? chk_lookup(ck, e->args[0]->name) : NULL;
    if (lb && lb->type.list)
        return chk_list_index(ck, e, lb);
    tilec_type a = chk_expr(ck, e->args[0]);
    if (a.kind == TILEC_TY_ERROR)
        return a;
    if (a.kind != TILEC_TY_VALUE) {
        chk_err(ck, &e->loc, "cannot index %s", chk_ty_str(ck, &a));
        return chk_ty_err();
    }
    uint32_t ints = 0;
    for (uint32_t i = 1; i < e->nargs; i++)
        ints += e->args[i]->kind != TILEC_EX_SLICE && e->args[i]->kind != TILEC_EX_NONE;
    if (ints == e->nargs - 1)
        return check_pick(ck, e, &a);
    unsigned keep = 0, rank = 0;
    tilec_type r = a;
    for (uint32_t i = 1; i < e->nargs; i++) {
        tilec_expr *it = e->args[i];
        if (it->kind == TILEC_EX_NONE) {
            if (rank < TILEC_MAX_RANK)
                r.dims[rank] = 1;
            rank++;
            continue;
        }
        if (keep >= a.rank) {
            chk_err(ck, &it->loc, "too many indices for a value of shape %s", chk_shp_str(ck, &a));
            return chk_ty_err();
        }
        if (it->kind == TILEC_EX_SLICE) {
            int64_t len;
            if (check_slice(ck, it, &a, keep, &len))
                return chk_ty_err();
            if (rank < TILEC_MAX_RANK)
                r.dims[rank] = len;
            rank++;
        } else if (check_int_index(ck, it, &a, keep)) {
            return chk_ty_err();
        }
        keep++;
    }
    if (keep != a.rank) {
        chk_err(ck, &e->loc, "indexing a value of shape %s needs %u ':', slices or indices (one per axis), got %u",
            chk_shp_str(ck, &a), a.rank, keep);
        return chk_ty_err();
    }
    if (rank > TILEC_MAX_RANK) {
        chk_err(ck, &e->loc, "tiles have at most %d dimensions, this index makes %u", TILEC_MAX_RANK, rank);
        return chk_ty_err();
    }
    memset(r.dims + (rank < TILEC_MAX_RANK ? rank : TILEC_MAX_RANK), 0,
        sizeof r.dims[0] * (TILEC_MAX_RANK - (rank < TILEC_MAX_RANK ? rank : TILEC_MAX_RANK)));
    r.rank = (uint8_t)rank;
    return r;
}

tilec_type chk_expr(checker *ck, tilec_expr *e)
{
    if (chk_stop(ck))
        return chk_ty_err();
    tilec_type t = chk_ty_err();
    switch (e->kind) {
    case TILEC_EX_INT:
        t = chk_ty_scalar(e->ival > INT32_MAX ? TILEC_DT_I64 : TILEC_DT_I32);
        t.weak = true;
        break;
    case TILEC_EX_FLOAT:
    case TILEC_EX_INF:
        t = chk_ty_scalar(TILEC_DT_F32);
        t.weak = true;
        break;
    case TILEC_EX_BOOL:
        t = chk_ty_scalar(TILEC_DT_BOOL);
        break;
    case TILEC_EX_DTYPE:
        t = (tilec_type){.kind = TILEC_TY_DTYPE, .dtype = e->dtype};
        break;
    case TILEC_EX_NAME: {
        binding *b = chk_lookup(ck, e->name);
        if (!b) {
            chk_err(ck, &e->loc, "undefined name '%s'", e->name);
            chk_tune_note_undefined(ck, e->name);
            break;
        }
        if (b->type.list) { /* p[i], len(p) and numel(p, i) take it by name (check_list.c) */
            chk_list_misuse(ck, e, b);
            break;
        }
        t = b->type;
        break;
    }
    case TILEC_EX_UNARY:
        t = check_unary(ck, e);
        break;
    case TILEC_EX_BINARY:
        t = check_binary(ck, e);
        break;
    case TILEC_EX_CALL:
        t = chk_call(ck, e);
        break;
    case TILEC_EX_INDEX:
        t = check_index(ck, e);
        break;
    case TILEC_EX_LIST:
        chk_err(ck, &e->loc, "a list [...] is only allowed in a graph (empty(f32, [R, C]))");
        break;
    case TILEC_EX_SLICE:
    case TILEC_EX_NONE:
        chk_err(ck, &e->loc, "':' and None are only allowed inside an index");
        break;
    }
    if (t.kind == TILEC_TY_VALUE && t.rank && !chk_tile_numel_ok(ck, &e->loc, &t))
        t = chk_ty_err();
    return chk_set(ck, e, t);
}
