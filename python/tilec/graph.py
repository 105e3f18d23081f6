"""Graphs: the launch plan of a generated wrapper (tilec --emit py), made
once when it loads, run by one native call per graph call (the runtime's
tilec_plan_run). The wrapper checks its arguments, allocates outputs and
one workspace for the intermediates (through torch's caching allocator
when the inputs are torch tensors, else from a tilec.Pool), fills the
slots (device addresses, sizes, scalars) and calls Graph.run.

Opt-in CUDA graphs (Graph.capture(), or load(cuda_graph=True) in a
wrapper): the runtime records the launches of a call the first time it
sees its slot values and replays them afterwards (tilec/plan.h)."""
from __future__ import annotations

import ctypes
import functools
import struct
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from ._library import (F32, F64, I32, I64, PTR, U32, U64, Owner, TilecError, _PlanStats, _PlanTensor, _PlanValue,
                       lib, native)
from .buffer import _torch_names, Buffer, Pool, TensorInfo, fill
from .checks import RangeError
from .debug import debug_kernels, debug_level
from .device import stream_handle, torch_module
from .dtypes import DT_ENUM, DTYPES

if TYPE_CHECKING:
    from .module import Externs, Module

Ref = Union[str, int, float, bool]
# a step: ("kernel", name, variant or -1 for the fastest, (arguments...)),
# ("extern", symbol, (input tensors...), (output tensors...)) or ("fill",
# tensor, element bit pattern); an argument is a tensor's name, "$NAME" for
# a size or scalar slot, or a constant. A graph with for loops marks them
# with ("loop", VAR) and ("end_loop", VAR): the markers cut the steps into
# parts, each a plan of its own that the wrapper runs from its Python loops
# (run_part)
Step = Tuple[Any, ...]
_MARKERS = ("loop", "end_loop")

_TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "i8": "int8",
                 "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32",
                 "u64": "uint64", "bool": "bool"}
_SETTERS = {I32: "i32", I64: "i64", F32: "f32", F64: "f64", U32: "u32", U64: "u64", PTR: "ptr"}
# a size or scalar slot's kind ("int", "float", "list": a tensor list's tilec_rt_list address,
# "ptr": the device address of one tensor of a list, xs[i]): its tilec_plan_slot_type, its
# struct letter, its letter for the extension's plan_run
_SLOT_TYPE = {"int": 1, "float": 2, "list": 3, "ptr": 0}
_SLOT_PACK = {"int": "q", "float": "d", "list": "Q", "ptr": "Q"}
_SLOT_KIND = {"int": "q", "float": "d", "list": "p", "ptr": "p"}


