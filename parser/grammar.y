/* grammar.y: the .tile grammar for Lemon. Actions are one-line calls into
 * build.c. Every AST node lives in the module's arena, so no nonterminal
 * owns memory of its own: a syntax error abandons the parse and the arena
 * is freed in one call (that is why there is no %destructor here). */

%include {
#include <assert.h>
#include "parser/parse.h"
}

%name prs_lemon
%token_prefix TK_
%token_type {lex_token}
%extra_context {prs_state *ps}
%stack_size 1000

%syntax_error {
    int expected[YYNTOKEN];
    int n = 0;
    for (int i = 1; i < YYNTOKEN; i++)
        if (yy_find_shift_action((YYCODETYPE)i, yypParser->yytos->stateno) != YY_ERROR_ACTION)
            expected[n++] = i;
    prs_syntax_error(ps, &yyminor, expected, n);
    (void)yymajor;
}
%stack_overflow { prs_stack_overflow(ps, NULL); }
%parse_failure { ps->failed = 1; }

/* The terminals, in the order of dsl/token.h: the build replaces the next
 * line with "%token" and every name of DSL_TOKENS (Makefile), so that
 * Lemon numbers them as the lexer does (checked in parser/parse.c). */
%token ILLEGAL.

/* Precedence, lowest first (ORDER OP in include/tilec/ast.h). */
%left OROR.
%left ANDAND.
%left PIPE.
%left CARET.
%left AMP.
%left EQ NE.
%left LT LE GT GE.
%left SHL SHR.
%left PLUS MINUS.
%left STAR SLASH PERCENT.
%right BANG TILDE.

%start_symbol module

module ::= items.
items ::= .
items ::= items item.
item ::= DOC(D).                 { prs_doc_item(ps, &D); }
item ::= kernel(K).              { prs_add_item(ps, TILEC_ITEM_KERNEL, K); }
item ::= extern_decl(E).         { prs_add_item(ps, TILEC_ITEM_EXTERN, E); }
item ::= graph(G).               { prs_add_item(ps, TILEC_ITEM_GRAPH, G); }
item ::= const_kw IDENT(N) ASSIGN expr(E) SEMI. { prs_const(ps, &N, E); }
/* `const` is a word, not a keyword: any other word starting an item is
 * reported as soon as the next token shows it is no const */
const_kw ::= IDENT(K).           { prs_const_kw(ps, &K); }

/* ---- kernels ---- */
%type kernel {tilec_kernel *}
kernel(K) ::= KERNEL(T) IDENT(N) LPAREN params(P) RPAREN grid_opt(G) hints_opt(H) tune_opt(U) variants_opt(V) block(B).
                                 { K = prs_kernel(ps, &T, &N, P, G, H, U, V, B); }
/* a generic kernel (docs/language.md §4.2): kernel k<T: f16 | bf16 | f32>(x: *T, ...) */
kernel(K) ::= KERNEL(T) IDENT(N) LT tparams(A) GT LPAREN params(P) RPAREN grid_opt(G) hints_opt(H) tune_opt(U) variants_opt(V) block(B).
                                 { K = prs_generic(ps, prs_kernel(ps, &T, &N, P, G, H, U, V, B), A); }
%type tparams {ar_vec *}
tparams(L) ::= tparam(P).        { L = prs_push(ps, prs_list(ps), P); }
tparams(L) ::= tparams(A) COMMA tparam(P). { L = prs_push(ps, A, P); }
%type tparam {tilec_tparam *}
tparam(P) ::= IDENT(N) COLON dtype_set(D). { P = prs_tparam(ps, &N, D); }
%type dtype_set {ar_vec *}
dtype_set(L) ::= DTYPE(D).       { L = prs_push(ps, prs_list(ps), prs_token(ps, &D)); }
dtype_set(L) ::= dtype_set(A) PIPE DTYPE(D). { L = prs_push(ps, A, prs_token(ps, &D)); }

%type params {ar_vec *}
params(L) ::= .                  { L = prs_list(ps); }
params(L) ::= param_list(A).     { L = A; }
params(L) ::= param_list(A) COMMA. { L = A; }
%type param_list {ar_vec *}
param_list(L) ::= param(P).      { L = prs_push(ps, prs_list(ps), P); }
param_list(L) ::= param_list(A) COMMA param(P). { L = prs_push(ps, A, P); }
%type param {tilec_param *}
param(P) ::= IDENT(N) COLON type(T). { P = prs_param(ps, &N, T); }
param(P) ::= IDENT(Q) IDENT(N) COLON type(T). { P = prs_param_out(ps, &Q, &N, T); }

