/* iexpr.h: making integer expressions (tilec/iexpr.h) in an arena. */
#ifndef TILEC_UTIL_IEXPR_H
#define TILEC_UTIL_IEXPR_H

#include "tilec/iexpr.h"
#include "util/arena.h"

/* NULL when out of memory, or when an operand is NULL (so that a failed
 * operand fails the whole tree). */
tilec_ix *ix_int(arena *a, int64_t v);
tilec_ix *ix_sym(arena *a, const char *name);
tilec_ix *ix_new(arena *a, tilec_ix_op op, const tilec_ix *x, const tilec_ix *y);

#endif
