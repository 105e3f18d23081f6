/* check.c: name, type and shape checks of a parsed module. Kernels are
 * checked once per hint configuration (the base hints, then each variant),
 * so a shape that only breaks in one variant is reported, once, naming it.
 * Graphs are checked with symbolic sizes (util/poly.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "parser/parse.h"
#include "parser/size_poly.h"
#include "tilec/limits.h"
#include "util/strbuf.h"

#define uthash_nonfatal_oom(e) (ck->oom = 1)
#include "util/hashtable.h"

/* ---- bindings and the checker ---- */

typedef enum { B_PARAM, B_HINT, B_LET, B_LOOP, B_TENSOR, B_SCALAR } bkind;

typedef struct binding {
    const char *name;
    bkind kind;
    tilec_type type;
    tilec_loc loc;
    int64_t value;   /* B_HINT */
    uint32_t depth;
    /* graphs */
    tilec_dtype dtype;
    uint32_t rank;
    const poly **dims;
    const char *text; /* "f32[R, C]" */
    UT_hash_handle hh;
} binding;

typedef struct seen_msg {
    char *key;
    UT_hash_handle hh;
} seen_msg;

typedef struct symbol {
    const char *name;
    const poly *value;
    const char *origin; /* "dimension 0 of 'x'" */
    tilec_loc loc;
    UT_hash_handle hh;
} symbol;

typedef struct item_name {
    const char *name;
    tilec_item_kind kind;
    void *node;
    tilec_loc loc;
    UT_hash_handle hh;
} item_name;

typedef struct checker {
    tilec_ctx *ctx;
    tilec_module *mod;
    arena *ar;      /* the module arena: annotations that outlive the check */
    arena scratch;  /* per kernel configuration / graph */
    item_name *items;
    /* current kernel configuration */
    const tilec_kernel *k;
    int variant; /* -1: base hints */
    int annotate;
    binding *env;
    binding **stack;
    size_t nstack, capstack;
    uint32_t depth;
    seen_msg *seen;
    int emitted; /* the last error was emitted (notes follow it) */
    /* current graph */
    symbol *syms;
    const poly ***rdims; /* the declared results' dimensions (NULL: in error) */
    int oom;
} checker;

__attribute__((format(printf, 4, 0))) static void verr(checker *ck, const tilec_loc *loc, tilec_severity sev, const char *fmt, va_list ap)
{
    if (sev == TILEC_SEV_NOTE) {
        if (ck->emitted)
            diag_vat(ck->ctx, &ck->mod->src, loc, sev, fmt, ap);
        return;
    }
    strbuf b;
    sb_init(&b);
    sb_vprintf(&b, fmt, ap);
    if (b.failed) {
        ck->oom = 1;
        sb_free(&b);
        return;
    }
    ck->emitted = 1;
    if (ck->k && ck->k->nvariants) {
        /* the same error in another configuration is reported once */
        strbuf key;
        sb_init(&key);
        sb_printf(&key, "%u:%u:%s", loc ? loc->line : 0, loc ? loc->col : 0, sb_str(&b));
        seen_msg *s = NULL;
        HASH_FIND_STR(ck->seen, sb_str(&key), s);
        if (s) {
            ck->emitted = 0;
            sb_free(&key);
            sb_free(&b);
            return;
        }
        s = calloc(1, sizeof *s);
        if (s) {
            s->key = sb_take(&key);
            HASH_ADD_KEYPTR(hh, ck->seen, s->key, strlen(s->key), s);
        } else {
            ck->oom = 1;
        }
        sb_free(&key);
        if (ck->variant >= 0) {
            const tilec_variant *v = &ck->k->variants[ck->variant];
            sb_printf(&b, " (in variant %s = %lld)", ck->k->variant_sym, (long long)v->size);
        }
    }
    diag_at(ck->ctx, &ck->mod->src, loc, sev, "%s", sb_str(&b));
    sb_free(&b);
}

__attribute__((format(printf, 3, 4))) static void err(checker *ck, const tilec_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verr(ck, loc, TILEC_SEV_ERROR, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 3, 4))) static void note(checker *ck, const tilec_loc *loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verr(ck, loc, TILEC_SEV_NOTE, fmt, ap);
    va_end(ap);
}

static int stop(const checker *ck) { return ck->oom || diag_stopped(ck->ctx); }

static binding *lookup(checker *ck, const char *name)
{
    binding *b = NULL;
    HASH_FIND_STR(ck->env, name, b);
    return b;
}

/* Bind a name; a name already visible is an error (no shadowing). */
static binding *bind(checker *ck, const char *name, const tilec_loc *loc, bkind kind, const char *what)
{
    binding *old = lookup(ck, name);
    if (old) {
        static const char *const kinds[] = {"a parameter", "a hint", "a variable", "a loop variable",
                                            "a tensor", "a scalar"};
        err(ck, loc, "%s '%s' is already defined as %s", what, name, kinds[old->kind]);
        note(ck, &old->loc, "'%s' is defined here", name);
        return NULL;
    }
    binding *b = ar_alloc(&ck->scratch, sizeof *b);
    if (!b) {
        ck->oom = 1;
        return NULL;
    }
    b->name = name;
    b->loc = *loc;
    b->kind = kind;
    b->depth = ck->depth;
    if (ck->nstack == ck->capstack) {
        size_t cap = ck->capstack ? ck->capstack * 2 : 32;
        binding **s = realloc(ck->stack, cap * sizeof *s);
        if (!s) {
            ck->oom = 1;
            return NULL;
        }
        ck->stack = s;
        ck->capstack = cap;
    }
    ck->stack[ck->nstack++] = b;
    HASH_ADD_KEYPTR(hh, ck->env, b->name, strlen(b->name), b);
    return b;
}

/* A graph name whose let failed (already reported): later uses are silent. */
static int poisoned(const binding *b) { return b && b->kind == B_TENSOR && b->type.kind == TILEC_TY_ERROR; }

static void leave_scope(checker *ck)
{
    while (ck->nstack && ck->stack[ck->nstack - 1]->depth == ck->depth) {
        binding *b = ck->stack[--ck->nstack];
        HASH_DEL(ck->env, b);
    }
    ck->depth--;
}

static void reset_env(checker *ck)
{
    HASH_CLEAR(hh, ck->syms); /* graph symbols live in the scratch arena too */
    HASH_CLEAR(hh, ck->env);
    ck->nstack = 0;
    ck->depth = 0;
    ar_free(&ck->scratch);
    ar_init(&ck->scratch);
}

/* ---- types ---- */

static tilec_type ty_err(void) { return (tilec_type){.kind = TILEC_TY_ERROR}; }
static tilec_type ty_void(void) { return (tilec_type){.kind = TILEC_TY_VOID}; }
static tilec_type ty_scalar(tilec_dtype dt) { return (tilec_type){.kind = TILEC_TY_VALUE, .dtype = dt}; }
static char dclass(tilec_dtype dt) { return tilec_dtype_class(dt); }
static int is_int(const tilec_type *t) { return t->kind == TILEC_TY_VALUE && !t->ptr && (dclass(t->dtype) == 's' || dclass(t->dtype) == 'u'); }
static int is_float(const tilec_type *t) { return t->kind == TILEC_TY_VALUE && !t->ptr && dclass(t->dtype) == 'f'; }
static int is_bool(const tilec_type *t) { return t->kind == TILEC_TY_VALUE && !t->ptr && t->dtype == TILEC_DT_BOOL; }
static int is_num(const tilec_type *t) { return is_int(t) || is_float(t); }

static void shape_str(strbuf *b, const tilec_type *t)
{
    sb_putc(b, '[');
    for (unsigned i = 0; i < t->rank; i++)
        sb_printf(b, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    sb_putc(b, ']');
}

/* "f32", "f32[128, 64]", "*f32", "*f32[128]" in the scratch arena */
static const char *ty_str(checker *ck, const tilec_type *t)
{
    if (t->kind == TILEC_TY_VOID)
        return "nothing";
    if (t->kind == TILEC_TY_DTYPE) {
        const char *d = ar_printf(&ck->scratch, "the type '%s'", tilec_dtype_name(t->dtype));
        return d ? d : "a type";
    }
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "%s%s", t->ptr ? "*" : "", tilec_dtype_name(t->dtype));
    if (t->rank)
        shape_str(&b, t);
    const char *s = ar_strdup(&ck->scratch, sb_str(&b));
    sb_free(&b);
    return s ? s : "?";
}

static const char *shp_str(checker *ck, const tilec_type *t)
{
    strbuf b;
    sb_init(&b);
    shape_str(&b, t);
    const char *s = ar_strdup(&ck->scratch, sb_str(&b));
    sb_free(&b);
    return s ? s : "?";
}

/* numpy broadcasting of the shapes of a and b into out (dtype untouched) */
static int bcast(const tilec_type *a, const tilec_type *b, tilec_type *out)
{
    unsigned r = a->rank > b->rank ? a->rank : b->rank;
    int64_t dims[TILEC_MAX_RANK] = {0};
    for (unsigned i = 0; i < r; i++) {
        int ia = (int)a->rank - (int)r + (int)i, ib = (int)b->rank - (int)r + (int)i;
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return -1;
        dims[i] = da == 1 ? db : da;
    }
    out->rank = (uint8_t)r;
    memcpy(out->dims, dims, sizeof dims);
    return 0;
}

static int float_rank(tilec_dtype d) { return d == TILEC_DT_F64 ? 3 : d == TILEC_DT_F32 ? 2 : 1; }

/* The dtype two numeric operands meet at (C-like; untyped literals adapt). */
static tilec_type promote(const tilec_type *a, const tilec_type *b)
{
    tilec_type r = ty_scalar(TILEC_DT_I32);
    if (a->weak != b->weak) {
        const tilec_type *w = a->weak ? a : b, *s = a->weak ? b : a;
        r.dtype = dclass(w->dtype) == 'f' && dclass(s->dtype) != 'f' ? TILEC_DT_F32 : s->dtype;
        return r;
    }
    r.weak = a->weak && b->weak;
    char ca = dclass(a->dtype), cb = dclass(b->dtype);
    if (ca == 'f' || cb == 'f') {
        if (ca == 'f' && cb == 'f') {
            if (a->dtype == b->dtype)
                r.dtype = a->dtype;
            else if (float_rank(a->dtype) == float_rank(b->dtype))
                r.dtype = TILEC_DT_F32; /* f16 with bf16 */
            else
                r.dtype = float_rank(a->dtype) > float_rank(b->dtype) ? a->dtype : b->dtype;
        } else
            r.dtype = ca == 'f' ? a->dtype : b->dtype;
        return r;
    }
    unsigned sa = tilec_dtype_size(a->dtype), sb = tilec_dtype_size(b->dtype);
    if (sa != sb)
        r.dtype = sa > sb ? a->dtype : b->dtype;
    else
        r.dtype = ca == 'u' ? a->dtype : b->dtype;
    return r;
}

/* ---- compile-time constants ---- */

/* Evaluate an integer constant expression over literals and hints. On
 * failure reports why (naming `what`) and returns -1. */
