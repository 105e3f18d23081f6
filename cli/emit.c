/* emit.c: what the command writes for --emit ast, cuda and ir (one stream:
 * standard output, or -o FILE written all or nothing, never over an input)
 * and for an emitter (c, py, a plugin's: files in -o DIR, written as one
 * checked set once every module succeeded: cli/outputs.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tilec/emitter.h"
#include "tilec/lower.h"

/* Each output of one module's emit: kept for the commit, or, with no -o,
 * for standard output once every module succeeded. */
typedef struct emit_to {
    cli_outputs set;
    int module;
} emit_to;

static int keep(void *user, const char *file, const char *data, size_t len)
{
    emit_to *t = user;
    return cli_outputs_add(&t->set, t->module, file, data, len) ? -1 : 0;
}

int cli_emit_with(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods)
{
    int status = o->out ? cli_check_dir(o->out) : 0;
    if (status)
        return status;
    const char *const keys[] = {"aot", "choices"}, *const values[] = {o->aot, o->choices};
    cli_build b = {0};
    if (o->aot)
        cli_build_begin(o, o->aot, &b);
    tilec_emit_options eo = {
        .plan = 1, .keys = keys, .values = values, .noptions = o->aot ? (o->choices ? 2 : 1) : 0, .build = o->aot ? &b.o : NULL};
    emit_to t = {{.o = o}, 0};
    for (int i = 0; i < o->nfiles && !status; i++) {
        size_t before = t.set.n;
        t.module = i;
        if (tilec_module_emit_outputs(ctx, mods[i], o->emit, &eo, keep, &t) != TILEC_OK)
            status = CLI_EXIT_INPUT;
        cli_flush_diags(ctx);
        if (!status && t.set.n == before)
            fprintf(stderr, "%s: note: %s, so --emit %s writes nothing for it\n", cli_name(o, i),
                    tilec_module_graph_count(mods[i]) ? "its emitter wrote no file" : "no graph", o->emit);
    }
    if (o->aot)
        cli_build_end(&b);
    if (!status && !t.set.n)
        status = cli_error("nothing to write: no input has a graph (--emit %s writes a wrapper per graph)", o->emit);
    if (!status && o->out)
        status = cli_outputs_commit(&t.set);
    for (size_t i = 0; !status && !o->out && i < t.set.n; i++)
        if (fwrite(t.set.v[i].data, 1, t.set.v[i].len, stdout) != t.set.v[i].len)
            status = cli_error("cannot write the output: %s", strerror(errno));
    cli_outputs_free(&t.set);
    return status;
}

/* The stream: a FILE that remembers the first write error (its errno), so
 * that a failure is reported once, by path. */
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

/* Where -o FILE goes: a temporary file beside it, renamed into place at the
 * end, so a failed run never leaves a partial file; it gets the mode a new
 * file would (0666 less the umask), not mkstemp's 0600. An output that
 * exists and is not a regular file (/dev/null, a FIFO, a terminal) is
 * written in place: a rename would replace the device with a file. */
typedef struct out_file {
    const char *path;
    char *tmp; /* NULL: written in place (or stdout) */
    FILE *f;
} out_file;

static int out_open(out_file *of, const char *path)
{
    *of = (out_file){path, NULL, stdout};
    struct stat st;
    if (!path)
        return 0;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (!S_ISDIR(st.st_mode) && (of->f = fopen(path, "w")))
            return 0;
        cli_error("cannot write %s: %s", path, strerror(S_ISDIR(st.st_mode) ? EISDIR : errno));
        return CLI_EXIT_INPUT;
    }
    size_t n = strlen(path) + 16;
    int fd = -1;
    if ((of->tmp = malloc(n))) {
        snprintf(of->tmp, n, "%s.XXXXXX", path);
        fd = mkstemp(of->tmp);
    }
    if (fd >= 0)
        cli_usual_mode(fd);
    if (fd >= 0 && (of->f = fdopen(fd, "w")))
        return 0;
    cli_error("cannot write %s: %s", path, strerror(errno));
    if (fd >= 0) {
        close(fd);
        unlink(of->tmp);
    }
    free(of->tmp);
    return CLI_EXIT_INPUT;
}

/* Flush and close; the temporary renamed into place when all went well,
 * else removed. Every failure to write is said once, with the path. */
static int out_close(out_file *of, out_stream *os, int status)
{
    const char *name = of->path ? of->path : "the output";
    if (!os->err && fflush(of->f) != 0)
        os->err = errno ? errno : EIO;
    if (os->err) {
        cli_error("cannot write %s: %s", name, strerror(os->err));
        status = CLI_EXIT_INPUT;
    }
    if (!of->path)
        return status;
    if (fclose(of->f) != 0 && !os->err) {
        cli_error("cannot write %s: %s", name, strerror(errno));
        status = CLI_EXIT_INPUT;
    }
    if (of->tmp && !status && rename(of->tmp, of->path) != 0) {
        cli_error("cannot write %s: %s", name, strerror(errno));
        status = CLI_EXIT_INPUT;
    }
    if (of->tmp && status)
        unlink(of->tmp);
    free(of->tmp);
    return status;
}

static tilec_status emit_one(tilec_ctx *ctx, const cli_opts *o, const tilec_module *m, const char *file, out_stream *os)
{
    tilec_sink sink = {out_write, os};
    if (!strcmp(o->emit, "ir"))
        return tilec_module_emit_ir(ctx, m, 1, o->sizes, o->nsizes, sink);
    if (!strcmp(o->emit, "layouts"))
        return tilec_module_emit_layouts(ctx, m, sink);
    if (!strcmp(o->emit, "tune"))
        return tilec_module_emit_tune(m, sink);
    if (o->nfiles > 1) { /* ast: each module under its file's name */
        out_write(os, "// ", 3);
        out_write(os, file, strlen(file));
        out_write(os, "\n", 1);
    }
    return tilec_module_dump_ast(m, sink);
}

int cli_emit_stream(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods)
{
    out_file of;
    int status = cli_refuse_input(o, o->out);
    if (!status)
        status = out_open(&of, o->out);
    if (status)
        return status;
    out_stream os = {of.f, 0};
    if (!strcmp(o->emit, "cuda")) { /* one translation unit: one prelude, every module's kernels */
        if (tilec_modules_emit_cuda(ctx, (const tilec_module *const *)mods, (size_t)o->nfiles,
                                    (tilec_sink){out_write, &os}) != TILEC_OK)
            status = CLI_EXIT_INPUT;
        cli_flush_diags(ctx);
    }
    for (int i = 0; i < o->nfiles && !os.err && strcmp(o->emit, "cuda"); i++) {
        if (emit_one(ctx, o, mods[i], cli_name(o, i), &os) != TILEC_OK)
            status = CLI_EXIT_INPUT;
        cli_flush_diags(ctx);
    }
    return out_close(&of, &os, status);
}
