"""Element types: sizes, the names other libraries give them (array
interface type strings, DLPack codes, torch dtypes), and the ranges of the
integer parameter kinds."""
from __future__ import annotations

from typing import Dict, Tuple

# name: (bytes, typestr, DLPack code, bits)
DTYPES: Dict[str, Tuple[int, str, int, int]] = {
    "f16": (2, "<f2", 2, 16), "bf16": (2, "<V2", 4, 16), "f32": (4, "<f4", 2, 32), "f64": (8, "<f8", 2, 64),
    "i8": (1, "|i1", 0, 8), "i16": (2, "<i2", 0, 16), "i32": (4, "<i4", 0, 32), "i64": (8, "<i8", 0, 64),
    "u8": (1, "|u1", 1, 8), "u16": (2, "<u2", 1, 16), "u32": (4, "<u4", 1, 32), "u64": (8, "<u8", 1, 64),
    "bool": (1, "|b1", 6, 8),
}

# tilec_dtype's order (include/tilec/types.h)
DT_ENUM = ["bool", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64"]

TYPESTRS = {v[1]: k for k, v in DTYPES.items() if k != "bf16"}
TORCH_NAMES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "int8": "i8",
               "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32",
               "uint64": "u64", "bool": "bool"}

I64_MAX = (1 << 63) - 1
# what each integer parameter kind holds
RANGES = {"i32": (-(1 << 31), (1 << 31) - 1), "u32": (0, (1 << 32) - 1),
          "i64": (-(1 << 63), I64_MAX), "u64": (0, (1 << 64) - 1),
          "i8": (-128, 127), "i16": (-(1 << 15), (1 << 15) - 1), "u8": (0, 255), "u16": (0, (1 << 16) - 1),
          "bool": (0, 1)}


def itemsize(dtype: str) -> int:
    """Bytes per element of `dtype`."""
    return DTYPES[dtype][0]
