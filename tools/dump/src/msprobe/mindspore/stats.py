"""Tensor description and statistics, in float32 (``precision: low``) or float64 (``high``) or wider.

Two paths, chosen by where the tensor lives:

* CPU (MindSpore's CPU target): the tensor's memory is host memory, so the statistics are reductions of
  its host copy, taken when the entry is complete (``lazy``: one wait for the op pipeline per entry) or at
  once for tensors that may still change in place; ``precision`` means what it means for PyTorch CPU
  tensors: ``low`` accumulates float16/bfloat16/float32 in float32 (the dump's C pass, the PyTorch
  adapter's, so the same values give the same numbers), ``high`` and float64 tensors in float64.
  MindSpore's own CPU kernels would cost a PyNative op dispatch each and a pipeline wait anyway.
* Ascend / GPU: five reductions started on the device (max, min, mean, sum of squares, any-NaN) per
  tensor; :func:`stats_to_host` concatenates a whole batch and copies it to the host once. No norm
  kernel is used (``mint.norm`` has no CPU kernel and bf16 norms lose precision): the L2 norm is
  ``sqrt(sum(x*x))`` accumulated in float32, recomputed scaled by ``max|x|`` in the rare case the float32
  sum of squares overflows while the values are finite.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

import mindspore as ms
import numpy as np

from msprobe.dump import kernels
from msprobe.schema.dump import STAT_KEYS, max_min_record, stat_record

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
    return f"{kernels.crc32(np.ascontiguousarray(array).tobytes()) & 0xFFFFFFFF:08x}"


class StatHandle:
    """One tensor's statistics: final host values (CPU path) or a device vector still to read back."""

    __slots__ = ("values", "vector", "tensor", "md5", "precision")

    def __init__(self, values: Optional[Dict[str, Any]], vector: Any = None, tensor: Any = None,
                 md5: Optional[str] = None, precision: str = "low") -> None:
        self.values, self.vector, self.tensor, self.md5 = values, vector, tensor, md5
        self.precision = precision


def tensor_stats(tensor: Any, precision: str = "low", md5: bool = False, on_host: bool = True,
                 lazy: bool = False) -> StatHandle:
    """Statistics of one tensor: from host memory (``on_host``; with ``lazy``, when the batch is read, so
    the pipeline is waited for once per entry instead of once per tensor), else started on the device."""
    name = dtype_name(tensor)
    supported = name == "Bool" or name in _INT_TYPES or name in _FLOAT_TYPES
    if on_host and lazy and not md5:
        return StatHandle(None, None, tensor if supported and tensor.size else None, precision=precision)
    if on_host or md5 or name == "Bool":
        array = to_numpy(tensor) if (supported or md5) and tensor.size else None
        values = numpy_stats(array, precision) if supported and array is not None else dict.fromkeys(STAT_KEYS)
        return StatHandle(values, md5=crc32_hex(array) if md5 and array is not None else
                          ("00000000" if md5 else None))
    if not supported or tensor.size == 0:
        return StatHandle(dict.fromkeys(STAT_KEYS))
    wide = name in _INT_TYPES or name == "Float64" or precision == "high"
    x = tensor.astype(ms.float64 if wide else ms.float32)
    vector = ms.ops.stack([x.max(), x.min(), x.mean(), (x * x).sum(), (x != x).any().astype(x.dtype)])
    return StatHandle(None, vector.astype(ms.float64), x)


def numpy_stats(array: np.ndarray, precision: str = "low") -> Dict[str, Any]:
    """Max/Min/Mean/Norm of a host array with the format's rules (bool: any/all, no Mean/Norm)."""
    if array.dtype == np.bool_:
        return max_min_record(bool(array.any()), bool(array.all()))
    if array.dtype.kind not in "iuf":
        return dict.fromkeys(STAT_KEYS)
    if precision == "low" and array.dtype in _LOW_KINDS:
        return _low_stats(array)
    wide = array.astype(np.float64)  # host memory: float64 costs one copy and loses nothing
    with np.errstate(all="ignore"):
        amax, amin, mean = wide.max(), wide.min(), wide.mean()
        norm = _norm(wide)
    return stat_record(_number(amax), _number(amin), _number(mean), _number(norm))


_LOW_KINDS = {np.dtype(np.float16): kernels.F16, np.dtype(np.float32): kernels.F32,
              np.dtype(np.float64): kernels.F64}


def _low_stats(array: np.ndarray) -> Dict[str, Any]:
    """``precision: low`` of a float array, as the PyTorch adapter reduces a CPU tensor: the dump's C pass
    (float32 partial sums carried into float64; float64 arrays in float64), or, where it is not built,
    numpy accumulating in the array's float type (float16 widened to float32)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    kernel = kernels.loaded()
    if kernel is not None:
        amax, amin, total, squares = kernel.stats(flat.ctypes.data, flat.size, _LOW_KINDS[flat.dtype])
        norm = math.sqrt(squares)
    else:
        flat = flat.astype(np.float64 if flat.dtype == np.float64 else np.float32, copy=False)
        with np.errstate(all="ignore"):
            amax, amin, total = flat.max(), flat.min(), flat.sum(dtype=flat.dtype)
            norm = _norm(flat)
    return stat_record(_number(amax), _number(amin), _number(float(total) / flat.size), _number(norm))


def _norm(wide: np.ndarray) -> float:
    flat = wide.reshape(-1)
    squares = float(np.dot(flat, flat))
    if math.isinf(squares) and np.isfinite(flat).all():  # float32 overflow of the squares: scale first
        scale = float(np.abs(flat).max())
        scaled = flat / flat.dtype.type(scale)
        return scale * math.sqrt(float(np.dot(scaled, scaled)))
    return math.sqrt(squares) if not math.isnan(squares) else float("nan")


def stats_to_host(handles: Sequence[StatHandle]) -> List[Dict[str, Any]]:
    """One device-to-host copy for every device-side handle of the batch."""
    vectors = [h.vector for h in handles if h.vector is not None]
    host = np.zeros((0,))
    if vectors:
        host = (ms.ops.cat(vectors) if len(vectors) > 1 else vectors[0]).asnumpy()
    out: List[Dict[str, Any]] = []
    offset = 0
    for handle in handles:
        if handle.values is None and handle.vector is None:  # lazy host statistics
            stats = numpy_stats(to_numpy(handle.tensor), handle.precision) if handle.tensor is not None \
                else dict.fromkeys(STAT_KEYS)
        elif handle.vector is None:
            stats = dict(handle.values)
        else:
            stats = _device_values(host[offset:offset + 5], handle.tensor)
            offset += 5
        if handle.md5 is not None:
            stats["md5"] = handle.md5
        handle.tensor = handle.vector = None
        out.append(stats)
    return out


def _device_values(values: np.ndarray, tensor: Any) -> Dict[str, Any]:
    amax, amin, mean, squares, has_nan = (float(v) for v in values)
    if has_nan:  # numpy's answer: NaN everywhere (some device max/min kernels skip NaN)
        return dict.fromkeys(STAT_KEYS, float("nan"))
    if math.isinf(squares) and math.isfinite(amax) and math.isfinite(amin):
        scale = max(abs(amax), abs(amin))
        scaled = tensor / scale
        norm = scale * math.sqrt(float((scaled * scaled).sum().asnumpy()))
    else:
        norm = math.sqrt(squares)
    return stat_record(_number(amax), _number(amin), _number(mean), _number(norm))


def _number(value: Any) -> Optional[float]:
    number = float(value)
    return int(number) if number.is_integer() and abs(number) < 2 ** 53 else number
