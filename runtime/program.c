/* program.c: a .tile module built for the GPU. The pipeline: lower every
 * kernel variant (microseconds), hash the sources and options into a key,
 * look the bundle up in the cache; on a miss compile every variant with
 * NVRTC on the async pool and store the bundle; then load each CUBIN and
 * resolve its kernel once for static launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dsl/diag.h"
#include "lower/compile.h"
#include "parser/parse.h"
#include "tilec/pool.h"
#include "tilec/limits.h"
#include "tilec/program.h"
#include "tilec/workers.h"
#include "runtime/program_internal.h"
#include "runtime/watch.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int tilec_rt_param_kind_of(tilec_arg_kind a, tilec_rt_param_kind *out)
{
    if (!out)
        return -1;
    switch (a) {
    case TILEC_ARG_PTR: *out = TILEC_RT_PARAM_POINTER; return 0;
    case TILEC_ARG_I32: *out = TILEC_RT_PARAM_I32; return 0;
    case TILEC_ARG_I64: *out = TILEC_RT_PARAM_I64; return 0;
    case TILEC_ARG_U32: *out = TILEC_RT_PARAM_U32; return 0;
    case TILEC_ARG_U64: *out = TILEC_RT_PARAM_U64; return 0;
    case TILEC_ARG_F32: *out = TILEC_RT_PARAM_F32; return 0;
    case TILEC_ARG_F64: *out = TILEC_RT_PARAM_F64; return 0;
    default: return -1;
    }
}

/* A pool task: one NVRTC compile. */
static int compile_task(void *arg, char **error)
{
    pkernel *pk = arg;
    tilec_rt_status st =
        pk->workers ? tilec_compile_workers_compile(pk->workers, pk->code.source, pk->code.name, pk->arch, &pk->cubin,
                                                    &pk->size, &pk->log)
        : pk->isolate ? tilec_nvrtc_compile_isolated(pk->code.source, pk->code.name, pk->arch, NULL, 0, &pk->cubin,
                                                   &pk->size, &pk->log)
                    : tilec_nvrtc_compile(pk->code.source, pk->code.name, pk->arch, NULL, 0, &pk->cubin, &pk->size,
                                          &pk->log);
    if (st == TILEC_RT_OK) {
        free(pk->log);
        pk->log = NULL;
        return 0;
    }
    size_t n = strlen(pk->code.name) + 64;
    *error = malloc(n);
    if (*error)
        snprintf(*error, n, "%s: %s", pk->code.name, tilec_rt_status_string(st));
    return -1;
}

/* The key: everything the compiled code depends on. The lowering is a
 * function of the checked module, itself a function of the .tile text, so
 * hashing the text (not the generated CUDA C) lets a warm start skip the
 * lowering altogether. */
static void hash_module(tilec_program *p, const char *arch)
{
    tilec_hasher h;
    tilec_hasher_init(&h);
    int maj = 0, min = 0;
    tilec_nvrtc_version(&maj, &min);
    char buf[256];
    const char *li = getenv("TILEC_LINEINFO");
    snprintf(buf, sizeof buf, "tilec %s | nvrtc %d.%d | %s | -default-device --std=c++17%s", tilec_version(), maj, min,
             arch, li && !strcmp(li, "1") ? " -lineinfo" : "");
    tilec_hasher_update_str(&h, buf);
    tilec_hasher_update_str(&h, p->m->src.name);
    tilec_hasher_update(&h, p->m->src.text, p->m->src.len);
    tilec_hasher_final(&h, p->st.key);
}

/* Fill the kernels from a cached bundle: names, launch metadata, images.
 * The parameter kinds must be the ones the module's parameters give. */
/* a kernel's bundle name, "<kernel>_v<variant>", always fits in a bundle */
_Static_assert(TILEC_BUNDLE_MAX_NAME >= TILEC_MAX_IDENT + 32, "bundle names must hold every kernel name");