%type type {tilec_tyexpr *}
type(T) ::= DTYPE(D).            { T = prs_type(ps, TILEC_TE_SCALAR, &D, &D, NULL); }
type(T) ::= STAR(S) DTYPE(D).    { T = prs_type(ps, TILEC_TE_POINTER, &S, &D, NULL); }
type(T) ::= DTYPE(D) LBRACKET expr_list(L) RBRACKET. { T = prs_type(ps, TILEC_TE_TENSOR, &D, &D, L); }
type(T) ::= DTYPE(D) LBRACKET RBRACKET. { T = prs_type(ps, TILEC_TE_TENSOR, &D, &D, prs_list(ps)); }
/* a type parameter of a generic kernel (the checker refuses it elsewhere) */
type(T) ::= IDENT(N).            { T = prs_type_param(ps, TILEC_TE_SCALAR, &N, &N); }
type(T) ::= STAR(S) IDENT(N).    { T = prs_type_param(ps, TILEC_TE_POINTER, &S, &N); }
/* a tensor list (kernels only, docs/language.md §4.3) */
type(T) ::= LBRACKET(L) STAR DTYPE(D) RBRACKET. { T = prs_type(ps, TILEC_TE_LIST, &L, &D, NULL); }
type(T) ::= LBRACKET(L) STAR IDENT(N) RBRACKET. { T = prs_type_param(ps, TILEC_TE_LIST, &L, &N); }

%type grid_opt {ar_vec *}
grid_opt(G) ::= .                { G = NULL; }
grid_opt(G) ::= GRID LPAREN expr_list(L) RPAREN. { G = L; }

%type hints_opt {ar_vec *}
hints_opt(H) ::= .               { H = NULL; }
hints_opt(H) ::= HINTS LBRACE hint_list(L) RBRACE. { H = L; }
%type hint_list {ar_vec *}
hint_list(L) ::= .               { L = prs_list(ps); }
hint_list(L) ::= hint_items(A).  { L = A; }
hint_list(L) ::= hint_items(A) COMMA. { L = A; }
%type hint_items {ar_vec *}
hint_items(L) ::= hint(H).       { L = prs_push(ps, prs_list(ps), H); }
hint_items(L) ::= hint_items(A) COMMA hint(H). { L = prs_push(ps, A, H); }
%type hint {tilec_hint *}
hint(H) ::= IDENT(N) ASSIGN expr(E). { H = prs_hint(ps, &N, E); }

/* tune { NAME = a | b, NAME = lo .. hi }, or tune keep N { ... } */
%type tune_opt {prs_tune *}
tune_opt(U) ::= .                { U = NULL; }
tune_opt(U) ::= TUNE(T) LBRACE tune_list(L) RBRACE. { U = prs_tune_new(ps, &T, NULL, NULL, NULL, L); }
tune_opt(U) ::= TUNE(T) IDENT(W) INT(N) LBRACE tune_list(L) RBRACE. { U = prs_tune_new(ps, &T, &W, &N, NULL, L); }
tune_opt(U) ::= TUNE(T) FOR LBRACE tune_list(C) RBRACE LBRACE tune_list(L) RBRACE.
                                 { U = prs_tune_new(ps, &T, NULL, NULL, C, L); }
tune_opt(U) ::= TUNE(T) IDENT(W) INT(N) FOR LBRACE tune_list(C) RBRACE LBRACE tune_list(L) RBRACE.
                                 { U = prs_tune_new(ps, &T, &W, &N, C, L); }
%type tune_list {ar_vec *}
tune_list(L) ::= .               { L = prs_list(ps); }
tune_list(L) ::= tune_items(A).  { L = A; }
tune_list(L) ::= tune_items(A) COMMA. { L = A; }
%type tune_items {ar_vec *}
tune_items(L) ::= tune_axis(X).  { L = prs_push(ps, prs_list(ps), X); }
tune_items(L) ::= tune_items(A) COMMA tune_axis(X). { L = prs_push(ps, A, X); }
%type tune_axis {tilec_tune_axis *}
tune_axis(X) ::= IDENT(N) ASSIGN tune_alts(L). { X = prs_tune_axis(ps, &N, L, false); }
tune_axis(X) ::= IDENT(N) ASSIGN tune_val(A) DOTDOT tune_val(B).
                                 { X = prs_tune_axis(ps, &N, prs_push(ps, prs_push(ps, prs_list(ps), A), B), true); }
