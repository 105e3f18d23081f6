/* lexer.re: the .tile lexer, generated into C by re2c at build time.
 * The input is NUL-terminated (a sentinel); a NUL before the end is an
 * error. Every token carries file:line:col; errors are reported to the
 * context and returned as LEX_ERROR. */
#include "dsl/lexer.h"
#include "tilec/types.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>


void lex_init(lexer *lx, const dsl_source *src, tilec_ctx *ctx, arena *ar)
{
    lx->src = src;
    lx->ctx = ctx;
    lx->ar = ar;
    lx->cur = src->text;
    lx->lim = src->text + src->len;
    lx->line_start = src->text;
    lx->line = 1;
}

static tilec_loc loc_of(const lexer *lx, const char *p)
{
    return (tilec_loc){lx->src->name, lx->line, (uint32_t)(p - lx->line_start) + 1};
}

__attribute__((format(printf, 3, 4))) static lex_token lex_error(lexer *lx, const char *at, const char *fmt, ...)
{
    tilec_loc loc = loc_of(lx, at);
    va_list ap;
    va_start(ap, fmt);
    diag_vat(lx->ctx, lx->src, &loc, TILEC_SEV_ERROR, fmt, ap);
    va_end(ap);
    lex_token t = {.kind = LEX_ERROR, .loc = loc};
    return t;
}

static void newline(lexer *lx, const char *after)
{
    lx->line++;
    lx->line_start = after;
}

/* A quoted string: escapes \\ \" \n \t; no newline or NUL inside (a NUL is
 * reported where it is). */
static lex_token lex_string(lexer *lx, const char *start, lex_token t)
{
    const char *p = start + 1;
    size_t n = 0;
    for (const char *q = p;; q++) {
        if (q < lx->lim && *q == 0)
            return lex_error(lx, q, "unexpected NUL byte in the source%s", "");
        if (q >= lx->lim || *q == '\n')
            return lex_error(lx, start, "unterminated string literal%s", "");
        if (*q == '"')
            break;
        if (*q == '\\') {
            q++;
            if (q >= lx->lim || !strchr("\\\"nt", *q) || !*q) {
                char buf[8];
                buf[0] = q < lx->lim && *q >= 0x20 && *q < 0x7f ? *q : '?';
                buf[1] = 0;
                return lex_error(lx, q - 1, "invalid escape '\\%s' in string literal (allowed: \\\\ \\\" \\n \\t)", buf);
            }
        }
        n++;
    }
    char *s = ar_alloc(lx->ar, n + 1);
    if (!s)
        return lex_error(lx, start, "out of memory%s", "");
    size_t i = 0;
    for (; *p != '"'; p++) {
        if (*p == '\\') {
            p++;
            s[i++] = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
        } else
            s[i++] = *p;
    }
    s[i] = 0;
    t.str = s;
    t.len = (uint32_t)(p + 1 - start);
    lx->cur = p + 1;
    return t;
}

static const char *tok_copy(lexer *lx, const char *s, size_t n) { return ar_strndup(lx->ar, s, n); }

/* Where "found end of file" points: just after the last byte that is not
 * white space, on its line, rather than on an empty line after the text. */
static tilec_loc eof_loc(const lexer *lx)
{
    const char *text = lx->src->text, *p = lx->lim;
    uint32_t line = lx->line;
    while (p > text && p[-1] && strchr(" \t\r\n\f\v", p[-1])) {
        p--;
        if (*p == '\n')
            line--;
    }
    const char *bol = p;
    while (bol > text && bol[-1] != '\n')
        bol--;
    return (tilec_loc){lx->src->name, line, (uint32_t)(p - bol) + 1};
}

