"""Statistics of torch tensors: reduced on the tensor's own device, brought to the host in batches."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence, Tuple

import numpy
import torch

from msprobe.dump import kernels
from msprobe.schema.dump import STAT_KEYS, max_min_record, stat_record

from .checksum import has_bytes, hex_word, xor_host, xor_on_device
from .content_cache import dense

_NULL = dict.fromkeys(STAT_KEYS)
KINDS = {torch.bool: "bool"}
for _dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
    KINDS[_dtype] = "float"
for _dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
    KINDS[_dtype] = "int"
_WIDE_NUMEL = 1 << 16  # above this, float32 accumulation on the CPU drifts (1e6 x 1000.0: norm off by 2e-4)
KERNEL_NUMEL = 1 << 22  # above this, torch's multi-threaded reductions beat one C pass
KERNEL_KINDS = {torch.float32: kernels.F32, torch.bfloat16: kernels.BF16, torch.float16: kernels.F16,
                torch.float64: kernels.F64}
KERNEL_INT_KINDS = {torch.int64: kernels.I64, torch.int32: kernels.I32, torch.int16: kernels.I16,
                    torch.int8: kernels.I8, torch.uint8: kernels.U8, torch.bool: kernels.BOOL}


class Handle:
    __slots__ = ("kind", "values", "numel", "crc", "squared", "ready")

    def __init__(self, kind: str, values: Tuple[Any, ...], numel: int, crc: Any, squared: bool = False,
                 ready: Any = None) -> None:
        self.kind, self.values, self.numel, self.crc = kind, values, numel, crc
        self.squared = squared
        """True: the 4th value is the sum of squares (square-rooted on the host), not the norm."""
        self.ready = ready
        """Statistics already on the host (CPU tensors): the final dict, no values to transfer."""


_NUMPY_OK = (torch.float16, torch.float32, torch.float64, torch.uint8, torch.int8, torch.int16, torch.int32,
             torch.int64)


def reduce(tensor: torch.Tensor, precision: str, md5: bool) -> Handle:
    """The statistics of ``tensor``: final host values for a CPU tensor (``Handle.ready``), else started on
    its device (``reduce_on_device``) for ``to_host`` to bring back with a batch."""
    if not tensor.is_cpu:
        return reduce_on_device(tensor, precision, md5)
    handle = _reduce(tensor, precision, md5, True)
    if handle.ready is None:  # the CPU computed them already: read now, no device to wait for
        handle.ready = to_host([handle])[0]
    return handle


def reduce_on_device(tensor: torch.Tensor, precision: str, md5: bool) -> Handle:
    """Max, Min, sum and L2 norm as 0-d tensors on the tensor's own device, without a host sync."""
    return _reduce(tensor, precision, md5, False)


def _reduce(tensor: torch.Tensor, precision: str, md5: bool, cpu: bool) -> Handle:
    """Max, Min, sum and L2 norm: on the host where ``cpu``, else on the tensor's device.

    Integer tensors get Max and Min only, as integers (Mean and Norm null, as msprobe writes them).
    Accumulation: float32 (cascade sums on the CPU, tree reductions on accelerators), float64 for
    float64 tensors and ``precision: high``; large CPU tensors get their norm from a cascade
    sum of squares (torch's CPU norm kernel drifts: 1e6 x 1000.0 gives 999765). On the CPU, dense float
    tensors of up to 4M elements take one C pass (``msprobe.dump.kernels``: float32 partial sums of 16
    elements carried into float64; float64 tensors in float64 throughout; ``precision: high`` keeps the
    all-float64 path), else Max/Min come from numpy (faster than torch's single-thread reduction).
    Mean = sum / numel on the host.
    """
    t = tensor  # detached only where torch or numpy need it: the C pass reads the memory directly
    if t.is_meta or t.layout != torch.strided:  # no values here (sparse: its dense values are not the data)
        return Handle("none", (), t.numel(), None)
    if t.is_neg():  # a lazy negation (autograd makes them): memory and numpy() would see the values unnegated
        t = t.resolve_neg()
    crc = _crc(t.detach() if t.requires_grad else t) if md5 else None
    numel = t.numel()
    dtype = t.dtype
    kind = KINDS.get(dtype)
    if numel == 0 or kind is None:
        return Handle("none", (), numel, crc)
    if kind == "int" and t.dim() == 0:  # msprobe: a 0-d integer is its own Max, Min, Mean and Norm
        if cpu:
            return Handle("host", (), numel, crc, ready=_int_stats(int(t.item()), None, scalar=True))
        return Handle("int0", (t,), numel, crc)
    if kind == "int" and not cpu:  # msprobe: an integer tensor's Max and Min as integers, no Mean or Norm
        low, high = torch.aminmax(t)
        return Handle("int", (high, low), numel, crc)
    if cpu and dtype in KERNEL_INT_KINDS and numel <= KERNEL_NUMEL:
        ready = _kernel_int_stats(t, dtype, numel)
        if ready is not None:
            return Handle("host", (), numel, crc, ready=ready)
    if kind == "bool":
        return Handle("bool", (t.any(), t.all()), numel, crc)
    if cpu and numel <= KERNEL_NUMEL and kind == "float" and (precision != "high" or dtype == torch.float64):
        ready = _kernel_stats(t, dtype, numel, rows=not md5)
        if ready is not None:
            return Handle("host", (), numel, crc, ready=ready)
    if t.requires_grad:
        t = t.detach()
    if cpu and numel <= _WIDE_NUMEL and (dtype in _NUMPY_OK or dtype == torch.bfloat16):
        return Handle("host", (), numel, crc, ready=_host_stats(t, kind, dtype, numel, precision))
    if cpu and dtype in _NUMPY_OK:
        array = t.numpy()
        high, low = array.max(), array.min()
    else:
        low, high = torch.aminmax(t)
    if kind == "int":
        return Handle("host", (), numel, crc, ready=_int_stats(int(high), int(low)))
    if dtype == torch.float64 or precision == "high":
        wide = t.to(torch.float64)
        return Handle("num", (high, low, wide.sum(), torch.linalg.vector_norm(wide)), numel, crc)
    if cpu and numel > _WIDE_NUMEL:
        flat = t.to(torch.float32)
        return Handle("num", (high, low, flat.sum(), torch.sum(flat * flat)), numel, crc, squared=True)
    return Handle("num", (high, low, t.sum(dtype=torch.float32), torch.linalg.vector_norm(t, dtype=torch.float32)),
                  numel, crc)


