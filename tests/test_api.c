/* test_api.c: the public API: contexts, callbacks, limits, walking a
 * module, statuses, and two threads compiling at once. */
#include <criterion/criterion.h>
#include <pthread.h>

#include "api/compile.h"
#include "helpers.h"

static const char two_errors[] =
    "kernel k(x: *f32, n: i32) grid (1) hints { B = 64 } {\n"
    "    let a = range(B) + range(32);\n"
    "    let b = undefined_name;\n"
    "}\n";

static void count_cb(void *user, const tilec_diag *d)
{
    int *n = user;
    if (d->severity == TILEC_SEV_ERROR)
        (*n)++;
}

Test(api, callback_sees_every_error)
{
    tilec_ctx *ctx = tilec_ctx_new();
    int n = 0;
    tilec_ctx_set_diag_callback(ctx, count_cb, &n);
    tilec_module *m = (tilec_module *)1;
    cr_assert_eq(tilec_parse_string(ctx, "two.tile", two_errors, sizeof two_errors - 1, &m), TILEC_ERR_INPUT);
    cr_expect_null(m);
    cr_expect_eq(n, 2);
    cr_expect_eq(tilec_ctx_error_count(ctx), 2);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_expect_str_eq(d->file, "two.tile");
    cr_expect_eq(d->line, 2);
    cr_expect_eq(d->col, 22);
    cr_expect_str_eq(d->message, "shapes [64] and [32] do not broadcast in '+'");
    cr_expect_str_eq(d->source_line, "    let a = range(B) + range(32);");
    cr_expect_eq(d->source_col, 22);
    membuf out = {0};
    cr_expect_eq(tilec_diag_render(d, membuf_sink(&out)), TILEC_OK);
    cr_expect_str_eq(out.s, "two.tile:2:22: error: shapes [64] and [32] do not broadcast in '+'\n"
                            " 2 |     let a = range(B) + range(32);\n"
                            "   |                      ^\n");
    free(out.s);
    tilec_ctx_clear_diags(ctx);
    cr_expect_eq(tilec_ctx_diag_count(ctx), 0);
    tilec_ctx_free(ctx);
}

Test(api, error_limit)
{
    char src[8192];
    size_t k = (size_t)snprintf(src, sizeof src, "kernel k(n: i32) grid (1) {\n");
    for (int i = 0; i < 30; i++)
        k += (size_t)snprintf(src + k, sizeof src - k, "    let v%d = nope%d;\n", i, i);
    k += (size_t)snprintf(src + k, sizeof src - k, "}\n");
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_ctx_set_max_errors(ctx, 5);
    tilec_module *m = NULL;
    cr_expect_eq(tilec_parse_string(ctx, "many.tile", src, k, &m), TILEC_ERR_INPUT);
    cr_expect_eq(tilec_ctx_error_count(ctx), 5);
    cr_assert_eq(tilec_ctx_diag_count(ctx), 6);
    const tilec_diag *last = tilec_ctx_diag(ctx, 5);
    cr_expect_eq(last->severity, TILEC_SEV_NOTE);
    cr_expect_str_eq(last->message, "too many errors (limit 5); stopping");
    tilec_ctx_clear_diags(ctx);
    tilec_ctx_set_max_errors(ctx, 0); /* back to the default */
    cr_expect_eq(tilec_parse_string(ctx, "many.tile", src, k, &m), TILEC_ERR_INPUT);
    cr_expect_eq(tilec_ctx_error_count(ctx), TILEC_DEFAULT_MAX_ERRORS);
    tilec_ctx_free(ctx);
}

