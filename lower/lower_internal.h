/* lower_internal.h: what the files of lower/ share (not installed, not
 * for other folders): the lowering state, layouts and values, and the
 * functions one file of the lowering calls in another. Every shared
 * function is named lower_*; everything else stays static in its file.
 * docs/lowering.md ("Where things are") says which file owns what. */
#ifndef TILEC_LOWER_INTERNAL_H
#define TILEC_LOWER_INTERNAL_H

#include <stdint.h>

#include "parser/builtins.h"
#include "parser/parse.h"
#include "tilec/limits.h"
#include "tilec/lower.h"
#include "tilec/tma.h"
#include "util/arena.h"
#include "util/strbuf.h"

/* Hidden from the shared library's symbol table, as if static. */
#pragma GCC visibility push(hidden)

enum { SMEM_LIMIT = 227 * 1024 }; /* opt-in shared memory per block on sm_90 */
enum { FMA_QUAD = 4 };          /* columns of one f32 register run (16 bytes) in the FMA layout */

/* ---- layouts and values (layout.c, state.c) ---- */

typedef enum { LY_CANON, LY_MMA, LY_FMA, LY_LIN } lykind;

/* A layout as a map of bits (linlay.c): register bit k of a thread sets
 * bit reg[k] of the element's row-major linear index, lane bit k sets
 * lane[k], warp bit k warp[k]; -1: none (replicated over that bit). */
enum { LB_MAXREG = 24 };
typedef struct lbits {
    signed char reg[LB_MAXREG], lane[5], warp[5];
    int nreg;
} lbits;

typedef struct lay {
    lykind kind;
    int rank;
    int64_t dims[TILEC_MAX_RANK];
    int64_t numel;
    int E;    /* elements per thread */
    int V;    /* canonical: elements per contiguous chunk */
    int repl; /* canonical, numel < threads: thread t holds element t % numel */
    int run;  /* consecutive elements j along the last dimension */
    int wm, wn, wtm, wtn;  /* mma: warp grid and warp tile */
    int ty, tx, tm, tn;    /* fma: thread grid and thread tile */
    lbits b;               /* LY_LIN: the map of bits */
} lay;

typedef enum { VK_SCALAR, VK_VIRT, VK_MAT, VK_RING } vkind;

/* axinfo.c: what is known of a tile along one axis. */
typedef struct lower_axfact {
    int64_t stride; /* the constant step between neighbours, when known */
    int known;      /* the stride is known */
    int64_t contig; /* unit-stride runs of this many elements, starting at multiples of it */
    int64_t cons;   /* constant runs of this many elements, likewise */
    int64_t div;    /* the largest power of two dividing each run's first element
                     * (a pointer: its address in elements) */
    int mono;       /* a boolean tile true on a prefix of the axis */
} lower_axfact;
typedef struct lower_axinfo {
    int rank;
    int virt;          /* computed where it is used (reads no materialized data) */
    int64_t div;       /* the largest power of two dividing every element */
    int isconst;       /* a scalar of known value cval */
    int64_t cval;
    lower_axfact ax[TILEC_MAX_RANK];
} lower_axinfo;

typedef struct val {
    vkind kind;
    tilec_type ty;
    tilec_dtype held;       /* the dtype of its values (a VK_SCALAR's ty is its compute type) */
    const char *c;          /* C name of the scalar or the register array */
    const tilec_expr *expr; /* VK_VIRT */
    lay ly;                 /* VK_MAT */
    int smem;               /* VK_MAT: its spill buffer in shared memory, or -1 */
    /* VK_RING: a loaded tile in a cp.async ring (ring.c), read only as a
     * dot's B operand; c is the byte offset of this iteration's buffer.
     * VK_RING, or VK_VIRT for a mask known true (ring.c's fast path):
     * rlet is the let it stands for, left out of the body */
    const tilec_stmt *rlet;
    int rld, rbt;           /* row stride in elements; stored as B^T [N][K] */
    int rwg;                /* VK_RING of the attention twin: rows of 128 bytes in the 128-byte swizzle (wgattn.c) */
    const lower_axinfo *ax; /* VK_MAT: what its let and re-assignments leave known (axinfo.c), or NULL */
} val;

typedef struct lbind {
    const char *name;
    val *v;
    int depth;
} lbind;

/* A dot loop the sm_90a twin runs on wgmma + TMA (wgmma.c). */
/* A gather twin's A read as a box of TMA's im2col mode (wgim2col.c):
 * where its first pixel lies and each step's filter tap, as expressions
 * of the kernel, walked at the rows' first element. */
enum { IC_TERMS = 8 };
typedef struct lower_im2col {
    const tilec_expr *img, *wrow, *hrow; /* the image, ow * stride and oh * stride of a row (1-D tiles) */
    const tilec_expr *pad;               /* the padding subtracted from both coordinates (a parameter), or NULL */
    const tilec_expr *c;                 /* the channels' index tile */
    int nw, nh;                          /* the tap's terms along W and H (what else the coordinates add) ... */
    const tilec_expr *tw[IC_TERMS], *th[IC_TERMS];
    int sw[IC_TERMS], sh[IC_TERMS];      /* ... and their signs (1 or -1) */
} lower_im2col;

typedef struct wg_plan {
    tilec_tma_map maps[3];        /* A, B, and C when the epilogue stores by TMA */
    const tilec_expr *R[3], *C[3]; /* each map's row and column index tiles */
    const tilec_expr *Ra[3], *Ca[3]; /* scalars added to their coordinates (lower_ptraff.add), or NULL */
    const tilec_expr *Z[3];       /* a batched map's batch index (pid(2) or pid(1), maps[i].bgrid), else NULL */
    int64_t M, N, stage_bytes;
    int64_t K;                    /* a stage's K depth: the K tile, or 64 halves for several iterations of a smaller
                                   * one or a part of a larger one */
    int64_t kt;                   /* the loop's K tile (BK) */
    uint32_t kbound, kfrom, kper; /* the loop's trips a tile from the arguments (tilec_tma_meta), kper 0: unknown */
    int iters;                    /* loop iterations a stage: K / kt (1, or 2, 4 for K tiles of 32, 16 halves) */
    int kparts;                   /* stages a loop iteration: kt / K (1, or 2, 3, 4 for K tiles of 128, 192, 256
                                   * halves, each part a stage 64 deep: the K tile's k-th 64 columns) */
    const char *one_why;          /* why a K tile under 64 halves keeps one iteration a stage, or NULL */
    int arow;                     /* bytes of one swizzled row of A's boxes: 32, 64 or 128 (the swizzle) */
    int warps;                    /* the consumer warps the twin arranges: BM / 16 (one m64 warp group per 64 rows) */
    const char *how;              /* what the twin chose that the hints did not say, for the remark */
    int bk;                       /* B K-major (trans of a [N, K] load): one box of N rows, like A's */
    int amn;                      /* A MN-major (its unit-stride axis is M: A^T stored [K, M]): boxes of K rows
                                   * along M, as an MN-major B's, and wgmma's transpose bit for A */
    int S;                        /* stages */
    int nmaps;                    /* 2, or 3 with the store */
    const tilec_stmt *store;      /* the final store the TMA writes, or vstore's (wgstore.c) */
    int vstore;                   /* a gather twin's store (no tensor map): its tile staged in shared memory as
                                   * the TMA store's, then 16-byte stores of whole rows by every consumer
                                   * thread (wgstore.c); maps[2].elem_bytes its elements' size */
    const tilec_stmt *vstore_miss; /* a gather twin's final store that is not vstore ... */
    const char *vstore_no;        /* ... and the remark's text saying why, or NULL */
    uint32_t ring_base;           /* the ring's shared-memory offset (before alignment) */
    int persist_ok;               /* the persistent schedule may apply (wgmma.c, lower_wg_persist) */
    const char *persist_no;       /* a gather twin's: why it may not (the remark), or NULL */
    int persist;                  /* this twin walks the tiles in a persistent grid */
    int64_t epi_off;              /* the store's staging, from the aligned ring: 0 (the ring), or past it */
    int epi_parts;                /* a persistent twin stages its tile in this many parts (wgstore.c) */
    /* a persistent gather twin's B resident (wgmma.c, persist_plan): where B's tile and the loop's bounds are
     * the same for every tile a block walks (bres_ok; else bres_no says why), B's region past A's ring holds
     * bres_cap k-steps' slots (bres_extra bytes more than the ring's S), the block's first tile copies B's
     * steps into them and the ring carries A alone, where a tile's steps are at most bres_cap and the grid is
     * one tile along each axis of bres_axes (bit a - 1: pid(a), a = 1, 2), a run-time test; else the ring.
     * With B resident A's ring has bres_sa stages (S, or more in the room B's ring slots leave: A's slots
     * first, B's resident ones past them; the ring's indexing by tl_res, lower_wg_ring_of) */
    int bres_ok, bres, bres_cap, bres_axes, bres_sa;
    const char *bres_no;
    int64_t bres_extra;
    /* wgattn.c: a loop of dots on cp.async rings (attention) on wgmma */
    int attn;                     /* 1: this twin is wgattn.c's, not the TMA dot loop's */
    int nfn;                      /* the register-A wgmma forms its dots use ... */
    int64_t fn_n[4];              /* ... their N */
    int fn_bk[4];                 /* ... 1: B K-major, | 2: bf16, | 4: A from shared memory too */
    const tilec_expr *first_dot;  /* the body's first dot: it waits for the deferred one too */
    int64_t key_n;                /* its columns (S = Q K^T's: the keys a step), 0 where not known */
    const tilec_expr *defer_dot;  /* the body's last dot, accumulating into defer_acc in place: its wgmma
                                   * stay in flight into the next iteration (wgattn.c), or NULL */
    const char *defer_acc;        /* its accumulator's name */
    int64_t wide_acc;             /* the last dot's accumulator columns where too wide to stay in flight, else 0 */
    int pingpong;                 /* two consumer warp groups take turns to issue their wgmma (named barriers 2, 3) */
    const tilec_expr *sa_dot;     /* the dot whose A operand (loop-invariant, written before the loop) wgmma reads
                                   * from shared memory through a descriptor (FlashAttention-3's Q), or NULL */
    const char *sa_name;          /* ... that operand's tile (a name, maybe under a cast) */
    int64_t sa_bytes;             /* ... its bytes at the head of the twin's shared memory (M x K, the 128-byte swizzle) */
    /* two program tiles along N a block (wgpair.c): pid(pax) = 2j and 2j + 1 share A's stages and run
     * as one m64(2N) wgmma; pair_ok decided by the regular pass, pair in force on a persistent grid;
     * pax the grid axis of the N tiles (1, or 2 when B's N index reads pid(2): a head's product, the
     * batch in pid(1)) */
    int pair_ok, pair, pax;
    int64_t pair_stage_bytes;     /* a paired stage: (M + 2N) x K elements */
    int pair_S;                   /* its stages in the ring */
    /* two program tiles along M a block (wgpair.c): a BM = 64 twin whose `warps` hint asks for two warp
     * groups runs pid(0) = 2i and 2i + 1, one a consumer warp group, A's box 128 rows; mpair_ok decided by
     * the regular pass, mpair in force on a persistent grid */
    int mpair_ok, mpair;
    int64_t mpair_stage_bytes;    /* its stage: (2M + N) x K elements */
    int mpair_S;                  /* its stages in the ring */
    /* wggather.c: A (and B unless btma) copied by cp.async from the producer warp group
     * (an operand TMA cannot read: a gathered A), not by TMA; no maps but B's */
    int gather;
    const tilec_expr *ld[2];      /* then the two loads */
    int producers;                /* then the producer's threads (two warp groups when the chunks divide) */
    int preg, creg;               /* with two: setmaxnreg's registers of a producer and a consumer thread */
    int blocks;                   /* blocks an SM the twin is built for: 1, or 2 (a gather twin whose halves fit) */
    /* a gather twin's B by TMA (maps[0], the one tensor map): its rows X = T + c, c bounded by
     * parameter brows, columns bc; each step takes the box where its rows are all unmasked */
    int btma, brows;
    const tilec_expr *bx, *bc0, *bc;
    /* a gather twin's A by TMA's im2col mode (maps[0], kind 2: wgim2col.c), B's map then maps[1] */
    int atma;
    lower_im2col ic;
    unsigned early_line;          /* a persistent twin's consumers load the epilogue's tile of this .tile line before
                                   * the loop (wgmma.c, early_issue; 0: none): the remark says so (lower/target.c) */
    int early_tma;                /* ... that tile read by TMA into the store's staging (wgmma.c, staged_load) */
    char early_no[200];           /* ... or why not, where the twin could have ("": it did, or no such tile) */
    int64_t other;                /* shared memory the twin's passes allocate besides its ring block (lower_wg_block):
                                   * the statements after the loop (a conversion, a reduction); 0 until a lowering
                                   * of the twin measured it (lower/target.c), then the stages leave room for it */
} wg_plan;

