"""examples/chunked_ce.tile on the GPU against torch (issue 35 item 4): the
fused linear cross-entropy over row chunks, a graph with a for loop over
slices, through both wrappers: the C wrapper built here into a shared
object (cc, against the libtilec.so the tilec package loaded) and called
through ctypes on torch's tensors and the package's runtime handle, and the
Python wrapper (tilec --emit py) called on torch's tensors: the loss of
each token, dH and dW of the losses' sum, against torch.nn.functional.
cross_entropy and autograd in f64; a chunk size that does not divide the
tokens is the last slice's run-time error, in the same words from both; the
Python wrapper's peak memory holds a chunk's logits, never all of them;
graph flce4 (four chunks, a constant count: unrolled) and flce (a loop) in
CUDA-graph mode, recorded and replayed, match torch at every call.

    python3 tests/python/test_gpu_chunks.py [TILEC_BINARY]"""
import ctypes
import os
import shutil
import subprocess
import sys
import unittest

from scratch import scratch_dir  # tests/python/scratch.py

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from tilec._library import _Tensor, lib  # noqa: E402
from tilec.device import Device  # noqa: E402
from tilec.dtypes import DT_ENUM  # noqa: E402

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    HAVE_GPU = False

TILEC = os.environ.get("TILEC_BIN", "build/bin/tilec")
CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def build_wrapper():
    """The C wrapper of examples/chunked_ce.tile as a shared object."""
    out = scratch_dir("tilec_chunks_")
    subprocess.run([TILEC, "examples/chunked_ce.tile", "--emit", "c", "-o", out], check=True)
    libdir = os.path.dirname(os.path.abspath(lib()._name))
    so = os.path.join(out, "libflce.so")
    subprocess.run([CC, "-shared", "-fPIC", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror",
                    "-Iinclude", os.path.join(out, "flce.c"), "-o", so, "-L" + libdir, "-ltilec",
                    "-Wl,-rpath," + libdir], check=True)
    so = ctypes.CDLL(so)
    P, T = ctypes.c_void_p, ctypes.POINTER(_Tensor)
    so.flce_load.argtypes = [P, ctypes.POINTER(P), ctypes.c_char_p, ctypes.c_size_t]
    so.flce_run.argtypes = [P, T, T, T, ctypes.c_int64, T, T, T, ctypes.c_char_p, ctypes.c_size_t]
    so.flce_unload.argtypes = [P]
    so.flce_unload.restype = None
    so.flce_set_cuda_graph.argtypes = [P, ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t]
    return so


def inputs(T, D, V, C):
    g = torch.Generator(device="cuda").manual_seed(T * 31 + C)
    h = torch.randn(T, D, device="cuda", generator=g) * 0.5
    w = torch.randn(V, D, device="cuda", generator=g) * 0.5
    tgt = torch.randint(0, V, (T,), device="cuda", generator=g, dtype=torch.int32)
    return h, w, tgt


def reference(h, w, tgt):
    """The loss of each token, dH and dW of their sum, by torch in f64 (on the CPU)."""
    hd = h.double().requires_grad_()
    wd = w.double().requires_grad_()
    loss = torch.nn.functional.cross_entropy(hd @ wd.T, tgt.long(), reduction="none")
    loss.sum().backward()
    return loss.detach().cpu(), hd.grad.cpu(), wd.grad.cpu()


# a chunk past the tokens: the last slice's error, the same words from both wrappers
PAST = "flce: line 75: slice hc = h[C*i:C + C*i] is out of bounds: start 256, stop 320, and 'h' has 300 rows"
SHAPES = ((64, 32, 100, 64), (256, 96, 1000, 64), (300, 64, 2053, 100), (1024, 128, 8191, 256))


def tensor(t):
    d = _Tensor()
    d.data = t.data_ptr()
    d.dtype = DT_ENUM.index({torch.float32: "f32", torch.int32: "i32"}[t.dtype])
    d.rank = t.dim()
    for i in range(t.dim()):
        d.sizes[i] = t.shape[i]
        d.strides[i] = t.stride(i)
    return d


