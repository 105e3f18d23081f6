/* fill.c: the bit pattern of a constant in a dtype (util/fill.h), for the
 * tensors graphs fill: integers checked against the dtype's range, floats
 * rounded to f16, bf16, f32 or f64 as a store would round them. */
#include <math.h>
#include <string.h>

#include "util/fill.h"

/* f32 bits to f16 bits, round to nearest even (inf and NaN kept) */
static uint64_t fill_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
    if (e == 0xff)
        return sign | 0x7c00u | (m ? 0x200u : 0);
    int32_t he = (int32_t)e - 127 + 15;
    if (he >= 31)
        return sign | 0x7c00u;
    if (he <= 0) { /* subnormal or zero */
        if (he < -10)
            return sign;
        m |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - he), h = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return sign | h;
    }
    uint32_t h = ((uint32_t)he << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* a carry into the exponent is right, up to inf */
    return sign | h;
}

static uint64_t fill_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (x >> 16) | 0x40u; /* a quiet NaN */
    return (x + 0x7fffu + ((x >> 16) & 1)) >> 16;
}

/* x to p significant bits, exponents down to emin (below: subnormal
 * steps), past maxf to infinity; a power-of-two scaling makes x / q exact */
static double round_bits(double x, int p, int emin, double maxf)
{
    if (!isfinite(x) || x == 0)
        return x;
    int e;
    frexp(x, &e); /* |x| = m * 2^e, 0.5 <= m < 1: the leading bit is 2^(e-1) */
    int lead = e - 1 < emin ? emin : e - 1;
    double q = ldexp(1.0, lead - (p - 1));
    double r = nearbyint(x / q) * q;
    return fabs(r) > maxf ? copysign(HUGE_VAL, x) : r;
}

double fill_round(tilec_dtype dt, double x)
{
    switch (dt) {
    case TILEC_DT_F16: return round_bits(x, 11, -14, 65504.0);
    case TILEC_DT_BF16: return round_bits(x, 8, -126, 0x1.fep127);
    case TILEC_DT_F32: return round_bits(x, 24, -126, 0x1.fffffep127);
    default: return x;
    }
}

void fill_int_range(tilec_dtype dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case TILEC_DT_I8: *lo = INT8_MIN, *hi = INT8_MAX; break;
    case TILEC_DT_I16: *lo = INT16_MIN, *hi = INT16_MAX; break;
    case TILEC_DT_I32: *lo = INT32_MIN, *hi = INT32_MAX; break;
    case TILEC_DT_U8: *lo = 0, *hi = UINT8_MAX; break;
    case TILEC_DT_U16: *lo = 0, *hi = UINT16_MAX; break;
    case TILEC_DT_U32: *lo = 0, *hi = UINT32_MAX; break;
    default: *lo = dt == TILEC_DT_I64 ? INT64_MIN : 0, *hi = INT64_MAX; break;
    }
}

static fill_status fill_int(tilec_dtype dt, const fill_value *v, uint64_t *bits)
{
    int64_t lo, hi;
    fill_int_range(dt, &lo, &hi);
    if (v->kind != FILL_V_INT)
        return FILL_NOT_INTEGER;
    int64_t x = v->neg ? -v->i : v->i; /* a literal is at most 2^63 - 1 */
    if (x < lo || x > hi)
        return FILL_RANGE;
    unsigned sz = tilec_dtype_size(dt);
    *bits = sz == 8 ? (uint64_t)x : (uint64_t)x & ((UINT64_C(1) << (8 * sz)) - 1);
    return FILL_OK;
}

fill_status fill_bits(tilec_dtype dt, const fill_value *v, uint64_t *bits)
{
    *bits = 0;
    char c = tilec_dtype_class(dt);
    if (c == 'b') {
        if (v->kind != FILL_V_BOOL)
            return FILL_NOT_BOOL;
        *bits = (uint64_t)v->i;
        return FILL_OK;
    }
    if (v->kind == FILL_V_BOOL)
        return FILL_BOOL;
    if (c != 'f')
        return fill_int(dt, v, bits);
    double d = v->kind == FILL_V_FLOAT ? v->f : v->neg ? -(double)v->i : (double)v->i;
    if (dt == TILEC_DT_F64) {
        memcpy(bits, &d, 8);
        return FILL_OK;
    }
    float f = (float)fill_round(dt, d); /* once from the double: exact in float */
    if (dt == TILEC_DT_F32) {
        uint32_t x;
        memcpy(&x, &f, 4);
        *bits = x;
    } else {
        *bits = dt == TILEC_DT_F16 ? fill_f16(f) : fill_bf16(f);
    }
    /* a finite value that becomes inf (rounded as a store rounds it) */
    uint64_t mag = dt == TILEC_DT_F32 ? *bits & 0x7fffffffu : *bits & 0x7fffu;
    uint64_t inf = dt == TILEC_DT_F32 ? 0x7f800000u : dt == TILEC_DT_F16 ? 0x7c00u : 0x7f80u;
    return isfinite(d) && mag == inf ? FILL_OVERFLOW : FILL_OK;
}