typedef struct matnode {
    const tilec_expr *e;
    val *v;
} matnode;

enum { LOWER_MAX_PRE = 8 }; /* the loads issued ahead in one run of lets, at most (stmt.c) */
enum { WG_MAX_EARLY = 4 }; /* the epilogue's loads issued before a twin's loop, at most */

enum { LP_MAX = 16 };       /* shapes the layout plan remembers */
enum { LOWER_IVS_MAX = 8 }; /* loop steps whose reasons the remarks keep (ivstep.c) */

/* The state of lowering one kernel variant. */
/* hoist.c: loop-invariant parts of a pipelined loop's copies */
#define LOWER_MAX_HOIST 32
typedef struct lower_hoisted {
    const tilec_expr *e; /* kept subexpression */
    int load, rank;      /* which of the loop's loads; e's rank */
    const char *idx[2];  /* the chunk's indices e is read at */
    const char *ref;     /* its register: tl_h<n>[tl_q], or [tl_q % R] one a row */
    const char *init;    /* its value (C): e walked at idx where it was found (in a run's element: mask.c) */
    const char *ctype;   /* its register's C type, or NULL: e's own */
    int per;             /* registers: one a chunk, or one a row (rows); 0: one scalar */
    int tap;             /* moves with the filter tap (a step counter's quotient): set anew when tl_tnew */
} lower_hoisted;
typedef struct lower_hoist {
    const char *var; /* the loop variable (source name) */
    int cur, collect;
    int mode[2]; /* how load i (of at most 2) is copied (LOWER_CP_*) */
    int at[2];   /* ... by 4-byte copies (lower_emit_at_copies) */
    const char *kname[2]; /* then the name of its K index, tl_i1 or tl_i0 (lower_at_open) */
    int rows[2]; /* its row classes (lower_at_rows), 0: none */
    int skip[2]; /* load i keeps nothing (over the register budget) */
    int taps;    /* keep values of the tap too (the step counters are there: stepdiv.c) */
    int ntaps;   /* ... entries that are */
    const tilec_expr *ld[2]; /* the loads */
    lower_hoisted ent[LOWER_MAX_HOIST];
    int n;
} lower_hoist;

/* remark.c: the path one dot loop took and, where it is not the
 * target's best, the first reason (--emit layouts, TILEC_LOGS=remarks). */
typedef struct lower_dot_remark {
    const tilec_stmt *loop;
    const char *path;      /* "cp.async pipeline + mma.sync, 3 stages" */
    const char *missed;    /* the better path not taken ("wgmma + TMA"), or NULL */
    const char *why;       /* its first refusal, or NULL */
    unsigned why_line;     /* the .tile line of the refusal (0: the loop's) */
    int wg;                /* the sm_90a twin runs this loop on wgmma + TMA */
    int wg_bk;             /* ... with B K-major (trans of a [N, K] load) */
    const char *wg_path;   /* the twin's path when it is not the TMA dot loop's (wgattn.c), or NULL */
} lower_dot_remark;

/* remark.c: the path one load, store or atomic_add took: how it moves
 * memory, its vector width and, where that is below the target's best (16
 * bytes), why (--emit layouts, TILEC_LOGS=remarks). */
typedef struct lower_mem_remark {
    const tilec_expr *e;   /* the load, store or atomic_add call */
    const char *what;      /* "load `x` [64, 64] f16" */
    const char *how;       /* "ld, 8 elements (16 bytes) a vector, mask on a prefix" */
    const char *why;       /* why below 16 bytes, or NULL */
    int twin;              /* the sm_90a twin moves it: 1 by TMA, 2 by cp.async from its producer warps */
    struct lower_mem_remark *next;
} lower_mem_remark;

/* sign.c: one exp call and whether its argument is known <= 0 (ex2.approx) */
enum { LOWER_EXP_MAX = 64 };
typedef struct lower_exp_fact {
    const tilec_expr *e; /* the call (or fold.c's copy of it) */
    int fast;            /* its argument <= 0: ex2.approx of x * log2(e) */
    int dotloop;         /* inside a loop whose body holds a dot */
    int copy;            /* a copy's entry (no remark of its own) */
    const char *why;     /* fast: the rules that proved it, in words */
} lower_exp_fact;

