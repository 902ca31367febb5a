"""One rank of two dumps compared, by column: rows paired, judged (``judge``), and each entry's verdict.

A rank holds hundreds of thousands of rows; they stay arrays (``RankRows``, ``EntryTable``) until a file is
written or an entry is described, so a rank pair is compared in the time of reading its two indexes.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from msprobe.schema import RankDir
from msprobe.schema.compare_result import DIFFERENT, ERROR, NOT_APPLICABLE, PASS, WARNING
from msprobe.schema.unchecked import explain

from .config import CompareConfig
from .entries import EntryTable, entry_table
from .judge import CODE, SideValues, Verdicts, rms, scaled_errors, side_values, structural_problems, verdicts
from .leaf_arrays import LeafArrays
from .mapping import NameMapping
from .match import pair_entries
from .modes import choose_mode
from .sides import RankSide, load_side
from .table import TableCells
from .tensor_mode import TensorRow, tensor_rows


@dataclass
class RankRows:
    """The compare table of a rank, by column: row ``k`` is the target's leaf ``k``, paired with the golden leaf
    ``partner[k]`` (-1: none)."""

    target: LeafArrays
    golden: LeafArrays
    target_values: SideValues
    golden_values: SideValues
    partner: np.ndarray
    golden_taken: np.ndarray
    """bool per golden row: a target row's label found it (golden rows left are the entry's "golden only")."""
    verdicts: Verdicts
    tensor_rows: Dict[int, TensorRow]
    """Tensor mode: the rows compared from their tensor files (or that tried)."""
    notes: Dict[int, List[str]]
    """Messages added to a row after judging (the first divergence's)."""

    def __len__(self) -> int:
        return len(self.partner)

    def name(self, row: int) -> str:
        return f"{self.target.entries[self.target.order[row]]}.{self.target.label[row]}"


@dataclass
class RankComparison:
    step: Optional[int]
    rank: Optional[int]
    label: str
    target: RankDir
    golden: RankDir
    mode: str
    mode_note: str
    rows: RankRows
    entries: EntryTable
    unmatched_golden: List[str]
    files: Dict[str, RankSide]
    """``target`` and ``golden``: each side as read (its construct.json and stack.json too)."""
    stack: bool = False
    """Whether the table carries each entry's stack (``--stack``)."""

    @property
    def counts(self) -> Dict[str, int]:
        """Rows by result; ``Different`` (md5 mode) counts as an error."""
        codes = np.bincount(self.rows.verdicts.result, minlength=len(CODE))
        out = {name: int(codes[CODE[name]]) for name in (PASS, WARNING, ERROR, NOT_APPLICABLE)}
        out[ERROR] += int(codes[CODE[DIFFERENT]])
        return out


def compare_rank(target: RankDir, golden: RankDir, config: CompareConfig, mapping: NameMapping) -> RankComparison:
    try:
        return _compare(target, golden, config, mapping)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:  # validated only on trouble
        raise explain(exc, target, golden) from None


def _compare(target: RankDir, golden: RankDir, config: CompareConfig, mapping: NameMapping) -> RankComparison:
    with ThreadPoolExecutor(2) as pool:  # the two sides' files read at once: hashing and Parquet release the GIL
        t_side, g_side = pool.map(load_side, (target, golden))
    mode, note = choose_mode(t_side, g_side, config.statistics)
    pairs, unmatched = pair_entries(t_side.names, g_side.names, mapping)
    rows = _judge(t_side, g_side, [g for _, g in pairs], mode, config)
    entries = entry_table(t_side.names, [g for _, g in pairs], rows, TableCells(rows, mode).messages)
    return RankComparison(step=target.step, rank=target.rank, label=target.label, target=target, golden=golden,
                          mode=mode, mode_note=note, rows=rows, entries=entries, unmatched_golden=unmatched,
                          files={"target": t_side, "golden": g_side}, stack=config.stack)


def _judge(t_side: RankSide, g_side: RankSide, golden_of: List[Optional[str]], mode: str,
           config: CompareConfig) -> RankRows:
    t, g = t_side.leaves, g_side.leaves
    tv, gv = side_values(t, t_side.index), side_values(g, g_side.index)
    partner, consumed = _partners(t, g, golden_of)
    paired = np.flatnonzero(partner >= 0)
    ti, gi = paired, partner[paired]
    same = _family(t_side.framework) == _family(g_side.framework)
    problems = np.zeros(len(t), dtype=np.int64)
    error = np.zeros(len(t))
    one_sided = np.zeros((len(t), tv.present.shape[1]), dtype=bool)
    problems[paired] = structural_problems(t, g, tv, gv, ti, gi, same)
    if mode == "md5":
        error[paired] = np.where(_checksums_differ(t, g, tv, gv, ti, gi), np.inf, 0.0)
    else:
        error[paired], one_sided[paired] = scaled_errors(tv, gv, ti, gi, rms(g, gv, gi))
    by_file: Dict[int, TensorRow] = {}
    if mode == "tensor":
        by_file = tensor_rows(t_side, g_side, ti[t.tensor[ti] & g.tensor[gi]], partner, config.max_tensor_bytes)
        for row, found in by_file.items():
            if found.error is not None:
                error[row] = found.error
    result = np.full(len(t), CODE[NOT_APPLICABLE], dtype=np.int8)
    result[paired] = verdicts(problems[paired], error[paired], g.dtype.take(gi), mode == "md5", config.tolerance)
    return RankRows(t, g, tv, gv, partner, consumed, Verdicts(result, error, problems, one_sided), by_file, {})


def _partners(t: LeafArrays, g: LeafArrays, golden_of: List[Optional[str]]) -> Tuple[np.ndarray, np.ndarray]:
    """(for each target row, the golden row of the paired entry with the same label, -1 where there is none or
    where one side records None and the other a value (a gradient not computed: nothing to compare); the golden
    rows so taken)."""
    if not len(t) or not len(g):
        return np.full(len(t), -1, dtype=np.int64), np.zeros(len(g), dtype=bool)
    if golden_of == g.entries:  # each entry paired with the golden one at its position (one run's layout)
        entry_map = np.arange(len(golden_of), dtype=np.int64)
    else:
        position = {name: i for i, name in enumerate(g.entries)}
        entry_map = np.array([-1 if name is None else position[name] for name in golden_of], dtype=np.int64)
    labels: Dict[str, int] = {}
    t_labels, g_labels = t.label.ids(labels), g.label.ids(labels)
    width = len(labels)
    g_keys = g.order * width + g_labels
    t_entry = entry_map[t.order]
    t_keys = np.where(t_entry >= 0, t_entry * width + t_labels, -1)
    ranked = np.argsort(g_keys, kind="stable")
    found = np.searchsorted(g_keys[ranked], t_keys, side="right") - 1  # the last of equal labels, as a dict keeps
    candidate = ranked[np.maximum(found, 0)]
    usable = (found >= 0) & (t_keys >= 0) & (g_keys[candidate] == t_keys)
    consumed = np.zeros(len(g), dtype=bool)
    consumed[candidate[usable]] = True
    usable &= _records_none(t) == _records_none(g)[candidate]
    return np.where(usable, candidate, -1), consumed


def _records_none(arrays: LeafArrays) -> np.ndarray:
    return ~arrays.tensor & (arrays.value == "{}")


def _checksums_differ(t: LeafArrays, g: LeafArrays, tv: SideValues, gv: SideValues, ti: np.ndarray,
                      gi: np.ndarray) -> np.ndarray:
    """md5 mode: a tensor's checksum, a plain value's record, differs."""
    differ = t.md5[ti] != g.md5[gi]
    for k in np.flatnonzero(~t.tensor[ti] | ~g.tensor[gi] | np.isin(ti, list(tv.checksums))
                            | np.isin(gi, list(gv.checksums))).tolist():
        t_row, g_row = int(ti[k]), int(gi[k])
        if not t.tensor[t_row]:
            differ[k] = tv.records[t_row] != gv.records.get(g_row)
        else:
            differ[k] = tv.checksum(t, t_row) != gv.checksum(g, g_row)
    return differ


def _family(framework: Optional[str]) -> str:
    """MSAdapter/MindTorch tensors are MindSpore tensors: requires_grad means the same there."""
    return "mindspore" if framework in ("mindspore", "mindtorch") else str(framework)
