"""Collectives through tilec on several GPUs (issue 32 step 5), one process
per GPU (torch.multiprocessing), world 2 and 4 where the machine has them.

Each rank joins two communicators over the same GPUs: tilec's (rank 0 makes
tilec.Comm.unique_id() and hands it to the others through a
torch.multiprocessing queue) and torch.distributed's (NCCL, the same
ranks). Checks, one line each:
  - every collective through a generated Python wrapper (all_reduce with
    sum, prod, max, min and avg; all_gather and reduce_scatter on axis 0
    and 1; broadcast from the last rank) against torch.distributed's
    result, on ragged sizes and every dtype both have (f16, bf16, f32, f64,
    i8, u8, i32, i64), each rank with its own data;
  - examples/tp_mlp.tile: tp_mlp (tensor-parallel) and tp_mlp_sp
    (sequence-parallel), each rank holding its slice of the weights,
    against the whole block on one GPU in torch (gelu(x w1, tanh) w2);
  - overlap: tp_mlp_ov (two halves of the tokens, the first half's
    all_reduce on the communication stream while the second half computes)
    against torch, and identical, bit for bit, to the same call with
    overlap off (Comm.set_overlap(False): each wait right after its
    collective), on random data each time;
  - tilec.Comm.from_torch(): a communicator from the torch.distributed
    process group (NCCL backend), its rank and world, an all_reduce and
    tp_mlp on it against torch.
A summary line ends it; exit status 1 when a check failed. With fewer than
2 GPUs (or no torch) it prints one line saying so and exits 0.

NCCL: libtilec loads the libnccl.so.2 that torch's nvidia-nccl wheel
ships (nvidia/nccl/lib; $TILEC_NCCL wins when set), the same file torch
uses, so both communicators are on one NCCL.

--bench: the TP MLP block (hidden 8192, 4x expansion, tokens 8192, f16)
on 1 GPU vs 2 (and 4); tp_mlp_ov (the same 8192 tokens as two halves of
4096, the first half's all_reduce overlapping the second half's GEMMs) and
tp_mlp_ov4 (four quarters: three all_reduces overlapped, a quarter left
exposed) with overlap on and off. The variants of one world are timed in
turn within each repetition (a drift of clocks or temperature over the run
then touches all alike), CUDA events around one call with L2 flushed (a
256 MiB write) before it, the median of 15, the slowest rank's median.
all_reduce bus bandwidth, 1 MiB to 256 MiB f16, tilec against
torch.distributed.all_reduce on the SAME communicator (tilec.Comm.from_torch
(share=True) adopts the process group's ncclComm_t; the table's header says
when torch would not hand it out and a second communicator was used) and
through tilec's own communicator: back-to-back launches between two CUDA
events (2 to 50 a block, about 100 MiB of data), after a barrier, the median
of 15 blocks, tilec and torch in turn; bus bandwidth as nccl-tests defines
it, bytes * 2 (n - 1) / n / time (GB/s = 1e9 B/s). Both run on the
caller's stream (torch 2.8+ runs a synchronous collective on the current
stream; tilec's collective with nothing to overlap does too); tilec's is
out of place (its result is a new tensor), torch's in place.
The trace: one call of tp_mlp_ov (overlap on), outside the timed loops,
with CUDA events at the start and end of every GEMM and collective (the
graph's extern steps, called through a registry that records them; the
GELU kernels are the spans between), on the graph's stream and on the
communication stream (tilec.Comm.stream): per op start and end in us from
the call's start, and the time both streams were busy. With nsys on PATH
the trace is also run under `nsys profile` and nsys's cuda_gpu_trace CSV
kept. --out DIR writes bench.json, trace.json and trace.md there.

On the multi-GPU machine (device kinds nvidia-h100-x2 / -x4), from the
repository root after `make gpu-bundle` (docs/runtime.md, "Collectives"):

    export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
    TILEC_LIB=$PWD/.gpu/lib/libtilec.so TILEC_BIN=$PWD/.gpu/bin/tilec \\
      TILEC_COMPILE_WORKER=$PWD/.gpu/bin/tilec python3 tests/python/test_gpu_nccl.py [--bench] [--world N]

In a built tree the defaults (build/lib, build/bin/tilec) need none of the
variables."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import traceback

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
TILEC = os.environ.get("TILEC_BIN", os.path.join(ROOT, "build", "bin", "tilec"))

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    GPUS = torch.cuda.device_count()
except ImportError:
    torch = None
    GPUS = 0

# the dtypes NCCL and torch.distributed share: tile name, torch name, floating?
DTYPES = (("f16", "float16", 1), ("bf16", "bfloat16", 1), ("f32", "float32", 1), ("f64", "float64", 1),
          ("i8", "int8", 0), ("u8", "uint8", 0), ("i32", "int32", 0), ("i64", "int64", 0))
OPS = ("sum", "prod", "max", "min", "avg")
SIZES = ((1, 1), (7, 3), (129, 5), (1000, 33))  # ragged (rows, columns); reduce_scatter takes world * rows


def nccl_library():
    """The libnccl.so.2 torch uses: $TILEC_NCCL, else the nvidia-nccl wheel's,
    else the loader's search (libnccl.so.2)."""
    if os.environ.get("TILEC_NCCL"):
        return os.environ["TILEC_NCCL"]
    try:
        import nvidia.nccl
        for d in list(getattr(nvidia.nccl, "__path__", [])) or [os.path.dirname(nvidia.nccl.__file__)]:
            p = os.path.join(d, "lib", "libnccl.so.2")
            if os.path.exists(p):
                return p
    except ImportError:
        pass
    return "libnccl.so.2"


