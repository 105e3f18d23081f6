/* tensor.h: the tensor descriptor the generated wrappers and extern
 * kernels take: a device pointer, an element type, sizes and strides. */
#ifndef TILEC_TENSOR_H
#define TILEC_TENSOR_H

#include <stdint.h>

#include "tilec/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TILEC_TENSOR_MAX_RANK 8

typedef struct tilec_tensor {
    uint64_t data;      /* device address of element [0, 0, ...] */
    tilec_dtype dtype;
    uint32_t rank;
    int64_t sizes[TILEC_TENSOR_MAX_RANK];
    int64_t strides[TILEC_TENSOR_MAX_RANK]; /* in elements */
} tilec_tensor;

#ifdef __cplusplus
}
#endif
#endif
