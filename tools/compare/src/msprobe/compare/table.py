"""One compare-table row per pair of dump rows, per mode (``table_row.TableRow``): the cells and the verdict."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from msprobe.schema.compare_result import (COLUMN_STAT_KEYS, DIFFERENT, ERROR, NOT_APPLICABLE, PASS, WARNING,
                                           CompareMode)

from .judge import rms, structural_problems
from .metrics import UNSUPPORTED, compare_stats, stat_text, tensor_metrics
from .rows import Row, plain_value
from .table_row import TableRow, blank_row
from .tensor_files import load_array

NO_BENCH = "No bench data matched."
_STATS = len(COLUMN_STAT_KEYS)
_NA_STATS = (NOT_APPLICABLE,) * _STATS


def _no_scale() -> float:
    return 0.0


def _fill_basic(cells: TableRow, target: Row, golden: Optional[Row]) -> None:
    cells.target_dtype, cells.target_shape, cells.target_requires_grad = _describe(target)
    if golden is not None:
        cells.golden_name = golden.name
        cells.golden_dtype, cells.golden_shape, cells.golden_requires_grad = _describe(golden)


def data_name_cell(target: Row, golden: Optional[Row]) -> str:
    """msprobe's ``Data_name`` cell: both file names, ``-1`` for a value without a file."""
    t_file = target.record.get("data_name") or "-1"
    g_file = NOT_APPLICABLE if golden is None else (golden.record.get("data_name") or "-1")
    return str([t_file, g_file])


def _describe(row: Row) -> Tuple[str, str, str]:
    if row.is_tensor:
        record = row.record
        req = record.get("requires_grad")
        return str(record.get("dtype")), str(list(record.get("shape") or [])), NOT_APPLICABLE if req is None else str(req)
    dtype, _ = plain_value(row.record)
    return dtype, "[]" if row.record else NOT_APPLICABLE, NOT_APPLICABLE


def stat_cells(row: Optional[Row]) -> Tuple[str, ...]:
    if row is None:
        return _NA_STATS
    if row.is_tensor:
        return tuple(stat_text(row.record.get(key)) for key in COLUMN_STAT_KEYS)
    _, value = plain_value(row.record)
    return (stat_text(value),) * _STATS


def _plain_as_record(row: Row) -> Dict[str, Any]:
    """A plain value standing for every statistic (a list or dict value as its text)."""
    _, value = plain_value(row.record)
    if isinstance(value, (list, dict)):
        value = str(value)
    return {key: value for key in COLUMN_STAT_KEYS}


