/* kernel_desc.h: the one description of a compiled kernel variant: its
 * names, its parameters' kinds, block size, shared memory, the parameters
 * it writes, its grid and split-K. Defined once, below every layer that
 * speaks it: the API fills it from the lowering's output (tilec/lower.h's
 * tilec_kernel_code, api/describe.c), the C emitter writes it as an
 * ahead-of-time table (tilec_aot_kernel, tilec/aot.h, is this type), the
 * runtime makes a program of such entries (runtime/assemble.h wraps it with
 * the built program's grid and sm_90a twin; a program's kernel keeps it,
 * runtime/program_internal.h's pkernel) and emitters receive it for
 * --aot (wrapper_ir/session.h). Adding a field: here, where the API fills
 * it and where a reader reads it. The field order is an ABI: ahead-of-time
 * tables are positional initialisers of it, so a new field goes last. */
#ifndef TILEC_KERNEL_DESC_H
#define TILEC_KERNEL_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "tilec/param_kind.h"
#include "tilec/tma.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The variants of one kernel are consecutive in a table, variant 0 first. */
typedef struct tilec_kernel_desc {
    const char *kernel; /* "matmul": the name launches use */
    int variant;        /* 0 .. nvariants - 1 */
    uint32_t nvariants; /* of the kernel */
    const char *name;   /* "matmul_v0": the __global__ function */
    const void *image;  /* the CUBIN (only read while loading), or NULL */
    size_t size;
    uint32_t threads;    /* block size: 32 * warps */
    uint32_t smem_bytes; /* dynamic shared memory */
    uint32_t nparams;
    const tilec_rt_param_kind *kinds; /* nparams; NULL: a parameter no launch can pass yet */
    uint64_t written;                 /* bit i: the kernel stores through pointer parameter i */
    /* the launch grid from the scalar arguments (args[i] for parameter i):
     * 0, or -1 when they give none (overflow, division by zero); NULL
     * where the holder computes it otherwise (a built program) */
    int (*grid)(const int64_t *args, uint32_t grid[3]);
    /* split-K (docs/lowering.md, "Split-K"): the kernel's K slices (> 1;
     * 0: none), and then two hidden pointer parameters after its nparams
     * that the runtime passes (the workspace, the tile counters); the f32
     * partial bytes of one block */
    uint32_t split_k, split_bytes;
    /* the variant's sm_90a twin (tilec/tma.h): its __global__ function in
     * the same CUBIN and how to launch it, or NULL (none: not compiled for
     * sm_90a, no qualifying dot loop). Loading keeps a copy; launches take
     * the twin on a device that resolves it, exactly as on a built program
     * (tilec_program_has_twin, tilec_program_launch). */
    const tilec_tma_meta *tma;
} tilec_kernel_desc;

#ifdef __cplusplus
}
#endif
#endif
