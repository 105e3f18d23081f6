/* check_list.c: tensor lists, the kernel parameters [*T] (docs/language.md
 * §4.3): the header's rules, and the only three uses of a list in a body
 * and a grid: p[i] (the *T of tensor i), len(p) and numel(p, i). A list
 * name anywhere else is an error, so no list value flows into the rest of
 * the checker or the lowering. */
#include <string.h>

#include "parser/check_internal.h"

/* The first list parameter of k, or NULL. */
const tilec_param *chk_first_list(const tilec_kernel *k)
{
    for (uint32_t i = 0; k && i < k->nparams; i++)
        if (k->params[i].type.kind == TILEC_TE_LIST)
            return &k->params[i];
    return NULL;
}

const char *chk_list_text(checker *ck, tilec_dtype dt)
{
    const char *s = ar_printf(&ck->scratch, "[*%s]", tilec_dtype_name(dt));
    return s ? s : "[*?]";
}

void chk_list_misuse(checker *ck, const tilec_expr *e, const binding *b)
{
    const char *d = tilec_dtype_name(b->type.dtype);
    chk_err(ck, &e->loc, "'%s' is a tensor list %s; use %s[i] (the *%s of tensor i), len(%s) or numel(%s, i)",
        e->name, chk_list_text(ck, b->type.dtype), e->name, d, e->name, e->name);
}

/* The list parameter that e names, annotated; NULL (reported) otherwise. */
static const binding *list_named(checker *ck, tilec_expr *e, const char *fn)
{
    binding *b = e->kind == TILEC_EX_NAME ? chk_lookup(ck, e->name) : NULL;
    if (b && b->type.list) {
        chk_set(ck, e, b->type);
        return b;
    }
    tilec_type t = chk_expr(ck, e);
    if (t.kind != TILEC_TY_ERROR)
        chk_err(ck, chk_start_of(e), "%s takes a tensor list parameter such as p: [*f32], got %s", fn,
            chk_ty_str(ck, &t));
    return NULL;
}

/* A scalar integer index of tensor list b: 0, else -1 (reported). */
static int list_index(checker *ck, const binding *b, tilec_expr *i)
{
    tilec_type x = chk_expr(ck, i);
    if (x.kind == TILEC_TY_ERROR)
        return -1;
    if (x.kind != TILEC_TY_VALUE || x.ptr || x.rank || !chk_is_int(&x)) {
        chk_err(ck, chk_start_of(i), "the index of tensor list '%s' must be a scalar integer, got %s", b->name,
            chk_ty_str(ck, &x));
        return -1;
    }
    int64_t v;
    if (!chk_const_try(ck, i, &v) && v < 0) {
        chk_err(ck, chk_start_of(i), "index %lld of tensor list '%s' is negative", (long long)v, b->name);
        return -1;
    }
    return 0;
}

tilec_type chk_list_index(checker *ck, tilec_expr *e, const binding *b)
{
    chk_set(ck, e->args[0], b->type);
    if (e->nargs != 2 || e->args[1]->kind == TILEC_EX_SLICE || e->args[1]->kind == TILEC_EX_NONE) {
        chk_err(ck, &e->loc, "tensor list '%s' takes one index, the tensor's: %s[i] is the *%s of tensor i", b->name,
            b->name, tilec_dtype_name(b->type.dtype));
        return chk_ty_err();
    }
    if (list_index(ck, b, e->args[1]))
        return chk_ty_err();
    tilec_type r = chk_ty_scalar(b->type.dtype);
    r.ptr = true;
    return r;
}

tilec_type chk_list_len(checker *ck, tilec_expr *e)
{
    return list_named(ck, e->args[0], "len") ? chk_ty_scalar(TILEC_DT_I32) : chk_ty_err();
}

tilec_type chk_list_numel(checker *ck, tilec_expr *e)
{
    const binding *b = list_named(ck, e->args[0], "numel");
    if (!b || list_index(ck, b, e->args[1]))
        return chk_ty_err();
    return chk_ty_scalar(TILEC_DT_I64);
}

int chk_list_header(checker *ck, const tilec_kernel *k)
{
    const tilec_param *l = chk_first_list(k);
    if (!l)
        return 1;
    if (k->has_variants || k->tune) {
        chk_err(ck, k->has_variants ? &k->variant_loc : &k->tune_loc,
            "kernel '%s' takes the tensor list '%s', so it has one variant: the runtime times variants on scratch "
            "copies of the buffers a kernel writes, which it does not make for tensor lists (drop the %s)",
            k->name, l->name, k->has_variants ? "variants" : "tune space");
        return 0;
    }
    return 1;
}

