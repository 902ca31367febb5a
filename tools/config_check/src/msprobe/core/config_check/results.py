"""What a comparison writes: levels, sheets and their columns, result.json and the detail CSVs.

``OUT/result.xlsx`` (for people: a summary and one sheet per item, weights and dataset one row per
tensor name), ``OUT/result.json`` (the summary for programs), ``OUT/weights.csv`` and
``OUT/dataset.csv`` (every step, rank and tensor compared).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Sequence

PASS, WARNING, ERROR, INFO, NONE = "pass", "warning", "error", "info", "none"
"""Row and item levels; NONE: the item was collected in neither pack, so nothing was compared."""
ITEMS = ("env", "pip", "dataset", "weights", "hyperparameters", "random")
SUMMARY_COLUMNS = ("filename", "pass_check", "detail")
RESULT_FILE = "result.xlsx"
RESULT_JSON = "result.json"
DETAIL_CSV = {"dataset": "dataset.csv", "weights": "weights.csv"}
OUT_MARKER = ".msprobe-config-check"
DEFAULT_RESULT = "./config_check_result"
TOP_KEYS = 3

_DIFFS = ("max_relative_diff", "min_relative_diff", "mean_relative_diff", "norm_relative_diff")
_PER_NAME = ("differing", "worst_relative_diff", "worst_statistic", "worst_step", "worst_rank", "first_step",
             "first_rank", "level")
COLUMNS = {
    "env": ("bench_env_name", "cmp_env_name", "bench_value", "cmp_value", "level", "why"),
    "pip": ("package", "bench version", "cmp version", "level", "why"),
    "dataset": ("tag",) + _PER_NAME,
    "weights": ("weight_name",) + _PER_NAME,
    "hyperparameters": ("file_name", "bench_para", "cmp_para", "bench_value", "cmp_value", "matched_with", "level"),
    "random": ("op", "rank", "call_site", "bench_count", "cmp_count", "bench_seeds", "cmp_seeds", "level",
               "bench_stack", "cmp_stack"),
}
"""Sheet -> header. Relative differences are (cmp - bench) / |bench|: positive means cmp is larger."""
DETAIL_COLUMNS = {
    "dataset": ("step", "rank", "tag", "equal") + _DIFFS + ("level",),
    "weights": ("step", "rank", "weight_name", "equal") + _DIFFS + ("level",),
}
"""CSV -> header: one row per micro-step, rank and tensor."""
NAME_COLUMNS = {"env": ("bench_env_name",), "pip": ("package",), "dataset": ("tag",), "weights": ("weight_name",),
                "hyperparameters": ("bench_para", "cmp_para"), "random": ("op",)}
"""Columns naming what differs, for the summary's top keys."""
_PLACEHOLDERS = frozenset({"", "Only in benchmark", "Only in comparison"})


@dataclass
class ItemResult:
    """One compared item: a summary row, a sheet and, for weights and dataset, a detail CSV."""

    name: str
    """Sheet name, one of ITEMS."""
    rows: list = field(default_factory=list)
    """Tuples in the order of COLUMNS[name]; the 'level' column grades each row."""
    note: str = ""
    """Why the item could not be compared fully (e.g. not collected in one pack)."""
    note_level: str = PASS
    """Level the note alone implies."""
    details: list = field(default_factory=list)
    """Tuples in the order of DETAIL_COLUMNS[name] (weights and dataset only)."""
    counted: str = ""
    """What was compared, for the summary, when the sheet aggregates it (e.g. 'x of y tensors differ')."""

    def _level_at(self) -> int:
        return COLUMNS[self.name].index("level")

    @property
    def counts(self) -> Dict[str, int]:
        at = self._level_at()
        out: Dict[str, int] = {}
        for row in self.rows:
            out[row[at]] = out.get(row[at], 0) + 1
        return out

    @property
    def level(self) -> str:
        levels = set(self.counts) | {self.note_level}
        if ERROR in levels:
            return ERROR
        if WARNING in levels:
            return WARNING
        return NONE if self.note_level == NONE and not self.rows else PASS

    def top(self, level: str, limit: int = TOP_KEYS) -> List[str]:
        """The first distinct names of rows at ``level``, in sheet order."""
        at = self._level_at()
        columns = [COLUMNS[self.name].index(column) for column in NAME_COLUMNS[self.name]]
        names: List[str] = []
        for row in self.rows:
            if row[at] != level:
                continue
            name = next((str(row[c]) for c in columns if str(row[c]) not in _PLACEHOLDERS), "")
            if name and name not in names:
                names.append(name)
                if len(names) == limit:
                    break
        return names

    @property
    def detail(self) -> str:
        """'note, what was compared, 2 error (A, B), 1 warning (C), 5 info'."""
        counts = self.counts
        parts = [part for part in (self.note, self.counted) if part]
        for level in (ERROR, WARNING, INFO, PASS):
            if not counts.get(level):
                continue
            text = f"{counts[level]} {level}"
            names = self.top(level) if level in (ERROR, WARNING) else []
            if names:
                text += f" ({', '.join(names)}{', ...' if counts[level] > len(names) else ''})"
            parts.append(text)
        return ", ".join(parts) if parts else "identical"


def summary_json(results: Sequence[ItemResult], bench: str, cmp: str) -> Dict[str, Any]:
    """result.json: what the summary table says, for programs (CI, scripts)."""
    levels = {r.level for r in results}
    overall = ERROR if ERROR in levels else WARNING if WARNING in levels else PASS
    return {
        "bench": bench, "cmp": cmp, "level": overall, "report": RESULT_FILE,
        "details": {name: csv for name, csv in DETAIL_CSV.items()},
        "items": [{"item": r.name, "level": r.level, "detail": r.detail, "note": r.note, "counts": r.counts,
                   "top": {level: r.top(level, 10) for level in (ERROR, WARNING) if r.counts.get(level)}}
                  for r in results],
    }
