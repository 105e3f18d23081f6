/* test_plan.c: launch plans (runtime/plan.c, runtime/plan_graph.c) against
 * the fake driver (libfakecuda.so beside this binary: "device" memory on
 * the host, scale2 really computes y = 2 * x). A plan of two scale2
 * launches and an extern runs in one call; integer slots that do not fit
 * a parameter are refused before any launch; steps that do not suit the
 * kernel are refused when added; CUDA-graph mode runs eagerly and records
 * once per set of slot values, then replays with one cuGraphLaunch, with
 * the eager results; a full plan updates its least recent graph in place
 * (or replaces it without cuGraphExecUpdate); each graph owns its split-K
 * workspace; a plan with tensor lists records and replays keyed by the
 * lists' tensors; a driver without graphs says so. */
#include <criterion/criterion.h>
#include <string.h>

#include "fake_load.h"
#include "plan_helpers.h"
#include "tilec/plan.h"
#include "tilec/program.h"

static const char src[] = "kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 128)) hints { warps = 4 } {\n"
                          "    let i = pid(0) * 128 + range(128);\n"
                          "    store(y + i, 2.0 * load(x + i, i < n), i < n);\n"
                          "}\n"
                          "kernel lscale(x: [*f32], y: [*f32], s: f32) grid (len(x)) {\n" /* the fake's y[t] = s * x[t] */
                          "    let i = pid(0);\n"
                          "    let n = numel(x, i);\n"
                          "    let j = range(256);\n"
                          "    store(y[i] + j, s * load(x[i] + j, j < n), j < n);\n"
                          "}\n";

enum { N = 300 };

static fake_cuda_state *fake;
static tilec_rt *rt;
static tilec_ctx *ctx;
static tilec_module *mod;
static tilec_program *prog;
static tilec_externs *ext;
static uint64_t x, t, y;

/* an extern on the fake's host "device" memory: out = in + 1 */
static int add1(void *user, tilec_rt *r, void *stream, const tilec_tensor *in, uint32_t nin, tilec_tensor *out,
                uint32_t nout, char *err, size_t errlen)
{
    (void)user, (void)r, (void)stream, (void)err, (void)errlen;
    if (nin != 1 || nout != 1)
        return 1;
    const float *a = (const float *)(uintptr_t)in[0].data;
    float *b = (float *)(uintptr_t)out[0].data;
    for (int64_t i = 0; i < in[0].sizes[0]; i++)
        b[i] = a[i] + 1.0f;
    return 0;
}

static void setup(void)
{
    char path[4096];
    fake_cuda_path(path, sizeof path);
    fake = fake_cuda_load(path, NULL);
    cr_assert_eq(tilec_rt_open_driver(path, 0, &rt), TILEC_RT_OK);
    ctx = tilec_ctx_new();
    cr_assert_eq(tilec_parse_string(ctx, "p.tile", src, strlen(src), &mod), TILEC_OK);
    tilec_build_options o = {.arch = "sm_90", .threads = 1};
    cr_assert_eq(tilec_program_build(ctx, rt, mod, &o, &prog), TILEC_OK);
    ext = tilec_externs_new();
    cr_assert_eq(tilec_externs_register(ext, "add1", add1, NULL), 0);
    float host[N];
    for (int i = 0; i < N; i++)
        host[i] = (float)i;
    cr_assert_eq(tilec_rt_malloc(rt, sizeof host, &x), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, sizeof host, &t), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_malloc(rt, sizeof host, &y), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memcpy_htod(rt, x, host, sizeof host), TILEC_RT_OK);
}

static void teardown(void)
{
    tilec_rt_free(rt, x);
    tilec_rt_free(rt, t);
    tilec_rt_free(rt, y);
    tilec_externs_free(ext);
    tilec_program_free(prog);
    tilec_module_free(mod);
    tilec_ctx_free(ctx);
    tilec_rt_close(rt);
}

TestSuite(plan, .init = setup, .fini = teardown);

enum { SX, ST, SY, SN, NSLOTS };

