/* fake_cuda.h: what the fake CUDA driver (fake_cuda.c, built as
 * libfakecuda.so beside the test binaries) records for the tests to read.
 * The runtime loads it with tilec_rt_open_driver(); the test dlopens the
 * same file and calls fake_cuda_state() to see the recorded calls. */
#ifndef TILEC_TESTS_FAKE_CUDA_H
#define TILEC_TESTS_FAKE_CUDA_H

/* FAKE_CUDA_DEVICE_NAME and FAKE_CUDA_DRIVER_VERSION (e.g. 12090) stand for
 * another device model or driver (default "Fake CUDA Device", 12080).
 * Its behaviour is chosen by the environment variable FAKE_CUDA_MODE:
 *   unset   one sm_90 device, "Fake CUDA Device", memory in host memory
 *   nodevice   cuInit returns CUDA_ERROR_NO_DEVICE
 *   zero       cuInit succeeds, cuDeviceGetCount says 0
 *   initfail   cuInit returns CUDA_ERROR_UNKNOWN
 *   nolaunch   cuGetProcAddress does not know cuLaunchKernel
 *   noparaminfo  nor cuFuncGetParamInfo (a driver before 12.4)
 *   notma      nor cuTensorMapEncodeTiled
 *   noim2col   nor cuTensorMapEncodeIm2col
 *   nographs   nor cuGraphLaunch (CUDA graphs unavailable)
 *   nocapture  cuStreamBeginCapture fails
 *   noupdate   cuGetProcAddress does not know cuGraphExecUpdate
 * Stream capture records the launches made on the capturing stream (they
 * do not run); cuGraphLaunch runs the recorded launches in order;
 * cuGraphExecUpdate takes a graph of the same launches (kernels or
 * memsets, in order) and refuses any other (CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE).
 * Kernels it knows (any image loads, except text starting "BADIMAGE"):
 *   scale2(ptr x, ptr y, i32 n): y[i] = 2 * x[i] on the host, for real
 *     (also as scale2_v0, the name lowering gives a .tile kernel scale2)
 *   args7(ptr, i32, i64, f32, f64, u32, u64): records its argument bytes
 *   fail_launch(): the launch returns CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
 *   trap(): launches, then "faults": from then on launches, cuCtxSynchronize
 *     cuMemcpyDtoH and cuDevicePrimaryCtxRetain return
 *     CUDA_ERROR_LAUNCH_FAILED, for the rest of the process, as on a GPU
 *   heavy(ptr): at most 256 threads per block
 *   static_smem(): 40 KiB of static shared memory
 *   mk_v0, mk_v1, mk_v2 (ptr x, ptr y, i32 n): as scale2; the variants of
 *     the multi-kernel test (tests/test_multikernel.c). Each launch counts in
 *     mk_launches[v] and, when fake_clock is set, advances the clock that
 *     events record by mk_ms[v] (times 1 + mk_drift per earlier mk launch),
 *     so that the test picks the fastest.
 *   sk_v0(ptr x, i32 n, ptr part, ptr cnt): a split-K kernel's launch (its
 *     own two parameters and the runtime's hidden two), see split_* below
 *   lscale_v0(list x, list y, f32 s): tensor lists, see list_* below
 *   tilec_fill_u64(ptr dst, u64 value, u64 n): the runtime's fill kernel,
 *     run for real on the host; counted in fill_launches
 * cuMemsetD8/D16/D32Async fill for real (counted in memsets; one of at least
 * the L2's bytes, an L2 flush, is counted and not written, and before an
 * mk_v* launch counts it in mk_flushed) or, on a
 * capturing stream, are recorded (captured_memsets) and run at replay.
 *   tw_v0(ptr a, ptr b, ptr c, i32 M, i32 N, i32 K) and its sm_90a twin
 *     tw_v0_tma(the same, three CUtensorMaps: A, B and the stored C, the
 *     program's grid x, y, z): nothing computed; launches of
 *     the twin count in tma_launches (those of its one-tile twin
 *     tw_v0_tma_1, lower/wgpair.c, in tma_one_launches too), with its maps' first words in
 *     tma_args and the grid in tma_grid (tests/test_tma.c). cuTensorMapEncodeTiled records each map
 *     it makes in tma_maps (its first word is the map's base) and counts
 *     them in tma_encodes.
 *   uw_v0(ptr a, ptr b, ptr c, i32 M, i32 N, i32 K, u64 KB) and its twins
 *     uw_v0_tma, uw_v0_tma_1: tw's with its loop's bound KB; a launch of a
 *     twin counts in tma_launches.
 *   cv_v0(ptr x, ptr w, ptr y, i32 N, H, W, C, K, stride, pad) and its
 *     twin cv_v0_tma (the same, x's im2col map): nothing computed; a launch
 *     of the twin (or of its one-tile twin cv_v0_tma_1, lower/target.c,
 *     in tma_one_launches too) counts in tma_launches, its map's first word in
 *     tma_args[0]. cuTensorMapEncodeIm2col records its last map's
 *     arguments in im2col and counts them in im2col_encodes. */

