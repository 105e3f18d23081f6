"""Loading libtilec.so through ctypes: the library search, the C structures
the package passes, and every function's signature, declared once."""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Any, List, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))


class TilecError(RuntimeError):
    """An error from the tilec library, with its message."""


class Owner:
    """An object owning a native handle: close() frees it, and so does
    garbage collection (errors at interpreter exit are ignored)."""

    def close(self) -> None:
        raise NotImplementedError

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


# The C structures, each naming its declaration in include/tilec/*.h
# (_c_type_): tests/python/test_struct_layout.py compiles a program that
# prints their sizes and offsets and fails where a field here differs from
# the header's (a field added there and not here, a type, an order).
class _Arg(ctypes.Union):
    _c_type_ = "tilec_rt_arg"
    _fields_ = [("list", ctypes.c_void_p), ("ptr", ctypes.c_uint64), ("i32", ctypes.c_int32), ("i64", ctypes.c_int64),
                ("f32", ctypes.c_float), ("f64", ctypes.c_double), ("u32", ctypes.c_uint32),
                ("u64", ctypes.c_uint64)]


class _Meta(ctypes.Structure):
    _c_type_ = "tilec_rt_launch_meta"
    _fields_ = [("block_x", ctypes.c_uint32), ("dyn_smem_bytes", ctypes.c_uint32),
                ("nparams", ctypes.c_uint32), ("kinds", ctypes.POINTER(ctypes.c_int))]


class _Props(ctypes.Structure):
    _c_type_ = "tilec_rt_device_props"
    _fields_ = [("name", ctypes.c_char * 256), ("arch", ctypes.c_char * 16), ("ordinal", ctypes.c_int),
                ("sm_major", ctypes.c_int), ("sm_minor", ctypes.c_int), ("multiprocessors", ctypes.c_int),
                ("max_threads_per_block", ctypes.c_int), ("warp_size", ctypes.c_int),
                ("driver_version", ctypes.c_int), ("l2_bytes", ctypes.c_uint64), ("smem_per_block", ctypes.c_uint64),
                ("smem_per_block_optin", ctypes.c_uint64), ("total_mem", ctypes.c_uint64)]


class _BuildOptions(ctypes.Structure):
    _c_type_ = "tilec_build_options"
    _fields_ = [("arch", ctypes.c_char_p), ("threads", ctypes.c_int), ("cache", ctypes.c_void_p),
                ("progress", ctypes.c_void_p), ("workers", ctypes.c_void_p)]


class _Stats(ctypes.Structure):
    _c_type_ = "tilec_program_stats"
    _fields_ = [("kernels", ctypes.c_uint32), ("nvrtc_compiles", ctypes.c_uint32), ("cache_hit", ctypes.c_int),
                ("lower_ms", ctypes.c_double), ("compile_ms", ctypes.c_double), ("load_ms", ctypes.c_double),
                ("key", ctypes.c_char * 65), ("source_hit", ctypes.c_int),
                ("choices_timed", ctypes.c_uint32), ("choices_stored", ctypes.c_uint32)]


_WRITE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t)


class _Sink(ctypes.Structure):
    _c_type_ = "tilec_sink"
    _fields_ = [("write", _WRITE), ("user", ctypes.c_void_p)]


_MAX_RANK = 8  # TILEC_TENSOR_MAX_RANK


class _Tensor(ctypes.Structure):
    _c_type_ = "tilec_tensor"
    _fields_ = [("data", ctypes.c_uint64), ("dtype", ctypes.c_int), ("rank", ctypes.c_uint32),
                ("sizes", ctypes.c_int64 * _MAX_RANK), ("strides", ctypes.c_int64 * _MAX_RANK)]


class _PlanValue(ctypes.Structure):
    _c_type_ = "tilec_plan_value"
    _fields_ = [("slot", ctypes.c_int32), ("value", _Arg)]


class _PlanTensor(ctypes.Structure):
    _c_type_ = "tilec_plan_tensor"
    _fields_ = [("data_slot", ctypes.c_int32), ("dtype", ctypes.c_int), ("rank", ctypes.c_uint32),
                ("sizes", _PlanValue * _MAX_RANK)]


class _PlanStats(ctypes.Structure):
    _c_type_ = "tilec_plan_stats"
    _fields_ = [("runs", ctypes.c_uint64), ("recorded", ctypes.c_uint64), ("replayed", ctypes.c_uint64),
                ("graphs", ctypes.c_uint32), ("steps", ctypes.c_uint32), ("updated", ctypes.c_uint64)]