class Graph(Owner):
    """A graph's launch plan on a Module.

    tensors: (name, dtype, dims) per tensor slot, dims being ints or "$NAME"
    size slots; scalars: (name, "int" | "float" | "list") per size, scalar or
    tensor list slot (a list's value: the address of its tilec_rt_list, a
    TensorList's .address; in CUDA-graph mode keyed by the list's tensors);
    steps: what the graph runs, in order. run() takes the slot values: the
    tensors' device addresses, then the sizes and scalars. A graph with for
    loops (loop markers among its steps) is run part by part instead:
    run_part(k, values) runs the steps between its k-th and k+1-th markers
    (the wrapper sets the slots of each iteration between the runs); in
    CUDA-graph mode the parts of a call run at its end, as one plan per
    order of parts (run_seq), recorded and replayed."""

    def __init__(self, module: "Module", name: str, tensors: Sequence[Tuple[str, str, Sequence[Ref]]],
                 scalars: Sequence[Tuple[str, str]], steps: Sequence[Step], externs: Optional["Externs"] = None,
                 inputs: Sequence[str] = ()):
        self.module, self.name, self.externs = module, name, externs
        self.device = module.device
        self.device_index = module.device.index
        self.tensors, self.scalars, self.steps = tuple(tensors), tuple(scalars), tuple(steps)
        self.inputs = tuple(inputs)
        L = self._lib = lib()
        self._slot = {t[0]: i for i, t in enumerate(self.tensors)}
        self._slot.update({"$" + s[0]: len(self.tensors) + i for i, s in enumerate(self.scalars)})
        self._nslots = len(self.tensors) + len(self.scalars)
        self._pack = struct.Struct("<" + "Q" * len(self.tensors) + "".join(_SLOT_PACK[s[1]] for s in self.scalars)).pack
        self._kinds = ("p" * len(self.tensors) + "".join(_SLOT_KIND[s[1]] for s in self.scalars)).encode()
        self._native = native()
        self._kernels: Dict[Tuple[str, int], Any] = {}
        # the parts between loop markers (one, the steps, without loops)
        self._part_steps: List[List[Step]] = [[]]
        for step in self.steps:
            if step[0] in _MARKERS:
                self._part_steps.append([])
            else:
                self._part_steps[-1].append(step)
        self._parts: List[Any] = []  # their plans; self._h is the first
        self._h = None
        self._off = 0  # building a sequence plan: the slot offset of the part being added
        # CUDA-graph mode of a graph with loops: the (part, values) runs of one call, run at its end
        # as one plan of the parts in that order (keyed by the order: the trip counts)
        self._seq: Optional[List[Tuple[int, Tuple[Any, ...]]]] = None
        self._seq_graphs = 0
        self._seq_plans: Dict[Tuple[int, ...], Tuple[Any, bytes, Any]] = {}  # order: (plan, kinds, pack)
        graphs = getattr(module, "_graphs", None)
        if graphs is not None:  # the module closes its plans before its program
            graphs.add(self)
        for steps in self._part_steps:
            self._h = L.tilec_plan_new(module._prog, externs._h if externs else None, name.encode(), self._nslots)
            if not self._h:
                raise TilecError(f"{name}: cannot make a launch plan (out of memory)")
            self._parts.append(self._h)
            self._plan(steps)
        self._h = self._parts[0]
        self._debug = debug_level() != 0  # read once, when the graph loads
        self._pool: Optional[Pool] = None
        self._torch_device: Any = None
        self._torch_call: Optional["TorchCall"] = None
        self._workspaces: Dict[Optional[int], Tuple[int, int, Any]] = {}  # stream: (address, bytes, torch tensor)
        self._last_values: Sequence[Any] = ()
        self._recipe_dicts: List[dict] = []  # the wrappers' recipe dicts this graph recorded into (close() empties)
        self._opts: Dict[str, Any] = {"static": False}  # read by the compiled recipes: static outputs (capture())

    # ---- building the plan ----

    def _plan(self, steps: Sequence[Step]) -> None:
        """The slots and these steps into the plan self._h."""
        L = self._lib
        for i, (tname, _, _) in enumerate(self.tensors):
            self._ok(L.tilec_plan_set_slot(self._h, i, 0, tname.encode()))
        for i, (sname, kind) in enumerate(self.scalars):
            self._ok(L.tilec_plan_set_slot(self._h, len(self.tensors) + i, _SLOT_TYPE[kind], sname.encode()))
        self._add_steps(steps)

    def _add_steps(self, steps: Sequence[Step]) -> None:
        """These steps into the plan self._h, their slots self._off on."""
        L = self._lib
        for step in steps:
            if step[0] == "kernel":
                self._add_kernel(step[1], step[2], step[3])
            elif step[0] == "fill":
                self._ok(L.tilec_plan_add_fill(self._h, ctypes.byref(self._tensor(step[1])), step[2]))
            else:
                self._add_extern(step[1], step[2], step[3])

    def _ok(self, st: int) -> None:
        if st != 0:
            raise TilecError(self._lib.tilec_plan_last_error(self._h).decode(errors="replace"))

    def _value(self, ref: Ref, kind: int) -> _PlanValue:
        v = _PlanValue()
        if isinstance(ref, str):
            if ref not in self._slot:
                raise TilecError(f"{self.name}: the plan names {ref!r}, which is no slot")
            v.slot = self._slot[ref] + self._off
            return v
        v.slot = -1
        value = float(ref) if kind in (F32, F64) else int(ref)
        setattr(v.value, _SETTERS[kind], value)
        return v

    def _add_kernel(self, kname: str, variant: int, args: Sequence[Ref]) -> None:
        k = self.module.kernel(kname, None if variant < 0 else variant)
        self._kernels[(kname, variant)] = k
        vals = (_PlanValue * max(len(args), 1))(*[self._value(a, kd) for a, kd in zip(args, k.kinds)])
        self._ok(self._lib.tilec_plan_add_kernel(self._h, kname.encode(), variant, vals, len(args)))

    def _tensor(self, name: str) -> _PlanTensor:
        i = self._slot[name]
        _, dtype, dims = self.tensors[i]
        t = _PlanTensor()
        t.data_slot, t.dtype, t.rank = i + self._off, DT_ENUM.index(dtype), len(dims)
        for d, ref in enumerate(dims):
            t.sizes[d] = self._value(ref, I64)
        return t

    def _add_extern(self, symbol: str, ins: Sequence[str], outs: Sequence[str]) -> None:
        if self.externs is None:
            raise TilecError(f"{self.name}: extern {symbol} needs an Externs registry")
        a = (_PlanTensor * max(len(ins), 1))(*[self._tensor(n) for n in ins])
        b = (_PlanTensor * max(len(outs), 1))(*[self._tensor(n) for n in outs])
        self._ok(self._lib.tilec_plan_add_extern(self._h, symbol.encode(), a, len(ins), b, len(outs)))

    # ---- a call ----

    def begin(self, infos: Sequence[TensorInfo], stream: Any = None, recipes: Optional[dict] = None,
              key: Any = None, lists: Sequence[Tuple[str, Any]] = ()) -> "CallContext":
        """What one call allocates with and launches on, from its inputs'
        TensorInfos (the wrapper's order: self.inputs) and the caller's
        stream: torch when an input is a torch tensor, else tilec Buffers.
        ValueError when an input is on another device than the graph's.

        recipes and key (a wrapper whose outputs are all allocated apart, in
        their order): a torch call on torch's current stream records what it
        allocates and runs as a Recipe, stored in recipes[key], which the
        wrapper's next calls with that key run instead of their checks and
        sizes (key: the inputs' TensorInfo.key, the scalars and their types).

        lists: (name, TensorList) per tensor list parameter: on the graph's
        device (ValueError), torch's when one holds a torch tensor."""
        use_torch = False
        for name, info in zip(self.inputs, infos):
            if info.device is not None and info.device != self.device_index:
                raise ValueError(f"{self.name}: {name} is on cuda:{info.device}, but the graph was loaded on "
                                 f"cuda:{self.device_index} (load(device=...) for another device)")
            use_torch |= info.torch
        for name, tl in lists:
            if tl.tensors and tl.device_index != self.device_index:
                raise ValueError(f"{self.name}: the tensors of list {name} are on cuda:{tl.device_index}, but the "
                                 f"graph was loaded on cuda:{self.device_index} (load(device=...) for another device)")
            use_torch |= tl.torch
        s = stream_handle(stream, self.device_index, use_torch)
        self._seq = [] if self._seq_graphs and not self._debug else None
        if use_torch:
            if stream is None:  # the common case: one context, on torch's current stream
                ctx = self._torch_call
                if ctx is None:
                    ctx = self._torch_call = TorchCall(self, s, False)
                ctx.stream = s
                ctx.rec = None
                if recipes is not None and key not in recipes and not self._debug and _recipe_ok(self):
                    if len(recipes) >= 1024:  # shapes that keep changing: start over rather than grow
                        _retire(self._native, recipes.values())
                        recipes.clear()
                    ctx.rec = (recipes, key, infos, [], [])
                return ctx
            return TorchCall(self, s, True)
        if self._pool is None:
            self._pool = Pool(self.device)
        return BufferCall(self, s)

    def run(self, values: Sequence[Union[int, float]], stream: Optional[int] = None) -> None:
        """Run the plan with these slot values on stream (an int CUstream or
        None): one native call. TilecError when the runtime fails;
        RangeError when a size does not fit its parameter."""
        if len(values) != self._nslots:
            raise TypeError(f"{self.name}: run takes {self._nslots} slot values; got {len(values)}")
        if self._debug:
            return self._run_debug(values, stream)
        self._last_values = values  # what a recording call (TorchCall.rec) makes its recipe of
        try:
            if self._native is not None:
                st = self._native.plan_run(self._h, self._kinds, values, stream)
            else:
                st = self._lib.tilec_plan_run(self._h, self._pack(*values), self._nslots, stream)
        except (struct.error, OverflowError) as e:
            raise RangeError(f"{self.name}: a slot value does not fit 64 bits ({e})") from None
        if st != 0:
            self._fail()

    def run_part(self, k: int, values: Sequence[Union[int, float]], stream: Optional[int] = None) -> None:
        """A graph with for loops: run part k of the plan (the steps between
        its k-th and k+1-th loop markers) with these slot values, as run()."""
        if len(values) != self._nslots:
            raise TypeError(f"{self.name}: run_part takes {self._nslots} slot values; got {len(values)}")
        if self._debug:
            return self._run_debug(values, stream, self._part_steps[k])
        if self._seq is not None:  # CUDA-graph mode: run with the call's other parts at its end (run_seq)
            self._seq.append((k, tuple(values)))
            return
        h = self._parts[k]
        try:
            if self._native is not None:
                st = self._native.plan_run(h, self._kinds, values, stream)
            else:
                st = self._lib.tilec_plan_run(h, self._pack(*values), self._nslots, stream)
        except (struct.error, OverflowError) as e:
            raise RangeError(f"{self.name}: a slot value does not fit 64 bits ({e})") from None
        if st != 0:
            self._fail(h)

    def run_seq(self, stream: Optional[int] = None) -> None:
        """A graph with for loops in CUDA-graph mode, at the end of a call:
        the parts it ran (run_part), in their order, as one plan of their
        steps (a slot set per run; made once per order, that is per trip
        counts), whose run is recorded as one CUDA graph and replayed for
        the same slot values. Nothing to do otherwise."""
        seq, self._seq = self._seq, None
        if not seq:
            return
        order = tuple(k for k, _ in seq)
        entry = self._seq_plans.pop(order, None) or self._seq_plan(order)
        self._seq_plans[order] = entry  # the most recently used last
        h, kinds, pack = entry
        values = tuple(v for _, vals in seq for v in vals)
        try:
            if self._native is not None:
                st = self._native.plan_run(h, kinds, values, stream)
            else:
                st = self._lib.tilec_plan_run(h, pack(*values), len(values), stream)
        except (struct.error, OverflowError) as e:
            raise RangeError(f"{self.name}: a slot value does not fit 64 bits ({e})") from None
        if st != 0:
            self._fail(h)

    def _seq_plan(self, order: Tuple[int, ...]) -> Tuple[Any, bytes, Any]:
        """The plan of the parts in this order (their slots one set per run)."""
        L = self._lib
        if len(self._seq_plans) >= 8:  # other trip counts: the least recently used order goes
            old = next(iter(self._seq_plans))
            L.tilec_plan_free(self._seq_plans.pop(old)[0])
        n = len(order)
        h = L.tilec_plan_new(self.module._prog, self.externs._h if self.externs else None, self.name.encode(),
                             self._nslots * n)
        if not h:
            raise TilecError(f"{self.name}: cannot make a launch plan (out of memory)")
        saved = self._h
        self._h = h
        try:
            for j, k in enumerate(order):
                self._off = j * self._nslots
                for i, (tname, _, _) in enumerate(self.tensors):
                    self._ok(L.tilec_plan_set_slot(h, self._off + i, 0, tname.encode()))
                for i, (sname, kind) in enumerate(self.scalars):
                    self._ok(L.tilec_plan_set_slot(h, self._off + len(self.tensors) + i, _SLOT_TYPE[kind],
                                                   sname.encode()))
                self._add_steps(self._part_steps[k])
            self._ok(L.tilec_plan_set_cuda_graph(h, self._seq_graphs))
        except BaseException:
            L.tilec_plan_free(h)
            raise
        finally:
            self._h, self._off = saved, 0
        fmt = "Q" * len(self.tensors) + "".join(_SLOT_PACK[s[1]] for s in self.scalars)
        return h, self._kinds * n, struct.Struct("<" + fmt * n).pack

    def _drop_seq_plans(self) -> None:
        plans = getattr(self, "_seq_plans", {})
        for h, _, _ in plans.values():
            self._lib.tilec_plan_free(h)
        plans.clear()

    def _fail(self, h: Any = None) -> None:
        msg = self._lib.tilec_plan_last_error(h or self._h).decode(errors="replace")
        raise (RangeError if "does not fit" in msg else TilecError)(msg)

    def release(self, *buffers: Any) -> None:
        """Give tilec.Buffer outputs of this graph's calls back to its pool
        (their memory serves the next call); anything else is left alone."""
        if self._pool is None:
            return
        for b in buffers:
            if isinstance(b, Buffer) and b.device.index == self.device_index:
                self._pool.release(b)

    def capture(self, graphs: int = 8, static_outputs: bool = False) -> "Graph":
        """Record CUDA graphs: each new set of slot values (shapes and
        buffers) runs eagerly once and is recorded; later calls with the
        same values replay it (one cuGraphLaunch). The `graphs` most
        recently used are kept; once that many are held, a new recording
        updates the least recently used in place (cuGraphExecUpdate).

        static_outputs=True (opt-in, torch.compile's "reduce-overhead"
        contract): a known key's call on torch's current stream returns the
        same output tensors every time, kept by the graph, instead of new
        ones from torch's allocator: the next call with that key overwrites
        what the last one returned, so clone() what you keep. It saves the
        allocation (and keeps the replayed graph's addresses fixed). An
        input that is such an output, or a view sharing any byte with one
        (a call's output fed back to the next call), is copied to a private
        buffer on the stream before the run, so it is read as it was
        (stats()["static_input_copies"] counts these copies).
        Without it (the default) every call returns new tensors. A graph
        with for loops records each call's parts as one plan per trip count
        (run_seq); static_outputs is refused for it (no Recipe). Returns
        self."""
        if len(self._parts) > 1:  # for loops: a call's parts recorded as one plan at its end (run_seq)
            if static_outputs:
                raise TilecError(f"{self.name}: static_outputs: a graph with a for loop records no Recipe, so each "
                                 "call returns new outputs")
            if graphs > 64:
                raise TilecError(f"{self.name}: {graphs} CUDA graphs asked for; at most 64 are kept")
            self._drop_seq_plans()
            self._seq_graphs = graphs
            return self
        self._ok(self._lib.tilec_plan_set_cuda_graph(self._h, graphs))
        self._opts["static"] = bool(static_outputs)
        if not static_outputs:
            self._release_static()
        return self

    def eager(self) -> "Graph":
        """Stop using CUDA graphs (and free the recorded ones); outputs are
        new tensors again."""
        self._drop_seq_plans()
        self._seq_graphs = 0
        self._ok(self._lib.tilec_plan_set_cuda_graph(self._h, 0))
        self._opts["static"] = False
        self._release_static()
        return self

    def trim(self) -> None:
        """Give the workspaces kept for torch calls (one per stream), and
        the static outputs the recipes hold, back to torch's allocator; the
        next call allocates again."""
        self._workspaces.clear()
        self._release_static()

    def _release_static(self) -> None:
        """The compiled recipes of this graph give their static outputs back."""
        n = self._native
        if n is None or not hasattr(n, "rrelease"):
            return
        for recipes in self._recipe_dicts:
            for r in recipes.values():
                if r is not None and r.graph is self and r.fast is not None:
                    n.rrelease(r.fast)

    def stats(self) -> dict:
        """runs, recorded and replayed CUDA graphs, graphs held, steps per run,
        and the recordings that updated a held graph in place (cuGraphExecUpdate);
        static_input_copies: inputs copied before a run because they shared
        memory with a static output that run overwrites (capture())."""
        out = {"static_input_copies": self._opts.get("static_input_copies", 0)}
        for h in [*self._parts, *(e[0] for e in self._seq_plans.values())]:  # for loops: the sums over the plans
            s = _PlanStats()
            self._lib.tilec_plan_get_stats(h, ctypes.byref(s))
            for k in ("runs", "recorded", "replayed", "graphs", "steps", "updated"):
                out[k] = out.get(k, 0) + getattr(s, k)
        return out

    def close(self) -> None:
        """Free the plan and its CUDA graphs (and forget the Recipes that run it)."""
        for recipes in getattr(self, "_recipe_dicts", ()):
            for key in [k for k, r in recipes.items() if r is not None and r.graph is self]:
                _retire(getattr(self, "_native", None), (recipes[key],))
                del recipes[key]
        if getattr(self, "_h", None) or getattr(self, "_parts", None):
            if getattr(self.device, "_h", None):  # at exit the device may be closed first: then leave it
                for h in getattr(self, "_parts", None) or [self._h]:
                    self._lib.tilec_plan_free(h)
                self._drop_seq_plans()
            self._h, self._parts = None, []

    # ---- TILEC_DEBUG_PRINT: the steps one by one, through the debug kernels ----

    def _run_debug(self, values: Sequence[Union[int, float]], stream: Optional[int],
                   steps: Optional[Sequence[Step]] = None) -> None:
        n = len(self.tensors)
        if any(s[1] in ("list", "ptr") for s in self.scalars):
            raise TilecError(f"{self.name}: TILEC_DEBUG_PRINT does not run graphs with tensor lists yet (unset it)")
        scal = {"$" + s[0]: values[n + i] for i, s in enumerate(self.scalars)}

        def buf(name: str) -> Buffer:
            _, dtype, dims = self.tensors[self._slot[name]]
            shape = tuple(scal[d] if isinstance(d, str) else d for d in dims)
            return Buffer(shape, dtype, self.device, _ptr=values[self._slot[name]])

        def arg(ref: Ref) -> Any:
            if isinstance(ref, str):
                return buf(ref) if not ref.startswith("$") else scal[ref]
            return ref
        kernels = debug_kernels({key[0]: k for key, k in self._kernels.items()})
        for step in self.steps if steps is None else steps:
            if step[0] == "kernel":
                kernels[step[1]](*[arg(a) for a in step[3]], stream=stream)
            elif step[0] == "fill":
                b = buf(step[1])
                fill(b, step[2], DTYPES[b.dtype][0], stream)
            else:
                self.externs.call(step[1], [buf(t) for t in step[2]], [buf(t) for t in step[3]], self.device)