class RowJudge:
    """Turns a (target, golden) row pair into a table row, a result and a scaled error."""

    def __init__(self, mode: CompareMode, tolerance_of, target_dir: Optional[Path] = None,
                 golden_dir: Optional[Path] = None, max_tensor_bytes: int = 2 << 30,
                 same_framework: bool = True) -> None:
        self.mode = mode
        self.same_framework = same_framework
        self.tolerance_of = tolerance_of
        self.dirs = (target_dir, golden_dir)
        self.max_tensor_bytes = max_tensor_bytes

    def row(self, target: Row, golden: Optional[Row], stack: str = NOT_APPLICABLE) -> Tuple[TableRow, float, List[str]]:
        """(the table row, its scaled error, its messages); the row's ``result`` is the verdict."""
        cells = blank_row(target.name)
        cells.stack = stack
        _fill_basic(cells, target, golden)
        if self.mode == "tensor":
            cells.data_name = data_name_cell(target, golden)
        if golden is None:
            if self.mode == "md5":
                cells.target_md5 = target.record.get("md5") or NOT_APPLICABLE
            else:
                cells.target_stats = stat_cells(target)
            cells.err_message = json.dumps([NO_BENCH])
            return cells, 0.0, [NO_BENCH]
        problems = structural_problems(target.record, golden.record, target.is_tensor, golden.is_tensor,
                                       self.same_framework)
        if self.mode == "md5":
            error, messages = self._md5(cells, target, golden)
        elif self.mode == "tensor" and target.is_tensor and golden.is_tensor:
            error, messages = self._tensor(cells, target, golden)
        else:
            error, messages = self._statistics(cells, target, golden)
        messages = problems + messages if problems else messages
        if problems:
            result = ERROR
        elif self.mode == "md5":
            result = PASS if error == 0 else DIFFERENT
        else:
            result = PASS if error <= self.tolerance_of(golden.record.get("dtype")) else WARNING
        same_req = target.record.get("requires_grad") == golden.record.get("requires_grad")
        cells.requires_grad_consistent = "True" if same_req else "False"
        cells.result = result
        cells.err_message = json.dumps(messages) if messages else "[]"
        return cells, error, messages

    def _statistics(self, cells: TableRow, target: Row, golden: Row) -> Tuple[float, List[str]]:
        t_rec = target.record if target.is_tensor else _plain_as_record(target)
        g_rec = golden.record if golden.is_tensor else _plain_as_record(golden)
        values, error, one_sided = compare_stats(t_rec, g_rec, (lambda: rms(g_rec)) if golden.is_tensor else _no_scale)
        messages = [_one_sided_message(one_sided, t_rec)] if one_sided else []
        n = _STATS
        cells.target_stats, cells.golden_stats = tuple(values[2 * n:3 * n]), tuple(values[3 * n:])
        if self.mode == "tensor":  # a plain value, or a side without its file: no tensor metric
            cells.tensor_metrics = (UNSUPPORTED if not target.is_tensor else NOT_APPLICABLE,) * 6
            return error, messages + ([] if not target.is_tensor else ["Compared by statistics."])
        cells.stat_diffs, cells.stat_relative = tuple(values[:n]), tuple(values[n:2 * n])
        return error, messages

    def _md5(self, cells: TableRow, target: Row, golden: Row) -> Tuple[float, List[str]]:
        if not target.is_tensor:
            return (0.0 if target.record == golden.record else float("inf")), []
        t_md5, g_md5 = target.record.get("md5"), golden.record.get("md5")
        cells.target_md5, cells.golden_md5 = t_md5 or NOT_APPLICABLE, g_md5 or NOT_APPLICABLE
        return (0.0 if t_md5 == g_md5 else float("inf")), []

    def _tensor(self, cells: TableRow, target: Row, golden: Row) -> Tuple[float, List[str]]:
        arrays, why = [], []
        for row, folder in ((target, self.dirs[0]), (golden, self.dirs[1])):
            name = row.record.get("data_name")
            array, reason = (load_array(folder, name, self.max_tensor_bytes) if folder is not None and name
                             else (None, ""))
            arrays.append(array)
            if reason:
                why.append(reason)
        if arrays[0] is None or arrays[1] is None:
            error, messages = self._statistics(cells, target, golden)
            return error, why + (messages if not why else [])
        values, message = tensor_metrics(arrays[0], arrays[1])
        cells.tensor_metrics = tuple(values)
        cells.target_stats, cells.golden_stats = stat_cells(target), stat_cells(golden)
        return array_error(arrays[0], arrays[1]), [message] if message else []


def _one_sided_message(keys: List[str], target: Dict[str, Any]) -> str:
    side = "golden" if all(target.get(k) is not None for k in keys) else "target"
    return f"{', '.join(keys)} not recorded by the {side}: not compared."


def array_error(target: np.ndarray, golden: np.ndarray) -> float:
    """Largest ``|t - g| / max(|g|, rms(g))`` over the elements; inf when shapes or inf/nan places differ."""
    if target.shape != golden.shape:
        return float("inf")
    if target.size == 0:
        return 0.0
    t, g = target.astype(np.float64).reshape(-1), golden.astype(np.float64).reshape(-1)
    finite = np.isfinite(g)
    if not np.array_equal(np.isfinite(t), finite) or not np.array_equal(t[~finite], g[~finite], equal_nan=True):
        return float("inf")
    t, g = t[finite], g[finite]
    if t.size == 0:
        return 0.0
    scale = float(np.sqrt(np.mean(g * g)))
    denom = np.maximum(np.abs(g), scale)
    diff = np.abs(t - g)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / denom)
    return float(ratio.max())


