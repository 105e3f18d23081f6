"""examples/llm.tile on the GPU against torch (issue 35's set of fused LLM
kernels, the ones bench.py --family llm times): RMSNorm and LayerNorm
forward and backward, RoPE, SwiGLU, GeGLU, cross-entropy forward + backward
in one pass (also in place), embedding gather and scatter-add, and the fused
linear cross-entropy graph through its Python wrapper; each generic kernel
for bf16, f16 and f32, at ragged sizes (rows shorter than the tile, rows of
8192 and 9000 longer than the 4096 variant's tile: every variant must be
right for every shape, the runtime picks one by timing; a vocab longer than
the tile), outputs poisoned with NaN first, against torch in f64.

    python3 tests/python/test_gpu_llm.py [TILEC_BINARY]"""
import os
import subprocess
import sys
import unittest

from scratch import scratch_dir  # tests/python/scratch.py

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tilec  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    HAVE_GPU = False

TILEC = os.environ.get("TILEC_BIN", "build/bin/tilec")
TILE = "examples/llm.tile"
DTYPES = (("bf16", "bfloat16", 1e-2), ("f16", "float16", 2e-3), ("f32", "float32", 1e-5))


def rel(a, b):
    a, b = a.double(), b.double()
    if not torch.isfinite(a).all():
        return float("inf")
    return float((a - b).norm() / b.norm())


def poisoned(*shape, dtype):
    return torch.full(shape, float("nan"), device="cuda", dtype=dtype)