static int const_eval(checker *ck, const tilec_expr *e, const char *what, int64_t *out)
{
    switch (e->kind) {
    case TILEC_EX_INT:
        *out = e->ival;
        return 0;
    case TILEC_EX_FLOAT:
    case TILEC_EX_INF:
        err(ck, &e->loc, "%s must be an integer, got the float %s", what, e->kind == TILEC_EX_INF ? "inf" : e->name);
        return -1;
    case TILEC_EX_NAME: {
        binding *b = lookup(ck, e->name);
        if (b && b->kind == B_HINT) {
            *out = b->value;
            return 0;
        }
        const tilec_hint *later = NULL;
        for (uint32_t i = 0; !b && ck->k && i < ck->k->nhints && !later; i++)
            if (!strcmp(ck->k->hints[i].name, e->name))
                later = &ck->k->hints[i];
        if (later) {
            err(ck, &e->loc, "hint '%s' is used before it is defined (a hint may only use the hints before it)",
                e->name);
            note(ck, &later->loc, "'%s' is defined here", e->name);
        } else if (!b)
            err(ck, &e->loc, "undefined name '%s'", e->name);
        else
            err(ck, &e->loc, "%s must be a compile-time constant (integer literals and hints), but '%s' is %s",
                what, e->name, b->kind == B_PARAM ? "a parameter" : "a run-time value");
        return -1;
    }
    case TILEC_EX_UNARY: {
        int64_t a;
        if (const_eval(ck, e->args[0], what, &a))
            return -1;
        if (e->op == TILEC_OP_NEG) {
            if (a == INT64_MIN)
                goto overflow;
            *out = -a;
        } else if (e->op == TILEC_OP_BITNOT)
            *out = ~a;
        else
            goto notconst;
        return 0;
    }
    case TILEC_EX_BINARY: {
        int64_t a, b;
        if (const_eval(ck, e->args[0], what, &a) || const_eval(ck, e->args[1], what, &b))
            return -1;
        switch (e->op) {
        case TILEC_OP_ADD: if (__builtin_add_overflow(a, b, out)) goto overflow; return 0;
        case TILEC_OP_SUB: if (__builtin_sub_overflow(a, b, out)) goto overflow; return 0;
        case TILEC_OP_MUL: if (__builtin_mul_overflow(a, b, out)) goto overflow; return 0;
        case TILEC_OP_DIV:
        case TILEC_OP_MOD:
            if (b == 0) {
                err(ck, &e->loc, "division by zero in %s", what);
                return -1;
            }
            if (a == INT64_MIN && b == -1)
                goto overflow;
            *out = e->op == TILEC_OP_DIV ? a / b : a % b;
            return 0;
        case TILEC_OP_SHL:
        case TILEC_OP_SHR:
            if (b < 0 || b > 62 || a < 0 || (e->op == TILEC_OP_SHL && a > (INT64_MAX >> b)))
                goto overflow;
            *out = e->op == TILEC_OP_SHL ? a << b : a >> b;
            return 0;
        case TILEC_OP_AND: *out = a & b; return 0;
        case TILEC_OP_OR: *out = a | b; return 0;
        case TILEC_OP_XOR: *out = a ^ b; return 0;
        default: goto notconst;
        }
    }
    case TILEC_EX_CALL:
        if (!strcmp(e->name, "cdiv") && e->nargs == 2) {
            int64_t a, b;
            if (const_eval(ck, e->args[0], what, &a) || const_eval(ck, e->args[1], what, &b))
                return -1;
            if (b <= 0 || a < 0) {
                err(ck, &e->loc, "cdiv in %s needs a >= 0 and b > 0, got cdiv(%lld, %lld)", what,
                    (long long)a, (long long)b);
                return -1;
            }
            *out = a / b + (a % b != 0);
            return 0;
        }
        goto notconst;
    default:
        goto notconst;
    }
notconst:
    err(ck, &e->loc, "%s must be a compile-time integer constant (integer literals and hints)", what);
    return -1;
overflow:
    err(ck, &e->loc, "%s overflows a 64-bit integer", what);
    return -1;
}

/* A tile dimension: a positive power of two up to TILEC_MAX_TILE_DIM. */
static int tile_dim(checker *ck, const tilec_expr *e, int64_t *out)
{
    if (const_eval(ck, e, "a tile size", out))
        return -1;
    int64_t v = *out;
    if (v <= 0 || v > TILEC_MAX_TILE_DIM || (v & (v - 1))) {
        err(ck, &e->loc, "tile size must be a power of two from 1 to %d, got %lld", TILEC_MAX_TILE_DIM,
            (long long)v);
        binding *b = e->kind == TILEC_EX_NAME ? lookup(ck, e->name) : NULL;
        if (b && b->kind == B_HINT)
            note(ck, &b->loc, "hint '%s' is set to %lld here", e->name, (long long)v);
        return -1;
    }
    return 0;
}

/* 32-bit registers per element of a tile of dtype d held by one thread:
 * f16 and bf16 pack two to a register, 8- and 16-bit integers and bools
 * take one each, 64-bit types two. Times 2, so that halves are exact. */
static int64_t regs2_per_elem(tilec_dtype d)
{
    unsigned size = tilec_dtype_size(d);
    if (d == TILEC_DT_F16 || d == TILEC_DT_BF16)
        return 1;
    return size <= 4 ? 2 : 4;
}

/* The registers one thread needs for tile t with `warps` warps: its
 * elements spread over 32*warps threads, each holding its share (lowering's
 * layouts, docs/lowering.md); at least one element each. */
static int64_t tile_regs(const tilec_type *t, int64_t n, int64_t warps)
{
    int64_t threads = 32 * warps, per = (n + threads - 1) / threads;
    return (per * regs2_per_elem(t->dtype) + 1) / 2;
}

static int tile_numel_ok(checker *ck, const tilec_loc *loc, const tilec_type *t)
{
    int64_t n = 1;
    for (unsigned i = 0; i < t->rank; i++) {
        if (__builtin_mul_overflow(n, t->dims[i], &n) || n > TILEC_MAX_TILE_ELEMS) {
            err(ck, loc, "tile %s has more than %d elements (the largest tile tilec accepts)", shp_str(ck, t),
                TILEC_MAX_TILE_ELEMS);
            return 0;
        }
    }
    /* registers: a tile a thread cannot hold makes NVRTC spill it all,
     * which takes minutes and gigabytes (a 256x256 f32 tile at warps = 1:
     * 2048 registers a thread, 105 s and 5.9 GB), for a kernel that would
     * crawl; the limit is per tile, a bound every kernel we know keeps */
    binding *w = lookup(ck, "warps");
    int64_t warps = w && w->kind == B_HINT && w->value >= 1 && w->value <= 32 ? w->value : 4;
    int64_t regs = tile_regs(t, n, warps);
    if (regs <= TILEC_MAX_TILE_REGS)
        return 1;
    int64_t need = warps;
    while (need < 32 && tile_regs(t, n, need) > TILEC_MAX_TILE_REGS)
        need *= 2;
    int64_t fit = TILEC_MAX_TILE_REGS * 2 / regs2_per_elem(t->dtype) * 32 * warps;
    if (tile_regs(t, n, need) <= TILEC_MAX_TILE_REGS)
        err(ck, loc,
            "tile %s needs %lld registers in each of the %lld threads of warps = %lld, more than %d: at warps = %lld "
            "a tile of %s holds at most %lld elements; this one needs warps = %lld",
            shp_str(ck, t), (long long)regs, (long long)(32 * warps), (long long)warps, TILEC_MAX_TILE_REGS,
            (long long)warps, tilec_dtype_name(t->dtype), (long long)fit, (long long)need);
    else
        err(ck, loc,
            "tile %s needs %lld registers in each of the %lld threads of warps = %lld, more than %d: at warps = %lld "
            "a tile of %s holds at most %lld elements, and even warps = 32 is not enough; use a smaller tile",
            shp_str(ck, t), (long long)regs, (long long)(32 * warps), (long long)warps, TILEC_MAX_TILE_REGS,
            (long long)warps, tilec_dtype_name(t->dtype), (long long)fit);
    return 0;
}

/* ---- kernel expressions ---- */

/* The value of a literal, a hint or their negation, without reporting
 * anything: 1 when known. */
static int known_int(checker *ck, const tilec_expr *e, int64_t *out)
{
    if (e->kind == TILEC_EX_INT) {
        *out = e->ival;
        return 1;
    }
    if (e->kind == TILEC_EX_NAME) {
        binding *b = lookup(ck, e->name);
        if (!b || b->kind != B_HINT)
            return 0;
        *out = b->value;
        return 1;
    }
    if (e->kind == TILEC_EX_UNARY && e->op == TILEC_OP_NEG && known_int(ck, e->args[0], out) && *out != INT64_MIN) {
        *out = -*out;
        return 1;
    }
    return 0;
}

static tilec_type check_expr(checker *ck, tilec_expr *e);

/* Where an error about a whole expression points: its first token (a binary
 * or index expression's own location is its operator). */
static const tilec_loc *start_of(const tilec_expr *e)
{
    while (e->kind == TILEC_EX_BINARY || e->kind == TILEC_EX_INDEX)
        e = e->args[0];
    return &e->loc;
}

static tilec_type set(checker *ck, tilec_expr *e, tilec_type t)
{
    if (ck->annotate)
        e->type = t;
    if (ck->k && ck->k->nvariants && ck->variant >= 0) {
        if (!e->vtypes)
            e->vtypes = ar_array(ck->ar, ck->k->nvariants, sizeof *e->vtypes);
        if (e->vtypes)
            e->vtypes[ck->variant] = t;
        else
            ck->oom = 1;
    }
    return t;
}

static const char *const op_names[] = {
#define X(e, s) s,
    TILEC_BINOPS(X) TILEC_UNOPS(X)
#undef X
};

static tilec_type check_binary(checker *ck, tilec_expr *e)
{
    tilec_type a = check_expr(ck, e->args[0]), b = check_expr(ck, e->args[1]);
    if (a.kind == TILEC_TY_ERROR || b.kind == TILEC_TY_ERROR)
        return ty_err();
    const char *op = op_names[e->op];
    if (a.kind != TILEC_TY_VALUE || b.kind != TILEC_TY_VALUE) {
        err(ck, &e->loc, "operands of '%s' must be values, got %s and %s", op, ty_str(ck, &a), ty_str(ck, &b));
        return ty_err();
    }
    tilec_type r = a;
    if (bcast(&a, &b, &r)) {
        err(ck, &e->loc, "shapes %s and %s do not broadcast in '%s'", shp_str(ck, &a), shp_str(ck, &b), op);
        return ty_err();
    }
    tilec_type p;
    switch (e->op) {
    case TILEC_OP_ADD:
    case TILEC_OP_SUB:
        if (a.ptr || b.ptr) {
            const tilec_type *ptr = a.ptr ? &a : &b, *off = a.ptr ? &b : &a;
            if (a.ptr && b.ptr) {
                err(ck, &e->loc, "cannot apply '%s' to two pointers (%s and %s)", op, ty_str(ck, &a), ty_str(ck, &b));
                return ty_err();
            }
            if (!is_int(off) || (e->op == TILEC_OP_SUB && b.ptr)) {
                err(ck, &e->loc, "pointer arithmetic needs an integer offset, got %s %s %s", ty_str(ck, &a), op,
                    ty_str(ck, &b));
                return ty_err();
            }
            r.ptr = true;
            r.weak = false;
            r.dtype = ptr->dtype;
            return r;
        }
        __attribute__((fallthrough));
    case TILEC_OP_MUL:
    case TILEC_OP_DIV:
    case TILEC_OP_MOD:
        if (!is_num(&a) || !is_num(&b)) {
            err(ck, &e->loc, "'%s' needs numeric operands, got %s and %s", op, ty_str(ck, &a), ty_str(ck, &b));
            return ty_err();
        }
        p = promote(&a, &b);
        int64_t divisor;
        if ((e->op == TILEC_OP_DIV || e->op == TILEC_OP_MOD) && dclass(p.dtype) != 'f' &&
            known_int(ck, e->args[1], &divisor) && divisor == 0) {
            err(ck, &e->loc, "integer division by zero in '%s'", op);
            return ty_err();
        }
        r.dtype = p.dtype;
        r.weak = p.weak;
        r.ptr = false;
        return r;
    case TILEC_OP_EQ: case TILEC_OP_NE: case TILEC_OP_LT:
    case TILEC_OP_LE: case TILEC_OP_GT: case TILEC_OP_GE:
        if (a.ptr || b.ptr || (is_bool(&a) != is_bool(&b) )) {
            if (!(a.ptr && b.ptr && a.dtype == b.dtype)) {
                err(ck, &e->loc, "cannot compare %s with %s", ty_str(ck, &a), ty_str(ck, &b));
                return ty_err();
            }
        }
        r.dtype = TILEC_DT_BOOL;
        r.weak = r.ptr = false;
        return r;
    case TILEC_OP_ANDAND:
    case TILEC_OP_OROR:
        if (!is_bool(&a) || !is_bool(&b)) {
            err(ck, &e->loc, "'%s' needs bool operands, got %s and %s", op, ty_str(ck, &a), ty_str(ck, &b));
            return ty_err();
        }
        r.dtype = TILEC_DT_BOOL;
        r.weak = false;
        return r;
    case TILEC_OP_AND:
    case TILEC_OP_OR:
    case TILEC_OP_XOR:
        if (is_bool(&a) && is_bool(&b)) {
            r.dtype = TILEC_DT_BOOL;
            r.weak = false;
            return r;
        }
        __attribute__((fallthrough));
    case TILEC_OP_SHL:
    case TILEC_OP_SHR:
        if (!is_int(&a) || !is_int(&b)) {
            err(ck, &e->loc, "'%s' needs integer operands, got %s and %s", op, ty_str(ck, &a), ty_str(ck, &b));
            return ty_err();
        }
        p = promote(&a, &b);
        r.dtype = p.dtype;
        r.weak = p.weak;
        return r;
    default:
        return ty_err();
    }
}

