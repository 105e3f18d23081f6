/* parse.c: the parser's entry point: the lexer pushes tokens into the Lemon
 * parser from one loop and stops at the first recorded error. */
#include <stdlib.h>

#include "grammar.h"
#include "parser/parse.h"

/* The lexer's codes are the grammar's terminals (dsl/token.h, Makefile). */
#define PRS_SAME_CODE(n, s) _Static_assert(LEX_##n == TK_##n, "dsl/token.h and the grammar number " #n " alike");
DSL_TOKENS(PRS_SAME_CODE)
#undef PRS_SAME_CODE

void *prs_lemonAlloc(void *(*alloc)(size_t), prs_state *ps);
void prs_lemon(void *parser, int kind, lex_token tok);
void prs_lemonFree(void *parser, void (*dealloc)(void *));

int prs_parse(tilec_ctx *ctx, tilec_module *mod)
{
    prs_state ps = {.ctx = ctx, .mod = mod, .ar = &mod->ar};
    void *parser = prs_lemonAlloc(malloc, &ps);
    if (!parser) {
        diag_at(ctx, &mod->src, NULL, TILEC_SEV_ERROR, "out of memory while parsing");
        return -1;
    }
    lexer lx;
    lex_init(&lx, &mod->src, ctx, &mod->ar);
    lex_token tok;
    do {
        tok = lex_next(&lx);
        if (tok.kind == LEX_ERROR) {
            ps.failed = 1;
            break;
        }
        prs_lemon(parser, tok.kind, tok);
        if (ps.overflow)
            diag_at(ctx, &mod->src, &tok.loc, TILEC_SEV_ERROR,
                    "nesting is too deep: more than %d levels of parentheses, blocks and operators",
                    PRS_MAX_NESTING);
    } while (tok.kind != LEX_EOF && !ps.failed);
    prs_lemonFree(parser, free);
    return ps.failed ? -1 : 0;
}
