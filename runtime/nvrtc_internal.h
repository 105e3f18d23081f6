/* nvrtc_internal.h: what the runtime's other files need from nvrtc.c. */
#ifndef TILEC_RUNTIME_NVRTC_INTERNAL_H
#define TILEC_RUNTIME_NVRTC_INTERNAL_H

#include <stddef.h>

/* The NVRTC options that decide the code of a compile for arch, as one
 * line ("--gpu-architecture=sm_90 -default-device --std=c++17", with
 * -lineinfo when TILEC_LINEINFO=1): what the cache key holds. */
void rt_nvrtc_options_line(const char *arch, char *buf, size_t size);

#endif
