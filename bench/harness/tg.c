/* tg.c: the generated C wrapper of bench/wrapper/chain8.tile in the
 * benchmark harness's host-time table: built with chain8.c (tilec --emit c)
 * as libtilec_chain8.so and called from bench.py's process through ctypes,
 * on the libtilec and device the harness already holds (its tilec_* calls
 * resolve against that copy, loaded RTLD_GLOBAL). tg_host_us enqueues
 * `calls` graph calls back to back (each output given back to the
 * wrapper's pool, as an application would), timed on the host clock. */
#include <stdio.h>

#include "bench/bench_util.h"
#include "chain8.h"

#define TG_EXPORT __attribute__((visibility("default")))

TG_EXPORT int tg_load(tilec_rt *rt, chain8_module **out, char *err, size_t errlen);
TG_EXPORT int tg_load(tilec_rt *rt, chain8_module **out, char *err, size_t errlen)
{
    return chain8_load(rt, out, err, errlen);
}

/* CUDA-graph mode of the wrapper: keep up to `graphs` graphs (0: eager). */
TG_EXPORT int tg_set_graphs(chain8_module *m, unsigned graphs, char *err, size_t errlen);
TG_EXPORT int tg_set_graphs(chain8_module *m, unsigned graphs, char *err, size_t errlen)
{
    return chain8_set_cuda_graph(m, graphs, err, errlen);
}

TG_EXPORT void tg_unload(chain8_module *m);
TG_EXPORT void tg_unload(chain8_module *m) { chain8_unload(m); }

/* Host microseconds per chain8 call on x (n f32 elements, on the device). */
TG_EXPORT int tg_host_us(chain8_module *m, uint64_t x, int64_t n, int calls, double *us, char *err, size_t errlen);
TG_EXPORT int tg_host_us(chain8_module *m, uint64_t x, int64_t n, int calls, double *us, char *err, size_t errlen)
{
    tilec_tensor tx = {.data = x, .dtype = TILEC_DT_F32, .rank = 1, .sizes = {n}, .strides = {1}};
    double t0 = now_us();
    for (int i = 0; i < calls; i++) {
        tilec_tensor ty;
        if (chain8_run(m, &tx, &ty, err, errlen))
            return -1;
        chain8_release(m, &ty);
    }
    *us = (now_us() - t0) / calls;
    return 0;
}
