"""A table column whose cells are mostly a few texts, kept as codes into its distinct texts: most of a rank's
columns are (``pass``, ``N/A``, ``[]``, ``0``, a dtype, a shape). No object is made per cell until a CSV needs
one; a Parquet table takes the codes as they are (handing 300,000 Python strings to pyarrow takes 10 ms a column).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

import numpy as np

from msprobe.schema.compare_result import NOT_APPLICABLE as NA


class Cells:
    """``values[codes[i]]`` is the text of cell ``i``."""

    __slots__ = ("codes", "values", "_known")

    def __init__(self, codes: np.ndarray, values: Sequence[Optional[str]]) -> None:
        self.codes, self.values = codes, list(values)
        self._known: Optional[Dict[Any, int]] = None

    @classmethod
    def filled(cls, count: int, text: Optional[str]) -> "Cells":
        return cls(np.zeros(count, dtype=np.int64), [text])

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, at: int) -> Optional[str]:
        return self.values[self.codes[at]]

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

    def place(self, where: np.ndarray, other: "Cells") -> None:
        """The cells of ``other`` at the positions ``where``."""
        if len(where):
            self.codes[where] = np.array([self.code(text) for text in other.values], dtype=np.int64)[other.codes]

    def array(self) -> np.ndarray:
        """The cells as an object array (one text per cell)."""
        table = np.empty(len(self.values), dtype=object)
        table[:] = self.values
        return table[self.codes]





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
    if isinstance(column, (Cells, JoinedCells)):
        return column.array()
    return column.astype(object) if column.dtype != object else column
