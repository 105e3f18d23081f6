/* test_lexer.c: the re2c lexer on its own: tokens, values, locations, errors. */
#include <criterion/criterion.h>

#include "dsl/lexer.h"
#include "helpers.h"

typedef struct lexed {
    lex_token tok[64];
    int n;
    tilec_ctx *ctx;
    arena ar;
    dsl_source src;
} lexed;

static lexed *lex_all(const char *text, size_t len)
{
    lexed *L = calloc(1, sizeof *L);
    L->ctx = tilec_ctx_new();
    ar_init(&L->ar);
    L->src = (dsl_source){"t.tile", text, len};
    lexer lx;
    lex_init(&lx, &L->src, L->ctx, &L->ar);
    for (;;) {
        lex_token t = lex_next(&lx);
        if (L->n < 64)
            L->tok[L->n++] = t;
        if (t.kind == LEX_EOF || t.kind == LEX_ERROR)
            break;
    }
    return L;
}

static lexed *lex_str(const char *text) { return lex_all(text, strlen(text)); }

static void lexed_free(lexed *L)
{
    ar_free(&L->ar);
    tilec_ctx_free(L->ctx);
    free(L);
}

static const char *first_error(lexed *L)
{
    return tilec_ctx_diag_count(L->ctx) ? tilec_ctx_diag(L->ctx, 0)->message : "";
}

Test(lexer, punctuation_and_operators)
{
    lexed *L = lex_str("( ) { } [ ] , ; : -> .. = + - * / % < <= > >= == != && || & | ^ << >> ! ~");
    int want[] = {LEX_LPAREN, LEX_RPAREN, LEX_LBRACE, LEX_RBRACE, LEX_LBRACKET, LEX_RBRACKET, LEX_COMMA, LEX_SEMI,
                  LEX_COLON, LEX_ARROW, LEX_DOTDOT, LEX_ASSIGN, LEX_PLUS, LEX_MINUS, LEX_STAR, LEX_SLASH, LEX_PERCENT,
                  LEX_LT, LEX_LE, LEX_GT, LEX_GE, LEX_EQ, LEX_NE, LEX_ANDAND, LEX_OROR, LEX_AMP, LEX_PIPE, LEX_CARET,
                  LEX_SHL, LEX_SHR, LEX_BANG, LEX_TILDE, LEX_EOF};
    int n = (int)(sizeof want / sizeof want[0]);
    cr_assert_eq(L->n, n);
    for (int i = 0; i < n; i++)
        cr_expect_eq(L->tok[i].kind, want[i], "token %d: got %d want %d", i, L->tok[i].kind, want[i]);
    lexed_free(L);
}

Test(lexer, keywords_dtypes_identifiers)
{
    lexed *L = lex_str("kernel extern graph let for in step if else return grid hints variants true false inf None "
                       "kernelx _x1 f32 bf16 bool u64 f32x");
    int want[] = {LEX_KERNEL, LEX_EXTERN, LEX_GRAPH, LEX_LET, LEX_FOR, LEX_IN, LEX_STEP, LEX_IF, LEX_ELSE, LEX_RETURN,
                  LEX_GRID, LEX_HINTS, LEX_VARIANTS, LEX_TRUE, LEX_FALSE, LEX_INF, LEX_NONE, LEX_IDENT, LEX_IDENT,
                  LEX_DTYPE, LEX_DTYPE, LEX_DTYPE, LEX_DTYPE, LEX_IDENT, LEX_EOF};
    int n = (int)(sizeof want / sizeof want[0]);
    cr_assert_eq(L->n, n);
    for (int i = 0; i < n; i++)
        cr_expect_eq(L->tok[i].kind, want[i], "token %d", i);
    cr_expect_str_eq(L->tok[17].str, "kernelx");
    cr_expect_eq(L->tok[19].ival, TILEC_DT_F32);
    cr_expect_eq(L->tok[20].ival, TILEC_DT_BF16);
    cr_expect_eq(L->tok[21].ival, TILEC_DT_BOOL);
    cr_expect_eq(L->tok[22].ival, TILEC_DT_U64);
    cr_expect_str_eq(L->tok[23].str, "f32x");
    lexed_free(L);
}

