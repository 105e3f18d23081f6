/* tilec.c: the `tilec` command, a thin client of the library, read as a
 * compiler driver: subcommands dispatch first; then the command line is
 * parsed (getopt_long) and checked whole (emitter, arch, sizes) before any
 * input is read; then every file is parsed and checked; then what --emit
 * asks for is written (cli/emit.c, cli/cubin.c). A usage error writes
 * nothing and creates nothing. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tilec/emitter.h"
#include "tilec/pool.h"
#include "tilec/runtime.h"
#include "tilec/workers.h"

/* the help, laid out as it prints */
/* clang-format off */
static const char usage[] =
    "usage: tilec [OPTION]... FILE.tile...\n"
    "       tilec cache stats|list|prune|clear [--dir DIR]   (tilec cache --help)\n"
    "       tilec tune FILE.tile --sizes NAME=N,... [--dir DIR] [--bytes N]   (tilec tune --help)\n"
    "\n"
    "Parse and check each .tile FILE (kernels, externs, graphs), then write what\n"
    "--emit asks for. Options and files may come in any order; FILE - is standard\n"
    "input (<stdin>).\n"
    "\n"
    "Output:\n"
    "      --check            parse and check only (the default)\n"
    "      --emit KIND        what to write:\n"
    "                           ast    the checked syntax tree\n"
    "                           cuda   the CUDA C of every kernel variant\n"
    "                           layouts  each variant's tile layouts, conversions, shared\n"
    "                                  memory and __syncthreads per loop iteration; remarks:\n"
    "                                  each dot loop's and load's path and width, and why\n"
    "                           tune   each tune space: the configurations pruned and\n"
    "                                  why, those kept and their rank per shape class\n"
    "                           ir     the wrapper IR of every graph, memory planned\n"
    "                           cubin  every kernel variant compiled by NVRTC:\n"
    "                                  NAME_vK.cubin and NAME_vK.meta in -o DIR\n"
    "                           c      a C wrapper per graph: NAME.c, NAME.h in -o DIR\n"
    "                           py     a Python wrapper per graph: NAME.py in -o DIR\n"
    "                           NAME   an emitter loaded with --plugin\n"
    "  -o, --output PATH      the file (ast, cuda, layouts, tune, ir; default or '-': standard output)\n"
    "                         or the directory (cubin, c, py; made with its parents)\n"
    "                         to write; never over an input, all files or none\n"
    "      --source-name NAME the input's name in generated code and diagnostics\n"
    "                         (one input file; default: its path as given)\n"
    "\n"
    "Compiling:\n"
    "      --arch sm_XY       the GPU architecture for --emit cubin (default sm_90)\n"
    "      --aot sm_XY[,..]   with --emit c: embed CUBINs compiled now for sm_XY (several:\n"
    "                         the device's own, or the newest it runs, is loaded)\n"
    "      --choices FILE     with --aot: embed the variants `tilec tune --choices FILE` chose\n"
    "                         (per device model and shape: launched untimed)\n"
    "  -j, --jobs N           compile N kernels at once (default: the cores)\n"
    "      --no-cache         compile every kernel; by default compiled kernels are\n"
    "                         kept in and read from the kernel cache\n"
    "  -q, --quiet            no progress bar (terminal) or progress lines\n"
    "\n"
    "Graphs and emitters:\n"
    "      --sizes R=4096,C=1024\n"
    "                         with --emit ir: each graph's peak bytes at these sizes\n"
    "      --plugin LIB.so    load plug-in emitters from a shared object (its\n"
    "                         tilec_plugin_register), then --emit NAME runs one\n"
    "\n"
    "Diagnostics and information:\n"
    "      --max-errors N     stop after N errors (default 20)\n"
    "  -h, --help             show this help and exit\n"
    "  -V, --version          show the version and exit\n"
    "\n"
    "Environment: TILEC_LOGS=async_compile,cache,remarks (log channels on stderr;\n"
    "\"all\"), TILEC_CACHE_DIR, TILEC_CACHE_MAX_BYTES, TILEC_CACHE_REDIS (a shared\n"
    "cache), TILEC_COMPILE_THREADS, TILEC_DISABLE_PROGRESS, CUDA_HOME.\n"
    "\n"
    "Exit status: 0 success, 1 errors in the input or the output, 2 usage error.\n"
    "Examples:\n"
    "  tilec examples/*.tile\n"
    "  tilec examples/matmul.tile --emit cubin --arch sm_90 -o kernels\n"
    "  tilec examples/e2e.tile --emit c -o gen\n"
    "  tilec cache stats\n"
    "See tilec(1) and docs/ for more.\n";
