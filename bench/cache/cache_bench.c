/* cache_bench.c: the kernel cache's benchmark (bench/cache/run.sh runs it).
 *   cache_bench MODULE.tile WORKDIR [--gpu] [--rounds N] [--lookups N]
 * Builds MODULE (rt NULL and sm_90 without --gpu: compile only; with
 * --gpu, device 0, its arch, every CUBIN loaded) through caches under
 * WORKDIR and prints, one "name value unit" line each:
 *   cold_ms          a build with empty tiers (NVRTC compiles everything)
 *   warm_local_ms    a fresh process's build from the local directory
 *   warm_remote_ms   the same with an empty directory, from Redis
 *                    (only when TILEC_CACHE_REDIS is set)
 *   key_us           the key of the module's lowered variants
 *   local_get_us     one tilec_cache_get answered by the file
 *   memory_get_us    one tilec_cache_get answered by memory
 *   remote_get_us    one tilec_cache_get answered by Redis (empty directory)
 *   first_open_ms    the first tilec_cache_open of a new directory (it
 *                    makes the counters and the sweep marker; the "empty
 *                    directory" builds and lookups above come after one)
 * Times are medians over the rounds; a "fresh process" is a fresh cache
 * handle (nothing in memory) in this process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "tilec/lower.h"
#include "tilec/program.h"

typedef struct bench {
    const char *tile, *work;
    tilec_rt *rt;
    int rounds, lookups;
    char *redis; /* TILEC_CACHE_REDIS, set only while the remote tier is meant */
    unsigned ndirs;
    char key[65];
    uint32_t kernels;
} bench;

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A new empty directory under the work directory. */
static void fresh_dir(bench *b, char *out, size_t size)
{
    snprintf(out, size, "%s/d%u", b->work, b->ndirs++);
    mkdir(out, 0700);
}

static void remote(bench *b, int on)
{
    if (on && b->redis)
        setenv("TILEC_CACHE_REDIS", b->redis, 1);
    else
        unsetenv("TILEC_CACHE_REDIS");
}

/* A new empty directory that a cache has used once (its counters and
 * sweep marker made); the time of that first open in *first_ms (may be
 * NULL). An "empty local tier" is such a directory. */
static void first_use_timed(bench *b, char *out, size_t size, double *first_ms)
{
    fresh_dir(b, out, size);
    double t0 = now_us();
    tilec_cache *c;
    if (tilec_cache_open(out, &c) != TILEC_RT_OK)
        exit(1);
    tilec_cache_close(c);
    if (first_ms)
        *first_ms = (now_us() - t0) / 1e3;
}

static void first_use(bench *b, char *out, size_t size) { first_use_timed(b, out, size, NULL); }

/* One build through a cache on dir; its wall time in ms, or -1. */
static double build_ms(bench *b, const char *dir, tilec_program_stats *st)
{
    double t0 = now_us();
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_cache *c = NULL;
    tilec_program *p = NULL;
    tilec_status s = tilec_parse_file(ctx, b->tile, &m);
    if (s == TILEC_OK && tilec_cache_open(dir, &c) != TILEC_RT_OK)
        s = TILEC_ERR_NOMEM;
    tilec_build_options o = {.arch = b->rt ? NULL : "sm_90", .cache = c};
    if (s == TILEC_OK)
        s = tilec_program_build(ctx, b->rt, m, &o, &p);
    if (s == TILEC_OK && st)
        tilec_program_get_stats(p, st);
    if (s != TILEC_OK)
        tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
    tilec_program_free(p);
    tilec_cache_close(c);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    return s == TILEC_OK ? (now_us() - t0) / 1e3 : -1;
}

/* The median of `rounds` builds, each from a fresh directory (fresh) or
 * the same one; every build must compile `want_compiles` kernels. */
static double builds(bench *b, const char *same_dir, int want_compiles, int rounds, const char *what)
{
    double *t = calloc((size_t)rounds, sizeof *t);
    for (int i = 0; i < rounds; i++) {
        char dir[600];
        if (same_dir)
            snprintf(dir, sizeof dir, "%s", same_dir);
        else
            first_use(b, dir, sizeof dir);
        tilec_program_stats st;
        t[i] = build_ms(b, dir, &st);
        if (t[i] < 0 || (want_compiles ? st.nvrtc_compiles == 0 : st.nvrtc_compiles != 0)) {
            fprintf(stderr, "cache_bench: %s: build %d %s (%u compiles)\n", what, i, t[i] < 0 ? "failed" : "was not",
                    st.nvrtc_compiles);
            exit(1);
        }
        snprintf(b->key, sizeof b->key, "%s", st.key);
        b->kernels = st.kernels;
    }
    double m = median(t, rounds);
    free(t);
    return m;
}

/* The median time of tilec_cache_get on a fresh handle over dir (a file
 * or remote hit), or of a second get on it (memory). */
