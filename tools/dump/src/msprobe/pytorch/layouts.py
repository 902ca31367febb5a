"""Sparse and nested tensors in a record: what stands for them, so the dump goes on past them.

msprobe 26.2.0 records a jagged nested tensor (``torch.nested.nested_tensor(..., layout=torch.jagged)``)
as its type's full name with the shape, statistics and file of its packed values; the suite does the
same. On the other layouts msprobe breaks the training (the API itself raises): here a strided nested
tensor is recorded like a jagged one (``torch.Tensor``, with a note), and a sparse tensor (COO, CSR, CSC,
BSR, BSC) by its dense shape and the statistics of its dense form, computed from the stored values, with
no checksum and no file (a dense copy can be far larger than the sparse tensor the training holds).
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import torch

from msprobe.schema.dump import max_min_record, stat_record

from . import stats

_JAGGED = getattr(torch, "jagged", None)  # (torch >= 2.1)


def is_plain(tensor: torch.Tensor) -> bool:
    """A strided, non-nested tensor: everything else takes this module's way."""
    return tensor.layout == torch.strided and not tensor.is_nested


def layout_name(tensor: torch.Tensor) -> str:
    return str(tensor.layout).replace("torch.", "")


def nested_values(tensor: torch.Tensor) -> torch.Tensor:
    """A nested tensor's elements as one strided tensor: a jagged one's packed values (msprobe's shape);
    a strided one's components joined along their first dimension (flattened where their other
    dimensions differ)."""
    t = tensor.detach()
    if _JAGGED is not None and t.layout == _JAGGED:
        return t.values()
    parts = t.unbind()
    if not parts:
        return torch.empty(0, dtype=t.dtype, device=t.device)
    if parts[0].dim() > 0 and all(p.shape[1:] == parts[0].shape[1:] for p in parts):
        return torch.cat(parts)
    return torch.cat([p.reshape(-1) for p in parts])


def meta(tensor: torch.Tensor, dtype_name: str) -> Tuple[str, str, List[int], bool]:
    """The record's type, dtype, shape and requires_grad."""
    if tensor.is_nested:
        kind = type(tensor)
        name = "torch.Tensor" if kind is torch.Tensor else f"{kind.__module__}.{kind.__qualname__}"
        return name, dtype_name, list(nested_values(tensor).shape), tensor.requires_grad
    return "torch.Tensor", dtype_name, list(tensor.shape), tensor.requires_grad


def _stored_values(tensor: torch.Tensor) -> torch.Tensor:
    t = tensor.detach()
    if t.layout == torch.sparse_coo:
        # an uncoalesced COO tensor may store one position twice (its value is the sum)
        return (t if t.is_coalesced() else t.coalesce())._values()
    return t.values()


def sparse_stats(tensor: torch.Tensor, precision: str, md5: bool) -> Dict[str, Any]:
    """The statistics of the sparse tensor's dense form (its unstored elements are zeros), on the host."""
    values = _stored_values(tensor)
    stored, numel = values.numel(), tensor.numel()
    kind = stats.KINDS.get(tensor.dtype)
    found = dict(stats.to_host([stats.reduce(values, precision, False)])[0])
    if stored < numel and kind is not None and not tensor.is_meta:  # (a meta tensor has no values at all)
        zero = {"float": 0.0, "int": 0, "bool": False}[kind]
        if found["Max"] is None:  # nothing stored: all zeros
            found = stat_record(zero, zero, 0.0, 0.0) if kind == "float" else max_min_record(zero, zero)
        else:
            found["Max"], found["Min"] = max(found["Max"], zero), min(found["Min"], zero)
            if found["Mean"] is not None:
                found["Mean"] = found["Mean"] * stored / numel
    if md5:
        found["md5"] = None  # the CRC-32 of a dense copy never made: none, rather than one of other bytes
    found["note"] = f"{layout_name(tensor)} tensor: statistics of its dense form ({stored} of {numel} stored)"
    return found


def nested_note(tensor: torch.Tensor) -> Dict[str, Any]:
    """What a strided nested tensor's record says of it (its type reads torch.Tensor)."""
    if tensor.layout == torch.strided and tensor.is_nested:
        return {"note": f"nested tensor of {tensor.size(0)} tensors: shape and statistics of their values joined"}
    return {}
