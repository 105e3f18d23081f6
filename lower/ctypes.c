/* ctypes.c: C types of tile dtypes: how a dtype is stored, the type its
 * arithmetic happens in (f16/bf16 in float), conversions between them, and
 * float and infinity literals. */
#include <stdio.h>
#include <string.h>

#include "lower/lower_internal.h"

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

/* A compute-type value converted for storing as dtype d. */
const char *lower_st_elem(lw *L, const char *x, tilec_dtype d)
{
    if (d == TILEC_DT_F16)
        return lower_fmt(L, "__float2half_rn(%s)", x);
    if (d == TILEC_DT_BF16)
        return lower_fmt(L, "__float2bfloat16_rn(%s)", x);
    return x;
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

const char *lower_float_lit(lw *L, double x, tilec_dtype d)
{
    char buf[64];
    snprintf(buf, sizeof buf, d == TILEC_DT_F64 ? "%.17g" : "%.9g", x);
    if (!strpbrk(buf, ".e"))
        strcat(buf, ".0");
    return lower_fmt(L, "%s%s", buf, d == TILEC_DT_F64 ? "" : "f");
}

const char *lower_inf_lit(lw *L, tilec_dtype d)
{
    return d == TILEC_DT_F64 ? "__longlong_as_double(0x7ff0000000000000LL)" : lower_fmt(L, "__int_as_float(0x7f800000)");
}
