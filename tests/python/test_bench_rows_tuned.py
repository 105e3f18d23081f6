"""bench/harness/bench.py's tuned row kernels (issue 31 item 2): the
softmax and layernorm of bench/harness/rows_tuned.tile, the multi-row
kernels of examples/ with their hints and variants removed, at every shape
of the hand-tuned softmax and layernorm rows, in the `tuned` family, and the
table that compares them with the better hand-tuned form and torch.compile.
Runs without torch or a GPU (bench.py loaded with stand-ins, as
test_bench_forms does); the file is checked with build/bin/tilec."""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_bench_forms import ROOT, _load_bench  # noqa: E402


def body(path, kernel):
    """A kernel's text from its header's first line to its closing brace,
    with its hints and variants lines and /// lines dropped."""
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    start = text.index(f"kernel {kernel}(")
    end = text.index("\n}\n", start) + 2
    lines = [ln for ln in text[start:end].splitlines()
             if not re.match(r"\s*(hints|variants)\b", ln) and not ln.startswith("///")]
    return "\n".join(lines[1:])  # without the name


class BenchTests(unittest.TestCase):
    """bench.py loaded once a class with torch's stand-ins (what workloads() reads of torch)."""
    @classmethod
    def setUpClass(cls):
        cls.bench = _load_bench()
        for name in ("channels_last", "bfloat16"):
            setattr(cls.bench.torch, name, name)


class RowsTunedTests(BenchTests):
    def test_workloads_at_every_hand_tuned_shape(self):
        ws = {w.name: w for w in self.bench.workloads()}
        for op, shapes in (("softmax", self.bench.SOFTMAX_SHAPES), ("layernorm", self.bench.LAYERNORM_SHAPES)):
            for r, c in shapes:
                w = ws[f"{op} {r}x{c} tuned"]
                self.assertEqual((w.family, w.tile, w.kernel), ("tuned", "bench/harness/rows_tuned.tile", op))
                self.assertIn(f"{op} {r}x{c}", ws, "the hand-tuned one-row form beside it")
        for shape in ("65536x128", "32768x512", "8192x1024", "8192x4096"):
            self.assertIn(f"softmax {shape} tuned", ws)
            self.assertIn(f"layernorm {shape} tuned", ws)

    def test_the_hand_tuned_kernels_without_hints(self):
        for op, src, kern in (("softmax", "examples/softmax_rows.tile", "softmax_multirow"),
                              ("layernorm", "examples/layernorm_rows.tile", "layernorm_rows")):
            self.assertEqual(body("bench/harness/rows_tuned.tile", op), body(src, kern))

    def test_default_space_of_a_row_kernel(self):
        tilec = os.path.join(ROOT, "build", "bin", "tilec")
        out = subprocess.run([tilec, os.path.join(ROOT, "bench/harness/rows_tuned.tile"), "--emit", "tune"],
                             capture_output=True, text=True, check=True).stdout
        for op in ("softmax", "layernorm"):
            self.assertRegex(out, rf"kernel {op}: tune \(the default space of a row kernel\) at line \d+: "
                                  r"240 configurations, \d+ pruned, \d+ kept")

    def test_table(self):
        recs = [{"kind": "device", "workload": "softmax 65536x128", "side": "tilec C", "median_ms": 0.12},
                {"kind": "device", "workload": "softmax_rows 65536x128", "side": "tilec C", "median_ms": 0.025},
                {"kind": "device", "workload": "softmax 65536x128 tuned", "side": "tilec C", "median_ms": 0.026,
                 "variant": 3},
                {"kind": "device", "workload": "softmax 65536x128 tuned", "side": "torch.compile",
                 "median_ms": 0.0247},
                {"kind": "device", "workload": "layernorm 4096x768 tuned", "side": "tilec C", "median_ms": 0.02,
                 "variant": 1},
                {"kind": "device", "workload": "layernorm 4096x768", "side": "tilec C", "median_ms": 0.03}]
        lines = self.bench.rows_tuned_table(recs).splitlines()
        self.assertEqual(lines[2], "| softmax 65536x128 | 0.0250 | softmax_rows | 0.0260 | 3 | 0.0247 | 0.96x | 0.95x |")
        self.assertEqual(lines[3], "| layernorm 4096x768 | 0.0300 | layernorm | 0.0200 | 1 |  | 1.50x |  |")