def xor(tensor: torch.Tensor) -> Handle:
    """``summary_mode: xor``: a host value for a CPU tensor, else folded on its device (``checksum.py``)."""
    if tensor.is_cpu or not has_bytes(tensor):
        return Handle("host", (), tensor.numel(), None, ready={"md5": xor_host(tensor)})
    return Handle("xor", (xor_on_device(tensor),), tensor.numel(), None)


def _kernel_stats(t: torch.Tensor, dtype: Any, numel: int, rows: bool) -> Any:
    """One C pass over a dense CPU block (float32, bf16, float16, float64), or over its rows (``rows``: a
    tensor whose last dimension has stride 1); None where the kernels are not built or the elements are
    neither. (CRC-32 follows the element order, so md5 mode takes no rows.)"""
    kernel = kernels.loaded()
    if kernel is None:
        return None
    if t.is_contiguous() or dense(t):
        high, low, total, squares = kernel.stats(t.data_ptr(), numel, KERNEL_KINDS[dtype])
    elif rows and 2 <= t.dim() <= kernels.MAX_DIMS and t.stride(-1) == 1 and t.shape[-1] > 1:
        high, low, total, squares = kernel.row_stats(t.data_ptr(), KERNEL_KINDS[dtype], tuple(t.shape), t.stride())
    else:
        return None
    return stat_record(high, low, total / numel, math.sqrt(squares))


def _int_stats(high: int, low: Any, scalar: bool = False) -> Dict[str, Any]:
    """An integer tensor's statistics as msprobe writes them: Max and Min as integers, Mean and Norm null;
    a 0-d one (``scalar``): its value, four times."""
    if scalar:
        return stat_record(high, high, high, high)
    return max_min_record(high, low)


_EXACT = 1 << 53  # integers a double holds exactly


def _kernel_int_stats(t: torch.Tensor, dtype: Any, numel: int) -> Any:
    """Integers and bools in one C pass over their strides (Max/Min of the elements widened to float64,
    exact below 2**53; beyond, torch's own exact reduction), or None without the compiled kernel. Not
    numpy: the first numpy calls of a step (a token batch, a mask) are slow, their caches made cold by the
    step's own work."""
    kernel = kernels.loaded()
    if kernel is None or t.dim() > kernels.MAX_DIMS:
        return None
    values = kernel.int_stats(t.data_ptr(), KERNEL_INT_KINDS[dtype], tuple(t.shape), t.stride())
    if dtype == torch.bool:
        return max_min_record(values[0], values[1])
    high, low = values[0], values[1]
    if not (-_EXACT < low and high < _EXACT):
        low, high = torch.aminmax(t.detach() if t.requires_grad else t)
    return _int_stats(int(high), int(low))


_FLOAT32 = numpy.float32
_FLOAT64 = numpy.float64
_ONES32 = numpy.ones(_WIDE_NUMEL, dtype=_FLOAT32)
_dot = numpy.dot
# the ufuncs' reduce directly: ndarray.max/min/sum go through numpy's Python wrappers
_max_of, _min_of, _sum_of = numpy.maximum.reduce, numpy.minimum.reduce, numpy.add.reduce