typedef struct lw {
    tilec_ctx *ctx;
    const tilec_module *m;
    const tilec_kernel *k;
    int variant;  /* -1: the base hints */
    arena ar;
    strbuf out;
    int ind;
    int nt, nwarps;
    uint32_t smem;     /* shared memory allocated; SMEM_LIMIT + 1 once an allocation passed the limit */
    int64_t smem_need; /* the bytes asked for, past the limit too: what a twin's plan must leave room for */
    int tmp;
    lbind *binds;
    int nbinds, capbinds, depth;
    matnode *mats; /* materialized subexpressions of the current statement */
    int nmats, capmats;
    /* loads of the lets after the current one, issued with its own before
     * any of the run's arithmetic (stmt.c, issue_loads): lower_find_mat
     * finds them until the run of lets ends */
    matnode pre[LOWER_MAX_PRE];
    int npre;
    const val **spilled; /* values spilled for the current statement */
    int nspilled, capspilled;
    int failed;
    int joff; /* EMIT: read register element tl_j + joff (a vector run) */
    /* EMIT, element run_q > 0 of a vector run (lower_run_idx, mask.c): the
     * run axis's index string of that element, "(tl_iV + q)", and of
     * element 0, "tl_iV", so a bound check idx < n walks as
     * idx(element 0) < n - q (lower_run_bound) */
    const char *run_sub, *run_base;
    int run_q;
    const char **assigned; /* names assigned somewhere in the body */
    int nassigned;
    const char **dotacc; /* names updated as x = x + dot(a, b) */
    int ndotacc;
    int quiet;               /* failures set `failed` without a diagnostic */
    /* order.c: pid(0) read in reverse, the loop whose trip count grows with it and its bound's definition */
    struct lower_order {
        int rev;
        const tilec_stmt *loop, *def;
    } order;
    /* the target lowered for (target.c): its dot, load/store and twin hooks */
    const struct lower_target *tg;
    /* the sm_90a target's state (wgmma.c, wgattn.c, wgstore.c, wgpair.c):
     * what the regular pass notes for the twin, and the twin's passes */
    struct lower_twin {
        int on;                 /* 1 while lowering the twin */
        int seen, done;         /* dot loops noted; the twin's loop emitted */
        const tilec_stmt *loop; /* the loop the twin runs on wgmma, or NULL */
        wg_plan plan;
        size_t epi;             /* where the statements after that loop start in out */
        int role;               /* persistent twin: 1 lowering the producer's body, 2 the consumers' */
        size_t body, end;       /* where the kernel's body starts and ends in out */
        size_t pre;             /* where the twin's loop starts in out: [body, pre) the lets before it */
        /* the persistent attention twin's parts of its loop (wgattn.c): [pre, hdr) its barriers, set up once;
         * [hdr, prod) the loop's bounds, per tile in both roles; [prod, cons) the producer's loop; [cons, epi)
         * the consumers' */
        size_t hdr, prod, cons;
        const char *acc;        /* the twin loop's accumulator (its C name) */
        /* the epilogue's loads a persistent twin's consumers issue before the loop (wgmma.c,
         * early_issue): lower_find_mat finds them in every statement after it */
        matnode early[WG_MAX_EARLY];
        int nearly;
        /* the epilogue's read of the tile it stores, by TMA into the store's staging (wgmma.c,
         * staged_load): the load, its scalar condition (NULL: always), the element of the run the
         * store's staging loop is at (wgstore.c, ws_value: lower_walk names tl_r<sq>) */
        const tilec_expr *sload, *scond;
        int sq;
    } tw;
    struct lower_ix *ix; /* index64.c: the expressions computed in 64 bits */
    int cp_wraps;        /* lower_cp_bounds' loop may pass 2^31 - 1 (or 2^63 - 1) by its step */
    /* layplan.c: shapes reduced along their rows, the dots, the report */
    int64_t rowred[LP_MAX][2];
    int nrowred;
    int64_t bcast[LP_MAX][4]; /* [M, N] tiles a vector is broadcast against: M, N, the axis it spans, 1 for a
                               * floating-point vector */
    int nbcast;
    tilec_type bcastn[LP_MAX]; /* tiles of rank 3 or more a tile with one size-1 axis is broadcast against ... */
    int bcastn_ax[LP_MAX];     /* ... along that axis */
    int nbcastn;
    const tilec_expr *dots[LP_MAX];
    int ndots;
    int rows_mma; /* mma accumulators with the warps along the rows */
    /* the shapes that loads, stores and atomic_adds move, each with the
     * narrowest element moved at it (layplan.c: canonical chunks of 16 bytes) */
    tilec_type memshape[LP_MAX];
    unsigned memsize[LP_MAX];
    unsigned memred[LP_MAX]; /* the element a vector atomic (f32 atomic_add) adds there, 0: none */
    int nmem;
    const char *aops[LP_MAX]; /* names read as a dot's A operand */
    int naops;
    const tilec_expr *nobar[LP_MAX]; /* dots whose leading barrier is redundant */
    int nnobar;
    const tilec_expr *curdot; /* the dot being lowered */
    unsigned line; /* .tile line of the statement being lowered */
    int nsync;     /* __syncthreads emitted so far */
    lower_hoist *hoist; /* set while a pipelined loop's copies are emitted */
    struct lower_stepdiv *stepdiv; /* stepdiv.c: set while a producer's copies read step counters */
    int eager_bool; /* expr.c: && and || of bools that cannot fault as & and | (no branch; wggather.c's copies) */
    const char *hoist_var; /* hoist.c: the loop variable while a pointer is split */
    const char *hoist_kname; /* ... and the name of the chunk's K index (lower_hoist.kname) */
    strbuf notes;  /* --emit layouts */
    /* remark.c: why a check refused (the first reason since lower_miss_reset) */
    const char *miss;
    unsigned miss_line;
    lower_dot_remark rem[LP_MAX]; /* the dot loops' paths, in source order */
    int nrem;
    lower_mem_remark *mrem, **mrem_end; /* the loads' and stores' paths, as lowered */
    const tilec_expr *tw_ld[2]; /* the loads of the loop the sm_90a twin takes */
    /* ivstep.c: the steps `x = x + d` of loops left as written, and why */
    const struct tilec_stmt *ivs_stmt[LOWER_IVS_MAX];
    const char *ivs_why[LOWER_IVS_MAX];
    int nivs;
    /* lower_stages: the deepest stages chosen without a hint; the cap of a retry */
    int stages_auto, stages_cap;
    /* splitk.c: the `split_k` hint */
    int split;                    /* K slices (> 1), or 0: no split */
    const tilec_stmt *split_loop; /* the dot loop that is split */
    uint32_t split_bytes;         /* f32 partials of one block */
    lower_exp_fact exps[LOWER_EXP_MAX]; /* sign.c: the kernel's exp calls, what their argument's sign allows */
    int nexp;
    const val *split_acc;         /* the split loop's accumulator, once lowered */
    int64_t swz_rows;             /* cp.async copies into 128-byte swizzled rows, this many a box (wgattn.c), or 0 */
    /* axinfo.c: the analysis's answers while the bindings stand (ax_gen
     * counts lower_bind and lower_leave); axlog: a trace of the answers
     * loads and stores read (lower_axinfo_probe, the tests), or NULL */
    struct lower_axmemo *axmemo;
    uint64_t ax_gen;
    strbuf *axlog;
} lw;

/* ---- state.c: errors, output, names, scopes, hints, shared memory ---- */

__attribute__((format(printf, 3, 4))) void lower_fail(lw *L, const tilec_loc *loc, const char *fmt, ...);
/* A formatted string in the kernel's arena ("0" when out of memory). */
__attribute__((format(printf, 2, 3))) const char *lower_fmt(lw *L, const char *f, ...);
/* One output line at the current indentation. */
__attribute__((format(printf, 2, 3))) void lower_line(lw *L, const char *f, ...);
const char *lower_newtmp(lw *L, const char *stem);
/* The type of e in the current variant. */
const tilec_type *lower_ty(const lw *L, const tilec_expr *e);
const char *lower_cname(lw *L, const char *name);
val *lower_lookup(lw *L, const char *name);
void lower_bind(lw *L, const char *name, val *v);
void lower_leave(lw *L);
val *lower_newval(lw *L, vkind kind, const tilec_type *t, const char *c);
int lower_hint_value(const lw *L, const char *name, int64_t *out);
/* A compile-time integer (literals and hints of this variant; module
 * constants are literals by now) by the one evaluator (tilec/iexpr.h): 0,
 * or -1 when e is none. */
int lower_const_int(lw *L, const tilec_expr *e, int64_t *out);
/* The start and step of a slice slot of an index (':' is 0 and 1), expr.c. */
void lower_slice_parts(lw *L, const tilec_expr *s, int64_t *lo, int64_t *step);
/* Argument i of call as an axis of a rank-`rank` tile or grid, a negative
 * one counted from the end; out of range or not constant (the checker
 * refuses both first) fails the lowering and gives 0. */
int lower_axis(lw *L, const tilec_expr *call, uint32_t i, int rank);
uint32_t lower_alloc_smem(lw *L, int64_t bytes);

/* ---- ivstep.c: values a loop advances by a loop-invariant step ---- */

/* k with each loop's steps `x = x + d` (x an integer or pointer, d a
 * scalar invariant of the loop) read as x's value before the loop plus
 * the steps taken: `let x0 = ...` before it, `let x = x0 + k * (d / st)`
 * opening its body; a copy in L's arena when something changed, else k.
 * Sets L->k. */
const tilec_kernel *lower_ivstep(lw *L, const tilec_kernel *k);
/* Why step statement s was left as written (its loop keeps x in
 * registers), or NULL. */
const char *lower_ivstep_why(const lw *L, const tilec_stmt *s);
/* A new node of the kernel's arena: a op b of integer scalars, typed as
 * their promotion; NULL (L->failed) out of memory. */
tilec_expr *lower_scalar_op(lw *L, tilec_op op, tilec_expr *a, tilec_expr *b, const tilec_loc *loc);

/* ---- remark.c: what a check refused and why ---- */

/* Forget the last refusal (before a check whose reason is wanted). */
void lower_miss_reset(lw *L);
/* Record why a check refuses (the first reason since the reset wins) at
 * .tile line `line` (0: the loop's own); returns 0, so a check writes
 * `return lower_miss(L, line, "K tile %lld is not 64", K);`. */
__attribute__((format(printf, 3, 4))) int lower_miss(lw *L, unsigned line, const char *f, ...);
/* Record the path of dot loop `loop`; missed: the better path of the
 * target it did not take (its reason: the last refusal recorded), or
 * NULL. Returns the record (NULL when the table is full). */
lower_dot_remark *lower_remark_dot(lw *L, const tilec_stmt *loop, const char *path, const char *missed);
/* Record the path of load, store or atomic_add call e (the first
 * record of e stands: a copy issued twice is one access of the source);
 * how: the path and width (lower_remark_width, lower_remark_mask), why:
 * why below 16 bytes or NULL. Returns the record (NULL: none kept). */
lower_mem_remark *lower_remark_mem(lw *L, const tilec_expr *e, const char *how, const char *why);
/* "[16, 64]" */
const char *lower_dims_text(lw *L, const int64_t *dims, int rank);
/* "8 elements (16 bytes) a UNIT", or "one element (4 bytes) at a time". */
const char *lower_remark_width(lw *L, int w, unsigned size, const char *unit);
/* ", mask on a prefix" (decided by a run's last element), ", mask `m`
 * per element", or "" without a mask; mono: lower_monotone_mask's answer. */
const char *lower_remark_mask(lw *L, const tilec_expr *mask, int mono);
/* e as written, at most about 60 characters (then "..."). */
const char *lower_expr_text(lw *L, const tilec_expr *e);
/* The dots of block b (in its ifs too; not in inner loops). */
int lower_block_dots(const tilec_block *b);
/* The remarks as lines "line N: ...", each dot loop's path then, where
 * one was missed, its reason; `twin`: the sm_90a twin was emitted. */
void lower_remarks_render(lw *L, int twin, strbuf *out);
/* order.c: decide L->order (pid(0) in reverse where every loop's trip
 * count grows with it); its remark line into out */
void lower_launch_order(lw *L);
void lower_launch_order_remark(lw *L, strbuf *out);

/* ---- mask.c: the bound checks of a vector run's elements ---- */

/* How an access walks element q of its run (lower_run_idx): */
enum {
    LOWER_RUN_REGS = 1,  /* register tiles are read at tl_j + q (a layout's run) */
    LOWER_RUN_CHUNK = 2, /* a copy's chunk: one run whatever the tile's other extents */
    LOWER_RUN_SLOW = 4,  /* a mask only the slow path reads: its own index, no bound of its own */
    LOWER_RUN_OWN = 8,   /* a chunk whose every element keeps its own index (LOWER_ASYNC_OWN) */
};
/* qidx: lower_idx of access tile t with axis vax's index that of element
 * q of a run, "(tl_iV + q)"; sets L->joff (LOWER_RUN_REGS) and, for q > 0
 * where the run's bound checks are written against element 0 (the mask
 * rule: t is one run, every other extent 1, or `how` says
 * LOWER_RUN_CHUNK), L->run_sub, L->run_base and L->run_q;
 * lower_run_done clears them. */
