/* plan_steps.c: a launch plan's steps run eagerly, below plan.c (which
 * runs them or hands them to a graph) and plan_graph.c (which records
 * them, or runs them when a graph cannot be recorded): each step's
 * arguments gathered into a fixed array, kernels launched through the
 * program's static or multi-kernel launch, externs called through the
 * registry, fills through the runtime's one fill (tilec_rt_fill_async);
 * and the plan's failure message. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "runtime/plan_internal.h"

tilec_rt_status plan_fail(tilec_plan *p, tilec_rt_status st, const char *fmt, ...)
{
    int n = snprintf(p->err, sizeof p->err, "%s: ", p->name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, sizeof p->err - (size_t)n, fmt, ap);
    va_end(ap);
    return st;
}

const char *plan_slot_name(const tilec_plan *p, int32_t s) { return p->slot_names[s] ? p->slot_names[s] : "?"; }

/* Argument a of a step: a constant, or its slot read as the parameter's kind. */
static tilec_rt_arg gather(const tilec_plan *p, const tilec_plan_value *v, tilec_rt_param_kind k,
                           const tilec_rt_arg *slots)
{
    if (v->slot < 0)
        return v->value;
    tilec_rt_arg s = slots[v->slot], a;
    a.u64 = 0;
    if (p->types[v->slot] == TILEC_PLAN_LIST) { /* the caller's list, packed (and split) by the launch */
        a.list = s.list;
        return a;
    }
    if (p->types[v->slot] == TILEC_PLAN_FLOAT) {
        if (k == TILEC_RT_PARAM_F32)
            a.f32 = (float)s.f64;
        else
            a.f64 = s.f64;
        return a;
    }
    switch (k) {
    case TILEC_RT_PARAM_I32: a.i32 = (int32_t)s.i64; break;
    case TILEC_RT_PARAM_U32: a.u32 = (uint32_t)s.i64; break;
    case TILEC_RT_PARAM_F32: a.f32 = (float)s.i64; break;
    case TILEC_RT_PARAM_F64: a.f64 = (double)s.i64; break;
    default: a.u64 = s.u64; break; /* pointer, i64, u64 */
    }
    return a;
}

static tilec_rt_status run_kernel(tilec_plan *p, uint32_t i, const plan_step *st, const tilec_rt_arg *slots,
                                  void *stream)
{
    const pkernel *pk = &p->prog->ks[st->kernel];
    tilec_rt_arg args[TILEC_RT_MAX_PARAMS];
    for (uint32_t a = 0; a < st->nargs; a++)
        args[a] = gather(p, &st->args[a], pk->d.kinds[a], slots);
    tilec_rt_status r = st->best
                            ? rt_program_launch_best_at(p->prog, st->kernel, args, st->nargs, stream, p->ws_owner, NULL)
                            : rt_program_launch_at(p->prog, st->kernel, args, stream, p->ws_owner);
    int lists = 0; /* a tensor list's checks say what is wrong (the runtime's last error) */
    for (uint32_t a = 0; a < st->nargs; a++)
        lists |= pk->d.kinds[a] == TILEC_RT_PARAM_LIST;
    if (r != TILEC_RT_OK)
        return plan_fail(p, r, "step %u (kernel %s): %s", i + 1, pk->d.kernel,
                         r == TILEC_RT_INVALID_ARG && !lists ? "its grid cannot be computed from these sizes"
                                                             : tilec_rt_last_error(p->rt));
    return TILEC_RT_OK;
}

static void make_tensor(const tilec_plan_tensor *t, const tilec_rt_arg *slots, tilec_tensor *out)
{
    memset(out, 0, sizeof *out);
    out->data = slots[t->data_slot].ptr;
    out->dtype = t->dtype;
    out->rank = t->rank;
    int64_t stride = 1;
    for (uint32_t d = t->rank; d-- > 0;) {
        out->sizes[d] = t->sizes[d].slot < 0 ? t->sizes[d].value.i64 : slots[t->sizes[d].slot].i64;
        out->strides[d] = stride;
        stride *= out->sizes[d];
    }
}

static tilec_rt_status run_extern(tilec_plan *p, uint32_t i, const plan_step *st, const tilec_rt_arg *slots,
                                  void *stream)
{
    tilec_tensor ts[PLAN_MAX_TENSORS];
    for (uint32_t t = 0; t < st->nin + st->nout; t++)
        make_tensor(&st->tensors[t], slots, &ts[t]);
    tilec_rt_status r = tilec_externs_call(p->ext, st->symbol, p->rt, stream, ts, st->nin, ts + st->nin, st->nout);
    if (r != TILEC_RT_OK)
        return plan_fail(p, r, "step %u (extern %s): %s", i + 1, st->symbol, tilec_externs_last_error(p->ext));
    return TILEC_RT_OK;
}

static tilec_rt_status run_fill(tilec_plan *p, uint32_t i, const plan_step *st, const tilec_rt_arg *slots, void *stream)
{
    tilec_tensor t;
    make_tensor(st->tensors, slots, &t);
    uint64_t count = 1;
    for (uint32_t d = 0; d < t.rank; d++) {
        if (t.sizes[d] < 0 || (t.sizes[d] && count > UINT64_MAX / (uint64_t)t.sizes[d]))
            return plan_fail(p, TILEC_RT_INVALID_ARG, "step %u (fill of %s): dimension %u is %lld", i + 1,
                             plan_slot_name(p, st->tensors->data_slot), d, (long long)t.sizes[d]);
        count *= (uint64_t)t.sizes[d];
    }
    tilec_rt_status r = tilec_rt_fill_async(p->rt, t.data, st->bits, tilec_dtype_size(t.dtype), count, stream);
    if (r != TILEC_RT_OK)
        return plan_fail(p, r, "step %u (fill of %s): %s", i + 1, plan_slot_name(p, st->tensors->data_slot),
                         tilec_rt_last_error(p->rt));
    return TILEC_RT_OK;
}

tilec_rt_status plan_run_steps(tilec_plan *p, const tilec_rt_arg *slots, void *stream)
{
    for (uint32_t i = 0; i < p->nsteps; i++) {
        const plan_step *st = &p->steps[i];
        tilec_rt_status r = st->kind == PLAN_FILL     ? run_fill(p, i, st, slots, stream)
                            : st->kind == PLAN_EXTERN ? run_extern(p, i, st, slots, stream)
                                                      : run_kernel(p, i, st, slots, stream);
        if (r != TILEC_RT_OK)
            return r;
    }
    return TILEC_RT_OK;
}