/* x -> scale2 -> t -> scale2 -> y, optionally then y -> add1 -> t */
static tilec_plan *chain(int with_extern)
{
    tilec_plan *p = tilec_plan_new(prog, ext, "chain", NSLOTS);
    cr_assert_not_null(p);
    cr_assert_eq(tilec_plan_set_slot(p, SX, TILEC_PLAN_PTR, "x"), TILEC_RT_OK);
    cr_assert_eq(tilec_plan_set_slot(p, ST, TILEC_PLAN_PTR, "t"), TILEC_RT_OK);
    cr_assert_eq(tilec_plan_set_slot(p, SY, TILEC_PLAN_PTR, "y"), TILEC_RT_OK);
    cr_assert_eq(tilec_plan_set_slot(p, SN, TILEC_PLAN_INT, "N"), TILEC_RT_OK);
    tilec_plan_value a[3] = {slot(SX), slot(ST), slot(SN)}, b[3] = {slot(ST), slot(SY), slot(SN)};
    cr_assert_eq(tilec_plan_add_kernel(p, "scale2", 0, a, 3), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(tilec_plan_add_kernel(p, "scale2", -1, b, 3), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    if (with_extern) {
        tilec_plan_tensor in = {.data_slot = SY, .dtype = TILEC_DT_F32, .rank = 1, .sizes = {slot(SN)}};
        tilec_plan_tensor out = {.data_slot = ST, .dtype = TILEC_DT_F32, .rank = 1, .sizes = {slot(SN)}};
        cr_assert_eq(tilec_plan_add_extern(p, "add1", &in, 1, &out, 1), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    }
    return p;
}

static tilec_rt_status run(tilec_plan *p, int64_t n)
{
    tilec_rt_arg s[NSLOTS];
    s[SX].ptr = x, s[ST].ptr = t, s[SY].ptr = y, s[SN].i64 = n;
    return tilec_plan_run(p, s, NSLOTS, NULL);
}

static void expect(uint64_t buf, int n, float mul, float add)
{
    float host[N];
    cr_assert_eq(tilec_rt_memcpy_dtoh(rt, host, buf, sizeof host), TILEC_RT_OK);
    for (int i = 0; i < n; i++)
        cr_assert_float_eq(host[i], mul * (float)i + add, 1e-6, "element %d: %g", i, (double)host[i]);
}

Test(plan, runs_every_step_in_one_call)
{
    tilec_plan *p = chain(1);
    int before = fake->launches;
    cr_assert_eq(run(p, N), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(fake->launches - before, 2);
    expect(y, N, 4, 0);
    expect(t, N, 4, 1); /* the extern ran after the kernels */
    tilec_plan_stats st;
    tilec_plan_get_stats(p, &st);
    cr_assert_eq(st.runs, 1);
    cr_assert_eq(st.steps, 3);
    cr_assert_eq(st.recorded, 0);
    tilec_plan_free(p);
}

Test(plan, an_integer_that_does_not_fit_launches_nothing)
{
    tilec_plan *p = chain(0);
    int before = fake->launches;
    cr_assert_eq(run(p, (1LL << 40) + 5), TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(tilec_plan_last_error(p),
                     "chain: N is 1099511627781, which does not fit i32 (argument 3 of scale2)");
    cr_assert_eq(run(p, -(1LL << 31) - 1), TILEC_RT_INVALID_ARG);
    cr_assert_eq(fake->launches, before, "nothing was launched");
    tilec_rt_arg s[2];
    memset(s, 0, sizeof s);
    cr_assert_eq(tilec_plan_run(p, s, 2, NULL), TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(tilec_plan_last_error(p), "chain: run with 2 slot values; the plan has 4 slots");
    tilec_plan_free(p);
}

Test(plan, steps_that_do_not_suit_the_kernel_are_refused)
{
    tilec_plan *p = chain(0);
    tilec_plan_value a[3] = {slot(SX), slot(SN), slot(SN)};
    cr_assert_eq(tilec_plan_add_kernel(p, "scale2", 0, a, 3), TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(tilec_plan_last_error(p), "chain: argument 2 of 'scale2' is a pointer; slot 'N' does not hold one");
    cr_assert_eq(tilec_plan_add_kernel(p, "scale2", 0, a, 2), TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(tilec_plan_last_error(p), "chain: kernel 'scale2' takes 3 arguments; the step gives 2");
    cr_assert_eq(tilec_plan_add_kernel(p, "nope", 0, a, 3), TILEC_RT_NOT_FOUND);
    cr_assert_str_eq(tilec_plan_last_error(p), "chain: no kernel 'nope' variant 0 in the program");
    tilec_plan_value b[3] = {slot(SX), slot(9), slot(SN)};
    cr_assert_eq(tilec_plan_add_kernel(p, "scale2", 0, b, 3), TILEC_RT_INVALID_ARG);
    tilec_plan_tensor bad = {.data_slot = SN, .dtype = TILEC_DT_F32, .rank = 1, .sizes = {slot(SN)}};
    cr_assert_eq(tilec_plan_add_extern(p, "add1", &bad, 1, &bad, 1), TILEC_RT_INVALID_ARG);
    cr_assert_eq(tilec_plan_set_slot(p, NSLOTS, TILEC_PLAN_INT, "z"), TILEC_RT_INVALID_ARG);
    tilec_plan_stats st;
    tilec_plan_get_stats(p, &st);
    cr_assert_eq(st.steps, 2, "a refused step is not added");
    cr_assert_eq(run(p, N), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    expect(y, N, 4, 0);
    tilec_plan_free(p);
    cr_assert_null(tilec_plan_new(NULL, NULL, "x", 1));
}

Test(plan, cuda_graph_records_once_per_shape_and_replays)
{
    tilec_plan *p = chain(0);
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 2), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    int before = fake->launches;
    cr_assert_eq(run(p, N), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(fake->launches - before, 2, "the first run is eager");
    cr_assert_eq(fake->captured_launches, 2, "and records the same launches");
    expect(y, N, 4, 0);
    cr_assert_eq(tilec_rt_memset_d32(rt, y, 0, N), TILEC_RT_OK);
    cr_assert_eq(run(p, N), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(fake->graph_launches, 1, "the second is one graph launch");
    cr_assert_eq(fake->captured_launches, 2);
    expect(y, N, 4, 0); /* replay gives the eager result */
    /* another shape: eager, recorded anew; the first graph is still there */
    cr_assert_eq(tilec_rt_memset_d32(rt, y, 0, N), TILEC_RT_OK);
    cr_assert_eq(run(p, 100), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(fake->captured_launches, 4);
    expect(y, 100, 4, 0);
    cr_assert_eq(run(p, N), TILEC_RT_OK);
    cr_assert_eq(fake->graph_launches, 2);
    /* a third shape evicts the least recently used (100) */
    cr_assert_eq(run(p, 200), TILEC_RT_OK);
    cr_assert_eq(run(p, 100), TILEC_RT_OK);
    cr_assert_eq(fake->captured_launches, 8, "100 was evicted and recorded again");
    tilec_plan_stats st;
    tilec_plan_get_stats(p, &st);
    cr_assert_eq(st.recorded, 4);
    cr_assert_eq(st.replayed, 2);
    cr_assert_eq(st.graphs, 2);
    cr_assert_eq(fake->live_graph_execs, 2);
    cr_assert_eq(fake->live_graphs, 0, "graphs are freed once instantiated");
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 0), TILEC_RT_OK);
    cr_assert_eq(fake->live_graph_execs, 0, "turning graphs off frees them");
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 3), TILEC_RT_OK);
    cr_assert_eq(run(p, N), TILEC_RT_OK);
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 65), TILEC_RT_INVALID_ARG);
    int streams = fake->live_streams;
    tilec_plan_free(p);
    cr_assert_eq(fake->live_graph_execs, 0, "freeing the plan frees its graphs");
    cr_assert_eq(fake->live_streams, streams - 1, "and its capture stream");
}

/* run(p, n) with the output at out */
static tilec_rt_status run_to(tilec_plan *p, int64_t n, uint64_t out)
{
    tilec_rt_arg s[NSLOTS];
    s[SX].ptr = x, s[ST].ptr = t, s[SY].ptr = out, s[SN].i64 = n;
    return tilec_plan_run(p, s, NSLOTS, NULL);
}

Test(plan, a_full_plan_updates_its_least_recent_graph_in_place)
{
    uint64_t outs[3];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(tilec_rt_malloc(rt, N * sizeof(float), &outs[i]), TILEC_RT_OK);
    tilec_plan *p = chain(0);
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 1), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(run_to(p, N, outs[0]), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    /* a new output address, known sizes: recorded at once by updating the one graph held, and launched */
    int before = fake->launches, glaunches = fake->graph_launches;
    cr_assert_eq(run_to(p, N, outs[1]), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(fake->graph_updates, 1);
    cr_assert_eq(fake->graph_launches, glaunches + 1, "no eager run: the updated graph is launched");
    cr_assert_eq(fake->launches - before, 2, "the graph's two launches, once");
    expect(outs[1], N, 4, 0);
    cr_assert_eq(tilec_rt_memset_d32(rt, outs[1], 0, N), TILEC_RT_OK);
    int launches = fake->graph_launches;
    cr_assert_eq(run_to(p, N, outs[1]), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(fake->graph_launches, launches + 1, "the updated graph replays");
    expect(outs[1], N, 4, 0); /* into the new address */
    /* another size: eager first (its first-time work), then the same kernels: updated too */
    cr_assert_eq(run_to(p, 100, outs[2]), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(tilec_rt_memset_d32(rt, outs[2], 0, N), TILEC_RT_OK);
    cr_assert_eq(run_to(p, 100, outs[2]), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    expect(outs[2], 100, 4, 0);
    tilec_plan_stats st;
    tilec_plan_get_stats(p, &st);
    cr_assert_eq(st.recorded, 3);
    cr_assert_eq(st.updated, 2);
    cr_assert_eq(st.replayed, 2);
    cr_assert_eq(st.graphs, 1);
    cr_assert_eq(fake->live_graph_execs, 1, "updates instantiate nothing");
    tilec_plan_free(p);
    /* a plan of other steps: the update is refused, a new instantiation replaces the graph */
    p = chain(0);
    tilec_plan_value a[3] = {slot(SX), slot(SY), slot(SN)};
    cr_assert_eq(tilec_plan_add_kernel(p, "scale2", 0, a, 3), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 1), TILEC_RT_OK);
    cr_assert_eq(run_to(p, N, outs[0]), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    int updates = fake->graph_updates;
    cr_assert_eq(run_to(p, N, outs[1]), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(fake->graph_updates, updates + 1, "three kernels each time: updated");
    tilec_plan_free(p);
    for (int i = 0; i < 3; i++)
        tilec_rt_free(rt, outs[i]);
}

/* split-K in graph mode (docs/runtime.md, "Split-K workspaces"): each
 * recorded graph owns its workspace pair, so two graphs of one plan
 * replayed on two streams at once never share one; the pairs are made
 * outside the captures, zeroed, and freed with the graphs. The fake's
 * sk_v0 records the hidden pointers of the launch it runs (a replay runs
 * the recorded launches). */
static const tilec_rt_param_kind sk_kinds[] = {TILEC_RT_PARAM_POINTER, TILEC_RT_PARAM_I32};

static int sk_grid(const int64_t *args, uint32_t grid[3])
{
    grid[0] = (uint32_t)args[1];
    grid[1] = 2;
    grid[2] = 4; /* split_k 4 */
    return 0;
}

Test(plan, each_cuda_graph_owns_its_split_k_workspace)
{
    static const char image[] = "// fake module\n";
    const tilec_aot_kernel ks[] = {
        {"sk", 0, 1, "sk_v0", image, sizeof image, 128, 0, 2, sk_kinds, 0, sk_grid, 4, 4096, NULL},
    };
    int live0 = fake->live_allocs;
    tilec_program *skp = NULL;
    cr_assert_eq(tilec_program_load(rt, ks, 1, &skp), TILEC_RT_OK, "%s", tilec_rt_last_error(rt));
    tilec_plan *p = tilec_plan_new(skp, NULL, "sk", 2);
    cr_assert_not_null(p);
    cr_assert_eq(tilec_plan_set_slot(p, 0, TILEC_PLAN_PTR, "x"), TILEC_RT_OK);
    cr_assert_eq(tilec_plan_set_slot(p, 1, TILEC_PLAN_INT, "n"), TILEC_RT_OK);
    tilec_plan_value a[2] = {slot(0), slot(1)};
    cr_assert_eq(tilec_plan_add_kernel(p, "sk", 0, a, 2), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 4), TILEC_RT_OK);
    void *s1 = NULL, *s2 = NULL;
    cr_assert_eq(tilec_rt_stream_create(rt, TILEC_RT_STREAM_NON_BLOCKING, &s1), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_stream_create(rt, TILEC_RT_STREAM_NON_BLOCKING, &s2), TILEC_RT_OK);
    fake->split_dirty = 0;
    fake->allocs_in_capture = 0;
    tilec_rt_arg ga[2] = {{.ptr = x}, {.i64 = 3}}, gb[2] = {{.ptr = y}, {.i64 = 3}};
    cr_assert_eq(tilec_plan_run(p, ga, 2, s1), TILEC_RT_OK, "%s", tilec_plan_last_error(p)); /* eager, records A */
    unsigned long long eager = fake->split_part;
    int live1 = fake->live_allocs;
    cr_assert_eq(tilec_plan_run(p, gb, 2, s2), TILEC_RT_OK, "%s", tilec_plan_last_error(p)); /* records B, replays */
    unsigned long long pb = fake->split_part, cb = fake->split_cnt;
    cr_expect_eq(fake->live_allocs, live1 + 2, "B's own pair");
    cr_assert_eq(tilec_plan_run(p, ga, 2, s1), TILEC_RT_OK, "%s", tilec_plan_last_error(p)); /* replays A */
    unsigned long long pa = fake->split_part, ca = fake->split_cnt;
    tilec_plan_stats st;
    tilec_plan_get_stats(p, &st);
    cr_expect_eq(st.recorded, 2);
    cr_expect_eq(st.replayed, 1);
    cr_expect(pa && pb && pa != pb && ca != cb, "graphs A and B share a workspace: %llx %llx", pa, pb);
    cr_expect(pa != eager && pb != eager, "a graph uses a stream's workspace");
    cr_assert_eq(tilec_plan_run(p, gb, 2, s1), TILEC_RT_OK, "%s", tilec_plan_last_error(p)); /* B on another stream */
    cr_expect(fake->split_part == pb && fake->split_cnt == cb, "a graph keeps its own pair");
    cr_expect_eq(fake->allocs_in_capture, 0, "nothing allocated while capturing");
    cr_expect_eq(fake->split_dirty, 0, "every pair's counters start at zero");
    int live2 = fake->live_allocs;
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 0), TILEC_RT_OK);
    cr_expect_eq(fake->live_allocs, live2 - 4, "the graphs' pairs freed with them");
    tilec_plan_free(p);
    tilec_program_free(skp);
    cr_expect_eq(fake->live_allocs, live0, "nothing left");
    tilec_rt_stream_destroy(rt, s1);
    tilec_rt_stream_destroy(rt, s2);
}

Test(plan, an_integer_that_does_not_fit_is_refused_in_graph_mode_too)
{
    tilec_plan *p = chain(0);
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 2), TILEC_RT_OK);
    cr_assert_eq(run(p, 1LL << 32), TILEC_RT_INVALID_ARG);
    cr_assert_eq(fake->captured_launches, 0);
    cr_assert_eq(fake->launches, 0);
    tilec_plan_free(p);
}

Test(plan, a_failed_capture_says_so)
{
    setenv("FAKE_CUDA_MODE", "nocapture", 1);
    tilec_plan *p = chain(0);
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 2), TILEC_RT_OK);
    cr_assert_eq(run(p, N), TILEC_RT_DRIVER_ERROR);
    cr_assert(strstr(tilec_plan_last_error(p), "chain: recording a CUDA graph: cuStreamBeginCapture"), "%s",
              tilec_plan_last_error(p));
    unsetenv("FAKE_CUDA_MODE");
    tilec_plan_free(p);
}

/* ---- tensor lists in graph mode: the key is the lists' tensors ---- */

enum { LN = 130, LSZ = 4 };
static uint64_t lx[LN], ly[LN], lz; /* lz: another buffer for tensor 2 of ys */
static int64_t lnum[LN];

static void lists_setup(void)
{
    for (int q = 0; q < LN; q++) {
        float v[LSZ] = {(float)q, (float)q + 1, (float)q + 2, (float)q + 3};
        lnum[q] = LSZ;
        cr_assert_eq(tilec_rt_malloc(rt, sizeof v, &lx[q]), TILEC_RT_OK);
        cr_assert_eq(tilec_rt_malloc(rt, sizeof v, &ly[q]), TILEC_RT_OK);
        cr_assert_eq(tilec_rt_memcpy_htod(rt, lx[q], v, sizeof v), TILEC_RT_OK);
    }
    cr_assert_eq(tilec_rt_malloc(rt, LSZ * sizeof(float), &lz), TILEC_RT_OK);
}

static void lists_teardown(void)
{
    for (int q = 0; q < LN; q++) {
        tilec_rt_free(rt, lx[q]);
        tilec_rt_free(rt, ly[q]);
    }
    tilec_rt_free(rt, lz);
}

/* Run lscale(xs, ys, 3) over the first n tensors, the lists made anew (on
 * the stack, from copies of the arrays: a caller's fresh tilec_rt_list),
 * ys's tensor 2 at `y2` and every tensor of `k` elements. */
static tilec_rt_status run_lists(tilec_plan *p, uint32_t n, uint64_t y2, int64_t k)
{
    uint64_t xp[LN], yp[LN];
    int64_t num[LN];
    for (uint32_t q = 0; q < n; q++)
        xp[q] = lx[q], yp[q] = q == 2 ? y2 : ly[q], num[q] = k;
    tilec_rt_list xs = {n, xp, num}, ys = {n, yp, num};
    tilec_rt_arg s[3] = {{.list = &xs}, {.list = &ys}, {.f64 = 3.0}};
    return tilec_plan_run(p, s, 3, NULL);
}

/* Zero every ys tensor and lz, run, and check ys (tensor 2 at y2) holds 3 * x in its first k elements. */
static void lists_check(tilec_plan *p, uint32_t n, uint64_t y2, int64_t k)
{
    for (int q = 0; q < LN; q++)
        cr_assert_eq(tilec_rt_memset_d32(rt, ly[q], 0, LSZ), TILEC_RT_OK);
    cr_assert_eq(tilec_rt_memset_d32(rt, lz, 0, LSZ), TILEC_RT_OK);
    cr_assert_eq(run_lists(p, n, y2, k), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    for (uint32_t q = 0; q < n; q++) {
        float v[LSZ];
        cr_assert_eq(tilec_rt_memcpy_dtoh(rt, v, q == 2 ? y2 : ly[q], sizeof v), TILEC_RT_OK);
        for (int j = 0; j < LSZ; j++)
            cr_assert_float_eq(v[j], j < k ? 3.0f * (float)(q + (uint32_t)j) : 0.0f, 1e-6, "tensor %u element %d: %g",
                               q, j, (double)v[j]);
    }
}

Test(plan, a_plan_with_tensor_lists_replays_while_its_tensors_stay)
{
    lists_setup();
    tilec_plan *p = tilec_plan_new(prog, NULL, "lsg", 3);
    cr_assert_eq(tilec_plan_set_slot(p, 0, TILEC_PLAN_LIST, "xs"), TILEC_RT_OK);
    cr_assert_eq(tilec_plan_set_slot(p, 1, TILEC_PLAN_LIST, "ys"), TILEC_RT_OK);
    cr_assert_eq(tilec_plan_set_slot(p, 2, TILEC_PLAN_FLOAT, "s"), TILEC_RT_OK);
    tilec_plan_value a[3] = {slot(0), slot(1), slot(2)};
    cr_assert_eq(tilec_plan_add_kernel(p, "lscale", 0, a, 3), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 4), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    lists_check(p, 5, ly[2], LSZ); /* eager, then recorded: the table captured by value */
    cr_assert_eq(fake->list_launches, 1);
    cr_assert_eq(fake->captured_launches, 1);
    lists_check(p, 5, ly[2], LSZ); /* the same tensors in a new tilec_rt_list: replayed */
    cr_assert_eq(fake->graph_launches, 1);
    cr_assert_eq(fake->captured_launches, 1);
    cr_assert_eq(fake->list_launches, 2);
    lists_check(p, 5, lz, LSZ); /* another address in the list: recorded at once (its sizes ran before) */
    cr_assert_eq(fake->captured_launches, 2);
    cr_assert_eq(fake->graph_launches, 2);
    cr_assert_eq(fake->list_launches, 3, "no eager run");
    lists_check(p, 5, ly[2], 2); /* other element counts: eager, recorded */
    cr_assert_eq(fake->list_launches, 4);
    cr_assert_eq(fake->captured_launches, 3);
    lists_check(p, LN, ly[2], LSZ); /* past the table's 126 tensors: two launches in one graph */
    cr_assert_eq(fake->captured_launches, 5);
    lists_check(p, LN, ly[2], LSZ);
    cr_assert_eq(fake->graph_launches, 3);
    cr_assert_eq(fake->list_launches, 8, "the replay launched both tables");
    lists_check(p, 5, ly[2], LSZ); /* the first graph is still held */
    cr_assert_eq(fake->graph_launches, 4);
    cr_assert_eq(fake->captured_launches, 5);
    tilec_plan_stats st;
    tilec_plan_get_stats(p, &st);
    cr_assert_eq(st.recorded, 4);
    cr_assert_eq(st.replayed, 3);
    tilec_rt_arg s[3] = {{.list = NULL}, {.list = NULL}, {.f64 = 3.0}};
    cr_assert_eq(tilec_plan_run(p, s, 3, NULL), TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(tilec_plan_last_error(p), "lsg: slot 'xs' is a tensor list, but NULL was passed");
    tilec_plan_free(p);
    lists_teardown();
}

static void setup_nographs(void)
{
    setenv("FAKE_CUDA_MODE", "nographs", 1);
    setup();
}

static void teardown_nographs(void)
{
    teardown();
    unsetenv("FAKE_CUDA_MODE");
}

TestSuite(plan_nographs, .init = setup_nographs, .fini = teardown_nographs);

Test(plan_nographs, a_driver_without_graphs_says_so)
{
    tilec_plan *p = chain(0);
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 2), TILEC_RT_DRIVER_TOO_OLD);
    cr_assert_str_eq(tilec_plan_last_error(p), "chain: the CUDA driver lacks the stream capture and graph calls");
    cr_assert_eq(run(p, N), TILEC_RT_OK, "eager runs still work");
    tilec_plan_free(p);
}

static void setup_noupdate(void)
{
    setenv("FAKE_CUDA_MODE", "noupdate", 1);
    setup();
}

TestSuite(plan_noupdate, .init = setup_noupdate, .fini = teardown_nographs);

Test(plan_noupdate, without_the_update_call_a_full_plan_replaces_its_least_recent_graph)
{
    tilec_plan *p = chain(0);
    cr_assert_eq(tilec_plan_set_cuda_graph(p, 1), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(run(p, N), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(run(p, 100), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    cr_assert_eq(run(p, 100), TILEC_RT_OK, "%s", tilec_plan_last_error(p));
    expect(y, 100, 4, 0);
    tilec_plan_stats st;
    tilec_plan_get_stats(p, &st);
    cr_assert_eq(st.recorded, 2);
    cr_assert_eq(st.updated, 0);
    cr_assert_eq(st.replayed, 1);
    cr_assert_eq(st.graphs, 1);
    cr_assert_eq(fake->graph_updates, 0);
    cr_assert_eq(fake->live_graph_execs, 1, "the old graph was destroyed");
    tilec_plan_free(p);
}
