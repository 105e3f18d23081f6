"""The Python package with torch on the GPU machine (skips without a GPU or
torch): torch-stream ordering (a tilec graph call and a tilec kernel between
two torch ops on a non-default stream give the right answer with no
synchronize between them), outputs as torch tensors from torch's allocator
on the inputs' device, CUDA-graph replay results equal to eager ones (and
re-recording when the shape changes; a full plan updating its graph in
place; static outputs, opt-in, with an input that shares memory with one
copied before the run), and every bad argument raising the named
error before anything is launched.

    python3 tests/python/test_gpu_interop.py      (TILEC_BIN: the tilec binary)"""
import importlib
import os
import subprocess
import sys
import unittest

from scratch import scratch_dir  # tests/python/scratch.py

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "python"))
import tilec  # noqa: E402

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    HAVE_GPU = False

TILEC = os.environ.get("TILEC_BIN", os.path.join(ROOT, "build", "bin", "tilec"))


def chain8_torch(x):
    t = torch.relu(x * 2.0 + 1.0)
    return torch.clamp_max((-t) * (-t) * 0.5 - 3.0, 4.0)


@unittest.skipUnless(HAVE_GPU, "no GPU or no torch")
class TorchInterop(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.environ.setdefault("TILEC_CACHE_DIR", scratch_dir("tilec_cache_"))
        out = scratch_dir("tilec_interop_")
        subprocess.run([TILEC, os.path.join(ROOT, "bench", "wrapper", "chain8.tile"), "--emit", "py", "-o", out],
                       check=True)
        sys.path.insert(0, out)
        cls.chain8 = importlib.import_module("chain8")
        # g2: y = 4 * x (through t), z = 2 * w; gv: y = 2 * x, z = 2 * w (N and M apart)
        subprocess.run([TILEC, os.path.join(ROOT, "tests", "python", "alias.tile"), "--emit", "py", "-o", out],
                       check=True)
        cls.g2, cls.gv = importlib.import_module("g2"), importlib.import_module("gv")
        cls.graph = cls.chain8.load()
        cls.scale2 = cls.graph.module.kernel("scale2", 0)

    def test_graph_call_between_torch_ops_on_a_side_stream(self):
        n = 1 << 22
        x = torch.randn(n, device="cuda")
        torch.cuda.synchronize()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            torch.cuda._sleep(100_000_000)  # the producer is slow: a launch not ordered after it reads garbage
            a = x * 3.0
            y = self.chain8.call(a)  # torch's current stream: s
            z = y + 1.0
        self.assertIsInstance(y, torch.Tensor)
        self.assertEqual(y.device, x.device)
        s.synchronize()
        torch.testing.assert_close(z, chain8_torch(x * 3.0) + 1.0)

    def test_kernel_call_between_torch_ops_on_a_side_stream(self):
        n = 1 << 22
        x = torch.randn(n, device="cuda")
        b = torch.empty(n, device="cuda")
        torch.cuda.synchronize()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            torch.cuda._sleep(100_000_000)
            a = x + 1.0
            self.scale2(a, b, n)
            c = b * 0.5
        s.synchronize()
        torch.testing.assert_close(c, x + 1.0)

    def test_an_explicit_stream(self):
        n = 1 << 20
        x = torch.randn(n, device="cuda")
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        torch.cuda._sleep(1000)
        y = self.chain8.call(x, stream=s)
        s.synchronize()
        torch.testing.assert_close(y, chain8_torch(x))
        y2 = self.chain8.call(x, stream=s.cuda_stream)  # a raw CUstream
        s.synchronize()
        torch.testing.assert_close(y2, chain8_torch(x))

    def test_cuda_graph_replay_equals_eager(self):
        graph = self.chain8.load(cuda_graph=True)
        try:
            x = torch.randn(5000, device="cuda")
            eager = chain8_torch(x)
            for _ in range(5):  # the first call records, the rest replay (outputs freed: same addresses)
                torch.testing.assert_close(self.chain8.call(x), eager)
            x.mul_(-2.0)  # new contents, same address: the replay reads them
            torch.testing.assert_close(self.chain8.call(x), chain8_torch(x))
            st = graph.stats()
            self.assertGreaterEqual(st["replayed"], 3)
            recorded = st["recorded"]
            x2 = torch.randn(777, device="cuda")  # another shape: recorded again
            torch.testing.assert_close(self.chain8.call(x2), chain8_torch(x2))
            torch.testing.assert_close(self.chain8.call(x2), chain8_torch(x2))
            self.assertGreater(graph.stats()["recorded"], recorded)
        finally:
            graph.eager()

    def test_kept_outputs_update_the_recorded_graph_in_place(self):
        # outputs kept alive: a new address per call; with one graph kept,
        # each new recording updates it (cuGraphExecUpdate) and replays right
        graph = self.chain8.load().capture(graphs=1)
        try:
            x = torch.randn(5000, device="cuda")
            eager = chain8_torch(x)
            kept = [self.chain8.call(x) for _ in range(6)]
            for y in kept:
                torch.testing.assert_close(y, eager)
            self.assertEqual(len({y.data_ptr() for y in kept}), 6)
            st = graph.stats()
            self.assertGreaterEqual(st["updated"], 4, st)
            self.assertEqual(st["graphs"], 1)
            del kept
            torch.testing.assert_close(self.chain8.call(x), eager)
        finally:
            graph.eager()

    def test_static_outputs_replay_equals_eager_and_are_opt_in(self):
        graph = self.chain8.load().capture(static_outputs=True)
        try:
            x = torch.randn(5000, device="cuda")
            outs = [self.chain8.call(x) for _ in range(4)]  # the first call of the key is checked: its own output
            self.assertIs(outs[1], outs[3], "static outputs: the same tensor every call")
            torch.testing.assert_close(outs[3], chain8_torch(x))
            x.mul_(-2.0)
            y = self.chain8.call(x)
            self.assertIs(y, outs[3])
            torch.testing.assert_close(y, chain8_torch(x))  # the next call overwrote it
            self.assertGreaterEqual(graph.stats()["replayed"], 2)
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):  # another stream: outputs of its own
                z = self.chain8.call(x)
            torch.cuda.current_stream().wait_stream(s)
            self.assertIsNot(z, y)
            torch.testing.assert_close(z, chain8_torch(x))
            graph.capture()  # static outputs off: new tensors again
            a, b = self.chain8.call(x), self.chain8.call(x)
            self.assertIsNot(a, b)
            torch.testing.assert_close(b, chain8_torch(x))
        finally:
            graph.eager()

    def test_an_input_sharing_memory_with_a_static_output_is_copied_first(self):
        # issue 28 item 4: a static output fed back as the next call's input
        # was overwritten before it was read (g2(z1, y1) gave z = [80, 96, 112])
        graph = self.g2.load().capture(static_outputs=True)
        view = self.gv.load().capture(static_outputs=True)
        try:
            x = torch.tensor([1.0, 2.0, 3.0], device="cuda")
            w = torch.tensor([5.0, 6.0, 7.0], device="cuda")
            self.g2.call(x, w)  # the key's first call: checked
            y1, z1 = self.g2.call(x, w)  # the recipe: static outputs
            self.assertEqual((y1.tolist(), z1.tolist()), ([4.0, 8.0, 12.0], [10.0, 12.0, 14.0]))
            for _ in range(3):  # recorded, then replayed
                y1c, z1c = y1.clone(), z1.clone()
                y2, z2 = self.g2.call(z1, y1)
                self.assertIs(y2, y1)
                torch.testing.assert_close(y2, 4.0 * z1c)
                torch.testing.assert_close(z2, 2.0 * y1c)
            y1, z1 = self.g2.call(x, w)
            y2, z2 = self.g2.call(z1, y1)
            self.assertEqual((y2.tolist(), z2.tolist()), ([40.0, 48.0, 56.0], [8.0, 16.0, 24.0]))
            self.assertGreaterEqual(graph.stats()["static_input_copies"], 4)
            self.assertGreaterEqual(graph.stats()["replayed"], 1)
            a, b = torch.tensor([1.0, 2.0, 3.0, 4.0], device="cuda"), torch.ones(2, device="cuda")
            self.gv.call(a, b)
            y, z = self.gv.call(a, b)
            y4, z4 = self.gv.call(torch.zeros(4, device="cuda"), y[1:3])  # a view at an offset
            self.assertIs(y4, y)
            self.assertEqual((y4.tolist(), z4.tolist()), ([0.0, 0.0, 0.0, 0.0], [8.0, 12.0]))
            self.assertEqual(view.stats()["static_input_copies"], 1)
        finally:
            graph.eager()
            view.eager()

    def test_bad_kernel_arguments_raise_the_named_error(self):
        n = 1024
        x = torch.randn(n, device="cuda")
        b = torch.empty(n, device="cuda")
        cases = [
            ((x, b), TypeError, r"scale2\(\) takes 3 arguments \(x: \*f32, y: \*f32, n: i32\); got 2"),
            ((x, b, 2**40 + 5), OverflowError,
             r"scale2: parameter 'n' is i32 \(-2147483648 \.\. 2147483647\); got 1099511627781, which does not fit"),
            ((x.half(), b, n), TypeError, r"parameter 'x' \(\*f32\), argument 1: expects a f32 tensor; got a f16"),
            ((x.cpu(), b, n), ValueError, r"parameter 'x' \(\*f32\), argument 1: the tensor is in host memory"),
            ((x.view(32, 32).t(), b, n), ValueError, r"argument 1: the tensor must be contiguous"),
            ((x, 7, n), TypeError, r"parameter 'y' \(\*f32\), argument 2: expects a f32 tensor"),
            ((x, b, 2.5), TypeError, r"parameter 'n' is i32, an integer; got float 2.5"),
        ]
        b.fill_(7.0)
        for args, exc, msg in cases:
            with self.assertRaisesRegex(exc, msg):
                self.scale2(*args)
        torch.cuda.synchronize()
        self.assertTrue(bool((b == 7.0).all()), "nothing was launched")

    def test_bad_graph_arguments_raise_the_named_error(self):
        x = torch.randn(64, device="cuda")
        cases = [
            ((x.double(),), ValueError, "chain8: x must be a f32 tensor of rank 1"),
            ((x.view(8, 8),), ValueError, "chain8: x must be a f32 tensor of rank 1"),
            ((x[::2],), ValueError, r"chain8: x must be contiguous \(row-major\)"),
            ((x.cpu(),), ValueError, "chain8: x must be in device memory"),
        ]
        for args, exc, msg in cases:
            with self.assertRaisesRegex(exc, msg):
                self.chain8.call(*args)
        try:
            big = torch.empty(2**31, device="cuda")  # 8 GiB: N does not fit scale2's i32
        except torch.cuda.OutOfMemoryError:
            big = None
        if big is not None:
            with self.assertRaisesRegex(OverflowError, r"chain8: argument 'n' of scale2 \(N\) is 2147483648, which "
                                                       r"does not fit i32"):
                self.chain8.call(big)
            del big
        with self.assertRaisesRegex(TypeError, "stream must be"):
            self.chain8.call(x, stream="default")


if __name__ == "__main__":
    unittest.main()
