/* test_api_args.c: every public function of include/tilec/ (every header) called with a
 * NULL pointer (each pointer argument in turn) or an invalid value (an
 * out-of-range index, kind, variant or size): a status or an empty answer,
 * never a crash. One Criterion parameter per case, so a crash names its
 * case; the table is in header order. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "helpers.h"
#include "rt_calls.h"
#include "tilec/cache.h"
#include "tilec/emitter.h"
#include "tilec/externs.h"
#include "tilec/log.h"
#include "tilec/lower.h"
#include "tilec/pool.h"
#include "tilec/program.h"
#include "tilec/runtime.h"
#include "tilec/wir.h"
#include "tilec/workers.h"

static tilec_ctx *ctx;
static tilec_module *m;
static const tilec_kernel *k;
static const tilec_graph *g;
static tilec_wir *w;
static const tilec_sink null_sink = {NULL, NULL};
static int64_t v64;
static size_t sz;
static char buf[256];

static int drop(void *user, const char *data, size_t len)
{
    (void)user;
    (void)data;
    (void)len;
    return 0;
}
static const tilec_sink sink = {drop, NULL};

/* a context, examples/block.tile checked, its kernel scale_shift, its graph and the graph's IR */
static void setup(void)
{
    ctx = tilec_ctx_new();
    cr_assert_eq(tilec_parse_file(ctx, "examples/block.tile", &m), TILEC_OK);
    k = tilec_module_kernel(m, 0);
    g = tilec_module_graph(m, 0);
    cr_assert_eq(tilec_wir_lower(ctx, m, g, &w), TILEC_OK);
}

