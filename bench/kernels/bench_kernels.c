/* bench_kernels.c: times the example kernels on the GPU with device events:
 * warm-up, then the median of N launches, each on the next of several
 * input sets so that the data in flight is larger than L2. Every variant
 * of a kernel is timed; the table reports each and the best. Writes one
 * JSON object per line (workload, variant, ms, bytes, flops). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "../../tests/gpu_helpers.h"

static tilec_rt *rt;
static char arch[16];
static size_t l2_bytes;
static FILE *out;
static int iters = 200;

static void die(const char *what)
{
    fprintf(stderr, "bench_kernels: %s: %s\n", what, rt ? tilec_rt_last_error(rt) : "");
    exit(1);
}

#define RT(call)                 \
    do {                         \
        if ((call) != TILEC_RT_OK) \
            die(#call);          \
    } while (0)

typedef struct bufset {
    uint64_t p[8];
} bufset;

/* args for set s: a callback fills them */
typedef void (*fill_args_fn)(const bufset *set, tilec_rt_arg *args, void *user);

static double time_kernel(gk *g, bufset *sets, int nsets, fill_args_fn fill, void *user)
{
    void *ev[2];
    RT(tilec_rt_event_create(rt, &ev[0]));
    RT(tilec_rt_event_create(rt, &ev[1]));
    tilec_rt_arg args[16];
    for (int w = 0; w < 10; w++) {
        fill(&sets[w % nsets], args, user);
        RT(gk_launch(g, args, NULL));
    }
    RT(tilec_rt_synchronize(rt));
    float *ms = malloc((size_t)iters * sizeof *ms);
    for (int i = 0; i < iters; i++) {
        fill(&sets[i % nsets], args, user);
        RT(tilec_rt_event_record(rt, ev[0], NULL));
        RT(gk_launch(g, args, NULL));
        RT(tilec_rt_event_record(rt, ev[1], NULL));
        RT(tilec_rt_event_synchronize(rt, ev[1]));
        RT(tilec_rt_event_elapsed_ms(rt, ev[0], ev[1], &ms[i]));
    }
    qsort(ms, (size_t)iters, sizeof *ms, cmpf);
    double med = ms[iters / 2];
    free(ms);
    tilec_rt_event_destroy(rt, ev[0]);
    tilec_rt_event_destroy(rt, ev[1]);
    return med;
}

static uint64_t random_buffer(size_t n, int half, unsigned long long *state)
{
    float *h = malloc(n * sizeof *h);
    fill_random(h, n, state);
    uint64_t d;
    RT(tilec_rt_malloc(rt, n * (half ? 2 : 4), &d));
    if (half) {
        uint16_t *hh = malloc(n * 2);
        for (size_t i = 0; i < n; i++)
            hh[i] = f32_to_f16(h[i]);
        RT(tilec_rt_memcpy_htod(rt, d, hh, n * 2));
        free(hh);
    } else {
        RT(tilec_rt_memcpy_htod(rt, d, h, n * 4));
    }
    free(h);
    return d;
}

/* enough sets that they do not fit in L2 together (at least 2) */
static int nsets_for(size_t bytes_per_set)
{
    size_t n = (3 * l2_bytes) / (bytes_per_set ? bytes_per_set : 1) + 1;
    return n < 2 ? 2 : n > 8 ? 8 : (int)n;
}

typedef struct wl {
    const char *name, *file, *kernel;
    int64_t dims[3];
    int half;
} wl;

typedef struct ctxw {
    const wl *w;
} ctxw;

static void args_add_relu(const bufset *s, tilec_rt_arg *a, void *u)
{
    const wl *w = u;
    a[0].ptr = s->p[0], a[1].ptr = s->p[1], a[2].ptr = s->p[2], a[3].i32 = (int32_t)w->dims[0];
}
static void args_softmax(const bufset *s, tilec_rt_arg *a, void *u)
{
    const wl *w = u;
    a[0].ptr = s->p[0], a[1].ptr = s->p[1], a[2].i32 = (int32_t)w->dims[0], a[3].i32 = (int32_t)w->dims[1];
}
static void args_layernorm(const bufset *s, tilec_rt_arg *a, void *u)
{
    const wl *w = u;
    a[0].ptr = s->p[0], a[1].ptr = s->p[1], a[2].ptr = s->p[2], a[3].ptr = s->p[3];
    a[4].i32 = (int32_t)w->dims[0], a[5].i32 = (int32_t)w->dims[1], a[6].f32 = 1e-5f;
}
static void args_matmul(const bufset *s, tilec_rt_arg *a, void *u)
{
    const wl *w = u;
    a[0].ptr = s->p[0], a[1].ptr = s->p[1], a[2].ptr = s->p[2];
    a[3].i32 = (int32_t)w->dims[0], a[4].i32 = (int32_t)w->dims[1], a[5].i32 = (int32_t)w->dims[2];
}

