"""The statistics index: one rank's tensor records as a columnar table (Parquet), beside or instead of dump.json.

dump.json stays the exchange format; the index holds the same statistics, one row per tensor record, in
call order, so tools that scan statistics (compare, overflow_check, inspect) read columns instead of parsing
JSON. A row (:attr:`RankTable.rows`; readers that scan take :attr:`RankTable.columns`) holds, whichever side
it comes from:

``order`` (the entry's position in ``data``: call order), ``entry``, ``direction`` (``input_args``,
``input_kwargs``, ``output``, ``parameters``, ``input``...), ``path`` (the rest of the record's position,
dot-separated: ``0``, ``1.2``, ``weight``), ``type``, ``dtype``, ``shape``, the statistics of
:data:`~msprobe.schema.dump.STAT_KEYS` as floats (None when absent), ``requires_grad``, ``md5`` (the checksum
as written: CRC-32, ``0x`` xor checksum, or the JSON text of a 0-d tensor's value) and ``data_name``.

Where it comes from: the dump writes it beside dump.json (``RankWriter(index=True)``, :func:`write_beside`);
``msprobe index`` builds it for dumps without one into a cache folder. Readers take it through
:func:`rank_table` / :func:`find_index` (``msprobe inspect``, ``overflow_check``).

pyarrow is optional (the ``index`` extra): without it the JSON path works and asking for the index raises a
one-line :class:`MsprobeError` saying what to install.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from .dump import STAT_KEYS, DumpFile, checked_records, detect_framework, load_dump, validate_dump
from .errors import MsprobeError, PathLike, SchemaError
from .journal import DUMP_NAME, JOURNAL_NAME, journal_recorded
from .jsonio import load_json

INDEX_NAME = "dump.index.parquet"
"""The index the dump writes beside a rank's dump.json."""
FORMAT = "msprobe-index/2"
"""Written in the table's metadata; an index of another format is rebuilt, never misread. Version 2 adds the
names of every entry, in call order (an entry recording no tensor has no row but counts in a summary)."""
TEXT_COLUMNS = ("entry", "direction", "path", "type", "dtype")
COLUMNS = ("order",) + TEXT_COLUMNS + ("shape",) + STAT_KEYS + ("requires_grad", "md5", "data_name")
INSTALL_HINT = "the statistics index needs pyarrow: pip install 'msprobe-shared[index]'"
_HASH_CHUNK = 4 << 20


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


def _checksum(value: Any) -> Optional[str]:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)  # msprobe 26.2.0's xor mode: a 0-d tensor's value, a number


class _Columns:
    """The index's columns filled record by record: a rank holds hundreds of thousands of records, and a dict
    per row (then taken apart again into columns) was most of the cost of building an index."""

    def __init__(self) -> None:
        self.columns: Dict[str, List[Any]] = {name: [] for name in COLUMNS}
        self._stats = [self.columns[key].append for key in STAT_KEYS]
        (self._order, self._entry, self._direction, self._path, self._type, self._dtype, self._shape,
         self._requires_grad, self._md5, self._data_name) = (self.columns[name].append for name in _RECORD_COLUMNS)

    def add(self, order: int, name: str, trail: Tuple, record: Dict[str, Any], stats: List[Optional[float]]) -> None:
        self._order(order)
        self._entry(name)
        self._direction(str(trail[0]) if trail else "")
        self._path(".".join([str(step) for step in trail[1:]]) if len(trail) > 1 else "")
        get = record.get
        self._type(get("type"))
        self._dtype(get("dtype"))
        self._shape(get("shape"))
        for append, value in zip(self._stats, stats):
            append(value)
        self._requires_grad(get("requires_grad"))
        md5 = get("md5")
        self._md5(md5 if md5 is None or type(md5) is str else _checksum(md5))
        self._data_name(get("data_name"))


_RECORD_COLUMNS = ("order", "entry", "direction", "path", "type", "dtype", "shape", "requires_grad", "md5",
                   "data_name")