static tilec_type check_unary(checker *ck, tilec_expr *e)
{
    tilec_type a = check_expr(ck, e->args[0]);
    if (a.kind == TILEC_TY_ERROR)
        return a;
    int ok = e->op == TILEC_OP_NEG ? is_num(&a) : e->op == TILEC_OP_NOT ? is_bool(&a) : is_int(&a);
    if (!ok) {
        static const char *const need[] = {"a numeric", "a bool", "an integer"};
        err(ck, &e->loc, "unary '%s' needs %s operand, got %s", op_names[e->op],
            need[e->op - TILEC_OP_NEG], ty_str(ck, &a));
        return ty_err();
    }
    return a;
}

/* t[:, None] — slots are ':' (keep an axis) or None (insert one). */
static tilec_type check_index(checker *ck, tilec_expr *e)
{
    tilec_type a = check_expr(ck, e->args[0]);
    if (a.kind == TILEC_TY_ERROR)
        return a;
    if (a.kind != TILEC_TY_VALUE) {
        err(ck, &e->loc, "cannot index %s", ty_str(ck, &a));
        return ty_err();
    }
    unsigned keep = 0, rank = 0;
    tilec_type r = a;
    for (uint32_t i = 1; i < e->nargs; i++) {
        const tilec_expr *it = e->args[i];
        if (it->kind == TILEC_EX_SLICE) {
            if (keep >= a.rank) {
                err(ck, &it->loc, "too many ':' for a value of shape %s", shp_str(ck, &a));
                return ty_err();
            }
            if (rank < TILEC_MAX_RANK)
                r.dims[rank] = a.dims[keep];
            keep++;
        } else if (it->kind == TILEC_EX_NONE) {
            if (rank < TILEC_MAX_RANK)
                r.dims[rank] = 1;
        } else {
            err(ck, &it->loc, "a tile index is ':' or None; element indexing is not supported");
            return ty_err();
        }
        rank++;
    }
    if (keep != a.rank) {
        err(ck, &e->loc, "indexing a value of shape %s needs %u ':' (one per axis), got %u", shp_str(ck, &a), a.rank, keep);
        return ty_err();
    }
    if (rank > TILEC_MAX_RANK) {
        err(ck, &e->loc, "tiles have at most %d dimensions, this index makes %u", TILEC_MAX_RANK, rank);
        return ty_err();
    }
    r.rank = (uint8_t)rank;
    return r;
}

#define BUILTINS(X)                                                              \
    X(PID, "pid", 1, 1) X(NUM_PROGRAMS, "num_programs", 1, 1) X(RANGE, "range", 1, 1) \
    X(ZEROS, "zeros", 1, 1 + TILEC_MAX_RANK) X(FULL, "full", 2, 2 + TILEC_MAX_RANK)     \
    X(LOAD, "load", 1, 3) X(STORE, "store", 2, 3) X(ATOMIC_ADD, "atomic_add", 2, 3)     \
    X(DOT, "dot", 2, 2) X(SUM, "sum", 2, 2) X(MAX, "max", 2, 2) X(MIN, "min", 2, 2)     \
    X(ARGMAX, "argmax", 2, 2) X(ARGMIN, "argmin", 2, 2) X(MAXIMUM, "maximum", 2, 2)     \
    X(MINIMUM, "minimum", 2, 2) X(WHERE, "where", 3, 3) X(EXP, "exp", 1, 1)             \
    X(EXP2, "exp2", 1, 1) X(LOG, "log", 1, 1) X(LOG2, "log2", 1, 1) X(SQRT, "sqrt", 1, 1) \
    X(RSQRT, "rsqrt", 1, 1) X(SIN, "sin", 1, 1) X(COS, "cos", 1, 1) X(TANH, "tanh", 1, 1) \
    X(SIGMOID, "sigmoid", 1, 1) X(ERF, "erf", 1, 1) X(ABS, "abs", 1, 1)                 \
    X(FLOOR, "floor", 1, 1) X(CEIL, "ceil", 1, 1) X(FMA, "fma", 3, 3) X(CAST, "cast", 2, 2) \
    X(TRANS, "trans", 1, 1) X(CDIV, "cdiv", 2, 2)

typedef enum {
#define X(e, s, lo, hi) BI_##e,
    BUILTINS(X)
#undef X
    BI_COUNT
} builtin;

static const struct {
    const char *name;
    int lo, hi;
} builtins[] = {
#define X(e, s, lo, hi) {s, lo, hi},
    BUILTINS(X)
#undef X
};

static int find_builtin(const char *name)
{
    for (int i = 0; i < BI_COUNT; i++)
        if (!strcmp(builtins[i].name, name))
            return i;
    return -1;
}