static void run(const wl *w)
{
    unsigned long long st = gk_seed();
    size_t bytes = 0;
    double flops = 0;
    int nbuf;
    size_t sizes[4];
    int half[4] = {0, 0, 0, 0};
    fill_args_fn fill;
    if (!strcmp(w->kernel, "add_relu")) {
        nbuf = 3;
        sizes[0] = sizes[1] = sizes[2] = (size_t)w->dims[0];
        bytes = 12 * (size_t)w->dims[0];
        fill = args_add_relu;
    } else if (!strcmp(w->kernel, "softmax")) {
        nbuf = 2;
        sizes[0] = sizes[1] = (size_t)(w->dims[0] * w->dims[1]);
        bytes = 8 * sizes[0];
        fill = args_softmax;
    } else if (!strcmp(w->kernel, "layernorm")) {
        nbuf = 4;
        sizes[0] = sizes[3] = (size_t)(w->dims[0] * w->dims[1]);
        sizes[1] = sizes[2] = (size_t)w->dims[1];
        bytes = 8 * sizes[0] + 8 * sizes[1];
        fill = args_layernorm;
    } else {
        nbuf = 3;
        sizes[0] = (size_t)(w->dims[0] * w->dims[2]);
        sizes[1] = (size_t)(w->dims[2] * w->dims[1]);
        sizes[2] = (size_t)(w->dims[0] * w->dims[1]);
        half[0] = half[1] = w->half;
        bytes = (sizes[0] + sizes[1]) * (w->half ? 2 : 4) + sizes[2] * 4;
        flops = 2.0 * (double)w->dims[0] * (double)w->dims[1] * (double)w->dims[2];
        fill = args_matmul;
    }
    int nsets = nsets_for(bytes);
    bufset *sets = calloc((size_t)nsets, sizeof *sets);
    for (int s = 0; s < nsets; s++)
        for (int b = 0; b < nbuf; b++)
            sets[s].p[b] = random_buffer(sizes[b], half[b], &st);
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    if (tilec_parse_file(ctx, w->file, &m) != TILEC_OK)
        die(w->file);
    uint32_t nv = tilec_kernel_variant_count(tilec_module_find_kernel(m, w->kernel));
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    for (uint32_t v = 0; v < nv; v++) {
        gk g;
        if (gk_load(rt, arch, w->file, w->kernel, (int)v, &g)) {
            fprintf(stderr, "%s\n", g.err);
            exit(1);
        }
        double ms = time_kernel(&g, sets, nsets, fill, (void *)w);
        fprintf(out, "{\"workload\": \"%s\", \"kernel\": \"%s\", \"variant\": %u, \"ms\": %.6f, \"bytes\": %zu, \"flops\": %.0f, \"sets\": %d, \"iters\": %d}\n",
                w->name, g.code.name, v, ms, bytes, flops, nsets, iters);
        fflush(out);
        printf("%-24s %-14s %9.4f ms  %8.1f GB/s  %8.1f TFLOP/s\n", w->name, g.code.name, ms, (double)bytes / ms / 1e6,
               flops / ms / 1e9);
        gk_free(&g);
    }
    for (int s = 0; s < nsets; s++)
        for (int b = 0; b < nbuf; b++)
            tilec_rt_free(rt, sets[s].p[b]);
    free(sets);
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "kernels_tilec.jsonl";
    const char *only = argc > 2 ? argv[2] : NULL;
    tilec_rt_status st = tilec_rt_open(0, &rt);
    if (st != TILEC_RT_OK) {
        printf("SKIP: bench_kernels: %s\n", tilec_rt_status_string(st));
        tilec_rt_close(rt);
        return 0;
    }
    tilec_rt_device_props p;
    RT(tilec_rt_device_info(rt, &p));
    snprintf(arch, sizeof arch, "sm_%d%d", p.sm_major, p.sm_minor);
    l2_bytes = (size_t)p.l2_bytes;
    out = fopen(path, "w");
    if (!out)
        die(path);
    printf("device: %s (%s), L2 %zu MB\n", p.name, arch, l2_bytes >> 20);
    static const wl wls[] = {
        {"add_relu 2^26", "examples/add_relu.tile", "add_relu", {1 << 26}, 0},
        {"softmax 8192x1024", "examples/softmax.tile", "softmax", {8192, 1024}, 0},
        {"softmax 8192x4096", "examples/softmax.tile", "softmax", {8192, 4096}, 0},
        {"softmax 2048x16384", "examples/softmax.tile", "softmax", {2048, 16384}, 0},
        {"layernorm 8192x4096", "examples/layernorm.tile", "layernorm", {8192, 4096}, 0},
        {"matmul f16 1024", "examples/matmul.tile", "matmul", {1024, 1024, 1024}, 1},
        {"matmul f16 4096", "examples/matmul.tile", "matmul", {4096, 4096, 4096}, 1},
        {"matmul f32 4096", "examples/matmul_f32.tile", "matmul_f32", {4096, 4096, 4096}, 0},
    };
    for (size_t i = 0; i < sizeof wls / sizeof wls[0]; i++)
        if (!only || strstr(wls[i].name, only))
            run(&wls[i]);
    fclose(out);
    tilec_rt_close(rt);
    return 0;
}
