"""Kernels: a loaded kernel of a Module, launched by calling it. Every
argument is checked against the kernel's declared parameters before
anything is launched: count, tensor dtype, device, contiguity and
alignment for pointer parameters, integer ranges and types for scalars."""
from __future__ import annotations

import ctypes
import struct
from typing import Any, Dict, List, Optional, Protocol, Tuple

from ._library import F32, F64, I32, I64, LIST, PTR, U32, U64, RtList, TilecError, lib, native
from .buffer import Buffer, tensor_info
from .checks import check_float, check_int
from .device import Device, stream_handle, torch_module
from .dtypes import DT_ENUM, DTYPES, TORCH_NAMES, itemsize


class ModuleView(Protocol):
    """What a Kernel reads of the Module that made it (module.py, above
    this file, which it does not import): the parsed module and built
    program handles, the .tile path for messages, the device."""
    _mod: Any
    _prog: Any
    path: str
    device: Device

_KIND_NAMES = {PTR: "pointer", I32: "i32", I64: "i64", F32: "f32", F64: "f64", U32: "u32", U64: "u64",
               LIST: "tensor list"}
# each argument is one 8-byte tilec_rt_arg: 4-byte kinds are padded; a
# tensor list is the address of its tilec_rt_list
_PACK = {PTR: "Q", I32: "i4x", I64: "q", F32: "f4x", F64: "d", U32: "I4x", U64: "Q", LIST: "Q"}
_NATIVE_KINDS = {PTR: "p", I32: "i", I64: "q", F32: "f", F64: "d", U32: "I", U64: "Q"}

_torch_names: Dict[Any, Optional[str]] = {}


def torch_dtype_name(dt: Any) -> Optional[str]:
    """tilec's name of a torch dtype ("f32"), or None."""
    name = _torch_names.get(dt, False)
    if name is False:
        name = _torch_names[dt] = TORCH_NAMES.get(str(dt).replace("torch.", ""))
    return name


def describe(obj: Any) -> str:
    """What an argument is, for messages: "a f16 tensor", "an int"."""
    info = tensor_info(obj)
    if info is not None:
        return f"a {info.dtype or 'unknown-dtype'} tensor of shape {list(info.shape)}"
    name = type(obj).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def pointer_arg(owner: str, param: str, dtype: str, index: int, obj: Any, device_index: int,
                item: str = "") -> Tuple[int, bool]:
    """The device address of tensor argument `obj` for pointer parameter
    `param` (*dtype), and whether it is a torch tensor; TypeError for what
    is not a tensor of that dtype, ValueError for one in host memory, on
    another device, not contiguous or not aligned to its element size."""
    torch = torch_module()
    ty = f"[*{dtype}]" if item else f"*{dtype}"  # item: the place of a tensor list's tensor
    where = f"{owner}: parameter '{param}' ({ty}), argument {index + 1}{item}"
    if isinstance(obj, (list, tuple)):
        raise TypeError(f"{where}: expects a {dtype} tensor; got a {type(obj).__name__} of {len(obj)} values "
                        f"(only a tensor list parameter such as '{param}: [*{dtype}]' takes a list)")
    if torch is not None and isinstance(obj, torch.Tensor):
        have = torch_dtype_name(obj.dtype)
        if have != dtype:
            raise TypeError(f"{where}: expects a {dtype} tensor; got a {have or obj.dtype} tensor")
        if not obj.is_cuda:
            raise ValueError(f"{where}: the tensor is in host memory; it must be on cuda:{device_index}")
        if obj.get_device() != device_index:
            raise ValueError(f"{where}: the tensor is on cuda:{obj.get_device()}; the kernel is on cuda:{device_index}")
        if not obj.is_contiguous():
            raise ValueError(f"{where}: the tensor must be contiguous (row-major); its strides are {obj.stride()}")
        ptr, is_torch = obj.data_ptr(), True
    else:
        info = tensor_info(obj)
        if info is None:
            raise TypeError(f"{where}: expects a {dtype} tensor (torch, CuPy or tilec.Buffer); got {describe(obj)}")
        if info.dtype != dtype:
            raise TypeError(f"{where}: expects a {dtype} tensor; got a {info.dtype or 'unknown-dtype'} tensor")
        if not info.on_device:
            raise ValueError(f"{where}: the tensor is in host memory; it must be on cuda:{device_index}")
        if info.device is not None and info.device != device_index:
            raise ValueError(f"{where}: the tensor is on cuda:{info.device}; the kernel is on cuda:{device_index}")
        if not info.contiguous:
            raise ValueError(f"{where}: the tensor must be contiguous (row-major); its strides are "
                             f"{list(info.strides or ())} elements")
        ptr, is_torch = info.ptr, False
    size = DTYPES[dtype][0]
    if ptr % size:
        raise ValueError(f"{where}: address 0x{ptr:x} is not aligned to {size} bytes (the size of {dtype})")
    return ptr, is_torch


