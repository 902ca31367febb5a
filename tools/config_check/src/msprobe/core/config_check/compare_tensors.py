"""Weights and dataset: statistics per micro-step, rank and tensor, exact by default (stats_diff.py).

Every step, rank and tensor compared is a detail row (the CSV); the sheet has one row per tensor
name: how many of its step/rank copies differ, the worst relative difference and where it is,
and the first step and rank where the tensor differs.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .formats import STAT_KEYS
from .results import ERROR, PASS, ItemResult
from .stats_diff import as_numbers, numeric, stat_rows

Key = Tuple[int, int]
MAX_DEPTH = 32  # dataset inputs nested deeper than this are compared as whole values


def compare_weights(bench: Dict[Key, Dict[str, Any]], cmp: Dict[Key, Dict[str, Any]], tolerance: float) -> ItemResult:
    return _compare("weights", bench, cmp, tolerance, lambda data: data)  # JSON keys are text already


def compare_dataset(bench: Dict[Key, Dict[str, Any]], cmp: Dict[Key, Dict[str, Any]], tolerance: float) -> ItemResult:
    return _compare("dataset", bench, cmp, tolerance, lambda data: dict(_walk(data, "", 0)))


class _Table:
    """Detail rows in (step, rank, name) order; rows of numbers are compared together at the end."""

    def __init__(self) -> None:
        self.rows: List[Any] = []
        self.magnitude: List[float] = []
        self.statistic: List[Optional[str]] = []
        self._slots: List[Tuple[int, Tuple[Any, ...]]] = []
        self._bench: List[Tuple[Any, ...]] = []
        self._cmp: List[Tuple[Any, ...]] = []

    def add(self, row: Tuple[Any, ...]) -> None:
        """A row compared already (one side only, or not statistics): it differs wholly or not at all."""
        self.rows.append(row)
        self.magnitude.append(-1.0 if row[-1] == PASS else math.inf)
        self.statistic.append(None)

    def add_stats(self, key: Tuple[Any, ...], b: Any, c: Any) -> bool:
        """Statistics of both sides, to compare in finish(); False when either is not a statistics dict."""
        try:
            b_values = tuple(b[stat] for stat in STAT_KEYS)
            c_values = tuple(c[stat] for stat in STAT_KEYS)
        except (KeyError, TypeError, IndexError):
            return False
        self._slots.append((len(self.rows), key))
        self._bench.extend(b_values)
        self._cmp.extend(c_values)
        self.add(key + (None,) * 6)
        return True

    def finish(self, tolerance: float) -> None:
        slots, bench, cmp = self._slots, as_numbers(self._bench), as_numbers(self._cmp)
        if bench is None or cmp is None:  # text or null among the statistics: such rows are compared as values
            width = len(STAT_KEYS)
            rows = [(self._bench[i * width:(i + 1) * width], self._cmp[i * width:(i + 1) * width])
                    for i in range(len(slots))]
            keep = [i for i, (b, c) in enumerate(rows) if numeric(b) and numeric(c)]
            for i in sorted(set(range(len(slots))) - set(keep)):
                equal = rows[i][0] == rows[i][1]
                self.rows[slots[i][0]] = slots[i][1] + (equal, None, None, None, None, PASS if equal else ERROR)
                self.magnitude[slots[i][0]] = -1.0 if equal else math.inf
            slots = [slots[i] for i in keep]
            bench = as_numbers([value for i in keep for value in rows[i][0]])
            cmp = as_numbers([value for i in keep for value in rows[i][1]])
        rows, worst, which = stat_rows(bench.reshape(-1, len(STAT_KEYS)), cmp.reshape(-1, len(STAT_KEYS)), tolerance)
        for (slot, key), row, magnitude, index in zip(slots, rows, worst, which):
            self.rows[slot] = key + row
            self.magnitude[slot] = -1.0 if row[0] else magnitude
            self.statistic[slot] = None if row[0] else STAT_KEYS[index]


def _compare(name: str, bench: Dict[Key, Any], cmp: Dict[Key, Any], tolerance: float, leaves) -> ItemResult:
    table = _Table()
    for step, rank in sorted(set(bench) | set(cmp)):
        b, c = bench.get((step, rank)), cmp.get((step, rank))
        _compare_leaves(table, (step, rank), leaves(b) if b is not None else None,
                        leaves(c) if c is not None else None)
    table.finish(tolerance)
    coverage = _coverage(bench, cmp)
    differ = sum(1 for row in table.rows if row[-1] != PASS)
    counted = f"{differ} of {len(table.rows)} step/rank/tensor statistics differ" if table.rows else ""
    return ItemResult(name, per_name(table), note=coverage, note_level=ERROR if coverage else PASS,
                      details=table.rows, counted=counted)


def _compare_leaves(table: _Table, where: Key, b: Optional[Dict[str, Any]], c: Optional[Dict[str, Any]]) -> None:
    for name in sorted(set(b or {}) | set(c or {})):
        if b is None or name not in b or c is None or name not in c:
            only = "only cmp has" if b is None or name not in b else "only bench has"
            table.add(where + (name, only, None, None, None, None, ERROR))
        elif not table.add_stats(where + (name,), b[name], c[name]):
            equal = b[name] == c[name]
            table.add(where + (name, equal, None, None, None, None, PASS if equal else ERROR))


def per_name(table: _Table) -> List[Tuple[Any, ...]]:
    """One sheet row per tensor name; differing names first, earliest divergence first."""
    groups: Dict[str, List[int]] = {}
    for index, row in enumerate(table.rows):
        groups.setdefault(row[2], []).append(index)
    out = []
    for name, members in groups.items():
        differing = [i for i in members if table.rows[i][-1] != PASS]
        if not differing:
            out.append((name, f"0 of {len(members)}", 0.0, None, None, None, None, None, PASS))
            continue
        worst = max(differing, key=lambda i: table.magnitude[i])  # the first of equals
        first, row, statistic = table.rows[differing[0]], table.rows[worst], table.statistic[worst]
        if statistic is not None:
            shown = row[4 + STAT_KEYS.index(statistic)]
        else:
            shown = row[3] if isinstance(row[3], str) else "value differs"
        out.append((name, f"{len(differing)} of {len(members)}", shown, statistic, row[0], row[1],
                    first[0], first[1], ERROR))
    out.sort(key=lambda r: (r[-1] == PASS, r[6] or 0, r[7] or 0, -_magnitude(r[2]), r[0]))
    return out


def _magnitude(diff: Any) -> float:
    if diff is None:
        return -1.0
    return math.inf if isinstance(diff, str) or math.isnan(diff) else abs(diff)


def _coverage(bench: Dict[Key, Any], cmp: Dict[Key, Any]) -> str:
    only_b, only_c = len(set(bench) - set(cmp)), len(set(cmp) - set(bench))
    parts = []
    if only_b:
        parts.append(f"{only_b} step/rank files only in bench")
    if only_c:
        parts.append(f"{only_c} step/rank files only in cmp")
    return ", ".join(parts)


def _walk(value: Any, tag: str, depth: int) -> Iterator[Tuple[str, Any]]:
    """dataset.json -> (tag, statistics or scalar); tags like 'args.0' or 'kwargs.labels'."""
    if isinstance(value, dict) and not _is_stats(value) and depth < MAX_DEPTH:
        for key, child in value.items():
            yield from _walk(child, f"{tag}.{key}" if tag else str(key), depth + 1)
    elif tag:
        yield tag, value


def _is_stats(value: Dict[str, Any]) -> bool:
    return set(STAT_KEYS) <= set(value) or set(value) == {"numel"}
