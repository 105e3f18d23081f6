/* tilec.c: the `tilec` command, a thin client of the library:
 * parse + check each file, then write what --emit asks for. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tilec/emitter.h"
#include "tilec/lower.h"
#include "tilec/wir.h"
#include "tilec/workers.h"
#include "tilec/tilec.h"

enum { EXIT_INPUT = 1, EXIT_USAGE = 2 };

static const char usage[] =
    "usage: tilec FILE.tile... [options]\n"
    "\n"
    "Parse and check .tile files (kernels, externs, graphs) and write what\n"
    "--emit asks for.\n"
    "\n"
    "options:\n"
    "  --check           parse and check only (the default)\n"
    "  --emit ast        print the checked syntax tree\n"
    "  --emit cuda       print the CUDA C of every kernel variant\n"
    "  --emit cubin      compile every kernel variant with NVRTC into -o DIR:\n"
    "                    NAME_vK.cubin and NAME_vK.meta (launch metadata)\n"
    "  --arch sm_XY      the architecture for --emit cubin (default sm_90)\n"
    "  --emit c          a C wrapper per graph: NAME.c and NAME.h (into -o DIR)\n"
    "  --aot sm_XY       with --emit c: compile the kernels now for sm_XY and embed\n"
    "                    the CUBINs (no .tile source, no NVRTC at load)\n"
    "  --emit py         a Python wrapper per graph: NAME.py (into -o DIR)\n"
    "  --emit NAME       any registered emitter (see --plugin)\n"
    "  --plugin LIB.so   load emitters from a shared object (tilec_plugin_register)\n"
    "  --emit ir         print the wrapper IR of every graph, memory planned\n"
    "  --sizes R=4096,C=1024\n"
    "                    with --emit ir: also print each graph's peak bytes\n"
    "                    for these sizes (planned, unplanned, live)\n"
    "  -o FILE           write the output to FILE instead of stdout\n"
    "  --max-errors N    stop after N errors (default 20)\n"
    "  --help            show this help\n"
    "  --version         show the version\n"
    "\n"
    "exit status: 0 success, 1 errors in the input, 2 usage error\n";

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tilec: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(run 'tilec --help' for usage)\n");
    return EXIT_USAGE;
}

/* The output of --emit ast/ir/cuda: a stream that remembers the first
 * write error (its errno), so that the failure is reported once, by path. */
typedef struct out_stream {
    FILE *f;
    int err;
} out_stream;

static int out_write(void *user, const char *data, size_t len)
{
    out_stream *s = user;
    if (s->err)
        return -1;
    errno = 0;
    if (fwrite(data, 1, len, s->f) == len)
        return 0;
    s->err = errno ? errno : EIO;
    return -1;
}

/* --emit NAME with an emitter (built in, or from --plugin): every graph of
 * every file into DIR (-o) or to stdout. */
static int emit_with(const char **files, int nfiles, const char *emit, const char *dir, const char *const *plugins,
                     int nplugins, unsigned max_errors, const char *aot)
{
    tilec_ctx *ctx = tilec_ctx_new();
    if (!ctx)
        return EXIT_INPUT;
    tilec_ctx_set_max_errors(ctx, max_errors);
    int status = 0;
    for (int i = 0; i < nplugins && !status; i++)
        if (tilec_load_plugin(ctx, plugins[i]) != TILEC_OK)
            status = EXIT_INPUT;
    if (!status && !tilec_find_emitter(ctx, emit)) {
        const char *names[64];
        size_t n = tilec_emitter_names(ctx, names, 64);
        fprintf(stderr, "tilec: unknown --emit kind '%s' (known: ast, cuda, cubin", emit);
        for (size_t k = 0; k < n; k++)
            fprintf(stderr, ", %s", names[k]);
        fprintf(stderr, ")\n(run 'tilec --help' for usage)\n");
        tilec_ctx_free(ctx);
        return EXIT_USAGE;
    }
    if (!status && dir) {
        struct stat sb;
        if (stat(dir, &sb) != 0 && mkdir(dir, 0777) != 0) {
            fprintf(stderr, "tilec: cannot create %s: %s\n", dir, strerror(errno));
            status = EXIT_INPUT;
        }
    }
    for (int i = 0; i < nfiles && !status; i++) {
        tilec_module *m = NULL;
        if (tilec_parse_file(ctx, files[i], &m) != TILEC_OK) {
            status = EXIT_INPUT;
        } else {
            const char *const keys[] = {"aot"}, *const values[] = {aot};
            tilec_emit_options o = {.dir = dir, .plan = 1, .keys = keys, .values = values, .noptions = aot ? 1 : 0};
            if (tilec_module_emit(ctx, m, emit, &o, tilec_sink_file(stdout)) != TILEC_OK)
                status = EXIT_INPUT;
        }
        tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
        tilec_ctx_clear_diags(ctx);
        tilec_module_free(m);
    }
    tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
    tilec_ctx_free(ctx);
    return status;
}