class CallContext:
    """How one call allocates: alloc(shape, dtype) and workspace(nbytes)
    give (object, address); view() and copy() make outputs that alias or
    copy other memory; `stream` is the CUstream the call runs on."""

    stream: Optional[int]

    def alloc(self, shape: Tuple[int, ...], dtype: str) -> Tuple[Any, int]:
        raise NotImplementedError

    def workspace(self, nbytes: int) -> Tuple[Any, int]:
        return self.alloc((nbytes,), "u8") if nbytes else (None, 0)

    def view(self, base: Any, offset: int, shape: Tuple[int, ...], dtype: str) -> Any:
        raise NotImplementedError

    def temp(self, nbytes: int) -> Tuple[Any, int]:
        """Memory of a for loop's body for one iteration (the wrapper gives
        it back with free() at the iteration's end): (object, address)."""
        return self.alloc((nbytes,), "u8") if nbytes else (None, 0)

    def free(self, *objs: Any) -> None:
        """temp()'s memory back, for the next iteration: stream order makes
        its reuse safe (torch's allocator takes back a dropped tensor)."""

    def copy(self, obj: Any, info: TensorInfo) -> Any:
        """A new tensor with a copy of an input's bytes, enqueued on the stream."""
        out, p = self.alloc(info.shape, info.dtype)
        n = DTYPES[info.dtype][0]
        for d in info.shape:
            n *= d
        if n:
            dev = self.graph.device
            dev._check(lib().tilec_rt_memcpy_dtod_async(dev._h, p, info.ptr, n, self.stream))
        return out

    def done(self) -> None:
        """After the run: temporaries go back (stream order keeps it safe)."""
        self.graph.run_seq(self.stream)


