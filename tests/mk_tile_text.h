/* mk_tile_text.h: the text of the kernel mk that the fake driver knows
 * (tests/fake_cuda.c runs mk_v<i> as y = 2 * x and, on its fake clock,
 * makes one launch take mk_ms[i]): three variants. MK_TILE_HEAD
 * is its signature, hints, variants and offsets (a test may end it its
 * own way); MK_TILE the whole kernel, storing y. */
#ifndef TILEC_TESTS_MK_TILE_TEXT_H
#define TILEC_TESTS_MK_TILE_TEXT_H

#define MK_TILE_HEAD                                                                         \
    "kernel mk(x: *f32, y: *f32, n: i32)\n"                                                  \
    "    grid (cdiv(n, BLOCK))\n"                                                            \
    "    hints { BLOCK = 256, warps = 4 }\n"                                                 \
    "    variants { { BLOCK = 64, warps = 2 }, { BLOCK = 128 }, {} }\n" \
    "{\n"                                                                                    \
    "    let offs = pid(0) * BLOCK + range(BLOCK);\n"                                        \
    "    let m = offs < n;\n"

#define MK_TILE MK_TILE_HEAD "    store(y + offs, load(x + offs, m) * 2.0, m);\n}\n"

#endif
