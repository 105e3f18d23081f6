/* test_iexpr.c: the one evaluator of integer expressions (tilec/iexpr.h):
 * each operator's rule at its edges (overflow, division, cdiv of negative
 * and zero operands, shifts), trees with symbols, the failing node. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "util/iexpr.h"

static int64_t ap(tilec_ix_op op, int64_t a, int64_t b, tilec_ix_err want)
{
    int64_t v = 12345;
    tilec_ix_err e = tilec_ix_apply(op, a, b, &v);
    cr_assert_eq(e, want, "op %d on %lld, %lld: %s, want %s", op, (long long)a, (long long)b, tilec_ix_err_string(e),
                 tilec_ix_err_string(want));
    return v;
}

Test(iexpr, cdiv_is_the_ceiling_for_any_dividend_and_a_positive_divisor)
{
    static const struct {
        int64_t a, b, want;
    } cases[] = {
        {7, 2, 4},   {8, 2, 4},    {1, 128, 1},  {0, 5, 0},    {-7, 2, -3},         {-8, 2, -4},
        {-1, 128, 0}, {-128, 128, -1}, {INT64_MAX, INT64_MAX, 1}, {INT64_MAX, 1, INT64_MAX},
        {INT64_MAX - 5, INT64_C(4611686018427387904), 2},  {INT64_MIN, 1, INT64_MIN},
        {INT64_MIN, INT64_MAX, -1}, {INT64_MAX, 2, INT64_C(4611686018427387904)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_expect_eq(ap(TILEC_IX_CDIV, cases[i].a, cases[i].b, TILEC_IX_OK), cases[i].want, "cdiv(%lld, %lld)",
                     (long long)cases[i].a, (long long)cases[i].b);
}

/* min and max (a grid's min(cdiv(n, B), P)) never fail, at the edges too */
Test(iexpr, min_and_max_pick_one_operand_and_never_fail)
{
    cr_expect_eq(ap(TILEC_IX_MIN, 28672, 264, TILEC_IX_OK), 264);
    cr_expect_eq(ap(TILEC_IX_MAX, 28672, 264, TILEC_IX_OK), 28672);
    cr_expect_eq(ap(TILEC_IX_MIN, -1, 0, TILEC_IX_OK), -1);
    cr_expect_eq(ap(TILEC_IX_MAX, -1, 0, TILEC_IX_OK), 0);
    cr_expect_eq(ap(TILEC_IX_MIN, INT64_MIN, INT64_MAX, TILEC_IX_OK), INT64_MIN);
    cr_expect_eq(ap(TILEC_IX_MAX, INT64_MIN, INT64_MAX, TILEC_IX_OK), INT64_MAX);
    cr_expect_eq(ap(TILEC_IX_MIN, 7, 7, TILEC_IX_OK), 7);
}

Test(iexpr, cdiv_by_zero_or_a_negative_divisor_is_an_error)
{
    ap(TILEC_IX_CDIV, 7, 0, TILEC_IX_CDIV_DIVISOR);
    ap(TILEC_IX_CDIV, 7, -2, TILEC_IX_CDIV_DIVISOR);
    ap(TILEC_IX_CDIV, 0, 0, TILEC_IX_CDIV_DIVISOR);
    ap(TILEC_IX_CDIV, INT64_MIN, -1, TILEC_IX_CDIV_DIVISOR);
}

Test(iexpr, division_truncates_and_never_traps)
{
    cr_expect_eq(ap(TILEC_IX_DIV, -7, 2, TILEC_IX_OK), -3);
    cr_expect_eq(ap(TILEC_IX_MOD, -7, 2, TILEC_IX_OK), -1);
    cr_expect_eq(ap(TILEC_IX_DIV, 7, -2, TILEC_IX_OK), -3);
    cr_expect_eq(ap(TILEC_IX_MOD, 7, -2, TILEC_IX_OK), 1);
    ap(TILEC_IX_DIV, 1, 0, TILEC_IX_DIV_ZERO);
    ap(TILEC_IX_MOD, 1, 0, TILEC_IX_DIV_ZERO);
    ap(TILEC_IX_DIV, INT64_MIN, -1, TILEC_IX_OVERFLOW); /* a trap (SIGFPE) in C */
    cr_expect_eq(ap(TILEC_IX_MOD, INT64_MIN, -1, TILEC_IX_OK), 0, "the remainder exists and fits");
    cr_expect_eq(ap(TILEC_IX_DIV, INT64_MAX, -1, TILEC_IX_OK), -INT64_MAX);
}

