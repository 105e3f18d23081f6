/* tune.h: what the tuning pass (lower/tune.c) needs of the checker's tune
 * spaces (parser/check_tune.c, docs/tuning.md). */
#ifndef TILEC_PARSER_TUNE_H
#define TILEC_PARSER_TUNE_H

#include "tilec/ast.h"

/* What a kernel is, by its body (docs/tuning.md "Default spaces"): a dot
 * kernel calls dot; a row kernel calls a reduction or a scan (sum, max,
 * min, prod, argmax, argmin, cumsum, scan) and has a one-dimensional grid
 * (over its rows); an elementwise kernel calls neither; OTHER: a reduction
 * under a grid of two or more axes. */
typedef enum tilec_tune_kind {
    TILEC_TUNE_OTHER,
    TILEC_TUNE_DOT,
    TILEC_TUNE_ROW,
    TILEC_TUNE_ELEMENTWISE,
} tilec_tune_kind;
tilec_tune_kind chk_tune_kind(const tilec_kernel *k);
/* Whether e calls `call` or names `name` anywhere (either may be NULL). */
int chk_tune_expr_uses(const tilec_expr *e, const char *call, const char *name);
/* Whether a builtin is a reduction or scan along an axis (a row kernel's
 * mark): sum, max, min, prod, argmax, argmin, cumsum, scan. */
int chk_tune_reduction(const char *call);
/* "a dot", "a row", "an elementwise", "an unclassified" (for messages). */
const char *chk_tune_kind_name(tilec_tune_kind kind);

/* Keep variants keep[0..n) of a tune kernel (ascending indices), in that
 * order: the variants and every per-variant type of its grid and body move
 * down, and each candidate's `variant` names its new index or -1. */
void chk_tune_keep_variants(tilec_kernel *k, const uint32_t *keep, uint32_t n);

#endif
