/* bench_runtime.c: the runtime's costs on the GPU machine.
 *   launch   host time of tilec_rt_launch against a bare cuLaunchKernel of
 *            the same empty kernel (the driver called directly);
 *   cold     building the examples module with an empty cache, in a fresh
 *            process (lower + NVRTC on the pool + load);
 *   warm     the same with the cache populated, in a fresh process;
 *   pool     NVRTC compiles of 32 distinct kernels with 1..16 threads.
 * Usage: bench_runtime OUT.jsonl MODULE.tile (re-runs itself for cold and
 * warm starts; MODULE.tile is every example concatenated). */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "tilec/program.h"

static void die(const char *what, tilec_rt *rt)
{
    fprintf(stderr, "bench_runtime: %s: %s\n", what, rt ? tilec_rt_last_error(rt) : "");
    exit(1);
}

static tilec_compile_workers *workers; /* the pool bench's warm worker processes */

static tilec_program *build(tilec_rt *rt, const char *path, const char *src, tilec_cache *cache, int threads,
                            tilec_program_stats *st, tilec_module **mout, tilec_ctx **cout)
/* rt NULL: compile only, for sm_90 */
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_status s = src ? tilec_parse_string(ctx, path, src, strlen(src), &m) : tilec_parse_file(ctx, path, &m);
    tilec_program *p = NULL;
    tilec_build_options o = {rt ? NULL : "sm_90", threads, cache, NULL, workers};
    if (s == TILEC_OK)
        s = tilec_program_build(ctx, rt, m, &o, &p);
    if (s != TILEC_OK) {
        tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
        exit(1);
    }
    tilec_program_get_stats(p, st);
    *mout = m;
    *cout = ctx;
    return p;
}

/* one fresh process: build the examples module, print the wall time */
static int child_build(const char *cachedir, const char *examples)
{
    double t0 = now_us();
    tilec_rt *rt;
    if (tilec_rt_open(0, &rt) != TILEC_RT_OK)
        die("open", rt);
    double t1 = now_us();
    tilec_cache *cache;
    tilec_cache_open(cachedir, &cache);
    tilec_program_stats st;
    tilec_module *m;
    tilec_ctx *ctx;
    tilec_program *p = build(rt, examples, NULL, cache, 0, &st, &m, &ctx);
    double t2 = now_us();
    printf("%.3f %.3f %u %u %d %.3f %.3f %.3f\n", (t2 - t1) / 1e3, (t1 - t0) / 1e3, st.kernels, st.nvrtc_compiles,
           st.cache_hit, st.lower_ms, st.compile_ms, st.load_ms);
    tilec_program_free(p);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    tilec_cache_close(cache);
    tilec_rt_close(rt);
    return 0;
}

static void run_child(const char *self, const char *cachedir, const char *examples, char *line, size_t n)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "%s --child %s %s", self, cachedir, examples);
    FILE *f = popen(cmd, "r");
    if (!f || !fgets(line, (int)n, f))
        die("child", NULL);
    pclose(f);
}

typedef int (*launch_fn)(void *f, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                         void **, void **);
typedef int (*sync_fn)(void);

