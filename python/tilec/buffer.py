"""Device memory and interop: tilec.Buffer (with __cuda_array_interface__
and DLPack, for use without torch), what a tensor argument is
(tensor_info: a Buffer, a torch tensor, or anything with
__cuda_array_interface__), and the pool of spare memory wrappers reuse."""
from __future__ import annotations

import ctypes
import struct
import sys
from typing import Any, Optional, Tuple

from ._library import TilecError, lib
from .device import Device, device, torch_module
from .dtypes import DTYPES, I64_MAX, TORCH_NAMES, TYPESTRS

_DTYPES = DTYPES
_I64_MAX = I64_MAX


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManaged(ctypes.Structure):
    pass


_DLDELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManaged))
_DLManaged._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DLDELETER)]

_dl_alive = {}  # address of a DLManagedTensor -> (struct, shape array, owner)


@_DLDELETER
def _dl_deleter(managed):
    _dl_alive.pop(ctypes.addressof(managed.contents), None)


# The capsule destructor gets a dying object: take it as a bare pointer (a
# py_object argument would revive it), and use the pointer-typed C calls.
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DLTENSOR_NAME = ctypes.c_char_p(b"dltensor")  # must outlive every capsule
_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_PyCapsule_IsValid = ctypes.pythonapi.PyCapsule_IsValid
_PyCapsule_IsValid.restype = ctypes.c_int
_PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_PyCapsule_GetPointer = ctypes.pythonapi.PyCapsule_GetPointer
_PyCapsule_GetPointer.restype = ctypes.c_void_p
_PyCapsule_GetPointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # an unconsumed capsule still owns its tensor; a consumer renames it
    if _PyCapsule_IsValid(capsule, _DLTENSOR_NAME.value):
        addr = _PyCapsule_GetPointer(capsule, _DLTENSOR_NAME.value)
        _dl_alive.pop(addr, None)


