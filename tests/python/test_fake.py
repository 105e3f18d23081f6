"""The Python package end to end on the CPU, against the fake CUDA driver
(build/tests/libfakecuda.so: "device" memory on the host, scale2 really
computes y = 2 * x): a generated graph wrapper makes one native call per
call (the runtime's launch plan) with the eager results; CUDA-graph mode
records once per set of slot values and replays with the same results; a
direct Kernel call refuses bad arguments with the named error and launches
nothing; inputs on another device are refused; zeros/ones/full are fill
steps of the plan, replayed by CUDA graphs too, and tilec.fill writes
every pattern exactly. With a stand-in for torch (in a child process): a
known key's recipe runs without the checks (the extension's rcall) and
gives the eager results, other keys and bad arguments take the checks;
Kernel calls checked by the extension (kcall) raise the Python checks'
errors. A graph with collectives (tests/collective_run.tile) on the fake
NCCL too (build/tests/libfakenccl.so), world 1 and 2, and its errors.

    python3 tests/python/test_fake.py [-q]     (make test runs it)"""
import array
import ctypes
import importlib
import os
import struct
import subprocess
import sys
import unittest

from scratch import scratch_dir  # tests/python/scratch.py

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BUILD = os.environ.get("BUILD", "build")
FAKE = os.path.join(ROOT, BUILD, "tests", "libfakecuda.so")
TILEC = os.path.join(ROOT, BUILD, "bin", "tilec")
os.environ["TILEC_CUDA_DRIVER"] = FAKE
os.environ.setdefault("TILEC_CACHE_DIR", scratch_dir("tilec_fake_cache_"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import tilec  # noqa: E402

ALIAS_TILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "alias.tile")  # scale2, g2, gv
with open(ALIAS_TILE) as _f:
    SOURCE = _f.read() + """\
graph g8(x: f32[N]) -> (y: f32[N]) {
    let t = empty(f32, [N]);
    scale2(x, t, N);
    let u = empty(f32, [N]);
    scale2(t, u, N);
    let y = empty(f32, [N]);
    scale2(u, y, N);
    return y;
}
graph gk(x: f32[N], k: f32, m: i32) -> (y: f32[N]) {
    let y = empty(f32, [N]);
    scale2(x, y, N);
    return y;
}
extern add1(x: f32[N]) -> f32[N] = "my.add1";
graph gf(x: f32[N]) -> (y: f32[N], d: f64[N], h: f16[N]) {
    let t = full(f32, [N], 1.5);
    let y = empty(f32, [N]);
    scale2(t, y, N);
    let d = full(f64, [N], 0.1);
    let h = ones(f16, [N]);
    return y, d, h;
}
graph gs(x: f32[N], a: i64, b: i64) -> (y: f32[N]) {
    let y = zeros(f32, [N]);
    let xs = x[a:b];
    let ys = y[a:b];
    scale2(xs, ys, b - a);
    return y;
}
graph gp(x: f32[N], a: i64, b: i64) -> (y: f32[N]) {
    let y = zeros(f32, [N]);
    let xs = x[a % 7 : b];
    let ys = y[a % 7 : b];
    scale2(xs, ys, b - a % 7);
    return y;
}
graph gl(x: f32[N], n: i64, C: i64) -> (y: f32[N]) {
    let y = zeros(f32, [N]);
    for i in 0 .. n {
        let xc = x[i * C : (i + 1) * C];
        let yc = y[i * C : (i + 1) * C];
        let t = empty(f32, [C]);
        scale2(xc, t, C);
        scale2(t, yc, C);
    }
    return y;
}
graph gu(x: f32[300]) -> (y: f32[300]) {
    let y = zeros(f32, [300]);
    for i in 0 .. 10 {
        let xc = x[i * 30 : (i + 1) * 30];
        let yc = y[i * 30 : (i + 1) * 30];
        let t = empty(f32, [30]);
        scale2(xc, t, 30);
        scale2(t, yc, 30);
    }
    return y;
}
graph ge(x: f32[N]) -> (z: f32[N]) {
    let y = empty(f32, [N]);
    scale2(x, y, N);
    let z = add1(y);
    return z;
}
"""


# the fake driver's lscale_v0 computes y[t] = s * x[t] from the packed tables of 126 tensors
LSCALE_TILE = """
kernel lscale(x: [*f32], y: [*f32], s: f32) grid (len(x)) {
    let i = pid(0);
    let n = numel(x, i);
    for o in 0 .. n step 128 {
        let j = o + range(128);
        store(y[i] + j, load(x[i] + j, j < n) * s, j < n);
    }
}
"""


class _State(ctypes.Structure):  # the head of tests/fake_cuda.h's fake_cuda_state
    _fields_ = [("inits", ctypes.c_int), ("min_version_asked", ctypes.c_int), ("ctx_refs", ctypes.c_int),
                ("live_allocs", ctypes.c_int), ("live_streams", ctypes.c_int), ("live_events", ctypes.c_int),
                ("live_modules", ctypes.c_int), ("dyn_smem_attr", ctypes.c_int), ("launches", ctypes.c_int)]


def fake_state():
    lib = ctypes.CDLL(FAKE)  # the same library the runtime loaded: one state
    lib.fake_cuda_state_get.restype = ctypes.POINTER(_State)
    return lib.fake_cuda_state_get().contents


# A stand-in for torch in a child process: tensors over tilec Buffers (the
# fake driver's device memory is host memory), the calls tilec makes of torch.
_TORCH_STAND_IN = """
import array, sys, types
import tilec
torch = types.ModuleType("torch")
class _DT:
    def __init__(self, name, size):
        self.name, self.size = name, size
    def __str__(self):
        return "torch." + self.name
class Tensor:
    def __init__(self, buf, dtype, strides=None):
        self.buf, self.dtype, self.shape, self._strides = buf, dtype, buf.shape, strides
        self.is_cuda, self.device = True, torch.device("cuda", 0)
    def data_ptr(self): return self.buf.ptr
    def get_device(self): return 0
    def is_contiguous(self): return self._strides is None
    def stride(self): return self._strides
    def numel(self): return self.buf.numel
    def element_size(self): return self.dtype.size
    def record_stream(self, s): pass
    def tolist(self): return self.buf.tolist()
    def clone(self):
        clones.append(self.data_ptr())
        return Tensor(tilec.copy(tilec.Buffer(self.shape, self.buf.dtype), self.buf), self.dtype, self._strides)
clones = []  # the addresses clone() copied from
torch.Tensor = Tensor
torch.float32, torch.int32, torch.uint8 = _DT("float32", 4), _DT("int32", 4), _DT("uint8", 1)
torch.device = lambda kind, index: (kind, index)
_names = {"float32": "f32", "int32": "i32", "uint8": "u8"}
def empty_strided(shape, strides, dtype=None, device=None):
    return Tensor(tilec.Buffer(shape, _names[dtype.name]), dtype)
torch.empty_strided = empty_strided
torch._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda i: 0)
sys.modules["torch"] = torch
def tensor(vals, dtype="float32", strides=None):
    b = tilec.Buffer.from_bytes(array.array("f", vals), (len(vals),), "f32")
    return Tensor(b, getattr(torch, dtype), strides)
"""


class _OnDevice1:
    """A device array of CuPy's kind on device 1 (by its attributes only)."""

    def __init__(self, n):
        self.device = type("D", (), {"id": 1})()
        self.__cuda_array_interface__ = {"data": (4096, False), "shape": (n,), "typestr": "<f4", "version": 3}


def graph_modules(prefix, src, *names):
    """The generated Python wrappers of the graphs `names` of source `src`
    (emitted into a new scratch directory named from `prefix`)."""
    d = scratch_dir(prefix)
    tile = os.path.join(d, names[0] + ".tile")
    with open(tile, "w") as f:
        f.write(src)
    subprocess.run([TILEC, tile, "--emit", "py", "-o", d], check=True)
    sys.path.insert(0, d)
    try:
        return [importlib.import_module(n) for n in names]
    finally:
        sys.path.remove(d)


@unittest.skipUnless(os.path.exists(FAKE) and os.path.exists(TILEC), "build first: make")
class FakeDriverTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = scratch_dir("tilec_fake_py_")
        tile = os.path.join(cls.dir, "g8.tile")
        with open(tile, "w") as f:
            f.write(SOURCE)
        subprocess.run([TILEC, tile, "--emit", "py", "-o", cls.dir], check=True)
        sys.path.insert(0, cls.dir)
        import g8
        import ge
        import gf
        import gl
        import gp
        import gs
        import gu
        cls.g8, cls.ge, cls.gf, cls.gs, cls.gl = g8, ge, gf, gs, gl  # g2: the compiled recipes' test, in a child
        cls.gu, cls.gp = gu, gp
        cls.n = 300
        cls.x = tilec.Buffer.from_bytes(array.array("f", range(cls.n)), (cls.n,), "f32")

    def test_one_native_call_per_graph_call(self):
        graph = self.g8.load()
        before = graph.stats()["runs"]
        launches = fake_state().launches
        y = self.g8.call(self.x)
        self.assertIsInstance(y, tilec.Buffer)
        self.assertEqual(y.tolist(), [8.0 * i for i in range(self.n)])
        self.assertEqual(graph.stats()["runs"], before + 1)
        self.assertEqual(fake_state().launches - launches, 3)
        self.g8.release(y)

    def test_a_slice_is_a_view_at_an_offset_checked_before_anything_runs(self):
        # issue 35 item 4: y[a:b] = 2 x[a:b], the rest of y 0; a slice out of x's rows is the
        # wrapper's error before any launch
        y = self.gs.call(self.x, 10, 20)
        self.assertEqual(y.tolist(), [2.0 * i if 10 <= i < 20 else 0.0 for i in range(self.n)])
        self.gs.release(y)
        launches = fake_state().launches
        line = SOURCE.splitlines().index("    let xs = x[a:b];") + 1
        for a, b in ((290, 310), (20, 10), (-1, 4)):
            with self.assertRaises(ValueError) as e:
                self.gs.call(self.x, a, b)
            self.assertIn(f"gs: line {line}: slice xs = x[a:b] is out of bounds: start {a}, stop {b}, and 'x' has 300 rows",
                          str(e.exception))
        self.assertEqual(fake_state().launches, launches)

    def test_a_slice_bound_with_a_percent_sign_names_itself_in_the_error(self):
        # the message is a %-format in the wrapper: a bound's own % doubled there (util/escape.c
        # esc_py_format), or the error raised is a TypeError about the format, not the slice's
        y = self.gp.call(self.x, 10, 20)
        self.assertEqual(y.tolist(), [2.0 * i if 3 <= i < 20 else 0.0 for i in range(self.n)])
        self.gp.release(y)
        line = SOURCE.splitlines().index("    let xs = x[a % 7 : b];") + 1
        with self.assertRaises(ValueError) as e:
            self.gp.call(self.x, 10, 310)
        self.assertIn(f"gp: line {line}: slice xs = x[(a)%(7):b] is out of bounds: start 3, stop 310, and 'x' has 300 rows",
                      str(e.exception))

    def test_a_for_loop_runs_its_body_per_iteration_with_its_memory_freed_each_time(self):
        # issue 35 item 4: y[i*C:(i+1)*C] = 4 x[...] for i < n, through t, a buffer of the body;
        # two launches an iteration, the body's buffer back to the pool at each iteration's end
        # (its spares and the driver's allocations the same for 2 iterations as for 10), and a
        # slice past x's rows the error of that iteration, with nothing launched after it
        graph = self.gl.load()
        allocs = {}
        for n in (2, 10):
            launches = fake_state().launches
            y = self.gl.call(self.x, n, 30)
            self.assertEqual(fake_state().launches - launches, 2 * n)
            self.assertEqual(y.tolist(), [4.0 * i if i < 30 * n else 0.0 for i in range(self.n)])
            self.gl.release(y)
            allocs[n] = (graph._pool._n, fake_state().live_allocs)
        self.assertEqual(allocs[2], allocs[10])
        self.assertLessEqual(allocs[10][0], 2)  # y's memory and one t
        line = SOURCE.splitlines().index("        let xc = x[i * C : (i + 1) * C];") + 1
        launches = fake_state().launches
        with self.assertRaises(ValueError) as e:
            self.gl.call(self.x, 11, 30)
        self.assertIn(f"gl: line {line}: slice xc = x[C*i:C + C*i] is out of bounds: start 300, stop 330, and 'x' has "
                      "300 rows", str(e.exception))
        self.assertEqual(fake_state().launches - launches, 2 * 10)

    def test_a_for_loop_in_cuda_graph_mode_records_the_call_and_replays_it(self):
        # a loop of a run-time count in CUDA-graph mode: each call's parts run at its end as one
        # plan of them in that order (per trip count), recorded once and replayed with one
        # cuGraphLaunch while the slot values repeat (outputs released); another n is another
        # plan and graph; values equal eager's; an out-of-bounds slice still raises, launching nothing
        eager = {n: self.gl.call(self.x, n, 30).tolist() for n in (3, 5)}
        graph = self.gl.load(cuda_graph=True)
        try:
            for n in (3, 3, 3, 5, 5, 3):
                launches = fake_state().launches
                y = self.gl.call(self.x, n, 30)
                self.assertEqual(y.tolist(), eager[n])
                self.assertEqual(fake_state().launches - launches, 2 * n)  # run eagerly, or the graph's launches
                self.gl.release(y)
            st = graph.stats()
            self.assertEqual((st["recorded"], st["replayed"]), (2, 4))
            launches = fake_state().launches
            with self.assertRaises(ValueError):
                self.gl.call(self.x, 11, 30)
            self.assertEqual(fake_state().launches - launches, 0)
            y = self.gl.call(self.x, 3, 30)  # the failed call left nothing queued
            self.assertEqual(y.tolist(), eager[3])
            self.gl.release(y)
            with self.assertRaises(tilec.TilecError) as e:
                graph.capture(static_outputs=True)
            self.assertIn("records no Recipe", str(e.exception))
        finally:
            graph.eager()
        self.assertEqual(graph.stats()["graphs"], 0)

    def test_an_unrolled_loop_computes_what_the_loop_does_and_replays_as_a_cuda_graph(self):
        # a loop of a constant count (gu: 10 chunks of 30) is unrolled: no loop markers, the same
        # launches and values as gl's loop over n = 10, and a CUDA-graph mode (a loop has none)
        self.assertFalse(any(s[0] in ("loop", "end_loop") for s in self.gu._STEPS))
        want = self.gl.call(self.x, 10, 30).tolist()
        launches = fake_state().launches
        y = self.gu.call(self.x)
        self.assertEqual(fake_state().launches - launches, 20)
        self.assertEqual(y.tolist(), want)
        self.gu.release(y)
        graph = self.gu.load(cuda_graph=True)
        try:
            for _ in range(3):
                y = self.gu.call(self.x)
                self.assertEqual(y.tolist(), want)
                self.gu.release(y)
            st = graph.stats()
            self.assertEqual((st["recorded"], st["replayed"]), (1, 2))
        finally:
            graph.eager()

    def test_a_for_loop_with_torch_tensors(self):
        # the body's buffer from torch's allocator per iteration (a stand-in on the fake driver);
        # a loop graph records no Recipe (one run of one plan): each call is checked
        script = _TORCH_STAND_IN + (
            "import gl\n"
            "x = tensor(list(range(12)))\n"
            "for _ in range(2):\n"
            "    print(gl.call(x, 3, 3).tolist(), len(gl._recipes))\n"
            "try:\n    gl.call(x, 5, 3)\nexcept ValueError as e:\n    print(e)\n")
        r = self._child(script)
        line = SOURCE.splitlines().index("        let xc = x[i * C : (i + 1) * C];") + 1
        want = str([4.0 * i if i < 9 else 0.0 for i in range(12)])
        self.assertEqual(r.stdout, f"{want} 0\n{want} 0\ngl: line {line}: slice xc = x[C*i:C + C*i] is out of bounds: "
                                   "start 12, stop 15, and 'x' has 12 rows\n")

    def test_a_for_loop_holds_one_iteration_of_its_buffers(self):
        # the body's tensors are dropped at the iteration's end (del after _c.free), so the next
        # iteration's allocation never finds the last one's still referenced: at most y and one t
        # are alive at once (before, the name t still held the last iteration's tensor while the
        # next was allocated: 3, and a chunked graph's peak was two chunks' logits)
        script = _TORCH_STAND_IN + (
            "live = [0, 0]\n"
            "class Counted(Tensor):\n"
            "    def __init__(self, *a):\n"
            "        Tensor.__init__(self, *a)\n"
            "        live[0] += 1\n"
            "        live[1] = max(live[1], live[0])\n"
            "    def __del__(self):\n"
            "        live[0] -= 1\n"
            "torch.empty_strided = lambda shape, strides, dtype=None, device=None: "
            "Counted(tilec.Buffer(shape, _names[dtype.name]), dtype)\n"
            "import gl\n"
            "y = gl.call(tensor(list(range(12))), 4, 3)\n"
            "print(y.tolist() == [4.0 * i for i in range(12)], live[1])\n")
        self.assertEqual(self._child(script).stdout, "True 2\n")

    def test_cuda_graph_replay_equals_eager(self):
        eager = self.g8.call(self.x).tolist()
        graph = self.g8.load(cuda_graph=True)
        try:
            for _ in range(4):  # the output released: the same address each call
                y = self.g8.call(self.x)
                self.assertEqual(y.tolist(), eager)
                self.g8.release(y)
            st = graph.stats()
            self.assertEqual((st["recorded"], st["replayed"]), (1, 3))
            held = [self.g8.call(self.x) for _ in range(3)]  # held outputs: other addresses, other graphs
            self.assertEqual([y.tolist() for y in held], [eager] * 3)
            self.assertEqual(graph.stats()["recorded"], 3)
        finally:
            graph.eager()
        self.assertEqual(graph.stats()["graphs"], 0)

    def test_kernel_arguments_are_checked_before_the_launch(self):
        k = self.g8.load().module.kernel("scale2", 0)
        y = tilec.Buffer((self.n,), "f32")
        launches = fake_state().launches
        cases = [
            ((self.x, y), TypeError, "scale2() takes 3 arguments (x: *f32, y: *f32, n: i32); got 2"),
            ((self.x, y, 2**40 + 5), OverflowError,
             "scale2: parameter 'n' is i32 (-2147483648 .. 2147483647); got 1099511627781, which does not fit"),
            ((self.x, y, 2.5), TypeError, "scale2: parameter 'n' is i32, an integer; got float 2.5"),
            ((self.x.view((self.n,), "i32"), y, 3), TypeError,
             "scale2: parameter 'x' (*f32), argument 1: expects a f32 tensor; got a i32 tensor"),
            ((self.x, 1234, 3), TypeError,
             "scale2: parameter 'y' (*f32), argument 2: expects a f32 tensor (torch, CuPy or tilec.Buffer); "
             "got an int"),
            ((self.x.view((self.n - 1,), "f32", 1), y.view((self.n,), "f32"), 3), None, None),
            ((self.x, _OnDevice1(self.n), 3), ValueError,
             "scale2: parameter 'y' (*f32), argument 2: the tensor is on cuda:1; the kernel is on cuda:0"),
        ]
        for args, exc, msg in cases:
            if exc is None:
                continue
            with self.assertRaises(exc) as cm:
                k(*args)
            self.assertEqual(str(cm.exception), msg)
        misaligned = tilec.Buffer((4,), "f32", _ptr=self.x.ptr + 2)
        with self.assertRaisesRegex(ValueError, r"argument 1: address 0x[0-9a-f]+ is not aligned to 4 bytes"):
            k(misaligned, y, 3)
        self.assertEqual(fake_state().launches, launches, "nothing was launched")
        k(self.x, y, self.n)
        self.assertEqual(y.tolist()[:3], [0.0, 2.0, 4.0])

    def test_a_graph_takes_tensor_lists_and_passes_them_to_the_launch(self):
        # docs/language.md §9, "Tensor lists": the generated wrapper's list
        # parameters take lists of tensors or TensorLists, checked with the
        # graph's name; the plan's list slot launches as Kernel calls do
        # (300 tensors: three launches of 126, 126 and 48)
        src = LSCALE_TILE + """
graph lsg(xs: [*f32], ys: [*f32], s: f32, w: f32[N]) -> f32[N] {
    lscale(xs, ys, s);
    let t = empty(f32, [N]);
    scale2(w, t, N);
    return t;
}
"""
        d = scratch_dir("tilec_fake_lists_")
        tile = os.path.join(d, "lsg.tile")
        with open(tile, "w") as f, open(ALIAS_TILE) as alias:
            f.write(src + alias.read())
        subprocess.run([TILEC, tile, "--emit", "py", "-o", d], check=True)
        sys.path.insert(0, d)
        try:
            import lsg
        finally:
            sys.path.remove(d)
        sizes = [(t * 7) % 13 for t in range(300)]
        xs = [tilec.Buffer.from_bytes(array.array("f", [t + j for j in range(n)]), (n,), "f32") if n
              else tilec.Buffer((0,), "f32") for t, n in enumerate(sizes)]
        ys = [tilec.Buffer((n,), "f32") for n in sizes]
        w = tilec.Buffer.from_bytes(array.array("f", [1, 2, 3]), (3,), "f32")
        launches = fake_state().launches
        out = lsg.call(xs, ys, 2.0, w)
        self.assertEqual(fake_state().launches - launches, 4)  # three of lscale, one of scale2
        self.assertEqual(out.tolist(), [2.0, 4.0, 6.0])
        for t, (n, y) in enumerate(zip(sizes, ys)):
            self.assertEqual(y.tolist() if n else [], [2.0 * (t + j) for j in range(n)], f"tensor {t}")
        lsg.call(tilec.TensorList(xs[:5]), tuple(ys[:5]), 3.0, w)  # a TensorList, a tuple
        self.assertEqual(ys[4].tolist(), [3.0 * (4 + j) for j in range(sizes[4])])
        self.assertEqual(ys[5].tolist(), [2.0 * (5 + j) for j in range(sizes[5])])  # past the lists: untouched
        cases = [
            ((xs[1], ys, 2.0, w), TypeError,
             "lsg: parameter 'xs' ([*f32]), argument 1: expects a list of f32 tensors (a list, a tuple or a "
             "tilec.TensorList); got a f32 tensor of shape [7]"),
            ((xs[:2] + [tilec.Buffer((4,), "i32")], ys[:3], 2.0, w), TypeError,
             "lsg: parameter 'xs' ([*f32]), argument 1, tensor 2 of the list: expects a f32 tensor; got a i32 tensor"),
            ((xs, tilec.TensorList([tilec.Buffer((4,), "i32")]), 2.0, w), TypeError,
             "lsg: parameter 'ys' ([*f32]), argument 2: expects a list of f32 tensors; got a TensorList of i32 "
             "tensors"),
            ((xs, ys[:-1], 2.0, w), tilec.TilecError,
             "lsg: step 1 (kernel lscale): kernel 'lscale': tensor list arguments 1 and 2 have 300 and 299 tensors; "
             "every list of a launch must have as many"),
        ]
        for args, exc, msg in cases:
            launches = fake_state().launches
            with self.assertRaises(exc) as cm:
                lsg.call(*args)
            self.assertEqual(str(cm.exception), msg)
            self.assertEqual(fake_state().launches, launches)
        # CUDA graphs: keyed by the lists' tensors (the launches hold their tables by value), so
        # lists made anew with the same tensors replay, and another tensor records anew
        g = lsg.load(cuda_graph=True)
        for call in range(3):
            for n, y in zip(sizes, ys):
                if n:
                    y.fill_u32(0)
            if call == 2:
                ys[7] = tilec.Buffer((sizes[7],), "f32")  # another address in the list
            lsg.release(lsg.call(list(xs), tuple(ys), 5.0, w))
            for t, (n, y) in enumerate(zip(sizes, ys)):
                self.assertEqual(y.tolist() if n else [], [5.0 * (t + j) for j in range(n)], f"call {call}, tensor {t}")
        st = g.stats()
        self.assertEqual((st["recorded"], st["replayed"]), (2, 1), st)
        g.eager()

    def test_a_graph_passes_sub_lists(self):
        # docs/language.md §9, "Tensor lists": xs[a:b] passes tensors a to b - 1
        # of a list parameter (a TensorList sharing its arrays: TensorList.sub),
        # checked 0 <= a <= b <= len(xs) with the C wrapper's words; in a for
        # loop kept as a loop, each iteration's sub-list, eagerly and in
        # CUDA-graph mode (the parts run at the call's end)
        src = LSCALE_TILE + """
graph lpart(xs: [*f32], ys: [*f32], a: i64, b: i64) {
    lscale(xs[a:b], ys[a:b], 2.0);
    lscale(xs[b:], ys[b:], 5.0);
}
graph lchunks(xs: [*f32], ys: [*f32], n: i64, c: i64) {
    for i in 0 .. n {
        lscale(xs[i * c:(i + 1) * c], ys[i * c:(i + 1) * c], 3.0);
    }
}
"""
        lpart, lchunks = graph_modules("tilec_fake_sublists_", src, "lpart", "lchunks")
        sizes = [t % 4 + 1 for t in range(10)]
        xs = [tilec.Buffer.from_bytes(array.array("f", [t + j for j in range(n)]), (n,), "f32")
              for t, n in enumerate(sizes)]
        ys = [tilec.Buffer((n,), "f32") for n in sizes]

        def zero():
            for y in ys:
                y.fill_u32(0)

        def got():
            return [y.tolist() for y in ys]

        def want(scale, lo, hi, rest=0.0):
            return [[(scale if lo <= t < hi else rest if t >= hi else 0.0) * (t + j) for j in range(n)]
                    for t, n in enumerate(sizes)]

        zero()
        lpart.call(xs, ys, 2, 7)  # tensors 2 to 6, then 7 to 9
        self.assertEqual(got(), want(2.0, 2, 7, 5.0))
        zero()
        lpart.call(xs, tilec.TensorList(ys), 3, 3)  # an empty sub-list runs nothing, then 3 to 9
        self.assertEqual(got(), want(2.0, 3, 3, 5.0))
        for a, b in ((2, 11), (5, 4), (-1, 2)):
            with self.assertRaises(ValueError) as cm:
                lpart.call(xs, ys, a, b)
            self.assertEqual(str(cm.exception), f"lpart: line 12: sub-list xs[a:b] is out of bounds: start {a}, stop "
                                                f"{b}, and 'xs' has 10 tensors")
        for graph_mode in (False, True):
            g = lchunks.load(cuda_graph=graph_mode)
            for _ in range(2):
                zero()
                lchunks.call(xs, ys, 3, 3)  # tensors 0-2, 3-5, 6-8
                self.assertEqual(got(), want(3.0, 0, 9), f"graph mode {graph_mode}")
            if graph_mode:
                self.assertEqual(g.stats()["replayed"], 1, g.stats())
                g.eager()
        with self.assertRaises(ValueError) as cm:  # the fourth chunk runs past the end (eager: the three before it ran)
            lchunks.call(xs, ys, 4, 3)
        self.assertEqual(str(cm.exception), "lchunks: line 17: sub-list xs[c*i:c + c*i] is out of bounds: start 9, stop "
                                            "12, and 'xs' has 10 tensors")

    def test_a_graph_makes_lists_of_its_tensors_and_binds_sub_lists(self):
        # docs/language.md §9, "Tensor lists": let head = xs[:k] binds a
        # sub-list, passed on whole and as a sub-list of its own; [a, b] and
        # let outs = [c, d] are lists of the graph's tensors of mixed shapes
        # (TensorList.of_buffers, made after the allocations); in a kept loop,
        # a list of a tensor the body makes and a sub-list, every iteration,
        # eagerly and in CUDA-graph mode (each part keeps its lists)
        src = LSCALE_TILE + """
graph lmix(xs: [*f32], ys: [*f32], a: f32[5], b: f32[2, 3], k: i64) -> (c: f32[5], d: f32[2, 3]) {
    let head = xs[:k];
    let yh = ys[:k];
    lscale(head[1:], yh[1:], 2.0);
    let c = zeros(f32, [5]);
    let d = zeros(f32, [2, 3]);
    let outs = [c, d];
    lscale([a, b], outs, 3.0);
    return c, d;
}
graph lloop(xs: [*f32], ys: [*f32], n: i64) {
    for i in 0 .. n {
        let t = zeros(f32, [5]);
        lscale(xs[i:i + 1], [t], 2.0);
        lscale([t], ys[i:i + 1], 3.0);
    }
}
"""
        lmix, lloop = graph_modules("tilec_fake_madelists_", src, "lmix", "lloop")
        sizes = [t % 5 + 1 for t in range(5)]
        xs = [tilec.Buffer.from_bytes(array.array("f", [t + j for j in range(n)]), (n,), "f32")
              for t, n in enumerate(sizes)]
        ys = [tilec.Buffer((n,), "f32") for n in sizes]
        a = tilec.Buffer.from_bytes(array.array("f", [1, 2, 3, 4, 5]), (5,), "f32")
        b = tilec.Buffer.from_bytes(array.array("f", [10, 20, 30, 40, 50, 60]), (2, 3), "f32")

        def zero():
            for y in ys:
                y.fill_u32(0)

        def want(scale, lo, hi):
            return [[(scale if lo <= t < hi else 0.0) * (t + j) for j in range(n)] for t, n in enumerate(sizes)]

        zero()
        c, dd = lmix.call(xs, ys, a, b, 4)
        self.assertEqual([y.tolist() for y in ys], want(2.0, 1, 4))
        self.assertEqual((c.tolist(), dd.tolist(), dd.shape), ([3, 6, 9, 12, 15], [30, 60, 90, 120, 150, 180], (2, 3)))
        for k, msg in ((9, "line 12: sub-list xs[0:k] is out of bounds: start 0, stop 9, and 'xs' has 5 tensors"),
                       (0, "line 14: sub-list head[1:] is out of bounds: start 1, stop 0, and 'head' has 0 tensors")):
            with self.assertRaises(ValueError) as cm:
                lmix.call(xs, ys, a, b, k)
            self.assertEqual(str(cm.exception), "lmix: " + msg)
        for graph_mode in (False, True):
            g = lloop.load(cuda_graph=graph_mode)
            for _ in range(2):
                zero()
                lloop.call(xs, ys, 5)  # ys[i] = 3 * 2 * xs[i], through the body's t
                self.assertEqual([y.tolist() for y in ys], want(6.0, 0, 5), f"graph mode {graph_mode}")
            if graph_mode:
                self.assertEqual(g.stats()["replayed"], 1, g.stats())
                g.eager()

    def test_a_graph_passes_one_tensor_of_a_list_to_a_kernel(self):
        # docs/language.md §9, "Tensor lists": xs[i] as a kernel's *T is the
        # address of tensor i (TensorList.item, checked 0 <= i < len(xs) with
        # the C wrapper's words), of a list parameter or of a list [w, t] of
        # the graph's tensors; in a kept loop, each iteration's, eagerly and
        # in CUDA-graph mode
        src = """
kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {
    let i = pid(0) * 256 + range(256);
    store(y + i, 2.0 * load(x + i, i < n), i < n);
}
graph litem(xs: [*f32], ys: [*f32], k: i64, n: i64, w: f32[N]) -> f32[N] {
    scale2(xs[k], ys[k], 3);
    let t = zeros(f32, [N]);
    let ws = [w, t];
    scale2(ws[0], ws[1], N);
    for i in 0 .. n {
        scale2(xs[i], ys[i + 1], 1);
    }
    return t;
}
graph lfirst(xs: [*f32], ys: [*f32]) {
    scale2(xs[0], ys[0], 1);
}
"""
        litem, lfirst = graph_modules("tilec_fake_items_", src, "litem", "lfirst")
        sizes = [t % 5 + 1 for t in range(5)]
        xs = [tilec.Buffer.from_bytes(array.array("f", [t + j for j in range(n)]), (n,), "f32")
              for t, n in enumerate(sizes)]
        ys = [tilec.Buffer((n,), "f32") for n in sizes]
        w = tilec.Buffer.from_bytes(array.array("f", [1, 2, 3, 4]), (4,), "f32")

        def zero():
            for y in ys:
                y.fill_u32(0)

        # ys[2] = 2 x[2] = [4, 6, 8]; then ys[i + 1][0] = 2 x[i][0] = 2i (ys[2][0] becomes 2); t = 2 w
        want = [[0.0], [0.0, 0.0], [2.0, 6.0, 8.0], [4.0, 0.0, 0.0, 0.0], [0.0] * 5]
        for graph_mode in (False, True):
            g = litem.load(cuda_graph=graph_mode)
            for _ in range(2):
                zero()
                t = litem.call(xs, ys, 2, 3, w)
                self.assertEqual(([y.tolist() for y in ys], t.tolist()), (want, [2, 4, 6, 8]), f"mode {graph_mode}")
                litem.release(t)  # its memory serves the next call: the same addresses replay
            if graph_mode:
                self.assertEqual(g.stats()["replayed"], 1, g.stats())
                g.eager()
        zero()
        lfirst.call(xs, tilec.TensorList(ys))  # a straight-line graph: the address among run()'s values
        self.assertEqual(ys[0].tolist(), [0.0])
        for k, n, msg in ((5, 0, "line 7: xs[k] is out of bounds: index 5, and 'xs' has 5 tensors"),
                          (-1, 0, "line 7: xs[k] is out of bounds: index -1, and 'xs' has 5 tensors"),
                          (0, 5, "line 12: ys[i + 1] is out of bounds: index 5, and 'ys' has 5 tensors")):
            with self.assertRaises(ValueError) as cm:
                litem.call(xs, ys, k, n, w)
            self.assertEqual(str(cm.exception), "litem: " + msg)
        with self.assertRaises(ValueError) as cm:
            lfirst.call([], ys)
        self.assertEqual(str(cm.exception), "lfirst: line 17: xs[0] is out of bounds: index 0, and 'xs' has 0 tensors")

    def test_a_graph_views_one_tensor_of_a_list(self):
        # docs/language.md §9, "Tensor lists": view(xs[i], T[...]) gives tensor i
        # of a list a shape (TensorList.view_item: its bounds and its bytes checked
        # with the C wrapper's words), then used as any tensor (a slice of it, a
        # kernel's argument); in a kept loop, each iteration's, eagerly and in
        # CUDA-graph mode
        src = """
kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {
    let i = pid(0) * 256 + range(256);
    store(y + i, 2.0 * load(x + i, i < n), i < n);
}
graph lview(xs: [*f32], k: i64, m: i64) {
    let w = view(xs[k], f32[2, m]);
    let r = w[1:];
    scale2(r, r, m);
}
graph lviews(xs: [*f32], n: i64) {
    for i in 0 .. n {
        let v = view(xs[i], f32[i + 1]);
        scale2(v, v, i + 1);
    }
}
"""
        lview, lviews = graph_modules("tilec_fake_views_", src, "lview", "lviews")
        sizes = [t % 5 + 1 for t in range(5)]

        def make():
            return [tilec.Buffer.from_bytes(array.array("f", [t + j for j in range(n)]), (n,), "f32")
                    for t, n in enumerate(sizes)]

        xs = make()
        lview.call(xs, 3, 2)  # tensor 3, [3, 4, 5, 6], as f32[2, 2]: its second row doubled
        self.assertEqual(xs[3].tolist(), [3, 4, 10, 12])
        for k, m, msg in ((9, 2, "line 7: xs[k] is out of bounds: index 9, and 'xs' has 5 tensors"),
                          (2, 2, "line 7: view w of xs[k] (3 elements, 12 bytes) as f32[2, m] (16 bytes) changes "
                                 "its size")):
            with self.assertRaises(ValueError) as cm:
                lview.call(xs, k, m)
            self.assertEqual(str(cm.exception), "lview: " + msg)
        for graph_mode in (False, True):
            g = lviews.load(cuda_graph=graph_mode)
            xs = make()
            for _ in range(2):
                lviews.call(xs, 5)  # tensor i, i + 1 elements, doubled
            self.assertEqual([x.tolist() for x in xs], [[4.0 * (t + j) for j in range(n)] for t, n in enumerate(sizes)],
                             f"graph mode {graph_mode}")
            if graph_mode:
                self.assertEqual(g.stats()["replayed"], 1, g.stats())
                g.eager()
        with self.assertRaises(ValueError) as cm:  # tensor 5 has 1 element, not 6 (the five before it ran)
            lviews.call(make() + [tilec.Buffer((1,), "f32")], 6)
        self.assertEqual(str(cm.exception), "lviews: line 13: view v of xs[i] (1 elements, 4 bytes) as f32[i + 1] (24 "
                                            "bytes) changes its size")

    def test_a_graph_passes_one_tensor_of_a_list_to_an_extern(self):
        # docs/language.md §9, "Tensor lists": xs[k] as an extern's argument is
        # viewed at its parameter's shape (N from 'a'), checked as view(xs[k], ...)
        # is; a view of a tensor of a list of the graph's tensors ([b, a]) is
        # taken after that list is made, in a straight-line graph and after a
        # loop kept as a loop
        src = """
kernel scale2(x: *f32, y: *f32, n: i32) grid (cdiv(n, 256)) hints { warps = 4 } {
    let i = pid(0) * 256 + range(256);
    store(y + i, 2.0 * load(x + i, i < n), i < n);
}
extern addto(x: f32[N], y: f32[N]) = "my.addto";
graph lext(a: f32[N], xs: [*f32], k: i64) {
    addto(a, xs[k]);
    let b = zeros(f32, [N]);
    let ls = [b, a];
    let w = view(ls[1], f32[N]);
    scale2(w, w, N);
}
graph lextn(a: f32[N], xs: [*f32], n: i64, k: i64) {
    for i in 0 .. n {
        addto(a, xs[i]);
    }
    let b = zeros(f32, [N]);
    let ls = [b, a];
    let w = view(ls[k], f32[N]);
    scale2(w, w, N);
}
"""
        lext, lextn = graph_modules("tilec_fake_ext_items_", src, "lext", "lextn")

        def addto(inputs, outputs):  # y += x; the fake's device memory is host memory
            x, y = inputs[0].tolist(), inputs[1].tolist()
            vals = array.array("f", [u + v for u, v in zip(x, y)]).tobytes()
            dev = inputs[1].device
            host = ctypes.create_string_buffer(vals, len(vals))
            dev._check(tilec._library.lib().tilec_rt_memcpy_htod(dev._h, inputs[1].ptr, host, len(vals)))

        def make():
            return [tilec.Buffer.from_bytes(array.array("f", [t + j for j in range(4)]), (4,), "f32") for t in range(5)]

        for graph in (lext, lextn):
            graph.externs().register("my.addto", addto)
        a = tilec.Buffer.from_bytes(array.array("f", [1, 2, 3, 4]), (4,), "f32")
        xs = make()
        lext.call(a, xs, 3)  # tensor 3 += a; then a doubled through view(ls[1], f32[N])
        self.assertEqual(xs[3].tolist(), [4, 6, 8, 10])
        self.assertEqual(a.tolist(), [2, 4, 6, 8])
        with self.assertRaises(ValueError) as cm:
            lext.call(a, xs, 9)
        self.assertEqual(str(cm.exception), "lext: line 8: xs[k] is out of bounds: index 9, and 'xs' has 5 tensors")
        with self.assertRaises(ValueError) as cm:
            lext.call(a, xs[:2] + [tilec.Buffer((3,), "f32")], 2)
        self.assertEqual(str(cm.exception), "lext: line 8: view addto_y of xs[k] (3 elements, 12 bytes) as f32[N] (16 "
                                            "bytes) changes its size")
        a = tilec.Buffer.from_bytes(array.array("f", [1, 2, 3, 4]), (4,), "f32")
        xs = make()
        lextn.call(a, xs, 5, 1)  # every tensor += a; then a doubled
        self.assertEqual([x.tolist() for x in xs], [[t + j + j + 1.0 for j in range(4)] for t in range(5)])
        self.assertEqual(a.tolist(), [2, 4, 6, 8])
        lextn.call(a, xs, 0, 0)  # b (zeros) doubled: a unchanged
        self.assertEqual(a.tolist(), [2, 4, 6, 8])
        with self.assertRaises(ValueError) as cm:
            lextn.call(a, xs, 0, 2)
        self.assertEqual(str(cm.exception), "lextn: line 20: ls[k] is out of bounds: index 2, and 'ls' has 2 tensors")

    def test_a_split_k_first_variant_takes_the_declared_arguments(self):
        # variant 0 split-K: its CUDA kernel has two more parameters (the
        # slices' workspace and counters, which the program's launch appends);
        # the Kernel took them for its own, so examples/llm.tile's gemm_nn
        # called from Python refused its 6 arguments ("gemm_nn() takes 8
        # arguments (..., arg7: *pointer, arg8: *pointer); got 6")
        src = """
kernel skmm(a: *f16, b: *f16, c: *f16, M: i32, N: i32, K: i32)
    grid (cdiv(M, BM), cdiv(N, BN))
    hints { BM = 16, BN = 64, BK = 64, warps = 4, stages = 3, split_k = 1 }
    variants { { split_k = 4 }, {} }
{
    let rm = pid(0) * BM + range(BM);
    let rn = pid(1) * BN + range(BN);
    let acc = zeros(f32, BM, BN);
    for k in 0 .. K step BK {
        let rk = k + range(BK);
        let ta = load(a + rm[:, None] * K + rk[None, :], rm[:, None] < M && rk[None, :] < K, 0.0);
        let tb = load(b + rk[:, None] * N + rn[None, :], rk[:, None] < K && rn[None, :] < N, 0.0);
        acc = acc + dot(ta, tb);
    }
    store(c + rm[:, None] * N + rn[None, :], cast(acc, f16), rm[:, None] < M && rn[None, :] < N);
}
"""
        mod = tilec.Module(source=src)
        a, b, c = tilec.Buffer((16 * 512,), "f16"), tilec.Buffer((512 * 64,), "f16"), tilec.Buffer((16 * 64,), "f16")
        for v in (0, 1, None):
            k = mod.kernel("skmm", v)
            self.assertEqual(repr(k), "<tilec.Kernel skmm(a: *f16, b: *f16, c: *f16, M: i32, N: i32, K: i32)>")
            launches = fake_state().launches
            k(a, b, c, 16, 64, 512)
            self.assertGreater(fake_state().launches, launches, f"variant {v}")

    def test_tensor_lists_are_packed_and_split_into_launches(self):
        # docs/language.md §4.3: a list of 300 tensors runs as three launches
        # of the table's 126 tensors (tilec_rt_list_cap(3, 2)); the fake
        # driver's lscale_v0 computes y[t] = s * x[t] from the packed tables
        src = LSCALE_TILE
        mod = tilec.Module(source=src)
        try:
            k = mod.lscale
            self.assertEqual(repr(k), "<tilec.Kernel lscale(x: [*f32], y: [*f32], s: f32)>")
            sizes = [(t * 7) % 13 for t in range(300)]  # 0 to 12 elements, empty tensors too
            xs = [tilec.Buffer.from_bytes(array.array("f", [t + j for j in range(n)]), (n,), "f32") if n
                  else tilec.Buffer((0,), "f32") for t, n in enumerate(sizes)]
            ys = [tilec.Buffer((n,), "f32") for n in sizes]
            launches = fake_state().launches
            k(xs, ys, 2.0)
            self.assertEqual(fake_state().launches - launches, 3)
            for t, (n, y) in enumerate(zip(sizes, ys)):
                self.assertEqual(y.tolist() if n else [], [2.0 * (t + j) for j in range(n)], f"tensor {t}")
            k(tilec.TensorList(xs), tilec.TensorList(ys), 3.0)  # checked once, when made
            self.assertEqual(fake_state().launches - launches, 6)
            self.assertEqual(ys[299].tolist(), [3.0 * (299 + j) for j in range(sizes[299])])
            launches = fake_state().launches
            k([], [], 2.0)  # an empty list: len(x) = 0, a grid of 0, nothing launched
            self.assertEqual(fake_state().launches, launches)
            cases = [
                ((xs, ys[:-1], 2.0), ValueError,
                 "lscale: tensor list arguments 1 ('x') and 2 ('y') have 300 and 299 tensors; every list of a launch "
                 "must have as many"),
                ((tilec.TensorList(xs), ys[:5], 2.0), ValueError,
                 "lscale: tensor list arguments 1 ('x') and 2 ('y') have 300 and 5 tensors; every list of a launch "
                 "must have as many"),
                ((xs[1], ys, 2.0), TypeError,
                 "lscale: parameter 'x' ([*f32]), argument 1: expects a list of f32 tensors; got a f32 tensor of "
                 "shape [7]"),
                ((xs[:2] + [tilec.Buffer((4,), "i32")], ys[:3], 2.0), TypeError,
                 "lscale: parameter 'x' ([*f32]), argument 1, tensor 2 of the list: expects a f32 tensor; got a i32 "
                 "tensor"),
                ((xs[:1], [3], 2.0), TypeError,
                 "lscale: parameter 'y' ([*f32]), argument 2, tensor 0 of the list: expects a f32 tensor (torch, CuPy "
                 "or tilec.Buffer); got an int"),
                ((tilec.TensorList([tilec.Buffer((4,), "i32")]), ys[:1], 2.0), TypeError,
                 "lscale: parameter 'x' ([*f32]), argument 1: expects a list of f32 tensors; got a TensorList of i32 "
                 "tensors"),
            ]
            for args, exc, msg in cases:
                with self.assertRaises(exc) as cm:
                    k(*args)
                self.assertEqual(str(cm.exception), msg)
            self.assertEqual(fake_state().launches, launches, "nothing was launched")
        finally:
            mod.close()
        scale2 = self.g8.load().module.kernel("scale2", 0)
        with self.assertRaises(TypeError) as cm:  # a list where a pointer is expected
            scale2([self.x], self.x, 3)
        self.assertEqual(str(cm.exception), "scale2: parameter 'x' (*f32), argument 1: expects a f32 tensor; got a list "
                                            "of 1 values (only a tensor list parameter such as 'x: [*f32]' takes a list)")

    def test_a_generic_kernel_launches_the_instance_its_tensors_choose(self):
        # docs/language.md §4.2: scale2<T: f32 | i32> is two kernels; the
        # fake driver's scale2__f32_v0 computes y = 2 * x
        src = """
kernel scale2<T: f32 | i32>(x: *T, y: *T, n: i32) grid (cdiv(n, 128)) {
    let i = pid(0) * 128 + range(128);
    store(y + i, load(x + i, i < n) * cast(2, T), i < n);
}
graph gen2(x: f32[N]) -> f32[N] {
    let y = empty(f32, [N]);
    scale2(x, y, N);
    return y;
}
"""
        mod = tilec.Module(source=src)
        try:
            k = mod.scale2
            self.assertIsInstance(k, tilec.GenericKernel)
            self.assertEqual(repr(k), "<tilec.GenericKernel scale2<T: f32 | i32>>")
            self.assertEqual(k.instances, {("f32",): "scale2__f32", ("i32",): "scale2__i32"})
            y = tilec.Buffer((self.n,), "f32")
            k(self.x, y, self.n)
            self.assertEqual(k.last.name, "scale2__f32")
            self.assertEqual(y.tolist()[:3], [0.0, 2.0, 4.0])
            xi, yi = tilec.Buffer((8,), "i32"), tilec.Buffer((8,), "i32")
            k(xi, yi, 0)
            self.assertEqual(k.last.name, "scale2__i32")
            self.assertIs(mod.kernel("scale2__i32"), k.last)
            launches = fake_state().launches
            cases = [
                ((self.x, y), "scale2() takes 3 arguments; got 2"),
                ((tilec.Buffer((8,), "f64"), y, 8),
                 "scale2: takes T = f32 | i32, but argument 1 ('x': *T) is a f64 tensor"),
                ((self.x, yi, 8), "scale2: argument 2 ('y': *T) is a i32 tensor, but argument 1 made T = f32"),
                ((3, y, 8), "scale2: parameter 'x' (*T), argument 1: expects a tensor (torch, CuPy or tilec.Buffer), "
                            "whose dtype chooses T; got an int"),
                ((self.x, y, 2.5), "scale2__f32: parameter 'n' is i32, an integer; got float 2.5"),
            ]
            for args, msg in cases:
                with self.assertRaises(TypeError) as cm:
                    k(*args)
                self.assertEqual(str(cm.exception), msg)
            self.assertEqual(fake_state().launches, launches, "nothing was launched")
        finally:
            mod.close()
        # a graph's call names the instance: its wrapper launches scale2__f32
        tile = os.path.join(self.dir, "gen2.tile")
        with open(tile, "w") as f:
            f.write(src)
        subprocess.run([TILEC, tile, "--emit", "py", "-o", self.dir], check=True)
        import gen2
        self.assertEqual(gen2.call(self.x).tolist()[:4], [0.0, 2.0, 4.0, 6.0])

    def test_the_inputs_device_is_respected(self):
        # the graph is loaded for the inputs' device: the fake driver has no device 1
        with self.assertRaisesRegex(tilec.TilecError, "no CUDA device 1"):
            self.g8.call(_OnDevice1(self.n))
        graph = self.g8.load()
        with self.assertRaises(ValueError) as cm:
            graph.begin([tilec.tensor_info(_OnDevice1(self.n))])
        self.assertEqual(str(cm.exception),
                         "g8: x is on cuda:1, but the graph was loaded on cuda:0 (load(device=...) for another "
                         "device)")

    def test_debug_printer_runs_the_steps_one_by_one(self):
        script = ("import array, tilec, g8\n"
                  "x = tilec.Buffer.from_bytes(array.array('f', range(5)), (5,), 'f32')\n"
                  "print(g8.call(x).tolist())\n")
        env = dict(os.environ, TILEC_DEBUG_PRINT="2",
                   PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), self.dir]))
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "[0.0, 8.0, 16.0, 24.0, 32.0]")
        self.assertEqual(r.stderr.count("tilec: launch scale2"), 3, r.stderr)
        self.assertIn("tilec:   scale2 arg 1: f32[5] numel=5 min=0 max=16 mean=8", r.stderr)
        # a graph with a for loop: each part's steps, each iteration's slices
        script = ("import array, tilec, gl\n"
                  "x = tilec.Buffer.from_bytes(array.array('f', range(6)), (6,), 'f32')\n"
                  "print(gl.call(x, 2, 2).tolist())\n")
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "[0.0, 4.0, 8.0, 12.0, 0.0, 0.0]")
        self.assertEqual(r.stderr.count("tilec: launch scale2"), 4, r.stderr)
        self.assertIn("tilec:   scale2 arg 1: f32[2] numel=2 min=4 max=6 mean=5", r.stderr)

    def test_a_python_extern_is_a_step_of_the_plan(self):
        def add1(inputs, outputs):  # the fake's device memory is host memory
            vals = array.array("f", [v + 1.0 for v in inputs[0].tolist()]).tobytes()
            dev = outputs[0].device
            host = ctypes.create_string_buffer(vals, len(vals))
            dev._check(tilec._library.lib().tilec_rt_memcpy_htod(dev._h, outputs[0].ptr, host, len(vals)))

        self.ge.externs().register("my.add1", add1)
        z = self.ge.call(self.x)
        self.assertEqual(z.tolist(), [2.0 * i + 1.0 for i in range(self.n)])
        self.assertEqual(self.ge.load().stats()["steps"], 2)

        def fails(inputs, outputs):
            raise RuntimeError("no luck")
        self.ge.externs().register("my.add1", fails)
        with self.assertRaisesRegex(tilec.TilecError, r"ge: step 2 \(extern my.add1\): my.add1: no luck"):
            self.ge.call(self.x)

    def test_externs_call_runs_on_the_stream_it_is_given(self):
        # Externs.call(stream=): the extern is handed that stream (the
        # benchmark's trace calls cuBLAS and the collectives on the graph's);
        # before, it always ran on the legacy stream (None)
        seen = []
        x = tilec.Externs()
        x.register("my.stream", lambda ins, outs: seen.append(outs[0].stream))
        b = tilec.Buffer.from_bytes(array.array("f", [1.0]), (1,), "f32")
        x.call("my.stream", [b], [b], stream=0x1234)
        x.call("my.stream", [b], [b])
        self.assertEqual(seen, [0x1234, 0])
        x.close()

    def test_run_checks_its_slot_values(self):
        graph = self.g8.load()
        with self.assertRaisesRegex(TypeError, "g8: run takes 5 slot values; got 2"):
            graph.run((1, 2))
        with self.assertRaisesRegex(OverflowError, "does not fit 64 bits"):
            graph.run((self.x.ptr, 0, 0, 0, 2**64))
        with self.assertRaises(OverflowError) as cm:  # the runtime's own range check
            graph.run((self.x.ptr, self.x.ptr, self.x.ptr, self.x.ptr, 2**40 + 5))
        self.assertEqual(str(cm.exception), "g8: N is 1099511627781, which does not fit i32 (argument 3 of scale2)")

    def test_recipes_skip_the_checks_of_a_known_key_and_keep_them_for_others(self):
        # a stand-in for torch (tensors over tilec Buffers on the fake driver):
        # the first call of a key records a Recipe, the next ones run it
        script = _TORCH_STAND_IN + (
            "import g8\n"
            "import tilec.graph\n"
            "py_runs = []  # Recipe.run: the Python twin of the extension's rcall, which runs known keys\n"
            "_run = tilec.graph.Recipe.run\n"
            "tilec.graph.Recipe.run = lambda self, infos: py_runs.append(1) or _run(self, infos)\n"
            "g = g8.load()\n"
            "x = tensor(list(range(7)))\n"
            "ys = [g8.call(x).tolist() for _ in range(3)]\n"
            "print(ys[0] == ys[2] == [8.0 * i for i in range(7)], len(g8._recipes), g.stats()['runs'])\n"
            "x2 = tensor(list(range(5)))\n"
            "print(g8.call(x2).tolist(), len(g8._recipes))\n"
            "for bad in (tensor([1.0, 2.0], 'int32'), tensor([1.0, 2.0], strides=(2,))):\n"
            "    try:\n        g8.call(bad)\n    except ValueError as e:\n        print(e)\n"
            "print(g.stats()['runs'], len(g8._recipes))\n"
            "print(g8.call(x, stream=0).tolist() == ys[0], len(py_runs))\n"
            "g.close()\n"
            "print(len(g8._recipes))\n")
        r = self._child(script)
        k = 1 if tilec._library.native() is not None else 0  # no extension (TILEC_NO_NATIVE=1): no recipes
        self.assertEqual(r.stdout, f"True {k} 3\n[0.0, 8.0, 16.0, 24.0, 32.0] {2 * k}\n"
                                   "g8: x must be a f32 tensor of rank 1\ng8: x must be contiguous (row-major)\n"
                                   f"4 {2 * k}\nTrue 0\n0\n")

    def test_compiled_recipes_with_two_inputs_two_outputs_and_a_workspace(self):
        # the extension runs a recipe compiled once (rcompile): each slot an
        # input's, an output's or the workspace's address, outputs as a tuple
        if tilec._library.native() is None:
            self.skipTest("no extension (TILEC_NO_NATIVE=1 or not built): no recipes")
        script = _TORCH_STAND_IN + (
            "import g2\n"
            "import tilec.graph\n"
            "py_runs = []\n"
            "_run = tilec.graph.Recipe.run\n"
            "tilec.graph.Recipe.run = lambda self, infos: py_runs.append(1) or _run(self, infos)\n"
            "x, w = tensor([1.0, 2.0, 3.0]), tensor([5.0, 6.0, 7.0])\n"
            "outs = [tuple(t.tolist() for t in g2.call(x, w)) for _ in range(3)]\n"
            "print(outs[0], outs[0] == outs[1] == outs[2], len(g2._recipes), len(py_runs))\n"
            "a, b = g2.call(x, w), g2.call(w, x)\n"
            "print(a[0].data_ptr() != b[0].data_ptr(), b[0].tolist(), b[1].tolist())\n"
            "r = next(iter(g2._recipes.values()))\n"
            "print(type(r.fast).__name__)\n"
            "n = tilec._library.native()\n"
            "for bad in ((r.graph._h, b'pp', (0, 5, 0, 3, 0, 7), ((torch.empty_strided, ((3,), (1,)), {}),), 0, {},\n"
            "             torch._C._cuda_getCurrentRawStream, 0, 1, True, {}, None, None, None, (12, 12)),\n"
            "            (r.graph._h, b'pp', (0, 0, 0), ((torch.empty_strided, ((3,), (1,)), {}),), 0, {},\n"
            "             torch._C._cuda_getCurrentRawStream, 0, 1, True, {}, None, None, None, (12, 12)),\n"
            "            (r.graph._h, b'p', (0, 0, 0), ((torch.empty_strided, ((3,), (1,)), {}),), 0, {},\n"
            "             torch._C._cuda_getCurrentRawStream, 0, 1, True, {}, None, None, None, (12,))):\n"
            "    try:\n        n.rcompile(bad)\n        print('no error')\n"
            "    except ValueError as e:\n        print(type(e).__name__)\n")
        r = self._child(script)
        self.assertEqual(r.stdout, "([4.0, 8.0, 12.0], [10.0, 12.0, 14.0]) True 1 0\n"
                                   "True [20.0, 24.0, 28.0] [2.0, 4.0, 6.0]\nPyCapsule\nValueError\nValueError\nValueError\n")

    def test_static_outputs_are_opt_in_and_overwritten_by_the_next_call(self):
        # default: every call returns new tensors, also when a CUDA graph replays;
        # capture(static_outputs=True): a known key's call returns the same ones
        if tilec._library.native() is None:
            self.skipTest("no extension (TILEC_NO_NATIVE=1 or not built): no recipes")
        script = _TORCH_STAND_IN + (
            "import g8\n"
            "g = g8.load(cuda_graph=True)\n"
            "x = tensor(list(range(5)))\n"
            "ys = [g8.call(x) for _ in range(4)]\n"
            "print(len({id(y) for y in ys}), [y.tolist() == [8.0 * i for i in range(5)] for y in ys])\n"
            "g.capture(static_outputs=True)\n"
            "a, b, c = g8.call(x), g8.call(x), g8.call(x)\n"
            "print(b is c, a is b, c.tolist())  # the key is known: from the first call on\n"
            "x = tensor([1.0] * 5)  # another address, the same key: the recipe's outputs, another graph\n"
            "d = g8.call(x)\n"
            "print(d is c, c.tolist(), g.stats()['replayed'] > 0)\n"
            "g.trim()\n"
            "e = g8.call(x)\n"
            "print(e is c, e.tolist())\n"
            "g.eager()\n"
            "f, h = g8.call(x), g8.call(x)\n"
            "print(f is h, f is e, h.tolist())\n")
        r = self._child(script)
        self.assertEqual(r.stdout, "4 [True, True, True, True]\nTrue True [0.0, 8.0, 16.0, 24.0, 32.0]\n"
                                   "True [8.0, 8.0, 8.0, 8.0, 8.0] True\nFalse [8.0, 8.0, 8.0, 8.0, 8.0]\n"
                                   "False False [8.0, 8.0, 8.0, 8.0, 8.0]\n")

    def test_an_input_sharing_memory_with_a_static_output_is_copied_first(self):
        # static outputs are overwritten by the run: a call's output fed back
        # as the next call's input (g2(z1, y1): z = 2 * w must read the old y,
        # which step 2 overwrites), or a view into one at an offset, is copied
        # to a private buffer (clone() on the run's stream) before the plan
        # runs; an output of another key's recipe (other buffers) is not
        if tilec._library.native() is None:
            self.skipTest("no extension (TILEC_NO_NATIVE=1 or not built): no recipes")
        script = _TORCH_STAND_IN + (
            "import g2, gv\n"
            "g = g2.load(cuda_graph=True).capture(static_outputs=True)\n"
            "x, w = tensor([1.0, 2.0, 3.0]), tensor([5.0, 6.0, 7.0])\n"
            "g2.call(x, w)  # the key's first call: checked, new tensors\n"
            "y1, z1 = g2.call(x, w)  # the recipe's static outputs\n"
            "print(y1.tolist(), z1.tolist(), clones)\n"
            "addr = (y1.data_ptr(), z1.data_ptr())\n"
            "y2, z2 = g2.call(z1, y1)  # both fed back, swapped\n"
            "print(y2 is y1, y2.tolist(), z2.tolist(), sorted(clones) == sorted(addr), g.stats().get('static_input_copies'))\n"
            "y3, z3 = g2.call(x, w)  # no alias: no copy\n"
            "print(y3.tolist(), z3.tolist(), g.stats().get('static_input_copies'))\n"
            "h = gv.load(cuda_graph=True).capture(static_outputs=True)\n"
            "a, b = tensor([1.0, 2.0, 3.0, 4.0]), tensor([1.0, 1.0])\n"
            "gv.call(a, b)\n"
            "y, z = gv.call(a, b)\n"
            "v = Tensor(y.buf.view((2,), 'f32', 1), torch.float32)  # y[1:3] = [4, 6], a view at an offset\n"
            "y4, z4 = gv.call(tensor([0.0] * 4), v)  # step 1 zeroes y before step 2 reads w\n"
            "print(y4 is y, y4.tolist(), z4.tolist(), h.stats().get('static_input_copies'), clones[-1] == v.data_ptr())\n"
            "del clones[:]\n"
            "p, q = tensor([1.0, 2.0]), tensor([3.0, 4.0])\n"
            "gv.call(p, q)\n"
            "yp, zp = gv.call(p, q)  # another key (N=2): outputs of its own\n"
            "yq, zq = gv.call(z4, q)  # z4: the N=4 recipe's static output, not this one's\n"
            "print(yq is yp, yq.tolist(), zq.tolist(), clones, h.stats().get('static_input_copies'))\n")
        r = self._child(script)
        self.assertEqual(r.stdout, "[4.0, 8.0, 12.0] [10.0, 12.0, 14.0] []\n"
                                   "True [40.0, 48.0, 56.0] [8.0, 16.0, 24.0] True 2\n"
                                   "[4.0, 8.0, 12.0] [10.0, 12.0, 14.0] 2\n"
                                   "True [0.0, 0.0, 0.0, 0.0] [8.0, 12.0] 1 True\n"
                                   "True [16.0, 24.0] [6.0, 8.0] [] 1\n")

    def test_closing_a_module_closes_its_graphs_first(self):
        # a plan's CUDA graphs hold split-K workspaces of the program: the
        # plan is freed before the program, whichever is closed first
        script = (
            "import array, g8, tilec\n"
            "g = g8.load(cuda_graph=True)\n"
            "x = tilec.Buffer.from_bytes(array.array('f', range(5)), (5,), 'f32')\n"
            "print(g8.call(x).tolist(), g.stats()['graphs'])\n"
            "g.module.close()\n"
            "print(g._h, g.module._prog)\n")
        r = self._child(script)
        self.assertEqual(r.stdout, "[0.0, 8.0, 16.0, 24.0, 32.0] 1\nNone None\n")

    def test_outputs_from_torchs_lean_allocator_on_the_current_device(self):
        # where torch has it (torch._C._dynamo.guards._empty_strided_cuda, what
        # torch.compile's code allocates with), a known key's outputs come from
        # it while the graph's device is the current one; else empty_strided
        if tilec._library.native() is None:
            self.skipTest("no extension (TILEC_NO_NATIVE=1 or not built): no recipes")
        script = _TORCH_STAND_IN + (
            "import types, g8\n"
            "calls, current = [], [0]\n"
            "def lean(size, stride, dtype):\n"
            "    calls.append((size, stride, dtype.name))\n"
            "    return empty_strided(size, stride, dtype=dtype)\n"
            "torch._C._dynamo = types.SimpleNamespace(guards=types.SimpleNamespace(_empty_strided_cuda=lean))\n"
            "torch._C._cuda_getDevice = lambda: current[0]\n"
            "torch.cuda = types.SimpleNamespace(device_count=lambda: 2)\n"
            "x = tensor(list(range(5)))\n"
            "ys = [g8.call(x) for _ in range(3)]  # the first call is checked (empty_strided), then the recipe\n"
            "print(calls, ys[2].tolist())\n"
            "current[0] = 1  # another current device: empty_strided with the graph's device\n"
            "y = g8.call(x)\n"
            "print(len(calls), y.tolist())\n")
        r = self._child(script)
        self.assertEqual(r.stdout, "[((5,), (1,), 'float32'), ((5,), (1,), 'float32')] "
                                   "[0.0, 8.0, 16.0, 24.0, 32.0]\n2 [0.0, 8.0, 16.0, 24.0, 32.0]\n")

    def test_a_known_keys_call_enters_no_python_frame(self):
        # load() puts the extension's Entry in front of call(): a known key's
        # call runs its recipe in C; a keyword, another count or an unknown
        # key is call()'s, which also shows its name, signature and docstring
        if tilec._library.native() is None:
            self.skipTest("no extension (TILEC_NO_NATIVE=1 or not built): no recipes")
        script = _TORCH_STAND_IN + (
            "import inspect, sys, g8\n"
            "g8.load()\n"
            "x = tensor(list(range(5)))\n"
            "g8.call(x)  # the first call of a key is checked, and records its recipe\n"
            "frames = []\n"
            "def prof(frame, event, arg):\n"
            "    if event == 'call' and frame.f_code.co_filename.endswith('g8.py'):\n"
            "        frames.append(frame.f_code.co_name)\n"
            "sys.setprofile(prof)\n"
            "ys = [g8.call(x) for _ in range(3)]\n"
            "n = len(frames)\n"
            "z = g8.call(x, stream=None)\n"
            "sys.setprofile(None)\n"
            "print(type(g8.call).__name__, n, frames, ys[2].tolist(), z.tolist())\n"
            "print(inspect.signature(g8.call), g8.call.__name__, g8.call.__doc__.splitlines()[0])\n"
            "try:\n    g8.call()\nexcept TypeError as e:\n    print('TypeError', \"'x'\" in str(e))\n"
            "try:\n    g8.call(tensor([1, 2], dtype=\"int32\"))\nexcept ValueError as e:\n    print(e)\n")
        r = self._child(script)
        self.assertEqual(r.stdout, "Entry 0 ['call'] [0.0, 8.0, 16.0, 24.0, 32.0] [0.0, 8.0, 16.0, 24.0, 32.0]\n"
                                   "(x, *, stream=None) call Run graph g8.\nTypeError True\n"
                                   "g8: x must be a f32 tensor of rank 1\n")

    def test_the_entrys_memo_follows_the_key_and_drops_retired_recipes(self):
        # the Entry keeps the last key it ran: other shapes or dtypes take the
        # lookup or the checked call(); a retired recipe (Graph.close(), a full
        # recipes dict) is never run from the memo
        if tilec._library.native() is None:
            self.skipTest("no extension (TILEC_NO_NATIVE=1 or not built): no recipes")
        script = _TORCH_STAND_IN + (
            "import sys, g8, tilec\n"
            "g8.load()\n"
            "x, y = tensor(list(range(5))), tensor([1.0, 2.0, 3.0])\n"
            "hashes = [0]\n"
            "class Shape(tuple):  # counts the key's hashing: a dict lookup hashes it, the memo does not\n"
            "    def __hash__(self):\n"
            "        hashes[0] += 1\n"
            "        return tuple.__hash__(self)\n"
            "x.shape = Shape(x.shape)\n"
            "frames = []\n"
            "def prof(frame, event, arg):\n"
            "    if event == 'call' and frame.f_code.co_name == 'call' and frame.f_code.co_filename.endswith('g8.py'):\n"
            "        frames.append(1)\n"
            "sys.setprofile(prof)\n"
            "out = [g8.call(v).tolist() for v in (x, x, y, y, x, y, x)]\n"
            "n = len(frames)  # the first call of each key is checked: 2\n"
            "h = hashes[0]\n"
            "for _ in range(5):\n"
            "    g8.call(x)\n"
            "print(hashes[0] - h)  # the memo's key: no lookup\n"
            "r = g8._recipes[next(k for k in g8._recipes if k[0][1] == (5,))]\n"
            "tilec._library.native().rretire(r.fast)\n"
            "z = g8.call(x).tolist()  # retired: not from the memo; found again by the lookup\n"
            "sys.setprofile(None)\n"
            "print(n, len(frames), out[0], out[2], out[5], out[6], z)\n")
        r = self._child(script)
        self.assertEqual(r.stdout, "0\n2 2 [0.0, 8.0, 16.0, 24.0, 32.0] [8.0, 16.0, 24.0] [8.0, 16.0, 24.0] "
                                   "[0.0, 8.0, 16.0, 24.0, 32.0] [0.0, 8.0, 16.0, 24.0, 32.0]\n")

    def test_the_entry_keys_scalars_by_value_type_and_text(self):
        # the Entry's key of a scalar is the Python first line's: its value,
        # its type and a float's str(), so 2 and 2.0, and -0.0 and 0.0, are
        # keys apart; a bad scalar still gets the checks' error
        if tilec._library.native() is None:
            self.skipTest("no extension (TILEC_NO_NATIVE=1 or not built): no recipes")
        script = _TORCH_STAND_IN + (
            "import sys, gk\n"
            "gk.load()\n"
            "x = tensor(list(range(5)))\n"
            "frames = []\n"
            "def prof(frame, event, arg):\n"
            "    if event == 'call' and frame.f_code.co_name == 'call' and frame.f_code.co_filename.endswith('gk.py'):\n"
            "        frames.append(1)\n"
            "sys.setprofile(prof)\n"
            "seq = [(2.0, 1), (2.0, 1), (3.0, 1), (2, 1), (-0.0, 1), (0.0, 1), (0.0, 1), (2.0, 2), (2.0, 2)]\n"
            "outs = [gk.call(x, k, m).tolist() for k, m in seq]\n"
            "sys.setprofile(None)\n"
            "print(len(frames), len(gk._recipes), all(o == [0.0, 2.0, 4.0, 6.0, 8.0] for o in outs))\n"
            "for k, m in ((2.0, 2 ** 40), ([1], 1)):\n"
            "    try:\n        gk.call(x, k, m)\n        print('no error')\n"
            "    except (TypeError, ValueError) as e:\n        print(type(e).__name__)\n")
        r = self._child(script)
        self.assertEqual(r.stdout, "6 6 True\nRangeError\nTypeError\n")

    def test_one_device_needs_no_current_device_read(self):
        # a process that sees one CUDA device has it as the current one: the
        # recipe allocates with the lean allocator without asking
        if tilec._library.native() is None:
            self.skipTest("no extension (TILEC_NO_NATIVE=1 or not built): no recipes")
        script = _TORCH_STAND_IN + (
            "import types, g8\n"
            "calls = []\n"
            "def lean(size, stride, dtype):\n"
            "    calls.append((size, stride, dtype.name))\n"
            "    return empty_strided(size, stride, dtype=dtype)\n"
            "def getdev():\n"
            "    raise AssertionError('the current device was read')\n"
            "torch._C._dynamo = types.SimpleNamespace(guards=types.SimpleNamespace(_empty_strided_cuda=lean))\n"
            "torch._C._cuda_getDevice = getdev\n"
            "torch.cuda = types.SimpleNamespace(device_count=lambda: 1)\n"
            "x = tensor(list(range(5)))\n"
            "ys = [g8.call(x) for _ in range(3)]\n"
            "print(len(calls), ys[2].tolist())\n")
        r = self._child(script)
        self.assertEqual(r.stdout, "2 [0.0, 8.0, 16.0, 24.0, 32.0]\n")

    def test_kernel_checks_in_the_extension_with_torch_tensors(self):
        # with the torch stand-in, Kernel calls go through the extension's
        # kcall; whatever it refuses comes back to the Python checks
        script = _TORCH_STAND_IN + (
            "import g8\n"
            "k = g8.load().module.kernel('scale2', 0)\n"
            "x, y = tensor([1.0, 2.0, 3.0]), tensor([0.0, 0.0, 0.0])\n"
            "k(x, y, 3)\n"
            "print(y.tolist(), k._spec is not None)\n"
            "for args in ((tensor([1.0], 'int32'), y, 3), (tensor([1.0, 2.0], strides=(2,)), y, 3), (x, y, 2**40),\n"
            "             (x, y, 2.5), (x, 7, 3), (x, y)):\n"
            "    try:\n        k(*args)\n    except (TypeError, ValueError) as e:\n"
            "        print(type(e).__name__, e)\n"
            "print(y.tolist())\n")
        r = self._child(script)
        fast = tilec._library.native() is not None
        self.assertEqual(r.stdout, f"[2.0, 4.0, 6.0] {fast}\n"
                         "TypeError scale2: parameter 'x' (*f32), argument 1: expects a f32 tensor; got a i32 tensor\n"
                         "ValueError scale2: parameter 'x' (*f32), argument 1: the tensor must be contiguous "
                         "(row-major); its strides are (2,)\n"
                         "RangeError scale2: parameter 'n' is i32 (-2147483648 .. 2147483647); got 1099511627776, "
                         "which does not fit\n"
                         "TypeError scale2: parameter 'n' is i32, an integer; got float 2.5\n"
                         "TypeError scale2: parameter 'y' (*f32), argument 2: expects a f32 tensor (torch, CuPy or "
                         "tilec.Buffer); got an int\n"
                         "TypeError scale2() takes 3 arguments (x: *f32, y: *f32, n: i32); got 2\n"
                         "[2.0, 4.0, 6.0]\n")

    def _child(self, script, **env):
        """Run script in a child Python over the package and the wrappers; it must succeed."""
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), self.dir]), **env)
        r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def test_fills_are_steps_of_the_plan(self):
        want = ([3.0] * self.n, [0.1] * self.n, [1.0] * self.n)
        graph = self.gf.load()
        outs = self.gf.call(self.x)
        self.assertEqual(tuple(o.tolist() for o in outs), want)
        self.assertEqual(graph.stats()["steps"], 4)
        self.gf.release(*outs)
        graph = self.gf.load(cuda_graph=True)
        try:
            for _ in range(3):  # poisoned, released, refilled: the replay fills as the eager run did
                outs = self.gf.call(self.x)
                self.assertEqual(tuple(o.tolist() for o in outs), want)
                for o in outs:
                    o.fill_u32(0xFFFFFFFF)
                self.gf.release(*outs)
            st = graph.stats()
            self.assertEqual((st["recorded"], st["replayed"]), (1, 2))
        finally:
            graph.eager()

    def test_fill_writes_every_pattern_exactly(self):
        f64 = struct.unpack("<Q", struct.pack("<d", 0.1))[0]
        cases = [("i8", 5, 0xFD, 1, b"\xfd" * 5), ("f16", 5, 0xC100, 2, b"\x00\xc1" * 5),
                 ("f32", 3, 0x3FC00000, 4, struct.pack("<3f", 1.5, 1.5, 1.5)),
                 ("f64", 7, f64, 8, struct.pack("<7d", *[0.1] * 7)), ("f64", 3, 0, 8, bytes(24)),
                 ("u8", 0, 1, 1, b"")]
        for dtype, n, bits, size, want in cases:
            buf = tilec.Buffer(((n * size + 11) // 4 * 4,), "u8")  # whole words, 8 bytes or more of guard
            buf.fill_u32(0xABABABAB)
            tilec.fill(buf.view((n,), dtype), bits, size)
            got = buf.to_bytes()
            self.assertEqual(got[:len(want)], want, dtype)
            self.assertEqual(got[len(want):], b"\xab" * (len(got) - len(want)), f"{dtype}: written past the end")
        with self.assertRaisesRegex(tilec.TilecError, "fill: 6 bytes are no whole number of 4-byte elements"):
            tilec.fill(tilec.Buffer((3,), "f16"), 0, 4)

    def test_bad_stream_is_a_type_error(self):
        with self.assertRaisesRegex(TypeError, "stream must be an int"):
            self.g8.call(self.x, stream="s")


FAKE_NCCL = os.path.join(ROOT, BUILD, "tests", "libfakenccl.so")
COLL_TILE = os.path.join(ROOT, "tests", "collective_run.tile")  # scale2 around the four collectives


def _coll_want(world, rank, t, h):
    """tests/collective_run.tile's outputs for x = 1 .. t*h on rank `rank` of
    `world`, whose other ranks (the fake NCCL's) hold the same x."""
    x = [float(i + 1) for i in range(t * h)]
    part = t // world * h
    return [((t, h), [4.0 * world * v for v in x]),
            ((t, h * world), [2.0 * x[r * h + c] for r in range(t) for _ in range(world) for c in range(h)]),
            ((t // world, h), [world * v for v in x[rank * part:(rank + 1) * part]]),
            ((t, h), [2.0 * v for v in x])]


@unittest.skipUnless(os.path.exists(FAKE_NCCL) and os.path.exists(TILEC), "build first: make")
class FakeNcclTests(unittest.TestCase):
    """The generated Python wrapper of a graph with collectives
    (tests/collective_run.tile) on the fake driver and the fake NCCL
    (tests/fake_nccl.c), world 1 and 2, and its run-time errors."""

    @classmethod
    def setUpClass(cls):
        cls.dir = scratch_dir("tilec_fake_coll_")
        subprocess.run([TILEC, COLL_TILE, "--emit", "py", "-o", cls.dir], check=True)
        sys.path.insert(0, cls.dir)
        import coll
        cls.coll = coll

    def x(self, t, h):
        return tilec.Buffer.from_bytes(array.array("f", range(1, t * h + 1)), (t, h), "f32")

    def test_a_call_needs_a_communicator(self):
        self.coll._comm = None
        with self.assertRaises(RuntimeError) as cm:
            self.coll.call(self.x(4, 3))
        self.assertEqual(str(cm.exception), "coll: the graph has collectives: give the module a communicator with "
                                            "set_comm(tilec.Comm(rank, world, unique_id)) first")

    def test_world_1_and_2(self):
        for world, rank, t, h in ((1, 0, 4, 3), (2, 0, 4, 3), (2, 1, 4, 3), (2, 1, 6, 5)):
            comm = tilec.Comm(rank, world, tilec.Comm.unique_id(FAKE_NCCL), library=FAKE_NCCL)
            self.assertEqual((comm.rank, comm.world), (rank, world))
            self.coll.set_comm(comm)
            outs = self.coll.call(self.x(t, h))
            self.assertEqual([(o.shape, o.tolist()) for o in outs], _coll_want(world, rank, t, h),
                             f"world {world} rank {rank} T {t} H {h}")
            self.coll.release(*outs)

    def test_a_size_world_does_not_divide(self):
        self.coll.set_comm(tilec.Comm(0, 2, tilec.Comm.unique_id(FAKE_NCCL), library=FAKE_NCCL))
        with self.assertRaises(tilec.TilecError) as cm:
            self.coll.call(self.x(3, 2))
        self.assertEqual(str(cm.exception), "coll: step 5 (extern tilec:coll:s): line 20: s = reduce_scatter(x, sum, "
                                            "0): dimension 0 of the input f32[3, 2] is 3, which world (2 ranks) does "
                                            "not divide (reduce_scatter hands each rank an equal part)")

    def test_an_overlapped_collective_waits_and_keeps_its_input(self):
        # tests/collective_overlap.tile on the fake NCCL with FAKE_NCCL_DEFER=1:
        # a collective on a stream runs only when a wait (or a synchronization)
        # needs it, so a dropped wait gives y without r's sum, and p given to q
        # before the wait makes r reduce 2 z (tests/test_wrapper_run.c: the C
        # wrapper, and the order of the calls)
        d = scratch_dir("tilec_fake_ovl_")
        subprocess.run([TILEC, os.path.join(ROOT, "tests", "collective_overlap.tile"), "--emit", "py", "-o", d],
                       check=True)
        sys.path.insert(0, d)
        import ovl
        env = {"FAKE_NCCL_DEFER": "1", "TILEC_NCCL": FAKE_NCCL}  # the fake driver finds the fake NCCL by TILEC_NCCL
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            for world in (1, 2):
                ovl.set_comm(tilec.Comm(0, world, tilec.Comm.unique_id(FAKE_NCCL), library=FAKE_NCCL))
                x = tilec.Buffer.from_bytes(array.array("f", range(1, 6)), (5,), "f32")
                z = tilec.Buffer.from_bytes(array.array("f", range(100, 105)), (5,), "f32")
                comm = ovl._comm
                self.assertEqual(comm.stream, 0)  # made at the first overlapped collective
                for _ in range(2):  # the second call on the first one's buffers
                    y, q = ovl.call(x, z)
                    self.assertNotEqual(comm.stream, 0)
                    self.assertEqual((y.tolist(), q.tolist()),
                                     ([4.0 * world * v for v in range(1, 6)], [2.0 * v for v in range(100, 105)]),
                                     f"world {world}")
                    ovl.release(y, q)
        finally:
            for k, v in old.items():
                if v is None:
                    del os.environ[k]
                else:
                    os.environ[k] = v

    def test_comm_from_a_torch_process_group(self):
        # Comm.from_torch(group): rank 0 of the group makes the unique id and
        # torch.distributed.broadcast_object_list hands it to the others (here a
        # stand-in torch: ranks 0 and 1 of a group of 2, played in turn)
        import types
        from unittest import mock
        made = tilec.Comm.unique_id(FAKE_NCCL)
        for rank in (0, 1):
            sent = []

            def bcast(objs, src=0, group=None, rank=rank, sent=sent):
                sent.append((objs[0], src, group))
                if rank != 0:
                    objs[0] = made

            dist = types.ModuleType("torch.distributed")
            dist.is_available = lambda: True
            dist.is_initialized = lambda: True
            dist.get_rank = lambda group=None, rank=rank: rank
            dist.get_world_size = lambda group=None: 2
            dist.get_global_rank = lambda group, r: r + 4  # the group's rank 0 is rank 4 of the world
            dist.broadcast_object_list = bcast
            torch = types.ModuleType("torch")
            torch.distributed = dist
            torch.cuda = types.SimpleNamespace(current_device=lambda: 0)
            with mock.patch.dict(sys.modules, {"torch": torch, "torch.distributed": dist}):
                comm = tilec.Comm.from_torch("group", library=FAKE_NCCL)
            self.assertEqual((comm.rank, comm.world), (rank, 2))
            self.assertEqual(len(sent), 1)
            self.assertEqual(sent[0][1:], (4, "group"))
            self.assertTrue(isinstance(sent[0][0], bytes) and len(sent[0][0]) == 128 if rank == 0 else
                            sent[0][0] is None)
            comm.close()
            dist.is_initialized = lambda: False
            with mock.patch.dict(sys.modules, {"torch": torch, "torch.distributed": dist}):
                with self.assertRaisesRegex(tilec.TilecError, "torch.distributed is not initialized"):
                    tilec.Comm.from_torch()

    def test_comm_from_torch_shares_the_groups_communicator(self):
        # from_torch(share=True): the group's own ncclComm_t (the NCCL
        # backend's _comm_ptr(), made at the first collective, which it runs
        # when there is none), adopted: the rank and world are NCCL's, and
        # close() leaves it to torch. Without _comm_ptr, or with a library
        # torch did not load, a new communicator, and why in share_note.
        import types
        from unittest import mock
        nccl = ctypes.CDLL(FAKE_NCCL)
        uid = ctypes.create_string_buffer(128)
        self.assertEqual(nccl.ncclGetUniqueId(uid), 0)
        raw = ctypes.c_void_p()

        class Id(ctypes.Structure):
            _fields_ = [("b", ctypes.c_char * 128)]
        nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, Id, ctypes.c_int]
        self.assertEqual(nccl.ncclCommInitRank(ctypes.byref(raw), 2, Id(uid.raw), 1), 0)
        made = tilec.Comm.unique_id(FAKE_NCCL)
        for has_ptr in (True, False):
            reduced = []
            state = {"ptr": 0}

            class Backend:
                def _comm_ptr(self):
                    return state["ptr"]
            backend = Backend() if has_ptr else types.SimpleNamespace()

            def all_reduce(t, group=None, reduced=reduced):
                reduced.append(t)
                state["ptr"] = raw.value  # torch makes it at the first collective

            def bcast(objs, src=0, group=None):
                objs[0] = made
            dist = types.ModuleType("torch.distributed")
            dist.is_available = dist.is_initialized = lambda: True
            dist.get_rank = lambda group=None: 1
            dist.get_world_size = lambda group=None: 2
            dist.broadcast_object_list = bcast
            dist.all_reduce = all_reduce
            dist.distributed_c10d = types.SimpleNamespace(
                _get_default_group=lambda: types.SimpleNamespace(_get_backend=lambda dev: backend))
            torch = types.ModuleType("torch")
            torch.distributed = dist
            torch.device = lambda kind, index: (kind, index)
            torch.zeros = lambda n, device=None: ("zeros", n, device)
            torch.cuda = types.SimpleNamespace(current_device=lambda: 0, synchronize=lambda dev=None: None)
            with mock.patch.dict(sys.modules, {"torch": torch, "torch.distributed": dist}):
                comm = tilec.Comm.from_torch(library=FAKE_NCCL, share=True)
                self.assertEqual((comm.rank, comm.world, comm.shared), (1, 2, has_ptr), comm.share_note)
                if has_ptr:
                    self.assertEqual(len(reduced), 1)  # the group's first collective made it
                    self.assertEqual(comm.share_note, "")
                else:
                    self.assertEqual(comm.share_note, "this torch's NCCL backend has no _comm_ptr()")
                comm.close()
                if has_ptr:  # a library torch has not loaded: not adopted; a new one (which cannot load it)
                    with self.assertRaisesRegex(tilec.TilecError, "no NCCL found: /nonexistent/libnccl.so.2"):
                        tilec.Comm.from_torch(library="/nonexistent/libnccl.so.2", share=True)
        nccl.ncclCommDestroy.argtypes = [ctypes.c_void_p]
        self.assertEqual(nccl.ncclCommDestroy(raw), 0)  # still the owner's: a double free under ASan otherwise

    def test_nccl_missing(self):
        old = os.environ.get("TILEC_NCCL")
        os.environ["TILEC_NCCL"] = "/nonexistent/libnccl.so.2"
        try:
            with self.assertRaises(tilec.TilecError) as cm:
                tilec.Comm.unique_id()
        finally:
            if old is None:
                del os.environ["TILEC_NCCL"]
            else:
                os.environ["TILEC_NCCL"] = old
        self.assertEqual(str(cm.exception), "no NCCL found: /nonexistent/libnccl.so.2 (from TILEC_NCCL) could not be "
                                            "loaded: /nonexistent/libnccl.so.2: cannot open shared object file: No "
                                            "such file or directory; graphs with collectives need NCCL: set "
                                            "TILEC_NCCL to the path of libnccl.so.2 (the nvidia-nccl wheel puts it "
                                            "in site-packages/nvidia/nccl/lib)")


if __name__ == "__main__":
    unittest.main()