void lower_run_idx(lw *L, const tilec_type *t, int vax, int q, int how, const char **qidx);
void lower_run_done(lw *L);
/* The C of x (broadcast to access tile t) at t's element idx, in layout y
 * (NULL: no register tile is read). */
const char *lower_walk_at(lw *L, const tilec_expr *x, const tilec_type *t, const char *const *idx, const lay *y);
/* The C of `mask` at element q of the run along axis vax of access tile t
 * (lower_run_idx, lower_walk_at, lower_run_done). */
const char *lower_run_mask(lw *L, const tilec_expr *mask, const tilec_type *t, int vax, int q, int how, const lay *y);
/* Comparison e (operands at dtype ta) at element run_q > 0 of the open
 * run, written against element 0's index; NULL when it is not a bound
 * check of that form (expr.c then walks it as written). */
const char *lower_run_bound(lw *L, const tilec_expr *e, const tilec_type *ta, const char *const *idx, int same,
                            const lay *cur);

/* ---- ctypes.c: C types, conversions, literals ---- */

const char *lower_ctype(tilec_dtype d);
tilec_dtype lower_compute_dt(tilec_dtype d);
const char *lower_cctype(tilec_dtype d);
const char *lower_conv(lw *L, const char *x, tilec_dtype from, tilec_dtype to);
const char *lower_ld_elem(lw *L, const char *x, tilec_dtype d);
const char *lower_st_elem(lw *L, const char *x, tilec_dtype d);
const char *lower_wrap(lw *L, const char *x, tilec_dtype d);
const char *lower_cast(lw *L, const char *x, tilec_dtype from, tilec_dtype to);
const char *lower_round(lw *L, const char *x, tilec_dtype d);
const char *lower_vctype(lw *L, const tilec_type *t);
int64_t lower_vsize(const tilec_type *t);
const char *lower_ld_val(lw *L, const char *x, const tilec_type *t);
const char *lower_st_val(lw *L, const char *x, const tilec_type *t);
const char *lower_float_lit(lw *L, double x, tilec_dtype d);
const char *lower_inf_lit(lw *L, tilec_dtype d);

/* ---- layout.c: layouts, indexing, element loops, spills ---- */

extern const char *const lower_idx[TILEC_MAX_RANK]; /* "tl_i0", "tl_i1", ... */
lay lower_canon(const lw *L, const tilec_type *t);
/* The mma layout of [M, N] on a wm x wn warp grid. */
void lower_mma_grid(int64_t M, int64_t N, int wm, int wn, lay *y);
/* 1 when an f32 dot with A of type at runs on tf32 tensor cores (the `tf32` hint). */
int lower_tf32(const lw *L, const tilec_type *at);
/* The accumulator layout of a dot of a [M, K] of type at; 0: none fits. */
int lower_dot_layout(lw *L, const tilec_type *at, int64_t M, int64_t N, lay *y);
void lower_emit_index(lw *L, const lay *y, const char *j);
const char *lower_linear(lw *L, int rank, const int64_t *dims, const char *const *idx);
void lower_loop_begin(lw *L, const lay *y);
void lower_loop_end(lw *L);
/* to: the layout of the tile v meets (the note says how two layouts printed alike differ), or NULL. */
void lower_spill(lw *L, val *v, const lay *to);

/* ---- linlay.c: layouts as maps of bits ---- */

void lower_lin_bits(const lw *L, const lay *y, lbits *b);
int lower_same_layout(const lw *L, const lay *a, const lay *b);
/* Rows of a 2-D tile over warps, each row within one warp. */
lay lower_lin_rows(const lw *L, const tilec_type *t);
/* The same along axis 0, for tiles contiguous in memory along it. */
lay lower_lin_cols(const lw *L, const tilec_type *t);
/* What a reduction along axis leaves; masks of the bits on the axis. */
lay lower_lin_slice(const lw *L, const lay *x, int axis, unsigned *regs, unsigned *lanes, unsigned *warps);
void lower_lin_index(lw *L, const lay *y, const char *j);
/* The register of v holding the element at idx of the current element of
 * layout cur, when this thread holds it; NULL when it does not. */
const char *lower_lin_reg(lw *L, const val *v, const char *const *idx, const lay *cur);
/* How many consecutive registers (tl_j aligned to it) hold consecutive
 * elements along one axis, and which axis (*axis). */
int lower_lay_run(const lw *L, const lay *y, int *axis);
/* The condition for the one copy of a replicated element, or NULL. */
const char *lower_lay_guard(lw *L, const lay *y);
void lower_lin_describe(const lw *L, const lay *y, strbuf *s);

/* ---- layplan.c: the choice of layouts and its report ---- */

void lower_plan(lw *L);
/* The layout a tile of type t gets; for expression e, a materialized
 * operand's layout first. */
int lower_chunk_elems(const lw *L, const tilec_type *t);
/* The same, and in *why (when not NULL) the reason it is below one
 * 16-byte access of the shape's narrowest element, if it is: a remark. */
int lower_chunk_elems_why(const lw *L, const tilec_type *t, const char **why);
lay lower_pick(lw *L, const tilec_type *t);
lay lower_pick_for(lw *L, const tilec_expr *e);
/* The layout of `let name = e` when the plan has one for the name. */
int lower_pick_let(lw *L, const char *name, const tilec_expr *e, lay *y);
/* Before the body of loop s: its dots need no barrier before staging
 * when the body runs at least `min` of them (a ring loop's barrier at
 * the top of each iteration: 1). */
void lower_plan_loop(lw *L, const tilec_stmt *s, int min);
/* May the dot being lowered stage its operands without a barrier first? */
int lower_dot_barrier_free(const lw *L);
__attribute__((format(printf, 2, 3))) void lower_note(lw *L, const char *f, ...);
void lower_note_value(lw *L, const val *v);

/* ---- expr.c: walking expressions ---- */

typedef enum { PREP, EMIT } wmode;

const char *lower_walk(lw *L, const tilec_expr *e, const char *const *idx, int same, const lay *cur, wmode mode);
matnode *lower_find_mat(lw *L, const tilec_expr *e);
void lower_map_bcast(const tilec_type *from, int rt, const char *const *idx, const char **sub);
/* The C of operand i of e at e's element idx, converted to rt's dtype. */
const char *lower_walk_arg(lw *L, const tilec_expr *e, int i, const tilec_type *rt, const char *const *idx, int same,
                           const lay *cur);
int lower_same_shape(const tilec_type *a, const tilec_type *b);
int lower_is_materializing(const tilec_expr *e);
/* Does e (or an expression inside it) call builtin b? 0 for a NULL e. */
int lower_calls(const tilec_expr *e, tilec_builtin b);
int lower_is_virtual(lw *L, const tilec_expr *e);
/* The tensors a launch's table of each tensor list of k holds (0: k takes
 * no list; tilec_rt_list_cap, tilec/param_kind.h). */
uint32_t lower_list_cap(const tilec_kernel *k);

/* ---- axinfo.c: the analysis of index, pointer and mask tiles ---- */

/* e's facts per axis (memoised while the bindings stand). */
const lower_axinfo *lower_axinfo_of(lw *L, const tilec_expr *e);
/* The divisibility of e's runs along axis (-1: of every element) in bytes for a pointer. */
int64_t lower_ax_div_bytes(lw *L, const tilec_expr *e, int axis);
/* What `let name = value` of a materialized tile leaves known for every
 * value the name takes (its re-assignments by scalar steps); NULL: nothing. */
const lower_axinfo *lower_axinfo_let(lw *L, const char *name, const tilec_expr *value);
/* The constant stride of e along axis: 1 with *s when known. */
int lower_stride(lw *L, const tilec_expr *e, int axis, int64_t *s);
/* Is boolean tile m, broadcast to rank `rank`, true on a prefix of axis
 * (a run decided by its ends)? */
int lower_monotone_mask(lw *L, const tilec_expr *m, int rank, int axis);
/* Are e's runs along axis unit-stride in aligned groups of n elements? */
int lower_contiguous(lw *L, const tilec_expr *e, int axis, int64_t n);
/* A pointer tile as base + (I0 + a0) * S0 + (I1 + a1) * S1 + Z * c [* X [* Y]]
 * (axis k of the tile: I_k a 1-D unit-stride index broadcast along it,
 * S_k an integer parameter or 1; Z pid(2), or pid(1) where the mask says
 * it is no coordinate; c a constant), followed through lets (tile,
 * pointer and scalar ones: `let lda = K`, `let ab = a + pid(2) * M * K`,
 * `let sb = 4096 * 4096`), broadcasts before or after the product,
 * products either way round and casts: what a tensor map needs (the
 * symbolic strides, the coordinates of the first element).
 * lower_ptr_affine fills it, or returns 0 with why. */
typedef struct lower_ptraff {
    const tilec_type *tile;    /* the pointer tile's type */
    int base;                  /* the pointer parameter */
    const tilec_expr *idx[2];  /* per axis of the tile: I_k (its first element the coordinate) */
    const tilec_expr *add[2];  /* per axis: a scalar added to that coordinate (`pa + k` with pa's columns
                                * range(BK)[None, :]; `pid(0) * K` with the rows' stride K; several scalars
                                * of one axis: their sum, a node of the arena), or NULL */
    int stride[2];             /* per axis: S_k's integer parameter, -1 for a unit stride */
    const tilec_expr *z;       /* the batch index pid(2) or pid(1) (maybe cast), or NULL */
    int zaxis;                 /* its grid axis: 2 or 1 */
    int bs[2];                 /* its stride: c times none, one or two integer parameters (-1: none) */
    int64_t bscale;            /* c, at least 1 */
    /* lower_ptr_map_const only (0 otherwise): per axis, a constant row stride (`rn[None, :] * D`, D a hint;
     * stride[ax] then -1 as for the unit axis), and an axis's constant extent: the mask's constant bound
     * (`rd[None, :] < D`), or n where the mask does not bound the axis and its index is range(n) from 0
     * (what the load reads); bound[ax] then -1 */
    int64_t kstride[2], kext[2];
    const char *why;
} lower_ptraff;
int lower_ptr_affine(lw *L, const tilec_expr *ptr, lower_ptraff *pa);
/* lower_ptr_affine with its mask m: a scalar term of pid(1) is a
 * coordinate where the mask bounds it so (`b + pid(1) * BN` with
 * `pid(1) * BN + range(BN) < N`), else the batch index (a head, `q +
 * pid(1) * S * D`); the bounds' parameters into bound[axis] (as
 * lower_mask_bounds). 0 with pa->why when neither reading is a map. */
