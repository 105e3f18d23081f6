/* mm_tile.h: the text of a 128x128x64 f16 matrix product kernel `NAME`
 * as a user writes it, A's load mask left to the test (a printf format
 * with %s for the kernel's name and %s for the mask): the kernel of the
 * sm_90a twin tests (tests/test_wgmma.c, tests/test_tma.c). */
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

#endif
