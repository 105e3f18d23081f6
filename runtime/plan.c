/* plan.c: launch plans (tilec/plan.h): steps resolved once against a
 * program (kernel entries found, argument slots checked against parameter
 * kinds), then run for the slot values of each call: integer slots range-
 * checked before anything is launched, then the steps run eagerly
 * (plan_steps.c) or through a CUDA graph (plan_graph.c). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/plan_internal.h"

tilec_plan *tilec_plan_new(tilec_program *prog, tilec_externs *externs, const char *name, uint32_t nslots)
{
    if (!prog || !name || !prog->rt)
        return NULL;
    tilec_plan *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->prog = prog;
    p->rt = prog->rt;
    p->ext = externs;
    p->nslots = nslots;
    p->name = strdup(name);
    p->types = calloc(nslots ? nslots : 1, sizeof *p->types);
    p->slot_names = calloc(nslots ? nslots : 1, sizeof *p->slot_names);
    if (!p->name || !p->types || !p->slot_names) {
        tilec_plan_free(p);
        return NULL;
    }
    return p;
}

void tilec_plan_free(tilec_plan *p)
{
    if (!p)
        return;
    plan_graph_clear(p);
    for (uint32_t i = 0; i < p->nsteps; i++) {
        free(p->steps[i].args);
        free(p->steps[i].symbol);
        free(p->steps[i].tensors);
    }
    for (uint32_t i = 0; p->slot_names && i < p->nslots; i++)
        free(p->slot_names[i]);
    free(p->slot_names);
    free(p->types);
    free(p->steps);
    free(p->name);
    free(p);
}

const char *tilec_plan_last_error(const tilec_plan *p) { return p ? p->err : "no plan (NULL)"; }

void tilec_plan_get_stats(const tilec_plan *p, tilec_plan_stats *s)
{
    if (!p || !s)
        return;
    *s = p->st;
    s->steps = p->nsteps;
}

tilec_rt_status tilec_plan_set_slot(tilec_plan *p, uint32_t i, tilec_plan_slot_type type, const char *name)
{
    if (!p)
        return TILEC_RT_INVALID_ARG;
    if (i >= p->nslots || (unsigned)type > TILEC_PLAN_LIST)
        return plan_fail(p, TILEC_RT_INVALID_ARG, "slot %u of type %d (the plan has %u slots)", i, (int)type,
                         p->nslots);
    char *copy = strdup(name ? name : "?");
    if (!copy)
        return TILEC_RT_NOMEM;
    free(p->slot_names[i]);
    p->slot_names[i] = copy;
    p->types[i] = type;
    return TILEC_RT_OK;
}

static const char *kind_text(tilec_rt_param_kind k)
{
    static const char *const names[] = {"pointer", "i32", "i64", "f32", "f64", "u32", "u64", "tensor list"}; /* ORDER PARAM_KIND */
    return (unsigned)k < TILEC_RT_PARAM_KIND_COUNT ? names[k] : "unknown";
}

/* May slot type t feed a parameter of kind k? */
static int slot_suits(tilec_plan_slot_type t, tilec_rt_param_kind k)
{
    if (k == TILEC_RT_PARAM_POINTER)
        return t == TILEC_PLAN_PTR;
    if (k == TILEC_RT_PARAM_LIST || t == TILEC_PLAN_LIST)
        return k == TILEC_RT_PARAM_LIST && t == TILEC_PLAN_LIST;
    if (k == TILEC_RT_PARAM_F32 || k == TILEC_RT_PARAM_F64)
        return t == TILEC_PLAN_FLOAT || t == TILEC_PLAN_INT;
    return t == TILEC_PLAN_INT;
}

static plan_step *push_step(tilec_plan *p)
{
    if (p->nsteps == p->cap) {
        uint32_t cap = p->cap ? 2 * p->cap : 8;
        plan_step *s = realloc(p->steps, cap * sizeof *s);
        if (!s)
            return NULL;
        p->steps = s;
        p->cap = cap;
    }
    plan_step *s = &p->steps[p->nsteps];
    memset(s, 0, sizeof *s);
    return s;
}