/* Shape and dtype checks of the builtins; args already counted. */
static tilec_type check_builtin(checker *ck, tilec_expr *e, int bi)
{
    const char *fn = builtins[bi].name;
    tilec_expr **a = e->args;
    uint32_t n = e->nargs;
    tilec_type t[3] = {ty_err(), ty_err(), ty_err()};

    switch (bi) {
    case BI_PID:
    case BI_NUM_PROGRAMS: {
        int64_t axis;
        if (const_eval(ck, a[0], "a grid axis", &axis) || !ck->k->ngrid)
            return ty_err();
        if (axis < 0 || axis > 2 || (uint64_t)axis >= ck->k->ngrid) {
            err(ck, start_of(a[0]), "%s(%lld): the grid of '%s' has %u dimension%s", fn, (long long)axis, ck->k->name,
                ck->k->ngrid, ck->k->ngrid == 1 ? "" : "s");
            return ty_err();
        }
        return ty_scalar(TILEC_DT_I32);
    }
    case BI_RANGE: {
        int64_t d;
        if (tile_dim(ck, a[0], &d))
            return ty_err();
        tilec_type r = ty_scalar(TILEC_DT_I32);
        r.rank = 1;
        r.dims[0] = d;
        return r;
    }
    case BI_ZEROS:
    case BI_FULL: {
        if (a[0]->kind != TILEC_EX_DTYPE) {
            err(ck, start_of(a[0]), "the first argument of %s is an element type such as f32", fn);
            return ty_err();
        }
        tilec_type r = ty_scalar(a[0]->dtype);
        uint32_t d0 = 1;
        if (bi == BI_FULL) {
            tilec_type v = check_expr(ck, a[1]);
            if (v.kind == TILEC_TY_ERROR)
                return v;
            if (v.kind != TILEC_TY_VALUE || v.rank || v.ptr || (!is_num(&v) && !is_bool(&v))) {
                err(ck, start_of(a[1]), "the value of full is a number, got %s", ty_str(ck, &v));
                return ty_err();
            }
            d0 = 2;
        }
        for (uint32_t i = d0; i < n; i++)
            if (tile_dim(ck, a[i], &r.dims[i - d0]))
                return ty_err();
        r.rank = (uint8_t)(n - d0);
        if (!tile_numel_ok(ck, &e->loc, &r))
            return ty_err();
        return r;
    }
    default:
        break;
    }

    for (uint32_t i = 0; i < n && i < 3; i++) {
        if (bi == BI_CAST && i == 1)
            break;
        t[i] = check_expr(ck, a[i]);
        if (t[i].kind == TILEC_TY_ERROR)
            return ty_err();
        if (t[i].kind != TILEC_TY_VALUE) {
            err(ck, start_of(a[i]), "argument %u of %s must be a value, got %s", i + 1, fn, ty_str(ck, &t[i]));
            return ty_err();
        }
    }

    switch (bi) {
    case BI_LOAD:
    case BI_STORE:
    case BI_ATOMIC_ADD: {
        if (!t[0].ptr) {
            err(ck, start_of(a[0]), "the first argument of %s must be a pointer, got %s", fn, ty_str(ck, &t[0]));
            return ty_err();
        }
        tilec_type shape = t[0];
        int mask_arg = bi == BI_LOAD ? 1 : 2;
        for (uint32_t i = 1; i < n; i++) {
            const tilec_type *x = &t[i];
            if ((int)i == mask_arg && !is_bool(x)) {
                err(ck, start_of(a[i]), "the mask of %s must be bool, got %s", fn, ty_str(ck, x));
                return ty_err();
            }
            if ((int)i != mask_arg && !is_num(x) && !is_bool(x)) {
                err(ck, start_of(a[i]), "the %s of %s must be a number, got %s", bi == BI_LOAD ? "other value" : "value",
                    fn, ty_str(ck, x));
                return ty_err();
            }
            tilec_type s = shape;
            if (bcast(&shape, x, &s)) {
                err(ck, start_of(a[i]), "the %s of %s has shape %s, which does not broadcast with the pointer shape %s",
                    (int)i == mask_arg ? "mask" : bi == BI_LOAD ? "other value" : "value", fn, shp_str(ck, x),
                    shp_str(ck, &shape));
                return ty_err();
            }
            if (bi != BI_LOAD && s.rank != shape.rank) {
                err(ck, start_of(a[i]), "%s of a %s value through a pointer of shape %s", fn, shp_str(ck, x),
                    shp_str(ck, &t[0]));
                return ty_err();
            }
            shape = s;
        }
        if (bi != BI_LOAD && memcmp(shape.dims, t[0].dims, shape.rank * sizeof shape.dims[0]) != 0) {
            err(ck, &e->loc, "%s through a pointer of shape %s would write a %s tile", fn, shp_str(ck, &t[0]),
                shp_str(ck, &shape));
            return ty_err();
        }
        if (bi == BI_STORE)
            return ty_void();
        if (bi == BI_ATOMIC_ADD) {
            tilec_dtype d = t[0].dtype;
            if (d != TILEC_DT_I32 && d != TILEC_DT_U32 && d != TILEC_DT_U64 && d != TILEC_DT_F32 &&
                d != TILEC_DT_F64 && d != TILEC_DT_F16 && d != TILEC_DT_BF16) {
                err(ck, start_of(a[0]), "atomic_add does not support %s (supported: i32 u32 u64 f16 bf16 f32 f64)",
                    tilec_dtype_name(d));
                return ty_err();
            }
        }
        shape.ptr = false;
        shape.weak = false;
        shape.dtype = t[0].dtype;
        return shape;
    }
    case BI_DOT: {
        if (t[0].rank != 2 || t[1].rank != 2 || t[0].ptr || t[1].ptr) {
            err(ck, &e->loc, "dot needs two 2-D tiles, got %s and %s", ty_str(ck, &t[0]), ty_str(ck, &t[1]));
            return ty_err();
        }
        if (t[0].dims[1] != t[1].dims[0]) {
            err(ck, &e->loc, "dot: the first operand has %lld columns but the second has %lld rows (%s @ %s)",
                (long long)t[0].dims[1], (long long)t[1].dims[0], shp_str(ck, &t[0]), shp_str(ck, &t[1]));
            return ty_err();
        }
        tilec_dtype d = t[0].dtype;
        if (d != t[1].dtype || (d != TILEC_DT_F16 && d != TILEC_DT_BF16 && d != TILEC_DT_F32)) {
            err(ck, &e->loc, "dot operands must both be f16, both bf16 or both f32, got %s and %s",
                tilec_dtype_name(d), tilec_dtype_name(t[1].dtype));
            return ty_err();
        }
        if (d != TILEC_DT_F32 && (t[0].dims[0] < 16 || t[0].dims[1] < 16 || t[1].dims[1] < 16)) {
            err(ck, &e->loc, "dot of %s tiles needs every dimension >= 16 (tensor cores), got %s @ %s",
                tilec_dtype_name(d), shp_str(ck, &t[0]), shp_str(ck, &t[1]));
            return ty_err();
        }
        tilec_type r = ty_scalar(TILEC_DT_F32);
        r.rank = 2;
        r.dims[0] = t[0].dims[0];
        r.dims[1] = t[1].dims[1];
        if (!tile_numel_ok(ck, &e->loc, &r))
            return ty_err();
        return r;
    }
    case BI_SUM: case BI_MAX: case BI_MIN: case BI_ARGMAX: case BI_ARGMIN: {
        int64_t axis;
        if (const_eval(ck, a[1], "a reduction axis", &axis))
            return ty_err();
        if (t[0].ptr || !(is_num(&t[0]) || (bi == BI_SUM && is_bool(&t[0])))) {
            err(ck, start_of(a[0]), "%s needs a numeric tile, got %s", fn, ty_str(ck, &t[0]));
            return ty_err();
        }
        if (t[0].rank == 0) {
            err(ck, start_of(a[0]), "%s reduces a tile, got the scalar %s", fn, ty_str(ck, &t[0]));
            return ty_err();
        }
        if (axis < 0)
            axis += t[0].rank;
        if (axis < 0 || axis >= t[0].rank) {
            err(ck, start_of(a[1]), "axis %lld is out of range for shape %s", (long long)axis, shp_str(ck, &t[0]));
            return ty_err();
        }
        tilec_type r = t[0];
        for (int i = (int)axis; i + 1 < r.rank; i++)
            r.dims[i] = r.dims[i + 1];
        r.rank--;
        r.dims[r.rank] = 0;
        r.weak = false;
        if (bi == BI_ARGMAX || bi == BI_ARGMIN)
            r.dtype = TILEC_DT_I32;
        else if (is_bool(&t[0]))
            r.dtype = TILEC_DT_I32;
        return r;
    }
    case BI_MAXIMUM:
    case BI_MINIMUM:
    case BI_CDIV: {
        int ok = bi == BI_CDIV ? is_int(&t[0]) && is_int(&t[1]) : is_num(&t[0]) && is_num(&t[1]);
        if (!ok) {
            err(ck, &e->loc, "%s needs %s operands, got %s and %s", fn, bi == BI_CDIV ? "integer" : "numeric",
                ty_str(ck, &t[0]), ty_str(ck, &t[1]));
            return ty_err();
        }
        tilec_type r = promote(&t[0], &t[1]);
        if (bcast(&t[0], &t[1], &r)) {
            err(ck, &e->loc, "shapes %s and %s do not broadcast in %s", shp_str(ck, &t[0]), shp_str(ck, &t[1]), fn);
            return ty_err();
        }
        int64_t divisor;
        if (bi == BI_CDIV && known_int(ck, a[1], &divisor) && divisor <= 0) {
            err(ck, start_of(a[1]), "the divisor of cdiv must be positive, got %lld", (long long)divisor);
            return ty_err();
        }
        return r;
    }
    case BI_WHERE: {
        if (!is_bool(&t[0])) {
            err(ck, start_of(a[0]), "the condition of where must be bool, got %s", ty_str(ck, &t[0]));
            return ty_err();
        }
        tilec_type r;
        if (t[1].ptr || t[2].ptr) {
            if (!(t[1].ptr && t[2].ptr && t[1].dtype == t[2].dtype)) {
                err(ck, &e->loc, "where cannot choose between %s and %s", ty_str(ck, &t[1]), ty_str(ck, &t[2]));
                return ty_err();
            }
            r = t[1];
        } else if ((is_bool(&t[1]) && is_bool(&t[2]))) {
            r = t[1];
        } else if (is_num(&t[1]) && is_num(&t[2])) {
            r = promote(&t[1], &t[2]);
        } else {
            err(ck, &e->loc, "where cannot choose between %s and %s", ty_str(ck, &t[1]), ty_str(ck, &t[2]));
            return ty_err();
        }
        tilec_type s = t[0];
        if (bcast(&t[0], &t[1], &s) || bcast(&s, &t[2], &s)) {
            err(ck, &e->loc, "shapes %s, %s and %s do not broadcast in where", shp_str(ck, &t[0]),
                shp_str(ck, &t[1]), shp_str(ck, &t[2]));
            return ty_err();
        }
        r.rank = s.rank;
        memcpy(r.dims, s.dims, sizeof r.dims);
        return r;
    }
    case BI_ABS:
        if (!is_num(&t[0])) {
            err(ck, start_of(a[0]), "abs needs a numeric operand, got %s", ty_str(ck, &t[0]));
            return ty_err();
        }
        return t[0];
    case BI_FMA: {
        for (int i = 0; i < 3; i++)
            if (!is_float(&t[i])) {
                err(ck, start_of(a[i]), "fma needs floating-point operands, got %s", ty_str(ck, &t[i]));
                return ty_err();
            }
        tilec_type r = promote(&t[0], &t[1]);
        r = promote(&r, &t[2]);
        tilec_type s = t[0];
        if (bcast(&t[0], &t[1], &s) || bcast(&s, &t[2], &s)) {
            err(ck, &e->loc, "shapes %s, %s and %s do not broadcast in fma", shp_str(ck, &t[0]), shp_str(ck, &t[1]),
                shp_str(ck, &t[2]));
            return ty_err();
        }
        r.rank = s.rank;
        memcpy(r.dims, s.dims, sizeof r.dims);
        return r;
    }
    case BI_CAST: {
        if (a[1]->kind != TILEC_EX_DTYPE) {
            err(ck, start_of(a[1]), "the second argument of cast is an element type such as f16");
            return ty_err();
        }
        if (t[0].ptr) {
            err(ck, start_of(a[0]), "cannot cast the pointer %s", ty_str(ck, &t[0]));
            return ty_err();
        }
        tilec_type r = t[0];
        r.dtype = a[1]->dtype;
        r.weak = false;
        return r;
    }
    case BI_TRANS: {
        if (t[0].rank != 2) {
            err(ck, start_of(a[0]), "trans needs a 2-D tile, got %s", ty_str(ck, &t[0]));
            return ty_err();
        }
        tilec_type r = t[0];
        r.dims[0] = t[0].dims[1];
        r.dims[1] = t[0].dims[0];
        return r;
    }
    default: /* exp, log, ... : floating-point elementwise */
        if (!is_float(&t[0])) {
            err(ck, start_of(a[0]), "%s needs a floating-point operand, got %s%s", fn, ty_str(ck, &t[0]),
                is_int(&t[0]) ? " (use cast(x, f32))" : "");
            return ty_err();
        }
        return t[0];
    }
}

static tilec_type check_call(checker *ck, tilec_expr *e)
{
    int bi = find_builtin(e->name);
    if (bi < 0) {
        item_name *it = NULL;
        HASH_FIND_STR(ck->items, e->name, it);
        if (it && it->kind == TILEC_ITEM_KERNEL)
            err(ck, &e->loc, "a kernel cannot call another kernel ('%s'); call kernels from a graph", e->name);
        else if (it)
            err(ck, &e->loc, "'%s' is %s; call it from a graph", e->name,
                it->kind == TILEC_ITEM_EXTERN ? "an extern" : "a graph");
        else
            err(ck, &e->loc, "unknown function '%s'", e->name);
        for (uint32_t i = 0; i < e->nargs; i++)
            check_expr(ck, e->args[i]);
        return ty_err();
    }
    if ((int)e->nargs < builtins[bi].lo || (int)e->nargs > builtins[bi].hi) {
        if (builtins[bi].lo == builtins[bi].hi)
            err(ck, &e->loc, "%s takes %d argument%s, got %u", e->name, builtins[bi].lo, builtins[bi].lo == 1 ? "" : "s",
                e->nargs);
        else
            err(ck, &e->loc, "%s takes %d to %d arguments, got %u", e->name, builtins[bi].lo, builtins[bi].hi, e->nargs);
        return ty_err();
    }
    return check_builtin(ck, e, bi);
}

static tilec_type check_expr(checker *ck, tilec_expr *e)
{
    if (stop(ck))
        return ty_err();
    tilec_type t = ty_err();
    switch (e->kind) {
    case TILEC_EX_INT:
        t = ty_scalar(e->ival > INT32_MAX ? TILEC_DT_I64 : TILEC_DT_I32);
        t.weak = true;
        break;
    case TILEC_EX_FLOAT:
    case TILEC_EX_INF:
        t = ty_scalar(TILEC_DT_F32);
        t.weak = true;
        break;
    case TILEC_EX_BOOL:
        t = ty_scalar(TILEC_DT_BOOL);
        break;
    case TILEC_EX_DTYPE:
        t = (tilec_type){.kind = TILEC_TY_DTYPE, .dtype = e->dtype};
        break;
    case TILEC_EX_NAME: {
        binding *b = lookup(ck, e->name);
        if (!b) {
            err(ck, &e->loc, "undefined name '%s'", e->name);
            break;
        }
        t = b->type;
        break;
    }
    case TILEC_EX_UNARY:
        t = check_unary(ck, e);
        break;
    case TILEC_EX_BINARY:
        t = check_binary(ck, e);
        break;
    case TILEC_EX_CALL:
        t = check_call(ck, e);
        break;
    case TILEC_EX_INDEX:
        t = check_index(ck, e);
        break;
    case TILEC_EX_LIST:
        err(ck, &e->loc, "a list [...] is only allowed in a graph (empty(f32, [R, C]))");
        break;
    case TILEC_EX_SLICE:
    case TILEC_EX_NONE:
        err(ck, &e->loc, "':' and None are only allowed inside an index");
        break;
    }
    if (t.kind == TILEC_TY_VALUE && t.rank && !tile_numel_ok(ck, &e->loc, &t))
        t = ty_err();
    return set(ck, e, t);
}

