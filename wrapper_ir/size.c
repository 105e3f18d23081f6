/* size.c: evaluating the wrapper IR's sizes (integer expressions,
 * tilec/iexpr.h) with the values of the size symbols, by the one
 * evaluator. The lines carry their sizes as trees; nothing parses a
 * size's text back. */
#include <stdio.h>
#include <string.h>

#include "wrapper_ir/wir.h"

typedef struct sz_env {
    const tilec_wir_size *sizes;
    size_t n;
    char *bad; /* the first unknown symbol, or NULL */
} sz_env;

static int sz_lookup(void *user, const tilec_ix *sym, int64_t *out)
{
    sz_env *env = user;
    for (size_t k = 0; k < env->n; k++)
        if (!strcmp(env->sizes[k].name, sym->name)) {
            *out = env->sizes[k].value;
            return 0;
        }
    if (env->bad && !env->bad[0])
        snprintf(env->bad, 64, "%s", sym->name);
    return 1;
}

tilec_status wir_expr_eval(const tilec_ix *e, const tilec_wir_size *sizes, size_t n, int64_t *out, char bad[64])
{
    sz_env env = {sizes, n, bad};
    if (bad)
        bad[0] = 0;
    tilec_ix_err r = tilec_ix_eval(e, sz_lookup, &env, out, NULL);
    return r == TILEC_IX_OK ? TILEC_OK : r == TILEC_IX_UNKNOWN || r == TILEC_IX_BAD ? TILEC_ERR_ARG : TILEC_ERR_INPUT;
}

tilec_status tilec_wir_eval_expr(const tilec_ix *e, const tilec_wir_size *sizes, size_t n, int64_t *out)
{
    if (!e || !out || (!sizes && n))
        return TILEC_ERR_ARG;
    return wir_expr_eval(e, sizes, n, out, NULL);
}
