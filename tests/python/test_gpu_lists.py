"""examples/adamw_multi.tile on the GPU (issue 35 item 5, docs/language.md
§4.3): one fused AdamW step over a tensor list of 200 parameter tensors of
mixed sizes (tiny ones, sizes that are not a multiple of the kernel's
block, large ones; more tensors than one launch's table holds, so the
runtime splits the list into several launches), passed as Python lists of
torch tensors and as tilec.TensorList, against
torch.optim.AdamW(fused=True) over the same tensors and against an f64
reference, for three steps; bf16 parameters against torch's fused bf16
step (the kernel, and graph adamw_step_bf16); an empty list changes nothing; lists of different lengths are refused
before anything runs. The same step as a graph (docs/language.md §9,
"Tensor lists"): graph adamw_step's generated Python wrapper, given the
same lists and TensorLists, against the same references, and in CUDA-graph
mode (recorded, replayed while the lists hold the same tensors) against its
eager calls. Sub-lists: graph adamw_groups (the first k tensors with weight
decay, the rest without) against torch's fused AdamW with those two
parameter groups; sub-lists bound with let: graph adamw_unfrozen (the first
k frozen, two groups after them); lists of a graph's tensors: graph
adamw_layer (a weight and a bias: their gradients' squared norms and one
AdamW launch) against torch; one tensor of a list as a kernel's pointer:
graph layers (ws[i] in a kept loop, ws[k]) against torch; view(ws[k], f32[H, H])
as cuBLAS's argument (graph layer_gemm) against torch. Every list graph
in CUDA-graph mode against its eager calls (CudaGraphMode, one parametrised
test).

    python3 tests/python/test_gpu_lists.py"""
import importlib
import os
import random
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tilec  # noqa: E402

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    HAVE_GPU = False

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LR, BETAS, EPS, WD = 1e-3, (0.9, 0.999), 1e-8, 0.01


def sizes(n=200, seed=35):
    """n parameter shapes as a model has them: vectors (norms, biases), tiny
    ones, matrices, sizes around the kernel's 1024-element chunk."""
    r = random.Random(seed)
    fixed = [(1,), (3,), (7,), (1023,), (1024,), (1025,), (4097,), (65537,), (1000, 1000), (2048, 1024), (3, 5, 7)]
    out = list(fixed)
    while len(out) < n:
        k = r.random()
        out.append((r.randint(1, 64),) if k < 0.3 else (r.randint(1, 4096),) if k < 0.6 else
                   (r.randint(1, 512), r.randint(1, 512)))
    return out


