/* types.h: the element types (dtypes) and operators of the tile
 * language, with their names, sizes and spellings. The small core below
 * the parser: the lexer, checker, lowering, emitters and runtime all read
 * these tables (util/types.c). */
#ifndef TILEC_TYPES_H
#define TILEC_TYPES_H

#ifdef __cplusplus
extern "C" {
#endif

/* The most size variants one kernel may list: the checker refuses more,
 * and the runtime's multi-kernel times at most this many per shape. */
#define TILEC_MAX_VARIANTS 64

/* Element types. X(ENUM, spelling, bytes, class) with class
 * 'b' bool, 's' signed int, 'u' unsigned int, 'f' float. ORDER DTYPE:
 * the lexer's keyword table and promotion rules index by this order. */
#define TILEC_DTYPES(X)          \
    X(BOOL, "bool", 1, 'b')      \
    X(I8, "i8", 1, 's')          \
    X(I16, "i16", 2, 's')        \
    X(I32, "i32", 4, 's')        \
    X(I64, "i64", 8, 's')        \
    X(U8, "u8", 1, 'u')          \
    X(U16, "u16", 2, 'u')        \
    X(U32, "u32", 4, 'u')        \
    X(U64, "u64", 8, 'u')        \
    X(F16, "f16", 2, 'f')        \
    X(BF16, "bf16", 2, 'f')      \
    X(F32, "f32", 4, 'f')        \
    X(F64, "f64", 8, 'f')

typedef enum tilec_dtype {
#define TILEC_X(e, s, n, c) TILEC_DT_##e,
    TILEC_DTYPES(TILEC_X)
#undef TILEC_X
    TILEC_DT_COUNT
} tilec_dtype;

const char *tilec_dtype_name(tilec_dtype t);
unsigned tilec_dtype_size(tilec_dtype t);
char tilec_dtype_class(tilec_dtype t); /* 'b', 's', 'u' or 'f' */
/* The dtype two numeric operands meet at (docs/language.md 7.1, 7.2): an
 * untyped (weak) operand adapts to a typed one; floats win over ints, the
 * wider float (f16 with bf16: f32), the larger int, unsigned at equal size.
 * The checker types arithmetic by it and the lowering compares by it. */
tilec_dtype tilec_promote(tilec_dtype a, int aweak, tilec_dtype b, int bweak);

/* Operators, lowest precedence first within binary (ORDER OP: the grammar's
 * precedence table follows the same order). X(ENUM, spelling) */
#define TILEC_BINOPS(X) \
    X(OROR, "||") X(ANDAND, "&&") X(OR, "|") X(XOR, "^") X(AND, "&") \
    X(EQ, "==") X(NE, "!=") X(LT, "<") X(LE, "<=") X(GT, ">") X(GE, ">=") \
    X(SHL, "<<") X(SHR, ">>") X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(MOD, "%")
#define TILEC_UNOPS(X) X(NEG, "-") X(NOT, "!") X(BITNOT, "~")

typedef enum tilec_op {
#define TILEC_X(e, s) TILEC_OP_##e,
    TILEC_BINOPS(TILEC_X) TILEC_UNOPS(TILEC_X)
#undef TILEC_X
    TILEC_OP_COUNT
} tilec_op;

const char *tilec_op_spelling(tilec_op op);

#ifdef __cplusplus
}
#endif

#endif
