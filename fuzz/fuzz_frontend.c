/* fuzz_frontend.c: libFuzzer target for everything tilec does with a .tile
 * file short of NVRTC: lex, parse, check, dump the AST, lower every kernel
 * (every variant) to CUDA C, lower and plan every graph to wrapper IR, and
 * run every built-in emitter into a memory sink. Built by `make fuzz` with
 * clang, ASan and UBSan; see docs/reliability.md. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/emitter.h"
#include "tilec/lower.h"
#include "tilec/tilec.h"
#include "tilec/wir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Counts bytes and touches each one, so that a read past the end of an
 * emitter's buffer is seen by ASan. */
typedef struct {
    size_t bytes;
    unsigned sum;
} fz_sink;

static int fz_write(void *user, const char *data, size_t len)
{
    fz_sink *s = user;
    for (size_t i = 0; i < len; i++)
        s->sum += (unsigned char)data[i];
    s->bytes += len;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tilec_ctx *ctx = tilec_ctx_new();
    if (!ctx)
        return 0;
    fz_sink s = {0, 0};
    tilec_sink sink = {fz_write, &s};
    tilec_module *m = NULL;
    tilec_status st = tilec_parse_string(ctx, "fuzz.tile", (const char *)data, size, &m);
    tilec_ctx_render_diags(ctx, sink);
    if (st == TILEC_OK && m) {
        tilec_module_dump_ast(m, sink);
        tilec_ctx_clear_diags(ctx);
        tilec_module_emit_cuda(ctx, m, sink);
        tilec_ctx_render_diags(ctx, sink);
        tilec_ctx_clear_diags(ctx);
        for (int plan = 0; plan <= 1; plan++) {
            tilec_module_emit_ir(ctx, m, plan, NULL, 0, sink);
            tilec_ctx_clear_diags(ctx);
        }
        const char *names[16];
        size_t n = tilec_emitter_names(ctx, names, 16);
        for (size_t i = 0; i < n && i < 16; i++) {
            tilec_emit_options o;
            memset(&o, 0, sizeof o);
            o.plan = 1;
            tilec_module_emit(ctx, m, names[i], &o, sink);
            tilec_ctx_render_diags(ctx, sink);
            tilec_ctx_clear_diags(ctx);
        }
        tilec_module_free(m);
    }
    tilec_ctx_free(ctx);
    return 0;
}
