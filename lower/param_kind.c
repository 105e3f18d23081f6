/* param_kind.c: how a lowered kernel parameter is passed at launch
 * (tilec_rt_param_kind_of, tilec/lower.h). */
#include "tilec/lower.h"

int tilec_rt_param_kind_of(tilec_arg_kind a, tilec_rt_param_kind *out)
{
    if (!out)
        return -1;
    switch (a) {
    case TILEC_ARG_PTR: *out = TILEC_RT_PARAM_POINTER; return 0;
    case TILEC_ARG_I32: *out = TILEC_RT_PARAM_I32; return 0;
    case TILEC_ARG_I64: *out = TILEC_RT_PARAM_I64; return 0;
    case TILEC_ARG_U32: *out = TILEC_RT_PARAM_U32; return 0;
    case TILEC_ARG_U64: *out = TILEC_RT_PARAM_U64; return 0;
    case TILEC_ARG_F32: *out = TILEC_RT_PARAM_F32; return 0;
    case TILEC_ARG_F64: *out = TILEC_RT_PARAM_F64; return 0;
    case TILEC_ARG_LIST: *out = TILEC_RT_PARAM_LIST; return 0;
    default: return -1;
    }
}
