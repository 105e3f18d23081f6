"""The debug printer of generated wrappers (TILEC_DEBUG_PRINT): kernels
that report their launches, print statistics of their buffers, or save
them."""
from __future__ import annotations

import os
import sys
from typing import Any, Dict

from .buffer import Buffer


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


def debug_level() -> int:
    """TILEC_DEBUG_PRINT as a level: 0 (off), 1, 2 or 3."""
    try:
        level = int(os.environ.get("TILEC_DEBUG_PRINT", "0") or 0)
    except ValueError:
        level = 0
    return level if level in (1, 2, 3) else 0


def debug_kernels(kernels: Dict[str, Any]) -> Dict[str, Any]:
    """The kernels of a wrapper as they should run, from the environment
    (read once, when the wrapper loads): TILEC_DEBUG_PRINT unset or 0 gives
    `kernels` back (no cost per call); 3 prints each kernel's name before
    its launch; 2 also prints numel, min, max, mean, std and the NaN and
    inf counts of every buffer argument after the launch; 1 saves every
    buffer argument before and after the launch under TILEC_DEBUG_DIR
    (./tilec_debug). TILEC_DEBUG_KERNELS=a,b limits it to those kernels."""
    level = debug_level()
    if not level:
        return kernels
    only = {k for k in os.environ.get("TILEC_DEBUG_KERNELS", "").split(",") if k}
    directory = os.environ.get("TILEC_DEBUG_DIR") or "tilec_debug"
    return {name: _DebugKernel(k, level, directory) if not only or name in only else k
            for name, k in kernels.items()}
