/* param_kind.h: how a kernel parameter is passed at launch. The launch
 * ABI's vocabulary, below every layer that speaks it: the lowering maps its
 * parameters onto it (tilec_rt_param_kind_of, tilec/lower.h), the C
 * emitter writes it into ahead-of-time tables, the runtime launches by it
 * and the cache stores it in bundles. */
#ifndef TILEC_PARAM_KIND_H
#define TILEC_PARAM_KIND_H

#include <stdint.h>

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
    TILEC_RT_PARAM_LIST = 7, /* a tensor list [*T]: tilec_rt_arg.list (tilec/runtime.h) */
    TILEC_RT_PARAM_KIND_COUNT /* not a kind */
} tilec_rt_param_kind;

/* A tensor list parameter (docs/language.md §4.3) reaches the kernel by
 * value, as a table in the kernel's parameters: the launch's count of
 * tensors (int64), then `cap` device addresses, then `cap` element counts
 * (int64), where cap is the most tensors that fit, with the kernel's other
 * parameters, in the 4 KiB of parameters every CUDA driver takes. A list
 * longer than cap runs as several launches of cap tensors (the last one
 * shorter), as torch's multi_tensor_apply does. The lowering sizes the
 * table and the runtime packs it with these two functions, so they agree:
 * each other parameter counts 8 bytes, the table's count 8, and 16 bytes
 * are kept for split-K's two hidden pointers. */
#define TILEC_RT_LIST_PARAM_BYTES 4096

/* The tensors one launch's table of each list holds, for a kernel of
 * nparams parameters of which nlists are lists (0 when none is). */
static inline uint32_t tilec_rt_list_cap(uint32_t nparams, uint32_t nlists)
{
    if (!nlists || nlists > nparams || nparams > 64)
        return 0;
    uint32_t fixed = 8 * (nparams - nlists) + 16 + 8 * nlists;
    return (TILEC_RT_LIST_PARAM_BYTES - fixed) / (16 * nlists);
}

/* The same from a kernel's n parameter kinds. */
static inline uint32_t tilec_rt_list_cap_of(const tilec_rt_param_kind *kinds, uint32_t n)
{
    uint32_t lists = 0;
    for (uint32_t i = 0; kinds && i < n; i++)
        lists += kinds[i] == TILEC_RT_PARAM_LIST;
    return tilec_rt_list_cap(n, lists);
}

/* The bytes of one list's table of cap tensors. */
static inline uint32_t tilec_rt_list_bytes(uint32_t cap) { return 8 + 16 * cap; }

#ifdef __cplusplus
}
#endif
#endif