@dataclass
class RankTable:
    """One rank's statistics as a reader gets them, from its index or from dump.json (the same either way)."""

    header: Dict[str, Any]
    columns: Dict[str, List[Any]]
    """The table by column (:data:`COLUMNS`), each a list of one value per tensor record, in call order."""
    entries: List[str]
    """Every entry's name in call order (an entry recording no tensor has no row)."""
    indexed: bool = False
    """Read from an index (not from dump.json)."""

    @property
    def rows(self) -> List[Dict[str, Any]]:
        """The table by row: one dict per tensor record (made on each call: readers that scan, scan columns)."""
        return [dict(zip(COLUMNS, values)) for values in zip(*(self.columns[name] for name in COLUMNS))]

    @property
    def row_count(self) -> int:
        return len(self.columns["order"])

    def all_finite(self) -> bool:
        """No statistic of any row is inf or nan (an overflow scan's first question, asked of columns)."""
        return all(value is None or math.isfinite(value) for key in STAT_KEYS for value in self.columns[key])


def row_is_finite(row: Dict[str, Any]) -> bool:
    """False when a statistic of the row is inf or nan (a row's statistics are floats or None, so this is
    ``record_is_finite`` without its parsing of a record's spellings)."""
    return all(row[key] is None or math.isfinite(row[key]) for key in STAT_KEYS)


def table_of_dump(dump: DumpFile) -> RankTable:
    """The table of a dump already read (and checked) from JSON."""
    return table_of_data(dump.header(), dump.data)


def table_of_data(header: Dict[str, Any], data: Dict[str, Any], path: Optional[PathLike] = None) -> RankTable:
    """The table of a dump's ``header`` and ``data`` object, each record checked as dump.json's reader checks it
    (``path``: the file named in errors)."""
    columns = _Columns()
    add = columns.add
    for order, (name, entry) in enumerate(data.items()):
        for trail, record, stats in checked_records(name, entry, path):  # each statistic read once, by the check
            add(order, name, trail, record, stats)
    return RankTable(header, columns.columns, list(data))


def rows_of_dump(dump: DumpFile) -> List[Dict[str, Any]]:
    """The index's rows of a dump already read (and checked) from JSON, in call order."""
    return table_of_dump(dump).rows


def source_file(rank_path: Path) -> Path:
    """The file an index of this rank directory is built from: dump.json, or the journal of a killed run."""
    journal = rank_path / JOURNAL_NAME
    return journal if journal_recorded(journal) else rank_path / DUMP_NAME


def source_key(path: PathLike) -> str:
    """``<size>-<blake2b of the bytes>``: what an index was built from (mtimes survive copies and lie)."""
    digest = _digest()
    size = 0
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
                digest.update(chunk)
                size += len(chunk)
    except OSError as exc:
        raise SchemaError(path, None, f"cannot read: {exc.strerror}") from None
    return f"{size}-{digest.hexdigest()}"


def bytes_key(blob: bytes) -> str:
    """:func:`source_key` of a file holding ``blob`` (the writer keys the dump.json it has just written)."""
    digest = _digest()
    digest.update(blob)
    return f"{len(blob)}-{digest.hexdigest()}"


def _digest():
    return hashlib.blake2b(digest_size=16)


def read_rows_json(path: PathLike) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """(header, rows) of a dump.json (or journal), checked as :func:`load_dump` checks it, in one pass."""
    table = read_json_table(path)
    return table.header, table.rows


def read_json_table(path: PathLike) -> RankTable:
    """:func:`read_rows_json`'s table, with the entries' names."""
    path = Path(path)
    if path.name != DUMP_NAME or journal_recorded(path.parent / JOURNAL_NAME):
        return table_of_dump(load_dump(path.parent / DUMP_NAME if path.name == JOURNAL_NAME else path))
    doc = load_json(path)
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict):
        validate_dump(doc, path)  # says what is wrong
    return table_of_data(_header_of(doc, path), data, path)  # the header's checks; the entries' in the walk


def _header_of(doc: Dict[str, Any], path: PathLike) -> Dict[str, Any]:
    """What :meth:`DumpFile.header` gives for this document (its header checked, its entries not)."""
    head = validate_dump(dict(doc, data={}), path)
    head.framework = detect_framework(doc)
    return head.header()


def write_index(table: RankTable, key: str, out: PathLike) -> Path:
    """Write a table as Parquet at ``out`` (atomically: a reader never sees half a table), keyed by ``key``."""
    pyarrow, parquet = pyarrow_modules()
    types = {"order": pyarrow.int64(), "shape": pyarrow.list_(pyarrow.int64()), "requires_grad": pyarrow.bool_()}
    types.update({key_: pyarrow.float64() for key_ in STAT_KEYS})
    arrays = [pyarrow.array(table.columns[name], type=types.get(name, pyarrow.string())) for name in COLUMNS]
    meta = {"format": FORMAT, "source": key, "header": json.dumps(table.header),
            "entries": json.dumps(table.entries)}
    arrow = pyarrow.Table.from_arrays(arrays, names=list(COLUMNS)).replace_schema_metadata(meta)
    out = Path(out)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    parquet.write_table(arrow, tmp)
    os.replace(tmp, out)
    return out