static int from_bundle(tilec_program *p, tilec_bundle *b)
{
    if (b->nkernels != p->n)
        return -1;
    for (uint32_t i = 0; i < p->n; i++) {
        tilec_bundle_kernel *bk = &b->kernels[i];
        pkernel *pk = &p->ks[i];
        /* "<kernel>_v<variant>", compared in place: a kernel name of any
         * length (up to TILEC_MAX_IDENT) must find its bundle */
        size_t kl = strlen(pk->k->name);
        char suffix[32];
        snprintf(suffix, sizeof suffix, "_v%d", pk->variant);
        if (strncmp(bk->name, pk->k->name, kl) || strcmp(bk->name + kl, suffix) || bk->nparams != pk->k->nparams ||
            !bk->size ||
            memcmp(bk->kinds, pk->kinds, bk->nparams * sizeof pk->kinds[0]))
            return -1;
        pk->code.name = strdup(bk->name);
        if (!pk->code.name)
            return -1;
        pk->cubin = bk->image; /* the bundle is ours: take its images */
        bk->image = NULL;
        pk->size = bk->size;
        pk->code.threads = bk->threads;
        pk->code.smem_bytes = bk->smem_bytes;
        pk->code.nparams = bk->nparams;
        pk->code.kernel = pk->k;
        pk->code.variant = pk->variant;
    }
    return 0;
}

/* The kinds of k's parameters for launch, or -1 with the bad parameter. */
static int kinds_of(const tilec_kernel *k, tilec_rt_param_kind *kinds, uint32_t *bad)
{
    static const tilec_arg_kind by_dtype[] = {TILEC_ARG_BOOL, TILEC_ARG_I8, TILEC_ARG_I16, TILEC_ARG_I32,
                                              TILEC_ARG_I64, TILEC_ARG_U8, TILEC_ARG_U16, TILEC_ARG_U32,
                                              TILEC_ARG_U64, TILEC_ARG_F16, TILEC_ARG_BF16, TILEC_ARG_F32,
                                              TILEC_ARG_F64};
    if (k->nparams > 64) {
        *bad = 64;
        return -1;
    }
    for (uint32_t a = 0; a < k->nparams; a++) {
        const tilec_param *prm = &k->params[a];
        tilec_arg_kind ak = prm->type.kind == TILEC_TE_POINTER ? TILEC_ARG_PTR : by_dtype[prm->type.dtype];
        if (tilec_rt_param_kind_of(ak, &kinds[a])) {
            *bad = a;
            return -1;
        }
    }
    return 0;
}

static void to_cache(tilec_program *p, tilec_cache *cache)
{
    tilec_bundle b = {p->n, calloc(p->n ? p->n : 1, sizeof(tilec_bundle_kernel))};
    if (!b.kernels)
        return;
    for (uint32_t i = 0; i < p->n; i++) {
        const pkernel *pk = &p->ks[i];
        tilec_bundle_kernel *bk = &b.kernels[i];
        bk->name = pk->code.name;
        bk->image = pk->cubin;
        bk->size = pk->size;
        bk->threads = pk->code.threads;
        bk->smem_bytes = pk->code.smem_bytes;
        bk->nparams = pk->code.nparams;
        memcpy(bk->kinds, pk->kinds, sizeof bk->kinds);
    }
    tilec_cache_put(cache, p->st.key, &b); /* a failed put still leaves the memory level */
    free(b.kernels);
}

void tilec_program_free(tilec_program *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; i < p->n; i++) {
        tilec_rt_module_unload(p->ks[i].mod);
        tilec_kernel_code_free(&p->ks[i].code);
        free(p->ks[i].cubin);
        free(p->ks[i].log);
    }
    free(p->ks);
    mk_free(p);
    free(p);
}

static tilec_status fail(tilec_ctx *ctx, tilec_program *p, const tilec_loc *loc, const char *msg, const char *detail)
{
    diag_at(ctx, &p->m->src, loc, TILEC_SEV_ERROR, "%s%s%s", msg, detail ? ": " : "", detail ? detail : "");
    tilec_program_free(p);
    return TILEC_ERR_INPUT;
}

