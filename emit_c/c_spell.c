/* c_spell.c: how the "c" emitter spells things in C: names through
 * util/mangle.h, size texts, dtype enumerators, scalar types, comments. */
#include <string.h>

#include "emit_c/c_internal.h"
#include "util/escape.h"

/* The C spelling of name in namespace kind (util/mangle.h); valid until
 * eight more names were spelled. */
const char *cn(cstate *s, mg_c_kind kind, const char *name)
{
    strbuf *b = &s->names[s->next++ % 8];
    sb_reset(b);
    mg_c(b, kind, name, strlen(name));
    s->failed |= b->failed;
    return sb_str(b);
}

/* C spelling of a size text: symbols and scalar parameters of g through
 * mg_c (as c_params declares them), cdiv(a, b) -> tl_cdiv(a, b). */
void c_size(strbuf *b, const tilec_graph *g, const char *t)
{
    for (const char *p = t; *p;) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_') {
            const char *q = p;
            while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') || *q == '_')
                q++;
            /* sizes are int64_t: a u64 scalar is read as one, so range checks compare signed */
            const tilec_param *sp = *q == '(' ? NULL : csz_scalar_param(g, p, (size_t)(q - p));
            int u64 = sp && sp->type.dtype == TILEC_DT_U64;
            if (*q == '(') {
                sb_printf(b, "tl_%.*s", (int)(q - p), p);
            } else {
                sb_puts(b, u64 ? "((int64_t)" : "");
                mg_c(b, sp ? MG_C_SCALAR : MG_C_SYMBOL, p, (size_t)(q - p));
                sb_puts(b, u64 ? ")" : "");
            }
            p = q;
        } else {
            sb_putc(b, *p++);
        }
    }
}

const char *dt_enum(tilec_dtype d)
{
    static const char *const n[] = {"TILEC_DT_BOOL", "TILEC_DT_I8", "TILEC_DT_I16", "TILEC_DT_I32", "TILEC_DT_I64",
                                    "TILEC_DT_U8", "TILEC_DT_U16", "TILEC_DT_U32", "TILEC_DT_U64", "TILEC_DT_F16",
                                    "TILEC_DT_BF16", "TILEC_DT_F32", "TILEC_DT_F64"};
    return (unsigned)d < TILEC_DT_COUNT ? n[d] : "TILEC_DT_F32";
}

const char *c_scalar_type(tilec_dtype d)
{
    switch (d) {
    case TILEC_DT_F32: return "float";
    case TILEC_DT_F64: return "double";
    case TILEC_DT_I64: return "int64_t";
    case TILEC_DT_U64: return "uint64_t";
    case TILEC_DT_U32: return "uint32_t";
    case TILEC_DT_BOOL: return "int";
    default: return "int32_t";
    }
}

/* A comment line. */
void c_comment(strbuf *b, const char *indent, const char *text)
{
    sb_printf(b, "%s/* ", indent);
    esc_c_comment(b, text);
    sb_puts(b, " */\n");
}
