/* plan_graph.c: CUDA graphs for launch plans (tilec_plan_set_cuda_graph).
 * A run looks its slot values up among the recorded graphs: found, it is
 * one cuGraphLaunch on the caller's stream; not found, the steps run
 * eagerly on the caller's stream (so multi-kernel timing, cuBLAS loading
 * and any other first-time work happen outside a capture), then run again
 * into a capture on the plan's private stream (recording executes
 * nothing). Where a held graph has the same sizes and scalars and only
 * addresses differ (a caller that keeps its outputs), that first-time work
 * was done by an earlier run of these sizes (multi-kernel choices are kept
 * by shape): the steps are captured at once and the new graph launched,
 * with no eager run. While fewer than the plan's limit are held, it is instantiated
 * as one more; once the limit is reached, the least recently used graph is
 * updated in place with it (cuGraphExecUpdate: the same steps with other
 * addresses or sizes cost no instantiation), or replaced by a new
 * instantiation where the driver refuses the update (another topology, a
 * driver without the call). The graph is keyed by every slot value: its
 * kernel nodes hold the device addresses and sizes they were recorded
 * with. A tensor list slot is keyed by its contents (the count, every
 * address and element count: the launches hold the list's packed table by
 * value), not by the address of the caller's tilec_rt_list, so a list made
 * anew at each call with the same tensors replays. Each entry owns its split-K workspace pair (the program's, keyed by
 * the entry; rt_program_split_*), so two graphs of one plan replayed on two
 * streams at once never share one; replays of one graph are ordered by
 * CUDA. The pair is sized by the launches of a capture: one that finds it
 * too small launches nothing and notes its need, and the capture is
 * discarded, the pair grown outside it and the steps captured again. It is
 * freed with the entry (plan_graph_clear). */
#include <stdlib.h>
#include <string.h>

#include "runtime/plan_internal.h"

static int graphs_supported(const tilec_rt *rt)
{
    const rt_driver *d = &rt->drv;
    return d->StreamBeginCapture && d->StreamEndCapture && d->GraphInstantiateWithFlags && d->GraphLaunch &&
           d->GraphExecDestroy && d->GraphDestroy;
}

void plan_graph_clear(tilec_plan *p)
{
    for (uint32_t i = 0; i < PLAN_MAX_GRAPHS; i++) {
        plan_graph *g = &p->graphs[i];
        if (g->exec)
            p->rt->drv.GraphExecDestroy(g->exec);
        if (g->ws)
            rt_program_split_drop(p->prog, g);
        free(g->key);
        memset(g, 0, sizeof *g);
    }
    if (p->capture)
        tilec_rt_stream_destroy(p->rt, p->capture);
    p->capture = NULL;
    p->st.graphs = 0;
}

tilec_rt_status tilec_plan_set_cuda_graph(tilec_plan *p, uint32_t graphs)
{
    if (!p)
        return TILEC_RT_INVALID_ARG;
    if (graphs > PLAN_MAX_GRAPHS)
        return plan_fail(p, TILEC_RT_INVALID_ARG, "%u CUDA graphs asked for; at most %d are kept", graphs,
                         PLAN_MAX_GRAPHS);
    if (graphs && !graphs_supported(p->rt))
        return plan_fail(p, TILEC_RT_DRIVER_TOO_OLD, "the CUDA driver lacks the stream capture and graph calls");
    if (tilec_rt_make_current(p->rt) != TILEC_RT_OK)
        return plan_fail(p, TILEC_RT_DRIVER_ERROR, "%s", tilec_rt_last_error(p->rt));
    plan_graph_clear(p);
    p->max_graphs = graphs;
    return TILEC_RT_OK;
}

/* The key of these slot values into *key (malloc'd, *bytes long): the
 * slots, a list slot's value replaced by its count, then each list's
 * addresses and element counts, in the slots' order; or the failure
 * (memory, a NULL list) with the plan's error. */
