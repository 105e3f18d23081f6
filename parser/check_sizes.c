/* check_sizes.c: symbolic sizes of graphs and externs: size expressions
 * as polynomials (parser/size_poly.h) within their limits, tensor bindings
 * with their shapes, and the size symbols bound by tensor parameters. */
#include <string.h>

#include "parser/check_internal.h"

static const poly *sym_lookup(void *user, const char *name)
{
    checker *ck = user;
    symbol *s = NULL;
    HASH_FIND_STR(ck->syms, name, s);
    if (s)
        return s->value;
    binding *b = chk_lookup(ck, name);
    if (b && b->kind == B_SCALAR && chk_is_int(&b->type))
        return poly_atom(&ck->scratch, name);
    return NULL;
}

/* A limit of symbolic sizes (tilec/limits.h) passed, as one error at loc
 * about `what`; 1 when it was one (or out of memory), else 0. */
int chk_size_limit_err(checker *ck, const tilec_loc *loc, const poly_why *why, const char *what)
{
    long long v = (long long)why->value;
    switch (why->fail) {
    case POLY_FAIL_TERMS:
        chk_err(ck, loc, "%s has too many terms to compare symbolically: %lld (the limit is %d terms)", what, v,
            TILEC_MAX_POLY_TERMS);
        return 1;
    case POLY_FAIL_DEGREE:
        chk_err(ck, loc, "%s has too high a degree to compare symbolically: %lld symbols in one term (the limit is %d)",
            what, v, TILEC_MAX_POLY_DEGREE);
        return 1;
    case POLY_FAIL_TEXT:
        chk_err(ck, loc, "%s is too long as text: %lld bytes (the limit is %d)", what, v, TILEC_MAX_POLY_TEXT);
        return 1;
    case POLY_FAIL_OVERFLOW:
        chk_err(ck, loc, "%s: a coefficient overflows 64 bits", what);
        return 1;
    case POLY_FAIL_NOMEM:
        ck->oom = 1;
        return 1;
    default:
        return 0;
    }
}

/* Every name of a size expression is a symbol or an integer scalar. */
static int size_names_ok(checker *ck, const tilec_expr *e, const char *what)
{
    if (e->kind == TILEC_EX_CALL && !strcmp(e->name, "len") && e->nargs == 1 && e->args[0]->kind == TILEC_EX_NAME) {
        const binding *l = chk_lookup(ck, e->args[0]->name);
        if (l && l->kind == B_LIST) { /* a count that comes with the call's list, not with a tensor's shape */
            chk_err(ck, &e->loc, "len(%s) is not a graph size: a graph's sizes come from its tensors' dimensions and "
                "its integer parameters (a kernel reads len(%s) itself; pass the count as an integer parameter "
                "where the graph needs it)", l->name, l->name);
            return 0;
        }
    }
    if (e->kind == TILEC_EX_NAME && !sym_lookup(ck, e->name)) {
        binding *b = chk_lookup(ck, e->name);
        if (chk_poisoned(b))
            return 0;
        if (b)
            chk_err(ck, &e->loc, "%s must be an integer, but '%s' is %s", what, e->name,
                b->kind == B_TENSOR ? "a tensor" : b->kind == B_LIST ? "a tensor list" : tilec_dtype_name(b->type.dtype));
        else
            chk_err(ck, &e->loc, "'%s' is not a size symbol here (symbols are bound by the dimensions of tensor parameters)",
                e->name);
        return 0;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!size_names_ok(ck, e->args[i], what))
            return 0;
    return 1;
}

/* A size expression of a graph: integers, symbols, scalar int parameters.
 * One polynomial per expression (bounded: chk_size_limit_err). */
const poly *chk_size_expr(checker *ck, const tilec_expr *e, const char *what)
{
    if (!size_names_ok(ck, e, what))
        return NULL;
    size_why why = {0};
    poly *p = poly_from_expr(&ck->scratch, e, sym_lookup, ck, &why);
    const tilec_expr *at = why.at ? why.at : e;
    if (!p && why.poly.fail == POLY_FAIL_DIV_ZERO) {
        if (at->kind == TILEC_EX_CALL)
            chk_err(ck, chk_start_of(at->args[1]), "the divisor of cdiv in %s must be positive, got %lld", what,
                (long long)why.poly.value);
        else
            chk_err(ck, &at->loc, "division by zero in %s", what);
        return NULL;
    }
    if (!p && chk_size_limit_err(ck, &at->loc, &why.poly, what))
        return NULL;
    if (!p) {
        chk_err(ck, &e->loc, "%s must be built from integers, size symbols, + - * / %% and cdiv", what);
        return NULL;
    }
    size_t len = poly_text_len(p, TILEC_MAX_POLY_TEXT);
    if (len > TILEC_MAX_POLY_TEXT) {
        why.poly = (poly_why){.fail = POLY_FAIL_TEXT, .value = (int64_t)len};
        chk_size_limit_err(ck, &e->loc, &why.poly, what);
        return NULL;
    }
    return p;
}

