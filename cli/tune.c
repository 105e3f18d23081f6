/* tune.c: `tilec tune FILE --sizes M=4096,N=4096,K=4096 [--sizes ...]`,
 * the multi-kernel's choices made ahead of time: the module built on the
 * device (the kernel cache first), then every kernel with more than one
 * variant launched once per --sizes set through tilec_program_launch_best,
 * which times the variants (or finds the choice already stored) and stores
 * the choice in the cache directory and the Redis tier (runtime/
 * choice_entry.c). A progress bar on a terminal, one line per kernel and
 * shape otherwise. Without a usable GPU it says so in one line and exits 1
 * before anything is opened or written. --choices FILE also writes the
 * choices as lines (tilec/choices.h) for `tilec --emit c --aot ...
 * --choices FILE` to embed: FILE's lines for other keys kept, the file
 * replaced at once when every set is done. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tilec/cache.h"
#include "tilec/choices.h"
#include "tilec/program.h"

enum { TN_MAX_SETS = 32 };

static const char tn_usage[] =
    "usage: tilec tune FILE.tile --sizes NAME=N,... [--sizes ...] [--dir DIR] [--bytes N] [--choices OUT]\n"
    "  times the variants of every kernel with more than one, at each --sizes set (the kernel's\n"
    "  integer parameters by name), on GPU 0, and stores each choice in the kernel cache (DIR,\n"
    "  else the library's directory) and its Redis tier; TILEC_CUDA_DRIVER names the driver.\n"
    "  Each pointer parameter gets a zeroed buffer of N bytes (default: 8 x the product of the\n"
    "  set's two largest sizes). --choices OUT also writes the choices as lines that\n"
    "  `tilec FILE.tile --emit c --aot ARCH --choices OUT` embeds (OUT's lines of other\n"
    "  kernels, shapes or devices are kept).\n";

static int tn_usage_error(const char *what, const char *arg) { return cli_sub_usage_error("tune", tn_usage, what, arg); }

typedef struct tn_set {
    const char *spec;
    tilec_wir_size sizes[CLI_MAX_SIZES];
    size_t n;
} tn_set;

typedef struct tn_run {
    tilec_rt *rt;
    tilec_program *p;
    uint64_t bytes; /* --bytes, or 0 */
    int bar;        /* stderr is a terminal */
    int done, total;
    const char *choices;   /* --choices OUT, or NULL */
    char *old;             /* OUT's text before this run (NULL: none) */
    char *lines;           /* this run's choice lines */
    size_t nlines;         /* their bytes */
    tilec_rt_device_props dev;
} tn_run;

/* The size named name in the set, or -1. */
static int64_t tn_size(const tn_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->sizes[i].name, name))
            return s->sizes[i].value;
    return -1;
}

static uint64_t tn_default_bytes(const tn_set *s)
{
    uint64_t a = 1, b = 1;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t v = (uint64_t)s->sizes[i].value;
        if (v > a) {
            b = a;
            a = v;
        } else if (v > b) {
            b = v;
        }
    }
    uint64_t n = a * b * 8;
    return n < 4096 ? 4096 : n;
}

static void tn_progress(tn_run *r, const char *kernel, const tn_set *s)
{
    if (!r->bar)
        return;
    int width = 30, fill = r->total ? r->done * width / r->total : width;
    fprintf(stderr, "\r\033[Ktilec tune [%.*s%*s] %d/%d %s %s", fill, "##############################", width - fill,
            "", r->done, r->total, kernel, s ? s->spec : "");
    if (r->done == r->total)
        fputc('\n', stderr);
    fflush(stderr);
}

/* Launch kernel k once at sizes s: the chooser times it or finds its
 * stored choice. 0, or CLI_EXIT_INPUT with the error said. */
