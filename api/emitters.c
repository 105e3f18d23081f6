/* emitters.c: the public emitter API over a context: each context's
 * emitter registry (wrapper_ir/registry.h), made on first use with the
 * built-in emitters (ir, c, py), and tilec_module_emit, which hands the
 * registry and the API's compile step (for --aot) to the emit driver. */
#include <stddef.h>
#include <stdlib.h>

#include "api/compile.h"
#include "dsl/diag.h"
#include "emit_c/emit_c.h"
#include "emit_py/emit_py.h"
#include "tilec/aot.h"
#include "tilec/lower.h"
#include "tilec/program.h"
#include "wrapper_ir/emit.h"
#include "wrapper_ir/registry.h"
#include "wrapper_ir/session.h"

static const tilec_emitter *const builtins[] = {&wir_ir_emitter, &tilec_emit_c_emitter, &tilec_emit_py_emitter};
enum { NBUILTINS = sizeof builtins / sizeof builtins[0] };

/* The context's registry, made now if it has none; NULL when out of memory. */
static wir_registry *registry_of(tilec_ctx *ctx)
{
    if (!ctx->registry) {
        ctx->registry = wir_registry_new(builtins, NBUILTINS);
        ctx->registry_free = ctx->registry ? wir_registry_free : NULL;
    }
    return ctx->registry;
}

/* The context's registry, or (no context, or no memory for one) the
 * built-ins alone in *fallback. */
static const wir_registry *lookup_in(tilec_ctx *ctx, wir_registry *fallback)
{
    const wir_registry *reg = ctx ? registry_of(ctx) : NULL;
    *fallback = (wir_registry){.builtins = builtins, .nbuiltins = NBUILTINS};
    return reg ? reg : fallback;
}

tilec_status tilec_register_emitter(tilec_ctx *ctx, const tilec_emitter *em)
{
    if (!ctx || !em)
        return TILEC_ERR_ARG;
    wir_registry *reg = registry_of(ctx);
    return reg ? wir_registry_add(ctx, reg, em) : TILEC_ERR_NOMEM;
}

const tilec_emitter *tilec_find_emitter(tilec_ctx *ctx, const char *name)
{
    wir_registry fallback;
    return wir_registry_find(lookup_in(ctx, &fallback), name);
}

size_t tilec_emitter_names(tilec_ctx *ctx, const char **names, size_t cap)
{
    wir_registry fallback;
    return wir_registry_names(lookup_in(ctx, &fallback), names, cap);
}

tilec_status tilec_load_plugin(tilec_ctx *ctx, const char *path)
{
    if (!ctx || !path)
        return TILEC_ERR_ARG;
    wir_registry *reg = registry_of(ctx);
    return reg ? wir_registry_load_plugin(ctx, reg, path) : TILEC_ERR_NOMEM;
}

/* The compile step handed to emitters (--aot): tilec_program_compile with
 * the emit options' build options, each variant passed on with its kernel. */
typedef struct aot_pass {
    const tilec_module *m;
    wir_compiled_fn fn;
    void *user;
} aot_pass;

static int pass_on(void *user, const tilec_aot_kernel *a)
{
    aot_pass *p = user;
    wir_compiled w = {tilec_module_find_kernel(p->m, a->kernel), *a};
    return w.k ? p->fn(p->user, &w) : -1;
}

/* No build options: every variant compiled in the caller, one after
 * another, with no cache (no threads, workers or forks started behind a
 * library call that did not ask for them). */
static tilec_status compile_here(tilec_ctx *ctx, const tilec_module *m, const char *arch, wir_compiled_fn fn,
                                 void *user)
{
    for (size_t i = 0; i < tilec_module_kernel_count(m); i++) {
        const tilec_kernel *k = tilec_module_kernel(m, i);
        uint32_t nv = tilec_kernel_variant_count(k);
        for (uint32_t v = 0; v < nv; v++) {
            tilec_kernel_code code = {0};
            void *cubin = NULL;
            size_t size = 0;
            tilec_status st = tilec_compile_kernel(ctx, m, k, (int)v, arch, &code, &cubin, &size);
            tilec_rt_param_kind kinds[64];
            int launchable = st == TILEC_OK && code.nparams <= 64;
            for (uint32_t a = 0; launchable && a < code.nparams; a++)
                launchable = tilec_rt_param_kind_of(code.params[a], &kinds[a]) == 0;
            wir_compiled w = {k, cmp_describe(k, (int)v, &code, cubin, size, launchable ? kinds : NULL)};
            int stop = st == TILEC_OK && fn(user, &w);
            free(cubin);
            tilec_kernel_code_free(&code);
            if (st != TILEC_OK)
                return st;
            if (stop)
                return TILEC_ERR_INPUT; /* the emitter said why */
        }
    }
    return TILEC_OK;
}

static tilec_status compile_module(tilec_ctx *ctx, const tilec_module *m, const char *arch, const void *build,
                                   wir_compiled_fn fn, void *user)
{
    if (!build)
        return compile_here(ctx, m, arch, fn, user);
    tilec_build_options o = *(const tilec_build_options *)build;
    o.arch = arch;
    aot_pass p = {m, fn, user};
    tilec_status st = tilec_program_compile(ctx, m, &o, pass_on, &p, NULL);
    return st == TILEC_ERR_IO ? TILEC_ERR_INPUT : st; /* the emitter stopped the walk and said why */
}

tilec_status tilec_module_emit(tilec_ctx *ctx, const tilec_module *m, const char *name, const tilec_emit_options *o,
                               tilec_sink sink)
{
    wir_registry fallback;
    return wir_emit_module(ctx, ctx ? lookup_in(ctx, &fallback) : NULL, compile_module, m, name, o, sink, NULL, NULL);
}

tilec_status tilec_module_emit_outputs(tilec_ctx *ctx, const tilec_module *m, const char *name,
                                       const tilec_emit_options *o, tilec_emit_output_fn fn, void *user)
{
    wir_registry fallback;
    if (!fn || (o && o->dir))
        return TILEC_ERR_ARG;
    tilec_sink none = {NULL, NULL};
    return wir_emit_module(ctx, ctx ? lookup_in(ctx, &fallback) : NULL, compile_module, m, name, o, none, fn, user);
}
