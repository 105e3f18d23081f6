"""tilec: build and launch .tile kernels from Python.

ctypes over libtilec.so and the standard library only. Buffers expose
``__cuda_array_interface__`` (v3) and DLPack, so PyTorch and CuPy take them
without a copy; anything with ``__cuda_array_interface__`` is accepted
where a buffer is.

    import tilec
    mod = tilec.load("examples/add_relu.tile")
    x = tilec.Buffer.from_bytes(data, shape=(n,), dtype="f32")
    mod.add_relu(x, y, out, n)

The library is found through $TILEC_LIB, then next to this package in a
source tree (build/lib/libtilec.so), then the system's search path.
"""
import ctypes
import ctypes.util
import os
import struct
import sys

__all__ = ["TilecError", "Device", "Buffer", "Module", "Kernel", "load", "device", "pointer_of", "TensorInfo",
           "tensor_info", "as_buffer", "copy", "cdiv", "Pool", "Externs", "random_buffer", "debug_kernels"]

_HERE = os.path.dirname(os.path.abspath(__file__))


class TilecError(RuntimeError):
    """An error from the tilec library, with its message."""


# ---- the library -------------------------------------------------------

class _Arg(ctypes.Union):
    _fields_ = [("ptr", ctypes.c_uint64), ("i32", ctypes.c_int32), ("i64", ctypes.c_int64),
                ("f32", ctypes.c_float), ("f64", ctypes.c_double), ("u32", ctypes.c_uint32),
                ("u64", ctypes.c_uint64)]


class _Meta(ctypes.Structure):
    _fields_ = [("block_x", ctypes.c_uint32), ("dyn_smem_bytes", ctypes.c_uint32),
                ("nparams", ctypes.c_uint32), ("kinds", ctypes.POINTER(ctypes.c_int))]


class _Props(ctypes.Structure):  # tilec_rt_device_props
    _fields_ = [("name", ctypes.c_char * 256), ("arch", ctypes.c_char * 16), ("ordinal", ctypes.c_int),
                ("sm_major", ctypes.c_int), ("sm_minor", ctypes.c_int), ("multiprocessors", ctypes.c_int),
                ("max_threads_per_block", ctypes.c_int), ("warp_size", ctypes.c_int),
                ("driver_version", ctypes.c_int), ("l2_bytes", ctypes.c_uint64), ("smem_per_block", ctypes.c_uint64),
                ("smem_per_block_optin", ctypes.c_uint64), ("total_mem", ctypes.c_uint64)]


class _BuildOptions(ctypes.Structure):  # tilec_build_options
    _fields_ = [("arch", ctypes.c_char_p), ("threads", ctypes.c_int), ("cache", ctypes.c_void_p),
                ("progress", ctypes.c_void_p), ("workers", ctypes.c_void_p)]


class _Stats(ctypes.Structure):
    _fields_ = [("kernels", ctypes.c_uint32), ("nvrtc_compiles", ctypes.c_uint32), ("cache_hit", ctypes.c_int),
                ("lower_ms", ctypes.c_double), ("compile_ms", ctypes.c_double), ("load_ms", ctypes.c_double),
                ("key", ctypes.c_char * 65)]


_WRITE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t)


class _Sink(ctypes.Structure):
    _fields_ = [("write", _WRITE), ("user", ctypes.c_void_p)]


_MAX_RANK = 8  # TILEC_TENSOR_MAX_RANK


class _Tensor(ctypes.Structure):  # tilec_tensor
    _fields_ = [("data", ctypes.c_uint64), ("dtype", ctypes.c_int), ("rank", ctypes.c_uint32),
                ("sizes", ctypes.c_int64 * _MAX_RANK), ("strides", ctypes.c_int64 * _MAX_RANK)]


# tilec_extern_fn
_EXTERN_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.POINTER(_Tensor), ctypes.c_uint32, ctypes.POINTER(_Tensor), ctypes.c_uint32,
                              ctypes.c_void_p, ctypes.c_size_t)

# parameter kinds (include/tilec/param_kind.h)
PTR, I32, I64, F32, F64, U32, U64 = range(7)

_lib = None


