/* lower_graph.c: a checked graph to wrapper IR lines. Two walks over the
 * statements: the first binds every tensor name (dtype, symbolic sizes,
 * storage root) and records its last use; the second emits the lines and
 * frees each graph-owned buffer after its last use. A graph's for loops
 * are flattened first into positions (statements, loop starts and ends):
 * a use inside a loop of a buffer made outside it counts at the loop's
 * end, so that it lives across the iterations, while a buffer made in the
 * body is freed in the body. Names and symbols are
 * found by hash and the frees by a bucket per statement, so the work grows
 * with the graph, not its square. */
#include <stdlib.h>
#include <string.h>

#include "parser/graph_alloc.h"
#include "parser/graph_coll.h"
#include "parser/size_poly.h"
#include "util/iexpr.h"
#include "util/strbuf.h"
#include "wrapper_ir/wir.h"

#define uthash_nonfatal_oom(e) (L->oom = 1)
#include "util/hashtable.h"

/* A name in one of the lowering's sets (entries, size symbols). */
typedef struct nidx {
    const char *name;
    int idx;
    UT_hash_handle hh;
} nidx;

typedef enum {
    E_TENSOR_PARAM,
    E_SCALAR_PARAM,
    E_BUFFER,
    E_LIST_PARAM, /* a tensor list: passed whole, never freed */
    E_LIST        /* a list the graph made (let ys = xs[a:b], [a, b]): its tensors live as long as it */
} ekind;

/* A name of the graph. Views share the storage of their root. */
typedef struct entry {
    const char *name;
    ekind kind;
    tilec_dtype dtype;
    uint32_t rank;
    const poly **dims;
    int root;     /* the entry owning the storage (itself unless a view) */
    int owned;    /* the graph allocated the storage (empty, an extern result) */
    int pooled;   /* allocated by ALLOCATE: memory planning may reuse it */
    int output;   /* the storage is returned, by itself or through a view */
    int last_use; /* position; a root's covers its views */
    int freed;
    int scope;    /* the loop whose body made it (-1: the graph's top) */
    int mangled;  /* made in an unrolled iteration: its name carries the suffix */
    int from;     /* E_LIST: the list it is part of (-1: none) */
    int *elems;   /* E_LIST: the tensors it holds (a list of named tensors) */
                  /* (E_BUFFER: `from` is the list whose tensor i it views, view(xs[i], ...)) */
    uint32_t nelems;
} entry;

/* One position of the flattened statements: a statement, or the start or
 * end of a for loop (`loop` is then that loop; else the innermost loop
 * around the statement, -1 for none). */
typedef enum { P_STMT, P_LOOP, P_END, P_NOTE } pkind;
typedef struct pos {
    const tilec_stmt *s;
    pkind kind;
    int loop;
    int inst;         /* the unrolled iteration it belongs to (-1: none) */
    const char *note; /* P_NOTE: a COMMENT line's text (an unrolled or kept loop) */
    int items;        /* an extern call's xs[i] arguments: 1 + the entry the first is viewed as (0: none) */
} pos;

/* One iteration of an unrolled loop: its variable's value, and the suffix
 * the names its body makes take ("_i2"; nested "_h1_r4"). */
typedef struct inst {
    int parent;
    const char *var;
    int64_t value;
    const char *sfx;
} inst;

typedef struct loopinfo {
    int parent;
    int end; /* the position of its end */
} loopinfo;

typedef struct lw {
    tilec_wir *w;
    tilec_ctx *ctx;
    const tilec_module *m;
    entry *e;
    uint32_t ne, cap;
    const char **syms; /* size symbols bound by tensor parameters */
    uint32_t nsyms, capsyms;
    int failed; /* a diagnostic was recorded */
    int oom;
    uint32_t ntuples;
    uint32_t nlists; /* sub-lists made for call arguments (MAKE_LIST), for their names */
    uint32_t nlistofs; /* lists of named tensors made for call arguments (LIST_OF) */
    uint32_t nitems;   /* views of xs[i] made for extern arguments (REINTERPRET), for their names */
    nidx *by_name; /* entries by name */
    nidx *sym_set; /* syms */
    nidx *loop_set; /* loop variables */
    pos *pos;
    uint32_t npos, cappos;
    loopinfo *loops;
    uint32_t nloops, caploops;
    inst *insts;
    uint32_t ninsts, capinsts;
    uint32_t nnames;   /* the names the flattened statements define */
    uint32_t unrolled; /* statements copied by unrolling so far */
    const char **ast_names; /* every name the graph spells (clash check of unrolling) */
    uint32_t nast, capast;
    int cur_loop; /* during the first walk */
    int cur_inst; /* the unrolled iteration of the position walked (-1: none) */
} lw;

/* Add name to set *h with index idx (the node lives in the arena). */
static void set_add(lw *L, nidx **h, const char *name, int idx)
{
    nidx *n = ar_alloc(&L->w->ar, sizeof *n);
    if (!n) {
        L->oom = 1;
        return;
    }
    n->name = name;
    n->idx = idx;
    HASH_ADD_KEYPTR(hh, *h, n->name, strlen(n->name), n);
}

static int set_find(nidx *h, const char *name)
{
    nidx *n = NULL;
    if (name)
        HASH_FIND_STR(h, name, n);
    return n ? n->idx : -1;
}

