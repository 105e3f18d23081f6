/* check_call.c: extern declarations, and the calls of externs and
 * kernels in graphs: arguments unified with the callee's parameters and
 * the shapes of the results. */
#include <string.h>

#include "parser/check_internal.h"

void chk_extern(checker *ck, tilec_extern *x)
{
    chk_reset_graph(ck);
    char owner[300];
    snprintf(owner, sizeof owner, "extern '%.200s'", x->name);
    size_t symlen = strlen(x->symbol);
    if (!symlen)
        chk_err(ck, &x->symbol_loc, "the extern symbol of '%s' is empty", x->name);
    else if (symlen > 200)
        chk_err(ck, &x->symbol_loc, "the extern symbol of '%s' is longer than 200 bytes", x->name);
    for (const char *c = x->symbol; symlen <= 200 && *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '.')) {
            unsigned char u = (unsigned char)*c;
            char what[16];
            if (u >= 0x20 && u < 0x7f)
                snprintf(what, sizeof what, "'%c'", u);
            else
                snprintf(what, sizeof what, "byte 0x%02x", u);
            chk_err(ck, &x->symbol_loc,
                "invalid character %s in the extern symbol of '%s' (a symbol is made of letters, digits, '_' and "
                "'.', such as \"cublas.sgemm\")", what, x->name);
            break;
        }
    chk_no_out(ck, x->params, x->nparams, owner);
    for (uint32_t i = 0; i < x->nparams; i++) {
        const tilec_param *p = &x->params[i];
        if (p->type.kind != TILEC_TE_TENSOR) {
            chk_err(ck, &p->type.loc, "a parameter of an extern is a tensor type such as %s[M, K], got %s",
                tilec_dtype_name(p->type.dtype), chk_tyexpr_str(ck, &p->type));
            continue;
        }
        if (chk_bind_dims(ck, p, owner))
            continue;
        chk_bind(ck, p->name, &p->loc, B_TENSOR, "parameter");
    }
    for (uint32_t i = 0; i < x->nresults; i++) {
        const tilec_param *r = &x->results[i];
        if (r->type.kind != TILEC_TE_TENSOR) {
            chk_err(ck, &r->type.loc, "a result of an extern is a tensor type such as %s[M, N], got %s",
                tilec_dtype_name(r->type.dtype), chk_tyexpr_str(ck, &r->type));
            continue;
        }
        chk_tensor_dims(ck, &r->type, "a result dimension");
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
binding *chk_tensor_arg(checker *ck, const tilec_expr *a, const char *what, const char *want)
{
    const char *paren = want ? ar_printf(&ck->scratch, " (%s)", want) : "";
    if (!what)
        what = "an argument"; /* out of memory */
    const binding *l = a->kind == TILEC_EX_INDEX && a->nargs && a->args[0]->kind == TILEC_EX_NAME
                           ? chk_lookup(ck, a->args[0]->name) : NULL;
    if (l && l->kind == B_LIST) {
        chk_err(ck, chk_start_of(a), "%s must be a tensor%s, but %s[...] is one tensor of tensor list '%s', which "
            "carries no shape: view it first, let w = view(%s[i], %s[M, K]) (xs[i] itself goes only where a kernel "
            "takes a pointer, an extern a tensor, or view a tensor)", what, paren ? paren : "", l->name, l->name, l->name,
            tilec_dtype_name(l->dtype));
        return NULL;
    }
    if (a->kind != TILEC_EX_NAME) {
        chk_err(ck, chk_start_of(a), "%s must be a tensor%s, got an expression", what, paren ? paren : "");
        return NULL;
    }
    binding *b = chk_lookup(ck, a->name);
    if (!b) {
        chk_err(ck, &a->loc, "undefined name '%s'", a->name);
        return NULL;
    }
    if (chk_poisoned(b))
        return NULL;
    if (b->kind == B_LIST) {
        chk_list_graph_misuse(ck, a, b, what, ar_printf(&ck->scratch, "a tensor%s", paren ? paren : ""));
        return NULL;
    }
    if (b->kind != B_TENSOR) {
        chk_err(ck, &a->loc, "%s must be a tensor%s, but '%s' is the scalar %s", what, paren ? paren : "", a->name,
            tilec_dtype_name(b->type.dtype));
        return NULL;
    }
    return b;
}

/* A tensor type as written, "f32[M, K]". */
static const char *chk_tyexpr_full(checker *ck, const tilec_tyexpr *t)
{
    strbuf b;
    sb_init(&b);
    sb_printf(&b, "%s[", tilec_dtype_name(t->dtype));
    for (uint32_t d = 0; d < t->ndims; d++) {
        const tilec_expr *e = t->dims[d];
        if (e->kind == TILEC_EX_NAME)
            sb_printf(&b, "%s%s", d ? ", " : "", e->name);
        else
            sb_printf(&b, "%s%lld", d ? ", " : "", (long long)e->ival);
    }
    sb_putc(&b, ']');
    const char *s = b.failed ? NULL : ar_strdup(&ck->scratch, sb_str(&b));
    sb_free(&b);
    ck->oom |= !s;
    return s ? s : "a tensor";
}

/* The arguments xs[i] (one tensor of a tensor list) of an extern call,
 * once the others bound the extern's symbols: each is viewed as its
 * parameter's shape, so every size of that shape must come from another
 * argument (a list carries element counts, not shapes); where the tensor
 * is known (a constant index of a list [a, b]) its bytes must be the
 * shape's. The wrappers check the others' at run time, as view(xs[i],
 * T[...]) does. 1 when fine, else 0 (reported). */
static int extern_items(checker *ck, const tilec_extern *x, const tilec_expr *call, ext_env *env)
{
    for (uint32_t i = 0; i < call->nargs; i++) {
        const tilec_param *p = &x->params[i];
        const tilec_expr *a = call->args[i];
        int item;
        const binding *elem;
        if (!chk_list_item(ck, a, &item, &elem) || !item)
            continue;
        uint32_t n = p->type.ndims;
        const poly **dims = ar_array(&ck->scratch, n ? n : 1, sizeof *dims);
        if (!dims) {
            ck->oom = 1;
            return 0;
        }
        for (uint32_t d = 0; d < n; d++) {
            const tilec_expr *pd = p->type.dims[d];
            dims[d] = pd->kind == TILEC_EX_INT ? poly_const(&ck->scratch, pd->ival)
                      : pd->kind == TILEC_EX_NAME ? ext_lookup(env, pd->name) : NULL;
            if (!dims[d] && pd->kind == TILEC_EX_NAME) {
                chk_err(ck, chk_start_of(a), "argument %u of '%s' ('%s': %s) is %s, one tensor of tensor list '%s', "
                    "which carries no shape: dimension %u (%s) comes from no other argument of '%s'; %s", i + 1, x->name,
                    p->name, chk_tyexpr_full(ck, &p->type), chk_spelled(ck, a), a->args[0]->name, d, pd->name, x->name,
                    elem ? ar_printf(&ck->scratch, "pass the tensor itself, '%s'", elem->name)
                         : ar_printf(&ck->scratch, "view it first, let w = view(%s, %s[...])", chk_spelled(ck, a),
                                     tilec_dtype_name(p->type.dtype)));
                return 0;
            }
            if (!dims[d])
                return 0; /* reported at the extern */
        }
        const char *what = elem ? ar_printf(&ck->scratch, "argument %u of '%s' ('%s'): view of %s ('%s', %s", i + 1,
                                            x->name, p->name, chk_spelled(ck, a), elem->name, elem->text) : NULL;
        if (elem && chk_view_bytes(ck, chk_start_of(a), what, elem->dtype, elem->dims, elem->rank, p->type.dtype, dims, n))
            return 0;
    }
    return 1;
}

/* Check an extern call; returns the result tensors' dims (NULL on error). */
const poly ***chk_extern_call(checker *ck, const tilec_extern *x, const tilec_expr *call)
{
    if (call->nargs != x->nparams) {
        chk_err(ck, &call->loc, "extern '%s' takes %u argument%s, got %u", x->name, x->nparams, x->nparams == 1 ? "" : "s",
            call->nargs);
        return NULL;
    }
    ext_env env = {ck, NULL};
    int ok = 1, items = 0;
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
        int item;
        const binding *l = chk_list_item(ck, a, &item, NULL);
        if (item) { /* xs[i]: viewed as the parameter's shape, its sizes from the other arguments (below) */
            if (!l)
                ok = 0;
            else if (l->dtype != p->type.dtype) {
                chk_err(ck, chk_start_of(a), "argument %u of '%s' ('%s') must be %s, but %s is a tensor of %s", i + 1,
                    x->name, p->name, sb_str(&want), chk_spelled(ck, a), l->text);
                ok = 0;
            }
            items++;
            sb_free(&want);
            continue;
        }
        binding *b = chk_tensor_arg(ck, a, ar_printf(&ck->scratch, "argument %u of '%s'", i + 1, x->name), sb_str(&want));
        if (!b) {
            ok = 0;
        } else if (b->dtype != p->type.dtype || b->rank != p->type.ndims) {
            chk_err(ck, &a->loc, "argument %u of '%s' ('%s') must be %s, got %s", i + 1, x->name, p->name, sb_str(&want),
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
                chk_err(ck, &a->loc, "argument %u of '%s' ('%s'): dimension %u of '%s' is %s, but %s is expected%s", i + 1,
                    x->name, p->name, d, b->name, poly_str(&ck->scratch, got), poly_str(&ck->scratch, exp),
                    expl ? expl : "");
                ok = 0;
            }
        }
    }
    if (ok && items)
        ok = extern_items(ck, x, call, &env);
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
                    chk_size_limit_err(ck, &call->loc, &why.poly,
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

void chk_kernel_call(checker *ck, const tilec_kernel *k, const tilec_expr *call)
{
    if (call->nargs != k->nparams) {
        chk_err(ck, &call->loc, "kernel '%s' takes %u argument%s, got %u", k->name, k->nparams, k->nparams == 1 ? "" : "s",
            call->nargs);
        return;
    }
    for (uint32_t i = 0; i < call->nargs; i++) {
        const tilec_param *p = &k->params[i];
        const tilec_expr *a = call->args[i];
        if (p->type.kind == TILEC_TE_LIST) {
            const binding *b = chk_list_graph_arg(ck, k, call, i);
            if (b && b->dtype != p->type.dtype)
                chk_err(ck, chk_start_of(a), "argument %u of '%s' ('%s') is %s, but '%s' is %s", i + 1, k->name, p->name,
                    chk_list_text(ck, p->type.dtype), b->name, b->text);
            continue;
        }
        if (p->type.kind == TILEC_TE_POINTER) {
            char want[32];
            snprintf(want, sizeof want, "*%s", tilec_dtype_name(p->type.dtype));
            int item;
            const binding *l = chk_list_item(ck, a, &item, NULL);
            if (item) { /* xs[i]: tensor i of a list */
                if (l && l->dtype != p->type.dtype)
                    chk_err(ck, chk_start_of(a), "argument %u of '%s' ('%s') is *%s, but %s[...] is a tensor of %s", i + 1,
                        k->name, p->name, tilec_dtype_name(p->type.dtype), l->name, l->text);
                continue;
            }
            binding *b = chk_tensor_arg(ck, a, ar_printf(&ck->scratch, "argument %u of '%s'", i + 1, k->name), want);
            if (b && b->dtype != p->type.dtype)
                chk_err(ck, &a->loc, "argument %u of '%s' ('%s') is *%s, but '%s' is %s", i + 1, k->name, p->name,
                    tilec_dtype_name(p->type.dtype), b->name, b->text);
            continue;
        }
        char c = tilec_dtype_class(p->type.dtype);
        int item;
        const binding *l = chk_list_item(ck, a, &item, NULL);
        if (item) {
            if (l)
                chk_err(ck, chk_start_of(a), "argument %u of '%s' ('%s') is a scalar %s, but %s is one tensor of tensor "
                    "list '%s' (it goes where a kernel takes a pointer *%s)", i + 1, k->name, p->name,
                    tilec_dtype_name(p->type.dtype), chk_spelled(ck, a), l->name, tilec_dtype_name(l->dtype));
            continue;
        }
        if (a->kind == TILEC_EX_NAME) {
            binding *b = chk_lookup(ck, a->name);
            if (chk_poisoned(b))
                continue;
            if (b && (b->kind == B_TENSOR || b->kind == B_LIST)) {
                chk_err(ck, &a->loc, "argument %u of '%s' ('%s') is a scalar %s, but '%s' is a tensor%s", i + 1, k->name,
                    p->name, tilec_dtype_name(p->type.dtype), a->name, b->kind == B_LIST ? " list" : "");
                continue;
            }
            if (b && b->kind == B_SCALAR) {
                char bc = tilec_dtype_class(b->type.dtype);
                if ((c == 'b') != (bc == 'b') || (c != 'f' && bc == 'f'))
                    chk_err(ck, &a->loc, "argument %u of '%s' ('%s') is %s, but '%s' is %s", i + 1, k->name, p->name,
                        tilec_dtype_name(p->type.dtype), a->name, tilec_dtype_name(b->type.dtype));
                continue;
            }
        }
        if (c == 'b') {
            if (a->kind != TILEC_EX_BOOL)
                chk_err(ck, chk_start_of(a), "argument %u of '%s' ('%s') is bool: pass true or false", i + 1, k->name, p->name);
            continue;
        }
        const tilec_expr *lit = a->kind == TILEC_EX_UNARY && a->op == TILEC_OP_NEG ? a->args[0] : a;
        if (lit->kind == TILEC_EX_FLOAT || lit->kind == TILEC_EX_INF) {
            if (c != 'f')
                chk_err(ck, &a->loc, "argument %u of '%s' ('%s') is %s, got the float %s%s", i + 1, k->name, p->name,
                    tilec_dtype_name(p->type.dtype), lit == a ? "" : "-", lit->kind == TILEC_EX_INF ? "inf" : lit->name);
            continue;
        }
        chk_size_expr(ck, a, "a scalar kernel argument");
    }
}

const tilec_kernel *chk_pick_instance(checker *ck, const tilec_kernel *g, tilec_expr *call)
{
    if (call->nargs != g->nparams) {
        chk_kernel_call(ck, g, call); /* says the count, and nothing else */
        return NULL;
    }
    tilec_dtype bound[TILEC_MAX_TPARAMS];
    const binding *from[TILEC_MAX_TPARAMS] = {0};
    uint32_t argno[TILEC_MAX_TPARAMS] = {0};
    int ok = 1;
    for (uint32_t i = 0; i < call->nargs; i++) {
        const tilec_param *p = &g->params[i];
        int list = p->type.kind == TILEC_TE_LIST;
        if ((p->type.kind != TILEC_TE_POINTER && !list) || !p->type.tparam) {
            if (list && !chk_list_graph_arg(ck, g, call, i))
                ok = 0;
            continue;
        }
        uint32_t t = 0;
        while (t < g->ntparams && strcmp(g->tparams[t].name, p->type.tparam))
            t++;
        char want[64];
        snprintf(want, sizeof want, list ? "[*%s]" : "*%s", p->type.tparam);
        int item = 0;
        const binding *b = list ? chk_list_graph_arg(ck, g, call, i) : chk_list_item(ck, call->args[i], &item, NULL);
        if (!list && !item)
            b = chk_tensor_arg(ck, call->args[i], ar_printf(&ck->scratch, "argument %u of '%s'", i + 1, g->name), want);
        if (!b) {
            ok = 0;
            continue;
        }
        const tilec_tparam *tp = &g->tparams[t];
        if (!from[t]) {
            uint32_t d = 0;
            while (d < tp->ndtypes && tp->dtypes[d] != b->dtype)
                d++;
            if (d == tp->ndtypes) { /* reported once: later arguments are held to it */
                chk_err(ck, chk_start_of(call->args[i]),
                    "kernel '%s' takes %s = %s, but argument %u ('%s': %s) is '%s': %s", g->name, tp->name,
                    gen_dtype_set(&ck->scratch, tp), i + 1, p->name, want, b->name, b->text);
                ok = 0;
            }
            from[t] = b;
            bound[t] = b->dtype;
            argno[t] = i;
        } else if (b->dtype != bound[t]) {
            chk_err(ck, chk_start_of(call->args[i]),
                "argument %u of '%s' ('%s': %s) is '%s': %s, but argument %u ('%s') made %s = %s", i + 1, g->name,
                p->name, want, b->name, b->text, argno[t] + 1, g->params[argno[t]].name, tp->name,
                tilec_dtype_name(bound[t]));
            ok = 0;
        }
    }
    if (!ok)
        return NULL;
    for (uint32_t n = 0; n < g->ninstances; n++) {
        const tilec_kernel *k = g->instances[n];
        uint32_t t = 0;
        while (t < g->ntparams && k->targs[t] == bound[t])
            t++;
        if (t == g->ntparams) {
            call->name = k->name;
            return k;
        }
    }
    return NULL; /* every combination has an instance: not reached */
}