class TorchCall(CallContext):
    """Outputs and the workspace from torch's caching allocator, on the
    graph's device; returned as torch tensors."""

    def __init__(self, graph: Graph, stream: Optional[int], explicit: bool):
        torch = torch_module()
        self.graph, self.stream, self.torch = graph, stream, torch
        if graph._torch_device is None:
            graph._torch_device = torch.device("cuda", graph.device_index)
        self.dev = graph._torch_device
        self.dtypes = {k: getattr(torch, v) for k, v in _TORCH_DTYPES.items() if hasattr(torch, v)}
        # memory torch allocated on its current stream but used on another
        # must be recorded on that stream before torch may reuse it
        self.other = None
        if explicit and stream != stream_handle(None, graph.device_index, True):
            self.other = torch.cuda.ExternalStream(stream or 0, device=self.dev)

    rec: Optional[tuple] = None  # recording a Recipe: (recipes, key, infos, allocations, workspace)

    def alloc(self, shape: Tuple[int, ...], dtype: str) -> Tuple[Any, int]:
        dt = self.dtypes[dtype]
        t = self.torch.empty_strided(shape, _strides(shape), dtype=dt, device=self.dev)  # cheaper than empty
        if self.other is not None:
            t.record_stream(self.other)
        if self.rec is not None:
            self.rec[3].append((shape, dt, t))
        return t, t.data_ptr()

    def workspace(self, nbytes: int) -> Tuple[Any, int]:
        """The graph's workspace for this stream, kept between calls (calls
        on one stream run in its order, so the next call may reuse it at
        once); a larger one replaces it when a call needs more."""
        if not nbytes:
            return None, 0
        ws = self.graph._workspaces.get(self.stream)
        if ws is None or ws[1] < nbytes:
            t = self.torch.empty_strided((nbytes,), (1,), dtype=self.dtypes["u8"], device=self.dev)
            if self.other is not None:
                t.record_stream(self.other)
            ws = self.graph._workspaces[self.stream] = (t.data_ptr(), nbytes, t)
        if self.rec is not None:
            self.rec[4].append((ws[0], nbytes))
        return ws[2], ws[0]

    def done(self) -> None:
        self.graph.run_seq(self.stream)  # a graph with loops in CUDA-graph mode: the call's parts, recorded
        if self.rec is not None:
            recipes, key, infos, allocs, ws = self.rec
            self.rec = None
            recipes[key] = Recipe.make(self.graph, infos, allocs, ws, self.graph._last_values)
            if not any(d is recipes for d in self.graph._recipe_dicts):
                self.graph._recipe_dicts.append(recipes)

    def view(self, base: Any, offset: int, shape: Tuple[int, ...], dtype: str) -> Any:
        n = DTYPES[dtype][0]
        for d in shape:
            n *= d
        raw = base.reshape(-1).view(self.torch.uint8)[offset:offset + n]
        return raw.view(self.dtypes[dtype]).view(shape)


