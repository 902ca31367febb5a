"""Whether two rows agree, judged by column over a whole rank: tolerances by dtype, errors before warnings.

A row is ``error`` when the two sides cannot be the same computation (dtype or shape differ, requires_grad
differs, a plain argument differs, inf/nan on the target only, one side a tensor and the other not), ``Different``
when CRC-32 values differ (md5 mode), ``warning`` when a number is outside the tolerance of its dtype, else
``pass``. The number behind the plots and the first divergence is the *scaled error*: ``|target - golden| /
max(|golden|, rms)`` over the four statistics, or over the elements in tensor mode (``metrics.array_error``),
``rms`` being the golden tensor's L2 norm / sqrt(numel). A statistic one side does not record is not compared
(msprobe writes no Mean or Norm for integer tensors); none in common is an infinite error.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from msprobe.schema.compare_result import COLUMN_STAT_KEYS, DIFFERENT, ERROR, NOT_APPLICABLE, PASS, WARNING
from msprobe.schema import SchemaError
from msprobe.schema.dump import STAT_KEYS
from msprobe.schema.leaves import plain_value

from .config import dtype_key
from .cells import Coded
from .leaf_arrays import LeafArrays
from .metrics import number

RESULTS = (PASS, WARNING, DIFFERENT, ERROR, NOT_APPLICABLE)
"""A row's verdict is its code: a position here."""
CODE = {name: code for code, name in enumerate(RESULTS)}
TENSOR_MISMATCH, SCALAR_DIFFERS, DTYPE, SHAPE, REQUIRES_GRAD, NON_FINITE = (1 << i for i in range(6))
PROBLEMS = ((TENSOR_MISMATCH, "One side is a tensor, the other is not."),
            (SCALAR_DIFFERS, "The scalar parameters of NPU and Bench are inconsistent."),
            (DTYPE, "Dtype of NPU and bench Tensor do not match."),
            (SHAPE, "Tensor shapes do not match."),
            (REQUIRES_GRAD, "The Required_Grad of NPU and Bench are inconsistent"),
            (NON_FINITE, "There is nan/inf/-inf in the maximum or minimum value of NPU."))
"""Why a row is an error, in msprobe's words where it has them, in the order a row's messages give them."""
_COLUMNS = [STAT_KEYS.index(key) for key in COLUMN_STAT_KEYS]


@dataclass
class SideValues:
    """What a side's rows hold beyond the index's floats: each statistic as written (``spelled``: a plain value
    stands for all four), as a number where it is one, and the records of plain leaves."""

    numbers: np.ndarray
    """float64 (rows, 4), ``COLUMN_STAT_KEYS`` order; NaN where no number (``numeric``)."""
    numeric: np.ndarray
    """bool (rows, 4): the statistic is a number (booleans and other text are not)."""
    present: np.ndarray
    """bool (rows, 4): recorded (not null)."""
    spelled: Dict[int, List[Any]]
    """Rows whose statistics a float does not spell (ints, strings, plain values): the four as written."""
    records: Dict[int, Dict[str, Any]]
    """Plain leaves' records (``{}`` for None)."""
    checksums: Dict[int, Any]
    """Checksums a text does not spell (msprobe 26.2.0's xor mode: a number)."""
    is_spelled: np.ndarray
    """bool per row: in ``spelled``."""

    def checksum(self, arrays: LeafArrays, row: int) -> Any:
        """A tensor's checksum as the dump wrote it (None where absent)."""
        return self.checksums.get(row, arrays.md5[row])


