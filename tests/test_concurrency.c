/* test_concurrency.c: 16 processes x 50 rounds building 6 modules against
 * one cache directory, compile only (tests/stress.h says what each round
 * does and checks): zero failures, zero torn reads, the final cache valid.
 * The same run with launches is in tests/test_gpu_faults.c. */
#include <criterion/criterion.h>

#include "fs_helpers.h"
#include "stress.h"

Test(concurrency, processes_16_x_rounds_50_one_cache, .timeout = 600)
{
    char dir[64];
    make_tmpdir(dir, sizeof dir);
    stress_totals t;
    int rc = stress_run(dir, 16, 50, 0, &t);
    fprintf(stderr, "concurrency: 16 processes x 50 rounds: %ld builds, %ld cache hits, %ld compiles, %ld corrupt reads, %ld failures\n",
            t.builds_ok, t.cache_hits, t.compiles, t.corrupt, t.failures);
    cr_expect_eq(rc, 0, "%ld failures; first: %s", t.failures, t.first_failure);
    cr_expect_eq(t.rounds, 16 * 50);
    cr_expect_eq(t.builds_ok, 16 * 50);
    cr_expect_eq(t.corrupt, 0);
    cr_expect_geq(t.compiles, STRESS_MODULES, "every module is compiled at least once");
    cr_expect_gt(t.cache_hits, 0);
    char why[256] = "";
    cr_expect_eq(stress_check_cache(dir, "sm_90", why, sizeof why), 0, "%s", why);
    rm_dir(dir);
}