def _numel(obj: Any) -> int:
    """The element count of a tensor pointer_arg accepted."""
    if hasattr(obj, "numel") and callable(obj.numel):
        return int(obj.numel())
    info = tensor_info(obj)
    n = 1
    for d in (info.shape if info is not None else ()):
        n *= int(d)
    return n


def list_arg(owner: str, param: str, dtype: str, index: int, obj: Any, device_index: int) -> Tuple[RtList, Any, bool]:
    """A tensor list argument (docs/language.md §4.3) for parameter `param`
    ([*dtype]): its tilec_rt_list, what keeps its arrays alive, and whether
    a torch tensor is among its tensors; each tensor checked as a pointer
    argument is (TypeError, ValueError naming its place in the list)."""
    if not isinstance(obj, (list, tuple)):
        raise TypeError(f"{owner}: parameter '{param}' ([*{dtype}]), argument {index + 1}: expects a list of {dtype} "
                        f"tensors; got {describe(obj)}")
    n = len(obj)
    ptrs, numels = (ctypes.c_uint64 * max(n, 1))(), (ctypes.c_int64 * max(n, 1))()
    use_torch = False
    for t, a in enumerate(obj):
        ptrs[t], is_torch = pointer_arg(owner, param, dtype, index, a, device_index, f", tensor {t} of the list")
        numels[t] = _numel(a)
        use_torch |= is_torch
    rl = RtList(n, ctypes.cast(ptrs, ctypes.POINTER(ctypes.c_uint64)), ctypes.cast(numels, ctypes.POINTER(ctypes.c_int64)))
    return rl, (ptrs, numels, rl), use_torch