def nccl_version():
    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def coll_source():
    """One graph per collective, operation or axis, and dtype."""
    out = []
    for dt, _, flt in DTYPES:
        for op in OPS:
            if op != "avg" or flt:
                out.append(f"graph ar_{op}_{dt}(x: {dt}[N, C]) -> {dt}[N, C] {{\n"
                           f"    let y = all_reduce(x, {op});\n    return y;\n}}\n")
        out.append(f"graph ag0_{dt}(x: {dt}[N, C]) -> {dt}[N * world, C] {{\n"
                   f"    let y = all_gather(x, 0);\n    return y;\n}}\n")
        out.append(f"graph ag1_{dt}(x: {dt}[N, C]) -> {dt}[N, C * world] {{\n"
                   f"    let y = all_gather(x, 1);\n    return y;\n}}\n")
        out.append(f"graph rs0_{dt}(x: {dt}[N, C]) -> {dt}[(N) / (world), C] {{\n"
                   f"    let y = reduce_scatter(x, sum, 0);\n    return y;\n}}\n")
        out.append(f"graph rs1_{dt}(x: {dt}[N, C]) -> {dt}[N, (C) / (world)] {{\n"
                   f"    let y = reduce_scatter(x, max, 1);\n    return y;\n}}\n")
        out.append(f"graph bc_{dt}(x: {dt}[N, C]) -> {dt}[N, C] {{\n"
                   f"    let y = broadcast(x, ROOT);\n    return y;\n}}\n")
    # the benchmark's all_reduce on the shared communicator (ar_sum_f16 keeps tilec's own)
    out.append("graph ar_shared_f16(x: f16[N, C]) -> f16[N, C] {\n    let y = all_reduce(x, sum);\n    return y;\n}\n")
    return "".join(out)


def chunked_mlp_source(k):
    """tp_mlp on k chunks of the tokens (x0 .. x{k-1}): chunk i's all_reduce
    runs on the communication stream while chunk i + 1 computes; the last
    one's is left exposed (tp_mlp_ov is k = 2)."""
    xs = ", ".join(f"x{i}: f16[T, H]" for i in range(k))
    ys = ", ".join(f"y{i}: f16[T, H]" for i in range(k))
    body = "".join(f"    let h{i} = tp_hgemm(x{i}, w1);\n    let a{i} = empty(f16, [T, F]);\n"
                   f"    gelu_f16(h{i}, a{i}, T * F);\n    let p{i} = tp_hgemm(a{i}, w2);\n"
                   f"    let y{i} = all_reduce(p{i}, sum);\n" for i in range(k))
    rets = ", ".join(f"y{i}" for i in range(k))
    return (f"graph tp_mlp_ov{k}({xs}, w1: f16[H, F], w2: f16[F, H]) -> ({ys}) {{\n{body}"
            f"    return {rets};\n}}\n")


def emit(tile, out):
    subprocess.run([TILEC, tile, "--emit", "py", "-o", out], check=True)
    sys.path.insert(0, out)


def rank_data(shape, dt, rank, seed):
    g = torch.Generator(device="cuda").manual_seed(seed * 97 + rank)
    t = getattr(torch, dt)
    if t.is_floating_point:
        return (torch.rand(shape, device="cuda", generator=g) + 0.5).to(t)  # prod stays in range
    return torch.randint(1, 3, shape, device="cuda", generator=g).to(t)


