/* test_externs.c: the extern kernel registry without a GPU: user externs
 * (host-side fakes that record their arguments), replacement, unknown
 * symbols, failure messages, concurrent use; the cuBLAS built-ins' argument
 * checks (made before cuBLAS is loaded), a missing cuBLAS, and a GEMM that
 * needs a GPU failing cleanly where there is none. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_load.h"
#include "helpers.h"
#include "tilec/externs.h"

/* ---- a recording fake ---- */

typedef struct record {
    int calls;
    void *user;
    tilec_rt *rt;
    void *stream;
    const tilec_tensor *inputs;
    uint32_t ninputs;
    tilec_tensor *outputs;
    uint32_t noutputs;
    size_t errlen;
    char err_on_entry; /* err[0] as the registry handed it over */
    int result;        /* what to return */
    const char *message; /* written to err when not NULL */
} record;

static int fake(void *user, tilec_rt *rt, void *stream, const tilec_tensor *inputs, uint32_t ninputs,
                tilec_tensor *outputs, uint32_t noutputs, char *err, size_t errlen)
{
    record *r = user;
    r->calls++;
    r->user = user;
    r->rt = rt;
    r->stream = stream;
    r->inputs = inputs;
    r->ninputs = ninputs;
    r->outputs = outputs;
    r->noutputs = noutputs;
    r->errlen = errlen;
    r->err_on_entry = err[0];
    if (r->message)
        snprintf(err, errlen, "%s", r->message);
    /* "compute": output 0 gets the sum of the inputs' first sizes */
    if (noutputs)
        outputs[0].sizes[0] = inputs[0].sizes[0] + (ninputs > 1 ? inputs[1].sizes[0] : 0);
    return r->result;
}

static int other(void *user, tilec_rt *rt, void *stream, const tilec_tensor *inputs, uint32_t ninputs,
                 tilec_tensor *outputs, uint32_t noutputs, char *err, size_t errlen)
{
    (void)rt, (void)stream, (void)inputs, (void)ninputs, (void)outputs, (void)noutputs, (void)err, (void)errlen;
    ++*(int *)user;
    return 0;
}

/* ---- the registry ---- */

Test(externs, user_extern_receives_every_argument)
{
    tilec_externs *x = tilec_externs_new();
    cr_assert(x);
    cr_expect_str_eq(tilec_externs_last_error(x), "");
    record r = {0};
    cr_assert_eq(tilec_externs_register(x, "my.add", fake, &r), 0);
    tilec_tensor in[2] = {matrix(TILEC_DT_F32, 3, 4, 0x1000), matrix(TILEC_DT_F16, 5, 6, 0x2000)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F32, 0, 4, 0x3000)};
    tilec_rt *rt = (tilec_rt *)(uintptr_t)0xabc0; /* never dereferenced: the fake only records it */
    void *stream = (void *)(uintptr_t)0x5150;
    cr_assert_eq(tilec_externs_call(x, "my.add", rt, stream, in, 2, out, 1), TILEC_RT_OK);
    cr_expect_eq(r.calls, 1);
    cr_expect_eq(r.user, &r);
    cr_expect_eq(r.rt, rt);
    cr_expect_eq(r.stream, stream);
    cr_expect_eq(r.inputs, in); /* passed through, not copied */
    cr_expect_eq(r.ninputs, 2);
    cr_expect_eq(r.outputs, out);
    cr_expect_eq(r.noutputs, 1);
    cr_expect_eq(r.err_on_entry, 0);
    cr_expect_geq(r.errlen, 256);
    cr_expect_eq(out[0].sizes[0], 8, "the extern writes the caller's outputs");
    cr_expect_eq(in[1].data, 0x2000);
    cr_expect_str_eq(tilec_externs_last_error(x), "");

    /* no tensors at all */
    cr_assert_eq(tilec_externs_call(x, "my.add", NULL, NULL, in, 1, NULL, 0), TILEC_RT_OK);
    cr_expect_eq(r.calls, 2);
    cr_expect_null(r.rt);
    cr_expect_null(r.stream);
    cr_expect_eq(r.noutputs, 0);
    tilec_externs_free(x);
}

