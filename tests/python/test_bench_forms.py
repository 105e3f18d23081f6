"""bench/harness/bench.py's `forms` family (issue 29): every file of
tests/forms becomes one workload with a known calling convention, and the
table it prints compares each form with cuBLAS and with the reference.
Runs without torch or a GPU: bench.py is loaded with stand-ins for torch
and tilec (only its pure parts are called)."""
import importlib.util
import os
import sys
import types
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _load_bench():
    torch = types.ModuleType("torch")
    torch.float16, torch.float32 = "f16", "f32"
    nn = types.ModuleType("torch.nn")
    fn = types.ModuleType("torch.nn.functional")
    torch.nn, nn.functional = nn, fn
    tilec = types.ModuleType("tilec")
    for i, k in enumerate(("PTR", "I32", "I64", "F32", "F64", "U32", "U64", "LIST")):
        setattr(tilec, k, i)
    saved = {k: sys.modules.get(k) for k in ("torch", "torch.nn", "torch.nn.functional", "tilec")}
    sys.modules.update({"torch": torch, "torch.nn": nn, "torch.nn.functional": fn, "tilec": tilec})
    try:
        spec = importlib.util.spec_from_file_location("bench_forms_under_test",
                                                      os.path.join(ROOT, "bench", "harness", "bench.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


class FormsFamilyTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bench = _load_bench()

    def test_every_form_is_a_workload_with_a_known_convention(self):
        files = sorted(f for f in os.listdir(os.path.join(ROOT, "tests", "forms")) if f.endswith(".tile"))
        ws = self.bench.form_workloads(4096)
        self.assertGreaterEqual(len(ws), 10)
        self.assertEqual(sorted(w.tile.split("/")[-1] for w in ws), files)
        self.assertEqual(ws[0].name, "form ref 4096", "the reference first")
        for w in ws:
            self.assertEqual(w.family, "forms")
            self.assertEqual(w.kernel, "gemm")
            info = self.bench.form_info(w.tile)
            self.assertIn(info["args"], ("plain", "ld", "bt"), w.tile)
            self.assertTrue(info["form"], f"{w.tile} says what form it is")

    def test_table(self):
        recs = [
            {"kind": "check", "workload": "form ref 4096", "ok": True},
            {"kind": "device", "family": "forms", "workload": "form ref 4096", "side": "tilec C", "median_ms": 1.0},
            {"kind": "device", "family": "forms", "workload": "form ref 4096", "side": "cuBLAS (torch.matmul)",
             "median_ms": 0.98},
            {"kind": "device", "family": "forms", "workload": "form bk32 4096", "side": "tilec C", "median_ms": 2.5},
            {"kind": "device", "family": "forms", "workload": "form bk32 4096", "side": "cuBLAS (torch.matmul)",
             "median_ms": 1.0},
            {"kind": "check", "workload": "form bt 4096", "ok": False},
            {"kind": "device", "family": "forms", "workload": "form bt 4096", "side": "cuBLAS (torch.matmul)",
             "median_ms": 1.0},
        ]
        t = self.bench.forms_table(recs).splitlines()
        self.assertTrue(t[0].startswith("| form |"))
        self.assertTrue(t[2].startswith("| ref |"), "the reference first")
        self.assertIn("| 1.000 | 0.980 | 0.98x | 1.00x |", t[2])
        bk = next(line for line in t if line.startswith("| bk32 |"))
        self.assertIn("| 2.500 | 1.000 | 0.40x | 0.40x |", bk)
        bt = next(line for line in t if line.startswith("| bt |"))
        self.assertIn("WRONG", bt)


if __name__ == "__main__":
    unittest.main()