/* A sub-list b[lo:hi] (the index expression e of list b, a graph's call
 * argument): one slice of size expressions, no step; the bounds checked
 * where the sizes decide them (the list's length is the caller's: the
 * wrappers check hi <= len(b) at run time). 1 when fine, else 0 (reported). */
static int sublist(checker *ck, const binding *b, const tilec_expr *e)
{
    const tilec_expr *sl = e->nargs == 2 ? e->args[1] : NULL;
    if (!sl || sl->kind != TILEC_EX_SLICE) {
        chk_err(ck, chk_start_of(e), "a graph passes part of tensor list '%s' as a sub-list %s[a:b] (its tensors a to b - 1), "
            "not %s", b->name, b->name, e->nargs == 2 ? "one tensor of it" : "an index of several axes");
        return 0;
    }
    if (sl->ival & 4) {
        chk_err(ck, chk_start_of(sl->args[2]), "a sub-list takes no step: %s[a:b] is tensors a to b - 1 of '%s'",
            b->name, b->name);
        return 0;
    }
    const poly *lo = (sl->ival & 1) ? chk_size_expr(ck, sl->args[0], "the start of a sub-list") : poly_const(&ck->scratch, 0);
    const poly *hi = (sl->ival & 2) ? chk_size_expr(ck, sl->args[1], "the stop of a sub-list") : NULL;
    if (!lo || ((sl->ival & 2) && !hi))
        return 0;
    const char *at = ar_printf(&ck->scratch, "%s[%s:%s]", b->name, poly_str(&ck->scratch, lo),
                               hi ? poly_str(&ck->scratch, hi) : "");
    int64_t c = 0;
    const tilec_loc *at_lo = (sl->ival & 1) ? chk_start_of(sl->args[0]) : chk_start_of(sl);
    if (chk_known_negative(ck, lo, NULL, &c)) {
        chk_err(ck, at_lo, "sub-list %s of tensor list '%s' starts at %lld, before its first tensor", at,
            b->name, (long long)c);
        return 0;
    }
    if (hi && chk_known_negative(ck, hi, lo, &c)) {
        chk_err(ck, at_lo, "sub-list %s of tensor list '%s' stops %lld tensor%s before it starts", at,
            b->name, (long long)-c, c == -1 ? "" : "s");
        return 0;
    }
    return 1;
}

/* The spelling of a list of named tensors, "[a, b, c]" (an element that
 * is no name: "(expression)"). */
static const char *literal_text(checker *ck, const tilec_expr *e)
{
    strbuf t;
    sb_init(&t);
    sb_putc(&t, '[');
    for (uint32_t j = 0; j < e->nargs; j++)
        sb_printf(&t, "%s%s", j ? ", " : "", e->args[j]->kind == TILEC_EX_NAME ? e->args[j]->name : "(expression)");
    sb_putc(&t, ']');
    const char *s = t.failed ? NULL : ar_strdup(&ck->scratch, sb_str(&t));
    sb_free(&t);
    ck->oom |= !s;
    return s ? s : "[?]";
}

/* A list of named tensors [a, b, c] (a graph's list argument or let): at
 * least one tensor, each a tensor of the graph (parameter or made), all of
 * one element type; their shapes may differ. A binding of kind B_LIST for
 * it (named by its spelling, in the scratch arena), else NULL (reported). */
static binding *list_literal(checker *ck, const tilec_expr *e)
{
    const char *text = literal_text(ck, e);
    if (!e->nargs) {
        chk_err(ck, &e->loc, "an empty list [] passes no tensor: a graph's list of tensors names at least one, as [a, "
            "b] (a sub-list xs[0:0] of a list parameter has none)");
        return NULL;
    }
    const binding *first = NULL;
    const binding **elems = ar_array(&ck->scratch, e->nargs, sizeof *elems);
    int ok = elems != NULL;
    ck->oom |= !elems;
    for (uint32_t j = 0; j < e->nargs && elems; j++) {
        const tilec_expr *x = e->args[j];
        const binding *b = chk_tensor_arg(ck, x, ar_printf(&ck->scratch, "element %u of the list %s", j + 1, text),
                                          NULL);
        if (!b) {
            ok = 0;
            continue;
        }
        elems[j] = b;
        if (!first)
            first = b;
        else if (b->dtype != first->dtype && ok) {
            chk_err(ck, &x->loc, "the tensors of a list have one element type: '%s' is %s, but '%s' is %s (element %u "
                "of %s)", first->name, first->text, b->name, b->text, j + 1, text);
            ok = 0;
        }
    }
    binding *r = ok && first ? ar_alloc(&ck->scratch, sizeof *r) : NULL;
    if (!r) {
        ck->oom |= ok && first;
        return NULL;
    }
    memset(r, 0, sizeof *r);
    r->name = text;
    r->kind = B_LIST;
    r->loc = e->loc;
    r->dtype = first->dtype;
    r->type = chk_ty_scalar(first->dtype);
    r->type.list = true;
    r->text = chk_list_text(ck, first->dtype);
    r->elems = elems;
    r->nelems = e->nargs;
    return r;
}

