"""What the HTML page shows of one rank, as plain data: entries in execution order with their errors,
the first divergence, the module tree with each module's worst error, and each entry's rows side by side."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from msprobe.schema import module_chain
from msprobe.schema.compare_result import NPU_STATS

from .divergence import FirstDivergence, finite_or_none
from .rank import RankComparison
from .table import TableCells
from .table_row import TableRow

MAX_ENTRIES = 20_000
"""Entries per rank the page holds at most (a bigger rank shows its first ones, and says so)."""
PAGE_ENTRIES = 200_000
"""Entries the whole page holds: shared out between the ranks (at least 2,000 each)."""
MAX_ROWS_PER_ENTRY = 24
_SIDE_NAMES = {"md5": ["MD5"]}
"""The per-side columns the detail table shows: the four statistics, or the CRC-32 in md5 mode."""


def entries_per_rank(ranks: int) -> int:
    return max(2_000, min(MAX_ENTRIES, PAGE_ENTRIES // max(ranks, 1)))


def rank_view(comparison: RankComparison, ordered: np.ndarray, found: Optional[FirstDivergence],
              limit: int = MAX_ENTRIES) -> Dict[str, Any]:
    """``ordered``: the entries' positions in execution order."""
    table, cells = comparison.entries, TableCells.of(comparison)
    if found is not None:  # the first divergence is always on the page, however far it is
        limit = max(limit, next(i for i, e in enumerate(ordered.tolist()) if table.names[e] == found.entry) + 1)
    shown = ordered[:limit].tolist()
    ranges = [table.row_range(position)[:MAX_ROWS_PER_ENTRY] for position in shown]
    made = cells.rows_at(np.array([k for rows in ranges for k in rows], dtype=np.int64))
    entries, at = [], 0
    for position, row_range in zip(shown, ranges):
        entry = table.entry(position)
        rows, at = made[at:at + len(row_range)], at + len(row_range)
        entries.append({
            "name": entry.name, "golden": entry.golden, "kind": entry.kind, "direction": entry.direction,
            "in": finite_or_none(entry.input_error), "out": finite_or_none(entry.output_error),
            "result": entry.result, "notes": entry.notes[:5],
            "rows": [[r.target_name[len(entry.name) + 1:], r.target_dtype, _side(comparison.mode, r, True),
                      _side(comparison.mode, r, False), r.result] for r in rows],
        })
    return {
        "label": comparison.label if comparison.step is None else f"step{comparison.step} {comparison.label}",
        "mode": comparison.mode,
        "side_columns": _SIDE_NAMES.get(comparison.mode) or [c.split(" ", 1)[1] for c in NPU_STATS],
        "entries": entries, "truncated": max(0, len(ordered) - limit),
        "first": found.entry if found else None,
        "first_kind": found.kind if found else None,
        "tree": _module_tree(comparison, ordered),
    }


def _side(mode: str, row: TableRow, target: bool) -> List[Any]:
    if mode == "md5":
        return [row.target_md5 if target else row.golden_md5]
    return list(row.target_stats if target else row.golden_stats)


def _module_tree(comparison: RankComparison, ordered: np.ndarray) -> List[Dict[str, Any]]:
    """Forward modules with their parent and the worst output error of anything inside them."""
    construct = comparison.files["target"].construct
    table = comparison.entries
    worst: Dict[str, float] = {}
    for position in ordered.tolist():
        if table.golden[position] is None:
            continue
        error = float(table.output_error[position])
        name = table.names[position]
        for node in [name] + module_chain(construct, name):
            if node.startswith(("Module.", "Cell.")) and error > worst.get(node, -1.0):
                worst[node] = error
    nodes = [n for n in construct if n.startswith(("Module.", "Cell.")) and ".forward." in n][:MAX_ENTRIES]
    return [{"name": n, "parent": construct.get(n), "worst": finite_or_none(worst.get(n, 0.0))} for n in nodes]