/* clang-format on */

enum {
    OPT_CHECK = 256,
    OPT_EMIT,
    OPT_ARCH,
    OPT_AOT,
    OPT_CHOICES,
    OPT_SIZES,
    OPT_PLUGIN,
    OPT_MAX_ERRORS,
    OPT_SOURCE_NAME,
    OPT_NO_CACHE
};

static const struct option long_options[] = {
    {"check", no_argument, NULL, OPT_CHECK},
    {"emit", required_argument, NULL, OPT_EMIT},
    {"output", required_argument, NULL, 'o'},
    {"source-name", required_argument, NULL, OPT_SOURCE_NAME},
    {"arch", required_argument, NULL, OPT_ARCH},
    {"aot", required_argument, NULL, OPT_AOT},
    {"choices", required_argument, NULL, OPT_CHOICES},
    {"jobs", required_argument, NULL, 'j'},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"quiet", no_argument, NULL, 'q'},
    {"sizes", required_argument, NULL, OPT_SIZES},
    {"plugin", required_argument, NULL, OPT_PLUGIN},
    {"max-errors", required_argument, NULL, OPT_MAX_ERRORS},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0},
};

/* A number from 1 to max written as decimal digits only, or 0 when the
 * text is not one: no space, sign, empty string or overflow (strtoul
 * alone takes " 4", "+4" and "-4"). */
static unsigned long number_in(const char *v, unsigned long max)
{
    if (!cli_is_digits(v))
        return 0;
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    return errno || *end || n == 0 || n > max ? 0 : n;
}

/* The option getopt_long stopped at, as typed: "--emit", "-j". */
static const char *bad_option(char **argv, char *buf, size_t size)
{
    const char *a = argv[optind - 1];
    if (!strncmp(a, "--", 2))
        snprintf(buf, size, "%.*s", (int)strcspn(a, "="), a);
    else
        snprintf(buf, size, "-%c", optopt > 32 && optopt < 127 ? optopt : '?');
    return buf;
}

/* One option into o; 0, -1 for --help or --version (done), or an exit status. */
static int take_option(cli_opts *o, int c, char **argv)
{
    char buf[256];
    switch (c) {
    case OPT_CHECK: o->emit = o->emit ? o->emit : "check"; return 0;
    case OPT_EMIT: o->emit = optarg; return 0;
    case 'o': o->out = optarg; return 0;
    case OPT_SOURCE_NAME: o->source_name = optarg; return 0;
    case OPT_ARCH: o->arch = optarg; return 0;
    case OPT_AOT: o->aot = optarg; return 0;
    case OPT_CHOICES: o->choices = optarg; return 0;
    case OPT_NO_CACHE: o->no_cache = 1; return 0;
    case 'q': o->quiet = 1; return 0;
    case OPT_SIZES: o->sizes_spec = optarg; return 0;
    case 'j':
        if (!(o->jobs = (int)number_in(optarg, TILEC_POOL_MAX_THREADS)))
            return cli_usage_error("-j takes a number from 1 to %d, got '%s'", TILEC_POOL_MAX_THREADS, optarg);
        return 0;
    case OPT_PLUGIN:
        if (o->nplugins == CLI_MAX_PLUGINS)
            return cli_usage_error("at most %d --plugin options", CLI_MAX_PLUGINS);
        o->plugins[o->nplugins++] = optarg;
        return 0;
    case OPT_MAX_ERRORS:
        if (!(o->max_errors = (unsigned)number_in(optarg, 100000)))
            return cli_usage_error("--max-errors takes a number from 1 to 100000, got '%s'", optarg);
        return 0;
    case 'h': fputs(usage, stdout); return -1;
    case 'V': printf("tilec %s\n", tilec_version()); return -1;
    case ':': return cli_usage_error("option '%s' needs an argument", bad_option(argv, buf, sizeof buf));
    default: return cli_usage_error("unknown option '%s'", bad_option(argv, buf, sizeof buf));
    }
}

