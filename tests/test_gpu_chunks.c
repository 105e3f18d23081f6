/* test_gpu_chunks.c: examples/chunked_ce.tile (issue 35 item 4), a graph's
 * for loop over row chunks, run on the GPU through the C wrapper the "c"
 * emitter writes (generated at build time into build/gen/wrappers): the
 * fused linear cross-entropy forward and backward (per-token loss, dH, dW)
 * against a CPU reference in double, for one chunk, several, and a
 * vocabulary that is no multiple of the tiles; a chunk size that does not
 * divide the tokens is the last slice's run-time error, with nothing
 * written past the tensors. Without a GPU it prints one SKIP line. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "flce.h"
#include "gpu_helpers.h"

static tilec_rt *rt;
static flce_module *mod;

static void setup(void)
{
    tilec_rt_status st = tilec_rt_open(0, &rt);
    cr_assert_eq(st, TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    char err[1024];
    cr_assert_eq(flce_load(rt, &mod, err, sizeof err), 0, "%s", err);
}

static void teardown(void)
{
    flce_unload(mod);
    tilec_rt_close(rt);
}

TestSuite(chunks, .init = setup, .fini = teardown);

/* one call of flce with T tokens of D, V classes, chunks of C; 0 when it ran */
static int run_case(int T, int D, int V, int C, char *err, size_t errlen)
{
    unsigned long long seed = gk_seed() + (unsigned long long)T * 7919 + (unsigned long long)C;
    float *h = malloc((size_t)T * D * 4), *w = malloc((size_t)V * D * 4);
    int32_t *tgt = malloc((size_t)T * 4);
    fill_random(h, (size_t)T * D, &seed);
    fill_random(w, (size_t)V * D, &seed);
    for (int t = 0; t < T; t++)
        tgt[t] = (int32_t)((unsigned)(t * 2654435761u) % (unsigned)V);
    /* the reference, in double: the loss of each token, dH, dW (of the losses' sum) */
    double *loss = calloc((size_t)T, sizeof *loss), *dh = calloc((size_t)T * D, sizeof *dh);
    double *dw = calloc((size_t)V * D, sizeof *dw), *lg = malloc((size_t)V * sizeof *lg);
    for (int t = 0; t < T; t++) {
        double mx = -INFINITY, den = 0;
        for (int v = 0; v < V; v++) {
            double s = 0;
            for (int d = 0; d < D; d++)
                s += (double)h[(size_t)t * D + d] * w[(size_t)v * D + d];
            lg[v] = s;
            mx = fmax(mx, s);
        }
        for (int v = 0; v < V; v++)
            den += exp(lg[v] - mx);
        double lse = mx + log(den);
        loss[t] = lse - lg[tgt[t]];
        for (int v = 0; v < V; v++) {
            double g = exp(lg[v] - lse) - (v == tgt[t]);
            for (int d = 0; d < D; d++) {
                dh[(size_t)t * D + d] += g * w[(size_t)v * D + d];
                dw[(size_t)v * D + d] += g * h[(size_t)t * D + d];
            }
        }
    }
    tilec_tensor th = gpu_tensor(gpu_upload(rt, h, (size_t)T * D * 4), TILEC_DT_F32, T, D);
    tilec_tensor tw = gpu_tensor(gpu_upload(rt, w, (size_t)V * D * 4), TILEC_DT_F32, V, D);
    tilec_tensor tt = gpu_tensor(gpu_upload(rt, tgt, (size_t)T * 4), TILEC_DT_I32, T, 0);
    tilec_tensor ol, odh, odw;
    int rc = flce_run(mod, &th, &tw, &tt, C, &ol, &odh, &odw, err, errlen);
    if (!rc) {
        char what[128];
        snprintf(what, sizeof what, "loss T=%d D=%d V=%d C=%d", T, D, V, C);
        gpu_expect_close(rt, ol.data, loss, (size_t)T, 1e-5, what);
        snprintf(what, sizeof what, "dh T=%d D=%d V=%d C=%d", T, D, V, C);
        gpu_expect_close(rt, odh.data, dh, (size_t)T * D, 1e-4, what);
        snprintf(what, sizeof what, "dw T=%d D=%d V=%d C=%d", T, D, V, C);
        gpu_expect_close(rt, odw.data, dw, (size_t)V * D, 1e-4, what);
        tilec_rt_free(rt, ol.data);
        tilec_rt_free(rt, odh.data);
        tilec_rt_free(rt, odw.data);
    }
    tilec_rt_free(rt, th.data);
    tilec_rt_free(rt, tw.data);
    tilec_rt_free(rt, tt.data);
    free(h);
    free(w);
    free(tgt);
    free(loss);
    free(dh);
    free(dw);
    free(lg);
    return rc;
}

Test(chunks, flce_matches_the_reference, .timeout = 300)
{
    char err[1024];
    static const int cases[][4] = {{64, 32, 100, 64}, {256, 96, 1000, 64}, {300, 64, 2053, 100}, {512, 128, 4099, 128}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(run_case(cases[i][0], cases[i][1], cases[i][2], cases[i][3], err, sizeof err), 0, "%s", err);
}

Test(chunks, a_chunk_past_the_tokens_is_an_error, .timeout = 120)
{
    char err[1024] = "";
    cr_expect_neq(run_case(300, 32, 100, 64, err, sizeof err), 0);
    cr_expect(strstr(err, "flce: line ") && strstr(err, "is out of bounds: start 256, stop 320, and 'h' has 300 rows"),
              "%s", err);
}

int main(int argc, char *argv[]) { return gpu_suite_main(argc, argv, "GPU chunked graph tests"); }
