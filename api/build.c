/* build.c: tilec_program_build, a .tile module built for the GPU. The
 * pipeline: every kernel variant with its launch parameter kinds; the
 * module's source record looked up (api/record.h): on a hit it names the
 * bundle and gives the launch metadata, and nothing is lowered; else every
 * variant lowered, the generated code, the compiler's identity and the
 * NVRTC version and options hashed into a key and the bundle looked up in
 * the cache; on a miss every variant compiled by NVRTC at once
 * (runtime/batch.h), failures reported at their .tile lines, the bundle
 * stored; the record stored; then the runtime's program assembled from the
 * metadata and each CUBIN loaded (runtime/assemble.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/compile.h"
#include "api/record.h"
#include "dsl/diag.h"
#include "parser/parse.h"
#include "runtime/assemble.h"
#include "runtime/batch.h"
#include "tilec/limits.h"
#include "tilec/program.h"

/* One kernel variant while it is built. */
typedef struct bkernel {
    const tilec_kernel *k;
    int variant;
    tilec_kernel_code code;
    tilec_rt_param_kind kinds[64];
    rt_compile_job job; /* the compile: its CUBIN, or the NVRTC log */
} bkernel;

typedef struct build {
    tilec_ctx *ctx;
    tilec_rt *rt;
    const tilec_module *m;
    const tilec_build_options *o;
    char arch[32];
    bkernel *ks;
    uint32_t n;
    tilec_program_stats st;
    int compile_only; /* tilec_program_compile: nothing will be launched */
    int unlaunchable; /* a parameter no launch can pass (compile only): no cache */
    char record[TILEC_CACHE_KEY_LEN + 1]; /* the source record's key, or "" */
} build;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void build_free(build *b)
{
    for (uint32_t i = 0; b->ks && i < b->n; i++) {
        tilec_kernel_code_free(&b->ks[i].code);
        free(b->ks[i].job.cubin);
        free(b->ks[i].job.log);
    }
    free(b->ks);
}

static tilec_status fail(build *b, const tilec_loc *loc, const char *msg, const char *detail)
{
    diag_at(b->ctx, &b->m->src, loc, TILEC_SEV_ERROR, "%s%s%s", msg, detail ? ": " : "", detail ? detail : "");
    return TILEC_ERR_INPUT;
}

/* The key (runtime/cache_key.c): the compiler's identity, NVRTC's version
 * and options, the architecture, and every variant's generated CUDA
 * source and launch metadata, so any change to what would be compiled, or
 * to the compiler, is a new key. Lowering is microseconds; it runs before
 * the lookup. */
static void make_key(build *b)
{
    tilec_cache_keyer *k = NULL;
    if (tilec_cache_keyer_new(b->o->cache, b->arch, &k) != TILEC_RT_OK)
        return; /* no key: no lookup, no store */
    tilec_cache_keyer_add_u64(k, b->n);
    for (uint32_t i = 0; i < b->n; i++) {
        const tilec_kernel_code *c = &b->ks[i].code;
        tilec_cache_keyer_add_kernel(k, c->name, c->source, b->m->src.name, c->threads, c->smem_bytes, c->nparams,
                                     b->ks[i].kinds);
    }
    tilec_cache_keyer_final(k, b->st.key);
}

/* a kernel's bundle name, "<kernel>_v<variant>", always fits in a bundle */
_Static_assert(TILEC_BUNDLE_MAX_NAME >= TILEC_MAX_IDENT + 32, "bundle names must hold every kernel name");

/* Move each variant's CUBIN out of bd (the bundle is ours; it keeps no
 * image after). */
static void take_images(build *b, tilec_bundle *bd)
{
    for (uint32_t i = 0; i < b->n; i++) {
        b->ks[i].job.cubin = bd->kernels[i].image;
        b->ks[i].job.size = bd->kernels[i].size;
        bd->kernels[i].image = NULL;
    }
}

/* Take the kernels' images from a cached bundle: the names, launch
 * metadata and parameter kinds must be the ones the lowering gave. */
