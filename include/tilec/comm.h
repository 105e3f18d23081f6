/* comm.h: communicators for the collectives of graphs (all_reduce,
 * all_gather, reduce_scatter, broadcast), on NCCL loaded at run time.
 *
 * NCCL is never linked: the first communicator dlopen's `libnccl.so.2`
 * (or the library named by the argument, else by the environment variable
 * TILEC_NCCL: a file name searched like dlopen() does, or a path) and
 * resolves its entry points. A program whose graphs have no collectives
 * never loads it. Plain C types only: this header does not include nccl.h.
 *
 * A communicator is one rank of `world`; every rank makes its own with the
 * same 128-byte unique id, which one rank makes (tilec_comm_unique_id) and
 * hands to the others (a file, a socket, torch.distributed's broadcast...).
 * The collectives enqueue on the stream they are given; NCCL's calls are
 * stream-ordered and may be captured into a CUDA graph (NCCL 2.9 or newer).
 *
 * The generated wrappers run a graph's collectives through their extern
 * registry: tilec_comm_register puts one collective under the line's
 * symbol ("tilec:coll:NAME"), so eager calls and CUDA-graph mode (the
 * plan's extern steps) reach it the same way. */
#ifndef TILEC_COMM_H
#define TILEC_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "tilec/collective.h"
#include "tilec/externs.h"
#include "tilec/runtime.h"
#include "tilec/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TILEC_COMM_ID_BYTES 128 /* sizeof(ncclUniqueId) */

typedef struct tilec_comm tilec_comm;

/* Make a unique id (ncclGetUniqueId) into id[TILEC_COMM_ID_BYTES]; one rank
 * does, then shares it. library: NULL for $TILEC_NCCL, else libnccl.so.2.
 * TILEC_RT_OK, or TILEC_RT_NO_DRIVER (NCCL could not be loaded: the message
 * names what was tried and TILEC_NCCL), TILEC_RT_LAUNCH_ERROR (NCCL
 * failed), TILEC_RT_INVALID_ARG; a message in err[errlen] on failure. */
tilec_rt_status tilec_comm_unique_id(const char *library, unsigned char *id, char *err, size_t errlen);

/* Join the communicator `id` as `rank` of `world` (ncclCommInitRank: it
 * blocks until every rank has joined) on rt's device (rt's context is made
 * current first; NULL rt: whatever context is current). *out is NULL on
 * failure; free it with tilec_comm_free. 0 <= rank < world required. */
tilec_rt_status tilec_comm_new(tilec_rt *rt, const char *library, int rank, int world, const unsigned char *id,
                               tilec_comm **out, char *err, size_t errlen);

/* Adopt a communicator made elsewhere (an ncclComm_t, passed as void *,
 * e.g. torch.distributed's): rank and world are asked of NCCL. It is not
 * destroyed by tilec_comm_free; it must outlive this tilec_comm. */
tilec_rt_status tilec_comm_adopt(const char *library, void *nccl_comm, tilec_comm **out, char *err, size_t errlen);

/* Destroy the communicator (ncclCommDestroy unless adopted) and drop NCCL,
 * after its communication stream has finished (that stream and its events
 * are destroyed with the tilec_rt that made them: free the communicator
 * before closing that runtime). Unload the modules that use it, or set
 * another communicator on them, first. NULL: no-op. */
void tilec_comm_free(tilec_comm *c);

/* Overlap on (the default; TILEC_COMM_OVERLAP=0 in the environment when
 * the communicator is made turns it off) or off: off, the caller's stream
 * waits for each asynchronous collective as soon as it is enqueued, as if
 * its wait line came right after it (to time overlap, or to rule it out). */
void tilec_comm_set_overlap(tilec_comm *c, int on);

int tilec_comm_rank(const tilec_comm *c);  /* -1 for NULL */
int tilec_comm_world(const tilec_comm *c); /* -1 for NULL */
/* NCCL's version as ncclGetVersion gives it (22803 for 2.28.3). */
int tilec_comm_nccl_version(const tilec_comm *c);
/* The library loaded ("libnccl.so.2" or what TILEC_NCCL named). */
const char *tilec_comm_library(const tilec_comm *c);
/* The communication stream (a CUstream) the overlapped collectives run on:
 * NULL before the first one ran, and for NULL. A caller may record events
 * on it (to time a collective: tests/python/test_gpu_nccl.py --bench's
 * trace) or wait on it; it belongs to the communicator. */
void *tilec_comm_stream(const tilec_comm *c);

/* Run one collective on `stream` (a CUstream; NULL: the legacy stream):
 * in and out contiguous tensors of one dtype that NCCL knows (i8, u8, i32,
 * u32, i64, u64, f16, bf16, f32, f64) and one rank, with the sizes of the
 * collective checked first:
 *   all_reduce, broadcast  out has in's sizes (root: 0 <= root < world)
 *   all_gather             out's dimension `axis` is world x in's, others equal
 *   reduce_scatter         in's dimension `axis` divisible by world, out's = in's / world
 * axis 0 runs one NCCL call on the whole buffer; another axis one call per
 * block of the dimensions before it, in a group (ncclGroupStart/End).
 * where: what the messages start with (the graph and its line, e.g.
 * "line 29: y = all_reduce(p, sum)", after which the wrappers put the
 * graph's name; NULL: the collective's name).
 * TILEC_RT_OK, TILEC_RT_INVALID_ARG (the sizes, dtype, root: the message
 * names the tensors and their sizes), TILEC_RT_LAUNCH_ERROR (NCCL failed:
 * ncclGetErrorString's text). */
tilec_rt_status tilec_comm_run(tilec_comm *c, void *stream, tilec_coll coll, tilec_redop op, uint32_t axis,
                               int64_t root, const tilec_tensor *in, tilec_tensor *out, const char *where, char *err,
                               size_t errlen);

/* Register a collective on registry x under `symbol`: a tilec_extern_fn
 * taking one input and one output that calls tilec_comm_run with these
 * arguments on the stream the registry hands it. The registration lives
 * in c (registering the same symbol on the same registry again replaces
 * it): free c only after x is no longer called. where is copied. */
tilec_rt_status tilec_comm_register(tilec_comm *c, tilec_externs *x, const char *symbol, tilec_coll coll,
                                    tilec_redop op, uint32_t axis, int64_t root, const char *where, char *err,
                                    size_t errlen);

/* The same, run asynchronously, for overlap (docs/runtime.md): each call
 * records an event on the stream the registry hands it, runs the
 * collective on the communicator's own communication stream (one per
 * communicator, made on first use with the call's tilec_rt; NCCL then sees
 * every collective of the communicator on one stream, in program order)
 * after that event, and records the collective's end there. `wait`, a
 * second symbol registered on x (no tensors), makes the stream it is
 * handed wait for that end: the wrappers call it before the first line
 * that needs the result or touches the input, so the lines in between run
 * while the collective does, and keep both buffers until then. Waiting
 * before the first run is an error. */
tilec_rt_status tilec_comm_register_async(tilec_comm *c, tilec_externs *x, const char *symbol, const char *wait,
                                          tilec_coll coll, tilec_redop op, uint32_t axis, int64_t root,
                                          const char *where, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
