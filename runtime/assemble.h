/* assemble.h: how a program is put together from compiled kernels: one
 * entry of kernel metadata per variant, then its CUBIN loaded and the
 * kernel resolved. tilec_program_load (runtime/aot.c) fills it from an
 * ahead-of-time table, tilec_program_build (api/build.c) from a module it
 * lowered and compiled. Only metadata and images cross here, never an AST. */
#ifndef TILEC_RUNTIME_ASSEMBLE_H
#define TILEC_RUNTIME_ASSEMBLE_H

#include "tilec/aot.h"
#include "tilec/tma.h"

/* The launch grid of variant `variant` from the scalar arguments: 0, or -1
 * when they give none. data is the kernel description's grid_data. */
typedef int (*rt_grid_fn)(const void *data, int variant, const int64_t *args, uint32_t grid[3]);

/* One kernel variant's metadata; strings are copied except `kernel`, which
 * must outlive the program (the module's or the table's name). */
typedef struct rt_kernel_desc {
    const char *kernel; /* "matmul": the name launches use */
    int variant;
    uint32_t nvariants;
    const char *name;   /* "matmul_v0": the __global__ function */
    uint32_t threads, smem_bytes, nparams;
    const tilec_rt_param_kind *kinds; /* nparams (at most 64) */
    uint64_t written;   /* bit i: the kernel stores through pointer parameter i */
    rt_grid_fn grid;    /* with grid_data; or, when NULL, aot_grid */
    const void *grid_data;
    int (*aot_grid)(const int64_t *args, uint32_t grid[3]);
    const tilec_tma_meta *tma; /* the sm_90a twin (copied), or NULL */
    uint32_t split_k;          /* > 1: the kernel takes two hidden pointers after its
                                * nparams (the split-K workspace and tile counters) */
    uint32_t split_bytes;      /* split_k: f32 partial bytes of one block */
} rt_kernel_desc;

/* A program of n kernels on rt (NULL: compiled, never loaded), choices of
 * the multi-kernel kept under cache_dir (NULL or "": in memory only). */
tilec_rt_status rt_program_new(tilec_rt *rt, uint32_t n, const char *cache_dir, tilec_program **out);

/* Kernel i's metadata. TILEC_RT_OK or TILEC_RT_NOMEM. */
tilec_rt_status rt_program_set(tilec_program *p, uint32_t i, const rt_kernel_desc *d);

/* Load kernel i's image on the program's runtime, then resolve the kernel
 * for launch; the driver's error otherwise (tilec_rt_last_error). */
tilec_rt_status rt_program_load_module(tilec_program *p, uint32_t i, const void *image, size_t size);
tilec_rt_status rt_program_resolve(tilec_program *p, uint32_t i);

/* The program's statistics, for the builder to fill in. */
tilec_program_stats *rt_program_stats(tilec_program *p);

#endif
