/* check_internal.h: what the checker's files (parser/check*.c) share: the
 * checker state, bindings and size symbols, and each file's entry points.
 * Private to parser/. */
#ifndef TILEC_PARSER_CHECK_INTERNAL_H
#define TILEC_PARSER_CHECK_INTERNAL_H

#include <stdint.h>

#include "parser/parse.h"
#include "parser/size_poly.h"
#include "tilec/limits.h"
#include "util/strbuf.h"

/* uthash reports running out of memory through the checker in scope */
#define uthash_nonfatal_oom(e) (ck->oom = 1)
#include "util/hashtable.h"

typedef enum { B_PARAM, B_HINT, B_LET, B_LOOP, B_TENSOR, B_SCALAR, B_LIST /* a graph's tensor list: a parameter or a let */ } bkind;

typedef struct binding {
    const char *name;
    bkind kind;
    tilec_type type;
    tilec_loc loc;
    int64_t value;   /* B_HINT */
    uint32_t depth;
    /* graphs */
    tilec_dtype dtype;
    uint32_t rank;
    const poly **dims;
    const char *text; /* "f32[R, C]" */
    int listed; /* B_LIST: a list of the graph's tensors (or part of one); B_TENSOR: a view of a list's tensor */
    const struct binding *const *elems; /* B_LIST bound to a list [a, b] of named tensors: its tensors (else NULL) */
    uint32_t nelems;
    UT_hash_handle hh;
} binding;

typedef struct seen_msg {
    char *key;
    UT_hash_handle hh;
} seen_msg;

typedef struct symbol {
    const char *name;
    const poly *value;
    const char *origin; /* "dimension 0 of 'x'" */
    tilec_loc loc;
    UT_hash_handle hh;
} symbol;

typedef struct item_name {
    const char *name;
    tilec_item_kind kind;
    void *node;
    tilec_loc loc;
    UT_hash_handle hh;
} item_name;

typedef struct checker {
    tilec_ctx *ctx;
    tilec_module *mod;
    arena *ar;      /* the module arena: annotations that outlive the check */
    arena scratch;  /* per kernel configuration / graph */
    item_name *items;
    /* current kernel configuration */
    const tilec_kernel *k;
    int variant; /* -1: base hints */
    int annotate;
    int host;    /* checking the grid: min(a, b) and max(a, b) of two scalars are the integers' */
    binding *env;
    binding **stack;
    size_t nstack, capstack;
    uint32_t depth;
    seen_msg *seen;
    int emitted; /* the last error was emitted (notes follow it) */
    /* current graph */
    symbol *syms;
    const poly ***rdims; /* the declared results' dimensions (NULL: in error) */
    int oom;
    /* a tune configuration being checked: its errors are captured as the
     * reason it is pruned, not reported (check_tune.c) */
    tilec_tune_cand *capture;
    strbuf captured;
} checker;

static inline int chk_stop(const checker *ck) { return ck->oom || diag_stopped(ck->ctx); }
/* A graph name whose let failed (already reported): later uses are silent. */
static inline int chk_poisoned(const binding *b)
{
    return b && b->kind == B_TENSOR && b->type.kind == TILEC_TY_ERROR;
}

/* Types of kernel values (check_types.c has the rest). */
static inline tilec_type chk_ty_err(void) { return (tilec_type){.kind = TILEC_TY_ERROR}; }
static inline tilec_type chk_ty_void(void) { return (tilec_type){.kind = TILEC_TY_VOID}; }
static inline tilec_type chk_ty_scalar(tilec_dtype dt) { return (tilec_type){.kind = TILEC_TY_VALUE, .dtype = dt}; }
static inline char chk_dclass(tilec_dtype dt) { return tilec_dtype_class(dt); }
static inline int chk_is_int(const tilec_type *t)
{
    return t->kind == TILEC_TY_VALUE && !t->ptr && (chk_dclass(t->dtype) == 's' || chk_dclass(t->dtype) == 'u');
}
static inline int chk_is_float(const tilec_type *t)
{
    return t->kind == TILEC_TY_VALUE && !t->ptr && chk_dclass(t->dtype) == 'f';
}
static inline int chk_is_bool(const tilec_type *t)
{
    return t->kind == TILEC_TY_VALUE && !t->ptr && t->dtype == TILEC_DT_BOOL;
}
static inline int chk_is_num(const tilec_type *t) { return chk_is_int(t) || chk_is_float(t); }

