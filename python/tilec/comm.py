"""Communicators for the collectives of graphs (all_reduce, all_gather,
reduce_scatter, broadcast) on NCCL, loaded at run time by libtilec
(runtime/comm.c: libnccl.so.2, or $TILEC_NCCL). One process per GPU: rank
0 makes a unique id (Comm.unique_id()), shares it (a file, a pipe,
torch.distributed.broadcast_object_list), and every rank makes
Comm(rank, world, id) and hands it to its graph module's set_comm().
A torch program passes its process group instead: Comm.from_torch(group)."""
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

    @classmethod
    def from_torch(cls, group: Any = None, device: Any = None, library: Optional[str] = None) -> "Comm":
        """The communicator of a torch.distributed process group (None: the
        default group), for this process's rank in it: rank 0 of the group
        makes a unique id, torch.distributed.broadcast_object_list hands it
        to the others over the group, and every rank joins (collective: all
        ranks of the group call it, in the same order as their other
        collectives). The result is a new NCCL communicator of the same
        ranks, not the group's own ncclComm_t (torch exposes that through no
        public API); it lives until close(). device: None for
        torch.cuda.current_device()."""
        import torch
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_initialized():
            raise TilecError("Comm.from_torch: torch.distributed is not initialized "
                             "(call torch.distributed.init_process_group first)")
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        if rank < 0:
            raise TilecError("Comm.from_torch: this process is not a member of the group")
        ids = [cls.unique_id(library) if rank == 0 else None]
        dist.broadcast_object_list(ids, src=dist.get_global_rank(group, 0) if group is not None else 0, group=group)
        if not isinstance(ids[0], (bytes, bytearray)) or len(ids[0]) != ID_BYTES:
            raise TilecError("Comm.from_torch: rank 0 of the group sent no unique id")
        return cls(rank, world, bytes(ids[0]), torch.cuda.current_device() if device is None else device, library)

    def register(self, externs: Any, symbol: str, coll: str, op: str, axis: int, root: int, where: str,
                 wait: Optional[str] = None) -> None:
        """Put one collective on a tilec.Externs registry under `symbol`
        (the generated set_comm does, for each collective line); with
        `wait`, it runs on the communicator's own stream and the symbol
        `wait` makes the caller's stream wait for it (overlap)."""
        err = ctypes.create_string_buffer(1024)
        if wait is None:
            _fail(lib().tilec_comm_register(self._h, externs._h, symbol.encode(), COLLECTIVES.index(coll),
                                            REDOPS.index(op), axis, root, where.encode(), err, len(err)), err)
        else:
            _fail(lib().tilec_comm_register_async(self._h, externs._h, symbol.encode(), wait.encode(),
                                                  COLLECTIVES.index(coll), REDOPS.index(op), axis, root,
                                                  where.encode(), err, len(err)), err)

    def set_overlap(self, on: bool) -> None:
        """Overlap on (the default) or off: off, the graph's stream waits for
        each collective as soon as it is enqueued (to time or rule out
        overlap; TILEC_COMM_OVERLAP=0 makes off the default)."""
        lib().tilec_comm_set_overlap(self._h, 1 if on else 0)

    def close(self) -> None:
        if getattr(self, "_h", None):
            lib().tilec_comm_free(self._h)
            self._h = None

    def __repr__(self) -> str:
        return f"<tilec.Comm rank {self.rank} of {self.world}>"


def _lib_name(library: Optional[str]) -> Optional[bytes]:
    return os.fsencode(library) if library else None
