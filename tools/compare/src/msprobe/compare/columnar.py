"""A rank's full table in columnar form (Parquet): what compare writes instead of the CSV above
``CompareConfig.table_max_rows`` rows, where the per-row CSV is no longer what a person reads.

The same columns as the CSV (msprobe's header for the mode) and the same cells: a column whose every cell is
a number (or empty) is stored as float64, any other column as text, each cell the text the CSV holds.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, List, Sequence

from msprobe.schema.compare_result import NOT_APPLICABLE as NA
from msprobe.schema.index import pyarrow_modules

from .cells import Coded, JoinedCells
from .output import write_new


def write_table(folder: Path, name: str, header: List[str], columns: List[Any]) -> Path:
    """The table (``columns``: its cells by column of ``header``, each a sequence or :class:`cells.Coded`) as
    Parquet."""
    pyarrow, parquet = pyarrow_modules()
    table = pyarrow.Table.from_arrays([_array(pyarrow, values) for values in columns], names=list(header))
    # (no dictionary pages, no column statistics: a third of the time to write, the same size once compressed)
    return write_new(folder, name, lambda handle: parquet.write_table(table, handle, use_dictionary=False,
                                                                      write_statistics=False), binary=True)


def _array(pyarrow: Any, values: Any):
    if isinstance(values, Coded):  # each cell taken from the column's few texts by its code, in C
        return _cells_array(pyarrow, values.values).take(pyarrow.array(values.codes))
    if isinstance(values, JoinedCells):  # row names: entry and label joined in C
        import pyarrow.compute as compute

        missing = values.head_codes < 0
        heads = pyarrow.array(values.heads, type=pyarrow.string()).take(
            pyarrow.array(values.head_codes, mask=missing))
        tails = pyarrow.array(values.tails, type=pyarrow.string()).take(pyarrow.array(values.tail_codes))
        return compute.binary_join_element_wise(heads, tails, ".").fill_null(NA)
    return _cells_array(pyarrow, values)


def _cells_array(pyarrow: Any, values: Sequence[Any]):
    """float64 when every cell is a number or empty, text when every cell is text, else each cell's text (an
    integer beyond 64 bits is text). Each type is tried in turn: telling pyarrow the type is 6x faster than
    letting it find it on a column of long texts."""
    for kind in (pyarrow.float64(), pyarrow.string()):
        try:
            return pyarrow.array(values, type=kind)
        except (pyarrow.ArrowInvalid, pyarrow.ArrowTypeError, OverflowError):
            continue
    return pyarrow.array([None if v is None else str(v) for v in values], type=pyarrow.string())
