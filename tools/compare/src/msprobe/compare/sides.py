"""One rank of one dump as compare reads it: its entries' rows, from the rank's statistics index when a matching
one exists (beside dump.json, or in the cache ``msprobe index`` fills), else from dump.json.

Both give the same rows: the index holds the leaves of the one walk (``msprobe.schema.leaves``) that
:func:`rows.entry_rows` takes over dump.json, with each statistic and checksum as dump.json spells it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from msprobe.schema import RankDir, SchemaError
from msprobe.schema.dump import STAT_KEYS
from msprobe.schema.index import RankTable, find_index, reader_cache
from msprobe.schema.unchecked import load_rank_unchecked

from .rows import Row, entry_rows

_PROBE_ENTRIES = 64
"""Entries looked at to tell what a dump holds (a dump is written in one summary mode throughout)."""
_RECORD_KEYS = ("type", "dtype", "shape") + STAT_KEYS + ("requires_grad", "md5", "data_name")
_EXACT_KEYS = frozenset(STAT_KEYS + ("md5",))


@dataclass
class RankSide:
    """One side of a rank pair: what its dump says (``task``, ``framework``), its entries in call order, their
    rows (:meth:`rows`), and its construct.json and stack.json."""

    rank: RankDir
    task: Optional[str]
    framework: Optional[str]
    names: List[str]
    construct: Dict[str, Any]
    stacks: Dict[str, List[str]]
    data: Optional[Dict[str, Any]] = None
    """dump.json's ``data``, where read from it."""
    table: Optional[RankTable] = None
    """The statistics index, where read from it."""
    spans: Dict[str, Tuple[int, int]] = field(default_factory=dict)
    """Index path: entry name -> (first row, end) in the table."""

    @property
    def indexed(self) -> bool:
        return self.table is not None

    def rows(self, name: str) -> List[Row]:
        """The rows of one entry, in msprobe's order."""
        if self.table is None:
            return entry_rows(name, self.data[name])
        start, end = self.spans.get(name, (0, 0))
        return _table_rows(self.table, name, start, end)

    def holds(self, key: str) -> bool:
        """Whether the dump's tensor records carry ``key`` (``data_name``, ``md5``), judged on its first entries."""
        return any(row.is_tensor and row.record.get(key)
                   for name in self.names[:_PROBE_ENTRIES] for row in self.rows(name))


def load_side(rank: RankDir) -> RankSide:
    """A rank's side, from its index when one matches its dump.json (an interrupted run's journal, or a named
    dump.json file, is always read as JSON)."""
    table = None
    if not rank.interrupted and rank.dump_file is None:
        table = find_index(rank.path, reader_cache())
    if table is None:
        files = load_rank_unchecked(rank)
        dump = files.dump
        return RankSide(rank, dump.task, dump.framework, list(dump.data), files.construct, files.stacks,
                        data=dump.data)
    construct, stacks = rank.load_metadata()
    return RankSide(rank, table.header.get("task"), table.header.get("framework"), table.entries, construct, stacks,
                    table=table, spans=_spans(table))


def _spans(table: RankTable) -> Dict[str, Tuple[int, int]]:
    spans: Dict[str, Tuple[int, int]] = {}
    orders, entries = table.columns["order"], table.entries
    start = 0
    for position in range(1, len(orders) + 1):
        if position == len(orders) or orders[position] != orders[start]:
            spans[entries[orders[start]]] = (start, position)
            start = position
    return spans


def _table_rows(table: RankTable, name: str, start: int, end: int) -> List[Row]:
    columns = table.columns
    labels, kinds, tensors, values, exacts = (columns[key] for key in ("label", "kind", "tensor", "value", "exact"))
    out = []
    for i in range(start, end):
        label = labels[i]
        if label is None:
            continue
        if tensors[i]:
            record = {key: columns[key][i] for key in _RECORD_KEYS}
            if exacts[i] is not None:  # a statistic or checksum a float does not spell as dump.json did
                record.update(_decoded(table, "exact", i, exact=True))
        else:
            record = _decoded(table, "value", i)
        out.append(Row(f"{name}.{label}", kinds[i], record, tensors[i]))
    return out


def _decoded(table: RankTable, column: str, row: int, exact: bool = False) -> Dict[str, Any]:
    """The JSON object a text column holds; with ``exact``, statistics and checksum spelled as dump.json spells
    them: numbers and strings (an index may come with a stranger's dump: refused when it is not that)."""
    try:
        value = json.loads(table.columns[column][row])
    except (TypeError, ValueError, RecursionError):
        value = None
    if not isinstance(value, dict) or exact and not all(
            key in _EXACT_KEYS and isinstance(item, (str, int, float)) for key, item in value.items()):
        what = "statistics and checksum as numbers or strings" if exact else "an object"
        raise SchemaError(table.path, f"{column} (row {row})", f"expected the JSON text of {what}")
    return value