def index_key(index: PathLike) -> Optional[str]:
    """The source key an index file was built from; None when it is not an index of this format."""
    _, parquet = pyarrow_modules()
    try:
        meta = parquet.read_schema(index).metadata or {}
    except (OSError, ValueError, Exception):  # a truncated or foreign file is no index: rebuilt
        return None
    if meta.get(b"format") != FORMAT.encode():
        return None
    return meta.get(b"source", b"").decode() or None


def read_index(index: PathLike) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """(header, rows) of an index file, the same rows :func:`read_rows_json` gives for its source."""
    table = read_index_table(index)
    return table.header, table.rows


def read_index_table(index: PathLike) -> RankTable:
    """:func:`read_index`'s table, with the entries' names."""
    _, parquet = pyarrow_modules()
    try:
        table = parquet.read_table(index)
    except Exception as exc:  # pyarrow raises several kinds for a damaged file
        raise SchemaError(index, None, f"not a readable index ({exc.__class__.__name__})") from None
    meta = table.schema.metadata or {}
    if meta.get(b"format") != FORMAT.encode():
        raise SchemaError(index, "format", f"expected {FORMAT}", meta.get(b"format"), has_got=True)
    columns = {name: table.column(name).to_pylist() for name in COLUMNS}
    return RankTable(json.loads(meta[b"header"]), columns, json.loads(meta[b"entries"]), indexed=True)


def build_index(rank_path: PathLike, out: PathLike) -> Tuple[Path, int]:
    """Build the index of one rank directory into ``out``; (path, rows)."""
    source = source_file(Path(rank_path))
    key = source_key(source)
    table = read_json_table(source)
    return write_index(table, key, out), table.row_count


def write_beside(rank_dir: PathLike, dump_json: bytes) -> Optional[Path]:
    """The dump's index of the dump.json it has just written (``dump_json``: its bytes), beside it; None,
    writing nothing, where pyarrow is not installed (the index is an optional extra of the dump)."""
    if not have_pyarrow():
        return None
    doc = json.loads(dump_json)
    out = Path(rank_dir) / INDEX_NAME
    source = out.with_name(DUMP_NAME)
    return write_index(table_of_data(_header_of(doc, source), doc["data"], source), bytes_key(dump_json), out)


def cache_dir(cache: Optional[PathLike] = None) -> Path:
    """``--cache``, else ``${MSPROBE_CACHE:-~/.cache/msprobe}/index``."""
    if cache is not None:
        return Path(cache)
    return Path(os.environ.get("MSPROBE_CACHE") or Path.home() / ".cache" / "msprobe") / "index"


def cached_path(cache: PathLike, key: str) -> Path:
    """Where the index of a source with this key lives in a cache folder (content-addressed: equal ranks share)."""
    return Path(cache) / f"{key}.parquet"


def rank_rows(rank_path: PathLike, cache: Optional[PathLike] = None) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """(header, rows) of :func:`rank_table`."""
    table = rank_table(rank_path, cache)
    return table.header, table.rows


def rank_table(rank_path: PathLike, cache: Optional[PathLike] = None) -> RankTable:
    """The one reader: a rank directory's table, from a matching index when there is one (beside dump.json,
    or in the ``cache`` folder), else from dump.json. An index of other bytes is never used."""
    found = find_index(rank_path, cache)
    return found if found is not None else read_json_table(source_file(Path(rank_path)))


def find_index(rank_path: PathLike, cache: Optional[PathLike] = None) -> Optional[RankTable]:
    """A rank directory's table from a matching index (beside dump.json, or in ``cache``); None when there is
    none, or pyarrow is not installed."""
    rank_path = Path(rank_path)
    beside = rank_path / INDEX_NAME
    if not have_pyarrow() or (cache is None and not beside.is_file()):
        return None
    key = source_key(source_file(rank_path))
    for index in (beside, cached_path(cache, key) if cache is not None else None):
        if index is not None and index.is_file() and index_key(index) == key:
            return read_index_table(index)
    return None


def reader_cache() -> Optional[Path]:
    """The cache folder ``msprobe index`` fills by default, for readers that look there (None: there is none)."""
    folder = cache_dir()
    return folder if folder.is_dir() else None
