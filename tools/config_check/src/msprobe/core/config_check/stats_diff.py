"""Relative differences of tensor statistics, every step, rank and tensor at once (numpy).

diff = (cmp - bench) / |bench|: positive when cmp is larger; +/-inf when bench is 0 or one side is
infinite; nan when a side is nan. Within ``tolerance``: |diff| <= tolerance (|cmp| when bench is
0); nan only matches nan.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Tuple

import numpy as np

from .results import ERROR, PASS


def relative(bench: np.ndarray, cmp: np.ndarray, tolerance: float) -> Tuple[np.ndarray, np.ndarray]:
    """(diff, within tolerance), both shaped like the inputs."""
    bench, cmp = bench.astype(np.float64), cmp.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        diff = (cmp - bench) / np.abs(bench)
    nan = np.isnan(bench) | np.isnan(cmp)
    equal = bench == cmp
    unbounded = ~nan & ~equal & (np.isinf(bench) | np.isinf(cmp) | (bench == 0))
    diff = np.where(unbounded, np.where(cmp > bench, np.inf, -np.inf), diff)
    diff = np.where(equal, 0.0, np.where(nan, np.nan, diff))
    within = np.where(bench == 0, np.abs(cmp) <= tolerance, np.abs(diff) <= tolerance)
    within = np.where(nan, np.isnan(bench) & np.isnan(cmp), within & ~(np.isinf(bench) | np.isinf(cmp)) | equal)
    return diff, within


def stat_rows(bench: np.ndarray, cmp: np.ndarray, tolerance: float):
    """Rows (equal, 4 differences, level), the worst |diff| of each row and which statistic it is.

    ``bench`` and ``cmp``: one row per tensor, its statistics in the same order on both sides.
    """
    if not len(bench):
        return [], [], []
    diff, within = relative(bench, cmp, tolerance)
    equal = within.all(axis=1)
    magnitude = np.where(np.isnan(diff), np.inf, np.abs(diff))
    worst = magnitude.argmax(axis=1)
    shown = diff.tolist()
    for index in np.flatnonzero(~np.isfinite(diff).all(axis=1)).tolist():
        shown[index] = [value if value - value == 0 else _special(value) for value in shown[index]]
    levels = [PASS if ok else ERROR for ok in equal.tolist()]
    rows = [(ok, *values, level) for ok, values, level in zip(equal.tolist(), shown, levels)]
    return rows, magnitude.max(axis=1).tolist(), worst.tolist()


def _special(value: float) -> str:
    if math.isnan(value):
        return "nan"
    return "+inf" if value > 0 else "-inf"


def numeric(values: Sequence[Any]) -> bool:
    """Numbers numpy holds (not None, text or integers past 64 bits): what stat_rows takes."""
    return all(isinstance(value, float) or (isinstance(value, int) and -2**63 <= value < 2**63) for value in values)


def as_numbers(values: Sequence[Any]) -> Optional[np.ndarray]:
    """The values as a float64 array when all are numbers (numpy's own check, fast); else None."""
    array = np.asarray(values)
    if array.dtype.kind not in "biuf":
        return None
    return array.astype(np.float64)