tilec_wir_line *wir_add(tilec_wir *w, tilec_wir_kind kind, const tilec_loc *loc)
{
    if (w->n == w->cap) {
        uint32_t cap = w->cap ? w->cap * 2 : 32;
        tilec_wir_line *v = ar_array(&w->ar, cap, sizeof *v);
        if (!v)
            return NULL;
        if (w->n)
            memcpy(v, w->lines, w->n * sizeof *v);
        w->lines = v;
        w->cap = cap;
    }
    tilec_wir_line *l = &w->lines[w->n++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->loc = *loc;
    l->device = WIR_DEVICE;
    return l;
}

static void fail(lw *L, const tilec_loc *loc, const char *what, const char *name)
{
    if (!L->failed)
        diag_at(L->ctx, &L->m->src, loc, TILEC_SEV_ERROR, "cannot lower graph '%s' to wrapper IR: %s '%s'",
                L->w->graph->name, what, name ? name : "?");
    L->failed = 1;
}

/* The entry of the name as the IR spells it (a body's name in an unrolled
 * iteration carries the iteration's suffix). */
static int find_raw(const lw *L, const char *name) { return set_find(L->by_name, name); }

/* The entry a name of the .tile source means at the position walked: in an
 * unrolled iteration, the iteration's own (name + suffix), innermost first. */
static int find(const lw *L, const char *name);

/* The IR's name of a name of the source at the position walked. */
static const char *rname(const lw *L, const char *name)
{
    int k = find(L, name);
    return k >= 0 ? L->e[k].name : name;
}

static int find(const lw *L, const char *name)
{
    for (int in = L->cur_inst; name && in >= 0; in = L->insts[in].parent) {
        strbuf b;
        sb_init(&b);
        sb_printf(&b, "%s%s", name, L->insts[in].sfx);
        int k = b.failed ? -1 : set_find(L->by_name, sb_str(&b));
        sb_free(&b);
        if (k >= 0)
            return k;
    }
    return set_find(L->by_name, name);
}

/* The value of loop variable `name` in unrolled iteration `in` or around it. */
static int inst_value(const lw *L, int in, const char *name, int64_t *v)
{
    for (; name && in >= 0; in = L->insts[in].parent)
        if (!strcmp(L->insts[in].var, name)) {
            *v = L->insts[in].value;
            return 1;
        }
    return 0;
}

static const poly *lookup_sym(void *user, const char *name)
{
    lw *L = user;
    int64_t v;
    if (inst_value(L, L->cur_inst, name, &v))
        return poly_const(&L->w->ar, v);
    if (set_find(L->sym_set, name) >= 0 || set_find(L->loop_set, name) >= 0)
        return poly_atom(&L->w->ar, name);
    int k = find(L, name);
    if (k >= 0 && L->e[k].kind == E_SCALAR_PARAM)
        return poly_atom(&L->w->ar, name);
    return NULL;
}

static entry *define(lw *L, const char *name, ekind kind, tilec_dtype dt, uint32_t rank, const poly **dims, int stmt)
{
    if (L->ne == L->cap) {
        L->oom = 1;
        return NULL;
    }
    if (name && stmt >= 0 && L->cur_inst >= 0) { /* a name of an unrolled iteration */
        name = ar_printf(&L->w->ar, "%s%s", name, L->insts[L->cur_inst].sfx);
        if (!name) {
            L->oom = 1;
            return NULL;
        }
    }
    int had = name && stmt >= 0 ? find_raw(L, name) : -1;
    if (had >= 0 && (L->cur_inst >= 0 || L->e[had].mangled)) {
        fail(L, &L->pos[stmt].s->loc, "unrolling a loop makes a name twice, rename it:", name);
        return NULL;
    }
    entry *x = &L->e[L->ne];
    *x = (entry){.name = name, .kind = kind, .dtype = dt, .rank = rank, .dims = dims, .root = (int)L->ne,
                 .last_use = stmt, .scope = stmt < 0 ? -1 : L->cur_loop, .mangled = stmt >= 0 && L->cur_inst >= 0,
                 .from = -1};
    if (name && find_raw(L, name) < 0) /* the first definition wins, as the scan did */
        set_add(L, &L->by_name, name, (int)L->ne);
    L->ne++;
    return x;
}

/* Position p as seen from loop `scope`: the end of the outermost loop
 * around p inside scope (p itself when p is in scope's own body). */
static int lift(const lw *L, int p, int scope)
{
    if (p < 0 || (uint32_t)p >= L->npos)
        return p;
    int at = p;
    for (int l = L->pos[p].kind == P_STMT ? L->pos[p].loop : L->loops[L->pos[p].loop].parent;
         l >= 0 && l != scope; l = L->loops[l].parent)
        at = L->loops[l].end;
    return at;
}

/* Entry k marked used at position i; a list the graph made keeps what it
 * holds alive as long as it is used: the tensors of a list [a, b], the
 * list a sub-list is part of. */
static void mark(lw *L, int k, int i)
{
    entry *x = &L->e[k];
    if (x->kind == E_LIST) {
        if (x->from >= 0)
            mark(L, x->from, i);
        for (uint32_t j = 0; j < x->nelems; j++)
            mark(L, x->elems[j], i);
        return;
    }
    int at = lift(L, i, x->scope);
    if (x->last_use < at)
        x->last_use = at;
    if (x->kind == E_BUFFER && x->from >= 0) /* a view of xs[i] aliases a tensor of the list: it keeps the list's */
        mark(L, x->from, i);
}

/* The tensor named by expression a, marked used at position i. */
static int use(lw *L, const tilec_expr *a, int i)
{
    int k = a->kind == TILEC_EX_NAME ? find(L, a->name) : -1;
    if (k < 0 || L->e[k].kind == E_SCALAR_PARAM || L->e[k].kind == E_LIST_PARAM || L->e[k].kind == E_LIST) {
        fail(L, &a->loc, "no tensor named", a->kind == TILEC_EX_NAME ? a->name : "(expression)");
        return -1;
    }
    mark(L, k, i);
    return k;
}

/* A list argument or let value: the list of named tensors [a, b] (each
 * used at i; *k_out -1), or a list of the graph, whole or as a sub-list
 * xs[a:b] (used at i; its entry in *k_out). 0, or -1 (failed). */
static int use_list(lw *L, const tilec_expr *a, int i, int *k_out)
{
    *k_out = -1;
    if (a->kind == TILEC_EX_LIST) {
        for (uint32_t j = 0; j < a->nargs; j++)
            if (use(L, a->args[j], i) < 0)
                return -1;
        return 0;
    }
    const tilec_expr *n = a->kind == TILEC_EX_INDEX && a->nargs ? a->args[0] : a;
    int k = n->kind == TILEC_EX_NAME ? find(L, n->name) : -1;
    if (k < 0 || (L->e[k].kind != E_LIST_PARAM && L->e[k].kind != E_LIST)) {
        fail(L, &a->loc, "no tensor list named", n->kind == TILEC_EX_NAME ? n->name : "(expression)");
        return -1;
    }
    mark(L, k, i);
    *k_out = k;
    return 0;
}

/* let ys = xs[a:b] or let ys = [a, b]: a list of the graph (the checker
 * proved it); 0 when s is no such let. */
static int is_let_list(const lw *L, const tilec_stmt *s)
{
    const tilec_expr *v = s->value;
    if (s->kind != TILEC_ST_LET || !v)
        return 0;
    if (v->kind == TILEC_EX_LIST)
        return 1;
    int k = v->kind == TILEC_EX_INDEX && v->nargs && v->args[0]->kind == TILEC_EX_NAME ? find(L, v->args[0]->name) : -1;
    return k >= 0 && (L->e[k].kind == E_LIST_PARAM || L->e[k].kind == E_LIST);
}

/* ---- text of sizes ---- */

static const char *pstr(lw *L, const poly *p)
{
    const char *s = poly_str(&L->w->ar, p);
    if (!s)
        L->oom = 1;
    return s ? s : "?";
}

/* The integer expression of p: the tree of its text's shape (poly_ix). */
static const tilec_ix *pexpr(lw *L, const poly *p)
{
    const tilec_ix *e = poly_ix(&L->w->ar, p);
    if (!e)
        L->oom = 1;
    return e;
}

static const poly **dims_of(lw *L, tilec_expr *const *v, uint32_t n)
{
    const poly **dims = ar_array(&L->w->ar, n ? n : 1, sizeof *dims);
    if (!dims) {
        L->oom = 1;
        return NULL;
    }
    for (uint32_t d = 0; d < n; d++)
        if (!(dims[d] = poly_from_expr(&L->w->ar, v[d], lookup_sym, L, NULL))) {
            fail(L, &v[d]->loc, "a size it cannot read in", L->w->graph->name);
            return NULL;
        }
    return dims;
}

/* Sizes, row-major strides and storage bytes of entry x into line l. */
static void shape_into(lw *L, const entry *x, tilec_wir_line *l)
{
    arena *a = &L->w->ar;
    l->dtype = x->dtype;
    l->rank = x->rank;
    l->sizes = ar_array(a, x->rank ? x->rank : 1, sizeof *l->sizes);
    l->strides = ar_array(a, x->rank ? x->rank : 1, sizeof *l->strides);
    const tilec_ix **se = ar_array(a, x->rank ? x->rank : 1, sizeof *se);
    const tilec_ix **te = ar_array(a, x->rank ? x->rank : 1, sizeof *te);
    if (!l->sizes || !l->strides || !se || !te) {
        L->oom = 1;
        return;
    }
    poly *stride = poly_const(a, 1);
    for (uint32_t d = x->rank; d-- > 0;) {
        l->sizes[d] = pstr(L, x->dims[d]);
        l->strides[d] = pstr(L, stride);
        se[d] = pexpr(L, x->dims[d]);
        te[d] = pexpr(L, stride);
        stride = poly_mul(a, stride, x->dims[d], NULL);
    }
    poly *bytes = poly_mul(a, stride, poly_const(a, tilec_dtype_size(x->dtype)), NULL);
    l->bytes = pstr(L, bytes);
    l->bytes_expr = pexpr(L, bytes);
    l->size_exprs = se;
    l->stride_exprs = te;
}

static const char *pool_key(lw *L, const tilec_wir_line *l)
{
    const char *k = ar_printf(&L->w->ar, "%d:%s:%s:%u", l->device, tilec_dtype_name(l->dtype), l->bytes, l->align);
    if (!k)
        L->oom = 1;
    return k;
}

/* An expression as written, with parentheses only around nested binaries. */
static void spell(strbuf *b, const tilec_expr *e, int nested)
{
    switch (e->kind) {
    case TILEC_EX_INT: sb_printf(b, "%lld", (long long)e->ival); break;
    case TILEC_EX_FLOAT: sb_puts(b, e->name); break;
    case TILEC_EX_BOOL: sb_puts(b, e->ival ? "true" : "false"); break;
    case TILEC_EX_INF: sb_puts(b, "inf"); break;
    case TILEC_EX_NAME: sb_puts(b, e->name); break;
    case TILEC_EX_DTYPE: sb_puts(b, tilec_dtype_name(e->dtype)); break;
    case TILEC_EX_UNARY:
        sb_puts(b, tilec_op_spelling(e->op));
        spell(b, e->args[0], 1);
        break;
    case TILEC_EX_BINARY:
        if (nested)
            sb_putc(b, '(');
        spell(b, e->args[0], 1);
        sb_printf(b, " %s ", tilec_op_spelling(e->op));
        spell(b, e->args[1], 1);
        if (nested)
            sb_putc(b, ')');
        break;
    case TILEC_EX_CALL:
        sb_printf(b, "%s(", e->name);
        for (uint32_t i = 0; i < e->nargs; i++) {
            sb_puts(b, i ? ", " : "");
            spell(b, e->args[i], 0);
        }
        sb_putc(b, ')');
        break;
    default: sb_puts(b, "?"); break;
    }
}

static const char *spelled(lw *L, tilec_expr *const *v, uint32_t n)
{
    strbuf b;
    sb_init(&b);
    for (uint32_t i = 0; i < n; i++) {
        sb_puts(&b, i ? ", " : "");
        spell(&b, v[i], 0);
    }
    const char *s = b.failed ? NULL : ar_strdup(&L->w->ar, sb_str(&b));
    sb_free(&b);
    if (!s)
        L->oom = 1;
    return s ? s : "?";
}

/* ---- the first walk: names, shapes, last uses ---- */

static void bind_params(lw *L)
{
    const tilec_graph *g = L->w->graph;
    if (gc_graph_has(g) && L->nsyms < L->capsyms) { /* the communicator's size, bound before the parameters */
        set_add(L, &L->sym_set, GC_WORLD, (int)L->nsyms);
        L->syms[L->nsyms++] = GC_WORLD;
    }
    for (uint32_t i = 0; i < g->nparams; i++) {
        const tilec_param *p = &g->params[i];
        if (p->type.kind != TILEC_TE_TENSOR) {
            define(L, p->name, p->type.kind == TILEC_TE_LIST ? E_LIST_PARAM : E_SCALAR_PARAM, p->type.dtype, 0, NULL, -1);
            continue;
        }
        for (uint32_t d = 0; d < p->type.ndims; d++) {
            const tilec_expr *e = p->type.dims[d];
            if (e->kind == TILEC_EX_NAME && !lookup_sym(L, e->name) && L->nsyms < L->capsyms) {
                set_add(L, &L->sym_set, e->name, (int)L->nsyms);
                L->syms[L->nsyms++] = e->name;
            }
        }
        const poly **dims = dims_of(L, p->type.dims, p->type.ndims);
        define(L, p->name, E_TENSOR_PARAM, p->type.dtype, p->type.ndims, dims, -1);
    }
}

typedef struct ext_env {
    lw *L;
    const tilec_extern *x;
    const entry *const *args; /* the entry of each argument */
} ext_env;

static const poly *ext_lookup(void *user, const char *name)
{
    ext_env *env = user;
    for (uint32_t i = 0; i < env->x->nparams; i++) {
        const tilec_tyexpr *t = &env->x->params[i].type;
        for (uint32_t d = 0; env->args[i] && d < t->ndims && d < env->args[i]->rank; d++)
            if (t->dims[d]->kind == TILEC_EX_NAME && !strcmp(t->dims[d]->name, name))
                return env->args[i]->dims[d];
    }
    return NULL;
}

/* Grow *v (n used of *cap elements of size sz) to hold one more; 0, or -1
 * out of memory (L->oom set). */
static int grow(lw *L, void **v, uint32_t n, uint32_t *cap, size_t sz)
{
    if (n < *cap)
        return 0;
    uint32_t c = *cap ? *cap * 2 : 64;
    void *p = realloc(*v, (size_t)c * sz);
    if (!p) {
        L->oom = 1;
        return -1;
    }
    *v = p;
    *cap = c;
    return 0;
}

static void add_pos(lw *L, pos p)
{
    if (!grow(L, (void **)&L->pos, L->npos, &L->cappos, sizeof *L->pos))
        L->pos[L->npos++] = p;
}

/* A bound's names: the variables of the unrolled iterations around it are
 * their values; any other name is a symbol (not a constant). */
static const poly *bound_lookup(void *user, const char *name)
{
    lw *L = user;
    int64_t v;
    if (inst_value(L, L->cur_inst, name, &v))
        return poly_const(&L->w->ar, v);
    return poly_atom(&L->w->ar, name);
}

/* The constant value of bound e (NULL: 1), or 0 when it is not one. */
static int const_bound(lw *L, const tilec_expr *e, int64_t *v)
{
    if (!e) {
        *v = 1;
        return 1;
    }
    const poly *p = poly_from_expr(&L->w->ar, e, bound_lookup, L, NULL);
    return p && poly_is_const(p, v);
}

/* The iterations of for loop s where its bounds are constants (the
 * unrolled iterations around it included), else -1. */
static int64_t const_count(lw *L, const tilec_stmt *s, int64_t b[3])
{
    int64_t d;
    if (!const_bound(L, s->lo, &b[0]) || !const_bound(L, s->hi, &b[1]) || !const_bound(L, s->step, &b[2]) ||
        b[2] <= 0)
        return -1;
    if (b[1] <= b[0])
        return 0;
    if (__builtin_sub_overflow(b[1], b[0], &d))
        return -1;
    return (d - 1) / b[2] + 1;
}

/* The statements block b unrolls to as far as its loops' bounds are known
 * here (a loop of a constant count n weighs n times its body, any other its
 * body and 2), TILEC_MAX_UNROLL + 1 for anything past TILEC_MAX_UNROLL. */
static uint64_t weight(lw *L, const tilec_block *b)
{
    uint64_t w = 0;
    for (uint32_t i = 0; i < b->nstmts && w <= TILEC_MAX_UNROLL; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_DOC)
            continue;
        if (s->kind != TILEC_ST_FOR) {
            w++;
            continue;
        }
        int64_t b3[3], n = const_count(L, s, b3);
        uint64_t body = weight(L, &s->body);
        w += n >= 0 ? (n > TILEC_MAX_UNROLL ? TILEC_MAX_UNROLL + 1 : (uint64_t)n * body) : body + 2;
    }
    return w > TILEC_MAX_UNROLL ? TILEC_MAX_UNROLL + 1 : w; /* saturated: deep nests cannot wrap */
}