/* The command line into o: 0, -1 when done (--help), or an exit status. */
static int parse_args(cli_opts *o, int argc, char **argv)
{
    opterr = 0;
    for (;;) {
        optopt = 0;
        int c = getopt_long(argc, argv, ":o:j:qhV", long_options, NULL);
        if (c == -1)
            break;
        int st = take_option(o, c, argv);
        if (st)
            return st;
    }
    o->files = (const char **)argv + optind;
    o->nfiles = argc - optind;
    if (!o->emit)
        o->emit = "check";
    if (!o->arch)
        o->arch = "sm_90";
    return 0;
}

static int is_stream_kind(const char *emit)
{
    return !strcmp(emit, "ast") || !strcmp(emit, "cuda") || !strcmp(emit, "layouts") || !strcmp(emit, "tune") ||
           !strcmp(emit, "ir");
}

/* An architecture NVRTC compiles for, or a usage error listing those it does. */
static int check_arch(const char *option, const char *arch)
{
    char known[1024];
    tilec_rt_status st = tilec_nvrtc_arch_supported(arch, known, sizeof known);
    if (st == TILEC_RT_INVALID_ARG) {
        int maj = 0, min = 0;
        tilec_nvrtc_version(&maj, &min);
        return cli_usage_error("unknown %s '%s' (NVRTC %d.%d compiles for %s; a suffix a or f may follow)", option,
                               arch, maj, min, known);
    }
    return 0;
}

/* --aot sm_80,sm_90a: each architecture of the list (the emitter checks
 * the list's form: no empty item, no repeat, at most 8). */
static int check_archs(const char *option, const char *archs)
{
    for (const char *p = archs;;) {
        const char *end = strchr(p, ',');
        char one[64];
        snprintf(one, sizeof one, "%.*s", (int)(end ? (size_t)(end - p) : strlen(p)), p);
        int st = check_arch(option, one);
        if (st || !end)
            return st;
        p = end + 1;
    }
}

/* Whatever can be checked before reading an input: a usage error or 0. */
static int check_usage(cli_opts *o)
{
    if (!o->nfiles)
        return cli_usage_error("no input file");
    if (o->source_name && o->nfiles != 1)
        return cli_usage_error("--source-name names one input file, got %d", o->nfiles);
    for (int i = 0, stdin_seen = 0; i < o->nfiles; i++)
        if (!strcmp(o->files[i], "-") && stdin_seen++)
            return cli_usage_error("'-' (standard input) is given more than once");
    if (o->out && !o->out[0])
        return cli_usage_error("-o takes a path, got ''");
    if (o->out && !strcmp(o->out, "-")) { /* -o -: standard output, as with no -o */
        if (!strcmp(o->emit, "cubin"))
            return cli_usage_error("--emit cubin writes files into a directory: -o - (standard output) cannot hold them");
        o->out = NULL;
    }
    if (o->aot && strcmp(o->emit, "c"))
        return cli_usage_error("--aot needs --emit c");
    if (o->choices && !o->aot)
        return cli_usage_error("--choices needs --aot (it embeds tuned choices in an ahead-of-time wrapper)");
    if (o->sizes_spec && strcmp(o->emit, "ir"))
        return cli_usage_error("--sizes needs --emit ir");
    if (o->out && !strcmp(o->emit, "check"))
        return cli_usage_error("-o needs --emit");
    if (!strcmp(o->emit, "cubin") && !o->out)
        return cli_usage_error("--emit cubin needs -o DIR");
    if (o->sizes_spec && tilec_wir_parse_sizes(o->sizes_spec, o->sizes, CLI_MAX_SIZES, &o->nsizes) != TILEC_OK)
        return cli_usage_error("--sizes takes NAME=N,NAME=N,... with positive sizes, got '%s'", o->sizes_spec);
    if (!strcmp(o->emit, "cubin"))
        return check_arch("--arch", o->arch);
    return o->aot ? check_archs("--aot", o->aot) : 0;
}

/* Plugins loaded, then --emit must name a kind: 0, or an exit status. */
static int check_emitter(tilec_ctx *ctx, const cli_opts *o)
{
    for (int i = 0; i < o->nplugins; i++)
        if (tilec_load_plugin(ctx, o->plugins[i]) != TILEC_OK) {
            cli_flush_diags(ctx);
            return CLI_EXIT_INPUT;
        }
    if (!strcmp(o->emit, "check") || !strcmp(o->emit, "cubin") || is_stream_kind(o->emit) ||
        tilec_find_emitter(ctx, o->emit))
        return 0;
    const char *names[64];
    size_t n = tilec_emitter_names(ctx, names, 64);
    char known[1024] = "ast, cuda, layouts, tune, cubin";
    for (size_t k = 0, at = strlen(known); k < n && at < sizeof known; k++)
        at += (size_t)snprintf(known + at, sizeof known - at, ", %s", names[k]);
    return cli_usage_error("unknown --emit kind '%s' (known: %s)", o->emit, known);
}