const char *chk_tensor_text(checker *ck, tilec_dtype dt, const poly *const *dims, uint32_t rank)
{
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "%s[", tilec_dtype_name(dt));
    for (uint32_t i = 0; i < rank; i++)
        sb_printf(&b, "%s%s", i ? ", " : "", poly_str(&ck->scratch, dims[i]));
    sb_putc(&b, ']');
    const char *s = ar_strdup(ck->ar, sb_str(&b));
    sb_free(&b);
    return s;
}

/* Bind tensor `name` of dtype dt with the given size polynomials. */
binding *chk_bind_tensor(checker *ck, const char *name, const tilec_loc *loc, tilec_dtype dt, const poly **dims,
                         uint32_t rank)
{
    /* its byte size as lowering computes it (row-major strides, then the
     * element size), within the limits of symbolic sizes */
    poly_why why = {0};
    const poly *bytes = poly_const(&ck->scratch, 1);
    for (uint32_t d = rank; bytes && d-- > 0;)
        bytes = poly_mul(&ck->scratch, bytes, dims[d], &why);
    bytes = poly_mul(&ck->scratch, bytes, poly_const(&ck->scratch, tilec_dtype_size(dt)), &why);
    size_t len = bytes ? poly_text_len(bytes, TILEC_MAX_POLY_TEXT) : 0;
    if (len > TILEC_MAX_POLY_TEXT)
        why = (poly_why){.fail = POLY_FAIL_TEXT, .value = (int64_t)len};
    if (!bytes || len > TILEC_MAX_POLY_TEXT) {
        const char *what = ar_printf(&ck->scratch, "the byte size of '%s'", name);
        if (!what || !chk_size_limit_err(ck, loc, &why, what))
            ck->oom = 1;
    }
    binding *b = chk_bind(ck, name, loc, B_TENSOR, "tensor");
    if (!b)
        return NULL;
    b->dtype = dt;
    b->rank = rank;
    b->dims = dims;
    b->text = chk_tensor_text(ck, dt, dims, rank);
    b->type = (tilec_type){.kind = TILEC_TY_TENSOR, .dtype = dt};
    return b;
}

const poly **chk_tensor_dims(checker *ck, const tilec_tyexpr *te, const char *what)
{
    const poly **dims = ar_array(&ck->scratch, te->ndims ? te->ndims : 1, sizeof *dims);
    if (!dims) {
        ck->oom = 1;
        return NULL;
    }
    for (uint32_t i = 0; i < te->ndims; i++)
        if (!(dims[i] = chk_size_expr(ck, te->dims[i], what)))
            return NULL;
    return dims;
}

/* Bind size symbol `name`, met in dimension d of parameter p, unless it is
 * bound already. 0 on success. */
static int add_symbol(checker *ck, const tilec_expr *e, const tilec_param *p, uint32_t d)
{
    symbol *s = NULL;
    HASH_FIND_STR(ck->syms, e->name, s);
    if (s)
        return 0;
    if (chk_lookup(ck, e->name)) {
        chk_err(ck, &e->loc, "'%s' is a parameter name and cannot also be a size symbol", e->name);
        return -1;
    }
    s = ar_alloc(&ck->scratch, sizeof *s);
    if (!s || !(s->value = poly_atom(&ck->scratch, e->name))) {
        ck->oom = 1;
        return -1;
    }
    s->name = e->name;
    s->loc = e->loc;
    s->origin = ar_printf(&ck->scratch, "dimension %u of '%s'", d, p->name ? p->name : "?");
    HASH_ADD_KEYPTR(hh, ck->syms, s->name, strlen(s->name), s);
    return 0;
}

/* The names inside a rejected dimension still become symbols, so that
 * their later uses do not repeat the error as unknown symbols. */
static void add_symbols_in(checker *ck, const tilec_expr *e, const tilec_param *p, uint32_t d)
{
    if (e->kind == TILEC_EX_NAME && !chk_lookup(ck, e->name))
        add_symbol(ck, e, p, d);
    for (uint32_t i = 0; i < e->nargs; i++)
        add_symbols_in(ck, e->args[i], p, d);
}

/* Parameters of graphs and externs: T[d0, d1, ...] whose dimensions are a
 * symbol (bound here if new) or an integer. Reports every bad dimension. */
int chk_bind_dims(checker *ck, const tilec_param *p, const char *owner)
{
    int ret = 0;
    for (uint32_t d = 0; d < p->type.ndims; d++) {
        const tilec_expr *e = p->type.dims[d];
        if (e->kind == TILEC_EX_INT) {
            if (e->ival <= 0) {
                chk_err(ck, &e->loc, "a dimension must be positive, got %lld", (long long)e->ival);
                ret = -1;
            }
        } else if (e->kind != TILEC_EX_NAME) {
            chk_err(ck, chk_start_of(e), "a dimension of a parameter of %s must be a size symbol or an integer, got an expression",
                owner);
            add_symbols_in(ck, e, p, d);
            ret = -1;
        } else if (add_symbol(ck, e, p, d)) {
            ret = -1;
        }
    }
    return ret;
}

void chk_reset_graph(checker *ck)
{
    HASH_CLEAR(hh, ck->syms);
    ck->rdims = NULL;
    chk_reset_env(ck);
}
