/* parse.h: the parser stage (internal): Lemon grammar actions, and the
 * entry points prs_parse(), chk_module() and dump_module(). The module
 * they build is described by parser/module.h, which other layers include. */
#ifndef TILEC_PARSER_PARSE_H
#define TILEC_PARSER_PARSE_H

#include "dsl/diag.h"
#include "dsl/lexer.h"
#include "parser/module.h"
#include "tilec/tilec.h"
#include "util/arena.h"
#include "util/strbuf.h"

enum { PRS_MAX_NESTING = TILEC_MAX_NESTING }; /* Lemon stack entries: bounds nesting depth */

typedef struct prs_variants {
    tilec_loc loc; /* the word `variants` */
    bool keyed;    /* the old spelling `variants SYM { size: { ... } }` */
    ar_vec *list;
} prs_variants;

typedef struct prs_tune {
    tilec_loc loc;
    int64_t keep; /* 0: not written */
    tilec_loc keep_loc;
    ar_vec *axes;
    ar_vec *classes; /* tune ... for { ... }, or NULL */
} prs_tune;

typedef struct prs_state {
    tilec_ctx *ctx;
    tilec_module *mod;
    arena *ar;
    int failed;          /* a syntax error (or out of memory) was reported */
    int overflow;        /* the Lemon stack overflowed: nesting too deep */
    const char *doc;     /* pending /// lines before the next item */
} prs_state;

/* Parse src into mod's items; 0 on success. Reports syntax errors. */
int prs_parse(tilec_ctx *ctx, tilec_module *mod);
/* Check names, types and shapes of every item; 0 when there are no errors. */
int chk_module(tilec_ctx *ctx, tilec_module *mod);
/* Replace each generic kernel among mod's items by its instances
 * (parser/generic.c); 0 when its header is well formed. */
int gen_expand(tilec_ctx *ctx, tilec_module *mod);
/* "f16 | bf16 | f32": the dtypes a type parameter allows */
const char *gen_dtype_set(arena *ar, const tilec_tparam *t);
/* "T = bf16": what an instance binds (NULL for a kernel that is none) */
const char *gen_instance_text(arena *ar, const tilec_kernel *k);
/* The AST dump of `tilec --emit ast`. */
tilec_status dump_module(const tilec_module *m, tilec_sink sink);
/* e as a user writes it: operators with the parentheses precedence needs
 * (`a + r[:, None] * lda`), for remarks that quote the source. */
void dump_expr_text(strbuf *b, const tilec_expr *e);

/* Grammar actions (build.c): each allocates in the module arena and
 * returns NULL after running out of memory (ps->failed is then set). */
ar_vec *prs_list(prs_state *ps);
ar_vec *prs_push(prs_state *ps, ar_vec *list, void *item);
void prs_syntax_error(prs_state *ps, const lex_token *tok, const int *expected, int nexpected);
void prs_stack_overflow(prs_state *ps, const lex_token *tok);
void prs_doc_item(prs_state *ps, const lex_token *doc);
void prs_add_item(prs_state *ps, tilec_item_kind kind, void *node);
/* const NAME = expr; */
void prs_const_kw(prs_state *ps, const lex_token *kw); /* any word but const is an error */
void prs_const(prs_state *ps, const lex_token *name, tilec_expr *value);
tilec_kernel *prs_kernel(prs_state *ps, const lex_token *kw, const lex_token *name, ar_vec *params,
                         ar_vec *grid, ar_vec *hints, prs_tune *tune, prs_variants *variants, ar_vec *body);
/* kernel k<T: f16 | f32, ...>: k with its type parameters (tilec_tparam*) */
tilec_kernel *prs_generic(prs_state *ps, tilec_kernel *k, ar_vec *tparams);
tilec_tparam *prs_tparam(prs_state *ps, const lex_token *name, ar_vec *dtypes);
/* `T` or `*T` where T names a type parameter */
tilec_tyexpr *prs_type_param(prs_state *ps, tilec_tyexpr_kind kind, const lex_token *at, const lex_token *name);
tilec_extern *prs_extern(prs_state *ps, const lex_token *kw, const lex_token *name, ar_vec *params,
                         ar_vec *results, const lex_token *symbol);
tilec_graph *prs_graph(prs_state *ps, const lex_token *kw, const lex_token *name, ar_vec *params,
                       ar_vec *results, ar_vec *body);
tilec_param *prs_param(prs_state *ps, const lex_token *name, tilec_tyexpr *type);
/* out NAME: T, a graph's caller-provided output; any word but out is an error */
tilec_param *prs_param_out(prs_state *ps, const lex_token *qual, const lex_token *name, tilec_tyexpr *type);
tilec_tyexpr *prs_type(prs_state *ps, tilec_tyexpr_kind kind, const lex_token *at, const lex_token *dtype,
                       ar_vec *dims);
tilec_hint *prs_hint(prs_state *ps, const lex_token *name, tilec_expr *value);
prs_variants *prs_variants_new(prs_state *ps, const lex_token *kw, bool keyed, ar_vec *list);
tilec_variant *prs_variant(prs_state *ps, const lex_token *at, ar_vec *overrides);
/* tune [keep N] [for { classes }] { axes }: `word` must be keep */
prs_tune *prs_tune_new(prs_state *ps, const lex_token *kw, const lex_token *word, const lex_token *n, ar_vec *classes,
                       ar_vec *axes);
/* NAME = a | b | c (values: integer literals), or NAME = lo .. hi (range) */
tilec_tune_axis *prs_tune_axis(prs_state *ps, const lex_token *name, ar_vec *values, bool range);
tilec_stmt *prs_let(prs_state *ps, const lex_token *kw, const lex_token *name, tilec_tyexpr *ann, tilec_expr *value);
tilec_stmt *prs_let_tuple(prs_state *ps, const lex_token *kw, ar_vec *names, tilec_expr *value);
tilec_stmt *prs_assign(prs_state *ps, const lex_token *name, tilec_expr *value);
tilec_stmt *prs_expr_stmt(prs_state *ps, tilec_expr *value);
tilec_stmt *prs_for(prs_state *ps, const lex_token *kw, const lex_token *var, tilec_expr *lo,
                    tilec_expr *hi, tilec_expr *step, ar_vec *body);
tilec_stmt *prs_if(prs_state *ps, const lex_token *kw, tilec_expr *cond, ar_vec *then, ar_vec *orelse);
tilec_stmt *prs_return(prs_state *ps, const lex_token *kw, ar_vec *values);
tilec_stmt *prs_doc_stmt(prs_state *ps, const lex_token *doc);
lex_token *prs_token(prs_state *ps, const lex_token *tok);
tilec_expr *prs_literal(prs_state *ps, tilec_expr_kind kind, const lex_token *tok);
tilec_expr *prs_unary(prs_state *ps, tilec_op op, const lex_token *optok, tilec_expr *a);
tilec_expr *prs_binary(prs_state *ps, tilec_op op, const lex_token *optok, tilec_expr *a, tilec_expr *b);
tilec_expr *prs_call(prs_state *ps, const lex_token *name, ar_vec *args);
tilec_expr *prs_index(prs_state *ps, const lex_token *bracket, tilec_expr *base, ar_vec *items);
tilec_expr *prs_slice(prs_state *ps, const lex_token *colon, tilec_expr *lo, tilec_expr *hi, tilec_expr *step);
tilec_expr *prs_list_expr(prs_state *ps, const lex_token *bracket, ar_vec *items);

#endif