class BufferCall(CallContext):
    """Outputs and the workspace as tilec Buffers from the graph's pool."""

    def __init__(self, graph: Graph, stream: Optional[int]):
        self.graph, self.stream, self.pool = graph, stream, graph._pool
        self.temps: List[Buffer] = []

    def alloc(self, shape: Tuple[int, ...], dtype: str) -> Tuple[Any, int]:
        b = self.pool.alloc(shape, dtype)
        return b, b.ptr

    def workspace(self, nbytes: int) -> Tuple[Any, int]:
        if not nbytes:
            return None, 0
        b = self.pool.alloc((nbytes,), "u8")
        self.temps.append(b)
        return b, b.ptr

    def view(self, base: Any, offset: int, shape: Tuple[int, ...], dtype: str) -> Any:
        return Buffer(shape, dtype, self.graph.device, _ptr=base.ptr + offset, _owner=base)

    def free(self, *objs: Any) -> None:
        for b in objs:
            if b is not None:
                self.pool.release(b)

    def done(self) -> None:
        self.graph.run_seq(self.stream)  # a graph with loops in CUDA-graph mode: the call's parts, recorded
        for b in self.temps:
            self.pool.release(b)


_stride_cache: Dict[Tuple[int, ...], Tuple[int, ...]] = {}


