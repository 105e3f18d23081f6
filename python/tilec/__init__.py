"""tilec: build and launch .tile kernels from Python.

ctypes over libtilec.so and the standard library only; torch and CuPy are
used when the caller already imported them. With torch tensors, kernels
and graphs launch on torch's current stream (or the stream passed), and
graphs allocate their outputs and intermediates through torch's caching
allocator and return torch tensors; without torch, tilec.Buffer (with
``__cuda_array_interface__`` and DLPack). Nothing synchronizes.

    import tilec
    mod = tilec.load("examples/add_relu.tile")
    mod.add_relu(x, y, out, n)        # x, y, out: torch tensors on the GPU

A generated graph wrapper (``tilec FILE --emit py``) makes one native call
per graph call (tilec.Graph, the runtime's launch plan) and can replay it
as a CUDA graph (``load(cuda_graph=True)`` or ``graph.capture()``).

Modules of the package, by job: _library (loading libtilec.so: the
library search is _library._library_candidates), device (devices and
streams), dtypes, buffer (buffers, interop, the pool), checks (argument
checks and size arithmetic), kernel (Kernel, GenericKernel, TensorList), module (Module, Externs),
graph (Graph), debug (TILEC_DEBUG_PRINT).
"""
from ._version import __version__
from ._library import F32, F64, I32, I64, LIST, PTR, U32, U64, TilecError, _load_library, version
from .comm import Comm
from .buffer import Buffer, Pool, TensorInfo, as_buffer, copy, fill, pointer_of, random_buffer, tensor_info
from .checks import RangeError, aligned, cdiv, check_fits, check_float, check_int, check_tensor, div, mod
from .debug import debug_kernels, debug_level
from .device import Device, device, stream_handle
from .graph import Graph, fast_call, fast_entry
from .kernel import GenericKernel, Kernel, TensorList
from .module import Externs, Module, load

__all__ = ["__version__", "TilecError", "Comm", "RangeError", "Device", "Buffer", "Module", "Kernel", "GenericKernel", "TensorList", "Graph", "fast_call",
           "fast_entry", "load", "device", "pointer_of", "TensorInfo", "tensor_info", "as_buffer", "copy", "fill",
           "cdiv", "div", "mod", "aligned", "check_fits", "check_tensor", "check_int", "check_float", "Pool",
           "Externs", "random_buffer", "debug_kernels", "debug_level", "stream_handle", "version", "PTR", "LIST", "I32", "I64",
           "F32", "F64", "U32", "U64"]
