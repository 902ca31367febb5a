"""The statistics index: one rank's dump.json as a columnar table (Parquet), beside or instead of dump.json.

dump.json stays the exchange format; the index holds the same leaves (``leaves.entry_leaves``: every tensor
record, and every plain argument compare shows), one row each, in call order, so tools that scan statistics
(compare, overflow_check, inspect) read columns instead of parsing JSON. A row (:attr:`RankTable.rows`; readers
that scan take :attr:`RankTable.columns`) holds, whichever side it comes from:

``order`` (the entry's position in ``data``: call order), ``entry``, ``direction`` (``input_args``,
``input_kwargs``, ``output``, ``parameters``, ``input``...), ``path`` (the rest of the leaf's position,
dot-separated: ``0``, ``1.2``, ``weight``), ``type``, ``dtype``, ``shape``, the statistics of
:data:`~msprobe.schema.dump.STAT_KEYS` as floats (None when absent), ``requires_grad``, ``md5`` (the checksum
as written: CRC-32, ``0x`` xor checksum, or the JSON text of a 0-d tensor's value), ``data_name``; then
``tensor`` (false for a plain value or None), ``label`` and ``kind`` (compare's row name after the entry's, and
``input``/``output``/``parameters``; None where compare shows no row), ``value`` (a plain leaf's record as JSON
text) and ``exact`` (JSON text of the statistics and checksum as dump.json spells them, where a float does
not: ``3`` and ``"inf"``; None for nearly every row), so that a reader gets back dump.json's leaves exactly.

This module is the format and the table built from dump.json; ``index_parquet`` writes and reads it as
Parquet, ``index`` finds the one matching a dump.json (its public face: import from there).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .dump import STAT_KEYS, DumpFile, checked_leaves, detect_framework, load_dump, stat_value, validate_dump
from .errors import PathLike
from .journal import DUMP_NAME, JOURNAL_NAME, journal_recorded
from .jsonio import load_json
from .leaves import Leaf, entry_leaves

INDEX_NAME = "dump.index.parquet"
"""The index the dump writes beside a rank's dump.json."""
FORMAT = "msprobe-index/4"
"""Written in the table's metadata; an index of another format is rebuilt, never misread. Version 2 added the
names of every entry, in call order (an entry recording no tensor has no row but counts in a summary); version
3 the plain leaves and the columns that give compare its rows (``tensor``, ``label``, ``kind``, ``value``,
``exact``). Version 4 keeps the entries' names in the metadata compressed (zlib, then base64): 3 MB of names
made opening a 100,000-entry index take 0.09 s, 0.01 s compressed."""
TEXT_COLUMNS = ("entry", "direction", "path", "type", "dtype")
LEAF_COLUMNS = ("tensor", "label", "kind", "value", "exact")
COLUMNS = (("order",) + TEXT_COLUMNS + ("shape",) + STAT_KEYS + ("requires_grad", "md5", "data_name")
           + LEAF_COLUMNS)


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
         self._requires_grad, self._md5, self._data_name, self._tensor, self._label, self._kind, self._value,
         self._exact) = (self.columns[name].append for name in _RECORD_COLUMNS)
        self._blank = [self.columns[name].append for name in _TENSOR_ONLY]

    def add(self, order: int, name: str, leaf: Leaf, stats: Optional[List[Optional[float]]]) -> None:
        """One leaf; ``stats`` as the record check read them, None for a leaf that is no tensor."""
        trail, record = leaf.trail, leaf.value
        self._order(order)
        self._entry(name)
        self._direction(str(trail[0]) if trail else "")
        self._path(".".join([str(step) for step in trail[1:]]) if len(trail) > 1 else "")
        self._label(leaf.label)
        self._kind(leaf.kind)
        get = record.get
        self._type(get("type"))
        if stats is None:  # a plain value, or None ({}): its record is what compare reads
            for append in self._blank:
                append(None)
            self._tensor(False)
            self._value(json.dumps(record))
            self._exact(None)
            return
        self._tensor(True)
        self._value(None)
        self._dtype(get("dtype"))
        self._shape(get("shape"))
        exact = None
        for key, append, value in zip(STAT_KEYS, self._stats, stats):
            append(value)
            spelled = get(key)
            if spelled is not None and type(spelled) is not float:
                exact = exact or {}
                exact[key] = spelled
        self._requires_grad(get("requires_grad"))
        md5 = get("md5")
        if md5 is None or type(md5) is str:
            self._md5(md5)
        else:
            self._md5(_checksum(md5))
            exact = exact or {}
            exact["md5"] = md5
        self._data_name(get("data_name"))
        self._exact(None if exact is None else json.dumps(exact))


