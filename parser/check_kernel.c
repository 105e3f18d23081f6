/* check_kernel.c: kernels: parameters, grid and hints, and the variants
 * of a kernel; the body is checked once per hint configuration (the base
 * hints, then each variant). */
#include <stdlib.h>
#include <string.h>

#include "parser/ast_ix.h"
#include "parser/check_internal.h"
#include "parser/tune.h"

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
    if (e->kind == TILEC_EX_CALL && !strcmp(e->name, "len"))
        return 1; /* len(p) of a tensor list: checked as in a body; the launch's count of tensors */
    if (e->kind == TILEC_EX_NAME) {
        binding *b = chk_lookup(ck, e->name);
        if (b && b->type.list) {
            chk_err(ck, &e->loc, "the grid of '%s' can use the tensor list '%s' only as len(%s)", k->name, e->name,
                e->name);
            return 0;
        }
    }
    if (e->kind == TILEC_EX_CALL && strcmp(e->name, "cdiv") != 0 && strcmp(e->name, "min") != 0 &&
        strcmp(e->name, "max") != 0) {
        chk_err(ck, &e->loc,
            "the grid of '%s' is computed on the host from scalar parameters and hints; '%s' is not allowed (cdiv, "
            "min and max are)",
            k->name, e->name);
        return 0;
    }
    if (e->kind == TILEC_EX_NAME) {
        binding *b = chk_lookup(ck, e->name);
        if (b && b->type.ptr) {
            chk_err(ck, &e->loc, "the grid of '%s' cannot use the pointer '%s'", k->name, e->name);
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
    chk_reset_env(ck);
    ck->variant = variant;
    ck->annotate = variant < 0;
    for (uint32_t i = 0; i < k->nparams; i++) {
        const tilec_param *p = &k->params[i];
        if (chk_lookup(ck, p->name))
            continue; /* reported once by chk_kernel */
        binding *b = chk_bind(ck, p->name, &p->loc, B_PARAM, "parameter");
        if (b) {
            b->type = chk_ty_scalar(p->type.dtype);
            b->type.ptr = p->type.kind == TILEC_TE_POINTER || p->type.kind == TILEC_TE_LIST;
            b->type.list = p->type.kind == TILEC_TE_LIST;
        }
    }
    for (uint32_t i = 0; i < k->nhints; i++) {
        const tilec_hint *h = &k->hints[i];
        if (chk_lookup(ck, h->name))
            continue;
        const tilec_hint *chk_set = hint_in(k, variant, i);
        binding *b = chk_bind(ck, h->name, &chk_set->loc, B_HINT, "hint");
        if (b) {
            b->value = variant >= 0 && k->variants[variant].values ? k->variants[variant].values[i] : chk_set->value;
            b->type = chk_ty_scalar(b->value > INT32_MAX || b->value < INT32_MIN ? TILEC_DT_I64 : TILEC_DT_I32);
            b->type.weak = true;
        }
    }
    for (uint32_t i = 0; i < k->ngrid; i++) {
        tilec_expr *g = k->grid[i];
        if (!host_expr_ok(ck, k, g))
            continue;
        ck->host = 1;
        tilec_type t = chk_expr(ck, g);
        ck->host = 0;
        if (t.kind != TILEC_TY_ERROR && (!chk_is_int(&t) || t.rank))
            chk_err(ck, chk_start_of(g), "a grid dimension must be a scalar integer, got %s", chk_ty_str(ck, &t));
    }
    ck->depth = 1;
    chk_block(ck, &k->body);
}

/* Evaluate a hint's value in the environment of the hints before it. */
static int eval_hint_value(checker *ck, const char *name, const tilec_expr *expr, const char *what, int64_t *out)
{
    int64_t v;
    if (chk_const_eval(ck, expr, what, &v))
        return -1;
    if (!strcmp(name, "warps") && (v < 1 || v > 32 || (v & (v - 1)))) {
        chk_err(ck, &expr->loc, "warps must be 1, 2, 4, 8, 16 or 32 (a block of at most 1024 threads), got %lld",
            (long long)v);
        return -1;
    }
    if (!strcmp(name, "stages") && (v < 1 || v > TILEC_MAX_STAGES)) {
        chk_err(ck, &expr->loc, "stages must be from 1 to %d, got %lld", TILEC_MAX_STAGES, (long long)v);
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
        binding *b = chk_lookup(ck, k->hints[i].name);
        if (!bad && b && b->kind == B_HINT)
            b->value = v->values[i];
    }
    for (uint32_t i = 0; i < k->nhints; i++) {
        binding *b = chk_lookup(ck, k->hints[i].name);
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

/* Every configuration of k's tune space, checked as a variant with its
 * errors captured: those that fail are pruned with the first as the reason;
 * the rest stay k's variants for the tuning pass (lower/tune.c). */
static void check_tune(checker *ck, tilec_kernel *k)
{
    if (!chk_tune_tile_axes(ck, k) || !chk_tune_configs(ck, k))
        return;
    uint32_t *keep = malloc(k->nvariants * sizeof *keep), n = 0;
    if (!keep) {
        ck->oom = 1;
        return;
    }
    for (uint32_t c = 0; c < k->nvariants && !chk_stop(ck); c++) {
        chk_tune_capture_begin(ck, k, c);
        if (!eval_variant_hints(ck, k, c))
            check_config(ck, k, (int)c);
        chk_tune_capture_end(ck);
        if (!k->tune_cands[c].why)
            keep[n++] = c;
    }
    ck->variant = -1;
    if (!n && !chk_stop(ck)) {
        chk_err(ck, &k->tune_loc, "no configuration of the tune space of kernel '%s' passes the checker; the first "
                "fails with: %s", k->name, k->tune_cands[0].why);
        free(keep);
        return;
    }
    chk_tune_keep_variants(k, keep, n);
    free(keep);
}

/* The grid as integer expressions, in the module's arena: 0 when out of memory. */
static int grid_exprs(checker *ck, tilec_kernel *k)
{
    k->gridx = ar_array(ck->ar, k->ngrid, sizeof *k->gridx);
    if (!k->gridx) {
        ck->oom = 1;
        return 0;
    }
    for (uint32_t i = 0; i < k->ngrid; i++) {
        aix_why why = {0};
        k->gridx[i] = ast_to_ix(ck->ar, k->grid[i], 1, &why);
        if (why.fail == AIX_NOMEM) {
            ck->oom = 1;
            return 0;
        }
    }
    return 1;
}

void chk_kernel(checker *ck, tilec_kernel *k)
{
    ck->k = k;
    ck->variant = -1;
    chk_reset_env(ck);
    int ok = 1;
    size_t errors = ck->ctx->nerrors;
    char owner[300];
    snprintf(owner, sizeof owner, "kernel '%.200s'", k->name);
    chk_no_out(ck, k->params, k->nparams, owner);
    /* parameters */
    for (uint32_t i = 0; i < k->nparams; i++) {
        tilec_param *p = &k->params[i];
        if (p->type.kind == TILEC_TE_TENSOR) {
            chk_err(ck, &p->type.loc, "kernel parameter '%s' cannot be a tensor type; use a pointer such as *%s", p->name,
                tilec_dtype_name(p->type.dtype));
            ok = 0;
        }
        if (!chk_bind(ck, p->name, &p->loc, B_PARAM, "parameter"))
            ok = 0;
    }
    ok &= chk_list_header(ck, k);
    /* a tune space: its axes become the first hints */
    ok &= chk_tune_header(ck, k);
    int hints_ok = 1;
    /* hints, each evaluated with the ones before it */
    for (uint32_t i = 0; i < k->nhints; i++) {
        tilec_hint *h = &k->hints[i];
        if (eval_hint(ck, h, "a hint value"))
            hints_ok = 0;
        binding *b = chk_bind(ck, h->name, &h->loc, B_HINT, "hint");
        if (b)
            b->value = h->value;
        else
            hints_ok = 0;
    }
    /* variants */
    if (k->has_variants && k->variants_keyed) {
        /* The keys were labels only: the runtime times every variant and
         * never compares a key with anything, so they read like sizes
         * that matter. Say how to write it; check nothing else of it. */
        chk_err(ck, k->nvariants ? &k->variants[0].loc : &k->variant_loc,
                "variant keys are labels the runtime never compares: write `variants { { NAME = v, ... }, {}, ... }` "
                "(drop the name after `variants` and each `key:`; the sets are variant 0, 1, ... in order)");
        ok = 0;
    } else if (k->has_variants) {
        if (!k->nvariants) {
            chk_err(ck, &k->variant_loc, "variants of '%s' list no override sets; write `variants { {} }` or remove them",
                    k->name);
            ok = 0;
        } else if (k->nvariants > TILEC_MAX_VARIANTS) {
            chk_err(ck, &k->variant_loc, "kernel '%s' lists %u variants, more than %d (the most the runtime times)",
                    k->name, k->nvariants, TILEC_MAX_VARIANTS);
            ok = 0;
        }
        for (uint32_t i = 0; i < k->nvariants; i++) {
            tilec_variant *v = &k->variants[i];
            for (uint32_t j = 0; j < v->noverrides; j++) {
                tilec_hint *o = &v->overrides[j];
                int found = 0;
                for (uint32_t h = 0; h < k->nhints; h++)
                    found |= !strcmp(k->hints[h].name, o->name);
                for (uint32_t h = 0; h < j; h++)
                    if (!strcmp(v->overrides[h].name, o->name)) {
                        chk_err(ck, &o->loc, "variant %u overrides '%s' twice", i, o->name);
                        ok = 0;
                    }
                if (!found) {
                    chk_err(ck, &o->loc, "variant %u overrides '%s', which is not a hint of kernel '%s'", i, o->name,
                            k->name);
                    ok = 0;
                } else if (eval_hint(ck, o, "a hint value")) {
                    ok = 0;
                }
            }
        }
    }
    if (!k->ngrid) {
        chk_err(ck, &k->loc, "kernel '%s' has no grid; add one such as grid (cdiv(n, BLOCK))", k->name);
        ok = 0;
    } else if (k->ngrid > 3) {
        chk_err(ck, &k->grid[3]->loc, "a grid has at most 3 dimensions, '%s' has %u", k->name, k->ngrid);
        ok = 0;
    }
    for (uint32_t i = 0; ok && hints_ok && i < k->nvariants && !chk_stop(ck); i++)
        if (eval_variant_hints(ck, k, i))
            ok = 0;
    if (ok && !grid_exprs(ck, k))
        ok = 0;
    if (!chk_stop(ck) && hints_ok) {
        check_config(ck, k, -1);
        for (uint32_t i = 0; ok && i < k->nvariants && !chk_stop(ck); i++)
            check_config(ck, k, (int)i);
        /* the base configuration (each axis' first value) checked cleanly */
        if (ok && k->ntune_hints && ck->ctx->nerrors == errors && !chk_stop(ck))
            check_tune(ck, k);
    }
    ck->k = NULL;
    ck->variant = -1;
}