/* check_scope.c */
__attribute__((format(printf, 3, 4))) void chk_err(checker *ck, const tilec_loc *loc, const char *fmt, ...);
__attribute__((format(printf, 3, 4))) void chk_note(checker *ck, const tilec_loc *loc, const char *fmt, ...);
binding *chk_lookup(checker *ck, const char *name);
binding *chk_bind(checker *ck, const char *name, const tilec_loc *loc, bkind kind, const char *what);
void chk_leave_scope(checker *ck);
void chk_reset_env(checker *ck);

/* check_types.c */
const char *chk_ty_str(checker *ck, const tilec_type *t);
const char *chk_shp_str(checker *ck, const tilec_type *t);
int chk_bcast(const tilec_type *a, const tilec_type *b, tilec_type *out);
tilec_type chk_promote(const tilec_type *a, const tilec_type *b);
void chk_adapt(checker *ck, tilec_expr *e, tilec_dtype d);

/* check_const.c */
int chk_const_eval(checker *ck, const tilec_expr *e, const char *what, int64_t *out);
int chk_const_try(checker *ck, const tilec_expr *e, int64_t *out);
int chk_tile_dim(checker *ck, const tilec_expr *e, int64_t *out);
/* A note at the hint e names (when it names one): "hint 'AX' is set to v here". */
void chk_note_hint(checker *ck, const tilec_expr *e, int64_t v);
/* An axis of `shape` (a reduction's or a scan's; what names it in errors):
 * a compile-time integer from -rank to rank - 1, a negative one counted
 * from the end, into *out as 0 .. rank - 1; else reported, -1. */
int chk_axis(checker *ck, const tilec_expr *e, const char *what, const tilec_type *shape, int64_t *out);
int chk_tile_numel_ok(checker *ck, const tilec_loc *loc, const tilec_type *t);

/* check_expr.c */
int chk_known_int(checker *ck, const tilec_expr *e, int64_t *out);
/* A literal (optionally negated) where it becomes a value of dt: full's
 * value, a scan's init, a store's value, an operand beside a typed one. It
 * must be one dt holds: an integer in range, no fraction for an integer
 * type, no finite number that rounds to inf. 0 when it is (or e is no
 * literal); -1 after an error at the literal naming `what` (check_fill.c). */
int chk_literal_fits(checker *ck, const tilec_expr *e, tilec_dtype dt, const char *what);
/* The same for whichever of two operands is an untyped literal beside a
 * typed one, meeting at dt. */
int chk_literals_meet(checker *ck, const tilec_expr *ea, const tilec_type *ta, const tilec_expr *eb,
                      const tilec_type *tb, tilec_dtype dt, const char *what);
const tilec_loc *chk_start_of(const tilec_expr *e);
tilec_type chk_set(checker *ck, tilec_expr *e, tilec_type t);
tilec_type chk_expr(checker *ck, tilec_expr *e);

/* check_builtin.c */
tilec_type chk_call(checker *ck, tilec_expr *e);

/* check_stmt.c */
void chk_block(checker *ck, const tilec_block *b);

/* check_kernel.c */
void chk_kernel(checker *ck, tilec_kernel *k);

/* check_list.c: tensor lists [*T] (docs/language.md §4.3) */
const tilec_param *chk_first_list(const tilec_kernel *k);
const char *chk_list_text(checker *ck, tilec_dtype dt);
void chk_list_misuse(checker *ck, const tilec_expr *e, const binding *b);
tilec_type chk_list_index(checker *ck, tilec_expr *e, const binding *b);
tilec_type chk_list_len(checker *ck, tilec_expr *e);
tilec_type chk_list_numel(checker *ck, tilec_expr *e);
int chk_list_header(checker *ck, const tilec_kernel *k);
int chk_graph_let_list(checker *ck, tilec_stmt *s);
const binding *chk_list_item(checker *ck, const tilec_expr *a, int *is_item, const binding **elem);
const char *chk_spelled(checker *ck, const tilec_expr *a);
int chk_view_bytes(checker *ck, const tilec_loc *at, const char *what, tilec_dtype from, const poly *const *fdims,
    uint32_t frank, tilec_dtype dt, const poly *const *dims, uint32_t rank);
const binding *chk_list_graph_arg(checker *ck, const tilec_kernel *k, const tilec_expr *call, uint32_t i);
void chk_list_graph_misuse(checker *ck, const tilec_expr *a, const binding *b, const char *what, const char *want);
const char *chk_tyexpr_str(checker *ck, const tilec_tyexpr *t);

