/* check_stmt.c: kernel statements and blocks: let, assignment, for, if,
 * return and expression statements. */
#include "parser/check_internal.h"

static int same_type(const tilec_type *declared, const tilec_type *v)
{
    if (declared->ptr != v->ptr || declared->rank != v->rank)
        return 0;
    for (unsigned i = 0; i < v->rank; i++)
        if (declared->dims[i] != v->dims[i])
            return 0;
    if (declared->dtype == v->dtype)
        return 1;
    /* an untyped literal adapts to the variable's type */
    return v->weak && (chk_dclass(declared->dtype) == 'f' || chk_dclass(v->dtype) != 'f');
}

/* cast(e, d) around an untyped integer value e: what `let x: f32 = 1` or
 * `let n: i64 = 5` binds (§7.1: the literal becomes a value of the type;
 * an integer part stays an integer, so `let h: f32 = 1 / 2` is 0.0). Made
 * once, in the module arena: the later configurations check the cast. */
static tilec_expr *let_cast(checker *ck, tilec_expr *e, tilec_dtype d)
{
    tilec_expr *c = ar_alloc(ck->ar, sizeof *c), *ty = ar_alloc(ck->ar, sizeof *ty);
    tilec_expr **args = ar_array(ck->ar, 2, sizeof *args);
    if (!c || !ty || !args)
        return NULL;
    *ty = (tilec_expr){.kind = TILEC_EX_DTYPE, .loc = e->loc, .dtype = d, .name = tilec_dtype_name(d), .depth = 1};
    args[0] = e;
    args[1] = ty;
    *c = (tilec_expr){.kind = TILEC_EX_CALL, .loc = e->loc, .name = "cast", .args = args, .nargs = 2, .depth = e->depth + 1};
    tilec_type t = chk_expr(ck, c);
    return t.kind == TILEC_TY_VALUE ? c : NULL;
}

/* `let x: T = e` (docs/language.md §5): T names the element type (or *T a
 * pointer's), T[d, ...] its shape too, which must be the value's. An untyped literal value adapts
 * to T as it does beside a typed operand (§7.1); any other value must be
 * of type T already: nothing converts silently. *t becomes the variable's
 * type; 0 when it is in error (reported). */
static int check_let_type(checker *ck, tilec_stmt *s, tilec_type *t)
{
    const tilec_tyexpr *a = s->ann;
    const char *x = s->names[0];
    if (a->tparam) {
        chk_err(ck, &a->loc, "unknown type '%s' in the let of '%s' (an element type such as f32, or a type parameter "
            "of a generic kernel)", a->tparam, x);
        return 0;
    }
    if (a->kind == TILEC_TE_LIST) {
        chk_err(ck, &a->loc, "the type of a let is an element type (let %s: %s = ...), or one with the value's shape",
            x, tilec_dtype_name(a->dtype));
        return 0;
    }
    const char *want = ar_printf(&ck->scratch, "%s%s", a->kind == TILEC_TE_POINTER ? "*" : "", tilec_dtype_name(a->dtype));
    if (t->kind != TILEC_TY_VALUE)
        return t->kind != TILEC_TY_ERROR;
    if (a->kind == TILEC_TE_TENSOR || a->ndims) { /* let v: f32[BLOCK] = ... (or *f16[BLOCK]): the shape, checked, as
                                                    --emit ast prints it */
        int same = a->ndims == t->rank && t->ptr == (a->kind == TILEC_TE_POINTER);
        const char *shape = "";
        for (uint32_t d = 0; d < a->ndims; d++) {
            int64_t v;
            if (chk_const_eval(ck, a->dims[d], "a size of a let's type", &v))
                return 0;
            same &= d < t->rank && v == t->dims[d];
            shape = ar_printf(&ck->scratch, "%s%s%lld", shape, d ? ", " : "", (long long)v);
        }
        if (!same) {
            chk_err(ck, &a->loc, "'%s' is declared %s[%s], but its value is %s%s", x, want, shape, chk_ty_str(ck, t),
                t->ptr == (a->kind == TILEC_TE_POINTER) && t->dtype == a->dtype ? " (the type written may leave the shape out)"
                                                                                 : "");
            return 0;
        }
    }
    int adapts = t->weak && !t->ptr && a->kind != TILEC_TE_POINTER &&
                 (chk_dclass(a->dtype) == 'f' || chk_dclass(t->dtype) != 'f'); /* as in an assignment */
    if (adapts) {
        if (chk_literal_fits(ck, s->value, a->dtype, ar_printf(&ck->scratch, "the value of '%s'", x)))
            return 0;
        chk_adapt(ck, s->value, a->dtype); /* let eps: f64 = 1e-50 is the double 1e-50 */
        if (chk_dclass(t->dtype) != 'f' && t->dtype != a->dtype && !(s->value = let_cast(ck, s->value, a->dtype))) {
            ck->oom = 1;
            return 0;
        }
        t->dtype = a->dtype;
        return 1;
    }
    if ((a->kind == TILEC_TE_POINTER) != t->ptr || a->dtype != t->dtype) {
        const char *got = chk_ty_str(ck, t);
        if (t->ptr || a->kind == TILEC_TE_POINTER)
            chk_err(ck, chk_start_of(s->value), "'%s' is declared %s, but its value is %s", x, want, got);
        else
            chk_err(ck, chk_start_of(s->value), "'%s' is declared %s, but its value is %s; convert it: cast(..., %s)",
                x, want, got, want);
        chk_note(ck, &a->loc, "the type of '%s' is written here", x);
        return 0;
    }
    return 1;
}

