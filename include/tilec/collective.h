/* collective.h: the collectives of graphs (all_reduce, all_gather,
 * reduce_scatter, broadcast) and their reduction operations, shared by the
 * wrapper IR (tilec/wir.h: the COLLECTIVE line) and the runtime
 * (tilec/comm.h: NCCL loaded at run time). No dependencies. */
#ifndef TILEC_COLLECTIVE_H
#define TILEC_COLLECTIVE_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(ENUM, spelling in .tile) */
#define TILEC_COLLECTIVES(X)                \
    X(ALL_REDUCE, "all_reduce")             \
    X(ALL_GATHER, "all_gather")             \
    X(REDUCE_SCATTER, "reduce_scatter")     \
    X(BROADCAST, "broadcast")

typedef enum tilec_coll {
#define TILEC_X(e, s) TILEC_COLL_##e,
    TILEC_COLLECTIVES(TILEC_X)
#undef TILEC_X
    TILEC_COLL_COUNT
} tilec_coll;

/* The reduction operations, in the order of NCCL's ncclRedOp_t (ncclSum
 * is 0 ... ncclAvg is 4). avg is a floating-point operation only. */
#define TILEC_REDOPS(X) X(SUM, "sum") X(PROD, "prod") X(MAX, "max") X(MIN, "min") X(AVG, "avg")

typedef enum tilec_redop {
#define TILEC_X(e, s) TILEC_REDOP_##e,
    TILEC_REDOPS(TILEC_X)
#undef TILEC_X
    TILEC_REDOP_COUNT
} tilec_redop;

/* "all_reduce", "sum"; "?" out of range. */
static inline const char *tilec_coll_name(tilec_coll c)
{
    static const char *const n[] = {
#define TILEC_X(e, s) s,
        TILEC_COLLECTIVES(TILEC_X)
#undef TILEC_X
    };
    return (unsigned)c < TILEC_COLL_COUNT ? n[c] : "?";
}
static inline const char *tilec_redop_name(tilec_redop r)
{
    static const char *const n[] = {
#define TILEC_X(e, s) s,
        TILEC_REDOPS(TILEC_X)
#undef TILEC_X
    };
    return (unsigned)r < TILEC_REDOP_COUNT ? n[r] : "?";
}

#ifdef __cplusplus
}
#endif
#endif
