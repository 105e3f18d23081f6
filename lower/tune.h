/* tune.h: the tuning pass (lower/tune.c, docs/tuning.md): each tune
 * space's configurations lowered, pruned, ranked per shape class; the best
 * stay the kernel's variants. */
#ifndef TILEC_LOWER_TUNE_H
#define TILEC_LOWER_TUNE_H

#include "tilec/lower.h"
#include "util/arena.h"

enum {
    TILEC_TUNE_KEEP = 4,    /* candidates kept a class without `tune keep N` */
};

/* Tune every kernel of a checked module that has a tune space; the
 * reports and the kept variants go into m's arena `ar`. TILEC_ERR_INPUT
 * with a diagnostic at the tune space when no configuration lowers and
 * fits. */
tilec_status lower_tune_module(tilec_ctx *ctx, tilec_module *m, arena *ar);

#endif