_RECORD_COLUMNS = ("order", "entry", "direction", "path", "type", "dtype", "shape", "requires_grad", "md5",
                   "data_name", "tensor", "label", "kind", "value", "exact")
_TENSOR_ONLY = ("dtype", "shape") + STAT_KEYS + ("requires_grad", "md5", "data_name")


@dataclass
class RankTable:
    """One rank's statistics as a reader gets them, from its index or from dump.json (the same either way)."""

    header: Dict[str, Any]
    lists: Optional[Dict[str, List[Any]]]
    """The table by column as Python lists (:attr:`columns`); None until asked for, when read from an index."""
    entries: List[str]
    """Every entry's name in call order (an entry holding no leaf has no row)."""
    path: Optional[str] = None
    """The index file it was read from; None when read from dump.json."""
    arrow: Any = None
    """The index as read (a ``pyarrow.Table``), for readers that judge by column without Python values."""

    @property
    def columns(self) -> Dict[str, List[Any]]:
        """The table by column (:data:`COLUMNS`), each a list of one value per leaf, in call order."""
        if self.lists is None:
            self.lists = {name: python_values(self.arrow.column(name).combine_chunks()) for name in COLUMNS
                          if self.arrow.schema.get_field_index(name) >= 0}
        return self.lists

    @property
    def indexed(self) -> bool:
        return self.path is not None

    @property
    def rows(self) -> List[Dict[str, Any]]:
        """The table by row: one dict per leaf (made on each call: readers that scan, scan columns)."""
        return [dict(zip(COLUMNS, values)) for values in zip(*(self.columns[name] for name in COLUMNS))]

    @property
    def row_count(self) -> int:
        return len(self.columns["order"])

    @property
    def tensor_count(self) -> int:
        """The rows that are tensor records (the others are plain arguments and None)."""
        return sum(self.columns["tensor"])

    def all_finite(self) -> bool:
        """No statistic of any row is inf or nan (an overflow scan's first question, asked of columns)."""
        return all(value is None or math.isfinite(value) for key in STAT_KEYS for value in self.columns[key])


def python_values(column: Any) -> List[Any]:
    """A pyarrow column as Python values, what ``to_pylist`` gives, through numpy (4x faster: a rank's index holds
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


def row_is_finite(row: Dict[str, Any]) -> bool:
    """False when a statistic of the row is inf or nan (a row's statistics are floats or None, so this is
    ``record_is_finite`` without its parsing of a record's spellings)."""
    return all(row[key] is None or math.isfinite(row[key]) for key in STAT_KEYS)


def table_of_dump(dump: DumpFile) -> RankTable:
    """The table of a dump already read (and checked) from JSON."""
    return table_of_data(dump.header(), dump.data)


def table_of_data(header: Dict[str, Any], data: Dict[str, Any], path: Optional[PathLike] = None,
                  checked: bool = True) -> RankTable:
    """The table of a dump's ``header`` and ``data`` object, each record checked as dump.json's reader checks it
    (``path``: the file named in errors). Unchecked, a statistic that is no number is kept as written (in
    ``exact``) for readers that show it, and a malformed record raises what Python raises on it."""
    columns = _Columns()
    add = columns.add
    for order, (name, entry) in enumerate(data.items()):
        leaves = (checked_leaves(name, entry, path) if checked  # each statistic read once, by the check
                  else [(leaf, _statistics(leaf.value) if leaf.tensor else None) for leaf in entry_leaves(name, entry)])
        for leaf, stats in leaves:
            add(order, name, leaf, stats)
    return RankTable(header, columns.columns, list(data))


def _statistics(record: Dict[str, Any]) -> List[Optional[float]]:
    return [value if type(value) is float or value is None else stat_value(value)
            for value in map(record.get, STAT_KEYS)]


def rows_of_dump(dump: DumpFile) -> List[Dict[str, Any]]:
    """The index's rows of a dump already read (and checked) from JSON, in call order."""
    return table_of_dump(dump).rows


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
    return table_of_data(header_of(doc, path), data, path)  # the header's checks; the entries' in the walk


def header_of(doc: Dict[str, Any], path: PathLike) -> Dict[str, Any]:
    """What :meth:`DumpFile.header` gives for this document (its header checked, its entries not)."""
    head = validate_dump(dict(doc, data={}), path)
    head.framework = detect_framework(doc)
    return head.header()
