"""rcall_fake.py: the Python and C part of a generated wrapper's known-key
call (issue 18: the extension's rcall) timed on the CPU machine, against
the fake CUDA driver and a stand-in for torch (tensors over tilec Buffers;
its methods are Python functions, dearer than torch's C getters, so the
figures are for comparing two builds of the extension, not for the GPU).
chain8 (bench/wrapper/chain8.tile's graph, its eight kernels all scale2:
the fake driver runs no other) at N=8: per call, `chain8.call(x)`
(rcall), the plan run alone (`Graph.run` of the same slot values), and the
stand-in's `empty_strided`; the difference call - run - empty is the
wrapper's own work. Median of rounds of calls.

    python3 bench/binding/rcall_fake.py [--rounds 21] [--n 5000]
    TILEC_LIB=/old/libtilec.so TILEC_PY=/old/python python3 ...   (another build:
        its extension beside its libtilec.so, its package in TILEC_PY)"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types

import binding  # its scale2 kernel (bench/binding/)

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SOURCE = binding.SOURCE[:binding.SOURCE.index("graph")] + """\
graph chain8(x: f32[N]) -> (y: f32[N]) {
""" + "".join(f"    let t{i} = empty(f32, [N]);\n    scale2({'x' if i == 0 else f't{i - 1}'}, t{i}, N);\n" for i in range(7)) + \
    "    let y = empty(f32, [N]);\n    scale2(t6, y, N);\n    return y;\n}\n"


def stand_in_torch(tilec):
    """A module with what tilec reads of torch, over tilec Buffers."""
    torch = types.ModuleType("torch")

    class DType:
        def __init__(self, name, size):
            self.name, self.size = name, size

        def __str__(self):
            return "torch." + self.name

    class Tensor:
        __slots__ = ("buf", "dtype", "shape", "is_cuda", "device", "_ptr")

        def __init__(self, buf, dtype):
            self.buf, self.dtype, self.shape, self._ptr = buf, dtype, buf.shape, buf.ptr
            self.is_cuda, self.device = True, ("cuda", 0)

        def data_ptr(self):
            return self._ptr

        def get_device(self):
            return 0

        def is_contiguous(self):
            return True

        def stride(self):
            return (1,)

        def numel(self):
            return self.buf.numel

        def element_size(self):
            return self.dtype.size

        def record_stream(self, s):
            pass

        def tolist(self):
            return self.buf.tolist()

    names = {"float32": "f32", "uint8": "u8"}
    torch.Tensor = Tensor
    torch.float32, torch.uint8 = DType("float32", 4), DType("uint8", 1)
    torch.device = lambda kind, index: (kind, index)
    torch.empty_strided = lambda shape, strides, dtype=None, device=None: Tensor(
        tilec.Buffer(shape, names[dtype.name]), dtype)
    torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda i: 0)
    sys.modules["torch"] = torch
    return torch


def per_call_us(fn, n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        fn()
    return (time.perf_counter_ns() - t0) / n / 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--n", type=int, default=5000)
    a = ap.parse_args()
    os.environ.setdefault("TILEC_CUDA_DRIVER", os.path.join(ROOT, "build", "tests", "libfakecuda.so"))
    sys.path.insert(0, os.environ.get("TILEC_PY", os.path.join(ROOT, "python")))
    import tilec
    torch = stand_in_torch(tilec)
    d = tempfile.mkdtemp(prefix="tilec_rcall_")
    with open(os.path.join(d, "chain8.tile"), "w") as f:
        f.write(SOURCE)
    subprocess.run([os.environ.get("TILEC_BIN", os.path.join(ROOT, "build", "bin", "tilec")),
                    os.path.join(d, "chain8.tile"), "--emit", "py", "-o", d], check=True)
    sys.path.insert(0, d)
    import chain8
    N = 8
    x = torch.Tensor(tilec.Buffer.from_bytes(bytes(4 * N), (N,), "f32"), torch.float32)
    g = chain8.load()
    chain8.call(x)
    assert chain8.call(x) is not None and len(chain8._recipes) == 1, "no recipe recorded"
    ws = torch.empty_strided((N,), (1,), dtype=torch.float32, device=None).data_ptr()
    vals = (x.data_ptr(),) + (ws,) * 8 + (N,)
    dev = ("cuda", 0)
    cases = {
        "chain8.call(x) (rcall)": lambda: chain8.call(x),
        "plan run (Graph.run)": lambda: g.run(vals, None),
        "stand-in empty_strided": lambda: torch.empty_strided((N,), (1,), dtype=torch.float32, device=dev),
        "CUDA graph replay": lambda: chain8.call(x),
        "CUDA graph replay, static": lambda: chain8.call(x),
    }
    modes = {"CUDA graph replay": lambda: g.capture(), "CUDA graph replay, static": lambda: (
        g.capture(static_outputs=True) if "static_outputs" in g.capture.__code__.co_varnames else None)}
    res = {k: [] for k in cases}
    for _ in range(a.rounds):
        for k, fn in cases.items():
            modes.get(k, g.eager)()
            for _ in range(3):  # records, then replays
                fn()
            res[k].append(per_call_us(fn, a.n))
    g.eager()
    med = {k: statistics.median(v) for k, v in res.items()}
    for k, v in res.items():
        print(f"{k:28s} median {med[k]:6.2f}  min {min(v):6.2f} us")
    own = med["chain8.call(x) (rcall)"] - med["plan run (Graph.run)"] - med["stand-in empty_strided"]
    print(f"{'wrapper own work':28s} median {own:6.2f} us (call - run - empty)")


if __name__ == "__main__":
    main()