Test(externs, register_replaces_and_keeps_the_others)
{
    tilec_externs *x = tilec_externs_new();
    record r = {0};
    int hits = 0, hits2 = 0;
    tilec_tensor in[1] = {matrix(TILEC_DT_F32, 1, 1, 0)};
    cr_assert_eq(tilec_externs_register(x, "k", fake, &r), 0);
    cr_assert_eq(tilec_externs_register(x, "k2", other, &hits2), 0);
    cr_assert_eq(tilec_externs_register(x, "k", other, &hits), 0);
    cr_expect_eq(tilec_externs_call(x, "k", NULL, NULL, in, 1, NULL, 0), TILEC_RT_OK);
    cr_expect_eq(hits, 1);
    cr_expect_eq(r.calls, 0, "the replaced function is not called");
    cr_expect_eq(tilec_externs_call(x, "k2", NULL, NULL, in, 1, NULL, 0), TILEC_RT_OK);
    cr_expect_eq(hits2, 1);
    /* a built-in can be replaced too */
    cr_assert_eq(tilec_externs_register(x, "cublas.sgemm", other, &hits), 0);
    cr_expect_eq(tilec_externs_call(x, "cublas.sgemm", NULL, NULL, NULL, 0, NULL, 0), TILEC_RT_OK);
    cr_expect_eq(hits, 2);
    /* many names: the table grows */
    for (int i = 0; i < 100; i++) {
        char name[32];
        snprintf(name, sizeof name, "gen.%d", i);
        cr_assert_eq(tilec_externs_register(x, name, other, &hits2), 0);
    }
    cr_expect_eq(tilec_externs_call(x, "gen.73", NULL, NULL, NULL, 0, NULL, 0), TILEC_RT_OK);
    cr_expect_eq(hits2, 2);
    tilec_externs_free(x);
}

Test(externs, register_rejects_bad_arguments)
{
    tilec_externs *x = tilec_externs_new();
    int hits = 0;
    cr_expect_eq(tilec_externs_register(NULL, "a", other, &hits), -1);
    cr_expect_eq(tilec_externs_register(x, NULL, other, &hits), -1);
    cr_expect_eq(tilec_externs_register(x, "", other, &hits), -1);
    cr_expect_eq(tilec_externs_register(x, "a", NULL, &hits), -1);
    cr_expect_eq(tilec_externs_register(x, "a", other, NULL), 0, "user may be NULL");
    tilec_externs_free(x);
    tilec_externs_free(NULL);
}

Test(externs, symbol_is_copied)
{
    tilec_externs *x = tilec_externs_new();
    int hits = 0;
    char name[16] = "temp.name";
    cr_assert_eq(tilec_externs_register(x, name, other, &hits), 0);
    strcpy(name, "changed");
    cr_expect_eq(tilec_externs_call(x, "temp.name", NULL, NULL, NULL, 0, NULL, 0), TILEC_RT_OK);
    cr_expect_eq(tilec_externs_call(x, "changed", NULL, NULL, NULL, 0, NULL, 0), TILEC_RT_NOT_FOUND);
    tilec_externs_free(x);
}

Test(externs, unknown_symbol)
{
    tilec_externs *x = tilec_externs_new();
    cr_expect_eq(tilec_externs_call(x, "cublas.dgemm", NULL, NULL, NULL, 0, NULL, 0), TILEC_RT_NOT_FOUND);
    cr_expect_str_eq(tilec_externs_last_error(x), "no extern kernel registered as \"cublas.dgemm\"");
    cr_expect_eq(tilec_externs_call(x, "", NULL, NULL, NULL, 0, NULL, 0), TILEC_RT_NOT_FOUND);
    cr_expect_str_eq(tilec_externs_last_error(x), "no extern kernel registered as \"\"");
    tilec_externs_free(x);
}

Test(externs, failure_message_propagates)
{
    tilec_externs *x = tilec_externs_new();
    record r = {.result = 3, .message = "my.fail: input 0 must be even, got 7"};
    cr_assert_eq(tilec_externs_register(x, "my.fail", fake, &r), 0);
    tilec_tensor in[1] = {matrix(TILEC_DT_F32, 7, 1, 0)};
    cr_expect_eq(tilec_externs_call(x, "my.fail", NULL, NULL, in, 1, NULL, 0), TILEC_RT_LAUNCH_ERROR);
    cr_expect_str_eq(tilec_externs_last_error(x), "my.fail: input 0 must be even, got 7");

    /* a failure with no message still says who failed */
    record quiet = {.result = -7};
    cr_assert_eq(tilec_externs_register(x, "my.quiet", fake, &quiet), 0);
    cr_expect_eq(tilec_externs_call(x, "my.quiet", NULL, NULL, in, 1, NULL, 0), TILEC_RT_LAUNCH_ERROR);
    cr_expect_str_eq(tilec_externs_last_error(x), "extern kernel \"my.quiet\" failed (returned -7) with no message");

    /* a success leaves the last failure's message */
    r.result = 0;
    r.message = NULL;
    cr_expect_eq(tilec_externs_call(x, "my.fail", NULL, NULL, in, 1, NULL, 0), TILEC_RT_OK);
    cr_expect_str_eq(tilec_externs_last_error(x), "extern kernel \"my.quiet\" failed (returned -7) with no message");
    tilec_externs_free(x);
}