Test(api, walk_matmul_example)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, "examples/matmul.tile", &m), TILEC_OK);
    cr_assert_eq(tilec_module_kernel_count(m), 1);
    cr_expect_eq(tilec_module_graph_count(m), 0);
    cr_expect_eq(tilec_module_item_count(m), 1);
    cr_expect_str_eq(tilec_module_file(m), "examples/matmul.tile");
    const tilec_kernel *k = tilec_module_find_kernel(m, "matmul");
    cr_assert(k);
    cr_expect_eq(k, tilec_module_kernel(m, 0));
    cr_expect_null(tilec_module_kernel(m, 1));
    cr_expect_eq(k->nparams, 6);
    cr_expect_eq(k->params[0].type.kind, TILEC_TE_POINTER);
    cr_expect_eq(k->params[0].type.dtype, TILEC_DT_F16);
    cr_expect_eq(k->ngrid, 2);
    cr_expect(k->has_variants);
    cr_expect(!k->variants_keyed);
    cr_assert_eq(k->nvariants, 3);
    cr_expect_eq(k->variants[0].noverrides, 3); /* { BM = 64, BN = 64, warps = 4 } */
    cr_expect_eq(tilec_kernel_hint(k, -1, "BM", 0), 128);
    cr_expect_eq(tilec_kernel_hint(k, 0, "BM", 0), 64);
    cr_expect_eq(tilec_kernel_hint(k, 0, "warps", 0), 4);
    cr_expect_eq(tilec_kernel_hint(k, 1, "BN", 0), 64);
    cr_expect_eq(tilec_kernel_hint(k, 1, "BM", 0), 128);
    cr_expect_eq(tilec_kernel_hint(k, 2, "stages", 0), 3);
    cr_expect_eq(tilec_kernel_hint(k, 2, "absent", -7), -7);
    /* the checker annotates types for the base hints */
    const tilec_stmt *acc = k->body.stmts[2];
    cr_expect_eq(acc->kind, TILEC_ST_LET);
    cr_expect_eq(acc->value->type.rank, 2);
    cr_expect_eq(acc->value->type.dims[0], 128);
    cr_expect_eq(acc->value->type.dtype, TILEC_DT_F32);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* Issue 31 item 1: variants are override sets numbered 0, 1, ... in the
 * order written; the old keyed spelling, whose keys read like sizes the
 * runtime never compared, is an error at the first key naming the rewrite. */
Test(api, variants_are_numbered_in_order_and_keys_are_refused)
{
    static const char listed[] = "kernel k(x: *f32, n: i32) grid (cdiv(n, B)) hints { B = 128, warps = 4 }\n"
                                 "    variants { { B = 64 }, {}, { B = 256, warps = 8 } } {\n"
                                 "    let o = pid(0) * B + range(B);\n    store(x + o, 1.0, o < n);\n}\n";
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "v.tile", listed, sizeof listed - 1, &m), TILEC_OK);
    const tilec_kernel *k = tilec_module_find_kernel(m, "k");
    cr_assert(k);
    cr_assert_eq(k->nvariants, 3);
    cr_expect_eq(tilec_kernel_hint(k, 0, "B", 0), 64);
    cr_expect_eq(tilec_kernel_hint(k, 1, "B", 0), 128);
    cr_expect_eq(tilec_kernel_hint(k, 2, "B", 0), 256);
    cr_expect_eq(tilec_kernel_hint(k, 2, "warps", 0), 8);
    tilec_module_free(m);
    static const char keyed[] = "kernel k(x: *f32, n: i32) grid (cdiv(n, B)) hints { B = 128 }\n"
                                "    variants n { 1024: { B = 64 }, 4096: {} } {\n"
                                "    let o = pid(0) * B + range(B);\n    store(x + o, 1.0, o < n);\n}\n";
    m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "v.tile", keyed, sizeof keyed - 1, &m), TILEC_ERR_INPUT);
    cr_expect_null(m);
    cr_assert_eq(tilec_ctx_error_count(ctx), 1);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_expect_eq(d->line, 2);
    cr_expect_eq(d->col, 18);
    cr_expect(strstr(d->message, "variant keys are labels the runtime never compares: write `variants { {"), "%s",
              d->message);
    tilec_ctx_free(ctx);
}

Test(api, walk_graph_example)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_file(ctx, "examples/block.tile", &m), TILEC_OK);
    cr_expect_eq(tilec_module_kernel_count(m), 2);
    cr_expect_eq(tilec_module_extern_count(m), 2);
    cr_assert_eq(tilec_module_graph_count(m), 1);
    const tilec_extern *x = tilec_module_find_extern(m, "topk2");
    cr_assert(x);
    cr_expect_str_eq(x->symbol, "my_lib_topk2");
    cr_expect_eq(x->nresults, 2);
    const tilec_graph *g = tilec_module_find_graph(m, "block");
    cr_assert(g);
    cr_expect_eq(g->nparams, 2);
    cr_expect_eq(g->nresults, 3);
    cr_expect_str_eq(g->results[1].name, "s");
    cr_expect_eq(g->body.stmts[0]->kind, TILEC_ST_DOC);
    cr_expect_str_eq(g->body.stmts[0]->text, "scale and shift the input");
    const tilec_stmt *tuple = g->body.stmts[8];
    cr_assert_eq(tuple->kind, TILEC_ST_LET_TUPLE);
    cr_expect_str_eq(tuple->types[0], "f32[R]");
    cr_expect_str_eq(tuple->types[1], "i32[R]");
    cr_expect_null(tilec_module_find_graph(m, "nope"));
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

