/* cli.h: what the files of the `tilec` command share: the parsed command
 * line, exit statuses, and the actions main() hands it to (cli/emit.c
 * writes streams and emitter output, cli/cubin.c compiles kernels). */
#ifndef TILEC_CLI_CLI_H
#define TILEC_CLI_CLI_H

#include <stddef.h>

#include "tilec/program.h"
#include "tilec/tilec.h"
#include "tilec/wir.h"

enum { CLI_EXIT_INPUT = 1, CLI_EXIT_USAGE = 2 };
enum { CLI_MAX_PLUGINS = 16, CLI_MAX_SIZES = 64 };

typedef struct cli_opts {
    const char *emit;        /* "check", "ast", "cuda", "ir", "cubin", or an emitter's name */
    const char *out;         /* -o: a file (streams) or a directory (cubin, emitters); NULL: stdout */
    const char *arch;        /* --arch, for --emit cubin */
    const char *aot;         /* --aot, with --emit c */
    const char *source_name; /* --source-name: the input's name in generated code and diagnostics */
    const char *sizes_spec;  /* --sizes, with --emit ir */
    tilec_wir_size sizes[CLI_MAX_SIZES];
    size_t nsizes;
    const char *plugins[CLI_MAX_PLUGINS];
    int nplugins;
    unsigned max_errors; /* 0: the library's default */
    int jobs;            /* -j: compiles at once; 0: the cores */
    int no_cache, quiet;
    const char **files;
    int nfiles;
} cli_opts;

/* How the command compiles kernels (--emit cubin, --emit c --aot): the
 * kernel cache unless --no-cache, -j compile workers kept across the
 * modules, the progress bar unless --quiet (cli/cubin.c). */
typedef struct cli_build {
    tilec_build_options o;
    tilec_cache *cache;
    tilec_compile_workers *workers;
} cli_build;
void cli_build_begin(const cli_opts *o, const char *arch, cli_build *b);
void cli_build_end(cli_build *b);

/* "tilec: MESSAGE" and the --help hint on stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Render and clear ctx's diagnostics on stderr. */
void cli_flush_diags(tilec_ctx *ctx);

/* --emit ast, cuda, ir: every module to -o FILE (all or nothing) or stdout. */
int cli_emit_stream(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods);

/* --emit NAME of an emitter (c, py, a plugin's): every module into -o DIR
 * (made when missing) or to stdout. */
int cli_emit_with(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods);

/* --emit cubin: every kernel variant of every module compiled (the kernel
 * cache, then NVRTC on -j workers) and written into -o DIR. */
int cli_emit_cubins(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods);

/* Give a temporary file the mode a new file would get: 0666 less the
 * umask, not mkstemp's 0600. */
void cli_usual_mode(int fd);

/* Make directory dir when it is missing; *made says whether it was. 0 or
 * CLI_EXIT_INPUT after saying why. */
int cli_make_dir(const char *dir, int *made);

/* `tilec cache stats|list|prune|clear` (cache.c): the exit status. */
int cli_cache(int argc, char **argv);

#endif