int lower_ptr_map(lw *L, const tilec_expr *ptr, const tilec_expr *m, lower_ptraff *pa, int bound[2]);
/* lower_ptr_map also reading a constant row stride (pa->kstride), a
 * constant bound (pa->kext) and an axis that mask m (maybe NULL) leaves
 * unbounded where its index is range(n) from 0 (pa->kext: n), for a map whose extents and stride may
 * be constants (tilec_tma_map's TILEC_TMA_CONST; lower/wgattn.c). */
int lower_ptr_map_const(lw *L, const tilec_expr *ptr, const tilec_expr *m, lower_ptraff *pa, int bound[2]);
/* lower_ptr_map where m may also hold one scalar conjunct, anywhere in
 * the conjunction and through lets (`m && add != 0`): *cond, else NULL. */
int lower_ptr_map_cond(lw *L, const tilec_expr *ptr, const tilec_expr *m, lower_ptraff *pa, int bound[2],
                       const tilec_expr **cond);
/* Do a and b (lower_ptr_map's) address the same tile: the same pointer
 * parameter, shape, strides and batch, and per axis the same first
 * coordinate as linear forms (`rm[:, None] * N + rn[None, :]` and
 * `rn[None, :] + N * rm[:, None]`, under any let names)? */
int lower_same_tile(lw *L, const lower_ptraff *a, const lower_ptraff *b);
/* A tensor map's batch words from pa: none (bs TILEC_TMA_NONE) where pa
 * has no batch index, else batched along pa's grid axis, its stride's
 * parameters and constant factor. */
void lower_map_batch(tilec_tma_map *m, const lower_ptraff *pa);
/* Do scalars or index tiles a and b (either NULL: both) have the same
 * first element as linear forms of names, pids and constants (`pid(0) *
 * BM + range(BM)` and `range(BM) + BM * pid(0)`, let under two names)? */
int lower_same_first(lw *L, const tilec_expr *a, const tilec_expr *b);
/* e without lets, broadcasts and integer casts that keep the value: the
 * node two indices share when they are the same index. */
const tilec_expr *lower_index_canon(lw *L, const tilec_expr *e);
/* Mask m (a conjunction through lets) as exactly I0 < B0 && I1 < B1 of the
 * indices of pa (either order, `B > I` too): the bounds' integer
 * parameters into bound[axis]; 0 when it is anything else. */
int lower_mask_bounds(lw *L, const tilec_expr *m, const lower_ptraff *pa, int bound[2]);
/* The index of parameter e (a pointer when ptr is 1, an i32 or i64 when
 * 0, any integer when 2) that no let shadows and nothing assigns, followed
 * through scalar lets and casts when follow; -1 otherwise. */
int lower_param_of(lw *L, const tilec_expr *e, int ptr, int follow);
/* How many times `name` is let in b and the blocks inside it. */
int lower_lets_of(const tilec_block *b, const char *name);
/* The same answer and, when it is no and why is not NULL, the facts that
 * made it no in words for a remark, axis named `show` (the access's):
 * "the stride along axis 1 is the run-time value `ldb`, not 1". */
int lower_contiguous_why(lw *L, const tilec_expr *e, int axis, int64_t n, int show, const char **why);
/* With L->axlog: one line of what load/store `what` read of ptr and mask
 * along axis, and the vector width w it took. */
void lower_axinfo_trace(lw *L, const char *what, const tilec_expr *ptr, const tilec_expr *mask, int axis, int w);
/* Tests: lower variant `variant` of k with the trace into log (0, or -1
 * when the lowering failed). */
int lower_axinfo_probe(tilec_ctx *ctx, const tilec_module *m, const tilec_kernel *k, int variant, strbuf *log);

/* ---- fold.c: the scale folded into the exponent ---- */

/* A copy of loop body `body` with `let s = x * c` (c a scalar the body
 * does not assign) kept unscaled through where(k, s, -inf), its row max
 * scaled after the reduction and each `s - m` written `s0 * c - m` (one
 * FFMA); *cond the C condition (c > 0) under which the copy equals the
 * body. 0: no max to fold (the body as it is). */
int lower_fold_scale(lw *L, const tilec_block *body, tilec_block *out, const char **cond);

/* ---- sign.c: exp arguments known <= 0 ---- */

/* Scan L->k once (before its statements are lowered): which exp calls
 * have an argument <= 0 from what it means (the rules at the file's top). */
void lower_sign_scan(lw *L);
/* Is exp call e's argument known <= 0 (lowered as ex2.approx of x * log2(e))? */
int lower_exp_fast(const lw *L, const tilec_expr *e);
/* `to` is a rewritten copy of exp call `from` of the same value: it keeps from's answer. */
void lower_exp_copied(lw *L, const tilec_expr *from, const tilec_expr *to);
/* The exp remarks: each ex2 and why, each expf of a dot loop and why not. */
void lower_exp_remarks(lw *L, strbuf *out);

/* ---- access.c: conditions on whole tiles ---- */

/* A C condition under which boolean tile m is true everywhere, or NULL. */
const char *lower_all_true(lw *L, const tilec_expr *m);
/* Is the comparison m (x < n, n > x) true in every program the grid
 * launches: x = K * pid(a) + t, t <= 0, grid axis a = cdiv(n, G), K <= G? */
int lower_grid_true(lw *L, const tilec_expr *m);

/* ---- memory.c, materialize.c, reduce.c, dot.c ---- */

void lower_emit_load(lw *L, const tilec_expr *e, val *v);
void lower_emit_store(lw *L, const tilec_expr *e, const lay *y, val *old);
/* Materialize expression e (of tile type) into a register array named
 * `name` (or a temporary) in layout `want` (or the natural one). */
val *lower_materialize(lw *L, const tilec_expr *e, const char *name, const lay *want);
val *lower_operand(lw *L, const tilec_expr *e);
void lower_emit_reduce(lw *L, const tilec_expr *e, val *v);
/* scan.c: cumsum, cumprod, cummax, cummin, scan into v (materialized) */
int lower_is_scan(const tilec_expr *e);
int lower_is_reduce(const tilec_expr *e);
void lower_emit_scan(lw *L, const tilec_expr *e, val *v);
void lower_emit_dot_into(lw *L, const tilec_expr *a, const tilec_expr *b, val *acc);
/* bt: B stored transposed, [N][K] (plain ldmatrix) */
void lower_emit_mma_kloop(lw *L, val *acc, const char *sa, const char *sb, int bt, int lda, int ldb, int64_t K,
                          tilec_dtype d);
/* The f32 FMA loop: acc (FMA layout) += A [M][K] at byte offset sa (row
 * stride lda; [K][M] when at) @ B [K][N] at sb (row stride ldb), in
 * shared memory; K a multiple of 4. */
void lower_emit_fma_kloop(lw *L, val *acc, const char *sa, const char *sb, int lda, int ldb, int64_t K, int at, int swa, int swb,
                          int bnk);
/* The element index of (n, k) in an FMA loop's [N][K] ring of B (pipeline.c, fma_bnk_ok): n and k C expressions. */
const char *lower_fma_bnk_at(lw *L, const char *n, const char *k, int64_t K);

/* ---- stmt.c, pipeline.c: statements and loops ---- */

int lower_in_list(const char **v, int n, const char *name);
/* Does e read `name`? Does statement s (its nested ones too) bind or read it? */
int lower_mentions(const tilec_expr *e, const char *name);
int lower_stmt_mentions(const tilec_stmt *s, const char *name);
const tilec_expr *lower_dot_update(const tilec_stmt *s);
void lower_scan_assigned(lw *L, const tilec_block *b);
void lower_comment_loc(lw *L, const tilec_loc *loc);
void lower_emit_block(lw *L, const tilec_block *b);
/* Emit `for` loop `loop` as a cp.async pipeline when it qualifies: 1 if
 * it did, 0 (nothing emitted) if not. */
int lower_pipelined_loop(lw *L, const tilec_stmt *loop);
typedef struct lower_pipe_plan {
    const tilec_stmt *update;  /* acc = acc + dot(a, b) */
    const tilec_expr *load[2]; /* the loads feeding a and b */
    int tr[2];                 /* operand i is its load transposed (trans(x), through lets) */
    int cax[2];                /* the axis along which load i is contiguous (1, or 0 for an FMA dot's operand) */
    val *acc;
    int S;                     /* its stages (lower_stages) */
    const char *twin_only;     /* set: the mma.sync pipeline cannot read operand A as loaded (MN-major, or trans
                                * of a load contiguous along K), only the sm_90a twin may (why, for the remark) */
} lower_pipe_plan;
/* A name let to a value computed where it is used: its expression,
 * followed through such names; any other e as is. */
const tilec_expr *lower_look(lw *L, const tilec_expr *e);
/* Is e zero however spelt (0, 0.0, -0.0, cast, a hint, a name let to one)? */
int lower_is_zero(lw *L, const tilec_expr *e);
/* The stages of a dot loop's cp.async ring of stage_bytes a stage: the
 * `stages` hint when the kernel gives one, else the deepest of 2 ..
 * LOWER_STAGES_MAX (lw.stages_cap when set) whose ring fits in SMEM_LIMIT
 * with the shared memory taken so far; 1 when none fits. lower.c lowers
 * again with a lower cap when the statements after the loop overflow. */
