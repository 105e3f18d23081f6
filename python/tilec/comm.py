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
        self.shared = False  # from_torch(share=True) on the group's own ncclComm_t
        self.share_note = ""  # why from_torch(share=True) made a new communicator instead

    @classmethod
    def adopt(cls, nccl_comm: int, device: Any = None, library: Optional[str] = None) -> "Comm":
        """Wrap a communicator made elsewhere (an ncclComm_t as an int, made
        by the same NCCL library as `library` loads, in this process: a
        communicator is a pointer into that library's state); rank and world
        are asked of NCCL. close() leaves it to its owner, which must keep it
        until then."""
        from .device import Device, device as device_of
        if not nccl_comm:
            raise ValueError("Comm.adopt: the NCCL communicator is NULL")
        c = cls.__new__(cls)
        c._h = None
        c.device = device if isinstance(device, Device) else device_of(device or 0)
        err = ctypes.create_string_buffer(1024)
        h = ctypes.c_void_p()
        _fail(lib().tilec_comm_adopt(_lib_name(library), ctypes.c_void_p(nccl_comm), ctypes.byref(h), err, len(err)),
              err)
        c._h = h
        c.rank, c.world = lib().tilec_comm_rank(h), lib().tilec_comm_world(h)
        c.shared, c.share_note = True, ""
        return c

    @property
    def nccl_version(self) -> int:
        """NCCL's version as ncclGetVersion gives it (22809 for 2.28.9)."""
        return lib().tilec_comm_nccl_version(self._h)

    @property
    def stream(self) -> int:
        """The communication stream (an int CUstream) the overlapped
        collectives run on; 0 before the first one ran."""
        return lib().tilec_comm_stream(self._h) or 0

    @staticmethod
    def unique_id(library: Optional[str] = None) -> bytes:
        """A new unique id (ncclGetUniqueId): make it on one rank, share it."""
        buf = ctypes.create_string_buffer(ID_BYTES)
        err = ctypes.create_string_buffer(1024)
        _fail(lib().tilec_comm_unique_id(_lib_name(library), buf, err, len(err)), err)
        return buf.raw

    @classmethod
    def from_torch(cls, group: Any = None, device: Any = None, library: Optional[str] = None,
                   share: bool = False) -> "Comm":
        """The communicator of a torch.distributed process group (None: the
        default group), for this process's rank in it: rank 0 of the group
        makes a unique id, torch.distributed.broadcast_object_list hands it
        to the others over the group, and every rank joins (collective: all
        ranks of the group call it, in the same order as their other
        collectives). The result is a new NCCL communicator of the same
        ranks; it lives until close(). device: None for
        torch.cuda.current_device().

        share=True uses the group's own ncclComm_t instead (adopt()), so
        tilec's collectives and torch's run on one communicator (what
        test_gpu_nccl.py --bench compares): torch hands it out only through
        a private method (the NCCL backend's _comm_ptr(), made at the
        group's first collective, which this runs when there was none), and
        it must come from the NCCL library that tilec loads, already in this
        process (`library`, else $TILEC_NCCL, else the libnccl.so* torch
        mapped). When any of that fails it falls back to a new communicator
        and says why in share_note; `shared` tells which it is."""
        import torch
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_initialized():
            raise TilecError("Comm.from_torch: torch.distributed is not initialized "
                             "(call torch.distributed.init_process_group first)")
        rank, world = dist.get_rank(group), dist.get_world_size(group)
        if rank < 0:
            raise TilecError("Comm.from_torch: this process is not a member of the group")
        note = ""
        if share:
            dev = torch.cuda.current_device() if device is None else getattr(device, "index", device)
            ptr, lib_path, note = _torch_comm(torch, dist, group, dev, library)
            if ptr:
                c = cls.adopt(ptr, dev, lib_path)
                want = _nccl_code(getattr(getattr(torch.cuda, "nccl", None), "version", lambda: None)())
                if (c.rank, c.world) == (rank, world) and (want is None or want == c.nccl_version):
                    return c
                note = (f"the group's communicator is rank {c.rank} of {c.world} on NCCL {c.nccl_version}, "
                        f"torch says rank {rank} of {world} on {want}")
                c.close()
        ids = [cls.unique_id(library) if rank == 0 else None]
        dist.broadcast_object_list(ids, src=dist.get_global_rank(group, 0) if group is not None else 0, group=group)
        if not isinstance(ids[0], (bytes, bytearray)) or len(ids[0]) != ID_BYTES:
            raise TilecError("Comm.from_torch: rank 0 of the group sent no unique id")
        c = cls(rank, world, bytes(ids[0]), torch.cuda.current_device() if device is None else device, library)
        c.share_note = note
        return c

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


def _nccl_code(v: Any) -> Optional[int]:
    """torch.cuda.nccl.version()'s (2, 28, 9) as ncclGetVersion's 22809."""
    if isinstance(v, tuple) and len(v) >= 3:
        return v[0] * 10000 + v[1] * 100 + v[2]
    return v if isinstance(v, int) else None


def _mapped(maps: str = "/proc/self/maps") -> list:
    """The files this process has mapped (real paths, in order, once each)."""
    seen: list = []
    try:
        with open(maps) as f:
            for line in f:
                parts = line.split(None, 5)
                p = parts[5].strip() if len(parts) == 6 else ""
                if p.startswith("/") and p not in seen:
                    seen.append(p)
    except OSError:
        pass
    return [os.path.realpath(p) for p in seen]


def _torch_comm(torch: Any, dist: Any, group: Any, dev: int, library: Optional[str]):
    """(the group's ncclComm_t as an int or 0, the NCCL library to load for
    it, why not when 0) for Comm.from_torch(share=True)."""
    try:
        pg = group if group is not None else dist.distributed_c10d._get_default_group()
        backend = pg._get_backend(torch.device("cuda", dev))
        get = getattr(backend, "_comm_ptr", None)
        if get is None:
            return 0, None, "this torch's NCCL backend has no _comm_ptr()"
        ptr = get()
        if not ptr:  # made at the group's first collective
            dist.all_reduce(torch.zeros(1, device=torch.device("cuda", dev)), group=group)
            torch.cuda.synchronize(dev)
            ptr = get()
    except Exception as e:  # noqa: BLE001 -- a private API: any failure means "make a new one"
        return 0, None, f"cannot read the group's communicator: {type(e).__name__}: {e}"
    if not ptr:
        return 0, None, "the group has no NCCL communicator on this device"
    mapped = _mapped()
    want = library or os.environ.get("TILEC_NCCL") or ""
    if want and os.path.sep in want:  # a bare name: the libnccl.so* torch mapped
        if os.path.realpath(want) not in mapped:
            return 0, None, f"{want} is not the NCCL library torch loaded in this process"
        return ptr, want, ""
    ours = [p for p in mapped if os.path.basename(p).startswith("libnccl.so")]
    if len(ours) != 1:
        return 0, None, (f"torch has {len(ours)} NCCL libraries mapped ({', '.join(ours) or 'none'}: "
                         "statically linked?); pass library=")
    return ptr, ours[0], ""
