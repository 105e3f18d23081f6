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
    float f = (float)d;
    if (dt == TILEC_DT_F32) {
        uint32_t x;
        memcpy(&x, &f, 4);
        *bits = x;
    } else {
        *bits = dt == TILEC_DT_F16 ? fill_f16(f) : fill_bf16(f);
    }
    return FILL_OK;
}
