/* check_fill.c: the allocating statements of graphs: let t = empty(T,
 * [sizes]), zeros, ones, full(T, [sizes], value), and the *_like forms that
 * take a tensor's dtype and shape (parser/graph_alloc.h). The value of a
 * fill must be a literal that the dtype holds. */
#include <math.h>
#include <string.h>

#include "parser/check_internal.h"
#include "parser/graph_alloc.h"

/* full's value: a literal the dtype holds exactly as C would store it */
static int fill_ok(checker *ck, const ga_form *f, const tilec_expr *v, tilec_dtype dt)
{
    fill_value fv;
    uint64_t bits;
    if (ga_value(f, dt, &fv)) {
        chk_err(ck, chk_start_of(f->value), "the value of %s must be a number, inf or a bool literal (optionally "
                "negated), such as 0.5, -inf or true; compute other values in a kernel", v->name);
        return 0;
    }
    char buf[80];
    const char *text = ga_value_text(f, dt, buf, sizeof buf);
    const tilec_loc *at = f->value ? chk_start_of(f->value) : &v->loc;
    switch (fill_bits(dt, &fv, &bits)) {
    case FILL_OK: return 1;
    case FILL_NOT_INTEGER:
        chk_err(ck, at, "%s: %s is not an integer, and the tensor is %s", v->name, text, tilec_dtype_name(dt));
        return 0;
    case FILL_RANGE: chk_err(ck, at, "%s: %s does not fit in %s", v->name, text, tilec_dtype_name(dt)); return 0;
    case FILL_NOT_BOOL: chk_err(ck, at, "%s: a bool tensor holds true or false, not %s", v->name, text); return 0;
    case FILL_BOOL:
        chk_err(ck, at, "%s: %s is a bool, but the tensor is %s", v->name, text, tilec_dtype_name(dt));
        return 0;
    case FILL_OVERFLOW:
        chk_err(ck, at, "%s: %s overflows %s (it would be inf)", v->name, text, tilec_dtype_name(dt));
        return 0;
    }
    return 0;
}

int chk_literal_fits(checker *ck, const tilec_expr *e, tilec_dtype dt, const char *what)
{
    fill_value fv;
    uint64_t bits;
    char c = tilec_dtype_class(dt);
    if (ga_literal(e, &fv) || fv.kind == FILL_V_BOOL || c == 'b')
        return 0;
    /* an integral float is that integer: 2.0 is an i32 2 */
    if (fv.kind == FILL_V_FLOAT && c != 'f' && isfinite(fv.f) && fv.f == trunc(fv.f) && fabs(fv.f) < 0x1p63) {
        fv.kind = FILL_V_INT;
        fv.neg = fv.f < 0;
        fv.i = (int64_t)fabs(fv.f);
    }
    char buf[80];
    const char *text = ga_literal_text(e, buf, sizeof buf), *dn = tilec_dtype_name(dt);
    switch (fill_bits(dt, &fv, &bits)) {
    case FILL_NOT_INTEGER: chk_err(ck, chk_start_of(e), "%s: %s is not an integer, and it becomes %s", what, text, dn); break;
    case FILL_RANGE: chk_err(ck, chk_start_of(e), "%s: %s does not fit in %s", what, text, dn); break;
    case FILL_OVERFLOW: chk_err(ck, chk_start_of(e), "%s: %s overflows %s (it would be inf)", what, text, dn); break;
    default: return 0;
    }
    return -1;
}

int chk_literals_meet(checker *ck, const tilec_expr *ea, const tilec_type *ta, const tilec_expr *eb,
                      const tilec_type *tb, tilec_dtype dt, const char *what)
{
    if (ta->weak && !tb->weak)
        return chk_literal_fits(ck, ea, dt, what);
    if (tb->weak && !ta->weak)
        return chk_literal_fits(ck, eb, dt, what);
    return 0;
}

/* let name = empty|zeros|ones|full|*_like(...): 0 when v is none of them. */
int chk_graph_alloc(checker *ck, tilec_stmt *s)
{
    const tilec_expr *v = s->value;
    ga_form f;
    const char *why = NULL;
    if (!ga_read(v, &f, &why))
        return 0;
    if (s->kind != TILEC_ST_LET) {
        chk_err(ck, &v->loc, "bind the result of %s with let name = %s(...)", v->name, v->name);
        return 1;
    }
    uint32_t want = (f.like ? 1 : 2) + (f.fill == GA_FULL);
    if (v->nargs != want) {
        chk_err(ck, &v->loc, "%s takes %u argument%s, got %u", v->name, want, want == 1 ? "" : "s", v->nargs);
        return 1;
    }
    if (why) {
        chk_err(ck, f.like ? chk_start_of(v->args[0]) : &v->loc, "%s", why);
        return 1;
    }
    tilec_dtype dt = f.dtype;
    uint32_t rank = f.ndims;
    const poly **dims;
    if (f.like) {
        binding *b = chk_tensor_arg(ck, f.of, ar_printf(&ck->scratch, "the argument of %s", v->name), NULL);
        if (!b)
            return 1;
        dt = b->dtype;
        rank = b->rank;
        dims = b->dims;
    } else {
        const poly **d = ar_array(&ck->scratch, rank ? rank : 1, sizeof *d);
        if (!d) {
            ck->oom = 1;
            return 1;
        }
        for (uint32_t i = 0; i < rank; i++)
            if (!(d[i] = chk_size_expr(ck, f.dims[i], "a tensor size")))
                return 1;
        dims = d;
    }
    if (f.fill != GA_EMPTY && !fill_ok(ck, &f, v, dt))
        return 1;
    binding *b = chk_bind_tensor(ck, s->names[0], &s->name_locs[0], dt, dims, rank);
    if (b)
        s->types[0] = b->text;
    return 1;
}
