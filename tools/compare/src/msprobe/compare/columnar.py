"""A rank's full table in columnar form (Parquet): what compare writes instead of the CSV above
``CompareConfig.table_max_rows`` rows, where the per-row CSV is no longer what a person reads.

The same columns as the CSV (msprobe's header for the mode) and the same cells: a column whose every cell is
a number (or empty) is stored as float64, any other column as text, each cell the text the CSV holds.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, List, Sequence

from msprobe.schema.index import pyarrow_modules

from .output import write_new


def write_table(folder: Path, name: str, header: List[str], columns: List[List[Any]]) -> Path:
    """The table (``columns``: its cells by column of ``header``) as Parquet."""
    pyarrow, parquet = pyarrow_modules()
    table = pyarrow.Table.from_arrays([_array(pyarrow, values) for values in columns], names=list(header))
    # (no dictionary pages: half the time to write, about the same size once compressed)
    return write_new(folder, name, lambda handle: parquet.write_table(table, handle, use_dictionary=False),
                     binary=True)


def _array(pyarrow: Any, values: Sequence[Any]):
    """float64 when every cell is a number or empty, text when every cell is text, else each cell's text (an
    integer beyond 64 bits is text). Each type is tried in turn: telling pyarrow the type is 6x faster than
    letting it find it on a column of long texts."""
    for kind in (pyarrow.float64(), pyarrow.string()):
        try:
            return pyarrow.array(values, type=kind)
        except (pyarrow.ArrowInvalid, pyarrow.ArrowTypeError, OverflowError):
            continue
    return pyarrow.array([None if v is None else str(v) for v in values], type=pyarrow.string())
