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
    torch.float16, torch.float32, torch.bfloat16 = "f16", "f32", "bf16"
    torch.channels_last = "channels_last"
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

    def test_every_attention_form_is_four_workloads(self):
        """tests/attn_forms: each file at S = 4096 and 1024, causal and not,
        its kernel named by its one `kernel` line, its head size by `/// d:`."""
        files = sorted(f for f in os.listdir(os.path.join(ROOT, "tests", "attn_forms")) if f.endswith(".tile"))
        self.assertGreaterEqual(len(files), 4)
        ws = self.bench.attn_form_workloads()
        self.assertEqual(len(ws), 4 * len(files))
        for w in ws:
            self.assertEqual(w.family, "attnforms")
            stem = w.tile.split("/")[-1][:-len(".tile")]
            self.assertEqual(w.kernel, stem, "each file's kernel is named as the file")
            self.assertTrue(w.name.startswith(f"attnform {stem} attention d"), w.name)
        names = [w.name for w in ws]
        self.assertIn("attnform fa_d128 attention d128 4x8x4096 causal", names)
        self.assertIn("attnform fa_d64_lets attention d64 16x16x1024", names)

    def test_every_conv_form_is_a_workload_a_layer(self):
        files = sorted(f for f in os.listdir(os.path.join(ROOT, "tests", "conv_forms")) if f.endswith(".tile"))
        self.assertGreaterEqual(len(files), 2)
        ws = self.bench.conv_form_workloads()
        self.assertEqual(len(ws), len(self.bench.CONV_FORM_LAYERS) * len(files))
        for w in ws:
            self.assertEqual(w.family, "convforms")
            self.assertEqual(w.kernel, w.tile.split("/")[-1][:-len(".tile")], "each file's kernel is named as the file")
        self.assertIn("convform conv_gemm f16 1x1 s2 56x56 C256 K512 N32", [w.name for w in ws])

    def test_every_llm_form_is_a_workload_of_its_op(self):
        """tests/llm_forms: each file once, at the llm family's size of the
        op its `/// op:` line names, its kernel named as the file."""
        files = sorted(f for f in os.listdir(os.path.join(ROOT, "tests", "llm_forms")) if f.endswith(".tile"))
        self.assertGreaterEqual(len(files), 12)
        ws = self.bench.llm_form_workloads()
        self.assertEqual(len(ws), len(files))
        for w in ws:
            self.assertEqual(w.family, "llmforms")
            stem = w.tile.split("/")[-1][:-len(".tile")]
            self.assertEqual(w.kernel, stem, "each file's kernel is named as the file")
            self.assertTrue(w.name.startswith(f"llmform {stem} "), w.name)
        names = [w.name for w in ws]
        self.assertIn("llmform rmsnorm_loop rmsnorm fwd bf16 8192x4096", names)
        self.assertIn("llmform ce_online cross-entropy fwd+bwd bf16 4096x128256", names)
        self.assertIn("llmform rope_halves rope bf16 8192x32x128", names)
        self.assertIn("llmform swiglu_tuned swiglu bf16 8192x14336", names)

    def test_every_form_is_a_workload_with_a_known_convention(self):
        files = sorted(f for f in os.listdir(os.path.join(ROOT, "tests", "forms")) if f.endswith(".tile"))
        ws = self.bench.form_workloads(4096)
        self.assertGreaterEqual(len(ws), 10)
        at4 = [w for w in ws if w.name.endswith(" 4096")]
        self.assertEqual(sorted(w.tile.split("/")[-1] for w in at4), files)
        self.assertEqual(ws[0].name, "form ref 4096", "the reference first")
        # the A^T forms (A given MN-major, issue 29 item 2) at 8192 too, so `--only "form at"` runs them all
        self.assertEqual(sorted(w.tile.split("/")[-1] for w in ws if w.name.endswith(" 8192")),
                         [f for f in files if f.startswith("at")])
        self.assertIn("form at_bf16 8192", [w.name for w in ws])
        for w in ws:
            self.assertEqual(w.family, "forms")
            self.assertEqual(w.kernel, "gemm")
            info = self.bench.form_info(w.tile)
            self.assertIn(info["args"], ("plain", "ld", "bt", "at", "batched", "batched_bt"), w.tile)
            self.assertIn(info["dtype"], ("f16", "bf16"), w.tile)
            self.assertTrue(info["form"], f"{w.tile} says what form it is")
        self.assertEqual(self.bench.form_info("tests/forms/at_bf16.tile")["dtype"], "bf16")
        self.assertEqual(self.bench.form_info("tests/forms/at.tile")["args"], "at")

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

    def test_table_of_two_sizes(self):
        """A form at another size than the reference's is its own row, named with the size, and not
        compared with the reference (a 4096 reference against an 8192 product would say 0.12x)."""
        dev = lambda w, side, ms: {"kind": "device", "family": "forms", "workload": w, "side": side,  # noqa: E731
                                   "median_ms": ms}
        recs = [dev("form ref 4096", "tilec C", 0.2), dev("form ref 4096", "cuBLAS (torch.matmul)", 0.2),
                dev("form at 8192", "tilec C", 1.6), dev("form at 8192", "cuBLAS (torch.matmul)", 1.6),
                dev("form at 4096", "tilec C", 0.2), dev("form at 4096", "cuBLAS (torch.matmul)", 0.2)]
        t = self.bench.forms_table(recs).splitlines()
        self.assertTrue(t[2].startswith("| ref |"))
        self.assertTrue(t[3].startswith("| at |") and t[3].endswith("| 1.00x | 1.00x |"), t[3])
        self.assertTrue(t[4].startswith("| at 8192 |") and t[4].endswith("| 1.00x |  |"), t[4])


    def test_every_size_compares_with_its_own_reference(self):
        """TILEC_FORM_SIZES runs every form at each size, and each row is compared with the reference
        form at its own size."""
        old = os.environ.get("TILEC_FORM_SIZES")
        os.environ["TILEC_FORM_SIZES"] = "2048,8192"
        try:
            ws = self.bench.form_workloads()
        finally:
            if old is None:
                del os.environ["TILEC_FORM_SIZES"]
            else:
                os.environ["TILEC_FORM_SIZES"] = old
        names = [w.name for w in ws]
        self.assertEqual(names[0], "form ref 2048")
        # `/// sizes: 4096`: a form whose batch stride is literal sizes runs at 4096 alone
        self.assertNotIn("form batch_const 2048", names)
        self.assertEqual(self.bench.form_info("tests/forms/batch_const.tile")["sizes"], "4096")
        self.assertIn("form batch_const 4096", [w.name for w in self.bench.form_workloads(4096)])
        self.assertIn("form ref 8192", names)
        self.assertEqual(len([n for n in names if n.endswith(" 8192")]), len([n for n in names if n.endswith(" 2048")]))
        dev = lambda w, side, ms: {"kind": "device", "family": "forms", "workload": w, "side": side,  # noqa: E731
                                   "median_ms": ms}
        cb = "cuBLAS (torch.matmul)"
        recs = [dev("form ref 2048", "tilec C", 0.05), dev("form ref 2048", cb, 0.05),
                dev("form bk32 2048", "tilec C", 0.1), dev("form bk32 2048", cb, 0.05),
                dev("form ref 8192", "tilec C", 1.6), dev("form ref 8192", cb, 1.6),
                dev("form bk32 8192", "tilec C", 2.0), dev("form bk32 8192", cb, 1.6)]
        t = self.bench.forms_table(recs).splitlines()
        self.assertTrue(t[2].startswith("| ref |"), t[2])
        self.assertTrue(t[3].startswith("| bk32 |") and t[3].endswith("| 0.50x | 0.50x |"), t[3])
        self.assertTrue(t[4].startswith("| ref 8192 |") and t[4].endswith("| 1.00x | 1.00x |"), t[4])
        self.assertTrue(t[5].startswith("| bk32 8192 |") and t[5].endswith("| 0.80x | 0.80x |"), t[5])

if __name__ == "__main__":
    unittest.main()
