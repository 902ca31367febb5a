"""Whether two rows agree, and the cells that say why not: tolerances by dtype, errors before warnings.

A row is ``error`` when the two sides cannot be the same computation (dtype or shape differ,
requires_grad differs, a plain argument differs, inf/nan on the target only, CRC-32 differs), ``warning``
when a number is outside the tolerance of its dtype, else ``pass``. The number behind the plots and
the first divergence is the *scaled error*: ``|target - golden| / max(|golden|, rms)`` over the four
statistics (``metrics.compare_stats``) or over the elements (``table.array_error``, tensor mode), ``rms``
being the golden tensor's L2 norm / sqrt(numel).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List

from msprobe.schema.dump import stat_value

from .config import dtype_key

_NON_FINITE_TARGET = "There is nan/inf/-inf in the maximum or minimum value of NPU."


def rms(record: Dict[str, Any]) -> float:
    norm = stat_value(record.get("Norm"))
    shape = record.get("shape") or []
    numel = 1
    for dim in shape:
        numel *= dim if isinstance(dim, int) else 1
    if norm is None or not math.isfinite(norm) or numel <= 0:
        return 0.0
    return abs(norm) / math.sqrt(numel)


def structural_problems(target: Dict[str, Any], golden: Dict[str, Any], t_tensor: bool, g_tensor: bool,
                        same_framework: bool = True) -> List[str]:
    """Reasons the two rows cannot be the same computation, in msprobe's words where it has them.
    requires_grad is compared within one framework only (MindSpore tensors do not carry it)."""
    problems: List[str] = []
    if t_tensor != g_tensor:
        return ["One side is a tensor, the other is not."]
    if not t_tensor:
        if target.get("value") != golden.get("value") or target.get("type") != golden.get("type"):
            problems.append("The scalar parameters of NPU and Bench are inconsistent.")
        return problems
    if dtype_key(target.get("dtype")) != dtype_key(golden.get("dtype")):
        problems.append("Dtype of NPU and bench Tensor do not match.")
    if list(target.get("shape") or []) != list(golden.get("shape") or []):
        problems.append("Tensor shapes do not match.")
    t_req, g_req = target.get("requires_grad"), golden.get("requires_grad")
    if same_framework and t_req is not None and g_req is not None and t_req != g_req:
        problems.append("The Required_Grad of NPU and Bench are inconsistent")
    if _has_non_finite(target) and not _has_non_finite(golden):
        problems.append(_NON_FINITE_TARGET)
    return problems


def _has_non_finite(record: Dict[str, Any]) -> bool:
    for key in ("Max", "Min"):
        number = stat_value(record.get(key))
        if number is not None and not math.isfinite(number):
            return True
    return False
