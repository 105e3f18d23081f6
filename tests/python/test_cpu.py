"""CPU checks of the Python package: it imports with the standard library
only, finds libtilec, and without a GPU says why in one clear error."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tilec  # noqa: E402


class CpuTests(unittest.TestCase):
    def test_version(self):
        self.assertRegex(tilec.version(), r"^\d+\.\d+\.\d+$")

    def test_no_gpu_is_a_clear_error(self):
        try:
            d = tilec.Device(0)
        except tilec.TilecError as e:
            self.assertTrue("no CUDA driver" in str(e) or "no CUDA device" in str(e), str(e))
        else:
            self.skipTest(f"a GPU is present: {d}")

    def test_pointer_of(self):
        class Fake:
            __cuda_array_interface__ = {"data": (1234, False), "shape": (1,), "typestr": "<f4", "version": 3}
        self.assertEqual(tilec.pointer_of(Fake()), 1234)
        self.assertEqual(tilec.pointer_of(77), 77)
        with self.assertRaises(tilec.TilecError):
            tilec.pointer_of("not a buffer")


class KernelArgumentTests(unittest.TestCase):
    """Integers for a kernel are range-checked per parameter kind, never
    truncated (issue 14: 2**32 + 4 ran as 4; issue 18: OverflowError)."""

    def error(self, exc, kind, value):
        with self.assertRaises(exc) as cm:
            tilec.check_int("k", "n", kind, value)
        return str(cm.exception)

    def test_out_of_range(self):
        self.assertEqual(self.error(OverflowError, "i32", 2**40 + 5),
                         "k: parameter 'n' is i32 (-2147483648 .. 2147483647); got 1099511627781, which does not fit")
        self.assertIn("which does not fit", self.error(OverflowError, "i32", -2**31 - 1))
        self.assertIn("is u32", self.error(OverflowError, "u32", -1))
        self.assertIn("is u32", self.error(OverflowError, "u32", 2**32))
        self.assertIn("is i64", self.error(OverflowError, "i64", 2**63))
        self.assertIn("is u64", self.error(OverflowError, "u64", 2**64))
        self.assertTrue(issubclass(tilec.RangeError, ValueError), "wrappers raised ValueError before")

    def test_not_an_integer(self):
        self.assertEqual(self.error(TypeError, "i32", 2.5), "k: parameter 'n' is i32, an integer; got float 2.5")
        self.assertIn("got str '7'", self.error(TypeError, "i64", "7"))
        self.assertIn("got float 4.0", self.error(TypeError, "i32", 4.0))
        with self.assertRaises(TypeError):
            tilec.check_float("k", "eps", "f32", "x")

    def test_in_range(self):
        for f, v in (("i32", -2**31), ("i32", 2**31 - 1), ("u32", 2**32 - 1), ("i64", -2**63), ("u64", 2**64 - 1),
                     ("i32", True)):
            self.assertEqual(tilec.check_int("k", "n", f, v), int(v))
        self.assertEqual(tilec.check_float("k", "eps", "f32", 3), 3.0)
        with self.assertRaises(OverflowError):
            tilec.check_float("k", "eps", "f32", 1e39)  # struct would refuse it with no name
        self.assertEqual(tilec.check_float("k", "eps", "f64", 1e39), 1e39)


class _Fake:
    """A device array by its __cuda_array_interface__ only (no GPU needed)."""

    def __init__(self, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"data": (4096, False), "shape": shape, "typestr": typestr,
                                         "strides": strides, "version": 3}


def _generated(graph, base=None):
    """The golden wrapper tests/golden/py/BASE/GRAPH.py, imported."""
    import importlib.util
    root = os.path.join(os.path.dirname(__file__), "..", "golden", "py", base or graph, graph + ".py")
    spec = importlib.util.spec_from_file_location("tilec_test_" + graph, root)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class _FakeGraph:
    """A graph without a GPU: what a generated wrapper allocates and runs
    (begin() returns the graph itself as the call's context)."""

    stream = None

    def __init__(self):
        self.allocs, self.runs, self.copies, self.ws = [], [], [], None
        self.events = []  # a graph with for loops: ("run", part, values), ("temp", bytes), ("free", objects)

    def begin(self, infos, stream, recipes=None, key=None):
        self.infos = infos
        return self

    def alloc(self, shape, dtype):
        self.allocs.append((shape, dtype))
        return ("buffer", shape, dtype), 1000 * len(self.allocs)

    def workspace(self, nbytes):
        self.ws = nbytes
        return ("workspace", nbytes), 50000

    def view(self, base, offset, shape, dtype):
        return ("view", base, offset, shape, dtype)

    def copy(self, obj, info):
        self.copies.append(obj)
        return ("copy", info.shape, info.dtype)

    def done(self):
        pass

    def run(self, values, stream):
        self.runs.append(values)

    def run_part(self, k, values, stream):
        self.events.append(("run", k, values))

    def temp(self, nbytes):
        self.events.append(("temp", nbytes))
        return ("temp", len(self.events)), 90000 + 1000 * len(self.events)

    def free(self, *objs):
        self.events.append(("free", objs))


def _without_gpu(mod):
    """Run generated wrapper `mod` without a GPU: its graph is a _FakeGraph."""
    g = _FakeGraph()
    mod._graphs = {0: g}
    mod.load = lambda *a, **k: g
    return g


def _slots(mod, values):
    """The slot values of a run by slot name: tensors by name, sizes and scalars by "$NAME"."""
    names = [t[0] for t in mod._TENSORS] + ["$" + s[0] for s in mod._SCALARS]
    return dict(zip(names, values))


class GeneratedWrapperTests(unittest.TestCase):
    """A wrapper from `tilec --emit py` checks its arguments before it
    touches the GPU, with the messages of the C wrapper."""

    def call_error(self, fn, *args):
        with self.assertRaises(ValueError) as cm:
            fn(*args)
        return str(cm.exception)

    def test_imports_without_a_gpu(self):
        e2e = _generated("e2e")
        self.assertEqual(e2e._graphs, {})
        self.assertIsInstance(e2e.TILE_SOURCE, bytes)
        self.assertIn(b"graph e2e(", e2e.TILE_SOURCE)
        self.assertTrue(callable(e2e.call) and callable(e2e.load) and callable(e2e.main))

    def test_shape_checks(self):
        e2e = _generated("e2e")
        R, C = 64, 1024
        ok = _Fake((R, C))
        self.assertEqual(self.call_error(e2e.call, ok, _Fake((R, 1000)), _Fake((C,)), _Fake((C,))),
                         "e2e: dimension 1 of y is 1000, but C is 1024")
        self.assertEqual(self.call_error(e2e.call, ok, _Fake((R + 1, C)), _Fake((C,)), _Fake((C,))),
                         "e2e: dimension 0 of y is 65, but R is 64")
        self.assertEqual(self.call_error(e2e.call, ok, ok, _Fake((C,), "<f8"), _Fake((C,))),
                         "e2e: w must be a f32 tensor of rank 1")
        self.assertEqual(self.call_error(e2e.call, ok, ok, _Fake((C, 1)), _Fake((C,))),
                         "e2e: w must be a f32 tensor of rank 1")
        self.assertEqual(self.call_error(e2e.call, "x", ok, _Fake((C,)), _Fake((C,))),
                         "e2e: x must be a f32 tensor of rank 2")
        transposed = _Fake((R, C), strides=(4, 4 * R))
        self.assertEqual(self.call_error(e2e.call, transposed, ok, _Fake((C,)), _Fake((C,))),
                         "e2e: x must be contiguous (row-major)")
        self.assertEqual(e2e._graphs, {}, "nothing was loaded")

    def test_checks_pass_then_load(self):
        e2e = _generated("e2e")
        C = 1024
        try:
            e2e.call(_Fake((8, C)), _Fake((8, C), strides=(4 * C, 4)), _Fake((C,)), _Fake((C,)))
        except tilec.TilecError as e:  # no GPU here: the checks passed, load() says why
            self.assertTrue("no CUDA driver" in str(e) or "no CUDA device" in str(e), str(e))
        except ValueError as e:
            self.fail(f"a good call was refused: {e}")
        else:
            self.skipTest("a GPU is present (and fake pointers were launched)")

    def test_i32_range_check(self):
        views = _generated("views")
        x = _Fake((4, 4))
        msg = self.call_error(views.call, _Fake((4, 4), "<i4"), 1)
        self.assertEqual(msg, "views: x must be a f32 tensor of rank 2")
        # checked against the parameter's declared type, before any size and
        # before load() touches the GPU
        with self.assertRaises(OverflowError) as cm:
            views.call(x, 2**40 + 5)
        self.assertEqual(str(cm.exception),
                         "views: parameter 'k' is i32 (-2147483648 .. 2147483647); got 1099511627781, which does "
                         "not fit")
        with self.assertRaises(TypeError) as cm:
            views.call(x, 2.0)
        self.assertEqual(str(cm.exception), "views: parameter 'k' is i32, an integer; got float 2.0")
        self.assertEqual(views._graphs, {}, "nothing was loaded")
        # a u64 scalar that fits its type but not the i32 kernel argument it feeds
        g = _generated("g", "u64_scalar")
        with self.assertRaises(OverflowError) as cm:
            g.call(_Fake((8,)), 2**40)
        self.assertEqual(str(cm.exception), "g: argument 'n' of copy (m) is 1099511627776, which does not fit i32")
        with self.assertRaises(OverflowError) as cm:
            g.call(_Fake((8,)), -1)
        self.assertEqual(str(cm.exception),
                         "g: parameter 'm' is u64 (0 .. 18446744073709551615); got -1, which does not fit")
        self.assertEqual(g._graphs, {}, "nothing was loaded")

    def test_size_overflow_is_an_error_before_any_gpu_work(self):
        e2e = _generated("e2e")
        R = C = 2**32  # f32[R, C] is 2**66 bytes: a C wrapper's 64 bits would wrap
        big = _Fake((R, C))
        self.assertEqual(self.call_error(e2e.call, big, big, _Fake((C,)), _Fake((C,))),
                         "e2e: tensor t (f32[4294967296, 4294967296]) needs 73786976294838206464 bytes, "
                         "more than 2**63 - 1")
        self.assertEqual(e2e._graphs, {}, "nothing was loaded")
        R, C = 2**16, 2**16  # 16 GiB fits; C*R passed to an i32 does not
        ok = _Fake((R, C))
        self.assertEqual(self.call_error(e2e.call, ok, ok, _Fake((C,)), _Fake((C,))),
                         "e2e: argument 'n' of relu_plus (C*R) is 4294967296, which does not fit i32")
        self.assertEqual(e2e._graphs, {}, "nothing was loaded")

    def test_size_helpers(self):
        # / and % of size texts truncate as in C (and tilec_wir_eval)
        self.assertEqual([tilec.div(a, b) for a, b in ((7, 2), (-7, 2), (7, -2), (-7, -2))], [3, -3, -3, 3])
        self.assertEqual([tilec.mod(a, b) for a, b in ((7, 2), (-7, 2), (7, -2), (-7, -2))], [1, -1, 1, -1])
        # cdiv is the ceiling for any a and b > 0 (docs/language.md 7.7), as tl_cdiv
        self.assertEqual([tilec.cdiv(a, b) for a, b in ((7, 2), (8, 2), (0, 5), (-7, 2), (-8, 2), (-1, 128))],
                         [4, 4, 0, -3, -4, 0])
        self.assertEqual(tilec.cdiv(2**63 - 1, 2**63 - 1), 1)
        for b in (0, -2):
            with self.assertRaises(ValueError):
                tilec.cdiv(7, b)
        self.assertEqual(tilec.check_fits("g", "x", 2**63 - 1), 2**63 - 1)
        with self.assertRaises(ValueError):
            tilec.check_fits("g", "x", 2**63)
        with self.assertRaises(ValueError):
            tilec.check_fits("g", "x", -1, "u64")
        with self.assertRaises(ValueError):
            tilec.check_tensor("g", "t", (2, -1), "f32")
        tilec.check_tensor("g", "t", (2**30, 2**30, 1), "f32")  # 2**62 bytes
        with self.assertRaises(ValueError):
            tilec.check_tensor("g", "t", (2**30, 2**30, 2), "f32")  # 2**63 bytes

    def test_names_keep_symbols_apart_from_tensors(self):
        """A tensor named N and the size symbol N are two variables (the
        symbol is _N_s): allocations and the plan's slots get the sizes, not
        the tensor."""
        mod = _generated("tilec_", "names")
        g = _without_gpu(mod)
        out_y, y = mod.call(_Fake((5,)), _Fake((5,)), _Fake((7,)), 2.0, _Fake((5,)))
        self.assertEqual(g.allocs, [((5,), "f32"), ((7,), "f32")])
        self.assertEqual(g.ws, tilec.aligned(4 * 5), "tl is the one intermediate")
        self.assertEqual(y, ("buffer", (7,), "f32"))
        slots = _slots(mod, g.runs[0])
        self.assertEqual((slots["$N"], slots["$s_N"], slots["$int"]), (5, 7, 2.0))
        self.assertEqual((slots["N"], slots["y"], slots["x"], slots["out_y"]), (4096, 2000, 1000, 1000))
        self.assertEqual(slots["tl"], 50000)

    def test_one_run_per_call_with_the_plan(self):
        """Every kernel of a graph is one step of its plan: a call is one
        run, whose slots hold the inputs' addresses, the intermediates'
        places in one workspace, and the sizes."""
        mod = _generated("e2e")
        g = _without_gpu(mod)
        R, C = 3, 5
        out = mod.call(_Fake((R, C)), _Fake((R, C)), _Fake((C,)), _Fake((C,)))
        self.assertEqual(len(g.runs), 1)
        self.assertEqual([st[1] for st in mod._STEPS],
                         ["ln_rows", "softmax_rows", "relu_plus", "colsum_part", "colsum"])
        slots = _slots(mod, g.runs[0])
        self.assertEqual((slots["$R"], slots["$C"]), (R, C))
        self.assertEqual(slots["x"], 4096)
        self.assertEqual(g.allocs, [((C,), "f32")], "the output s is allocated apart")
        self.assertEqual(out, ("buffer", (C,), "f32"))
        # t, u and p: v takes t's memory once t is dead (memory planning)
        self.assertEqual(g.ws, 2 * tilec.aligned(4 * C * R) + tilec.aligned(4 * 64 * C))
        self.assertEqual((slots["t"], slots["u"], slots["v"], slots["p"]),
                         (50000, 50000 + tilec.aligned(4 * C * R), 50000, 50000 + 2 * tilec.aligned(4 * C * R)))

    def test_nested_loops_run_the_plans_parts_with_the_sizes_of_each_iteration(self):
        # tests/golden/ir/chunks.tile's nested: y filled (part 0); for h in 0 .. K, r in 0 .. 4K step 4
        # (K = 2): put(x[8h + r : 8h + r + 4], y, (8h + r) * H, 4H) (part 2); then two puts (part 4)
        mod = _generated("nested", "chunks")
        g = _without_gpu(mod)
        H = 3
        mod.call(_Fake((16, H)), 2)
        runs = [(e[1], _slots(mod, e[2])) for e in g.events if e[0] == "run"]
        self.assertEqual([k for k, _ in runs], [0, 2, 2, 2, 2, 4])
        self.assertEqual([(s["$8*H*h + H*r"], s["blk"]) for k, s in runs if k == 2],
                         [(H * r8, 4096 + 4 * H * r8) for r8 in (0, 4, 8, 12)])
        self.assertEqual(runs[-1][1]["bottom"], 4096 + 4 * 8 * H)
        self.assertEqual(len(mod._STEPS), 8)
        self.assertEqual([st for st in mod._STEPS if st[0] in ("loop", "end_loop")],
                         [("loop", "h"), ("loop", "r"), ("end_loop", "r"), ("end_loop", "h")])

    def test_a_loops_buffers_are_taken_and_given_back_each_iteration(self):
        # chunks.tile's reuse: t and u of the body per iteration, v takes t's memory (the
        # planner's reuse), both back at the end of the iteration; b lives across the loop
        mod = _generated("reuse", "chunks")
        g = _without_gpu(mod)
        N = 10
        mod.call(_Fake((N,)), 4)
        kinds = [e[0] for e in g.events]
        self.assertEqual(kinds, ["run"] + ["temp", "temp", "run", "free"] * 4 + ["run"])
        for i in range(4):
            t, u, run, free = g.events[1 + 4 * i:5 + 4 * i]
            self.assertEqual((t[1], u[1]), (4 * N, 4 * N))
            slots = _slots(mod, run[2])
            self.assertEqual(slots["v"], slots["t"])
            self.assertNotEqual(slots["u"], slots["t"])
            self.assertEqual(slots["b"], 50000)
            self.assertEqual(len(free[1]), 2)

    def test_returned_input_is_a_copy(self):
        """A graph that returns its own input hands back a new tensor with a
        copy of it, never the caller's."""
        mod = _generated("g", "returns_input")
        g = _without_gpu(mod)
        x = _Fake((5,))
        same, y = mod.call(x)
        self.assertEqual(g.copies, [x])
        self.assertEqual(same, ("copy", (5,), "f32"))

    def test_tensor_info(self):
        info = tilec.tensor_info(_Fake((2, 3), "<f2", strides=(6, 2)))
        self.assertEqual((info.dtype, info.shape, info.strides, info.ptr), ("f16", (2, 3), (3, 1), 4096))
        self.assertTrue(info.contiguous)
        self.assertFalse(tilec.tensor_info(_Fake((2, 3), strides=(4, 8))).contiguous)
        self.assertTrue(tilec.tensor_info(_Fake((1, 3), strides=(999, 4))).contiguous)
        self.assertIsNone(tilec.tensor_info([1, 2]))
        self.assertEqual(tilec.cdiv(10, 4), 3)
        self.assertEqual(tilec.cdiv(8, 4), 2)

    def test_debug_off_costs_nothing(self):
        kernels = {"a": object()}
        old = os.environ.pop("TILEC_DEBUG_PRINT", None)
        try:
            self.assertIs(tilec.debug_kernels(kernels), kernels)
            os.environ["TILEC_DEBUG_PRINT"] = "0"
            self.assertIs(tilec.debug_kernels(kernels), kernels)
        finally:
            os.environ.pop("TILEC_DEBUG_PRINT", None)
            if old is not None:
                os.environ["TILEC_DEBUG_PRINT"] = old


if __name__ == "__main__":
    unittest.main()