int lower_stages(lw *L, int64_t stage_bytes);
enum { LOWER_STAGES_MAX = 4 };
/* 1 when `loop` qualifies for pipelining, with its plan. */
int lower_pipeline_plan(lw *L, const tilec_stmt *loop, lower_pipe_plan *pp);
/* A dot operand e as a load in block b: through `trans(...)` and names let
 * in b (`let bt = trans(tb); let tb = load(...)`, or inline): the load,
 * *tr the parity of the transposes passed, the let names passed in
 * names[0..*nn) (at most LOWER_OPERAND_LETS); NULL when e is not a load. */
enum { LOWER_OPERAND_LETS = 8 };
const tilec_expr *lower_operand_load(const tilec_block *b, const tilec_expr *e, int *tr, const char **names, int *nn);
/* Bind the loop variable and the body's index tiles; undo with lower_leave(). */
void lower_bind_loop_scope(lw *L, const tilec_stmt *loop);
/* cp.async copies of load e into shared memory at byte offset dst (a C
 * expression), rows of ld elements; trans: stored [C][R] (memory
 * contiguous along axis 0). */
int lower_chunk_vec(lw *L, const tilec_expr *e); /* elements of one 16-byte chunk */
int lower_chunk_count(lw *L, const tilec_expr *e);
/* How a pipelined loop copies a load [R, C] into its ring (pipeline.c;
 * hoist.c keeps the copies' loop-invariant parts by it): 16-byte chunks
 * along the contiguous axis, stored row-major (LOWER_CP_ROWS, axis 1) or
 * as [C][R] (LOWER_CP_COLS, axis 0); or, for an FMA dot's operand
 * contiguous along K, 4-byte copies that put K on the ring's rows: K on
 * axis 1 stored [C][R] (LOWER_CP_T1), K on axis 0 stored [R][C]
 * (LOWER_CP_T0). */
enum { LOWER_CP_ROWS, LOWER_CP_COLS, LOWER_CP_T1, LOWER_CP_T0 };
/* The 4-byte copies (LOWER_CP_T1 / T0; kax: the load's K axis): the k a
 * warp covers in one copy (32, one row, where the K tile holds whole
 * 128-byte lines; else 8, or 4 when the K tile is not a multiple of 8;
 * 32 / kw rows), the swizzle unit of its ring (lower_at_sw: 0, none),
 * chunks a thread copies, row classes (0: rows not
 * periodic in tl_q), the chunk loop's header, the copies into dst (row
 * stride ld). */
int lower_at_kw(lw *L, const tilec_expr *e, int kax);
int lower_at_sw(int kw);
int lower_at_chunks(lw *L, const tilec_expr *e);
int lower_at_rows(lw *L, const tilec_expr *e, int kax);
void lower_at_open(lw *L, const tilec_expr *e, int kax);
void lower_emit_at_copies(lw *L, const tilec_expr *e, const char *dst, int ld, int kax);
void lower_chunk_open(lw *L, const tilec_expr *e, int trans);
const char *lower_hoist_ref(lw *L, const tilec_expr *e, const char *const *idx);
const char *lower_hoist_ptr(lw *L, const tilec_expr *e, const char *const *idx);
/* mode[i]: how load i is copied (LOWER_CP_*) */
void lower_hoist_begin(lw *L, lower_hoist *h, const char *var, const tilec_expr *const *loads, const int *mode, int n);
void lower_hoist_end(lw *L);
/* Where a loop enters a tap (after the counters): the kept values of the
 * tap set anew; 0 when none are kept (then no tl_tnew either). */
int lower_hoist_taps(lw *L);
void lower_emit_async_load(lw *L, const tilec_expr *e, const char *dst, int ld, int trans);
/* ... with the chunk's first element at element `at` (C, of tl_i0 and
 * tl_i1) past the shared-memory byte pointer `dst` (C): a swizzled ring's
 * own arrangement; `how`, LOWER_ASYNC_* or 0: */
enum {
    LOWER_ASYNC_ONE = 1, /* a whole or all-masked chunk is one cp.async, its size 16 or 0 (no second branch) */
    LOWER_ASYNC_OWN = 2, /* every element's check at its own index (the FMA loop's [N][K] ring, mask.c) */
};
void lower_emit_async_load_at(lw *L, const tilec_expr *e, const char *dst, const char *at, int trans, int how);
int lower_emit_async_prep(lw *L, const tilec_expr *e, const char *sdst, const char *at, int n);
void lower_emit_async_issue(lw *L, const tilec_expr *e, int n);
/* The pieces of a cp.async ring loop: tl_ix, tl_lo, tl_hi, tl_st; the
 * first stages-1 copies; at the top of an iteration the wait, the barrier
 * and the copies stages-1 iterations ahead. issue(L, ctx, slot) emits one
 * iteration's copies into ring slot `slot` (a C expression). */
typedef void (*lower_issue_fn)(lw *L, const void *ctx, const char *slot);
void lower_cp_bounds(lw *L, const tilec_stmt *loop);
void lower_cp_prologue(lw *L, int S, const char *v, lower_issue_fn issue, const void *ctx);
void lower_cp_advance(lw *L, int S, const char *v, lower_issue_fn issue, const void *ctx);
/* ring.c: a loop whose dots read loaded tiles as B operands, those loads
 * in cp.async rings: 1 if emitted, 0 (nothing emitted) if not. */
int lower_ring_loop(lw *L, const tilec_stmt *loop);
enum { RING_MAX = 8 };
typedef struct ring_op {
    const tilec_stmt *let;   /* let x = load(...) */
    const tilec_stmt *alias; /* let y = trans(x) in the body, read as the dot's B, or NULL */
    int trans;               /* memory contiguous along axis 0: stored [C][R] */
    int ld;                  /* buffer row stride in elements, padded by 8 */
    int64_t bytes;           /* one buffer */
    uint32_t off;            /* the ring's byte offset */
} ring_op;
typedef struct ring_plan {
    ring_op op[RING_MAX];
    int n, S;
    const char *base; /* "" or what the offsets add to (the attention twin's aligned ring, "tl_wro + ") */
    int wg;           /* the attention twin's rings: 128-byte swizzled rows (wgattn.c) */
    int twin;         /* the attention twin takes this loop (its loads' remarks say so) */
} ring_plan;
/* One iteration's copies of every ring into slot `slot` (ctx: the plan). */
void lower_ring_issue(lw *L, const void *ctx, const char *slot);
/* The loop's body with each ring's tile bound to slot tl_it % S. */
void lower_ring_body(lw *L, const tilec_stmt *loop, const ring_plan *rp, int wide);
/* The element offset in shared memory of (row tl_i0, column tl_i1) of a
 * loaded tile (trans: stored [C][R]) in a buffer of row stride ld, or,
 * under L->swz_rows, in 128-byte swizzled rows. */
const char *lower_smem_at(lw *L, int trans, int ld);

/* ---- target.c: the target hooks ----
 *
 * A kernel variant is lowered for one target at a time: the portable
 * target (any sm_80+: the variant's own kernel) or, when the regular pass
 * noted a dot loop it can take, the sm_90a target (the `_tma` twin:
 * wgmma, TMA, warp specialization). The shared files ask the target
 * through this table for the kernel's frame, its dot, load/store and
 * loop strategies and, in the regular pass, the twin decision; they never
 * test which target it is. A NULL hook: the portable code path. */
typedef struct lower_target {
    const char *name; /* "portable", "sm_90a" */
    int split_k;      /* lowers the `split_k` hint (the twin has none) */
    int remarks;      /* this pass records remarks (the twin's passes do not) */
    /* the kernel's frame */
    int (*warps)(const lw *L); /* the block's warps, whatever `warps` says */
    /* threads and min blocks of __launch_bounds__, given the `blocks` hint */
    const char *(*launch_bounds)(lw *L, int64_t blocks);
    const char *(*params)(lw *L);  /* parameters after the kernel's own (tensor maps), or "" */
    const char *(*thread_ids)(lw *L); /* the line declaring tl_tid, tl_lane, tl_warp */
    void (*preamble)(lw *L);       /* after the thread ids */
    /* pid(a) / num_programs(a) (e is the call), or NULL: blockIdx, gridDim */
    const char *(*grid_value)(lw *L, const tilec_expr *e, int axis);
    /* the dot strategy */
    int (*dot_layout)(const lw *L, int64_t M, int64_t N, lay *y); /* an f16/bf16 dot's accumulators; 0: mma.sync's */
    int (*dot_loop)(lw *L, const tilec_stmt *loop);                /* a pipelined dot loop emitted its own way: 1 */
    /* a ring loop emitted its own way: its result, -1 when the target leaves it to ring.c */
    int (*ring_loop)(lw *L, const tilec_stmt *loop, ring_plan *rp);
    /* acc += a @ b with b in a ring: 1 emitted (L->failed when it could not), 0 the portable dot */
    int (*ring_dot)(lw *L, val *acc, const val *ra, const val *rb, int bt, int64_t K, int64_t N, tilec_dtype d);
    /* the store strategy: the statement s (a store of a value in layout y) emitted its own way: 1 */
    int (*store)(lw *L, const tilec_stmt *s, const lay *y);
    /* the twin decision, taken by the regular pass: note what the sm_90a
     * target can take (a pipelined dot loop, a ring loop, the final store) */
    void (*note_dot_loop)(lw *L, const tilec_stmt *loop, const lower_pipe_plan *pp);
    int (*note_ring_loop)(lw *L, const tilec_stmt *loop, const ring_plan *rp);
    void (*note_store)(lw *L, const tilec_stmt *s);
    /* the kernels lowered beside this pass's (fname) for other targets,
     * appended to tu: the sm_90a twin when a loop was noted (meta its
     * launch); -1 only out of memory */
    int (*emit_twins)(lw *R, const char *fname, strbuf *tu, tilec_tma_meta *meta);
} lower_target;

extern const lower_target lower_target_portable; /* the variant's kernel, any sm_80+ */
extern const lower_target lower_target_sm90a;    /* its sm_90a twin */
/* lower.c: one pass over the kernel into L->out as __global__ fname (L
 * set up: its target, context, kernel, variant); its state freed. */