Test(api, statuses_and_bad_arguments)
{
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_expect_eq(tilec_parse_string(NULL, "x", "", 0, &m), TILEC_ERR_ARG);
    cr_expect_eq(tilec_parse_string(ctx, "x", NULL, 3, &m), TILEC_ERR_ARG);
    cr_expect_eq(tilec_parse_string(ctx, "x", "", 0, NULL), TILEC_ERR_ARG);
    cr_expect_eq(tilec_parse_file(ctx, "/nonexistent/dir/x.tile", &m), TILEC_ERR_IO);
    cr_assert_eq(tilec_ctx_diag_count(ctx), 1);
    cr_expect_str_eq(tilec_ctx_diag(ctx, 0)->message, "cannot open: No such file or directory");
    cr_expect_str_eq(tilec_ctx_diag(ctx, 0)->file, "/nonexistent/dir/x.tile");
    cr_expect_eq(tilec_parse_file(ctx, "tests", &m), TILEC_ERR_IO, "a directory is not a file");
    cr_expect_eq(tilec_parse_string(ctx, "empty.tile", "", 0, &m), TILEC_OK, "an empty module is valid");
    cr_expect_eq(tilec_module_item_count(m), 0);
    tilec_module_free(m);
    cr_expect_str_eq(tilec_status_string(TILEC_ERR_INPUT), "the input has errors");
    cr_expect_str_eq(tilec_status_string((tilec_status)99), "unknown status");
    cr_expect_str_eq(tilec_version(), TILEC_VERSION_STRING);
    cr_expect_str_eq(tilec_dtype_name(TILEC_DT_BF16), "bf16");
    cr_expect_eq(tilec_dtype_size(TILEC_DT_F64), 8);
    cr_expect_eq(tilec_dtype_class(TILEC_DT_U16), 'u');
    cr_expect_str_eq(tilec_op_spelling(TILEC_OP_SHL), "<<");
    tilec_ctx_free(ctx);
}

/* Two threads, two contexts, no shared state: both get their own results. */
typedef struct job {
    const char *path;
    int rounds;
    int ok;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    tilec_ctx *ctx = tilec_ctx_new();
    j->ok = 0;
    for (int i = 0; i < j->rounds; i++) {
        tilec_module *m = NULL;
        tilec_status st = tilec_parse_file(ctx, j->path, &m);
        j->ok += st == TILEC_OK;
        tilec_module_free(m);
        tilec_ctx_clear_diags(ctx);
    }
    tilec_ctx_free(ctx);
    return NULL;
}

Test(api, two_threads)
{
    job a = {"examples/matmul.tile", 200, 0}, b = {"examples/block.tile", 200, 0};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, worker, &a);
    pthread_create(&tb, NULL, worker, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    cr_expect_eq(a.ok, 200);
    cr_expect_eq(b.ok, 200);
}

/* An NVRTC failure's headline quotes the log's first ERROR line, not a
 * warning before it: "NAME(LINE): error" (placed at its .tile line) or
 * ptxas's "error   :" (for a feature the --arch lacks), whatever lines of
 * warnings come first. */
Test(api, nvrtc_failure_headline_is_the_first_error)
{
    const char *src = "kernel k(x: *f32, n: i32) grid (1) {\n    let i = range(128);\n"
                      "    store(x + i, 1.0, i < n);\n}\n";
    tilec_ctx *ctx = tilec_ctx_new();
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, "k.tile", src, strlen(src), &m), TILEC_OK);
    const tilec_kernel *k = tilec_module_kernel(m, 0);
    tilec_kernel_code code;
    cr_assert_eq(tilec_lower_kernel(ctx, m, k, 0, &code), TILEC_OK);
    static const char *const logs[][2] = {
        {"k_v0(3): warning #177-D: variable \"error\" was declared but never referenced\n"
         "k_v0(4): warning #550-D: an error-free warning\n"
         "ptxas /tmp/k.ptx, line 40; error   : Feature 'cp.async' requires .target sm_80 or higher\n"
         "ptxas fatal   : Ptx assembly aborted due to errors\n",
         "k.tile:1:1: error: kernel 'k': NVRTC could not compile k_v0 for sm_75: ptxas /tmp/k.ptx, line 40; error   "
         ": Feature 'cp.async' requires .target sm_80 or higher\n"},
        {"k_v0(3): warning #177-D: variable \"e\" was declared but never referenced\n"
         "k_v0(9999): error: identifier \"y\" is undefined\n",
         "k.tile:3:1: error: kernel 'k': NVRTC could not compile k_v0 for sm_75: error: identifier \"y\" is "
         "undefined\n"},
    };
    for (size_t i = 0; i < 2; i++) {
        cmp_report_failure(ctx, m, k, &code, "sm_75", logs[i][0], "fallback");
        membuf mb = {0};
        tilec_ctx_render_diags(ctx, membuf_sink(&mb));
        tilec_ctx_clear_diags(ctx);
        cr_assert(mb.s);
        cr_expect(!strncmp(mb.s, logs[i][1], strlen(logs[i][1])), "got:\n%s", mb.s);
        free(mb.s);
    }
    tilec_kernel_code_free(&code);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}

