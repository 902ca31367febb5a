"""What the HTML page shows of one rank, as plain data: entries in execution order with their errors,
the first divergence, the module tree with each module's worst error, and each entry's rows side by side."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from msprobe.schema import module_chain
from msprobe.schema.compare_result import BENCH_MD5, BENCH_STATS, HEADERS, NAME, NPU_MD5, NPU_STATS, RESULT

from .divergence import finite_or_none
from .rank import EntryResult, RankComparison

MAX_ENTRIES = 20_000
"""Entries per rank the page holds at most (a bigger rank shows its first ones, and says so)."""
PAGE_ENTRIES = 200_000
"""Entries the whole page holds: shared out between the ranks (at least 2,000 each)."""
MAX_ROWS_PER_ENTRY = 24
_SIDE_COLUMNS = {
    "statistics": (NPU_STATS, BENCH_STATS),
    "tensor": (NPU_STATS, BENCH_STATS),
    "md5": ([NPU_MD5], [BENCH_MD5]),
}


def entries_per_rank(ranks: int) -> int:
    return max(2_000, min(MAX_ENTRIES, PAGE_ENTRIES // max(ranks, 1)))


def rank_view(comparison: RankComparison, ordered: List[EntryResult], found: Optional[Dict[str, Any]],
              limit: int = MAX_ENTRIES) -> Dict[str, Any]:
    columns = HEADERS[comparison.mode]
    t_cols, g_cols = _SIDE_COLUMNS[comparison.mode]
    t_index = [columns.index(c) for c in t_cols]
    g_index = [columns.index(c) for c in g_cols]
    name_index, result_index = columns.index(NAME), columns.index(RESULT)
    dtype_index = columns.index("NPU Dtype")
    entries = []
    if found is not None:  # the first divergence is always on the page, however far it is
        limit = max(limit, next(i for i, e in enumerate(ordered) if e.name == found["entry"]) + 1)
    for entry in ordered[:limit]:
        rows = comparison.rows[entry.first_row: entry.first_row + min(entry.row_count, MAX_ROWS_PER_ENTRY)]
        entries.append({
            "name": entry.name, "golden": entry.golden, "kind": entry.kind, "direction": entry.direction,
            "in": finite_or_none(entry.input_error), "out": finite_or_none(entry.output_error),
            "result": entry.result, "notes": entry.notes[:5],
            "rows": [[r[name_index][len(entry.name) + 1:], r[dtype_index], [r[i] for i in t_index],
                      [r[i] for i in g_index], r[result_index]] for r in rows],
        })
    return {
        "label": comparison.label if comparison.step is None else f"step{comparison.step} {comparison.label}",
        "mode": comparison.mode, "side_columns": [c.split(" ", 1)[1] for c in t_cols],
        "entries": entries, "truncated": max(0, len(ordered) - limit),
        "first": found["entry"] if found else None,
        "first_kind": found["kind"] if found else None,
        "tree": _module_tree(comparison, ordered),
    }


def _module_tree(comparison: RankComparison, ordered: List[EntryResult]) -> List[Dict[str, Any]]:
    """Forward modules with their parent and the worst output error of anything inside them."""
    construct = comparison.files["target"].construct
    worst: Dict[str, float] = {}
    for entry in ordered:
        if entry.golden is None:
            continue
        error = entry.output_error
        for node in [entry.name] + module_chain(construct, entry.name):
            if node.startswith(("Module.", "Cell.")) and error > worst.get(node, -1.0):
                worst[node] = error
    nodes = [n for n in construct if n.startswith(("Module.", "Cell.")) and ".forward." in n][:MAX_ENTRIES]
    return [{"name": n, "parent": construct.get(n), "worst": finite_or_none(worst.get(n, 0.0))} for n in nodes]
