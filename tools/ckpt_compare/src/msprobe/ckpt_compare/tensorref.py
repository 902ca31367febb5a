"""Where a tensor of a checkpoint lies on disk, and the element types torch writes."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Tuple

# torch dtype name → element code; "bf16" and the float8 / quantized codes have no numpy dtype.
TORCH_DTYPES = {
    "float32": "f4", "float": "f4", "float64": "f8", "double": "f8", "float16": "f2", "half": "f2",
    "bfloat16": "bf16", "int64": "i8", "long": "i8", "int32": "i4", "int": "i4", "int16": "i2",
    "short": "i2", "int8": "i1", "uint8": "u1", "bool": "b1", "uint16": "u2", "uint32": "u4", "uint64": "u8",
    "complex64": "c8", "cfloat": "c8", "complex128": "c16", "cdouble": "c16",
    "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2", "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz", "float8_e8m0fnu": "float8_e8m0fnu",
}
# Typed storage classes of torch.save (older files, and complex / quantized tensors today).
STORAGES = {
    "FloatStorage": "f4", "DoubleStorage": "f8", "HalfStorage": "f2", "BFloat16Storage": "bf16",
    "LongStorage": "i8", "IntStorage": "i4", "ShortStorage": "i2", "CharStorage": "i1",
    "ByteStorage": "u1", "BoolStorage": "b1", "ComplexFloatStorage": "c8", "ComplexDoubleStorage": "c16",
    "QInt8Storage": "qint8", "QUInt8Storage": "quint8", "QInt32Storage": "qint32",
    "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4",
}
ITEMSIZE = {"f4": 4, "f8": 8, "f2": 2, "bf16": 2, "i8": 8, "i4": 4, "i2": 2, "i1": 1, "u1": 1, "b1": 1,
            "u2": 2, "u4": 4, "u8": 8, "c8": 8, "c16": 16, "float8_e4m3fn": 1, "float8_e5m2": 1,
            "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1, "qint8": 1, "quint8": 1,
            "qint32": 4, "quint4x2": 1, "quint2x4": 1}


@dataclass(frozen=True)
class TensorRef:
    """Where one tensor's elements lie on disk (nothing is read until a block is requested)."""
    path: Path
    offset: int
    """Byte offset of element 0 of the tensor inside ``path``."""
    dtype: str
    """Element code (a value of ``TORCH_DTYPES``)."""
    shape: Tuple[int, ...]
    stride: Tuple[int, ...]

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def contiguous(self) -> bool:
        expected = 1
        for size, stride in zip(reversed(self.shape), reversed(self.stride)):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True