/* One input: by its path, or read (a file named --source-name, or
 * standard input for "-") and parsed as a string. */
static tilec_status parse_one(tilec_ctx *ctx, const cli_opts *o, int i, tilec_module **m)
{
    const char *path = o->files[i];
    int in = !strcmp(path, "-");
    if (!o->source_name && !in)
        return tilec_parse_file(ctx, path, m);
    FILE *f = in ? stdin : fopen(path, "rb");
    char *text = NULL;
    size_t len = 0, cap = 0;
    int bad = !f;
    while (!bad) {
        char *grown = len == cap ? realloc(text, cap = cap * 2 + 65536) : text;
        if (!grown) {
            bad = 1;
            errno = ENOMEM;
            break;
        }
        text = grown;
        size_t n = fread(text + len, 1, cap - len, f);
        len += n;
        if (!n) {
            bad = ferror(f);
            break;
        }
    }
    int err = errno;
    if (f && !in)
        fclose(f);
    tilec_status st = TILEC_ERR_IO;
    if (bad)
        fprintf(stderr, "%s: error: cannot read: %s\n", in ? "<stdin>" : path, strerror(err));
    else
        st = tilec_parse_string(ctx, cli_name(o, i), text ? text : "", len, m);
    free(text);
    return st;
}

/* Every input parsed and checked (all of them, for their diagnostics). */
static int parse_all(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods)
{
    int status = 0;
    for (int i = 0; i < o->nfiles; i++) {
        tilec_status st = parse_one(ctx, o, i, &mods[i]);
        cli_flush_diags(ctx);
        if (st != TILEC_OK && st != TILEC_ERR_INPUT && st != TILEC_ERR_IO)
            fprintf(stderr, "%s: error: %s\n", cli_name(o, i), tilec_status_string(st));
        if (st != TILEC_OK)
            status = CLI_EXIT_INPUT;
    }
    return status;
}

/* A --sizes name no graph has is a usage error, found before any output. */
static int check_size_names(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods)
{
    int status = 0;
    for (int i = 0; i < o->nfiles && o->nsizes; i++)
        if (tilec_module_check_sizes(ctx, mods[i], o->sizes, o->nsizes) != TILEC_OK)
            status = CLI_EXIT_USAGE;
    cli_flush_diags(ctx);
    return status;
}

static int compile(tilec_ctx *ctx, const cli_opts *o)
{
    int status = check_emitter(ctx, o);
    if (status)
        return status;
    tilec_module **mods = calloc((size_t)o->nfiles, sizeof *mods);
    if (!mods)
        return cli_error("out of memory");
    status = parse_all(ctx, o, mods);
    if (!status)
        status = check_size_names(ctx, o, mods);
    if (!status && !strcmp(o->emit, "cubin"))
        status = cli_emit_cubins(ctx, o, mods);
    else if (!status && is_stream_kind(o->emit))
        status = cli_emit_stream(ctx, o, mods);
    else if (!status && strcmp(o->emit, "check"))
        status = cli_emit_with(ctx, o, mods);
    for (int i = 0; i < o->nfiles; i++)
        tilec_module_free(mods[i]);
    free(mods);
    return status;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--compile-worker"))
        return tilec_compile_worker_main(0, 1); /* a compile worker of a parallel build (not for people) */
    /* Subcommands, `tilec NAME ARGS...`, dispatch here: one line each, to a
     * function in a file of its own under cli/. */
    if (argc > 1 && !strcmp(argv[1], "cache"))
        return cli_cache(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "tune"))
        return cli_tune(argc - 1, argv + 1);

    cli_opts o = {0};
    int status = parse_args(&o, argc, argv);
    if (status)
        return status < 0 ? 0 : status;
    if ((status = check_usage(&o)))
        return status;
    tilec_ctx *ctx = tilec_ctx_new();
    if (!ctx)
        return cli_error("out of memory");
    tilec_ctx_set_max_errors(ctx, o.max_errors);
    status = compile(ctx, &o);
    cli_flush_diags(ctx);
    tilec_ctx_free(ctx);
    return status;
}