int main(int argc, char **argv)
{
    if (argc > 3 && !strcmp(argv[1], "--child"))
        return child_build(argv[2], argv[3]);
    if (argc > 1 && !strcmp(argv[1], "--probe")) {
        /* where NVRTC's time goes: in-process compiles, then compiles in a
         * forked child of a process that has compiled before */
        tilec_ctx *ctx = tilec_ctx_new();
        tilec_module *m = NULL;
        if (tilec_parse_file(ctx, argv[2], &m) != TILEC_OK)
            die("parse", NULL);
        for (int round = 0; round < 2; round++) {
            pid_t pid = round ? fork() : 0;
            if (pid > 0) {
                int wst;
                waitpid(pid, &wst, 0);
                continue;
            }
            for (uint32_t i = 0; i < 4 && i < tilec_module_kernel_count(m); i++) {
                tilec_kernel_code code;
                void *cubin;
                size_t size;
                double a = now_us();
                if (tilec_compile_kernel(ctx, m, tilec_module_kernel(m, i), 0, "sm_90", &code, &cubin, &size))
                    die("compile", NULL);
                printf("probe: %s compile %u: %.1f ms\n", round ? "child" : "parent", i, (now_us() - a) / 1e3);
                free(cubin);
                tilec_kernel_code_free(&code);
            }
            fflush(stdout);
            if (round)
                _exit(0);
        }
        return 0;
    }
    const char *outpath = argc > 1 ? argv[1] : "runtime.jsonl";
    const char *examples = argc > 2 ? argv[2] : "examples/matmul.tile";
    tilec_rt *rt;
    tilec_rt_status st0 = tilec_rt_open(0, &rt);
    if (st0 != TILEC_RT_OK) {
        printf("SKIP: bench_runtime: %s\n", tilec_rt_status_string(st0));
        tilec_rt_close(rt);
        return 0;
    }
    FILE *out = fopen(outpath, "w");
    if (!out) {
        fprintf(stderr, "bench_runtime: cannot write %s: %s\n", outpath, strerror(errno));
        tilec_rt_close(rt);
        return 1;
    }

    /* ---- launch: host cost per launch of an empty kernel ---- */
    static const char empty_src[] = "kernel noop(x: *f32, n: i32) grid (1) hints { warps = 1 } { }\n";
    tilec_program_stats pst;
    tilec_module *em;
    tilec_ctx *ectx;
    tilec_program *ep = build(rt, "noop.tile", empty_src, NULL, 1, &pst, &em, &ectx);
    const tilec_rt_kernel *k = tilec_program_kernel(ep, "noop", 0);
    uint64_t dummy;
    tilec_rt_malloc(rt, 256, &dummy);
    tilec_rt_arg args[2] = {{.ptr = dummy}, {.i32 = 1}};
    uint32_t grid[3] = {1, 1, 1};
    /* the same CUBIN, loaded and launched through the driver directly */
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int (*modload)(void **, const void *) = (int (*)(void **, const void *))dlsym(cuda, "cuModuleLoadData");
    int (*getfn)(void **, void *, const char *) = (int (*)(void **, void *, const char *))dlsym(cuda, "cuModuleGetFunction");
    launch_fn bare = (launch_fn)dlsym(cuda, "cuLaunchKernel");
    sync_fn csync = (sync_fn)dlsym(cuda, "cuCtxSynchronize");
    tilec_kernel_code code;
    void *cubin;
    size_t size;
    if (tilec_compile_kernel(ectx, em, tilec_module_find_kernel(em, "noop"), 0, "sm_90", &code, &cubin, &size))
        die("compile", rt);
    void *cmod = NULL, *cfn = NULL;
    if (!modload || modload(&cmod, cubin) || getfn(&cfn, cmod, "noop_v0"))
        die("bare driver load", rt);
    enum { BATCH = 1000, ROUNDS = 30 };
    double tl[ROUNDS], tb[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        /* alternate so that drift hits both alike */
        double t0 = now_us();
        for (int i = 0; i < BATCH; i++)
            if (tilec_rt_launch(k, grid, args, NULL) != TILEC_RT_OK)
                die("launch", rt);
        double t1 = now_us();
        tilec_rt_synchronize(rt);
        void *params[2] = {&args[0].ptr, &args[1].i32};
        double t2 = now_us();
        for (int i = 0; i < BATCH; i++)
            if (bare(cfn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL))
                die("cuLaunchKernel", rt);
        double t3 = now_us();
        if (csync)
            tilec_rt_synchronize(rt);
        tl[r] = (t1 - t0) / BATCH;
        tb[r] = (t3 - t2) / BATCH;
    }
    qsort(tl, ROUNDS, sizeof tl[0], cmpd);
    qsort(tb, ROUNDS, sizeof tb[0], cmpd);
    printf("launch: tilec_rt_launch %.3f us, cuLaunchKernel %.3f us per launch (median of %d batches of %d)\n",
           tl[ROUNDS / 2], tb[ROUNDS / 2], ROUNDS, BATCH);
    fprintf(out, "{\"bench\": \"launch\", \"tilec_us\": %.4f, \"bare_us\": %.4f, \"batches\": %d, \"batch\": %d}\n",
            tl[ROUNDS / 2], tb[ROUNDS / 2], ROUNDS, BATCH);
    free(cubin);
    tilec_kernel_code_free(&code);
    tilec_program_free(ep);
    tilec_module_free(em);
    tilec_ctx_free(ectx);

    /* ---- cold and warm start of the examples module, fresh processes ---- */
    char dir[] = "/tmp/tilec_bench_cache_XXXXXX";
    if (!mkdtemp(dir))
        die("mkdtemp", NULL);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    for (int r = 0; r < 4; r++) {
        char line[512];
        run_child(self, dir, examples, line, sizeof line);
        double build_ms, open_ms, lower, comp, load;
        unsigned kernels, compiles;
        int hit;
        sscanf(line, "%lf %lf %u %u %d %lf %lf %lf", &build_ms, &open_ms, &kernels, &compiles, &hit, &lower, &comp,
               &load);
        const char *what = r == 0 ? "cold" : "warm";
        printf("%s start of the examples module: %.2f ms (%u kernels, %u NVRTC compiles, cache hit %d; lower %.2f, "
               "compile/cache %.2f, load %.2f ms; driver open %.1f ms)\n",
               what, build_ms, kernels, compiles, hit, lower, comp, load, open_ms);
        fprintf(out, "{\"bench\": \"%s\", \"build_ms\": %.3f, \"kernels\": %u, \"nvrtc_compiles\": %u, \"cache_hit\": %d, "
                     "\"lower_ms\": %.3f, \"compile_ms\": %.3f, \"load_ms\": %.3f, \"open_ms\": %.3f}\n",
                what, build_ms, kernels, compiles, hit, lower, comp, load, open_ms);
    }
    char rm[512];
    snprintf(rm, sizeof rm, "rm -rf %s", dir);
    if (system(rm)) {
    }

    /* ---- the pool: 32 distinct kernels, 1..16 threads, no cache ---- */
    size_t cap = 1 << 16, len = 0;
    char *src = malloc(cap);
    for (int i = 0; i < 32; i++)
        len += (size_t)snprintf(src + len, cap - len,
                                "kernel k%d(x: *f32, y: *f32, n: i32) grid (cdiv(n, B)) hints { B = 1024, warps = 4 } {\n"
                                "    let i = pid(0) * B + range(B);\n"
                                "    store(y + i, exp(load(x + i, i < n) * %d.5) + sin(load(x + i, i < n)), i < n);\n"
                                "}\n",
                                i, i);
    /* Each thread count gets its own set of worker processes, kept across
     * two builds (as a long-lived application keeps them): the first build
     * starts them, the second is timed. One thread compiles in the process,
     * which has compiled before. */
    static const int threads[] = {1, 2, 4, 8, 16};
    enum { NT = sizeof threads / sizeof threads[0] };
    double cold[NT], best[NT];
    for (int t = 0; t < NT; t++) {
        workers = threads[t] > 1 ? tilec_compile_workers_new((unsigned)threads[t]) : NULL;
        for (int r = 0; r < 2; r++) {
            tilec_module *m;
            tilec_ctx *ctx;
            double a = now_us();
            tilec_program *p = build(NULL, "pool32.tile", src, NULL, threads[t], &pst, &m, &ctx);
            double ms = (now_us() - a) / 1e3;
            if (r == 0)
                cold[t] = ms;
            else
                best[t] = ms;
            printf("pool: 32 kernels with %2d threads (%s workers): %8.1f ms\n", threads[t], r ? "warm" : "new", ms);
            tilec_program_free(p);
            tilec_module_free(m);
            tilec_ctx_free(ctx);
        }
        tilec_compile_workers_free(workers);
        workers = NULL;
    }
    for (int t = 0; t < NT; t++)
        fprintf(out, "{\"bench\": \"pool\", \"threads\": %d, \"ms\": %.3f, \"speedup\": %.3f, \"first_ms\": %.3f}\n",
                threads[t], best[t], best[0] / best[t], cold[t]);
    free(src);
    fclose(out);
    tilec_rt_free(rt, dummy);
    tilec_rt_close(rt);
    return 0;
}
