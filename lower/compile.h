/* compile.h: the .tile line markers of lowered CUDA, and reporting NVRTC
 * failures at those lines (internal). */
#ifndef TILEC_LOWER_COMPILE_H
#define TILEC_LOWER_COMPILE_H

#include "tilec/lower.h"
#include "util/strbuf.h"

/* "// FILE:" with the file name escaped for a comment: the lowering writes
 * it and a line number before every statement, and a failed compile is
 * reported at the .tile line of the marker above the error. */
void lower_loc_marker(strbuf *b, const char *file);

/* Report a failed NVRTC compile of `code` as a diagnostic at the .tile
 * line of the failing statement, with the log as a note. */
void cmp_report_failure(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, const tilec_kernel_code *code,
                        const char *arch, const char *log, const char *fallback);

#endif