lex_token lex_next(lexer *lx)
{
    const char *YYCURSOR = lx->cur, *YYMARKER = NULL, *tok;
    lex_token t;
loop:
    tok = YYCURSOR;
    memset(&t, 0, sizeof t);
    t.loc = loc_of(lx, tok);
    t.text = tok;
/*!re2c
    re2c:define:YYCTYPE = "unsigned char";
    re2c:yyfill:enable = 0;
    re2c:indent:string = "    ";

    digit = [0-9];
    alpha = [A-Za-z_];
    ident = alpha (alpha | digit)*;
    exp   = [eE] [+-]? digit+;
    float = digit+ "." digit+ exp? | digit+ exp;
    int   = digit+ | "0" [xX] [0-9a-fA-F]+;

    [\x00] {
        if (tok == lx->lim) {
            lx->cur = tok;
            t.kind = LEX_EOF;
            t.len = 0;
            t.loc = eof_loc(lx);
            return t;
        }
        return lex_error(lx, tok, "unexpected NUL byte in the source%s", "");
    }
    "\r\n" | "\n" { newline(lx, YYCURSOR); goto loop; }
    [ \t\r\f\v]+  { goto loop; }

    "///" ([^/\n\x00] [^\n\x00]*)? {
        const char *b = tok + 3;
        if (b < YYCURSOR && *b == ' ') b++;
        const char *e = YYCURSOR;
        if (e > b && e[-1] == '\r') e--;
        t.kind = LEX_DOC; t.str = tok_copy(lx, b, (size_t)(e - b)); goto done;
    }
    "//" [^\n\x00]* { goto loop; }
    "/*" { goto comment; }

    "kernel"   { t.kind = LEX_KERNEL; goto done; }
    "extern"   { t.kind = LEX_EXTERN; goto done; }
    "graph"    { t.kind = LEX_GRAPH; goto done; }
    "let"      { t.kind = LEX_LET; goto done; }
    "for"      { t.kind = LEX_FOR; goto done; }
    "in"       { t.kind = LEX_IN; goto done; }
    "step"     { t.kind = LEX_STEP; goto done; }
    "if"       { t.kind = LEX_IF; goto done; }
    "else"     { t.kind = LEX_ELSE; goto done; }
    "return"   { t.kind = LEX_RETURN; goto done; }
    "grid"     { t.kind = LEX_GRID; goto done; }
    "hints"    { t.kind = LEX_HINTS; goto done; }
    "variants" { t.kind = LEX_VARIANTS; goto done; }
    "tune"     { t.kind = LEX_TUNE; goto done; }
    "true"     { t.kind = LEX_TRUE; t.ival = 1; goto done; }
    "false"    { t.kind = LEX_FALSE; goto done; }
    "inf"      { t.kind = LEX_INF; goto done; }
    "None"     { t.kind = LEX_NONE; goto done; }

    "bool" { t.ival = TILEC_DT_BOOL; goto dtype; }
    "i8"   { t.ival = TILEC_DT_I8; goto dtype; }
    "i16"  { t.ival = TILEC_DT_I16; goto dtype; }
    "i32"  { t.ival = TILEC_DT_I32; goto dtype; }
    "i64"  { t.ival = TILEC_DT_I64; goto dtype; }
    "u8"   { t.ival = TILEC_DT_U8; goto dtype; }
    "u16"  { t.ival = TILEC_DT_U16; goto dtype; }
    "u32"  { t.ival = TILEC_DT_U32; goto dtype; }
    "u64"  { t.ival = TILEC_DT_U64; goto dtype; }
    "f16"  { t.ival = TILEC_DT_F16; goto dtype; }
    "bf16" { t.ival = TILEC_DT_BF16; goto dtype; }
    "f32"  { t.ival = TILEC_DT_F32; goto dtype; }
    "f64"  { t.ival = TILEC_DT_F64; goto dtype; }

    ident {
        if (YYCURSOR - tok > LEX_MAX_IDENT)
            return lex_error(lx, tok, "identifier is longer than %d bytes", LEX_MAX_IDENT);
        t.kind = LEX_IDENT; t.str = tok_copy(lx, tok, (size_t)(YYCURSOR - tok)); goto done;
    }

    float {
        t.kind = LEX_FLOAT;
        t.str = tok_copy(lx, tok, (size_t)(YYCURSOR - tok));
        if (!t.str) return lex_error(lx, tok, "out of memory%s", "");
        errno = 0;
        t.fval = strtod(t.str, NULL);
        if (errno == ERANGE && isinf(t.fval))
            return lex_error(lx, tok, "float literal '%s' is out of range (largest is about 1.8e308)", t.str);
        if (errno == ERANGE && t.fval == 0.0)
            return lex_error(lx, tok, "float literal '%s' underflows to zero", t.str);
        goto done;
    }
    int {
        const char *s = tok;
        int base = 10;
        if (YYCURSOR - tok > 2 && (tok[1] == 'x' || tok[1] == 'X')) { s += 2; base = 16; }
        uint64_t v = 0;
        for (; s < YYCURSOR; s++) {
            unsigned d = (unsigned)(*s <= '9' ? *s - '0' : (*s | 0x20) - 'a' + 10);
            if (v > (UINT64_C(0x7fffffffffffffff) - d) / (unsigned)base) {
                const char *txt = tok_copy(lx, tok, (size_t)(YYCURSOR - tok));
                return lex_error(lx, tok, "integer literal '%s' is out of range (largest is 9223372036854775807)", txt ? txt : "");
            }
            v = v * (unsigned)base + d;
        }
        t.kind = LEX_INT; t.ival = (int64_t)v; goto done;
    }
    (float | int) (alpha | digit)+ {
        const char *txt = tok_copy(lx, tok, (size_t)(YYCURSOR - tok));
        return lex_error(lx, tok, "invalid number '%s'", txt ? txt : "");
    }
    digit+ "." [^.0-9] {
        const char *e = YYCURSOR - 1;
        while ((*e >= '0' && *e <= '9') || (*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') || *e == '_')
            e++;
        const char *txt = tok_copy(lx, tok, (size_t)(e - tok));
        return lex_error(lx, tok, "invalid number '%s': a float needs digits after the '.', such as 1.0", txt ? txt : "");
    }

    ["] { return lex_string(lx, tok, (lex_token){.kind = LEX_STRING, .loc = t.loc, .text = tok}); }

    "("  { t.kind = LEX_LPAREN; goto done; }
    ")"  { t.kind = LEX_RPAREN; goto done; }
    "{"  { t.kind = LEX_LBRACE; goto done; }
    "}"  { t.kind = LEX_RBRACE; goto done; }
    "["  { t.kind = LEX_LBRACKET; goto done; }
    "]"  { t.kind = LEX_RBRACKET; goto done; }
    ","  { t.kind = LEX_COMMA; goto done; }
    ";"  { t.kind = LEX_SEMI; goto done; }
    ":"  { t.kind = LEX_COLON; goto done; }
    "->" { t.kind = LEX_ARROW; goto done; }
    ".." { t.kind = LEX_DOTDOT; goto done; }
    "="  { t.kind = LEX_ASSIGN; goto done; }
    "+"  { t.kind = LEX_PLUS; goto done; }
    "-"  { t.kind = LEX_MINUS; goto done; }
    "*"  { t.kind = LEX_STAR; goto done; }
    "/"  { t.kind = LEX_SLASH; goto done; }
    "%"  { t.kind = LEX_PERCENT; goto done; }
    "<"  { t.kind = LEX_LT; goto done; }
    "<=" { t.kind = LEX_LE; goto done; }
    ">"  { t.kind = LEX_GT; goto done; }
    ">=" { t.kind = LEX_GE; goto done; }
    "==" { t.kind = LEX_EQ; goto done; }
    "!=" { t.kind = LEX_NE; goto done; }
    "&&" { t.kind = LEX_ANDAND; goto done; }
    "||" { t.kind = LEX_OROR; goto done; }
    "&"  { t.kind = LEX_AMP; goto done; }
    "|"  { t.kind = LEX_PIPE; goto done; }
    "^"  { t.kind = LEX_CARET; goto done; }
    "<<" { t.kind = LEX_SHL; goto done; }
    ">>" { t.kind = LEX_SHR; goto done; }
    "!"  { t.kind = LEX_BANG; goto done; }
    "~"  { t.kind = LEX_TILDE; goto done; }

    * {
        unsigned char c = (unsigned char)*tok;
        char buf[16];
        if (c >= 0x21 && c < 0x7f) snprintf(buf, sizeof buf, "character '%c'", c);
        else snprintf(buf, sizeof buf, "byte 0x%02x", c);
        return lex_error(lx, tok, "unexpected %s", buf);
    }
*/
comment:
/*!re2c
    "*" "/" { goto loop; }
    "\n"    { newline(lx, YYCURSOR); goto comment; }
    [\x00]  {
        if (YYCURSOR - 1 == lx->lim) {
            lx->cur = YYCURSOR - 1;
            diag_at(lx->ctx, lx->src, &t.loc, TILEC_SEV_ERROR, "unterminated comment: '/*' has no matching '*/'");
            t.kind = LEX_ERROR;
            return t;
        }
        return lex_error(lx, YYCURSOR - 1, "unexpected NUL byte in the source%s", "");
    }
    *       { goto comment; }