/* ---- kernel statements ---- */

static void check_block(checker *ck, const tilec_block *b);

static int same_type(const tilec_type *declared, const tilec_type *v)
{
    if (declared->ptr != v->ptr || declared->rank != v->rank)
        return 0;
    for (unsigned i = 0; i < v->rank; i++)
        if (declared->dims[i] != v->dims[i])
            return 0;
    if (declared->dtype == v->dtype)
        return 1;
    /* an untyped literal adapts to the variable's type */
    return v->weak && (dclass(declared->dtype) == 'f' || dclass(v->dtype) != 'f');
}

static void check_stmt(checker *ck, tilec_stmt *s)
{
    switch (s->kind) {
    case TILEC_ST_DOC:
        return;
    case TILEC_ST_LET: {
        tilec_type t = check_expr(ck, s->value);
        if (t.kind == TILEC_TY_VOID) {
            err(ck, start_of(s->value), "'%s' returns no value", s->value->kind == TILEC_EX_CALL ? s->value->name : "expression");
            t = ty_err();
        } else if (t.kind == TILEC_TY_DTYPE) {
            err(ck, start_of(s->value), "expected a value, found the type '%s'", tilec_dtype_name(t.dtype));
            t = ty_err();
        }
        binding *b = bind(ck, s->names[0], &s->name_locs[0], B_LET, "variable");
        if (b) {
            if (t.kind == TILEC_TY_VALUE)
                t.weak = false; /* a variable has a definite type */
            b->type = t;
        }
        return;
    }
    case TILEC_ST_ASSIGN: {
        tilec_type t = check_expr(ck, s->value);
        binding *b = lookup(ck, s->names[0]);
        if (!b) {
            err(ck, &s->name_locs[0], "assignment to undefined name '%s' (declare it with let)", s->names[0]);
            return;
        }
        if (b->kind != B_LET) {
            err(ck, &s->name_locs[0], "cannot assign to %s '%s'",
                b->kind == B_PARAM ? "parameter" : b->kind == B_HINT ? "hint" : "loop variable", s->names[0]);
            return;
        }
        if (t.kind == TILEC_TY_ERROR || b->type.kind == TILEC_TY_ERROR)
            return;
        if (t.kind != TILEC_TY_VALUE || !same_type(&b->type, &t)) {
            err(ck, start_of(s->value), "assignment changes the type of '%s' from %s to %s", s->names[0],
                ty_str(ck, &b->type), ty_str(ck, &t));
            note(ck, &b->loc, "'%s' is defined here", s->names[0]);
        }
        return;
    }
    case TILEC_ST_EXPR: {
        tilec_type t = check_expr(ck, s->value);
        (void)t;
        if (s->value->kind != TILEC_EX_CALL)
            err(ck, start_of(s->value), "this expression has no effect; only calls such as store(...) may stand alone");
        return;
    }
    case TILEC_ST_FOR: {
        tilec_expr *parts[3] = {s->lo, s->hi, s->step};
        static const char *const names[3] = {"start", "end", "step"};
        tilec_type lt = ty_scalar(TILEC_DT_I32);
        for (int i = 0; i < 3; i++) {
            if (!parts[i])
                continue;
            tilec_type t = check_expr(ck, parts[i]);
            if (t.kind == TILEC_TY_ERROR)
                continue;
            if (!is_int(&t) || t.rank) {
                err(ck, start_of(parts[i]), "the loop %s must be a scalar integer, got %s", names[i], ty_str(ck, &t));
                continue;
            }
            if (i < 2 && tilec_dtype_size(t.dtype) == 8 && !t.weak)
                lt.dtype = TILEC_DT_I64;
        }
        int64_t step;
        if (s->step && known_int(ck, s->step, &step) && step <= 0)
            err(ck, start_of(s->step), "the loop step must be positive, got %lld", (long long)step);
        ck->depth++;
        binding *b = bind(ck, s->names[0], &s->name_locs[0], B_LOOP, "loop variable");
        if (b)
            b->type = lt;
        check_block(ck, &s->body);
        leave_scope(ck);
        return;
    }
    case TILEC_ST_IF: {
        tilec_type t = check_expr(ck, s->value);
        if (t.kind != TILEC_TY_ERROR && (!is_bool(&t) || t.rank))
            err(ck, start_of(s->value), "an if condition must be a scalar bool, got %s%s", ty_str(ck, &t),
                t.rank ? " (use where(...) for tiles)" : "");
        ck->depth++;
        check_block(ck, &s->body);
        leave_scope(ck);
        if (s->has_else) {
            ck->depth++;
            check_block(ck, &s->orelse);
            leave_scope(ck);
        }
        return;
    }
    case TILEC_ST_RETURN:
        err(ck, &s->loc, "return is only allowed in a graph; a kernel writes its results with store(...)");
        return;
    case TILEC_ST_LET_TUPLE:
        err(ck, &s->loc, "let (...) binds the results of a multi-output extern and is only allowed in a graph");
        return;
    }
}

static void check_block(checker *ck, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts && !stop(ck); i++)
        check_stmt(ck, b->stmts[i]);
}

/* ---- kernels ---- */

/* Hint i of k as variant `variant` sets it: its override there, or the base hint. */
static const tilec_hint *hint_in(const tilec_kernel *k, int variant, uint32_t i)
{
    if (variant >= 0) {
        const tilec_variant *v = &k->variants[variant];
        for (uint32_t j = 0; j < v->noverrides; j++)
            if (!strcmp(v->overrides[j].name, k->hints[i].name))
                return &v->overrides[j];
    }
    return &k->hints[i];
}

static int host_expr_ok(checker *ck, const tilec_kernel *k, const tilec_expr *e)
{
    if (e->kind == TILEC_EX_CALL && strcmp(e->name, "cdiv") != 0) {
        err(ck, &e->loc, "the grid of '%s' is computed on the host from scalar parameters and hints; '%s' is not allowed",
            k->name, e->name);
        return 0;
    }
    if (e->kind == TILEC_EX_NAME) {
        binding *b = lookup(ck, e->name);
        if (b && b->type.ptr) {
            err(ck, &e->loc, "the grid of '%s' cannot use the pointer '%s'", k->name, e->name);
            return 0;
        }
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!host_expr_ok(ck, k, e->args[i]))
            return 0;
    return 1;
}

static void check_config(checker *ck, const tilec_kernel *k, int variant)
{
    reset_env(ck);
    ck->variant = variant;
    ck->annotate = variant < 0;
    for (uint32_t i = 0; i < k->nparams; i++) {
        const tilec_param *p = &k->params[i];
        if (lookup(ck, p->name))
            continue; /* reported once by check_kernel */
        binding *b = bind(ck, p->name, &p->loc, B_PARAM, "parameter");
        if (b) {
            b->type = ty_scalar(p->type.dtype);
            b->type.ptr = p->type.kind == TILEC_TE_POINTER;
        }
    }
    for (uint32_t i = 0; i < k->nhints; i++) {
        const tilec_hint *h = &k->hints[i];
        if (lookup(ck, h->name))
            continue;
        const tilec_hint *set = hint_in(k, variant, i);
        binding *b = bind(ck, h->name, &set->loc, B_HINT, "hint");
        if (b) {
            b->value = variant >= 0 && k->variants[variant].values ? k->variants[variant].values[i] : set->value;
            b->type = ty_scalar(b->value > INT32_MAX || b->value < INT32_MIN ? TILEC_DT_I64 : TILEC_DT_I32);
            b->type.weak = true;
        }
    }
    for (uint32_t i = 0; i < k->ngrid; i++) {
        tilec_expr *g = k->grid[i];
        if (!host_expr_ok(ck, k, g))
            continue;
        tilec_type t = check_expr(ck, g);
        if (t.kind != TILEC_TY_ERROR && (!is_int(&t) || t.rank))
            err(ck, start_of(g), "a grid dimension must be a scalar integer, got %s", ty_str(ck, &t));
    }
    ck->depth = 1;
    check_block(ck, &k->body);
}

/* Evaluate a hint's value in the environment of the hints before it. */
static int eval_hint_value(checker *ck, const char *name, const tilec_expr *expr, const char *what, int64_t *out)
{
    int64_t v;
    if (const_eval(ck, expr, what, &v))
        return -1;
    if (!strcmp(name, "warps") && (v < 1 || v > 32 || (v & (v - 1)))) {
        err(ck, &expr->loc, "warps must be 1, 2, 4, 8, 16 or 32 (a block of at most 1024 threads), got %lld",
            (long long)v);
        return -1;
    }
    if (!strcmp(name, "stages") && (v < 1 || v > TILEC_MAX_STAGES)) {
        err(ck, &expr->loc, "stages must be from 1 to %d, got %lld", TILEC_MAX_STAGES, (long long)v);
        return -1;
    }
    *out = v;
    return 0;
}

static int eval_hint(checker *ck, tilec_hint *h, const char *what)
{
    return eval_hint_value(ck, h->name, h->expr, what, &h->value);
}

/* The hints of variant vi: the base hints in order, overridden ones
 * replaced, later ones re-derived from the new values (BK = BM / 4 follows
 * an overridden BM). Hint bindings are restored afterwards. */
static int eval_variant_hints(checker *ck, tilec_kernel *k, uint32_t vi)
{
    tilec_variant *v = &k->variants[vi];
    v->values = ar_array(ck->ar, k->nhints ? k->nhints : 1, sizeof *v->values);
    if (!v->values) {
        ck->oom = 1;
        return -1;
    }
    int bad = 0;
    ck->variant = (int)vi;
    for (uint32_t i = 0; i < k->nhints && !bad; i++) {
        const tilec_hint *h = hint_in(k, (int)vi, i);
        bad = eval_hint_value(ck, k->hints[i].name, h->expr, "a hint value", &v->values[i]);
        binding *b = lookup(ck, k->hints[i].name);
        if (!bad && b && b->kind == B_HINT)
            b->value = v->values[i];
    }
    for (uint32_t i = 0; i < k->nhints; i++) {
        binding *b = lookup(ck, k->hints[i].name);
        if (b && b->kind == B_HINT)
            b->value = k->hints[i].value;
        if (!bad) {
            const tilec_hint *h = hint_in(k, (int)vi, i);
            if (h != &k->hints[i])
                ((tilec_hint *)h)->value = v->values[i];
        }
    }
    ck->variant = -1;
    return bad ? -1 : 0;
}