# tilec_extern_fn
_EXTERN_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.POINTER(_Tensor), ctypes.c_uint32, ctypes.POINTER(_Tensor), ctypes.c_uint32,
                              ctypes.c_void_p, ctypes.c_size_t)

# parameter kinds (include/tilec/param_kind.h)
PTR, I32, I64, F32, F64, U32, U64, LIST = range(8)


class RtList(ctypes.Structure):
    """tilec_rt_list (include/tilec/runtime.h): a tensor list argument."""
    _c_type_ = "tilec_rt_list"
    _fields_ = [("n", ctypes.c_uint32), ("ptrs", ctypes.POINTER(ctypes.c_uint64)),
                ("numels", ctypes.POINTER(ctypes.c_int64))]

_lib: Optional[ctypes.CDLL] = None
_native: Any = False  # False: not looked for yet; None: not there


def _library_candidates() -> List[str]:
    """Where libtilec.so is looked for, in order: $TILEC_LIB, the one
    `pip install` bundled in the package, the build of a source tree this
    package sits in (build/lib/libtilec.so), then the system's search path."""
    candidates = []
    if os.environ.get("TILEC_LIB"):
        candidates.append(os.environ["TILEC_LIB"])
    candidates.append(os.path.join(_HERE, "libtilec.so"))
    candidates.append(os.path.join(_HERE, "..", "..", "build", "lib", "libtilec.so"))
    found = ctypes.util.find_library("tilec")
    if found:
        candidates.append(found)
    return candidates