Test(externs, bad_call_arguments)
{
    tilec_externs *x = tilec_externs_new();
    record r = {0};
    cr_assert_eq(tilec_externs_register(x, "k", fake, &r), 0);
    cr_expect_eq(tilec_externs_call(NULL, "k", NULL, NULL, NULL, 0, NULL, 0), TILEC_RT_INVALID_ARG);
    cr_expect_eq(tilec_externs_call(x, NULL, NULL, NULL, NULL, 0, NULL, 0), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_externs_last_error(x), "tilec_externs_call: symbol is NULL");
    cr_expect_eq(tilec_externs_call(x, "k", NULL, NULL, NULL, 2, NULL, 0), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_externs_last_error(x), "tilec_externs_call(\"k\"): inputs is NULL with a count of 2");
    tilec_tensor in[1] = {matrix(TILEC_DT_F32, 1, 1, 0)};
    cr_expect_eq(tilec_externs_call(x, "k", NULL, NULL, in, 1, NULL, 1), TILEC_RT_INVALID_ARG);
    cr_expect_str_eq(tilec_externs_last_error(x), "tilec_externs_call(\"k\"): outputs is NULL with a count of 1");
    cr_expect_eq(r.calls, 0);
    cr_expect_str_eq(tilec_externs_last_error(NULL), "no extern registry (NULL tilec_externs)");
    tilec_externs_free(x);
}

/* An extern that calls another through the registry: no lock is held. */
static int nested(void *user, tilec_rt *rt, void *stream, const tilec_tensor *inputs, uint32_t ninputs,
                  tilec_tensor *outputs, uint32_t noutputs, char *err, size_t errlen)
{
    tilec_externs *x = user;
    tilec_rt_status st = tilec_externs_call(x, "inner", rt, stream, inputs, ninputs, outputs, noutputs);
    if (st != TILEC_RT_OK) {
        snprintf(err, errlen, "outer: %s", tilec_externs_last_error(x));
        return 1;
    }
    return 0;
}

Test(externs, an_extern_may_call_the_registry)
{
    tilec_externs *x = tilec_externs_new();
    int hits = 0;
    cr_assert_eq(tilec_externs_register(x, "outer", nested, x), 0);
    cr_expect_eq(tilec_externs_call(x, "outer", NULL, NULL, NULL, 0, NULL, 0), TILEC_RT_LAUNCH_ERROR);
    cr_expect_str_eq(tilec_externs_last_error(x), "outer: no extern kernel registered as \"inner\"");
    cr_assert_eq(tilec_externs_register(x, "inner", other, &hits), 0);
    cr_expect_eq(tilec_externs_call(x, "outer", NULL, NULL, NULL, 0, NULL, 0), TILEC_RT_OK);
    cr_expect_eq(hits, 1);
    tilec_externs_free(x);
}

/* ---- several threads on one registry ---- */

typedef struct worker {
    tilec_externs *x;
    int id;
    int counter; /* bumped by `other` through the registry */
    int bad;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    char name[32];
    snprintf(name, sizeof name, "t%d", w->id);
    for (int i = 0; i < 2000; i++) {
        if (i % 100 == 0 && tilec_externs_register(w->x, name, other, &w->counter) != 0)
            w->bad++;
        if (tilec_externs_call(w->x, name, NULL, NULL, NULL, 0, NULL, 0) != TILEC_RT_OK)
            w->bad++;
        if (tilec_externs_call(w->x, "nobody", NULL, NULL, NULL, 0, NULL, 0) != TILEC_RT_NOT_FOUND)
            w->bad++;
    }
    return NULL;
}

