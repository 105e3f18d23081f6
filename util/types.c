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

static int float_rank(tilec_dtype d) { return d == TILEC_DT_F64 ? 3 : d == TILEC_DT_F32 ? 2 : 1; }

tilec_dtype tilec_promote(tilec_dtype a, int aweak, tilec_dtype b, int bweak)
{
    char ca = tilec_dtype_class(a), cb = tilec_dtype_class(b);
    if (!aweak != !bweak) {
        tilec_dtype w = aweak ? a : b, s = aweak ? b : a;
        return tilec_dtype_class(w) == 'f' && tilec_dtype_class(s) != 'f' ? TILEC_DT_F32 : s;
    }
    if (ca == 'f' && cb == 'f') {
        if (a == b)
            return a;
        if (float_rank(a) == float_rank(b))
            return TILEC_DT_F32; /* f16 with bf16 */
        return float_rank(a) > float_rank(b) ? a : b;
    }
    if (ca == 'f' || cb == 'f')
        return ca == 'f' ? a : b;
    unsigned sa = tilec_dtype_size(a), sb = tilec_dtype_size(b);
    if (sa != sb)
        return sa > sb ? a : b;
    return ca == 'u' ? a : b;
}

static const char *const op_spellings[] = {
#define X(e, s) s,
    TILEC_BINOPS(X) TILEC_UNOPS(X)
#undef X
};

const char *tilec_op_spelling(tilec_op op) { return (unsigned)op < TILEC_OP_COUNT ? op_spellings[op] : "?"; }
