/* limits.h: the documented limits of the tilec front end. */
#ifndef TILEC_LIMITS_H
#define TILEC_LIMITS_H

#define TILEC_MAX_TILE_DIM 65536      /* largest tile dimension (a power of two) */
#define TILEC_MAX_TILE_ELEMS 1048576  /* most elements in one tile */
#define TILEC_MAX_TILE_REGS 256       /* most 32-bit registers one tile takes in each thread */
#define TILEC_MAX_STAGES 8            /* largest `stages` hint */
#define TILEC_MAX_TUNE_CONFIGS 512    /* most configurations of one tune space */
#define TILEC_MAX_TUNE_CLASSES 16     /* most shape classes of one tune space (tune ... for) */
#define TILEC_MAX_NESTING 1000        /* parser stack: nesting of (), {}, operators */
#define TILEC_MAX_TPARAMS 8          /* type parameters of one generic kernel */
#define TILEC_MAX_INSTANCES 64       /* instances of one generic kernel (combinations of dtypes) */
#define TILEC_MAX_IDENT 1024          /* longest identifier, in bytes */
#define TILEC_MAX_SOURCE (16u << 20)  /* largest .tile file, in bytes: the AST of degenerate
                                       * input takes up to ~170 bytes a source byte */
#define TILEC_MAX_SOURCE_TEXT "16 MiB"

/* Symbolic sizes of graphs (util/poly.c): each bounds the work of one
 * polynomial, so checking and lowering stay fast on any input. */
#define TILEC_MAX_POLY_TERMS 1024     /* terms of a size polynomial, and partial products of one multiplication */
#define TILEC_MAX_POLY_DEGREE 16      /* symbols (with repeats) in one term */
#define TILEC_MAX_POLY_TEXT 65536     /* bytes of a size as text (what wrappers print) */
#define TILEC_MAX_GRAPH_STMTS 262144  /* statements of one graph */
#define TILEC_MAX_UNROLL 256          /* statements one graph for loop of a constant count unrolls to (docs/wrapper-ir.md) */
#define TILEC_MAX_UNROLL_GRAPH 4096   /* statements all the unrolled loops of one graph add */

#endif
