/* builtins.h: the built-in functions of kernels, one table the checker
 * (check_builtin.c) and the lowering (lower/) share. The checker resolves a
 * call's name once (tilec_builtin_find) and stores the value on the call
 * (tilec_expr.builtin); the lowering switches on that value and never
 * compares a call's name. A call the checker did not resolve (no builtin:
 * graphs call kernels and externs) keeps BI_NONE. */
#ifndef TILEC_PARSER_BUILTINS_H
#define TILEC_PARSER_BUILTINS_H

#include "tilec/ast.h"
#include "tilec/limits.h"

/* What a builtin does, for the passes that treat a family alike. */
typedef enum tilec_builtin_kind {
    BK_GRID,   /* pid, num_programs: the program's place in the grid */
    BK_MAKE,   /* range, zeros, full: a tile made from nothing */
    BK_MEMORY, /* load, store, atomic_add */
    BK_DOT,    /* dot */
    BK_REDUCE, /* sum, max, min, argmax, argmin, prod: one axis folded */
    BK_SCAN,   /* cumsum, cumprod, cummax, cummin, scan */
    BK_ELEM,   /* elementwise: maximum, minimum, where, cast, cdiv, fma */
    BK_MATH,   /* elementwise math of one operand: exp ... ceil */
    BK_SHAPE,  /* trans, reshape */
    BK_LIST,   /* len, numel of a tensor list */
} tilec_builtin_kind;

/* X(ENUM, name, fewest arguments, most arguments, kind) */
#define TILEC_BUILTINS(X)                                                                                             \
    X(PID, "pid", 1, 1, BK_GRID) X(NUM_PROGRAMS, "num_programs", 1, 1, BK_GRID) X(RANGE, "range", 1, 1, BK_MAKE)      \
    X(ZEROS, "zeros", 1, 1 + TILEC_MAX_RANK, BK_MAKE) X(FULL, "full", 2, 2 + TILEC_MAX_RANK, BK_MAKE)                 \
    X(LOAD, "load", 1, 3, BK_MEMORY) X(STORE, "store", 2, 3, BK_MEMORY) X(ATOMIC_ADD, "atomic_add", 2, 3, BK_MEMORY)   \
    X(DOT, "dot", 2, 2, BK_DOT) X(SUM, "sum", 2, 2, BK_REDUCE) X(MAX, "max", 2, 2, BK_REDUCE)                         \
    X(MIN, "min", 2, 2, BK_REDUCE) X(ARGMAX, "argmax", 2, 2, BK_REDUCE) X(ARGMIN, "argmin", 2, 2, BK_REDUCE)          \
    X(MAXIMUM, "maximum", 2, 2, BK_ELEM) X(MINIMUM, "minimum", 2, 2, BK_ELEM) X(WHERE, "where", 3, 3, BK_ELEM)        \
    X(EXP, "exp", 1, 1, BK_MATH) X(EXP2, "exp2", 1, 1, BK_MATH) X(LOG, "log", 1, 1, BK_MATH)                          \
    X(LOG2, "log2", 1, 1, BK_MATH) X(SQRT, "sqrt", 1, 1, BK_MATH) X(RSQRT, "rsqrt", 1, 1, BK_MATH)                    \
    X(SIN, "sin", 1, 1, BK_MATH) X(COS, "cos", 1, 1, BK_MATH) X(TANH, "tanh", 1, 1, BK_MATH)                          \
    X(SIGMOID, "sigmoid", 1, 1, BK_MATH) X(ERF, "erf", 1, 1, BK_MATH) X(ABS, "abs", 1, 1, BK_MATH)                    \
    X(FLOOR, "floor", 1, 1, BK_MATH) X(CEIL, "ceil", 1, 1, BK_MATH) X(FMA, "fma", 3, 3, BK_ELEM)                      \
    X(CAST, "cast", 2, 2, BK_ELEM) X(TRANS, "trans", 1, 1, BK_SHAPE) X(CDIV, "cdiv", 2, 2, BK_ELEM)                   \
    X(CUMSUM, "cumsum", 2, 4, BK_SCAN) X(CUMPROD, "cumprod", 2, 4, BK_SCAN) X(CUMMAX, "cummax", 2, 4, BK_SCAN)        \
    X(CUMMIN, "cummin", 2, 4, BK_SCAN) X(SCAN, "scan", 6, 8, BK_SCAN) X(PROD, "prod", 2, 2, BK_REDUCE)                \
    X(RESHAPE, "reshape", 2, 1 + TILEC_MAX_RANK, BK_SHAPE) X(LEN, "len", 1, 1, BK_LIST)                               \
    X(NUMEL, "numel", 2, 2, BK_LIST)

typedef enum tilec_builtin {
    BI_NONE, /* not a builtin (or not resolved) */
#define TILEC_BUILTIN_ENUM(e, s, lo, hi, kind) BI_##e,
    TILEC_BUILTINS(TILEC_BUILTIN_ENUM)
#undef TILEC_BUILTIN_ENUM
        BI_COUNT
} tilec_builtin;

typedef struct tilec_builtin_info {
    const char *name;
    int lo, hi; /* the fewest and most arguments */
    tilec_builtin_kind kind;
} tilec_builtin_info;

/* The builtin spelt name, or BI_NONE. */
tilec_builtin tilec_builtin_find(const char *name);
/* b's row of the table (b in (BI_NONE, BI_COUNT)). */
const tilec_builtin_info *tilec_builtin_get(tilec_builtin b);

/* Is e a call the checker resolved to builtin b? */
static inline int tilec_is_builtin(const tilec_expr *e, tilec_builtin b)
{
    return e->kind == TILEC_EX_CALL && e->builtin == (int)b;
}
/* Is e a call of a builtin of kind k? */
static inline int tilec_is_builtin_kind(const tilec_expr *e, tilec_builtin_kind k)
{
    return e->kind == TILEC_EX_CALL && e->builtin > BI_NONE && e->builtin < BI_COUNT &&
           tilec_builtin_get((tilec_builtin)e->builtin)->kind == k;
}

#endif