/* let ys = xs[a:b]; (a sub-list of a list of the graph) or let ys = [a, b];
 * (a list of named tensors): ys is a tensor list of the graph from here
 * on, passed on whole or as a sub-list as a list parameter is. 1 when the
 * statement is such a let (checked, reported), else 0. */
int chk_graph_let_list(checker *ck, tilec_stmt *s)
{
    const tilec_expr *v = s->value;
    if (s->kind != TILEC_ST_LET || !v)
        return 0;
    const binding *from = NULL;
    if (v->kind == TILEC_EX_INDEX && v->nargs >= 1 && v->args[0]->kind == TILEC_EX_NAME) {
        binding *b = chk_lookup(ck, v->args[0]->name);
        if (!b || b->kind != B_LIST)
            return 0;
        if (v->nargs == 2 && v->args[1]->kind != TILEC_EX_SLICE) {
            chk_err(ck, chk_start_of(v), "let %s = %s[...] binds one tensor of tensor list '%s', which carries no shape: "
                "view it, let %s = view(%s[i], %s[M, K]), or pass %s[i] itself where a kernel takes a pointer or an "
                "extern a tensor", s->names[0], b->name, b->name, s->names[0], b->name, tilec_dtype_name(b->dtype),
                b->name);
            return 1;
        }
        from = sublist(ck, b, v) ? b : NULL;
    } else if (v->kind == TILEC_EX_LIST) {
        from = list_literal(ck, v);
    } else {
        return 0;
    }
    if (!from)
        return 1;
    binding *b = chk_bind(ck, s->names[0], &s->name_locs[0], B_LIST, "tensor list");
    if (b) {
        b->type = from->type;
        b->dtype = from->dtype;
        b->text = from->text;
        b->listed = v->kind == TILEC_EX_LIST || from->listed;
        if (v->kind == TILEC_EX_LIST) { /* its tensors known: a constant index names one (a sub-list's are not kept) */
            b->elems = from->elems;
            b->nelems = from->nelems;
        }
    }
    s->types = ar_array(ck->ar, 1, sizeof *s->types);
    if (s->types)
        s->types[0] = from->text;
    ck->oom |= !s->types;
    return 1;
}

/* A graph's call of kernel k passes argument i for the tensor list
 * parameter k->params[i]: it must name a tensor list of the graph (a
 * parameter or a let), whole or as a sub-list xs[a:b], or be a list of
 * named tensors [a, b]. Returns that list's binding (its dtype unchecked:
 * a generic kernel's type parameter takes it), else NULL (reported). */
const binding *chk_list_graph_arg(checker *ck, const tilec_kernel *k, const tilec_expr *call, uint32_t i)
{
    const tilec_param *p = &k->params[i];
    const tilec_expr *a = call->args[i];
    if (a->kind == TILEC_EX_LIST)
        return list_literal(ck, a);
    const char *want = p->type.tparam ? ar_printf(&ck->scratch, "[*%s]", p->type.tparam) : chk_list_text(ck, p->type.dtype);
    const tilec_expr *n = a->kind == TILEC_EX_INDEX && a->nargs >= 1 && a->args[0]->kind == TILEC_EX_NAME ? a->args[0] : a;
    binding *b = n->kind == TILEC_EX_NAME ? chk_lookup(ck, n->name) : NULL;
    if (n->kind == TILEC_EX_NAME && !b) {
        chk_err(ck, &n->loc, "undefined name '%s'", n->name);
        return NULL;
    }
    if (chk_poisoned(b))
        return NULL;
    if (b && b->kind == B_LIST)
        return n == a || sublist(ck, b, a) ? b : NULL;
    const char *got = !b                    ? "an expression"
                      : n != a              ? ar_printf(&ck->scratch, "a part of '%s', the %s %s", b->name,
                                                        b->kind == B_TENSOR ? "tensor" : "scalar",
                                                        b->kind == B_TENSOR ? b->text : tilec_dtype_name(b->type.dtype))
                      : b->kind == B_TENSOR ? ar_printf(&ck->scratch, "'%s', the tensor %s", b->name, b->text)
                                            : ar_printf(&ck->scratch, "'%s', the scalar %s", b->name,
                                                        tilec_dtype_name(b->type.dtype));
    chk_err(ck, chk_start_of(a),
        "argument %u of '%s' ('%s') is a tensor list %s: pass a tensor list of the graph such as "
        "'params: %s', a sub-list of one such as params[0:k] or a list of its tensors such as [a, b], got %s", i + 1, k->name, p->name,
        want ? want : "[*?]", want ? want : "[*?]", got ? got : "?");
    return NULL;
}

