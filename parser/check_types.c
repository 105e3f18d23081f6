/* check_types.c: the types and shapes of kernel values: predicates,
 * their text in messages, broadcasting of shapes and promotion of dtypes. */
#include <string.h>

#include "parser/check_internal.h"

static void shape_str(strbuf *b, const tilec_type *t)
{
    sb_putc(b, '[');
    for (unsigned i = 0; i < t->rank; i++)
        sb_printf(b, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    sb_putc(b, ']');
}

/* "f32", "f32[128, 64]", "*f32", "*f32[128]" in the scratch arena */
const char *chk_ty_str(checker *ck, const tilec_type *t)
{
    if (t->kind == TILEC_TY_VOID)
        return "nothing";
    if (t->kind == TILEC_TY_DTYPE) {
        const char *d = ar_printf(&ck->scratch, "the type '%s'", tilec_dtype_name(t->dtype));
        return d ? d : "a type";
    }
    strbuf b;
    sb_init(&b);
    if (t->list)
        sb_printf(&b, "[*%s]", tilec_dtype_name(t->dtype));
    else
        sb_printf(&b, "%s%s", t->ptr ? "*" : "", tilec_dtype_name(t->dtype));
    if (t->rank)
        shape_str(&b, t);
    const char *s = ar_strdup(&ck->scratch, sb_str(&b));
    sb_free(&b);
    return s ? s : "?";
}

const char *chk_shp_str(checker *ck, const tilec_type *t)
{
    strbuf b;
    sb_init(&b);
    shape_str(&b, t);
    const char *s = ar_strdup(&ck->scratch, sb_str(&b));
    sb_free(&b);
    return s ? s : "?";
}

/* numpy broadcasting of the shapes of a and b into out (dtype untouched) */
int chk_bcast(const tilec_type *a, const tilec_type *b, tilec_type *out)
{
    unsigned r = a->rank > b->rank ? a->rank : b->rank;
    int64_t dims[TILEC_MAX_RANK] = {0};
    for (unsigned i = 0; i < r; i++) {
        int ia = (int)a->rank - (int)r + (int)i, ib = (int)b->rank - (int)r + (int)i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return -1;
        dims[i] = da == 1 ? db : da;
    }
    out->rank = (uint8_t)r;
    memcpy(out->dims, dims, sizeof dims);
    return 0;
}

/* The dtype two numeric operands meet at (C-like; untyped literals adapt). */
tilec_type chk_promote(const tilec_type *a, const tilec_type *b)
{
    tilec_type r = chk_ty_scalar(tilec_promote(a->dtype, a->weak, b->dtype, b->weak));
    r.weak = a->weak && b->weak;
    return r;
}

/* The type chk_set last gave e in the configuration being checked. */
static tilec_type *cur_type(checker *ck, tilec_expr *e)
{
    if (ck->variant >= 0)
        return e->vtypes ? &e->vtypes[ck->variant] : NULL;
    return ck->annotate ? &e->type : NULL;
}

/* An untyped float value (a literal, or literals and hints combined) that
 * meets a value of float dtype d takes d (7.1), down to its literals, so
 * that the lowering spells each literal in d: 0.9 beside an f64 is the
 * double 0.9, not the float 0.9f widened (issue 35 item 2). Untyped
 * integer parts stay integers (0.5 * (1 / 2) is 0.0), and a typed value
 * is left as it is. */
void chk_adapt(checker *ck, tilec_expr *e, tilec_dtype d)
{
    tilec_type *t = cur_type(ck, e);
    if (!t || t->kind != TILEC_TY_VALUE || !t->weak || t->ptr || chk_dclass(t->dtype) != 'f' || chk_dclass(d) != 'f' ||
        t->dtype == d)
        return;
    t->dtype = d;
    if (e->kind == TILEC_EX_UNARY || e->kind == TILEC_EX_BINARY || e->kind == TILEC_EX_CALL)
        for (uint32_t i = 0; i < e->nargs; i++)
            chk_adapt(ck, e->args[i], d);
}