Test(lexer, integer_literals)
{
    lexed *L = lex_str("0 42 0x1F 9223372036854775807 0..n");
    cr_assert_eq(L->tok[0].kind, LEX_INT);
    cr_expect_eq(L->tok[0].ival, 0);
    cr_expect_eq(L->tok[1].ival, 42);
    cr_expect_eq(L->tok[2].ival, 31);
    cr_expect_eq(L->tok[3].ival, INT64_MAX);
    cr_expect_eq(L->tok[4].kind, LEX_INT);
    cr_expect_eq(L->tok[5].kind, LEX_DOTDOT, "0..n is 0 .. n, not a float");
    cr_expect_eq(L->tok[6].kind, LEX_IDENT);
    lexed_free(L);
}

Test(lexer, integer_out_of_range)
{
    lexed *L = lex_str("let x = 9223372036854775808;");
    cr_assert_eq(L->tok[L->n - 1].kind, LEX_ERROR);
    cr_expect_str_eq(first_error(L),
                     "integer literal '9223372036854775808' is out of range (largest is 9223372036854775807)");
    cr_expect_eq(tilec_ctx_diag(L->ctx, 0)->col, 9);
    lexed_free(L);
    L = lex_str("0x10000000000000000");
    cr_expect_eq(L->tok[0].kind, LEX_ERROR);
    lexed_free(L);
}

Test(lexer, float_literals)
{
    lexed *L = lex_str("1.5 1e-5 2.5E+3 3e2");
    cr_assert_eq(L->tok[0].kind, LEX_FLOAT);
    cr_expect_eq(L->tok[0].fval, 1.5);
    cr_expect_eq(L->tok[1].fval, 1e-5);
    cr_expect_eq(L->tok[2].fval, 2500.0);
    cr_expect_eq(L->tok[3].fval, 300.0);
    cr_expect_str_eq(L->tok[1].str, "1e-5");
    lexed_free(L);
}

Test(lexer, float_out_of_range)
{
    lexed *L = lex_str("1e400");
    cr_expect_str_eq(first_error(L), "float literal '1e400' is out of range (largest is about 1.8e308)");
    lexed_free(L);
    L = lex_str("  1e-400");
    cr_expect_str_eq(first_error(L), "float literal '1e-400' underflows to zero");
    cr_expect_eq(tilec_ctx_diag(L->ctx, 0)->col, 3);
    lexed_free(L);
}

Test(lexer, invalid_numbers)
{
    lexed *L = lex_str("12abc");
    cr_expect_str_eq(first_error(L), "invalid number '12abc'");
    lexed_free(L);
    L = lex_str("1.5f");
    cr_expect_str_eq(first_error(L), "invalid number '1.5f'");
    lexed_free(L);
}

Test(lexer, locations_across_lines_and_comments)
{
    lexed *L = lex_str("a\n  b /* x\n y */ c\r\n// comment\n\td");
    cr_assert_eq(L->n, 5);
    cr_expect_eq(L->tok[0].loc.line, 1);
    cr_expect_eq(L->tok[0].loc.col, 1);
    cr_expect_eq(L->tok[1].loc.line, 2);
    cr_expect_eq(L->tok[1].loc.col, 3);
    cr_expect_eq(L->tok[2].loc.line, 3);
    cr_expect_eq(L->tok[2].loc.col, 7);
    cr_expect_eq(L->tok[3].loc.line, 5);
    cr_expect_eq(L->tok[3].loc.col, 2);
    cr_expect_str_eq(L->tok[3].loc.file, "t.tile");
    cr_expect_eq(L->tok[4].kind, LEX_EOF);
    lexed_free(L);
}