#define FAKE_CUDA_OPTIN_SMEM 232448 /* the H100's opt-in limit per block */
#define FAKE_CUDA_L2 (50u << 20)     /* the H100's L2 */

typedef struct fake_cuda_state {
    int inits;                      /* cuInit calls */
    int min_version_asked;          /* smallest cudaVersion given to cuGetProcAddress */
    int ctx_refs;                   /* primary context retains minus releases */
    int live_allocs, live_streams, live_events, live_modules;
    int dyn_smem_attr;              /* last MAX_DYNAMIC_SHARED_SIZE_BYTES set, or -1 */
    int launches;                   /* successful launches */
    unsigned grid[3], block[3], smem;
    void *stream;
    unsigned char args[8][8];       /* args7's arguments, each as many bytes as its parameter */
    /* the multi-kernel test */
    int event_records;              /* cuEventRecord calls */
    int fake_clock;                 /* 1: events read a clock only mk_v* launches advance */
    double clock_ms;                /* that clock */
    float mk_ms[3];                 /* what one launch of mk_v<i> takes on it */
    float mk_drift;                 /* and each launch takes this fraction longer than the one before
                                       (a GPU whose clock falls as it warms up) */
    int mk_launches[3];             /* launches of mk_v<i> */
    int mk_flushed;                 /* mk_v* launches after a memset of at least FAKE_CUDA_L2 bytes (since the last) */
    int l2_cleared;                 /* such a memset ran since the last mk_v* launch */
    unsigned long long out_watch;   /* a device pointer: */
    int out_watch_hits;             /* mk_v* launches whose y is out_watch */
    int fail_allocs;                /* the next this many cuMemAlloc calls run out of memory */
    unsigned long long fail_allocs_over; /* and any of more bytes than this (0: none) */
    int lost;                       /* a trap kernel ran: the context is lost */
    int live_graphs, live_graph_execs; /* CUgraph and CUgraphExec objects alive */
    int captured_launches;          /* launches recorded by a stream capture */
    int graph_launches;             /* cuGraphLaunch calls */
    int graph_updates;              /* cuGraphExecUpdate calls that updated (same launches and kernels) */
    int memsets, captured_memsets;  /* D8/D16/D32 async memsets run, and recorded by a capture */
    int fill_launches;              /* launches of the fill kernel tilec_fill_u64 */
    /* the sm_90a twin test */
    int tma_launches, tma_encodes, tma_one_launches;
    unsigned long long tma_args[3]; /* first word of each map tw_v0_tma got */
    int tma_grid[3];                /* and the program's grid after them (a persistent twin) */
    int per_sm;                     /* what cuOccupancyMaxActiveBlocksPerMultiprocessor answers (0: 1) */
    struct {
        unsigned long long base, dims[3], stride, bstride; /* dims[2], bstride: a 3-D (batched) map's */
        unsigned rank, box[2], dtype, swizzle;
    } tma_maps[3];                  /* the last three maps made */
    int im2col_encodes;
    struct {
        unsigned long long base, dims[4], strides[3];
        int lower[2], upper[2];
        unsigned cpp, ppc, estr[4], dtype, swizzle, fill;
    } im2col;                       /* the last im2col map made */
    /* split-K (tests/test_runtime.c): sk_v0(ptr x, i32 n, ptr part, ptr cnt)
     * records its two hidden pointers and whether cnt's first 64 words
     * were all zero; cuMemAlloc counts the calls made while a stream
     * captures (a real driver refuses them in thread-local mode) */
    unsigned long long split_part, split_cnt;
    int split_launches, split_dirty, allocs_in_capture;
    /* tensor lists: lscale_v0(list x, list y, f32 s), each list a table of
     * 126 tensors (tilec/param_kind.h): y[t][j] = s * x[t][j] for the
     * table's count of tensors; each launch's count in list_n (a ring of 8) */
    int list_launches;
    int list_n[8];
} fake_cuda_state;

fake_cuda_state *fake_cuda_state_get(void);
void fake_cuda_clear_current(void); /* no context current, as in a new thread */

#endif
