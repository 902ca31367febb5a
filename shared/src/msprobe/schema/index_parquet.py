"""The statistics index as a Parquet file (``index_table`` is the format): written atomically, read back
checked. pyarrow is optional (the ``index`` extra): without it asking for the index raises a one-line
:class:`MsprobeError` saying what to install."""
from __future__ import annotations

import base64
import json
import os
import zlib
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

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
            "entries": base64.b64encode(zlib.compress(json.dumps(table.entries).encode(), 1)).decode("ascii")}
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


def read_index_table(index: PathLike, handle: Any = None, columns: Optional[Sequence[str]] = None) -> RankTable:
    """:func:`read_index`'s table, with the entries' names (``handle``: the file, already opened; ``columns``: only
    these, for a reader that needs no more; ``order`` and ``shape`` are always read, as the check reads them)."""
    _, parquet = pyarrow_modules()
    wanted = list(COLUMNS) if columns is None else [c for c in COLUMNS if c in columns or c in ("order", "shape")]
    try:
        handle = handle or parquet.ParquetFile(index)
        table = handle.read(columns=wanted)  # (ParquetFile.read: 4x faster than read_table here)
    except Exception as exc:  # pyarrow raises several kinds for a damaged file
        raise SchemaError(index, None, f"not a readable index ({exc.__class__.__name__})") from None
    meta = table.schema.metadata or {}
    if meta.get(b"format") != FORMAT.encode():
        raise SchemaError(index, "format", f"expected {FORMAT}", meta.get(b"format"), has_got=True)
    header, entries = _checked(index, table, meta)
    return RankTable(header, None, entries, path=str(index), arrow=table)


_MAX_ENTRIES_TEXT = 1 << 30
"""The entries' names as JSON, at most (a stranger's index could inflate without end)."""


def _inflated(packed: bytes) -> bytes:
    """The entries' JSON from the metadata's base64 of its zlib stream, bounded."""
    inflater = zlib.decompressobj()
    text = inflater.decompress(base64.b64decode(packed, validate=True), _MAX_ENTRIES_TEXT)
    if inflater.unconsumed_tail:
        raise ValueError("entries beyond the bound")
    return text


def _checked(index: PathLike, table: Any, meta: Dict[bytes, bytes]) -> Tuple[Dict[str, Any], List[str]]:
    """(header, entries) of an index read, after checking what its readers rely on beyond the column types
    :func:`open_index` checked: the metadata's shapes, rows in call order pointing at entries it names, no
    null in a shape (an index may come with a stranger's dump: a bad one is refused, naming the file)."""
    for name, expected in _types().items():
        if table.schema.get_field_index(name) >= 0 and table.schema.field(name).type != expected:
            raise SchemaError(index, name, f"expected a column of {expected}", str(table.schema.field(name).type),
                              has_got=True)
    if table.column("shape").combine_chunks().values.null_count:
        raise SchemaError(index, "shape", "expected integers")
    try:
        header, entries = json.loads(meta[b"header"]), json.loads(_inflated(meta[b"entries"]))
    except (KeyError, ValueError, RecursionError, zlib.error):
        raise SchemaError(index, "metadata", "expected the header as JSON and the entries as compressed JSON") from None
    if not isinstance(header, dict) or not (isinstance(entries, list) and set(map(type, entries)) <= {str}):
        raise SchemaError(index, "metadata", "expected a header object and a list of entry names")
    order = table.column("order").combine_chunks()
    if order.null_count:
        raise SchemaError(index, "order", "expected a number in every row")
    numbers = order.to_numpy()
    if numbers.size and (numbers[0] < 0 or numbers[-1] >= len(entries) or (numbers[1:] < numbers[:-1]).any()):
        raise SchemaError(index, "order", f"expected rows in call order, each an entry's position (0 to "
                          f"{len(entries) - 1})")
    return header, entries