@unittest.skipUnless(HAVE_GPU and CC, "needs torch with a GPU and a C compiler")
class ChunkedCrossEntropy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.so = build_wrapper()
        cls.dev = Device(0)
        cls.mod = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        if cls.so.flce_load(cls.dev._h, ctypes.byref(cls.mod), err, 1024):
            raise RuntimeError(err.value.decode())

    @classmethod
    def tearDownClass(cls):
        cls.so.flce_unload(cls.mod)
        cls.dev.close()

    def run_flce(self, T, D, V, C):
        h, w, tgt = inputs(T, D, V, C)
        outs = [_Tensor(), _Tensor(), _Tensor()]
        err = ctypes.create_string_buffer(1024)
        torch.cuda.synchronize()
        rc = self.so.flce_run(self.mod, ctypes.byref(tensor(h)), ctypes.byref(tensor(w)), ctypes.byref(tensor(tgt)), C,
                              *[ctypes.byref(o) for o in outs], err, 1024)
        if rc:
            return None, err.value.decode()
        self.dev.synchronize()
        got = []
        for o in outs:  # into torch, then the wrapper's buffers back to the device
            n = 1
            for i in range(o.rank):
                n *= o.sizes[i]
            host = (ctypes.c_float * n)()
            self.assertEqual(lib().tilec_rt_memcpy_dtoh(self.dev._h, ctypes.cast(host, ctypes.c_void_p), o.data, n * 4), 0)
            got.append(torch.frombuffer(bytearray(host), dtype=torch.float32).reshape(list(o.sizes[:o.rank])))
            lib().tilec_rt_free(self.dev._h, o.data)
        return (got, reference(h, w, tgt)), None

    def check_shapes(self, shapes, how=""):
        for T, D, V, C in shapes:
            r, err = self.run_flce(T, D, V, C)
            self.assertIsNone(err)
            got, want = r
            for name, a, b in zip(("loss", "dh", "dw"), got, want):
                rel = float((a.double() - b).norm() / b.norm())
                print(f"flce{how} T={T} D={D} V={V} C={C} {name}: relative L2 error {rel:.2e}")
                self.assertLess(rel, 1e-4, f"{name} T={T} C={C}{how}")

    def test_matches_torch(self):
        self.check_shapes(SHAPES)

    def test_a_chunk_past_the_tokens_is_an_error(self):
        r, err = self.run_flce(300, 32, 100, 64)
        self.assertIsNone(r)
        self.assertIn(PAST, err)

    def test_graph_mode_matches_torch(self):
        # the C wrapper's CUDA-graph mode of a kept loop (docs/emitters.md): a plan per trip
        # count, recorded on its first call and replayed (or re-recorded for new addresses) after
        err = ctypes.create_string_buffer(1024)
        self.assertEqual(self.so.flce_set_cuda_graph(self.mod, 4, err, 1024), 0, err.value.decode())
        try:
            self.check_shapes(SHAPES + SHAPES, " graph mode")
            r, e = self.run_flce(300, 32, 100, 64)  # a slice past the tokens: nothing launched
            self.assertIsNone(r)
            self.assertIn(PAST, e)
        finally:
            self.assertEqual(self.so.flce_set_cuda_graph(self.mod, 0, err, 1024), 0, err.value.decode())