def _host_stats(t: torch.Tensor, kind: str, dtype: Any, numel: int, precision: str) -> Dict[str, Any]:
    """A CPU tensor of at most ``_WIDE_NUMEL`` elements, reduced with numpy straight to host numbers:
    a handful of numpy calls instead of four torch ops and four ``item()`` (the bulk of a step's dump
    cost on small models). Accumulation: float32 (BLAS dots of at most 64k products for the sum and the
    norm), float64 for float64 and ``precision: high``; integers: Max and Min only."""
    if dtype == torch.bfloat16:
        array = t.to(torch.float32).numpy()  # numpy has no bfloat16; the widening is exact
    else:
        array = t.numpy()
    if kind == "int":
        return _int_stats(int(_max_of(array, axis=None)), int(_min_of(array, axis=None)))
    if dtype == torch.float64 or precision == "high":
        flat = array.ravel("K").astype(_FLOAT64, copy=False)  # "K": no copy for transposes
        total = float(_sum_of(flat))
    else:
        flat = array.ravel("K").astype(_FLOAT32, copy=False)
        # BLAS dot with ones: float32 accumulation in vector lanes, twice as fast as numpy's pairwise sum
        # (relative error <= 1e-6 at 64k elements, as torch's own float32 sum)
        total = float(_dot(flat, _ONES32[:numel]))
    # on the dense copy/view: the widening is exact and monotonic, so Max/Min are unchanged
    high, low = float(_max_of(flat)), float(_min_of(flat))
    return stat_record(high, low, total / numel, math.sqrt(float(_dot(flat, flat))))


def _crc(t: torch.Tensor) -> Any:
    """CRC-32 of the raw bytes; on an accelerator a non-blocking host copy, checksummed at the flush."""
    if t.device.type != "cpu":
        return t.to("cpu", non_blocking=True)
    return _crc_host(t)


def _crc_host(t: torch.Tensor) -> str:
    if t.numel() == 0:
        return f"{kernels.crc32(b''):08x}"
    if t.is_conj() or t.is_neg():  # lazy views: the memory holds the values before conj/neg
        t = t.resolve_conj().resolve_neg()
    if t.dtype in _NUMPY_OK:
        array = t.numpy()
        if array.flags.c_contiguous:  # the raw bytes as they are: no torch ops, no copy
            return f"{kernels.crc32(array):08x}"
    t = t.contiguous()
    raw = t.reshape(-1).view(torch.uint8)
    return f"{kernels.crc32(raw.numpy()):08x}"


def to_host(handles: Sequence[Handle]) -> List[Dict[str, Any]]:
    """One stack and one device→host transfer for the whole batch (per device)."""
    ready = [h.ready for h in handles if h.crc is None]
    if len(ready) == len(handles) and None not in ready:
        return ready  # CPU statistics, no checksum: already final (callers copy from them, never into them)
    scalars = [v for h in handles for v in h.values]
    flat: List[float] = []
    tensors = [v for v in scalars if isinstance(v, torch.Tensor)]
    if not tensors or tensors[0].device.type == "cpu":
        # no transfer on the CPU: item() beats stack + tolist; numpy scalars are already values
        flat = [v.item() for v in scalars]
    else:
        try:
            flat = torch.stack(scalars).tolist()
        except (RuntimeError, TypeError):  # scalars on several devices
            flat = [v.item() for v in scalars]
    return from_values(handles, flat)


def device_values(handles: Sequence[Handle]) -> List[Any]:
    """The 0-d values ``from_values`` needs, in order (device tensors or host numbers): the flight recorder
    stacks them itself, to copy a whole step's statistics in one non-blocking transfer."""
    return [v for h in handles for v in h.values]


def from_values(handles: Sequence[Handle], flat: Sequence[Any]) -> List[Dict[str, Any]]:
    """The statistics dicts of ``handles`` given their values as host numbers (``device_values``' order)."""
    out: List[Dict[str, Any]] = []
    position = 0
    for handle in handles:
        if handle.ready is not None:
            stats = dict(handle.ready)
        elif handle.kind == "num":
            high, low, total, norm = flat[position:position + 4]
            position += 4
            if handle.squared:
                norm = math.sqrt(norm)
            stats = stat_record(float(high), float(low), total / handle.numel, norm)
        elif handle.kind == "int":
            high, low = flat[position:position + 2]
            position += 2
            stats = _int_stats(int(high), int(low))
        elif handle.kind == "int0":
            stats = _int_stats(int(flat[position]), None, scalar=True)
            position += 1
        elif handle.kind == "xor":
            stats = {"md5": hex_word(flat[position])}
            position += 1
        elif handle.kind == "bool":
            anyv, allv = flat[position:position + 2]
            position += 2
            stats = max_min_record(bool(anyv), bool(allv))
        else:
            stats = dict(_NULL)
        if handle.crc is not None:
            stats["md5"] = handle.crc if isinstance(handle.crc, str) else _crc_host(handle.crc)
        out.append(stats)
    return out