/* A name of the graph that an unrolled iteration of loop `var` could
 * spell (it holds "_VAR" and a digit), or NULL. */
static const char *clash(const lw *L, const char *var)
{
    size_t n = strlen(var);
    for (uint32_t i = 0; i < L->nast; i++)
        for (const char *p = strchr(L->ast_names[i], '_'); p; p = strchr(p + 1, '_'))
            if (!strncmp(p + 1, var, n) && p[1 + n] >= '0' && p[1 + n] <= '9')
                return L->ast_names[i];
    return NULL;
}

static void add_note(lw *L, const tilec_stmt *s, int loop, const char *text)
{
    if (!text)
        L->oom = 1;
    else
        add_pos(L, (pos){s, P_NOTE, loop, L->cur_inst, text, 0});
}

static void flatten(lw *L, const tilec_block *b, int loop);

/* for loop s, inside loop `loop`: unrolled into its iterations when its
 * count is constant and small enough, else LOOP, the body, END_LOOP. */
static void flatten_for(lw *L, const tilec_stmt *s, int loop)
{
    const char *var = s->names[0];
    int64_t b[3], n = const_count(L, s, b);
    uint64_t body = n >= 0 ? weight(L, &s->body) : 0;
    uint64_t size = n > TILEC_MAX_UNROLL ? TILEC_MAX_UNROLL + 1 : (uint64_t)(n < 0 ? 0 : n) * body;
    const char *taken = n >= 0 ? clash(L, var) : NULL;
    const char *why = NULL;
    if (n < 0)
        why = NULL; /* a symbolic count: a loop, no remark */
    else if (n > TILEC_MAX_UNROLL || size > TILEC_MAX_UNROLL)
        why = ar_printf(&L->w->ar, "for %s: kept as a loop: %lld iterations x %s%llu statements is past the %d "
                                   "statements an unrolled loop may have", var, (long long)n,
                        body > TILEC_MAX_UNROLL ? "more than " : "",
                        (unsigned long long)(body > TILEC_MAX_UNROLL ? TILEC_MAX_UNROLL : body), TILEC_MAX_UNROLL);
    else if (L->unrolled + size > TILEC_MAX_UNROLL_GRAPH)
        why = ar_printf(&L->w->ar, "for %s: kept as a loop: unrolled, the graph's loops would pass %d statements", var,
                        TILEC_MAX_UNROLL_GRAPH);
    else if (taken)
        why = ar_printf(&L->w->ar, "for %s: kept as a loop: its iterations' names would clash with '%s'", var, taken);
    if (n >= 0 && !why) { /* unrolled */
        L->unrolled += (uint32_t)size;
        add_note(L, s, loop, ar_printf(&L->w->ar, "for %s in %lld .. %lld step %lld: unrolled, %lld iterations", var,
                                       (long long)b[0], (long long)b[1], (long long)b[2],
                                       (long long)n));
        int outer = L->cur_inst;
        for (int64_t k = 0; k < n && !L->oom; k++) {
            if (grow(L, (void **)&L->insts, L->ninsts, &L->capinsts, sizeof *L->insts))
                break;
            int64_t v = b[0] + k * b[2];
            const char *sfx = ar_printf(&L->w->ar, "%s_%s%lld", outer >= 0 ? L->insts[outer].sfx : "", var,
                                        (long long)v);
            L->insts[L->ninsts] = (inst){outer, var, v, sfx};
            L->cur_inst = (int)L->ninsts++;
            add_note(L, s, loop, sfx ? ar_printf(&L->w->ar, "%s = %lld", var, (long long)v) : NULL);
            flatten(L, &s->body, loop);
            L->cur_inst = outer;
        }
        return;
    }
    if (n >= 0)
        add_note(L, s, loop, why);
    if (grow(L, (void **)&L->loops, L->nloops, &L->caploops, sizeof *L->loops))
        return;
    int l = (int)L->nloops++;
    L->loops[l].parent = loop;
    add_pos(L, (pos){s, P_LOOP, l, L->cur_inst, NULL, 0});
    flatten(L, &s->body, l);
    L->loops[l].end = (int)L->npos;
    add_pos(L, (pos){s, P_END, l, L->cur_inst, NULL, 0});
}

