"""The binding layer measured: host µs per call of the same launches made
through ctypes (struct.pack + a ctypes call) and through the optional
stable-ABI extension (tilec_native.abi3.so), in one process, alternating,
median of rounds. Cases: Graph.run of a plan of 3 launches (the slot values
ready), a generated wrapper's call() (checks, allocation, one run), and a
direct Kernel call.

    python3 bench/binding/binding.py [--fake] [--rounds 21] [--n 2000]

--fake runs on the fake CUDA driver (build/tests/libfakecuda.so, no GPU:
its launches compute y = 2 * x of one element on the host); without it,
the real driver. docs/performance.md records the figures and the choice."""
import argparse
import array
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SOURCE = """\
kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 128)) hints { warps = 4 } {
    let i = pid(0) * 128 + range(128);
    store(y + i, 2.0 * load(x + i, i < n), i < n);
}
graph g3(x: f32[N]) -> (y: f32[N]) {
    let t = empty(f32, [N]);
    scale2(x, t, N);
    let u = empty(f32, [N]);
    scale2(t, u, N);
    let y = empty(f32, [N]);
    scale2(u, y, N);
    return y;
}
"""


def per_call_us(fn, n):
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake", action="store_true")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--n", type=int, default=2000)
    a = ap.parse_args()
    if a.fake:
        os.environ["TILEC_CUDA_DRIVER"] = os.path.join(ROOT, "build", "tests", "libfakecuda.so")
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import tilec
    d = tempfile.mkdtemp(prefix="tilec_binding_")
    with open(os.path.join(d, "g3.tile"), "w") as f:
        f.write(SOURCE)
    subprocess.run([os.environ.get("TILEC_BIN", os.path.join(ROOT, "build", "bin", "tilec")), os.path.join(d, "g3.tile"), "--emit", "py", "-o", d],
                   check=True)
    sys.path.insert(0, d)
    import g3
    graph = g3.load()
    if tilec._library.native() is None:
        print("no tilec_native.abi3.so beside libtilec.so (make builds it): nothing to compare")
        return 1
    x = tilec.Buffer.from_bytes(array.array("f", [1.0]), (1,), "f32")
    y = tilec.Buffer((1,), "f32")
    k = graph.module.kernel("scale2", 0)
    values = (x.ptr, y.ptr, y.ptr, y.ptr, 1)
    native = tilec._library.native()
    sides = {}
    for name, fn in (("Graph.run (3 launches)", lambda: graph.run(values, None)),
                     ("wrapper call() (3 launches)", lambda: g3.release(g3.call(x))),
                     ("Kernel call (1 launch)", lambda: k(x, y, 1))):
        for binding in ("ctypes", "extension"):
            sides[(name, binding)] = []
        for _ in range(a.rounds):
            for binding, nat in (("ctypes", None), ("extension", native)):
                graph._native = k._native = nat
                fn()
                sides[(name, binding)].append(per_call_us(fn, a.n))
    print(f"host us per call, median of {a.rounds} rounds of {a.n} ({'fake driver' if a.fake else 'CUDA driver'})")
    for (name, binding), vals in sides.items():
        print(f"  {name:30s} {binding:9s} {statistics.median(vals):8.2f}  (min {min(vals):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
