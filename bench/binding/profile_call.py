"""profile_call.py: where the host time of a generated Python wrapper's call
goes (issue 18), on the GPU machine: each torch and tilec piece of
chain8.call timed alone (perf_counter_ns, median of rounds of 2000 calls;
chain8.call runs its recipe after the first call, stream=0 takes the
checked path), then cProfile of 20000 calls of each.
    python3 bench/binding/profile_call.py GEN_DIR [--quick]   (GEN_DIR holds chain8.py)
--quick: only chain8.call, the plan run and the allocations, and the
wrapper's own work (call - plan run - empty_strided): no torch.compile, no
cProfile (for comparing two builds, each in a fresh process).
--replay: the CUDA-graph replay's pieces (each tensor read the key needs,
the raw stream, an output's allocation and release), chain8.call replaying
(new outputs; static outputs where the package has them), the plan replay
alone, and a call whose output is kept (a new address each call: graphs=1,
so each call records by updating the graph, or re-instantiating it where
the package does not update). No torch.compile; for comparing builds.
--phases: with the extension built with TILEC_NATIVE_PROF (`make
native-prof`, TILEC_LIB=build/libprof/libtilec.so), each phase of rcall in
µs per call (TSC cycles over the TSC's rate), against chain8.call from
Python, the extension's rcall called directly, the plan run from Python,
and the plan run in a C loop (TILEC_BENCH_LIB's tb_plan_host_us), all in
this process, the rounds going round the sides."""
import cProfile
import os
import pstats
import statistics
import sys
import time

import torch

sys.path.insert(0, sys.argv[1])
import chain8  # noqa: E402
import tilec  # noqa: E402


def us(fn, n=2000, rounds=15):
    vals = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        vals.append((time.perf_counter_ns() - t0) / n / 1e3)
        torch.cuda.synchronize()
    return statistics.median(vals)


def main():
    N = 4096
    x = torch.randn(N, device="cuda")
    g = chain8.load()
    chain8.call(x)
    torch.cuda.synchronize()
    dev = torch.device("cuda", 0)
    info = tilec.tensor_info(x)
    vals = (info.ptr,) + (info.ptr,) * 8 + (N,)
    pieces = {
        "chain8.call": lambda: chain8.call(x),
        "chain8.call(stream=0) (checked path)": lambda: chain8.call(x, stream=0),
        "tensor_info": lambda: tilec.tensor_info(x),
        "torch.empty((N,), dtype, device)": lambda: torch.empty((N,), dtype=torch.float32, device=dev),
        "torch.empty(N, device='cuda')": lambda: torch.empty(N, device="cuda"),
        "torch.empty_strided": lambda: torch.empty_strided((N,), (1,), dtype=torch.float32, device=dev),
        "x.new_empty((N,))": lambda: x.new_empty((N,)),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
        "x.data_ptr()": lambda: x.data_ptr(),
        "x.is_contiguous()": lambda: x.is_contiguous(),
        "tuple(x.shape)": lambda: tuple(x.shape),
        "raw stream": lambda: torch._C._cuda_getCurrentRawStream(0),
        "graph.begin": lambda: g.begin((info,), None),
        "graph.run (plan run)": lambda: g.run(vals, None),
        "check_tensor": lambda: tilec.check_tensor("chain8", "t0", (N,), "f32"),
    }
    if "--replay" in sys.argv:
        return replay(g, x, vals, dev, N)
    if "--phases" in sys.argv:
        return phases(g, x, vals, N)
    if "--slots" in sys.argv:
        return slots_ab(g, x, N)
    if "--quick" in sys.argv:
        quick = ("chain8.call", "graph.run (plan run)", "torch.empty_strided", "torch.empty_like(x)",
                 "torch.empty((N,), dtype, device)")
        t = {name: us(pieces[name]) for name in quick}
        for name in quick:
            print(f"{name:40s} {t[name]:8.2f} us", flush=True)
        own = t["chain8.call"] - t["graph.run (plan run)"] - t["torch.empty_strided"]
        print(f"{'own work (call - run - empty_strided)':40s} {own:8.2f} us", flush=True)
        return
    for name, fn in pieces.items():
        print(f"{name:40s} {us(fn):8.2f} us", flush=True)
    g.capture()
    for _ in range(3):
        chain8.call(x)
    print(f"{'chain8.call (graph replay)':40s} {us(lambda: chain8.call(x)):8.2f} us", flush=True)
    print(f"{'graph.run (replay)':40s} {us(lambda: g.run(vals, None)):8.2f} us", flush=True)
    g.eager()
    k = g.module.kernel("scale2", 0)
    t = torch.empty(N, device="cuda")
    print(f"{'Kernel call':40s} {us(lambda: k(x, t, N)):8.2f} us", flush=True)
    # the same calls again once torch.compile has run in this process (the
    # harness compiles before it times any side)
    def chain8_torch(v):
        t = torch.relu(v * 2.0 + 1.0)
        return torch.clamp_max((-t) * (-t) * 0.5 - 3.0, 4.0)
    compiled = torch.compile(chain8_torch)
    compiled(x)
    torch.cuda.synchronize()
    again = {
        "chain8.call": lambda: chain8.call(x),
        "chain8.call(stream=0) (checked path)": lambda: chain8.call(x, stream=0),
        "graph.run (plan run)": lambda: g.run(vals, None),
        "Kernel call": lambda: k(x, t, N),
        "torch.empty_strided": pieces["torch.empty_strided"],
        "tensor_info": pieces["tensor_info"],
        "torch.compile'd chain8": lambda: compiled(x),
    }
    for name, fn in again.items():
        print(f"{'after torch.compile: ' + name:60s} {us(fn):8.2f} us", flush=True)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(20000):
        chain8.call(x)
    pr.disable()
    torch.cuda.synchronize()
    pstats.Stats(pr).sort_stats("tottime").print_stats(25)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(20000):
        k(x, t, N)
    pr.disable()
    torch.cuda.synchronize()
    pstats.Stats(pr).sort_stats("tottime").print_stats(15)