class TensorList:
    """A tensor list argument (a kernel parameter [*T], docs/language.md
    §4.3) checked once: the tensors' addresses and element counts, kept
    as the C arrays a launch passes, so a call that takes it checks
    nothing per tensor (a plain Python list is checked at every call).
    Every tensor must have one dtype and sit contiguous on one device; the
    list holds them (they stay alive) and their addresses as they were when
    it was made: make a new one when a tensor gets new storage."""

    __slots__ = ("tensors", "dtype", "device_index", "torch", "_arrays", "_rl")

    def __init__(self, tensors: Any):
        self.tensors = list(tensors)
        self.dtype: Optional[str] = _arg_dtype(self.tensors[0]) if self.tensors else None
        first = self.tensors[0] if self.tensors else None
        info = tensor_info(first) if first is not None else None
        dev = first.get_device() if hasattr(first, "get_device") else (info.device if info is not None else 0)
        self.device_index: int = dev if dev is not None and dev >= 0 else 0
        if self.dtype is None and self.tensors:
            raise TypeError(f"TensorList: tensor 0 is not a tensor (torch, CuPy or tilec.Buffer); got {describe(first)}")
        rl, self._arrays, self.torch = list_arg("TensorList", "tensors", self.dtype or "f32", 0, self.tensors,
                                                self.device_index)
        self._rl = rl

    @classmethod
    def for_graph(cls, graph: str, param: str, index: int, dtype: str, obj: Any) -> "TensorList":
        """Graph `graph`'s tensor list parameter `param` ([*dtype], argument
        index + 1): obj as it is when a TensorList of dtype tensors (empty or
        not), else a list or tuple of tensors checked here as the kernels'
        list arguments are (TypeError, ValueError naming the graph, the
        parameter and the tensor's place in the list)."""
        if type(obj) is TensorList:
            if obj.tensors and obj.dtype != dtype:
                raise TypeError(f"{graph}: parameter '{param}' ([*{dtype}]), argument {index + 1}: expects a list of "
                                f"{dtype} tensors; got a TensorList of {obj.dtype} tensors")
            return obj
        if not isinstance(obj, (list, tuple)):
            raise TypeError(f"{graph}: parameter '{param}' ([*{dtype}]), argument {index + 1}: expects a list of "
                            f"{dtype} tensors (a list, a tuple or a tilec.TensorList); got {describe(obj)}")
        self = cls.__new__(cls)
        self.tensors = list(obj)
        self.dtype = dtype
        first = self.tensors[0] if self.tensors else None
        info = tensor_info(first) if first is not None else None
        dev = first.get_device() if hasattr(first, "get_device") else (info.device if info is not None else 0)
        self.device_index = dev if dev is not None and dev >= 0 else 0
        self._rl, self._arrays, self.torch = list_arg(graph, param, dtype, index, self.tensors, self.device_index)
        return self

    @classmethod
    def of_buffers(cls, dtype: str, device_index: int, items: Any) -> "TensorList":
        """A graph's list [a, b] of its own tensors (docs/language.md §9,
        "Tensor lists"): items are their (device address, element count)
        pairs, as the generated wrapper holds them (checked when taken or
        made); the list holds the numbers, not the tensors (the call
        does)."""
        self = cls.__new__(cls)
        self.tensors = list(items)
        self.dtype, self.device_index, self.torch = dtype, device_index, False
        n = len(self.tensors)
        ptrs, numels = (ctypes.c_uint64 * max(n, 1))(), (ctypes.c_int64 * max(n, 1))()
        for i, (p, e) in enumerate(self.tensors):
            ptrs[i], numels[i] = p, e
        self._rl = RtList(n, ctypes.cast(ptrs, ctypes.POINTER(ctypes.c_uint64)),
                          ctypes.cast(numels, ctypes.POINTER(ctypes.c_int64)))
        self._arrays = (ptrs, numels, self._rl)
        return self

    def sub(self, graph: str, where: str, name: str, start: int, stop: Optional[int] = None) -> "TensorList":
        """Tensors start to stop - 1 (stop None: to the end) as a TensorList
        of its own that shares this one's arrays (and keeps them alive): a
        graph's sub-list name[start:stop] (docs/language.md §9, "Tensor
        lists"; this one may be a sub-list itself), made where `where` says
        ("line 12: sub-list xs[0:k]"); ValueError naming graph `graph` when
        out of bounds."""
        n = len(self.tensors)
        stop = n if stop is None else stop
        if start < 0 or stop < start or stop > n:
            raise ValueError(f"{graph}: {where} is out of bounds: start {start}, stop {stop}, and '{name}' has {n} "
                             "tensors")
        out = TensorList.__new__(TensorList)
        out.tensors, out.dtype, out.device_index, out.torch = self.tensors[start:stop], self.dtype, \
            self.device_index, self.torch
        ptrs, numels, _ = self._arrays
        u64, i64 = ctypes.sizeof(ctypes.c_uint64), ctypes.sizeof(ctypes.c_int64)
        p0 = ctypes.cast(self._rl.ptrs, ctypes.c_void_p).value or ctypes.addressof(ptrs)  # this list's first
        n0 = ctypes.cast(self._rl.numels, ctypes.c_void_p).value or ctypes.addressof(numels)
        out._rl = RtList(stop - start, ctypes.cast(p0 + u64 * start, ctypes.POINTER(ctypes.c_uint64)),
                         ctypes.cast(n0 + i64 * start, ctypes.POINTER(ctypes.c_int64)))
        out._arrays = (ptrs, numels, self)
        return out

    def item(self, graph: str, where: str, name: str, i: int) -> int:
        """The device address of tensor i: a graph's xs[i] (docs/language.md
        §9, "Tensor lists"), used where `where` says ("line 12: xs[i]");
        ValueError naming graph `graph` unless 0 <= i < len(self)."""
        n = len(self.tensors)
        if i < 0 or i >= n:
            raise ValueError(f"{graph}: {where} is out of bounds: index {i}, and '{name}' has {n} tensors")
        return int(self._rl.ptrs[i])

    def view_item(self, graph: str, where: str, view: str, name: str, i: int, nbytes: int, vtype: str,
                  align: int) -> int:
        """The device address of tensor i, checked as a graph's view(xs[i],
        T[...]) (`view`: "line 12: view w of xs[i]") of `nbytes` bytes
        (vtype "f32[M, K]", its elements aligned to `align` bytes):
        ValueError naming graph `graph` when out of bounds, of another byte
        size, or misaligned."""
        p = self.item(graph, where, name, i)
        n = int(self._rl.numels[i])
        have = n * itemsize(self.dtype or "f32")
        if have != nbytes:
            raise ValueError(f"{graph}: {view} ({n} elements, {have} bytes) as {vtype} ({nbytes} bytes) changes its size")
        if p % align:
            raise ValueError(f"{graph}: {view} at address {p:#x} is not aligned to {align} bytes ({vtype})")
        return p

    @property
    def address(self) -> int:
        """The address of its tilec_rt_list (a launch plan's list slot)."""
        return ctypes.addressof(self._rl)

    def __len__(self) -> int:
        return len(self.tensors)

    def __repr__(self) -> str:
        return f"<tilec.TensorList of {len(self.tensors)} {self.dtype} tensors on cuda:{self.device_index}>"


