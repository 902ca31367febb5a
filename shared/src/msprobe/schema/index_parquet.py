"""The statistics index as a Parquet file (``index_table`` is the format): written atomically, read back
checked. pyarrow is optional (the ``index`` extra): without it asking for the index raises a one-line
:class:`MsprobeError` saying what to install."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .dump import STAT_KEYS
from .errors import MsprobeError, PathLike, SchemaError
from .index_table import COLUMNS, FORMAT, RankTable

INSTALL_HINT = "the statistics index needs pyarrow: pip install 'msprobe-shared[index]'"


def pyarrow_modules() -> Tuple[Any, Any]:
    """(pyarrow, pyarrow.parquet), or a one-line MsprobeError saying what to install."""
    try:
        import pyarrow
        import pyarrow.parquet as parquet
    except ImportError:
        raise MsprobeError(INSTALL_HINT) from None
    return pyarrow, parquet


def have_pyarrow() -> bool:
    try:
        pyarrow_modules()
    except MsprobeError:
        return False
    return True


def write_index(table: RankTable, key: str, out: PathLike) -> Path:
    """Write a table as Parquet at ``out`` (atomically: a reader never sees half a table), keyed by ``key``."""
    pyarrow, parquet = pyarrow_modules()
    types = _types()
    arrays = [pyarrow.array(table.columns[name], type=types[name]) for name in COLUMNS]
    meta = {"format": FORMAT, "source": key, "header": json.dumps(table.header),
            "entries": json.dumps(table.entries)}
    arrow = pyarrow.Table.from_arrays(arrays, names=list(COLUMNS)).replace_schema_metadata(meta)
    out = Path(out)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    parquet.write_table(arrow, tmp)
    os.replace(tmp, out)
    return out


def _types() -> Dict[str, Any]:
    """Each column's Arrow type: what the writer writes and the reader insists on."""
    pyarrow, _ = pyarrow_modules()
    types = {name: pyarrow.string() for name in COLUMNS}
    types.update({"order": pyarrow.int64(), "shape": pyarrow.list_(pyarrow.int64()), "requires_grad": pyarrow.bool_(),
                  "tensor": pyarrow.bool_()})
    types.update({key: pyarrow.float64() for key in STAT_KEYS})
    return types


def index_key(index: PathLike) -> Optional[str]:
    """The source key an index file was built from; None when it is not an index of this format."""
    opened = open_index(index)
    return None if opened is None else opened[1]


def open_index(index: PathLike) -> Optional[Tuple[Any, str]]:
    """(the Parquet file, its source key) of an index of this format, every column of its type; None for
    anything else (a truncated, foreign or forged file is no index: rebuilt, and readers read dump.json). One
    read of the footer, whose metadata holds every entry's name."""
    _, parquet = pyarrow_modules()
    try:
        handle = parquet.ParquetFile(index)
        schema = handle.schema_arrow
    except Exception:  # pyarrow raises several kinds for a damaged file
        return None
    meta = schema.metadata or {}
    if meta.get(b"format") != FORMAT.encode() or not meta.get(b"source"):
        return None
    types = _types()
    if any(schema.get_field_index(name) < 0 or schema.field(name).type != types[name] for name in COLUMNS):
        return None
    return handle, meta[b"source"].decode()


def read_index(index: PathLike) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """(header, rows) of an index file, the same rows :func:`read_rows_json` gives for its source."""
    table = read_index_table(index)
    return table.header, table.rows


def read_index_table(index: PathLike, handle: Any = None) -> RankTable:
    """:func:`read_index`'s table, with the entries' names (``handle``: the file, already opened)."""
    _, parquet = pyarrow_modules()
    try:
        handle = handle or parquet.ParquetFile(index)
        table = handle.read(columns=list(COLUMNS))  # (ParquetFile.read: 4x faster than read_table here)
    except Exception as exc:  # pyarrow raises several kinds for a damaged file
        raise SchemaError(index, None, f"not a readable index ({exc.__class__.__name__})") from None
    meta = table.schema.metadata or {}
    if meta.get(b"format") != FORMAT.encode():
        raise SchemaError(index, "format", f"expected {FORMAT}", meta.get(b"format"), has_got=True)
    header, entries = _checked(index, table, meta)
    columns = {name: _values(table.column(name).combine_chunks()) for name in COLUMNS}
    return RankTable(header, columns, entries, path=str(index))


def _checked(index: PathLike, table: Any, meta: Dict[bytes, bytes]) -> Tuple[Dict[str, Any], List[str]]:
    """(header, entries) of an index read, after checking what its readers rely on beyond the column types
    :func:`open_index` checked: the metadata's shapes, rows in call order pointing at entries it names, no
    null in a shape (an index may come with a stranger's dump: a bad one is refused, naming the file)."""
    for name, expected in _types().items():
        if table.schema.field(name).type != expected:
            raise SchemaError(index, name, f"expected a column of {expected}", str(table.schema.field(name).type),
                              has_got=True)
    if table.column("shape").combine_chunks().values.null_count:
        raise SchemaError(index, "shape", "expected integers")
    try:
        header, entries = json.loads(meta[b"header"]), json.loads(meta[b"entries"])
    except (KeyError, ValueError, RecursionError):
        raise SchemaError(index, "metadata", "expected the header and entries as JSON") from None
    if not isinstance(header, dict) or not (isinstance(entries, list) and all(isinstance(e, str) for e in entries)):
        raise SchemaError(index, "metadata", "expected a header object and a list of entry names")
    order = table.column("order").combine_chunks()
    if order.null_count:
        raise SchemaError(index, "order", "expected a number in every row")
    numbers = order.to_numpy()
    if numbers.size and (numbers[0] < 0 or numbers[-1] >= len(entries) or (numbers[1:] < numbers[:-1]).any()):
        raise SchemaError(index, "order", f"expected rows in call order, each an entry's position (0 to "
                          f"{len(entries) - 1})")
    return header, entries


def _values(column: Any) -> List[Any]:
    """A column as Python values, what ``to_pylist`` gives, through numpy (4x faster: a rank's index holds
    millions of values): a list column by slicing its flat values, nulls put back as None."""
    if column.type.__class__.__name__ == "ListType":
        flat = column.values.to_numpy(zero_copy_only=False).tolist()  # (offsets index the values under nulls too)
        offsets = column.offsets.to_numpy()
        values = list(map(flat.__getitem__, map(slice, offsets[:-1].tolist(), offsets[1:].tolist())))
    else:
        values = column.to_numpy(zero_copy_only=False).tolist()
    if column.null_count:
        for position in column.is_null().to_numpy(zero_copy_only=False).nonzero()[0].tolist():
            values[position] = None
    return values