def _strides(shape: Tuple[int, ...]) -> Tuple[int, ...]:
    """The row-major strides of shape (cached)."""
    st = _stride_cache.get(shape)
    if st is None:
        out, n = [], 1
        for d in reversed(shape):
            out.append(n)
            n *= d
        st = _stride_cache[shape] = tuple(reversed(out))
    return st


def _recipe_ok(graph: Graph) -> bool:
    """Can this graph's calls be recorded as Recipes (the extension's
    recipe_run and torch's raw current-stream getter are there)?"""
    torch = torch_module()
    if any(s[1] in ("list", "ptr") for s in graph.scalars):  # a key holds no list's tensors
        return False
    return (graph._native is not None and hasattr(graph._native, "recipe_run") and torch is not None and
            hasattr(torch._C, "_cuda_getCurrentRawStream"))


class Recipe:
    """What a wrapper's call did for one key (its inputs' shapes, dtypes,
    strides and device, its scalars), on torch's current stream: the
    outputs it allocated (shape, dtype), the workspace size, and each slot
    of the plan as an input's, an output's or the workspace's address plus
    an offset, or a constant. Running it is the call without its checks and
    size arithmetic, which gave the same answer for that key: the outputs
    allocated, the slots filled and the plan run by one native call."""

    __slots__ = ("graph", "outs", "ws_bytes", "template", "single", "index", "dev", "empty", "raw", "native", "u8",
                 "fast")

    @classmethod
    def make(cls, graph: Graph, infos: Sequence[TensorInfo], allocs: list, ws: list,
             values: Sequence[Any]) -> Optional["Recipe"]:
        """The recipe of a recorded call, or None when its slots cannot be
        told apart (aliased inputs, empty tensors): such a key is never
        recorded again, its calls keep the checked path."""
        if len(ws) > 1 or not allocs:
            return None
        sources = []
        for i, info in enumerate(infos):
            n = DTYPES[info.dtype][0] if info.dtype in DTYPES else 0
            for d in info.shape:
                n *= d
            sources.append((0, i, info.ptr, n))
        for j, (shape, dt, t) in enumerate(allocs):
            sources.append((1, j, t.data_ptr(), t.numel() * t.element_size()))
        if ws:
            sources.append((2, 0, ws[0][0], ws[0][1]))
        ntens, template = len(graph.tensors), []
        for i, v in enumerate(values):
            if i >= ntens:
                template += (3, 0, v)
                continue
            hits = [(src, idx, v - base) for src, idx, base, n in sources if n and base <= v < base + n]
            if len(hits) != 1:
                return None
            template += hits[0]
        r = cls()
        torch = torch_module()
        r.graph, r.template, r.single = graph, tuple(template), len(allocs) == 1
        r.outs = tuple((shape, _strides(shape), dt) for shape, dt, _ in allocs)
        r.ws_bytes = ws[0][1] if ws else 0
        r.index, r.dev = graph.device_index, allocs[0][2].device
        r.empty, r.raw, r.native, r.u8 = torch.empty_strided, torch._C._cuda_getCurrentRawStream, graph._native, \
            torch.uint8
        # what the extension's rcall runs (the wrapper's first line): this run() in C, compiled once
        calls = tuple((r.empty, (shape, st), {"dtype": dt, "device": r.dev}) for shape, st, dt in r.outs)
        lean, getdev = _lean_allocator(torch)
        largs = tuple((tuple(shape), tuple(st), dt) for shape, st, dt in r.outs) if lean is not None else None
        r.fast = None
        if hasattr(graph._native, "rcompile"):
            extents = tuple(n for src, _, _, n in sources if src < 2)  # inputs', then outputs' bytes
            r.fast = graph._native.rcompile((graph._h, graph._kinds, r.template, calls, r.ws_bytes,
                                             graph._workspaces, r.raw, r.index, len(infos), r.single, graph._opts,
                                             lean, getdev, largs, extents))
            graph._native.rcall_init(torch.Tensor, _torch_names)
        return r

    def run(self, infos: Sequence[TensorInfo]) -> Any:
        """The call for these inputs (of the recipe's key) on torch's current stream."""
        g, e, dev = self.graph, self.empty, self.dev
        s = self.raw(self.index) or None
        if self.single:
            shape, st, dt = self.outs[0]
            outs: Any = (e(shape, st, dtype=dt, device=dev),)
        else:
            outs = tuple(e(shape, st, dtype=dt, device=dev) for shape, st, dt in self.outs)
        ws = 0
        if self.ws_bytes:
            w = g._workspaces.get(s)
            if w is None or w[1] < self.ws_bytes:
                t = e((self.ws_bytes,), (1,), dtype=self.u8, device=dev)
                w = g._workspaces[s] = (t.data_ptr(), self.ws_bytes, t)
            ws = w[0]
        if self.native.recipe_run(g._h, g._kinds, self.template, infos, outs, ws, s):
            g._fail()
        return outs[0] if self.single else outs


