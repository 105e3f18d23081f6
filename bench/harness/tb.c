/* tb.c: the C side of the benchmark harness (bench/harness/bench.py), built
 * as libtilec_bench.so and called from the harness's own process through
 * ctypes, on the same libtilec, device, context and flush buffer as every
 * other side. It times tilec kernels through the C runtime alone
 * (tilec_program_launch_best), with no Python in the timed loop, by the one
 * method of the harness:
 *
 *   device time: `warmup` launches, a synchronize, then for each of `reps`
 *   repetitions: clear the flush buffer (>= 2x L2, so L2 holds none of the
 *   inputs), record a start event, launch, record an end event, all on the
 *   stream given; one synchronize after the last repetition; the elapsed
 *   time of each start/end pair comes back. No synchronize in the timed
 *   region: the flush keeps the device busy while the host enqueues the
 *   launch, so host overhead is not counted.
 *
 *   host time: `n` launches enqueued back to back (no flush, no event, no
 *   synchronize) timed on the host clock, divided by n.
 *
 * The symbols of libtilec are resolved against the copy the harness already
 * loaded (RTLD_GLOBAL), so program handles pass between the two. */
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench_util.h"
#include "tilec/plan.h"
#include "tilec/program.h"
#include "tilec/runtime.h"

#define TB_EXPORT __attribute__((visibility("default")))

static int fail(tilec_rt *rt, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s", what, tilec_rt_last_error(rt));
    return -1;
}

/* Device time of `reps` launches of kernel `name` (the multi-kernel's
 * choice for these arguments) into ms[0 .. reps-1]. Returns 0, or -1 with
 * err set. */
TB_EXPORT int tb_device_times(tilec_rt *rt, tilec_program *p, const char *name, const tilec_rt_arg *args,
                              uint32_t nargs, void *stream, uint64_t flush, size_t flush_words, int warmup, int reps,
                              float *ms, double *host_us, char *err, size_t errlen);
TB_EXPORT int tb_device_times(tilec_rt *rt, tilec_program *p, const char *name, const tilec_rt_arg *args,
                              uint32_t nargs, void *stream, uint64_t flush, size_t flush_words, int warmup, int reps,
                              float *ms, double *host_us, char *err, size_t errlen)
{
    if (!rt || !p || !name || !ms || reps <= 0 || warmup < 0) {
        snprintf(err, errlen, "tb_device_times: invalid argument");
        return -1;
    }
    void **ev = calloc(2 * (size_t)reps, sizeof *ev);
    if (!ev) {
        snprintf(err, errlen, "tb_device_times: out of memory");
        return -1;
    }
    int rc = -1, made = 0;
    for (; made < 2 * reps; made++)
        if (tilec_rt_event_create(rt, &ev[made]) != TILEC_RT_OK) {
            fail(rt, "event_create", err, errlen);
            goto out;
        }
    for (int i = 0; i < warmup; i++)
        if (tilec_program_launch_best(p, name, args, nargs, stream, NULL) != TILEC_RT_OK) {
            fail(rt, name, err, errlen);
            goto out;
        }
    if (tilec_rt_synchronize(rt) != TILEC_RT_OK) {
        fail(rt, "synchronize", err, errlen);
        goto out;
    }
    /* the host time of each of the first few repetitions, before the
     * device's launch queue fills and blocks the host; their median is what
     * one repetition costs the host */
    enum { PROBE = 16 };
    double stamp[PROBE + 1];
    int probe = reps < PROBE ? reps : PROBE;
    for (int i = 0; i < reps; i++) {
        if (i <= probe)
            stamp[i] = now_us();
        if (tilec_rt_memset_d32_async(rt, flush, 0, flush_words, stream) != TILEC_RT_OK ||
            tilec_rt_event_record(rt, ev[2 * i], stream) != TILEC_RT_OK ||
            tilec_program_launch_best(p, name, args, nargs, stream, NULL) != TILEC_RT_OK ||
            tilec_rt_event_record(rt, ev[2 * i + 1], stream) != TILEC_RT_OK) {
            fail(rt, name, err, errlen);
            goto out;
        }
    }
    if (probe == reps)
        stamp[probe] = now_us();
    if (host_us) {
        double d[PROBE];
        for (int i = 0; i < probe; i++)
            d[i] = stamp[i + 1] - stamp[i];
        qsort(d, (size_t)probe, sizeof d[0], cmpd);
        *host_us = d[probe / 2];
    }
    if (tilec_rt_synchronize(rt) != TILEC_RT_OK) {
        fail(rt, "synchronize", err, errlen);
        goto out;
    }
    for (int i = 0; i < reps; i++)
        if (tilec_rt_event_elapsed_ms(rt, ev[2 * i], ev[2 * i + 1], &ms[i]) != TILEC_RT_OK) {
            fail(rt, "event_elapsed", err, errlen);
            goto out;
        }
    rc = 0;
out:
    for (int i = 0; i < made; i++)
        tilec_rt_event_destroy(rt, ev[i]);
    free(ev);
    return rc;
}

