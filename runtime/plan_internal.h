/* plan_internal.h: the layout of a launch plan, shared by plan.c (building
 * and running it) and plan_graph.c (its CUDA graphs). */
#ifndef TILEC_RUNTIME_PLAN_INTERNAL_H
#define TILEC_RUNTIME_PLAN_INTERNAL_H

#include "runtime/program_internal.h"
#include "runtime/rt_internal.h"
#include "tilec/plan.h"

enum { PLAN_ERR_MAX = 1024, PLAN_MAX_GRAPHS = 64 };

/* One step: a kernel launch, an extern call or a fill. */
typedef enum plan_kind { PLAN_KERNEL, PLAN_EXTERN, PLAN_FILL } plan_kind;

typedef struct plan_step {
    plan_kind kind;
    uint32_t kernel; /* the program's entry: the variant, or variant 0 when best */
    int best;        /* launch the fastest variant (multi-kernel) */
    uint32_t nargs;
    tilec_plan_value *args;
    char *symbol; /* an extern call */
    uint32_t nin, nout;
    tilec_plan_tensor *tensors; /* nin inputs, then nout outputs; a fill's one tensor */
    uint64_t bits;              /* a fill's element bit pattern */
} plan_step;

/* A recorded CUDA graph and the slot values it was recorded for. */
typedef struct plan_graph {
    uint64_t *key; /* nslots values, then each list slot's addresses and element counts (plan_graph.c) */
    size_t keylen; /* its bytes */
    CUgraphExec exec;
    uint64_t used; /* the run counter when last replayed: the least recent goes first */
    int ws;        /* owns a split-K workspace pair in the program (keyed by this entry) */
} plan_graph;

struct tilec_plan {
    tilec_program *prog;
    tilec_rt *rt;
    tilec_externs *ext;
    char *name;
    uint32_t nslots;
    tilec_plan_slot_type *types;
    char **slot_names;
    plan_step *steps;
    uint32_t nsteps, cap;
    tilec_plan_stats st;
    char err[PLAN_ERR_MAX];
    /* CUDA graphs (plan_graph.c) */
    uint32_t max_graphs;
    plan_graph graphs[PLAN_MAX_GRAPHS];
    CUstream capture; /* a private stream the graphs are recorded on */
    const void *ws_owner; /* while recording: the entry whose split-K pair the launches use */
};

enum { PLAN_MAX_TENSORS = 32 }; /* the tensors of one extern step */

/* ---- plan_steps.c ---- */

/* Record a failure message on the plan and return st. */
tilec_rt_status plan_fail(tilec_plan *p, tilec_rt_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Slot s's name in messages ("?" when it has none). */
const char *plan_slot_name(const tilec_plan *p, int32_t s);

/* Run every step on stream, eagerly (the slots already checked). */
tilec_rt_status plan_run_steps(tilec_plan *p, const tilec_rt_arg *slots, void *stream);

/* ---- plan_graph.c ---- */

/* A run in graph mode: replay the graph of these slot values, or run
 * eagerly and record one. */
tilec_rt_status plan_graph_run(tilec_plan *p, const tilec_rt_arg *slots, void *stream);

/* Free every recorded graph and the capture stream. */
void plan_graph_clear(tilec_plan *p);

#endif
