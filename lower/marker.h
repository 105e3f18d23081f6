/* marker.h: the .tile line markers of lowered CUDA C (internal). */
#ifndef TILEC_LOWER_MARKER_H
#define TILEC_LOWER_MARKER_H

#include "util/strbuf.h"

/* "// FILE:" with the file name escaped for a comment: the lowering writes
 * it and a line number before every statement, and a failed compile is
 * reported at the .tile line of the marker above the error (api/compile.c). */
void lower_loc_marker(strbuf *b, const char *file);

#endif
