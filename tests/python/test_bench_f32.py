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


class LadderTests(unittest.TestCase):
    def test_ladder_runs_carry_every_option_run_reads(self):
        """ladder.py (bench/harness/ladder.py: one workload for several .tile
        files, the f32 variant ladders of bench/results/f32*.md) hands bench.Run
        its options: each one Run reads must be there (a Namespace of four
        options stopped every ladder at Run.env() once `family` was read)."""
        import importlib.util
        import re
        import types
        bench = _load_bench()
        saved = {k: sys.modules.get(k) for k in ("bench", "torch")}
        sys.modules["bench"], sys.modules["torch"] = bench, types.ModuleType("torch")
        try:
            spec = importlib.util.spec_from_file_location("ladder_under_test",
                                                          os.path.join(ROOT, "bench", "harness", "ladder.py"))
            ladder = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(ladder)
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
        args = ladder.run_args("F.jsonl")
        with open(os.path.join(ROOT, "bench", "harness", "bench.py")) as f:
            read = set(re.findall(r"self\.args\.(\w+)", f.read()))
        self.assertIn("family", read)
        for name in sorted(read):
            self.assertTrue(hasattr(args, name), f"ladder's options lack {name}, which bench.Run reads")
        self.assertEqual((args.out, args.tag, args.no_compile, args.autotune), ("F.jsonl", "ladder", True, False))


if __name__ == "__main__":
    unittest.main()
