"""One rank of one dump as compare reads it: its leaves as arrays (``leaf_arrays``), from the rank's statistics
index when a matching one exists (beside dump.json, or in the cache ``msprobe index`` fills), else from
dump.json through the same walk the index is built with: the same arrays either way.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import numpy as np

from msprobe.schema import RankDir
from msprobe.schema.index import find_index, reader_cache, table_of_data
from msprobe.schema.unchecked import load_rank_unchecked

from .leaf_arrays import ARRAY_COLUMNS, LeafArrays, leaf_arrays

_PROBE_ENTRIES = 64
"""Entries looked at to tell what a dump holds (a dump is written in one summary mode throughout)."""


@dataclass
class RankSide:
    """One side of a rank pair: what its dump says (``task``, ``framework``), its entries in call order, their
    leaves, and its construct.json and stack.json."""

    rank: RankDir
    task: Optional[str]
    framework: Optional[str]
    names: List[str]
    construct: Dict[str, Any]
    stacks: Dict[str, List[str]]
    leaves: LeafArrays
    index: Optional[str] = None
    """The statistics index the leaves were read from; None when read from dump.json."""

    @property
    def indexed(self) -> bool:
        return self.index is not None

    def holds(self, key: str) -> bool:
        """Whether the dump's tensor records carry ``key`` (``data_name``, ``md5``), judged on its first entries."""
        leaves = self.leaves
        rows = np.flatnonzero(leaves.tensor & (leaves.order < _PROBE_ENTRIES))
        column = getattr(leaves, key)
        return any(column[row] for row in rows.tolist())


def load_side(rank: RankDir) -> RankSide:
    """A rank's side, from its index when one matches its dump.json (an interrupted run's journal, or a named
    dump.json file, is always read as JSON)."""
    table = None
    if not rank.interrupted and rank.dump_file is None:
        table = find_index(rank.path, reader_cache(), ARRAY_COLUMNS)
    if table is None:
        files = load_rank_unchecked(rank)
        dump = files.dump
        leaves = leaf_arrays(table_of_data({}, dump.data, checked=False))
        return RankSide(rank, dump.task, dump.framework, list(dump.data), files.construct, files.stacks, leaves)
    construct, stacks = rank.load_metadata()
    return RankSide(rank, table.header.get("task"), table.header.get("framework"), table.entries, construct, stacks,
                    leaf_arrays(table), index=table.path)
