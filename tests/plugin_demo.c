/* plugin_demo.c: a tiny emitter plugin for tests/test_emit.c. It registers
 * the emitter "demo", which writes NAME.demo per graph: "demo NAME" and
 * then the kind of each IR line, one a line. Built with -DPLUGIN_DEMO_FAIL
 * its tilec_plugin_register registers nothing and fails; built with
 * -DPLUGIN_DEMO_ABI it claims the layout of a later emitter ABI (one more
 * hook table word), as a plugin built against other headers would. */
#include <stdio.h>

#include "tilec/emitter.h"

int tilec_plugin_register(tilec_ctx *ctx);

static int demo_begin(tilec_emit *e, void **state)
{
    *state = e;
    char file[300];
    snprintf(file, sizeof file, "%.250s.demo", tilec_emit_graph(e)->name);
    return tilec_emit_printf(e, file, "demo %s\n", tilec_emit_graph(e)->name);
}

static int demo_line(void *user, const tilec_wir_line *l)
{
    tilec_emit *e = user;
    char file[300];
    snprintf(file, sizeof file, "%.250s.demo", tilec_emit_graph(e)->name);
    return tilec_emit_printf(e, file, "%s\n", tilec_wir_kind_name(l->kind));
}

static int demo_end(tilec_emit *e, void *state)
{
    (void)e;
    (void)state;
    return 0;
}

#define DEMO_HOOK(E, e) .e = demo_line,
static const tilec_emitter demo = {
#ifdef PLUGIN_DEMO_ABI
    .abi = TILEC_EMITTER_ABI + 1,
    .size = (unsigned)sizeof(tilec_emitter) + 8,
#else
    TILEC_EMITTER_HEADER,
#endif
    .name = "demo",
    .description = "the kind of every IR line (NAME.demo)",
    .begin = demo_begin,
    .hooks = {{{TILEC_WIR_LINES(DEMO_HOOK)}}},
    .end = demo_end,
};

int tilec_plugin_register(tilec_ctx *ctx)
{
#ifdef PLUGIN_DEMO_FAIL
    (void)ctx;
    (void)demo;
    return 7;
#else
    return tilec_register_emitter(ctx, &demo) == TILEC_OK ? 0 : 1;
#endif
}
