/* plan.h: a launch plan: the kernel launches and extern calls of one graph
 * call, with their arguments as slots, resolved once against a program and
 * run by one C call for the slot values of a call (device addresses of the
 * tensors, sizes, scalars). Wrappers fill the slots (the Python package
 * makes one native call per graph call this way); the plan holds metadata
 * only: kernel names, variants, argument slots and constants, extern
 * symbols and tensor shapes. It never sees an AST or a size expression.
 *
 * Opt-in CUDA graphs: with tilec_plan_set_cuda_graph(p, n) the first run
 * for a set of slot values runs eagerly (multi-kernel choices and lazy
 * loads happen there), then records the same launches into a CUDA graph;
 * later runs with the same slot values replay it with one cuGraphLaunch.
 * Different slot values (other shapes or other buffers) record another
 * graph; the n most recently used are kept. A run whose sizes and scalars
 * match a held graph's and whose addresses are new (a caller that keeps
 * its outputs) is recorded at once and launched, without the eager run. Once n are held, a new
 * recording updates the least recently used graph in place
 * (cuGraphExecUpdate: same steps, new addresses and sizes) instead of
 * instantiating another; where the driver refuses the update, that graph
 * is replaced by a new instantiation.
 *
 * Fills (tilec_plan_add_fill) are steps too, so a graph's zeros, ones and
 * full happen on the call's stream in order with its launches.
 *
 * A plan is used by one thread at a time (its last error and its graphs
 * are not locked); make one per thread to run a graph concurrently. */
#ifndef TILEC_PLAN_H
#define TILEC_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "tilec/aot.h"
#include "tilec/externs.h"
#include "tilec/runtime.h"
#include "tilec/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tilec_plan tilec_plan;

/* What a slot holds; a run reads slot i as the member its type names:
 * .ptr for TILEC_PLAN_PTR, .i64 for TILEC_PLAN_INT, .f64 for TILEC_PLAN_FLOAT, .list for TILEC_PLAN_LIST. */
typedef enum tilec_plan_slot_type {
    TILEC_PLAN_PTR = 0,   /* a device address */
    TILEC_PLAN_INT = 1,   /* an integer (int64), range-checked against each parameter it feeds */
    TILEC_PLAN_FLOAT = 2, /* a float (double), rounded to f32 where a parameter is f32 */
    TILEC_PLAN_LIST = 3,  /* a tensor list: .list (tilec/runtime.h), read at each run and launched as
                             tilec_program_launch launches one (split past the kernel's table); in graph
                             mode its key is the list's count, addresses and element counts (not the
                             address of the tilec_rt_list), so other tensors record anew */
} tilec_plan_slot_type;

/* A value: slot `slot` of the run, or (slot < 0) the constant `value`,
 * read as the parameter's kind (an extern size as .i64). */
typedef struct tilec_plan_value {
    int32_t slot;
    tilec_rt_arg value;
} tilec_plan_value;

/* A tensor of an extern call: its device address from a TILEC_PLAN_PTR
 * slot, row-major and contiguous, sizes from values. */
typedef struct tilec_plan_tensor {
    int32_t data_slot;
    tilec_dtype dtype;
    uint32_t rank;
    tilec_plan_value sizes[TILEC_TENSOR_MAX_RANK];
} tilec_plan_tensor;

/* A plan named `name` (errors begin with it) over a loaded program, with
 * nslots slots (all TILEC_PLAN_PTR until set) and externs (may be NULL
 * when the plan calls none; borrowed: it must outlive the plan). NULL when
 * an argument is NULL or memory runs out. */
tilec_plan *tilec_plan_new(tilec_program *prog, tilec_externs *externs, const char *name, uint32_t nslots);

/* Free the plan and its CUDA graphs (with their split-K workspaces, which
 * the program holds: free the plan before its program). NULL is a no-op. */
void tilec_plan_free(tilec_plan *p);

/* Slot i's type and its name in messages ("N", "x"). */
tilec_rt_status tilec_plan_set_slot(tilec_plan *p, uint32_t i, tilec_plan_slot_type type, const char *name);

/* Append a launch of kernel `kernel`: variant `variant`, or with variant
 * -1 the fastest for the shape (multi-kernel). args: one per parameter; a
 * slot argument must suit the parameter (a pointer takes a PTR slot, an
 * integer an INT slot, a float a FLOAT or an INT slot). Resolved now:
 * TILEC_RT_NOT_FOUND or TILEC_RT_INVALID_ARG with tilec_plan_last_error. */
tilec_rt_status tilec_plan_add_kernel(tilec_plan *p, const char *kernel, int variant, const tilec_plan_value *args,
                                      uint32_t nargs);

/* Append a call of extern `symbol` (looked up in the registry at each run,
 * so later registrations take effect) on tensors made from the slots. */
tilec_rt_status tilec_plan_add_extern(tilec_plan *p, const char *symbol, const tilec_plan_tensor *inputs,
                                      uint32_t ninputs, const tilec_plan_tensor *outputs, uint32_t noutputs);

/* Append a fill: every element of tensor t (its device address from a
 * TILEC_PLAN_PTR slot, sizes from values; the dtype gives the element
 * size) set to the bit pattern in the low tilec_dtype_size(t->dtype)
 * bytes of bits, as zeros, ones and full in a graph do. It runs on the
 * run's stream (tilec_rt_fill_async: a memset, or a small fill kernel for
 * 8-byte patterns whose halves differ) and a CUDA graph records it. */
tilec_rt_status tilec_plan_add_fill(tilec_plan *p, const tilec_plan_tensor *t, uint64_t bits);

/* Run every step in order on `stream` (NULL: the legacy default stream)
 * with these slot values: one C call, nothing allocated, nothing
 * synchronized (except the multi-kernel's first timing of a new shape). An
 * integer slot that does not fit a parameter it feeds is an error before
 * anything is launched (TILEC_RT_INVALID_ARG naming the plan, the slot,
 * the kernel and the parameter); a failing step stops the run and the
 * error names the step. */
tilec_rt_status tilec_plan_run(tilec_plan *p, const tilec_rt_arg *slots, uint32_t nslots, void *stream);

/* CUDA graphs for this plan's runs: keep up to `graphs` recorded graphs
 * (0: off, the default; at most 64). Turning it off frees them. A plan
 * with extern calls records what they enqueue (cuBLAS records; a host
 * function that computes on the CPU would run at recording only, so do
 * not turn graphs on for such a plan). TILEC_RT_DRIVER_TOO_OLD when the
 * driver lacks the graph entry points. */
tilec_rt_status tilec_plan_set_cuda_graph(tilec_plan *p, uint32_t graphs);

typedef struct tilec_plan_stats {
    uint64_t runs;      /* tilec_plan_run calls that succeeded */
    uint64_t recorded;  /* CUDA graphs recorded */
    uint64_t replayed;  /* runs that were one graph launch */
    uint32_t graphs;    /* graphs held now */
    uint32_t steps;     /* kernel launches, extern calls and fills of one run */
    uint64_t updated;   /* recordings that updated a held graph in place (cuGraphExecUpdate) */
} tilec_plan_stats;
void tilec_plan_get_stats(const tilec_plan *p, tilec_plan_stats *s);

/* The message of the last failure on this plan; "" when none. Never NULL. */
const char *tilec_plan_last_error(const tilec_plan *p);

#ifdef __cplusplus
}
#endif
#endif