/* The positions of block b (inside loop `loop`), in order. */
static void flatten(lw *L, const tilec_block *b, int loop)
{
    for (uint32_t i = 0; i < b->nstmts && !L->oom; i++) {
        const tilec_stmt *s = b->stmts[i];
        if (s->kind == TILEC_ST_FOR) {
            flatten_for(L, s, loop);
            continue;
        }
        L->nnames += s->nnames;
        for (uint32_t a = 0; s->value && s->value->kind == TILEC_EX_CALL && a < s->value->nargs; a++)
            L->nnames += s->value->args[a]->kind == TILEC_EX_INDEX; /* room for an extern's view of xs[i] */
        add_pos(L, (pos){s, P_STMT, loop, L->cur_inst, NULL, 0});
    }
}

/* Every name the graph spells: parameters, the statements' names, loop
 * variables (what an unrolled iteration's names must not clash with). */
static void ast_names(lw *L, const tilec_block *b)
{
    for (uint32_t i = 0; i < b->nstmts && !L->oom; i++) {
        const tilec_stmt *s = b->stmts[i];
        for (uint32_t k = 0; k < s->nnames && s->names; k++)
            if (s->names[k] && !grow(L, (void **)&L->ast_names, L->nast, &L->capast, sizeof *L->ast_names))
                L->ast_names[L->nast++] = s->names[k];
        if (s->kind == TILEC_ST_FOR)
            ast_names(L, &s->body);
    }
}

/* let c = x[a:b]: a view of the leading axis (the checker proved the form) */
static int slice_of(lw *L, const tilec_stmt *s, const poly **start, const poly **stop)
{
    const tilec_expr *v = s->value;
    if (s->kind != TILEC_ST_LET || !v || v->kind != TILEC_EX_INDEX || v->nargs < 2)
        return 0;
    const tilec_expr *sl = v->args[1];
    int k = find(L, v->args[0]->name);
    if (k < 0 || sl->kind != TILEC_EX_SLICE || !L->e[k].rank) {
        fail(L, &v->loc, "a slice it cannot read of", v->args[0]->name);
        return -1;
    }
    *start = (sl->ival & 1) ? poly_from_expr(&L->w->ar, sl->args[0], lookup_sym, L, NULL) : poly_const(&L->w->ar, 0);
    *stop = (sl->ival & 2) ? poly_from_expr(&L->w->ar, sl->args[1], lookup_sym, L, NULL) : L->e[k].dims[0];
    if (!*start || !*stop) {
        fail(L, &v->loc, "a slice bound it cannot read of", v->args[0]->name);
        return -1;
    }
    return 1;
}

static const char *fresh_name(lw *L, const char *prefix, uint32_t *counter);
static int name_taken(const lw *L, const char *n);

/* The arguments xs[i] of the extern call at position i, each a view of
 * tensor i of its list at its parameter's shape, the sizes from the other
 * arguments (the checker saw that they bind every one): entries of their
 * own, never freed, that keep the list's tensors alive (mark). Filled into
 * args (env's); 0, or -1 (failed). */
static int extern_items(lw *L, int i, const tilec_extern *x, ext_env *env, const entry **args)
{
    const tilec_expr *v = L->pos[i].s->value;
    for (uint32_t a = 0; a < v->nargs && a < x->nparams; a++) {
        if (v->args[a]->kind != TILEC_EX_INDEX)
            continue;
        const tilec_tyexpr *t = &x->params[a].type;
        const poly **dims = ar_array(&L->w->ar, t->ndims ? t->ndims : 1, sizeof *dims);
        if (!dims) {
            L->oom = 1;
            return -1;
        }
        for (uint32_t d = 0; d < t->ndims; d++)
            if (!(dims[d] = poly_from_expr(&L->w->ar, t->dims[d], ext_lookup, env, NULL))) {
                fail(L, &v->args[a]->loc, "a size it cannot read for a tensor of a list in extern", x->name);
                return -1;
            }
        int from;
        if (use_list(L, v->args[a], i, &from))
            return -1;
        int k = (int)L->ne;
        const char *name = ar_printf(&L->w->ar, "%s_%s", x->name, x->params[a].name); /* sqgemm_b */
        if (!name || name_taken(L, name))
            name = fresh_name(L, name ? ar_printf(&L->w->ar, "%s_", name) : "item", &L->nitems);
        entry *e = define(L, name, E_BUFFER, t->dtype, t->ndims, dims, i);
        if (!e)
            return -1;
        e->from = from;
        if (!L->pos[i].items)
            L->pos[i].items = k + 1;
        args[a] = e;
    }
    return 0;
}