tilec_status tilec_program_build(tilec_ctx *ctx, tilec_rt *rt, const tilec_module *m, const tilec_build_options *o,
                                 tilec_program **out)
{
    if (!ctx || !m || !out)
        return TILEC_ERR_ARG;
    *out = NULL;
    tilec_build_options none = {0};
    if (!o)
        o = &none;
    tilec_program *p = calloc(1, sizeof *p);
    if (!p)
        return TILEC_ERR_NOMEM;
    p->rt = rt;
    p->m = m;
    mk_init(p);
    if (o->cache && tilec_cache_dir(o->cache))
        snprintf(p->cache_dir, sizeof p->cache_dir, "%s", tilec_cache_dir(o->cache));
    char arch[32];
    if (o->arch) {
        snprintf(arch, sizeof arch, "%s", o->arch);
    } else {
        tilec_rt_device_props props;
        if (!rt || tilec_rt_device_info(rt, &props) != TILEC_RT_OK)
            return fail(ctx, p, NULL, "no architecture to compile for", rt ? tilec_rt_last_error(rt) : "no device");
        snprintf(arch, sizeof arch, "sm_%d%d", props.sm_major, props.sm_minor);
    }

    /* every variant, with its launch parameter kinds */
    for (uint32_t i = 0; i < m->kernels.n; i++)
        p->n += tilec_kernel_variant_count(m->kernels.v[i]);
    p->ks = calloc(p->n ? p->n : 1, sizeof *p->ks);
    if (!p->ks) {
        tilec_program_free(p);
        return TILEC_ERR_NOMEM;
    }
    uint32_t at = 0;
    for (uint32_t i = 0; i < m->kernels.n; i++) {
        const tilec_kernel *k = m->kernels.v[i];
        for (uint32_t v = 0; v < tilec_kernel_variant_count(k); v++, at++) {
            pkernel *pk = &p->ks[at];
            pk->k = k;
            pk->kname = k->name;
            pk->written = tilec_kernel_written_params(k);
            pk->nvariants = tilec_kernel_variant_count(k);
            pk->variant = (int)v;
            pk->arch = arch;
            uint32_t bad;
            if (kinds_of(k, pk->kinds, &bad))
                return fail(ctx, p, bad < k->nparams ? &k->params[bad].loc : &k->loc,
                            "this parameter cannot be passed to a kernel yet (pointers and 32/64-bit scalars can)",
                            bad < k->nparams ? k->params[bad].name : "more than 64 parameters");
        }
    }
    p->st.kernels = p->n;

    /* the cache first: a hit needs neither lowering nor NVRTC */
    double t0 = now_ms();
    hash_module(p, arch);
    tilec_bundle *b = NULL;
    if (o->cache && tilec_cache_get(o->cache, p->st.key, &b) == TILEC_RT_OK) {
        int ok = from_bundle(p, b) == 0;
        tilec_bundle_free(b);
        if (ok)
            p->st.cache_hit = 1;
        else
            for (uint32_t i = 0; i < p->n; i++) {
                free(p->ks[i].cubin);
                p->ks[i].cubin = NULL;
                tilec_kernel_code_free(&p->ks[i].code);
            }
    }
    if (!p->st.cache_hit) {
        double tl = now_ms();
        for (uint32_t i = 0; i < p->n; i++) {
            tilec_status st = tilec_lower_kernel(ctx, m, p->ks[i].k, p->ks[i].variant, &p->ks[i].code);
            if (st != TILEC_OK) {
                tilec_program_free(p);
                return st;
            }
        }
        p->st.lower_ms = now_ms() - tl;
        tilec_pool *pool = NULL;
        if (tilec_pool_new(o->threads, &pool) != 0)
            return fail(ctx, p, NULL, "cannot start the compile threads", "check TILEC_COMPILE_THREADS");
        tilec_pool_stats ps;
        tilec_pool_get_stats(pool, &ps);
        /* several compiles at once need processes (NVRTC serializes threads):
         * worker processes when the tilec executable is found, else a fork
         * per compile; one thread compiles in the caller, for debugging */
        tilec_compile_workers *own = NULL;
        if (!o->workers && ps.threads > 1 && p->n > 1)
            own = tilec_compile_workers_new(ps.threads);
        tilec_compile_workers *workers = ps.threads > 1 && p->n > 1 ? (o->workers ? o->workers : own) : NULL;
        /* a compile with a time or memory limit (TILEC_COMPILE_TIMEOUT_S,
         * TILEC_COMPILE_MAX_MB) runs in a child that a watchdog can stop:
         * a worker, else a fork, even for one kernel or one thread */
        rt_compile_limits lim;
        rt_compile_limits_get(&lim);
        int limited = rt_compile_limits_on(&lim);
        for (uint32_t i = 0; i < p->n; i++) {
            p->ks[i].workers = workers;
            p->ks[i].isolate = !workers && ((ps.threads > 1 && p->n > 1) || limited);
        }
        /* forked children inherit NVRTC's state: initialize it here first
         * (unless every compile must run under the limits) */
        uint32_t first = 0;
        if (p->n > 1 && p->ks[0].isolate && !limited) {
            p->ks[0].isolate = 0;
            char *err = NULL;
            compile_task(&p->ks[0], &err);
            free(err);
            first = 1;
        }
        for (uint32_t i = first; i < p->n; i++)
            if (!tilec_pool_submit(pool, p->ks[i].code.name, compile_task, &p->ks[i])) {
                tilec_pool_wait(pool, NULL);
                tilec_pool_free(pool);
                tilec_compile_workers_free(workers);
                return fail(ctx, p, NULL, "out of memory while queueing compiles", NULL);
            }
        int failed = tilec_pool_wait(pool, o->progress);
        tilec_pool_free(pool);
        tilec_compile_workers_free(own);
        p->st.nvrtc_compiles = p->n;
        if (failed) {
            for (uint32_t i = 0; i < p->n; i++)
                if (!p->ks[i].cubin)
                    cmp_report_failure(ctx, m, p->ks[i].k, &p->ks[i].code, arch, p->ks[i].log, "compile failed");
            tilec_program_free(p);
            return TILEC_ERR_INPUT;
        }
        if (o->cache)
            to_cache(p, o->cache);
    }
    p->st.compile_ms = now_ms() - t0 - p->st.lower_ms;

    /* load and resolve each kernel once */
    t0 = now_ms();
    for (uint32_t i = 0; rt && i < p->n; i++) {
        pkernel *pk = &p->ks[i];
        if (tilec_rt_module_load(rt, pk->cubin, pk->size, &pk->mod) != TILEC_RT_OK)
            return fail(ctx, p, &pk->k->loc, "cannot load the compiled kernel", tilec_rt_last_error(rt));
        tilec_rt_launch_meta meta = {pk->code.threads, pk->code.smem_bytes, pk->code.nparams, pk->kinds};
        if (tilec_rt_kernel_get(pk->mod, pk->code.name, &meta, &pk->kern) != TILEC_RT_OK)
            return fail(ctx, p, &pk->k->loc, "cannot prepare the kernel for launch", tilec_rt_last_error(rt));
    }
    p->st.load_ms = now_ms() - t0;
    *out = p;
    return TILEC_OK;
}

