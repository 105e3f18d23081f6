/* check_scan.c: the scans of kernels. cumsum, cumprod, cummax, cummin
 * (x, axis [, exclusive [, reverse]]) and scan(x, axis, init, a, b,
 * combine [, exclusive [, reverse]]), whose combine is an expression over
 * the names a (the running value) and b (the next element), bound for it
 * alone. The result has x's shape and dtype (cumsum of bool: i32). */
#include <string.h>

#include "parser/check_internal.h"

/* exclusive / reverse: a bool literal */
static int scan_flag(checker *ck, tilec_expr *e, const char *fn, const char *which)
{
    if (e->kind != TILEC_EX_BOOL) {
        chk_err(ck, chk_start_of(e), "the %s flag of %s is true or false", which, fn);
        return -1;
    }
    e->type = chk_ty_scalar(TILEC_DT_BOOL);
    return 0;
}

/* scan's combine: a and b scalars of x's dtype, the result one of them */
static int scan_combine(checker *ck, tilec_expr *const *a, const tilec_type *x)
{
    for (int i = 3; i < 5; i++)
        if (a[i]->kind != TILEC_EX_NAME) {
            chk_err(ck, chk_start_of(a[i]), "argument %d of scan names the %s value of the combine, such as %s", i + 1,
                    i == 3 ? "running" : "next", i == 3 ? "a" : "b");
            return -1;
        }
    if (!strcmp(a[3]->name, a[4]->name)) {
        chk_err(ck, &a[4]->loc, "the two names of scan's combine must differ, got '%s' twice", a[4]->name);
        return -1;
    }
    tilec_type s = *x;
    s.rank = 0;
    s.weak = false;
    memset(s.dims, 0, sizeof s.dims);
    ck->depth++;
    int ok = 1;
    for (int i = 3; i < 5; i++) {
        binding *b = chk_bind(ck, a[i]->name, &a[i]->loc, B_LET, "a name of scan's combine");
        if (b)
            b->type = s;
        ok &= b != NULL;
        a[i]->type = s;
    }
    tilec_type c = ok ? chk_expr(ck, a[5]) : chk_ty_err();
    chk_leave_scope(ck);
    if (!ok || c.kind == TILEC_TY_ERROR)
        return -1;
    if (c.kind != TILEC_TY_VALUE || c.rank || c.ptr || (c.dtype != s.dtype && !c.weak)) {
        chk_err(ck, chk_start_of(a[5]), "the combine of scan must be a scalar %s (the dtype of the scanned tile), got %s",
                tilec_dtype_name(s.dtype), chk_ty_str(ck, &c));
        return -1;
    }
    chk_adapt(ck, a[5], s.dtype);
    return 0;
}

tilec_type chk_scan(checker *ck, tilec_expr *e)
{
    const char *fn = e->name;
    tilec_expr *const *a = e->args;
    int user = !strcmp(fn, "scan"), sum = !strcmp(fn, "cumsum");
    tilec_type x = chk_expr(ck, a[0]);
    if (x.kind == TILEC_TY_ERROR)
        return x;
    if (x.kind != TILEC_TY_VALUE || x.ptr || !(chk_is_num(&x) || (sum && chk_is_bool(&x)))) {
        chk_err(ck, chk_start_of(a[0]), "%s needs a numeric tile%s, got %s", fn, sum ? " (or bool)" : "",
                chk_ty_str(ck, &x));
        return chk_ty_err();
    }
    if (x.rank == 0) {
        chk_err(ck, chk_start_of(a[0]), "%s scans a tile, got the scalar %s", fn, chk_ty_str(ck, &x));
        return chk_ty_err();
    }
    int64_t axis;
    if (chk_axis(ck, a[1], "a scan axis", &x, &axis))
        return chk_ty_err();
    uint32_t flags = user ? 6 : 2;
    if (user && e->nargs < 6) {
        chk_err(ck, &e->loc, "scan takes 6 to 8 arguments, got %u: scan(x, axis, init, a, b, combine)", e->nargs);
        return chk_ty_err();
    }
    for (uint32_t i = flags; i < e->nargs; i++)
        if (scan_flag(ck, a[i], fn, i == flags ? "exclusive" : "reverse"))
            return chk_ty_err();
    x.weak = false;
    if (sum && chk_is_bool(&x))
        x.dtype = TILEC_DT_I32;
    if (user) {
        tilec_type init = chk_expr(ck, a[2]);
        if (init.kind == TILEC_TY_ERROR)
            return init;
        if (init.kind != TILEC_TY_VALUE || init.rank || init.ptr || (!chk_is_num(&init) && !chk_is_bool(&init)) ||
            chk_is_bool(&init) != chk_is_bool(&x)) {
            chk_err(ck, chk_start_of(a[2]), "the init of scan is a scalar like the tile's elements (%s), got %s",
                    tilec_dtype_name(x.dtype), chk_ty_str(ck, &init));
            return chk_ty_err();
        }
        if (chk_literal_fits(ck, a[2], x.dtype, "the init of scan"))
            return chk_ty_err();
        chk_adapt(ck, a[2], x.dtype); /* an init of 0.1 for an f64 scan is the double 0.1 */
        if (scan_combine(ck, a, &x))
            return chk_ty_err();
    }
    return x;
}
