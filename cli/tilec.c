/* tilec.c: the `tilec` command, a thin client of the library:
 * parse + check each file, then write what --emit asks for. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tilec/lower.h"
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

static int buf_write(void *user, const char *data, size_t len)
{
    FILE *f = user;
    return fwrite(data, 1, len, f) == len ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *emit = NULL, *out = NULL;
    unsigned max_errors = 0;
    const char **files = calloc((size_t)argc, sizeof *files);
    int nfiles = 0;
    if (!files)
        return EXIT_INPUT;
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
        } else if (!strcmp(a, "--emit") || !strcmp(a, "-o") || !strcmp(a, "--max-errors")) {
            if (i + 1 >= argc) {
                free(files);
                return usage_error("%s needs an argument", a);
            }
            const char *v = argv[++i];
            if (a[1] == 'o')
                out = v;
            else if (!strcmp(a, "--emit"))
                emit = v;
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
    if (strcmp(emit, "check") && strcmp(emit, "ast") && strcmp(emit, "cuda")) {
        free(files);
        return usage_error("unknown --emit kind '%s' (known: ast, cuda)", emit);
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
     * failed run never leaves a partial file. */
    char *tmp = NULL;
    FILE *o = stdout;
    if (out) {
        size_t n = strlen(out) + 16;
        tmp = malloc(n);
        int fd = -1;
        if (tmp) {
            snprintf(tmp, n, "%s.XXXXXX", out);
            fd = mkstemp(tmp);
        }
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
    for (int i = 0; i < nfiles; i++) {
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
            if (nfiles > 1)
                fprintf(o, "// %s\n", files[i]);
            tilec_sink sink = {buf_write, o};
            if (tilec_module_dump_ast(m, sink) != TILEC_OK)
                status = EXIT_INPUT;
        } else if (!strcmp(emit, "cuda")) {
            tilec_sink sink = {buf_write, o};
            if (tilec_module_emit_cuda(ctx, m, sink) != TILEC_OK)
                status = EXIT_INPUT;
            tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
            tilec_ctx_clear_diags(ctx);
        }
        tilec_module_free(m);
    }
    if (out) {
        int bad = fclose(o) != 0;
        if (bad)
            fprintf(stderr, "tilec: cannot write %s: %s\n", out, strerror(errno));
        if (status || bad || rename(tmp, out) != 0) {
            if (!status && !bad)
                fprintf(stderr, "tilec: cannot write %s: %s\n", out, strerror(errno));
            unlink(tmp);
            status = EXIT_INPUT;
        }
        free(tmp);
    } else if (fflush(stdout) != 0) {
        fprintf(stderr, "tilec: cannot write the output: %s\n", strerror(errno));
        status = EXIT_INPUT;
    }
    free(files);
    tilec_ctx_free(ctx);
    return status;
}
