"""One side's leaves as numpy arrays, the form compare judges in: from the index's Arrow table (numbers without a
Python object each), or from the lists a walk of dump.json fills; the same arrays either way.

Only the leaves compare shows (those with a ``label``) are kept, in call order.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from msprobe.schema.dump import STAT_KEYS
from msprobe.schema.index import RankTable

from .cells import Coded

_CODED_COLUMNS = ("label", "kind", "dtype")
"""Texts of few distinct values: kept as codes."""
_OBJECT_COLUMNS = ("md5", "data_name", "value", "exact")
ARRAY_COLUMNS = ("order", "tensor", "shape", "requires_grad") + STAT_KEYS + _CODED_COLUMNS + _OBJECT_COLUMNS
"""The index's columns these arrays are made of (an index holds more: ``entry``, ``path``...)."""


def coded_list(values: Sequence[Any]) -> Coded:
    known: Dict[Any, int] = {}
    codes = [-1 if value is None else known.setdefault(value, len(known)) for value in values]
    return Coded(np.array(codes, dtype=np.int64), list(known))


def _coded_arrow(column: Any) -> Coded:
    encoded = column.dictionary_encode()
    codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return Coded(codes, encoded.dictionary.to_pylist())


@dataclass
class LeafArrays:
    """A side's rows by column: row ``i`` is one leaf."""

    entries: List[str]
    """Every entry's name in call order (``order`` indexes it)."""
    position: np.ndarray
    """int64: the row's position in the table (named in errors)."""
    order: np.ndarray
    """int64: the row's entry."""
    label: Coded
    """The row's name after its entry's (``input.0``)."""
    kind: Coded
    """``input``, ``output`` or ``parameters``."""
    tensor: np.ndarray
    """bool: a tensor record (else a plain value, or None)."""
    dtype: Coded
    dims: np.ndarray
    """int64 (rows, widest shape): the shape's dimensions, -1 past its end."""
    ndim: np.ndarray
    """int64: the shape's length; -1 where there is no shape."""
    stats: np.ndarray
    """float64 (rows, 4) in ``STAT_KEYS`` order; NaN where absent (``present``)."""
    present: np.ndarray
    """bool (rows, 4): the statistic is recorded."""
    requires_grad: np.ndarray
    """int8: 1 true, 0 false, -1 not recorded."""
    md5: np.ndarray
    data_name: np.ndarray
    value: np.ndarray
    """A plain leaf's record as JSON text."""
    exact: np.ndarray
    """JSON text of the statistics and checksum where dump.json spells them otherwise than a float; else None."""

    def __len__(self) -> int:
        return len(self.order)

    def take(self, rows: np.ndarray) -> "LeafArrays":
        columns = (getattr(self, f.name) for f in fields(self)[1:])
        return LeafArrays(self.entries, *(c.take(rows) if isinstance(c, Coded) else c[rows] for c in columns))