/* What a variant needs of the GPU is known before NVRTC: the lowering
 * records the oldest architecture its body can run on (tilec_kernel_code
 * min_sm: cp.async copies, f16/bf16 mma.sync m16n8k16 and tf32 mma need
 * sm_80), and compiling for an older one is an error at the kernel naming
 * the variant, the use, its line and the architecture it needs. */
static tilec_module *example(tilec_ctx *ctx, const char *path)
{
    size_t len = 0;
    char *src = read_file(path, &len);
    cr_assert(src, "cannot read %s", path);
    tilec_module *m = NULL;
    cr_assert_eq(tilec_parse_string(ctx, path, src, len, &m), TILEC_OK);
    free(src);
    return m;
}

Test(api, an_arch_too_old_is_refused_before_nvrtc)
{
    static const struct {
        const char *file;
        uint32_t min_sm;
        const char *why;
    } cases[] = {
        {"examples/matmul.tile", 80, "copies global to shared memory with cp.async"},
        {"examples/matmul_f32.tile", 80, "copies global to shared memory with cp.async"},
        {"examples/matmul_tf32.tile", 80, "multiplies on tensor cores in tf32 (mma.sync m16n8k8 .tf32)"},
        {"examples/attention.tile", 80, NULL},
        {"examples/conv2d.tile", 80, NULL},
        {"examples/add_relu.tile", 0, NULL},
        {"examples/softmax.tile", 0, NULL},
        {"examples/cumsum.tile", 0, NULL},
    };
    tilec_ctx *ctx = tilec_ctx_new();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tilec_module *m = example(ctx, cases[i].file);
        const tilec_kernel *k = tilec_module_kernel(m, 0);
        tilec_kernel_code code;
        cr_assert_eq(tilec_lower_kernel(ctx, m, k, 0, &code), TILEC_OK);
        cr_expect_eq(code.min_sm, cases[i].min_sm, "%s: %u", cases[i].file, code.min_sm);
        if (cases[i].why)
            cr_expect_str_eq(code.min_sm_why, cases[i].why);
        cr_expect_eq(code.min_sm_line != 0, cases[i].min_sm != 0, "%s: line %u", cases[i].file, code.min_sm_line);
        for (const char *const *a = (const char *const[]){"sm_80", "sm_86", "sm_90", "sm_90a", "compute_80", "sm_100",
                                                          "nonsense", NULL};
             *a; a++)
            cr_expect_eq(cmp_check_arch(ctx, m, k, &code, *a), 0, "%s for %s", cases[i].file, *a);
        cr_expect_eq(cmp_check_arch(ctx, m, k, &code, "sm_75"), cases[i].min_sm ? -1 : 0, "%s", cases[i].file);
        tilec_ctx_clear_diags(ctx);
        tilec_kernel_code_free(&code);
        tilec_module_free(m);
    }
    /* tilec_compile_kernel: the error, and no NVRTC (it needs none) */
    tilec_module *m = example(ctx, "examples/matmul.tile");
    tilec_kernel_code code;
    void *cubin = (void *)1;
    size_t size = 1;
    cr_expect_eq(tilec_compile_kernel(ctx, m, tilec_module_kernel(m, 0), 1, "sm_75", &code, &cubin, &size),
                 TILEC_ERR_INPUT);
    cr_expect_null(cubin);
    cr_expect_null(code.source, "the code is freed on failure");
    membuf mb = {0};
    tilec_ctx_render_diags(ctx, membuf_sink(&mb));
    const char *want = "examples/matmul.tile:3:1: error: kernel 'matmul' (variant 1, matmul_v1) needs sm_80 or newer: "
                       "it copies global to shared memory with cp.async (line 11); --arch sm_75 cannot run it\n";
    cr_assert(mb.s);
    cr_expect(!strncmp(mb.s, want, strlen(want)), "got:\n%s", mb.s);
    free(mb.s);
    tilec_module_free(m);
    tilec_ctx_free(ctx);
}
