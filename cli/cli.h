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
    const char *choices;     /* --choices, with --aot: tilec tune's choices to embed */
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

/* "tilec: error: MESSAGE" and the --help hint on stderr; returns
 * CLI_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A subcommand's usage error: "tilec: error: SUB: WHAT[: ARG]", then the
 * subcommand's usage text; CLI_EXIT_USAGE. */
int cli_sub_usage_error(const char *sub, const char *usage, const char *what, const char *arg);

/* The name of input i in messages: --source-name, "<stdin>" for "-", or
 * the path as given. */
const char *cli_name(const cli_opts *o, int i);

/* Does s start with 1 to 20 decimal digits followed by its end or a
 * letter (a unit: 64K, 30d)? Numbers on the command line are only these:
 * no space, sign or empty string. */
int cli_is_digits(const char *s);

/* "tilec: error: MESSAGE" on stderr, the one form of every error of the
 * command that has no place in a file (those are FILE:LINE:COL: error:);
 * returns CLI_EXIT_INPUT. */
int cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Render and clear ctx's diagnostics on stderr. */
void cli_flush_diags(tilec_ctx *ctx);

/* --emit ast, cuda, ir: every module to -o FILE (all or nothing) or stdout. */
int cli_emit_stream(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods);

/* --emit NAME of an emitter (c, py, a plugin's): every module into -o DIR
 * (made, with missing parents, when there is something to write) or to
 * stdout, once every module succeeded. */
int cli_emit_with(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods);

/* --emit cubin: every kernel variant of every module compiled (the kernel
 * cache, then NVRTC on -j workers) and written into -o DIR. */
int cli_emit_cubins(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods);

/* Give a temporary file the mode a new file would get: 0666 less the
 * umask, not mkstemp's 0600. */
void cli_usual_mode(int fd);

/* The files of one run into -o DIR (outputs.c): gathered, checked as a
 * set (no two on one path, none on an input), then written all or none. */
typedef struct cli_output {
    char *name; /* in DIR */
    char *data;
    size_t len;
    int module; /* the input it came from: o->files[module] */
    char *tmp;  /* its temporary file while committing */
} cli_output;
typedef struct cli_outputs {
    const cli_opts *o;
    cli_output *v;
    size_t n, cap;
} cli_outputs;
/* Keep a copy of one output; a second output of the same name is refused. */
int cli_outputs_add(cli_outputs *s, int module, const char *name, const void *data, size_t len);
/* Check the set, make DIR (and missing parents), write every file; nothing
 * is left of a refused or failed commit. 0 or CLI_EXIT_INPUT (said). */
int cli_outputs_commit(cli_outputs *s);
void cli_outputs_free(cli_outputs *s);

/* Before anything is compiled: can dir be written into, or made (the
 * nearest existing directory above it is writable)? 0 or CLI_EXIT_INPUT. */
int cli_check_dir(const char *dir);

/* Is the existing file at path one of the inputs (the same device and
 * inode)? Then an error is said: CLI_EXIT_INPUT; else 0. */
int cli_refuse_input(const cli_opts *o, const char *path);

/* `tilec cache stats|list|prune|clear` (cache.c): the exit status. */
int cli_cache(int argc, char **argv);

/* `tilec tune FILE --sizes ...` (tune.c): the multi-kernel's choices timed
 * ahead of time and stored in the cache; the exit status. */
int cli_tune(int argc, char **argv);

#endif
