/* check_chunk.c: chunked graphs (issue 35 item 4): `for` loops in graphs
 * (the loop variable is an integer size symbol of the body; names made in
 * the body end with it and stay unique in the graph) and slices of the
 * leading axis, `let c = x[a:b];`, a view at an offset whose bounds are
 * checked here where the sizes decide them, else by the wrappers at run
 * time. */
#include <string.h>

#include "parser/check_internal.h"

struct chk_gone {
    const char *name;
    tilec_loc loc;
    UT_hash_handle hh;
};

int chk_graph_for_head(checker *ck, tilec_stmt *s)
{
    const poly *lo = chk_size_expr(ck, s->lo, "the start of a graph's for loop");
    const poly *hi = chk_size_expr(ck, s->hi, "the end of a graph's for loop");
    int ok = lo && hi;
    if (s->step) {
        const poly *st = chk_size_expr(ck, s->step, "the step of a graph's for loop");
        int64_t v = 0;
        if (st && (!poly_is_const(st, &v) || v <= 0)) {
            chk_err(ck, chk_start_of(s->step), "the step of a graph's for loop is a positive integer, got %s",
                poly_str(&ck->scratch, st));
            ok = 0;
        }
        ok &= st != NULL;
    }
    symbol *sym = NULL;
    HASH_FIND_STR(ck->syms, s->names[0], sym);
    if (sym) {
        chk_err(ck, &s->name_locs[0], "loop variable '%s' is already a size symbol (%s)", s->names[0], sym->origin);
        ok = 0;
    }
    ck->depth++; /* the body's scope: the loop variable and its names */
    binding *b = sym ? NULL : chk_bind(ck, s->names[0], &s->name_locs[0], B_SCALAR, "loop variable");
    if (b)
        b->type = chk_ty_scalar(TILEC_DT_I64);
    /* constant bounds: the loop variable's values are known, so slices check
     * at every iteration (const_loop); kept as the binding's dims, which a
     * scalar has no other use for */
    int64_t c[3] = {0, 0, 1};
    const poly **bounds = b && ok ? ar_array(&ck->scratch, 3, sizeof *bounds) : NULL;
    if (bounds && poly_is_const(lo, &c[0]) && poly_is_const(hi, &c[1]) &&
        (!s->step || poly_is_const(chk_size_expr(ck, s->step, "the step of a graph's for loop"), &c[2]))) {
        for (int i = 0; i < 3; i++)
            bounds[i] = poly_const(&ck->scratch, c[i]);
        b->dims = bounds;
        b->rank = 3;
    }
    return ok && b;
}

void chk_graph_for_end(checker *ck, chk_gone **gone)
{
    for (size_t i = ck->nstack; i-- > 0 && ck->stack[i]->depth == ck->depth;) {
        struct chk_gone *g = ar_alloc(&ck->scratch, sizeof *g);
        if (!g) {
            ck->oom = 1;
            break;
        }
        g->name = ck->stack[i]->name;
        g->loc = ck->stack[i]->loc;
        HASH_ADD_KEYPTR(hh, *gone, g->name, strlen(g->name), g);
    }
    chk_leave_scope(ck);
}

int chk_graph_gone(checker *ck, chk_gone *gone, const tilec_stmt *s)
{
    for (uint32_t j = 0; (s->kind == TILEC_ST_LET || s->kind == TILEC_ST_LET_TUPLE || s->kind == TILEC_ST_FOR) &&
                         j < s->nnames; j++) {
        struct chk_gone *g = NULL;
        HASH_FIND_STR(gone, s->names[j], g);
        if (g) {
            chk_err(ck, &s->name_locs[j], "'%s' is already defined inside an earlier for loop: a graph's names are "
                "unique, loops included", s->names[j]);
            chk_note(ck, &g->loc, "'%s' is defined here", s->names[j]);
            return 1;
        }
    }
    return 0;
}

void chk_graph_gone_free(chk_gone **gone) { HASH_CLEAR(hh, *gone); } /* the entries live in the scratch arena */

/* Where the sizes decide it: a constant that must not be negative. */
int chk_known_negative(checker *ck, const poly *a, const poly *b, int64_t *v)
{
    poly_why why = {0};
    const poly *d = b ? poly_add(&ck->scratch, a, b, -1, &why) : a;
    return d && poly_is_const(d, v) && *v < 0;
}

