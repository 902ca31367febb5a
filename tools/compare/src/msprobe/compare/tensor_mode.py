"""Tensor mode: the rows whose two tensor files are read and compared element by element (``metrics``); a row
whose file is missing, too large or unreadable is compared by its statistics instead, saying why."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import numpy as np

from .metrics import array_error, tensor_metrics
from .sides import RankSide
from .tensor_files import load_array


@dataclass
class TensorRow:
    """What reading a row's two tensor files gave."""

    metrics: Optional[List[Any]]
    """The six tensor metric cells; None when the row is compared by its statistics."""
    messages: List[str]
    """The metrics' message, or why a file was not read."""
    error: Optional[float]
    """The scaled error over the elements; None where the statistics' stands."""


def tensor_rows(target: RankSide, golden: RankSide, rows: np.ndarray, partner: np.ndarray,
                max_bytes: int) -> Dict[int, TensorRow]:
    """Per target row of ``rows`` (both sides tensors): its files compared."""
    out: Dict[int, TensorRow] = {}
    for row in rows.tolist():
        arrays, why = [], []
        for side, position in ((target, row), (golden, int(partner[row]))):
            name = side.leaves.data_name[position]
            array, reason = load_array(side.rank.tensor_dir, name, max_bytes) if name else (None, "")
            arrays.append(array)
            if reason:
                why.append(reason)
        if arrays[0] is None or arrays[1] is None:
            out[row] = TensorRow(None, why, None)
            continue
        values, message = tensor_metrics(arrays[0], arrays[1])
        out[row] = TensorRow(values, [message] if message else [], array_error(arrays[0], arrays[1]))
    return out
