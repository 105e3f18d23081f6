/* c_spell.c: how the "c" emitter spells things in C: names through
 * util/mangle.h, size texts, dtype enumerators, scalar types, comments, the --aot
 * architectures (c_aot_archs). */
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

/* C spelling of a dimension of a graph input: an integer, or a size symbol
 * (or scalar parameter) of g through csz_symbol, as c_params declares it;
 * sizes are int64_t, so a u64 scalar is read as one and range checks
 * compare signed. The checker allows nothing else there; anything else
 * fails the emitter rather than reach the C. */
void c_dim(strbuf *b, const tilec_graph *g, const tilec_ix *e)
{
    if (e && e->op == TILEC_IX_INT) {
        sb_printf(b, "%lld", (long long)e->value);
        return;
    }
    if (!e || e->op != TILEC_IX_SYM) {
        b->failed = 1;
        return;
    }
    size_t n = strlen(e->name);
    const tilec_param *sp = csz_scalar_param(g, e->name, n);
    int u64 = sp && sp->type.dtype == TILEC_DT_U64;
    sb_puts(b, u64 ? "((int64_t)" : "");
    csz_symbol(b, g, e->name, n);
    sb_puts(b, u64 ? ")" : "");
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

const char *c_arg_field(tilec_dtype d)
{
    static const char *const fields[] = {"i32", "i32", "i32", "i32", "i64", "u32", "u32", "u32", "u64",
                                         "f32", "f32", "f32", "f64"}; /* ORDER TILEC_DTYPES */
    return (unsigned)d < sizeof fields / sizeof fields[0] ? fields[d] : "u64";
}

/* A comment line. */
void c_comment(strbuf *b, const char *indent, const char *text)
{
    sb_printf(b, "%s/* ", indent);
    esc_c_comment(b, text);
    sb_puts(b, " */\n");
}

/* "sm_90", "sm_90a", "sm_100f": what NVRTC's --gpu-architecture takes */
static int aot_arch_ok(const char *a)
{
    if (strncmp(a, "sm_", 3))
        return 0;
    size_t d = 0;
    while (a[3 + d] >= '0' && a[3 + d] <= '9')
        d++;
    const char *t = a + 3 + d;
    return d >= 2 && d <= 3 && a[3] != '0' && (!*t || (!t[1] && (*t == 'a' || *t == 'f')));
}

int c_aot_archs(const char *archs, char out[C_AOT_MAX_ARCHS][16])
{
    int n = 0;
    for (const char *p = archs;; n++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (n == C_AOT_MAX_ARCHS || len >= 16)
            return -1;
        memcpy(out[n], p, len);
        out[n][len] = 0;
        if (!aot_arch_ok(out[n]))
            return -1;
        for (int i = 0; i < n; i++)
            if (!strcmp(out[i], out[n]))
                return -1;
        if (!end)
            return n + 1;
        p = end + 1;
    }
}
