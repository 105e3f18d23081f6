/* cases.h: Criterion parameters from files: one case per path matching a
 * glob pattern (and a second pattern, when given), in glob's sorted order.
 * Shared by the golden, IR and emitter suites. */
#ifndef TILEC_TESTS_CASES_H
#define TILEC_TESTS_CASES_H

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>

typedef struct gcase {
    char path[256];
} gcase;

static inline void free_cases(struct criterion_test_params *p) { cr_free(p->params); }

/* The files matching pattern, then those matching also (NULL: none). */
static inline struct criterion_test_params cases_of2(const char *pattern, const char *also)
{
    glob_t g;
    size_t n = 0;
    gcase *cases = NULL;
    if (glob(pattern, 0, NULL, &g) == 0 && (!also || glob(also, GLOB_APPEND, NULL, &g) == 0)) {
        cases = cr_malloc(g.gl_pathc * sizeof *cases);
        for (size_t i = 0; cases && i < g.gl_pathc; i++)
            if (strlen(g.gl_pathv[i]) < sizeof cases[0].path)
                snprintf(cases[n++].path, sizeof cases[0].path, "%s", g.gl_pathv[i]);
    }
    globfree(&g);
    return cr_make_param_array(gcase, cases, n, free_cases);
}

static inline struct criterion_test_params cases_of(const char *pattern) { return cases_of2(pattern, NULL); }

#endif
