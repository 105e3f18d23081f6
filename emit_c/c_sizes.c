/* c_sizes.c: the size block of a generated C wrapper. Every compound size
 * text (a product, a sum, a quotient) becomes one local, tl_zN, computed
 * once with the overflow-checked helpers of csz_prelude; every tensor's
 * byte count, every view's byte offset and every size passed to a 32-bit
 * or unsigned kernel parameter is checked there too. NAME_run runs the
 * block after its input checks and before any allocation or launch, so
 * an overflow is an error naming the graph, the tensor or argument and
 * the symbols' values, and nothing after it can overflow. Sizes are
 * printed from their integer expressions (tilec/iexpr.h, carried by the
 * wrapper IR's lines), never from their text, whose precedence is not C's;
 * the text names a size in messages and keys the locals. */
#include <stdlib.h>
#include <string.h>

#include "emit_c/c_sizes.h"
#include "tilec/wir.h"

#define uthash_nonfatal_oom(e) ((void)0)
#include "util/fill.h"
#include "util/escape.h"
#include "util/hashtable.h"
#include "util/mangle.h"

struct csz_text {
    const char *text;
    uint32_t local;
    uint32_t loop; /* 0: the block; else the loop depth whose body computes it */
    char *own;     /* the text, when the entry owns it */
    UT_hash_handle hh;
};

const char csz_prelude[] =
    "/* size arithmetic with overflow checks: a failure sets *o (1 overflow, 2 division by\n"
    "   zero) and gives 0, so that nothing computed from it can overflow */\n"
    "static inline int64_t tl_fail0(int *o, int why) { *o = *o ? *o : why; return 0; }\n"
    "static inline int64_t tl_add(int *o, int64_t a, int64_t b) { int64_t r; return __builtin_add_overflow(a, b, &r) ? tl_fail0(o, 1) : r; }\n"
    "static inline int64_t tl_sub(int *o, int64_t a, int64_t b) { int64_t r; return __builtin_sub_overflow(a, b, &r) ? tl_fail0(o, 1) : r; }\n"
    "static inline int64_t tl_mul(int *o, int64_t a, int64_t b) { int64_t r; return __builtin_mul_overflow(a, b, &r) ? tl_fail0(o, 1) : r; }\n"
    "static inline int64_t tl_neg(int *o, int64_t a) { return tl_sub(o, 0, a); }\n"
    "static inline int64_t tl_div(int *o, int64_t a, int64_t b) { return !b ? tl_fail0(o, 2) : a == INT64_MIN && b == -1 ? tl_fail0(o, 1) : a / b; }\n"
    "static inline int64_t tl_mod(int *o, int64_t a, int64_t b) { return !b ? tl_fail0(o, 2) : a == INT64_MIN && b == -1 ? 0 : a % b; }\n"
    "static inline int64_t tl_cdiv(int *o, int64_t a, int64_t b) { return b <= 0 ? tl_fail0(o, 2) : a / b + (a % b > 0); }\n"
    "static inline int64_t tl_u64(int *o, uint64_t a) { return a > (uint64_t)INT64_MAX ? tl_fail0(o, 1) : (int64_t)a; }\n"
    "\n"
    "/* the bytes of a tensor: 0, 1 for a negative dimension, 2 for more than INT64_MAX bytes */\n"
    "__attribute__((unused)) static int tl_bytes(tilec_dtype dt, uint32_t rank, const int64_t *sizes, uint64_t *bytes)\n"
    "{\n"
    "    int64_t b = (int64_t)tilec_dtype_size(dt);\n"
    "    int zero = 0;\n"
    "    for (uint32_t d = 0; d < rank; d++) {\n"
    "        if (sizes[d] < 0)\n            return 1;\n"
    "        zero |= sizes[d] == 0;\n"
    "    }\n"
    "    for (uint32_t d = 0; d < rank && !zero; d++)\n"
    "        if (__builtin_mul_overflow(b, sizes[d], &b))\n            return 2;\n"
    "    if (bytes)\n        *bytes = zero ? 0 : (uint64_t)b;\n"
    "    return 0;\n"
    "}\n"
    "\n"
    "/* \"4, 1024\": sizes for a message */\n"
    "__attribute__((unused)) static const char *tl_dims(char *buf, size_t cap, uint32_t rank, const int64_t *sizes)\n"
    "{\n"
    "    buf[0] = 0;\n"
    "    for (uint32_t d = 0, k = 0; d < rank && k < cap; d++)\n"
    "        k += (uint32_t)snprintf(buf + k, cap - k, \"%s%lld\", d ? \", \" : \"\", (long long)sizes[d]);\n"
    "    return buf;\n"
    "}\n"
    "\n";