/* A temporary file gets the mode a new file would: 0666 less the umask,
 * not mkstemp's 0600. */
static void usual_mode(int fd)
{
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
}

/* Write data to dir/name through a temporary file and a rename. */
static int write_atomic(const char *dir, const char *name, const void *data, size_t len)
{
    char path[4096], tmp[4200];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return -1;
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return -1;
    usual_mode(fd);
    FILE *f = fdopen(fd, "wb");
    int bad = !f || fwrite(data, 1, len, f) != len;
    if (f)
        bad |= fclose(f) != 0;
    else
        close(fd);
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

static const char *const arg_names[] = {"ptr", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64",
                                        "f16", "bf16", "f32", "f64", "bool"};

/* --emit cubin: every variant of every kernel of every file, compiled by
 * NVRTC for `arch`, written into dir with its launch metadata. */
static int emit_cubins(const char **files, int nfiles, const char *dir, const char *arch, unsigned max_errors)
{
    if (!dir)
        return usage_error("--emit cubin needs -o DIR%s", "");
    struct stat sb;
    if (stat(dir, &sb) != 0 && mkdir(dir, 0777) != 0) {
        fprintf(stderr, "tilec: cannot create %s: %s\n", dir, strerror(errno));
        return EXIT_INPUT;
    }
    tilec_ctx *ctx = tilec_ctx_new();
    if (!ctx)
        return EXIT_INPUT;
    tilec_ctx_set_max_errors(ctx, max_errors);
    int status = 0;
    for (int i = 0; i < nfiles; i++) {
        tilec_module *m = NULL;
        if (tilec_parse_file(ctx, files[i], &m) != TILEC_OK) {
            status = EXIT_INPUT;
        } else {
            for (size_t ki = 0; ki < tilec_module_kernel_count(m); ki++) {
                const tilec_kernel *k = tilec_module_kernel(m, ki);
                for (uint32_t v = 0; v < tilec_kernel_variant_count(k); v++) {
                    tilec_kernel_code code;
                    void *cubin;
                    size_t size;
                    if (tilec_compile_kernel(ctx, m, k, (int)v, arch, &code, &cubin, &size) != TILEC_OK) {
                        status = EXIT_INPUT;
                        continue;
                    }
                    char name[600], meta[2048];
                    int n = snprintf(meta, sizeof meta, "kernel %s\narch %s\nthreads %u\nshared_bytes %u\nparams",
                                     code.name, arch, code.threads, code.smem_bytes);
                    for (uint32_t p = 0; p < code.nparams && n < (int)sizeof meta - 16; p++)
                        n += snprintf(meta + n, sizeof meta - (size_t)n, " %s", arg_names[code.params[p]]);
                    n += snprintf(meta + n, sizeof meta - (size_t)n, "\n");
                    snprintf(name, sizeof name, "%s.cubin", code.name);
                    int bad = write_atomic(dir, name, cubin, size);
                    snprintf(name, sizeof name, "%s.meta", code.name);
                    bad |= write_atomic(dir, name, meta, (size_t)n);
                    if (bad) {
                        fprintf(stderr, "tilec: cannot write %s/%s: %s\n", dir, name, strerror(errno));
                        status = EXIT_INPUT;
                    }
                    free(cubin);
                    tilec_kernel_code_free(&code);
                }
            }
        }
        tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
        tilec_ctx_clear_diags(ctx);
        tilec_module_free(m);
    }
    tilec_ctx_free(ctx);
    return status;
}

int main(int argc, char **argv)
{
    const char *emit = NULL, *out = NULL, *arch = "sm_90", *aot = NULL;
    unsigned max_errors = 0;
    const char *sizes_spec = NULL;
    const char *plugins[16];
    int nplugins = 0;
    tilec_wir_size sizes[64];
    size_t nsizes = 0;
    const char **files = calloc((size_t)argc, sizeof *files);
    int nfiles = 0;
    if (!files)
        return EXIT_INPUT;
    if (argc == 2 && !strcmp(argv[1], "--compile-worker")) {
        free(files); /* a compile worker of a parallel build (not for people) */
        return tilec_compile_worker_main(0, 1);
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            free(files);
            return 0;
        } else if (!strcmp(a, "--version")) {
            printf("tilec %s\n", tilec_version());
            free(files);
            return 0;
        } else if (!strcmp(a, "--check")) {
            emit = emit ? emit : "check";
        } else if (!strcmp(a, "--emit") || !strcmp(a, "-o") || !strcmp(a, "--max-errors") || !strcmp(a, "--arch") ||
                   !strcmp(a, "--sizes") || !strcmp(a, "--plugin") || !strcmp(a, "--aot")) {
            if (i + 1 >= argc) {
                free(files);
                return usage_error("%s needs an argument", a);
            }
            const char *v = argv[++i];
            if (a[1] == 'o')
                out = v;
            else if (!strcmp(a, "--arch"))
                arch = v;
            else if (!strcmp(a, "--aot"))
                aot = v;
            else if (!strcmp(a, "--emit"))
                emit = v;
            else if (!strcmp(a, "--sizes"))
                sizes_spec = v;
            else if (!strcmp(a, "--plugin")) {
                if (nplugins == 16) {
                    free(files);
                    return usage_error("at most 16 --plugin options%s", "");
                }
                plugins[nplugins++] = v;
            }
            else {
                char *end;
                errno = 0;
                unsigned long n = strtoul(v, &end, 10);
                if (errno || *end || n == 0 || n > 100000) {
                    free(files);
                    return usage_error("--max-errors takes a number from 1 to 100000, got '%s'", v);
                }
                max_errors = (unsigned)n;
            }
        } else if (a[0] == '-' && a[1]) {
            free(files);
            return usage_error("unknown option '%s'", a);
        } else {
            files[nfiles++] = a;
        }
    }
    if (!nfiles) {
        free(files);
        return usage_error("no input file%s", "");
    }
    if (!emit)
        emit = "check";
    if (aot && strcmp(emit, "c")) {
        free(files);
        return usage_error("--aot needs --emit c%s", "");
    }
    int builtin_kind = !strcmp(emit, "check") || !strcmp(emit, "ast") || !strcmp(emit, "cuda") ||
                       !strcmp(emit, "layouts") || !strcmp(emit, "cubin") || !strcmp(emit, "ir");
    if (!builtin_kind) {
        int st = emit_with(files, nfiles, emit, out, plugins, nplugins, max_errors, aot);
        free(files);
        return st;
    }
    if (sizes_spec && strcmp(emit, "ir")) {
        free(files);
        return usage_error("--sizes needs --emit ir%s", "");
    }
    if (sizes_spec && tilec_wir_parse_sizes(sizes_spec, sizes, sizeof sizes / sizeof *sizes, &nsizes) != TILEC_OK) {
        free(files);
        return usage_error("--sizes takes NAME=N,NAME=N,... with positive sizes, got '%s'", sizes_spec);
    }
    if (!strcmp(emit, "cubin")) {
        int st = emit_cubins(files, nfiles, out, arch, max_errors);
        free(files);
        return st;
    }
    if (out && !strcmp(emit, "check")) {
        free(files);
        return usage_error("-o needs --emit%s", "");
    }

    tilec_ctx *ctx = tilec_ctx_new();
    if (!ctx) {
        free(files);
        fprintf(stderr, "tilec: out of memory\n");
        return EXIT_INPUT;
    }
    tilec_ctx_set_max_errors(ctx, max_errors);

    /* Output goes to a temporary file renamed into place at the end, so a
     * failed run never leaves a partial file; the file gets the mode a new
     * file would (0666 less the umask), not mkstemp's 0600. An output that
     * exists and is not a regular file (/dev/null, a FIFO, a terminal) is
     * written in place: a rename would replace the device with a file. */
    char *tmp = NULL;
    FILE *o = stdout;
    struct stat ost;
    if (out && stat(out, &ost) == 0 && !S_ISREG(ost.st_mode)) {
        if (S_ISDIR(ost.st_mode) || !(o = fopen(out, "w"))) {
            fprintf(stderr, "tilec: cannot write %s: %s\n", out, S_ISDIR(ost.st_mode) ? strerror(EISDIR) : strerror(errno));
            free(files);
            tilec_ctx_free(ctx);
            return EXIT_INPUT;
        }
    } else if (out) {
        size_t n = strlen(out) + 16;
        tmp = malloc(n);
        int fd = -1;
        if (tmp) {
            snprintf(tmp, n, "%s.XXXXXX", out);
            fd = mkstemp(tmp);
        }
        if (fd >= 0)
            usual_mode(fd);
        if (fd < 0 || !(o = fdopen(fd, "w"))) {
            fprintf(stderr, "tilec: cannot write %s: %s\n", out, strerror(errno));
            if (fd >= 0) {
                close(fd);
                unlink(tmp);
            }
            free(tmp);
            free(files);
            tilec_ctx_free(ctx);
            return EXIT_INPUT;
        }
    }

    int status = 0;
    out_stream os = {o, 0};
    tilec_sink sink = {out_write, &os};
    for (int i = 0; i < nfiles && !os.err; i++) {
        tilec_module *m = NULL;
        tilec_status st = tilec_parse_file(ctx, files[i], &m);
        tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
        tilec_ctx_clear_diags(ctx);
        if (st != TILEC_OK) {
            if (st != TILEC_ERR_INPUT && st != TILEC_ERR_IO)
                fprintf(stderr, "tilec: %s: %s\n", files[i], tilec_status_string(st));
            status = EXIT_INPUT;
            continue;
        }
        if (!strcmp(emit, "ast")) {
            if (nfiles > 1) {
                out_write(&os, "// ", 3);
                out_write(&os, files[i], strlen(files[i]));
                out_write(&os, "\n", 1);
            }
            if (tilec_module_dump_ast(m, sink) != TILEC_OK)
                status = EXIT_INPUT;
        } else if (!strcmp(emit, "ir")) {
            if (tilec_module_emit_ir(ctx, m, 1, sizes, nsizes, sink) != TILEC_OK)
                status = EXIT_INPUT;
            tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
            tilec_ctx_clear_diags(ctx);
        } else if (!strcmp(emit, "cuda") || !strcmp(emit, "layouts")) {
            if ((emit[0] == 'c' ? tilec_module_emit_cuda : tilec_module_emit_layouts)(ctx, m, sink) != TILEC_OK)
                status = EXIT_INPUT;
            tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
            tilec_ctx_clear_diags(ctx);
        }
        tilec_module_free(m);
    }
    /* every failure to write says so once, naming the file and the reason */
    if (!os.err && fflush(o) != 0)
        os.err = errno ? errno : EIO;
    if (os.err) {
        fprintf(stderr, "tilec: cannot write %s: %s\n", out ? out : "the output", strerror(os.err));
        status = EXIT_INPUT;
    }
    if (out) {
        if (fclose(o) != 0 && !os.err) {
            fprintf(stderr, "tilec: cannot write %s: %s\n", out, strerror(errno));
            status = EXIT_INPUT;
        }
        if (tmp && !status && rename(tmp, out) != 0) {
            fprintf(stderr, "tilec: cannot write %s: %s\n", out, strerror(errno));
            status = EXIT_INPUT;
        }
        if (tmp && status)
            unlink(tmp);
        free(tmp);
    }
    free(files);
    tilec_ctx_free(ctx);
    return status;
}
