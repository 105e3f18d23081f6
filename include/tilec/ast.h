/* ast.h: the checked syntax tree of a .tile module, read-only for users.
 * All nodes live in the module's arena and die with tilec_module_free(). */
#ifndef TILEC_AST_H
#define TILEC_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "tilec/core.h"
#include "tilec/iexpr.h"
#include "tilec/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The checked type of an expression. Tiles have rank >= 1; a scalar has
 * rank 0. A pointer value (scalar or tile of pointers) has ptr set and
 * dtype = the pointee. */
#define TILEC_MAX_RANK 4
typedef enum tilec_type_kind {
    TILEC_TY_ERROR = 0, /* unchecked, or an error was reported */
    TILEC_TY_VOID,      /* store(...) and other calls with no value */
    TILEC_TY_VALUE,     /* a scalar or tile value */
    TILEC_TY_DTYPE,     /* a dtype used as an argument: zeros(f32, ...) */
    TILEC_TY_TENSOR,    /* graph tensors (shape in the graph's symbols) */
} tilec_type_kind;

typedef struct tilec_type {
    tilec_type_kind kind;
    tilec_dtype dtype;
    bool ptr;
    bool weak; /* an untyped literal that adapts to the other operand */
    bool list; /* with ptr: a tensor list parameter [*T] (docs/language.md
                * §4.3); only p[i], len(p) and numel(p, i) take one */
    uint8_t rank;
    int64_t dims[TILEC_MAX_RANK];
} tilec_type;

typedef enum tilec_expr_kind {
    TILEC_EX_INT,    /* ival */
    TILEC_EX_FLOAT,  /* fval; text keeps the spelling */
    TILEC_EX_BOOL,   /* ival 0/1 */
    TILEC_EX_INF,    /* the literal inf */
    TILEC_EX_NAME,   /* name */
    TILEC_EX_DTYPE,  /* dtype */
    TILEC_EX_UNARY,  /* op args[0] */
    TILEC_EX_BINARY, /* args[0] op args[1] */
    TILEC_EX_CALL,   /* name(args...) */
    TILEC_EX_INDEX,  /* args[0][args[1], ...]; also T[dims] in graphs */
    TILEC_EX_LIST,   /* [args...] */
    TILEC_EX_SLICE,  /* ':' inside an index (no args), or lo:hi:step: args
                      * [lo, hi, step], ival bit i set when part i was
                      * written (else lo 0, hi the axis' end, step 1) */
    TILEC_EX_NONE,   /* None inside an index */
} tilec_expr_kind;

typedef struct tilec_expr {
    tilec_expr_kind kind;
    tilec_loc loc;
    tilec_op op;
    int64_t ival;
    double fval;
    tilec_dtype dtype;
    const char *name; /* NAME, CALL: the name; FLOAT: the literal's text */
    int builtin;      /* CALL in a kernel: the builtin it calls (parser/builtins.h), set
                       * once by the checker; 0 (BI_NONE) otherwise */
    struct tilec_expr **args;
    uint32_t nargs;
    uint32_t depth;  /* 1 + the deepest argument's depth */
    tilec_type type; /* set by the checker (kernels: the base hints) */
    tilec_type *vtypes; /* kernels with variants: the type under each
                         * variant's hints (index = variant), else NULL */ /* set by the checker (kernels: the base hints) */
} tilec_expr;

/* A written type: *T, T, T[dims], or [*T] (a tensor list, kernels only) */
typedef enum tilec_tyexpr_kind { TILEC_TE_SCALAR, TILEC_TE_POINTER, TILEC_TE_TENSOR, TILEC_TE_LIST } tilec_tyexpr_kind;
typedef struct tilec_tyexpr {
    tilec_tyexpr_kind kind;
    tilec_dtype dtype;
    tilec_loc loc;
    tilec_expr **dims; /* TENSOR only */
    uint32_t ndims;
    /* `*T` or `T` with T a type parameter of a generic kernel (§4.2): its
     * name; in an instance dtype is the one bound to it. NULL otherwise. */
    const char *tparam;
} tilec_tyexpr;

