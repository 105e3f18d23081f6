/* fake_load.h: finding and loading the fake CUDA driver (libfakecuda.so,
 * built beside the test binaries; see fake_cuda.h) from a Criterion suite.
 * The runtime under test opens the same file with tilec_rt_open_driver. */
#ifndef TILEC_TESTS_FAKE_LOAD_H
#define TILEC_TESTS_FAKE_LOAD_H

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fake_cuda.h"

/* path = the directory of this test binary + "/libfakecuda.so". */
static inline void fake_cuda_path(char *path, size_t cap)
{
    char exe[3072];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert_gt(n, 0);
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    cr_assert_not_null(slash);
    *slash = 0;
    snprintf(path, cap, "%s/libfakecuda.so", exe);
}

/* dlopen the driver at path and return the state it records; *handle (may
 * be NULL) gets the handle, for its other test entry points. */
static inline fake_cuda_state *fake_cuda_load(const char *path, void **handle)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "the fake driver is built beside the tests: %s", dlerror());
    fake_cuda_state *(*get)(void) = (fake_cuda_state * (*)(void)) dlsym(h, "fake_cuda_state_get");
    cr_assert_not_null(get);
    if (handle)
        *handle = h;
    return get();
}

#endif
