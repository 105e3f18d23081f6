"""Modules: a .tile file parsed, its kernels built for a device (through
the kernel cache) and loaded; and the registry of extern kernels
(cuBLAS built in, Python functions registered on it)."""
from __future__ import annotations

import ctypes
import os
import weakref
from typing import Any, Callable, List, Optional, Sequence, Union

from ._library import _BuildOptions, _EXTERN_FN, _Stats, _Tensor, diagnostics, lib, Owner, TilecError
from .buffer import Buffer
from .device import Device, device
from .dtypes import DT_ENUM
from .kernel import GenericKernel, Kernel


class Module(Owner):
    """A .tile file built for a device: every kernel variant compiled (or
    found in the kernel cache) and loaded."""

    def __init__(self, path: Optional[str] = None, source: Union[str, bytes, None] = None,
                 device_: Union[Device, int, None] = None, arch: Optional[str] = None, threads: int = 0,
                 cache: bool = True):
        lib_ = lib()
        self._graphs: "weakref.WeakSet[Any]" = weakref.WeakSet()  # plans over this program: closed first
        self.device = device(device_) if isinstance(device_, int) else (device_ or device())
        self.path = path or "<string>"
        self._ctx = lib_.tilec_ctx_new()
        self._mod = ctypes.c_void_p()
        self._prog = None
        self._cache = ctypes.c_void_p()
        if source is not None:
            data = source if isinstance(source, bytes) else source.encode()
            st = lib_.tilec_parse_string(self._ctx, self.path.encode(), data, len(data), ctypes.byref(self._mod))
        else:
            st = lib_.tilec_parse_file(self._ctx, os.fsencode(path), ctypes.byref(self._mod))
        if st != 0:
            raise TilecError(diagnostics(self._ctx) or f"cannot read {self.path}")
        if cache:
            lib_.tilec_cache_open(None, ctypes.byref(self._cache))
        opts = _BuildOptions(arch.encode() if arch else None, threads, self._cache, None, None)
        prog = ctypes.c_void_p()
        st = lib_.tilec_program_build(self._ctx, self.device._h, self._mod, ctypes.byref(opts), ctypes.byref(prog))
        if st != 0:
            raise TilecError(diagnostics(self._ctx) or "build failed")
        self._prog = prog
        self._kernels = {}

    def kernel(self, name: str, variant: Optional[int] = None) -> Union[Kernel, GenericKernel]:
        """Kernel `name` (variant None: the fastest per shape), made once;
        for a generic kernel's name (docs/language.md §4.2) a GenericKernel,
        which launches the instance its arguments' dtypes choose."""
        key = (name, variant)
        if key not in self._kernels:
            g = lib().tilec_module_find_generic(self._mod, name.encode())
            self._kernels[key] = GenericKernel(self, name, g, variant) if g else Kernel(self, name, variant)
        return self._kernels[key]

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self.kernel(name)

    def stats(self) -> dict:
        """How the build went: kernels, NVRTC compiles, cache hit, times, cache key."""
        s = _Stats()
        lib().tilec_program_get_stats(self._prog, ctypes.byref(s))
        return {"kernels": s.kernels, "nvrtc_compiles": s.nvrtc_compiles, "cache_hit": bool(s.cache_hit),
                "lower_ms": s.lower_ms, "compile_ms": s.compile_ms, "load_ms": s.load_ms, "key": s.key.decode(),
                "source_hit": bool(s.source_hit)}

    def close(self) -> None:
        """Free the program, the module and the context (kernels made from
        this module must not be called afterwards). The graphs (launch
        plans) made over it are closed first: a plan's CUDA graphs hold
        split-K workspaces of the program."""
        for g in list(getattr(self, "_graphs", ())):
            g.close()
        if self._prog and not getattr(self.device, "_h", None):
            self._prog = None  # at exit the device may be closed first: its memory went with it
        if self._prog:
            lib().tilec_program_free(self._prog)
            self._prog = None
        if self._mod:
            lib().tilec_module_free(self._mod)
            self._mod = ctypes.c_void_p()
        if self._cache:
            lib().tilec_cache_close(self._cache)
            self._cache = ctypes.c_void_p()
        if self._ctx:
            lib().tilec_ctx_free(self._ctx)
            self._ctx = None


def load(path: str, **kw: Any) -> Module:
    """Build the .tile file at `path` for the default device (device_=
    another Device; arch=, threads=, cache= as Module takes them)."""
    return Module(path=path, **kw)


def _tensor(buf):
    t = _Tensor()
    t.data = buf.ptr
    t.dtype = DT_ENUM.index(buf.dtype)
    t.rank = len(buf.shape)
    st = 1
    for d in range(t.rank - 1, -1, -1):
        t.sizes[d] = buf.shape[d]
        t.strides[d] = st
        st *= buf.shape[d]
    return t


class Externs(Owner):
    """A registry of extern kernels (cuBLAS built in): C functions by
    symbol, and Python functions registered here, called with lists of
    input and output Buffers."""

    def __init__(self):
        lib_ = lib()
        self._h = lib_.tilec_externs_new()
        if not self._h:
            raise TilecError("out of memory")
        self._fns = []  # the ctypes callbacks must outlive the registry

    def register(self, symbol, fn):
        """Call fn(inputs, outputs) (lists of Buffers; on the tilec device)
        for `symbol`; an exception becomes the call's error."""
        def trampoline(_user, _rt, _stream, ins, nin, outs, nout, err, errlen):
            try:
                def bufs(ts, n):
                    out = [Buffer(tuple(ts[i].sizes[:ts[i].rank]), DT_ENUM[ts[i].dtype], _ptr=ts[i].data)
                           for i in range(n)]
                    for b in out:  # their work is on the call's stream: DLPack to it needs no synchronize
                        b.stream = _stream or 0
                    return out
                fn(bufs(ins, nin), bufs(outs, nout))
                return 0
            except Exception as e:  # noqa: BLE001 -- the message goes back through C
                msg = f"{symbol}: {e}".encode()[:max(errlen - 1, 0)]
                if err and errlen:
                    ctypes.memmove(err, msg + b"\0", len(msg) + 1)
                return 1

        cb = _EXTERN_FN(trampoline)
        if lib().tilec_externs_register(self._h, symbol.encode(), cb, None) != 0:
            raise TilecError(f"cannot register extern {symbol!r}")
        self._fns.append(cb)

    def call(self, symbol, inputs, outputs, device_=None, stream=None):
        """Run extern `symbol` on Buffers (anything with .ptr, .shape and
        .dtype), enqueued on `stream` (an int CUstream; None: the legacy
        stream); TilecError with its message on failure."""
        dev = device_ or device()
        ins = (_Tensor * max(len(inputs), 1))(*[_tensor(b) for b in inputs])
        outs = (_Tensor * max(len(outputs), 1))(*[_tensor(b) for b in outputs])
        if lib().tilec_externs_call(self._h, symbol.encode(), dev._h, stream or None, ins, len(inputs), outs,
                                    len(outputs)):
            raise TilecError(lib().tilec_externs_last_error(self._h).decode(errors="replace"))

    def close(self):
        if getattr(self, "_h", None):
            lib().tilec_externs_free(self._h)
            self._h = None


