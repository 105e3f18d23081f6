/* program_internal.h: the layout of a program, shared by program.c (its
 * lifetime and static launch), aot.c (loading a table) and multikernel.c
 * (launching the fastest variant). */
#ifndef TILEC_RUNTIME_PROGRAM_INTERNAL_H
#define TILEC_RUNTIME_PROGRAM_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include "runtime/assemble.h"
#include "runtime/choice_entry.h"

#define uthash_nonfatal_oom(e) ((void)(e))
#include "util/hashtable.h"

enum { MK_MAX_KEY = 64 };

/* A multi-kernel choice: the variant for one kernel and shape. */
typedef struct mk_choice {
    int64_t key[MK_MAX_KEY + 1]; /* [0]: kernel index, then the integer scalars */
    int variant;
    int ahead; /* 1: taken from an ahead-of-time table, not yet launched; 2: launched since */
    UT_hash_handle hh;
} mk_choice;

typedef struct rt_tma rt_tma; /* an sm_90a twin (tma.c) */

/* The grid a kernel's last launch computed, and the integer scalars it was
 * computed for (a seqlock: seq even and not 0 when it holds one; odd while
 * one launch writes it). A launch with the same scalars reuses it instead
 * of evaluating the grid's expressions again (program.c). */
typedef struct rt_grid_memo {
    _Atomic uint32_t seq;
    _Atomic int64_t args[64];
    _Atomic uint32_t grid[3];
} rt_grid_memo;

typedef struct pkernel {
    /* the kernel's description (tilec/kernel_desc.h), as rt_program_set got
     * it, with the runtime's own storage where the caller's may go away:
     * d.kernel borrowed (the table's or the builder's, which outlive the
     * program); d.name is name_own; d.kinds is kinds (nparams, then the two
     * split-K pointers); d.grid a table's grid function (NULL: grid below);
     * d.image, d.size, d.tma NULL and 0 (the module and twin are below) */
    tilec_kernel_desc d;
    char *name_own;                  /* d.name's storage */
    tilec_rt_param_kind kinds[TILEC_RT_MAX_PARAMS]; /* d.kinds' storage */
    rt_grid_fn grid;                 /* a built program's, with grid_data; else d.grid */
    const void *grid_data;
    tilec_rt_module *mod;
    tilec_rt_kernel *kern;
    rt_tma *tma;     /* the variant's sm_90a twin (a copy of d.tma's, tma.c), or NULL */
    rt_grid_memo gm; /* zeroed by calloc: empty */
} pkernel;

/* The split-K scratch of one stream, or of one owner (a plan's CUDA
 * graph): partials and tile counters (the counters all zero between
 * launches: each launch resets those it uses). */
typedef struct rt_split_ws {
    const void *key; /* the stream's handle, or the owner */
    int owned;       /* key is an owner (rt_program_launch_at's ws_owner), never a stream */
    uint64_t part, cnt;
    size_t part_bytes, cnt_bytes;
    size_t want_part, want_cnt; /* an owner's: what a launch needed that it lacked (0: nothing) */
} rt_split_ws;

struct tilec_program {
    tilec_rt *rt;
    pkernel *ks;
    uint32_t n;
    tilec_program_stats st;
    /* multi-kernel: the chosen variant per kernel and shape */
    pthread_mutex_t mk_mu;   /* guards choices */
    pthread_mutex_t mk_tune; /* held while a new shape is timed: one at a time */
    mk_choice *choices;
    int mk_forced; /* TILEC_MULTI_KERNEL at build time: -1 unset, -2 invalid */
    char cache_dir[PATH_MAX];
    choice_store mk_store;             /* the choices as entries of the cache's tiers, through a handle of its own (choice_entry.h) */
    atomic_uint mk_timed, mk_stored;   /* tilec_program_stats' choices_timed, choices_stored */
    int no_tma; /* TILEC_DISABLE_TMA=1 when the program was made: no twins */
    /* split-K workspaces, one per stream, grown on demand (program.c) */
    pthread_mutex_t ws_mu;
    rt_split_ws *ws;
    uint32_t nws;
    uint64_t *retired; /* outgrown buffers, freed with the program */
    uint32_t nretired;
};

/* The index of variant `variant` of kernel `name`, or -1. */
int rt_program_find(const tilec_program *p, const char *name, int variant);

/* Launch kernel i (loaded, args holding its nparams arguments) with the
 * grid its metadata computes: tilec_program_launch after the lookup.
 * ws_owner NULL: a split-K kernel uses the stream's workspace pair (grown
 * on demand). Otherwise the owner's pair (a plan's CUDA graph, recorded in
 * a stream capture, which may not allocate): where that pair is too small,
 * the launch is NOT made and the need is noted (rt_program_split_short),
 * so the caller must discard what it captured, rt_program_split_fit, and
 * capture again. */
tilec_rt_status rt_program_launch_at(const tilec_program *p, uint32_t i, const tilec_rt_arg *args, void *stream,
                                     const void *ws_owner);

/* Owned split-K pairs (plan_graph.c: each CUDA graph of a plan owns one, so
 * two graphs replayed on two streams at once never share one). short: did
 * a launch for owner find its pair too small since the last fit? fit: grow
 * the owner's pair to what those launches needed, outside any capture, its
 * new counters zeroed on `stream`, which is then waited for (a replay may
 * come on any stream); an outgrown buffer is retired as a stream's is.
 * drop: free the owner's pair (cuMemFree waits for the work in flight that
 * uses it), when its graph is destroyed. */
int rt_program_split_short(tilec_program *p, const void *owner);
tilec_rt_status rt_program_split_fit(tilec_program *p, const void *owner, void *stream);
void rt_program_split_drop(tilec_program *p, const void *owner);

/* tilec_program_launch_best for the kernel whose variant 0 is entry
 * `first` (multikernel.c); ws_owner as for rt_program_launch_at. */
tilec_rt_status rt_program_launch_best_at(tilec_program *p, uint32_t first, const tilec_rt_arg *args, uint32_t nargs,
                                          void *stream, const void *ws_owner, int *chosen);

/* ---- tma.c: sm_90a twins ---- */

/* Keep a copy of the twin's metadata (none when m names no twin). */
tilec_rt_status rt_tma_set(pkernel *pk, const tilec_tma_meta *m);
/* Resolve the twin in the kernel's loaded module; without one (not an
 * sm_90a image, no cuTensorMapEncodeTiled, `disabled`) the twin is dropped. */
void rt_tma_resolve(tilec_rt *rt, pkernel *pk, int disabled);
void rt_tma_free(pkernel *pk);
int rt_tma_ready(const pkernel *pk); /* 1: a resolved twin */
/* Launch the twin when every operand qualifies: 1 with *st the launch's
 * status, 0 (nothing launched) to launch the variant's own kernel. */
int rt_tma_launch(const pkernel *pk, const uint32_t grid[3], const tilec_rt_arg *args, void *stream,
                  tilec_rt_status *st);

#endif
