/* marker.c: the .tile line markers the lowering writes before every
 * statement of the CUDA C it generates (marker.h). */
#include "lower/marker.h"
#include "util/escape.h"

void lower_loc_marker(strbuf *b, const char *file)
{
    sb_puts(b, "// ");
    esc_c_comment(b, file);
    sb_putc(b, ':');
}