Test(externs, concurrent_register_and_call)
{
    tilec_externs *x = tilec_externs_new();
    worker w[8];
    pthread_t th[8];
    for (int i = 0; i < 8; i++) {
        w[i] = (worker){x, i, 0, 0};
        cr_assert_eq(tilec_externs_register(x, (char[]){'t', (char)('0' + i), 0}, other, &w[i].counter), 0);
    }
    for (int i = 0; i < 8; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        cr_expect_eq(w[i].bad, 0, "thread %d", i);
        cr_expect_eq(w[i].counter, 2000, "thread %d", i);
    }
    cr_expect_str_eq(tilec_externs_last_error(x), "no extern kernel registered as \"nobody\"");
    tilec_externs_free(x);
}

/* ---- the cuBLAS built-ins: checks made before cuBLAS is loaded ----
 * The registry is made with a cuBLAS that cannot load: a check that let a
 * call through would say "cuBLAS not found" instead of the expected text. */

#define NO_CUBLAS "libtilec-no-such-cublas.so.99"

static void expect_gemm_error(const char *symbol, tilec_tensor *in, uint32_t nin, tilec_tensor *out, uint32_t nout,
                              const char *want)
{
    tilec_externs *x = tilec_externs_new_cublas(NO_CUBLAS);
    cr_assert(x);
    cr_expect_eq(tilec_externs_call(x, symbol, NULL, NULL, in, nin, out, nout), TILEC_RT_LAUNCH_ERROR, "%s", want);
    cr_expect_str_eq(tilec_externs_last_error(x), want);
    tilec_externs_free(x);
}

Test(cublas_checks, sgemm_inner_dimensions)
{
    tilec_tensor in[2] = {matrix(TILEC_DT_F32, 127, 33, 0x1000), matrix(TILEC_DT_F32, 34, 65, 0x2000)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F32, 127, 65, 0x3000)};
    expect_gemm_error("cublas.sgemm", in, 2, out, 1,
                      "cublas.sgemm: inner dimensions differ: input 0 is f32[127,33], input 1 is f32[34,65] "
                      "(K = 33 and 34)");
}

Test(cublas_checks, sgemm_dtypes)
{
    tilec_tensor in[2] = {matrix(TILEC_DT_F32, 65, 33, 0x1000), matrix(TILEC_DT_F16, 33, 65, 0x2000)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F32, 65, 65, 0x3000)};
    expect_gemm_error("cublas.sgemm", in, 2, out, 1, "cublas.sgemm: input 1 is f16[33,65], expected f32");
    in[1].dtype = TILEC_DT_F32;
    out[0].dtype = TILEC_DT_F64;
    expect_gemm_error("cublas.sgemm", in, 2, out, 1, "cublas.sgemm: output 0 is f64[65,65], expected f32");
}

Test(cublas_checks, hgemm_dtypes)
{
    tilec_tensor in[2] = {matrix(TILEC_DT_F32, 8, 4, 0x1000), matrix(TILEC_DT_F16, 4, 2, 0x2000)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F32, 8, 2, 0x3000)};
    expect_gemm_error("cublas.hgemm", in, 2, out, 1, "cublas.hgemm: input 0 is f32[8,4], expected f16");
    in[0].dtype = TILEC_DT_F16;
    out[0].dtype = TILEC_DT_BF16;
    expect_gemm_error("cublas.hgemm", in, 2, out, 1, "cublas.hgemm: output 0 is bf16[8,2], expected f32 or f16");
}

Test(cublas_checks, output_shape)
{
    tilec_tensor in[2] = {matrix(TILEC_DT_F32, 127, 33, 0x1000), matrix(TILEC_DT_F32, 33, 65, 0x2000)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F32, 127, 64, 0x3000)};
    expect_gemm_error("cublas.sgemm", in, 2, out, 1,
                      "cublas.sgemm: output 0 is f32[127,64], expected [127,65] for f32[127,33] @ f32[33,65]");
    out[0] = matrix(TILEC_DT_F32, 65, 127, 0x3000); /* the transpose */
    expect_gemm_error("cublas.sgemm", in, 2, out, 1,
                      "cublas.sgemm: output 0 is f32[65,127], expected [127,65] for f32[127,33] @ f32[33,65]");
}

