"""A compare table's cells, per mode (``table_row.TableRow``), made by column from a rank's judged rows when a
file is written, or for the few rows a page or the first divergence shows: the numbers are judged by column
(``judge``), the cells say them as msprobe does (the statistics': ``stat_cells``).
"""
from __future__ import annotations

import json
from dataclasses import fields as dataclass_fields
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

import numpy as np

from msprobe.schema.compare_result import COLUMN_STAT_KEYS, NOT_APPLICABLE as NA
from msprobe.schema.leaves import plain_value

from .judge import PROBLEMS, RESULTS, SideValues, one_sided_message
from .cells import Coded, JoinedCells, as_objects
from .leaf_arrays import LeafArrays, shape_texts
from .metrics import UNSUPPORTED
from .stat_cells import alike, cell_text, objects, stat_cells, stat_diffs
from .table_row import TableRow, column_fields

if TYPE_CHECKING:
    from .rank import RankComparison, RankRows

NO_BENCH = "No bench data matched."
COMPARED_BY_STATISTICS = "Compared by statistics."
_STATS = len(COLUMN_STAT_KEYS)
_METRICS_ABSENT = np.array([UNSUPPORTED, NA], dtype=object)
"""Tensor mode's metric cells of a row compared by statistics: a plain value's, a tensor's."""


