/* fill.h: the bit pattern of a constant in a dtype: the value every element
 * of a tensor a graph fills (zeros, ones, full) starts with. */
#ifndef TILEC_UTIL_FILL_H
#define TILEC_UTIL_FILL_H

#include <stdint.h>

#include "tilec/types.h"

typedef enum {
    FILL_OK,
    FILL_NOT_INTEGER, /* a fraction or inf for an integer dtype */
    FILL_RANGE,       /* an integer outside the dtype */
    FILL_NOT_BOOL,    /* a number for bool */
    FILL_BOOL,        /* true/false for a number dtype */
    FILL_OVERFLOW,    /* a finite number that rounds to inf in the dtype */
} fill_status;

/* A constant: a bool, an integer or a double (inf allowed). */
typedef struct fill_value {
    enum { FILL_V_BOOL, FILL_V_INT, FILL_V_FLOAT } kind;
    int64_t i; /* BOOL: 0/1; INT: the magnitude, 0 .. 2^63 - 1 */
    int neg;   /* INT: negated */
    double f;  /* FLOAT */
} fill_value;

/* The little-endian bit pattern of v as one element of dt, in the low
 * tilec_dtype_size(dt) bytes of *bits (floats round to nearest even). */
fill_status fill_bits(tilec_dtype dt, const fill_value *v, uint64_t *bits);

/* x rounded once to the nearest value of the float dtype dt (to nearest
 * even; past the largest finite value, to infinity; f64 and the other
 * dtypes: x itself). f16 and bf16 values and f32 ones are doubles exactly,
 * so the kernel lowering spells a literal of dt by this value. */
double fill_round(tilec_dtype dt, double x);

/* The values of integer dtype dt that an int64_t holds: u64's stop at
 * INT64_MAX (a 64-bit unsigned value is checked into int64_t first). */
void fill_int_range(tilec_dtype dt, int64_t *lo, int64_t *hi);

#endif
