/* compile.h: reporting a failed NVRTC compile of a lowered kernel at its
 * .tile line, and the kernel description made from the lowering's output
 * (internal to api/). */
#ifndef TILEC_API_COMPILE_H
#define TILEC_API_COMPILE_H

#include "tilec/kernel_desc.h"
#include "tilec/lower.h"
#include "tilec/program.h" /* tilec_compile_kernel */

/* Report a failed NVRTC compile of `code` as a diagnostic at the .tile
 * line of the failing statement, with the log as a note. */
void cmp_report_failure(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, const tilec_kernel_code *code,
                        const char *arch, const char *log, const char *fallback);

/* 0 when `arch` can run `code` (or is not spelled sm_NN / compute_NN);
 * else -1 with an error at k's .tile location naming the variant, what
 * needs the newer GPU, its line and the architecture it needs. */
int cmp_check_arch(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, const tilec_kernel_code *code,
                   const char *arch);

/* With TILEC_LOGS=remarks, the remarks of `code` on stderr, one line
 * each: "FILE:LINE: remark: kernel K (variant V): ..." (docs/lowering.md,
 * "Remarks"). Nothing otherwise. */
void cmp_log_remarks(const tilec_module *m, const tilec_kernel_code *code);

/* The one description (tilec/kernel_desc.h) of variant `variant` of k,
 * from its lowered code and its image (NULL, 0: none yet); kinds: the
 * parameters' launch kinds, NULL when one cannot be passed. The grid is
 * left NULL: a built program computes it from the kernel
 * (tilec_kernel_grid), an ahead-of-time table from the function the C
 * emitter writes. Every place that turns lowered code into a description
 * calls this, so a new field is filled here once. */
tilec_kernel_desc cmp_describe(const tilec_kernel *k, int variant, const tilec_kernel_code *code, const void *image,
                               size_t size, const tilec_rt_param_kind *kinds);

#endif
