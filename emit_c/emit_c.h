/* emit_c.h: the built-in "c" emitter (emit_c.c), which the API registers
 * in every context's emitter registry (api/emitters.c). */
#ifndef TILEC_EMIT_C_EMIT_C_H
#define TILEC_EMIT_C_EMIT_C_H

#include "tilec/emitter.h"

extern const tilec_emitter tilec_emit_c_emitter;

#endif