static tilec_rt_status make_key(tilec_plan *p, const tilec_rt_arg *slots, uint64_t **key, size_t *bytes)
{
    size_t n = p->nslots;
    for (uint32_t i = 0; i < p->nslots; i++)
        if (p->types[i] == TILEC_PLAN_LIST) {
            if (!slots[i].list)
                return plan_fail(p, TILEC_RT_INVALID_ARG, "slot '%s' is a tensor list, but NULL was passed",
                                 plan_slot_name(p, (int32_t)i));
            n += 2 * (size_t)slots[i].list->n;
        }
    uint64_t *k = malloc((n ? n : 1) * sizeof *k);
    if (!k)
        return plan_fail(p, TILEC_RT_NOMEM, "recording a CUDA graph: out of memory for its key");
    size_t at = p->nslots;
    for (uint32_t i = 0; i < p->nslots; i++) {
        if (p->types[i] != TILEC_PLAN_LIST) {
            k[i] = slots[i].u64;
            continue;
        }
        const tilec_rt_list *l = slots[i].list;
        k[i] = l->n;
        if (l->n && (!l->ptrs || !l->numels)) { /* the launch says what is wrong: key it as empty */
            k[i] = UINT64_MAX;
            continue;
        }
        for (uint32_t t = 0; t < l->n; t++) {
            k[at + t] = l->ptrs[t];
            k[at + l->n + t] = (uint64_t)l->numels[t];
        }
        at += 2 * (size_t)l->n;
    }
    *key = k;
    *bytes = at * sizeof *k;
    return TILEC_RT_OK;
}

static plan_graph *lookup(tilec_plan *p, const uint64_t *key, size_t bytes)
{
    for (uint32_t i = 0; i < p->max_graphs; i++)
        if (p->graphs[i].exec && p->graphs[i].keylen == bytes && (!bytes || !memcmp(p->graphs[i].key, key, bytes)))
            return &p->graphs[i];
    return NULL;
}

/* An empty entry, or the least recently used one (still holding its graph). */
static plan_graph *victim(tilec_plan *p)
{
    plan_graph *v = &p->graphs[0];
    for (uint32_t i = 0; i < p->max_graphs; i++) {
        plan_graph *g = &p->graphs[i];
        if (!g->exec)
            return g;
        if (g->used < v->used)
            v = g;
    }
    return v;
}

static tilec_rt_status cu_fail(tilec_plan *p, CUresult r, const char *what)
{
    rt_cu_fail(p->rt, TILEC_RT_DRIVER_ERROR, r, "%s", what);
    return plan_fail(p, TILEC_RT_DRIVER_ERROR, "recording a CUDA graph: %s", tilec_rt_last_error(p->rt));
}

/* Does a held graph have this key except, perhaps, the addresses (of
 * pointer slots and of the lists' tensors)? Then these sizes and scalars
 * have run eagerly before (each graph was recorded after an eager run of
 * its sizes, or of a graph's that matched). */
static int sizes_known(const tilec_plan *p, const uint64_t *key, size_t bytes)
{
    for (uint32_t i = 0; i < p->max_graphs; i++) {
        const plan_graph *g = &p->graphs[i];
        int same = g->exec != NULL && g->keylen == bytes;
        size_t at = p->nslots;
        for (uint32_t j = 0; same && j < p->nslots; j++) {
            same = p->types[j] == TILEC_PLAN_PTR || g->key[j] == key[j];
            if (same && p->types[j] == TILEC_PLAN_LIST && key[j] != UINT64_MAX) { /* the counts, not the addresses */
                size_t n = (size_t)key[j];
                same = !n || !memcmp(g->key + at + n, key + at + n, n * sizeof *key);
                at += 2 * n;
            }
        }
        if (same)
            return 1;
    }
    return 0;
}

/* Capture the steps for these slot values on the capture stream, their
 * split-K launches using g's pair, into *graph. */