typedef struct tilec_param {
    const char *name; /* NULL for an unnamed result */
    tilec_loc loc;
    tilec_tyexpr type;
    bool out;         /* `out y: f32[N]`: a graph's caller-provided output */
    tilec_loc out_loc;
} tilec_param;

typedef enum tilec_stmt_kind {
    TILEC_ST_LET,       /* let names[0] = value */
    TILEC_ST_LET_TUPLE, /* let (names...) = value */
    TILEC_ST_ASSIGN,    /* names[0] = value */
    TILEC_ST_EXPR,      /* value; */
    TILEC_ST_FOR,       /* for names[0] in lo .. hi step step { body } */
    TILEC_ST_IF,        /* if value { body } else { orelse } */
    TILEC_ST_RETURN,    /* return values...; */
    TILEC_ST_DOC,       /* /// text */
} tilec_stmt_kind;

typedef struct tilec_block {
    struct tilec_stmt **stmts;
    uint32_t nstmts;
} tilec_block;

typedef struct tilec_stmt {
    tilec_stmt_kind kind;
    tilec_loc loc;
    const char **names;
    tilec_loc *name_locs;
    uint32_t nnames;
    tilec_expr *value;
    tilec_expr *lo, *hi, *step; /* FOR; step NULL means 1 */
    tilec_expr **values;        /* RETURN */
    uint32_t nvalues;
    tilec_block body, orelse;
    bool has_else;
    const char *text; /* DOC */
    const char **types; /* graphs: the checked type of each bound name, as
                         * text ("f32[R, C]"), set by the checker */
    struct tilec_tyexpr *ann; /* LET: the written type of `let x: T = e` (an element
                               * type T, *T, or T[d, ...]), else NULL */
} tilec_stmt;

typedef struct tilec_hint {
    const char *name;
    tilec_loc loc;
    tilec_expr *expr;
    int64_t value; /* set by the checker */
} tilec_hint;

/* One variant: an override set of `variants { { ... }, ... }`, numbered
 * 0.. in order (the number the runtime reports), or a kept configuration
 * of a tune space. */
typedef struct tilec_variant {
    uint32_t cand; /* tune kernels: the candidate of the space it is */
    tilec_loc loc; /* its '{' (the old spelling: its key) */
    tilec_hint *overrides;
    uint32_t noverrides;
    int64_t *values; /* set by the checker: every hint of the kernel under
                      * this variant, in hint order (later hints are
                      * re-derived from overridden earlier ones) */
} tilec_variant;

/* A type parameter of a generic kernel, `T: f16 | bf16 | f32` (§4.2). */
typedef struct tilec_tparam {
    const char *name;
    tilec_loc loc;
    tilec_dtype *dtypes; /* the allowed element types, as written */
    uint32_t ndtypes;
} tilec_tparam;

/* One axis of a kernel's `tune { NAME = a | b | c, NAME = lo .. hi }`
 * (docs/language.md, docs/tuning.md). */
typedef struct tilec_tune_axis {
    const char *name;
    tilec_loc loc;
    int64_t *values;      /* as written; a range's {lo, hi} until checked */
    tilec_loc *value_locs;
    uint32_t nvalues;
    bool range;           /* lo .. hi, half-open; the checker expands it */
    bool tile_dim;        /* set by the checker: the axis is a tile size */
} tilec_tune_axis;

/* One configuration of a tune space (the product of its axes), set by
 * the checker and the tuning pass (lower/tune.c). */
typedef struct tilec_tune_cand {
    int64_t *values;      /* one per axis */
    const char *why;      /* NULL: a candidate; else why it was pruned */
    int64_t tile_regs;    /* the largest tile's registers in each thread */
    int64_t dot_m, dot_n, dot_k; /* the first dot's tile, 0 when none */
    tilec_dtype dot_dtype;
    int variant;          /* its variant once kept, else -1 */
    double est[16];       /* the cost model's time per shape class (ms) */
    uint32_t rank[16];    /* its rank in each class, 1 the best, 0 unranked */
} tilec_tune_cand;