%type tune_alts {ar_vec *}
tune_alts(L) ::= tune_val(V).    { L = prs_push(ps, prs_list(ps), V); }
tune_alts(L) ::= tune_alts(A) PIPE tune_val(V). { L = prs_push(ps, A, V); }
%type tune_val {tilec_expr *}
tune_val(V) ::= INT(N).          { V = prs_literal(ps, TILEC_EX_INT, &N); }

/* variants { { NAME = v, ... }, {}, ... }: override sets, variant 0.. in
 * order. The old keyed spelling `variants SYM { size: { ... } }` parses so
 * that the checker can say how to rewrite it. */
%type variants_opt {prs_variants *}
variants_opt(V) ::= .            { V = NULL; }
variants_opt(V) ::= VARIANTS(T) LBRACE variant_list(L) RBRACE. { V = prs_variants_new(ps, &T, false, L); }
variants_opt(V) ::= VARIANTS(T) IDENT LBRACE keyed_list(L) RBRACE. { V = prs_variants_new(ps, &T, true, L); }
%type variant_list {ar_vec *}
variant_list(L) ::= .            { L = prs_list(ps); }
variant_list(L) ::= variant_items(A). { L = A; }
variant_list(L) ::= variant_items(A) COMMA. { L = A; }
%type variant_items {ar_vec *}
variant_items(L) ::= variant(V). { L = prs_push(ps, prs_list(ps), V); }
variant_items(L) ::= variant_items(A) COMMA variant(V). { L = prs_push(ps, A, V); }
%type variant {tilec_variant *}
variant(V) ::= LBRACE(B) hint_list(L) RBRACE. { V = prs_variant(ps, &B, L); }
%type keyed_list {ar_vec *}
keyed_list(L) ::= .              { L = prs_list(ps); }
keyed_list(L) ::= keyed_items(A). { L = A; }
keyed_list(L) ::= keyed_items(A) COMMA. { L = A; }
%type keyed_items {ar_vec *}
keyed_items(L) ::= keyed(V).     { L = prs_push(ps, prs_list(ps), V); }
keyed_items(L) ::= keyed_items(A) COMMA keyed(V). { L = prs_push(ps, A, V); }
%type keyed {tilec_variant *}
keyed(V) ::= INT(N) COLON LBRACE hint_list(L) RBRACE. { V = prs_variant(ps, &N, L); }

/* ---- statements ---- */
%type block {ar_vec *}
block(B) ::= LBRACE stmts(S) RBRACE. { B = S; }
%type stmts {ar_vec *}
stmts(S) ::= .                   { S = prs_list(ps); }
stmts(S) ::= stmts(A) stmt(X).   { S = prs_push(ps, A, X); }

/* a let's type: any type, or a tile of pointers with its shape (`*f16[BLOCK]`, as --emit ast prints it) */
%type let_type {tilec_tyexpr *}
let_type(T) ::= type(A).        { T = A; }
let_type(T) ::= STAR(S) DTYPE(D) LBRACKET expr_list(L) RBRACKET. { T = prs_type(ps, TILEC_TE_POINTER, &S, &D, L); }
let_type(T) ::= STAR(S) IDENT(N) LBRACKET expr_list(L) RBRACKET. {
    T = prs_type_param(ps, TILEC_TE_POINTER, &S, &N);
    if (T && L) {
        T->dims = (tilec_expr **)L->v;
        T->ndims = L->n;
    }
}
%type stmt {tilec_stmt *}
stmt(S) ::= LET(T) IDENT(N) ASSIGN expr(E) SEMI. { S = prs_let(ps, &T, &N, NULL, E); }
stmt(S) ::= LET(T) IDENT(N) COLON let_type(A) ASSIGN expr(E) SEMI. { S = prs_let(ps, &T, &N, A, E); }
stmt(S) ::= LET(T) LPAREN ident_list(L) RPAREN ASSIGN expr(E) SEMI. { S = prs_let_tuple(ps, &T, L, E); }
stmt(S) ::= IDENT(N) ASSIGN expr(E) SEMI. { S = prs_assign(ps, &N, E); }
stmt(S) ::= expr(E) SEMI.        { S = prs_expr_stmt(ps, E); }
stmt(S) ::= FOR(T) IDENT(N) IN expr(A) DOTDOT expr(B) step_opt(C) block(X). { S = prs_for(ps, &T, &N, A, B, C, X); }
stmt(S) ::= if_stmt(I).          { S = I; }
stmt(S) ::= RETURN(T) SEMI.      { S = prs_return(ps, &T, prs_list(ps)); }
stmt(S) ::= RETURN(T) expr_list(L) SEMI. { S = prs_return(ps, &T, L); }
stmt(S) ::= DOC(D).              { S = prs_doc_stmt(ps, &D); }