void csz_init(csz *z, const tilec_graph *g)
{
    memset(z, 0, sizeof *z);
    z->g = g;
    sb_init(&z->checks);
}

void csz_free(csz *z)
{
    csz_text *t, *tmp;
    HASH_ITER(hh, z->texts, t, tmp) {
        HASH_DEL(z->texts, t);
        free(t->own);
        free(t);
    }
    strset_free(&z->keys);
    sb_free(&z->checks);
}

const tilec_param *csz_scalar_param(const tilec_graph *g, const char *name, size_t n)
{
    for (uint32_t i = 0; g && i < g->nparams; i++)
        if (g->params[i].type.kind != TILEC_TE_TENSOR && strlen(g->params[i].name) == n &&
            !memcmp(g->params[i].name, name, n))
            return &g->params[i];
    return NULL;
}

void csz_symbol(strbuf *b, const tilec_graph *g, const char *name, size_t n)
{
    mg_c(b, csz_scalar_param(g, name, n) ? MG_C_SCALAR : MG_C_SYMBOL, name, n);
}

/* The checked C expression of size e. */
static void print_checked(csz *z, strbuf *b, const tilec_ix *e)
{
    static const char *const fn[] = {
        [TILEC_IX_NEG] = "neg", [TILEC_IX_ADD] = "add", [TILEC_IX_SUB] = "sub", [TILEC_IX_MUL] = "mul",
        [TILEC_IX_DIV] = "div", [TILEC_IX_MOD] = "mod", [TILEC_IX_CDIV] = "cdiv",
    };
    if (e->op == TILEC_IX_INT) {
        sb_printf(b, "%lld", (long long)e->value);
    } else if (e->op == TILEC_IX_SYM) {
        const tilec_param *p = csz_scalar_param(z->g, e->name, strlen(e->name));
        int u64 = p && p->type.dtype == TILEC_DT_U64;
        sb_puts(b, u64 ? "tl_u64(&tl_o, " : "");
        csz_symbol(b, z->g, e->name, strlen(e->name));
        sb_puts(b, u64 ? ")" : "");
    } else if ((size_t)e->op < sizeof fn / sizeof fn[0] && fn[e->op]) {
        sb_printf(b, "tl_%s(&tl_o, ", fn[e->op]);
        print_checked(z, b, e->a);
        if (e->op != TILEC_IX_NEG) {
            sb_puts(b, ", ");
            print_checked(z, b, e->b);
        }
        sb_putc(b, ')');
    } else {
        z->failed = 1; /* no size has this operator */
    }
}

/* ", with R=%lld, C=%lld" into fmt and ", (long long)s_R, (long long)s_C"
 * into args: the symbols of e, left to right, each once (seen: those
 * already named). */
static void symbols(csz *z, strbuf *fmt, strbuf *args, strbuf *seen, const tilec_ix *e)
{
    if (e->op != TILEC_IX_SYM) {
        if (e->a)
            symbols(z, fmt, args, seen, e->a);
        if (e->b)
            symbols(z, fmt, args, seen, e->b);
        return;
    }
    if (!sb_set_add(seen, e->name))
        return;
    const tilec_param *p = csz_scalar_param(z->g, e->name, strlen(e->name));
    int u64 = p && p->type.dtype == TILEC_DT_U64;
    sb_printf(fmt, "%s%s=%s", fmt->n ? ", " : ", with ", e->name, u64 ? "%llu" : "%lld");
    sb_printf(args, ", (%s)", u64 ? "unsigned long long" : "long long");
    csz_symbol(args, z->g, e->name, strlen(e->name));
}

/* A failed check: return tl_fail with "GRAPH: <head>" and the values of
 * the symbols in fmt/args. */
static void fail(csz *z, const char *head, strbuf *fmt, strbuf *args)
{
    sb_printf(&z->checks, "        return tl_fail(err, errlen, \"%s: %s%s\", %s%s);\n", z->g->name, head, sb_str(fmt),
              "tl_o == 1 ? \"overflows 64 bits\" : \"divides by zero\"", sb_str(args));
}

/* The block starts by declaring tl_o, which every check sets. */
static void block_start(csz *z)
{
    if (!z->checks.n)
        sb_puts(&z->checks, "    /* sizes: each computed once, with overflow checks, before anything is allocated\n"
                            "       or launched */\n    int tl_o __attribute__((unused)) = 0;\n");
}