Test(cublas_checks, rank_counts_contiguity_and_data)
{
    tilec_tensor in[3] = {matrix(TILEC_DT_F32, 4, 6, 0x1000), matrix(TILEC_DT_F32, 6, 5, 0x2000),
                          matrix(TILEC_DT_F32, 1, 1, 0x4000)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F32, 4, 5, 0x3000)};
    expect_gemm_error("cublas.sgemm", in, 3, out, 1,
                      "cublas.sgemm: expected 2 inputs and 1 output, got 3 inputs and 1 output");
    expect_gemm_error("cublas.hgemm", in, 1, NULL, 0,
                      "cublas.hgemm: expected 2 inputs and 1 output, got 1 input and 0 outputs");

    tilec_tensor v = in[0];
    v.rank = 3;
    v.sizes[2] = 1;
    v.strides[2] = 1;
    tilec_tensor args[2] = {v, in[1]};
    expect_gemm_error("cublas.sgemm", args, 2, out, 1, "cublas.sgemm: input 0 is f32[4,6,1], expected a matrix (rank 2)");

    args[0] = in[0];
    args[1] = in[1];
    args[1].strides[0] = 1; /* a transposed view: column-major */
    args[1].strides[1] = 6;
    expect_gemm_error("cublas.sgemm", args, 2, out, 1,
                      "cublas.sgemm: input 1 is f32[6,5] with strides [1,6], expected row-major contiguous [5,1]");
    args[1] = in[1];
    args[1].strides[0] = 8; /* padded rows */
    expect_gemm_error("cublas.sgemm", args, 2, out, 1,
                      "cublas.sgemm: input 1 is f32[6,5] with strides [8,1], expected row-major contiguous [5,1]");

    args[1] = in[1];
    args[1].data = 0;
    expect_gemm_error("cublas.sgemm", args, 2, out, 1, "cublas.sgemm: input 1 (f32[6,5]) has no data (a NULL device pointer)");

    args[1] = in[1];
    args[1].sizes[0] = -6;
    expect_gemm_error("cublas.sgemm", args, 2, out, 1,
                      "cublas.sgemm: input 1 is f32[-6,5]: each dimension must be in [0, 2147483647]");
    args[1] = in[1];
    args[1].sizes[1] = 3000000000LL;
    args[1].strides[0] = 3000000000LL;
    expect_gemm_error("cublas.sgemm", args, 2, out, 1,
                      "cublas.sgemm: input 1 is f32[6,3000000000]: each dimension must be in [0, 2147483647]");
}

Test(cublas_checks, size_one_dimensions_may_have_any_stride)
{
    /* [1,K] @ [K,N]: a row vector's row stride does not matter */
    tilec_tensor in[2] = {matrix(TILEC_DT_F32, 1, 6, 0x1000), matrix(TILEC_DT_F32, 6, 5, 0x2000)};
    in[0].strides[0] = 12345;
    tilec_tensor out[1] = {matrix(TILEC_DT_F32, 1, 5, 0x3000)};
    tilec_externs *x = tilec_externs_new_cublas(NO_CUBLAS);
    cr_expect_eq(tilec_externs_call(x, "cublas.sgemm", NULL, NULL, in, 2, out, 1), TILEC_RT_LAUNCH_ERROR);
    cr_expect(strncmp(tilec_externs_last_error(x), "cublas.sgemm: cuBLAS not found", 30) == 0, "%s",
              tilec_externs_last_error(x));
    tilec_externs_free(x);
}

Test(cublas_checks, empty_product_needs_no_cublas)
{
    /* M = 0 or N = 0: nothing to write, nothing loaded */
    tilec_tensor in[2] = {matrix(TILEC_DT_F16, 0, 6, 0), matrix(TILEC_DT_F16, 6, 5, 0x2000)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F16, 0, 5, 0)};
    tilec_externs *x = tilec_externs_new_cublas(NO_CUBLAS);
    cr_expect_eq(tilec_externs_call(x, "cublas.hgemm", NULL, NULL, in, 2, out, 1), TILEC_RT_OK, "%s",
                 tilec_externs_last_error(x));
    tilec_externs_free(x);
}

/* ---- no cuBLAS, no GPU ---- */