class Param:
    """A declared kernel parameter: name, launch kind, and the element type
    of a pointer (else the scalar's type)."""

    __slots__ = ("name", "kind", "dtype")

    def __init__(self, name: str, kind: int, dtype: str):
        self.name, self.kind, self.dtype = name, kind, dtype

    def __repr__(self) -> str:
        if self.kind == LIST:
            return f"{self.name}: [*{self.dtype}]"
        return f"{self.name}: {'*' if self.kind == PTR else ''}{self.dtype}"


def kernel_params(module: "ModuleView", name: str, kinds: List[int]) -> List[Param]:
    """Kernel `name`'s declared parameters, from the module's checked AST
    (names and element types) and the launch kinds."""
    L = lib()
    k = L.tilec_module_find_kernel(module._mod, name.encode())
    out = []
    for i, kind in enumerate(kinds):
        pname, pointer, dt = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int()
        if not k or L.tilec_kernel_param_info(k, i, ctypes.byref(pname), ctypes.byref(pointer), ctypes.byref(dt)):
            out.append(Param(f"arg{i + 1}", kind, _KIND_NAMES[kind]))
            continue
        out.append(Param((pname.value or b"?").decode(), kind, DT_ENUM[dt.value]))
    return out


class Kernel:
    """A loaded kernel; calling it launches it, on `stream` (an int
    CUstream, a torch or CuPy stream), or on torch's current stream when an
    argument is a torch tensor, else on the legacy default stream. Never
    synchronizes. With variant None (the default) the runtime picks the
    fastest variant per shape (multi-kernel) and `last_variant` says which
    ran.

    Arguments are checked before the launch, against the kernel's declared
    parameters: TypeError for a wrong count or type, ValueError for a tensor
    on the wrong device, not contiguous or misaligned, OverflowError for an
    integer out of its parameter's range. Pointer parameters have no
    declared shape, so a tensor's shape is not checked here."""

    def __init__(self, module: "ModuleView", name: str, variant: Optional[int] = None):
        self.module, self.name, self.variant = module, name, variant
        self.last_variant = variant
        L = lib()
        h = L.tilec_program_kernel(module._prog, name.encode(), 0 if variant is None else variant)
        if not h:
            raise TilecError(f"no kernel {name!r} variant {variant} in {module.path}")
        meta = L.tilec_rt_kernel_meta(h)
        # the kernel's own parameters: a split-K variant's CUDA kernel has two
        # more (its slices' workspace and counters), which the program's launch
        # appends itself (docs/lowering.md "Split-K")
        decl = L.tilec_module_find_kernel(module._mod, name.encode())
        n = min(meta.nparams, L.tilec_kernel_param_count(decl)) if decl else meta.nparams
        self.kinds: List[int] = [meta.kinds[i] for i in range(n)]
        self.threads: int = meta.block_x
        self.shared_bytes: int = meta.dyn_smem_bytes
        self.params: List[Param] = kernel_params(module, name, self.kinds)
        # what a launch needs, worked out once: a call is then one pass
        # over the arguments, one struct.pack and one ctypes call
        self._name_b = name.encode()
        self._pack = struct.Struct("<" + "".join(_PACK[k] for k in self.kinds)).pack
        self._device_index = module.device.index
        self._lib = L
        self._native = native()
        # a kernel with tensor lists launches through ctypes (the extension's fast paths take no lists)
        self._lists = LIST in self.kinds
        if self._lists:
            self._native = None
        self._kinds_b = "".join(_NATIVE_KINDS.get(k, "?") for k in self.kinds).encode()
        self._spec: Any = None if self._lists else False  # kcall's compiled spec: False until made, None: no fast path

    def __repr__(self) -> str:
        return f"<tilec.Kernel {self.name}({', '.join(map(repr, self.params))})>"

    def check(self, args: Tuple[Any, ...], keep: Optional[List[Any]] = None) -> Tuple[List[Any], bool]:
        """The launch values of args (addresses, ints, floats), and whether
        a torch tensor is among them; raises as a call would. A tensor
        list's value is the address of its tilec_rt_list, whose arrays
        `keep` holds (they must stay alive until the launch)."""
        params = self.params
        if len(args) != len(params):
            raise TypeError(f"{self.name}() takes {len(params)} arguments ({', '.join(map(repr, params))}); "
                            f"got {len(args)}")
        vals: List[Any] = []
        use_torch = False
        keep = [] if keep is None else keep
        first_list = -1
        for i, (p, a) in enumerate(zip(params, args)):
            k = p.kind
            if k == LIST and type(a) is TensorList:
                if a.tensors and a.dtype != p.dtype:
                    raise TypeError(f"{self.name}: parameter '{p.name}' ([*{p.dtype}]), argument {i + 1}: expects a list"
                                    f" of {p.dtype} tensors; got a TensorList of {a.dtype} tensors")
                if a.tensors and a.device_index != self._device_index:
                    raise ValueError(f"{self.name}: parameter '{p.name}' ([*{p.dtype}]), argument {i + 1}: the "
                                     f"tensors are on cuda:{a.device_index}; the kernel is on cuda:{self._device_index}")
                first_list = self._same_length(args, first_list, i)
                use_torch |= a.torch
                vals.append(ctypes.addressof(a._rl))
            elif k == LIST:
                rl, held, t = list_arg(self.name, p.name, p.dtype, i, a, self._device_index)
                first_list = self._same_length(args, first_list, i)
                keep.append(held)
                use_torch |= t
                vals.append(ctypes.addressof(rl))
            elif k == PTR:
                if type(a) is Buffer and a.dtype == p.dtype and a.device.index == self._device_index \
                        and not a.ptr % DTYPES[p.dtype][0]:
                    vals.append(a.ptr)
                    continue
                ptr, t = pointer_arg(self.name, p.name, p.dtype, i, a, self._device_index)
                use_torch |= t
                vals.append(ptr)
            elif k == F32 or k == F64:
                vals.append(check_float(self.name, p.name, _KIND_NAMES[k], a))
            else:
                vals.append(check_int(self.name, p.name, _KIND_NAMES[k], a))
        return vals, use_torch

    def _same_length(self, args: Tuple[Any, ...], first: int, i: int) -> int:
        """The first tensor list argument seen, argument i being one:
        ValueError when the two hold different counts of tensors."""
        if first >= 0 and len(args[i]) != len(args[first]):
            raise ValueError(f"{self.name}: tensor list arguments {first + 1} ('{self.params[first].name}') and "
                             f"{i + 1} ('{self.params[i].name}') have {len(args[first])} and {len(args[i])} tensors; "
                             "every list of a launch must have as many")
        return i if first < 0 else first

    def _fast_spec(self) -> Any:
        """What the extension's kcall needs (its checks in C, for torch
        tensors and exact ints and floats), compiled once torch is
        imported; None without the extension, torch or its stream getter."""
        torch = torch_module()
        if self._native is None or not hasattr(self._native, "kcompile") or torch is None:
            return None
        names = {v: k for k, v in TORCH_NAMES.items()}
        dtypes = tuple(getattr(torch, names.get(p.dtype, ""), None) if p.kind == PTR else None for p in self.params)
        if any(d is None for d, p in zip(dtypes, self.params) if p.kind == PTR):
            return None
        sizes = bytes(DTYPES[p.dtype][0] if p.kind == PTR else 8 for p in self.params)
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is None:
            return None
        return self._native.kcompile((self.module._prog.value, self._name_b,
                                      -1 if self.variant is None else self.variant, self._kinds_b, dtypes, sizes,
                                      self._device_index, torch.Tensor, raw))

    def __call__(self, *args: Any, stream: Any = None) -> None:
        spec = self._spec
        if spec is False:
            spec = self._spec = self._fast_spec()
        if spec is not None and (stream is None or type(stream) is int):
            r = self._native.kcall(spec, args, stream)
            if r is not None:  # checked and launched in C; None: the checks below say what is wrong
                if type(r) is int:
                    self.last_variant = r
                    return
                self.last_variant = r[1]
                raise TilecError(f"launch of {self.name}: " +
                                 self._lib.tilec_rt_last_error(self.module.device._h).decode())
        keep: List[Any] = []
        vals, use_torch = self.check(args, keep)
        s = stream_handle(stream, self._device_index, use_torch)
        L = self._lib
        if self._native is not None:
            st, chosen_v = self._native.launch(self.module._prog.value, self._name_b,
                                               -1 if self.variant is None else self.variant, self._kinds_b,
                                               tuple(vals), s)
            self.last_variant = chosen_v
        elif self.variant is None:
            packed = self._pack(*vals)
            chosen = ctypes.c_int(-1)
            st = L.tilec_program_launch_best(self.module._prog, self._name_b, packed, len(vals), s,
                                             ctypes.byref(chosen))
            self.last_variant = chosen.value
        else:
            st = L.tilec_program_launch(self.module._prog, self._name_b, self.variant, self._pack(*vals), len(vals), s)
        if st != 0:
            raise TilecError(f"launch of {self.name}: " + L.tilec_rt_last_error(self.module.device._h).decode())


