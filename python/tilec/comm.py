"""Communicators for the collectives of graphs (all_reduce, all_gather,
reduce_scatter, broadcast) on NCCL, loaded at run time by libtilec
(runtime/comm.c: libnccl.so.2, or $TILEC_NCCL). One process per GPU: rank
0 makes a unique id (Comm.unique_id()), shares it (a file, a pipe,
torch.distributed.broadcast_object_list), and every rank makes
Comm(rank, world, id) and hands it to its graph module's set_comm()."""
from __future__ import annotations

import ctypes
import os
from typing import Any, Optional

from ._library import Owner, TilecError, lib

ID_BYTES = 128  # sizeof(ncclUniqueId)

# tilec_coll and tilec_redop (include/tilec/collective.h), in their order
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
REDOPS = ("sum", "prod", "max", "min", "avg")


def _fail(st: int, err: Any) -> None:
    if st != 0:
        raise TilecError(err.value.decode(errors="replace") or lib().tilec_rt_status_string(st).decode())


class Comm(Owner):
    """One rank of a communicator of `world` ranks, on `device` (a
    tilec.Device or its index; None: device 0). `library` names the NCCL
    library (None: $TILEC_NCCL, else libnccl.so.2)."""

    def __init__(self, rank: int, world: int, unique_id: bytes, device: Any = None, library: Optional[str] = None):
        from .device import Device, device as device_of
        if len(unique_id) != ID_BYTES:
            raise ValueError(f"a unique id is {ID_BYTES} bytes, not {len(unique_id)} (Comm.unique_id() makes one)")
        dev = device if isinstance(device, Device) else device_of(device or 0)
        err = ctypes.create_string_buffer(1024)
        h = ctypes.c_void_p()
        self._h = None
        self.device = dev
        _fail(lib().tilec_comm_new(dev._h, _lib_name(library), rank, world, bytes(unique_id), ctypes.byref(h), err,
                                   len(err)), err)
        self._h = h
        self.rank: int = lib().tilec_comm_rank(h)
        self.world: int = lib().tilec_comm_world(h)

    @staticmethod
    def unique_id(library: Optional[str] = None) -> bytes:
        """A new unique id (ncclGetUniqueId): make it on one rank, share it."""
        buf = ctypes.create_string_buffer(ID_BYTES)
        err = ctypes.create_string_buffer(1024)
        _fail(lib().tilec_comm_unique_id(_lib_name(library), buf, err, len(err)), err)
        return buf.raw

    def register(self, externs: Any, symbol: str, coll: str, op: str, axis: int, root: int, where: str) -> None:
        """Put one collective on a tilec.Externs registry under `symbol`
        (the generated set_comm does, for each collective line)."""
        err = ctypes.create_string_buffer(1024)
        _fail(lib().tilec_comm_register(self._h, externs._h, symbol.encode(), COLLECTIVES.index(coll),
                                        REDOPS.index(op), axis, root, where.encode(), err, len(err)), err)

    def close(self) -> None:
        if getattr(self, "_h", None):
            lib().tilec_comm_free(self._h)
            self._h = None

    def __repr__(self) -> str:
        return f"<tilec.Comm rank {self.rank} of {self.world}>"


def _lib_name(library: Optional[str]) -> Optional[bytes]:
    return os.fsencode(library) if library else None