void lower_emit_kernel(lw *L, const char *fname);
void lower_free(lw *L);

/* ---- wgattn.c: the sm_90a twin of a loop of dots on cp.async rings ---- */

/* Regular pass, at a ring loop whose rings are planned: note it for the
 * twin when its dots can run on wgmma; 0 with the reason recorded if not. */
int lower_wga_note(lw *L, const tilec_stmt *loop, const ring_plan *rp);
/* Twin pass: emit the noted loop; 0 for any other loop. */
int lower_wga_loop(lw *L, const tilec_stmt *loop, ring_plan *rp);
/* Twin pass: acc += a @ b on wgmma with a in registers (ra) and b in its
 * swizzled ring (rb, read as B^T when bt); 0 when it cannot (nothing emitted). */
int lower_wga_dot(lw *L, val *acc, const val *ra, const val *rb, int bt, int64_t K, int64_t N, tilec_dtype d);
/* dot.c: the A fragments of k16 step tl_k (mt m16 tiles) of x, a register
 * tile in the accumulator layout, packed to d pairs into to[tl_q] (`to`
 * may name tl_m). */
void lower_frag_a_regs(lw *L, const val *x, int mt, tilec_dtype d, const char *to);
/* Twin pass: the wgmma accumulator layout of an [M, N] dot (N a multiple of 8). */
int lower_wga_layout(const lw *L, int64_t M, int64_t N, lay *y);
/* Append the lowered twin to tu and fill meta (as lower_wg_finish). */
int lower_wga_finish(lw *L, strbuf *tu, tilec_tma_meta *meta, const char *fname);
/* Whether plan w's two consumer warp groups take turns to issue (wgattn.c: the last dot in flight). */
/* Why the persistent attention twin of pass L may not run (its statements' barriers), or NULL. */
int lower_wga_takes_turns(const wg_plan *w);
/* The keys a step (S = Q K^T's columns) from which a twin whose two warp
 * groups take turns walks units (target.c; below it one tile a block, and
 * wgattn.c's remark names the variant that reaches it): at 64
 * (tests/attn_forms' d64 twins, BM = 128, 8 consumer warps) the persistent
 * form ran 5-17% slower than one tile a block on the H200, at 128
 * (examples/attention.tile's chosen d64 variant) 2-9% faster
 * (bench/results/merged_s49.md, session 49's third call). */
enum { WGA_TURNS_WALK_N = 128 };
const char *lower_wga_persist_no(lw *L);

/* ---- wgmma.c: the sm_90a twin ---- */

/* wgmma accumulators for [M, N]: the mma layout of one 16-row warp tile
 * per warp; 0 when the tile is not 64 rows per warp group. */
int lower_wg_layout(const lw *L, int64_t M, int64_t N, lay *y);
/* The most trips of dot loop `loop` a tile (a unit), as the launch can
 * count them from the arguments, into w's kbound, kfrom, kper
 * (tilec_tma_meta): `for k in F .. hi step S`, F >= 0 and S > 0
 * constants, hi bounded above by ceil(P / c) for an integer parameter P
 * and a constant c (P, cdiv(P, c) with F = 0, a minimum or a where of
 * such, a name every definition of which is) runs at most ceil((P - F) /
 * (c S)) trips; a bound that may be below that (a minimum: a causal
 * diagonal) counts only where below_ok. Any other loop: kper 0, not
 * known. The GEMM twins (wgmma.c) and attention's (wgattn.c) share it. */
void lower_wg_trips(lw *L, const tilec_stmt *loop, int below_ok, wg_plan *w);
/* Regular pass: note a pipelined dot loop the twin can run on wgmma. */
void lower_wg_note(lw *L, const tilec_stmt *loop, const lower_pipe_plan *pp);
/* Twin pass: emit the noted loop; 0 for any other loop. */
int lower_wg_loop(lw *L, const tilec_stmt *loop);
/* The twin's program ids in grouped order (tl_pid0, tl_pid1). */
void lower_wg_preamble(lw *L);
/* The twin's extra kernel parameters (its tensor maps). */
const char *lower_wg_params(lw *L);
/* P + R[:, None] * S + C[None, :] masked by R < rows && C < cols: a 2-D
 * tensor map of dt (f16, bf16, f32) with boxes of box_rows x 128 bytes. */
int lower_wg_match(lw *L, const tilec_expr *ptr, const tilec_expr *mask, tilec_dtype dt, int64_t box_rows,
                   tilec_tma_map *m, const tilec_expr **R, const tilec_expr **C, const tilec_expr **Z,
                   const tilec_expr **Ra, const tilec_expr **Ca);
/* load(P + X[:, None] * S + C[None, :], c[:, None] < rows && C[None, :] <
 * cols, 0) of f16 or bf16 where X = c + scalars (c, C unit-stride index
 * tiles): rows of the tensor [?, cols] (row stride S) at T + c, the tap's
 * offset T anything the loop computes; only c is bounded. The map (rows
 * TILEC_TMA_NONE: the kernel proves each box's rows unmasked at run time,
 * first(c) + box rows <= the bound), X, c, the bound's parameter, C;
 * 0 when ld is not of that form (no reason recorded). */
int lower_wg_match_rows(lw *L, const tilec_expr *ld, tilec_tma_map *m, const tilec_expr **X, const tilec_expr **c,
                        int *bound, const tilec_expr **C);
/* ", z": a batched map i's third coordinate; "" for a 2-D map. */
const char *lower_wg_batch(lw *L, const wg_plan *w, int i);
/* The box coordinates (column, row) of map i at its first element. */
void lower_wg_coords(lw *L, const wg_plan *w, int i, const char **col, const char **row);

/* ---- wggather.c: the twin's operands by cp.async (gathered rows) ---- */

/* Regular pass, when an operand is no TMA tile (L->miss says why): may
 * the producer warp group copy both loads of pp by cp.async into the
 * swizzled ring instead? 1 with w set up for it (w->gather), else 0 with
 * the reason appended to the TMA one. */
int lower_wg_gather_note(lw *L, const lower_pipe_plan *pp, wg_plan *w);
/* Twin pass: the producer warp group's loop of a gather twin (S stages). */
void lower_wg_gather_producer(lw *L, const wg_plan *w, const tilec_stmt *loop, const char *v);
/* Is a gather twin's ring all TMA (A's im2col boxes and B's tiles), its producer one thread a step and its
 * full barriers of one arrival (wggather.c)? */
int lower_wg_gather_one(const wg_plan *w);
/* wgim2col.c: is load ld (a gather twin's A, [M, K] f16 or bf16) one box
 * of TMA's im2col mode a step? Its map (kind 2; box_rows M, box_cols left
 * to the caller) into m and the expressions its copy needs into ic; 0 with
 * *why when not. */
int lower_wg_im2col(lw *L, const tilec_expr *ld, tilec_tma_map *m, lower_im2col *ic, const char **why);
/* Before the producer's loop: the coordinates of A's first pixel (tl_an,
 * tl_aw, tl_ah). */
void lower_wg_im2col_pre(lw *L, const wg_plan *w);
/* In a step of the producer's loop: its channel (tl_ac), the tap's
 * offsets (tl_aow, tl_aoh) and tl_at, whether the copy takes them. */
void lower_wg_im2col_step(lw *L, const wg_plan *w);
/* The copies of A's boxes of a step into the ring at slot address `dst`
 * (map tl_tm0), completing on the stage's full barrier. */
void lower_wg_im2col_copy(lw *L, const wg_plan *w, const char *dst);

/* ---- stepdiv.c: step counters for the copies' divisions ---- */

typedef struct lower_stepdiv lower_stepdiv;
/* Before a loop over var (C name tl_lo .. tl_hi step tl_st): counters
 * for the scalar divisions of the loads' pointers and masks by
 * loop-invariant divisors, declared and set to the first step's values;
 * the walker reads them until lower_stepdiv_end (L->stepdiv NULL: none).
 * narrow: 32-bit counters where every divisor has at most 32 bits (the
 * loop variable is int), else 64-bit. */
void lower_stepdiv_begin(lw *L, const char *var, const tilec_expr *const *loads, int n, int narrow);
/* At the top of a step, v the loop variable's C name: the divisions as
 * written when the run-time check refused the counters. */
void lower_stepdiv_step(lw *L, const char *v);
/* At the end of a step: the counters one step on. */
void lower_stepdiv_advance(lw *L);
/* v and the counters opaque to the compiler from here (a rare path's values computed anew) */
void lower_stepdiv_opaque(lw *L, const char *v);
void lower_stepdiv_end(lw *L);
/* The counter that e (a division the counters follow) reads, or NULL. */
const char *lower_stepdiv_ref(lw *L, const tilec_expr *e);
/* 0: e is no division the counters follow; 1: its counter moves every
 * step; 2: only when a quotient of the loop variable moves (the tap). */
int lower_stepdiv_kind(lw *L, const tilec_expr *e);
/* The advance sets tl_tnew: whether the values of the tap move this step (hoist.c's). */
void lower_stepdiv_taps(lw *L);

/* ---- wgstore.c: the twin's epilogue store through TMA ---- */

/* Regular pass, at store statement s: note it when it is the kernel's
 * last statement after the twin's loop and lets, a store the tensor
 * memory accelerator can write (map 2). */
void lower_wg_store_note(lw *L, const tilec_stmt *s);
/* Twin pass: emit store statement s over layout y by TMA; 0: not this one. */
int lower_wg_store(lw *L, const tilec_stmt *s, const lay *y);
/* Append the lowered twin (L->out) to tu and fill meta: 1, or 0 when the
 * twin did not come out (nothing appended), -1 out of memory. */
int lower_wg_finish(lw *L, lw *P, strbuf *tu, tilec_tma_meta *meta, const char *fname);
/* The persistent schedule for w (a ring and a separate store staging): 0
 * when it does not apply. */
int lower_wg_persist(wg_plan *w);
/* A persistent gather twin with B resident (w->bres): `tl_res`, whether
 * this launch keeps it (a tile's steps fit w->bres_cap slots, the grid
 * one tile along w->bres_axes), from tl_lo, tl_hi, tl_st. */
