/* compile.h: reporting a failed NVRTC compile of a lowered kernel at its
 * .tile line (internal to api/). */
#ifndef TILEC_API_COMPILE_H
#define TILEC_API_COMPILE_H

#include "tilec/lower.h"

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

#endif