static void check_kernel(checker *ck, tilec_kernel *k)
{
    ck->k = k;
    ck->variant = -1;
    reset_env(ck);
    int ok = 1;
    /* parameters */
    for (uint32_t i = 0; i < k->nparams; i++) {
        tilec_param *p = &k->params[i];
        if (p->type.kind == TILEC_TE_TENSOR) {
            err(ck, &p->type.loc, "kernel parameter '%s' cannot be a tensor type; use a pointer such as *%s", p->name,
                tilec_dtype_name(p->type.dtype));
            ok = 0;
        }
        if (!bind(ck, p->name, &p->loc, B_PARAM, "parameter"))
            ok = 0;
    }
    /* hints, each evaluated with the ones before it */
    int hints_ok = 1;
    for (uint32_t i = 0; i < k->nhints; i++) {
        tilec_hint *h = &k->hints[i];
        if (eval_hint(ck, h, "a hint value"))
            hints_ok = 0;
        binding *b = bind(ck, h->name, &h->loc, B_HINT, "hint");
        if (b)
            b->value = h->value;
        else
            hints_ok = 0;
    }
    /* variants */
    if (k->variant_sym) {
        const tilec_param *p = NULL;
        for (uint32_t i = 0; i < k->nparams; i++)
            if (!strcmp(k->params[i].name, k->variant_sym)) {
                p = &k->params[i];
                k->variant_param = i;
            }
        if (!p) {
            err(ck, &k->variant_loc, "variants refer to '%s', which is not a parameter of kernel '%s'", k->variant_sym,
                k->name);
            ok = 0;
        } else if (p->type.kind != TILEC_TE_SCALAR || (tilec_dtype_class(p->type.dtype) != 's' &&
                                                         tilec_dtype_class(p->type.dtype) != 'u')) {
            err(ck, &k->variant_loc, "variants need an integer scalar parameter, but '%s' is %s%s", k->variant_sym,
                p->type.kind == TILEC_TE_POINTER ? "*" : "", tilec_dtype_name(p->type.dtype));
            ok = 0;
        }
        if (!k->nvariants) {
            err(ck, &k->variant_loc, "variants of '%s' list no sizes", k->name);
            ok = 0;
        }
        for (uint32_t i = 0; i < k->nvariants; i++) {
            tilec_variant *v = &k->variants[i];
            if (v->size <= 0) {
                err(ck, &v->loc, "a variant size must be positive, got %lld", (long long)v->size);
                ok = 0;
            }
            for (uint32_t j = 0; j < i; j++)
                if (k->variants[j].size == v->size) {
                    err(ck, &v->loc, "variant %s = %lld is listed twice", k->variant_sym, (long long)v->size);
                    note(ck, &k->variants[j].loc, "the first %s = %lld is here", k->variant_sym, (long long)v->size);
                    ok = 0;
                    break;
                }
            for (uint32_t j = 0; j < v->noverrides; j++) {
                tilec_hint *o = &v->overrides[j];
                int found = 0;
                for (uint32_t h = 0; h < k->nhints; h++)
                    found |= !strcmp(k->hints[h].name, o->name);
                for (uint32_t h = 0; h < j; h++)
                    if (!strcmp(v->overrides[h].name, o->name)) {
                        err(ck, &o->loc, "variant %s = %lld overrides '%s' twice", k->variant_sym, (long long)v->size,
                            o->name);
                        ok = 0;
                    }
                if (!found) {
                    err(ck, &o->loc, "variant %s = %lld overrides '%s', which is not a hint of kernel '%s'",
                        k->variant_sym, (long long)v->size, o->name, k->name);
                    ok = 0;
                } else if (eval_hint(ck, o, "a hint value")) {
                    ok = 0;
                }
            }
        }
    }
    if (!k->ngrid) {
        err(ck, &k->loc, "kernel '%s' has no grid; add one such as grid (cdiv(n, BLOCK))", k->name);
        ok = 0;
    } else if (k->ngrid > 3) {
        err(ck, &k->grid[3]->loc, "a grid has at most 3 dimensions, '%s' has %u", k->name, k->ngrid);
        ok = 0;
    }
    for (uint32_t i = 0; ok && hints_ok && i < k->nvariants && !stop(ck); i++)
        if (eval_variant_hints(ck, k, i))
            ok = 0;
    if (!stop(ck) && hints_ok) {
        check_config(ck, k, -1);
        for (uint32_t i = 0; ok && i < k->nvariants && !stop(ck); i++)
            check_config(ck, k, (int)i);
    }
    ck->k = NULL;
    ck->variant = -1;
}

/* ---- graphs and externs ---- */

static const poly *sym_lookup(void *user, const char *name)
{
    checker *ck = user;
    symbol *s = NULL;
    HASH_FIND_STR(ck->syms, name, s);
    if (s)
        return s->value;
    binding *b = lookup(ck, name);
    if (b && b->kind == B_SCALAR && is_int(&b->type))
        return poly_atom(&ck->scratch, name);
    return NULL;
}

/* A limit of symbolic sizes (tilec/limits.h) passed, as one error at loc
 * about `what`; 1 when it was one (or out of memory), else 0. */
static int size_limit_err(checker *ck, const tilec_loc *loc, const poly_why *why, const char *what)
{
    long long v = (long long)why->value;
    switch (why->fail) {
    case POLY_FAIL_TERMS:
        err(ck, loc, "%s has too many terms to compare symbolically: %lld (the limit is %d terms)", what, v,
            TILEC_MAX_POLY_TERMS);
        return 1;
    case POLY_FAIL_DEGREE:
        err(ck, loc, "%s has too high a degree to compare symbolically: %lld symbols in one term (the limit is %d)",
            what, v, TILEC_MAX_POLY_DEGREE);
        return 1;
    case POLY_FAIL_TEXT:
        err(ck, loc, "%s is too long as text: %lld bytes (the limit is %d)", what, v, TILEC_MAX_POLY_TEXT);
        return 1;
    case POLY_FAIL_OVERFLOW:
        err(ck, loc, "%s: a coefficient overflows 64 bits", what);
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
    if (e->kind == TILEC_EX_NAME && !sym_lookup(ck, e->name)) {
        binding *b = lookup(ck, e->name);
        if (poisoned(b))
            return 0;
        if (b)
            err(ck, &e->loc, "%s must be an integer, but '%s' is %s", what, e->name,
                b->kind == B_TENSOR ? "a tensor" : tilec_dtype_name(b->type.dtype));
        else
            err(ck, &e->loc, "'%s' is not a size symbol here (symbols are bound by the dimensions of tensor parameters)",
                e->name);
        return 0;
    }
    for (uint32_t i = 0; i < e->nargs; i++)
        if (!size_names_ok(ck, e->args[i], what))
            return 0;
    return 1;
}

/* A size expression of a graph: integers, symbols, scalar int parameters.
 * One polynomial per expression (bounded: size_limit_err). */
static const poly *size_expr(checker *ck, const tilec_expr *e, const char *what)
{
    if (!size_names_ok(ck, e, what))
        return NULL;
    size_why why = {0};
    poly *p = poly_from_expr(&ck->scratch, e, sym_lookup, ck, &why);
    const tilec_expr *at = why.at ? why.at : e;
    if (!p && why.poly.fail == POLY_FAIL_DIV_ZERO) {
        if (at->kind == TILEC_EX_CALL)
            err(ck, start_of(at->args[1]), "the divisor of cdiv in %s must be positive, got %lld", what,
                (long long)why.poly.value);
        else
            err(ck, &at->loc, "division by zero in %s", what);
        return NULL;
    }
    if (!p && size_limit_err(ck, &at->loc, &why.poly, what))
        return NULL;
    if (!p) {
        err(ck, &e->loc, "%s must be built from integers, size symbols, + - * / %% and cdiv", what);
        return NULL;
    }
    size_t len = poly_text_len(p, TILEC_MAX_POLY_TEXT);
    if (len > TILEC_MAX_POLY_TEXT) {
        why.poly = (poly_why){.fail = POLY_FAIL_TEXT, .value = (int64_t)len};
        size_limit_err(ck, &e->loc, &why.poly, what);
        return NULL;
    }
    return p;
}

static const char *tensor_text(checker *ck, tilec_dtype dt, const poly *const *dims, uint32_t rank)
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
static binding *bind_tensor(checker *ck, const char *name, const tilec_loc *loc, tilec_dtype dt, const poly **dims,
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
        if (!what || !size_limit_err(ck, loc, &why, what))
            ck->oom = 1;
    }
    binding *b = bind(ck, name, loc, B_TENSOR, "tensor");
    if (!b)
        return NULL;
    b->dtype = dt;
    b->rank = rank;
    b->dims = dims;
    b->text = tensor_text(ck, dt, dims, rank);
    b->type = (tilec_type){.kind = TILEC_TY_TENSOR, .dtype = dt};
    return b;
}

static const poly **tensor_dims(checker *ck, const tilec_tyexpr *te, const char *what)
{
    const poly **dims = ar_array(&ck->scratch, te->ndims ? te->ndims : 1, sizeof *dims);
    if (!dims) {
        ck->oom = 1;
        return NULL;
    }
    for (uint32_t i = 0; i < te->ndims; i++)
        if (!(dims[i] = size_expr(ck, te->dims[i], what)))
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
    if (lookup(ck, e->name)) {
        err(ck, &e->loc, "'%s' is a parameter name and cannot also be a size symbol", e->name);
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
    if (e->kind == TILEC_EX_NAME && !lookup(ck, e->name))
        add_symbol(ck, e, p, d);
    for (uint32_t i = 0; i < e->nargs; i++)
        add_symbols_in(ck, e->args[i], p, d);
}

/* Parameters of graphs and externs: T[d0, d1, ...] whose dimensions are a
 * symbol (bound here if new) or an integer. Reports every bad dimension. */
static int bind_dims(checker *ck, const tilec_param *p, const char *owner)
{
    int ret = 0;
    for (uint32_t d = 0; d < p->type.ndims; d++) {
        const tilec_expr *e = p->type.dims[d];
        if (e->kind == TILEC_EX_INT) {
            if (e->ival <= 0) {
                err(ck, &e->loc, "a dimension must be positive, got %lld", (long long)e->ival);
                ret = -1;
            }
        } else if (e->kind != TILEC_EX_NAME) {
            err(ck, start_of(e), "a dimension of a parameter of %s must be a size symbol or an integer, got an expression",
                owner);
            add_symbols_in(ck, e, p, d);
            ret = -1;
        } else if (add_symbol(ck, e, p, d)) {
            ret = -1;
        }
    }
    return ret;
}

static void reset_graph(checker *ck)
{
    HASH_CLEAR(hh, ck->syms);
    ck->rdims = NULL;
    reset_env(ck);
}

static void check_extern(checker *ck, tilec_extern *x)
{
    reset_graph(ck);
    char owner[300];
    snprintf(owner, sizeof owner, "extern '%.200s'", x->name);
    size_t symlen = strlen(x->symbol);
    if (!symlen)
        err(ck, &x->symbol_loc, "the extern symbol of '%s' is empty", x->name);
    else if (symlen > 200)
        err(ck, &x->symbol_loc, "the extern symbol of '%s' is longer than 200 bytes", x->name);
    for (const char *c = x->symbol; symlen <= 200 && *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '.')) {
            unsigned char u = (unsigned char)*c;
            char what[16];
            if (u >= 0x20 && u < 0x7f)
                snprintf(what, sizeof what, "'%c'", u);
            else
                snprintf(what, sizeof what, "byte 0x%02x", u);
            err(ck, &x->symbol_loc,
                "invalid character %s in the extern symbol of '%s' (a symbol is made of letters, digits, '_' and "
                "'.', such as \"cublas.sgemm\")", what, x->name);
            break;
        }
    for (uint32_t i = 0; i < x->nparams; i++) {
        const tilec_param *p = &x->params[i];
        if (p->type.kind != TILEC_TE_TENSOR) {
            err(ck, &p->type.loc, "a parameter of an extern is a tensor type such as %s[M, K], got %s%s",
                tilec_dtype_name(p->type.dtype), p->type.kind == TILEC_TE_POINTER ? "*" : "",
                tilec_dtype_name(p->type.dtype));
            continue;
        }
        if (bind_dims(ck, p, owner))
            continue;
        bind(ck, p->name, &p->loc, B_TENSOR, "parameter");
    }
    for (uint32_t i = 0; i < x->nresults; i++) {
        const tilec_param *r = &x->results[i];
        if (r->type.kind != TILEC_TE_TENSOR) {
            err(ck, &r->type.loc, "a result of an extern is a tensor type such as %s[M, N], got %s%s",
                tilec_dtype_name(r->type.dtype), r->type.kind == TILEC_TE_POINTER ? "*" : "",
                tilec_dtype_name(r->type.dtype));
            continue;
        }
        tensor_dims(ck, &r->type, "a result dimension");
    }
}