def replay(g, x, vals, dev, N):
    f32 = torch.float32
    pieces = {
        "x.dtype": lambda: x.dtype,
        "x.is_cuda": lambda: x.is_cuda,
        "x.is_contiguous()": lambda: x.is_contiguous(),
        "x.shape": lambda: x.shape,
        "x.get_device()": lambda: x.get_device(),
        "x.data_ptr()": lambda: x.data_ptr(),
        "raw stream": lambda: torch._C._cuda_getCurrentRawStream(0),
        "empty_strided, dropped": lambda: torch.empty_strided((N,), (1,), dtype=f32, device=dev),
        "x.new_empty_strided, dropped": lambda: x.new_empty_strided((N,), (1,)),
        "lean _empty_strided_cuda, dropped": lambda: torch._C._dynamo.guards._empty_strided_cuda((N,), (1,), f32),
        "lambda: None (the loop)": lambda: None,
    }
    for name, fn in pieces.items():
        print(f"{name:44s} {us(fn, 5000):8.3f} us", flush=True)
    g.capture()
    for _ in range(3):
        chain8.call(x)
    print(f"{'chain8.call (graph replay)':44s} {us(lambda: chain8.call(x)):8.2f} us", flush=True)
    print(f"{'graph.run (plan replay from Python)':44s} {us(lambda: g.run(vals, None)):8.2f} us", flush=True)
    if "static_outputs" in g.capture.__code__.co_varnames:
        g.capture(static_outputs=True)
        for _ in range(3):
            chain8.call(x)
        print(f"{'chain8.call (graph replay, static outputs)':44s} {us(lambda: chain8.call(x)):8.2f} us",
              flush=True)
    g.capture(graphs=1)
    kept = []

    def keep():
        kept.append(chain8.call(x))
        if len(kept) >= 200:
            kept.clear()
    for _ in range(3):
        keep()
    print(f"{'chain8.call, output kept (graphs=1)':44s} {us(keep, 200):8.2f} us  {g.stats()}", flush=True)
    g.eager()
    kept.clear()
    print(f"{'chain8.call (eager plan)':44s} {us(lambda: chain8.call(x)):8.2f} us", flush=True)


