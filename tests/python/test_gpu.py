"""GPU round trip of the Python package (the GPU machine, with torch):
build the examples through the runtime, launch with torch tensors and with
tilec buffers, hand buffers to torch through DLPack and the CUDA array
interface without a copy, and check a warm start compiles nothing."""
import os
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


@unittest.skipUnless(HAVE_GPU, "no GPU or no torch")
class GpuTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.environ["TILEC_CACHE_DIR"] = scratch_dir("tilec_py_")
        torch.cuda.init()

    def test_add_relu_with_torch_tensors(self):
        mod = tilec.load("examples/add_relu.tile")
        for n in (1, 1000, 4097, (1 << 20) + 3):
            x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
            out = torch.full((n,), float("nan"), device="cuda")
            torch.cuda.synchronize()
            mod.add_relu(x, y, out, n)
            tilec.device().synchronize()
            torch.testing.assert_close(out, torch.relu(x + y))

    def test_generic_kernels_for_f16_bf16_and_f32(self):
        # examples/softmax_generic.tile (docs/language.md §4.2): one source per
        # kernel, an instance per dtype chosen by the tensors' dtype; the
        # reductions accumulate in f32, so each dtype matches torch computing
        # in f32 and rounding the result to the dtype
        mod = tilec.load("examples/softmax_generic.tile")
        self.assertIsInstance(mod.row_softmax, tilec.GenericKernel)
        torch.manual_seed(0)
        for dt, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16"), (torch.float32, "f32")):
            for rows, cols in ((7, 1000), (5, 1024), (3, 3000)):  # one pass, and the three-pass loop
                x = (torch.randn(rows, cols, device="cuda") * 4).to(dt)
                y = torch.full_like(x, float("nan"))
                torch.cuda.synchronize()
                mod.row_softmax(x, y, rows, cols)
                tilec.device().synchronize()
                self.assertEqual(mod.row_softmax.last.name, f"row_softmax__{name}")
                ref = torch.softmax(x.float(), 1).to(dt)
                # f16/bf16: torch's tolerances for the dtype (about one unit in the last place)
                tol = {"atol": 1e-6, "rtol": 1e-4} if dt == torch.float32 else {}
                torch.testing.assert_close(y, ref, **tol, msg=f"softmax {name} {rows}x{cols}")
            rows, cols, eps = 9, 4096, 1e-6
            x = torch.randn(rows, cols, device="cuda").to(dt)
            w = (torch.rand(cols, device="cuda") + 0.5).to(dt)
            y = torch.full_like(x, float("nan"))
            torch.cuda.synchronize()
            mod.rmsnorm(x, w, y, rows, cols, eps)
            tilec.device().synchronize()
            self.assertEqual(mod.rmsnorm.last.name, f"rmsnorm__{name}")
            xf = x.float()  # HF Llama: w * (x * rsqrt(mean(x^2) + eps)).to(dtype)
            ref = (w.float() * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(dt).float()).to(dt)
            # the normalised row is rounded to the dtype twice (as HF does): two units in the last place
            tol = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 2e-2}[dt]
            torch.testing.assert_close(y, ref, atol=tol, rtol=tol, msg=f"rmsnorm {name}")
        with self.assertRaisesRegex(TypeError, r"row_softmax: takes T = f16 \| bf16 \| f32, but argument 1 \('x': \*T\) "
                                               r"is a f64 tensor"):
            x = torch.zeros(2, 4, dtype=torch.float64, device="cuda")
            mod.row_softmax(x, x, 2, 4)

    def test_axes_given_by_hints_and_constants(self):
        # tests/golden/axes/hints.tile: reductions, a scan and pid along axes named by hints
        mod = tilec.load("tests/golden/axes/hints.tile")
        x = torch.randn(16, 32, device="cuda")
        y = torch.full((48,), float("nan"), device="cuda")
        i = torch.full((16,), -1, dtype=torch.int32, device="cuda")
        torch.cuda.synchronize()
        mod.row_reduce(x, y, i)
        z = torch.full((16, 32), float("nan"), device="cuda")
        c = torch.full((32,), float("nan"), device="cuda")
        mod.col_scan(x, c, z)
        n = 5
        g = torch.full((n, n), float("nan"), device="cuda")
        mod.grid_axes(g, n)
        tilec.device().synchronize()
        torch.testing.assert_close(y[:16], x.sum(1))
        torch.testing.assert_close(y[16:32], x.amax(1))
        torch.testing.assert_close(y[32:], x.sum(1))
        torch.testing.assert_close(i, x.argmax(1).to(torch.int32))
        torch.testing.assert_close(c, x.sum(0))
        torch.testing.assert_close(z, x.cumsum(1))
        torch.testing.assert_close(g, torch.full((n, n), float(n), device="cuda"))

    def test_conv2d_nhwc_against_torch(self):
        # examples/conv2d.tile through the multi-kernel, channels_last torch tensors
        import torch.nn.functional as F
        mod = tilec.load("examples/conv2d.tile")
        for n, h, c, k, r, st in ((2, 14, 64, 96, 3, 1), (2, 15, 32, 64, 3, 2), (2, 14, 128, 64, 1, 2)):
            pad = r // 2
            x = torch.randn(n, c, h, h, device="cuda").half().to(memory_format=torch.channels_last)
            w = (torch.randn(k, c, r, r, device="cuda") / (c * r * r) ** 0.5).half()
            b = torch.randn(k, device="cuda").half()
            oh = (h + 2 * pad - r) // st + 1
            y = torch.full((n, oh, oh, k), float("nan"), device="cuda", dtype=torch.float16)
            z = torch.full((n, oh, oh, k), float("nan"), device="cuda", dtype=torch.float16)
            xs, ws = x.permute(0, 2, 3, 1), w.permute(2, 3, 1, 0).contiguous()
            mod.conv2d_f16(xs, ws, y, n, h, h, c, k, r, r, oh, oh, st, pad)
            mod.conv2d_nhwc(xs, ws, b, z, n, h, h, c, k, r, r, oh, oh, st, pad)
            tilec.device().synchronize()
            ref = F.conv2d(x.float(), w.float(), None, st, pad).permute(0, 2, 3, 1)
            torch.testing.assert_close(y.float(), ref, rtol=2e-2, atol=2e-2)
            torch.testing.assert_close(z.float(), torch.relu(ref + b.float()), rtol=2e-2, atol=2e-2)

    def test_conv2d_every_variant_against_torch(self):
        # examples/conv2d.tile, every variant of both kernels against
        # F.conv2d: 3x3 and 1x1, stride 1 and 2, padding or not, odd and
        # unequal sizes, C below BK and not a multiple of 8 (partly masked
        # chunks), K not a multiple of the tile. On a 9.0 device every
        # variant runs on its sm_90a twin (wgmma, the producer warp group
        # copying A by cp.async, B by TMA where its box's rows are all
        # below C, by cp.async where not: C = 3, 24, 80: lower/wggather.c),
        # which the tma log says (fd 2 read back: the runtime writes it;
        # K = 5 and 70, rows of 10 and 140 bytes, take the variant)
        import tempfile
        import torch.nn.functional as F
        hopper = torch.cuda.get_device_capability() == (9, 0)
        shapes = ((2, 14, 14, 64, 96, 3, 1, 1), (1, 15, 9, 32, 70, 3, 2, 1), (2, 14, 14, 128, 64, 1, 2, 0),
                  (1, 8, 8, 3, 5, 1, 1, 0), (1, 9, 11, 24, 136, 3, 1, 0), (2, 7, 7, 80, 136, 3, 2, 1))
        log = tempfile.TemporaryFile()
        saved = os.dup(2)
        os.environ["TILEC_LOGS"] = "tma"
        os.dup2(log.fileno(), 2)
        try:
            mod = tilec.load("examples/conv2d.tile")
            for n, h, wd, c, k, r, st, pad in shapes:
                oh, ow = (h + 2 * pad - r) // st + 1, (wd + 2 * pad - r) // st + 1
                x = torch.randn(n, c, h, wd, device="cuda").half().to(memory_format=torch.channels_last)
                w = (torch.randn(k, c, r, r, device="cuda") / (c * r * r) ** 0.5).half()
                b = torch.randn(k, device="cuda").half()
                xs, ws = x.permute(0, 2, 3, 1), w.permute(2, 3, 1, 0).contiguous()
                ref = F.conv2d(x.float(), w.float(), None, st, pad).permute(0, 2, 3, 1)
                for v in range(8):
                    y = torch.full((n, oh, ow, k), float("nan"), device="cuda", dtype=torch.float16)
                    z = torch.full((n, oh, ow, k), float("nan"), device="cuda", dtype=torch.float16)
                    torch.cuda.synchronize()
                    mod.kernel("conv2d_f16", v)(xs, ws, y, n, h, wd, c, k, r, r, oh, ow, st, pad)
                    mod.kernel("conv2d_nhwc", v)(xs, ws, b, z, n, h, wd, c, k, r, r, oh, ow, st, pad)
                    tilec.device().synchronize()
                    what = f"variant {v}, N{n} H{h} W{wd} C{c} K{k} {r}x{r} stride {st} pad {pad}"
                    torch.testing.assert_close(y.float(), ref, rtol=2e-2, atol=2e-2, msg=lambda m: f"{what}: {m}")
                    torch.testing.assert_close(z.float(), torch.relu(ref + b.float()), rtol=2e-2, atol=2e-2,
                                               msg=lambda m: f"{what}, fused: {m}")
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            del os.environ["TILEC_LOGS"]
        log.seek(0)
        text = log.read().decode(errors="replace")
        for name in ("conv2d_f16", "conv2d_nhwc"):
            for v in range(8):
                if hopper:
                    self.assertIn(f"launched sm_90a twin {name}_v{v}_tma", text, text[-3000:])

    def test_buffers_through_dlpack(self):
        mod = tilec.load("examples/softmax.tile")
        rows, cols = 7, 1000
        x = torch.randn(rows, cols, device="cuda")
        torch.cuda.synchronize()
        y = tilec.Buffer((rows, cols), "f32")
        y.fill_u32(0x7FC00000)
        mod.kernel("softmax", 0)(x, y, rows, cols)
        mod.softmax(x, y, rows, cols)  # chosen variant, same result
        ty = torch.from_dlpack(y)              # zero-copy
        self.assertEqual(ty.data_ptr(), y.ptr)
        torch.testing.assert_close(ty, torch.softmax(x, -1))
        tz = torch.as_tensor(y, device="cuda")  # through __cuda_array_interface__
        self.assertEqual(tz.data_ptr(), y.ptr)

    def test_pool_gives_spares_back_when_the_device_is_full(self):
        pool = tilec.Pool()
        spare = pool.alloc((64 << 20,), "u8")
        pool.release(spare)  # 64 MiB kept by the pool
        fill = []
        for size in (1 << 30, 64 << 20, 2 << 20):  # fill the device
            while True:
                try:
                    fill.append(tilec.Buffer((size,), "u8"))
                except tilec.TilecError:
                    break
        with self.assertRaises(tilec.TilecError):
            tilec.Buffer((32 << 20,), "u8")
        b = pool.alloc((32 << 20,), "u8")  # another size: the spare goes back first
        self.assertNotEqual(b.ptr, 0)
        del b, fill

    def test_bytes_round_trip(self):
        import array
        data = array.array("f", [float(i) - 3.5 for i in range(1000)])
        b = tilec.Buffer.from_bytes(data, (1000,), "f32")
        self.assertEqual(b.tolist(), list(data))

    def test_multi_kernel_picks_per_shape(self):
        mod = tilec.load("examples/matmul.tile")
        k = mod.matmul  # variant None: chosen per shape
        for m in (64, 256, 1000):
            a = torch.randn(m, 512, device="cuda").half()
            b = torch.randn(512, 384, device="cuda").half()
            c = torch.full((m, 384), float("nan"), device="cuda")
            torch.cuda.synchronize()
            k(a, b, c, m, 384, 512)
            tilec.device().synchronize()
            self.assertIn(k.last_variant, (0, 1, 2))
            torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-2, rtol=1e-2)
            first = k.last_variant
            k(a, b, c, m, 384, 512)  # the stored choice
            self.assertEqual(k.last_variant, first)
        a = torch.randn(64, 512, device="cuda").half()
        b = torch.randn(512, 384, device="cuda").half()
        c = torch.empty(64, 384, device="cuda")
        os.environ["TILEC_MULTI_KERNEL"] = "1"  # read when a module is built
        try:
            forced = tilec.load("examples/matmul.tile").matmul
            forced(a, b, c, 64, 384, 512)
            self.assertEqual(forced.last_variant, 1)
            os.environ["TILEC_MULTI_KERNEL"] = "7"
            bad = tilec.load("examples/matmul.tile").matmul
            with self.assertRaises(tilec.TilecError):
                bad(a, b, c, 64, 384, 512)
        finally:
            del os.environ["TILEC_MULTI_KERNEL"]

    def test_warm_start_compiles_nothing(self):
        a = tilec.load("examples/matmul.tile")
        first = a.stats()
        b = tilec.load("examples/matmul.tile")
        second = b.stats()
        self.assertEqual(second["nvrtc_compiles"], 0)
        self.assertTrue(second["cache_hit"])
        self.assertEqual(first["key"], second["key"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