static void check_stmt(checker *ck, tilec_stmt *s)
{
    switch (s->kind) {
    case TILEC_ST_DOC:
        return;
    case TILEC_ST_LET: {
        tilec_type t = chk_expr(ck, s->value);
        if (t.kind == TILEC_TY_VOID) {
            chk_err(ck, chk_start_of(s->value), "'%s' returns no value", s->value->kind == TILEC_EX_CALL ? s->value->name : "expression");
            t = chk_ty_err();
        } else if (t.kind == TILEC_TY_DTYPE) {
            chk_err(ck, chk_start_of(s->value), "expected a value, found the type '%s'", tilec_dtype_name(t.dtype));
            t = chk_ty_err();
        }
        if (s->ann && !check_let_type(ck, s, &t))
            t = chk_ty_err();
        binding *b = chk_bind(ck, s->names[0], &s->name_locs[0], B_LET, "variable");
        if (b) {
            if (t.kind == TILEC_TY_VALUE)
                t.weak = false; /* a variable has a definite type */
            b->type = t;
        }
        return;
    }
    case TILEC_ST_ASSIGN: {
        tilec_type t = chk_expr(ck, s->value);
        binding *b = chk_lookup(ck, s->names[0]);
        if (!b) {
            chk_err(ck, &s->name_locs[0], "assignment to undefined name '%s' (declare it with let)", s->names[0]);
            return;
        }
        if (b->kind != B_LET) {
            chk_err(ck, &s->name_locs[0], "cannot assign to %s '%s'",
                b->kind == B_PARAM ? "parameter" : b->kind == B_HINT ? "hint" : "loop variable", s->names[0]);
            return;
        }
        if (t.kind == TILEC_TY_ERROR || b->type.kind == TILEC_TY_ERROR)
            return;
        if (t.kind != TILEC_TY_VALUE || !same_type(&b->type, &t)) {
            chk_err(ck, chk_start_of(s->value), "assignment changes the type of '%s' from %s to %s", s->names[0],
                chk_ty_str(ck, &b->type), chk_ty_str(ck, &t));
            chk_note(ck, &b->loc, "'%s' is defined here", s->names[0]);
        } else if (!chk_literal_fits(ck, s->value, b->type.dtype,
                                     ar_printf(&ck->scratch, "the value assigned to '%s'", s->names[0]))) {
            chk_adapt(ck, s->value, b->type.dtype); /* x = 0.1 for x: f64 is the double 0.1 */
        }
        return;
    }
    case TILEC_ST_EXPR: {
        tilec_type t = chk_expr(ck, s->value);
        (void)t;
        if (s->value->kind != TILEC_EX_CALL)
            chk_err(ck, chk_start_of(s->value), "this expression has no effect; only calls such as store(...) may stand alone");
        return;
    }
    case TILEC_ST_FOR: {
        tilec_expr *parts[3] = {s->lo, s->hi, s->step};
        static const char *const names[3] = {"start", "end", "step"};
        tilec_type lt = chk_ty_scalar(TILEC_DT_I32);
        for (int i = 0; i < 3; i++) {
            if (!parts[i])
                continue;
            tilec_type t = chk_expr(ck, parts[i]);
            if (t.kind == TILEC_TY_ERROR)
                continue;
            if (!chk_is_int(&t) || t.rank) {
                chk_err(ck, chk_start_of(parts[i]), "the loop %s must be a scalar integer, got %s", names[i], chk_ty_str(ck, &t));
                continue;
            }
            if (i < 2 && (tilec_dtype_size(t.dtype) == 8 || t.dtype == TILEC_DT_U32) && !t.weak)
                lt.dtype = TILEC_DT_I64; /* i32 holds no u32 past 2^31 - 1 */
        }
        int64_t step;
        if (s->step && chk_known_int(ck, s->step, &step) && step <= 0)
            chk_err(ck, chk_start_of(s->step), "the loop step must be positive, got %lld", (long long)step);
        ck->depth++;
        binding *b = chk_bind(ck, s->names[0], &s->name_locs[0], B_LOOP, "loop variable");
        if (b)
            b->type = lt;
        chk_block(ck, &s->body);
        chk_leave_scope(ck);
        return;
    }
    case TILEC_ST_IF: {
        tilec_type t = chk_expr(ck, s->value);
        if (t.kind != TILEC_TY_ERROR && (!chk_is_bool(&t) || t.rank))
            chk_err(ck, chk_start_of(s->value), "an if condition must be a scalar bool, got %s%s", chk_ty_str(ck, &t),
                t.rank ? " (use where(...) for tiles)" : "");
        ck->depth++;
        chk_block(ck, &s->body);
        chk_leave_scope(ck);
        if (s->has_else) {
            ck->depth++;
            chk_block(ck, &s->orelse);
            chk_leave_scope(ck);
        }
        return;
    }
    case TILEC_ST_RETURN:
        chk_err(ck, &s->loc, "return is only allowed in a graph; a kernel writes its results with store(...)");
        return;
    case TILEC_ST_LET_TUPLE:
        chk_err(ck, &s->loc, "let (...) binds the results of a multi-output extern and is only allowed in a graph");
        return;
    }
}

void chk_block(checker *ck, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts && !chk_stop(ck); i++)
        check_stmt(ck, b->stmts[i]);
}