static double gets_us(bench *b, int fresh_dirs, const char *dir, int memory)
{
    double *t = calloc((size_t)b->lookups, sizeof *t);
    for (int i = 0; i < b->lookups; i++) {
        char d[600];
        if (fresh_dirs)
            first_use(b, d, sizeof d);
        else
            snprintf(d, sizeof d, "%s", dir);
        tilec_cache *c;
        tilec_bundle *bd = NULL;
        if (tilec_cache_open(d, &c) != TILEC_RT_OK)
            exit(1);
        if (memory && tilec_cache_get(c, b->key, &bd) == TILEC_RT_OK)
            tilec_bundle_free(bd);
        double t0 = now_us();
        tilec_rt_status st = tilec_cache_get(c, b->key, &bd);
        t[i] = now_us() - t0;
        tilec_bundle_free(bd);
        if (st != TILEC_RT_OK) {
            fprintf(stderr, "cache_bench: a lookup missed: %s\n", tilec_cache_last_error(c));
            exit(1);
        }
        tilec_cache_close(c);
    }
    double m = median(t, b->lookups);
    free(t);
    return m;
}

/* The median time to key the module's lowered variants. */
static double key_us(bench *b)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    if (tilec_parse_file(ctx, b->tile, &m) != TILEC_OK)
        exit(1);
    size_t n = 0;
    tilec_kernel_code codes[256];
    for (uint32_t i = 0; i < tilec_module_kernel_count(m); i++) {
        const tilec_kernel *k = tilec_module_kernel(m, i);
        for (uint32_t v = 0; v < tilec_kernel_variant_count(k) && n < 256; v++)
            if (tilec_lower_kernel(ctx, m, k, (int)v, &codes[n]) == TILEC_OK)
                n++;
    }
    double *t = calloc((size_t)b->lookups, sizeof *t);
    tilec_rt_param_kind kinds[64] = {0};
    for (int r = 0; r < b->lookups; r++) {
        double t0 = now_us();
        tilec_cache_keyer *k;
        tilec_cache_keyer_new(NULL, "sm_90", &k);
        tilec_cache_keyer_add_u64(k, n);
        for (size_t i = 0; i < n; i++)
            tilec_cache_keyer_add_kernel(k, codes[i].name, codes[i].source, b->tile, codes[i].threads,
                                         codes[i].smem_bytes, codes[i].nparams, kinds);
        char key[TILEC_CACHE_KEY_LEN + 1];
        tilec_cache_keyer_final(k, key);
        t[r] = now_us() - t0;
    }
    for (size_t i = 0; i < n; i++)
        tilec_kernel_code_free(&codes[i]);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    double med = median(t, b->lookups);
    free(t);
    return med;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: cache_bench MODULE.tile WORKDIR [--gpu] [--rounds N] [--lookups N]\n");
        return 2;
    }
    bench b = {.tile = argv[1], .work = argv[2], .rounds = 5, .lookups = 200};
    int gpu = 0;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--gpu"))
            gpu = 1;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            b.rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--lookups") && i + 1 < argc)
            b.lookups = atoi(argv[++i]);
    }
    if (b.rounds < 1 || b.lookups < 1)
        return 2;
    const char *r = getenv("TILEC_CACHE_REDIS");
    b.redis = r && *r ? strdup(r) : NULL;
    unsetenv("TILEC_LOGS");
    setenv("TILEC_CACHE_MAX_BYTES", "0", 1);
    if (gpu && tilec_rt_open(0, &b.rt) != TILEC_RT_OK) {
        fprintf(stderr, "cache_bench: --gpu: %s\n", tilec_rt_last_error(b.rt));
        return 1;
    }
    char local[600];
    fresh_dir(&b, local, sizeof local);
    /* cold: the first build also publishes to Redis (the remote phase's seed) */
    remote(&b, 1);
    tilec_program_stats st;
    double cold0 = build_ms(&b, local, &st);
    if (cold0 < 0 || st.nvrtc_compiles == 0)
        return 1;
    remote(&b, 0);
    double cold = b.rounds > 1 ? builds(&b, NULL, 1, b.rounds < 3 ? b.rounds - 1 : 2, "cold") : cold0;
    double warm_local = builds(&b, local, 0, b.rounds, "warm local");
    char path[700];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s.tilecbundle", local, b.key);
    printf("module: %u kernels, bundle %s, %lld bytes%s\n", b.kernels, b.key,
           stat(path, &sb) == 0 ? (long long)sb.st_size : -1LL, gpu ? ", loaded on GPU 0" : "");
    printf("cold_ms %.1f ms\n", cold < cold0 ? cold : cold0);
    printf("warm_local_ms %.2f ms\n", warm_local);
    if (b.redis) {
        remote(&b, 1);
        printf("warm_remote_ms %.2f ms\n", builds(&b, NULL, 0, b.rounds, "warm remote"));
    }
    printf("key_us %.1f us\n", key_us(&b));
    remote(&b, 0);
    printf("local_get_us %.1f us\n", gets_us(&b, 0, local, 0));
    printf("memory_get_us %.1f us\n", gets_us(&b, 0, local, 1));
    if (b.redis) {
        remote(&b, 1);
        printf("remote_get_us %.1f us\n", gets_us(&b, 1, NULL, 0));
    }
    double *t = calloc((size_t)b.rounds, sizeof *t);
    for (int i = 0; i < b.rounds; i++) {
        char d[600];
        first_use_timed(&b, d, sizeof d, &t[i]);
    }
    printf("first_open_ms %.2f ms\n", median(t, b.rounds));
    free(t);
    tilec_rt_close(b.rt);
    free(b.redis);
    return 0;
}