void lower_wg_res_test(lw *L, const wg_plan *w);
/* A persistent twin's store staging past the ring, in bytes (with the
 * barriers of A's resident-mode stages past the ring's S). */
int64_t lower_wg_staging(const wg_plan *w);
/* The barrier pairs of plan w's ring (its S, or A's stages with B
 * resident where more), and their offset from the aligned ring. */
int lower_wg_nbar(const wg_plan *w);
int64_t lower_wg_bar_off(const wg_plan *w);
/* `x op S` for the ring's stage of counter x (op "%" the slot, "/" the
 * round; unparenthesised, x as given): where B resident gives A more
 * stages, `tl_res ? x op SA : x op S`. */
const char *lower_wg_ring_of(lw *L, const wg_plan *w, const char *x, const char *op);
/* B's slots' offset from the aligned ring: past A's S slots, or its
 * resident-mode ones where those are more. */
const char *lower_wg_b_base(lw *L, const wg_plan *w);
/* Bytes of the tile the epilogue stages in shared memory (a TMA store's
 * or vstore's), else 0. */
int64_t lower_wg_store_bytes(const wg_plan *w);
/* The twins' device helpers (mbarriers, TMA, wgmma fences), once per unit. */
const char *lower_wg_helpers(void);
/* tl_wgmma_<t>_n<N>[_bk](acc, descA, descB): wgmma with both operands from shared memory, A K-major (wgmma.c) */
void lower_wg_ss_fn(strbuf *tu, const char *t, int64_t N, int bk);
/* The twin's consumer threads: L's, twice over for two M tiles a block (one warp group each, wgpair.c). */
int lower_wg_consumers(const lw *L);
/* body[from, to) into tu, every __syncthreads() past `epi` the consumers'
 * named barrier 1 of nt threads. */
void lower_wg_add_consumers(strbuf *tu, const char *body, size_t from, size_t epi, size_t to, int nt);
/* tl_pid0..2 of unit tl_u of a persistent twin of one tile a unit (plan w; rev: pid(0) in reverse, order.c), as
 * the GEMM twin's walk orders them (wgmma.c) */
void lower_wg_unit_pids(strbuf *tu, const wg_plan *w, int rev);

/* ---- wgpair.c: two program tiles along N a block of the persistent twin ---- */

/* Regular pass, at the twin's loop (its loads matched, plan w filled but
 * for the store): whether pid(a) = 2j and 2j + 1 may share a block, a the
 * grid axis of B's N index (pid(a) * N + ..., a = 1 or 2, nothing else
 * reading pid(a) before the epilogue); sets w->pair_ok, w->pax and its
 * stages, or says why not in w->how. */
void lower_wg_pair_note(lw *L, const tilec_stmt *loop, const char *acc, wg_plan *w);
/* Is e (NULL: yes) the same for every pid(ax), through the lets before
 * `loop` and in its body? 0 where it may read pid(ax) or a name this
 * cannot follow. */
int lower_wg_pid_free(lw *L, const tilec_expr *e, const tilec_stmt *loop, int ax);
/* The N of the twin's loop (its wgmma, B's boxes): 2N when paired. */
int64_t lower_wg_n(const wg_plan *w);
/* The paired consumers' second accumulator, zeroed (before the loop). */
void lower_wg_pair_acc(lw *L, const char *acc);
/* The consumers' epilogue text of a paired tile (C's [tw.epi, tw.end),
 * once per program tile, the second after the lets again at pid(pax) + 1
 * with the second accumulator) into tu. */
void lower_wg_pair_epilogue(strbuf *tu, const lw *C);
/* The opening of the block that runs a pair's second N tile at pid(a) + 1
 * when the program's grid has it (tl_pid<a> shadowed; the caller closes
 * it with two braces): its lines into out, each after ind, the comment
 * naming `what` (the epilogue, wgpair.c; the early loads, wgmma.c). */
void lower_wg_pair_open(strbuf *out, const char *ind, int a, const char *what);
/* Whether a pair's early tile v is copied (early_pair, wgmma.c, to NAME_n1; lower_wg_pair_epilogue
 * back) as E / 2 32-bit words (1: 2-byte elements, even in number) rather than E elements (0). A 2-byte
 * element copied alone splits its half out of the word its load wrote, and ptxas did so before the
 * loop, waiting there on every early load. */
int lower_wg_early_words(const val *v);
/* the copy loop of an early tile v from src to dst (register arrays), in words where
 * lower_wg_early_words says so, each line after ind */
void lower_wg_early_copy(strbuf *out, const char *ind, const val *v, const char *dst, const char *src);
/* Two M tiles a block (BM = 64, the `warps` hint two warp groups or more, N tiles not paired): the remark's
 * words, and w->mpair_ok; NULL where it does not apply at all. */
const char *lower_wg_mpair_note(lw *L, const tilec_stmt *loop, const char *acc, wg_plan *w);
/* The statements after the loop once per warp group of a two-M-tile twin: pid(0) + tl_g, the lets again,
 * its own named barrier, into tu (persist_body, wgmma.c). */
void lower_wg_mpair_epilogue(strbuf *tu, const lw *C);
/* Does the consumers' pass C of a two-M-tile twin allocate no shared memory but its ring block (the
 * statements after the loop, run by both warp groups at once, would share it)? */
int lower_wg_mpair_alone(const lw *C);
/* The stages of plan w's ring at stage_bytes a stage. */
int lower_wg_ring_stages(const wg_plan *w, int64_t stage_bytes);
/* The shared memory of a twin's ring block, the one count the plans and
 * the allocation (lower_wg_loop, lower_wga_loop) share: S stages of
 * stage_bytes, `staging` bytes past them (a persistent twin's stored
 * tile), a full and an empty mbarrier a stage and the 1024 bytes the
 * ring's alignment may skip. */
int64_t lower_wg_block(int S, int64_t stage_bytes, int64_t staging);
/* The most stages, at most S, whose ring block beside the w->other bytes
 * the rest of the twin takes fits a block's shared memory (SMEM_LIMIT);
 * under 2 when not even two do. */
int lower_wg_fit(const wg_plan *w, int S, int64_t stage_bytes, int64_t staging);
/* The bytes of shared memory a lowered twin L took besides the ring block
 * of its plan, when its passes asked for more than a block may have (the
 * room its stages must leave), else -1. */
int64_t lower_wg_over(const lw *L);
/* The bytes of shared memory a lowered twin L took besides the ring block
 * of its plan, within a block's limit or past it; -1 where L has no twin
 * (lower/target.c: what a plan made with room for more than that gets
 * back). */
int64_t lower_wg_rest(const lw *L);
/* One-tile plan w (wgattn.c's too) with room for `other` bytes beside
 * its ring block: fewer stages; 0 when fewer than two, or too few for
 * the stored tile the ring stages, fit. */
int lower_wg_one_replan(wg_plan *w, int64_t other);
/* May a paired plan (wgpair.c) run S stages: as many and as deep in K as
 * the pair needs to pay. */
int lower_wg_pair_deep(const wg_plan *w, int S);

/* ---- splitk.c: split-K (the `split_k` hint) ---- */

/* Read the hint and check the kernel's shape (one dot loop, at the top of
 * the body, a zeros accumulator, no memory written before it); sets
 * L->split and L->split_loop, or fails with the reason. */
void lower_split_begin(lw *L);
/* The hidden parameters (workspace and counters), or "". */
const char *lower_split_params(const lw *L);
/* tl_slice: the block's K slice. */
void lower_split_preamble(lw *L);
/* 0 (and the lowering failed) when `loop` is the one to split and is not
 * pipelined (ok == 0). */
int lower_split_check_loop(lw *L, const tilec_stmt *loop, int ok);
/* After tl_lo0, tl_hi0, tl_st: this slice's tl_lo, tl_hi. */
void lower_split_bounds(lw *L);
/* After the loop: partials out, the last block adds them into acc. */
void lower_split_reduce(lw *L, const val *acc);

/* ---- index64.c: the width of index arithmetic ---- */

/* Decide which i32 expressions of the variant are computed in 64 bits and
 * write the kernel's comment saying so; lower_ty reports them as i64. */
void lower_index_widths(lw *L);
const tilec_type *lower_ix_type(const lw *L, const tilec_expr *e);
int lower_ix_wide_name(const lw *L, const char *name); /* assigned a 64-bit value somewhere */
/* The loop's variable, of 64 bits when wide, is proven not to wrap past
 * its last trip (hi - 1 + step fits, step > 0). */
int lower_ix_loop_safe(const lw *L, const tilec_stmt *s, int wide);
/* The advance of loop s's variable v in its header (stmt.c), toward hi by
 * st (mult loop steps at once): `v += st` where index64.c proves it cannot
 * wrap, else a step taken only while v + st stays below hi (docs/lowering.md,
 * "Loop headers"). */
/* A loop whose start or end is a typed i64, u64 or u32 (which i32 does not
 * hold) counts in long long (docs/language.md, "for"); int otherwise. */
int lower_loop_wide(lw *L, const tilec_stmt *s);
const char *lower_loop_next(lw *L, const tilec_stmt *s, const char *v, const char *hi, const char *st, int mult);

/* ---- prelude.c ---- */

extern const char lower_half_headers[];
extern const char lower_prelude[];
int lower_needs_half(const char *src);
/* The oldest architecture the lowered body `body` of file `file` runs on:
 * out's min_sm, min_sm_why and min_sm_line (the .tile line of the first
 * use of the newest feature), from the helpers and instructions it uses. */
void lower_min_sm(const char *body, const char *file, tilec_kernel_code *out);

#pragma GCC visibility pop

/* grid.c: an integer expression over a kernel's scalar parameters
 * (args[i] for parameter i) and variant `variant`'s hints, by the one
 * evaluator (tilec/iexpr.h), as the grid is; 0 with *out set, else -1 (the
 * tuning pass's dot loop lengths, lower/tune.c). */
int lower_kernel_ix_eval(const tilec_kernel *k, int variant, const int64_t *args, const tilec_ix *e, int64_t *out);

#endif