def torch_collective(kind, op, x, world, root):
    """torch.distributed's result for one of coll_source's graphs."""
    if kind == "ar":
        y = x.clone()
        dist.all_reduce(y, op=getattr(dist.ReduceOp, {"prod": "PRODUCT"}.get(op, op.upper())))  # torch spells prod PRODUCT
        return y
    if kind in ("ag0", "ag1"):
        parts = [torch.empty_like(x) for _ in range(world)]
        dist.all_gather(parts, x)
        return torch.cat(parts, 0 if kind == "ag0" else 1)
    if kind in ("rs0", "rs1"):
        parts = [p.contiguous() for p in x.chunk(world, 0 if kind == "rs0" else 1)]
        y = torch.empty_like(parts[0])
        dist.reduce_scatter(y, parts, op=dist.ReduceOp.SUM if kind == "rs0" else dist.ReduceOp.MAX)
        return y
    y = x.clone()
    dist.broadcast(y, src=root)
    return y


def report(rank, results, name, ok, detail=""):
    results.append(ok)
    if rank == 0:
        print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)


def check_collectives(rank, world, comm, results):
    import importlib
    for dt, tname, flt in DTYPES:
        graphs = [("ar", op) for op in OPS if op != "avg" or flt] + [(k, None) for k in ("ag0", "ag1", "rs0", "rs1", "bc")]
        for kind, op in graphs:
            name = f"{kind}_{op}_{dt}" if op else f"{kind}_{dt}"
            mod = importlib.import_module(name)
            mod.set_comm(comm)
            bad = []
            for i, (n, c) in enumerate(SIZES):
                shape = (n * world, c) if kind == "rs0" else (n, c * world) if kind == "rs1" else (n, c)
                x = rank_data(shape, tname, rank, i)
                try:
                    got = mod.call(x)
                    torch.cuda.synchronize()
                    want = torch_collective(kind, op, x, world, world - 1)
                    if got.shape != want.shape or got.dtype != want.dtype:
                        bad.append(f"{shape}: {tuple(got.shape)} {got.dtype}, torch {tuple(want.shape)} {want.dtype}")
                    elif flt:
                        torch.testing.assert_close(got, want, rtol=1e-2 if dt in ("f16", "bf16") else 1e-5, atol=1e-3)
                    elif not torch.equal(got, want):
                        bad.append(f"{shape}: differs from torch at {(got != want).nonzero()[0].tolist()}")
                except Exception as e:  # noqa: BLE001 (one line per check, go on)
                    bad.append(f"{shape}: {type(e).__name__}: {str(e).splitlines()[0]}")
            flags = torch.tensor([len(bad)], device="cuda")
            dist.all_reduce(flags)  # a failure on any rank fails the check
            report(rank, results, f"world {world} {name} {len(SIZES)} sizes", flags.item() == 0 and not bad,
                   "; ".join(bad) or ("failed on another rank" if flags.item() else ""))


def mlp_reference(x, w1, w2):
    return torch.nn.functional.gelu(x @ w1, approximate="tanh") @ w2


def mlp_weights(h, f, seed=7):
    g = torch.Generator(device="cuda").manual_seed(seed)  # the same weights on every rank
    w1 = (torch.randn(h, f, device="cuda", generator=g) / h ** 0.5).half()
    w2 = (torch.randn(f, h, device="cuda", generator=g) / f ** 0.5).half()
    return w1, w2


def shard(w1, w2, rank, world):
    """This rank's columns of w1 and rows of w2 (Megatron's split)."""
    part = w1.shape[1] // world
    return w1[:, rank * part:(rank + 1) * part].contiguous(), w2[rank * part:(rank + 1) * part].contiguous()


def mlp_error(y, ref):
    """max |y - ref|, and whether it is within the f16 tolerance of these checks."""
    err = (y.float() - ref.float()).abs().max().item()
    return err, y.shape == ref.shape and err <= 2e-2 * max(1.0, ref.float().abs().max().item())


def agree(rank, results, name, ok, detail):
    """One line for a check that fails when it failed on any rank."""
    flags = torch.tensor([0 if ok else 1], device="cuda")
    dist.all_reduce(flags)
    report(rank, results, name, flags.item() == 0, detail or ("failed on another rank" if flags.item() else ""))