/* ---- slices at every iteration of loops with constant bounds ---- */

enum { MAX_LOOP_VARS = 4, MAX_ITERATIONS = 1 << 16 };

typedef struct iter_env {
    const char *name[MAX_LOOP_VARS];
    int64_t lo[MAX_LOOP_VARS], hi[MAX_LOOP_VARS], step[MAX_LOOP_VARS], at[MAX_LOOP_VARS];
    int n, unknown; /* unknown: a symbol that is no loop variable of constant bounds */
} iter_env;

static void loop_vars(checker *ck, const tilec_ix *e, iter_env *v)
{
    if (!e || v->unknown)
        return;
    if (e->op != TILEC_IX_SYM) {
        loop_vars(ck, e->a, v);
        loop_vars(ck, e->b, v);
        return;
    }
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->name[i], e->name))
            return;
    binding *b = chk_lookup(ck, e->name);
    int64_t c[3];
    if (!b || b->kind != B_SCALAR || b->rank != 3 || !b->dims || v->n == MAX_LOOP_VARS ||
        !poly_is_const(b->dims[0], &c[0]) || !poly_is_const(b->dims[1], &c[1]) || !poly_is_const(b->dims[2], &c[2])) {
        v->unknown = 1;
        return;
    }
    v->name[v->n] = e->name;
    v->lo[v->n] = v->at[v->n] = c[0];
    v->hi[v->n] = c[1];
    v->step[v->n++] = c[2];
}

static int iter_lookup(void *user, const tilec_ix *sym, int64_t *out)
{
    const iter_env *v = user;
    for (int i = 0; i < v->n; i++)
        if (!strcmp(v->name[i], sym->name)) {
            *out = v->at[i];
            return 0;
        }
    return 1;
}

/* Every iteration of the loops whose variables a slice names, where their
 * bounds and every other size are constants: the first out-of-bounds one
 * is an error ("at i = 3"); 1 when reported. */
static int const_loop(checker *ck, const tilec_expr *sl, const char *at, const binding *base, const poly *a,
                      const poly *b)
{
    const tilec_ix *e[3] = {poly_ix(&ck->scratch, a), poly_ix(&ck->scratch, b), poly_ix(&ck->scratch, base->dims[0])};
    iter_env v = {0};
    for (int i = 0; i < 3; i++) {
        if (!e[i])
            return 0;
        loop_vars(ck, e[i], &v);
    }
    if (v.unknown || !v.n)
        return 0;
    uint64_t total = 1;
    for (int i = 0; i < v.n; i++) {
        if (v.lo[i] >= v.hi[i])
            return 0; /* no iteration */
        total *= (uint64_t)((v.hi[i] - v.lo[i] + v.step[i] - 1) / v.step[i]);
        if (total > MAX_ITERATIONS)
            return 0; /* left to run time */
    }
    for (;;) {
        int64_t x[3];
        for (int i = 0; i < 3; i++)
            if (tilec_ix_eval(e[i], iter_lookup, &v, &x[i], NULL) != TILEC_IX_OK)
                return 0;
        const char *why = x[0] < 0 ? "starts before the first row" : x[1] < x[0] ? "stops before it starts"
                        : x[2] < x[1] ? "runs past its end" : NULL;
        if (why) {
            strbuf w;
            sb_init(&w);
            for (int i = 0; i < v.n; i++)
                sb_printf(&w, "%s%s = %lld", i ? ", " : "", v.name[i], (long long)v.at[i]);
            chk_err(ck, chk_start_of(sl), "slice %s of '%s' (%s) %s at %s: start %lld, stop %lld, %lld rows", at,
                base->name, base->text, why, sb_str(&w), (long long)x[0], (long long)x[1], (long long)x[2]);
            ck->oom |= w.failed;
            sb_free(&w);
            return 1;
        }
        int i = v.n - 1; /* the next iteration, the last variable fastest */
        while (i >= 0 && (v.at[i] += v.step[i]) >= v.hi[i]) {
            v.at[i] = v.lo[i];
            i--;
        }
        if (i < 0)
            return 0;
    }
}

