/* lower.h: kernels to CUDA C. One __global__ function per variant, named
 * <kernel>_v<k> (a kernel without variants has one, <kernel>_v0), with the
 * launch metadata a runtime needs. */
#ifndef TILEC_LOWER_H
#define TILEC_LOWER_H

#include "tilec/param_kind.h"
#include "tilec/tma.h"
#include "tilec/tilec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How an argument is passed; one per kernel parameter. */
typedef enum tilec_arg_kind {
    TILEC_ARG_PTR,
    TILEC_ARG_I8, TILEC_ARG_I16, TILEC_ARG_I32, TILEC_ARG_I64,
    TILEC_ARG_U8, TILEC_ARG_U16, TILEC_ARG_U32, TILEC_ARG_U64,
    TILEC_ARG_F16, TILEC_ARG_BF16, TILEC_ARG_F32, TILEC_ARG_F64, TILEC_ARG_BOOL,
    TILEC_ARG_LIST, /* a tensor list [*T] (TILEC_RT_PARAM_LIST) */
} tilec_arg_kind;

/* How a lowered parameter is passed at launch: 0, or -1 for a kind the
 * runtime cannot pass yet (8/16-bit and f16/bf16 scalars, bool). */
int tilec_rt_param_kind_of(tilec_arg_kind a, tilec_rt_param_kind *out);

typedef struct tilec_kernel_code {
    char *name;           /* "matmul_v0": the __global__ function */
    char *source;         /* a complete CUDA C translation unit */
    uint32_t threads;     /* block size: 32 * warps */
    uint32_t smem_bytes;  /* dynamic shared memory */
    uint32_t nparams;
    tilec_arg_kind *params;
    int variant;          /* index into kernel->variants, or 0 */
    const tilec_kernel *kernel;
    uint64_t written;     /* bit i: the kernel may store through pointer
                           * parameter i (tilec_kernel_written_params) */
    tilec_tma_meta tma;   /* the sm_90a twin in the same source (wgmma +
                           * TMA), compiled only for sm_90a; name NULL: none */
    char *layouts;        /* the layout report (tilec_module_emit_layouts) */
    uint32_t split_k;     /* the `split_k` hint's K slices (> 1), or 0: the
                           * kernel takes two hidden pointer parameters after
                           * its own (docs/lowering.md, "Split-K") */
    uint32_t split_bytes; /* split_k: f32 partial bytes of one block */
    uint32_t min_sm;      /* the oldest architecture that can run the kernel
                           * (80: sm_80), 0 when any NVRTC target can;
                           * derived from what the lowered body uses
                           * (lower/prelude.c, lower_min_sm), not from the
                           * sm_90a twin, which is compiled only for sm_90a */
    const char *min_sm_why; /* static text: the use that needs min_sm ("copies
                             * global to shared memory with cp.async"), or NULL */
    uint32_t min_sm_line; /* the .tile line of its first statement (0: unknown) */
    char *remarks;        /* (last: the fields before keep their offsets)
                           * the path of each dot loop ("line N: ...") and
                           * of each load, store and atomic add ("line N:C:
                           * ...") and, where it is not the target's best,
                           * why ("" when none); also at the end of layouts
                           * and on stderr with TILEC_LOGS=remarks */
} tilec_kernel_code;

/* Number of compiled variants of k: max(1, k->nvariants). */
uint32_t tilec_kernel_variant_count(const tilec_kernel *k);

/* The pointer parameters a checked kernel may write (store, atomic_add):
 * bit i for parameter i, sound and conservative. A parameter is in the set
 * when its pointer can reach the address operand of a store or atomic_add
 * anywhere in the body (nested in an expression, in a loop or a branch)
 * through pointer arithmetic, where, trans, reshapes, lets and
 * assignments; anything the analysis cannot resolve counts as written.
 * Parameters past the 64th are not represented. */
uint64_t tilec_kernel_written_params(const tilec_kernel *k);

/* Lower one variant of a checked kernel. On failure the context holds a
 * diagnostic naming the kernel and the .tile location. */
tilec_status tilec_lower_kernel(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, int variant,
                                tilec_kernel_code *out);
void tilec_kernel_code_free(tilec_kernel_code *code);

/* Every variant of every kernel of the module as one CUDA C file
 * (`tilec FILE --emit cuda`). */
tilec_status tilec_module_emit_cuda(tilec_ctx *ctx, const tilec_module *m, tilec_sink sink);

/* Every variant of every kernel of n modules as one CUDA C file (`tilec
 * A.tile B.tile --emit cuda`): one prelude, then each module's kernels.
 * Two modules with a kernel of one name are an error at the second
 * (TILEC_ERR_INPUT, nothing written): their entry points NAME_vK would be
 * defined twice, and renaming them would break the name a launcher looks
 * up. */
tilec_status tilec_modules_emit_cuda(tilec_ctx *ctx, const tilec_module *const *ms, size_t n, tilec_sink sink);

/* For every variant of every kernel: the layout of each materialized tile
 * (by .tile line), the conversions through shared memory, the
 * __syncthreads per loop iteration, the shared memory and the total
 * __syncthreads (`tilec FILE --emit layouts`; docs/lowering.md). */
tilec_status tilec_module_emit_layouts(tilec_ctx *ctx, const tilec_module *m, tilec_sink sink);

/* For every kernel: its tune space's report (`tilec FILE --emit tune`,
 * TILEC_LOGS=tune; docs/tuning.md): each configuration pruned and why, or
 * kept (as which variant) or not, with its path, shared memory, registers,
 * blocks per multiprocessor and its rank and estimate per shape class; a
 * kernel without a tune space says so. */
tilec_status tilec_module_emit_tune(const tilec_module *m, tilec_sink sink);

/* tilec_compile_kernel (lowering and NVRTC) is the API's: tilec/program.h. */

/* The launch grid of variant `variant` given the kernel's scalar
 * arguments (args[i] for parameter i; pointer entries are ignored; float
 * parameters cannot appear in a grid). */
tilec_status tilec_kernel_grid(const tilec_kernel *k, int variant, const int64_t *args, uint32_t grid[3]);

#ifdef __cplusplus
}
#endif
#endif
