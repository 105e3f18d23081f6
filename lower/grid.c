/* grid.c: a kernel's launch grid for one variant, evaluated on the scalar
 * arguments with checked 64-bit arithmetic. */
#include <stdint.h>
#include <string.h>

#include "tilec/lower.h"

static int eval_grid(const tilec_kernel *k, int variant, const tilec_expr *e, const int64_t *args, int64_t *out)
{
    int64_t a, b;
    switch (e->kind) {
    case TILEC_EX_INT:
        *out = e->ival;
        return 0;
    case TILEC_EX_NAME:
        for (uint32_t i = 0; i < k->nparams; i++)
            if (!strcmp(k->params[i].name, e->name)) {
                *out = args[i];
                return 0;
            }
        for (uint32_t i = 0; i < k->nhints; i++)
            if (!strcmp(k->hints[i].name, e->name)) {
                *out = tilec_kernel_hint(k, variant, e->name, 0);
                return 0;
            }
        return -1;
    case TILEC_EX_UNARY:
        if (eval_grid(k, variant, e->args[0], args, &a))
            return -1;
        if (e->op == TILEC_OP_NEG)
            return __builtin_sub_overflow((int64_t)0, a, out) ? -1 : 0;
        *out = e->op == TILEC_OP_BITNOT ? ~a : !a;
        return 0;
    case TILEC_EX_CALL:
        if (strcmp(e->name, "cdiv") || e->nargs != 2)
            return -1;
        if (eval_grid(k, variant, e->args[0], args, &a) || eval_grid(k, variant, e->args[1], args, &b) || b <= 0)
            return -1;
        *out = a <= 0 ? 0 : a / b + (a % b > 0); /* a + b - 1 could overflow */
        return 0;
    case TILEC_EX_BINARY:
        if (eval_grid(k, variant, e->args[0], args, &a) || eval_grid(k, variant, e->args[1], args, &b))
            return -1;
        switch (e->op) {
        case TILEC_OP_ADD: return __builtin_add_overflow(a, b, out) ? -1 : 0;
        case TILEC_OP_SUB: return __builtin_sub_overflow(a, b, out) ? -1 : 0;
        case TILEC_OP_MUL: return __builtin_mul_overflow(a, b, out) ? -1 : 0;
        case TILEC_OP_DIV: if (!b || (a == INT64_MIN && b == -1)) return -1; *out = a / b; return 0;
        case TILEC_OP_MOD: if (!b || (a == INT64_MIN && b == -1)) return -1; *out = a % b; return 0;
        case TILEC_OP_SHL: /* of a value >= 0 whose result fits: no bit lost */
            if (a < 0 || b < 0 || b > 62 || a > (INT64_MAX >> b)) return -1;
            *out = a << b;
            return 0;
        case TILEC_OP_SHR: if (a < 0 || b < 0 || b > 62) return -1; *out = a >> b; return 0;
        default: return -1;
        }
    default:
        return -1;
    }
}

tilec_status tilec_kernel_grid(const tilec_kernel *k, int variant, const int64_t *args, uint32_t grid[3])
{
    if (!k || !grid || (!args && k->nparams) || variant < 0 || (uint32_t)variant >= tilec_kernel_variant_count(k))
        return TILEC_ERR_ARG;
    int v = k->nvariants ? variant : -1;
    for (int i = 0; i < 3; i++) {
        int64_t g = 1;
        if ((uint32_t)i < k->ngrid && eval_grid(k, v, k->grid[i], args, &g))
            return TILEC_ERR_ARG;
        if (g < 0 || g > (i == 0 ? INT64_C(2147483647) : 65535))
            return TILEC_ERR_ARG;
        grid[i] = (uint32_t)g;
    }
    return TILEC_OK;
}