Test(iexpr, overflow_is_an_error_not_a_wrap)
{
    ap(TILEC_IX_ADD, INT64_MAX, 1, TILEC_IX_OVERFLOW);
    ap(TILEC_IX_SUB, INT64_MIN, 1, TILEC_IX_OVERFLOW);
    ap(TILEC_IX_MUL, INT64_C(1) << 32, INT64_C(1) << 31, TILEC_IX_OVERFLOW);
    ap(TILEC_IX_MUL, -1, INT64_MIN, TILEC_IX_OVERFLOW);
    ap(TILEC_IX_NEG, INT64_MIN, 0, TILEC_IX_OVERFLOW);
    cr_expect_eq(ap(TILEC_IX_MUL, INT64_C(1) << 31, INT64_C(1) << 31, TILEC_IX_OK), INT64_C(1) << 62);
    cr_expect_eq(ap(TILEC_IX_ADD, INT64_MIN, INT64_MAX, TILEC_IX_OK), -1);
    cr_expect_eq(ap(TILEC_IX_NEG, INT64_MAX, 0, TILEC_IX_OK), -INT64_MAX);
    cr_expect_eq(ap(TILEC_IX_NOT, 0, 0, TILEC_IX_OK), -1);
    cr_expect_eq(ap(TILEC_IX_LNOT, 5, 0, TILEC_IX_OK), 0);
    cr_expect_eq(ap(TILEC_IX_LNOT, 0, 0, TILEC_IX_OK), 1);
}

Test(iexpr, shifts_of_non_negative_values_lose_no_bit)
{
    cr_expect_eq(ap(TILEC_IX_SHL, 3, 2, TILEC_IX_OK), 12);
    cr_expect_eq(ap(TILEC_IX_SHR, 13, 2, TILEC_IX_OK), 3);
    cr_expect_eq(ap(TILEC_IX_SHL, 1, 62, TILEC_IX_OK), INT64_C(1) << 62);
    ap(TILEC_IX_SHL, INT64_C(1) << 62, 1, TILEC_IX_OVERFLOW);
    ap(TILEC_IX_SHL, -1, 2, TILEC_IX_SHIFT);
    ap(TILEC_IX_SHR, -8, 1, TILEC_IX_SHIFT);
    ap(TILEC_IX_SHL, 1, 63, TILEC_IX_SHIFT);
    ap(TILEC_IX_SHR, 1, -1, TILEC_IX_SHIFT);
    cr_expect_eq(ap(TILEC_IX_AND, 12, 10, TILEC_IX_OK), 8);
    cr_expect_eq(ap(TILEC_IX_OR, 12, 10, TILEC_IX_OK), 14);
    cr_expect_eq(ap(TILEC_IX_XOR, 12, 10, TILEC_IX_OK), 6);
    ap(TILEC_IX_INT, 1, 1, TILEC_IX_BAD);
}

static int lookup(void *user, const tilec_ix *sym, int64_t *out)
{
    (void)user;
    if (sym->name[0] == 'R' && !sym->name[1])
        *out = 4096;
    else if (sym->name[0] == 'N' && !sym->name[1])
        *out = -300;
    else
        return 1;
    return 0;
}

Test(iexpr, trees_evaluate_left_first_and_name_the_failing_node)
{
    arena a;
    ar_init(&a);
    /* 2*R - cdiv(N, 128) = 8192 - (-2) */
    const tilec_ix *R = ix_sym(&a, "R"), *N = ix_sym(&a, "N");
    const tilec_ix *e = ix_new(&a, TILEC_IX_SUB, ix_new(&a, TILEC_IX_MUL, ix_int(&a, 2), R),
                               ix_new(&a, TILEC_IX_CDIV, N, ix_int(&a, 128)));
    int64_t v = 0;
    cr_assert_eq(tilec_ix_eval(e, lookup, NULL, &v, NULL), TILEC_IX_OK);
    cr_expect_eq(v, 8194);
    /* cdiv(R, N): the divisor is negative */
    const tilec_ix *at = NULL, *bad = ix_new(&a, TILEC_IX_CDIV, R, N);
    cr_expect_eq(tilec_ix_eval(ix_new(&a, TILEC_IX_ADD, ix_int(&a, 1), bad), lookup, NULL, &v, &at),
                 TILEC_IX_CDIV_DIVISOR);
    cr_expect_eq(at, bad);
    /* an unknown symbol, and no lookup at all */
    const tilec_ix *K = ix_sym(&a, "K");
    cr_expect_eq(tilec_ix_eval(ix_new(&a, TILEC_IX_MUL, K, R), lookup, NULL, &v, &at), TILEC_IX_UNKNOWN);
    cr_expect_eq(at, K);
    cr_expect_eq(tilec_ix_eval(R, NULL, NULL, &v, NULL), TILEC_IX_UNKNOWN);
    /* R^6 overflows at the sixth factor: 2^60 * 2^12 */
    const tilec_ix *p = R;
    for (int i = 0; i < 5; i++)
        p = ix_new(&a, TILEC_IX_MUL, p, R);
    cr_expect_eq(tilec_ix_eval(p, lookup, NULL, &v, &at), TILEC_IX_OVERFLOW);
    cr_expect_eq(at, p);
    /* a missing operand fails the maker, not the evaluator */
    cr_expect_null(ix_new(&a, TILEC_IX_ADD, R, NULL));
    cr_expect_not_null(ix_new(&a, TILEC_IX_NEG, R, NULL));
    cr_expect_eq(tilec_ix_eval(NULL, lookup, NULL, &v, NULL), TILEC_IX_BAD);
    ar_free(&a);
}