Test(lexer, doc_comments)
{
    lexed *L = lex_str("/// hello world\n////not doc\n///\n//plain\nx");
    cr_assert_eq(L->tok[0].kind, LEX_DOC);
    cr_expect_str_eq(L->tok[0].str, "hello world");
    cr_assert_eq(L->tok[1].kind, LEX_DOC);
    cr_expect_str_eq(L->tok[1].str, "");
    cr_expect_eq(L->tok[1].loc.line, 3);
    cr_expect_eq(L->tok[2].kind, LEX_IDENT);
    cr_expect_eq(L->tok[2].loc.line, 5);
    lexed_free(L);
}

Test(lexer, unterminated_comment_points_at_its_start)
{
    lexed *L = lex_str("x\n  /* never\nclosed");
    cr_assert_eq(L->tok[L->n - 1].kind, LEX_ERROR);
    const tilec_diag *d = tilec_ctx_diag(L->ctx, 0);
    cr_expect_str_eq(d->message, "unterminated comment: '/*' has no matching '*/'");
    cr_expect_eq(d->line, 2);
    cr_expect_eq(d->col, 3);
    lexed_free(L);
}

Test(lexer, strings)
{
    lexed *L = lex_str("\"cublas.sgemm\" \"a\\\"b\\\\c\\n\"");
    cr_assert_eq(L->tok[0].kind, LEX_STRING);
    cr_expect_str_eq(L->tok[0].str, "cublas.sgemm");
    cr_expect_str_eq(L->tok[1].str, "a\"b\\c\n");
    lexed_free(L);
    L = lex_str("\"abc\ndef\"");
    cr_expect_str_eq(first_error(L), "unterminated string literal");
    lexed_free(L);
    L = lex_str("\"a\\qb\"");
    cr_expect_str_eq(first_error(L), "invalid escape '\\q' in string literal (allowed: \\\\ \\\" \\n \\t)");
    cr_expect_eq(tilec_ctx_diag(L->ctx, 0)->col, 3);
    lexed_free(L);
}

Test(lexer, bad_bytes)
{
    lexed *L = lex_str("x @");
    cr_expect_str_eq(first_error(L), "unexpected character '@'");
    cr_expect_eq(tilec_ctx_diag(L->ctx, 0)->col, 3);
    lexed_free(L);
    L = lex_str("\xff");
    cr_expect_str_eq(first_error(L), "unexpected byte 0xff");
    lexed_free(L);
    L = lex_all("ab\0cd", 5);
    cr_expect_str_eq(first_error(L), "unexpected NUL byte in the source");
    cr_expect_eq(tilec_ctx_diag(L->ctx, 0)->col, 3);
    cr_expect_str_eq(tilec_ctx_diag(L->ctx, 0)->source_line, "ab?cd");
    lexed_free(L);
}

Test(lexer, long_identifiers)
{
    size_t n = LEX_MAX_IDENT;
    char *s = malloc(n + 2);
    memset(s, 'a', n + 1);
    s[n] = 0; /* the lexer reads up to a NUL sentinel at the end */
    lexed *L = lex_all(s, n); /* exactly the limit: fine */
    cr_expect_eq(L->tok[0].kind, LEX_IDENT);
    lexed_free(L);
    s[n] = 'a';
    s[n + 1] = 0;
    L = lex_all(s, n + 1);
    cr_expect_str_eq(first_error(L), "identifier is longer than 1024 bytes");
    lexed_free(L);
    free(s);
}

Test(lexer, token_descriptions)
{
    lexed *L = lex_str("foo 42 ; f32");
    cr_expect_str_eq(lex_token_desc(&L->ar, &L->tok[0]), "identifier 'foo'");
    cr_expect_str_eq(lex_token_desc(&L->ar, &L->tok[1]), "integer 42");
    cr_expect_str_eq(lex_token_desc(&L->ar, &L->tok[2]), "';'");
    cr_expect_str_eq(lex_token_desc(&L->ar, &L->tok[3]), "type 'f32'");
    cr_expect_str_eq(lex_token_desc(&L->ar, &L->tok[4]), "end of file");
    lexed_free(L);
}