static int from_bundle(build *b, tilec_bundle *bd)
{
    if (bd->nkernels != b->n)
        return -1;
    for (uint32_t i = 0; i < b->n; i++) {
        const tilec_bundle_kernel *bk = &bd->kernels[i];
        const bkernel *pk = &b->ks[i];
        if (strcmp(bk->name, pk->code.name) || bk->threads != pk->code.threads ||
            bk->smem_bytes != pk->code.smem_bytes || bk->nparams != pk->code.nparams || !bk->size ||
            memcmp(bk->kinds, pk->kinds, bk->nparams * sizeof pk->kinds[0]))
            return -1;
    }
    take_images(b, bd);
    return 0;
}

/* The bundle from the cache, if it is there and fits: no NVRTC. */
static void from_cache(build *b)
{
    tilec_bundle *bd = NULL;
    if (!b->o->cache || b->unlaunchable || !b->st.key[0] || tilec_cache_get(b->o->cache, b->st.key, &bd) != TILEC_RT_OK)
        return;
    b->st.cache_hit = from_bundle(b, bd) == 0;
    tilec_bundle_free(bd);
}

static void to_cache(build *b)
{
    tilec_bundle bd = {b->n, calloc(b->n ? b->n : 1, sizeof(tilec_bundle_kernel))};
    if (!bd.kernels)
        return;
    for (uint32_t i = 0; i < b->n; i++)
        rec_to_bundle(&bd.kernels[i], &b->ks[i].code, b->ks[i].job.cubin, b->ks[i].job.size, b->ks[i].kinds);
    tilec_cache_put(b->o->cache, b->st.key, &bd); /* a failed put still leaves the memory level */
    free(bd.kernels);
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
        tilec_arg_kind ak = prm->type.kind == TILEC_TE_POINTER ? TILEC_ARG_PTR
                            : prm->type.kind == TILEC_TE_LIST  ? TILEC_ARG_LIST
                                                               : by_dtype[prm->type.dtype];
        if (tilec_rt_param_kind_of(ak, &kinds[a])) {
            *bad = a;
            return -1;
        }
    }
    return 0;
}

/* Every variant of every kernel, with its launch parameter kinds. */
static tilec_status variants(build *b)
{
    const tilec_module *m = b->m;
    for (uint32_t i = 0; i < m->kernels.n; i++)
        b->n += tilec_kernel_variant_count(m->kernels.v[i]);
    b->ks = calloc(b->n ? b->n : 1, sizeof *b->ks);
    if (!b->ks)
        return TILEC_ERR_NOMEM;
    uint32_t at = 0;
    for (uint32_t i = 0; i < m->kernels.n; i++) {
        const tilec_kernel *k = m->kernels.v[i];
        for (uint32_t v = 0; v < tilec_kernel_variant_count(k); v++, at++) {
            b->ks[at].k = k;
            b->ks[at].variant = (int)v;
            uint32_t bad;
            if (kinds_of(k, b->ks[at].kinds, &bad) && b->compile_only)
                b->unlaunchable = 1;
            else if (kinds_of(k, b->ks[at].kinds, &bad))
                return fail(b, bad < k->nparams ? &k->params[bad].loc : &k->loc,
                            "this parameter cannot be passed to a kernel yet (pointers and 32/64-bit scalars can)",
                            bad < k->nparams ? k->params[bad].name : "more than 64 parameters");
        }
    }
    return TILEC_OK;
}

/* Lower every variant (to key and, on a miss, compile them); a variant
 * the architecture cannot run is an error before the cache and NVRTC
 * (every such variant reported). */
static tilec_status lower_all(build *b)
{
    double tl = now_ms();
    for (uint32_t i = 0; i < b->n; i++) {
        tilec_status st = tilec_lower_kernel(b->ctx, b->m, b->ks[i].k, b->ks[i].variant, &b->ks[i].code);
        if (st != TILEC_OK)
            return st;
        cmp_log_remarks(b->m, &b->ks[i].code);
    }
    b->st.lower_ms = now_ms() - tl;
    int too_old = 0;
    for (uint32_t i = 0; i < b->n; i++)
        too_old |= cmp_check_arch(b->ctx, b->m, b->ks[i].k, &b->ks[i].code, b->arch) != 0;
    return too_old ? TILEC_ERR_INPUT : TILEC_OK;
}

