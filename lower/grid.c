/* grid.c: a kernel's launch grid for one variant: the checker's integer
 * expressions of the grid (tilec_kernel.gridx) evaluated on the scalar
 * arguments and the variant's hints by the one evaluator (tilec/iexpr.h),
 * so that overflow, division by zero and cdiv follow its rules. Under a
 * `split_k = S` hint axis 2 is S times the kernel's (docs/lowering.md,
 * "Split-K"). */
#include <stdint.h>
#include <string.h>

#include "lower/lower_internal.h"
#include "tilec/iexpr.h"
#include "tilec/lower.h"

typedef struct grid_env {
    const tilec_kernel *k;
    int variant;
    const int64_t *args;
} grid_env;

/* A name of the grid: a scalar parameter (its argument) or a hint. */
static int grid_lookup(void *user, const tilec_ix *sym, int64_t *out)
{
    const grid_env *g = user;
    for (uint32_t i = 0; i < g->k->nparams; i++)
        if (!strcmp(g->k->params[i].name, sym->name)) {
            *out = g->args[i];
            return 0;
        }
    for (uint32_t i = 0; i < g->k->nhints; i++)
        if (!strcmp(g->k->hints[i].name, sym->name)) {
            *out = tilec_kernel_hint(g->k, g->variant, sym->name, 0);
            return 0;
        }
    return 1;
}

int lower_kernel_ix_eval(const tilec_kernel *k, int variant, const int64_t *args, const tilec_ix *e, int64_t *out)
{
    grid_env env = {k, k->nvariants ? variant : -1, args};
    return e && tilec_ix_eval(e, grid_lookup, &env, out, NULL) == TILEC_IX_OK ? 0 : -1;
}

tilec_status tilec_kernel_grid(const tilec_kernel *k, int variant, const int64_t *args, uint32_t grid[3])
{
    if (!k || !grid || (!args && k->nparams) || variant < 0 || (uint32_t)variant >= tilec_kernel_variant_count(k))
        return TILEC_ERR_ARG;
    grid_env env = {k, k->nvariants ? variant : -1, args};
    for (int i = 0; i < 3; i++) {
        int64_t g = 1;
        if ((uint32_t)i < k->ngrid &&
            (!k->gridx || tilec_ix_eval(k->gridx[i], grid_lookup, &env, &g, NULL) != TILEC_IX_OK))
            return TILEC_ERR_ARG;
        /* split_k: axis 2 also counts the K slices (lower/splitk.c) */
        int64_t split = i == 2 ? tilec_kernel_hint(k, env.variant, "split_k", 1) : 1;
        if (split > 1 && g > 0) {
            if (g > 65535 / split)
                return TILEC_ERR_ARG;
            g *= split;
        }
        if (g < 0 || g > (i == 0 ? INT64_C(2147483647) : 65535))
            return TILEC_ERR_ARG;
        grid[i] = (uint32_t)g;
    }
    return TILEC_OK;
}