/* Unify the tensor `arg` with parameter p of extern x (dims may bind the
 * extern's symbols, kept in `local`). */
typedef struct ext_sym {
    const char *name;
    const poly *value;
    uint32_t argno;
    UT_hash_handle hh;
} ext_sym;

typedef struct ext_env {
    checker *ck;
    ext_sym *syms;
} ext_env;

static const poly *ext_lookup(void *user, const char *name)
{
    ext_env *env = user;
    ext_sym *s = NULL;
    HASH_FIND_STR(env->syms, name, s);
    return s ? s->value : NULL;
}

/* The tensor named by `a`, which `what` ("argument 2 of 'gemm'") needs;
 * `want` describes the tensor expected ("f32[K, N]"), or is NULL. */
static binding *tensor_arg(checker *ck, const tilec_expr *a, const char *what, const char *want)
{
    const char *paren = want ? ar_printf(&ck->scratch, " (%s)", want) : "";
    if (!what)
        what = "an argument"; /* out of memory */
    if (a->kind != TILEC_EX_NAME) {
        err(ck, start_of(a), "%s must be a tensor%s, got an expression", what, paren ? paren : "");
        return NULL;
    }
    binding *b = lookup(ck, a->name);
    if (!b) {
        err(ck, &a->loc, "undefined name '%s'", a->name);
        return NULL;
    }
    if (poisoned(b))
        return NULL;
    if (b->kind != B_TENSOR) {
        err(ck, &a->loc, "%s must be a tensor%s, but '%s' is the scalar %s", what, paren ? paren : "", a->name,
            tilec_dtype_name(b->type.dtype));
        return NULL;
    }
    return b;
}

/* Check an extern call; returns the result tensors' dims (NULL on error). */
static const poly ***check_extern_call(checker *ck, const tilec_extern *x, const tilec_expr *call)
{
    if (call->nargs != x->nparams) {
        err(ck, &call->loc, "extern '%s' takes %u argument%s, got %u", x->name, x->nparams, x->nparams == 1 ? "" : "s",
            call->nargs);
        return NULL;
    }
    ext_env env = {ck, NULL};
    int ok = 1;
    for (uint32_t i = 0; i < call->nargs && ok; i++) {
        const tilec_param *p = &x->params[i];
        const tilec_expr *a = call->args[i];
        strbuf want;
        sb_init(&want);
        sb_printf(&want, "%s[", tilec_dtype_name(p->type.dtype));
        for (uint32_t d = 0; d < p->type.ndims; d++)
            sb_printf(&want, "%s%s", d ? ", " : "",
                      p->type.dims[d]->kind == TILEC_EX_NAME ? p->type.dims[d]->name : "");
        sb_putc(&want, ']');
        binding *b = tensor_arg(ck, a, ar_printf(&ck->scratch, "argument %u of '%s'", i + 1, x->name), sb_str(&want));
        if (!b) {
            ok = 0;
        } else if (b->dtype != p->type.dtype || b->rank != p->type.ndims) {
            err(ck, &a->loc, "argument %u of '%s' ('%s') must be %s, got %s", i + 1, x->name, p->name, sb_str(&want),
                b->text);
            ok = 0;
        }
        sb_free(&want);
        for (uint32_t d = 0; ok && d < p->type.ndims; d++) {
            const tilec_expr *pd = p->type.dims[d];
            const poly *got = b->dims[d];
            const poly *exp = NULL;
            const char *expl = NULL;
            if (pd->kind == TILEC_EX_INT) {
                exp = poly_const(&ck->scratch, pd->ival);
                expl = "";
            } else if (pd->kind == TILEC_EX_NAME) {
                ext_sym *s = NULL;
                HASH_FIND_STR(env.syms, pd->name, s);
                if (!s) {
                    s = ar_alloc(&ck->scratch, sizeof *s);
                    if (!s) {
                        ck->oom = 1;
                        ok = 0;
                        break;
                    }
                    s->name = pd->name;
                    s->value = got;
                    s->argno = i + 1;
                    HASH_ADD_KEYPTR(hh, env.syms, s->name, strlen(s->name), s);
                    continue;
                }
                exp = s->value;
                expl = ar_printf(&ck->scratch, " (%s = %s from argument %u)", pd->name, poly_str(&ck->scratch, exp),
                                 s->argno);
            } else {
                continue; /* reported at the extern */
            }
            if (!poly_eq(exp, got)) {
                err(ck, &a->loc, "argument %u of '%s' ('%s'): dimension %u of '%s' is %s, but %s is expected%s", i + 1,
                    x->name, p->name, d, b->name, poly_str(&ck->scratch, got), poly_str(&ck->scratch, exp),
                    expl ? expl : "");
                ok = 0;
            }
        }
    }
    const poly ***res = NULL;
    if (ok) {
        res = ar_array(&ck->scratch, x->nresults ? x->nresults : 1, sizeof *res);
        for (uint32_t r = 0; res && r < x->nresults; r++) {
            const tilec_tyexpr *te = &x->results[r].type;
            res[r] = ar_array(&ck->scratch, te->ndims ? te->ndims : 1, sizeof **res);
            if (!res[r]) {
                res = NULL;
                break;
            }
            for (uint32_t d = 0; d < te->ndims; d++) {
                size_why why = {0};
                res[r][d] = poly_from_expr(&ck->scratch, te->dims[d], ext_lookup, &env, &why);
                if (!res[r][d]) {
                    /* a form error is reported at the extern; a limit here */
                    size_limit_err(ck, &call->loc, &why.poly,
                                   ar_printf(&ck->scratch, "dimension %u of result %u of '%s'", d, r + 1, x->name));
                    res = NULL;
                    break;
                }
            }
        }
        if (!res)
            ok = 0;
    }
    HASH_CLEAR(hh, env.syms);
    return ok ? res : NULL;
}

static void check_kernel_call(checker *ck, const tilec_kernel *k, const tilec_expr *call)
{
    if (call->nargs != k->nparams) {
        err(ck, &call->loc, "kernel '%s' takes %u argument%s, got %u", k->name, k->nparams, k->nparams == 1 ? "" : "s",
            call->nargs);
        return;
    }
    for (uint32_t i = 0; i < call->nargs; i++) {
        const tilec_param *p = &k->params[i];
        const tilec_expr *a = call->args[i];
        if (p->type.kind == TILEC_TE_POINTER) {
            char want[32];
            snprintf(want, sizeof want, "*%s", tilec_dtype_name(p->type.dtype));
            binding *b = tensor_arg(ck, a, ar_printf(&ck->scratch, "argument %u of '%s'", i + 1, k->name), want);
            if (b && b->dtype != p->type.dtype)
                err(ck, &a->loc, "argument %u of '%s' ('%s') is *%s, but '%s' is %s", i + 1, k->name, p->name,
                    tilec_dtype_name(p->type.dtype), b->name, b->text);
            continue;
        }
        char c = tilec_dtype_class(p->type.dtype);
        if (a->kind == TILEC_EX_NAME) {
            binding *b = lookup(ck, a->name);
            if (poisoned(b))
                continue;
            if (b && b->kind == B_TENSOR) {
                err(ck, &a->loc, "argument %u of '%s' ('%s') is a scalar %s, but '%s' is a tensor", i + 1, k->name,
                    p->name, tilec_dtype_name(p->type.dtype), a->name);
                continue;
            }
            if (b && b->kind == B_SCALAR) {
                char bc = tilec_dtype_class(b->type.dtype);
                if ((c == 'b') != (bc == 'b') || (c != 'f' && bc == 'f'))
                    err(ck, &a->loc, "argument %u of '%s' ('%s') is %s, but '%s' is %s", i + 1, k->name, p->name,
                        tilec_dtype_name(p->type.dtype), a->name, tilec_dtype_name(b->type.dtype));
                continue;
            }
        }
        if (c == 'b') {
            if (a->kind != TILEC_EX_BOOL)
                err(ck, start_of(a), "argument %u of '%s' ('%s') is bool: pass true or false", i + 1, k->name, p->name);
            continue;
        }
        const tilec_expr *lit = a->kind == TILEC_EX_UNARY && a->op == TILEC_OP_NEG ? a->args[0] : a;
        if (lit->kind == TILEC_EX_FLOAT || lit->kind == TILEC_EX_INF) {
            if (c != 'f')
                err(ck, &a->loc, "argument %u of '%s' ('%s') is %s, got the float %s%s", i + 1, k->name, p->name,
                    tilec_dtype_name(p->type.dtype), lit == a ? "" : "-", lit->kind == TILEC_EX_INF ? "inf" : lit->name);
            continue;
        }
        size_expr(ck, a, "a scalar kernel argument");
    }
}