void csz_use(csz *z, strbuf *out, const char *text, const tilec_ix *t, const char *what)
{
    if (!t) {
        z->failed = 1;
        return;
    }
    if (t->op == TILEC_IX_INT || t->op == TILEC_IX_SYM) {
        const tilec_param *p = t->op == TILEC_IX_SYM ? csz_scalar_param(z->g, t->name, strlen(t->name)) : NULL;
        if (t->op == TILEC_IX_INT)
            sb_printf(out, "%lld", (long long)t->value);
        else if (!p || p->type.dtype != TILEC_DT_U64)
            csz_symbol(out, z->g, t->name, strlen(t->name));
        else
            goto compound; /* a u64 scalar: checked into int64_t */
        return;
    }
compound:;
    csz_text *e = NULL;
    HASH_FIND_STR(z->texts, text, e);
    if (!e && csz_in_loop(z, t, 0)) {
        z->failed = 1; /* a size of a loop that its top did not compute (c_loop.c) */
        return;
    }
    if (!e && (e = calloc(1, sizeof *e)) != NULL && !(e->own = strdup(text))) {
        free(e); /* the key is the entry's own copy: callers pass texts they free (csz_offset's bytes) */
        e = NULL;
    }
    if (e && !e->text) {
        strbuf c, fmt, args, seen, head;
        sb_init(&c);
        sb_init(&fmt);
        sb_init(&args);
        sb_init(&seen);
        sb_init(&head);
        block_start(z);
        print_checked(z, &c, t);
        e->text = e->own;
        e->local = z->nlocals++;
        sb_printf(&z->checks, "    const int64_t tl_z%u = %s;\n", e->local, sb_str(&c));
        symbols(z, &fmt, &args, &seen, t);
        sb_puts(&head, "the size ");
        esc_c_format(&head, text);
        sb_puts(&head, " (");
        esc_c_format(&head, what);
        sb_puts(&head, ") %s");
        sb_puts(&z->checks, "    if (tl_o)\n");
        fail(z, sb_str(&head), &fmt, &args);
        z->failed |= c.failed | fmt.failed | args.failed | seen.failed | head.failed;
        sb_free(&c);
        sb_free(&fmt);
        sb_free(&args);
        sb_free(&seen);
        sb_free(&head);
        HASH_ADD_KEYPTR(hh, z->texts, e->text, strlen(e->text), e);
        if (!e->hh.tbl) {
            z->failed = 1;
            free(e->own);
            free(e);
            return;
        }
    }
    if (!e)
        z->failed = 1;
    else
        sb_printf(out, "tl_z%u", e->local);
}

void csz_tensor(csz *z, strbuf *out, const char *name, const char *dt_enum, tilec_dtype dt, uint32_t rank,
                const char *const *sizes, const tilec_ix *const *exprs)
{
    strbuf what, fmt, args, seen, head, dims_, *dims = &dims_;
    sb_init(dims);
    sb_init(&what);
    sb_init(&fmt);
    sb_init(&args);
    sb_init(&seen);
    sb_init(&head);
    sb_putc(dims, '{');
    for (uint32_t d = 0; d < rank; d++) {
        sb_reset(&what);
        sb_printf(&what, "dimension %u of %s", d, name);
        sb_puts(dims, d ? ", " : "");
        csz_use(z, dims, sizes[d], exprs ? exprs[d] : NULL, sb_str(&what));
        if (exprs && exprs[d])
            symbols(z, &fmt, &args, &seen, exprs[d]);
    }
    sb_puts(dims, rank ? "}" : "0}");
    sb_reset(&what);
    sb_printf(&what, "bytes %s %s", dt_enum, sb_str(dims)); /* one check per dtype and shape */
    int in_loop = 0; /* checked at run time: by tl_alloc, or a slice against its base */
    for (uint32_t d = 0; exprs && d < rank; d++)
        in_loop |= exprs[d] && csz_in_loop(z, exprs[d], 0);
    if (in_loop || !strset_add(&z->keys, sb_str(&what))) {
        sb_add(out, sb_str(dims), dims->n);
        goto done;
    }
    block_start(z);
    sb_printf(&head, "tensor %s (%s[", name, tilec_dtype_name(dt));
    for (uint32_t d = 0; d < rank; d++) {
        sb_puts(&head, d ? ", " : "");
        esc_c_format(&head, sizes[d]);
    }
    sb_puts(&head, "]) %s");
    sb_printf(&z->checks, "    if ((tl_o = tl_bytes(%s, %u, (const int64_t[])%s, NULL)) != 0)\n", dt_enum, rank, sb_str(dims));
    sb_printf(&z->checks, "        return tl_fail(err, errlen, \"%s: %s%s\", %s%s);\n", z->g->name, sb_str(&head),
              sb_str(&fmt), "tl_o == 1 ? \"has a negative dimension\" : \"needs more than 2^63 - 1 bytes\"",
              sb_str(&args));
    sb_add(out, sb_str(dims), dims->n);
done:
    z->failed |= what.failed | fmt.failed | args.failed | seen.failed | head.failed | dims->failed;
    sb_free(dims);
    sb_free(&what);
    sb_free(&fmt);
    sb_free(&args);
    sb_free(&seen);
    sb_free(&head);
}