static tilec_rt_status capture(tilec_plan *p, const tilec_rt_arg *slots, plan_graph *g, CUgraph *graph)
{
    const rt_driver *d = &p->rt->drv;
    CUresult r = d->StreamBeginCapture(p->capture, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (r != CUDA_SUCCESS)
        return cu_fail(p, r, "cuStreamBeginCapture");
    char saved[PLAN_ERR_MAX];
    p->ws_owner = g;
    tilec_rt_status st = plan_run_steps(p, slots, p->capture);
    p->ws_owner = NULL;
    memcpy(saved, p->err, sizeof saved);
    *graph = NULL;
    r = d->StreamEndCapture(p->capture, graph); /* always: the stream leaves capture mode */
    if (st != TILEC_RT_OK) {
        if (*graph)
            d->GraphDestroy(*graph);
        memcpy(p->err, saved, sizeof saved);
        return st;
    }
    if (r != CUDA_SUCCESS)
        return cu_fail(p, r, "cuStreamEndCapture");
    return TILEC_RT_OK;
}

/* Record the steps for these slot values into an entry (*out): the first
 * free one, or the least recently used, whose split-K pair the capture's
 * launches use (grown first, when they need more: see above). The entry
 * takes the key (make_key's), which is freed on failure. */
static tilec_rt_status record(tilec_plan *p, const tilec_rt_arg *slots, uint64_t *key, size_t keylen,
                              plan_graph **out)
{
    const rt_driver *d = &p->rt->drv;
    if (!p->capture && tilec_rt_stream_create(p->rt, TILEC_RT_STREAM_NON_BLOCKING, (void **)&p->capture) != TILEC_RT_OK) {
        free(key);
        return plan_fail(p, TILEC_RT_DRIVER_ERROR, "recording a CUDA graph: %s", tilec_rt_last_error(p->rt));
    }
    plan_graph *g = victim(p);
    g->ws = 1; /* the program may hold a pair for g from here: dropped with g */
    CUgraph graph = NULL;
    for (int pass = 0;; pass++) {
        tilec_rt_status st = capture(p, slots, g, &graph);
        if (st != TILEC_RT_OK) {
            free(key);
            return st;
        }
        if (!rt_program_split_short(p->prog, g))
            break;
        d->GraphDestroy(graph); /* a split-K launch was left out: grow its pair, capture again */
        st = pass ? TILEC_RT_INVALID_ARG : rt_program_split_fit(p->prog, g, p->capture);
        if (st != TILEC_RT_OK) {
            free(key);
            return plan_fail(p, st, "recording a CUDA graph: the split-K workspace: %s",
                             pass ? "the steps need more than their first capture asked for"
                                  : tilec_rt_last_error(p->rt));
        }
    }
    CUresult r;
    CUgraphExec exec = NULL;
    int updated = 0;
    if (g->exec && d->GraphExecUpdate) { /* all entries held: update the least recent in place */
        CUgraphExecUpdateResultInfo info;
        memset(&info, 0, sizeof info);
        updated = d->GraphExecUpdate(g->exec, graph, &info) == CUDA_SUCCESS;
        if (updated)
            exec = g->exec;
    }
    if (!exec) {
        r = d->GraphInstantiateWithFlags(&exec, graph, 0);
        if (r != CUDA_SUCCESS) {
            d->GraphDestroy(graph);
            free(key);
            return cu_fail(p, r, "cuGraphInstantiateWithFlags");
        }
        if (g->exec) { /* the update was refused: the new instantiation replaces it */
            d->GraphExecDestroy(g->exec);
            p->st.graphs--;
        }
    }
    d->GraphDestroy(graph);
    free(g->key);
    g->key = key;
    g->keylen = keylen;
    if (!updated)
        p->st.graphs++;
    g->exec = exec;
    g->used = p->st.runs;
    p->st.recorded++;
    p->st.updated += (uint64_t)updated;
    *out = g;
    return TILEC_RT_OK;
}

static tilec_rt_status launch(tilec_plan *p, plan_graph *g, void *stream)
{
    CUresult r = p->rt->drv.GraphLaunch(g->exec, (CUstream)stream);
    if (r != CUDA_SUCCESS) {
        rt_cu_fail(p->rt, TILEC_RT_LAUNCH_ERROR, r, "cuGraphLaunch");
        return plan_fail(p, TILEC_RT_LAUNCH_ERROR, "replaying a CUDA graph: %s", tilec_rt_last_error(p->rt));
    }
    g->used = p->st.runs + 1;
    return TILEC_RT_OK;
}

tilec_rt_status plan_graph_run(tilec_plan *p, const tilec_rt_arg *slots, void *stream)
{
    uint64_t *key = NULL;
    size_t bytes = 0;
    tilec_rt_status st = make_key(p, slots, &key, &bytes);
    if (st != TILEC_RT_OK)
        return st;
    plan_graph *g = lookup(p, key, bytes);
    if (g) {
        free(key);
        st = launch(p, g, stream);
        if (st == TILEC_RT_OK)
            p->st.replayed++;
        return st;
    }
    if (sizes_known(p, key, bytes)) { /* only addresses are new: nothing runs for the first time */
        st = record(p, slots, key, bytes, &g);
        return st != TILEC_RT_OK ? st : launch(p, g, stream);
    }
    st = plan_run_steps(p, slots, stream);
    if (st != TILEC_RT_OK) {
        free(key);
        return st;
    }
    return record(p, slots, key, bytes, &g);
}
