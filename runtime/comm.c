/* comm.c: communicators on NCCL loaded at run time (dlopen of
 * libnccl.so.2 or $TILEC_NCCL), the size checks of each collective, and
 * their registration on an extern registry (tilec/comm.h). Built against
 * nccl.h for its types; never linked with NCCL. */
#include <dlfcn.h>
/* nccl.h declares a few functions as f() (not prototypes): its types are
 * what is used, under the house warnings */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wundef"
#include <nccl.h>
#pragma GCC diagnostic pop
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec/comm.h"

_Static_assert(sizeof(ncclUniqueId) == TILEC_COMM_ID_BYTES, "ncclUniqueId is 128 bytes");
_Static_assert((int)TILEC_REDOP_SUM == (int)ncclSum && (int)TILEC_REDOP_PROD == (int)ncclProd &&
                   (int)TILEC_REDOP_MAX == (int)ncclMax && (int)TILEC_REDOP_MIN == (int)ncclMin &&
                   (int)TILEC_REDOP_AVG == (int)ncclAvg,
               "tilec_redop follows ncclRedOp_t");

static const char default_nccl[] = "libnccl.so.2";

/* The entry points' types, then the list: X(name without "nccl") */
typedef const char *(*pfn_GetErrorString)(ncclResult_t);
typedef ncclResult_t (*pfn_GetVersion)(int *);
typedef ncclResult_t (*pfn_GetUniqueId)(ncclUniqueId *);
typedef ncclResult_t (*pfn_CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
typedef ncclResult_t (*pfn_CommDestroy)(ncclComm_t);
typedef ncclResult_t (*pfn_CommCount)(const ncclComm_t, int *);
typedef ncclResult_t (*pfn_CommUserRank)(const ncclComm_t, int *);
typedef ncclResult_t (*pfn_AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                      cudaStream_t);
typedef ncclResult_t (*pfn_AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*pfn_ReduceScatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                          cudaStream_t);
typedef ncclResult_t (*pfn_Broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
typedef ncclResult_t (*pfn_GroupStart)(void);
typedef ncclResult_t (*pfn_GroupEnd)(void);

#define COMM_CALLS(X)                                                                                             \
    X(GetErrorString) X(GetVersion) X(GetUniqueId) X(CommInitRank) X(CommDestroy) X(CommCount) X(CommUserRank)  \
    X(AllReduce) X(AllGather) X(ReduceScatter) X(Broadcast) X(GroupStart) X(GroupEnd)

typedef struct nccl_lib {
    void *lib;
    const char *name;
#define X(f) pfn_##f f;
    COMM_CALLS(X)
#undef X
} nccl_lib;

/* One collective registered on a registry (tilec_comm_register). */
typedef struct comm_reg {
    struct comm_reg *next;
    tilec_comm *c;
    const tilec_externs *x;
    char *symbol, *where;
    tilec_coll coll;
    tilec_redop op;
    uint32_t axis;
    int64_t root;
    char *wait;  /* tilec_comm_register_async: the symbol of its wait, else NULL */
    void *done;  /* recorded on the communication stream after each run */
    int ran;     /* done has been recorded */
} comm_reg;

struct tilec_comm {
    nccl_lib n;
    char libname[512];
    ncclComm_t comm;
    int owned; /* made here: destroyed by tilec_comm_free */
    int rank, world, version;
    comm_reg *regs;
    tilec_rt *srt; /* the runtime of the communication stream and events */
    void *side;    /* the communication stream (made at the first asynchronous run) */
    void *fork;    /* recorded on the caller's stream before each asynchronous run */
    int serial;    /* tilec_comm_set_overlap(c, 0) or TILEC_COMM_OVERLAP=0: the caller's stream waits at once */
};

static void errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Load NCCL: library, else $TILEC_NCCL, else libnccl.so.2. NODELETE: NCCL
 * keeps threads of its own (the unique id's bootstrap root) running. */
static tilec_rt_status nccl_load(nccl_lib *n, char *name, size_t namelen, const char *library, char *err,
                                 size_t errlen)
{
    memset(n, 0, sizeof *n);
    const char *env = getenv("TILEC_NCCL");
    const char *lib = library ? library : env && *env ? env : default_nccl;
    snprintf(name, namelen, "%s", lib);
    n->name = name;
    n->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!n->lib) {
        const char *why = dlerror();
        errf(err, errlen,
             "no NCCL found: %s (%s) could not be loaded: %s; graphs with collectives need NCCL: set TILEC_NCCL "
             "to the path of libnccl.so.2 (the nvidia-nccl wheel puts it in "
             "site-packages/nvidia/nccl/lib)",
             lib, library ? "the library asked for" : env && *env ? "from TILEC_NCCL" : "the default",
             why ? why : "unknown dlopen error");
        return TILEC_RT_NO_DRIVER;
    }
#define X(f)                                                                                         \
    {                                                                                                      \
        void *p = dlsym(n->lib, "nccl" #f);                                                                        \
        if (!p) {                                                                                          \
            errf(err, errlen, "the NCCL library %s has no %s (NCCL 2.11 or newer is needed)", lib, "nccl" #f);     \
            dlclose(n->lib);                                                                               \
            memset(n, 0, sizeof *n);                                                                       \
            return TILEC_RT_DRIVER_TOO_OLD;                                                                \
        }                                                                                                  \
        memcpy(&n->f, &p, sizeof p);                                                                       \
    }
    COMM_CALLS(X)
#undef X
    return TILEC_RT_OK;
}

static const char *nccl_why(const nccl_lib *n, ncclResult_t r)
{
    const char *s = n->GetErrorString ? n->GetErrorString(r) : NULL;
    return s ? s : "unknown NCCL error";
}

tilec_rt_status tilec_comm_unique_id(const char *library, unsigned char *id, char *err, size_t errlen)
{
    if (!id) {
        errf(err, errlen, "tilec_comm_unique_id: id is NULL");
        return TILEC_RT_INVALID_ARG;
    }
    nccl_lib n;
    char name[512];
    tilec_rt_status st = nccl_load(&n, name, sizeof name, library, err, errlen);
    if (st != TILEC_RT_OK)
        return st;
    ncclUniqueId u;
    memset(&u, 0, sizeof u);
    ncclResult_t r = n.GetUniqueId(&u);
    if (r != ncclSuccess) {
        errf(err, errlen, "ncclGetUniqueId failed: %s", nccl_why(&n, r));
        st = TILEC_RT_LAUNCH_ERROR;
    } else {
        memcpy(id, &u, sizeof u);
    }
    dlclose(n.lib);
    return st;
}

static tilec_comm *comm_alloc(const char *library, char *err, size_t errlen, tilec_rt_status *st)
{
    tilec_comm *c = calloc(1, sizeof *c);
    if (!c) {
        errf(err, errlen, "out of memory");
        *st = TILEC_RT_NOMEM;
        return NULL;
    }
    *st = nccl_load(&c->n, c->libname, sizeof c->libname, library, err, errlen);
    if (*st != TILEC_RT_OK) {
        free(c);
        return NULL;
    }
    if (c->n.GetVersion(&c->version) != ncclSuccess)
        c->version = 0;
    const char *ov = getenv("TILEC_COMM_OVERLAP");
    c->serial = ov && !strcmp(ov, "0");
    return c;
}

tilec_rt_status tilec_comm_new(tilec_rt *rt, const char *library, int rank, int world, const unsigned char *id,
                               tilec_comm **out, char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!out || !id || world < 1 || rank < 0 || rank >= world) {
        errf(err, errlen, "tilec_comm_new: %s", !out || !id ? "out or id is NULL"
                                                 : world < 1 ? "world must be at least 1"
                                                             : "rank must be in 0 .. world - 1");
        if (out && id && world >= 1)
            errf(err, errlen, "tilec_comm_new: rank %d is not in 0 .. %d (world %d)", rank, world - 1, world);
        return TILEC_RT_INVALID_ARG;
    }
    if (rt && tilec_rt_make_current(rt) != TILEC_RT_OK) {
        errf(err, errlen, "tilec_comm_new: cannot make the device's context current: %s", tilec_rt_last_error(rt));
        return TILEC_RT_DRIVER_ERROR;
    }
    tilec_rt_status st;
    tilec_comm *c = comm_alloc(library, err, errlen, &st);
    if (!c)
        return st;
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    ncclResult_t r = c->n.CommInitRank(&c->comm, world, u, rank);
    if (r != ncclSuccess) {
        errf(err, errlen, "ncclCommInitRank(rank %d of %d) failed: %s", rank, world, nccl_why(&c->n, r));
        dlclose(c->n.lib);
        free(c);
        return TILEC_RT_LAUNCH_ERROR;
    }
    c->owned = 1;
    c->rank = rank;
    c->world = world;
    *out = c;
    return TILEC_RT_OK;
}

tilec_rt_status tilec_comm_adopt(const char *library, void *nccl_comm, tilec_comm **out, char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!out || !nccl_comm) {
        errf(err, errlen, "tilec_comm_adopt: %s is NULL", out ? "the NCCL communicator" : "out");
        return TILEC_RT_INVALID_ARG;
    }
    tilec_rt_status st;
    tilec_comm *c = comm_alloc(library, err, errlen, &st);
    if (!c)
        return st;
    c->comm = (ncclComm_t)nccl_comm;
    ncclResult_t r = c->n.CommCount(c->comm, &c->world);
    if (r == ncclSuccess)
        r = c->n.CommUserRank(c->comm, &c->rank);
    if (r != ncclSuccess) {
        errf(err, errlen, "tilec_comm_adopt: cannot read the communicator's size and rank: %s", nccl_why(&c->n, r));
        dlclose(c->n.lib);
        free(c);
        return TILEC_RT_LAUNCH_ERROR;
    }
    *out = c;
    return TILEC_RT_OK;
}

void tilec_comm_free(tilec_comm *c)
{
    if (!c)
        return;
    if (c->owned && c->comm)
        c->n.CommDestroy(c->comm);
    if (c->side)
        tilec_rt_stream_synchronize(c->srt, c->side);
    for (comm_reg *g = c->regs, *next; g; g = next) {
        next = g->next;
        if (g->done)
            tilec_rt_event_destroy(c->srt, g->done);
        free(g->symbol);
        free(g->where);
        free(g->wait);
        free(g);
    }
    if (c->fork)
        tilec_rt_event_destroy(c->srt, c->fork);
    if (c->side)
        tilec_rt_stream_destroy(c->srt, c->side);
    if (c->n.lib)
        dlclose(c->n.lib);
    free(c);
}

void tilec_comm_set_overlap(tilec_comm *c, int on)
{
    if (c)
        c->serial = !on;
}

int tilec_comm_rank(const tilec_comm *c) { return c ? c->rank : -1; }
int tilec_comm_world(const tilec_comm *c) { return c ? c->world : -1; }
int tilec_comm_nccl_version(const tilec_comm *c) { return c ? c->version : 0; }
const char *tilec_comm_library(const tilec_comm *c) { return c ? c->libname : ""; }
void *tilec_comm_stream(const tilec_comm *c) { return c ? c->side : NULL; }

static int nccl_dtype(tilec_dtype d, ncclDataType_t *t)
{
    switch (d) {
    case TILEC_DT_I8: *t = ncclInt8; return 0;
    case TILEC_DT_U8: *t = ncclUint8; return 0;
    case TILEC_DT_I32: *t = ncclInt32; return 0;
    case TILEC_DT_U32: *t = ncclUint32; return 0;
    case TILEC_DT_I64: *t = ncclInt64; return 0;
    case TILEC_DT_U64: *t = ncclUint64; return 0;
    case TILEC_DT_F16: *t = ncclFloat16; return 0;
    case TILEC_DT_BF16: *t = ncclBfloat16; return 0;
    case TILEC_DT_F32: *t = ncclFloat32; return 0;
    case TILEC_DT_F64: *t = ncclFloat64; return 0;
    default: return -1;
    }
}

/* "f16[4, 8]" */
static const char *shape(char *buf, size_t n, const tilec_tensor *t)
{
    size_t k = (size_t)snprintf(buf, n, "%s[", tilec_dtype_name(t->dtype));
    for (uint32_t d = 0; d < t->rank && d < TILEC_TENSOR_MAX_RANK && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? ", " : "", (long long)t->sizes[d]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}

static int contiguous(const tilec_tensor *t)
{
    int64_t s = 1;
    for (uint32_t d = t->rank; d-- > 0;) {
        if (t->sizes[d] != 1 && t->strides[d] != s)
            return 0;
        s *= t->sizes[d];
    }
    return 1;
}

/* The sizes a collective takes and gives (tilec_comm_run's rules). 0, or
 * -1 with the message. */
static int check_sizes(const tilec_comm *c, tilec_coll coll, uint32_t axis, int64_t root, const tilec_tensor *in,
                       const tilec_tensor *out, const char *w, char *err, size_t errlen)
{
    char a[256], b[256];
    ncclDataType_t t;
    if (in->rank > TILEC_TENSOR_MAX_RANK || out->rank != in->rank || out->dtype != in->dtype) {
        errf(err, errlen, "%s: the input is %s but the output %s (one dtype and rank for both)", w,
             shape(a, sizeof a, in), shape(b, sizeof b, out));
        return -1;
    }
    if (nccl_dtype(in->dtype, &t)) {
        errf(err, errlen, "%s: NCCL has no %s (i8, u8, i32, u32, i64, u64, f16, bf16, f32, f64)", w,
             tilec_dtype_name(in->dtype));
        return -1;
    }
    if ((coll == TILEC_COLL_ALL_GATHER || coll == TILEC_COLL_REDUCE_SCATTER) && axis >= in->rank) {
        errf(err, errlen, "%s: axis %u is out of range for %s", w, axis, shape(a, sizeof a, in));
        return -1;
    }
    if (coll == TILEC_COLL_BROADCAST && (root < 0 || root >= c->world)) {
        errf(err, errlen, "%s: the root rank %lld is not in 0 .. %d (world %d)", w, (long long)root, c->world - 1,
             c->world);
        return -1;
    }
    for (uint32_t d = 0; d < in->rank; d++) {
        int64_t want = in->sizes[d];
        if (d == axis && coll == TILEC_COLL_ALL_GATHER) {
            if (__builtin_mul_overflow(want, (int64_t)c->world, &want)) {
                errf(err, errlen, "%s: world (%d) x dimension %u of the input %s overflows", w, c->world, d,
                     shape(a, sizeof a, in));
                return -1;
            }
        } else if (d == axis && coll == TILEC_COLL_REDUCE_SCATTER) {
            if (want % c->world) {
                errf(err, errlen,
                     "%s: dimension %u of the input %s is %lld, which world (%d ranks) does not divide "
                     "(reduce_scatter hands each rank an equal part)",
                     w, d, shape(a, sizeof a, in), (long long)want, c->world);
                return -1;
            }
            want /= c->world;
        }
        if (out->sizes[d] != want) {
            errf(err, errlen, "%s: dimension %u of the output %s is %lld, but %s of the input %s makes %lld (world %d)",
                 w, d, shape(b, sizeof b, out), (long long)out->sizes[d], tilec_coll_name(coll),
                 shape(a, sizeof a, in), (long long)want, c->world);
            return -1;
        }
    }
    if (!contiguous(in) || !contiguous(out)) {
        errf(err, errlen, "%s: the %s %s is not contiguous (row-major)", w, contiguous(in) ? "output" : "input",
             contiguous(in) ? shape(b, sizeof b, out) : shape(a, sizeof a, in));
        return -1;
    }
    return 0;
}

tilec_rt_status tilec_comm_run(tilec_comm *c, void *stream, tilec_coll coll, tilec_redop op, uint32_t axis,
                               int64_t root, const tilec_tensor *in, tilec_tensor *out, const char *where, char *err,
                               size_t errlen)
{
    const char *w = where ? where : tilec_coll_name(coll);
    if (!c || !in || !out || (unsigned)coll >= TILEC_COLL_COUNT || (unsigned)op >= TILEC_REDOP_COUNT) {
        errf(err, errlen, "%s: %s", w, !c ? "no communicator" : !in || !out ? "a tensor is NULL"
                                                                            : "no such collective or operation");
        return TILEC_RT_INVALID_ARG;
    }
    if (check_sizes(c, coll, axis, root, in, out, w, err, errlen))
        return TILEC_RT_INVALID_ARG;
    ncclDataType_t t;
    (void)nccl_dtype(in->dtype, &t);
    /* blocks: the product of the dimensions before the axis (all_gather,
     * reduce_scatter); each is one call on n elements of the input */
    uint64_t blocks = 1, n = 1, total = 1;
    int per_axis = coll == TILEC_COLL_ALL_GATHER || coll == TILEC_COLL_REDUCE_SCATTER;
    for (uint32_t d = 0; d < in->rank; d++) {
        total *= (uint64_t)in->sizes[d];
        if (per_axis && d < axis)
            blocks *= (uint64_t)in->sizes[d];
        else
            n *= (uint64_t)in->sizes[d];
    }
    if (!total)
        return TILEC_RT_OK; /* every rank has the same sizes: none calls NCCL */
    if (!in->data || !out->data) {
        errf(err, errlen, "%s: the %s has a NULL address", w, in->data ? "output" : "input");
        return TILEC_RT_INVALID_ARG;
    }
    size_t es = tilec_dtype_size(in->dtype);
    uint64_t out_n = coll == TILEC_COLL_ALL_GATHER ? n * (uint64_t)c->world
                     : coll == TILEC_COLL_REDUCE_SCATTER ? n / (uint64_t)c->world
                                                         : n;
    cudaStream_t s = (cudaStream_t)stream;
    ncclResult_t r = blocks > 1 ? c->n.GroupStart() : ncclSuccess;
    for (uint64_t i = 0; i < blocks && r == ncclSuccess; i++) {
        const char *src = (const char *)(uintptr_t)in->data + i * n * es;
        char *dst = (char *)(uintptr_t)out->data + i * out_n * es;
        switch (coll) {
        case TILEC_COLL_ALL_REDUCE:
            r = c->n.AllReduce(src, dst, n, t, (ncclRedOp_t)op, c->comm, s);
            break;
        case TILEC_COLL_ALL_GATHER:
            r = c->n.AllGather(src, dst, n, t, c->comm, s);
            break;
        case TILEC_COLL_REDUCE_SCATTER:
            r = c->n.ReduceScatter(src, dst, out_n, t, (ncclRedOp_t)op, c->comm, s);
            break;
        default:
            r = c->n.Broadcast(src, dst, n, t, (int)root, c->comm, s);
            break;
        }
    }
    if (blocks > 1) {
        ncclResult_t e = c->n.GroupEnd();
        if (r == ncclSuccess)
            r = e;
    }
    if (r != ncclSuccess) {
        errf(err, errlen, "%s: nccl%s failed (rank %d of %d): %s", w,
             coll == TILEC_COLL_ALL_REDUCE       ? "AllReduce"
             : coll == TILEC_COLL_ALL_GATHER     ? "AllGather"
             : coll == TILEC_COLL_REDUCE_SCATTER ? "ReduceScatter"
                                                 : "Broadcast",
             c->rank, c->world, nccl_why(&c->n, r));
        return TILEC_RT_LAUNCH_ERROR;
    }
    return TILEC_RT_OK;
}

/* The communication stream, the fork event and g's done event, made on
 * first use with the runtime the registry hands the call. */
static int side_ready(comm_reg *g, tilec_rt *rt, char *err, size_t errlen)
{
    tilec_comm *c = g->c;
    if (!rt) {
        errf(err, errlen, "%s: an overlapped collective needs the runtime (the registry call gave none)", g->where);
        return 1;
    }
    if (c->srt && c->srt != rt) {
        errf(err, errlen, "%s: the communicator's communication stream belongs to another tilec_rt", g->where);
        return 1;
    }
    c->srt = rt;
    if ((!c->side && tilec_rt_stream_create(rt, TILEC_RT_STREAM_NON_BLOCKING, &c->side) != TILEC_RT_OK) ||
        (!c->fork && tilec_rt_event_create(rt, &c->fork) != TILEC_RT_OK) ||
        (!g->done && tilec_rt_event_create(rt, &g->done) != TILEC_RT_OK)) {
        errf(err, errlen, "%s: cannot make the communication stream or its events: %s", g->where,
             tilec_rt_last_error(rt));
        return 1;
    }
    return 0;
}

static int reg_call(void *user, tilec_rt *rt, void *stream, const tilec_tensor *inputs, uint32_t ninputs,
                    tilec_tensor *outputs, uint32_t noutputs, char *err, size_t errlen)
{
    comm_reg *g = user;
    if (ninputs != 1 || noutputs != 1) {
        errf(err, errlen, "%s: a collective takes one input and one output, not %u and %u", g->where, ninputs,
             noutputs);
        return 1;
    }
    if (!g->wait)
        return tilec_comm_run(g->c, stream, g->coll, g->op, g->axis, g->root, inputs, outputs, g->where, err,
                              errlen) != TILEC_RT_OK;
    /* on the communication stream, after what the caller's stream holds so far (its input's producer) */
    if (side_ready(g, rt, err, errlen))
        return 1;
    if (tilec_rt_event_record(rt, g->c->fork, stream) != TILEC_RT_OK ||
        tilec_rt_stream_wait_event(rt, g->c->side, g->c->fork) != TILEC_RT_OK) {
        errf(err, errlen, "%s: cannot order the communication stream after the graph's: %s", g->where,
             tilec_rt_last_error(rt));
        return 1;
    }
    if (tilec_comm_run(g->c, g->c->side, g->coll, g->op, g->axis, g->root, inputs, outputs, g->where, err, errlen) !=
        TILEC_RT_OK)
        return 1;
    if (tilec_rt_event_record(rt, g->done, g->c->side) != TILEC_RT_OK) {
        errf(err, errlen, "%s: cannot record the collective's end: %s", g->where, tilec_rt_last_error(rt));
        return 1;
    }
    g->ran = 1;
    if (g->c->serial && tilec_rt_stream_wait_event(rt, stream, g->done) != TILEC_RT_OK) { /* no overlap */
        errf(err, errlen, "%s: cannot wait for the collective: %s", g->where, tilec_rt_last_error(rt));
        return 1;
    }
    return 0;
}

/* The wait of an asynchronous collective: the caller's stream waits for its end. */
static int wait_call(void *user, tilec_rt *rt, void *stream, const tilec_tensor *inputs, uint32_t ninputs,
                     tilec_tensor *outputs, uint32_t noutputs, char *err, size_t errlen)
{
    (void)inputs;
    (void)outputs;
    const comm_reg *g = user;
    if (ninputs || noutputs || !g->ran) {
        errf(err, errlen, "%s: %s", g->where,
             ninputs || noutputs ? "the wait of a collective takes no tensors" : "waited for before it ran");
        return 1;
    }
    if (tilec_rt_stream_wait_event(rt, stream, g->done) != TILEC_RT_OK) {
        errf(err, errlen, "%s: cannot wait for the collective: %s", g->where, tilec_rt_last_error(rt));
        return 1;
    }
    return 0;
}

static tilec_rt_status reg(tilec_comm *c, tilec_externs *x, const char *symbol, const char *wait, tilec_coll coll,
                           tilec_redop op, uint32_t axis, int64_t root, const char *where, char *err, size_t errlen)
{
    const char *fn = wait ? "tilec_comm_register_async" : "tilec_comm_register";
    if (!c || !x || !symbol || !*symbol || (wait && (!*wait || !strcmp(wait, symbol))) ||
        (unsigned)coll >= TILEC_COLL_COUNT || (unsigned)op >= TILEC_REDOP_COUNT) {
        errf(err, errlen, "%s: %s", fn,
             !c || !x                       ? "the communicator or the registry is NULL"
             : !symbol || !*symbol          ? "no symbol"
             : wait && (!*wait || !strcmp(wait, symbol)) ? "the wait's symbol is empty or the collective's"
                                            : "no such collective or operation");
        return TILEC_RT_INVALID_ARG;
    }
    comm_reg *g = c->regs;
    while (g && !(g->x == x && !strcmp(g->symbol, symbol)))
        g = g->next;
    char *w = strdup(where ? where : tilec_coll_name(coll)), *ws = wait ? strdup(wait) : NULL;
    if (!w || (wait && !ws)) {
        free(w);
        free(ws);
        errf(err, errlen, "out of memory");
        return TILEC_RT_NOMEM;
    }
    int fresh = !g;
    if (fresh && (!(g = calloc(1, sizeof *g)) || !(g->symbol = strdup(symbol)))) {
        free(g);
        free(w);
        free(ws);
        errf(err, errlen, "out of memory");
        return TILEC_RT_NOMEM;
    }
    free(g->where);
    free(g->wait);
    comm_reg *next = g->next;
    void *done = g->done;
    int ran = g->ran;
    *g = (comm_reg){next, c, x, g->symbol, w, coll, op, axis, root, ws, done, ran};
    if (tilec_externs_register(x, symbol, reg_call, g) != 0 ||
        (ws && tilec_externs_register(x, ws, wait_call, g) != 0)) { /* it only fails out of memory */
        if (fresh) {
            free(g->symbol);
            free(g->where);
            free(g->wait);
            free(g);
        }
        errf(err, errlen, "%s: cannot register %s (out of memory)", fn, symbol);
        return TILEC_RT_NOMEM;
    }
    if (fresh) {
        g->next = c->regs;
        c->regs = g;
    }
    return TILEC_RT_OK;
}

tilec_rt_status tilec_comm_register(tilec_comm *c, tilec_externs *x, const char *symbol, tilec_coll coll,
                                    tilec_redop op, uint32_t axis, int64_t root, const char *where, char *err,
                                    size_t errlen)
{
    return reg(c, x, symbol, NULL, coll, op, axis, root, where, err, errlen);
}

tilec_rt_status tilec_comm_register_async(tilec_comm *c, tilec_externs *x, const char *symbol, const char *wait,
                                          tilec_coll coll, tilec_redop op, uint32_t axis, int64_t root,
                                          const char *where, char *err, size_t errlen)
{
    return reg(c, x, symbol, wait ? wait : "", coll, op, axis, root, where, err, errlen);
}