static void first_walk(lw *L)
{
    const tilec_graph *g = L->w->graph;
    for (uint32_t i = 0; i < L->npos && !L->failed && !L->oom; i++) {
        const tilec_stmt *s = L->pos[i].s;
        const tilec_expr *v = s->value;
        L->cur_inst = L->pos[i].inst;
        if (L->pos[i].kind == P_NOTE)
            continue;
        if (L->pos[i].kind != P_STMT) {
            L->cur_loop = L->pos[i].kind == P_LOOP ? L->pos[i].loop : L->loops[L->pos[i].loop].parent;
            if (L->pos[i].kind == P_LOOP && set_find(L->loop_set, s->names[0]) < 0)
                set_add(L, &L->loop_set, s->names[0], L->pos[i].loop);
            continue;
        }
        if (is_let_list(L, s)) {
            int from;
            if (use_list(L, v, (int)i, &from))
                return;
            tilec_dtype dt = from >= 0 ? L->e[from].dtype : L->e[find(L, v->args[0]->name)].dtype;
            int *elems = from < 0 ? ar_array(&L->w->ar, v->nargs, sizeof *elems) : NULL;
            entry *x = define(L, s->names[0], E_LIST, dt, 0, NULL, (int)i);
            if (!x || (from < 0 && !elems)) {
                L->oom = 1;
                return;
            }
            x->from = from;
            for (uint32_t j = 0; from < 0 && j < v->nargs; j++)
                elems[x->nelems++] = find(L, v->args[j]->name);
            x->elems = elems;
            continue;
        }
        const poly *start, *stop;
        int sl = slice_of(L, s, &start, &stop);
        if (sl < 0)
            return;
        if (sl) {
            int base = use(L, v->args[0], (int)i);
            const entry *b = &L->e[base];
            const poly **dims = ar_array(&L->w->ar, b->rank, sizeof *dims);
            if (!dims) {
                L->oom = 1;
                return;
            }
            memcpy(dims, b->dims, b->rank * sizeof *dims);
            dims[0] = poly_add(&L->w->ar, stop, start, -1, NULL);
            entry *x = dims[0] ? define(L, s->names[0], E_BUFFER, b->dtype, b->rank, dims, (int)i) : NULL;
            L->oom |= !dims[0];
            if (x)
                x->root = L->e[base].root;
            continue;
        }
        if (s->kind == TILEC_ST_RETURN) {
            for (uint32_t r = 0; r < s->nvalues; r++) {
                int k = use(L, s->values[r], (int)i);
                if (k >= 0)
                    L->e[k].output = 1;
            }
            continue;
        }
        if (s->kind == TILEC_ST_DOC)
            continue;
        if (!v || v->kind != TILEC_EX_CALL) {
            fail(L, &s->loc, "a statement it does not know in graph", g->name);
            return;
        }
        ga_form f;
        gc_form c;
        const char *why;
        const tilec_expr *at;
        if (gc_read(v, &c, &why, &at)) {
            int k = use(L, c.of, (int)i);
            if (k < 0)
                return;
            const entry *in = &L->e[k];
            const poly **dims = ar_array(&L->w->ar, in->rank ? in->rank : 1, sizeof *dims);
            if (!dims) {
                L->oom = 1;
                return;
            }
            memcpy(dims, in->dims, in->rank * sizeof *dims);
            if (c.axis && in->rank) {
                uint32_t d = (uint32_t)(c.axis_value < 0 ? c.axis_value + (int64_t)in->rank : c.axis_value) % in->rank;
                poly_why pw = {0};
                dims[d] = gc_result_dim(&L->w->ar, c.coll, in->dims[d], &pw);
                if (!dims[d]) {
                    fail(L, &v->loc, "a result size it cannot compute in", v->name);
                    return;
                }
            }
            entry *x = define(L, s->names[0], E_BUFFER, in->dtype, in->rank, dims, (int)i);
            if (x)
                x->owned = 1;
        } else if (ga_read(v, &f, &why)) {
            const poly **dims = NULL;
            tilec_dtype dt = f.dtype;
            uint32_t rank = f.ndims;
            if (f.like) {
                int k = use(L, f.of, (int)i);
                if (k < 0)
                    return;
                dims = L->e[k].dims;
                dt = L->e[k].dtype;
                rank = L->e[k].rank;
            } else {
                dims = dims_of(L, f.dims, f.ndims);
            }
            entry *x = define(L, s->names[0], E_BUFFER, dt, rank, dims, (int)i);
            if (x)
                x->owned = x->pooled = 1;
        } else if (!strcmp(v->name, "view")) {
            int item = v->args[0]->kind == TILEC_EX_INDEX, from = -1; /* view(xs[i], ...): the caller's tensor */
            int base = item ? (use_list(L, v->args[0], (int)i, &from) ? -1 : -2) : use(L, v->args[0], (int)i);
            const tilec_expr *ty = v->args[1];
            const poly **dims = dims_of(L, ty->args + 1, ty->nargs - 1);
            entry *x = define(L, s->names[0], E_BUFFER, ty->args[0]->dtype, ty->nargs - 1, dims, (int)i);
            if (x && base >= 0)
                x->root = L->e[base].root;
            if (x && item) /* a root of its own, never freed: its uses keep the list's */
                x->from = from;
        } else if (tilec_module_find_kernel(L->m, v->name)) {
            const tilec_kernel *k = tilec_module_find_kernel(L->m, v->name);
            for (uint32_t a = 0; a < v->nargs && a < k->nparams; a++) {
                int from;
                int item = v->args[a]->kind == TILEC_EX_INDEX; /* xs[i]: tensor i of a list (the checker saw to it) */
                if (k->params[a].type.kind == TILEC_TE_POINTER && !item)
                    use(L, v->args[a], (int)i);
                else if ((k->params[a].type.kind == TILEC_TE_LIST || item) && use_list(L, v->args[a], (int)i, &from))
                    return;
            }
        } else if (tilec_module_find_extern(L->m, v->name)) {
            const tilec_extern *x = tilec_module_find_extern(L->m, v->name);
            const entry **args = ar_array(&L->w->ar, v->nargs ? v->nargs : 1, sizeof *args);
            if (!args) {
                L->oom = 1;
                return;
            }
            int items = 0, from;
            for (uint32_t a = 0; a < v->nargs; a++) {
                if (v->args[a]->kind == TILEC_EX_INDEX) { /* xs[i]: viewed below, its list used here */
                    if (use_list(L, v->args[a], (int)i, &from))
                        return;
                    items++;
                    continue;
                }
                int k = use(L, v->args[a], (int)i);
                if (k < 0)
                    return;
                args[a] = &L->e[k];
            }
            ext_env env = {L, x, args};
            if (items && extern_items(L, (int)i, x, &env, args))
                return;
            for (uint32_t r = 0; r < x->nresults && r < s->nnames; r++) {
                const tilec_tyexpr *t = &x->results[r].type;
                const poly **dims = ar_array(&L->w->ar, t->ndims ? t->ndims : 1, sizeof *dims);
                if (!dims) {
                    L->oom = 1;
                    return;
                }
                for (uint32_t d = 0; dims && d < t->ndims; d++)
                    if (!(dims[d] = poly_from_expr(&L->w->ar, t->dims[d], ext_lookup, &env, NULL))) {
                        fail(L, &v->loc, "a result size it cannot read in extern", x->name);
                        return;
                    }
                entry *e = define(L, s->names[r], E_BUFFER, t->dtype, t->ndims, dims, (int)i);
                if (e)
                    e->owned = 1;
            }
        } else {
            fail(L, &v->loc, "an unknown call", v->name);
        }
    }
    /* a view keeps its base alive (past the loops around the view that are
     * not around the base); a returned view keeps its base too */
    for (int changed = 1; changed;) { /* and a view of xs[i] keeps the list's tensors (which may be views) */
        int64_t before = 0, after = 0; /* last uses only grow: a sum that moved saw a change */
        for (uint32_t k = 0; k < L->ne; k++)
            before += L->e[k].last_use;
        for (uint32_t k = 0; k < L->ne; k++) {
            entry *r = &L->e[L->e[k].root];
            int at = lift(L, L->e[k].last_use, r->scope);
            if (r->last_use < at)
                r->last_use = at;
            r->output |= L->e[k].output;
        }
        for (uint32_t k = 0; k < L->ne; k++)
            if (L->e[k].kind == E_BUFFER && L->e[k].from >= 0)
                mark(L, L->e[k].from, L->e[k].last_use);
        for (uint32_t k = 0; k < L->ne; k++)
            after += L->e[k].last_use;
        changed = after != before;
    }
}

/* ---- the second walk: lines ---- */

static void emit_kernel_defs(lw *L)
{
    const tilec_graph *g = L->w->graph;
    const tilec_kernel **seen = ar_array(&L->w->ar, L->npos + 1, sizeof *seen);
    uint32_t nseen = 0;
    (void)g;
    if (!seen) {
        L->oom = 1;
        return;
    }
    for (uint32_t i = 0; i < L->npos; i++) {
        const tilec_stmt *s = L->pos[i].s;
        if (L->pos[i].kind != P_STMT)
            continue;
        if (s->kind != TILEC_ST_EXPR || !s->value || s->value->kind != TILEC_EX_CALL)
            continue;
        const tilec_kernel *k = tilec_module_find_kernel(L->m, s->value->name);
        uint32_t j = 0;
        while (k && j < nseen && seen[j] != k)
            j++;
        if (!k || j < nseen)
            continue;
        seen[nseen++] = k;
        tilec_wir_line *l = wir_add(L->w, TILEC_WIR_KERNEL_DEF, &k->loc);
        if (!l) {
            L->oom = 1;
            return;
        }
        l->name = k->name;
        l->kernel = k;
        l->nvariants = k->nvariants ? k->nvariants : 1;
    }
}

