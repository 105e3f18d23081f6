"""bench/harness/bench.py's `llm` family (issue 35): every workload names a
kernel or graph of examples/llm.tile that exists, is of family llm, the fused linear cross-entropy comes first at the issue's
size with its peak memory recorded beside torch's and Liger's chunked form
(Liger's chunk by Liger's rule), and llm_table writes one row a workload
with the times, the ratios and the peak memory. Runs without torch or a
GPU (bench.py loaded with stand-ins, as test_bench_forms.py does)."""
import os
import re
import unittest

from test_bench_forms import ROOT, _load_bench


class LlmFamilyTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bench = _load_bench()

    def test_workloads_name_kernels_of_the_example(self):
        with open(os.path.join(ROOT, "examples", "llm.tile")) as f:
            src = f.read()
        items = set(re.findall(r"^(?:kernel|graph) (\w+)", src, re.M))
        ws = self.bench.llm_workloads()
        self.assertGreaterEqual(len(ws), 11)
        names = [w.name for w in ws]
        self.assertEqual(len(set(names)), len(names))
        for w in ws:
            self.assertEqual(w.family, "llm")
            self.assertEqual(w.tile, "examples/llm.tile")
            self.assertTrue(w.kernel is None or w.kernel in items, w.name)
            self.assertTrue(w.kernel or w.tilec_fn, f"{w.name}: a tilec side")
        for op in ("rmsnorm fwd", "rmsnorm bwd", "layernorm fwd", "layernorm bwd", "rope", "swiglu", "geglu",
                   "cross-entropy", "embedding gather", "embedding scatter-add"):
            self.assertTrue(any(op in n for n in names), op)
        self.assertIn("flce_bf16", items)
        flce = ws[0]
        self.assertIn("fused linear cross-entropy", flce.name)
        self.assertIn("T4096 D4096 V128256", flce.name)
        self.assertTrue(flce.memory)
        # Liger's chunk: next_power_of_2(cdiv(T, cdiv(V, D))) = 128 at the size
        self.assertEqual(list(flce.sides), ["torch chunked (Liger's form, C=128)"])
        # graph flce_bf16_n in 6 chunks (640 and 768 tokens): the fewest under Liger's peak
        self.assertIn("flce_bf16_n", items)
        n6 = [w for w in ws if w.name.endswith("T4096 D4096 V128256 N6")]
        self.assertEqual(len(n6), 1)
        self.assertTrue(n6[0].memory and n6[0].tilec_fn)

    def test_table(self):
        w = "llm rmsnorm fwd bf16 8192x4096"
        f = "llm fused linear cross-entropy fwd+bwd bf16 T4096 D4096 V128256 C128"
        recs = [
            {"kind": "check", "workload": f, "ok": True},
            {"kind": "device", "family": "llm", "workload": f, "side": "tilec Python", "median_ms": 20.0},
            {"kind": "device", "family": "llm", "workload": f, "side": "torch eager", "median_ms": 30.0},
            {"kind": "device", "family": "llm", "workload": f, "side": "torch.compile", "median_ms": 25.0},
            {"kind": "device", "family": "llm", "workload": f, "side": "torch chunked (Liger's form, C=128)",
             "median_ms": 40.0},
            {"kind": "memory", "family": "llm", "workload": f, "side": "tilec Python", "peak_bytes": 2 << 30},
            {"kind": "memory", "family": "llm", "workload": f, "side": "torch.compile", "peak_bytes": 5 << 30},
            {"kind": "check", "workload": w, "ok": False},
            {"kind": "device", "family": "llm", "workload": w, "side": "torch eager", "median_ms": 0.1},
        ]
        lines = self.bench.llm_table(recs).splitlines()
        self.assertEqual(len(lines), 4)
        self.assertIn("| fused linear cross-entropy fwd+bwd bf16 T4096 D4096 V128256 C128 "
                      "(torch chunked (Liger's form, C=128): 40.000 ms) | 20.000 | 30.000 | 25.000 | 1.50x | 1.25x | "
                      "tilec Python 2048; torch.compile 5120 |", lines[2])
        self.assertIn("| rmsnorm fwd bf16 8192x4096 (WRONG) |  | 0.100 |  |  |  |  |", lines[3])


if __name__ == "__main__":
    unittest.main(verbosity=2)