def phases(g, x, vals, N):
    nat = tilec._library.native()
    if nat is None or not hasattr(nat, "prof"):
        print("phases: the extension was not built with TILEC_NATIVE_PROF (make native-prof)", flush=True)
        return
    a = nat.prof()
    t0 = time.perf_counter()
    time.sleep(0.5)
    b = nat.prof()
    rate = (b[3] - a[3]) / (time.perf_counter() - t0) / 1e6  # cycles per µs
    print(f"TSC: {rate:.1f} cycles per us", flush=True)
    loop = plan_loop(g)

    def c_plan(n=2000):
        return loop(vals, n)
    fast, recipes = chain8._fast, chain8._recipes
    lean = torch._C._dynamo.guards._empty_strided_cuda
    raw, getdev, f32, size, stride = torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice, torch.float32, \
        (N,), (1,)
    sides = {
        "chain8.call(x)": lambda: chain8.call(x),
        "chain8._call(x) (Python call())": lambda: chain8._call(x),
        "rcall direct": lambda: fast(recipes, (x,), ()),
        "graph.run from Python": lambda: g.run(vals, None),
        "lean alloc, dropped": lambda: lean(size, stride, f32),
        "lean alloc, then graph.run": lambda: (lean(size, stride, f32), g.run(vals, None)),
        "six reads": lambda: (x.dtype, x.is_cuda, x.is_contiguous(), x.shape, x.get_device(), x.data_ptr()),
        "six reads, then graph.run": lambda: (x.dtype, x.is_cuda, x.is_contiguous(), x.shape, x.get_device(),
                                              x.data_ptr(), g.run(vals, None)),
        "stream and device": lambda: (raw(0), getdev()),
        "stream and device, then graph.run": lambda: (raw(0), getdev(), g.run(vals, None)),
    }
    table(nat, rate, sides, c_plan)
    table(nat, rate, sides, c_plan, 256)  # the harness's host table: rounds of 256 calls
    # the same once torch.compile has compiled and run a function in this
    # process (as the harness's host table does before it times any side)
    def chain8_torch(v):
        t = torch.relu(v * 2.0 + 1.0)
        return torch.clamp_max((-t) * (-t) * 0.5 - 3.0, 4.0)
    compiled = torch.compile(chain8_torch)
    compiled(x)
    torch.cuda.synchronize()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
    from bench import host_env  # the harness's wait for a quiet machine
    print(f"== after torch.compile ({host_env()})", flush=True)
    sides["torch.compile'd chain8"] = lambda: compiled(x)
    table(nat, rate, sides, c_plan)
    table(nat, rate, sides, c_plan, 256)
    # and once another compiled function has been captured into a CUDA graph
    # and replayed (what the harness's replay sides do)
    def chain8_capture(v):
        return chain8_torch(v)
    other = torch.compile(chain8_capture)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            other(x)
    torch.cuda.current_stream().wait_stream(s)
    cg = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cg):
        other(x)
    cg.replay()
    torch.cuda.synchronize()
    print(f"== after a CUDA-graph capture of another compiled function ({host_env()})", flush=True)
    table(nat, rate, sides, c_plan, 256)


def plan_loop(g):
    """c_plan(vals, n): host µs per run of g's plan with slot values vals
    (addresses, then N), n runs back to back in C (TILEC_BENCH_LIB's
    tb_plan_host_us) on the legacy stream."""
    import ctypes
    ctypes.CDLL(tilec._library.lib()._name, mode=ctypes.RTLD_GLOBAL)  # the bench library's symbols
    lib = ctypes.CDLL(os.environ["TILEC_BENCH_LIB"])
    P = ctypes.c_void_p
    lib.tb_plan_host_us.argtypes = [P, P, ctypes.c_uint32, P, ctypes.c_int, P, P, ctypes.c_size_t]
    err = ctypes.create_string_buffer(512)

    def c_plan(vals, n):
        sl = (tilec._library._Arg * len(vals))()
        for i, v in enumerate(vals[:-1]):
            sl[i].ptr = v
        sl[len(vals) - 1].i64 = vals[-1]
        us_ = ctypes.c_double()
        if lib.tb_plan_host_us(g._h, sl, len(vals), None, n, ctypes.byref(us_), err, len(err)) != 0:
            raise RuntimeError(err.value.decode())
        return us_.value
    return c_plan


