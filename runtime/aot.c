/* aot.c: a program loaded from an ahead-of-time table (tilec_aot_kernel,
 * written by `tilec --emit c --aot`): the table checked, then every CUBIN
 * loaded and its kernel resolved; no NVRTC, no parsing. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/assemble.h"
#include "tilec/types.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The variants of a kernel are consecutive, variant 0 first. */
static int table_ok(const tilec_aot_kernel *ks, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        const tilec_aot_kernel *a = &ks[i];
        if (!a->kernel || !a->name || !a->image || !a->size || !a->grid || a->nparams > 64 ||
            (a->nparams && !a->kinds) || !a->nvariants || a->nvariants > TILEC_MAX_VARIANTS || a->variant < 0 ||
            (uint32_t)a->variant >= a->nvariants || (uint32_t)a->variant > i ||
            strcmp(ks[i - (uint32_t)a->variant].kernel, a->kernel) || ks[i - (uint32_t)a->variant].variant != 0 ||
            i - (uint32_t)a->variant + a->nvariants > n)
            return 0;
    }
    return 1;
}

tilec_rt_status tilec_program_load(tilec_rt *rt, const tilec_aot_kernel *ks, uint32_t n, tilec_program **out)
{
    if (!out)
        return TILEC_RT_INVALID_ARG;
    *out = NULL;
    if (!rt || (n && !ks) || !table_ok(ks, n))
        return TILEC_RT_INVALID_ARG;
    tilec_program *p;
    tilec_rt_status st = rt_program_new(rt, n, NULL, &p);
    if (st != TILEC_RT_OK)
        return st;
    double t0 = now_ms();
    for (uint32_t i = 0; i < n && st == TILEC_RT_OK; i++) {
        const tilec_aot_kernel *a = &ks[i];
        rt_kernel_desc d = {.d = *a};
        st = rt_program_set(p, i, &d);
        if (st == TILEC_RT_OK)
            st = rt_program_load_module(p, i, a->image, a->size);
        if (st == TILEC_RT_OK)
            st = rt_program_resolve(p, i);
    }
    if (st != TILEC_RT_OK) {
        tilec_program_free(p);
        return st;
    }
    rt_program_stats(p)->load_ms = now_ms() - t0;
    *out = p;
    return TILEC_RT_OK;
}
