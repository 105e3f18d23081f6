/* token.h: the token kinds of the lexer, one list (DSL_TOKENS) for the
 * lexer's codes, their names in messages, and the parser's terminals: the
 * build writes this list, in this order, as the first %token line of the
 * Lemon grammar (Makefile), so Lemon numbers its terminals as LEX_* are
 * numbered here, and parser/parse.c checks every one at compile time.
 * ILLEGAL is never produced (the grammar's error terminal). Precedence
 * levels of the grammar follow this order: OROR to PERCENT are the binary
 * operators, lowest first (parser/build.c relies on that range). */
#ifndef TILEC_DSL_TOKEN_H
#define TILEC_DSL_TOKEN_H

/* X(NAME, how the kind reads in a message) */
#define DSL_TOKENS(X) \
    X(ILLEGAL, "token") \
    X(OROR, "'||'") \
    X(ANDAND, "'&&'") \
    X(PIPE, "'|'") \
    X(CARET, "'^'") \
    X(AMP, "'&'") \
    X(EQ, "'=='") \
    X(NE, "'!='") \
    X(LT, "'<'") \
    X(LE, "'<='") \
    X(GT, "'>'") \
    X(GE, "'>='") \
    X(SHL, "'<<'") \
    X(SHR, "'>>'") \
    X(PLUS, "'+'") \
    X(MINUS, "'-'") \
    X(STAR, "'*'") \
    X(SLASH, "'/'") \
    X(PERCENT, "'%'") \
    X(BANG, "'!'") \
    X(TILDE, "'~'") \
    X(DOC, "doc comment") \
    X(KERNEL, "'kernel'") \
    X(IDENT, "identifier") \
    X(LPAREN, "'('") \
    X(RPAREN, "')'") \
    X(COMMA, "','") \
    X(COLON, "':'") \
    X(DTYPE, "a type") \
    X(LBRACKET, "'['") \
    X(RBRACKET, "']'") \
    X(GRID, "'grid'") \
    X(HINTS, "'hints'") \
    X(LBRACE, "'{'") \
    X(RBRACE, "'}'") \
    X(ASSIGN, "'='") \
    X(VARIANTS, "'variants'") \
    X(INT, "integer") \
    X(LET, "'let'") \
    X(SEMI, "';'") \
    X(FOR, "'for'") \
    X(IN, "'in'") \
    X(DOTDOT, "'..'") \
    X(RETURN, "'return'") \
    X(IF, "'if'") \
    X(ELSE, "'else'") \
    X(STEP, "'step'") \
    X(EXTERN, "'extern'") \
    X(STRING, "string") \
    X(GRAPH, "'graph'") \
    X(ARROW, "'->'") \
    X(FLOAT, "float") \
    X(TRUE, "'true'") \
    X(FALSE, "'false'") \
    X(INF, "'inf'") \
    X(NONE, "'None'") \
    X(TUNE, "'tune'")

enum {
    LEX_ERROR = -1, /* reported already */
    LEX_EOF = 0,
#define DSL_TOKEN_ENUM(n, s) LEX_##n,
    DSL_TOKENS(DSL_TOKEN_ENUM)
#undef DSL_TOKEN_ENUM
    LEX_KIND_COUNT
};

#endif