Test(cublas_load, missing_cublas_is_a_clear_error)
{
    tilec_tensor in[2] = {matrix(TILEC_DT_F32, 4, 6, 0x1000), matrix(TILEC_DT_F32, 6, 5, 0x2000)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F32, 4, 5, 0x3000)};
    tilec_externs *x = tilec_externs_new_cublas(NO_CUBLAS);
    for (int i = 0; i < 2; i++) { /* the failed load is remembered, with its message */
        cr_expect_eq(tilec_externs_call(x, "cublas.sgemm", NULL, NULL, in, 2, out, 1), TILEC_RT_LAUNCH_ERROR);
        const char *want = "cublas.sgemm: cuBLAS not found (" NO_CUBLAS "): " NO_CUBLAS ": cannot open shared object file";
        cr_expect(strncmp(tilec_externs_last_error(x), want, strlen(want)) == 0, "%s", tilec_externs_last_error(x));
    }
    tilec_externs_free(x);
}

Test(cublas_load, library_without_the_entry_points)
{
    /* libm loads, but is no cuBLAS */
    tilec_tensor in[2] = {matrix(TILEC_DT_F16, 4, 6, 0x1000), matrix(TILEC_DT_F16, 6, 5, 0x2000)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F16, 4, 5, 0x3000)};
    tilec_externs *x = tilec_externs_new_cublas("libm.so.6");
    cr_expect_eq(tilec_externs_call(x, "cublas.hgemm", NULL, NULL, in, 2, out, 1), TILEC_RT_LAUNCH_ERROR);
    cr_expect_str_eq(tilec_externs_last_error(x),
                     "cublas.hgemm: cuBLAS library libm.so.6 lacks cublasCreate_v2 (cuBLAS 11 or newer needed)");
    tilec_externs_free(x);
}

/* With the default search: either cuBLAS is absent (a message naming
 * libcublas.so.13) or it loads and the failed runtime handle stops the
 * call before any GPU work. Skipped where a GPU is present (the GPU suite
 * runs real GEMMs there). */
Test(cublas_load, gemm_without_a_gpu_fails_cleanly)
{
    tilec_rt *rt = NULL;
    tilec_rt_status st = tilec_rt_open(0, &rt);
    if (st == TILEC_RT_OK) {
        tilec_rt_close(rt);
        cr_skip_test("a GPU is present");
    }
    tilec_tensor in[2] = {matrix(TILEC_DT_F32, 4, 6, 0x1000), matrix(TILEC_DT_F32, 6, 5, 0x2000)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F32, 4, 5, 0x3000)};
    tilec_externs *x = tilec_externs_new();
    for (int i = 0; i < 2; i++) {
        const char *sym = i ? "cublas.hgemm" : "cublas.sgemm";
        if (i) {
            in[0].dtype = in[1].dtype = TILEC_DT_F16;
        }
        cr_expect_eq(tilec_externs_call(x, sym, rt, NULL, in, 2, out, 1), TILEC_RT_LAUNCH_ERROR);
        const char *msg = tilec_externs_last_error(x);
        char ctx[128], nf[128];
        snprintf(ctx, sizeof ctx, "%s: no usable CUDA context: ", sym);
        snprintf(nf, sizeof nf, "%s: cuBLAS not found (libcublas.so.13): ", sym);
        cr_expect(strncmp(msg, ctx, strlen(ctx)) == 0 || strncmp(msg, nf, strlen(nf)) == 0, "%s", msg);
        cr_log_info("%s", msg);
    }
    /* a NULL rt is an error, not a crash */
    in[0].dtype = in[1].dtype = TILEC_DT_F32;
    cr_expect_eq(tilec_externs_call(x, "cublas.sgemm", NULL, NULL, in, 2, out, 1), TILEC_RT_LAUNCH_ERROR);
    const char *msg = tilec_externs_last_error(x);
    cr_expect(strcmp(msg, "cublas.sgemm: no runtime handle (rt is NULL)") == 0 ||
                  strncmp(msg, "cublas.sgemm: cuBLAS not found (libcublas.so.13): ", 50) == 0,
              "%s", msg);
    tilec_externs_free(x);
    tilec_rt_close(rt);
}

/* The fake driver (libfakecuda.so beside this binary, built for
 * test_runtime: "device" memory on the host) opens a runtime handle without
 * a GPU. Returns 0 with *rt open, or skips the test. */
