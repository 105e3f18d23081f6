/* aot.c: a program loaded from an ahead-of-time table (tilec_aot_kernel,
 * written by `tilec --emit c --aot`): the table checked, then every CUBIN
 * loaded and its kernel resolved, with its sm_90a twin when the entry
 * names one (runtime/tma.c, as for a built program); no NVRTC, no parsing.
 * A wrapper for several architectures has a table each: the device's
 * own, or the newest its CUBINs run on, is loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/assemble.h"
#include "runtime/rt_internal.h"
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
        rt_kernel_desc d = {.d = *a, .tma = a->tma};
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

/* "sm_90a": major 9, minor 0, suffix 'a'; 0 when arch is no such name. */
static int arch_parse(const char *arch, int *major, int *minor, char *suffix)
{
    size_t d = 0;
    if (!arch || strncmp(arch, "sm_", 3))
        return 0;
    while (arch[3 + d] >= '0' && arch[3 + d] <= '9')
        d++;
    const char *t = arch + 3 + d;
    if (d < 2 || d > 3 || (*t && (t[1] || (*t != 'a' && *t != 'f'))))
        return 0;
    int v = atoi(arch + 3);
    *major = v / 10;
    *minor = v % 10;
    *suffix = *t;
    return 1;
}

/* How well a device of compute capability major.minor with NVRTC target
 * dev runs CUBINs for arch: 0 not at all (CUBINs run on their major
 * version, from their minor up; an `a` target on its own version only),
 * else higher is better (its own target first, then the newest). */
static int arch_rank(const char *arch, const char *dev, int major, int minor)
{
    int M = 0, m = 0;
    char suf = 0;
    if (!arch_parse(arch, &M, &m, &suf) || M != major || m > minor || (suf == 'a' && m != minor))
        return 0;
    return !strcmp(arch, dev) ? 1000 : 1 + m * 2 + (suf != 0);
}

tilec_rt_status tilec_program_load_for_device(tilec_rt *rt, const tilec_aot_table *tables, uint32_t n,
                                              tilec_program **out, const char **arch)
{
    if (!out)
        return TILEC_RT_INVALID_ARG;
    *out = NULL;
    if (arch)
        *arch = NULL;
    if (!rt || !n || !tables)
        return TILEC_RT_INVALID_ARG;
    tilec_rt_device_props props;
    tilec_rt_status st = tilec_rt_device_info(rt, &props);
    if (st != TILEC_RT_OK)
        return st;
    uint32_t best = n;
    int rank = 0;
    for (uint32_t i = 0; i < n; i++) {
        int r = arch_rank(tables[i].arch, props.arch, props.sm_major, props.sm_minor);
        if (r > rank) {
            rank = r;
            best = i;
        }
    }
    if (best == n) {
        char have[256] = "";
        for (uint32_t i = 0, at = 0; i < n && at < sizeof have; i++)
            at += (uint32_t)snprintf(have + at, sizeof have - at, "%s%s", i ? ", " : "",
                                     tables[i].arch ? tables[i].arch : "(none)");
        return rt_fail(rt, TILEC_RT_MODULE_ERROR,
                       "no table of this wrapper runs on device %d (%s, %s): it was compiled for %s", props.ordinal,
                       props.name, props.arch, have);
    }
    st = tilec_program_load(rt, tables[best].ks, tables[best].n, out);
    if (st == TILEC_RT_OK && tables[best].nchoices &&
        (st = tilec_program_use_choices(*out, tables[best].choices, tables[best].nchoices)) != TILEC_RT_OK) {
        tilec_program_free(*out);
        *out = NULL;
    }
    if (st == TILEC_RT_OK && arch)
        *arch = tables[best].arch;
    return st;
}