tilec_rt_status tilec_plan_add_kernel(tilec_plan *p, const char *kernel, int variant, const tilec_plan_value *args,
                                      uint32_t nargs)
{
    if (!p || !kernel || (nargs && !args))
        return p ? plan_fail(p, TILEC_RT_INVALID_ARG, "add_kernel: NULL kernel name or arguments")
                 : TILEC_RT_INVALID_ARG;
    int i = rt_program_find(p->prog, kernel, variant < 0 ? 0 : variant);
    if (i < 0)
        return plan_fail(p, TILEC_RT_NOT_FOUND, "no kernel '%s' variant %d in the program", kernel,
                         variant < 0 ? 0 : variant);
    const pkernel *pk = &p->prog->ks[i];
    if (!pk->kern)
        return plan_fail(p, TILEC_RT_INVALID_ARG, "kernel '%s' is not loaded", kernel);
    if (nargs != pk->d.nparams)
        return plan_fail(p, TILEC_RT_INVALID_ARG, "kernel '%s' takes %u arguments; the step gives %u", kernel,
                         pk->d.nparams, nargs);
    for (uint32_t a = 0; a < nargs; a++) {
        int32_t s = args[a].slot;
        if (s < 0)
            continue;
        if ((uint32_t)s >= p->nslots)
            return plan_fail(p, TILEC_RT_INVALID_ARG, "argument %u of '%s' names slot %d; the plan has %u", a + 1,
                             kernel, s, p->nslots);
        if (!slot_suits(p->types[s], pk->d.kinds[a]))
            return plan_fail(p, TILEC_RT_INVALID_ARG, "argument %u of '%s' is a %s; slot '%s' does not hold one",
                             a + 1, kernel, kind_text(pk->d.kinds[a]), plan_slot_name(p, s));
    }
    plan_step *st = push_step(p);
    tilec_plan_value *copy = malloc((nargs ? nargs : 1) * sizeof *copy);
    if (!st || !copy) {
        free(copy);
        return TILEC_RT_NOMEM;
    }
    if (nargs)
        memcpy(copy, args, nargs * sizeof *copy);
    st->kind = PLAN_KERNEL;
    st->kernel = (uint32_t)i;
    st->best = variant < 0 && pk->d.nvariants > 1;
    st->nargs = nargs;
    st->args = copy;
    p->nsteps++;
    return TILEC_RT_OK;
}

/* A tensor of a step ("extern 'f'", "fill"): a pointer slot, integer sizes. */
static tilec_rt_status check_tensor(tilec_plan *p, const char *what, const tilec_plan_tensor *t)
{
    if (t->data_slot < 0 || (uint32_t)t->data_slot >= p->nslots || p->types[t->data_slot] != TILEC_PLAN_PTR)
        return plan_fail(p, TILEC_RT_INVALID_ARG, "a tensor of %s needs a pointer slot, not %d", what, t->data_slot);
    if (t->rank > TILEC_TENSOR_MAX_RANK)
        return plan_fail(p, TILEC_RT_INVALID_ARG, "a tensor of %s has rank %u (at most %d)", what, t->rank,
                         TILEC_TENSOR_MAX_RANK);
    for (uint32_t d = 0; d < t->rank; d++) {
        int32_t s = t->sizes[d].slot;
        if (s >= 0 && ((uint32_t)s >= p->nslots || p->types[s] != TILEC_PLAN_INT))
            return plan_fail(p, TILEC_RT_INVALID_ARG, "dimension %u of a tensor of %s needs an integer slot", d,
                             what);
    }
    return TILEC_RT_OK;
}

tilec_rt_status tilec_plan_add_extern(tilec_plan *p, const char *symbol, const tilec_plan_tensor *inputs,
                                      uint32_t ninputs, const tilec_plan_tensor *outputs, uint32_t noutputs)
{
    if (!p)
        return TILEC_RT_INVALID_ARG;
    if (!symbol || (ninputs && !inputs) || (noutputs && !outputs) || !p->ext)
        return plan_fail(p, TILEC_RT_INVALID_ARG, "add_extern: NULL symbol or tensors, or a plan without externs");
    if (ninputs + noutputs > PLAN_MAX_TENSORS)
        return plan_fail(p, TILEC_RT_INVALID_ARG, "extern '%s' takes %u tensors (at most %d)", symbol,
                         ninputs + noutputs, PLAN_MAX_TENSORS);
    char what[160];
    snprintf(what, sizeof what, "extern '%s'", symbol);
    for (uint32_t i = 0; i < ninputs + noutputs; i++) {
        tilec_rt_status st = check_tensor(p, what, i < ninputs ? &inputs[i] : &outputs[i - ninputs]);
        if (st != TILEC_RT_OK)
            return st;
    }
    plan_step *st = push_step(p);
    tilec_plan_tensor *ts = malloc((ninputs + noutputs ? ninputs + noutputs : 1) * sizeof *ts);
    char *sym = strdup(symbol);
    if (!st || !ts || !sym) {
        free(ts);
        free(sym);
        return TILEC_RT_NOMEM;
    }
    if (ninputs)
        memcpy(ts, inputs, ninputs * sizeof *ts);
    if (noutputs)
        memcpy(ts + ninputs, outputs, noutputs * sizeof *ts);
    st->kind = PLAN_EXTERN;
    st->symbol = sym;
    st->nin = ninputs;
    st->nout = noutputs;
    st->tensors = ts;
    p->nsteps++;
    return TILEC_RT_OK;
}

