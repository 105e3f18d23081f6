"""bench/harness/bench.py's f32 products (issue 29 item 2): x @ W and
x @ W.T at 4096 against torch.matmul with tf32 off, the second on
examples/linear_f32.tile with W stored [N, K]. Runs without torch or a
GPU (bench.py loaded with stand-ins, as test_bench_forms does)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_bench_forms import ROOT, _load_bench  # noqa: E402


class F32MatmulTests(unittest.TestCase):
    def test_x_w_and_x_wt(self):
        bench = _load_bench()
        bench.torch.bfloat16 = "bf16"
        xw, xwt = bench.w_matmul(4096, 4096, 4096, "f32"), bench.w_matmul(4096, 4096, 4096, "f32", bt=True)
        self.assertEqual(xw.name, "matmul f32 4096")
        self.assertEqual(xwt.name, "matmul f32 x@W.T 4096")
        self.assertEqual((xwt.tile, xwt.kernel), ("examples/linear_f32.tile", "linear_f32"))
        with open(os.path.join(ROOT, xwt.tile)) as f:
            self.assertIn("kernel linear_f32(x: *f32, w: *f32, y: *f32, M: i32, N: i32, K: i32)", f.read())
        for w in (xw, xwt):
            self.assertEqual(w.family, "matmul")
            self.assertEqual(w.eager_is, "cuBLAS (torch.matmul)")
            self.assertEqual(w.flops, 2.0 * 4096 ** 3)
        # both are in the benchmark's list, next to each other
        with open(os.path.join(ROOT, "bench", "harness", "bench.py")) as f:
            src = f.read()
        self.assertIn('w.append(w_matmul(4096, 4096, 4096, "f32"))\n'
                      '    w.append(w_matmul(4096, 4096, 4096, "f32", bt=True))', src)


if __name__ == "__main__":
    unittest.main()
