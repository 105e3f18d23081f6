/* iexpr.h: integer expressions, the one representation of sizes, grids
 * and compile-time constants, with the one evaluator every stage uses
 * (the checker's constants, the lowering's grids, the wrapper IR's sizes
 * and memory planning; the emitters print the same trees). A tree of
 * nodes; 64-bit arithmetic where overflow is an error, never a wrap.
 *
 * The rules (docs/language.md, "Integer arithmetic"):
 *   a / b, a % b   truncate toward zero, as C; b = 0 is an error, and
 *                  INT64_MIN / -1 overflows (INT64_MIN % -1 too)
 *   cdiv(a, b)     the ceiling of a / b, for any a and b > 0:
 *                  cdiv(7, 2) = 4, cdiv(-7, 2) = -3, cdiv(0, 2) = 0;
 *                  b <= 0 is an error; computed as a / b + (a % b > 0),
 *                  which cannot overflow
 *   a << b, a >> b need a >= 0 and 0 <= b <= 62, and no bit shifted out
 *   -a             overflows for INT64_MIN; ~a and !a never fail
 *   min(a, b), max(a, b)  the smaller, the larger; never fail */
#ifndef TILEC_IEXPR_H
#define TILEC_IEXPR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tilec_ix_op {
    TILEC_IX_INT, /* value */
    TILEC_IX_SYM, /* name: a size symbol, a scalar parameter, a hint */
    TILEC_IX_NEG, /* -a */
    TILEC_IX_NOT, /* ~a */
    TILEC_IX_LNOT, /* !a: 1 when a is 0, else 0 */
    TILEC_IX_ADD,
    TILEC_IX_SUB,
    TILEC_IX_MUL,
    TILEC_IX_DIV,
    TILEC_IX_MOD,
    TILEC_IX_CDIV,
    TILEC_IX_SHL,
    TILEC_IX_SHR,
    TILEC_IX_AND,
    TILEC_IX_OR,
    TILEC_IX_XOR,
    TILEC_IX_MIN, /* min(a, b): the smaller; never fails */
    TILEC_IX_MAX, /* max(a, b): the larger; never fails */
} tilec_ix_op;

typedef struct tilec_ix {
    tilec_ix_op op;
    int64_t value;                /* INT */
    const char *name;             /* SYM */
    const struct tilec_ix *a, *b; /* the operands (b: binary operators only) */
    const void *origin;           /* what it was made from (an AST node), for messages; may be NULL */
} tilec_ix;

/* Why an evaluation failed. */
typedef enum tilec_ix_err {
    TILEC_IX_OK = 0,
    TILEC_IX_OVERFLOW,     /* a result past 64 bits (or a shift that loses bits) */
    TILEC_IX_DIV_ZERO,     /* / or % by 0 */
    TILEC_IX_CDIV_DIVISOR, /* cdiv by b <= 0 */
    TILEC_IX_SHIFT,        /* a shift of a negative value, or by a count outside 0..62 */
    TILEC_IX_UNKNOWN,      /* a symbol the lookup does not know */
    TILEC_IX_BAD,          /* not a tree: an unknown op or a missing operand */
} tilec_ix_err;

/* "overflows 64 bits", "divides by zero", ...: how a message says it. */
const char *tilec_ix_err_string(tilec_ix_err e);

/* The one arithmetic rule: op (any but INT and SYM) on a (and b). */
tilec_ix_err tilec_ix_apply(tilec_ix_op op, int64_t a, int64_t b, int64_t *out);

/* The value of symbol node `sym`: 0 with *out set, nonzero when unknown. */
typedef int (*tilec_ix_lookup_fn)(void *user, const tilec_ix *sym, int64_t *out);

/* Evaluate e, left operand first; symbols through lookup (NULL: every
 * symbol is unknown). On failure *at (may be NULL) is the node that
 * failed: the innermost one. */
tilec_ix_err tilec_ix_eval(const tilec_ix *e, tilec_ix_lookup_fn lookup, void *user, int64_t *out,
                           const tilec_ix **at);

#ifdef __cplusplus
}
#endif
#endif
