/* bench_multikernel.c: the multi-kernel on A[M, 4096] @ B[4096, 4096]
 * (f16 and f32) with variants for M in {64, 256, 4096}:
 *   before   each single variant forced, at M = 64, 256, 4096;
 *   after    the multi-kernel (tilec_program_launch_best) at the same M;
 *   sweep    M = 64, 128, ..., 4096: the multi-kernel against the best single
 *            variant at each M;
 *   dispatch host cost of a launch through the dispatcher against a direct
 *            launch of the same variant.
 * Times: device events, median of ITERS after warm-up. Writes JSON lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "../../tests/gpu_helpers.h"
#include "tilec/program.h"

enum { ITERS = 25, NN = 4096, KK = 4096 };

static tilec_rt *rt;

static void die(const char *what)
{
    fprintf(stderr, "bench_multikernel: %s: %s\n", what, rt ? tilec_rt_last_error(rt) : "");
    exit(1);
}

/* Median device time of `variant` (-1: the multi-kernel). */
static double time_ms(tilec_program *p, const char *name, int variant, tilec_rt_arg *args, int *chosen)
{
    void *ev[2];
    tilec_rt_event_create(rt, &ev[0]);
    tilec_rt_event_create(rt, &ev[1]);
    float t[ITERS];
    for (int i = -2; i < ITERS; i++) {
        if (i >= 0)
            tilec_rt_event_record(rt, ev[0], NULL);
        tilec_rt_status st = variant < 0 ? tilec_program_launch_best(p, name, args, 6, NULL, chosen)
                                         : tilec_program_launch(p, name, variant, args, 6, NULL);
        if (st != TILEC_RT_OK)
            die(name);
        if (i >= 0) {
            tilec_rt_event_record(rt, ev[1], NULL);
            tilec_rt_event_synchronize(rt, ev[1]);
            tilec_rt_event_elapsed_ms(rt, ev[0], ev[1], &t[i]);
        }
    }
    tilec_rt_event_destroy(rt, ev[0]);
    tilec_rt_event_destroy(rt, ev[1]);
    qsort(t, ITERS, sizeof t[0], cmpf);
    return t[ITERS / 2];
}

