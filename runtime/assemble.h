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

/* One kernel variant as a program holds it: its description
 * (tilec/kernel_desc.h; strings are copied except `kernel`, which must
 * outlive the program: the module's or the table's name; the image is
 * loaded apart, rt_program_load_module) and what a built program adds. */
typedef struct rt_kernel_desc {
    tilec_kernel_desc d; /* d.grid: the table's grid function, used when grid is NULL */
    rt_grid_fn grid;     /* a built program's: with grid_data */
    const void *grid_data;
    const tilec_tma_meta *tma; /* the sm_90a twin (copied), or NULL */
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
