/* gen_kernel.h: a generator of well-typed .tile modules. It reads a byte
 * string as a list of choices and writes one kernel that is type-correct
 * by construction (tiles of power-of-two shapes, loads and stores with
 * masks, lets, re-assignment of values, pointers and pointer tiles
 * (p = p + k, another base, where, trans) inside for/if too, reductions,
 * scans (cumsum, cumprod, cummax, cummin, scan with a combine; exclusive,
 * reverse), dot on f16/bf16/f32, casts, where, math builtins, atomics,
 * pointer arithmetic) and a graph that calls it: allocations (empty,
 * zeros, ones, full, *_like), views, several calls of the kernel with
 * size expressions and scalars, and calls of externs with zero, one or
 * two results. Every byte string gives a module;
 * when the bytes run out every choice is 0 (the simplest). Used by
 * fuzz/fuzz_gen.c (libFuzzer) and fuzz/gen_tiles.c (tools/gen_nvrtc.sh).
 * Names are v0, p0, s0, DA, k0, g0, t0, M: none is a reserved word of C,
 * CUDA or Python. */
#ifndef TILEC_FUZZ_GEN_KERNEL_H
#define TILEC_FUZZ_GEN_KERNEL_H

#include <stddef.h>
#include <stdint.h>

/* The module's text (NUL-terminated, malloc'd), or NULL when out of memory. */
char *gen_kernel(const uint8_t *data, size_t size);

#endif
