/* choices.h: the lines of a choices file, the multi-kernel choices made
 * ahead of time that `tilec tune FILE --sizes ... --choices CHOICES`
 * writes and `tilec FILE --emit c --aot ARCH --choices CHOICES` embeds
 * (docs/tuning.md, "Ahead of time"). One line a kernel, target, device
 * model and shape:
 *   mm sm_90a "NVIDIA H100 80GB HBM3" M=16,N=8192,K=8192 -> variant 2 of 8 {BM=16,BN=64,...}
 * the shape is the kernel's integer parameters in order, the braces hold
 * every hint of the chosen variant (what identifies it: the C emitter
 * refuses a line whose variant has other hints in the module it embeds
 * it in). The C emitter reads them (emit_c/c_choices.c). */
#ifndef TILEC_CHOICES_H
#define TILEC_CHOICES_H

#include <stddef.h>

#include "tilec/tilec.h"
#include "tilec/wir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The line (with its newline) for kernel k tuned on device model `device`
 * (tilec_rt_device_props.name) for NVRTC target `target` ("sm_90a") at
 * sizes (by name; every integer parameter of k needs one), choosing
 * `variant`, into buf (size bytes, NUL-terminated): its length, or -1
 * when it does not fit or an argument is bad (no such variant, a missing
 * size, a target that is no GPU architecture, a device name that is
 * empty or holds a double quote or a control character). */
int tilec_choice_line(const tilec_kernel *k, const char *target, const char *device, const tilec_wir_size *sizes,
                      size_t n, int variant, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