static int tn_one(tn_run *r, const tilec_kernel *k, const tn_set *s)
{
    tilec_rt_arg args[64];
    uint64_t bufs[64] = {0};
    uint64_t bytes = r->bytes ? r->bytes : tn_default_bytes(s);
    int status = 0;
    size_t np = tilec_kernel_param_count(k);
    for (size_t i = 0; i < np && !status; i++) {
        const char *name;
        int ptr;
        tilec_dtype dt;
        tilec_kernel_param_info(k, i, &name, &ptr, &dt);
        int64_t v = tn_size(s, name);
        if (ptr) {
            if (tilec_rt_malloc(r->rt, bytes, &bufs[i]) != TILEC_RT_OK ||
                tilec_rt_memset_d32(r->rt, bufs[i], 0, bytes / 4) != TILEC_RT_OK)
                status = cli_error("tune: %s: no %llu bytes of device memory for parameter %s: %s", k->name,
                                   (unsigned long long)bytes, name, tilec_rt_last_error(r->rt));
            args[i].ptr = bufs[i];
        } else if (dt == TILEC_DT_F32) {
            args[i].f32 = 1.0f;
        } else if (dt == TILEC_DT_F64) {
            args[i].f64 = 1.0;
        } else if (v < 0) {
            status = cli_error("tune: kernel %s's parameter %s has no size in --sizes %s", k->name, name, s->spec);
        } else if (dt == TILEC_DT_I32 || dt == TILEC_DT_U32) {
            args[i].i64 = 0;
            if (v > INT32_MAX)
                status = cli_error("tune: --sizes %s: %s=%lld does not fit kernel %s's 32-bit parameter", s->spec,
                                   name, (long long)v, k->name);
            args[i].i32 = (int32_t)v;
        } else {
            args[i].i64 = v;
        }
    }
    tilec_program_stats before, after;
    tilec_program_get_stats(r->p, &before);
    int chosen = -1;
    if (!status && (tilec_program_launch_best(r->p, k->name, args, (uint32_t)np, NULL, &chosen) != TILEC_RT_OK ||
                    tilec_rt_synchronize(r->rt) != TILEC_RT_OK))
        status = cli_error("tune: kernel %s at %s: %s", k->name, s->spec, tilec_rt_last_error(r->rt));
    for (size_t i = 0; i < np; i++)
        if (bufs[i])
            tilec_rt_free(r->rt, bufs[i]);
    if (status)
        return status;
    tilec_program_get_stats(r->p, &after);
    if (r->choices) {
        char line[4096];
        int n = tilec_choice_line(k, r->dev.arch, r->dev.name, s->sizes, s->n, chosen, line, sizeof line);
        char *more = n < 0 ? NULL : realloc(r->lines, r->nlines + (size_t)n + 1);
        if (!more)
            return cli_error("tune: --choices %s: no line for kernel %s at %s (device \"%s\", %s)", r->choices,
                             k->name, s->spec, r->dev.name, n < 0 ? "a name a line cannot hold" : "out of memory");
        memcpy(more + r->nlines, line, (size_t)n + 1);
        r->lines = more;
        r->nlines += (size_t)n;
    }
    r->done++;
    if (r->bar)
        tn_progress(r, k->name, s);
    else
        printf("%s %s: variant %d of %u (%s)\n", k->name, s->spec, chosen, tilec_kernel_variant_count(k),
               after.choices_timed > before.choices_timed ? "timed, stored" : "choice from cache, not timed");
    return 0;
}

/* Where a choice line's key (kernel, target, device, shape) ends: at " -> ". */
static size_t tn_key_len(const char *line, size_t len)
{
    for (size_t i = 0; i + 4 <= len; i++)
        if (!memcmp(line + i, " -> ", 4))
            return i;
    return 0;
}

/* OUT's text as it is (none: r->old NULL), every line a comment, empty
 * or a choice line: 0, or CLI_EXIT_INPUT with the error said. */