def slots_ab(g, x, N):
    """The plan run with the slot values chain8.call gives it (x, then the
    workspace and the output in turn) against every slot on x, from Python
    and from C, beside chain8.call and a fresh output each call."""
    c_plan = plan_loop(g)
    ws, out = torch.empty(N, device="cuda"), torch.empty(N, device="cuda")
    xp, wp, op = x.data_ptr(), ws.data_ptr(), out.data_ptr()
    on_x = (xp,) * 9 + (N,)
    real = (xp, wp, op, wp, op, wp, op, wp, op, N)
    lean = torch._C._dynamo.guards._empty_strided_cuda
    f32, size, stride = torch.float32, (N,), (1,)

    def fresh():
        o = lean(size, stride, f32)
        p = o.data_ptr()
        g.run((xp, wp, p, wp, p, wp, p, wp, p, N), None)
        return o

    def into(o, where):
        p = o.data_ptr()
        v = list(real)
        for i in where:
            v[i] = p
        g.run(tuple(v), None)
        return o
    alt = [torch.empty(N, device="cuda") for _ in range(2)]
    turn = [0]

    def alternate():
        turn[0] ^= 1
        return into(alt[turn[0]], (2, 4, 6, 8))
    empty = torch.empty_strided
    sides = {
        "chain8.call(x)": lambda: us(lambda: chain8.call(x), 256, 1),
        "lean output unused, graph.run": lambda: us(lambda: (lean(size, stride, f32), g.run(real, None)), 256, 1),
        "lean output, last kernel writes it": lambda: us(lambda: into(lean(size, stride, f32), (8,)), 256, 1),
        "lean output, first kernel writes it": lambda: us(lambda: into(lean(size, stride, f32), (2,)), 256, 1),
        "empty_strided output, graph.run into it": lambda: us(
            lambda: into(empty(size, stride, dtype=f32, device="cuda"), (2, 4, 6, 8)), 256, 1),
        "two held outputs in turn": lambda: us(alternate, 256, 1),
        "graph.run, every slot x": lambda: us(lambda: g.run(on_x, None), 256, 1),
        "graph.run, the call's slots": lambda: us(lambda: g.run(real, None), 256, 1),
        "lean output, graph.run into it": lambda: us(fresh, 256, 1),
        "C plan loop, every slot x": lambda: c_plan(on_x, 256),
        "C plan loop, the call's slots": lambda: c_plan(real, 256),
    }
    res = {k: [] for k in sides}
    for _ in range(21):
        for k, fn in sides.items():
            torch.cuda.synchronize()
            res[k].append(fn())
    for k, v in res.items():
        print(f"{k:36s} {statistics.median(v):8.2f} us (min {min(v):.2f})", flush=True)


def table(nat, rate, sides, c_plan, n=2000):
    print(f"-- rounds of {n} calls", flush=True)
    res = {k: [] for k in list(sides) + ["C plan loop"]}
    ph = None
    for _ in range(11):
        for name, fn in sides.items():
            nat.prof()
            torch.cuda.synchronize()
            res[name].append(us(fn, n, 1))
            p = nat.prof()
            if name == "chain8.call(x)":
                ph = [c / p[0] / rate for c in p[1]] if ph is None else [
                    q + c / p[0] / rate for q, c in zip(ph, p[1])]
                names = p[2]
        torch.cuda.synchronize()
        res["C plan loop"].append(c_plan(n))
        torch.cuda.synchronize()
    for name, v in res.items():
        print(f"{name:36s} {statistics.median(v):8.2f} us (min {min(v):.2f})", flush=True)
    print("rcall's phases in chain8.call(x), mean us per call:", flush=True)
    for n_, c in zip(names, ph):
        print(f"  {n_:12s} {c / 11:8.3f}", flush=True)
    print(f"  {'sum':12s} {sum(ph) / 11:8.3f}", flush=True)


if __name__ == "__main__":
    main()
