/* plan_helpers.h: what the launch-plan tests share (test_plan.c,
 * test_fill.c): a plan value read from slot s. */
#ifndef TILEC_TESTS_PLAN_HELPERS_H
#define TILEC_TESTS_PLAN_HELPERS_H

#include <string.h>

#include "tilec/plan.h"

static inline tilec_plan_value slot(int32_t s)
{
    tilec_plan_value v;
    memset(&v, 0, sizeof v);
    v.slot = s;
    return v;
}

#endif
