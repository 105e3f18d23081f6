/* fuzz_gen.c: libFuzzer target over the generator of well-typed kernels
 * (fuzz/gen_kernel.c): the fuzzer's bytes are the generator's choices, and
 * the module they give must pass every stage short of NVRTC: check, lower
 * every variant of the kernel to CUDA C, lower and plan the graph, emit C
 * and Python. A stage that fails is a finding (abort with the module and
 * the diagnostics): either the generator or that stage is wrong. NVRTC,
 * cc and py_compile over the same modules: tools/gen_nvrtc.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/gen_kernel.h"
#include "tilec/emitter.h"
#include "tilec/lower.h"
#include "tilec/tilec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *user, const char *data, size_t len)
{
    (void)data;
    *(size_t *)user += len;
    return 0;
}

static void finding(tilec_ctx *ctx, const char *text, const char *stage)
{
    fprintf(stderr, "fuzz_gen: a generated module fails at %s:\n%s\n", stage, text);
    tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
    abort();
}

/* 1 when every error of ctx is the shared-memory limit of the target: a
 * resource the lowering ran out of (its shared memory is one bump
 * allocation per kernel, never reused between statements: a kernel of many
 * large layout conversions and scans passes the checker and needs more
 * than sm_90's 227 KiB), reported as a clear error; docs/reliability.md. */
static int only_smem_limit(const tilec_ctx *ctx)
{
    size_t errors = 0;
    for (size_t i = 0; i < tilec_ctx_diag_count(ctx); i++) {
        const tilec_diag *d = tilec_ctx_diag(ctx, i);
        if (d->severity != TILEC_SEV_ERROR)
            continue;
        errors++;
        if (!strstr(d->message, "bytes of shared memory (the most a block may have"))
            return 0;
    }
    return errors > 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = gen_kernel(data, size);
    tilec_ctx *ctx = tilec_ctx_new();
    if (!text || !ctx) {
        free(text);
        tilec_ctx_free(ctx);
        return 0;
    }
    tilec_module *m = NULL;
    if (tilec_parse_string(ctx, "gen.tile", text, strlen(text), &m) != TILEC_OK)
        finding(ctx, text, "the checker");
    const tilec_kernel *k = tilec_module_kernel(m, 0);
    for (uint32_t v = 0; v < tilec_kernel_variant_count(k); v++) {
        tilec_kernel_code code;
        if (tilec_lower_kernel(ctx, m, k, (int)v, &code) != TILEC_OK && !only_smem_limit(ctx))
            finding(ctx, text, "lowering");
        tilec_kernel_code_free(&code);
    }
    size_t bytes = 0;
    tilec_sink sink = {count, &bytes};
    static const char *const emitters[] = {"ir", "c", "py"};
    for (size_t i = 0; i < sizeof emitters / sizeof *emitters; i++)
        if (tilec_module_emit(ctx, m, emitters[i], &(tilec_emit_options){.plan = 1}, sink) != TILEC_OK)
            finding(ctx, text, emitters[i]);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    free(text);
    return 0;
}