void csz_offset(csz *z, strbuf *out, const char *view, const char *offset, const tilec_ix *expr, uint32_t elem)
{
    if (!offset || !strcmp(offset, "0")) {
        sb_puts(out, "0");
        return;
    }
    strbuf what, bytes;
    sb_init(&what);
    sb_init(&bytes);
    sb_printf(&what, "the offset of view %s", view);
    csz_offset_text(&bytes, offset, elem); /* its byte offset, as text and as a tree */
    const tilec_ix size = {.op = TILEC_IX_INT, .value = elem};
    const tilec_ix times = {.op = TILEC_IX_MUL, .a = expr, .b = &size};
    csz_use(z, out, sb_str(&bytes), expr ? &times : NULL, sb_str(&what));
    z->failed |= what.failed | bytes.failed;
    sb_free(&what);
    sb_free(&bytes);
}

void csz_fits(csz *z, const char *text, const tilec_ix *expr, tilec_dtype dt, const char *param, const char *kernel)
{
    const char *ty = dt == TILEC_DT_I32 ? "i32" : dt == TILEC_DT_U32 ? "u32" : dt == TILEC_DT_U64 ? "u64" : NULL;
    if (!ty || (expr && csz_in_loop(z, expr, 0)))
        return; /* a size of a loop: checked at the top of its body */
    strbuf key, v, what, t;
    sb_init(&key);
    sb_printf(&key, "%s %s", ty, text);
    int fresh = strset_add(&z->keys, sb_str(&key));
    z->failed |= key.failed | z->keys.failed;
    sb_free(&key);
    int64_t c = expr && expr->op == TILEC_IX_INT ? expr->value : -1;
    if (!fresh || (c >= 0 && (dt != TILEC_DT_U32 || c <= UINT32_MAX) && (dt != TILEC_DT_I32 || c <= INT32_MAX)))
        return; /* checked already, or a literal that fits */
    /* a graph scalar passed as it is: its C type bounds it, and only a bound
     * past the parameter's is tested (an int32_t compared with UINT32_MAX is
     * always false, which cc -Wextra -Werror refuses) */
    int64_t vlo = INT64_MIN, vhi = INT64_MAX, plo, phi;
    const tilec_param *gp = expr && expr->op == TILEC_IX_SYM ? csz_scalar_param(z->g, expr->name, strlen(expr->name)) : NULL;
    if (gp && gp->type.dtype != TILEC_DT_U64)
        fill_int_range(gp->type.dtype, &vlo, &vhi);
    fill_int_range(dt, &plo, &phi);
    if (vlo >= plo && vhi <= phi)
        return;
    sb_init(&v);
    sb_init(&what);
    sb_init(&t);
    sb_printf(&what, "argument '%s' of %s", param, kernel);
    csz_use(z, &v, text, expr, sb_str(&what));
    esc_c_format(&t, text);
    const char *lo = dt == TILEC_DT_I32 ? "INT32_MIN" : "0";
    const char *vs = sb_str(&v);
    block_start(z);
    const char *hi = dt == TILEC_DT_I32 ? "INT32_MAX" : "(int64_t)UINT32_MAX";
    if (dt == TILEC_DT_U64 || vhi <= phi)
        sb_printf(&z->checks, "    if (%s < %s)\n", vs, lo);
    else if (vlo >= plo)
        sb_printf(&z->checks, "    if (%s > %s)\n", vs, hi);
    else
        sb_printf(&z->checks, "    if (%s < %s || %s > %s)\n", vs, lo, vs, hi);
    sb_printf(&z->checks,
              "        return tl_fail(err, errlen, \"%s: argument '%s' of %s (%s) is %%lld, which does not fit %s\", "
              "(long long)%s);\n",
              z->g->name, param, kernel, sb_str(&t), ty, vs);
    z->failed |= v.failed | what.failed | t.failed;
    sb_free(&v);
    sb_free(&what);
    sb_free(&t);
}

