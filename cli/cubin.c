/* cubin.c: `tilec --emit cubin -o DIR`: every kernel variant of every
 * module compiled as a program build compiles them (the kernel cache first,
 * then NVRTC on -j compile workers kept across the modules) and written
 * into DIR as NAME_vK.cubin and NAME_vK.meta (launch metadata). Progress
 * is the pool's bar on a terminal, one plain line per module otherwise.
 * DIR is checked before anything compiles; the files are written (and DIR
 * made) only once every module compiled (cli/outputs.c): a failed run
 * creates nothing and writes nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tilec/program.h"

/* " ptr f32 i32 list": the kernel's parameters as the .tile file types them (list: a tensor list) */
static int cubin_params(const tilec_kernel *k, char *buf, size_t size)
{
    size_t n = 0;
    for (uint32_t p = 0; k && p < k->nparams && n < size; p++) {
        const tilec_tyexpr *t = &k->params[p].type;
        n += (size_t)snprintf(buf + n, size - n, " %s",
                              t->kind == TILEC_TE_POINTER ? "ptr"
                              : t->kind == TILEC_TE_LIST  ? "list"
                                                          : tilec_dtype_name(t->dtype));
    }
    return n < size ? 0 : -1;
}

typedef struct cubin_out {
    cli_outputs set;
    const tilec_module *m; /* the module being compiled */
    int module;            /* its index in the inputs */
} cubin_out;

static int cubin_one(void *user, const tilec_aot_kernel *k)
{
    cubin_out *co = user;
    char name[600], params[1024], meta[2048];
    if (cubin_params(tilec_module_find_kernel(co->m, k->kernel), params, sizeof params)) {
        cli_error("%s: too many parameters to list", k->name);
        return -1;
    }
    int n = snprintf(meta, sizeof meta, "kernel %s\narch %s\nthreads %u\nshared_bytes %u\nparams%s\n", k->name,
                     co->set.o->arch, k->threads, k->smem_bytes, params);
    snprintf(name, sizeof name, "%s.cubin", k->name);
    if (cli_outputs_add(&co->set, co->module, name, k->image, k->size))
        return -1;
    snprintf(name, sizeof name, "%s.meta", k->name);
    return cli_outputs_add(&co->set, co->module, name, meta, (size_t)n) ? -1 : 0;
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

/* A Redis tier that could not be used (TILEC_CACHE_REDIS malformed, the
 * server unreachable, refused) is said once, after the build: the library
 * only logs it. */
void cli_build_end(cli_build *b)
{
    const char *problem = b->cache ? tilec_cache_remote_problem(b->cache) : "";
    if (*problem)
        fprintf(stderr, "tilec: warning: the kernel cache's Redis tier: %s\n", problem);
    tilec_compile_workers_free(b->workers);
    tilec_cache_close(b->cache);
}

int cli_emit_cubins(tilec_ctx *ctx, const cli_opts *o, tilec_module **mods)
{
    int status = cli_check_dir(o->out);
    if (status)
        return status;
    cli_build b;
    cli_build_begin(o, o->arch, &b);
    cubin_out co = {{.o = o}, NULL, 0};
    for (int i = 0; i < o->nfiles && !status; i++) {
        tilec_program_stats st;
        co.m = mods[i];
        co.module = i;
        size_t before = co.set.n;
        tilec_status r = tilec_program_compile(ctx, mods[i], &b.o, cubin_one, &co, &st);
        cli_flush_diags(ctx);
        if (r == TILEC_OK)
            cubin_report(o, cli_name(o, i), &st);
        else
            status = CLI_EXIT_INPUT;
        if (r == TILEC_OK && co.set.n == before)
            fprintf(stderr, "%s: note: no kernel, so --emit cubin writes nothing for it\n", cli_name(o, i));
    }
    cli_build_end(&b);
    if (!status && !co.set.n)
        status = cli_error("nothing to write: no input has a kernel (--emit cubin writes one CUBIN per variant)");
    if (!status)
        status = cli_outputs_commit(&co.set);
    cli_outputs_free(&co.set);
    return status;
}