def _load_library():
    global _lib
    if _lib is not None:
        return _lib
    candidates = []
    if os.environ.get("TILEC_LIB"):
        candidates.append(os.environ["TILEC_LIB"])
    candidates.append(os.path.join(_HERE, "..", "..", "build", "lib", "libtilec.so"))
    found = ctypes.util.find_library("tilec")
    if found:
        candidates.append(found)
    errors = []
    for path in candidates:
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append(f"{path}: {e}")
    else:
        raise TilecError("cannot load libtilec.so (set TILEC_LIB): " + "; ".join(errors))
    P, V, S, I, U32 = ctypes.c_void_p, None, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32
    sigs = {
        "tilec_version": (S, []),
        "tilec_ctx_new": (P, []),
        "tilec_ctx_free": (V, [P]),
        "tilec_ctx_render_diags": (I, [P, _Sink]),
        "tilec_parse_file": (I, [P, S, ctypes.POINTER(P)]),
        "tilec_parse_string": (I, [P, S, S, ctypes.c_size_t, ctypes.POINTER(P)]),
        "tilec_module_free": (V, [P]),
        "tilec_rt_open": (I, [I, ctypes.POINTER(P)]),
        "tilec_rt_close": (V, [P]),
        "tilec_rt_last_error": (S, [P]),
        "tilec_rt_status_string": (S, [I]),
        "tilec_rt_device_info": (I, [P, ctypes.POINTER(_Props)]),
        "tilec_rt_synchronize": (I, [P]),
        "tilec_rt_malloc": (I, [P, ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint64)]),
        "tilec_rt_free": (I, [P, ctypes.c_uint64]),
        "tilec_rt_memcpy_htod": (I, [P, ctypes.c_uint64, P, ctypes.c_size_t]),
        "tilec_rt_memcpy_dtoh": (I, [P, P, ctypes.c_uint64, ctypes.c_size_t]),
        "tilec_rt_memcpy_dtod": (I, [P, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t]),
        "tilec_rt_memset_d32": (I, [P, ctypes.c_uint64, U32, ctypes.c_size_t]),
        "tilec_rt_kernel_meta": (_Meta, [P]),
        "tilec_cache_open": (I, [S, ctypes.POINTER(P)]),
        "tilec_cache_close": (V, [P]),
        "tilec_program_build": (I, [P, P, P, ctypes.POINTER(_BuildOptions), ctypes.POINTER(P)]),
        "tilec_program_free": (V, [P]),
        "tilec_program_kernel": (P, [P, S, I]),
        "tilec_program_launch": (I, [P, S, I, ctypes.POINTER(_Arg), U32, P]),
        "tilec_program_get_stats": (V, [P, ctypes.POINTER(_Stats)]),
        "tilec_program_launch_best": (I, [P, S, ctypes.POINTER(_Arg), U32, P, ctypes.POINTER(I)]),
        "tilec_externs_new": (P, []),
        "tilec_externs_free": (V, [P]),
        "tilec_externs_register": (I, [P, S, _EXTERN_FN, P]),
        "tilec_externs_call": (I, [P, S, P, P, ctypes.POINTER(_Tensor), U32, ctypes.POINTER(_Tensor), U32]),
        "tilec_externs_last_error": (S, [P]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    _lib = lib
    return lib


def version():
    """The version of the loaded libtilec."""
    return _load_library().tilec_version().decode()


# ---- devices -----------------------------------------------------------

class Device:
    """One CUDA device through the tilec runtime (driver loaded at run time)."""

    def __init__(self, index=0):
        lib = _load_library()
        handle = ctypes.c_void_p()
        st = lib.tilec_rt_open(index, ctypes.byref(handle))
        if st != 0:
            msg = lib.tilec_rt_last_error(handle) or lib.tilec_rt_status_string(st)
            lib.tilec_rt_close(handle)
            raise TilecError(msg.decode())
        self._h = handle
        self.index = index
        props = _Props()
        self._check(lib.tilec_rt_device_info(handle, ctypes.byref(props)))
        self.name = props.name.decode()
        self.arch = props.arch.decode()
        self.multiprocessors = props.multiprocessors
        self.l2_bytes = props.l2_bytes

    def _check(self, st):
        if st != 0:
            raise TilecError(_lib.tilec_rt_last_error(self._h).decode() or _lib.tilec_rt_status_string(st).decode())

    def synchronize(self):
        self._check(_lib.tilec_rt_synchronize(self._h))

    def close(self):
        if getattr(self, "_h", None):
            _lib.tilec_rt_close(self._h)
            self._h = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return f"<tilec.Device {self.index}: {self.name} ({self.arch})>"


_default_device = None


def device(index=0):
    """The process's device `index`, opened once."""
    global _default_device
    if _default_device is None or _default_device.index != index:
        _default_device = Device(index)
    return _default_device


# ---- buffers -----------------------------------------------------------

_DTYPES = {  # name: (bytes, typestr, DLPack code, bits)
    "f16": (2, "<f2", 2, 16), "bf16": (2, "<V2", 4, 16), "f32": (4, "<f4", 2, 32), "f64": (8, "<f8", 2, 64),
    "i8": (1, "|i1", 0, 8), "i16": (2, "<i2", 0, 16), "i32": (4, "<i4", 0, 32), "i64": (8, "<i8", 0, 64),
    "u8": (1, "|u1", 1, 8), "u16": (2, "<u2", 1, 16), "u32": (4, "<u4", 1, 32), "u64": (8, "<u8", 1, 64),
    "bool": (1, "|b1", 6, 8),
}


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

    def __init__(self, shape, dtype="f32", device_=None, _ptr=None, _owner=None):
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
            self.device._check(_lib.tilec_rt_malloc(self.device._h, max(self.nbytes, 1), ctypes.byref(p)))
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
        buf.device._check(_lib.tilec_rt_memcpy_htod(buf.device._h, buf.ptr, host, buf.nbytes))
        return buf

    def to_bytes(self):
        """A host copy of the contents."""
        host = (ctypes.c_char * self.nbytes)()
        self.device._check(_lib.tilec_rt_memcpy_dtoh(self.device._h, host, self.ptr, self.nbytes))
        return bytes(host)

    def fill_u32(self, word):
        """Set every 32-bit word (e.g. 0x7fc00000 for NaN in f32)."""
        self.device._check(_lib.tilec_rt_memset_d32(self.device._h, self.ptr, word, self.nbytes // 4))

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
        if stream not in (None, -1, 0, 1, 2):
            self.device.synchronize()  # work queued by tilec is on the legacy stream
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
            _lib.tilec_rt_free(self.device._h, self.ptr)
            self._owns = False
            self.ptr = 0

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def __repr__(self):
        return f"<tilec.Buffer {self.dtype}{list(self.shape)} at 0x{self.ptr:x}>"


def pointer_of(obj):
    """The device address of a Buffer, of anything with __cuda_array_interface__, or an int."""
    if isinstance(obj, Buffer):
        return obj.ptr
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    if isinstance(obj, int):
        return obj
    raise TilecError(f"expected a device buffer, got {type(obj).__name__}")


# ---- modules -----------------------------------------------------------

def _diagnostics(ctx):
    out = []

    @_WRITE
    def write(_user, data, n):
        out.append(ctypes.string_at(data, n).decode(errors="replace"))
        return 0

    _lib.tilec_ctx_render_diags(ctx, _Sink(write, None))
    return "".join(out)


_I64_MAX = (1 << 63) - 1
# what each integer parameter kind holds: kernel arguments and the sizes a
# generated wrapper computes are checked against it
_RANGES = {"i32": (-(1 << 31), (1 << 31) - 1), "u32": (0, (1 << 32) - 1),
           "i64": (-(1 << 63), _I64_MAX), "u64": (0, (1 << 64) - 1)}


def _int_arg(kernel, i, field, a):
    """Argument i of kernel as an integer of `field` ("i32", ...): a value
    that does not fit, or is not a whole number, is an error, never
    truncated (ctypes would keep the low bits: 2**32 + 4 would run as 4)."""
    if type(a) is int:  # the common case, on every launch
        v = a
    else:
        try:
            v = a.__index__() if hasattr(a, "__index__") else None
        except TypeError:
            v = None
        if v is None and isinstance(a, float) and a.is_integer():
            v = int(a)
    if v is None:
        raise TilecError(f"{kernel}: argument {i + 1} must be an integer ({field}), not {a!r}")
    lo, hi = _RANGES[field]
    if not lo <= v <= hi:
        raise TilecError(f"{kernel}: argument {i + 1} is {v}, which does not fit {field} ({lo} .. {hi})")
    return v


class Kernel:
    """A loaded kernel; calling it launches it. With variant None (the
    default) the runtime picks the fastest variant per shape (multi-kernel)
    and `last_variant` says which ran."""

    def __init__(self, module, name, variant=None):
        self.module, self.name, self.variant = module, name, variant
        self.last_variant = variant
        h = _lib.tilec_program_kernel(module._prog, name.encode(), 0 if variant is None else variant)
        if not h:
            raise TilecError(f"no kernel {name!r} variant {variant} in {module.path}")
        meta = _lib.tilec_rt_kernel_meta(h)
        self.kinds = [meta.kinds[i] for i in range(meta.nparams)]
        self.threads = meta.block_x
        self.shared_bytes = meta.dyn_smem_bytes
        # what a launch needs, worked out once: a call is then one pass
        # over the arguments and one ctypes call
        self._name_b = name.encode()
        self._array = _Arg * max(len(self.kinds), 1)
        fields = {PTR: None, F32: "f32", F64: "f64", I32: "i32", I64: "i64", U32: "u32", U64: "u64"}
        self._fields = [fields[k] for k in self.kinds]

    def __call__(self, *args, stream=None):
        fields = self._fields
        if len(args) != len(fields):
            raise TilecError(f"{self.name} takes {len(fields)} arguments, got {len(args)}")
        packed = self._array()
        for i, a in enumerate(args):
            f = fields[i]
            if f is None:
                packed[i].ptr = a.ptr if type(a) is Buffer else pointer_of(a)
            elif f[0] == "f":
                setattr(packed[i], f, float(a))
            else:
                setattr(packed[i], f, _int_arg(self.name, i, f, a))
        stream_p = ctypes.c_void_p(stream) if stream else None
        if self.variant is None:
            chosen = ctypes.c_int(-1)
            st = _lib.tilec_program_launch_best(self.module._prog, self._name_b, packed, len(args), stream_p,
                                                ctypes.byref(chosen))
            self.last_variant = chosen.value
        else:
            st = _lib.tilec_program_launch(self.module._prog, self._name_b, self.variant, packed, len(args),
                                           stream_p)
        if st != 0:
            raise TilecError(f"launch of {self.name}: " + _lib.tilec_rt_last_error(self.module.device._h).decode())


class Module:
    """A .tile file built for a device: every kernel variant compiled (or
    found in the kernel cache) and loaded."""

    def __init__(self, path=None, source=None, device_=None, arch=None, threads=0, cache=True):
        lib = _load_library()
        self.device = device_ or device()
        self.path = path or "<string>"
        self._ctx = lib.tilec_ctx_new()
        self._mod = ctypes.c_void_p()
        self._prog = None
        self._cache = ctypes.c_void_p()
        if source is not None:
            data = source if isinstance(source, bytes) else source.encode()
            st = lib.tilec_parse_string(self._ctx, self.path.encode(), data, len(data), ctypes.byref(self._mod))
        else:
            st = lib.tilec_parse_file(self._ctx, os.fsencode(path), ctypes.byref(self._mod))
        if st != 0:
            raise TilecError(_diagnostics(self._ctx) or f"cannot read {self.path}")
        if cache:
            lib.tilec_cache_open(None, ctypes.byref(self._cache))
        opts = _BuildOptions(arch.encode() if arch else None, threads, self._cache, None, None)
        prog = ctypes.c_void_p()
        st = lib.tilec_program_build(self._ctx, self.device._h, self._mod, ctypes.byref(opts), ctypes.byref(prog))
        if st != 0:
            raise TilecError(_diagnostics(self._ctx) or "build failed")
        self._prog = prog
        self._kernels = {}

    def kernel(self, name, variant=None):
        key = (name, variant)
        if key not in self._kernels:
            self._kernels[key] = Kernel(self, name, variant)
        return self._kernels[key]

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self.kernel(name)

    def stats(self):
        s = _Stats()
        _lib.tilec_program_get_stats(self._prog, ctypes.byref(s))
        return {"kernels": s.kernels, "nvrtc_compiles": s.nvrtc_compiles, "cache_hit": bool(s.cache_hit),
                "lower_ms": s.lower_ms, "compile_ms": s.compile_ms, "load_ms": s.load_ms, "key": s.key.decode()}

    def close(self):
        if _lib is None:
            return
        if self._prog:
            _lib.tilec_program_free(self._prog)
            self._prog = None
        if self._mod:
            _lib.tilec_module_free(self._mod)
            self._mod = ctypes.c_void_p()
        if self._cache:
            _lib.tilec_cache_close(self._cache)
            self._cache = ctypes.c_void_p()
        if self._ctx:
            _lib.tilec_ctx_free(self._ctx)
            self._ctx = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def load(path, **kw):
    """Build the .tile file at `path` for the default device."""
    return Module(path=path, **kw)


# ---- for generated wrappers (tilec --emit py) ---------------------------

class TensorInfo:
    """What a wrapper checks of an argument: dtype name, shape, strides in
    elements, device address, and whether it is in device memory."""

    __slots__ = ("dtype", "shape", "strides", "ptr", "on_device")

    def __init__(self, dtype, shape, strides, ptr, on_device=True):
        self.dtype, self.shape, self.strides, self.ptr, self.on_device = dtype, shape, strides, ptr, on_device

    @property
    def contiguous(self):
        """Row-major without gaps (dimensions of size 1 may have any stride)."""
        if self.strides is None:
            return True
        st = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != st:
                return False
            st *= n
        return True


_TYPESTRS = {v[1]: k for k, v in _DTYPES.items() if k != "bf16"}
_TORCH = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16",
          "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
          "bool": "bool"}


def tensor_info(obj):
    """A TensorInfo for a tilec.Buffer, a torch tensor, or anything with
    ``__cuda_array_interface__`` (CuPy, Numba); None for anything else.
    Reads no device memory, and needs no GPU."""
    if isinstance(obj, Buffer):
        return TensorInfo(obj.dtype, obj.shape, None, obj.ptr)
    if type(obj).__module__.split(".")[0] == "torch" and hasattr(obj, "data_ptr"):
        dtype = _TORCH.get(str(obj.dtype).replace("torch.", ""))
        return TensorInfo(dtype, tuple(obj.shape), tuple(obj.stride()), obj.data_ptr(), obj.is_cuda)
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        return None
    shape = tuple(int(d) for d in cai["shape"])
    dtype = _TYPESTRS.get(cai["typestr"].replace("=", "<"))
    strides = cai.get("strides")
    if strides is not None and dtype is not None:
        strides = tuple(int(s) // _DTYPES[dtype][0] for s in strides)
    return TensorInfo(dtype, shape, strides, int(cai["data"][0]))


def as_buffer(obj, info, device_=None):
    """obj as a Buffer (itself, or a view of its memory that keeps it alive)."""
    if isinstance(obj, Buffer):
        return obj
    return Buffer(info.shape, info.dtype, device_, _ptr=info.ptr, _owner=obj)


def copy(dst, src):
    """Copy Buffer src's bytes into Buffer dst (the same number of bytes)
    on the device; returns dst."""
    if dst.nbytes != src.nbytes:
        raise TilecError(f"copy: {src.nbytes} bytes into a buffer of {dst.nbytes}")
    if dst.nbytes:
        dst.device._check(_lib.tilec_rt_memcpy_dtod(dst.device._h, dst.ptr, src.ptr, dst.nbytes))
    return dst


def fill(buf, bits, size):
    """Set every element of Buffer buf to the size-byte pattern bits (the
    zeros, ones and full of graphs); returns buf."""
    dev, n = buf.device, buf.nbytes
    word = {1: (bits & 0xFF) * 0x01010101, 2: (bits & 0xFFFF) * 0x00010001}.get(size, bits & 0xFFFFFFFF)
    if size == 8 and (bits >> 32) != (bits & 0xFFFFFFFF):
        # one element from the host, then copies that double on the device
        if n:
            one = ctypes.c_uint64(bits)
            dev._check(_lib.tilec_rt_memcpy_htod(dev._h, buf.ptr, ctypes.byref(one), 8))
        done = 8
        while done < n:
            dev._check(_lib.tilec_rt_memcpy_dtod(dev._h, buf.ptr + done, buf.ptr, min(done, n - done)))
            done *= 2
        return buf
    dev._check(_lib.tilec_rt_memset_d32(dev._h, buf.ptr, word, n // 4))
    if n % 4:
        tail = ctypes.c_uint32(word)
        dev._check(_lib.tilec_rt_memcpy_htod(dev._h, buf.ptr + n - n % 4, ctypes.byref(tail), n % 4))
    return buf


def cdiv(a, b):
    """a / b rounded up (sizes are positive)."""
    return -(-a // b)


def div(a, b):
    """a / b truncated toward zero, as C and the size texts of a graph divide."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def mod(a, b):
    """The remainder of div(a, b): the sign of a, as in C."""
    return a - b * div(a, b)


def check_fits(graph, what, value, kind="i64"):
    """A size a generated wrapper computed: ValueError unless it fits `kind`
    (Python ints do not overflow, the kernels' parameters do)."""
    lo, hi = _RANGES[kind]
    if not lo <= value <= hi:
        raise ValueError(f"{graph}: {what} is {value}, which does not fit {kind}")
    return value


def check_tensor(graph, name, shape, dtype):
    """ValueError unless a tensor of `shape` and `dtype` has no negative
    dimension and at most 2**63 - 1 bytes."""
    n = _DTYPES[dtype][0]
    for d in shape:
        n *= d
    if any(d < 0 for d in shape):
        raise ValueError(f"{graph}: tensor {name} ({dtype}{list(shape)}) has a negative dimension")
    if n > _I64_MAX:
        raise ValueError(f"{graph}: tensor {name} ({dtype}{list(shape)}) needs {n} bytes, more than 2**63 - 1")


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
            _lib.tilec_rt_free(self.device._h, buf.ptr)
        buf._owns = False
        buf.ptr = 0

    def clear(self):
        for ptrs in self._spare.values():
            for p in ptrs:
                _lib.tilec_rt_free(self.device._h, p)
        self._spare, self._n = {}, 0

    def __del__(self):
        try:
            self.clear()
        except Exception:
            pass


_DT_ENUM = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64"]  # tilec_dtype


def _tensor(buf):
    t = _Tensor()
    t.data = buf.ptr
    t.dtype = _DT_ENUM.index(buf.dtype)
    t.rank = len(buf.shape)
    st = 1
    for d in range(t.rank - 1, -1, -1):
        t.sizes[d] = buf.shape[d]
        t.strides[d] = st
        st *= buf.shape[d]
    return t


class Externs:
    """A registry of extern kernels (cuBLAS built in): C functions by
    symbol, and Python functions registered here, called with lists of
    input and output Buffers."""

    def __init__(self):
        lib = _load_library()
        self._h = lib.tilec_externs_new()
        if not self._h:
            raise TilecError("out of memory")
        self._fns = []  # the ctypes callbacks must outlive the registry

    def register(self, symbol, fn):
        """Call fn(inputs, outputs) (lists of Buffers; on the tilec device)
        for `symbol`; an exception becomes the call's error."""
        def trampoline(_user, _rt, _stream, ins, nin, outs, nout, err, errlen):
            try:
                def bufs(ts, n):
                    return [Buffer(tuple(ts[i].sizes[:ts[i].rank]), _DT_ENUM[ts[i].dtype], _ptr=ts[i].data)
                            for i in range(n)]
                fn(bufs(ins, nin), bufs(outs, nout))
                return 0
            except Exception as e:  # noqa: BLE001 -- the message goes back through C
                msg = f"{symbol}: {e}".encode()[:max(errlen - 1, 0)]
                if err and errlen:
                    ctypes.memmove(err, msg + b"\0", len(msg) + 1)
                return 1

        cb = _EXTERN_FN(trampoline)
        if _lib.tilec_externs_register(self._h, symbol.encode(), cb, None) != 0:
            raise TilecError(f"cannot register extern {symbol!r}")
        self._fns.append(cb)

    def call(self, symbol, inputs, outputs, device_=None):
        """Run extern `symbol` on Buffers; TilecError with its message on failure."""
        dev = device_ or device()
        ins = (_Tensor * max(len(inputs), 1))(*[_tensor(b) for b in inputs])
        outs = (_Tensor * max(len(outputs), 1))(*[_tensor(b) for b in outputs])
        if _lib.tilec_externs_call(self._h, symbol.encode(), dev._h, None, ins, len(inputs), outs, len(outputs)):
            raise TilecError(_lib.tilec_externs_last_error(self._h).decode(errors="replace"))

    def close(self):
        if getattr(self, "_h", None) and _lib is not None:
            _lib.tilec_externs_free(self._h)
            self._h = None

    def __del__(self):
        try:
            self.close()
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
    buf.device._check(_lib.tilec_rt_memcpy_htod(buf.device._h, buf.ptr, host, buf.nbytes))
    return buf


# ---- the debug printer of generated wrappers ----------------------------

def _stats(buf):
    vals = buf.tolist() if buf.dtype not in ("bf16", "bool") else None
    if not vals:
        return f"{buf.dtype}{list(buf.shape)} numel={buf.numel}"
    import math
    finite = [v for v in vals if not (isinstance(v, float) and (math.isnan(v) or math.isinf(v)))]
    nan = sum(1 for v in vals if isinstance(v, float) and math.isnan(v))
    inf = sum(1 for v in vals if isinstance(v, float) and math.isinf(v))
    if not finite:
        return f"{buf.dtype}{list(buf.shape)} numel={buf.numel} nan={nan} inf={inf}"
    mean = sum(finite) / len(finite)
    std = (sum((v - mean) ** 2 for v in finite) / len(finite)) ** 0.5
    return (f"{buf.dtype}{list(buf.shape)} numel={buf.numel} min={min(finite):.6g} max={max(finite):.6g} "
            f"mean={mean:.6g} std={std:.6g} nan={nan} inf={inf}")


class _DebugKernel:
    """A kernel that reports its launches (TILEC_DEBUG_PRINT)."""

    _seq = 0

    def __init__(self, kernel, level, directory):
        self.kernel, self.level, self.directory = kernel, level, directory

    def _save(self, args, when):
        os.makedirs(self.directory, exist_ok=True)
        for i, a in enumerate(args):
            if isinstance(a, Buffer):
                dims = "x".join(str(d) for d in a.shape) or "scalar"
                path = os.path.join(self.directory, f"{_DebugKernel._seq:04d}_{self.kernel.name}_arg{i}_{when}_"
                                                    f"{a.dtype}_{dims}.bin")
                with open(path, "wb") as f:
                    f.write(a.to_bytes())

    def __call__(self, *args, **kw):
        _DebugKernel._seq += 1
        print(f"tilec: launch {self.kernel.name}", file=sys.stderr)
        if self.level == 1:
            self.kernel.module.device.synchronize()
            self._save(args, "before")
        self.kernel(*args, **kw)
        if self.level == 1:
            self._save(args, "after")
        elif self.level == 2:
            for i, a in enumerate(args):
                if isinstance(a, Buffer):
                    print(f"tilec:   {self.kernel.name} arg {i}: {_stats(a)}", file=sys.stderr)


def debug_kernels(kernels):
    """The kernels of a wrapper as they should run, from the environment
    (read once, when the wrapper loads): TILEC_DEBUG_PRINT unset or 0 gives
    `kernels` back (no cost per call); 3 prints each kernel's name before
    its launch; 2 also prints numel, min, max, mean, std and the NaN and
    inf counts of every buffer argument after the launch; 1 saves every
    buffer argument before and after the launch under TILEC_DEBUG_DIR
    (./tilec_debug). TILEC_DEBUG_KERNELS=a,b limits it to those kernels."""
    try:
        level = int(os.environ.get("TILEC_DEBUG_PRINT", "0") or 0)
    except ValueError:
        level = 0
    if level not in (1, 2, 3):
        return kernels
    only = {k for k in os.environ.get("TILEC_DEBUG_KERNELS", "").split(",") if k}
    directory = os.environ.get("TILEC_DEBUG_DIR") or "tilec_debug"
    return {name: _DebugKernel(k, level, directory) if not only or name in only else k
            for name, k in kernels.items()}
