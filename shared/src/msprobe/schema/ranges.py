"""Sets of step or rank numbers kept as ranges: ``"0-1000000000"`` costs two integers, not a billion."""
from __future__ import annotations

import bisect
from typing import Any, Iterable, Iterator, List, Tuple, Union

MAX_INDEX = 2 ** 53
"""Largest step or rank number accepted (exact in every JSON reader; no real run gets near it)."""


class IntRanges:
    """An immutable set of non-negative integers, stored as sorted, merged, inclusive ``(first, last)`` ranges.

    Behaves like the tuple of its members for ``in``, ``len``, ``bool``, iteration and ``==`` against a
    tuple or list, without ever building that tuple.
    """

    __slots__ = ("_ranges", "_starts")

    def __init__(self, ranges: Iterable[Tuple[int, int]] = ()) -> None:
        merged: List[List[int]] = []
        for first, last in sorted(ranges):
            if merged and first <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], last)
            else:
                merged.append([first, last])
        self._ranges = tuple((first, last) for first, last in merged)
        self._starts = [first for first, _ in self._ranges]

    @classmethod
    def of(cls, values: Iterable[int]) -> "IntRanges":
        return cls((value, value) for value in values)

    @property
    def ranges(self) -> Tuple[Tuple[int, int], ...]:
        return self._ranges

    def __contains__(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int):
            return False
        index = bisect.bisect_right(self._starts, value) - 1
        return index >= 0 and value <= self._ranges[index][1]

    def __len__(self) -> int:
        return sum(last - first + 1 for first, last in self._ranges)

    def __bool__(self) -> bool:
        return bool(self._ranges)

    def __iter__(self) -> Iterator[int]:
        for first, last in self._ranges:
            yield from range(first, last + 1)

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, IntRanges):
            return self._ranges == other._ranges
        if isinstance(other, (tuple, list)):
            # the other side is already in memory, so comparing member by member is bounded by its size
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._ranges)

    def __repr__(self) -> str:
        return f"IntRanges({self.to_json()!r})"

    def to_json(self) -> List[Union[int, str]]:
        """The config.json spelling: single numbers as integers, longer runs as ``"first-last"``."""
        out: List[Union[int, str]] = []
        for first, last in self._ranges:
            if first == last:
                out.append(first)
            elif last == first + 1:
                out.extend((first, last))
            else:
                out.append(f"{first}-{last}")
        return out