int chk_graph_slice(checker *ck, tilec_stmt *s)
{
    const tilec_expr *v = s->value;
    int item = 0;
    const binding *l = s->kind == TILEC_ST_LET && v->kind == TILEC_EX_INDEX ? chk_list_item(ck, v->args[0], &item, NULL)
                                                                            : NULL;
    if (item) { /* xs[i][a:b] */
        if (l)
            chk_err(ck, chk_start_of(v), "a slice of %s, one tensor of tensor list '%s', which carries no shape (no rows "
                "to slice): view it first, let w = view(%s, %s[R, C]), then slice w[a:b]", chk_spelled(ck, v->args[0]),
                l->name, chk_spelled(ck, v->args[0]), tilec_dtype_name(l->dtype));
        return 1;
    }
    if (s->kind != TILEC_ST_LET || v->kind != TILEC_EX_INDEX || v->args[0]->kind != TILEC_EX_NAME)
        return 0;
    binding *base = chk_tensor_arg(ck, v->args[0], "a sliced value", NULL);
    if (!base)
        return 1;
    uint32_t nidx = v->nargs - 1;
    if (nidx > base->rank) {
        chk_err(ck, &v->loc, "'%s' (%s) has %u ax%s, but the slice names %u", base->name, base->text, base->rank,
            base->rank == 1 ? "is" : "es", nidx);
        return 1;
    }
    const tilec_expr *sl = v->args[1];
    for (uint32_t i = 0; i < nidx; i++) {
        const tilec_expr *e = v->args[1 + i];
        int full = e->kind == TILEC_EX_SLICE && !(e->ival & 7);
        if (e->kind == TILEC_EX_SLICE && (e->ival & 4)) {
            chk_err(ck, chk_start_of(e->args[2]), "a graph's slice takes no step: x[a:b] is a contiguous view at an "
                "offset (kernels take plain pointers)");
            return 1;
        }
        if (i == 0 ? e->kind != TILEC_EX_SLICE : !full) {
            chk_err(ck, chk_start_of(e), "a graph slices the leading axis only, as x[a:b] or x[a:b, :] (a contiguous "
                "view at an offset: kernels take plain pointers)");
            return 1;
        }
    }
    const poly *zero = poly_const(&ck->scratch, 0);
    const poly *dim = base->dims[0];
    const poly *a = (sl->ival & 1) ? chk_size_expr(ck, sl->args[0], "the start of a slice") : zero;
    const poly *b = (sl->ival & 2) ? chk_size_expr(ck, sl->args[1], "the stop of a slice") : dim;
    if (!a || !b)
        return 1;
    int64_t c = 0;
    const char *at = ar_printf(&ck->scratch, "%s[%s:%s]", base->name, poly_str(&ck->scratch, a), poly_str(&ck->scratch, b));
    if (chk_known_negative(ck, a, NULL, &c))
        chk_err(ck, chk_start_of(sl), "slice %s of '%s' (%s) starts at %lld, before the first row", at, base->name,
            base->text, (long long)c);
    else if (chk_known_negative(ck, b, a, &c))
        chk_err(ck, chk_start_of(sl), "slice %s of '%s' (%s) stops %lld row%s before it starts", at, base->name,
            base->text, (long long)-c, c == -1 ? "" : "s");
    else if (chk_known_negative(ck, dim, b, &c))
        chk_err(ck, chk_start_of(sl), "slice %s of '%s' (%s) runs %lld row%s past its end", at, base->name, base->text,
            (long long)-c, c == -1 ? "" : "s");
    else if (!const_loop(ck, sl, at, base, a, b)) {
        const poly **dims = ar_array(&ck->scratch, base->rank, sizeof *dims);
        poly_why why = {0};
        if (!dims) {
            ck->oom = 1;
            return 1;
        }
        memcpy(dims, base->dims, base->rank * sizeof *dims);
        dims[0] = poly_add(&ck->scratch, b, a, -1, &why);
        if (!dims[0] && chk_size_limit_err(ck, &sl->loc, &why, "the size of the slice"))
            return 1;
        binding *r = dims[0] ? chk_bind_tensor(ck, s->names[0], &s->name_locs[0], base->dtype, dims, base->rank) : NULL;
        if (r)
            r->listed = base->listed; /* a slice of a view of a list's tensor */
        s->types = ar_array(ck->ar, 1, sizeof *s->types);
        if (r && s->types)
            s->types[0] = r->text;
        ck->oom |= !s->types;
    }
    return 1;
}
