"""The cells of one compare-table row, per mode, in the order of ``msprobe.schema.compare_result.HEADERS``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from msprobe.schema.compare_result import COLUMN_STAT_KEYS, DIFFERENT, ERROR, NOT_APPLICABLE, PASS, WARNING

from .judge import rms, structural_problems
from .metrics import UNSUPPORTED, compare_stats, stat_text, tensor_metrics
from .rows import Row, plain_value
from .tensor_files import data_file, load_array

NO_BENCH = "No bench data matched."
_NA4 = [NOT_APPLICABLE] * 4


def _no_scale() -> float:
    return 0.0


def basic_cells(target: Row, golden: Optional[Row]) -> List[Any]:
    t_dtype, t_shape, t_req = _describe(target)
    if golden is None:
        return [target.name, NOT_APPLICABLE, t_dtype, NOT_APPLICABLE, t_shape, NOT_APPLICABLE, t_req, NOT_APPLICABLE]
    g_dtype, g_shape, g_req = _describe(golden)
    return [target.name, golden.name, t_dtype, g_dtype, t_shape, g_shape, t_req, g_req]


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


def stat_cells(row: Optional[Row]) -> List[str]:
    if row is None:
        return list(_NA4)
    if row.is_tensor:
        return [stat_text(row.record.get(key)) for key in COLUMN_STAT_KEYS]
    _, value = plain_value(row.record)
    return [stat_text(value)] * 4


def _plain_as_record(row: Row) -> Dict[str, Any]:
    """A plain value standing for all four statistics (a list or dict value as its text)."""
    _, value = plain_value(row.record)
    if isinstance(value, (list, dict)):
        value = str(value)
    return {key: value for key in COLUMN_STAT_KEYS}


class RowJudge:
    """Turns a (target, golden) row pair into table cells, a result and a scaled error."""

    def __init__(self, mode: str, tolerance_of, target_dir: Optional[Path] = None,
                 golden_dir: Optional[Path] = None, max_tensor_bytes: int = 2 << 30,
                 same_framework: bool = True) -> None:
        self.mode = mode
        self.same_framework = same_framework
        self.tolerance_of = tolerance_of
        self.dirs = (target_dir, golden_dir)
        self.max_tensor_bytes = max_tensor_bytes

    def cells(self, target: Row, golden: Optional[Row]) -> Tuple[List[Any], str, float, List[str]]:
        """(cells from the mode columns to Err_message, result, scaled error, messages)."""
        if golden is None:
            if self.mode == "md5":
                middle = [target.record.get("md5") or NOT_APPLICABLE, NOT_APPLICABLE]
            else:
                width = 8 if self.mode == "statistics" else 6
                middle = [NOT_APPLICABLE] * width + stat_cells(target) + list(_NA4)
            return middle + [NOT_APPLICABLE, NOT_APPLICABLE, json.dumps([NO_BENCH])], NOT_APPLICABLE, 0.0, [NO_BENCH]
        problems = structural_problems(target.record, golden.record, target.is_tensor, golden.is_tensor,
                                       self.same_framework)
        if self.mode == "md5":
            middle, error, messages = self._md5(target, golden)
        elif self.mode == "tensor" and target.is_tensor and golden.is_tensor:
            middle, error, messages = self._tensor(target, golden)
        else:
            middle, error, messages = self._statistics(target, golden)
        messages = problems + messages if problems else messages
        if problems:
            result = ERROR
        elif self.mode == "md5":
            result = PASS if error == 0 else DIFFERENT
        else:
            result = PASS if error <= self.tolerance_of(golden.record.get("dtype")) else WARNING
        consistent = "True" if target.record.get("requires_grad") == golden.record.get("requires_grad") else "False"
        return middle + [consistent, result, json.dumps(messages) if messages else "[]"], result, error, messages

    def _statistics(self, target: Row, golden: Row):
        t_rec = target.record if target.is_tensor else _plain_as_record(target)
        g_rec = golden.record if golden.is_tensor else _plain_as_record(golden)
        cells, error = compare_stats(t_rec, g_rec, (lambda: rms(g_rec)) if golden.is_tensor else _no_scale)
        if self.mode == "tensor":  # a plain value, or a side without its file: no tensor metric
            missing = [] if not target.is_tensor else ["Compared by statistics."]
            return [UNSUPPORTED if not target.is_tensor else NOT_APPLICABLE] * 6 + cells[8:], error, missing
        return cells, error, []

    def _md5(self, target: Row, golden: Row):
        t_md5, g_md5 = target.record.get("md5"), golden.record.get("md5")
        if not target.is_tensor:
            same = target.record == golden.record
            return [NOT_APPLICABLE, NOT_APPLICABLE], 0.0 if same else float("inf"), []
        return [t_md5 or NOT_APPLICABLE, g_md5 or NOT_APPLICABLE], 0.0 if t_md5 == g_md5 else float("inf"), []

    def _tensor(self, target: Row, golden: Row):
        arrays, why = [], []
        for row, folder in ((target, self.dirs[0]), (golden, self.dirs[1])):
            path = data_file(folder, row.record.get("data_name")) if folder is not None else None
            array, reason = load_array(path, self.max_tensor_bytes) if path is not None else (None, "")
            arrays.append(array)
            if reason:
                why.append(reason)
        if arrays[0] is None or arrays[1] is None:
            middle, error, messages = self._statistics(target, golden)
            return middle, error, why + (messages if not why else [])
        values, message = tensor_metrics(arrays[0], arrays[1])
        stats = stat_cells(target) + stat_cells(golden)
        return values + stats, array_error(arrays[0], arrays[1]), [message] if message else []


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


