/* emitter.h: emitters write the wrapper IR of each graph out as code. An
 * emitter is a const table of hooks: begin (per graph), one hook per IR
 * line kind (from the X-macro in wir.h), end. It writes into named outputs
 * of the emit session (tilec_emit_printf), never to stdout; the driver
 * writes the outputs at the end, each file atomically, or to one sink.
 *
 * Built in: "ir" (the text form), "c" (a .c/.h pair per graph), "py" (a
 * Python module per graph, over python/tilec). Users add theirs with tilec_register_emitter,
 * or from a shared object with tilec_load_plugin (`tilec --plugin lib.so`),
 * which calls the one documented symbol TILEC_PLUGIN_SYMBOL. */
#ifndef TILEC_EMITTER_H
#define TILEC_EMITTER_H

#include <stdarg.h>

#include "tilec/tilec.h"
#include "tilec/wir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tilec_emit tilec_emit; /* one emit session (one module) */

/* The emitter ABI: the layout of tilec_emitter and of tilec_wir_hooks (one
 * hook per IR line kind). It changes whenever either layout changes (a new
 * line kind is a new hook). Every emitter starts with TILEC_EMITTER_HEADER,
 * which records the ABI and the struct size it was compiled against;
 * tilec_register_emitter refuses any other, so an emitter (or a plugin)
 * built against another layout is a diagnostic, never a call through a
 * wrong pointer. */
#define TILEC_EMITTER_ABI 6u /* 2: the COLLECTIVE line kind (a new hook); 3: LOOP, END_LOOP, slices, a COLLECTIVE's wait (a field of the line; the wait itself an EXTERN_CALL); 4: ASSERT_LIST and LIST arguments (tensor list parameters); 5: MAKE_LIST (sub-lists); 6: LIST_OF (lists of named tensors) and ITEM arguments (xs[i]) */
#define TILEC_EMITTER_HEADER .abi = TILEC_EMITTER_ABI, .size = (unsigned)sizeof(tilec_emitter)

typedef struct tilec_emitter {
    /* first, at the same offsets in every ABI: TILEC_EMITTER_HEADER */
    unsigned abi;            /* TILEC_EMITTER_ABI of the headers it was built with */
    unsigned size;           /* sizeof(tilec_emitter) there */
    const char *name;        /* what --emit names: "c", "dot" */
    const char *description; /* one line for --help */
    /* per graph: set *state (passed to every hook as its user pointer);
     * nonzero stops the emit */
    int (*begin)(tilec_emit *e, void **state);
    tilec_wir_hooks hooks; /* every kind must have a hook */
    /* per graph, after the lines: write what is left, free the state */
    int (*end)(tilec_emit *e, void *state);
} tilec_emitter;

/* Register an emitter on the context (it must outlive the context's use);
 * a later registration of the same name replaces an earlier one and the
 * built-ins. TILEC_ERR_ARG for a NULL context or emitter, an unnamed
 * emitter, or one whose abi/size are not this library's (a diagnostic
 * gives both ABIs, and names the plugin file during tilec_load_plugin). */
tilec_status tilec_register_emitter(tilec_ctx *ctx, const tilec_emitter *em);
/* The emitter called `name`: registered ones first, then the built-ins. */
const tilec_emitter *tilec_find_emitter(tilec_ctx *ctx, const char *name);
/* The names of every emitter, built-ins first (for --help). */
size_t tilec_emitter_names(tilec_ctx *ctx, const char **names, size_t cap);

/* A plugin is a shared object exporting
 *     int tilec_plugin_register(tilec_ctx *ctx);
 * which registers its emitters (each carrying TILEC_EMITTER_HEADER) and
 * returns 0. The library stays loaded until the context is freed. Errors
 * (no such file, no symbol, an emitter of another ABI, the function
 * failing) are diagnostics naming the plugin file. */
#define TILEC_PLUGIN_SYMBOL "tilec_plugin_register"
typedef int (*tilec_plugin_register_fn)(tilec_ctx *ctx);
tilec_status tilec_load_plugin(tilec_ctx *ctx, const char *path);

/* ---- for emitters, during a session ---- */
tilec_ctx *tilec_emit_ctx(tilec_emit *e);
const tilec_module *tilec_emit_module(const tilec_emit *e);
const tilec_wir *tilec_emit_wir(const tilec_emit *e);     /* the current graph's lines */
const tilec_graph *tilec_emit_graph(const tilec_emit *e); /* the current graph */
/* The value of option `key` ("aot" in `--aot sm_90`), or NULL. */
const char *tilec_emit_option(const tilec_emit *e, const char *key);
/* Append to output `file` (a plain name: no '/', no leading '.'); 0 or -1. */
int tilec_emit_write(tilec_emit *e, const char *file, const char *data, size_t len);
int tilec_emit_printf(tilec_emit *e, const char *file, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int tilec_emit_vprintf(tilec_emit *e, const char *file, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));

/* ---- the driver ---- */
typedef struct tilec_emit_options {
    const char *dir;           /* write each output to dir/file (atomically); NULL: to the sink */
    const char *const *keys;   /* options for the emitter: keys[i] = values[i] */
    const char *const *values;
    size_t noptions;
    int plan;                  /* run memory planning (default in the command) */
    /* How the C emitter's "aot" option compiles the module's kernels, as
     * tilec_program_compile does (tilec/program.h: its threads, cache,
     * workers and progress; the option names the arch): every variant at
     * once on the pool, through the kernel cache. NULL: in the caller, one
     * variant after another, without a cache (no threads, worker processes
     * or forks). */
    const struct tilec_build_options *build;
} tilec_emit_options;

/* Lower every graph of m to wrapper IR, plan it, and write it with the
 * emitter called `emitter`. Nothing is written unless every graph
 * succeeds. A missing hook is an error naming the emitter and the line
 * kind. */
tilec_status tilec_module_emit(tilec_ctx *ctx, const tilec_module *m, const char *emitter,
                               const tilec_emit_options *o, tilec_sink sink);

/* As tilec_module_emit, but each output is handed to fn by its name
 * (NAME.c, NAME.h, NAME.py), in the order first written, once every graph
 * succeeded, for a caller that writes the files itself: the command
 * checks every output of a run (no two on one path, none on an input)
 * before it writes any. A nonzero return from fn stops the walk
 * (TILEC_ERR_IO). o->dir must be NULL (TILEC_ERR_ARG otherwise). */
typedef int (*tilec_emit_output_fn)(void *user, const char *file, const char *data, size_t len);
tilec_status tilec_module_emit_outputs(tilec_ctx *ctx, const tilec_module *m, const char *emitter,
                                       const tilec_emit_options *o, tilec_emit_output_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
