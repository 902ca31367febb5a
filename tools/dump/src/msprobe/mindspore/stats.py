"""Tensor description and statistics computed on the device, read back to the host in batches.

Statistics accumulate in float32 (``precision: low``) or float64 (``high``); integers always use float64
so large int64 values stay exact. No MindSpore norm kernel is used (``mint.norm`` has no CPU kernel):
the L2 norm is ``amax * sqrt(sum((x / amax)^2))``, which neither overflows nor underflows in float32.
Each tensor's four numbers stay on the device until :meth:`StatBatch.resolve` concatenates every pending
vector and copies them to the host in one transfer.
"""
from __future__ import annotations

import zlib
from typing import Any, Dict, List, Optional

import mindspore as ms
import numpy as np
from mindspore import ops

_INT_TYPES = ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64")
_FLOAT_TYPES = ("Float16", "Float32", "Float64", "BFloat16")


def dtype_name(tensor: Any) -> str:
    """MindSpore's spelling: ``Float32``, ``BFloat16``, ``Int64``, ``Bool``."""
    return str(tensor.dtype)


def to_numpy(tensor: Any) -> np.ndarray:
    """Host copy; bfloat16 (unknown to numpy) is widened to float32 on the device first."""
    if dtype_name(tensor) == "BFloat16":
        tensor = tensor.astype(ms.float32)
    return tensor.asnumpy()


def crc32_hex(array: np.ndarray) -> str:
    return f"{zlib.crc32(np.ascontiguousarray(array).tobytes()) & 0xFFFFFFFF:08x}"


class PendingStats:
    """Placeholder for a record's statistics until the batch is read back."""

    __slots__ = ("record", "index", "kind")

    def __init__(self, record: Dict[str, Any], index: int, kind: str) -> None:
        self.record, self.index, self.kind = record, index, kind


class StatBatch:
    """Device-side statistic vectors of many tensors, copied to the host together."""

    def __init__(self, precision: str = "low") -> None:
        self._float = ms.float64 if precision == "high" else ms.float32
        self._vectors: List[Any] = []
        self._pending: List[PendingStats] = []

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, tensor: Any, record: Dict[str, Any]) -> None:
        """Fill ``record``'s Max/Min/Mean/Norm later (set to None now, the value for empty tensors)."""
        for key in ("Max", "Min", "Mean", "Norm"):
            record[key] = None
        name = dtype_name(tensor)
        if tensor.size == 0 or not (name == "Bool" or name in _INT_TYPES or name in _FLOAT_TYPES):
            return  # empty or complex: no statistics
        if name == "Bool":
            vector = ops.stack([tensor.any().astype(ms.float32), tensor.all().astype(ms.float32)])
            kind = "bool"
        else:
            x = tensor.astype(ms.float64 if name in _INT_TYPES or name == "Float64" else self._float)
            vector = _float_stats(x)
            kind = "number"
        self._pending.append(PendingStats(record, len(self._vectors), kind))
        self._vectors.append(vector.astype(ms.float64).reshape((-1,)))

    def resolve(self) -> None:
        """One device-to-host copy for every pending tensor; fills the records in place."""
        if not self._pending:
            return
        host = ops.cat(self._vectors).asnumpy() if len(self._vectors) > 1 else self._vectors[0].asnumpy()
        offsets = np.cumsum([0] + [int(v.shape[0]) for v in self._vectors])
        for item in self._pending:
            values = host[offsets[item.index]:offsets[item.index + 1]]
            if item.kind == "bool":
                item.record["Max"], item.record["Min"] = bool(values[0]), bool(values[1])
            else:
                for key, value in zip(("Max", "Min", "Mean", "Norm"), values):
                    item.record[key] = _number(value)
        self._vectors.clear()
        self._pending.clear()


def _float_stats(x: Any) -> Any:
    """[max, min, mean, norm] of a float tensor; any NaN makes all four NaN (numpy's answer)."""
    amax = ops.abs(x).max()
    finite_scale = ops.logical_and(ops.isfinite(amax), amax > 0)
    scale = ops.select(finite_scale, amax, ops.ones_like(amax))
    scaled = x / scale
    norm = ops.select(finite_scale, ops.sqrt((scaled * scaled).sum()) * scale, amax)
    vector = ops.stack([x.max(), x.min(), x.mean(), norm])
    has_nan = ops.isnan(x).any()
    return ops.select(has_nan.broadcast_to(vector.shape), ops.fill(vector.dtype, vector.shape, float("nan"))
                      if hasattr(ops, "fill") else vector * float("nan"), vector)


def _number(value: Any) -> Optional[float]:
    number = float(value)
    return int(number) if number.is_integer() and abs(number) < 2 ** 53 else number