def _signatures() -> dict:
    P, V, S, I, U32 = ctypes.c_void_p, None, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32
    return {
        "tilec_version": (S, []),
        "tilec_ctx_new": (P, []),
        "tilec_ctx_free": (V, [P]),
        "tilec_ctx_render_diags": (I, [P, _Sink]),
        "tilec_parse_file": (I, [P, S, ctypes.POINTER(P)]),
        "tilec_parse_string": (I, [P, S, S, ctypes.c_size_t, ctypes.POINTER(P)]),
        "tilec_module_free": (V, [P]),
        "tilec_module_find_kernel": (P, [P, S]),
        "tilec_kernel_param_count": (ctypes.c_size_t, [P]),
        "tilec_module_find_generic": (P, [P, S]),
        "tilec_kernel_name": (S, [P]),
        "tilec_kernel_instance": (P, [P, ctypes.c_size_t]),
        "tilec_kernel_tparam_count": (ctypes.c_size_t, [P]),
        "tilec_kernel_tparam_info": (I, [P, ctypes.c_size_t, ctypes.POINTER(S), ctypes.POINTER(I)]),
        "tilec_kernel_param_tparam": (I, [P, ctypes.c_size_t]),
        "tilec_kernel_param_info": (I, [P, ctypes.c_size_t, ctypes.POINTER(S), ctypes.POINTER(I),
                                        ctypes.POINTER(I)]),
        "tilec_rt_open": (I, [I, ctypes.POINTER(P)]),
        "tilec_rt_open_driver": (I, [S, I, ctypes.POINTER(P)]),
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
        "tilec_rt_memcpy_dtod_async": (I, [P, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_size_t, P]),
        "tilec_rt_memset_d32": (I, [P, ctypes.c_uint64, U32, ctypes.c_size_t]),
        "tilec_rt_fill_async": (I, [P, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, P]),
        "tilec_rt_kernel_meta": (_Meta, [P]),
        "tilec_cache_open": (I, [S, ctypes.POINTER(P)]),
        "tilec_cache_close": (V, [P]),
        "tilec_program_build": (I, [P, P, P, ctypes.POINTER(_BuildOptions), ctypes.POINTER(P)]),
        "tilec_program_free": (V, [P]),
        "tilec_program_kernel": (P, [P, S, I]),
        "tilec_program_launch": (I, [P, S, I, ctypes.c_char_p, U32, P]),
        "tilec_program_get_stats": (V, [P, ctypes.POINTER(_Stats)]),
        "tilec_program_launch_best": (I, [P, S, ctypes.c_char_p, U32, P, ctypes.POINTER(I)]),
        "tilec_externs_new": (P, []),
        "tilec_externs_free": (V, [P]),
        "tilec_externs_register": (I, [P, S, _EXTERN_FN, P]),
        "tilec_externs_call": (I, [P, S, P, P, ctypes.POINTER(_Tensor), U32, ctypes.POINTER(_Tensor), U32]),
        "tilec_externs_last_error": (S, [P]),
        "tilec_comm_unique_id": (I, [S, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
        "tilec_comm_new": (I, [P, S, I, I, ctypes.c_char_p, ctypes.POINTER(P), ctypes.c_char_p, ctypes.c_size_t]),
        "tilec_comm_free": (V, [P]),
        "tilec_comm_set_overlap": (V, [P, I]),
        "tilec_comm_rank": (I, [P]),
        "tilec_comm_world": (I, [P]),
        "tilec_comm_adopt": (I, [S, P, ctypes.POINTER(P), ctypes.c_char_p, ctypes.c_size_t]),
        "tilec_comm_nccl_version": (I, [P]),
        "tilec_comm_stream": (P, [P]),
        "tilec_comm_register": (I, [P, P, S, I, I, U32, ctypes.c_int64, S, ctypes.c_char_p, ctypes.c_size_t]),
        "tilec_comm_register_async": (I, [P, P, S, S, I, I, U32, ctypes.c_int64, S, ctypes.c_char_p, ctypes.c_size_t]),
        "tilec_plan_new": (P, [P, P, S, U32]),
        "tilec_plan_free": (V, [P]),
        "tilec_plan_set_slot": (I, [P, U32, I, S]),
        "tilec_plan_add_kernel": (I, [P, S, I, ctypes.POINTER(_PlanValue), U32]),
        "tilec_plan_add_extern": (I, [P, S, ctypes.POINTER(_PlanTensor), U32, ctypes.POINTER(_PlanTensor), U32]),
        "tilec_plan_add_fill": (I, [P, ctypes.POINTER(_PlanTensor), ctypes.c_uint64]),
        "tilec_plan_run": (I, [P, ctypes.c_char_p, U32, P]),
        "tilec_plan_set_cuda_graph": (I, [P, U32]),
        "tilec_plan_get_stats": (V, [P, ctypes.POINTER(_PlanStats)]),
        "tilec_plan_last_error": (S, [P]),
    }


def _load_library() -> ctypes.CDLL:
    """libtilec.so, loaded once (see _library_candidates for the search)."""
    global _lib
    if _lib is not None:
        return _lib
    errors = []
    for path in _library_candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append(f"{path}: {e}")
    else:
        raise TilecError("cannot load libtilec.so (set TILEC_LIB): " + "; ".join(errors))
    for name, (res, args) in _signatures().items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    _lib = lib
    return lib


def native() -> Any:
    """The optional CPython extension (tilec_native.abi3.so, built by the
    Makefile beside libtilec.so) with the runtime's entry points handed to
    it, or None when it is not there or TILEC_NO_NATIVE=1: callers then
    pack with struct and call through ctypes."""
    global _native
    if _native is not False:
        return _native
    _native = None
    L = lib()
    if os.environ.get("TILEC_NO_NATIVE") == "1":
        return None
    path = os.path.join(os.path.dirname(os.path.abspath(L._name)), "tilec_native.abi3.so")
    if not os.path.exists(path):
        return None
    import importlib.machinery
    import importlib.util
    try:
        loader = importlib.machinery.ExtensionFileLoader("tilec_native", path)
        spec = importlib.util.spec_from_file_location("tilec_native", path, loader=loader)
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        addr = [ctypes.cast(getattr(L, f), ctypes.c_void_p).value
                for f in ("tilec_plan_run", "tilec_program_launch", "tilec_program_launch_best")]
        mod.init(*addr)
    except (ImportError, OSError, AttributeError):
        return None
    _native = mod
    return mod


def lib() -> ctypes.CDLL:
    """The loaded library (loading it on first use)."""
    return _lib if _lib is not None else _load_library()


def version() -> str:
    """The version of the loaded libtilec."""
    return lib().tilec_version().decode()


def diagnostics(ctx) -> str:
    """The diagnostics a tilec_ctx holds, rendered as text."""
    out = []

    @_WRITE
    def write(_user, data, n):
        out.append(ctypes.string_at(data, n).decode(errors="replace"))
        return 0

    lib().tilec_ctx_render_diags(ctx, _Sink(write, None))
    return "".join(out)