def _arg_dtype(obj: Any) -> Optional[str]:
    """tilec's dtype name of a tensor argument, or None for what is none."""
    torch = torch_module()
    if torch is not None and isinstance(obj, torch.Tensor):
        return torch_dtype_name(obj.dtype)
    if type(obj) is Buffer:
        return obj.dtype
    info = tensor_info(obj)
    return info.dtype if info is not None else None


def _list_items(owner: str, pname: str, t: str, i: int, a: Any) -> List[Tuple[Any, str]]:
    """The tensors of tensor list argument a (argument i, parameter
    pname: [*t]) with their places for messages."""
    if type(a) is TensorList:  # checked when made: one dtype
        return [(a.tensors[0], "")] if a.tensors else []
    if not isinstance(a, (list, tuple)):
        raise TypeError(f"{owner}: parameter '{pname}' ([*{t}]), argument {i + 1}: expects a list of tensors, whose "
                        f"dtype chooses {t}; got {describe(a)}")
    return [(x, f", tensor {n} of the list") for n, x in enumerate(a)]


class GenericKernel:
    """A generic kernel (docs/language.md §4.2): one per name written, its
    instances one Kernel per combination of dtypes. Calling it reads the
    dtypes of the tensors passed for its `*T` parameters, which choose the
    instance, and launches that; TypeError for a dtype the kernel does not
    allow or for two tensors that bind T differently. `last` is the
    instance that the last call launched."""

    def __init__(self, module: "Module", name: str, handle: Any, variant: Optional[int] = None):
        L = lib()
        self.module, self.name, self.variant = module, name, variant
        self.tparams: List[str] = []
        for j in range(L.tilec_kernel_tparam_count(handle)):
            tname = ctypes.c_char_p()
            L.tilec_kernel_tparam_info(handle, j, ctypes.byref(tname), None)
            self.tparams.append((tname.value or b"?").decode())
        self.nparams: int = L.tilec_kernel_param_count(handle)
        self._typed: List[Tuple[int, int, str, bool]] = []  # (parameter, type parameter, its name, a list)
        for i in range(self.nparams):
            j = L.tilec_kernel_param_tparam(handle, i)
            pname, pointer = ctypes.c_char_p(), ctypes.c_int()
            L.tilec_kernel_param_info(handle, i, ctypes.byref(pname), ctypes.byref(pointer), None)
            if j >= 0 and pointer.value:  # 1: *T, 2: a tensor list [*T]
                self._typed.append((i, j, (pname.value or b"?").decode(), pointer.value == 2))
        self.instances: Dict[Tuple[str, ...], str] = {}
        self.allowed: List[List[str]] = [[] for _ in self.tparams]
        n = 0
        while True:
            k = L.tilec_kernel_instance(handle, n)
            if not k:
                break
            n += 1
            bound = []
            for j in range(len(self.tparams)):
                dt = ctypes.c_int()
                L.tilec_kernel_tparam_info(k, j, None, ctypes.byref(dt))
                bound.append(DT_ENUM[dt.value])
                if bound[-1] not in self.allowed[j]:
                    self.allowed[j].append(bound[-1])
            self.instances[tuple(bound)] = L.tilec_kernel_name(k).decode()
        self.last: Optional[Kernel] = None

    def __repr__(self) -> str:
        tps = ", ".join(f"{t}: {' | '.join(a)}" for t, a in zip(self.tparams, self.allowed))
        return f"<tilec.GenericKernel {self.name}<{tps}>>"

    def select(self, args: Tuple[Any, ...]) -> Kernel:
        """The instance that args choose (the Kernel a call launches)."""
        if len(args) != self.nparams:
            raise TypeError(f"{self.name}() takes {self.nparams} arguments; got {len(args)}")
        bound: List[Optional[str]] = [None] * len(self.tparams)
        source = [0] * len(self.tparams)
        for i, j, pname, is_list in self._typed:
            t = self.tparams[j]
            for a, item in (_list_items(self.name, pname, t, i, args[i]) if is_list else [(args[i], "")]):
                bound[j], source[j] = self._bind(i, j, pname, a, item, bound[j], source[j], is_list)
        for j, b in enumerate(bound):
            if b is None:  # bound by tensor lists only, all empty
                raise TypeError(f"{self.name}: takes {self.tparams[j]} = {' | '.join(self.allowed[j])}, but no tensor "
                                f"chose it (its tensor lists are empty)")
        return self.module.kernel(self.instances[tuple(b or "" for b in bound)], self.variant)

    def _bind(self, i: int, j: int, pname: str, a: Any, item: str, have: Optional[str], src: int,
              is_list: bool) -> Tuple[str, int]:
        """Type parameter j bound by tensor a, argument i (item: its place
        in a tensor list): (the dtype, the argument that chose it)."""
        t = self.tparams[j]
        ty = f"[*{t}]" if is_list else f"*{t}"
        dt = _arg_dtype(a)
        if dt is None:
            raise TypeError(f"{self.name}: parameter '{pname}' ({ty}), argument {i + 1}{item}: expects a tensor "
                            f"(torch, CuPy or tilec.Buffer), whose dtype chooses {t}; got {describe(a)}")
        if have is None:
            if dt not in self.allowed[j]:
                raise TypeError(f"{self.name}: takes {t} = {' | '.join(self.allowed[j])}, but argument {i + 1}"
                                f"{item} ('{pname}': {ty}) is a {dt} tensor")
            return dt, i
        if have != dt:
            raise TypeError(f"{self.name}: argument {i + 1}{item} ('{pname}': {ty}) is a {dt} tensor, but argument "
                            f"{src + 1} made {t} = {have}")
        return have, src

    def __call__(self, *args: Any, stream: Any = None) -> None:
        k = self.select(args)
        self.last = k
        k(*args, stream=stream)
