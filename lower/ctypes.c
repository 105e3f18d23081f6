/* ctypes.c: C types of tile dtypes: how a dtype is stored, the type its
 * arithmetic happens in (f16/bf16 in float), conversions between them, and
 * float and infinity literals. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lower/lower_internal.h"
#include "util/fill.h"

/* C types: how a dtype is stored, and the type arithmetic happens in. */
const char *lower_ctype(tilec_dtype d)
{
    static const char *const names[] = {"bool", "signed char", "short", "int", "long long", "unsigned char",
                                        "unsigned short", "unsigned int", "unsigned long long", "__half",
                                        "__nv_bfloat16", "float", "double"};
    return (unsigned)d < TILEC_DT_COUNT ? names[d] : "int";
}

tilec_dtype lower_compute_dt(tilec_dtype d) { return d == TILEC_DT_F16 || d == TILEC_DT_BF16 ? TILEC_DT_F32 : d; }
const char *lower_cctype(tilec_dtype d) { return lower_ctype(lower_compute_dt(d)); }

/* Convert a C expression of compute type `from` to compute type `to`. */
const char *lower_conv(lw *L, const char *x, tilec_dtype from, tilec_dtype to)
{
    if (lower_compute_dt(from) == lower_compute_dt(to))
        return x;
    return lower_fmt(L, "((%s)(%s))", lower_cctype(to), x);
}

/* A stored element (e.g. arr[j], *p) as a compute-type C expression. */
const char *lower_ld_elem(lw *L, const char *x, tilec_dtype d)
{
    if (d == TILEC_DT_F16)
        return lower_fmt(L, "__half2float(%s)", x);
    if (d == TILEC_DT_BF16)
        return lower_fmt(L, "__bfloat162float(%s)", x);
    return x;
}

/* The length of "fn(" when x is exactly fn(...) for fn one of the
 * widenings of a stored f16/bf16 (its argument is then a stored value of
 * that dtype), else 0. */
static size_t widened_from(const char *x, tilec_dtype d)
{
    const char *fn = d == TILEC_DT_F16 ? "__half2float(" : d == TILEC_DT_BF16 ? "__bfloat162float(" : NULL;
    size_t n = fn ? strlen(fn) : 0, len = strlen(x);
    if (!fn || strncmp(x, fn, n) || x[len - 1] != ')')
        return 0;
    int depth = 1;
    for (size_t i = n; i < len; i++) {
        depth += x[i] == '(' ? 1 : x[i] == ')' ? -1 : 0;
        if (depth == 0)
            return i == len - 1 ? n : 0; /* the call's ')' must end x */
    }
    return 0;
}

/* A compute-type value converted for storing as dtype d. A value just
 * widened from d (a cast's rounding, lower_cast) is stored as it was. */
const char *lower_st_elem(lw *L, const char *x, tilec_dtype d)
{
    size_t w = widened_from(x, d);
    if (w)
        return lower_fmt(L, "%.*s", (int)(strlen(x) - w - 1), x + w);
    if (d == TILEC_DT_F16)
        return lower_fmt(L, "__float2half_rn(%s)", x);
    if (d == TILEC_DT_BF16)
        return lower_fmt(L, "__float2bfloat16_rn(%s)", x);
    return x;
}

/* x, the C result of arithmetic whose dtype is d, as a value of d: C
 * computes 8- and 16-bit integers in int, so `u + u` for u: u8 = 200 was
 * 400 (and compared as 400) instead of 144; they wrap as their type. */
const char *lower_wrap(lw *L, const char *x, tilec_dtype d)
{
    if (d == TILEC_DT_I8 || d == TILEC_DT_I16 || d == TILEC_DT_U8 || d == TILEC_DT_U16)
        return lower_fmt(L, "((%s)%s)", lower_ctype(d), x);
    return x;
}

/* cast(x, to) of a compute-type C expression x of dtype `from`: a value of
 * `to` whatever surrounds it. f16 and bf16 are computed in float, so a
 * conversion to them rounds through the stored type (to nearest even;
 * from f64 once, not through f32) and widens back: without it
 * cast(cast(x, bf16), f32) was x itself (issue 35 item 1). Conversions
 * between the other types are C conversions of the compute types. */
const char *lower_cast(lw *L, const char *x, tilec_dtype from, tilec_dtype to)
{
    if (from == to || (to != TILEC_DT_F16 && to != TILEC_DT_BF16))
        return lower_conv(L, x, from, to);
    if (from == TILEC_DT_F64)
        return lower_ld_elem(L, lower_fmt(L, "%s(%s)", to == TILEC_DT_F16 ? "__double2half" : "__double2bfloat16", x), to);
    return lower_round(L, lower_conv(L, x, from, TILEC_DT_F32), to);
}

/* x, a compute-type (float) value of dtype d, as a value of d: an f16 or
 * bf16 is rounded through its stored type and widened back (a value that
 * is one already, a cast's or a load's, is left as it is); other dtypes
 * are values of their type as computed. A scalar let, its re-assignments
 * and a virtual tile bound by a let hold values of their type so, as a
 * tile let stored in registers of the type does. */
const char *lower_round(lw *L, const char *x, tilec_dtype d)
{
    if (d != TILEC_DT_F16 && d != TILEC_DT_BF16)
        return x;
    return lower_ld_elem(L, lower_st_elem(L, x, d), d);
}

/* A value of type t held in registers or shared memory: its C type, its
 * size, and its elements read and written. A pointer tile (a re-assigned
 * one is materialized) holds `T *` elements, read and written as they are;
 * any other holds its dtype's storage, f16/bf16 converted to and from f32. */
const char *lower_vctype(lw *L, const tilec_type *t)
{
    return t->ptr ? lower_fmt(L, "%s *", lower_ctype(t->dtype)) : lower_ctype(t->dtype);
}

int64_t lower_vsize(const tilec_type *t) { return t->ptr ? 8 /* a device pointer */ : (int64_t)tilec_dtype_size(t->dtype); }

const char *lower_ld_val(lw *L, const char *x, const tilec_type *t) { return t->ptr ? x : lower_ld_elem(L, x, t->dtype); }

const char *lower_st_val(lw *L, const char *x, const tilec_type *t) { return t->ptr ? x : lower_st_elem(L, x, t->dtype); }

/* A float literal of dtype d (the checker gave an untyped literal the
 * dtype it meets): f64 spelt with 17 digits, which round-trip; f32, f16
 * and bf16 rounded once from the double to d and spelt as the float that
 * value is (9 digits round-trip a float); a value past d's range is d's
 * infinity, never an out-of-range C literal. */
const char *lower_float_lit(lw *L, double x, tilec_dtype d)
{
    char buf[64];
    int dbl = d == TILEC_DT_F64;
    double r = fill_round(dbl ? TILEC_DT_F64 : tilec_dtype_class(d) == 'f' ? d : TILEC_DT_F32, x);
    if (isinf(r))
        return r < 0 ? lower_fmt(L, "(-%s)", lower_inf_lit(L, d)) : lower_inf_lit(L, d);
    snprintf(buf, sizeof buf, dbl ? "%.17g" : "%.9g", r);
    if (!strpbrk(buf, ".e"))
        strcat(buf, ".0");
    return lower_fmt(L, "%s%s", buf, dbl ? "" : "f");
}

const char *lower_inf_lit(lw *L, tilec_dtype d)
{
    return d == TILEC_DT_F64 ? "__longlong_as_double(0x7ff0000000000000LL)" : lower_fmt(L, "__int_as_float(0x7f800000)");
}
