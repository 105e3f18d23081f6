/* twin_check.h: the one check of an sm_90a twin's metadata against its
 * kernel's parameter count, for both places that take a twin in:
 * bundle.c, reading a bundle (a damaged or forged file), and tma.c,
 * setting a variant's twin (from the lowering, a bundle or an
 * ahead-of-time table). Defined in bundle.c. */
#ifndef TILEC_RUNTIME_TWIN_CHECK_H
#define TILEC_RUNTIME_TWIN_CHECK_H

#include <stdint.h>

#include "tilec/tma.h"

/* Why twin t cannot serve a kernel of nparams parameters, or NULL: a
 * block size outside 1..TILEC_RT_MAX_BLOCK, more than TILEC_TMA_MAX_MAPS
 * maps, a persistence past 4, the K loop's bound (kper not 0) or a map's
 * word naming a parameter past nparams (rows may be TILEC_TMA_NONE, rows,
 * cols and stride a constant TILEC_TMA_CONST | c, a batch stride's words
 * TILEC_TMA_NONE), or a batched map whose batch is on a grid axis other
 * than 1 or 2 or whose stride's constant is 0, an im2col map that is
 * batched, of a kind past 2 or has no image count (rows TILEC_TMA_NONE),
 * one of kind 2 without the output's extents (fr, fs TILEC_TMA_NONE), or
 * a tiled map with im2col words that are not 0. */
const char *rt_twin_why(const tilec_tma_meta *t, uint32_t nparams);

#endif
