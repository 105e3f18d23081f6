/* test_comm.c: communicators (runtime/comm.c) on the fake NCCL
 * (tests/fake_nccl.c, whose other ranks mirror this one) with host memory
 * as "device" memory: each collective's result, its size checks and their
 * messages, axes other than 0 (one call per block), a missing NCCL (the
 * message names what was tried and TILEC_NCCL), TILEC_NCCL itself, NCCL
 * failing, adoption, and registration on an extern registry. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/comm.h"

#define FAKENCCL TILEC_BUILD "/tests/libfakenccl.so"

static tilec_tensor host(void *p, tilec_dtype dt, uint32_t rank, const int64_t *sizes)
{
    tilec_tensor t = {.data = (uint64_t)(uintptr_t)p, .dtype = dt, .rank = rank};
    int64_t s = 1;
    for (uint32_t d = rank; d-- > 0;) {
        t.sizes[d] = sizes[d];
        t.strides[d] = s;
        s *= sizes[d];
    }
    return t;
}

static tilec_comm *make(int rank, int world)
{
    unsigned char id[TILEC_COMM_ID_BYTES];
    char err[512] = "";
    cr_assert_eq(tilec_comm_unique_id(FAKENCCL, id, err, sizeof err), TILEC_RT_OK, "%s", err);
    tilec_comm *c = NULL;
    cr_assert_eq(tilec_comm_new(NULL, FAKENCCL, rank, world, id, &c, err, sizeof err), TILEC_RT_OK, "%s", err);
    cr_assert_eq(tilec_comm_rank(c), rank);
    cr_assert_eq(tilec_comm_world(c), world);
    cr_assert_eq(tilec_comm_nccl_version(c), 22803);
    return c;
}

Test(comm, all_reduce_sums_over_the_ranks)
{
    tilec_comm *c = make(1, 3);
    float x[6] = {1, 2, 3, 4, 5, 6}, y[6] = {0};
    tilec_tensor in = host(x, TILEC_DT_F32, 2, (int64_t[]){2, 3}), out = host(y, TILEC_DT_F32, 2, (int64_t[]){2, 3});
    char err[512] = "";
    cr_assert_eq(tilec_comm_run(c, NULL, TILEC_COLL_ALL_REDUCE, TILEC_REDOP_SUM, 0, 0, &in, &out, NULL, err, sizeof err),
                 TILEC_RT_OK, "%s", err);
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(y[i], 3 * x[i], 0, "y[%d] = %g", i, y[i]);
    cr_assert_eq(tilec_comm_run(c, NULL, TILEC_COLL_ALL_REDUCE, TILEC_REDOP_MAX, 0, 0, &in, &out, NULL, err, sizeof err),
                 TILEC_RT_OK, "%s", err);
    cr_assert_float_eq(y[5], 6, 0);
    tilec_comm_free(c);
}

/* all_gather on axis 1 of [2, 2] with world 2: each row holds the ranks'
 * rows one after the other, [2, 4] */
Test(comm, all_gather_on_an_inner_axis_gathers_per_row)
{
    tilec_comm *c = make(0, 2);
    int32_t x[4] = {1, 2, 3, 4}, y[8] = {0};
    tilec_tensor in = host(x, TILEC_DT_I32, 2, (int64_t[]){2, 2}), out = host(y, TILEC_DT_I32, 2, (int64_t[]){2, 4});
    char err[512] = "";
    cr_assert_eq(tilec_comm_run(c, NULL, TILEC_COLL_ALL_GATHER, 0, 1, 0, &in, &out, "g: line 3: y", err, sizeof err),
                 TILEC_RT_OK, "%s", err);
    const int32_t want[8] = {1, 2, 1, 2, 3, 4, 3, 4};
    cr_assert_arr_eq(y, want, sizeof want);
    tilec_comm_free(c);
}

