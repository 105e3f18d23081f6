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

static int float_rank(tilec_dtype d) { return d == TILEC_DT_F64 ? 3 : d == TILEC_DT_F32 ? 2 : 1; }

/* The dtype two numeric operands meet at (C-like; untyped literals adapt). */
tilec_type chk_promote(const tilec_type *a, const tilec_type *b)
{
    tilec_type r = chk_ty_scalar(TILEC_DT_I32);
    if (a->weak != b->weak) {
        const tilec_type *w = a->weak ? a : b, *s = a->weak ? b : a;
        r.dtype = chk_dclass(w->dtype) == 'f' && chk_dclass(s->dtype) != 'f' ? TILEC_DT_F32 : s->dtype;
        return r;
    }
    r.weak = a->weak && b->weak;
    char ca = chk_dclass(a->dtype), cb = chk_dclass(b->dtype);
    if (ca == 'f' || cb == 'f') {
        if (ca == 'f' && cb == 'f') {
            if (a->dtype == b->dtype)
                r.dtype = a->dtype;
            else if (float_rank(a->dtype) == float_rank(b->dtype))
                r.dtype = TILEC_DT_F32; /* f16 with bf16 */
            else
                r.dtype = float_rank(a->dtype) > float_rank(b->dtype) ? a->dtype : b->dtype;
        } else
            r.dtype = ca == 'f' ? a->dtype : b->dtype;
        return r;
    }
    unsigned sa = tilec_dtype_size(a->dtype), sb = tilec_dtype_size(b->dtype);
    if (sa != sb)
        r.dtype = sa > sb ? a->dtype : b->dtype;
    else
        r.dtype = ca == 'u' ? a->dtype : b->dtype;
    return r;
}