/* xs[i], one tensor of a tensor list of the graph (a parameter or a let)
 * where a kernel takes a pointer, an extern a tensor, or view a tensor:
 * one index, a size expression (a constant, a loop variable, an integer
 * parameter) not negative where the sizes decide it, and within a list [a,
 * b] of named tensors whose length is known (the wrappers check 0 <= i <
 * len(xs) at run time). The list's binding, else NULL (reported); 0 in
 * *is_item when a is no such index (nothing reported); in *elem the tensor
 * itself where the list's tensors are known and i is a constant, else NULL. */
const binding *chk_list_item(checker *ck, const tilec_expr *a, int *is_item, const binding **elem)
{
    *is_item = 0;
    if (elem)
        *elem = NULL;
    if (a->kind != TILEC_EX_INDEX || a->nargs < 1 || a->args[0]->kind != TILEC_EX_NAME)
        return NULL;
    binding *b = chk_lookup(ck, a->args[0]->name);
    if (!b || b->kind != B_LIST)
        return NULL;
    *is_item = 1;
    const tilec_expr *i = a->nargs == 2 ? a->args[1] : NULL;
    if (!i || i->kind == TILEC_EX_SLICE || i->kind == TILEC_EX_NONE) {
        chk_err(ck, chk_start_of(a), "one tensor of tensor list '%s' takes one index, %s[i] (the tensor i of the list)",
            b->name, b->name);
        return NULL;
    }
    const poly *p = chk_size_expr(ck, i, "the index of a tensor list");
    int64_t c = 0;
    if (!p)
        return NULL;
    if (chk_known_negative(ck, p, NULL, &c)) {
        chk_err(ck, chk_start_of(i), "index %lld of tensor list '%s' is negative", (long long)c, b->name);
        return NULL;
    }
    if (b->elems && poly_is_const(p, &c)) {
        if ((uint64_t)c >= b->nelems) {
            chk_err(ck, chk_start_of(i), "index %lld of tensor list '%s' is past its end: '%s' holds %u tensor%s", (long long)c,
                b->name, b->name, b->nelems, b->nelems == 1 ? "" : "s");
            return NULL;
        }
        if (elem)
            *elem = b->elems[c];
    }
    return b;
}

/* The spelling of xs[i] that chk_list_item accepted: "ws[k + 1]". */
const char *chk_spelled(checker *ck, const tilec_expr *a)
{
    const poly *p = a->nargs == 2 ? chk_size_expr(ck, a->args[1], "the index of a tensor list") : NULL;
    const char *s = ar_printf(&ck->scratch, "%s[%s]", a->args[0]->name, p ? poly_str(&ck->scratch, p) : "i");
    ck->oom |= !s;
    return s ? s : "xs[i]";
}

/* A graph's tensor list `b` named by `a` where `what` needs something
 * else ("argument 2 of 'k'", "the first argument of view"). */
void chk_list_graph_misuse(checker *ck, const tilec_expr *a, const binding *b, const char *what, const char *want)
{
    chk_err(ck, &a->loc, "%s must be %s, but '%s' is the tensor list %s (a graph passes a tensor list, whole or as a "
        "sub-list %s[a:b], only to a kernel's tensor list parameter such as p: %s)", what, want, a->name, b->text, a->name,
        b->text);
}

/* A written type as messages spell it: f32, *f32, [*f32] (a tensor's
 * dimensions are left out: f32[...]). */
const char *chk_tyexpr_str(checker *ck, const tilec_tyexpr *t)
{
    const char *d = tilec_dtype_name(t->dtype);
    const char *s = t->kind == TILEC_TE_LIST      ? ar_printf(&ck->scratch, "[*%s]", d)
                    : t->kind == TILEC_TE_POINTER ? ar_printf(&ck->scratch, "*%s", d)
                    : t->kind == TILEC_TE_TENSOR  ? ar_printf(&ck->scratch, "%s[...]", d)
                                                  : d;
    return s ? s : d;
}
