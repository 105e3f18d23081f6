/* module.h: what a parsed module is (struct tilec_module): its arena, its
 * source text and its items, kernels, externs and graphs. Layers above the
 * parser include this header, not the parser's own parse.h. */
#ifndef TILEC_PARSER_MODULE_H
#define TILEC_PARSER_MODULE_H

#include "dsl/diag.h"
#include "tilec/tilec.h"
#include "util/arena.h"

struct tilec_module {
    arena ar;
    dsl_source src; /* name and text owned by the arena */
    ar_vec items;   /* tilec_item* in source order */
    ar_vec kernels, externs, graphs;
    ar_vec generics; /* the generic kernels as written (tilec_kernel*, parser/generic.c) */
    ar_vec consts; /* tilec_const* in source order (check_consts.c) */
};

#endif