static void open_fake(tilec_rt **rt)
{
    tilec_rt *real = NULL;
    tilec_rt_status st = tilec_rt_open(0, &real);
    tilec_rt_close(real);
    if (st == TILEC_RT_OK)
        cr_skip_test("a GPU is present: cuBLAS would use it, not the fake driver");
    char fake_path[4096];
    fake_cuda_path(fake_path, sizeof fake_path);
    if (access(fake_path, R_OK) != 0)
        cr_skip_test("no %s", fake_path);
    st = tilec_rt_open_driver(fake_path, 0, rt);
    cr_assert_eq(st, TILEC_RT_OK, "%s", tilec_rt_last_error(*rt));
}

/* The call reaches cublasCreate, whose own CUDA runtime then finds no GPU:
 * a cuBLAS error naming cublasCreate_v2, and no crash. */
Test(cublas_load, cublas_create_without_a_gpu_fails_cleanly)
{
    tilec_rt *rt = NULL;
    open_fake(&rt);
    tilec_tensor in[2] = {matrix(TILEC_DT_F32, 4, 6, 0x1000), matrix(TILEC_DT_F32, 6, 5, 0x2000)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F32, 4, 5, 0x3000)};
    tilec_externs *x = tilec_externs_new();
    cr_expect_eq(tilec_externs_call(x, "cublas.sgemm", rt, NULL, in, 2, out, 1), TILEC_RT_LAUNCH_ERROR);
    const char *msg = tilec_externs_last_error(x);
    cr_log_info("%s", msg);
    cr_expect(strncmp(msg, "cublas.sgemm: cublasCreate_v2 (libcublas.so.", 44) == 0 ||
                  strncmp(msg, "cublas.sgemm: cuBLAS not found (libcublas.so.13): ", 50) == 0,
              "%s", msg);
    tilec_externs_free(x);
    tilec_rt_close(rt);
}

/* K = 0: C is zeroed with a fill on the stream, cuBLAS never loaded. */
Test(cublas_load, k0_zeroes_the_output_without_cublas)
{
    tilec_rt *rt = NULL;
    open_fake(&rt);
    tilec_externs *x = tilec_externs_new_cublas(NO_CUBLAS);
    for (int f16 = 0; f16 < 2; f16++) {
        tilec_dtype in_dt = f16 ? TILEC_DT_F16 : TILEC_DT_F32, out_dt = f16 ? TILEC_DT_F16 : TILEC_DT_F32;
        const char *sym = f16 ? "cublas.hgemm" : "cublas.sgemm";
        uint64_t dc = 0;
        cr_assert_eq(tilec_rt_malloc(rt, 64 * 4, &dc), TILEC_RT_OK);
        cr_assert_eq(tilec_rt_memset_d32(rt, dc, 0x7fc00000u, 64), TILEC_RT_OK);
        tilec_tensor in[2] = {matrix(in_dt, 8, 0, 0), matrix(in_dt, 0, 6, 0)};
        tilec_tensor out[1] = {matrix(out_dt, 8, 6, dc)}; /* 48 elements: a whole number of words */
        cr_expect_eq(tilec_externs_call(x, sym, rt, NULL, in, 2, out, 1), TILEC_RT_OK, "%s",
                     tilec_externs_last_error(x));
        uint32_t c[64];
        cr_assert_eq(tilec_rt_memcpy_dtoh(rt, c, dc, sizeof c), TILEC_RT_OK);
        size_t words = f16 ? 24 : 48; /* 8 x 6 elements of 2 or 4 bytes; the rest stays poisoned */
        for (size_t i = 0; i < 64; i++)
            cr_expect_eq(c[i], i < words ? 0u : 0x7fc00000u, "%s: word %zu is %#x", sym, i, c[i]);
        tilec_rt_free(rt, dc);
    }
    /* an odd f16 count cannot be filled by words: it goes to cuBLAS */
    tilec_tensor in[2] = {matrix(TILEC_DT_F16, 3, 0, 0), matrix(TILEC_DT_F16, 0, 5, 0)};
    tilec_tensor out[1] = {matrix(TILEC_DT_F16, 3, 5, 0x1000)};
    cr_expect_eq(tilec_externs_call(x, "cublas.hgemm", rt, NULL, in, 2, out, 1), TILEC_RT_LAUNCH_ERROR);
    cr_expect(strncmp(tilec_externs_last_error(x), "cublas.hgemm: cuBLAS not found (" NO_CUBLAS "): ", 34) == 0, "%s",
              tilec_externs_last_error(x));
    tilec_externs_free(x);
    tilec_rt_close(rt);
}
