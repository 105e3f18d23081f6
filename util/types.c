/* types.c: the tables behind include/tilec/types.h: each dtype's name,
 * byte size and class, and each operator's spelling. Below the parser, so
 * that every stage (checker, dump, lowering, emitters, runtime) reads one
 * table without calling up into the API. */
#include "tilec/types.h"

static const struct {
    const char *name;
    unsigned size;
    char cls;
} dtypes[] = {
#define X(e, s, n, c) {s, n, c},
    TILEC_DTYPES(X)
#undef X
};

const char *tilec_dtype_name(tilec_dtype t) { return (unsigned)t < TILEC_DT_COUNT ? dtypes[t].name : "?"; }
unsigned tilec_dtype_size(tilec_dtype t) { return (unsigned)t < TILEC_DT_COUNT ? dtypes[t].size : 0; }
char tilec_dtype_class(tilec_dtype t) { return (unsigned)t < TILEC_DT_COUNT ? dtypes[t].cls : '?'; }

static const char *const op_spellings[] = {
#define X(e, s) s,
    TILEC_BINOPS(X) TILEC_UNOPS(X)
#undef X
};

const char *tilec_op_spelling(tilec_op op) { return (unsigned)op < TILEC_OP_COUNT ? op_spellings[op] : "?"; }
