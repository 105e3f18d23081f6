/* cubin.c: `tilec --emit cubin -o DIR`: every kernel variant of every
 * module compiled as a program build compiles them (the kernel cache first,
 * then NVRTC on -j compile workers kept across the modules) and written
 * into DIR as NAME_vK.cubin and NAME_vK.meta (launch metadata). Progress
 * is the pool's bar on a terminal, one plain line per module otherwise.
 * DIR is made only once a module compiled: a failed compile creates
 * nothing and writes nothing of that module. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tilec/program.h"

/* Write data to dir/name through a temporary file and a rename. */
static int cubin_write(const char *dir, const char *name, const void *data, size_t len)
{
    char path[4096], tmp[4200];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return -1;
    cli_usual_mode(fd);
    FILE *f = fdopen(fd, "wb");
    int bad = !f || fwrite(data, 1, len, f) != len;
    if (f)
        bad |= fclose(f) != 0;
    else
        close(fd);
    if (bad || rename(tmp, path) != 0) {
        int err = errno;
        unlink(tmp);
        errno = err;
        return -1;
    }
    return 0;
}

/* " ptr f32 i32": the kernel's parameters as the .tile file types them */
static int cubin_params(const tilec_kernel *k, char *buf, size_t size)
{
    size_t n = 0;
    for (uint32_t p = 0; k && p < k->nparams && n < size; p++) {
        const tilec_tyexpr *t = &k->params[p].type;
        n += (size_t)snprintf(buf + n, size - n, " %s",
                              t->kind == TILEC_TE_POINTER ? "ptr" : tilec_dtype_name(t->dtype));
    }
    return n < size ? 0 : -1;
}

typedef struct cubin_out {
    const cli_opts *o;
    const tilec_module *m; /* the module being written */
    int made;              /* the directory was created by this run */
    int ready;
} cubin_out;

static int cubin_one(void *user, const tilec_aot_kernel *k)
{
    cubin_out *co = user;
    const char *dir = co->o->out;
    if (!co->ready && cli_make_dir(dir, &co->made))
        return -1;
    co->ready = 1;
    char name[600], params[1024], meta[2048];
    if (cubin_params(tilec_module_find_kernel(co->m, k->kernel), params, sizeof params)) {
        fprintf(stderr, "tilec: %s: too many parameters to list\n", k->name);
        return -1;
    }
    int n = snprintf(meta, sizeof meta, "kernel %s\narch %s\nthreads %u\nshared_bytes %u\nparams%s\n", k->name,
                     co->o->arch, k->threads, k->smem_bytes, params);
    snprintf(name, sizeof name, "%s.cubin", k->name);
    int bad = cubin_write(dir, name, k->image, k->size);
    if (!bad) {
        snprintf(name, sizeof name, "%s.meta", k->name);
        bad = cubin_write(dir, name, meta, (size_t)n);
    }
    if (bad)
        fprintf(stderr, "tilec: cannot write %s/%s: %s\n", dir, name, strerror(errno));
    return bad;
}

/* The plain progress line of a module, where no bar is drawn. */
static void cubin_report(const cli_opts *o, const char *file, const tilec_program_stats *s)
{
    if (o->quiet || isatty(fileno(stderr)))
        return;
    if (s->cache_hit)
        fprintf(stderr, "tilec: %s: %u kernel variant%s for %s from the cache\n", file, s->kernels,
                s->kernels == 1 ? "" : "s", o->arch);
    else
        fprintf(stderr, "tilec: %s: %u kernel variant%s compiled for %s in %.2f s\n", file, s->kernels,
                s->kernels == 1 ? "" : "s", o->arch, (s->lower_ms + s->compile_ms) / 1e3);
}

void cli_build_begin(const cli_opts *o, const char *arch, cli_build *b)
{
    b->cache = NULL;
    if (!o->no_cache && tilec_cache_open(NULL, &b->cache) != TILEC_RT_OK)
        b->cache = NULL; /* no memory for it: compile every kernel */
    /* -j, else the pool's default ($TILEC_COMPILE_THREADS or the cores) */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int jobs = o->jobs ? o->jobs : cores > 0 ? (int)cores : 1;
    b->workers = jobs > 1 ? tilec_compile_workers_new((unsigned)jobs) : NULL;
    b->o = (tilec_build_options){arch, o->jobs, b->cache, o->quiet ? NULL : stderr, b->workers};
}

void cli_build_end(cli_build *b)
{
    tilec_compile_workers_free(b->workers);
    tilec_cache_close(b->cache);
}

int cli_emit_cubins(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods)
{
    cli_build b;
    cli_build_begin(o, o->arch, &b);
    cubin_out co = {o, NULL, 0, 0};
    int status = 0;
    for (int i = 0; i < o->nfiles && !status; i++) {
        tilec_program_stats st;
        co.m = mods[i];
        tilec_status r = tilec_program_compile(ctx, mods[i], &b.o, cubin_one, &co, &st);
        cli_flush_diags(ctx);
        if (r == TILEC_OK && !co.ready) /* a module without kernels: the directory still */
            r = cli_make_dir(o->out, &co.made) ? TILEC_ERR_IO : TILEC_OK;
        co.ready |= r == TILEC_OK;
        if (r == TILEC_OK)
            cubin_report(o, o->files[i], &st);
        else
            status = CLI_EXIT_INPUT;
    }
    if (status && co.made)
        rmdir(o->out); /* only when nothing was written into it */
    cli_build_end(&b);
    return status;
}