%type if_stmt {tilec_stmt *}
if_stmt(S) ::= IF(T) expr(C) block(B). { S = prs_if(ps, &T, C, B, NULL); }
if_stmt(S) ::= IF(T) expr(C) block(B) ELSE block(E). { S = prs_if(ps, &T, C, B, E); }
if_stmt(S) ::= IF(T) expr(C) block(B) ELSE if_stmt(E). { S = prs_if(ps, &T, C, B, prs_push(ps, prs_list(ps), E)); }

%type step_opt {tilec_expr *}
step_opt(C) ::= .                { C = NULL; }
step_opt(C) ::= STEP expr(E).    { C = E; }

%type ident_list {ar_vec *}
ident_list(L) ::= IDENT(N).      { L = prs_push(ps, prs_list(ps), prs_token(ps, &N)); }
ident_list(L) ::= ident_list(A) COMMA IDENT(N). { L = prs_push(ps, A, prs_token(ps, &N)); }

/* ---- externs and graphs ---- */
%type extern_decl {tilec_extern *}
extern_decl(E) ::= EXTERN(T) IDENT(N) LPAREN params(P) RPAREN results(R) ASSIGN STRING(S) SEMI.
                                 { E = prs_extern(ps, &T, &N, P, R, &S); }
%type graph {tilec_graph *}
graph(G) ::= GRAPH(T) IDENT(N) LPAREN params(P) RPAREN results(R) block(B).
                                 { G = prs_graph(ps, &T, &N, P, R, B); }

%type results {ar_vec *}
results(R) ::= .                 { R = prs_list(ps); }
results(R) ::= ARROW type(T).    { R = prs_push(ps, prs_list(ps), prs_param(ps, NULL, T)); }
results(R) ::= ARROW LPAREN result_list(L) RPAREN. { R = L; }
%type result_list {ar_vec *}
result_list(L) ::= result(X).    { L = prs_push(ps, prs_list(ps), X); }
result_list(L) ::= result_list(A) COMMA result(X). { L = prs_push(ps, A, X); }
%type result {tilec_param *}
result(X) ::= type(T).           { X = prs_param(ps, NULL, T); }
result(X) ::= IDENT(N) COLON type(T). { X = prs_param(ps, &N, T); }

/* ---- expressions ---- */
%type expr {tilec_expr *}
expr(E) ::= expr(A) OROR(O) expr(B).    { E = prs_binary(ps, TILEC_OP_OROR, &O, A, B); }
expr(E) ::= expr(A) ANDAND(O) expr(B).  { E = prs_binary(ps, TILEC_OP_ANDAND, &O, A, B); }
expr(E) ::= expr(A) PIPE(O) expr(B).    { E = prs_binary(ps, TILEC_OP_OR, &O, A, B); }
expr(E) ::= expr(A) CARET(O) expr(B).   { E = prs_binary(ps, TILEC_OP_XOR, &O, A, B); }
expr(E) ::= expr(A) AMP(O) expr(B).     { E = prs_binary(ps, TILEC_OP_AND, &O, A, B); }
expr(E) ::= expr(A) EQ(O) expr(B).      { E = prs_binary(ps, TILEC_OP_EQ, &O, A, B); }
expr(E) ::= expr(A) NE(O) expr(B).      { E = prs_binary(ps, TILEC_OP_NE, &O, A, B); }
expr(E) ::= expr(A) LT(O) expr(B).      { E = prs_binary(ps, TILEC_OP_LT, &O, A, B); }
expr(E) ::= expr(A) LE(O) expr(B).      { E = prs_binary(ps, TILEC_OP_LE, &O, A, B); }
expr(E) ::= expr(A) GT(O) expr(B).      { E = prs_binary(ps, TILEC_OP_GT, &O, A, B); }
expr(E) ::= expr(A) GE(O) expr(B).      { E = prs_binary(ps, TILEC_OP_GE, &O, A, B); }
expr(E) ::= expr(A) SHL(O) expr(B).     { E = prs_binary(ps, TILEC_OP_SHL, &O, A, B); }
expr(E) ::= expr(A) SHR(O) expr(B).     { E = prs_binary(ps, TILEC_OP_SHR, &O, A, B); }
expr(E) ::= expr(A) PLUS(O) expr(B).    { E = prs_binary(ps, TILEC_OP_ADD, &O, A, B); }
expr(E) ::= expr(A) MINUS(O) expr(B).   { E = prs_binary(ps, TILEC_OP_SUB, &O, A, B); }
expr(E) ::= expr(A) STAR(O) expr(B).    { E = prs_binary(ps, TILEC_OP_MUL, &O, A, B); }
expr(E) ::= expr(A) SLASH(O) expr(B).   { E = prs_binary(ps, TILEC_OP_DIV, &O, A, B); }
expr(E) ::= expr(A) PERCENT(O) expr(B). { E = prs_binary(ps, TILEC_OP_MOD, &O, A, B); }
expr(E) ::= MINUS(O) expr(A). [BANG]    { E = prs_unary(ps, TILEC_OP_NEG, &O, A); }
expr(E) ::= BANG(O) expr(A).            { E = prs_unary(ps, TILEC_OP_NOT, &O, A); }
expr(E) ::= TILDE(O) expr(A).           { E = prs_unary(ps, TILEC_OP_BITNOT, &O, A); }
expr(E) ::= postfix(P).                 { E = P; }