/* Host microseconds per launch: n launches enqueued back to back, timed on
 * the host clock (the caller synchronizes before and after). */
TB_EXPORT int tb_host_us(tilec_rt *rt, tilec_program *p, const char *name, const tilec_rt_arg *args, uint32_t nargs,
                         void *stream, int n, double *us, char *err, size_t errlen);
TB_EXPORT int tb_host_us(tilec_rt *rt, tilec_program *p, const char *name, const tilec_rt_arg *args, uint32_t nargs,
                         void *stream, int n, double *us, char *err, size_t errlen)
{
    if (!rt || !p || !name || !us || n <= 0) {
        snprintf(err, errlen, "tb_host_us: invalid argument");
        return -1;
    }
    double t0 = now_us();
    for (int i = 0; i < n; i++)
        if (tilec_program_launch_best(p, name, args, nargs, stream, NULL) != TILEC_RT_OK)
            return fail(rt, name, err, errlen);
    *us = (now_us() - t0) / n;
    return 0;
}

/* Host microseconds per run of a launch plan (tilec/plan.h): `n` runs with
 * the same slot values enqueued back to back; with CUDA graphs on, each is
 * one graph launch (the graph recorded before, by the caller's warm-up). */
TB_EXPORT int tb_plan_host_us(tilec_plan *p, const tilec_rt_arg *slots, uint32_t nslots, void *stream, int n,
                              double *us, char *err, size_t errlen);
TB_EXPORT int tb_plan_host_us(tilec_plan *p, const tilec_rt_arg *slots, uint32_t nslots, void *stream, int n,
                              double *us, char *err, size_t errlen)
{
    if (!p || !us || n <= 0) {
        snprintf(err, errlen, "tb_plan_host_us: invalid argument");
        return -1;
    }
    double t0 = now_us();
    for (int i = 0; i < n; i++)
        if (tilec_plan_run(p, slots, nslots, stream) != TILEC_RT_OK) {
            snprintf(err, errlen, "%s", tilec_plan_last_error(p));
            return -1;
        }
    *us = (now_us() - t0) / n;
    return 0;
}

/* Host microseconds per bare launch: tilec_rt_launch (argument addresses
 * into a fixed array, then cuLaunchKernel; no lookup, no grid function) of
 * a resolved kernel on a given grid, `n` times back to back. */
TB_EXPORT int tb_bare_us(const tilec_rt_kernel *k, const uint32_t grid[3], const tilec_rt_arg *args, void *stream,
                         int n, double *us, char *err, size_t errlen);
TB_EXPORT int tb_bare_us(const tilec_rt_kernel *k, const uint32_t grid[3], const tilec_rt_arg *args, void *stream,
                         int n, double *us, char *err, size_t errlen)
{
    if (!k || !grid || !us || n <= 0) {
        snprintf(err, errlen, "tb_bare_us: invalid argument");
        return -1;
    }
    double t0 = now_us();
    for (int i = 0; i < n; i++)
        if (tilec_rt_launch(k, grid, args, stream) != TILEC_RT_OK) {
            snprintf(err, errlen, "tilec_rt_launch of %s failed", tilec_rt_kernel_name(k));
            return -1;
        }
    *us = (now_us() - t0) / n;
    return 0;
}