def check_mlp(rank, world, comm, results):
    import tp_mlp
    import tp_mlp_sp
    h, t = 256, 64 * world
    f = 4 * h
    w1, w2 = mlp_weights(h, f)
    g = torch.Generator(device="cuda").manual_seed(11)
    x = torch.randn(t, h, device="cuda", generator=g).half()
    want = mlp_reference(x, w1, w2)
    w1r, w2r = shard(w1, w2, rank, world)
    for mod, xin, ref in ((tp_mlp, x, want),
                          (tp_mlp_sp, x[rank * (t // world):(rank + 1) * (t // world)].contiguous(),
                           want[rank * (t // world):(rank + 1) * (t // world)])):
        mod.set_comm(comm)
        detail = ""
        try:
            y = mod.call(xin, w1r, w2r)
            torch.cuda.synchronize()
            err, ok = mlp_error(y, ref)
            detail = f"T={t} H={h} F={f}/{world}: max |y - torch| = {err:.3g}"
        except Exception as e:  # noqa: BLE001
            ok, detail = False, f"{type(e).__name__}: {str(e).splitlines()[0]}"
        agree(rank, results, f"world {world} {mod.__name__} vs one-GPU torch", ok, detail)


def check_overlap(rank, world, comm, results):
    """tp_mlp_ov: y0's all_reduce overlaps the second half's GEMMs. Against
    torch, and bit for bit against the same call with overlap off."""
    import tp_mlp_ov
    h, t = 512, 256
    f = 4 * h
    w1, w2 = mlp_weights(h, f, seed=5)
    w1r, w2r = shard(w1, w2, rank, world)
    tp_mlp_ov.set_comm(comm)
    detail, ok = "", True
    try:
        for it in range(3):
            g = torch.Generator(device="cuda").manual_seed(100 + it)  # the same tokens on every rank
            x0 = torch.randn(t, h, device="cuda", generator=g).half()
            x1 = torch.randn(t, h, device="cuda", generator=g).half()
            comm.set_overlap(True)
            y0, y1 = tp_mlp_ov.call(x0, x1, w1r, w2r)
            comm.set_overlap(False)
            s0, s1 = tp_mlp_ov.call(x0, x1, w1r, w2r)
            comm.set_overlap(True)
            torch.cuda.synchronize()
            (e0, ok0), (e1, ok1) = mlp_error(y0, mlp_reference(x0, w1, w2)), mlp_error(y1, mlp_reference(x1, w1, w2))
            same = torch.equal(y0, s0) and torch.equal(y1, s1)
            ok = ok and same and ok0 and ok1
            detail = f"T=2x{t} H={h} F={f}/{world}: max |y - torch| = {max(e0, e1):.3g}, overlap on == off: {same}"
    except Exception as e:  # noqa: BLE001
        ok, detail = False, f"{type(e).__name__}: {str(e).splitlines()[0]}"
    agree(rank, results, f"world {world} tp_mlp_ov (overlap) vs torch and vs overlap off", ok, detail)


def check_from_torch(rank, world, lib, results):
    """tilec.Comm.from_torch(): the default process group's communicator."""
    import tilec
    import ar_sum_f32
    import tp_mlp
    detail, ok = "", True
    try:
        comm = tilec.Comm.from_torch(library=lib)
        ok = (comm.rank, comm.world) == (rank, world)
        detail = f"rank {comm.rank} of {comm.world}"
        ar_sum_f32.set_comm(comm)
        x = rank_data((129, 5), "float32", rank, 3)
        got = ar_sum_f32.call(x)
        want = torch_collective("ar", "sum", x, world, 0)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-3)
        tp_mlp.set_comm(comm)
        h, t = 256, 64
        w1, w2 = mlp_weights(h, 4 * h)
        xin = torch.randn(t, h, device="cuda", generator=torch.Generator(device="cuda").manual_seed(2)).half()
        err, good = mlp_error(tp_mlp.call(xin, *shard(w1, w2, rank, world)), mlp_reference(xin, w1, w2))
        ok = ok and good
        detail += f"; all_reduce f32 as torch's; tp_mlp max |y - torch| = {err:.3g}"
    except Exception as e:  # noqa: BLE001
        ok, detail = False, f"{type(e).__name__}: {str(e).splitlines()[0]}"
    agree(rank, results, f"world {world} tilec.Comm.from_torch (the default group)", ok, detail)
    import ar_shared_f16
    detail, ok = "", True
    try:
        comm = tilec.Comm.from_torch(library=lib, share=True)
        ok = (comm.rank, comm.world) == (rank, world)
        detail = (f"rank {comm.rank} of {comm.world}, "
                  + ("the group's own communicator" if comm.shared else f"a new communicator: {comm.share_note}"))
        ar_shared_f16.set_comm(comm)
        for i, (n, c) in enumerate(SIZES):
            x = rank_data((n, c), "float16", rank, 20 + i)
            got = ar_shared_f16.call(x)
            want = torch_collective("ar", "sum", x, world, 0)  # torch's, on the same communicator when shared
            torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-3)
        detail += "; all_reduce f16 as torch's, interleaved with torch's on it"
    except Exception as e:  # noqa: BLE001
        ok, detail = False, f"{type(e).__name__}: {str(e).splitlines()[0]}"
    agree(rank, results, f"world {world} tilec.Comm.from_torch(share=True)", ok, detail)


def interleaved(fns, reps, flush=None, iters=1, barrier=False):
    """{name: median ms per call}: each of `reps` repetitions times every fn
    in turn (a drift of clocks or temperature over the run touches all
    alike): `iters` back-to-back calls between two CUDA events, L2 flushed
    (flush zeroed) before the first event, after a barrier when asked (the
    ranks then start a block together)."""
    ts = {k: [] for k in fns}
    for _ in range(reps):
        for k, fn in fns.items():
            if flush is not None:
                flush.zero_()
            if barrier:
                dist.barrier()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(iters):
                fn()
            b.record()
            b.synchronize()
            ts[k].append(a.elapsed_time(b) / iters)
    return {k: statistics.median(v) for k, v in ts.items()}


def slowest(ms):
    t = torch.tensor([ms], device="cuda", dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


AR_MIB = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def bench(rank, world, comm, shared, rows, extra, reps=15, timing=True):
    import ar_shared_f16
    import ar_sum_f16
    import tp_mlp
    import tp_mlp_ov
    import tp_mlp_ov4
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    h, t = 8192, 8192
    f = 4 * h // world
    g = torch.Generator(device="cuda").manual_seed(rank)
    x = torch.randn(t, h, device="cuda", generator=g).half()
    w1 = (torch.randn(h, f, device="cuda", generator=g) / h ** 0.5).half()
    w2 = (torch.randn(f, h, device="cuda", generator=g) / f ** 0.5).half()
    for mod in (tp_mlp, tp_mlp_ov, tp_mlp_ov4):
        mod.set_comm(comm)
    halves = [x[i * t // 2:(i + 1) * t // 2].contiguous() for i in range(2)]
    quarters = [x[i * t // 4:(i + 1) * t // 4].contiguous() for i in range(4)]

    def overlap(on, fn):
        def run():
            comm.set_overlap(on)
            fn()
            comm.set_overlap(True)
        return run
    fns = {"tp_mlp T=8192 H=8192 F=4H f16": lambda: tp_mlp.call(x, w1, w2)}
    for on in (True, False):
        fns[f"tp_mlp_ov 2x4096 overlap {'on' if on else 'off'}"] = overlap(on, lambda: tp_mlp_ov.call(*halves, w1, w2))
        fns[f"tp_mlp_ov4 4x2048 overlap {'on' if on else 'off'}"] = overlap(
            on, lambda: tp_mlp_ov4.call(*quarters, w1, w2))
    if world == 1:
        fns["torch gelu(x w1) w2 (one GPU)"] = lambda: mlp_reference(x, w1, w2)
    for fn in fns.values() if timing else list(fns.values())[1:2]:  # warm: kernels built, cuBLAS and NCCL set up
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    dist.barrier()
    for what, ms in interleaved(fns, reps, flush).items() if timing else ():
        ms = slowest(ms)
        rows.append((what, world, ms, 2 * 2 * t * h * 4 * h / ms / 1e9))
    if world > 1 and timing:
        sweep = []
        ar_shared_f16.set_comm(shared)
        ar_sum_f16.set_comm(comm)
        for mib in AR_MIB:
            n = (mib << 20) // 2
            a = torch.randn(n // 1024, 1024, device="cuda").half()
            fns = {"tilec": lambda: ar_shared_f16.call(a), "torch": lambda: dist.all_reduce(a),
                   "tilec own comm": lambda: ar_sum_f16.call(a)}
            for fn in fns.values():
                for _ in range(3):
                    fn()
            torch.cuda.synchronize()
            iters = max(2, min(50, 100 // mib))
            ms = {k: slowest(v) for k, v in interleaved(fns, reps, iters=iters, barrier=True).items()}
            bus = {k: (mib << 20) * 2 * (world - 1) / world / v / 1e6 for k, v in ms.items()}
            sweep.append({"MiB": mib, "iters": iters, "ms": ms, "busbw_GBps": bus})
            del a
        extra["sweep"] = sweep
    if world > 1:
        extra["trace"] = trace_overlap(rank, world, comm, tp_mlp_ov, halves, w1, w2)


def trace_overlap(rank, world, comm, mod, xs, w1, w2):
    """One call of mod (tp_mlp_ov, overlap on) with CUDA events at the start
    and end of every extern step (the GEMMs, the collectives, the waits):
    the module's registry gets a Python stand-in for each that records an
    event on the graph's stream, runs the real one (cuBLAS, the
    collective) through a second registry on the same stream, and records
    another; an overlapped collective's end is an event on the
    communication stream (comm.stream), its start the later of its fork
    (the event before it on the graph's stream) and the previous collective's
    end. The kernels between two extern steps (the GELU) are the span
    between their events. Run last: the module's registry keeps the
    stand-ins. Returns the timeline of rank 0's view: ops with stream,
    start and end in us from the call's start, and the overlap."""
    import tilec
    graph = mod.load(torch.cuda.current_device())
    fwd = tilec.Externs()  # cuBLAS built in; the collectives registered below
    saved = mod._externs
    mod._externs = fwd
    try:
        mod.set_comm(comm)  # registers the collectives and their waits on fwd
    finally:
        mod._externs = saved
    steps = mod._STEPS
    waits = {st[1] for st in steps if st[0] == "extern" and st[1].startswith("tilec:wait:")}
    log = []  # (symbol, before event, after event, end on the comm stream or None)

    def ev(stream=None):
        e = torch.cuda.Event(enable_timing=True)
        e.record(stream) if stream is not None else e.record()
        return e

    def stand_in(sym):
        def run(ins, outs):
            cs = torch.cuda.current_stream()
            before = ev()
            fwd.call(sym, ins, outs, graph.device, stream=cs.cuda_stream)
            side = None
            if sym.startswith("tilec:coll:") and "tilec:wait:" + sym[len("tilec:coll:"):] in waits and comm.stream:
                side = ev(torch.cuda.ExternalStream(comm.stream))
            log.append((sym, before, ev(), side))
        return run
    for sym in {st[1] for st in steps if st[0] == "extern"}:  # in place of cuBLAS's and the collectives'
        mod.externs().register(sym, stand_in(sym))
    comm.set_overlap(True)
    mod.call(*xs, w1, w2)  # warm, through the stand-ins
    torch.cuda.synchronize()
    dist.barrier()
    log.clear()
    start = ev()
    mod.call(*xs, w1, w2)
    end = ev()
    torch.cuda.synchronize()

    def us(e):
        return round(start.elapsed_time(e) * 1000.0, 1)
    ops, k, side_free, prev_after, between = [], 0, 0.0, 0.0, []
    for st in steps:
        if st[0] != "extern":
            between.append(st[1] if st[0] == "kernel" else st[0])  # a kernel's name, or "fill"
            continue
        sym, before, after, side = log[k]
        k += 1
        b, a = us(before), us(after)
        if between:  # the kernels since the last extern step: the span between their events
            ops.append({"op": ", ".join(between), "stream": "compute", "start_us": prev_after, "end_us": b})
            between = []
        if sym.startswith("tilec:wait:"):
            ops.append({"op": "wait " + sym[len("tilec:wait:"):], "stream": "compute", "start_us": b, "end_us": a})
        elif side is not None:  # overlapped: from its fork (or the previous collective's end) to its end there
            s0 = max(b, side_free)
            side_free = us(side)
            ops.append({"op": "all_reduce " + sym[len("tilec:coll:"):], "stream": "comm", "start_us": s0,
                        "end_us": side_free})
        else:
            name = "all_reduce " + sym[len("tilec:coll:"):] if sym.startswith("tilec:coll:") else "GEMM " + (
                outs_of(steps, k - 1))
            ops.append({"op": name, "stream": "compute", "start_us": b, "end_us": a})
        prev_after = a
    total = us(end)

    def union(spans):
        out = []
        for s0, s1 in sorted(spans):
            if out and s0 <= out[-1][1]:
                out[-1][1] = max(out[-1][1], s1)
            else:
                out.append([s0, s1])
        return out
    comp = union([(o["start_us"], o["end_us"]) for o in ops if o["stream"] == "compute" and not o["op"].startswith("wait")])
    comm_spans = union([(o["start_us"], o["end_us"]) for o in ops if o["stream"] == "comm"])
    both = sum(max(0.0, min(a1, b1) - max(a0, b0)) for a0, a1 in comp for b0, b1 in comm_spans)
    comm_busy = sum(b1 - b0 for b0, b1 in comm_spans)
    return {"graph": mod.__name__, "world": world, "rank": rank, "call_us": total, "ops": ops,
            "comm_busy_us": round(comm_busy, 1), "both_busy_us": round(both, 1),
            "overlapped_fraction": round(both / comm_busy, 3) if comm_busy else 0.0}


def outs_of(steps, k):
    """The output names of the k-th extern step."""
    ext = [st for st in steps if st[0] == "extern"]
    return ", ".join(ext[k][3]) if k < len(ext) else "?"


def trace_table(tr):
    """The trace as a markdown table, and its overlap line."""
    lines = [f"tp_mlp_ov trace, world {tr['world']} (rank {tr['rank']}), one call of {tr['call_us']:.0f} us "
             "(CUDA events; us from the call's start)", "",
             "| stream | op | start us | end us | us |", "|---|---|---:|---:|---:|"]
    for o in tr["ops"]:
        lines.append(f"| {o['stream']} | {o['op']} | {o['start_us']:.1f} | {o['end_us']:.1f} | "
                     f"{o['end_us'] - o['start_us']:.1f} |")
    lines += ["", f"communication stream busy {tr['comm_busy_us']:.1f} us, of which both streams busy "
                  f"{tr['both_busy_us']:.1f} us ({100 * tr['overlapped_fraction']:.0f}% of the collectives' time "
                  "overlapped compute)"]
    return "\n".join(lines)


def worker(rank, world, ids, gen_dir, init_file, mode, out):
    """mode: "check" (the correctness checks), "bench" (timings and the
    trace) or "trace" (the trace alone: what --trace-only runs under nsys)."""
    torch.cuda.set_device(rank)
    sys.path.insert(0, gen_dir)
    import tilec
    dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank, world_size=world)
    lib = nccl_library()
    if rank == 0:
        uid = tilec.Comm.unique_id(lib)
        for _ in range(world - 1):
            ids.put(uid)
    else:
        uid = ids.get()
    comm = tilec.Comm(rank, world, uid, device=rank, library=lib)
    results, rows, extra = [], [], {}
    try:
        if mode != "check":
            shared = tilec.Comm.from_torch(library=lib, share=True)  # torch's own communicator, where it lends it
            extra["shared"] = shared.shared
            extra["share_note"] = shared.share_note
            bench(rank, world, comm, shared, rows, extra, timing=mode == "bench")
        else:
            check_collectives(rank, world, comm, results)
            check_mlp(rank, world, comm, results)
            check_overlap(rank, world, comm, results)
            check_from_torch(rank, world, lib, results)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        results.append(False)
    if rank == 0:
        out.put((results, rows, extra))
    dist.barrier()
    dist.destroy_process_group()
    # the generated modules hold comm (set_comm): free it after their last call, at exit


def spawn(world, gen_dir, mode):
    ctx = mp.get_context("spawn")
    ids, out = ctx.Queue(), ctx.Queue()
    with tempfile.TemporaryDirectory() as d:
        try:
            mp.start_processes(worker, args=(world, ids, gen_dir, os.path.join(d, "init"), mode, out),
                               nprocs=world, join=True, start_method="spawn")
        except Exception as e:  # noqa: BLE001 (a rank died: its traceback is above)
            print(f"FAIL world {world}: a rank failed: {str(e).splitlines()[0]}", flush=True)
            return [False], [], {}
    try:
        return out.get(timeout=30)
    except Exception:  # noqa: BLE001
        print(f"FAIL world {world}: rank 0 sent no results", flush=True)
        return [False], [], {}


def sweep_table(world, extra):
    """The all_reduce sweep of one world as a table."""
    lines = [f"all_reduce f16, world {world}, bus bandwidth GB/s (nccl-tests' busbw: bytes x 2(n-1)/n / time), "
             "median of back-to-back launches; tilec and torch on "
             + ("one communicator (the group's, shared)" if extra.get("shared") else
                f"two communicators (torch's would not be shared: {extra.get('share_note')})"),
             f"{'size':>8} {'tilec us':>9} {'torch us':>9} {'tilec':>8} {'torch':>8} {'own comm':>9} {'tilec/torch':>12}"]
    for r in extra.get("sweep", []):
        ms, bw = r["ms"], r["busbw_GBps"]
        lines.append(f"{r['MiB']:>4} MiB {ms['tilec'] * 1e3:>9.1f} {ms['torch'] * 1e3:>9.1f} {bw['tilec']:>8.1f} "
                     f"{bw['torch']:>8.1f} {bw['tilec own comm']:>9.1f} {100 * bw['tilec'] / bw['torch']:>11.1f}%")
    return "\n".join(lines)


def nsys_trace(world, out_dir):
    """With nsys on PATH: this script's --trace-only under nsys profile, and
    nsys's cuda_gpu_trace report as CSV next to it (paths, or why not)."""
    import shutil
    nsys = shutil.which("nsys")
    if not nsys:
        return "nsys: not on PATH (the trace above is CUDA events)"
    rep = os.path.join(out_dir, f"nsys_w{world}")
    try:
        r = subprocess.run([nsys, "profile", "-t", "cuda,nvtx", "--force-overwrite", "true", "-o", rep,
                            sys.executable, os.path.abspath(__file__), "--trace-only", "--world", str(world)],
                           capture_output=True, text=True, timeout=300)
        if r.returncode:
            return f"nsys profile failed ({r.returncode}): {(r.stderr or r.stdout).strip().splitlines()[-1:]}"
        r = subprocess.run([nsys, "stats", "-r", "cuda_gpu_trace", "-f", "csv", "-o", rep, rep + ".nsys-rep"],
                           capture_output=True, text=True, timeout=300)
        return (f"nsys: {rep}.nsys-rep, {rep}_cuda_gpu_trace.csv" if not r.returncode else
                f"nsys stats failed ({r.returncode}): {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    except Exception as e:  # noqa: BLE001 -- a trace is extra: say why and go on
        return f"nsys: {type(e).__name__}: {e}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bench", action="store_true", help="time the TP MLP block and all_reduce bus bandwidth")
    p.add_argument("--world", type=int, action="append", help="a world size to run (default: 2 and 4 as the GPUs allow)")
    p.add_argument("--trace-only", action="store_true", help="only the tp_mlp_ov trace (what --bench runs under nsys)")
    p.add_argument("--out", help="with --bench: write bench.json, trace.json and trace.md (and nsys's files) here")
    a = p.parse_args()
    mode = "trace" if a.trace_only else "bench" if a.bench else "check"
    if torch is None or GPUS < 2:
        print(f"skip: tests/python/test_gpu_nccl.py needs 2 or more GPUs and torch ({GPUS} GPU(s)"
              f"{'' if torch else ', no torch'})")
        return 0
    worlds = a.world or [w for w in (2, 4) if w <= GPUS]
    print(f"NCCL: {nccl_library()}; torch {torch.__version__} (NCCL {nccl_version()}); "
          f"{GPUS} GPUs; worlds {worlds}", flush=True)
    gen = tempfile.mkdtemp(prefix="tilec_nccl_")
    os.environ.setdefault("TILEC_CACHE_DIR", os.path.join(gen, "cache"))
    tile, mlp4 = os.path.join(gen, "coll.tile"), os.path.join(gen, "mlp4.tile")
    ok, rows, extras = [], [], {}
    for world in ([1] if mode == "bench" else []) + worlds:
        # broadcast's root is the last rank: the graphs are written per world
        with open(tile, "w") as f:
            f.write(coll_source().replace("ROOT", str(world - 1)))
        with open(mlp4, "w") as f:  # tp_mlp_ov4: examples/tp_mlp.tile's kernel and extern, four chunks
            with open(os.path.join(ROOT, "examples", "tp_mlp.tile")) as ex:
                f.write(ex.read().split("graph tp_mlp(")[0] + chunked_mlp_source(4))
        wdir = os.path.join(gen, f"w{world}")
        os.makedirs(wdir)
        emit(tile, wdir)
        emit(os.path.join(ROOT, "examples", "tp_mlp.tile"), wdir)
        emit(mlp4, wdir)
        if world == worlds[-1]:  # the trace of what overlaps: the wrapper IR's wait lines
            ir = subprocess.run([TILEC, os.path.join(ROOT, "examples", "tp_mlp.tile"), "--emit", "ir"], check=True,
                                capture_output=True, text=True).stdout
            for line in ir.splitlines():
                if line.startswith("wait ") and "overlapped" in line:
                    print(f"overlap (examples/tp_mlp.tile, tilec --emit ir): {line}", flush=True)
        res, r, extra = spawn(world, wdir, mode)
        ok += res
        rows += r
        extras[world] = extra
    if mode == "trace":
        for world, extra in extras.items():
            if extra.get("trace"):
                print(trace_table(extra["trace"]), flush=True)
        return 0 if all(ok) else 1
    if mode == "bench":
        base = next((r[2] for r in rows if r[0].startswith("tp_mlp T") and r[1] == 1), None)
        print(f"{'what':44} {'GPUs':>4} {'median ms':>10} {'TFLOP/s':>8} {'vs 1 GPU':>9}")
        for what, w, ms, rate in rows:
            speed = f"{base / ms:.2f}x" if base and what.startswith("tp_mlp") else ""
            print(f"{what:44} {w:>4} {ms:>10.3f} {rate:>8.1f} {speed:>9}")
        md = []
        for world, extra in extras.items():
            if extra.get("sweep"):
                print(sweep_table(world, extra), flush=True)
            if extra.get("trace"):
                md.append(trace_table(extra["trace"]))
                print(md[-1], flush=True)
        out_dir = a.out or gen
        os.makedirs(out_dir, exist_ok=True)
        md.append(nsys_trace(worlds[-1], out_dir))
        print(md[-1], flush=True)
        if a.out:
            import json
            with open(os.path.join(out_dir, "bench.json"), "w") as f:
                json.dump({"rows": [dict(zip(("what", "gpus", "ms", "tflops"), r)) for r in rows],
                           "worlds": {w: {k: v for k, v in e.items() if k != "trace"} for w, e in extras.items()},
                           "nccl_env": {k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_NCCL"))}},
                          f, indent=1)
            with open(os.path.join(out_dir, "trace.json"), "w") as f:
                json.dump({w: e.get("trace") for w, e in extras.items() if e.get("trace")}, f, indent=1)
            with open(os.path.join(out_dir, "trace.md"), "w") as f:
                f.write("\n\n".join(md) + "\n")
        return 0 if all(ok) else 1
    print(f"summary: {sum(ok)} of {len(ok)} checks passed" + ("" if all(ok) else " (FAILED)"))
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
