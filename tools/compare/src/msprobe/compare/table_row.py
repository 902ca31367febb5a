"""One row of a compare table as a typed record (what a page or the first divergence shows of a row); a table is
made by column (``table.TableCells``), field by field.

Each field names the column(s) it fills (``metadata["columns"]``), so a new column is one field here plus
its name in ``msprobe.schema.compare_result.HEADERS`` (the file format), and the code that computes it.
"""
from __future__ import annotations

import functools

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Sequence, Tuple

from msprobe.schema.compare_result import (BASIC, BENCH_MD5, BENCH_STATS, DATA_NAME, ERR_MESSAGE, NPU_MD5,
                                           NPU_STATS, REQ_GRAD_CONSISTENT, RESULT, STACK, STAT_DIFFS, STAT_RELATIVE,
                                           TENSOR_METRICS)


def _col(*columns: str) -> Any:
    return field(metadata={"columns": columns})


@dataclass
class TableRow:
    """The cells of one row; cells a mode does not have are never read for it. (No ``__slots__``: they
    cannot carry the field metadata; Python 3.11's shared-key instance dicts keep a row about as small.)"""

    target_name: str = _col(BASIC[0])
    golden_name: str = _col(BASIC[1])
    target_dtype: str = _col(BASIC[2])
    golden_dtype: str = _col(BASIC[3])
    target_shape: str = _col(BASIC[4])
    golden_shape: str = _col(BASIC[5])
    target_requires_grad: str = _col(BASIC[6])
    golden_requires_grad: str = _col(BASIC[7])
    stat_diffs: Sequence[Any] = _col(*STAT_DIFFS)
    """Statistics mode: the differences, then (``stat_relative``) the relative errors."""
    stat_relative: Sequence[Any] = _col(*STAT_RELATIVE)
    tensor_metrics: Sequence[Any] = _col(*TENSOR_METRICS)
    """Tensor mode: Cosine ... Five Thousandths Err Ratio."""
    target_stats: Sequence[Any] = _col(*NPU_STATS)
    golden_stats: Sequence[Any] = _col(*BENCH_STATS)
    target_md5: Any = _col(NPU_MD5)
    golden_md5: Any = _col(BENCH_MD5)
    requires_grad_consistent: str = _col(REQ_GRAD_CONSISTENT)
    result: str = _col(RESULT)
    err_message: str = _col(ERR_MESSAGE)
    """JSON list of messages (msprobe's form)."""
    stack: str = _col(STACK)
    data_name: str = _col(DATA_NAME)
    """Tensor mode: ``['<target file>', '<golden file>']``."""


@functools.lru_cache(maxsize=None)
def column_fields(header: Tuple[str, ...]) -> List[Tuple[str, Any]]:
    """Per column of ``header``: (field, index into the field's sequence, or None for a one-column field).
    A column name two fields share (``MaxRelativeErr``: a statistic's relative error, and a tensor metric)
    belongs to the field whose columns are all in the header: each mode's header holds one of them."""
    where: Dict[str, Tuple[str, Any]] = {}
    for item in fields(TableRow):
        columns = item.metadata["columns"]
        if not all(column in header for column in columns):
            continue
        for index, column in enumerate(columns):
            where[column] = (item.name, None if len(columns) == 1 else index)
    return [where[column] for column in header]
