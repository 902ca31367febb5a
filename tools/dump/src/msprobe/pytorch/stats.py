"""Statistics of torch tensors: reduced on the tensor's own device, brought to the host in batches."""
from __future__ import annotations

import zlib
from typing import Any, Dict, List, Sequence, Tuple

import torch

_NULL = {"Max": None, "Min": None, "Mean": None, "Norm": None}
_KINDS = {torch.bool: "bool"}
for _dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
    _KINDS[_dtype] = "float"
for _dtype in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
    _KINDS[_dtype] = "int"
_WIDE_NUMEL = 1 << 16  # above this, float32 accumulation on the CPU drifts (1e6 x 1000.0: norm off by 2e-4)


class Handle:
    __slots__ = ("kind", "values", "numel", "crc")

    def __init__(self, kind: str, values: Tuple[torch.Tensor, ...], numel: int, crc: Any) -> None:
        self.kind, self.values, self.numel, self.crc = kind, values, numel, crc


def reduce(tensor: torch.Tensor, precision: str, md5: bool) -> Handle:
    """Max, Min, sum and L2 norm as 0-dim tensors on the tensor's own device (3 kernels, no host sync).

    Floats accumulate in float32, in float64 for float64 tensors, ``precision: high`` and large CPU
    tensors; integers in float64; bool gives any/all. Mean = sum / numel on the host.
    """
    # the hooks run the reductions with grad mode off: detach only when it is on (detach costs a tensor)
    t = tensor.detach() if tensor.requires_grad and torch.is_grad_enabled() else tensor
    crc = _crc(t) if md5 else None
    numel = t.numel()
    kind = _KINDS.get(t.dtype)
    if numel == 0 or kind is None or t.layout != torch.strided or t.is_meta:
        return Handle("none", (), numel, crc)
    if kind == "bool":
        return Handle("bool", (t.any(), t.all()), numel, crc)
    if kind == "float":
        wide = precision == "high" or t.dtype == torch.float64 or (numel > _WIDE_NUMEL and t.device.type == "cpu")
        acc = torch.float64 if wide else torch.float32
    else:
        acc = torch.float64
        t = t.to(acc)  # exact for |values| < 2**53; keeps the batch's type promotion float64
    low, high = torch.aminmax(t)
    return Handle("num", (high, low, t.sum(dtype=acc), torch.linalg.vector_norm(t, dtype=acc)), numel, crc)


def _crc(t: torch.Tensor) -> Any:
    """CRC-32 of the raw bytes; on an accelerator a non-blocking host copy, checksummed at the flush."""
    if t.device.type != "cpu":
        return t.to("cpu", non_blocking=True)
    return _crc_host(t)


def _crc_host(t: torch.Tensor) -> str:
    t = t.contiguous()
    if t.numel() == 0:
        return f"{zlib.crc32(b''):08x}"
    raw = t.reshape(-1).view(torch.uint8)
    return f"{zlib.crc32(raw.numpy()):08x}"


def to_host(handles: Sequence[Handle]) -> List[Dict[str, Any]]:
    """One stack and one device→host transfer for the whole batch (per device)."""
    scalars = [v for h in handles for v in h.values]
    flat: List[float] = []
    if scalars and scalars[0].device.type == "cpu":
        flat = [v.item() for v in scalars]  # no transfer on the CPU: item() beats stack + tolist
    elif scalars:
        try:
            flat = torch.stack(scalars).tolist()
        except RuntimeError:  # scalars on several devices
            flat = [v.item() for v in scalars]
    out: List[Dict[str, Any]] = []
    position = 0
    for handle in handles:
        if handle.kind == "num":
            high, low, total, norm = flat[position:position + 4]
            position += 4
            stats = {"Max": high, "Min": low, "Mean": total / handle.numel, "Norm": norm}
        elif handle.kind == "bool":
            anyv, allv = flat[position:position + 2]
            position += 2
            stats = {"Max": bool(anyv), "Min": bool(allv), "Mean": None, "Norm": None}
        else:
            stats = dict(_NULL)
        if handle.crc is not None:
            stats["md5"] = handle.crc if isinstance(handle.crc, str) else _crc_host(handle.crc)
        out.append(stats)
    return out
