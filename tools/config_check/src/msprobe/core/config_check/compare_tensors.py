"""Weights and dataset: statistics per micro-step, rank and tensor, exact by default.

Relative difference = (cmp - bench) / |bench|: positive when cmp is larger. ``tolerance`` > 0
accepts |relative difference| <= tolerance (absolute difference when bench is 0).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Iterator, List, Tuple

from .formats import ERROR, PASS, STAT_KEYS, ItemResult

Key = Tuple[int, int]


def compare_weights(bench: Dict[Key, Dict[str, Any]], cmp: Dict[Key, Dict[str, Any]], tolerance: float) -> ItemResult:
    rows = []
    for step, rank in sorted(set(bench) | set(cmp)):
        b, c = bench.get((step, rank)), cmp.get((step, rank))
        rows.extend((step, rank) + row for row in _compare_leaves(_as_leaves(b), _as_leaves(c), b, c, tolerance))
    return ItemResult("weights", rows, note=_coverage(bench, cmp), note_level=ERROR if _coverage(bench, cmp) else PASS)


def compare_dataset(bench: Dict[Key, Dict[str, Any]], cmp: Dict[Key, Dict[str, Any]], tolerance: float) -> ItemResult:
    rows = []
    for step, rank in sorted(set(bench) | set(cmp)):
        b, c = bench.get((step, rank)), cmp.get((step, rank))
        b_leaves = dict(_walk(b, "")) if b is not None else None
        c_leaves = dict(_walk(c, "")) if c is not None else None
        rows.extend((step, rank) + row for row in _compare_leaves(b_leaves, c_leaves, b, c, tolerance))
    return ItemResult("dataset", rows, note=_coverage(bench, cmp), note_level=ERROR if _coverage(bench, cmp) else PASS)


def _coverage(bench: Dict[Key, Any], cmp: Dict[Key, Any]) -> str:
    only_b, only_c = len(set(bench) - set(cmp)), len(set(cmp) - set(bench))
    parts = []
    if only_b:
        parts.append(f"{only_b} step/rank files only in bench")
    if only_c:
        parts.append(f"{only_c} step/rank files only in cmp")
    return ", ".join(parts)


def _as_leaves(data: Any):
    return None if data is None else {str(k): v for k, v in data.items()}


def _walk(value: Any, tag: str) -> Iterator[Tuple[str, Any]]:
    """dataset.json -> (tag, statistics or scalar); tags like 'args.0' or 'kwargs.labels'."""
    if isinstance(value, dict) and not _is_stats(value):
        for key, child in value.items():
            yield from _walk(child, f"{tag}.{key}" if tag else str(key))
    elif tag:
        yield tag, value


def _is_stats(value: Dict[str, Any]) -> bool:
    return set(STAT_KEYS) <= set(value) or set(value) == {"numel"}


def _compare_leaves(b, c, b_raw, c_raw, tolerance: float) -> List[Tuple[Any, ...]]:
    if b is None or c is None:
        only = "only bench has" if c is None else "only cmp has"
        return [(name, only, None, None, None, None, ERROR) for name in sorted(b if c is None else c)]
    rows = []
    for name in sorted(set(b) | set(c)):
        if name not in c or name not in b:
            rows.append((name, "only bench has" if name not in c else "only cmp has", None, None, None, None, ERROR))
            continue
        rows.append((name,) + _compare_stats(b[name], c[name], tolerance))
    return rows


def _compare_stats(b: Any, c: Any, tolerance: float) -> Tuple[Any, ...]:
    if not (isinstance(b, dict) and isinstance(c, dict) and _is_stats(b) and _is_stats(c)):
        equal = b == c
        return (equal, None, None, None, None, PASS if equal else ERROR)
    if "max" not in b or "max" not in c:
        equal = b == c
        return (equal, None, None, None, None, PASS if equal else ERROR)
    diffs, equal = [], True
    for key in STAT_KEYS:
        diff, ok = _relative(b.get(key), c.get(key), tolerance)
        diffs.append(diff)
        equal = equal and ok
    return (equal,) + tuple(diffs) + (PASS if equal else ERROR,)


def _relative(b: Any, c: Any, tolerance: float):
    """(relative difference for the sheet, within tolerance)."""
    if not isinstance(b, (int, float)) or not isinstance(c, (int, float)):
        return None, b == c
    if math.isnan(b) or math.isnan(c):
        return ("nan", math.isnan(b) and math.isnan(c))
    if b == c:
        return 0.0, True
    if math.isinf(b) or math.isinf(c):
        return ("+inf" if c > b else "-inf"), False
    if b == 0:
        return ("+inf" if c > 0 else "-inf"), abs(c) <= tolerance
    diff = (c - b) / abs(b)
    return diff, abs(diff) <= tolerance
