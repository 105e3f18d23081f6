/* program.c: a program's kernels as the runtime holds them: made from
 * kernel metadata (assemble.h), their CUBINs loaded and kernels resolved
 * once, found by name and variant, launched statically with the grid their
 * metadata computes; the program's lifetime, multi-kernel state included. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/program_internal.h"

static int env_int(const char *name, int *out)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 1 << 20)
        return -1;
    *out = (int)x;
    return 1;
}

/* TILEC_MULTI_KERNEL, read once when the program is made: -1 unset, -2 invalid. */
static int mk_forced_from_env(void)
{
    int v;
    int r = env_int("TILEC_MULTI_KERNEL", &v);
    return r < 0 ? -2 : r == 0 ? -1 : v;
}

tilec_rt_status rt_program_new(tilec_rt *rt, uint32_t n, const char *cache_dir, tilec_program **out)
{
    *out = NULL;
    tilec_program *p = calloc(1, sizeof *p);
    if (!p)
        return TILEC_RT_NOMEM;
    p->rt = rt;
    pthread_mutex_init(&p->mk_mu, NULL);
    pthread_mutex_init(&p->mk_tune, NULL);
    p->mk_forced = mk_forced_from_env();
    const char *nt = getenv("TILEC_DISABLE_TMA");
    p->no_tma = nt && !strcmp(nt, "1");
    if (cache_dir)
        snprintf(p->cache_dir, sizeof p->cache_dir, "%s", cache_dir);
    p->n = n;
    p->st.kernels = n;
    p->ks = calloc(n ? n : 1, sizeof *p->ks);
    if (!p->ks) {
        tilec_program_free(p);
        return TILEC_RT_NOMEM;
    }
    *out = p;
    return TILEC_RT_OK;
}

tilec_rt_status rt_program_set(tilec_program *p, uint32_t i, const rt_kernel_desc *d)
{
    pkernel *pk = &p->ks[i];
    pk->kname = d->kernel;
    pk->nvariants = d->nvariants;
    pk->variant = d->variant;
    pk->written = d->written;
    pk->grid = d->grid;
    pk->grid_data = d->grid_data;
    pk->aot_grid = d->aot_grid;
    pk->threads = d->threads;
    pk->smem_bytes = d->smem_bytes;
    pk->nparams = d->nparams;
    if (d->nparams)
        memcpy(pk->kinds, d->kinds, d->nparams * sizeof pk->kinds[0]);
    pk->name = strdup(d->name);
    if (!pk->name)
        return TILEC_RT_NOMEM;
    return rt_tma_set(pk, d->tma);
}

tilec_rt_status rt_program_load_module(tilec_program *p, uint32_t i, const void *image, size_t size)
{
    return tilec_rt_module_load(p->rt, image, size, &p->ks[i].mod);
}

tilec_rt_status rt_program_resolve(tilec_program *p, uint32_t i)
{
    pkernel *pk = &p->ks[i];
    tilec_rt_launch_meta meta = {pk->threads, pk->smem_bytes, pk->nparams, pk->kinds};
    tilec_rt_status st = tilec_rt_kernel_get(pk->mod, pk->name, &meta, &pk->kern);
    if (st == TILEC_RT_OK)
        rt_tma_resolve(p->rt, pk, p->no_tma);
    return st;
}

tilec_program_stats *rt_program_stats(tilec_program *p) { return &p->st; }

void tilec_program_free(tilec_program *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; p->ks && i < p->n; i++) {
        tilec_rt_module_unload(p->ks[i].mod);
        free(p->ks[i].name);
        rt_tma_free(&p->ks[i]);
    }
    free(p->ks);
    mk_choice *c, *tmp;
    HASH_ITER(hh, p->choices, c, tmp)
    {
        HASH_DEL(p->choices, c);
        free(c);
    }
    pthread_mutex_destroy(&p->mk_mu);
    pthread_mutex_destroy(&p->mk_tune);
    free(p);
}

int rt_program_find(const tilec_program *p, const char *name, int variant)
{
    for (uint32_t i = 0; i < p->n; i++)
        if (p->ks[i].variant == variant && !strcmp(p->ks[i].kname, name))
            return (int)i;
    return -1;
}

static const pkernel *find(const tilec_program *p, const char *name, int variant)
{
    int i = rt_program_find(p, name, variant);
    return i < 0 ? NULL : &p->ks[i];
}

const tilec_rt_kernel *tilec_program_kernel(const tilec_program *p, const char *name, int variant)
{
    const pkernel *pk = p && name ? find(p, name, variant) : NULL;
    return pk ? pk->kern : NULL;
}

int tilec_program_has_twin(const tilec_program *p, const char *name, int variant)
{
    const pkernel *pk = p && name ? find(p, name, variant) : NULL;
    return pk && rt_tma_ready(pk);
}

tilec_rt_status rt_program_launch_at(const tilec_program *p, uint32_t i, const tilec_rt_arg *args, void *stream)
{
    const pkernel *pk = &p->ks[i];
    int64_t scal[64];
    for (uint32_t a = 0; a < pk->nparams; a++) {
        switch (pk->kinds[a]) {
        case TILEC_RT_PARAM_I32: scal[a] = args[a].i32; break;
        case TILEC_RT_PARAM_U32: scal[a] = args[a].u32; break;
        case TILEC_RT_PARAM_I64: scal[a] = args[a].i64; break;
        case TILEC_RT_PARAM_U64: scal[a] = (int64_t)args[a].u64; break;
        default: scal[a] = 0; break;
        }
    }
    uint32_t grid[3];
    if (pk->grid ? pk->grid(pk->grid_data, pk->variant, scal, grid) != 0 : pk->aot_grid(scal, grid) != 0)
        return TILEC_RT_INVALID_ARG;
    if (!grid[0] || !grid[1] || !grid[2])
        return TILEC_RT_OK; /* nothing to do */
    tilec_rt_status st;
    if (rt_tma_launch(pk, grid, args, stream, &st))
        return st;
    return tilec_rt_launch(pk->kern, grid, args, stream);
}

tilec_rt_status tilec_program_launch(const tilec_program *p, const char *name, int variant, const tilec_rt_arg *args,
                                     uint32_t nargs, void *stream)
{
    const pkernel *pk = p && name ? find(p, name, variant) : NULL;
    if (!pk || !pk->kern || nargs != pk->nparams || (nargs && !args))
        return TILEC_RT_INVALID_ARG;
    return rt_program_launch_at(p, (uint32_t)(pk - p->ks), args, stream);
}

void tilec_program_get_stats(const tilec_program *p, tilec_program_stats *s)
{
    if (p && s)
        *s = p->st;
}
