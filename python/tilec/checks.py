"""Argument checks and size arithmetic shared by Kernel calls and the
generated wrappers: integer ranges, tensor byte sizes, and / and % that
truncate as C does."""
from __future__ import annotations

from typing import Any, Sequence

from .dtypes import DTYPES, I64_MAX, RANGES


F32_MAX = 3.4028234663852886e38


class RangeError(OverflowError, ValueError):
    """An integer that does not fit the type it is passed as (an
    OverflowError; also a ValueError, what wrappers raised before)."""


def cdiv(a: int, b: int) -> int:
    """a / b rounded up, for any a and b > 0 (docs/language.md 7.7): spelled
    as the C wrapper's tl_cdiv, div(a, b) plus 1 when the remainder is
    positive; ValueError for b <= 0, as the C wrapper fails."""
    if b <= 0:
        raise ValueError(f"cdiv({a}, {b}): the divisor must be positive")
    return div(a, b) + (mod(a, b) > 0)


def div(a: int, b: int) -> int:
    """a / b truncated toward zero, as C and the size texts of a graph divide."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def mod(a: int, b: int) -> int:
    """The remainder of div(a, b): the sign of a, as in C."""
    return a - b * div(a, b)


def aligned(nbytes: int, to: int = 256) -> int:
    """nbytes rounded up to a multiple of `to` (workspace offsets)."""
    return -(-nbytes // to) * to


def check_fits(graph: str, what: str, value: int, kind: str = "i64") -> int:
    """A size a generated wrapper computed: RangeError (an OverflowError and
    a ValueError) unless it fits `kind` (Python ints do not overflow, the
    kernels' parameters do)."""
    lo, hi = RANGES[kind]
    if not lo <= value <= hi:
        raise RangeError(f"{graph}: {what} is {value}, which does not fit {kind}")
    return value


def check_tensor(graph: str, name: str, shape: Sequence[int], dtype: str) -> None:
    """ValueError unless a tensor of `shape` and `dtype` has no negative
    dimension and at most 2**63 - 1 bytes."""
    n = DTYPES[dtype][0]
    for d in shape:
        n *= d
    if any(d < 0 for d in shape):
        raise ValueError(f"{graph}: tensor {name} ({dtype}{list(shape)}) has a negative dimension")
    if n > I64_MAX:
        raise ValueError(f"{graph}: tensor {name} ({dtype}{list(shape)}) needs {n} bytes, more than 2**63 - 1")


def check_int(owner: str, param: str, kind: str, value: Any) -> int:
    """Scalar argument `param` of `owner` as an integer of `kind` ("i32",
    ...): TypeError for what is not a whole number (a float, a string),
    RangeError (an OverflowError) for one that does not fit; never
    truncated (ctypes would keep the low bits: 2**40 + 5 would run as 5)."""
    if type(value) is int:  # the common case, on every launch
        v = value
    elif hasattr(value, "__index__") and not isinstance(value, float):
        v = value.__index__()
    else:
        raise TypeError(f"{owner}: parameter '{param}' is {kind}, an integer; got {type(value).__name__} {value!r}")
    lo, hi = RANGES[kind]
    if not lo <= v <= hi:
        raise RangeError(f"{owner}: parameter '{param}' is {kind} ({lo} .. {hi}); got {v}, which does not fit")
    return v


def check_float(owner: str, param: str, kind: str, value: Any) -> float:
    """Scalar argument `param` of `owner` as a float: TypeError unless it
    is a real number."""
    if type(value) is float or type(value) is int:
        v = float(value)
    else:
        try:
            v = float(value.__float__())
        except (AttributeError, TypeError, ValueError):
            raise TypeError(f"{owner}: parameter '{param}' is {kind}, a number; got {type(value).__name__} {value!r}")
    if kind == "f32" and F32_MAX < abs(v) < float("inf"):
        raise RangeError(f"{owner}: parameter '{param}' is f32 (largest {F32_MAX:.7g}); got {v!r}, which does not fit")
    return v
