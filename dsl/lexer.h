/* lexer.h: the re2c lexer: .tile text to tokens with file:line:col. */
#ifndef TILEC_DSL_LEXER_H
#define TILEC_DSL_LEXER_H

#include <stdint.h>

#include "dsl/diag.h"
#include "dsl/token.h"
#include "tilec/limits.h"
#include "util/arena.h"

enum { LEX_MAX_IDENT = TILEC_MAX_IDENT }; /* longest identifier, in bytes */

typedef struct lex_token {
    int kind; /* a LEX_* code of dsl/token.h (the parser's TK_* are equal), LEX_EOF, or LEX_ERROR (reported) */
    tilec_loc loc;
    const char *text; /* the spelling in the source (not NUL-terminated) */
    uint32_t len;
    int64_t ival;      /* INT; DTYPE: the tilec_dtype */
    double fval;       /* FLOAT */
    const char *str;   /* IDENT, STRING, DOC, FLOAT: NUL-terminated copy in the arena */
} lex_token;

typedef struct lexer {
    const dsl_source *src;
    tilec_ctx *ctx;
    arena *ar;
    const char *cur, *lim, *line_start;
    uint32_t line;
} lexer;

void lex_init(lexer *lx, const dsl_source *src, tilec_ctx *ctx, arena *ar);
/* The next token. After LEX_ERROR (already reported) or LEX_EOF, stop. */
lex_token lex_next(lexer *lx);
/* How a token kind reads in a message: "';'", "identifier", "end of file". */
const char *lex_kind_name(int kind);
/* How a particular token reads in a message: "identifier 'foo'", "';'". */
const char *lex_token_desc(arena *ar, const lex_token *t);

#endif