typedef struct tilec_kernel {
    const char *name;
    tilec_loc loc;
    const char *doc; /* /// lines before the kernel, joined by '\n', or NULL */
    tilec_param *params;
    uint32_t nparams;
    tilec_expr **grid;
    uint32_t ngrid;
    tilec_hint *hints;
    uint32_t nhints;
    bool has_variants;  /* `variants { ... }` written (tune fills variants too) */
    bool variants_keyed; /* written in the old keyed spelling `variants SYM
                          * { size: { ... } }`, which the checker rejects */
    tilec_loc variant_loc; /* the word `variants` */
    tilec_variant *variants;
    uint32_t nvariants;
    tilec_block body;
    /* the grid as integer expressions (tilec/iexpr.h), made by the checker:
     * what tilec_kernel_grid evaluates; an entry is NULL when its
     * expression is one the evaluator has no operator for (a comparison).
     * Last, so that the fields before it keep their offsets. */
    const tilec_ix **gridx;
    /* Generic kernels (§4.2). The kernel as written, `kernel k<T: f16 |
     * f32>(...)`, has tparams and, after the checker expanded it, its
     * instances (one kernel per combination of dtypes, named k__f16 ...);
     * it is no item of the module (tilec_module_find_generic finds it).
     * An instance has tparams too (the same), generic (the name written)
     * and targs (the dtype bound to each type parameter). */
    tilec_tparam *tparams;
    uint32_t ntparams;
    struct tilec_kernel **instances;
    uint32_t ninstances;
    const char *generic;
    tilec_dtype *targs;
    /* tune (docs/tuning.md): the axes (NULL without), where it is written
     * (the kernel's own location for the default space of a dot kernel),
     * how many candidates to keep per shape class; the checker puts the
     * axes first among the hints (ntune_hints of them, the first value of
     * each) and every configuration in tune_cands; the tuning pass keeps
     * the best as variants and writes tune_report (`--emit tune`). */
    tilec_tune_axis *tune;
    uint32_t ntune;
    tilec_tune_axis *tune_for; /* tune ... for { M = 16 | 4096, ... }: the
                                * shape classes, by integer parameter */
    uint32_t ntune_for;
    tilec_loc tune_loc;
    uint32_t tune_keep;
    bool tune_default;
    uint32_t ntune_hints;
    tilec_tune_cand *tune_cands;
    uint32_t ntune_cands;
    const char *tune_report;
} tilec_kernel;

typedef struct tilec_extern {
    const char *name;
    tilec_loc loc;
    const char *doc;
    tilec_param *params;
    uint32_t nparams;
    tilec_param *results; /* names may be NULL */
    uint32_t nresults;
    const char *symbol;
    tilec_loc symbol_loc;
} tilec_extern;

typedef struct tilec_graph {
    const char *name;
    tilec_loc loc;
    const char *doc;
    tilec_param *params;
    uint32_t nparams;
    tilec_param *results;
    uint32_t nresults;
    tilec_block body;
} tilec_graph;

/* const NAME = value; a module-level integer constant. The checker
 * replaces every use by its value (an integer literal node). */
typedef struct tilec_const {
    const char *name;
    tilec_loc loc;
    tilec_expr *expr;
    int64_t value; /* set by the checker */
} tilec_const;

typedef enum tilec_item_kind { TILEC_ITEM_KERNEL, TILEC_ITEM_EXTERN, TILEC_ITEM_GRAPH } tilec_item_kind;
typedef struct tilec_item {
    tilec_item_kind kind;
    union {
        tilec_kernel *kernel;
        tilec_extern *ext;
        tilec_graph *graph;
    } u;
} tilec_item;

typedef struct tilec_module tilec_module;

#ifdef __cplusplus
}
#endif
#endif