def make(shapes, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    ps = [torch.randn(s, device="cuda", generator=g).to(dtype) for s in shapes]
    gs = [[torch.randn(s, device="cuda", generator=g).to(dtype) for s in shapes] for _ in range(3)]
    return ps, gs


def ref_step(p, g, m, v, t):
    """torch.optim.AdamW's update in f64."""
    b1, b2 = BETAS
    p = p * (1 - LR * WD)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    denom = (v.sqrt() / (1 - b2 ** t) ** 0.5) + EPS
    return p - (LR / (1 - b1 ** t)) * m / denom, m, v


def graph_module(name, source=None):
    """The generated Python wrapper of graph `name` of examples/adamw_multi.tile
    (or of `source`, a .tile text)."""
    d = tempfile.mkdtemp(prefix="tilec_gpu_lists_")
    tilec_bin = os.environ.get("TILEC_BIN", os.path.join(ROOT, "build", "bin", "tilec"))
    tile = os.path.join(ROOT, "examples", "adamw_multi.tile")
    if source is not None:
        tile = os.path.join(d, name + ".tile")
        with open(tile, "w") as f:
            f.write(source)
    subprocess.run([tilec_bin, tile, "--emit", "py", "-o", d], check=True)
    sys.path.insert(0, d)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(d)


def rel(a, b):
    a, b = torch.cat([x.double().flatten() for x in a]), torch.cat([x.double().flatten() for x in b])
    return float((a - b).norm() / b.norm())


@unittest.skipUnless(HAVE_GPU, "needs torch with a GPU")
class AdamWOverATensorList(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mod = tilec.load(os.path.join(ROOT, "examples", "adamw_multi.tile"))

    def step(self, *args):
        self.mod.adamw(*args)

    def run_both(self, dtype, as_tensorlist):
        shapes = sizes()
        ps, gs = make(shapes, dtype, 7)
        mine = [p.clone() for p in ps]
        ms = [torch.zeros_like(p) for p in ps]
        vs = [torch.zeros_like(p) for p in ps]
        theirs = [torch.nn.Parameter(p.clone()) for p in ps]
        opt = torch.optim.AdamW(theirs, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, fused=True)
        ref = [p.double() for p in ps]
        rm = [torch.zeros_like(p) for p in ref]
        rv = [torch.zeros_like(p) for p in ref]
        lists = [tilec.TensorList(x) for x in (mine, gs[0], ms, vs)] if as_tensorlist else None
        for t in (1, 2, 3):
            g = gs[t - 1]
            if as_tensorlist:
                lists[1] = tilec.TensorList(g)
                self.step(*lists, LR, BETAS[0], BETAS[1], EPS, WD, float(t))
            else:
                self.step(mine, g, ms, vs, LR, BETAS[0], BETAS[1], EPS, WD, float(t))
            for p, gi in zip(theirs, g):
                p.grad = gi
            opt.step()
            for i in range(len(ref)):
                ref[i], rm[i], rv[i] = ref_step(ref[i], g[i].double(), rm[i], rv[i], t)
        torch.cuda.synchronize()
        state = [opt.state[p] for p in theirs]
        return (mine, ms, vs), ([p.detach() for p in theirs], [s["exp_avg"] for s in state],
                                [s["exp_avg_sq"] for s in state]), (ref, rm, rv)

    def check(self, dtype, as_tensorlist, tol_torch, tol_ref):
        got, torch_fused, ref = self.run_both(dtype, as_tensorlist)
        for name, a, b, r in zip(("params", "exp_avg", "exp_avg_sq"), got, torch_fused, ref):
            e_t, e_r, t_r = rel(a, b), rel(a, r), rel(b, r)
            print(f"adamw {dtype} {'TensorList' if as_tensorlist else 'list'} {name}: vs torch fused {e_t:.2e}, "
                  f"vs f64 {e_r:.2e} (torch fused vs f64 {t_r:.2e})")
            # torch's fused step is itself off the f64 reference (exp_avg_sq by 1.3e-5 in f32 on the H100,
            # where this kernel is 3e-8 off): tilec may differ from torch by about what torch differs by
            self.assertLess(e_t, max(tol_torch, 2 * t_r), name)
            self.assertLess(e_r, max(tol_ref, 2 * t_r), name)

    def test_f32_matches_torch_fused_and_f64(self):
        self.check(torch.float32, False, 1e-6, 1e-6)

    def test_f32_tensorlist(self):
        self.check(torch.float32, True, 1e-6, 1e-6)

    def test_bf16_matches_torch_fused(self):
        self.check(torch.bfloat16, False, 1e-2, 1e-2)

    def test_empty_lists(self):
        # an instance takes empty lists (len 0: every program loops 0 times);
        # the generic kernel cannot choose T from them
        self.mod.kernel("adamw__f32")([], [], [], [], LR, BETAS[0], BETAS[1], EPS, WD, 1.0)
        torch.cuda.synchronize()
        with self.assertRaises(TypeError) as cm:
            self.mod.adamw([], [], [], [], LR, BETAS[0], BETAS[1], EPS, WD, 1.0)
        self.assertEqual(str(cm.exception), "adamw: takes T = f32 | bf16 | f16, but no tensor chose it (its tensor "
                                            "lists are empty)")

    def test_lists_of_different_lengths_are_refused(self):
        ps = [torch.ones(5, device="cuda") for _ in range(3)]
        with self.assertRaises(ValueError) as cm:
            self.mod.adamw(ps, ps[:2], ps, ps, LR, BETAS[0], BETAS[1], EPS, WD, 1.0)
        self.assertEqual(str(cm.exception), "adamw__f32: tensor list arguments 1 ('params') and 2 ('grads') have 3 "
                                            "and 2 tensors; every list of a launch must have as many")
        torch.cuda.synchronize()
        self.assertTrue(all(bool((p == 1).all()) for p in ps), "nothing ran")


@unittest.skipUnless(HAVE_GPU, "needs torch with a GPU")
class AdamWStepGraph(AdamWOverATensorList):
    """graph adamw_step of examples/adamw_multi.tile through its generated
    Python wrapper (its lists are [*f32]); the bf16 case through graph
    adamw_step_bf16 (lists [*bf16]: the same kernel instantiated for bf16)."""

    @classmethod
    def setUpClass(cls):
        cls.graph = graph_module("adamw_step")
        cls.graph_bf16 = graph_module("adamw_step_bf16")

    def check(self, dtype, *rest):
        self.dtype = dtype
        super().check(dtype, *rest)

    def step(self, *args):
        (self.graph_bf16 if self.dtype == torch.bfloat16 else self.graph).call(*args)

    def test_bf16_graph_refuses_f32_lists(self):
        ps = [torch.ones(5, device="cuda") for _ in range(3)]
        with self.assertRaises(TypeError) as cm:
            self.graph_bf16.call(ps, ps, ps, ps, LR, BETAS[0], BETAS[1], EPS, WD, 1.0)
        self.assertEqual(str(cm.exception), "adamw_step_bf16: parameter 'params' ([*bf16]), argument 1, tensor 0 of "
                                            "the list: expects a bf16 tensor; got a f32 tensor")

    def test_empty_lists(self):
        self.graph.call([], [], [], [], LR, BETAS[0], BETAS[1], EPS, WD, 1.0)  # one launch of none
        torch.cuda.synchronize()

    def test_lists_of_different_lengths_are_refused(self):
        ps = [torch.ones(5, device="cuda") for _ in range(3)]
        with self.assertRaises(tilec.TilecError) as cm:
            self.graph.call(ps, ps[:2], ps, ps, LR, BETAS[0], BETAS[1], EPS, WD, 1.0)
        self.assertEqual(str(cm.exception), "adamw_step: step 1 (kernel adamw__f32): kernel 'adamw__f32': tensor list "
                                            "arguments 1 and 2 have 3 and 2 tensors; every list of a launch must have "
                                            "as many")
        with self.assertRaises(TypeError) as cm:
            self.graph.call(ps, [p.to(torch.bfloat16) for p in ps], ps, ps, LR, BETAS[0], BETAS[1], EPS, WD, 1.0)
        self.assertEqual(str(cm.exception), "adamw_step: parameter 'grads' ([*f32]), argument 2, tensor 0 of the "
                                            "list: expects a f32 tensor; got a bf16 tensor")
        torch.cuda.synchronize()
        self.assertTrue(all(bool((p == 1).all()) for p in ps), "nothing ran")


@unittest.skipUnless(HAVE_GPU, "needs torch with a GPU")
class AdamWGroupsGraph(unittest.TestCase):
    """graph adamw_groups of examples/adamw_multi.tile: sub-lists (docs/language.md
    §9, "Tensor lists"): the first k tensors with weight decay, the rest without,
    against torch.optim.AdamW(fused=True) with the same two parameter groups; its
    bounds checked before anything runs; CUDA-graph mode against eager."""

    @classmethod
    def setUpClass(cls):
        cls.graph = graph_module("adamw_groups")

    def test_two_groups_match_torch_fused(self):
        shapes, k = sizes(), 120
        ps, gs = make(shapes, torch.float32, 13)
        mine = [p.clone() for p in ps]
        ms = [torch.zeros_like(p) for p in ps]
        vs = [torch.zeros_like(p) for p in ps]
        theirs = [torch.nn.Parameter(p.clone()) for p in ps]
        opt = torch.optim.AdamW([{"params": theirs[:k], "weight_decay": WD}, {"params": theirs[k:], "weight_decay": 0.0}],
                                lr=LR, betas=BETAS, eps=EPS, fused=True)
        for t in (1, 2, 3):
            self.graph.call(mine, gs[t - 1], ms, vs, k, LR, BETAS[0], BETAS[1], EPS, WD, float(t))
            for p, gi in zip(theirs, gs[t - 1]):
                p.grad = gi
            opt.step()
        torch.cuda.synchronize()
        for name, a, b in (("params", mine, [p.detach() for p in theirs]),
                           ("exp_avg", ms, [opt.state[p]["exp_avg"] for p in theirs]),
                           ("exp_avg_sq", vs, [opt.state[p]["exp_avg_sq"] for p in theirs])):
            for lo, hi in ((0, k), (k, len(ps))):
                e = rel(a[lo:hi], b[lo:hi])
                print(f"adamw_groups {name} tensors {lo}..{hi - 1}: vs torch fused {e:.2e}")
                # torch's fused exp_avg_sq is itself 1.3e-5 off an f64 reference in f32 (AdamWOverATensorList)
                self.assertLess(e, 5e-5, f"{name} {lo}..{hi - 1}")

    def test_bounds_are_checked_before_anything_runs(self):
        ps = [torch.ones(5, device="cuda") for _ in range(3)]
        with self.assertRaises(ValueError) as cm:
            self.graph.call(ps, ps, ps, ps, 4, LR, BETAS[0], BETAS[1], EPS, WD, 1.0)
        self.assertEqual(str(cm.exception), "adamw_groups: line 68: sub-list params[0:k] is out of bounds: start 0, "
                                            "stop 4, and 'params' has 3 tensors")
        torch.cuda.synchronize()
        self.assertTrue(all(bool((p == 1).all()) for p in ps), "nothing ran")


@unittest.skipUnless(HAVE_GPU, "needs torch with a GPU")
class AdamWUnfrozenGraph(unittest.TestCase):
    """graph adamw_unfrozen of examples/adamw_multi.tile: sub-lists bound with let
    (docs/language.md §9, "Tensor lists") and sub-lists of them: the first k
    tensors frozen, then m with weight decay, the rest without, against
    torch.optim.AdamW(fused=True) with those two groups; the lets' and the
    sub-lists' bounds checked before anything runs."""

    @classmethod
    def setUpClass(cls):
        cls.graph = graph_module("adamw_unfrozen")

    def test_frozen_and_two_groups_match_torch_fused(self):
        shapes, k, m = sizes(), 30, 90
        ps, gs = make(shapes, torch.float32, 19)
        mine = [p.clone() for p in ps]
        ms = [torch.zeros_like(p) for p in ps]
        vs = [torch.zeros_like(p) for p in ps]
        theirs = [torch.nn.Parameter(p.clone()) for p in ps]
        opt = torch.optim.AdamW([{"params": theirs[k:k + m], "weight_decay": WD},
                                 {"params": theirs[k + m:], "weight_decay": 0.0}],
                                lr=LR, betas=BETAS, eps=EPS, fused=True)
        for t in (1, 2, 3):
            self.graph.call(mine, gs[t - 1], ms, vs, k, m, LR, BETAS[0], BETAS[1], EPS, WD, float(t))
            for p, gi in zip(theirs, gs[t - 1]):
                p.grad = gi
            opt.step()
        torch.cuda.synchronize()
        for i in range(k):  # frozen: not one bit moved, no moment written
            self.assertTrue(torch.equal(mine[i], ps[i]) and not ms[i].any() and not vs[i].any(), f"tensor {i}")
        for name, a, b in (("params", mine, [p.detach() for p in theirs]),
                           ("exp_avg", ms, [opt.state[p]["exp_avg"] if p in opt.state else torch.zeros_like(p)
                                            for p in theirs]),
                           ("exp_avg_sq", vs, [opt.state[p]["exp_avg_sq"] if p in opt.state else torch.zeros_like(p)
                                               for p in theirs])):
            for lo, hi in ((k, k + m), (k + m, len(ps))):
                e = rel(a[lo:hi], b[lo:hi])
                print(f"adamw_unfrozen {name} tensors {lo}..{hi - 1}: vs torch fused {e:.2e}")
                self.assertLess(e, 5e-5, f"{name} {lo}..{hi - 1}")

    def test_bounds_are_checked_before_anything_runs(self):
        ps = [torch.ones(5, device="cuda") for _ in range(3)]
        for k, m, msg in ((4, 0, "line 79: sub-list params[k:] is out of bounds: start 4, stop 3, and 'params' has 3 "
                                 "tensors"),
                          (1, 3, "line 83: sub-list ps[0:m] is out of bounds: start 0, stop 3, and 'ps' has 2 "
                                 "tensors")):
            with self.assertRaises(ValueError) as cm:
                self.graph.call(ps, ps, ps, ps, k, m, LR, BETAS[0], BETAS[1], EPS, WD, 1.0)
            self.assertEqual(str(cm.exception), "adamw_unfrozen: " + msg)
        torch.cuda.synchronize()
        self.assertTrue(all(bool((p == 1).all()) for p in ps), "nothing ran")


@unittest.skipUnless(HAVE_GPU, "needs torch with a GPU")
class AdamWLayerGraph(unittest.TestCase):
    """graph adamw_layer of examples/adamw_multi.tile: lists the graph makes of
    its tensors (docs/language.md §9, "Tensor lists"), a weight and a bias of
    two shapes: the gradients' squared norms against torch's, and one AdamW
    launch over both against torch.optim.AdamW(fused=True)."""

    @classmethod
    def setUpClass(cls):
        cls.graph = graph_module("adamw_layer")

    def test_norms_and_step_match_torch(self):
        g = torch.Generator(device="cuda").manual_seed(23)
        w, b = torch.randn(1000, 777, device="cuda", generator=g), torch.randn(1000, device="cuda", generator=g)
        grads = [(torch.randn(1000, 777, device="cuda", generator=g), torch.randn(1000, device="cuda", generator=g))
                 for _ in range(3)]
        mine = [w.clone(), b.clone()]
        m = [torch.zeros_like(w), torch.zeros_like(b)]
        v = [torch.zeros_like(w), torch.zeros_like(b)]
        sq = torch.empty(2, device="cuda")
        theirs = [torch.nn.Parameter(w.clone()), torch.nn.Parameter(b.clone())]
        opt = torch.optim.AdamW(theirs, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, fused=True)
        for t in (1, 2, 3):
            gw, gb = grads[t - 1]
            self.graph.call(mine[0], mine[1], gw, gb, m[0], m[1], v[0], v[1], LR, BETAS[0], BETAS[1], EPS, WD,
                            float(t), sq)
            want = torch.stack([gw.double().pow(2).sum(), gb.double().pow(2).sum()])
            self.assertLess(float(((sq.double() - want).abs() / want).max()), 1e-5, f"norms, step {t}")
            theirs[0].grad, theirs[1].grad = gw, gb
            opt.step()
        torch.cuda.synchronize()
        for name, a, c in (("params", mine, [p.detach() for p in theirs]),
                           ("exp_avg", m, [opt.state[p]["exp_avg"] for p in theirs]),
                           ("exp_avg_sq", v, [opt.state[p]["exp_avg_sq"] for p in theirs])):
            e = rel(a, c)
            print(f"adamw_layer {name}: vs torch fused {e:.2e}")
            self.assertLess(e, 5e-5, name)


# one tensor of a list, ws[i], as a kernel's pointer argument (docs/language.md §9, "Tensor
# lists"): every layer's weight scaled in a loop kept as a loop, then layer k's again; and
# viewed as a tensor of a shape, an extern's argument
LAYERS_TILE = """
kernel scale_into(x: *f32, y: *f32, n: i64, s: f32) grid (cdiv(n, BLOCK)) hints { BLOCK = 1024 } {
    let j = cast(pid(0), i64) * BLOCK + range(BLOCK);
    store(y + j, load(x + j, j < n) * s, j < n);
}
graph layers(ws: [*f32], outs: [*f32], nl: i64, n: i64, k: i64) {
    for i in 0 .. nl {
        scale_into(ws[i], outs[i], n, 0.5);
    }
    scale_into(ws[k], outs[k], n, 3.0);
}
extern gemm(a: f32[M, K], b: f32[K, N]) -> f32[M, N] = "cublas.sgemm";
graph layer_gemm(x: f32[T, H], ws: [*f32], k: i64) -> f32[T, H] {
    let w = view(ws[k], f32[H, H]);
    let y = gemm(x, w);
    return y;
}
"""


@unittest.skipUnless(HAVE_GPU, "needs torch with a GPU")
class ListItemGraph(unittest.TestCase):
    """ws[i] as a kernel's *T: a loop over 12 layers' weights of one shape, then
    layer k's, against torch; its index checked (the loop's iterations before
    a bad one run, as a slice's); CUDA-graph mode against eager."""

    @classmethod
    def setUpClass(cls):
        cls.graph = graph_module("layers", LAYERS_TILE)

    def test_each_layer_matches_torch(self):
        g = torch.Generator(device="cuda").manual_seed(29)
        ws = [torch.randn(768, 768, device="cuda", generator=g) for _ in range(12)]
        outs = [torch.zeros_like(w) for w in ws]
        self.graph.call(ws, outs, 12, 768 * 768, 5)
        torch.cuda.synchronize()
        for i, (w, o) in enumerate(zip(ws, outs)):
            self.assertTrue(torch.equal(o, w * (3.0 if i == 5 else 0.5)), f"layer {i}")
        with self.assertRaises(ValueError) as cm:
            self.graph.call(ws, outs, 12, 768 * 768, 12)
        self.assertEqual(str(cm.exception), "layers: line 10: ws[k] is out of bounds: index 12, and 'ws' has 12 "
                                            "tensors")
        with self.assertRaises(ValueError) as cm:
            self.graph.call(ws, outs[:11], 12, 768 * 768, 0)
        self.assertEqual(str(cm.exception), "layers: line 8: outs[i] is out of bounds: index 11, and 'outs' has 11 "
                                            "tensors")

    def test_a_view_of_one_layer_goes_to_cublas(self):
        # view(ws[k], f32[H, H]) gives layer k's weight its shape: an extern's argument (cuBLAS)
        gemm = graph_module("layer_gemm", LAYERS_TILE)
        g = torch.Generator(device="cuda").manual_seed(37)
        ws = [torch.randn(256, 256, device="cuda", generator=g) for _ in range(4)] + [torch.randn(7, device="cuda")]
        x = torch.randn(64, 256, device="cuda", generator=g)
        y = torch.from_dlpack(gemm.call(x, ws, 2))
        want = (x.double() @ ws[2].double()).float()
        self.assertLess(float((y - want).norm() / want.norm()), 1e-5)
        with self.assertRaises(ValueError) as cm:
            gemm.call(x, ws, 4)
        self.assertEqual(str(cm.exception), "layer_gemm: line 14: view w of ws[k] (7 elements, 28 bytes) as f32[H, H] "
                                            "(262144 bytes) changes its size")

    def test_cuda_graph_mode_matches_eager(self):
        g = torch.Generator(device="cuda").manual_seed(31)
        ws = [torch.randn(512, 512, device="cuda", generator=g) for _ in range(12)]
        eager, graphed = [torch.zeros_like(w) for w in ws], [torch.zeros_like(w) for w in ws]
        for k in (3, 3, 7):
            self.graph.call(ws, eager, 12, 512 * 512, k)
        h = self.graph.load(cuda_graph=True)
        try:
            for k in (3, 3, 7):
                self.graph.call(list(ws), graphed, 12, 512 * 512, k)
            torch.cuda.synchronize()
            st = h.stats()
        finally:
            h.eager()
        self.assertEqual((st["recorded"], st["replayed"]), (2, 1), st)
        for i, (x, y) in enumerate(zip(graphed, eager)):
            self.assertTrue(torch.equal(x, y), f"layer {i}")


# ws[i] as an extern's argument, viewed at its parameter's shape (f32[H, H]: H from x), in a
# loop kept as a loop and at the top; a view of a tensor of a list of the graph's own tensors,
# [w, a], used after the list (the planner keeps w and a alive), and ls[0] to cuBLAS
ITEMS_TILE = """
kernel scale_into(x: *f32, y: *f32, n: i64, s: f32) grid (cdiv(n, BLOCK)) hints { BLOCK = 1024 } {
    let j = cast(pid(0), i64) * BLOCK + range(BLOCK);
    store(y + j, load(x + j, j < n) * s, j < n);
}
extern sqgemm(a: f32[M, K], b: f32[K, K]) -> f32[M, K] = "cublas.sgemm";
graph layer_items(x: f32[T, H], ws: [*f32], outs: [*f32], nl: i64, k: i64) -> f32[T, H] {
    for i in 0 .. nl {
        let z = sqgemm(x, ws[i]);
        scale_into(z, outs[i], T * H, 1.0);
    }
    let y = sqgemm(x, ws[k]);
    return y;
}
graph listed_gemm(x: f32[T, H], w: f32[H, H], k: i64) -> f32[T, H] {
    let a = full(f32, [H, H], 0.125);
    let ls = [w, a];
    let v = view(ls[k], f32[H, H]);
    let t = zeros(f32, [T, H]);
    scale_into(x, t, T * H, 2.0);
    let y = sqgemm(t, v);
    let z = sqgemm(y, ls[0]);
    return z;
}
"""


@unittest.skipUnless(HAVE_GPU, "needs torch with a GPU")
class ListItemExtern(unittest.TestCase):
    """ws[i] straight into cuBLAS (no view written), its index and bytes checked
    at run time; a view of one tensor of a list of the graph's tensors, against
    torch."""

    def test_each_layer_through_cublas_matches_torch(self):
        graph = graph_module("layer_items", ITEMS_TILE)
        g = torch.Generator(device="cuda").manual_seed(41)
        ws = [torch.randn(256, 256, device="cuda", generator=g) / 16 for _ in range(6)]
        x = torch.randn(64, 256, device="cuda", generator=g)
        outs = [torch.zeros(64, 256, device="cuda") for _ in ws]
        y = torch.from_dlpack(graph.call(x, ws, outs, 6, 4))
        torch.cuda.synchronize()
        for i, (w, o) in enumerate(zip(ws, outs)):
            want = (x.double() @ w.double()).float()
            self.assertLess(float((o - want).norm() / want.norm()), 1e-5, f"layer {i}")
        want = (x.double() @ ws[4].double()).float()
        self.assertLess(float((y - want).norm() / want.norm()), 1e-5)
        with self.assertRaises(ValueError) as cm:
            graph.call(x, ws, outs, 6, 6)
        self.assertEqual(str(cm.exception), "layer_items: line 12: ws[k] is out of bounds: index 6, and 'ws' has 6 "
                                            "tensors")
        with self.assertRaises(ValueError) as cm:
            graph.call(x, ws[:3] + [torch.zeros(7, device="cuda")] + ws[4:], outs, 6, 0)
        self.assertEqual(str(cm.exception), "layer_items: line 9: view sqgemm_b of ws[i] (7 elements, 28 bytes) as "
                                            "f32[H, H] (262144 bytes) changes its size")

    def test_a_view_of_a_tensor_of_the_graphs_list(self):
        graph = graph_module("listed_gemm", ITEMS_TILE)
        g = torch.Generator(device="cuda").manual_seed(43)
        x = torch.randn(128, 256, device="cuda", generator=g)
        w = torch.randn(256, 256, device="cuda", generator=g) / 16
        a = torch.full((256, 256), 0.125, device="cuda", dtype=torch.float64)
        for k, v in ((0, w.double()), (1, a), (0, w.double())):
            z = torch.from_dlpack(graph.call(x, w, k))
            want = (2 * x.double() @ v @ w.double()).float()
            self.assertLess(float((z - want).norm() / want.norm()), 1e-5, f"k = {k}")
        with self.assertRaises(ValueError) as cm:
            graph.call(x, w, 2)
        self.assertEqual(str(cm.exception), "listed_gemm: line 18: ls[k] is out of bounds: index 2, and 'ls' has 2 "
                                            "tensors")


@unittest.skipUnless(HAVE_GPU, "needs torch with a GPU")
class CudaGraphMode(unittest.TestCase):
    """Every list graph of examples/adamw_multi.tile in CUDA-graph mode
    (docs/emitters.md) against its eager calls, to the bit: a call is keyed by
    its lists' tensors (count, addresses, element counts), not by the Python
    list or tuple that holds them, so the same tensors in new lists replay and
    other tensors record anew."""

    def check(self, name, extra, order, want):
        graph = graph_module(name)
        ps, gs = make(sizes(), torch.float32, 11)
        eager = [[p.clone() for p in ps], [torch.zeros_like(p) for p in ps], [torch.zeros_like(p) for p in ps]]
        graphed = [[p.clone() for p in ps], [torch.zeros_like(p) for p in ps], [torch.zeros_like(p) for p in ps]]
        scalars = (LR, BETAS[0], BETAS[1], EPS, WD, 1.0)
        for k in order:
            graph.call(eager[0], gs[k], eager[1], eager[2], *extra, *scalars)
        g = graph.load(cuda_graph=True)
        try:
            for k in order:  # new lists and tuples of the same tensors each call
                graph.call(list(graphed[0]), list(gs[k]), tuple(graphed[1]), graphed[2], *extra, *scalars)
            torch.cuda.synchronize()
            st = g.stats()
        finally:
            g.eager()
        self.assertEqual((st["recorded"], st["replayed"]), want, st)
        for what, a, b in zip(("params", "exp_avg", "exp_avg_sq"), graphed, eager):
            for i, (x, y) in enumerate(zip(a, b)):
                self.assertTrue(torch.equal(x, y), f"{name}: {what} {i}")

    def test_graph_mode_matches_eager(self):
        # (graph, its arguments after the four lists, the gradients of each call, (recorded, replayed)):
        # replayed, other tensors recorded, replayed
        for case in (("adamw_step", (), (0, 0, 1, 1), (2, 2)),
                     ("adamw_groups", (77,), (0, 0, 0), (1, 2)),
                     ("adamw_unfrozen", (30, 90), (0, 0, 1, 1), (2, 2))):
            with self.subTest(graph=case[0]):
                self.check(*case)


if __name__ == "__main__":
    unittest.main()