class GemmTunedTests(BenchTests):
    """The GEMMs of the benchmark with no tile hints beside their hand-tuned
    forms (`--family handtuned`) and gemm_tuned_table."""

    def test_every_gemm_has_its_hand_tuned_form(self):
        ws = {w.name: w for w in self.bench.workloads()}
        names = [n for n, w in ws.items() if w.tile == "bench/harness/gemm.tile"]
        self.assertIn("matmul+bias+gelu f16 4096", names)
        self.assertIn("bmm f16 16x1024x1024x1024", names)
        for n in names:
            h = ws[f"{n} hand-tuned"]
            self.assertEqual((h.family, h.tile, h.kernel), ("handtuned", "tests/gemm_variants.tile", ws[n].kernel))
        with open(os.path.join(ROOT, "bench/harness/gemm.tile")) as f:
            self.assertNotRegex(f.read(), r"\n\s*(hints|variants|tune)\b", "no tile hints in the benchmark's GEMMs")

    def test_table(self):
        recs = [{"kind": "device", "workload": "bmm f16 16x1024x1024x1024", "side": "tilec C", "median_ms": 0.05,
                 "variant": 8},
                {"kind": "device", "workload": "bmm f16 16x1024x1024x1024", "side": "cuBLAS (torch.bmm)",
                 "median_ms": 0.045},
                {"kind": "device", "workload": "bmm f16 16x1024x1024x1024 hand-tuned", "side": "tilec C",
                 "median_ms": 0.055, "variant": 2},
                {"kind": "device", "workload": "matmul f16 1024", "side": "tilec C", "median_ms": 0.01}]
        lines = self.bench.gemm_tuned_table(recs).splitlines()
        self.assertEqual(len(lines), 3, "a row only where the hand-tuned form was timed too")
        self.assertEqual(lines[2], "| bmm f16 16x1024x1024x1024 | 0.0500 | 8 | 0.0550 | 2 | 1.10x | 0.0450 | 0.90x |")