static void emit_asserts(lw *L)
{
    const tilec_graph *g = L->w->graph;
    nidx *bound = NULL; /* the symbols an earlier dimension binds */
    uint32_t nbound = 0;
    if (gc_graph_has(g)) /* world is bound by the communicator: a dimension checks it */
        set_add(L, &bound, GC_WORLD, (int)nbound++);
    for (uint32_t i = 0; i < g->nparams && !L->oom; i++) {
        const tilec_param *p = &g->params[i];
        if (p->type.kind == TILEC_TE_LIST) { /* the caller's tensors: checked by the wrappers, binds no symbol */
            tilec_wir_line *l = wir_add(L->w, TILEC_WIR_ASSERT_LIST, &p->loc);
            if (!l) {
                L->oom = 1;
                break;
            }
            l->name = p->name;
            l->index = i;
            l->dtype = p->type.dtype;
            continue;
        }
        if (p->type.kind != TILEC_TE_TENSOR)
            continue;
        tilec_wir_line *l = wir_add(L->w, TILEC_WIR_ASSERT_SHAPE, &p->loc);
        uint32_t n = p->type.ndims;
        const char **sizes = ar_array(&L->w->ar, n ? n : 1, sizeof *sizes);
        const tilec_ix **exprs = ar_array(&L->w->ar, n ? n : 1, sizeof *exprs);
        uint8_t *binds = ar_array(&L->w->ar, n ? n : 1, 1);
        if (!l || !sizes || !exprs || !binds) {
            L->oom = 1;
            break;
        }
        for (uint32_t d = 0; d < n; d++) {
            const tilec_expr *e = p->type.dims[d];
            int sym = e->kind == TILEC_EX_NAME;
            exprs[d] = sym ? ix_sym(&L->w->ar, e->name) : ix_int(&L->w->ar, e->ival);
            L->oom |= !exprs[d];
            if (!sym) {
                sizes[d] = ar_printf(&L->w->ar, "%lld", (long long)e->ival);
                continue;
            }
            sizes[d] = e->name;
            if (set_find(bound, e->name) < 0 && nbound < L->capsyms) {
                set_add(L, &bound, e->name, (int)nbound++);
                binds[d] = 1;
            }
        }
        l->name = p->name;
        l->index = i;
        l->dtype = p->type.dtype;
        l->rank = n;
        l->sizes = sizes;
        l->size_exprs = exprs;
        l->binds = binds;
    }
    HASH_CLEAR(hh, bound);
}

static tilec_wir_line *add(lw *L, tilec_wir_kind kind, const tilec_loc *loc)
{
    tilec_wir_line *l = wir_add(L->w, kind, loc);
    if (!l)
        L->oom = 1;
    return l;
}

static void free_line(lw *L, entry *x, tilec_wir_kind kind, const tilec_loc *loc)
{
    tilec_wir_line *l = add(L, kind, loc);
    if (!l)
        return;
    tilec_wir_line tmp = {0};
    shape_into(L, x, &tmp);
    l->name = x->name;
    l->dtype = x->dtype;
    l->bytes = tmp.bytes;
    l->bytes_expr = tmp.bytes_expr;
    l->align = WIR_ALIGN;
    if (x->pooled && kind == TILEC_WIR_FREE_IF_NOT_REUSED)
        l->key = pool_key(L, l);
    x->freed = 1;
}

/* A new name `prefix` N (the first free N from *counter on) that no name
 * of the graph has taken: a multi-output extern's tuple, a sub-list. */
/* Is n a name of the graph (its entries, or any name it spells)? */
static int name_taken(const lw *L, const char *n)
{
    int taken = find(L, n) >= 0;
    for (uint32_t i = 0; i < L->nast && !taken; i++)
        taken = !strcmp(L->ast_names[i], n);
    return taken;
}

static const char *fresh_name(lw *L, const char *prefix, uint32_t *counter)
{
    for (;;) {
        const char *n = ar_printf(&L->w->ar, "%s%u", prefix, (*counter)++);
        if (!n) {
            L->oom = 1;
            return "?";
        }
        if (!name_taken(L, n))
            return n;
    }
}

/* The line that makes list `name` from the list expression e: MAKE_LIST
 * for a sub-list xs[a:b] of a list of the graph, LIST_OF for a list [a,
 * b] of its tensors. 0, or 1 (out of memory). */
static int emit_list(lw *L, const char *name, const tilec_expr *e)
{
    if (e->kind == TILEC_EX_LIST) {
        tilec_wir_line *l = add(L, TILEC_WIR_LIST_OF, &e->loc);
        tilec_wir_arg *args = ar_array(&L->w->ar, e->nargs ? e->nargs : 1, sizeof *args);
        if (!l || !args)
            return 1;
        l->name = name;
        l->args = args;
        l->nargs = e->nargs;
        for (uint32_t i = 0; i < e->nargs; i++) {
            int k = find(L, e->args[i]->name);
            args[i].kind = TILEC_WIR_ARG_BUFFER;
            args[i].text = rname(L, e->args[i]->name);
            if (k >= 0)
                l->dtype = L->e[k].dtype;
        }
        return 0;
    }
    const tilec_expr *sl = e->args[1];
    const poly *lo = (sl->ival & 1) ? poly_from_expr(&L->w->ar, sl->args[0], lookup_sym, L, NULL)
                                    : poly_const(&L->w->ar, 0);
    const poly *hi = (sl->ival & 2) ? poly_from_expr(&L->w->ar, sl->args[1], lookup_sym, L, NULL) : NULL;
    tilec_wir_arg *args = ar_array(&L->w->ar, 2, sizeof *args);
    int k0 = find(L, e->args[0]->name);
    tilec_wir_line *l = args && lo && ((sl->ival & 2) == 0 || hi) ? add(L, TILEC_WIR_MAKE_LIST, &e->loc) : NULL;
    if (!l)
        return 1;
    l->name = name;
    l->from = rname(L, e->args[0]->name);
    l->dtype = k0 >= 0 ? L->e[k0].dtype : TILEC_DT_F32;
    l->nargs = hi ? 2 : 1;
    l->args = args;
    const poly *b[2] = {lo, hi};
    for (uint32_t i = 0; i < l->nargs; i++) {
        args[i].kind = TILEC_WIR_ARG_SIZE;
        args[i].text = pstr(L, b[i]);
        args[i].expr = pexpr(L, b[i]);
    }
    return 0;
}

/* The MAKE_LIST and LIST_OF lines of a kernel call's list arguments that
 * are made for it (a sub-list xs[a:b], a list [a, b], before the call):
 * names[a] is the list argument a passes, NULL where it passes a list of
 * the graph whole. */
static const char **make_lists(lw *L, const tilec_expr *v, const tilec_kernel *k)
{
    const char **names = ar_array(&L->w->ar, v->nargs ? v->nargs : 1, sizeof *names);
    if (!names) {
        L->oom = 1;
        return NULL;
    }
    for (uint32_t a = 0; a < v->nargs && a < k->nparams; a++) {
        const tilec_expr *e = v->args[a];
        if (k->params[a].type.kind != TILEC_TE_LIST || (e->kind != TILEC_EX_INDEX && e->kind != TILEC_EX_LIST))
            continue;
        names[a] = e->kind == TILEC_EX_LIST ? fresh_name(L, "list", &L->nlistofs) : fresh_name(L, "sublist", &L->nlists);
        if (emit_list(L, names[a], e)) {
            L->oom = 1;
            return NULL;
        }
    }
    return names;
}

static tilec_wir_arg *call_args(lw *L, const tilec_expr *v, const tilec_kernel *k, const char *const *lists)
{
    tilec_wir_arg *args = ar_array(&L->w->ar, v->nargs ? v->nargs : 1, sizeof *args);
    if (!args) {
        L->oom = 1;
        return NULL;
    }
    for (uint32_t a = 0; a < v->nargs; a++) {
        const tilec_expr *e = v->args[a];
        const tilec_param *p = k && a < k->nparams ? &k->params[a] : NULL;
        char c = p ? tilec_dtype_class(p->type.dtype) : 0;
        if (p && p->type.kind == TILEC_TE_LIST) { /* a list parameter of the graph, whole (the checker saw to it) */
            args[a].kind = TILEC_WIR_ARG_LIST;
            args[a].text = lists && lists[a] ? lists[a] : e->kind == TILEC_EX_NAME ? rname(L, e->name) : "?";
            continue;
        }
        if (p && p->type.kind == TILEC_TE_POINTER && e->kind == TILEC_EX_INDEX) { /* xs[i]: tensor i of a list */
            const poly *q = poly_from_expr(&L->w->ar, e->args[1], lookup_sym, L, NULL);
            args[a].kind = TILEC_WIR_ARG_ITEM;
            args[a].text = q ? ar_printf(&L->w->ar, "%s[%s]", rname(L, e->args[0]->name), pstr(L, q)) : NULL;
            args[a].expr = q ? pexpr(L, q) : NULL;
            L->oom |= !args[a].text;
            continue;
        }
        if (!p || p->type.kind == TILEC_TE_POINTER) { /* an extern's xs[i]: its view (lists) */
            args[a].kind = TILEC_WIR_ARG_BUFFER;
            args[a].text = !p && lists && lists[a] ? lists[a] : rname(L, e->name);
            continue;
        }
        /* an integer parameter takes a size; so does a float one, given a
         * size expression other than a graph scalar's name (M, 2 * R: the
         * wrappers compute it as sizes are computed) */
        int fsize = c == 'f' && !(e->kind == TILEC_EX_NAME && find(L, e->name) >= 0 &&
                                  L->e[find(L, e->name)].kind == E_SCALAR_PARAM);
        const poly *q = c == 's' || c == 'u' || fsize ? poly_from_expr(&L->w->ar, e, lookup_sym, L, NULL) : NULL;
        args[a].kind = q ? TILEC_WIR_ARG_SIZE : TILEC_WIR_ARG_SCALAR;
        args[a].text = q ? pstr(L, q) : spelled(L, v->args + a, 1);
        args[a].expr = q ? pexpr(L, q) : NULL;
    }
    return args;
}


