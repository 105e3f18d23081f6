/* mm_tile.h: the text of a 128x128x64 f16 matrix product kernel `NAME`
 * as a user writes it, A's load mask left to the test (a printf format
 * with %s for the kernel's name and %s for the mask): the kernel of the
 * sm_90a twin tests (tests/test_wgmma.c, tests/test_tma.c,
 * tests/test_wgconv.c), and, for the suites that include fs_helpers.h
 * first, lower_mm: it lowered with edits. */
#ifndef TILEC_TESTS_MM_TILE_H
#define TILEC_TESTS_MM_TILE_H

#define MM_TILE_FMT                                                                                       \
    "kernel %s(a: *f16, b: *f16, c: *f16, M: i32, N: i32, K: i32)\n"                                      \
    "    grid (cdiv(M, BM), cdiv(N, BN))\n"                                                              \
    "    hints { BM = 128, BN = 128, BK = 64, warps = 8, stages = 3 }\n"                                 \
    "{\n"                                                                                                \
    "    let rm = pid(0) * BM + range(BM);\n"                                                            \
    "    let rn = pid(1) * BN + range(BN);\n"                                                            \
    "    let acc = zeros(f32, BM, BN);\n"                                                                \
    "    for k in 0 .. K step BK {\n"                                                                    \
    "        let rk = k + range(BK);\n"                                                                  \
    "        let ta = load(a + rm[:, None] * K + rk[None, :], %s, 0.0);\n"                               \
    "        let tb = load(b + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0);\n" \
    "        acc = acc + dot(ta, tb);\n"                                                                 \
    "    }\n"                                                                                            \
    "    store(c + rm[:, None] * N + rn[None, :], cast(acc, f16), rm[:, None] < M && rn[None, :] < N);\n" \
    "}\n"

#define MM_TILE_MASK "rm[:, None] < M && rk[None, :] < K" /* A's own extents */

/* Helpers of the suites that lower it (they include fs_helpers.h first). */
#ifdef TILEC_TESTS_FS_HELPERS_H
/* The kernel `name` of src, variant 0, lowered. */
static inline void lower_src(tilec_ctx *ctx, tilec_module **m, const char *name, const char *src, tilec_kernel_code *code)
{
    tilec_status st = tilec_parse_string(ctx, "src.tile", src, strlen(src), m);
    const tilec_diag *d = tilec_ctx_diag(ctx, 0);
    cr_assert_eq(st, TILEC_OK, "%s", d ? d->message : "");
    lower_variant(ctx, *m, name, 0, code);
}

/* src with `from` replaced by `to` (once; it must be there). */
static inline void edit_src(char *src, size_t size, const char *from, const char *to)
{
    char *h = strstr(src, from);
    cr_assert_not_null(h, "'%s' in the source", from);
    cr_assert_lt(strlen(src) - strlen(from) + strlen(to), size);
    memmove(h + strlen(to), h + strlen(from), strlen(h + strlen(from)) + 1);
    memcpy(h, to, strlen(to));
}

/* mm_tile.h's kernel `mm` with edits[2i] replaced by edits[2i + 1] (n
 * pairs), lowered (variant 0) in a new context. */
static inline tilec_ctx *lower_mm(const char *const *edits, int n, tilec_module **m, tilec_kernel_code *code)
{
    char src[2048];
    snprintf(src, sizeof src, MM_TILE_FMT, "mm", MM_TILE_MASK);
    for (int i = 0; i < n; i++)
        edit_src(src, sizeof src, edits[2 * i], edits[2 * i + 1]);
    tilec_ctx *ctx = tilec_ctx_new();
    lower_src(ctx, m, "mm", src, code);
    return ctx;
}

#endif

#endif
