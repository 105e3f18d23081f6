/* fake_nccl.c: a fake NCCL for the CPU tests (like fake_cuda.c for the
 * driver): the entry points runtime/comm.c resolves, working on "device"
 * memory that is host memory (the fake driver's), synchronously.
 *
 * One process plays one rank; the other ranks of the communicator are
 * taken to hold the same data as this one (mirror ranks), so every result
 * is checkable for any world size:
 *   all_reduce      sum: world * x; prod: x^world; max, min, avg: x
 *   all_gather      world copies of x, one after the other
 *   reduce_scatter  this rank's part of x, reduced as all_reduce does
 *   broadcast       x
 * Every call is counted and, with FAKE_NCCL_LOG set, appended to that file
 * as one line ("AllReduce count=6 dtype=7 op=0 world=2 rank=0").
 * FAKE_NCCL_FAIL=NAME (e.g. AllReduce, CommInitRank) makes that entry
 * point return ncclInternalError. Test code: process-wide state is fine.
 *
 * FAKE_NCCL_DEFER=1 makes it asynchronous as on a GPU: a collective on a
 * stream other than NULL is queued, with its pointers, and reads and writes
 * memory only when the fake driver (tests/fake_cuda.c) flushes it: when
 * another stream waits on an event recorded after it on its stream
 * (cuStreamWaitEvent), or at a synchronization (cuCtxSynchronize,
 * cuStreamSynchronize, cuEventSynchronize, cuMemcpyDtoH). So a wrapper that
 * forgets to wait reads a result not yet there, and one that reuses the
 * input's buffer before the wait hands the collective what it wrote since.
 * The log line of a collective then ends in " stream=PTR". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wundef"
#include <nccl.h>
#pragma GCC diagnostic pop

struct ncclComm {
    int nranks, rank;
};

static int ncalls;
int fake_nccl_calls(void);
unsigned long long fake_nccl_seq(void);
void fake_nccl_flush(void *stream, unsigned long long upto);
int fake_nccl_calls(void) { return ncalls; }

static int failing(const char *name)
{
    const char *f = getenv("FAKE_NCCL_FAIL");
    return f && !strcmp(f, name);
}

static void note(const char *name, size_t count, ncclDataType_t t, int op, const struct ncclComm *c, void *stream)
{
    ncalls++;
    const char *path = getenv("FAKE_NCCL_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    fprintf(f, "%s count=%zu dtype=%d op=%d world=%d rank=%d", name, count, (int)t, op, c ? c->nranks : 0,
            c ? c->rank : 0);
    if (getenv("FAKE_NCCL_DEFER"))
        fprintf(f, " stream=%p", stream);
    fputc('\n', f);
    fclose(f);
}

const char *ncclGetErrorString(ncclResult_t r)
{
    return r == ncclSuccess ? "no error" : r == ncclInvalidArgument ? "invalid argument (fake)" : "internal error (fake)";
}

ncclResult_t ncclGetVersion(int *v)
{
    *v = 22803;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    static int n;
    if (failing("GetUniqueId"))
        return ncclInternalError;
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "fake-nccl-id-%d", ++n);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    if (failing("CommInitRank") || strncmp(id.internal, "fake-nccl-id-", 13))
        return failing("CommInitRank") ? ncclInternalError : ncclInvalidArgument;
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return ncclInvalidArgument;
    struct ncclComm *c = malloc(sizeof *c);
    if (!c)
        return ncclSystemError;
    c->nranks = nranks;
    c->rank = rank;
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    fake_nccl_flush(NULL, ~0ULL);
    free(comm);
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    *count = comm->nranks;
    return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    *rank = comm->rank;
    return ncclSuccess;
}

static int group;
ncclResult_t ncclGroupStart(void)
{
    group++;
    return ncclSuccess;
}
ncclResult_t ncclGroupEnd(void)
{
    group--;
    return group < 0 ? ncclInvalidUsage : ncclSuccess;
}

static size_t esize(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
    case ncclUint8:
        return 1;
    case ncclFloat16:
    case ncclBfloat16:
        return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
        return 4;
    default:
        return 8;
    }
}

/* element i of p as a double, and back (f16 through _Float16, bf16 by its
 * upper 16 bits of an f32) */
