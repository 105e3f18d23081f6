/* aot.h: a program as the runtime holds it: kernels compiled to CUBINs,
 * each with its launch metadata (names, variant, parameter kinds, block
 * size, shared memory, the parameters it writes, the grid as a function of
 * the scalar arguments), loaded and launched by name, statically or with
 * the fastest variant (multi-kernel). Ahead-of-time wrappers load such a
 * program from a table (tilec_program_load); tilec_program_build
 * (tilec/program.h, the API) makes one from a .tile module. */
#ifndef TILEC_AOT_H
#define TILEC_AOT_H

#include <stddef.h>
#include <stdint.h>

#include "tilec/kernel_desc.h"
#include "tilec/runtime.h"
#include "tilec/tma.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tilec_program tilec_program;

void tilec_program_free(tilec_program *p);

/* A kernel variant compiled ahead of time (`tilec --emit c --aot sm_90`):
 * its CUBIN and everything launching it needs, so that loading it parses,
 * lowers and compiles nothing: the one kernel description
 * (tilec/kernel_desc.h). The variants of one kernel are consecutive,
 * variant 0 first. */
typedef tilec_kernel_desc tilec_aot_kernel;

/* Load n ahead-of-time kernels on rt: no NVRTC, no parsing. TILEC_RT_OK,
 * TILEC_RT_INVALID_ARG for a malformed table, or the driver's error (with
 * tilec_rt_last_error(rt)). The launch functions below work as on a built
 * program (multi-kernel choices are kept in memory only). */
tilec_rt_status tilec_program_load(tilec_rt *rt, const tilec_aot_kernel *ks, uint32_t n, tilec_program **out);

/* A multi-kernel choice made ahead of time (`tilec tune FILE --sizes ...
 * --choices CHOICES`, embedded by `tilec --emit c --aot ARCH --choices
 * CHOICES`): on a device named `device` (tilec_rt_device_props.name),
 * kernel `kernel` launched with the integer scalar arguments key[0 ..
 * nkey) (every integer parameter, in order: the shape key) runs variant
 * `variant`, untimed. */
typedef struct tilec_aot_choice {
    const char *kernel;
    const char *device;
    uint32_t nkey;
    const int64_t *key;
    int variant;
} tilec_aot_choice;

/* Take the choices of the device p runs on into p's memory of choices, as
 * if each had been timed: tilec_program_launch_best then launches the
 * variant for those shapes without timing (TILEC_LOGS=multi_kernel: "(chosen
 * ahead of time, not timed)"); other shapes are timed as before. Choices
 * for another device model are skipped. TILEC_RT_INVALID_ARG (nothing
 * taken) when one names a kernel p does not have, a variant it does not
 * have, or a key of another length than the kernel's integer parameters. */
tilec_rt_status tilec_program_use_choices(tilec_program *p, const tilec_aot_choice *cs, uint32_t n);

/* One architecture's table of a wrapper compiled for several
 * (`tilec --emit c --aot sm_80,sm_90a`), with the choices tuned for it
 * (none: NULL, 0), which tilec_program_load_for_device takes
 * (tilec_program_use_choices). */
typedef struct tilec_aot_table {
    const char *arch; /* "sm_90a": what its CUBINs were compiled for */
    const tilec_aot_kernel *ks;
    uint32_t n;
    const tilec_aot_choice *choices;
    uint32_t nchoices;
} tilec_aot_table;

/* Load the table whose CUBINs rt's device runs best: the one for the
 * device's own target (tilec_rt_device_props.arch: "sm_90a" on a 9.0
 * device, with its sm_90a twins), else the newest sm_XY (or sm_XYf) of the
 * device's major version X with Y no newer than the device's minor (an
 * sm_XYa table only on an X.Y device). *arch (may be NULL) gets the
 * chosen table's. TILEC_RT_MODULE_ERROR, naming the device and the
 * tables, when it runs none; otherwise as tilec_program_load, then
 * tilec_program_use_choices with the table's choices. */
tilec_rt_status tilec_program_load_for_device(tilec_rt *rt, const tilec_aot_table *tables, uint32_t n,
                                              tilec_program **out, const char **arch);

/* The loaded kernel of variant `variant` of kernel `name`, or NULL. */
const tilec_rt_kernel *tilec_program_kernel(const tilec_program *p, const char *name, int variant);

/* 1 when variant `variant` of kernel `name` has a loaded sm_90a twin
 * (wgmma + TMA, tilec/tma.h) that launches take whenever its operands
 * qualify; 0 otherwise (not sm_90a, no qualifying dot loop,
 * TILEC_DISABLE_TMA=1 when the program was made). */
int tilec_program_has_twin(const tilec_program *p, const char *name, int variant);

/* Launch variant `variant` of kernel `name` with its grid computed from the
 * scalar arguments (args[i] for parameter i, read as the parameter's kind).
 * A variant with an sm_90a twin launches the twin when every operand it
 * stages by TMA qualifies (16-byte aligned base and row stride), else its
 * own kernel. */
tilec_rt_status tilec_program_launch(const tilec_program *p, const char *name, int variant, const tilec_rt_arg *args,
                                     uint32_t nargs, void *stream);

/* Launch kernel `name` with the variant that is fastest for this shape
 * (multi-kernel). The first launch with a new shape key (the integer scalar
 * arguments) times every variant with device events on scratch copies of
 * the buffers the kernel writes, keeps the fastest in memory and, when the
 * program has a cache directory, on disk and in the Redis tier (keyed by
 * the kernels' sources, device model, driver and shape); a choice found
 * there is not timed; later launches cost one hash lookup. Thread-safe: one thread times a new key while the others that
 * launch it wait for its choice. *chosen (may be NULL) gets the variant
 * launched. A choice taken ahead of time (tilec_program_use_choices) is
 * launched as one kept in memory.
 * TILEC_MULTI_KERNEL=k (read when the program is built) forces variant k
 * (TILEC_RT_INVALID_ARG when the kernel has no such variant); TILEC_DISABLE_MULTI_KERNEL_CACHE=1 skips the
 * disk; TILEC_LOGS=multi_kernel logs every choice with its timings. */
tilec_rt_status tilec_program_launch_best(tilec_program *p, const char *name, const tilec_rt_arg *args,
                                          uint32_t nargs, void *stream, int *chosen);

typedef struct tilec_program_stats {
    uint32_t kernels;         /* compiled kernel variants */
    uint32_t nvrtc_compiles;  /* 0 on a warm start */
    int cache_hit;            /* the bundle came from the cache */
    double lower_ms, compile_ms, load_ms;
    char key[65];             /* the cache key of the module */
    int source_hit;           /* the module's source record named the bundle:
                               * nothing was lowered (lower_ms is 0) */
    uint32_t choices_timed;   /* multi-kernel shapes timed by this program */
    uint32_t choices_stored;  /* and those whose choice came from the cache
                               * (directory or Redis): nothing timed */
} tilec_program_stats;
void tilec_program_get_stats(const tilec_program *p, tilec_program_stats *s);

#ifdef __cplusplus
}
#endif
#endif