def side_values(arrays: LeafArrays, index: Optional[str] = None) -> SideValues:
    """``index``: the file the arrays were read from, named when a row's text columns are not what it wrote."""
    numbers = arrays.stats[:, _COLUMNS].copy()
    present = arrays.present[:, _COLUMNS].copy()
    numeric = present.copy()
    spelled: Dict[int, List[Any]] = {}
    records: Dict[int, Dict[str, Any]] = {}
    checksums: Dict[int, Any] = {}
    for row in np.flatnonzero(~arrays.tensor).tolist():
        records[row] = record = _decoded(arrays, "value", row, index)
        value = plain_value(record)[1]
        spelled[row] = [str(value) if isinstance(value, (list, dict)) else value] * len(COLUMN_STAT_KEYS)
    for row in np.flatnonzero(arrays.exact != None).tolist():  # noqa: E711 (elementwise)
        exact = _decoded(arrays, "exact", row, index, exact=True)
        spelled[row] = [exact.get(key, None if not present[row, i] else float(numbers[row, i]))
                        for i, key in enumerate(COLUMN_STAT_KEYS)]
        if "md5" in exact:
            checksums[row] = exact["md5"]
    for row, values in spelled.items():
        for column, value in enumerate(values):
            figure = number(value)
            present[row, column] = value is not None
            numeric[row, column] = figure is not None
            numbers[row, column] = np.nan if figure is None else figure
    is_spelled = np.zeros(len(numbers), dtype=bool)
    is_spelled[list(spelled)] = True
    return SideValues(numbers, numeric, present, spelled, records, checksums, is_spelled)


_EXACT_KEYS = frozenset(STAT_KEYS + ("md5",))


def _decoded(arrays: LeafArrays, column: str, row: int, index: Optional[str], exact: bool = False) -> Dict[str, Any]:
    """The JSON object a text column holds; with ``exact``, statistics and checksum spelled as dump.json spells
    them: numbers and strings (an index may come with a stranger's dump: refused when it is not that)."""
    try:
        value = json.loads(getattr(arrays, column)[row])
    except (TypeError, ValueError, RecursionError):
        value = None
    if not isinstance(value, dict) or exact and not all(
            key in _EXACT_KEYS and isinstance(item, (str, int, float)) for key, item in value.items()):
        what = "statistics and checksum as numbers or strings" if exact else "an object"
        raise SchemaError(index, f"{column} (row {int(arrays.position[row])})", f"expected the JSON text of {what}")
    return value


@dataclass
class Verdicts:
    """Every row's verdict, by column."""

    result: np.ndarray
    """int8: a code of :data:`RESULTS`."""
    error: np.ndarray
    """float64: the scaled error (0 without a partner)."""
    problems: np.ndarray
    """int: bits of :data:`PROBLEMS`."""
    one_sided: np.ndarray
    """bool (rows, 4): statistics only one side records (not compared)."""


def scaled_errors(t: SideValues, g: SideValues, ti: np.ndarray, gi: np.ndarray, scale: np.ndarray
                  ) -> Tuple[np.ndarray, np.ndarray]:
    """(largest scaled error over the statistics both sides record, the statistics one side only records) of
    the pairs (``ti[k]``, ``gi[k]``): inf when one side's statistic is no number or is not finite and the
    other's differs, or when no statistic is recorded by both."""
    tn, gn = t.numbers[ti], g.numbers[gi]
    t_num, g_num = t.numeric[ti], g.numeric[gi]
    one_sided = t.present[ti] != g.present[gi]
    worst = np.zeros(len(ti))
    differ = np.flatnonzero(~((tn == gn) & t_num & g_num).all(axis=1) | one_sided.any(axis=1))
    worst[differ] = _worst(tn[differ], gn[differ], t_num[differ], g_num[differ], one_sided[differ], scale[differ])
    return worst, one_sided


def _worst(tn: np.ndarray, gn: np.ndarray, t_num: np.ndarray, g_num: np.ndarray, one_sided: np.ndarray,
           scale: np.ndarray) -> np.ndarray:
    same = (tn == gn) | (np.isnan(tn) & np.isnan(gn))
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = np.maximum(np.abs(gn), scale[:, None])
        ratio = np.where(denom == 0, np.inf, np.abs(tn - gn) / denom)
    error = np.where(t_num & g_num, np.where(same, 0.0, np.where(np.isfinite(tn) & np.isfinite(gn), ratio, np.inf)),
                     np.where(t_num != g_num, np.inf, 0.0))
    error[one_sided] = 0.0
    worst = error.max(axis=1) if len(error) else np.zeros(0)
    worst[one_sided.all(axis=1)] = np.inf
    return worst


