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
import struct
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple, Union

from ._library import (F32, F64, I32, I64, PTR, U32, U64, Owner, TilecError, _PlanStats, _PlanTensor, _PlanValue,
                       lib, native)
from .buffer import Buffer, Pool, TensorInfo, fill
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
# a size or scalar slot, or a constant
Step = Tuple[Any, ...]

_TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64", "i8": "int8",
                 "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32",
                 "u64": "uint64", "bool": "bool"}
_SETTERS = {I32: "i32", I64: "i64", F32: "f32", F64: "f64", U32: "u32", U64: "u64", PTR: "ptr"}


class Graph(Owner):
    """A graph's launch plan on a Module.

    tensors: (name, dtype, dims) per tensor slot, dims being ints or "$NAME"
    size slots; scalars: (name, "int" | "float") per size or scalar slot;
    steps: what the graph runs, in order. run() takes the slot values: the
    tensors' device addresses, then the sizes and scalars."""

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
        self._pack = struct.Struct("<" + "Q" * len(self.tensors) +
                                   "".join("d" if s[1] == "float" else "q" for s in self.scalars)).pack
        self._kinds = ("p" * len(self.tensors) +
                       "".join("d" if s[1] == "float" else "q" for s in self.scalars)).encode()
        self._native = native()
        self._kernels: Dict[Tuple[str, int], Any] = {}
        self._h = L.tilec_plan_new(module._prog, externs._h if externs else None, name.encode(), self._nslots)
        if not self._h:
            raise TilecError(f"{name}: cannot make a launch plan (out of memory)")
        for i, (tname, _, _) in enumerate(self.tensors):
            self._ok(L.tilec_plan_set_slot(self._h, i, 0, tname.encode()))
        for i, (sname, kind) in enumerate(self.scalars):
            self._ok(L.tilec_plan_set_slot(self._h, len(self.tensors) + i, 2 if kind == "float" else 1,
                                           sname.encode()))
        for step in self.steps:
            if step[0] == "kernel":
                self._add_kernel(step[1], step[2], step[3])
            elif step[0] == "fill":
                self._ok(L.tilec_plan_add_fill(self._h, ctypes.byref(self._tensor(step[1])), step[2]))
            else:
                self._add_extern(step[1], step[2], step[3])
        self._debug = debug_level() != 0  # read once, when the graph loads
        self._pool: Optional[Pool] = None
        self._torch_device: Any = None
        self._torch_call: Optional["TorchCall"] = None

    # ---- building the plan ----

    def _ok(self, st: int) -> None:
        if st != 0:
            raise TilecError(self._lib.tilec_plan_last_error(self._h).decode(errors="replace"))

    def _value(self, ref: Ref, kind: int) -> _PlanValue:
        v = _PlanValue()
        if isinstance(ref, str):
            if ref not in self._slot:
                raise TilecError(f"{self.name}: the plan names {ref!r}, which is no slot")
            v.slot = self._slot[ref]
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
        t.data_slot, t.dtype, t.rank = i, DT_ENUM.index(dtype), len(dims)
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

    def begin(self, infos: Sequence[TensorInfo], stream: Any = None) -> "CallContext":
        """What one call allocates with and launches on, from its inputs'
        TensorInfos (the wrapper's order: self.inputs) and the caller's
        stream: torch when an input is a torch tensor, else tilec Buffers.
        ValueError when an input is on another device than the graph's."""
        use_torch = False
        for name, info in zip(self.inputs, infos):
            if info.device is not None and info.device != self.device_index:
                raise ValueError(f"{self.name}: {name} is on cuda:{info.device}, but the graph was loaded on "
                                 f"cuda:{self.device_index} (load(device=...) for another device)")
            use_torch |= info.torch
        s = stream_handle(stream, self.device_index, use_torch)
        if use_torch:
            if stream is None:  # the common case: one context, on torch's current stream
                ctx = self._torch_call
                if ctx is None:
                    ctx = self._torch_call = TorchCall(self, s, False)
                ctx.stream = s
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
        try:
            if self._native is not None:
                st = self._native.plan_run(self._h, self._kinds, values, stream)
            else:
                st = self._lib.tilec_plan_run(self._h, self._pack(*values), self._nslots, stream)
        except (struct.error, OverflowError) as e:
            raise RangeError(f"{self.name}: a slot value does not fit 64 bits ({e})") from None
        if st != 0:
            msg = self._lib.tilec_plan_last_error(self._h).decode(errors="replace")
            raise (RangeError if "does not fit" in msg else TilecError)(msg)

    def release(self, *buffers: Any) -> None:
        """Give tilec.Buffer outputs of this graph's calls back to its pool
        (their memory serves the next call); anything else is left alone."""
        if self._pool is None:
            return
        for b in buffers:
            if isinstance(b, Buffer) and b.device.index == self.device_index:
                self._pool.release(b)

    def capture(self, graphs: int = 8) -> "Graph":
        """Record CUDA graphs: each new set of slot values (shapes and
        buffers) runs eagerly once and is recorded; later calls with the
        same values replay it (one cuGraphLaunch). The `graphs` most
        recently used are kept. Returns self."""
        self._ok(self._lib.tilec_plan_set_cuda_graph(self._h, graphs))
        return self

    def eager(self) -> "Graph":
        """Stop using CUDA graphs (and free the recorded ones)."""
        self._ok(self._lib.tilec_plan_set_cuda_graph(self._h, 0))
        return self

    def stats(self) -> dict:
        """runs, recorded and replayed CUDA graphs, graphs held, steps per run."""
        s = _PlanStats()
        self._lib.tilec_plan_get_stats(self._h, ctypes.byref(s))
        return {"runs": s.runs, "recorded": s.recorded, "replayed": s.replayed, "graphs": s.graphs,
                "steps": s.steps}

    def close(self) -> None:
        """Free the plan and its CUDA graphs."""
        if getattr(self, "_h", None):
            if getattr(self.device, "_h", None):  # at exit the device may be closed first: then leave it
                self._lib.tilec_plan_free(self._h)
            self._h = None

    # ---- TILEC_DEBUG_PRINT: the steps one by one, through the debug kernels ----

    def _run_debug(self, values: Sequence[Union[int, float]], stream: Optional[int]) -> None:
        n = len(self.tensors)
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
        for step in self.steps:
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

    def alloc(self, shape: Tuple[int, ...], dtype: str) -> Tuple[Any, int]:
        t = self.torch.empty(shape, dtype=self.dtypes[dtype], device=self.dev)
        if self.other is not None:
            t.record_stream(self.other)
        return t, t.data_ptr()

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

    def done(self) -> None:
        for b in self.temps:
            self.pool.release(b)
