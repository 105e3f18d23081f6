/* param_kind.h: how a kernel parameter is passed at launch. The launch
 * ABI's vocabulary, below every layer that speaks it: the lowering maps its
 * parameters onto it (tilec_rt_param_kind_of, tilec/lower.h), the C
 * emitter writes it into ahead-of-time tables, the runtime launches by it
 * and the cache stores it in bundles. */
#ifndef TILEC_PARAM_KIND_H
#define TILEC_PARAM_KIND_H

#ifdef __cplusplus
extern "C" {
#endif

/* ORDER PARAM_KIND: part of the ABI (launch metadata in cache bundles). */
typedef enum tilec_rt_param_kind {
    TILEC_RT_PARAM_POINTER = 0, /* a device pointer: tilec_rt_arg.ptr */
    TILEC_RT_PARAM_I32 = 1,
    TILEC_RT_PARAM_I64 = 2,
    TILEC_RT_PARAM_F32 = 3,
    TILEC_RT_PARAM_F64 = 4,
    TILEC_RT_PARAM_U32 = 5,
    TILEC_RT_PARAM_U64 = 6,
    TILEC_RT_PARAM_KIND_COUNT /* not a kind */
} tilec_rt_param_kind;

#ifdef __cplusplus
}
#endif
#endif