@unittest.skipUnless(HAVE_GPU, "no GPU or no torch")
class LlmKernels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.environ.setdefault("TILEC_CACHE_DIR", scratch_dir("tilec_llm_"))
        torch.cuda.init()
        cls.mod = tilec.load(TILE)

    def each_dtype(self):
        """(name, torch dtype, tolerance) of each dtype. No subTest here: a
        failure inside a generator's subTest closes the generator (the GPU
        run of 2026-11-27 reported GeneratorExit errors over the failure)."""
        return [(name, getattr(torch, tname), tol) for name, tname, tol in DTYPES]

    def close(self, got, want, tol, what):
        e = rel(got, want)
        print(f"{what}: relative L2 error {e:.2e}")
        self.assertLess(e, tol, what)

    def test_rmsnorm_forward_and_backward(self):
        m = self.mod
        for name, dt, tol in self.each_dtype():
            for rows, cols in ((37, 4096), (5, 1000), (3, 8192), (2, 9000)):
                x = torch.randn(rows, cols, device="cuda").to(dt)
                w = (1 + 0.1 * torch.randn(cols, device="cuda")).to(dt)
                y, rstd = poisoned(rows, cols, dtype=dt), poisoned(rows, dtype=torch.float32)
                m.rmsnorm_fwd(x, w, y, rstd, rows, cols, 1e-6)
                xd = x.double()
                rs = torch.rsqrt(xd.pow(2).mean(-1) + 1e-6)
                torch.cuda.synchronize()
                self.assertEqual(m.rmsnorm_fwd.last.name, f"rmsnorm_fwd__{name}")
                self.close(rstd, rs, 1e-5, f"rmsnorm rstd {name} {rows}x{cols}")
                self.close(y, w.double() * (xd * rs[:, None]).to(dt).double(), tol, f"rmsnorm y {name} {rows}x{cols}")
                dy = torch.randn(rows, cols, device="cuda").to(dt)
                rpp = 4
                g = -(-rows // rpp)
                dx, dwp, dw = poisoned(rows, cols, dtype=dt), poisoned(g, cols, dtype=torch.float32), \
                    poisoned(cols, dtype=dt)
                m.rmsnorm_bwd(dy, x, w, rstd, dx, dwp, rows, cols, rpp)
                m.col_sum(dwp, dw, g, cols)
                torch.cuda.synchronize()
                # autograd of HF's RMSNorm in f64 (the rounding of x * rstd to T left out of the gradient)
                xa = xd.clone().requires_grad_(True)
                wa = w.double().clone().requires_grad_(True)
                out = wa * (xa * torch.rsqrt(xa.pow(2).mean(-1, keepdim=True) + 1e-6))
                gx, gw = torch.autograd.grad(out, (xa, wa), dy.double())
                self.close(dx, gx, tol, f"rmsnorm dx {name} {rows}x{cols}")
                self.close(dw, gw, tol, f"rmsnorm dw {name} {rows}x{cols}")

    def test_layernorm_forward_and_backward(self):
        m = self.mod
        for name, dt, tol in self.each_dtype():
            for rows, cols in ((37, 4096), (5, 1000), (3, 8192), (2, 9000)):
                x = (torch.randn(rows, cols, device="cuda") + 0.5).to(dt)
                w, b = torch.randn(cols, device="cuda").to(dt), torch.randn(cols, device="cuda").to(dt)
                y = poisoned(rows, cols, dtype=dt)
                mean, rstd = poisoned(rows, dtype=torch.float32), poisoned(rows, dtype=torch.float32)
                m.layernorm_fwd(x, w, b, y, mean, rstd, rows, cols, 1e-5)
                torch.cuda.synchronize()
                xa = x.double().clone().requires_grad_(True)
                wa, ba = w.double().clone().requires_grad_(True), b.double().clone().requires_grad_(True)
                out = F.layer_norm(xa, (cols,), wa, ba, 1e-5)
                self.close(y, out.detach(), tol, f"layernorm y {name} {rows}x{cols}")
                self.close(mean, x.double().mean(-1), 1e-5, f"layernorm mean {name}")
                dy = torch.randn(rows, cols, device="cuda").to(dt)
                rpp = 8
                g = -(-rows // rpp)
                dx = poisoned(rows, cols, dtype=dt)
                dwp, dbp = poisoned(g, cols, dtype=torch.float32), poisoned(g, cols, dtype=torch.float32)
                dw, db = poisoned(cols, dtype=dt), poisoned(cols, dtype=dt)
                m.layernorm_bwd(dy, x, w, mean, rstd, dx, dwp, dbp, rows, cols, rpp)
                m.col_sum(dwp, dw, g, cols)
                m.col_sum(dbp, db, g, cols)
                torch.cuda.synchronize()
                gx, gw, gb = torch.autograd.grad(out, (xa, wa, ba), dy.double())
                self.close(dx, gx, tol, f"layernorm dx {name} {rows}x{cols}")
                self.close(dw, gw, tol, f"layernorm dw {name} {rows}x{cols}")
                self.close(db, gb, tol, f"layernorm db {name} {rows}x{cols}")

    def test_rope(self):
        for name, dt, tol in self.each_dtype():
            for tokens, heads in ((33, 32), (7, 8), (5, 3)):
                q = torch.randn(tokens, heads, 128, device="cuda").to(dt)
                ang = torch.rand(tokens, 64, device="cuda") * 6.3
                cos, sin = ang.cos().to(dt), ang.sin().to(dt)
                out = poisoned(tokens, heads, 128, dtype=dt)
                self.mod.rope(q, cos, sin, out, tokens, heads)
                torch.cuda.synchronize()
                qd, c2, s2 = q.double(), torch.cat([cos, cos], -1).double(), torch.cat([sin, sin], -1).double()
                want = qd * c2[:, None] + torch.cat([-qd[..., 64:], qd[..., :64]], -1) * s2[:, None]
                self.close(out, want, tol, f"rope {name} {tokens}x{heads}")

    def test_swiglu_and_geglu(self):
        for name, dt, tol in self.each_dtype():
            for n in (1, 2048, 3 * 2048 + 5):
                g, u = (torch.randn(n, device="cuda") * 3).to(dt), torch.randn(n, device="cuda").to(dt)
                for kind, act in (("swiglu", F.silu), ("geglu", F.gelu)):
                    out = poisoned(n, dtype=dt)
                    getattr(self.mod, kind)(g, u, out, n)
                    torch.cuda.synchronize()
                    # gelu's 1 + erf(g / sqrt 2) cancels for a negative gate in f32, torch's own CUDA
                    # formula as much as the kernel's: below g = -5.5 both give 0 where gelu(g) is about
                    # 1e-7, and between -4 and -5.5 each keeps 1 + erf to a few percent, rounded its
                    # own way (session 46's H200 run: 1.2e-2 for f16, n = 1). That error is absolute,
                    # at most about 3e-8 |g u| (half erf's f32 spacing near -1), as is f16's below its smallest
                    # normal (spacing 6e-8): so GeGLU's error is taken over |want| + 1e-3 |u| (the floor
                    # weighs nothing at n = 2048, where |want| is about |u|). GeGLU is checked
                    # against torch's gelu in f32 (what a user compares with), SwiGLU against f64.
                    want = (act(g.float()).double() if kind == "geglu" else act(g.double())) * u.double()
                    if kind == "geglu":
                        e = (out.double() - want).norm().item() / (want.norm().item() + 1e-3 * u.double().norm().item())
                        print(f"{kind} {name} n={n}: L2 error over |want| + 1e-3 |u| {e:.2e}")
                        self.assertLess(e, max(tol, 2e-3), f"{kind} {name} n={n}")
                    else:
                        self.close(out, want, tol, f"{kind} {name} n={n}")

    def each_variant(self, kernel, count):
        """Kernel instance `kernel` pinned to each of its `count` variants
        (the runtime launches whichever it timed fastest, so each must be
        right), and no variant `count`."""
        with self.assertRaises(tilec.TilecError, msg=f"{kernel} has more than {count} variants"):
            self.mod.kernel(kernel, count)
        return [(v, self.mod.kernel(kernel, v)) for v in range(count)]

    def test_every_tuned_variant(self):
        """examples/llm.tile's variants of tiles and warps, each pinned, bf16,
        at ragged sizes: rows shorter than every tile and longer than every
        tile (9000 columns), a column count no tile divides, n no block
        divides, fewer heads than the tile."""
        dt, tol = torch.bfloat16, 1e-2
        for rows, cols in ((5, 1000), (3, 9000)):
            x = torch.randn(rows, cols, device="cuda").to(dt)
            w = (1 + 0.1 * torch.randn(cols, device="cuda")).to(dt)
            xd = x.double()
            rs = torch.rsqrt(xd.pow(2).mean(-1) + 1e-6)
            for v, k in self.each_variant("rmsnorm_fwd__bf16", 6):
                y, rstd = poisoned(rows, cols, dtype=dt), poisoned(rows, dtype=torch.float32)
                k(x, w, y, rstd, rows, cols, 1e-6)
                torch.cuda.synchronize()
                self.close(rstd, rs, 1e-5, f"rmsnorm_fwd v{v} rstd {rows}x{cols}")
                self.close(y, w.double() * (xd * rs[:, None]).to(dt).double(), tol, f"rmsnorm_fwd v{v} {rows}x{cols}")
            rstd = rs.float()
            dy = torch.randn(rows, cols, device="cuda").to(dt)
            xa = xd.clone().requires_grad_(True)
            wa = w.double().clone().requires_grad_(True)
            gx, gw = torch.autograd.grad(wa * (xa * torch.rsqrt(xa.pow(2).mean(-1, keepdim=True) + 1e-6)), (xa, wa),
                                         dy.double())
            rpp = 2
            g = -(-rows // rpp)
            for v, k in self.each_variant("rmsnorm_bwd__bf16", 6):
                dx, dwp = poisoned(rows, cols, dtype=dt), poisoned(g, cols, dtype=torch.float32)
                k(dy, x, w, rstd, dx, dwp, rows, cols, rpp)
                torch.cuda.synchronize()
                self.close(dx, gx, tol, f"rmsnorm_bwd v{v} dx {rows}x{cols}")
                self.close(dwp.double().sum(0), gw, tol, f"rmsnorm_bwd v{v} dw partials {rows}x{cols}")
        for prow, cols in ((37, 1000), (300, 4100)):
            p = torch.randn(prow, cols, device="cuda")
            for v, k in self.each_variant("col_sum__bf16", 4):
                out = poisoned(cols, dtype=dt)
                k(p, out, prow, cols)
                torch.cuda.synchronize()
                self.close(out, p.double().sum(0), tol, f"col_sum v{v} {prow}x{cols}")
        n = 3 * 4096 + 5
        gt, u = (torch.randn(n, device="cuda") * 3).to(dt), torch.randn(n, device="cuda").to(dt)
        for kind, act in (("swiglu", F.silu), ("geglu", F.gelu)):
            for v, k in self.each_variant(f"{kind}__bf16", 4):
                out = poisoned(n, dtype=dt)
                k(gt, u, out, n)
                torch.cuda.synchronize()
                self.close(out, act(gt.double()) * u.double(), tol, f"{kind} v{v} n={n}")
        for tokens, heads in ((5, 7), (3, 20)):  # 20: v3's second group of 16 heads holds 4
            q = torch.randn(tokens, heads, 128, device="cuda").to(dt)
            ang = torch.rand(tokens, 64, device="cuda") * 6.3
            cos, sin = ang.cos().to(dt), ang.sin().to(dt)
            qd, c2, s2 = q.double(), torch.cat([cos, cos], -1).double(), torch.cat([sin, sin], -1).double()
            want = qd * c2[:, None] + torch.cat([-qd[..., 64:], qd[..., :64]], -1) * s2[:, None]
            for v, k in self.each_variant("rope__bf16", 4):
                out = poisoned(tokens, heads, 128, dtype=dt)
                k(q, cos, sin, out, tokens, heads)
                torch.cuda.synchronize()
                self.close(out, want, tol, f"rope v{v} {tokens}x{heads}")

    def ce_ref(self, x, tgt, scale):
        xa = x.double().clone().requires_grad_(True)
        loss = F.cross_entropy(xa, tgt.long(), reduction="none")
        (gx,) = torch.autograd.grad(loss.sum() * scale, xa)
        return loss.detach(), gx

    def test_cross_entropy_forward_and_backward(self):
        for name, dt, tol in self.each_dtype():
            for rows, V in ((9, 1000), (4, 50000), (3, 2048)):
                x = (torch.randn(rows, V, device="cuda") * 3).to(dt)
                tgt = torch.randint(0, V, (rows,), device="cuda", dtype=torch.int32)
                tgt[0] = V - 1
                loss, dx = poisoned(rows, dtype=torch.float32), poisoned(rows, V, dtype=dt)
                self.mod.ce_fwd_bwd(x, tgt, loss, dx, rows, V, 1.0 / rows)
                torch.cuda.synchronize()
                wl, wg = self.ce_ref(x, tgt, 1.0 / rows)
                self.close(loss, wl, 1e-5, f"ce loss {name} {rows}x{V}")
                self.close(dx, wg, tol, f"ce dx {name} {rows}x{V}")
                # in place: the gradient over the logits (the target read first)
                xi = x.clone()
                loss2 = poisoned(rows, dtype=torch.float32)
                self.mod.ce_fwd_bwd(xi, tgt, loss2, xi, rows, V, 1.0 / rows)
                torch.cuda.synchronize()
                self.close(loss2, wl, 1e-5, f"ce loss in place {name} {rows}x{V}")
                self.close(xi, wg, tol, f"ce dx in place {name} {rows}x{V}")

    def test_embedding_gather_and_scatter_add(self):
        for name, dt, _ in self.each_dtype():
            for n, V, D in ((13, 100, 4096), (8, 50, 1000), (5, 30, 1001)):  # 1001: rows misaligned for 16 bytes
                table = torch.randn(V, D, device="cuda").to(dt)
                ids = torch.randint(0, V, (n,), device="cuda", dtype=torch.int32)
                ids[1] = ids[0]  # a repeat: the scatter-add adds both
                out = poisoned(n, D, dtype=dt)
                self.mod.embed_gather(table, ids, out, n, D)
                dout = torch.randn(n, D, device="cuda").to(dt)
                dt32 = torch.ones(V, D, device="cuda")  # an accumulator: added to
                self.mod.embed_scatter_add(dout, ids, dt32, n, D)
                torch.cuda.synchronize()
                self.assertTrue(torch.equal(out, F.embedding(ids.long(), table)), f"gather {name}")
                want = torch.ones(V, D, device="cuda", dtype=torch.float64).index_add_(0, ids.long(), dout.double())
                self.close(dt32, want, 1e-6, f"scatter-add {name} n={n}")


def flce_ref(h, w, tgt):
    """The mean loss's per-token losses, dH and dW, by autograd in f64."""
    ha, wa = h.double().clone().requires_grad_(True), w.double().clone().requires_grad_(True)
    loss = F.cross_entropy(ha @ wa.T, tgt.long(), reduction="none")
    dh, dw = torch.autograd.grad(loss.mean(), (ha, wa))
    return loss.detach(), dh, dw


@unittest.skipUnless(HAVE_GPU, "no GPU or no torch")
class FusedLinearCrossEntropy(unittest.TestCase):
    """The graph flce_bf16 (bf16, chunks of C tokens, the logits' gradient in
    place, dW accumulated in bf16 as Liger's addmm does) through its Python
    wrapper, against autograd in f64; its peak memory holds a chunk's
    logits, never all of them."""

    @classmethod
    def setUpClass(cls):
        os.environ.setdefault("TILEC_CACHE_DIR", scratch_dir("tilec_llm_"))
        out = scratch_dir("tilec_llm_py_")
        subprocess.run([TILEC, TILE, "--emit", "py", "-o", out], check=True)
        sys.path.insert(0, out)
        import flce_bf16
        import flce_bf16_n
        cls.flce, cls.flce_n = flce_bf16, flce_bf16_n

    def test_matches_autograd(self):
        g = torch.Generator(device="cuda").manual_seed(5)
        for T, D, V, C in ((256, 128, 1000, 64), (512, 256, 5000, 128), (128, 64, 300, 128)):
            h = (torch.randn(T, D, device="cuda", generator=g) * 0.5).to(torch.bfloat16)
            w = (torch.randn(V, D, device="cuda", generator=g) * 0.1).to(torch.bfloat16)
            tgt = torch.randint(0, V, (T,), device="cuda", generator=g, dtype=torch.int32)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            got = self.flce.call(h, w, tgt, C, 1.0 / T)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - before
            outs = 4 * T + 2 * T * D + 2 * V * D
            # the outputs, one chunk's logits and dH's f32 split-K partials (cdiv(1024, C) slices of
            # C x D; the last chunk's dropped before the next's)
            self.assertLessEqual(peak, outs + 2 * C * V + 4 * D * C * -(-1024 // C) + (1 << 20), f"T={T} C={C}")
            for what, a, b in zip(("loss", "dh", "dw"), got, flce_ref(h, w, tgt)):
                e = rel(a, b)
                print(f"flce_bf16 T={T} D={D} V={V} C={C} {what}: relative L2 error {e:.2e}")
                self.assertLess(e, 2e-2, f"{what} T={T} C={C}")

    def test_n_chunks_match_autograd(self):
        # flce_bf16_n: N chunks of whole 128-token groups, the T % 128 tokens past the last group in
        # the last chunk: T = 300, N = 2 makes 128 + 172; T = 1024, N = 3 makes 256 + 384 + 384
        g = torch.Generator(device="cuda").manual_seed(7)
        for T, D, V, N, big in ((300, 128, 1000, 2, 172), (1024, 256, 5000, 3, 384), (200, 64, 300, 1, 200)):
            h = (torch.randn(T, D, device="cuda", generator=g) * 0.5).to(torch.bfloat16)
            w = (torch.randn(V, D, device="cuda", generator=g) * 0.1).to(torch.bfloat16)
            tgt = torch.randint(0, V, (T,), device="cuda", generator=g, dtype=torch.int32)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
            got = self.flce_n.call(h, w, tgt, N, 1.0 / T)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - before
            outs = 4 * T + 2 * T * D + 2 * V * D
            # the outputs and the largest chunk's logits and split-K partials
            self.assertLessEqual(peak, outs + 2 * big * V + 4 * D * big * -(-1024 // big) + (1 << 20), f"T={T} N={N}")
            for what, a, b in zip(("loss", "dh", "dw"), got, flce_ref(h, w, tgt)):
                e = rel(a, b)
                print(f"flce_bf16_n T={T} D={D} V={V} N={N} {what}: relative L2 error {e:.2e}")
                self.assertLess(e, 2e-2, f"{what} T={T} N={N}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        TILEC = sys.argv.pop(1)
    unittest.main(verbosity=2)
