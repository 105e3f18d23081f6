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
4096) with overlap on and off; all_reduce bus bandwidth through tilec vs
torch.distributed.all_reduce on the same sizes (8 MiB to 1 GiB f16), timed
with CUDA events as bench/harness does: the median of back-to-back runs
with L2 flushed (a 256 MiB write) before each, the slowest rank's median
reported; prints a table. Bus bandwidth is NCCL's: bytes * 2 (n - 1) / n /
time. tilec's all_reduce is out of place (its result is a new tensor,
from torch's allocator), torch's in place.

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
    return "".join(out)


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


def timed(fn, flush, reps):
    """The median of `reps` CUDA-event timings (ms), L2 flushed before each."""
    ts = []
    for _ in range(reps):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def slowest(ms):
    t = torch.tensor([ms], device="cuda", dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def bench(rank, world, comm, rows, reps=20):
    import ar_sum_f16
    import tp_mlp
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    h, t = 8192, 8192
    f = 4 * h // world
    g = torch.Generator(device="cuda").manual_seed(rank)
    x = torch.randn(t, h, device="cuda", generator=g).half()
    w1 = (torch.randn(h, f, device="cuda", generator=g) / h ** 0.5).half()
    w2 = (torch.randn(f, h, device="cuda", generator=g) / f ** 0.5).half()
    tp_mlp.set_comm(comm)
    for _ in range(3):
        tp_mlp.call(x, w1, w2)
    dist.barrier()
    ms = slowest(timed(lambda: tp_mlp.call(x, w1, w2), flush, reps))
    rows.append(("tp_mlp T=8192 H=8192 F=4H f16", world, ms, 2 * 2 * t * h * 4 * h / ms / 1e9))
    import tp_mlp_ov
    tp_mlp_ov.set_comm(comm)
    x0, x1 = x[:t // 2].contiguous(), x[t // 2:].contiguous()
    for on in (True, False):
        comm.set_overlap(on)
        for _ in range(3):
            tp_mlp_ov.call(x0, x1, w1, w2)
        dist.barrier()
        ms = slowest(timed(lambda: tp_mlp_ov.call(x0, x1, w1, w2), flush, reps))
        rows.append((f"tp_mlp_ov 2x4096 overlap {'on' if on else 'off'}", world, ms, 2 * 2 * t * h * 4 * h / ms / 1e9))
    comm.set_overlap(True)
    if world == 1:
        ms = slowest(timed(lambda: mlp_reference(x, w1, w2), flush, reps))
        rows.append(("torch gelu(x w1) w2 (one GPU)", 1, ms, 2 * 2 * t * h * 4 * h / ms / 1e9))
        return
    ar_sum_f16.set_comm(comm)
    for mib in (8, 64, 256, 1024):
        n = (mib << 20) // 2
        a = torch.randn(n // 1024, 1024, device="cuda").half()
        for who, fn in (("tilec", lambda: ar_sum_f16.call(a)), ("torch", lambda: dist.all_reduce(a))):
            for _ in range(3):
                fn()
            dist.barrier()
            ms = slowest(timed(fn, flush, reps))
            rows.append((f"all_reduce {mib} MiB f16 ({who})", world, ms, (mib << 20) * 2 * (world - 1) / world / ms / 1e6))


def worker(rank, world, ids, gen_dir, init_file, do_bench, out):
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
    results, rows = [], []
    try:
        if do_bench:
            bench(rank, world, comm, rows)
        else:
            check_collectives(rank, world, comm, results)
            check_mlp(rank, world, comm, results)
            check_overlap(rank, world, comm, results)
            check_from_torch(rank, world, lib, results)
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        results.append(False)
    if rank == 0:
        out.put((results, rows))
    dist.barrier()
    dist.destroy_process_group()
    # the generated modules hold comm (set_comm): free it after their last call, at exit


def spawn(world, gen_dir, do_bench):
    ctx = mp.get_context("spawn")
    ids, out = ctx.Queue(), ctx.Queue()
    with tempfile.TemporaryDirectory() as d:
        try:
            mp.start_processes(worker, args=(world, ids, gen_dir, os.path.join(d, "init"), do_bench, out),
                               nprocs=world, join=True, start_method="spawn")
        except Exception as e:  # noqa: BLE001 (a rank died: its traceback is above)
            print(f"FAIL world {world}: a rank failed: {str(e).splitlines()[0]}", flush=True)
            return [False], []
    try:
        return out.get(timeout=30)
    except Exception:  # noqa: BLE001
        print(f"FAIL world {world}: rank 0 sent no results", flush=True)
        return [False], []


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bench", action="store_true", help="time the TP MLP block and all_reduce bus bandwidth")
    p.add_argument("--world", type=int, action="append", help="a world size to run (default: 2 and 4 as the GPUs allow)")
    a = p.parse_args()
    if torch is None or GPUS < 2:
        print(f"skip: tests/python/test_gpu_nccl.py needs 2 or more GPUs and torch ({GPUS} GPU(s)"
              f"{'' if torch else ', no torch'})")
        return 0
    worlds = a.world or [w for w in (2, 4) if w <= GPUS]
    print(f"NCCL: {nccl_library()}; torch {torch.__version__} (NCCL {nccl_version()}); "
          f"{GPUS} GPUs; worlds {worlds}", flush=True)
    gen = tempfile.mkdtemp(prefix="tilec_nccl_")
    os.environ.setdefault("TILEC_CACHE_DIR", os.path.join(gen, "cache"))
    tile = os.path.join(gen, "coll.tile")
    ok, rows = [], []
    for world in ([1] if a.bench else []) + worlds:
        # broadcast's root is the last rank: the graphs are written per world
        with open(tile, "w") as f:
            f.write(coll_source().replace("ROOT", str(world - 1)))
        wdir = os.path.join(gen, f"w{world}")
        os.makedirs(wdir)
        emit(tile, wdir)
        emit(os.path.join(ROOT, "examples", "tp_mlp.tile"), wdir)
        if world == worlds[-1]:  # the trace of what overlaps: the wrapper IR's wait lines
            ir = subprocess.run([TILEC, os.path.join(ROOT, "examples", "tp_mlp.tile"), "--emit", "ir"], check=True,
                                capture_output=True, text=True).stdout
            for line in ir.splitlines():
                if line.startswith("wait ") and "overlapped" in line:
                    print(f"overlap (examples/tp_mlp.tile, tilec --emit ir): {line}", flush=True)
        res, r = spawn(world, wdir, a.bench)
        ok += res
        rows += r
    if a.bench:
        base = next((r[2] for r in rows if r[0].startswith("tp_mlp T") and r[1] == 1), None)
        print(f"{'what':44} {'GPUs':>4} {'median ms':>10} {'TFLOP/s or GB/s':>16} {'vs 1 GPU':>9}")
        for what, w, ms, rate in rows:
            speed = f"{base / ms:.2f}x" if base and what.startswith("tp_mlp") else ""
            print(f"{what:44} {w:>4} {ms:>10.3f} {rate:>16.1f} {speed:>9}")
        return 0 if all(ok) else 1
    print(f"summary: {sum(ok)} of {len(ok)} checks passed" + ("" if all(ok) else " (FAILED)"))
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