class Buffer:
    """Device memory with a shape and an element type."""

    def __init__(self, shape: Any, dtype: str = "f32", device_: Optional[Device] = None, _ptr: Optional[int] = None,
                 _owner: Any = None):
        if dtype not in _DTYPES:
            raise TilecError(f"unknown dtype {dtype!r} (known: {', '.join(_DTYPES)})")
        self.shape = tuple(int(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        if any(d < 0 for d in self.shape):
            raise TilecError(f"negative size in shape {self.shape}")
        self.dtype = dtype
        self.device = device_ or device()
        n = 1
        for d in self.shape:
            n *= d
        self.numel = n
        self.nbytes = n * _DTYPES[dtype][0]
        if self.nbytes > _I64_MAX:  # ctypes would wrap it: a tiny buffer
            raise TilecError(f"a {dtype}{list(self.shape)} buffer needs {self.nbytes} bytes, more than 2**63 - 1")
        self._owner = _owner
        if _ptr is not None:
            self.ptr = _ptr
            self._owns = False
        else:
            p = ctypes.c_uint64()
            self.device._check(lib().tilec_rt_malloc(self.device._h, max(self.nbytes, 1), ctypes.byref(p)))
            self.ptr = p.value
            self._owns = True

    @classmethod
    def from_bytes(cls, data, shape, dtype="f32", device_=None):
        """A new buffer holding a copy of host bytes (bytes, bytearray, memoryview, array.array)."""
        buf = cls(shape, dtype, device_)
        mv = memoryview(data).cast("B")
        if mv.nbytes != buf.nbytes:
            raise TilecError(f"{mv.nbytes} bytes given for a {dtype}{list(buf.shape)} buffer of {buf.nbytes}")
        host = (ctypes.c_char * mv.nbytes).from_buffer_copy(mv)
        buf.device._check(lib().tilec_rt_memcpy_htod(buf.device._h, buf.ptr, host, buf.nbytes))
        return buf

    def to_bytes(self):
        """A host copy of the contents."""
        host = (ctypes.c_char * self.nbytes)()
        self.device._check(lib().tilec_rt_memcpy_dtoh(self.device._h, host, self.ptr, self.nbytes))
        return bytes(host)

    def fill_u32(self, word):
        """Set every 32-bit word (e.g. 0x7fc00000 for NaN in f32)."""
        self.device._check(lib().tilec_rt_memset_d32(self.device._h, self.ptr, word, self.nbytes // 4))

    def tolist(self):
        """The contents as a flat list of Python numbers (f32, f64, integers)."""
        fmt = {"f32": "f", "f64": "d", "i32": "i", "i64": "q", "u32": "I", "u64": "Q", "i8": "b", "u8": "B",
               "i16": "h", "u16": "H", "f16": "e"}.get(self.dtype)
        if fmt is None:
            raise TilecError(f"tolist does not read {self.dtype}")
        return list(struct.unpack(f"<{self.numel}{fmt}", self.to_bytes()))

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": _DTYPES[self.dtype][1], "data": (self.ptr, False),
                "version": 3, "strides": None}

    def __dlpack_device__(self):
        return (2, self.device.index)  # kDLCUDA

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        # the consumer's stream must see this buffer's work: the work is on
        # self.stream (an extern's buffers: the call's stream), else on the
        # legacy stream; only another stream needs a synchronize
        mine = getattr(self, "stream", None) or 0
        theirs = 0 if stream in (None, -1, 1) else stream
        if theirs != mine and stream != -1:
            self.device.synchronize()
        ndim = len(self.shape)
        shape = (ctypes.c_int64 * max(ndim, 1))(*self.shape)
        m = _DLManaged()
        _, _, code, bits = _DTYPES[self.dtype]
        m.dl_tensor = _DLTensor(ctypes.c_void_p(self.ptr), _DLDevice(2, self.device.index), ndim,
                                _DLDataType(code, bits, 1), shape, None, 0)
        m.manager_ctx = None
        m.deleter = _dl_deleter
        addr = ctypes.addressof(m)
        _dl_alive[addr] = (m, shape, self)
        return _PyCapsule_New(addr, _DLTENSOR_NAME, ctypes.cast(_capsule_destructor, ctypes.c_void_p))

    def view(self, shape, dtype=None, offset=0):
        """A buffer over the same memory (kept alive by the view), starting
        `offset` elements of `dtype` in."""
        dtype = dtype or self.dtype
        ptr = self.ptr + offset * _DTYPES[dtype][0]
        return Buffer(shape, dtype, self.device, _ptr=ptr, _owner=self)

    def free(self):
        if getattr(self, "_owns", False) and self.ptr:
            lib().tilec_rt_free(self.device._h, self.ptr)
            self._owns = False
            self.ptr = 0

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def __repr__(self):
        return f"<tilec.Buffer {self.dtype}{list(self.shape)} at 0x{self.ptr:x}>"


def pointer_of(obj: Any) -> int:
    """The device address of a Buffer, a torch tensor, anything with
    __cuda_array_interface__, or an int."""
    if isinstance(obj, Buffer):
        return obj.ptr
    if _is_torch(obj):
        return obj.data_ptr()
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    if isinstance(obj, int):
        return obj
    raise TilecError(f"expected a device buffer, got {type(obj).__name__}")


_torch_names: dict = {}  # torch dtype: tilec's name


def _is_torch(obj: Any) -> bool:
    torch = torch_module()
    return torch is not None and isinstance(obj, torch.Tensor)


class TensorInfo:
    """What a wrapper checks of an argument: dtype name, shape, strides in
    elements, device address, whether it is in device memory, the device's
    index (None when unknown), and whether it is a torch tensor."""

    __slots__ = ("dtype", "shape", "strides", "ptr", "on_device", "device", "torch", "key")

    def __init__(self, dtype: Optional[str], shape: Tuple[int, ...], strides: Optional[Tuple[int, ...]], ptr: int,
                 on_device: bool = True, device: Optional[int] = None, torch: bool = False):
        self.dtype, self.shape, self.strides, self.ptr, self.on_device = dtype, shape, strides, ptr, on_device
        self.device, self.torch = device, torch
        # what a generated wrapper's checks read, all but the address: equal
        # keys pass the same checks (the per-shape cache of graph calls)
        self.key = (dtype, shape, strides, on_device, device, torch)

    @property
    def contiguous(self) -> bool:
        """Row-major without gaps (dimensions of size 1 may have any stride)."""
        if self.strides is None:
            return True
        st = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != st:
                return False
            st *= n
        return True

    def where(self) -> str:
        """"cuda:0", "host memory", or "device memory" (device unknown)."""
        if not self.on_device:
            return "host memory"
        return f"cuda:{self.device}" if self.device is not None else "device memory"


def tensor_info(obj: Any) -> Optional[TensorInfo]:
    """A TensorInfo for a tilec.Buffer, a torch tensor, or anything with
    ``__cuda_array_interface__`` (CuPy, Numba); None for anything else.
    Reads no device memory, and needs no GPU."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        dt = obj.dtype
        dtype = _torch_names.get(dt)
        if dtype is None:
            dtype = _torch_names[dt] = TORCH_NAMES.get(str(dt).replace("torch.", ""))
        cuda = obj.is_cuda
        strides = None if obj.is_contiguous() else tuple(obj.stride())  # None: contiguous, nothing to walk
        # obj.shape is a torch.Size, a tuple: kept as it is (a copy costs more than the rest)
        return TensorInfo(dtype, obj.shape, strides, obj.data_ptr(), cuda, obj.get_device() if cuda else None, True)
    if isinstance(obj, Buffer):
        return TensorInfo(obj.dtype, obj.shape, None, obj.ptr, True, obj.device.index)
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        return None
    shape = tuple(int(d) for d in cai["shape"])
    dtype = TYPESTRS.get(cai["typestr"].replace("=", "<"))
    strides = cai.get("strides")
    if strides is not None and dtype is not None:
        strides = tuple(int(s) // DTYPES[dtype][0] for s in strides)
    dev = getattr(getattr(obj, "device", None), "id", None)  # CuPy arrays say which device
    return TensorInfo(dtype, shape, strides, int(cai["data"][0]), True, dev if isinstance(dev, int) else None)


def as_buffer(obj: Any, info: TensorInfo, device_: Optional[Device] = None) -> "Buffer":
    """obj as a Buffer (itself, or a view of its memory that keeps it alive)."""
    if isinstance(obj, Buffer):
        return obj
    return Buffer(info.shape, info.dtype, device_, _ptr=info.ptr, _owner=obj)


def copy(dst: "Buffer", src: "Buffer") -> "Buffer":
    """Copy Buffer src's bytes into Buffer dst (the same number of bytes)
    on the device; returns dst."""
    if dst.nbytes != src.nbytes:
        raise TilecError(f"copy: {src.nbytes} bytes into a buffer of {dst.nbytes}")
    if dst.nbytes:
        dst.device._check(lib().tilec_rt_memcpy_dtod(dst.device._h, dst.ptr, src.ptr, dst.nbytes))
    return dst


def fill(buf: "Buffer", bits: int, size: int, stream: Optional[int] = None) -> "Buffer":
    """Set every element of Buffer buf to the size-byte pattern bits (the
    zeros, ones and full of graphs), ordered on stream (None: the legacy
    default stream); returns buf. The runtime's one fill
    (tilec_rt_fill_async): a memset, or a small kernel for an 8-byte
    pattern whose halves differ."""
    if size not in (1, 2, 4, 8) or buf.nbytes % size:
        raise TilecError(f"fill: {buf.nbytes} bytes are no whole number of {size}-byte elements")
    dev = buf.device
    dev._check(lib().tilec_rt_fill_async(dev._h, buf.ptr, bits & ((1 << (8 * size)) - 1), size, buf.nbytes // size,
                                         stream))
    return buf


class Pool:
    """A wrapper's freed intermediates, kept by size for its next call:
    cuMemAlloc and cuMemFree cost far more than the kernels of a small
    graph. Work is in stream order, so reusing memory at once is safe."""

    def __init__(self, device_=None, cap=64):
        self.device = device_ or device()
        self.cap = cap
        self._spare = {}  # bytes -> [address]
        self._n = 0

    def alloc(self, shape, dtype):
        """A new buffer, from the spare memory when some has the size. When
        the device is full, the spares go back to it and the allocation is
        tried once more."""
        buf = Buffer(shape, dtype, self.device, _ptr=0)
        spare = self._spare.get(max(buf.nbytes, 1))
        if spare:
            buf.ptr = spare.pop()
            self._n -= 1
            buf._owns = True
            return buf
        try:
            return Buffer(shape, dtype, self.device)
        except TilecError:
            if not self._n:
                raise
            self.clear()
            return Buffer(shape, dtype, self.device)

    def take(self, buf, shape, dtype):
        """A buffer that takes over the memory of `buf` (dead from now on)."""
        new = Buffer(shape, dtype, self.device, _ptr=buf.ptr)
        new._owns, buf._owns = buf._owns, False
        return new

    def release(self, buf):
        """Keep the memory of `buf` (which must not be used again) for the
        next alloc; buffers that own no memory are left alone."""
        if not getattr(buf, "_owns", False) or not buf.ptr:
            return
        if self._n < self.cap:
            self._spare.setdefault(max(buf.nbytes, 1), []).append(buf.ptr)
            self._n += 1
        else:
            lib().tilec_rt_free(self.device._h, buf.ptr)
        buf._owns = False
        buf.ptr = 0

    def clear(self):
        for ptrs in self._spare.values():
            for p in ptrs:
                lib().tilec_rt_free(self.device._h, p)
        self._spare, self._n = {}, 0

    def __del__(self):
        try:
            self.clear()
        except Exception:
            pass


def random_buffer(shape, dtype="f32", seed=1, device_=None):
    """A buffer of pseudo-random values in [-1, 1) (small integers for
    integer types), for benchmarks."""
    import array
    import random
    buf = Buffer(shape, dtype, device_)
    rnd = random.Random(seed)
    n = buf.numel
    block = min(n, 4096) or 1
    code = {"f32": "f", "f64": "d", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "u8": "B", "u16": "H",
            "u32": "I", "u64": "Q", "bool": "B"}.get(dtype)
    if code is None:  # f16, bf16: small normal numbers either way
        vals = array.array("H", (0x3800 | rnd.getrandbits(10) for _ in range(block)))
    elif code in "fd":
        vals = array.array(code, (rnd.uniform(-1, 1) for _ in range(block)))
    else:
        vals = array.array(code, (rnd.randrange(0, 2 if dtype == "bool" else 64) for _ in range(block)))
    data = (vals * (n // block + 1)).tobytes()[:buf.nbytes]
    host = (ctypes.c_char * max(buf.nbytes, 1)).from_buffer_copy(data.ljust(max(buf.nbytes, 1), b"\0"))
    buf.device._check(lib().tilec_rt_memcpy_htod(buf.device._h, buf.ptr, host, buf.nbytes))
    return buf