@unittest.skipUnless(HAVE_GPU, "needs torch with a GPU")
class PythonWrapper(unittest.TestCase):
    """The same graph through its Python wrapper: the plan's parts run from
    a Python for loop, the logits of each chunk from torch's allocator."""

    @classmethod
    def setUpClass(cls):
        out = scratch_dir("tilec_chunks_py_")
        subprocess.run([TILEC, "examples/chunked_ce.tile", "--emit", "py", "-o", out], check=True)
        sys.path.insert(0, out)
        import flce
        import flce4
        cls.flce, cls.flce4 = flce, flce4

    def test_matches_torch(self):
        for T, D, V, C in SHAPES:
            h, w, tgt = inputs(T, D, V, C)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            got = self.flce.call(h, w, tgt, C)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - before
            outs = 4 * (T + T * D + V * D)
            # the outputs and one chunk's logits (the last one's dropped before the next is taken)
            self.assertLessEqual(peak, outs + 4 * C * V + (1 << 20), f"T={T} C={C}")
            for name, a, b in zip(("loss", "dh", "dw"), got, reference(h, w, tgt)):
                rel = float((a.double().cpu() - b).norm() / b.norm())
                print(f"flce (Python wrapper) T={T} D={D} V={V} C={C} {name}: relative L2 error {rel:.2e}")
                self.assertLess(rel, 1e-4, f"{name} T={T} C={C}")

    def test_unrolled_chunks_replay_as_a_cuda_graph(self):
        # flce4: NCHUNK = 4 chunks, a constant count, so the loop is unrolled and the graph has a
        # CUDA-graph mode: the first call of a shape runs eagerly and is recorded, the next ones
        # replay it (static outputs: the same tensors each call), every call matching torch
        graph = self.flce4.load(cuda_graph=True).capture(static_outputs=True)
        try:
            for T, D, V in ((256, 96, 1000), (1024, 128, 8191)):
                h, w, tgt = inputs(T, D, V, T // 4)
                want = reference(h, w, tgt)
                for k in range(3):
                    got = [t.clone() for t in self.flce4.call(h, w, tgt)]
                    torch.cuda.synchronize()
                    for name, a, b in zip(("loss", "dh", "dw"), got, want):
                        rel = float((a.double().cpu() - b).norm() / b.norm())
                        print(f"flce4 (CUDA graph, call {k}) T={T} D={D} V={V} {name}: relative L2 error {rel:.2e}")
                        self.assertLess(rel, 1e-4, f"{name} T={T} call {k}")
            st = graph.stats()
            print("flce4 graph stats:", st)
            self.assertGreaterEqual(st["recorded"], 2)  # at least one per shape (a key's first, checked call
            self.assertGreaterEqual(st["replayed"], 2)  # has its own output: it may record once more)
        finally:
            graph.eager()

    def test_looped_chunks_replay_as_a_cuda_graph(self):
        # flce (a run-time count) in CUDA-graph mode: each call's parts run at its end as one plan
        # per trip count (Graph.run_seq), recorded, then replayed while the addresses repeat (the
        # outputs dropped before the next call: torch hands the same blocks back)
        graph = self.flce.load(cuda_graph=True)
        try:
            T, D, V, C = 256, 96, 1000, 64
            h, w, tgt = inputs(T, D, V, C)
            want = reference(h, w, tgt)
            def check(k):  # the outputs live only in here: dropped before the next call
                out = self.flce.call(h, w, tgt, C)
                torch.cuda.synchronize()
                errs = [float((a.double().cpu() - b).norm() / b.norm()) for a, b in zip(out, want)]
                for name, rel in zip(("loss", "dh", "dw"), errs):
                    print(f"flce (CUDA graph, call {k}) {name}: relative L2 error {rel:.2e}")
                    self.assertLess(rel, 1e-4, f"{name} call {k}")
            for k in range(4):
                check(k)
            st = graph.stats()
            print("flce graph stats:", st)
            self.assertGreaterEqual(st["recorded"], 1)
            self.assertGreaterEqual(st["replayed"], 1)
        finally:
            graph.eager()

    def test_a_chunk_past_the_tokens_is_an_error(self):
        h, w, tgt = inputs(300, 32, 100, 64)
        with self.assertRaises(ValueError) as e:
            self.flce.call(h, w, tgt, 64)
        self.assertIn(PAST, str(e.exception))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        TILEC = sys.argv.pop(1)
    unittest.main(verbosity=2)
