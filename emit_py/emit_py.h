/* emit_py.h: the built-in "py" emitter (emit_py.c), which the API
 * registers in every context's emitter registry (api/emitters.c). */
#ifndef TILEC_EMIT_PY_EMIT_PY_H
#define TILEC_EMIT_PY_EMIT_PY_H

#include "tilec/emitter.h"

extern const tilec_emitter tilec_emit_py_emitter;

#endif
