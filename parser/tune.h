/* tune.h: what the tuning pass (lower/tune.c) needs of the checker's tune
 * spaces (parser/check_tune.c, docs/tuning.md). */
#ifndef TILEC_PARSER_TUNE_H
#define TILEC_PARSER_TUNE_H

#include "tilec/ast.h"

/* Keep variants keep[0..n) of a tune kernel (ascending indices), in that
 * order: the variants and every per-variant type of its grid and body move
 * down, and each candidate's `variant` names its new index or -1. */
void chk_tune_keep_variants(tilec_kernel *k, const uint32_t *keep, uint32_t n);

#endif
