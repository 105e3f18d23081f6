/* tma.h: how a kernel variant's Hopper twin is launched. On sm_90a the
 * lowering may emit, beside a variant's kernel, a twin that stages its
 * dot operands by the tensor memory accelerator (TMA) and multiplies with
 * wgmma (docs/lowering.md, "wgmma and TMA"). The twin takes the variant's
 * parameters followed by one CUtensorMap per map below, each built at
 * launch from the arguments. The vocabulary between the lowering, which
 * writes this metadata, and the runtime, which builds the maps and falls
 * back to the variant's own kernel when an operand does not qualify. */
#ifndef TILEC_TMA_H
#define TILEC_TMA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TILEC_TMA_MAX_MAPS 3

/* A 2-D tensor in global memory, element (r, c) at base + r * stride + c,
 * r < rows, c < cols, read (maps 0 and 1, the dot's operands) or written
 * (map 2, the epilogue's store, when the twin has one) in boxes of
 * box_rows x box_cols elements, each box row one swizzle span: box_cols *
 * elem_bytes is 32, 64 or 128 bytes, swizzled 32, 64 or 128 bytes wide
 * (A's rows of a K tile of 16 or 32 halves are the narrower ones). ptr,
 * rows, cols and stride are parameter indices (a pointer and three
 * integer parameters); rows may be TILEC_TMA_NONE: every row a 32-bit
 * coordinate names (INT32_MAX rows), for a map whose kernel takes only
 * boxes whose rows it proved in range at run time (a gather twin's B,
 * lower/wggather.c). rows, cols and stride may instead be constants:
 * TILEC_TMA_CONST | c (c from 1 to 2^31 - 2), for an extent or a row
 * stride the kernel's hints fix (attention's head size D, its K and V
 * [S, D] rows: lower/wgattn.c). */
typedef struct tilec_tma_map {
    uint32_t ptr, rows, cols, stride;
    uint32_t box_rows, box_cols;
    uint32_t elem_bytes; /* 2 (f16, bf16) or 4 (f32) */
    uint32_t bf16;       /* 1: bfloat16, 0: float16 (elem_bytes 2) */
    /* batched: 1 for a 3-D map, matrix z at base + z * bscale * bs[0] *
     * bs[1] (bs[0], bs[1] parameter indices or TILEC_TMA_NONE: a factor
     * of 1), z < the grid's extent along axis bgrid (2: the batch index
     * is pid(2); 1: pid(1), a head); boxes of one matrix. */
    uint32_t batched;
    uint32_t bs[2];
    uint32_t bgrid;  /* batched: 1 or 2 */
    uint32_t bscale; /* batched: a constant factor of the matrix stride, at least 1 */
    /* im2col: 1 for a map in the tensor memory accelerator's im2col mode
     * (cuTensorMapEncodeIm2col), a convolution's input image read as the
     * rows of an implicit GEMM's A: an NHWC tensor of rows (N) images of
     * ih x iw pixels of cols (C) channels, pixel (n, h, w) at base + ((n *
     * ih + h) * iw + w) * stride, each box box_rows consecutive output
     * pixels (walked along W, then H, then N) of box_cols channels. The
     * pixels a box walks are those of a filter of fr x fs taps at stride
     * cstride over the image padded by pad on every side (out of the image:
     * zeros); the kernel adds a tap's (r, s) to each pixel's coordinates.
     * ih and iw name an integer parameter or a constant, as cols does; fr,
     * fs, pad and cstride too, or TILEC_TMA_NONE: 1 (fr, fs, cstride) or 0
     * (pad). Never batched; rows never TILEC_TMA_NONE. 0: a tiled map, the
     * words after im2col unused (0). 2 (TILEC_TMA_IM2COL_OUT): the same
     * map, but fr and fs name the output's height and width (the OH and OW
     * a kernel divides its pixel index by: lower/wgim2col.c), not the
     * filter's: the box's walk then wraps after exactly fs pixels of a row
     * and fr rows of an image, whatever filter the kernel reads (its taps
     * are the copy's offsets). */
    uint32_t im2col;
    uint32_t ih, iw, fr, fs, pad, cstride;
} tilec_tma_map;