/* zeros, ones, full: the value every element starts with */
static void fill_into(lw *L, const ga_form *f, tilec_wir_line *l)
{
    fill_value fv;
    char buf[80];
    if (f->fill == GA_EMPTY)
        return;
    if (ga_value(f, l->dtype, &fv) || fill_bits(l->dtype, &fv, &l->fill_bits) != FILL_OK) {
        fail(L, &f->value->loc, "a fill value it cannot read in", L->w->graph->name);
        return;
    }
    l->fill = ar_strdup(&L->w->ar, ga_value_text(f, l->dtype, buf, sizeof buf));
    if (!l->fill)
        L->oom = 1;
}

static tilec_wir_arg size_arg(lw *L, const poly *p)
{
    return (tilec_wir_arg){.kind = TILEC_WIR_ARG_SIZE, .text = pstr(L, p), .expr = pexpr(L, p)};
}

/* LOOP (its bounds as three SIZE args) or END_LOOP */
static void emit_loop(lw *L, const pos *ps)
{
    const tilec_stmt *s = ps->s;
    tilec_wir_line *l = add(L, ps->kind == P_LOOP ? TILEC_WIR_LOOP : TILEC_WIR_END_LOOP, &s->loc);
    if (!l)
        return;
    l->name = s->names[0];
    if (ps->kind == P_END)
        return;
    l->args = ar_array(&L->w->ar, 3, sizeof *l->args);
    const poly *lo = poly_from_expr(&L->w->ar, s->lo, lookup_sym, L, NULL);
    const poly *hi = poly_from_expr(&L->w->ar, s->hi, lookup_sym, L, NULL);
    const poly *st = s->step ? poly_from_expr(&L->w->ar, s->step, lookup_sym, L, NULL) : poly_const(&L->w->ar, 1);
    if (!l->args || !lo || !hi || !st) {
        fail(L, &s->loc, "loop bounds it cannot read of loop", s->names[0]);
        return;
    }
    l->args[0] = size_arg(L, lo);
    l->args[1] = size_arg(L, hi);
    l->args[2] = size_arg(L, st);
    l->nargs = 3;
}

/* let c = x[a:b]: REINTERPRET at offset a * (the base's row stride), with
 * a, b and the base's rows as SIZE args for the wrappers' bounds check */
static void emit_slice(lw *L, const tilec_stmt *s, const poly *start, const poly *stop)
{
    entry *x = &L->e[find(L, s->names[0])];
    const entry *b = &L->e[find(L, s->value->args[0]->name)];
    tilec_wir_line *l = add(L, TILEC_WIR_REINTERPRET, &s->loc);
    if (!l)
        return;
    l->name = x->name;
    l->from = b->name;
    shape_into(L, x, l);
    l->align = WIR_ALIGN;
    l->bytes = NULL;
    l->bytes_expr = NULL;
    poly *row = poly_const(&L->w->ar, 1);
    for (uint32_t d = 1; d < b->rank && row; d++)
        row = poly_mul(&L->w->ar, row, b->dims[d], NULL);
    const poly *off = row ? poly_mul(&L->w->ar, row, start, NULL) : NULL;
    l->args = ar_array(&L->w->ar, 3, sizeof *l->args);
    if (!off || !l->args) {
        L->oom = 1;
        return;
    }
    l->offset = pstr(L, off);
    l->offset_expr = pexpr(L, off);
    l->args[0] = size_arg(L, start);
    l->args[1] = size_arg(L, stop);
    l->args[2] = size_arg(L, b->dims[0]);
    l->nargs = 3;
    l->index = 0;
}

/* A view l of xs[i] (`it`): from the list, one ITEM arg; its bytes kept
 * for the wrappers' check of tensor i's (view(xs[i], ...), an extern's
 * argument xs[i]). */
static void item_view(lw *L, tilec_wir_line *l, const tilec_expr *it)
{
    const poly *q = poly_from_expr(&L->w->ar, it->args[1], lookup_sym, L, NULL);
    l->from = rname(L, it->args[0]->name);
    l->offset = "0";
    l->offset_expr = ix_int(&L->w->ar, 0);
    l->args = ar_array(&L->w->ar, 1, sizeof *l->args);
    if (!q || !l->args || !l->offset_expr) {
        L->oom = 1;
        return;
    }
    l->args[0] = (tilec_wir_arg){.kind = TILEC_WIR_ARG_ITEM, .text = ar_printf(&L->w->ar, "%s[%s]", l->from, pstr(L, q)),
                                 .expr = pexpr(L, q)};
    l->nargs = 1;
    L->oom |= !l->args[0].text;
}

/* The REINTERPRET lines of an extern call's xs[i] arguments (the entries
 * from `first` on, in argument order, that the first walk made); each
 * argument's name in names[a], NULL for the others. */
static const char **extern_item_views(lw *L, const tilec_stmt *s, int first)
{
    const tilec_expr *v = s->value;
    const char **names = ar_array(&L->w->ar, v->nargs ? v->nargs : 1, sizeof *names);
    if (!names) {
        L->oom = 1;
        return NULL;
    }
    for (uint32_t a = 0; a < v->nargs && first >= 0; a++) {
        if (v->args[a]->kind != TILEC_EX_INDEX)
            continue;
        const entry *x = &L->e[first++];
        tilec_wir_line *l = add(L, TILEC_WIR_REINTERPRET, &v->args[a]->loc);
        if (!l)
            return NULL;
        l->name = names[a] = x->name;
        shape_into(L, x, l);
        l->align = WIR_ALIGN;
        item_view(L, l, v->args[a]);
    }
    return names;
}