/* A cache miss: compile every variant at once, store the bundle. */
static tilec_status compile_all(build *b)
{
    rt_compile_job *jobs = calloc(b->n ? b->n : 1, sizeof *jobs);
    if (!jobs)
        return fail(b, NULL, "out of memory while queueing compiles", NULL);
    for (uint32_t i = 0; i < b->n; i++) {
        jobs[i].source = b->ks[i].code.source;
        jobs[i].name = b->ks[i].code.name;
    }
    int r = rt_compile_batch(jobs, b->n, b->arch, b->o->threads, b->o->workers, b->o->progress);
    for (uint32_t i = 0; i < b->n; i++)
        b->ks[i].job = jobs[i];
    free(jobs);
    if (r == RT_BATCH_NO_POOL)
        return fail(b, NULL, "cannot start the compile threads", "check TILEC_COMPILE_THREADS");
    if (r == RT_BATCH_NOMEM)
        return fail(b, NULL, "out of memory while queueing compiles", NULL);
    b->st.nvrtc_compiles = b->n;
    if (r != RT_BATCH_OK) {
        for (uint32_t i = 0; i < b->n; i++)
            if (!b->ks[i].job.cubin)
                cmp_report_failure(b->ctx, b->m, b->ks[i].k, &b->ks[i].code, b->arch, b->ks[i].job.log,
                                   "compile failed");
        return TILEC_ERR_INPUT;
    }
    if (b->o->cache && b->st.key[0] && !b->unlaunchable)
        to_cache(b);
    return TILEC_OK;
}

static int kernel_grid(const void *k, int variant, const int64_t *args, uint32_t grid[3])
{
    return tilec_kernel_grid(k, variant, args, grid) == TILEC_OK ? 0 : -1;
}

/* The runtime's program from the metadata; each kernel loaded and
 * resolved once when there is a device. */
static tilec_status assemble(build *b, tilec_program **out)
{
    const tilec_build_options *o = b->o;
    tilec_program *p;
    if (rt_program_new(b->rt, b->n, o->cache ? tilec_cache_dir(o->cache) : NULL, &p) != TILEC_RT_OK)
        return TILEC_ERR_NOMEM;
    for (uint32_t i = 0; i < b->n; i++) {
        const bkernel *bk = &b->ks[i];
        rt_kernel_desc d = {.d = cmp_describe(bk->k, bk->variant, &bk->code, NULL, 0, bk->kinds),
                            .grid = kernel_grid,
                            .grid_data = bk->k,
                            .tma = &bk->code.tma};
        if (rt_program_set(p, i, &d) != TILEC_RT_OK) {
            tilec_program_free(p);
            return TILEC_ERR_NOMEM;
        }
    }
    double t0 = now_ms();
    for (uint32_t i = 0; b->rt && i < b->n; i++) {
        const bkernel *bk = &b->ks[i];
        const char *what = NULL;
        if (rt_program_load_module(p, i, bk->job.cubin, bk->job.size) != TILEC_RT_OK)
            what = "cannot load the compiled kernel";
        else if (rt_program_resolve(p, i) != TILEC_RT_OK)
            what = "cannot prepare the kernel for launch";
        if (what) {
            tilec_status st = fail(b, &bk->k->loc, what, tilec_rt_last_error(b->rt));
            tilec_program_free(p);
            return st;
        }
    }
    b->st.load_ms = now_ms() - t0;
    b->st.kernels = b->n;
    *rt_program_stats(p) = b->st;
    *out = p;
    return TILEC_OK;
}

/* A warm start without lowering: the source record names the bundle,
 * whose entries give each variant's launch description; they must fit
 * the module's variants (count, parameter counts and kinds). 1 on a hit;
 * 0 (nothing kept) otherwise. */
static int from_record(build *b)
{
    char *text = NULL, key[TILEC_CACHE_KEY_LEN + 1];
    if (!b->o->cache || b->unlaunchable)
        return 0;
    rec_key(b->o->cache, b->arch, b->m, b->record);
    if (!b->record[0] || tilec_cache_record_get(b->o->cache, b->record, &text) != TILEC_RT_OK)
        return 0;
    int ok = rec_parse(text, key) == 0;
    free(text);
    tilec_bundle *bd = NULL;
    if (!ok || tilec_cache_get(b->o->cache, key, &bd) != TILEC_RT_OK)
        return 0;
    ok = bd->nkernels == b->n;
    uint32_t i = 0;
    for (; ok && i < b->n; i++)
        ok = rec_from_bundle(&bd->kernels[i], &b->ks[i].code, b->ks[i].k->nparams, b->ks[i].kinds) == 0;
    if (!ok) {
        while (i-- > 0)
            tilec_kernel_code_free(&b->ks[i].code);
        tilec_bundle_free(bd);
        return 0;
    }
    for (i = 0; i < b->n; i++) {
        b->ks[i].code.variant = b->ks[i].variant;
        b->ks[i].code.kernel = b->ks[i].k;
    }
    take_images(b, bd);
    tilec_bundle_free(bd);
    snprintf(b->st.key, sizeof b->st.key, "%s", key);
    b->st.cache_hit = 1;
    return b->st.source_hit = 1;
}