void csz_offset_text(strbuf *b, const char *offset, uint32_t elem) { sb_printf(b, "(%s)*%u", offset, elem); }

int csz_in_loop(const csz *z, const tilec_ix *e, uint32_t from)
{
    if (!e)
        return 0;
    if (e->op == TILEC_IX_SYM) {
        for (uint32_t i = from; i < z->nloops; i++)
            if (!strcmp(z->loopvars[i], e->name))
                return 1;
        return 0;
    }
    return csz_in_loop(z, e->a, from) || csz_in_loop(z, e->b, from);
}

void csz_loop_use(csz *z, strbuf *out, const char *ind, const char *text, const tilec_ix *t, const char *what,
                  tilec_dtype dt, const char *param, const char *kernel)
{
    csz_text *e = NULL;
    block_start(z); /* it declares tl_o */
    HASH_FIND_STR(z->texts, text, e);
    if (!t || t->op == TILEC_IX_INT || t->op == TILEC_IX_SYM || e)
        goto fits;
    e = calloc(1, sizeof *e);
    char *own = e ? strdup(text) : NULL;
    if (!own) {
        free(e);
        z->failed = 1;
        return;
    }
    strbuf c, fmt, args, seen;
    sb_init(&c);
    sb_init(&fmt);
    sb_init(&args);
    sb_init(&seen);
    print_checked(z, &c, t);
    symbols(z, &fmt, &args, &seen, t);
    e->own = own;
    e->text = own;
    e->local = z->nlocals++;
    e->loop = z->nloops;
    sb_printf(out, "%sconst int64_t tl_z%u = %s;\n%sif (tl_o) {\n%s    tl_fail(err, errlen, \"%s: the size ", ind,
              e->local, sb_str(&c), ind, ind, z->g->name);
    esc_c_format(out, text);
    sb_puts(out, " (");
    esc_c_format(out, what);
    sb_printf(out, ") %%s%s\", tl_o == 1 ? \"overflows 64 bits\" : \"divides by zero\"%s);\n%s    goto tl_out;\n%s}\n",
              sb_str(&fmt), sb_str(&args), ind, ind);
    z->failed |= c.failed | fmt.failed | args.failed | seen.failed;
    sb_free(&c);
    sb_free(&fmt);
    sb_free(&args);
    sb_free(&seen);
    HASH_ADD_KEYPTR(hh, z->texts, e->text, strlen(e->text), e);
    if (!e->hh.tbl) {
        z->failed = 1;
        free(own);
        free(e);
        return;
    }
fits:;
    const char *ty = dt == TILEC_DT_I32 ? "i32" : dt == TILEC_DT_U32 ? "u32" : dt == TILEC_DT_U64 ? "u64" : NULL;
    if (!ty || !t)
        return;
    strbuf v, tx;
    sb_init(&v);
    sb_init(&tx);
    csz_use(z, &v, text, t, what);
    esc_c_format(&tx, text);
    const char *vs = sb_str(&v);
    if (dt == TILEC_DT_U64)
        sb_printf(out, "%sif (%s < 0) {\n", ind, vs);
    else
        sb_printf(out, "%sif (%s < %s || %s > %s) {\n", ind, vs, dt == TILEC_DT_I32 ? "INT32_MIN" : "0", vs,
                  dt == TILEC_DT_I32 ? "INT32_MAX" : "(int64_t)UINT32_MAX");
    sb_printf(out,
              "%s    tl_fail(err, errlen, \"%s: argument '%s' of %s (%s) is %%lld, which does not fit %s\", "
              "(long long)%s);\n%s    goto tl_out;\n%s}\n",
              ind, z->g->name, param, kernel, sb_str(&tx), ty, vs, ind, ind);
    z->failed |= v.failed | tx.failed;
    sb_free(&v);
    sb_free(&tx);
}

void csz_loop_end(csz *z)
{
    csz_text *t, *tmp;
    HASH_ITER(hh, z->texts, t, tmp) {
        if (t->loop && t->loop >= z->nloops) {
            HASH_DEL(z->texts, t);
            free(t->own);
            free(t);
        }
    }
    if (z->nloops)
        z->nloops--;
}