static int tn_read_old(tn_run *r)
{
    FILE *f = fopen(r->choices, "r");
    if (!f)
        return errno == ENOENT ? 0 : cli_error("tune: --choices %s: %s; nothing timed", r->choices, strerror(errno));
    size_t n = 0, cap = 0;
    int c, ln = 1, bad = 0;
    size_t start = 0;
    while ((c = fgetc(f)) != EOF) {
        if (n + 2 > cap) {
            char *more = realloc(r->old, cap = cap ? 2 * cap : 4096);
            if (!more) {
                fclose(f);
                return cli_error("out of memory");
            }
            r->old = more;
        }
        r->old[n++] = (char)c;
        if (!c && !bad)
            bad = ln; /* a NUL byte: no text file */
        if (c == '\n') {
            const char *l = r->old + start;
            size_t len = n - 1 - start;
            if (len && l[0] != '#' && !tn_key_len(l, len) && !bad)
                bad = ln;
            start = n;
            ln++;
        }
    }
    int err = ferror(f);
    fclose(f);
    if (r->old)
        r->old[n] = 0;
    if (err)
        return cli_error("tune: --choices %s: cannot read it; nothing timed", r->choices);
    if (n > start)
        return cli_error("tune: --choices %s: its last line has no newline (not a file tilec tune wrote); nothing "
                         "timed", r->choices);
    if (bad)
        return cli_error("tune: --choices %s:%d: not a choice line (KERNEL TARGET \"DEVICE\" SHAPE -> variant V of "
                         "N {HINTS}); nothing timed",
                         r->choices, bad);
    return 0;
}

/* OUT: a header, its old lines of keys this run did not time, this run's
 * lines; written beside it and renamed over it. */
static int tn_write_choices(tn_run *r)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", r->choices, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return cli_error("tune: --choices %s: %s (the choices are stored in the cache)", r->choices, strerror(errno));
    fputs("# tilec tune choices (docs/tuning.md): KERNEL TARGET \"DEVICE\" SHAPE -> variant V of N {HINTS}\n", f);
    for (const char *l = r->old; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t len = (size_t)(end - l) + 1, key = tn_key_len(l, len);
        int again = 0;
        for (const char *m = r->lines; key && m && *m && !again; m = strchr(m, '\n') + 1)
            again = tn_key_len(m, strlen(m)) == key && !memcmp(m, l, key) && !memcmp(m + key, " -> ", 4);
        if (l[0] != '#' && key && !again)
            fwrite(l, 1, len, f);
        l += len;
    }
    if (r->lines)
        fputs(r->lines, f);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, r->choices)) {
        int e = errno;
        unlink(tmp);
        return cli_error("tune: --choices %s: cannot write it: %s (the choices are stored in the cache)", r->choices,
                         strerror(e ? e : EIO));
    }
    return 0;
}

/* Every integer parameter of every kernel to time has a size in every set,
 * checked before anything is timed or stored. */
static int tn_check(const tilec_module *m, const tn_set *sets, int nsets)
{
    for (size_t i = 0; i < tilec_module_kernel_count(m); i++) {
        const tilec_kernel *k = tilec_module_kernel(m, i);
        for (size_t a = 0; tilec_kernel_variant_count(k) > 1 && a < tilec_kernel_param_count(k); a++) {
            const char *name;
            int ptr;
            tilec_dtype dt;
            tilec_kernel_param_info(k, a, &name, &ptr, &dt);
            for (int s = 0; !ptr && dt != TILEC_DT_F32 && dt != TILEC_DT_F64 && s < nsets; s++)
                if (tn_size(&sets[s], name) < 0)
                    return cli_error("tune: kernel %s's parameter %s has no size in --sizes %s; nothing timed",
                                     k->name, name, sets[s].spec);
        }
    }
    return 0;
}

