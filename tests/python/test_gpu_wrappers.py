"""The generated Python wrappers of the example graphs on the GPU (the GPU
machine, with torch): `tilec FILE --emit py` for examples/e2e.tile (graphs
e2e and e2e_fused), examples/block.tile (cuBLAS and a user extern
registered from Python) and examples/total.tile (a zeros accumulator: the
launch plan's fill step, eager and replayed from a CUDA graph), each
checked against torch on fresh inputs.

    python3 tests/python/test_gpu_wrappers.py [TILEC_BINARY]"""
import importlib
import os
import subprocess
import sys
import unittest

from scratch import scratch_dir  # tests/python/scratch.py

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tilec  # noqa: E402

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    HAVE_GPU = False

TILEC = os.environ.get("TILEC_BIN", "build/bin/tilec")


def generate(tile):
    out = scratch_dir("tilec_py_wrappers_")
    subprocess.run([TILEC, tile, "--emit", "py", "-o", out], check=True)
    sys.path.insert(0, out)
    return out


def e2e_reference(x, y, w, b):
    t = torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, 1e-5)
    return (torch.relu(torch.softmax(t, -1)) + y).sum(0)


@unittest.skipUnless(HAVE_GPU, "no GPU or no torch")
class GeneratedWrappers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.environ.setdefault("TILEC_CACHE_DIR", scratch_dir("tilec_cache_"))
        generate("examples/e2e.tile")
        generate("examples/block.tile")
        generate("examples/total.tile")

    def test_e2e_and_e2e_fused_match_torch(self):
        for name in ("e2e", "e2e_fused"):
            mod = importlib.import_module(name)
            for rows, cols in ((1, 1), (7, 1000), (300, 1024), (4096, 1024)):
                g = torch.Generator(device="cuda").manual_seed(rows * 131 + cols)
                x = torch.randn(rows, cols, device="cuda", generator=g)
                y = torch.randn(rows, cols, device="cuda", generator=g)
                w = torch.randn(cols, device="cuda", generator=g)
                b = torch.randn(cols, device="cuda", generator=g)
                s = torch.from_dlpack(mod.call(x, y, w, b))
                torch.testing.assert_close(s, e2e_reference(x, y, w, b), rtol=1e-4, atol=1e-3,
                                           msg=f"{name} {rows}x{cols}")

    def test_e2e_shape_errors_name_the_tensor(self):
        mod = importlib.import_module("e2e")
        x = torch.zeros(4, 8, device="cuda")
        with self.assertRaisesRegex(ValueError, "e2e: dimension 1 of y is 9, but C is 8"):
            mod.call(x, torch.zeros(4, 9, device="cuda"), torch.zeros(8, device="cuda"),
                     torch.zeros(8, device="cuda"))

    def test_block_with_cublas_and_a_python_extern(self):
        mod = importlib.import_module("block")
        mod.load()

        def topk2(inputs, outputs):
            h = torch.from_dlpack(inputs[0])
            v, i = h.max(-1)
            torch.from_dlpack(outputs[0]).copy_(v)
            torch.from_dlpack(outputs[1]).copy_(i.to(torch.int32))

        mod.externs().register("my_lib_topk2", topk2)
        rows, cols = 33, 64
        x = torch.randn(rows, cols, device="cuda")
        w = torch.randn(cols, cols, device="cuda")
        y, s, flat = mod.call(x, w)
        h = (x * 0.5 + 1.0) @ w
        torch.cuda.synchronize()
        y, s, flat = torch.from_dlpack(y), torch.from_dlpack(s), torch.from_dlpack(flat)
        torch.testing.assert_close(y, torch.relu(h) + x, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(s, h.max(-1).values, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(flat, y.reshape(-1))

    def test_total_fills_its_accumulator_eager_and_replayed(self):
        mod = importlib.import_module("total")
        for n in (1, 8191, 8193, 1 << 22):
            g = torch.Generator(device="cuda").manual_seed(n)
            x = torch.randn(n, device="cuda", generator=g)
            ref = x.double().sum()
            tol = 1e-5 * x.double().abs().sum().item() + 1e-6
            s = mod.call(x)  # the zeros step, then one launch
            self.assertLessEqual(abs(s.double().item() - ref.item()), tol, f"eager, n={n}")
        graph = mod.load(cuda_graph=True)
        try:
            x = torch.randn(1 << 20, device="cuda")
            ref = x.double().sum().item()
            for i in range(4):  # the graph refills s on every replay: no sum carries over
                s = mod.call(x)
                self.assertLessEqual(abs(s.double().item() - ref), 1e-5 * x.abs().sum().item(), f"call {i}")
            self.assertGreaterEqual(graph.stats()["replayed"], 1)
        finally:
            graph.eager()


if __name__ == "__main__":
    unittest.main()
