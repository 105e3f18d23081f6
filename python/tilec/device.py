"""Devices and streams: a tilec runtime handle per CUDA device, and the
stream a launch goes on (the caller's, torch's current stream, or the
legacy default stream)."""
from __future__ import annotations

import ctypes
import os
import sys
from typing import Any, Dict, Optional

from ._library import _Props, lib, Owner, TilecError


class Device(Owner):
    """One CUDA device through the tilec runtime (the driver loaded at run
    time; `driver` or $TILEC_CUDA_DRIVER names another driver library, as
    the tests do with their fake one)."""

    def __init__(self, index: int = 0, driver: Optional[str] = None):
        L = lib()
        handle = ctypes.c_void_p()
        driver = driver or os.environ.get("TILEC_CUDA_DRIVER") or None
        if driver:
            st = L.tilec_rt_open_driver(os.fsencode(driver), index, ctypes.byref(handle))
        else:
            st = L.tilec_rt_open(index, ctypes.byref(handle))
        if st != 0:
            msg = L.tilec_rt_last_error(handle) or L.tilec_rt_status_string(st)
            L.tilec_rt_close(handle)
            raise TilecError(msg.decode())
        self._h = handle
        self.index = index
        props = _Props()
        self._check(L.tilec_rt_device_info(handle, ctypes.byref(props)))
        self.name: str = props.name.decode()
        self.arch: str = props.arch.decode()
        self.multiprocessors: int = props.multiprocessors
        self.l2_bytes: int = props.l2_bytes

    def _check(self, st: int) -> None:
        if st != 0:
            L = lib()
            raise TilecError(L.tilec_rt_last_error(self._h).decode() or L.tilec_rt_status_string(st).decode())

    def synchronize(self) -> None:
        """Wait for all work on the device (tests and benchmarks; calls never do)."""
        self._check(lib().tilec_rt_synchronize(self._h))

    def close(self) -> None:
        if getattr(self, "_h", None):
            lib().tilec_rt_close(self._h)
            self._h = None

    def __repr__(self) -> str:
        return f"<tilec.Device {self.index}: {self.name} ({self.arch})>"


_devices: Dict[int, Device] = {}


def device(index: int = 0) -> Device:
    """The process's device `index`, opened once."""
    d = _devices.get(index)
    if d is None:
        d = _devices[index] = Device(index)
    return d


def torch_module() -> Any:
    """torch when it is already imported (never imported here), else None."""
    return sys.modules.get("torch")


def stream_handle(stream: Any, device_index: int = 0, use_torch: bool = False) -> Optional[int]:
    """The CUstream a launch goes on, as an int (None: the legacy default
    stream). `stream` may be an int (a CUstream), a torch.cuda.Stream or
    torch.cuda.ExternalStream (.cuda_stream), a CuPy stream (.ptr), or None:
    then torch's current stream on the device when use_torch, else None."""
    if stream is None:
        if not use_torch:
            return None
        torch = torch_module()
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:  # an int, no Stream object made
            return raw(device_index) or None
        return torch.cuda.current_stream(device_index).cuda_stream or None
    if isinstance(stream, int):
        return stream or None
    for attr in ("cuda_stream", "ptr", "handle"):
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h or None
    raise TypeError(f"stream must be an int (a CUstream), a torch or CuPy stream, or None; "
                    f"not {type(stream).__name__}")