int cli_tune(int argc, char **argv)
{
    const char *file = NULL, *dir = NULL;
    tn_set sets[TN_MAX_SETS];
    int nsets = 0, status = 0;
    tn_run r = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--sizes") && more) {
            if (nsets == TN_MAX_SETS)
                return tn_usage_error("more than 32 --sizes", NULL);
            tn_set *s = &sets[nsets++];
            s->spec = argv[++i];
            if (tilec_wir_parse_sizes(s->spec, s->sizes, CLI_MAX_SIZES, &s->n) != TILEC_OK)
                return tn_usage_error("--sizes takes NAME=N,NAME=N,... with positive sizes", s->spec);
        } else if (!strcmp(a, "--choices") && more) {
            r.choices = argv[++i];
        } else if (!strcmp(a, "--dir") && more) {
            dir = argv[++i];
        } else if (!strcmp(a, "--bytes") && more) {
            char *end;
            r.bytes = cli_is_digits(argv[i + 1]) ? strtoull(argv[i + 1], &end, 10) : 0;
            if (!r.bytes || *end)
                return tn_usage_error("--bytes takes a positive number of bytes", argv[i + 1]);
            i++;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(tn_usage, stdout);
            return 0;
        } else if (a[0] == '-' || file) {
            return tn_usage_error(file && a[0] != '-' ? "one FILE" : "unknown option or missing value", a);
        } else {
            file = a;
        }
    }
    if (!file)
        return tn_usage_error("no FILE", NULL);
    if (!nsets)
        return tn_usage_error("no --sizes", NULL);
    const char *off = getenv("TILEC_DISABLE_MULTI_KERNEL_CACHE");
    if ((off && !strcmp(off, "1")) || getenv("TILEC_MULTI_KERNEL"))
        return tn_usage_error("TILEC_DISABLE_MULTI_KERNEL_CACHE=1 or TILEC_MULTI_KERNEL is set: no choice would be "
                              "stored",
                              NULL);
    if (r.choices && (status = tn_read_old(&r))) {
        free(r.old);
        return status;
    }
    const char *drv = getenv("TILEC_CUDA_DRIVER");
    if (tilec_rt_open_driver(drv && *drv ? drv : NULL, 0, &r.rt) != TILEC_RT_OK) {
        int st = cli_error("tune: no GPU: %s; nothing timed, nothing written", tilec_rt_last_error(r.rt));
        tilec_rt_close(r.rt);
        free(r.old);
        return st;
    }
    if (tilec_rt_device_info(r.rt, &r.dev) != TILEC_RT_OK)
        status = cli_error("tune: the device: %s; nothing timed", tilec_rt_last_error(r.rt));
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_cache *cache = NULL;
    if (!status && !ctx)
        status = cli_error("out of memory");
    else if (!status && tilec_parse_file(ctx, file, &m) != TILEC_OK)
        status = CLI_EXIT_INPUT;
    else if (!status)
        status = tn_check(m, sets, nsets);
    if (!status && (tilec_cache_open(dir, &cache) != TILEC_RT_OK || !tilec_cache_dir(cache)))
        status = cli_error("tune: no cache directory%s%s: %s", dir ? " " : "", dir ? dir : "",
                           cache ? tilec_cache_last_error(cache) : "out of memory");
    if (!status) {
        tilec_build_options o = {.cache = cache, .progress = NULL};
        if (tilec_program_build(ctx, r.rt, m, &o, &r.p) != TILEC_OK)
            status = CLI_EXIT_INPUT;
    }
    if (ctx)
        cli_flush_diags(ctx);
    size_t nk = m ? tilec_module_kernel_count(m) : 0;
    for (size_t i = 0; !status && i < nk; i++)
        r.total += tilec_kernel_variant_count(tilec_module_kernel(m, i)) > 1 ? nsets : 0;
    if (!status && !r.total)
        fprintf(stderr, "tilec: tune: %s: no kernel has more than one variant: nothing to time\n", file);
    r.bar = isatty(fileno(stderr));
    for (size_t i = 0; !status && i < nk; i++) {
        const tilec_kernel *k = tilec_module_kernel(m, i);
        for (int s = 0; !status && s < nsets && tilec_kernel_variant_count(k) > 1; s++) {
            tn_progress(&r, k->name, &sets[s]);
            status = tn_one(&r, k, &sets[s]);
        }
    }
    if (r.bar && status && r.done < r.total)
        fputc('\n', stderr);
    if (!status && r.choices)
        status = tn_write_choices(&r);
    free(r.old);
    free(r.lines);
    const char *problem = cache ? tilec_cache_remote_problem(cache) : "";
    if (*problem)
        fprintf(stderr, "tilec: warning: the kernel cache's Redis tier: %s\n", problem);
    tilec_program_free(r.p);
    tilec_cache_close(cache);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    tilec_rt_close(r.rt);
    return status;
}