/* reduce_scatter of [4, 2] on axis 0, world 2, rank 1: rows 2 and 3, doubled */
Test(comm, reduce_scatter_keeps_this_ranks_part)
{
    tilec_comm *c = make(1, 2);
    double x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[4] = {0};
    tilec_tensor in = host(x, TILEC_DT_F64, 2, (int64_t[]){4, 2}), out = host(y, TILEC_DT_F64, 2, (int64_t[]){2, 2});
    char err[512] = "";
    cr_assert_eq(tilec_comm_run(c, NULL, TILEC_COLL_REDUCE_SCATTER, TILEC_REDOP_SUM, 0, 0, &in, &out, NULL, err,
                                sizeof err),
                 TILEC_RT_OK, "%s", err);
    const double want[4] = {10, 12, 14, 16};
    cr_assert_arr_eq(y, want, sizeof want);
    tilec_comm_free(c);
}

Test(comm, sizes_are_checked_with_the_tensors_named)
{
    tilec_comm *c = make(0, 2);
    float x[6] = {0}, y[12] = {0};
    char err[512] = "";
    tilec_tensor in = host(x, TILEC_DT_F32, 2, (int64_t[]){3, 2}), out = host(y, TILEC_DT_F32, 2, (int64_t[]){3, 2});
    cr_assert_eq(tilec_comm_run(c, NULL, TILEC_COLL_REDUCE_SCATTER, TILEC_REDOP_SUM, 0, 0, &in, &out,
                                "sp: line 41: y = reduce_scatter(p, sum, 0)", err, sizeof err),
                 TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(err, "sp: line 41: y = reduce_scatter(p, sum, 0): dimension 0 of the input f32[3, 2] is 3, "
                          "which world (2 ranks) does not divide (reduce_scatter hands each rank an equal part)");
    cr_assert_eq(tilec_comm_run(c, NULL, TILEC_COLL_ALL_GATHER, 0, 0, 0, &in, &out, "g", err, sizeof err),
                 TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(err, "g: dimension 0 of the output f32[3, 2] is 3, but all_gather of the input f32[3, 2] makes 6 "
                          "(world 2)");
    cr_assert_eq(tilec_comm_run(c, NULL, TILEC_COLL_BROADCAST, 0, 0, 2, &in, &out, "b", err, sizeof err),
                 TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(err, "b: the root rank 2 is not in 0 .. 1 (world 2)");
    tilec_tensor b = host(x, TILEC_DT_BOOL, 2, (int64_t[]){3, 2});
    cr_assert_eq(tilec_comm_run(c, NULL, TILEC_COLL_ALL_REDUCE, 0, 0, 0, &b, &b, "r", err, sizeof err),
                 TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(err, "r: NCCL has no bool (i8, u8, i32, u32, i64, u64, f16, bf16, f32, f64)");
    tilec_comm_free(c);
}

Test(comm, a_missing_nccl_names_what_was_tried_and_TILEC_NCCL)
{
    unsigned char id[TILEC_COMM_ID_BYTES];
    char err[512] = "";
    cr_assert_eq(tilec_comm_unique_id("/nonexistent/libnccl.so.2", id, err, sizeof err), TILEC_RT_NO_DRIVER);
    cr_assert(strstr(err, "no NCCL found: /nonexistent/libnccl.so.2 (the library asked for) could not be loaded"),
              "%s", err);
    cr_assert(strstr(err, "set TILEC_NCCL"), "%s", err);
    setenv("TILEC_NCCL", "/nonexistent/env/libnccl.so.2", 1);
    tilec_comm *c = (tilec_comm *)1;
    cr_assert_eq(tilec_comm_new(NULL, NULL, 0, 1, id, &c, err, sizeof err), TILEC_RT_NO_DRIVER);
    cr_assert_null(c);
    cr_assert(strstr(err, "/nonexistent/env/libnccl.so.2 (from TILEC_NCCL)"), "%s", err);
    setenv("TILEC_NCCL", FAKENCCL, 1); /* TILEC_NCCL is what a NULL library loads */
    cr_assert_eq(tilec_comm_unique_id(NULL, id, err, sizeof err), TILEC_RT_OK, "%s", err);
    cr_assert_eq(tilec_comm_new(NULL, NULL, 0, 1, id, &c, err, sizeof err), TILEC_RT_OK, "%s", err);
    cr_assert_str_eq(tilec_comm_library(c), FAKENCCL);
    tilec_comm_free(c);
    unsetenv("TILEC_NCCL");
}

Test(comm, nccl_failures_come_back_with_its_message)
{
    tilec_comm *c = make(0, 2);
    float x[2] = {1, 2}, y[2];
    tilec_tensor in = host(x, TILEC_DT_F32, 1, (int64_t[]){2}), out = host(y, TILEC_DT_F32, 1, (int64_t[]){2});
    char err[512] = "";
    setenv("FAKE_NCCL_FAIL", "AllReduce", 1);
    cr_assert_eq(tilec_comm_run(c, NULL, TILEC_COLL_ALL_REDUCE, 0, 0, 0, &in, &out, "t", err, sizeof err),
                 TILEC_RT_LAUNCH_ERROR);
    cr_assert_str_eq(err, "t: ncclAllReduce failed (rank 0 of 2): internal error (fake)");
    setenv("FAKE_NCCL_FAIL", "CommInitRank", 1);
    unsigned char id[TILEC_COMM_ID_BYTES];
    cr_assert_eq(tilec_comm_unique_id(FAKENCCL, id, err, sizeof err), TILEC_RT_OK);
    tilec_comm *d = NULL;
    cr_assert_eq(tilec_comm_new(NULL, FAKENCCL, 0, 2, id, &d, err, sizeof err), TILEC_RT_LAUNCH_ERROR);
    cr_assert_str_eq(err, "ncclCommInitRank(rank 0 of 2) failed: internal error (fake)");
    unsetenv("FAKE_NCCL_FAIL");
    cr_assert_eq(tilec_comm_new(NULL, FAKENCCL, 2, 2, id, &d, err, sizeof err), TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(err, "tilec_comm_new: rank 2 is not in 0 .. 1 (world 2)");
    tilec_comm_free(c);
}

/* a registered collective runs through tilec_externs_call, as the
 * wrappers call it, and an adopted communicator is not destroyed */
Test(comm, registered_on_an_extern_registry)
{
    tilec_comm *owner = make(0, 2), *c = NULL;
    char err[512] = "";
    tilec_externs *x = tilec_externs_new();
    cr_assert_not_null(x);
    cr_assert_eq(tilec_comm_register(owner, x, "tilec:coll:y", TILEC_COLL_ALL_REDUCE, TILEC_REDOP_SUM, 0, 0,
                                     "tp: line 29: y = all_reduce(p, sum)", err, sizeof err),
                 TILEC_RT_OK, "%s", err);
    /* again: replaced, not added */
    cr_assert_eq(tilec_comm_register(owner, x, "tilec:coll:y", TILEC_COLL_ALL_REDUCE, TILEC_REDOP_PROD, 0, 0,
                                     "tp: line 29: y = all_reduce(p, prod)", err, sizeof err),
                 TILEC_RT_OK, "%s", err);
    float a[3] = {1, 2, 3}, b[3] = {0}, big[4];
    tilec_tensor in = host(a, TILEC_DT_F32, 1, (int64_t[]){3}), out = host(b, TILEC_DT_F32, 1, (int64_t[]){3});
    cr_assert_eq(tilec_externs_call(x, "tilec:coll:y", NULL, NULL, &in, 1, &out, 1), TILEC_RT_OK, "%s",
                 tilec_externs_last_error(x));
    cr_assert_float_eq(b[2], 9, 0); /* prod over 2 mirror ranks */
    tilec_tensor wrong = host(big, TILEC_DT_F32, 1, (int64_t[]){4});
    cr_assert_eq(tilec_externs_call(x, "tilec:coll:y", NULL, NULL, &in, 1, &wrong, 1), TILEC_RT_LAUNCH_ERROR);
    cr_assert_str_eq(tilec_externs_last_error(x), "tp: line 29: y = all_reduce(p, prod): dimension 0 of the output "
                                                  "f32[4] is 4, but all_reduce of the input f32[3] makes 3 (world 2)");
    cr_assert_eq(tilec_comm_adopt(FAKENCCL, NULL, &c, err, sizeof err), TILEC_RT_INVALID_ARG);
    tilec_externs_free(x);
    tilec_comm_free(owner);
}

/* a communicator made by NCCL directly (as torch.distributed's is) */
Test(comm, an_adopted_communicator_is_left_to_its_owner)
{
    void *h = dlopen(FAKENCCL, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h);
    int (*get_id)(unsigned char *) = (int (*)(unsigned char *))dlsym(h, "ncclGetUniqueId");
    typedef struct {
        unsigned char b[TILEC_COMM_ID_BYTES];
    } id128;
    int (*init)(void **, int, id128, int) = (int (*)(void **, int, id128, int))dlsym(h, "ncclCommInitRank");
    int (*destroy)(void *) = (int (*)(void *))dlsym(h, "ncclCommDestroy");
    cr_assert(get_id && init && destroy);
    id128 id;
    void *raw = NULL;
    cr_assert_eq(get_id(id.b), 0);
    cr_assert_eq(init(&raw, 4, id, 3), 0);
    tilec_comm *c = NULL;
    char err[512] = "";
    cr_assert_eq(tilec_comm_adopt(FAKENCCL, raw, &c, err, sizeof err), TILEC_RT_OK, "%s", err);
    cr_assert_eq(tilec_comm_rank(c), 3);
    cr_assert_eq(tilec_comm_world(c), 4);
    tilec_comm_free(c);
    cr_assert_eq(destroy(raw), 0); /* still ours: a double free under ASan otherwise */
    dlclose(h);
}

/* the asynchronous registration (overlap): its wait refuses to run before
 * the collective, an overlapped collective needs the runtime for its
 * stream, and a wait symbol must differ from the collective's (the
 * collective's stream and events on the fake driver: tests/test_wrapper_run.c) */
Test(comm, an_async_registration_and_its_wait)
{
    tilec_comm *c = make(0, 2);
    char err[512] = "";
    tilec_externs *x = tilec_externs_new();
    cr_assert_not_null(x);
    cr_assert_null(tilec_comm_stream(c)); /* made at the first overlapped run (tests/python/test_fake.py) */
    cr_assert_null(tilec_comm_stream(NULL));
    cr_assert_eq(tilec_comm_register_async(c, x, "tilec:coll:y", "tilec:coll:y", TILEC_COLL_ALL_REDUCE,
                                           TILEC_REDOP_SUM, 0, 0, NULL, err, sizeof err),
                 TILEC_RT_INVALID_ARG);
    cr_assert_str_eq(err, "tilec_comm_register_async: the wait's symbol is empty or the collective's");
    cr_assert_eq(tilec_comm_register_async(c, x, "tilec:coll:y", "tilec:wait:y", TILEC_COLL_ALL_REDUCE,
                                           TILEC_REDOP_SUM, 0, 0, "line 29: y = all_reduce(p, sum)", err, sizeof err),
                 TILEC_RT_OK, "%s", err);
    cr_assert_eq(tilec_externs_call(x, "tilec:wait:y", NULL, NULL, NULL, 0, NULL, 0), TILEC_RT_LAUNCH_ERROR);
    cr_assert_str_eq(tilec_externs_last_error(x), "line 29: y = all_reduce(p, sum): waited for before it ran");
    float a[3] = {1, 2, 3}, b[3] = {0};
    tilec_tensor in = host(a, TILEC_DT_F32, 1, (int64_t[]){3}), out = host(b, TILEC_DT_F32, 1, (int64_t[]){3});
    cr_assert_eq(tilec_externs_call(x, "tilec:coll:y", NULL, NULL, &in, 1, &out, 1), TILEC_RT_LAUNCH_ERROR);
    cr_assert_str_eq(tilec_externs_last_error(x), "line 29: y = all_reduce(p, sum): an overlapped collective needs "
                                                  "the runtime (the registry call gave none)");
    tilec_comm_set_overlap(c, 0);
    tilec_comm_set_overlap(NULL, 0); /* a no-op */
    tilec_externs_free(x);
    tilec_comm_free(c);
}