%type postfix {tilec_expr *}
postfix(E) ::= primary(P).              { E = P; }
postfix(E) ::= postfix(A) LBRACKET(L) index_list(I) RBRACKET. { E = prs_index(ps, &L, A, I); }
postfix(E) ::= IDENT(N) LPAREN RPAREN.  { E = prs_call(ps, &N, prs_list(ps)); }
postfix(E) ::= IDENT(N) LPAREN expr_list(L) RPAREN. { E = prs_call(ps, &N, L); }

%type primary {tilec_expr *}
primary(E) ::= INT(T).                  { E = prs_literal(ps, TILEC_EX_INT, &T); }
primary(E) ::= FLOAT(T).                { E = prs_literal(ps, TILEC_EX_FLOAT, &T); }
primary(E) ::= TRUE(T).                 { E = prs_literal(ps, TILEC_EX_BOOL, &T); }
primary(E) ::= FALSE(T).                { E = prs_literal(ps, TILEC_EX_BOOL, &T); }
primary(E) ::= INF(T).                  { E = prs_literal(ps, TILEC_EX_INF, &T); }
primary(E) ::= IDENT(T).                { E = prs_literal(ps, TILEC_EX_NAME, &T); }
primary(E) ::= DTYPE(T).                { E = prs_literal(ps, TILEC_EX_DTYPE, &T); }
primary(E) ::= LPAREN expr(A) RPAREN.   { E = A; }
primary(E) ::= LBRACKET(L) expr_list(A) RBRACKET. { E = prs_list_expr(ps, &L, A); }
primary(E) ::= LBRACKET(L) RBRACKET.    { E = prs_list_expr(ps, &L, prs_list(ps)); }

%type expr_list {ar_vec *}
expr_list(L) ::= expr(E).               { L = prs_push(ps, prs_list(ps), E); }
expr_list(L) ::= expr_list(A) COMMA expr(E). { L = prs_push(ps, A, E); }

%type index_list {ar_vec *}
index_list(L) ::= index(I).             { L = prs_push(ps, prs_list(ps), I); }
index_list(L) ::= index_list(A) COMMA index(I). { L = prs_push(ps, A, I); }
%type index {tilec_expr *}
index(E) ::= COLON(T).                  { E = prs_literal(ps, TILEC_EX_SLICE, &T); }
index(E) ::= expr(A) COLON(T) expr(B).  { E = prs_slice(ps, &T, A, B, NULL); }
index(E) ::= expr(A) COLON(T).          { E = prs_slice(ps, &T, A, NULL, NULL); }
index(E) ::= COLON(T) expr(B).          { E = prs_slice(ps, &T, NULL, B, NULL); }
index(E) ::= expr(A) COLON(T) expr(B) COLON expr(C). { E = prs_slice(ps, &T, A, B, C); }
index(E) ::= expr(A) COLON(T) COLON expr(C). { E = prs_slice(ps, &T, A, NULL, C); }
index(E) ::= COLON(T) expr(B) COLON expr(C). { E = prs_slice(ps, &T, NULL, B, C); }
index(E) ::= COLON(T) COLON expr(C).    { E = prs_slice(ps, &T, NULL, NULL, C); }
index(E) ::= NONE(T).                   { E = prs_literal(ps, TILEC_EX_NONE, &T); }
index(E) ::= expr(A).                   { E = A; }