tilec_rt_status tilec_program_load(tilec_rt *rt, const tilec_aot_kernel *ks, uint32_t n, tilec_program **out)
{
    if (!out)
        return TILEC_RT_INVALID_ARG;
    *out = NULL;
    if (!rt || (n && !ks))
        return TILEC_RT_INVALID_ARG;
    for (uint32_t i = 0; i < n; i++) { /* the table: variants consecutive, variant 0 first */
        const tilec_aot_kernel *a = &ks[i];
        if (!a->kernel || !a->name || !a->image || !a->size || !a->grid || a->nparams > 64 ||
            (a->nparams && !a->kinds) || !a->nvariants || a->nvariants > 64 || a->variant < 0 ||
            (uint32_t)a->variant >= a->nvariants || (uint32_t)a->variant > i ||
            strcmp(ks[i - (uint32_t)a->variant].kernel, a->kernel) || ks[i - (uint32_t)a->variant].variant != 0 ||
            i - (uint32_t)a->variant + a->nvariants > n)
            return TILEC_RT_INVALID_ARG;
    }
    tilec_program *p = calloc(1, sizeof *p);
    if (!p)
        return TILEC_RT_NOMEM;
    p->rt = rt;
    mk_init(p);
    p->n = n;
    p->st.kernels = n;
    p->ks = calloc(n ? n : 1, sizeof *p->ks);
    if (!p->ks) {
        tilec_program_free(p);
        return TILEC_RT_NOMEM;
    }
    double t0 = now_ms();
    for (uint32_t i = 0; i < n; i++) {
        const tilec_aot_kernel *a = &ks[i];
        pkernel *pk = &p->ks[i];
        pk->kname = a->kernel;
        pk->nvariants = a->nvariants;
        pk->variant = a->variant;
        pk->written = a->written;
        pk->grid = a->grid;
        pk->code.name = strdup(a->name);
        if (!pk->code.name) {
            tilec_program_free(p);
            return TILEC_RT_NOMEM;
        }
        pk->code.threads = a->threads;
        pk->code.smem_bytes = a->smem_bytes;
        pk->code.nparams = a->nparams;
        pk->code.variant = a->variant;
        if (a->nparams)
            memcpy(pk->kinds, a->kinds, a->nparams * sizeof pk->kinds[0]);
        tilec_rt_status st = tilec_rt_module_load(rt, a->image, a->size, &pk->mod);
        tilec_rt_launch_meta meta = {pk->code.threads, pk->code.smem_bytes, pk->code.nparams, pk->kinds};
        if (st == TILEC_RT_OK)
            st = tilec_rt_kernel_get(pk->mod, pk->code.name, &meta, &pk->kern);
        if (st != TILEC_RT_OK) {
            tilec_program_free(p);
            return st;
        }
    }
    p->st.load_ms = now_ms() - t0;
    *out = p;
    return TILEC_RT_OK;
}