/* After a lowering: the record for the next start. */
static void to_record(build *b)
{
    if (!b->o->cache || b->unlaunchable || !b->record[0] || !b->st.key[0])
        return;
    char *text = rec_format(b->st.key);
    if (text)
        tilec_cache_record_put(b->o->cache, b->record, text); /* a failed put costs the next start a lowering */
    free(text);
}

/* Every variant compiled (or found in the cache): the build up to loading. */
static tilec_status build_all(build *b)
{
    const tilec_build_options *o = b->o;
    if (o->arch) {
        snprintf(b->arch, sizeof b->arch, "%s", o->arch);
    } else {
        tilec_rt_device_props props;
        if (!b->rt || tilec_rt_device_info(b->rt, &props) != TILEC_RT_OK)
            return fail(b, NULL, "no architecture to compile for", b->rt ? tilec_rt_last_error(b->rt) : "no device");
        snprintf(b->arch, sizeof b->arch, "%s", props.arch);
    }
    tilec_status st = variants(b);
    if (st != TILEC_OK)
        return st;
    double t0 = now_ms();
    if (from_record(b)) { /* a warm start: no lowering, no NVRTC */
        b->st.compile_ms = now_ms() - t0;
        b->st.kernels = b->n;
        return TILEC_OK;
    }
    if ((st = lower_all(b)) != TILEC_OK)
        return st;
    /* the cache first: a hit needs no NVRTC */
    t0 = now_ms();
    make_key(b);
    from_cache(b);
    if (!b->st.cache_hit && (st = compile_all(b)) != TILEC_OK)
        return st;
    to_record(b);
    b->st.compile_ms = now_ms() - t0;
    b->st.kernels = b->n;
    return TILEC_OK;
}

static tilec_status run(build *b, tilec_program **out)
{
    tilec_status st = build_all(b);
    return st == TILEC_OK ? assemble(b, out) : st;
}

tilec_status tilec_program_build(tilec_ctx *ctx, tilec_rt *rt, const tilec_module *m, const tilec_build_options *o,
                                 tilec_program **out)
{
    if (!ctx || !m || !out)
        return TILEC_ERR_ARG;
    *out = NULL;
    tilec_build_options none = {0};
    build b = {.ctx = ctx, .rt = rt, .m = m, .o = o ? o : &none};
    tilec_status st = run(&b, out);
    build_free(&b);
    return st;
}

/* Each compiled variant to fn, as an ahead-of-time table entry whose image
 * lives for the call. */
static tilec_status hand_over(build *b, tilec_compiled_fn fn, void *user)
{
    for (uint32_t i = 0; i < b->n; i++) {
        const bkernel *bk = &b->ks[i];
        tilec_aot_kernel k =
            cmp_describe(bk->k, bk->variant, &bk->code, bk->job.cubin, bk->job.size, b->unlaunchable ? NULL : bk->kinds);
        if (fn(user, &k))
            return TILEC_ERR_IO;
    }
    return TILEC_OK;
}

tilec_status tilec_program_compile(tilec_ctx *ctx, const tilec_module *m, const tilec_build_options *o,
                                   tilec_compiled_fn fn, void *user, tilec_program_stats *stats)
{
    if (!ctx || !m || !o || !o->arch || !fn)
        return TILEC_ERR_ARG;
    build b = {.ctx = ctx, .m = m, .o = o, .compile_only = 1};
    tilec_status st = build_all(&b);
    if (st == TILEC_OK)
        st = hand_over(&b, fn, user);
    if (stats)
        *stats = b.st;
    build_free(&b);
    return st;
}
