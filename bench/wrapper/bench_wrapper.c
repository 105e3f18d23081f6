/* bench_wrapper.c: host cost of the generated C wrapper of
 * bench/wrapper/chain8.tile (eight small kernels) against the same eight
 * kernels launched with bare cuLaunchKernel calls, the same CUBINs, the
 * same arguments, one stream.
 *
 *   bench_wrapper [N=65536] [OUT.jsonl]
 *
 * Both sides are timed the same way: BATCH back-to-back calls on the host
 * clock, then one synchronize, divided by BATCH (so each figure is what a
 * call costs when the GPU keeps up; with these sizes the GPU does, and the
 * figure is host time). Median of ROUNDS alternating rounds. The wrapper's
 * output is handed back with chain8_release, as a loop would. Before the
 * timing both results are checked against a CPU reference. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "chain8.h"
#include "tilec/lower.h"
#include "tilec/program.h"
#include "tilec/runtime.h"
#include "tilec/tilec.h"

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                         void **, void **);

static const char *const names[8] = {"scale2", "add1", "relu", "neg", "square", "half", "sub3", "clip"};

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "bench_wrapper: %s: %s\n", what, msg);
    exit(1);
}

static float reference(float v)
{
    v = v * 2.0f;
    v = v + 1.0f;
    v = v > 0.0f ? v : 0.0f;
    v = 0.0f - v;
    v = v * v;
    v = v * 0.5f;
    v = v - 3.0f;
    return v < 4.0f ? v : 4.0f;
}

static double max_err(const float *got, const float *x, int n)
{
    double e = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)reference(x[i]));
        e = d > e ? d : e;
    }
    return e;
}

int main(int argc, char **argv)
{
    int n = 65536;
    const char *out_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "N=", 2))
            n = atoi(argv[i] + 2);
        else
            out_path = argv[i];
    }
    tilec_rt *rt = NULL;
    tilec_rt_status st = tilec_rt_open(0, &rt);
    if (st != TILEC_RT_OK) {
        printf("SKIP: bench_wrapper: %s\n", tilec_rt_status_string(st));
        tilec_rt_close(rt);
        return 0;
    }
    char err[1024];
    chain8_module *M = NULL;
    if (chain8_load(rt, &M, err, sizeof err))
        die("chain8_load", err);

    /* inputs */
    size_t bytes = (size_t)n * 4;
    float *hx = malloc(bytes), *hy = malloc(bytes);
    for (int i = 0; i < n; i++)
        hx[i] = (float)((i * 7919) % 2001 - 1000) / 500.0f;
    uint64_t dx, dy, dt[2];
    if (tilec_rt_malloc(rt, bytes, &dx) || tilec_rt_malloc(rt, bytes, &dy) || tilec_rt_malloc(rt, bytes, &dt[0]) ||
        tilec_rt_malloc(rt, bytes, &dt[1]) || tilec_rt_memcpy_htod(rt, dx, hx, bytes))
        die("inputs", tilec_rt_last_error(rt));
    tilec_tensor x = {.data = dx, .dtype = TILEC_DT_F32, .rank = 1, .sizes = {n}, .strides = {1}};

    /* the bare side: the same .tile compiled to the same CUBINs, loaded
     * and launched through the driver directly */
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cuda)
        die("dlopen libcuda.so.1", dlerror());
    int (*modload)(void **, const void *) = (int (*)(void **, const void *))dlsym(cuda, "cuModuleLoadData");
    int (*getfn)(void **, void *, const char *) = (int (*)(void **, void *, const char *))dlsym(cuda, "cuModuleGetFunction");
    launch_fn bare = (launch_fn)dlsym(cuda, "cuLaunchKernel");
    if (!modload || !getfn || !bare)
        die("driver entry points", "missing");
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    if (tilec_parse_file(ctx, "bench/wrapper/chain8.tile", &m) != TILEC_OK)
        die("parse", "bench/wrapper/chain8.tile (run from the repository root)");
    void *fn[8];
    for (int k = 0; k < 8; k++) {
        tilec_kernel_code code;
        void *cubin, *cmod;
        size_t size;
        char sym[64];
        if (tilec_compile_kernel(ctx, m, tilec_module_find_kernel(m, names[k]), 0, "sm_90", &code, &cubin, &size))
            die("compile", names[k]);
        snprintf(sym, sizeof sym, "%s_v0", names[k]);
        if (modload(&cmod, cubin) || getfn(&fn[k], cmod, sym))
            die("bare load", sym);
        free(cubin);
        tilec_kernel_code_free(&code);
    }
    unsigned grid = (unsigned)((n + 1023) / 1024);

    /* check both against the CPU */
    tilec_tensor y;
    if (chain8_run(M, &x, &y, err, sizeof err))
        die("chain8_run", err);
    tilec_rt_synchronize(rt);
    tilec_rt_memcpy_dtoh(rt, hy, y.data, bytes);
    double e_wrap = max_err(hy, hx, n);
    chain8_release(M, &y);
    uint64_t bufs[9] = {dx, dt[0], dt[1], dt[0], dt[1], dt[0], dt[1], dt[0], dy};
    void *params[8][3];
    uint64_t a_in[8], a_out[8];
    for (int k = 0; k < 8; k++) {
        a_in[k] = bufs[k];
        a_out[k] = bufs[k + 1];
        params[k][0] = &a_in[k];
        params[k][1] = &a_out[k];
        params[k][2] = &n;
    }
    for (int k = 0; k < 8; k++)
        if (bare(fn[k], grid, 1, 1, 128, 1, 1, 0, NULL, params[k], NULL))
            die("cuLaunchKernel", names[k]);
    tilec_rt_synchronize(rt);
    tilec_rt_memcpy_dtoh(rt, hy, dy, bytes);
    double e_bare = max_err(hy, hx, n);
    if (e_wrap > 1e-4 || e_bare > 1e-4) {
        fprintf(stderr, "bench_wrapper: wrong results: wrapper max error %g, bare %g\n", e_wrap, e_bare);
        return 1;
    }

    enum { BATCH = 200, ROUNDS = 41 };
    double tw[ROUNDS], tb[ROUNDS];
    for (int r = -3; r < ROUNDS; r++) {
        double t0 = now_us();
        for (int i = 0; i < BATCH; i++) {
            if (chain8_run(M, &x, &y, err, sizeof err))
                die("chain8_run", err);
            chain8_release(M, &y);
        }
        tilec_rt_synchronize(rt);
        double t1 = now_us();
        for (int i = 0; i < BATCH; i++)
            for (int k = 0; k < 8; k++)
                if (bare(fn[k], grid, 1, 1, 128, 1, 1, 0, NULL, params[k], NULL))
                    die("cuLaunchKernel", names[k]);
        tilec_rt_synchronize(rt);
        double t2 = now_us();
        if (r >= 0) {
            tw[r] = (t1 - t0) / BATCH;
            tb[r] = (t2 - t1) / BATCH;
        }
    }
    qsort(tw, ROUNDS, sizeof tw[0], cmpd);
    qsort(tb, ROUNDS, sizeof tb[0], cmpd);
    printf("chain8 N=%d: C wrapper %.2f us per call, 8 bare cuLaunchKernel %.2f us, ratio %.3f "
           "(median of %d rounds of %d; max error %.2g)\n",
           n, tw[ROUNDS / 2], tb[ROUNDS / 2], tw[ROUNDS / 2] / tb[ROUNDS / 2], ROUNDS, BATCH, e_wrap);
    if (out_path) {
        FILE *f = fopen(out_path, "a");
        if (f) {
            fprintf(f, "{\"bench\": \"c_wrapper\", \"n\": %d, \"wrapper_us\": %.3f, \"bare_us\": %.3f}\n", n,
                    tw[ROUNDS / 2], tb[ROUNDS / 2]);
            fclose(f);
        }
    }
    free(hx);
    free(hy);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    chain8_unload(M);
    tilec_rt_close(rt);
    return 0;
}