static const pkernel *find(const tilec_program *p, const char *name, int variant)
{
    for (uint32_t i = 0; i < p->n; i++)
        if (p->ks[i].variant == variant && !strcmp(p->ks[i].kname, name))
            return &p->ks[i];
    return NULL;
}

const tilec_rt_kernel *tilec_program_kernel(const tilec_program *p, const char *name, int variant)
{
    const pkernel *pk = p && name ? find(p, name, variant) : NULL;
    return pk ? pk->kern : NULL;
}

tilec_rt_status tilec_program_launch(const tilec_program *p, const char *name, int variant, const tilec_rt_arg *args,
                                     uint32_t nargs, void *stream)
{
    const pkernel *pk = p && name ? find(p, name, variant) : NULL;
    if (!pk || !pk->kern || nargs != pk->code.nparams || (nargs && !args))
        return TILEC_RT_INVALID_ARG;
    int64_t scal[64];
    for (uint32_t i = 0; i < nargs; i++) {
        switch (pk->kinds[i]) {
        case TILEC_RT_PARAM_I32: scal[i] = args[i].i32; break;
        case TILEC_RT_PARAM_U32: scal[i] = args[i].u32; break;
        case TILEC_RT_PARAM_I64: scal[i] = args[i].i64; break;
        case TILEC_RT_PARAM_U64: scal[i] = (int64_t)args[i].u64; break;
        default: scal[i] = 0; break;
        }
    }
    uint32_t grid[3];
    if (pk->k ? tilec_kernel_grid(pk->k, pk->variant, scal, grid) != TILEC_OK : pk->grid(scal, grid) != 0)
        return TILEC_RT_INVALID_ARG;
    if (!grid[0] || !grid[1] || !grid[2])
        return TILEC_RT_OK; /* nothing to do */
    return tilec_rt_launch(pk->kern, grid, args, stream);
}

void tilec_program_get_stats(const tilec_program *p, tilec_program_stats *s)
{
    if (p && s)
        *s = p->st;
}