def leaf_arrays(table: RankTable) -> LeafArrays:
    """The rows of ``table`` that compare shows."""
    if table.arrow is not None:
        columns = {name: _arrow_column(table.arrow.column(name).combine_chunks()) for name in _OBJECT_COLUMNS}
        columns.update((name, _coded_arrow(table.arrow.column(name).combine_chunks())) for name in _CODED_COLUMNS)
        columns["order"] = table.arrow.column("order").combine_chunks().to_numpy()
        columns["tensor"] = table.arrow.column("tensor").combine_chunks().to_numpy(zero_copy_only=False)
        flags = table.arrow.column("requires_grad").combine_chunks()
        columns["requires_grad"] = np.where(flags.is_valid().to_numpy(zero_copy_only=False),
                                            flags.fill_null(False).to_numpy(zero_copy_only=False), -1).astype(np.int8)
        stats = [table.arrow.column(key).combine_chunks() for key in STAT_KEYS]
        present = np.column_stack([column.is_valid().to_numpy(zero_copy_only=False) for column in stats])
        values = np.column_stack([column.to_numpy(zero_copy_only=False) for column in stats])
        shape = table.arrow.column("shape").combine_chunks()
        lengths = np.where(shape.is_valid().to_numpy(zero_copy_only=False),
                           np.diff(shape.offsets.to_numpy()), -1)
        flat = shape.values.to_numpy()
        starts = shape.offsets.to_numpy()[:-1]
    else:
        lists = table.columns
        columns = {name: _object_array(lists[name]) for name in _OBJECT_COLUMNS}
        columns.update((name, coded_list(lists[name])) for name in _CODED_COLUMNS)
        columns["order"] = np.array(lists["order"], dtype=np.int64)
        columns["tensor"] = np.array(lists["tensor"], dtype=bool)
        columns["requires_grad"] = np.array([-1 if flag is None else bool(flag) for flag in lists["requires_grad"]],
                                            dtype=np.int8)
        present = np.column_stack([[value is not None for value in lists[key]] for key in STAT_KEYS]) \
            if lists["order"] else np.zeros((0, len(STAT_KEYS)), dtype=bool)
        values = np.column_stack([[np.nan if value is None else value for value in lists[key]] for key in STAT_KEYS]
                                 ).astype(np.float64) if lists["order"] else np.zeros((0, len(STAT_KEYS)))
        shapes = lists["shape"]
        lengths = np.array([-1 if shape is None else len(shape) for shape in shapes], dtype=np.int64)
        flat = np.array([dim for shape in shapes if shape is not None for dim in shape], dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(np.maximum(lengths, 0))[:-1])).astype(np.int64)
    dims = _padded(flat, starts, lengths)
    keep = np.flatnonzero(columns["label"].codes >= 0)  # (a leaf compare shows no row for has no label)
    arrays = LeafArrays(table.entries, position=np.arange(len(lengths)), order=columns["order"],
                        label=columns["label"], kind=columns["kind"], tensor=columns["tensor"].astype(bool),
                        dtype=columns["dtype"], dims=dims, ndim=lengths,
                        stats=values, present=present, requires_grad=columns["requires_grad"], md5=columns["md5"],
                        data_name=columns["data_name"], value=columns["value"], exact=columns["exact"])
    return arrays if len(keep) == len(arrays) else arrays.take(keep)


def _arrow_column(column: Any) -> np.ndarray:
    return column.to_numpy(zero_copy_only=False).astype(object, copy=False)


def _object_array(values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _padded(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each row's dimensions in one row of a (rows, widest) array, -1 past its end."""
    width = int(lengths.max()) if lengths.size else 0
    out = np.full((len(lengths), max(width, 1)), -1, dtype=np.int64)
    counts = np.maximum(lengths, 0)
    rows = np.repeat(np.arange(len(lengths)), counts)
    if rows.size:
        columns = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
        out[rows, columns] = flat[np.repeat(starts, counts) + columns]
    return out


def shape_texts(dims: np.ndarray, ndim: np.ndarray) -> Tuple[np.ndarray, List[str]]:
    """(each row's code, the texts): a row's shape as its table cell, ``[8, 1024]`` (``[]`` where there is none),
    one text per distinct shape, a rank holds few. Rows are told apart by a hash of their dimensions, then checked
    against the first row of their hash (equal dimensions, always: on a collision, by the dimensions themselves)."""
    if not len(ndim):
        return np.zeros(0, dtype=np.int64), []
    keys = np.column_stack([ndim, dims])
    with np.errstate(over="ignore"):
        mixed = (keys.astype(np.uint64) * _MIX ** np.arange(1, keys.shape[1] + 1, dtype=np.uint64)).sum(axis=1)
    _, first, codes = np.unique(mixed, return_index=True, return_inverse=True)
    if not (keys == keys[first[codes]]).all():
        _, first, codes = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    return codes.reshape(-1).astype(np.int64), [shape_text(keys[row, 1:], int(keys[row, 0])) for row in first.tolist()]


_MIX = np.uint64(0x9E3779B97F4A7C15)
"""An odd multiplier (the golden ratio's bits): its powers weigh each dimension."""


def shape_text(dims: np.ndarray, ndim: int) -> str:
    return str([int(d) for d in dims[:max(ndim, 0)]])
