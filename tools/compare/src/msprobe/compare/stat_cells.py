"""Statistics cells by column: each side's values as written, and the differences between them, as msprobe writes
them: ``diff = target - golden``; relative error ``|diff / golden| * 100`` written with a ``%``; ``inf`` when golden
is 0; ``0`` when both print the same; ``Nan`` when either is NaN; ``inf`` / ``-inf`` when one side is infinite;
``Diff`` when one is text that is no number; ``N/A`` when one side does not record it.
"""
from __future__ import annotations

from typing import Any, List

import numpy as np

from msprobe.schema.compare_result import COLUMN_STAT_KEYS, NOT_APPLICABLE as NA

from .judge import SideValues
from .metrics import DIFF, INF, NAN, NEG_INF, stat_text

_STATS = len(COLUMN_STAT_KEYS)
_SIGNS = np.array([NEG_INF, INF], dtype=object)


def objects(count: int, fill: Any = NA) -> np.ndarray:
    """An object array of ``count`` cells, each ``fill``."""
    out = np.empty(count, dtype=object)
    out.fill(fill)  # (np.full takes 20x longer for objects)
    return out


def stat_cells(values: SideValues, rows: np.ndarray) -> List[np.ndarray]:
    """Each statistic as its cell: the float itself where the dump wrote a float (a CSV writes its ``repr``, the
    text msprobe shows; a Parquet table keeps the number), else ``stat_text`` of what it wrote (``None``). A column
    of floats only stays a float64 array (no object per cell)."""
    spelled = np.flatnonzero(values.is_spelled[rows])
    out = []
    for column in range(_STATS):
        numbers = values.numbers[rows, column]
        absent = ~values.present[rows, column]
        if not spelled.size and not absent.any():
            out.append(numbers)
            continue
        cells = objects(len(rows))
        cells[:] = numbers.tolist()
        cells[absent] = "None"
        out.append(cells)
    for at in spelled.tolist():
        for column, value in enumerate(values.spelled[int(rows[at])]):
            out[column][at] = stat_text(value)
    return out


def cell_text(cell: Any) -> Any:
    """A statistics cell as the text a CSV shows (a float as its ``repr``)."""
    return stat_text(float(cell)) if isinstance(cell, float) else cell


def alike(t: SideValues, g: SideValues, t_rows: np.ndarray, g_rows: np.ndarray) -> np.ndarray:
    """Rows whose four statistics are equal as numbers (or absent on both sides): every cell ``0``."""
    tp, gp = t.present[t_rows], g.present[g_rows]
    return ((tp == gp) & (~tp | (t.numbers[t_rows] == g.numbers[g_rows]))).all(axis=1)


def _same_text(t_cells: np.ndarray, g_cells: np.ndarray, a: np.ndarray, b: np.ndarray, spelled: np.ndarray
               ) -> np.ndarray:
    """Whether the two cells print alike: the same float (0.0 and -0.0 print apart; NaN as ``nan``), or the same
    text where a side wrote no float."""
    same = ((a == b) & (np.signbit(a) == np.signbit(b))) | (np.isnan(a) & np.isnan(b))
    for at in np.flatnonzero(spelled).tolist():
        same[at] = cell_text(t_cells[at]) == cell_text(g_cells[at])
    return same


def stat_diffs(t: SideValues, g: SideValues, t_rows: np.ndarray, g_rows: np.ndarray, t_cells: List[np.ndarray],
                g_cells: List[np.ndarray]):
    """(diff cells, relative-error cells) per statistic of rows whose statistics are not all equal."""
    tn, gn = t.numbers[t_rows], g.numbers[g_rows]
    tp, gp = t.present[t_rows], g.present[g_rows]
    spelled = t.is_spelled[t_rows] | g.is_spelled[g_rows]
    diffs, relative = [], []
    for column in range(_STATS):
        a, b = tn[:, column], gn[:, column]
        numeric = t.numeric[t_rows, column] & g.numeric[g_rows, column]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            delta = a - b
            percent = np.abs(delta / b * 100)
        nan, inf = np.isnan(a) | np.isnan(b), np.isinf(a) | np.isinf(b)
        sign = _SIGNS[np.where(np.isinf(a), a > 0, b < 0).astype(np.int64)]
        both_absent = ~tp[:, column] & ~gp[:, column]
        one_absent = tp[:, column] != gp[:, column]
        same = _same_text(t_cells[column], g_cells[column], a, b, spelled)
        shown = np.flatnonzero(~(both_absent | one_absent | same | ~numeric | nan | inf))
        diff_text, rel_text = objects(len(a), "0"), objects(len(a), "0")
        diff_text[shown] = list(map(repr, delta[shown].tolist()))
        rel_text[shown] = [INF if zero else f"{p!r}%" for zero, p in zip((b[shown] == 0).tolist(),
                                                                         percent[shown].tolist())]
        for texts in (diff_text, rel_text):  # the cases in reverse order of precedence: the first that holds wins
            texts[inf] = sign[inf]
            texts[nan] = NAN
            texts[~numeric] = DIFF
            texts[same | both_absent] = "0"
            texts[one_absent] = NA
        diffs.append(diff_text)
        relative.append(rel_text)
    return diffs, relative