#define TILEC_TMA_NONE UINT32_MAX
/* tilec_tma_map.im2col: a filter's extents in fr and fs (1), or the output's (2). */
#define TILEC_TMA_IM2COL_FILTER 1u
#define TILEC_TMA_IM2COL_OUT 2u
/* A map's rows, cols or stride that is the constant c, not a parameter:
 * TILEC_TMA_CONST | c (never TILEC_TMA_NONE, which has the bit too). */
#define TILEC_TMA_CONST 0x80000000u
#define TILEC_TMA_IS_CONST(f) (((f) & TILEC_TMA_CONST) && (f) != TILEC_TMA_NONE && ((f) & ~TILEC_TMA_CONST) != 0)

typedef struct tilec_tma_meta {
    char *name;           /* the twin's __global__ function; NULL: none */
    uint32_t threads;     /* its block size */
    uint32_t smem_bytes;  /* its dynamic shared memory */
    uint32_t nmaps;       /* 0: a twin fed by cp.async (lower/wgattn.c where no map describes a ring's load,
                           * lower/wggather.c), the variant's parameters alone */
    /* 1: a persistent grid. The twin takes three more int parameters after
     * its maps, the program's grid (x, y, z), and is launched with any
     * number of blocks along x, each walking the tiles blockIdx.x,
     * + gridDim.x, ... (x * y * z at most INT32_MAX): the runtime launches
     * min(x * y * z, multiprocessors), or one block per tile when there
     * are many tiles a multiprocessor (runtime/tma.c). 2: the same, each
     * block's unit a pair of tiles along y (y, y + 1 for even y; the
     * kernel skips the store of a y past the grid), x * ceil(y / 2) * z
     * units (lower/wgpair.c). 3: a pair of tiles along x (x, x + 1 for
     * even x, one a consumer warp group; the store of an x past the grid
     * skipped), ceil(x / 2) * y * z units (lower/wgpair.c). 4: a pair of
     * tiles along z (z, z + 1 for even z; a head's product, its batch y,
     * its N tiles z), x * y * ceil(z / 2) units (lower/wgpair.c). 5: as
     * 1, a gather twin (A by TMA's im2col mode: lower/wgmma.c) with its
     * one-tile twin NAME_1 beside it (the same parameters, no grid ones
     * read), which the runtime launches on the program's grid where the
     * tiles are few a multiprocessor (runtime/tma.c). */
    uint32_t persistent;
    tilec_tma_map maps[TILEC_TMA_MAX_MAPS];
    /* The dot loop's K steps a tile, which the launch weighs in choosing a
     * persistent grid (runtime/tma.c): ceil((P - kfrom) / kper), P the
     * value of integer parameter kbound (0 steps when P <= kfrom). kper 0:
     * not known (the loop's end is not a parameter, or a twin of another
     * loop), and the launch weighs the tiles alone. An attention twin's
     * (lower/wgattn.c): its key loop's most trips a unit, P bounding the
     * loop's end (a causal diagonal runs fewer). Last, so that a table
     * of the layout before (TILEC_TMA_META_LAYOUT 1) reads as not known. */
    uint32_t kbound, kfrom, kper;
    /* 1: a paired twin (persistent 2 or 4) whose one-tile twin NAME_1 reads
     * the tile its epilogue adds to (gemm_dw's dW += ...) by TMA into its
     * store's staging, where the pairs' consumer threads load it into
     * registers (lower/wgmma.c, staged_load): the launch takes NAME_1 where
     * each tile's dot loop runs few trips (runtime/tma.c). 0 otherwise.
     * Last, so that a table of the layout before (3) reads as 0. */
    uint32_t one_tma;
} tilec_tma_meta;

/* The layout of tilec_tma_meta, which ahead-of-time tables initialise by
 * position (emit_c/c_aot.c checks it where they are compiled): 2 added
 * kbound, kfrom and kper, and the maps' bgrid and bscale; 3 a map's
 * im2col words (last in a map: a table of layout 2 reads as tiled maps);
 * 4 one_tma (last: a table of layout 3 reads as 0). */
#define TILEC_TMA_META_LAYOUT 4

#ifdef __cplusplus
}
#endif
#endif