static double get(const void *p, size_t i, ncclDataType_t t)
{
    const char *b = (const char *)p + i * esize(t);
    union {
        int8_t i8;
        uint8_t u8;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        _Float16 f16;
        uint16_t u16;
        float f32;
        double f64;
    } v;
    memcpy(&v, b, esize(t));
    switch (t) {
    case ncclInt8: return v.i8;
    case ncclUint8: return v.u8;
    case ncclInt32: return v.i32;
    case ncclUint32: return v.u32;
    case ncclInt64: return (double)v.i64;
    case ncclUint64: return (double)v.u64;
    case ncclFloat16: return (double)v.f16;
    case ncclBfloat16: {
        uint32_t u = (uint32_t)v.u16 << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case ncclFloat32: return v.f32;
    default: return v.f64;
    }
}

static void put(void *p, size_t i, ncclDataType_t t, double x)
{
    char *b = (char *)p + i * esize(t);
    switch (t) {
    case ncclInt8: *(int8_t *)(void *)b = (int8_t)x; break;
    case ncclUint8: *(uint8_t *)(void *)b = (uint8_t)x; break;
    case ncclInt32: { int32_t v = (int32_t)x; memcpy(b, &v, 4); } break;
    case ncclUint32: { uint32_t v = (uint32_t)x; memcpy(b, &v, 4); } break;
    case ncclInt64: { int64_t v = (int64_t)x; memcpy(b, &v, 8); } break;
    case ncclUint64: { uint64_t v = (uint64_t)x; memcpy(b, &v, 8); } break;
    case ncclFloat16: { _Float16 v = (_Float16)x; memcpy(b, &v, 2); } break;
    case ncclBfloat16: {
        float f = (float)x;
        uint32_t u;
        memcpy(&u, &f, 4);
        uint16_t h = (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16); /* round to nearest even */
        memcpy(b, &h, 2);
    } break;
    case ncclFloat32: { float v = (float)x; memcpy(b, &v, 4); } break;
    default: memcpy(b, &x, 8); break;
    }
}

/* out[i] = in[i] reduced over `world` mirror ranks */
static ncclResult_t reduce(const void *in, void *out, size_t n, ncclDataType_t t, ncclRedOp_t op, int world)
{
    if ((int)t < 0 || (int)t > (int)ncclBfloat16 || (int)op < 0 || (int)op > (int)ncclAvg)
        return ncclInvalidArgument;
    if (op == ncclMax || op == ncclMin || op == ncclAvg || world == 1) {
        memmove(out, in, n * esize(t));
        return ncclSuccess;
    }
    for (size_t i = 0; i < n; i++) {
        double x = get(in, i, t), r = x;
        for (int k = 1; k < world; k++)
            r = op == ncclSum ? r + x : r * x;
        put(out, i, t, r);
    }
    return ncclSuccess;
}

/* ---- FAKE_NCCL_DEFER: collectives queued on their stream ---- */

enum { Q_AR, Q_RS, Q_AG, Q_BC };
typedef struct queued {
    int what;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t t;
    int op; /* the reduction, or broadcast's root */
    struct ncclComm c;
    void *stream;
    unsigned long long seq;
} queued;
static queued q[1024];
static int nq;
static unsigned long long seq; /* collectives enqueued so far */

unsigned long long fake_nccl_seq(void) { return seq; }

static ncclResult_t run(int what, const void *send, void *recv, size_t count, ncclDataType_t t, int op,
                        const struct ncclComm *comm);

/* 1 when the call was queued (*r its result), 0 when it runs now */
static int defer(int what, const void *send, void *recv, size_t count, ncclDataType_t t, int op,
                 const struct ncclComm *comm, void *stream, ncclResult_t *r)
{
    seq++;
    if (!stream || !getenv("FAKE_NCCL_DEFER"))
        return 0;
    *r = nq == 1024 ? ncclInternalError : ncclSuccess;
    if (nq < 1024)
        q[nq++] = (queued){what, send, recv, count, t, op, *comm, stream, seq - 1};
    return 1;
}

/* run the queued collectives of `stream` (NULL: all) enqueued before upto, in order */
void fake_nccl_flush(void *stream, unsigned long long upto)
{
    int k = 0;
    for (int i = 0; i < nq; i++) {
        if ((!stream || q[i].stream == stream) && q[i].seq < upto)
            run(q[i].what, q[i].send, q[i].recv, q[i].count, q[i].t, q[i].op, &q[i].c);
        else
            q[k++] = q[i];
    }
    nq = k;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream)
{
    note("AllReduce", count, t, (int)op, comm, stream);
    if (failing("AllReduce"))
        return ncclInternalError;
    ncclResult_t r;
    return defer(Q_AR, send, recv, count, t, (int)op, comm, stream, &r) ? r
                                                                       : run(Q_AR, send, recv, count, t, (int)op, comm);
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream)
{
    note("ReduceScatter", recvcount, t, (int)op, comm, stream);
    if (failing("ReduceScatter"))
        return ncclInternalError;
    ncclResult_t r;
    return defer(Q_RS, send, recv, recvcount, t, (int)op, comm, stream, &r)
               ? r
               : run(Q_RS, send, recv, recvcount, t, (int)op, comm);
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t stream)
{
    note("AllGather", sendcount, t, -1, comm, stream);
    if (failing("AllGather"))
        return ncclInternalError;
    ncclResult_t r;
    return defer(Q_AG, send, recv, sendcount, t, 0, comm, stream, &r) ? r
                                                                      : run(Q_AG, send, recv, sendcount, t, 0, comm);
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t t, int root, ncclComm_t comm,
                           cudaStream_t stream)
{
    note("Broadcast", count, t, root, comm, stream);
    if (failing("Broadcast"))
        return ncclInternalError;
    if (root < 0 || root >= comm->nranks)
        return ncclInvalidArgument;
    ncclResult_t r;
    return defer(Q_BC, send, recv, count, t, root, comm, stream, &r) ? r
                                                                     : run(Q_BC, send, recv, count, t, root, comm);
}

static ncclResult_t run(int what, const void *send, void *recv, size_t count, ncclDataType_t t, int op,
                        const struct ncclComm *comm)
{
    switch (what) {
    case Q_AR:
        return reduce(send, recv, count, t, (ncclRedOp_t)op, comm->nranks);
    case Q_RS:
        return reduce((const char *)send + (size_t)comm->rank * count * esize(t), recv, count, t, (ncclRedOp_t)op,
                      comm->nranks);
    case Q_AG:
        for (int k = 0; k < comm->nranks; k++)
            memmove((char *)recv + (size_t)k * count * esize(t), send, count * esize(t));
        return ncclSuccess;
    default:
        memmove(recv, send, count * esize(t));
        return ncclSuccess;
    }
}