class Issue31Tests(BenchTests):
    """`--family issue31`: issue 31's whole figure list in one process, and
    issue31_table's pass or miss per figure."""

    def test_one_family_selects_every_figure_and_nothing_else(self):
        sel = {w.name for w in self.bench.workloads() if self.bench.issue31_selects(w)}
        for dt in ("f16", "bf16"):
            for shape in ("1024", "2048", "4096", "8192", "16x8192x8192", "64x8192x8192"):
                self.assertIn(f"matmul {dt} {shape}", sel)
                self.assertIn(f"matmul {dt} {shape} hand-tuned", sel)
        for n in ("matmul+bias+gelu f16 4096", "bmm f16 16x1024x1024x1024"):
            self.assertIn(n, sel)
            self.assertIn(f"{n} hand-tuned", sel)
        for op, shapes in (("softmax", self.bench.SOFTMAX_SHAPES), ("layernorm", self.bench.LAYERNORM_SHAPES)):
            for r, c in shapes:
                self.assertIn(f"{op} {r}x{c} tuned", sel)
                self.assertIn(f"{op} {r}x{c}", sel)
        self.assertIn("softmax_rows 65536x128", sel)
        self.assertIn("layernorm_rows 65536x128", sel)
        for n in sel:  # no other kernel: no f32 GEMM, attention, conv, forms, llm
            self.assertRegex(n, r"^(matmul (f16|bf16) |matmul\+bias\+gelu |bmm |softmax|layernorm)", n)

    def test_torch_compile_only_at_65536x128(self):
        class Args:
            no_compile, compile_only, family = False, None, ["issue31"]
        run = self.bench.Run.__new__(self.bench.Run)
        run.args = Args()
        ws = {w.name: w for w in self.bench.workloads()}
        compiled = sorted(n for n, w in ws.items() if self.bench.issue31_selects(w) and run.compiles(w))
        self.assertEqual(compiled, ["layernorm 65536x128 tuned", "softmax 65536x128 tuned"])
        Args.compile_only = ["tuned"]
        self.assertTrue(run.compiles(ws["softmax 4096x1000 tuned"]))
        Args.no_compile = True
        self.assertFalse(run.compiles(ws["softmax 65536x128 tuned"]))

    def test_table_pass_and_miss(self):
        def dev(w, side, ms, v=None):
            return {"kind": "device", "workload": w, "side": side, "median_ms": ms, "variant": v}
        recs = [{"kind": "env", "device": "NVIDIA H100 80GB HBM3", "nvidia_smi": "NVIDIA H100 80GB HBM3, 580.1, x",
                 "torch": "2.11", "cuda": "13.0", "date": "2026-11-28 05:00 UTC", "commit": "abc1234",
                 "families": ["issue31"]},
                dev("matmul f16 16x8192x8192", "tilec C", 0.059, 2),
                dev("matmul f16 16x8192x8192 hand-tuned", "tilec C", 0.064, 5),
                dev("softmax 65536x128", "tilec C", 0.12),
                dev("softmax_rows 65536x128", "tilec C", 0.028),
                dev("softmax 65536x128 tuned", "tilec C", 0.029, 17),
                dev("softmax 65536x128 tuned", "torch.compile", 0.027),
                dev("layernorm 4096x768 tuned", "tilec C", 0.0142, 1)]
        lines = self.bench.issue31_table(recs).splitlines()
        self.assertEqual(lines[2], "| matmul f16 16x8192x8192 | 0.0590 | 2 | hand-tuned (tests/gemm_variants.tile) "
                                   "| 0.0640 | 5 | 1.085x | 0.95x | pass |")
        self.assertEqual(lines[3], "| softmax 65536x128 | 0.0290 | 17 | hand-tuned (softmax_rows) | 0.0280 |  "
                                   "| 0.966x | 0.95x | pass |")
        self.assertEqual(lines[4], "| softmax 65536x128 | 0.0290 | 17 | torch.compile | 0.0270 |  | 0.931x | 0.95x "
                                   "| **miss** |")
        self.assertEqual(lines[5], "| layernorm 4096x768 | 0.0142 | 1 | hand-tuned |  |  |  | 0.95x | **no figure** |")
        self.assertEqual(lines[-1], "2 of 4 figures pass (ratio: the reference's time over the hint-less kernel's, "
                                    ">= 0.95x asked).")
        edge = [dev("layernorm 65536x128 tuned", "tilec C", 0.02, 17),
                dev("layernorm 65536x128 tuned", "torch.compile", 0.01898)]
        self.assertEqual(self.bench.issue31_table(edge).splitlines()[2],
                         "| layernorm 65536x128 | 0.0200 | 17 | hand-tuned |  |  |  | 0.95x | **no figure** |")
        self.assertEqual(self.bench.issue31_table(edge).splitlines()[3],  # 0.949: a miss, and it reads as one
                         "| layernorm 65536x128 | 0.0200 | 17 | torch.compile | 0.0190 |  | 0.949x | 0.95x | **miss** |")
        self.assertEqual(self.bench.env_header(recs), "NVIDIA H100 80GB HBM3, driver 580.1, torch 2.11, CUDA 13.0, "
                                                      "2026-11-28 05:00 UTC, tilec abc1234")


if __name__ == "__main__":
    unittest.main()