static void teardown(void)
{
    tilec_wir_free(w);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

static int task(void *arg, char **error)
{
    (void)arg;
    (void)error;
    return 0;
}

static int visit(void *user, const tilec_wir_line *l)
{
    (void)user;
    (void)l;
    return 0;
}

#define ARG TILEC_ERR_ARG
#define RARG TILEC_RT_INVALID_ARG
#define EQ(call, want) cr_expect_eq((long long)(call), (long long)(want), "%s", #call)
#define NUL(call) cr_expect_null((void *)(call), "%s", #call)
#define NONNULL(call) cr_expect_not_null((void *)(call), "%s", #call)
#define RUNS(call) (void)(call)

typedef struct api_case {
    const char *name;
    void (*fn)(void);
} api_case;

/* ---- tilec.h, ast.h ---- */
static void c_tilec(void)
{
    tilec_module *out = NULL;
    tilec_ctx_free(NULL);
    tilec_ctx_set_diag_callback(NULL, NULL, NULL);
    tilec_ctx_set_max_errors(NULL, 3);
    EQ(tilec_ctx_diag_count(NULL), 0);
    NUL(tilec_ctx_diag(NULL, 0));
    NUL(tilec_ctx_diag(ctx, 1000));
    EQ(tilec_ctx_error_count(NULL), 0);
    tilec_ctx_clear_diags(NULL);
    EQ(tilec_diag_render(NULL, sink), ARG);
    EQ(tilec_ctx_render_diags(NULL, sink), ARG);
    EQ(tilec_ctx_render_diags(ctx, null_sink), ARG);
    EQ(tilec_parse_file(NULL, "examples/block.tile", &out), ARG);
    EQ(tilec_parse_file(ctx, NULL, &out), ARG);
    EQ(tilec_parse_file(ctx, "examples/block.tile", NULL), ARG);
    EQ(tilec_parse_string(NULL, "x", "", 0, &out), ARG);
    EQ(tilec_parse_string(ctx, "x", NULL, 3, &out), ARG);
    EQ(tilec_parse_string(ctx, "x", "", 0, NULL), ARG);
    tilec_module_free(NULL);
    /* count(NULL) == 0, at(NULL, 0) and at(m, past the end) are NULL, find(NULL or name NULL) is NULL */
    static const struct {
        size_t (*count)(const tilec_module *);
        const void *(*at)(const tilec_module *, size_t);
        const void *(*find)(const tilec_module *, const char *);
        const char *name;
    } walk[] = {
        {tilec_module_item_count, (const void *(*)(const tilec_module *, size_t))tilec_module_item, NULL, NULL},
        {tilec_module_kernel_count, (const void *(*)(const tilec_module *, size_t))tilec_module_kernel,
         (const void *(*)(const tilec_module *, const char *))tilec_module_find_kernel, "scale_shift"},
        {tilec_module_extern_count, (const void *(*)(const tilec_module *, size_t))tilec_module_extern,
         (const void *(*)(const tilec_module *, const char *))tilec_module_find_extern, "gemm"},
        {tilec_module_graph_count, (const void *(*)(const tilec_module *, size_t))tilec_module_graph,
         (const void *(*)(const tilec_module *, const char *))tilec_module_find_graph, "block"},
    };
    for (size_t i = 0; i < sizeof walk / sizeof walk[0]; i++) {
        EQ(walk[i].count(NULL), 0);
        NUL(walk[i].at(NULL, 0));
        NUL(walk[i].at(m, 1000));
        if (walk[i].find) {
            NUL(walk[i].find(NULL, walk[i].name));
            NUL(walk[i].find(m, NULL));
            NONNULL(walk[i].find(m, walk[i].name));
        }
    }
    NUL(tilec_module_file(NULL));
    NUL(tilec_module_source(NULL, &sz));
    NONNULL(tilec_module_source(m, NULL));
    EQ(tilec_kernel_hint(NULL, -1, "warps", 7), 7);
    EQ(tilec_kernel_hint(k, -1, NULL, 7), 7);
    EQ(tilec_kernel_hint(k, 1000, "warps", 7), 7);
    EQ(tilec_module_dump_ast(NULL, sink), ARG);
    EQ(tilec_module_dump_ast(m, null_sink), ARG);
    tilec_sink s = tilec_sink_file(NULL);
    EQ(s.write ? s.write(s.user, "x", 1) != 0 : 1, 1);
    NONNULL(tilec_status_string((tilec_status)99));
    NONNULL(tilec_version());
    NONNULL(tilec_dtype_name((tilec_dtype)99));
    EQ(tilec_dtype_size((tilec_dtype)99), 0);
    RUNS(tilec_dtype_class((tilec_dtype)99));
    NONNULL(tilec_op_spelling((tilec_op)999));
}

/* ---- emitter.h ---- */
static void c_emitter(void)
{
    const char *names[4];
    NUL(tilec_find_emitter(ctx, NULL));
    EQ(tilec_emitter_names(ctx, NULL, 4), 0);
    EQ(tilec_emitter_names(ctx, names, 0), 0);
    NUL(tilec_emit_ctx(NULL));
    NUL(tilec_emit_module(NULL));
    NUL(tilec_emit_wir(NULL));
    NUL(tilec_emit_graph(NULL));
    NUL(tilec_emit_option(NULL, "aot"));
    EQ(tilec_emit_write(NULL, "f", "x", 1), -1);
    EQ(tilec_emit_printf(NULL, "f", "%d", 1), -1);
    EQ(tilec_module_emit(NULL, m, "c", NULL, sink), ARG);
    EQ(tilec_module_emit(ctx, NULL, "c", NULL, sink), ARG);
    EQ(tilec_module_emit(ctx, m, NULL, NULL, sink), ARG);
    EQ(tilec_module_emit(ctx, m, "c", NULL, null_sink), ARG);
    EQ(tilec_module_emit(ctx, m, "c", &(tilec_emit_options){.noptions = 2}, sink), ARG);
    EQ(tilec_module_emit(ctx, m, "c", &(tilec_emit_options){.dir = ""}, sink), ARG);
}

/* ---- lower.h ---- */
static void c_lower(void)
{
    tilec_kernel_code code;
    void *cubin = NULL;
    uint32_t grid[3];
    int64_t args[8] = {0};
    EQ(tilec_kernel_variant_count(NULL), 0);
    EQ(tilec_lower_kernel(NULL, m, k, 0, &code), ARG);
    EQ(tilec_lower_kernel(ctx, NULL, k, 0, &code), ARG);
    EQ(tilec_lower_kernel(ctx, m, NULL, 0, &code), ARG);
    EQ(tilec_lower_kernel(ctx, m, k, 0, NULL), ARG);
    EQ(tilec_lower_kernel(ctx, m, k, 1000, &code), ARG);
    tilec_kernel_code_free(NULL);
    EQ(tilec_module_emit_cuda(NULL, m, sink), ARG);
    EQ(tilec_module_emit_cuda(ctx, NULL, sink), ARG);
    EQ(tilec_module_emit_cuda(ctx, m, null_sink), ARG);
    EQ(tilec_compile_kernel(NULL, m, k, 0, "sm_90", NULL, &cubin, &sz), ARG);
    EQ(tilec_compile_kernel(ctx, NULL, k, 0, "sm_90", NULL, &cubin, &sz), ARG);
    EQ(tilec_compile_kernel(ctx, m, NULL, 0, "sm_90", NULL, &cubin, &sz), ARG);
    EQ(tilec_compile_kernel(ctx, m, k, 0, NULL, NULL, &cubin, &sz), ARG);
    EQ(tilec_compile_kernel(ctx, m, k, 0, "sm_90", NULL, NULL, &sz), ARG);
    EQ(tilec_compile_kernel(ctx, m, k, 0, "sm_90", NULL, &cubin, NULL), ARG);
    EQ(tilec_compile_kernel(ctx, m, k, 1000, "sm_90", NULL, &cubin, &sz), ARG);
    EQ(tilec_kernel_grid(NULL, 0, args, grid), ARG);
    EQ(tilec_kernel_grid(k, 0, NULL, grid), ARG);
    EQ(tilec_kernel_grid(k, 0, args, NULL), ARG);
    EQ(tilec_kernel_grid(k, 1000, args, grid), ARG);
}

/* ---- pool.h ---- */
static void c_pool(void)
{
    tilec_pool *p = NULL;
    tilec_pool_stats st;
    EQ(tilec_pool_new(1, NULL) != 0, 1);
    cr_assert_eq(tilec_pool_new(1, &p), 0);
    NUL(tilec_pool_submit(NULL, "t", task, NULL));
    NUL(tilec_pool_submit(p, "t", NULL, NULL));
    RUNS(tilec_pool_submit(p, NULL, task, NULL));
    EQ(tilec_task_wait(NULL) != 0, 1);
    RUNS(tilec_task_name(NULL));
    RUNS(tilec_task_error(NULL));
    EQ(tilec_task_seconds(NULL), 0);
    EQ(tilec_pool_wait(NULL, NULL), 0); /* no tasks, none failed */
    tilec_pool_get_stats(NULL, &st);
    tilec_pool_get_stats(p, NULL);
    tilec_pool_free(NULL);
    tilec_pool_free(p);
}

/* ---- program.h ---- */
static int compiled_none(void *user, const tilec_aot_kernel *kern)
{
    (void)user;
    (void)kern;
    return 1;
}

static void c_program(void)
{
    tilec_program *p = NULL;
    tilec_rt_param_kind kind;
    tilec_program_stats st;
    tilec_build_options o = {.arch = "sm_90", .threads = 1};
    EQ(tilec_rt_param_kind_of(TILEC_ARG_PTR, NULL) != 0, 1);
    EQ(tilec_rt_param_kind_of((tilec_arg_kind)999, &kind) != 0, 1);
    EQ(tilec_program_build(NULL, NULL, m, &o, &p), ARG);
    EQ(tilec_program_build(ctx, NULL, NULL, &o, &p), ARG);
    EQ(tilec_program_build(ctx, NULL, m, &o, NULL), ARG);
    EQ(tilec_program_compile(NULL, m, &o, compiled_none, NULL, &st), ARG);
    EQ(tilec_program_compile(ctx, NULL, &o, compiled_none, NULL, &st), ARG);
    EQ(tilec_program_compile(ctx, m, NULL, compiled_none, NULL, &st), ARG);
    EQ(tilec_program_compile(ctx, m, &o, NULL, NULL, &st), ARG);
    tilec_build_options no_arch = {.threads = 1};
    EQ(tilec_program_compile(ctx, m, &no_arch, compiled_none, NULL, NULL), ARG);
    /* no device and no arch: an error with a message */
    tilec_ctx_clear_diags(ctx);
    EQ(tilec_program_build(ctx, NULL, m, NULL, &p) != TILEC_OK, 1);
    EQ(tilec_ctx_error_count(ctx), 1);
    tilec_program_free(NULL);
    EQ(tilec_program_load(NULL, NULL, 1, &p), RARG);
    NUL(tilec_program_kernel(NULL, "k", 0));
    EQ(tilec_program_launch(NULL, "k", 0, NULL, 0, NULL), RARG);
    EQ(tilec_program_launch_best(NULL, "k", NULL, 0, NULL, NULL), RARG);
    tilec_program_get_stats(NULL, &st);
}

/* ---- runtime.h (no device here: NULL handles only) ---- */
static void c_runtime(void)
{
    void *cubin = NULL;
    char *log = NULL;
    int a, b;
    uint32_t grid[3] = {1, 1, 1};
    NONNULL(tilec_rt_status_string((tilec_rt_status)99));
    EQ(tilec_rt_open(0, NULL), RARG);
    EQ(tilec_rt_open_driver("/nonexistent/libcuda.so", 0, NULL), RARG);
    tilec_rt_close(NULL);
    RUNS(tilec_rt_last_error(NULL));
    expect_all_calls_fail(NULL, RARG); /* every call on a handle */
    EQ(tilec_rt_launch_meta_check(NULL, buf, sizeof buf), RARG);
    EQ(tilec_rt_launch_meta_check(&(tilec_rt_launch_meta){.block_x = 32, .nparams = 2}, NULL, 0), RARG);
    EQ(tilec_rt_param_size((tilec_rt_param_kind)99), 0);
    EQ(tilec_rt_module_load(NULL, buf, 4, NULL), RARG);
    tilec_rt_module_unload(NULL);
    EQ(tilec_rt_kernel_get(NULL, "k", NULL, NULL), RARG);
    RUNS(tilec_rt_kernel_name(NULL));
    RUNS(tilec_rt_kernel_meta(NULL));
    EQ(tilec_rt_launch(NULL, grid, NULL, NULL), RARG);
    EQ(tilec_nvrtc_compile(NULL, "n", "sm_90", NULL, 0, &cubin, &sz, &log), RARG);
    EQ(tilec_nvrtc_compile("x", "n", "sm_90", NULL, 2, &cubin, &sz, &log), RARG);
    EQ(tilec_nvrtc_compile("x", "n", "sm_90", NULL, 0, NULL, &sz, &log), RARG);
    EQ(tilec_nvrtc_compile("x", "n", "sm_90", NULL, 0, &cubin, NULL, &log), RARG);
    EQ(tilec_nvrtc_compile_isolated(NULL, "n", "sm_90", NULL, 0, &cubin, &sz, &log), RARG);
    EQ(tilec_nvrtc_compile_isolated("x", "n", "sm_90", NULL, 2, &cubin, &sz, &log), RARG);
    EQ(tilec_nvrtc_compile_isolated("x", "n", "sm_90", NULL, 0, NULL, &sz, &log), RARG);
    RUNS(tilec_nvrtc_version(NULL, &b));
    RUNS(tilec_nvrtc_version(&a, NULL));
    EQ(tilec_nvrtc_include_dir(NULL, 10), RARG);
    EQ(tilec_nvrtc_arch_supported(NULL, NULL, 0), RARG);
    EQ(tilec_nvrtc_arch_supported("sm_9", buf, 0), RARG);
    EQ(tilec_nvrtc_arch_supported("sm_90a", buf, 1), TILEC_RT_OK);
    EQ(buf[0], 0); /* cut to its size */
    EQ(tilec_nvrtc_include_dir(buf, 0), RARG);
}

/* ---- cache.h ---- */
static void c_cache(void)
{
    tilec_bundle *b = NULL;
    void *data = NULL;
    tilec_hasher h;
    tilec_cache *c = NULL;
    tilec_cache_stats st;
    char hex[65];
    tilec_bundle_free(NULL);
    EQ(tilec_bundle_copy(NULL, &b), RARG);
    EQ(tilec_bundle_serialize(NULL, "k", &data, &sz), RARG);
    EQ(tilec_bundle_parse(NULL, 10, "k", &b, buf, sizeof buf), RARG);
    EQ(tilec_bundle_parse(buf, sizeof buf, "k", NULL, buf, sizeof buf), RARG);
    EQ(tilec_bundle_parse(buf, sizeof buf, "k", &b, NULL, 10) != TILEC_RT_OK, 1);
    RUNS(tilec_bundle_checksum(NULL, 0));
    EQ(tilec_bundle_checksum(NULL, 5), tilec_bundle_checksum("", 0));
    tilec_hasher_init(NULL);
    tilec_hasher_init(&h);
    tilec_hasher_update(NULL, "x", 1);
    tilec_hasher_update(&h, NULL, 5);
    tilec_hasher_update_str(NULL, "x");
    tilec_hasher_update_str(&h, NULL);
    tilec_hasher_update_u64(NULL, 1);
    tilec_hasher_final(NULL, hex);
    tilec_hasher_final(&h, NULL);
    EQ(tilec_cache_key_ok(NULL, 5), 0);
    EQ(tilec_cache_open(NULL, NULL), RARG);
    tilec_cache_close(NULL);
    EQ(tilec_cache_get(NULL, "k", &b), RARG);
    cr_assert_eq(tilec_cache_open("/nonexistent/x/y", &c), TILEC_RT_OK);
    EQ(tilec_cache_get(c, NULL, &b), RARG);
    EQ(tilec_cache_get(c, "k", NULL), RARG);
    EQ(tilec_cache_put(NULL, "k", b), RARG);
    EQ(tilec_cache_put(c, NULL, b), RARG);
    EQ(tilec_cache_put(c, "k", NULL), RARG);
    tilec_cache_get_stats(NULL, &st);
    tilec_cache_get_stats(c, NULL);
    NUL(tilec_cache_dir(NULL));
    RUNS(tilec_cache_last_error(NULL));
    tilec_cache_set_fault_hook(NULL, NULL, NULL);
    tilec_cache_close(c);
}

/* ---- externs.h, log.h ---- */
static void c_externs(void)
{
    tilec_externs *x = tilec_externs_new();
    tilec_tensor t[2];
    tilec_externs_free(NULL);
    EQ(tilec_externs_register(NULL, "s", NULL, NULL) != 0, 1);
    EQ(tilec_externs_register(x, NULL, NULL, NULL) != 0, 1);
    EQ(tilec_externs_register(x, "s", NULL, NULL) != 0, 1);
    EQ(tilec_externs_call(NULL, "s", NULL, NULL, t, 1, t, 1), RARG);
    EQ(tilec_externs_call(x, NULL, NULL, NULL, t, 1, t, 1), RARG);
    EQ(tilec_externs_call(x, "s", NULL, NULL, NULL, 1, t, 1), RARG);
    EQ(tilec_externs_call(x, "s", NULL, NULL, t, 1, NULL, 1), RARG);
    RUNS(tilec_externs_last_error(NULL));
    tilec_cublas_free(NULL);
    EQ(tilec_cublas_sgemm(NULL, NULL, NULL, t, 2, t, 1, NULL, 0) != 0, 1);
    EQ(tilec_cublas_hgemm(NULL, NULL, NULL, NULL, 2, t, 1, buf, sizeof buf) != 0, 1);
    tilec_externs_free(x);
    EQ(tilec_log_enabled(NULL), 0);
    EQ(tilec_log_spec_enables(NULL, "x"), 0);
    EQ(tilec_log_spec_enables("x", NULL), 0);
}

/* ---- wir.h ---- */
static void c_wir(void)
{
    tilec_wir *out = NULL;
    const tilec_wir_line *lines[4];
    tilec_wir_size sizes[4];
    size_t n;
    tilec_wir_hooks hooks;
    memset(&hooks, 0, sizeof hooks);
    NONNULL(tilec_wir_kind_name((tilec_wir_kind)999));
    EQ(tilec_wir_lower(NULL, m, g, &out), ARG);
    EQ(tilec_wir_lower(ctx, NULL, g, &out), ARG);
    EQ(tilec_wir_lower(ctx, m, NULL, &out), ARG);
    EQ(tilec_wir_lower(ctx, m, g, NULL), ARG);
    EQ(tilec_wir_plan(NULL, w), ARG);
    EQ(tilec_wir_plan(ctx, NULL), ARG);
    tilec_wir_free(NULL);
    NUL(tilec_wir_graph(NULL));
    EQ(tilec_wir_line_count(NULL), 0);
    NUL(tilec_wir_line_at(NULL, 0));
    NUL(tilec_wir_line_at(w, 100000));
    EQ(tilec_wir_output_count(NULL), 0);
    NUL(tilec_wir_output(NULL, 0));
    NUL(tilec_wir_output(w, 1000));
    EQ(tilec_wir_tuple_results(NULL, NULL, lines, 4), 0);
    EQ(tilec_wir_tuple_results(w, NULL, lines, 4), 0);
    EQ(tilec_wir_tuple_results(w, tilec_wir_line_at(w, 0), NULL, 4), 0);
    EQ(tilec_wir_extern_results(NULL, NULL, lines, 4), 0);
    EQ(tilec_wir_extern_results(w, NULL, lines, 4), 0);
    EQ(tilec_wir_extern_results(w, tilec_wir_line_at(w, 0), NULL, 4), 0);
    EQ(tilec_wir_walk(NULL, visit, NULL), 0); /* nothing visited */
    EQ(tilec_wir_walk(w, NULL, NULL), 0);
    EQ(tilec_wir_dispatch(NULL, w, &hooks, "x", NULL), ARG);
    EQ(tilec_wir_dispatch(ctx, NULL, &hooks, "x", NULL), ARG);
    EQ(tilec_wir_dispatch(ctx, w, NULL, "x", NULL), ARG);
    RUNS(tilec_wir_dispatch(ctx, w, &hooks, NULL, NULL));
    EQ(tilec_wir_print(NULL, sink), ARG);
    EQ(tilec_wir_print(w, null_sink), ARG);
    EQ(tilec_wir_parse_sizes(NULL, sizes, 4, &n), ARG);
    EQ(tilec_wir_parse_sizes("R=1", NULL, 4, &n), ARG);
    EQ(tilec_wir_parse_sizes("R=1", sizes, 4, NULL), ARG);
    tilec_ix r_sym = {.op = TILEC_IX_SYM, .name = "R"};
    EQ(tilec_wir_eval_expr(NULL, sizes, 0, &v64), ARG);
    EQ(tilec_wir_eval_expr(&r_sym, NULL, 2, &v64), ARG);
    EQ(tilec_wir_eval_expr(&r_sym, sizes, 0, NULL), ARG);
    /* tilec/iexpr.h: a missing result, operand or name, an unknown op */
    EQ(tilec_ix_apply(TILEC_IX_ADD, 1, 2, NULL), TILEC_IX_BAD);
    EQ(tilec_ix_apply((tilec_ix_op)99, 1, 2, &v64), TILEC_IX_BAD);
    EQ(tilec_ix_eval(NULL, NULL, NULL, &v64, NULL), TILEC_IX_BAD);
    EQ(tilec_ix_eval(&(tilec_ix){.op = TILEC_IX_ADD}, NULL, NULL, &v64, NULL), TILEC_IX_BAD);
    EQ(tilec_ix_eval(&(tilec_ix){.op = (tilec_ix_op)99}, NULL, NULL, NULL, NULL), TILEC_IX_BAD);
    EQ(tilec_ix_eval(&(tilec_ix){.op = TILEC_IX_SYM}, NULL, NULL, NULL, NULL), TILEC_IX_UNKNOWN);
    RUNS(tilec_ix_err_string((tilec_ix_err)99));
    EQ(tilec_wir_peak_bytes(NULL, w, TILEC_WIR_PEAK_LIVE, sizes, 0, &v64), ARG);
    EQ(tilec_wir_peak_bytes(ctx, NULL, TILEC_WIR_PEAK_LIVE, sizes, 0, &v64), ARG);
    EQ(tilec_wir_peak_bytes(ctx, w, (tilec_wir_peak_kind)99, sizes, 0, &v64), ARG);
    EQ(tilec_wir_peak_bytes(ctx, w, TILEC_WIR_PEAK_LIVE, NULL, 2, &v64), ARG);
    EQ(tilec_wir_peak_bytes(ctx, w, TILEC_WIR_PEAK_LIVE, sizes, 0, NULL), ARG);
    EQ(tilec_module_check_sizes(NULL, m, sizes, 0), ARG);
    EQ(tilec_module_check_sizes(ctx, NULL, sizes, 0), ARG);
    EQ(tilec_module_check_sizes(ctx, m, NULL, 2), ARG);
    EQ(tilec_module_emit_ir(NULL, m, 1, NULL, 0, sink), ARG);
    EQ(tilec_module_emit_ir(ctx, NULL, 1, NULL, 0, sink), ARG);
    EQ(tilec_module_emit_ir(ctx, m, 1, NULL, 2, sink), ARG);
    EQ(tilec_module_emit_ir(ctx, m, 1, NULL, 0, null_sink), ARG);
}

/* ---- workers.h ---- */
static void c_workers(void)
{
    void *cubin = NULL;
    char *log = NULL;
    EQ(tilec_compile_workers_compile(NULL, "x", "n", "sm_90", &cubin, &sz, &log), RARG);
    tilec_compile_workers_free(NULL);
    RUNS(tilec_compile_worker_main(-1, -1)); /* a read error is the end of its jobs */
}

static const api_case cases[] = {
    {"tilec.h and ast.h", c_tilec}, {"emitter.h", c_emitter}, {"lower.h", c_lower},
    {"pool.h", c_pool},             {"program.h", c_program}, {"runtime.h", c_runtime},
    {"cache.h", c_cache},           {"externs.h and log.h", c_externs},
    {"wir.h", c_wir},               {"workers.h", c_workers},
};

/* The parameter is the case's index: each test runs in a fresh process
 * (maybe at other addresses), so no pointer crosses. */
ParameterizedTestParameters(api_args, every_public_call)
{
    static int idx[sizeof cases / sizeof cases[0]];
    for (size_t i = 0; i < sizeof idx / sizeof idx[0]; i++)
        idx[i] = (int)i;
    return cr_make_param_array(int, idx, sizeof idx / sizeof idx[0]);
}

ParameterizedTest(int *i, api_args, every_public_call, .init = setup, .fini = teardown, .timeout = 60)
{
    cr_log_info("%s", cases[*i].name);
    cases[*i].fn();
}