tilec_rt_status tilec_plan_add_fill(tilec_plan *p, const tilec_plan_tensor *t, uint64_t bits)
{
    if (!p)
        return TILEC_RT_INVALID_ARG;
    if (!t)
        return plan_fail(p, TILEC_RT_INVALID_ARG, "add_fill: NULL tensor");
    unsigned es = (unsigned)t->dtype < TILEC_DT_COUNT ? tilec_dtype_size(t->dtype) : 0;
    if (!es)
        return plan_fail(p, TILEC_RT_INVALID_ARG, "add_fill: dtype %d is no element type", (int)t->dtype);
    tilec_rt_status r = check_tensor(p, "a fill", t);
    if (r != TILEC_RT_OK)
        return r;
    if (es < 8 && bits >> (8 * es))
        return plan_fail(p, TILEC_RT_INVALID_ARG, "add_fill: the pattern 0x%llx of %s is wider than a %s",
                         (unsigned long long)bits, plan_slot_name(p, t->data_slot), tilec_dtype_name(t->dtype));
    plan_step *st = push_step(p);
    tilec_plan_tensor *copy = malloc(sizeof *copy);
    if (!st || !copy) {
        free(copy);
        return TILEC_RT_NOMEM;
    }
    *copy = *t;
    st->kind = PLAN_FILL;
    st->tensors = copy;
    st->bits = bits;
    p->nsteps++;
    return TILEC_RT_OK;
}

/* ---- running ---- */

/* Does integer v fit a parameter of kind k? */
static int int_fits(int64_t v, tilec_rt_param_kind k)
{
    switch (k) {
    case TILEC_RT_PARAM_I32: return v >= INT32_MIN && v <= INT32_MAX;
    case TILEC_RT_PARAM_U32: return v >= 0 && v <= (int64_t)UINT32_MAX;
    case TILEC_RT_PARAM_U64: return v >= 0;
    default: return 1;
    }
}

/* Every integer slot against every parameter it feeds, before any launch. */
static tilec_rt_status check_slots(tilec_plan *p, const tilec_rt_arg *slots)
{
    for (uint32_t i = 0; i < p->nsteps; i++) {
        const plan_step *st = &p->steps[i];
        if (st->kind != PLAN_KERNEL)
            continue;
        const pkernel *pk = &p->prog->ks[st->kernel];
        for (uint32_t a = 0; a < st->nargs; a++) {
            int32_t s = st->args[a].slot;
            if (s < 0 || p->types[s] != TILEC_PLAN_INT || int_fits(slots[s].i64, pk->d.kinds[a]))
                continue;
            return plan_fail(p, TILEC_RT_INVALID_ARG, "%s is %lld, which does not fit %s (argument %u of %s)",
                             plan_slot_name(p, s), (long long)slots[s].i64, kind_text(pk->d.kinds[a]), a + 1, pk->d.kernel);
        }
    }
    return TILEC_RT_OK;
}

tilec_rt_status tilec_plan_run(tilec_plan *p, const tilec_rt_arg *slots, uint32_t nslots, void *stream)
{
    if (!p)
        return TILEC_RT_INVALID_ARG;
    if (nslots != p->nslots || (nslots && !slots))
        return plan_fail(p, TILEC_RT_INVALID_ARG, "run with %u slot values; the plan has %u slots", nslots,
                         p->nslots);
    tilec_rt_status r = check_slots(p, slots);
    if (r != TILEC_RT_OK)
        return r;
    r = tilec_rt_make_current(p->rt);
    if (r != TILEC_RT_OK)
        return plan_fail(p, r, "%s", tilec_rt_last_error(p->rt));
    r = p->max_graphs ? plan_graph_run(p, slots, stream) : plan_run_steps(p, slots, stream);
    if (r == TILEC_RT_OK)
        p->st.runs++;
    return r;
}
