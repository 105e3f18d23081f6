/* kernel_internal.h: the layout of a resolved kernel (tilec_rt_kernel),
 * shared by module.c, which resolves and launches kernels, and rt.c, which
 * names the kernel last launched when it reports a kernel fault. Below
 * both, so neither file calls into the other for it. */
#ifndef TILEC_RUNTIME_KERNEL_INTERNAL_H
#define TILEC_RUNTIME_KERNEL_INTERNAL_H

#include "runtime/rt_internal.h"

/* Hot fields first: a launch reads launch, fn, block_x, dyn_smem, nparams. */
struct tilec_rt_kernel {
    PFN_cuLaunchKernel_v4000 launch;
    CUfunction fn;
    uint32_t block_x, dyn_smem, nparams;
    tilec_rt *rt;
    const char *name;
    tilec_rt_param_kind *kinds;
    const tilec_rt_module *module;
};

/* The driver's handle of a loaded module (module.c). */
CUmodule rt_module_cu(const tilec_rt_module *m);

/* The name of the kernel last launched on rt, or NULL. */
static inline const char *rt_last_kernel_name(tilec_rt *rt)
{
    const tilec_rt_kernel *k = atomic_load_explicit(&rt->last_launch, memory_order_acquire);
    return k ? k->name : NULL;
}

#endif