*/
dtype:
    t.kind = LEX_DTYPE;
done:
    (void)YYMARKER;
    if (!t.len)
        t.len = (uint32_t)(YYCURSOR - tok);
    lx->cur = YYCURSOR;
    if ((t.kind == LEX_IDENT || t.kind == LEX_DOC) && !t.str)
        return lex_error(lx, tok, "out of memory%s", "");
    return t;
}

static const char *const kind_names[] = {
    [LEX_EOF] = "end of file",
#define LEX_KIND_NAME(n, s) [LEX_##n] = s,
    DSL_TOKENS(LEX_KIND_NAME)
#undef LEX_KIND_NAME
};

const char *lex_kind_name(int kind)
{
    if (kind >= 0 && (size_t)kind < sizeof kind_names / sizeof kind_names[0] && kind_names[kind])
        return kind_names[kind];
    return "token";
}

const char *lex_token_desc(arena *ar, const lex_token *t)
{
    const char *s = NULL;
    switch (t->kind) {
    case LEX_IDENT: s = ar_printf(ar, "identifier '%s'", t->str); break;
    case LEX_INT: s = ar_printf(ar, "integer %.*s", (int)t->len, t->text); break;
    case LEX_FLOAT: s = ar_printf(ar, "float %s", t->str); break;
    case LEX_DTYPE: s = ar_printf(ar, "type '%.*s'", (int)t->len, t->text); break;
    case LEX_STRING: s = "a string"; break;
    default: break;
    }
    return s ? s : lex_kind_name(t->kind);
}