int main(int argc, char **argv)
{
    const char *outpath = argc > 1 ? argv[1] : "multikernel.jsonl";
    tilec_rt_status st0 = tilec_rt_open(0, &rt);
    if (st0 != TILEC_RT_OK) {
        printf("SKIP: bench_multikernel: %s\n", tilec_rt_status_string(st0));
        tilec_rt_close(rt);
        return 0;
    }
    setenv("TILEC_DISABLE_MULTI_KERNEL_CACHE", "1", 1); /* every choice timed in this run */
    FILE *out = fopen(outpath, "w");
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    tilec_program *p = NULL;
    if (tilec_parse_file(ctx, "bench/multikernel/mm.tile", &m) != TILEC_OK)
        die("parse");
    tilec_build_options o = {.threads = 0};
    if (tilec_program_build(ctx, rt, m, &o, &p) != TILEC_OK) {
        tilec_ctx_render_diags(ctx, tilec_sink_file(stderr));
        die("build");
    }
    unsigned long long seed = gk_seed();
    static const char *const names[] = {"mm_f16", "mm_f32"};
    for (int d = 0; d < 2; d++) {
        int half = d == 0;
        size_t es = half ? 2 : 4;
        /* A big enough for M = 4096; B; C */
        size_t na = (size_t)4096 * KK, nb = (size_t)KK * NN;
        float *h = malloc(na * sizeof *h);
        uint64_t da, db, dc;
        if (tilec_rt_malloc(rt, na * es, &da) || tilec_rt_malloc(rt, nb * es, &db) ||
            tilec_rt_malloc(rt, (size_t)4096 * NN * 4, &dc))
            die("malloc");
        for (int which = 0; which < 2; which++) {
            fill_random(h, na, &seed);
            uint64_t dst = which ? db : da;
            if (half) {
                uint16_t *hh = malloc(na * 2);
                for (size_t i = 0; i < na; i++)
                    hh[i] = f32_to_f16(h[i]);
                tilec_rt_memcpy_htod(rt, dst, hh, na * 2);
                free(hh);
            } else {
                tilec_rt_memcpy_htod(rt, dst, h, na * 4);
            }
        }
        free(h);
        static const int table_m[] = {64, 256, 4096};
        for (int i = 0; i < 3; i++) {
            int M = table_m[i];
            tilec_rt_arg args[6] = {{.ptr = da}, {.ptr = db}, {.ptr = dc}, {.i32 = M}, {.i32 = NN}, {.i32 = KK}};
            double v[3];
            for (int k = 0; k < 3; k++)
                v[k] = time_ms(p, names[d], k, args, NULL);
            int chosen = -1;
            double mk = time_ms(p, names[d], -1, args, &chosen);
            printf("%s M=%4d: variants %.4f %.4f %.4f ms, multi-kernel %.4f ms (variant %d)\n", names[d], M, v[0], v[1],
                   v[2], mk, chosen);
            fprintf(out, "{\"bench\": \"table\", \"kernel\": \"%s\", \"M\": %d, \"v\": [%.5f, %.5f, %.5f], \"mk\": %.5f, \"chosen\": %d}\n",
                    names[d], M, v[0], v[1], v[2], mk, chosen);
        }
        for (int M = 64; M <= 4096; M += 64) {
            tilec_rt_arg args[6] = {{.ptr = da}, {.ptr = db}, {.ptr = dc}, {.i32 = M}, {.i32 = NN}, {.i32 = KK}};
            double v[3];
            for (int k = 0; k < 3; k++)
                v[k] = time_ms(p, names[d], k, args, NULL);
            int chosen = -1;
            double mk = time_ms(p, names[d], -1, args, &chosen);
            fprintf(out, "{\"bench\": \"sweep\", \"kernel\": \"%s\", \"M\": %d, \"v\": [%.5f, %.5f, %.5f], \"mk\": %.5f, \"chosen\": %d}\n",
                    names[d], M, v[0], v[1], v[2], mk, chosen);
        }
        fflush(out);
        /* dispatch: host time per launch, through the dispatcher and direct (M = 64, stored choice) */
        tilec_rt_arg args[6] = {{.ptr = da}, {.ptr = db}, {.ptr = dc}, {.i32 = 64}, {.i32 = 64}, {.i32 = 64}};
        int chosen = 0;
        tilec_program_launch_best(p, names[d], args, 6, NULL, &chosen);
        tilec_rt_synchronize(rt);
        enum { BATCH = 200, ROUNDS = 31 };
        double tb[ROUNDS], td[ROUNDS];
        for (int r = 0; r < ROUNDS; r++) {
            double a0 = now_us();
            for (int i = 0; i < BATCH; i++)
                tilec_program_launch_best(p, names[d], args, 6, NULL, NULL);
            double a1 = now_us();
            tilec_rt_synchronize(rt);
            double b0 = now_us();
            for (int i = 0; i < BATCH; i++)
                tilec_program_launch(p, names[d], chosen, args, 6, NULL);
            double b1 = now_us();
            tilec_rt_synchronize(rt);
            tb[r] = (a1 - a0) / BATCH;
            td[r] = (b1 - b0) / BATCH;
        }
        for (int a = 0; a < ROUNDS; a++)
            for (int b = a + 1; b < ROUNDS; b++) {
                if (tb[b] < tb[a]) {
                    double x = tb[a];
                    tb[a] = tb[b];
                    tb[b] = x;
                }
                if (td[b] < td[a]) {
                    double x = td[a];
                    td[a] = td[b];
                    td[b] = x;
                }
            }
        printf("%s dispatch: %.3f us through the multi-kernel, %.3f us direct\n", names[d], tb[ROUNDS / 2],
               td[ROUNDS / 2]);
        fprintf(out, "{\"bench\": \"dispatch\", \"kernel\": \"%s\", \"mk_us\": %.4f, \"direct_us\": %.4f}\n", names[d],
                tb[ROUNDS / 2], td[ROUNDS / 2]);
        tilec_rt_free(rt, da);
        tilec_rt_free(rt, db);
        tilec_rt_free(rt, dc);
    }
    fclose(out);
    tilec_program_free(p);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
    tilec_rt_close(rt);
    return 0;
}