def rms(arrays: LeafArrays, values: SideValues, rows: np.ndarray) -> np.ndarray:
    """The golden scale of each row: L2 norm / sqrt(numel); 0 for a plain value, an unknown or infinite norm, or
    an empty tensor."""
    norm = values.numbers[rows, COLUMN_STAT_KEYS.index("Norm")]
    numel = np.where(arrays.dims[rows] < 0, 1, arrays.dims[rows]).astype(np.float64).prod(axis=1)
    usable = arrays.tensor[rows] & np.isfinite(norm) & (numel > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(usable, np.abs(norm) / np.sqrt(np.where(numel > 0, numel, 1.0)), 0.0)


def structural_problems(t: LeafArrays, g: LeafArrays, tv: SideValues, gv: SideValues, ti: np.ndarray,
                        gi: np.ndarray, same_framework: bool) -> np.ndarray:
    """Bits of :data:`PROBLEMS` per pair. requires_grad is compared within one framework only (MindSpore tensors
    do not carry it)."""
    t_tensor, g_tensor = t.tensor[ti], g.tensor[gi]
    both = t_tensor & g_tensor
    problems = np.where(t_tensor != g_tensor, TENSOR_MISMATCH, 0)
    keys: Dict[str, int] = {}
    t_keys, g_keys = t.dtype.ids(keys, dtype_key)[ti], g.dtype.ids(keys, dtype_key)[gi]
    problems |= np.where(both & (t_keys != g_keys), DTYPE, 0)
    problems |= np.where(both & _shapes_differ(t, g, ti, gi), SHAPE, 0)
    if same_framework:
        t_req, g_req = t.requires_grad[ti], g.requires_grad[gi]
        problems |= np.where(both & (t_req >= 0) & (g_req >= 0) & (t_req != g_req), REQUIRES_GRAD, 0)
    edge = slice(0, 2)  # Max, Min
    t_bad = (tv.numeric[ti, edge] & ~np.isfinite(tv.numbers[ti, edge])).any(axis=1)
    g_bad = (gv.numeric[gi, edge] & ~np.isfinite(gv.numbers[gi, edge])).any(axis=1)
    problems |= np.where(both & t_bad & ~g_bad, NON_FINITE, 0)
    for k in np.flatnonzero(~t_tensor & ~g_tensor).tolist():
        target, golden = tv.records[int(ti[k])], gv.records[int(gi[k])]
        if target.get("value") != golden.get("value") or target.get("type") != golden.get("type"):
            problems[k] |= SCALAR_DIFFERS
    return problems


def _shapes_differ(t: LeafArrays, g: LeafArrays, ti: np.ndarray, gi: np.ndarray) -> np.ndarray:
    """A missing shape reads as ``[]``."""
    width = max(t.dims.shape[1], g.dims.shape[1])
    t_dims, g_dims = (np.pad(a.dims[rows], ((0, 0), (0, width - a.dims.shape[1])), constant_values=-1)
                      for a, rows in ((t, ti), (g, gi)))
    return (np.maximum(t.ndim[ti], 0) != np.maximum(g.ndim[gi], 0)) | (t_dims != g_dims).any(axis=1)


def verdicts(problems: np.ndarray, error: np.ndarray, golden_dtypes: Coded, md5: bool,
             tolerance_of: Callable[[Optional[str]], float]) -> np.ndarray:
    """Each pair's result code: an error where a problem is, else by the mode's number (``golden_dtypes``: the
    golden row's of each pair, whose tolerance applies)."""
    if md5:
        result = np.where(error == 0, CODE[PASS], CODE[DIFFERENT])
    else:
        result = np.where(error <= golden_dtypes.mapped(tolerance_of, np.float64), CODE[PASS], CODE[WARNING])
    return np.where(problems != 0, CODE[ERROR], result).astype(np.int8)


def one_sided_message(keys: List[str], target_present: List[bool]) -> str:
    side = "golden" if all(target_present) else "target"
    return f"{', '.join(keys)} not recorded by the {side}: not compared."
