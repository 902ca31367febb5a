"""Columns of few distinct texts, kept as codes into them: a side's labels, kinds and dtypes, and most of a rank's
table columns (``pass``, ``N/A``, ``[]``, ``0``, a dtype, a shape). No object is made per cell until a CSV needs
one; a Parquet table takes the codes as they are (handing 300,000 Python strings to pyarrow takes 10 ms a column).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

from msprobe.schema.compare_result import NOT_APPLICABLE as NA


class Coded:
    """A text column of few distinct values as codes into them: ``values[codes[i]]`` is row ``i``'s text, -1 a null
    (a side's labels, kinds and dtypes; a table's columns of few texts)."""

    __slots__ = ("codes", "values", "_known")

    def __init__(self, codes: np.ndarray, values: Sequence[Optional[str]]) -> None:
        self.codes, self.values = codes, list(values)
        self._known: Optional[Dict[Any, int]] = None

    @classmethod
    def filled(cls, count: int, text: Optional[str]) -> "Coded":
        return cls(np.zeros(count, dtype=np.int64), [text])

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, at: int) -> Optional[str]:
        code = self.codes[at]
        return None if code < 0 else self.values[code]

    def take(self, rows: np.ndarray) -> "Coded":
        return Coded(self.codes[rows], self.values)

    def equals(self, text: str) -> np.ndarray:
        """bool per row: the row holds ``text``."""
        return self.codes == (self.values.index(text) if text in self.values else -2)

    def mapped(self, convert: Callable[[Optional[str]], Any], dtype: Any = object) -> np.ndarray:
        """``convert`` of each row's text (None for null), called once per distinct value."""
        table = np.array([convert(value) for value in self.values] + [convert(None)], dtype=dtype)
        return table[self.codes]  # (-1, null, takes the last)

    def ids(self, shared: Dict[Any, int], convert: Callable[[Optional[str]], Any] = lambda value: value) -> np.ndarray:
        """Codes in a numbering ``shared`` with other columns (by ``convert`` of the text), to compare across sides."""
        return self.mapped(lambda value: shared.setdefault(convert(value), len(shared)), np.int64)

    def code(self, text: Optional[str]) -> int:
        if self._known is None:
            self._known = {}
            for code, value in enumerate(self.values):
                self._known.setdefault(value, code)
        found = self._known.get(text)
        if found is None:
            found = self._known[text] = len(self.values)
            self.values.append(text)
        return found

    def put(self, where: Any, text: Optional[str]) -> None:
        """``text`` in the cells at ``where`` (positions or a mask)."""
        self.codes[where] = self.code(text)

    def put_each(self, where: np.ndarray, texts: Sequence[Optional[str]]) -> None:
        """One text per position of ``where``."""
        self.codes[where] = np.array([self.code(text) for text in texts], dtype=np.int64)

    def place(self, where: np.ndarray, other: "Coded") -> None:
        """The cells of ``other`` at the positions ``where``."""
        if len(where):
            self.codes[where] = np.array([self.code(text) for text in other.values], dtype=np.int64)[other.codes]

    def array(self) -> np.ndarray:
        """The cells as an object array (one text per cell, None for a null)."""
        table = np.empty(len(self.values) + 1, dtype=object)
        table[:-1] = self.values
        return table[self.codes]  # (-1 takes the last: None)





class JoinedCells:
    """Cells ``{heads[h]}.{tails[t]}`` (an entry's name and a row's label), ``N/A`` where ``h`` is -1: a rank's
    row names, joined only when a CSV needs them (a Parquet table joins them in C)."""

    __slots__ = ("heads", "head_codes", "tails", "tail_codes")

    def __init__(self, heads: Sequence[str], head_codes: np.ndarray, tails: Sequence[str],
                 tail_codes: np.ndarray) -> None:
        self.heads, self.head_codes, self.tails, self.tail_codes = heads, head_codes, tails, tail_codes

    def __len__(self) -> int:
        return len(self.head_codes)

    def __getitem__(self, at: int) -> str:
        head = self.head_codes[at]
        return NA if head < 0 else f"{self.heads[head]}.{self.tails[self.tail_codes[at]]}"

    def array(self) -> np.ndarray:
        heads, tails = self.heads, self.tails
        out = np.empty(len(self), dtype=object)
        out[:] = [NA if h < 0 else f"{heads[h]}.{tails[t]}"
                  for h, t in zip(self.head_codes.tolist(), self.tail_codes.tolist())]
        return out


def as_objects(column: Any) -> Any:
    """A column as one object per cell (a CSV row, a workbook row): a float64 array's cells as Python floats."""
    if isinstance(column, (Coded, JoinedCells)):
        return column.array()
    return column.astype(object) if column.dtype != object else column
