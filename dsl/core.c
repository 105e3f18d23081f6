/* core.c: the version and status strings of tilec/core.h (the contexts
 * and diagnostics of that header are diag.c's). */
#include "tilec/core.h"

const char *tilec_version(void) { return TILEC_VERSION_STRING; }

const char *tilec_status_string(tilec_status s)
{
    switch (s) {
    case TILEC_OK: return "success";
    case TILEC_ERR_INPUT: return "the input has errors";
    case TILEC_ERR_IO: return "input/output error";
    case TILEC_ERR_NOMEM: return "out of memory";
    case TILEC_ERR_ARG: return "invalid argument";
    }
    return "unknown status";
}