/* check_tune.c */
int chk_tune_header(checker *ck, tilec_kernel *k);
void chk_tune_mark_tile(checker *ck, const tilec_expr *e);
int chk_tune_tile_axes(checker *ck, tilec_kernel *k);
int chk_tune_configs(checker *ck, tilec_kernel *k);
int chk_tune_capture_begin(checker *ck, tilec_kernel *k, uint32_t c);
void chk_tune_capture_end(checker *ck);
void chk_tune_record(checker *ck, const char *err);
void chk_tune_note_tile(checker *ck, int64_t regs);
void chk_tune_note_dot(checker *ck, const tilec_type *a, const tilec_type *b);
void chk_tune_note_undefined(checker *ck, const char *name);

/* check_sizes.c */
int chk_size_limit_err(checker *ck, const tilec_loc *loc, const poly_why *why, const char *what);
const poly *chk_size_expr(checker *ck, const tilec_expr *e, const char *what);
/* Where the sizes decide it: is a - b (b may be NULL) a negative constant (*v)? (check_chunk.c) */
int chk_known_negative(checker *ck, const poly *a, const poly *b, int64_t *v);
const char *chk_tensor_text(checker *ck, tilec_dtype dt, const poly *const *dims, uint32_t rank);
binding *chk_bind_tensor(checker *ck, const char *name, const tilec_loc *loc, tilec_dtype dt, const poly **dims,
                         uint32_t rank);
const poly **chk_tensor_dims(checker *ck, const tilec_tyexpr *te, const char *what);
int chk_bind_dims(checker *ck, const tilec_param *p, const char *owner);
void chk_reset_graph(checker *ck);

/* check_call.c */
void chk_extern(checker *ck, tilec_extern *x);
binding *chk_tensor_arg(checker *ck, const tilec_expr *a, const char *what, const char *want);
/* check_fill.c: let t = empty|zeros|ones|full|*_like(...); 0 when the
 * statement is none of them */
int chk_graph_alloc(checker *ck, tilec_stmt *s);
/* check_coll.c: let t = all_reduce|all_gather|reduce_scatter|broadcast(...);
 * 0 when the statement is none of them. chk_graph_world binds the size
 * symbol world in a graph that calls one (before its parameters). */
int chk_graph_coll(checker *ck, tilec_stmt *s);
void chk_graph_world(checker *ck, const tilec_graph *g);
/* check_out.c: `out` parameters: none where `owner` ("kernel 'k'") takes
 * them; a graph's must be tensors it writes and does not return */
void chk_no_out(checker *ck, const tilec_param *p, uint32_t n, const char *owner);
void chk_graph_outs(checker *ck, const tilec_graph *g);
/* check_consts.c: the module's constants evaluated, then every use in
 * every item replaced by its value */
void chk_consts(checker *ck);
/* check_scan.c: cumsum, cumprod, cummax, cummin and scan (arity checked) */
tilec_type chk_scan(checker *ck, tilec_expr *e);
const poly ***chk_extern_call(checker *ck, const tilec_extern *x, const tilec_expr *call);
void chk_kernel_call(checker *ck, const tilec_kernel *k, const tilec_expr *call);
/* The instance of generic kernel g that a graph's call passes tensors
 * for (their dtypes bind its type parameters); the call then names it.
 * NULL after an error. */
const tilec_kernel *chk_pick_instance(checker *ck, const tilec_kernel *g, tilec_expr *call);

/* check_chunk.c: graph for loops and slices (x[a:b]). chk_graph_for_head
 * checks a loop's bounds and binds its variable in a new scope (1 when
 * good); chk_graph_for_end leaves it, remembering its names in *gone;
 * chk_graph_gone reports a let or loop that names one of them (1);
 * chk_graph_slice checks `let c = x[a:b];` (0 when s is no slice). */
typedef struct chk_gone chk_gone;
int chk_graph_for_head(checker *ck, tilec_stmt *s);
void chk_graph_for_end(checker *ck, chk_gone **gone);
int chk_graph_gone(checker *ck, chk_gone *gone, const tilec_stmt *s);
int chk_graph_slice(checker *ck, tilec_stmt *s);
void chk_graph_gone_free(chk_gone **gone);

/* check_graph.c */
void chk_graph(checker *ck, tilec_graph *g);

#endif