class TableCells:
    """The rows of one rank's table as cells."""

    def __init__(self, rows: "RankRows", mode: str, stacks: Optional[Dict[str, List[str]]] = None) -> None:
        self.rows = rows
        self.mode = mode
        self.stacks = stacks
        """Each entry's stack, shown on its first row (``--stack``); None: not shown."""

    @classmethod
    def of(cls, comparison: "RankComparison") -> "TableCells":
        return cls(comparison.rows, comparison.mode, comparison.files["target"].stacks if comparison.stack else None)

    def __len__(self) -> int:
        return len(self.rows)

    def columns(self, header: Sequence[str], rows: Optional[np.ndarray] = None) -> List[np.ndarray]:
        """The cells of ``rows`` (all by default) by column of ``header`` (a header of ``compare_result``)."""
        return [as_objects(column) for column in self.coded_columns(header, rows)]

    def coded_columns(self, header: Sequence[str], rows: Optional[np.ndarray] = None) -> List[Any]:
        """:meth:`columns`, a column of few texts as :class:`cells.Coded` (for a writer that takes codes)."""
        made = self.fields(np.arange(len(self.rows)) if rows is None else rows)
        return [made[name] if index is None else made[name][index] for name, index in column_fields(tuple(header))]

    def row(self, k: int) -> TableRow:
        """One row, each cell as the CSV shows it."""
        return self.rows_at(np.array([k], dtype=np.int64))[0]

    def rows_at(self, rows: np.ndarray) -> List[TableRow]:
        """Rows as typed records, each cell as the CSV shows it (for the few a page or a search shows)."""
        made = self.fields(rows)
        out = []
        for at in range(len(rows)):
            cells = {item.name: made[item.name][at] if not isinstance(made[item.name], tuple)
                     else tuple(column[at] for column in made[item.name]) for item in dataclass_fields(TableRow)}
            for name in ("target_stats", "golden_stats"):
                cells[name] = tuple(map(cell_text, cells[name]))
            out.append(TableRow(**cells))
        return out

    def messages(self, k: int) -> List[str]:
        """The row's messages: why it is an error, then what its mode says of it, then notes added later."""
        rows = self.rows
        if rows.partner[k] < 0:
            return [NO_BENCH]
        bits = int(rows.verdicts.problems[k])
        out = [text for bit, text in PROBLEMS if bits & bit]
        if self.mode != "md5":
            by_file = rows.tensor_rows.get(k)
            if by_file is not None and by_file.metrics is not None:
                out += by_file.messages
            else:
                said = self._one_sided(k)
                if self.mode == "tensor" and rows.target.tensor[k]:
                    said.append(COMPARED_BY_STATISTICS)
                out += by_file.messages if by_file is not None and by_file.messages else said
        return out + rows.notes.get(k, [])

    def fields(self, rows: np.ndarray) -> Dict[str, Any]:
        """``TableRow``'s fields for ``rows``: an object array per one-column field, a tuple of them per other."""
        judged, mode, count = self.rows, self.mode, len(rows)
        t, g = judged.target, judged.golden
        partner = judged.partner[rows]
        paired = np.flatnonzero(partner >= 0)
        p_target, p_golden = rows[paired], partner[paired]
        labels = t.label.codes[rows]  # (a partner has its row's label)
        golden_entry = np.full(count, -1, dtype=np.int64)
        golden_entry[paired] = g.order[p_golden]
        out: Dict[str, Any] = {"target_name": JoinedCells(t.entries, t.order[rows], t.label.values, labels),
                               "golden_name": JoinedCells(g.entries, golden_entry, t.label.values, labels)}
        t_cells = _describe(t, judged.target_values, rows)
        golden_cells = [Coded.filled(count, NA) for _ in range(3)]
        for column, values in zip(golden_cells, _describe(g, judged.golden_values, p_golden)):
            column.place(paired, values)
        out.update(zip(("target_dtype", "target_shape", "target_requires_grad"), t_cells))
        out.update(zip(("golden_dtype", "golden_shape", "golden_requires_grad"), golden_cells))
        out.update(stat_diffs=tuple(Coded.filled(count, NA) for _ in range(_STATS)),
                   stat_relative=tuple(Coded.filled(count, NA) for _ in range(_STATS)),
                   tensor_metrics=tuple(objects(count) for _ in range(6)),
                   target_stats=tuple(objects(count) for _ in range(_STATS)),
                   golden_stats=tuple(objects(count) for _ in range(_STATS)),
                   target_md5=Coded.filled(count, NA), golden_md5=Coded.filled(count, NA))
        if mode == "md5":
            shown = np.flatnonzero((partner < 0) | t.tensor[rows])  # a plain value paired has no checksum cell
            out["target_md5"].put_each(shown, _checksums(t, judged.target_values, rows[shown]))
            with_golden = paired[t.tensor[p_target]]
            out["golden_md5"].put_each(with_golden, _checksums(g, judged.golden_values, partner[with_golden]))
        else:
            self._statistics(out, rows, paired, p_golden)
        consistent = np.zeros(count, dtype=np.int64)
        consistent[paired] = 1 + (t.requires_grad[p_target] == g.requires_grad[p_golden])
        out["requires_grad_consistent"] = Coded(consistent, [NA, "False", "True"])
        out["result"] = Coded(judged.verdicts.result[rows].astype(np.int64), RESULTS)
        out["err_message"] = self._err_messages(rows, partner)
        out["stack"] = self._stacks(rows)
        out["data_name"] = objects(count)
        if mode == "tensor":
            g_files = objects(count)
            g_files[paired] = [name or "-1" for name in g.data_name[p_golden].tolist()]
            out["data_name"][:] = [str([name or "-1", g_file])
                                   for name, g_file in zip(t.data_name[rows].tolist(), g_files.tolist())]
        return out

    def _statistics(self, out: Dict[str, Any], rows: np.ndarray, paired: np.ndarray, p_golden: np.ndarray) -> None:
        judged = self.rows
        t_cells = stat_cells(judged.target_values, rows)
        out["target_stats"] = tuple(t_cells)
        p_target = rows[paired]
        t_paired = [cells[paired] for cells in t_cells]
        # the golden side's cells are made only where its statistics differ from the target's
        apart = np.flatnonzero(~alike(judged.target_values, judged.golden_values, p_target, p_golden))
        g_apart = stat_cells(judged.golden_values, p_golden[apart])
        diffs, relative = stat_diffs(judged.target_values, judged.golden_values, p_target[apart], p_golden[apart],
                                      [cells[apart] for cells in t_paired], g_apart)
        golden = []
        for column, same, cells in zip(out["golden_stats"], t_paired, g_apart):
            # (statistics equal as numbers: the target's spelling on both, as msprobe shows them)
            same = same.astype(object) if same.dtype != object and cells.dtype == object else same.copy()
            same[apart] = cells
            if len(paired) == len(rows):
                golden.append(same)
            else:
                column[paired] = same
                golden.append(column)
        out["golden_stats"] = tuple(golden)
        if self.mode == "tensor":  # a plain value, or a side without its file: no tensor metric
            metrics = _METRICS_ABSENT[judged.target.tensor[p_target].astype(np.int64)]
            for column in out["tensor_metrics"]:
                column[paired] = metrics
            for at, row in enumerate(p_target.tolist()):
                found = judged.tensor_rows.get(row)
                if found is not None and found.metrics is not None:
                    for column, value in zip(out["tensor_metrics"], found.metrics):
                        column[paired[at]] = value
            return
        for columns, made in ((out["stat_diffs"], diffs), (out["stat_relative"], relative)):
            for column, texts in zip(columns, made):
                column.put(paired, "0")
                column.put_each(paired[apart], texts)

    def _err_messages(self, rows: np.ndarray, partner: np.ndarray) -> Coded:
        judged = self.rows
        out = Coded.filled(len(rows), "[]")
        out.put(partner < 0, json.dumps([NO_BENCH]))
        said = (partner >= 0) & ((judged.verdicts.problems[rows] != 0) | judged.verdicts.one_sided[rows].any(axis=1))
        if self.mode == "tensor":
            said |= (partner >= 0) & judged.target.tensor[rows]
        extra = set(judged.notes) | set(judged.tensor_rows)
        if extra:
            said |= np.isin(rows, list(extra)) & (partner >= 0)
        for at in np.flatnonzero(said).tolist():
            messages = self.messages(int(rows[at]))
            out.put(at, json.dumps(messages) if messages else "[]")
        return out

    def _stacks(self, rows: np.ndarray) -> Coded:
        out = Coded.filled(len(rows), NA)
        if not self.stacks:
            return out
        order = self.rows.target.order
        first = (rows == 0) | (order[rows] != order[np.maximum(rows - 1, 0)])
        for at in np.flatnonzero(first).tolist():
            frames = self.stacks.get(self.rows.target.entries[order[rows[at]]])
            out.put(at, NA if not frames else str(list(frames)))
        return out

    def _one_sided(self, k: int) -> List[str]:
        missing = self.rows.verdicts.one_sided[k]
        if not missing.any():
            return []
        keys = [key for key, gone in zip(COLUMN_STAT_KEYS, missing) if gone]
        present = self.rows.target_values.present[k]
        return [one_sided_message(keys, [bool(present[i]) for i, gone in enumerate(missing) if gone])]


def _describe(arrays: LeafArrays, values: SideValues, rows: np.ndarray) -> List[Coded]:
    """(dtype, shape, requires_grad) cells: a plain value shows its Python type, ``[]`` (N/A for None)."""
    codes = arrays.dtype.codes[rows]
    dtype = Coded(np.where(codes < 0, len(arrays.dtype.values), codes),
                  [str(v) for v in arrays.dtype.values] + ["None"])
    shape = Coded(*shape_texts(arrays.dims[rows], arrays.ndim[rows]))
    requires_grad = Coded(arrays.requires_grad[rows].astype(np.int64) + 1, [NA, "False", "True"])
    for at in np.flatnonzero(~arrays.tensor[rows]).tolist():
        record = values.records[int(rows[at])]
        dtype.put(at, plain_value(record)[0])
        shape.put(at, "[]" if record else NA)
        requires_grad.put(at, NA)
    return [dtype, shape, requires_grad]


def _checksums(arrays: LeafArrays, values: SideValues, rows: np.ndarray) -> List[Any]:
    return [value or NA for value in (values.checksums.get(row, arrays.md5[row]) for row in rows.tolist())]