def _retire(n: Any, recipes: Any) -> None:
    """These Recipes leave their wrapper's recipes: no Entry's memo runs
    them again (the extension's rretire)."""
    retire = getattr(n, "rretire", None) if n is not None else None
    for r in recipes:
        if retire is not None and r is not None and r.fast is not None:
            retire(r.fast)


def _lean_allocator(torch: Any) -> Tuple[Any, Any]:
    """torch's allocation entry without argument parsing, the one the code
    torch.compile generates allocates its outputs with
    (`torch._C._dynamo.guards._empty_strided_cuda(size, stride, dtype)`, on
    the current CUDA device), and the current-device getter, None where
    the process sees one CUDA device (the current one, whatever a caller
    does: no call needed); (None, None) where this torch lacks either (then
    `torch.empty_strided`)."""
    guards = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
    lean = getattr(guards, "_empty_strided_cuda", None)
    getdev = getattr(torch._C, "_cuda_getDevice", None)
    if lean is None or getdev is None:
        return None, None
    count = getattr(getattr(torch, "cuda", None), "device_count", None)
    return lean, (None if count is not None and count() == 1 else getdev)


def fast_call() -> Any:
    """The extension's rcall (a known key's Recipe run from a wrapper's
    first line, in C), or None without the extension."""
    n = native()
    return getattr(n, "rcall", None) if n is not None else None


def fast_entry(fn: Any, recipes: dict, kinds: str) -> Any:
    """A generated wrapper's call() behind the extension's Entry, or fn
    itself without the extension: called with positional arguments only
    (kinds: 't' a tensor, 'i' an integer scalar, 'f' a float one, per
    parameter), the Entry runs a known key's Recipe in C without entering
    fn; any other call is fn's, checks and all. It carries fn's name,
    docstring and signature (functools.update_wrapper), so help() and
    inspect.signature() show fn's. load() of a wrapper puts it in front
    of call()."""
    n = native()
    entry = getattr(n, "Entry", None) if n is not None else None
    if entry is None:
        return fn
    return functools.update_wrapper(entry(fn, recipes, kinds), fn)
