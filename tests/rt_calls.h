/* rt_calls.h: every call of include/tilec/runtime.h that takes a runtime
 * handle, made on a handle that cannot work (a failed open, or NULL): each
 * must return the same status and leave the handle's message as it was.
 * Used by tests/test_runtime.c and tests/test_api_args.c. */
#ifndef TILEC_TESTS_RT_CALLS_H
#define TILEC_TESTS_RT_CALLS_H

#include <criterion/criterion.h>
#include <stdio.h>

#include "tilec/runtime.h"

/* Every GPU call on a failed handle returns the open's status. */
static inline void expect_all_calls_fail(tilec_rt *rt, tilec_rt_status st)
{
    const char *before = tilec_rt_last_error(rt);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", before);
    uint64_t p = 1;
    void *h = (void *)1;
    float ms = 0;
    int n = 0;
    char buf[8] = {0};
    tilec_rt_device_props info;
    tilec_rt_module *m = (tilec_rt_module *)1;
    cr_expect_eq(tilec_rt_device_info(rt, &info), st);
    cr_expect_eq(tilec_rt_device_count(rt, &n), st);
    cr_expect_eq(tilec_rt_make_current(rt), st);
    cr_expect_eq(tilec_rt_synchronize(rt), st);
    cr_expect_eq(tilec_rt_malloc(rt, 64, &p), st);
    cr_expect_eq(tilec_rt_free(rt, 0x1000), st);
    cr_expect_eq(tilec_rt_memcpy_htod(rt, 0x1000, buf, 8), st);
    cr_expect_eq(tilec_rt_memcpy_dtoh(rt, buf, 0x1000, 8), st);
    cr_expect_eq(tilec_rt_memcpy_dtod(rt, 0x1000, 0x2000, 8), st);
    cr_expect_eq(tilec_rt_memset_d32(rt, 0x1000, 7, 2), st);
    cr_expect_eq(tilec_rt_memcpy_htod_async(rt, 0x1000, buf, 8, NULL), st);
    cr_expect_eq(tilec_rt_memcpy_dtoh_async(rt, buf, 0x1000, 8, NULL), st);
    cr_expect_eq(tilec_rt_memcpy_dtod_async(rt, 0x1000, 0x2000, 8, NULL), st);
    cr_expect_eq(tilec_rt_memset_d32_async(rt, 0x1000, 7, 2, NULL), st);
    cr_expect_eq(tilec_rt_stream_create(rt, 0, &h), st);
    cr_expect_eq(tilec_rt_stream_destroy(rt, (void *)1), st);
    cr_expect_eq(tilec_rt_stream_synchronize(rt, NULL), st);
    cr_expect_eq(tilec_rt_event_create(rt, &h), st);
    cr_expect_eq(tilec_rt_event_destroy(rt, (void *)1), st);
    cr_expect_eq(tilec_rt_event_record(rt, (void *)1, NULL), st);
    cr_expect_eq(tilec_rt_event_synchronize(rt, (void *)1), st);
    cr_expect_eq(tilec_rt_event_elapsed_ms(rt, (void *)1, (void *)2, &ms), st);
    cr_expect_eq(tilec_rt_module_load(rt, "x", 2, &m), st);
    cr_expect_str_eq(tilec_rt_last_error(rt), msg, "a failed handle's message changed");
}

#endif