static void check_graph_stmt(checker *ck, tilec_graph *g, tilec_stmt *s, int last)
{
    const tilec_expr *v = s->value;
    switch (s->kind) {
    case TILEC_ST_DOC:
        return;
    case TILEC_ST_FOR:
    case TILEC_ST_IF:
    case TILEC_ST_ASSIGN:
        err(ck, &s->loc, "%s is not allowed in a graph: a graph is straight-line host code",
            s->kind == TILEC_ST_FOR ? "'for'" : s->kind == TILEC_ST_IF ? "'if'" : "assignment");
        return;
    case TILEC_ST_RETURN: {
        if (!last)
            err(ck, &s->loc, "return must be the last statement of graph '%s'", g->name);
        if (s->nvalues != g->nresults) {
            err(ck, &s->loc, "graph '%s' returns %u value%s, but its signature declares %u", g->name, s->nvalues,
                s->nvalues == 1 ? "" : "s", g->nresults);
            return;
        }
        for (uint32_t i = 0; i < s->nvalues; i++) {
            const tilec_expr *a = s->values[i];
            const tilec_param *r = &g->results[i];
            for (uint32_t j = 0; j < i && a->kind == TILEC_EX_NAME; j++)
                if (s->values[j]->kind == TILEC_EX_NAME && !strcmp(s->values[j]->name, a->name))
                    err(ck, &a->loc, "graph '%s' returns '%s' twice: each result is a buffer of its own (copy it "
                        "into a second one to return it twice)", g->name, a->name);
            const poly **dims = ck->rdims ? ck->rdims[i] : NULL;
            binding *b = tensor_arg(ck, a, ar_printf(&ck->scratch, "result %u of graph '%s'", i + 1, g->name),
                                    dims ? tensor_text(ck, r->type.dtype, dims, r->type.ndims) : "a tensor");
            if (!b || !dims)
                continue;
            int same = b->dtype == r->type.dtype && b->rank == r->type.ndims;
            for (uint32_t d = 0; same && d < b->rank; d++)
                same = poly_eq(b->dims[d], dims[d]);
            if (!same)
                err(ck, &a->loc, "result %u of graph '%s'%s%s%s is declared %s, but '%s' is %s", i + 1, g->name,
                    r->name ? " ('" : "", r->name ? r->name : "", r->name ? "')" : "",
                    tensor_text(ck, r->type.dtype, dims, r->type.ndims), b->name, b->text);
        }
        return;
    }
    case TILEC_ST_LET:
    case TILEC_ST_LET_TUPLE:
    case TILEC_ST_EXPR:
        break;
    }
    if (v->kind != TILEC_EX_CALL) {
        if (s->kind == TILEC_ST_EXPR)
            err(ck, start_of(v), "a graph statement is a call of a kernel or an extern");
        else
            err(ck, start_of(v), "a graph 'let' binds empty(...), view(...) or the result of an extern call");
        return;
    }
    item_name *it = NULL;
    HASH_FIND_STR(ck->items, v->name, it);
    s->types = ar_array(ck->ar, s->nnames ? s->nnames : 1, sizeof *s->types);
    if (!s->types) {
        ck->oom = 1;
        return;
    }
    if (!strcmp(v->name, "empty") || !strcmp(v->name, "view")) {
        int is_view = v->name[0] == 'v';
        if (s->kind != TILEC_ST_LET) {
            err(ck, &v->loc, "bind the result of %s with let name = %s(...)", v->name, v->name);
            return;
        }
        if (v->nargs != 2) {
            err(ck, &v->loc, "%s takes 2 arguments, got %u", v->name, v->nargs);
            return;
        }
        tilec_dtype dt;
        const tilec_expr *shape;
        binding *base = NULL;
        if (is_view) {
            base = tensor_arg(ck, v->args[0], "the first argument of view", NULL);
            const tilec_expr *ty = v->args[1];
            if (ty->kind != TILEC_EX_INDEX || ty->args[0]->kind != TILEC_EX_DTYPE) {
                err(ck, &ty->loc, "the second argument of view is a tensor type such as f32[R * C]");
                return;
            }
            dt = ty->args[0]->dtype;
            shape = ty;
        } else {
            if (v->args[0]->kind != TILEC_EX_DTYPE || v->args[1]->kind != TILEC_EX_LIST) {
                err(ck, &v->loc, "empty takes an element type and a list of sizes: empty(f32, [R, C])");
                return;
            }
            dt = v->args[0]->dtype;
            shape = v->args[1];
        }
        uint32_t first = is_view ? 1 : 0, rank = shape->nargs - first;
        const poly **dims = ar_array(&ck->scratch, rank ? rank : 1, sizeof *dims);
        if (!dims) {
            ck->oom = 1;
            return;
        }
        for (uint32_t d = 0; d < rank; d++)
            if (!(dims[d] = size_expr(ck, shape->args[first + d], "a tensor size")))
                return;
        if (base) {
            /* a view keeps the bytes: numel * size must match */
            poly_why why = {0};
            poly *have = poly_const(&ck->scratch, tilec_dtype_size(base->dtype));
            poly *want = poly_const(&ck->scratch, tilec_dtype_size(dt));
            for (uint32_t d = 0; d < base->rank; d++)
                have = poly_mul(&ck->scratch, have, base->dims[d], &why);
            for (uint32_t d = 0; d < rank; d++)
                want = poly_mul(&ck->scratch, want, dims[d], &why);
            if ((!have || !want) && size_limit_err(ck, &shape->args[0]->loc, &why, "the byte size of the view"))
                return;
            if (have && want && !poly_eq(have, want)) {
                err(ck, &shape->args[0]->loc, "view of '%s' (%s, %s bytes) as %s (%s bytes) changes its size", base->name,
                    base->text, poly_str(&ck->scratch, have), tensor_text(ck, dt, dims, rank),
                    poly_str(&ck->scratch, want));
                return;
            }
        } else if (is_view) {
            return;
        }
        binding *b = bind_tensor(ck, s->names[0], &s->name_locs[0], dt, dims, rank);
        if (b)
            s->types[0] = b->text;
        return;
    }
    if (!it) {
        err(ck, &v->loc, "unknown kernel or extern '%s'", v->name);
        return;
    }
    if (it->kind == TILEC_ITEM_GRAPH) {
        err(ck, &v->loc, "'%s' is a graph; a graph calls kernels and externs", v->name);
        return;
    }
    if (it->kind == TILEC_ITEM_KERNEL) {
        if (s->kind != TILEC_ST_EXPR) {
            err(ck, &v->loc, "kernel '%s' returns nothing; allocate its output with empty(...) and pass it", v->name);
            return;
        }
        check_kernel_call(ck, it->node, v);
        return;
    }
    const tilec_extern *x = it->node;
    uint32_t want = s->kind == TILEC_ST_EXPR ? 0 : s->nnames;
    if (x->nresults != want) {
        if (s->kind == TILEC_ST_EXPR)
            err(ck, &v->loc, "the result%s of extern '%s' must be bound with let", x->nresults == 1 ? "" : "s", x->name);
        else if (x->nresults == 0)
            err(ck, &v->loc, "extern '%s' returns nothing; it writes into its arguments", x->name);
        else
            err(ck, &v->loc, "extern '%s' returns %u result%s, but %u name%s bound", x->name, x->nresults,
                x->nresults == 1 ? "" : "s", want, want == 1 ? " is" : "s are");
        return;
    }
    const poly ***res = check_extern_call(ck, x, v);
    if (!res)
        return;
    for (uint32_t r = 0; r < want; r++) {
        binding *b = bind_tensor(ck, s->names[r], &s->name_locs[r], x->results[r].type.dtype, res[r],
                                 x->results[r].type.ndims);
        if (b)
            s->types[r] = b->text;
    }
}

static void check_graph(checker *ck, tilec_graph *g)
{
    reset_graph(ck);
    if (g->body.nstmts > TILEC_MAX_GRAPH_STMTS) {
        err(ck, &g->loc, "graph '%s' has %u statements (the limit is %d)", g->name, g->body.nstmts,
            TILEC_MAX_GRAPH_STMTS);
        return;
    }
    char owner[300];
    snprintf(owner, sizeof owner, "graph '%.200s'", g->name);
    for (uint32_t i = 0; i < g->nparams; i++) {
        const tilec_param *p = &g->params[i];
        if (p->type.kind == TILEC_TE_POINTER) {
            err(ck, &p->type.loc, "a graph parameter is a tensor such as %s[R, C] or a scalar, not a pointer",
                tilec_dtype_name(p->type.dtype));
            bind(ck, p->name, &p->loc, B_TENSOR, "parameter"); /* in error: its uses are silent */
            continue;
        }
        if (p->type.kind == TILEC_TE_SCALAR) {
            binding *b = bind(ck, p->name, &p->loc, B_SCALAR, "parameter");
            if (b)
                b->type = ty_scalar(p->type.dtype);
            continue;
        }
        const poly **dims = bind_dims(ck, p, owner) ? NULL : tensor_dims(ck, &p->type, "a dimension");
        if (dims)
            bind_tensor(ck, p->name, &p->loc, p->type.dtype, dims, p->type.ndims);
        else
            bind(ck, p->name, &p->loc, B_TENSOR, "parameter"); /* in error: its uses are silent */
    }
    ck->rdims = ar_array(&ck->scratch, g->nresults ? g->nresults : 1, sizeof *ck->rdims);
    if (!ck->rdims)
        ck->oom = 1;
    for (uint32_t i = 0; i < g->nresults && ck->rdims; i++) {
        const tilec_param *r = &g->results[i];
        if (r->type.kind != TILEC_TE_TENSOR)
            err(ck, &r->type.loc, "a graph result is a tensor type such as %s[R, C], got %s%s",
                tilec_dtype_name(r->type.dtype), r->type.kind == TILEC_TE_POINTER ? "*" : "",
                tilec_dtype_name(r->type.dtype));
        else
            ck->rdims[i] = tensor_dims(ck, &r->type, "a result dimension");
        for (uint32_t j = 0; j < i && r->name; j++)
            if (g->results[j].name && !strcmp(g->results[j].name, r->name)) {
                err(ck, &r->loc, "result name '%s' is used twice", r->name);
                note(ck, &g->results[j].loc, "the first '%s' is here", r->name);
                break;
            }
    }
    int returned = 0;
    /* trailing doc comments do not count as statements after return */
    uint32_t last_real = 0;
    for (uint32_t i = 0; i < g->body.nstmts; i++)
        if (g->body.stmts[i]->kind != TILEC_ST_DOC)
            last_real = i;
    for (uint32_t i = 0; i < g->body.nstmts && !stop(ck); i++) {
        tilec_stmt *s = g->body.stmts[i];
        check_graph_stmt(ck, g, s, i >= last_real);
        returned |= s->kind == TILEC_ST_RETURN;
        /* a let that failed still defines its names, so that their uses
         * do not repeat the error as "undefined name" */
        for (uint32_t j = 0; (s->kind == TILEC_ST_LET || s->kind == TILEC_ST_LET_TUPLE) && j < s->nnames; j++)
            if (!lookup(ck, s->names[j]))
                bind(ck, s->names[j], &s->name_locs[j], B_TENSOR, "tensor");
    }
    if (!returned && g->nresults)
        err(ck, &g->loc, "graph '%s' declares %u result%s but has no return", g->name, g->nresults,
            g->nresults == 1 ? "" : "s");
}

/* ---- the module ---- */

static const char *const reserved[] = {"empty", "view"};

int chk_module(tilec_ctx *ctx, tilec_module *mod)
{
    checker store = {.ctx = ctx, .mod = mod, .ar = &mod->ar, .variant = -1};
    checker *ck = &store;
    ar_init(&ck->scratch);
    size_t errors0 = ctx->nerrors;
    for (uint32_t i = 0; i < mod->items.n; i++) {
        tilec_item *it = mod->items.v[i];
        const char *name = it->u.kernel->name;
        tilec_loc loc = it->kind == TILEC_ITEM_KERNEL   ? it->u.kernel->loc
                        : it->kind == TILEC_ITEM_EXTERN ? it->u.ext->loc
                                                        : it->u.graph->loc;
        for (size_t r = 0; r < sizeof reserved / sizeof reserved[0]; r++)
            if (!strcmp(name, reserved[r]))
                err(ck, &loc, "'%s' is a built-in of graphs and cannot name a kernel, extern or graph", name);
        item_name *old = NULL;
        HASH_FIND_STR(ck->items, name, old);
        if (old) {
            err(ck, &loc, "'%s' is defined twice", name);
            note(ck, &old->loc, "the first definition of '%s' is here", name);
            continue;
        }
        item_name *n = ar_alloc(&mod->ar, sizeof *n);
        if (!n) {
            ck->oom = 1;
            break;
        }
        n->name = name;
        n->kind = it->kind;
        n->node = it->u.kernel;
        n->loc = loc;
        HASH_ADD_KEYPTR(hh, ck->items, n->name, strlen(n->name), n);
    }
    for (uint32_t i = 0; i < mod->items.n && !stop(ck); i++) {
        tilec_item *it = mod->items.v[i];
        if (it->kind == TILEC_ITEM_KERNEL)
            check_kernel(ck, it->u.kernel);
        else if (it->kind == TILEC_ITEM_EXTERN)
            check_extern(ck, it->u.ext);
        else
            check_graph(ck, it->u.graph);
    }
    if (ck->oom && !ctx->stopped)
        diag_at(ctx, &mod->src, NULL, TILEC_SEV_ERROR, "out of memory while checking");
    reset_graph(ck);
    HASH_CLEAR(hh, ck->items);
    seen_msg *s, *tmp;
    HASH_ITER(hh, ck->seen, s, tmp)
    {
        HASH_DEL(ck->seen, s);
        free(s->key);
        free(s);
    }
    free(ck->stack);
    ar_free(&ck->scratch);
    return ctx->nerrors > errors0 || ck->oom || ctx->stopped ? -1 : 0;
}
