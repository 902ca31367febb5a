"""A rank's full table in columnar form (Parquet): what compare writes instead of the CSV above
``CompareConfig.table_max_rows`` rows, where the per-row CSV is no longer what a person reads.

The same columns as the CSV (msprobe's header for the mode) and the same cells: a column whose every cell is
a number (or empty) is stored as float64, any other column as text, each cell the text the CSV holds.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, List

from msprobe.schema.compare_result import header
from msprobe.schema.index import pyarrow_modules

from .output import write_new
from .table_row import TableRow, table_columns


def write_table(folder: Path, name: str, mode: str, rows: List[TableRow]) -> Path:
    pyarrow, parquet = pyarrow_modules()
    columns = header(mode)
    arrays = [_array(pyarrow, values) for values in table_columns(rows, columns)]
    table = pyarrow.Table.from_arrays(arrays, names=list(columns))
    return write_new(folder, name, lambda handle: parquet.write_table(table, handle), binary=True)


_NUMBERS = {int, float, type(None)}


def _array(pyarrow: Any, values: List[Any]):
    kinds = set(map(type, values))
    if kinds <= _NUMBERS:  # (ints made floats here: pyarrow refuses one beyond 64 bits)
        numbers = values if int not in kinds else [None if v is None else float(v) for v in values]
        return pyarrow.array(numbers, type=pyarrow.float64())
    if kinds <= {str, type(None)}:
        return pyarrow.array(values, type=pyarrow.string())
    return pyarrow.array([None if v is None else str(v) for v in values], type=pyarrow.string())