static void emit_stmt(lw *L, const tilec_stmt *s, int items)
{
    const tilec_expr *v = s->value;
    tilec_wir_line *l;
    if (s->kind != TILEC_ST_DOC && is_let_list(L, s)) {
        L->oom |= emit_list(L, rname(L, s->names[0]), v);
        return;
    }
    const poly *start, *stop;
    int sl = s->kind == TILEC_ST_DOC ? 0 : slice_of(L, s, &start, &stop);
    if (sl) {
        if (sl > 0)
            emit_slice(L, s, start, stop);
        return;
    }
    if (s->kind == TILEC_ST_DOC) {
        if ((l = add(L, TILEC_WIR_COMMENT, &s->loc)))
            l->text = s->text ? s->text : "";
        return;
    }
    ga_form f;
    gc_form c;
    const char *why;
    const tilec_expr *at;
    if (gc_read(v, &c, &why, &at)) {
        entry *x = &L->e[find(L, s->names[0])];
        if (!(l = add(L, TILEC_WIR_COLLECTIVE, &s->loc)))
            return;
        l->name = x->name;
        l->from = rname(L, c.of->name);
        l->coll = c.coll;
        l->redop = c.op;
        l->root = c.root;
        if (c.axis && x->rank)
            l->index = (uint32_t)(c.axis_value < 0 ? c.axis_value + (int64_t)x->rank : c.axis_value);
        l->symbol = ar_printf(&L->w->ar, "tilec:coll:%s", x->name);
        L->oom |= !l->symbol;
        shape_into(L, x, l);
        l->align = WIR_ALIGN;
        return;
    }
    int alloc = ga_read(v, &f, &why);
    if (alloc || !strcmp(v->name, "view")) {
        int view = !alloc;
        entry *x = &L->e[find(L, s->names[0])];
        if (!(l = add(L, view ? TILEC_WIR_REINTERPRET : TILEC_WIR_ALLOCATE, &s->loc)))
            return;
        l->name = x->name;
        shape_into(L, x, l);
        l->align = WIR_ALIGN;
        const tilec_expr *it = v->args[0]->kind == TILEC_EX_INDEX ? v->args[0] : NULL; /* view(xs[i], ...) */
        if (view && it) {
            item_view(L, l, it);
        } else if (view) {
            l->from = rname(L, v->args[0]->name);
            l->offset = "0";
            l->offset_expr = ix_int(&L->w->ar, 0);
            l->bytes = NULL;
            l->bytes_expr = NULL;
            L->oom |= !l->offset_expr;
        } else {
            l->key = pool_key(L, l);
            fill_into(L, &f, l);
        }
        return;
    }
    const tilec_kernel *k = tilec_module_find_kernel(L->m, v->name);
    if (k) {
        const char **lists = make_lists(L, v, k);
        if (!lists || !(l = add(L, TILEC_WIR_KERNEL_CALL, &s->loc)))
            return;
        l->name = k->name;
        l->kernel = k;
        l->nvariants = k->nvariants ? k->nvariants : 1;
        l->args = call_args(L, v, k, lists);
        l->nargs = v->nargs;
        l->grid = spelled(L, k->grid, k->ngrid);
        return;
    }
    const tilec_extern *x = tilec_module_find_extern(L->m, v->name);
    tilec_wir_kind kind = x->nresults ? TILEC_WIR_EXTERN_ALLOC : TILEC_WIR_EXTERN_CALL;
    const char **viewed = extern_item_views(L, s, items - 1);
    if (!viewed || !(l = add(L, kind, &s->loc)))
        return;
    l->ext = x;
    l->symbol = x->symbol;
    l->args = call_args(L, v, NULL, viewed);
    l->nargs = v->nargs;
    l->nresults = x->nresults;
    if (!x->nresults) {
        l->name = x->name;
        l->outs = ar_array(&L->w->ar, v->nargs ? v->nargs : 1, sizeof *l->outs);
        for (uint32_t a = 0; l->outs && a < v->nargs; a++)
            l->outs[l->nouts++] = viewed[a] ? viewed[a] : rname(L, v->args[a]->name);
        if (!l->outs)
            L->oom = 1;
        return;
    }
    if (s->kind == TILEC_ST_LET) {
        entry *e = &L->e[find(L, s->names[0])];
        l->name = e->name;
        shape_into(L, e, l);
        l->align = WIR_ALIGN;
        return;
    }
    l->name = fresh_name(L, "tuple", &L->ntuples);
    const char *tuple = l->name;
    for (uint32_t r = 0; r < s->nnames; r++) {
        entry *e = &L->e[find(L, s->names[r])];
        tilec_wir_line *m = add(L, TILEC_WIR_MULTI_OUTPUT, &s->name_locs[r]);
        if (!m)
            return;
        m->name = e->name;
        m->from = tuple;
        m->index = r;
        shape_into(L, e, m);
        m->align = WIR_ALIGN;
    }
}

static void second_walk(lw *L)
{
    const tilec_graph *g = L->w->graph;
    int last = -1; /* the last top position that is not a doc comment or the return */
    for (uint32_t i = 0; i < L->npos; i++)
        if (L->pos[i].kind != P_LOOP && L->pos[i].kind != P_NOTE && L->pos[i].s->kind != TILEC_ST_DOC && L->pos[i].s->kind != TILEC_ST_RETURN &&
            (L->pos[i].kind == P_END ? L->loops[L->pos[i].loop].parent : L->pos[i].loop) < 0)
            last = (int)i;
    L->w->ret_loc = g->loc;
    /* the entries by last use, in entry order within a position (a
     * counting sort): order[at[i] .. at[i + 1]) are those last used at i */
    uint32_t n = L->npos;
    uint32_t *at = calloc((size_t)n + 2, sizeof *at), *order = malloc(((size_t)L->ne + 1) * sizeof *order);
    if (!at || !order) {
        free(at);
        free(order);
        L->oom = 1;
        return;
    }
    for (uint32_t k = 0; k < L->ne; k++)
        if (L->e[k].last_use >= 0 && (uint32_t)L->e[k].last_use < n)
            at[L->e[k].last_use + 2]++;
    for (uint32_t i = 2; i < n + 2; i++)
        at[i] += at[i - 1];
    for (uint32_t k = 0; k < L->ne; k++)
        if (L->e[k].last_use >= 0 && (uint32_t)L->e[k].last_use < n)
            order[at[L->e[k].last_use + 1]++] = k;
    for (uint32_t i = 0; i < n && !L->oom && !L->failed; i++) {
        const tilec_stmt *s = L->pos[i].s;
        L->cur_inst = L->pos[i].inst;
        if (L->pos[i].kind == P_NOTE) {
            tilec_wir_line *c = add(L, TILEC_WIR_COMMENT, &s->loc);
            if (c)
                c->text = L->pos[i].note;
            continue;
        }
        if (L->pos[i].kind != P_STMT) {
            emit_loop(L, &L->pos[i]);
            if (L->pos[i].kind == P_LOOP)
                continue;
        } else if (s->kind == TILEC_ST_RETURN) {
            L->w->ret_loc = s->loc;
            L->w->outputs = ar_array(&L->w->ar, s->nvalues ? s->nvalues : 1, sizeof *L->w->outputs);
            if (!L->w->outputs) {
                L->oom = 1;
                break;
            }
            for (uint32_t r = 0; r < s->nvalues; r++)
                L->w->outputs[r] = s->values[r]->name;
            L->w->noutputs = s->nvalues;
            continue;
        } else {
            emit_stmt(L, s, L->pos[i].items);
        }
        if ((L->pos[i].kind == P_STMT && s->kind == TILEC_ST_DOC) || (int)i >= last)
            continue; /* after the last statement nothing can reuse: FREE at the end */
        for (uint32_t j = at[i]; j < at[i + 1]; j++) {
            entry *x = &L->e[order[j]];
            if (x->owned && x->root == (int)order[j] && !x->output && !x->freed && x->last_use == (int)i)
                free_line(L, x, TILEC_WIR_FREE_IF_NOT_REUSED, &s->loc);
        }
    }
    free(at);
    free(order);
    for (uint32_t k = 0; k < L->ne && !L->oom; k++) {
        entry *x = &L->e[k];
        if (x->owned && x->root == (int)k && !x->output && !x->freed)
            free_line(L, x, TILEC_WIR_FREE, &L->w->ret_loc);
    }
}

tilec_status tilec_wir_lower(tilec_ctx *ctx, const tilec_module *m, const tilec_graph *g, tilec_wir **out)
{
    if (!out)
        return TILEC_ERR_ARG;
    *out = NULL;
    if (!ctx || !m || !g)
        return TILEC_ERR_ARG;
    tilec_wir *w = calloc(1, sizeof *w);
    if (!w)
        return TILEC_ERR_NOMEM;
    ar_init(&w->ar);
    w->mod = m;
    w->graph = g;
    lw L = {.w = w, .ctx = ctx, .m = m};
    L.cap = g->nparams;
    L.capsyms = 1; /* world, in a graph with collectives */
    L.cur_loop = -1;
    for (uint32_t i = 0; i < g->nparams; i++)
        L.capsyms += g->params[i].type.ndims;
    L.cur_inst = -1;
    for (uint32_t i = 0; i < g->nparams && !L.oom; i++)
        if (!grow(&L, (void **)&L.ast_names, L.nast, &L.capast, sizeof *L.ast_names))
            L.ast_names[L.nast++] = g->params[i].name;
    ast_names(&L, &g->body);
    if (!L.oom)
        flatten(&L, &g->body, -1);
    L.cap += L.nnames;
    L.e = ar_array(&w->ar, L.cap + 1, sizeof *L.e);
    L.syms = ar_array(&w->ar, L.capsyms + 1, sizeof *L.syms);
    if (!L.e || !L.syms)
        L.oom = 1;
    if (!L.oom)
        bind_params(&L);
    if (!L.oom && !L.failed)
        first_walk(&L);
    if (!L.oom && !L.failed)
        emit_kernel_defs(&L);
    if (!L.oom && !L.failed)
        emit_asserts(&L);
    if (!L.oom && !L.failed)
        second_walk(&L);
    if (!L.oom && !L.failed && wir_overlap(w))
        L.oom = 1;
    HASH_CLEAR(hh, L.by_name);
    HASH_CLEAR(hh, L.sym_set);
    HASH_CLEAR(hh, L.loop_set);
    free(L.pos);
    free(L.loops);
    free(L.insts);
    free(L.ast_names);
    if (L.oom || w->ar.failed || L.failed) {
        tilec_wir_free(w);
        return L.failed ? TILEC_ERR_INPUT : TILEC_ERR_NOMEM;
    }
    *out = w;
    return TILEC_OK;
}

void tilec_wir_free(tilec_wir *w)
{
    if (!w)
        return;
    ar_free(&w->ar);
    free(w);
}
