"""The numbers of a compare table as msprobe defines them: a statistic read as a number and as its cell, and the
tensor metrics (the statistics' differences are made by column, in ``table``).

Tensors (files of task ``tensor``, squeezed, in float64): Cosine (1.0 when both are all zeros, 6 decimals
above 0.9999), EucDist ``||t - g||``, MaxAbsErr ``max |t - g|``, MaxRelativeErr ``max |t - g| / |g|`` (a 0 in
golden counts as the epsilon of the format), One / Five Thousandths Err Ratio: share of elements whose
relative error is below 0.001 / 0.005. Scalars, empty and one-element tensors are ``unsupported``.
"""
from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

import numpy as np

from msprobe.schema.compare_result import NOT_APPLICABLE
from msprobe.schema.dump import stat_value

NAN, INF, NEG_INF, UNSUPPORTED, DIFF = "Nan", "inf", "-inf", "unsupported", "Diff"
COSINE_ROUND_ABOVE = 0.9999
ERR_SCALAR = "This is type of 0-d tensor, can not calculate"
ERR_EMPTY = "This is an empty tensor, can not calculate."
ERR_SINGLE = "This is a 1-d tensor of length 1."


def number(value: Any) -> Optional[float]:
    """A statistic as a float; None for null, booleans and text that is no number (compared as text)."""
    if type(value) is float:
        return value
    if isinstance(value, (dict, list)):
        raise TypeError(f"a statistic must be a number, a string or null, got {type(value).__name__}")
    return None if isinstance(value, bool) else stat_value(value)


def stat_text(value: Any) -> str:
    """A statistic as its table cell."""
    if type(value) is float and value == value:
        return repr(value)
    if value is None:
        return "None"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else repr(value)
    return str(value)


def _format(value: float) -> float:
    return float("{:.12f}".format(value))


def tensor_metrics(target: np.ndarray, golden: np.ndarray) -> Tuple[List[Any], str]:
    """[Cosine, EucDist, MaxAbsErr, MaxRelativeErr, One, Five Thousandths ratio] and the error message."""
    if target.shape != golden.shape:
        return [NOT_APPLICABLE] * 6, "Shape of NPU and bench Tensor do not match."
    if target.size == 0:
        return [UNSUPPORTED] * 6, ERR_EMPTY
    t, g, message = _finite_pair(target.reshape(-1).astype(np.float64), golden.reshape(-1).astype(np.float64))
    if t is None:
        return [NAN] * 6, message
    if target.ndim == 0:  # msprobe gives the two maxima of a scalar, nothing else
        relative = _relative(target, golden, t, g)
        return [UNSUPPORTED, UNSUPPORTED, _format(float(np.abs(t - g).max())), _format(float(relative.max())),
                UNSUPPORTED, UNSUPPORTED], ERR_SCALAR
    cosine, cos_message = _cosine(t, g)
    diff = np.abs(t - g)
    relative = _relative(target, golden, t, g)
    out = [cosine, float(np.linalg.norm(t - g)), _format(float(diff.max())),
           _format(float(relative.max())), _format(float(np.mean(relative < 0.001))),
           _format(float(np.mean(relative < 0.005)))]
    return out, message + cos_message


def _finite_pair(t: np.ndarray, g: np.ndarray):
    """inf/nan at the same places on both sides count as equal (zeroed); elsewhere nothing is comparable."""
    t_bad, g_bad = ~np.isfinite(t), ~np.isfinite(g)
    if not (t_bad.any() or g_bad.any()):
        return t, g, ""
    same = np.array_equal(np.isnan(t), np.isnan(g)) and np.array_equal(np.isposinf(t), np.isposinf(g)) \
        and np.array_equal(np.isneginf(t), np.isneginf(g))
    if not same:
        return None, None, "The position of inf or nan in NPU and bench Tensor do not match."
    t, g = t.copy(), g.copy()
    t[t_bad] = 0
    g[g_bad] = 0
    return t, g, ""


def _cosine(t: np.ndarray, g: np.ndarray) -> Tuple[Any, str]:
    if t.size == 1:
        return UNSUPPORTED, ERR_SINGLE
    eps = np.finfo(float).eps
    t_norm, g_norm = np.linalg.norm(t), np.linalg.norm(g)
    if t_norm <= eps and g_norm <= eps:
        return 1.0, ""
    if t_norm <= eps or g_norm <= eps:
        side = "npu" if t_norm <= eps else "Bench"
        return NAN, f"Cannot compare by Cosine Similarity, All the data is Zero in {side} dump data."
    value = _format(float(np.dot(t, g) / (t_norm * g_norm)))
    return (round(value, 6) if value > COSINE_ROUND_ABOVE else value), ""


def _relative(target: np.ndarray, golden: np.ndarray, t: np.ndarray, g: np.ndarray) -> np.ndarray:
    """|t - g| / |g|, a zero in golden replaced by the epsilon of the wider of the two formats (float32 at least)."""
    kind = np.result_type(target.dtype if target.dtype.kind == "f" else np.float64,
                          golden.dtype if golden.dtype.kind == "f" else np.float64, np.float32)
    t_k, g_k = t.astype(kind), g.astype(kind)
    zero = g_k == 0
    if zero.any():
        eps = np.finfo(kind).eps
        t_k = t_k.copy()
        t_k[zero] += eps
        g_k = g_k.copy()
        g_k[zero] += eps
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs((t_k - g_k) / g_k)


def array_error(target: np.ndarray, golden: np.ndarray) -> float:
    """Largest ``|t - g| / max(|g|, rms(g))`` over the elements; inf when shapes or inf/nan places differ."""
    if target.shape != golden.shape:
        return float("inf")
    if target.size == 0:
        return 0.0
    t, g = target.astype(np.float64).reshape(-1), golden.astype(np.float64).reshape(-1)
    finite = np.isfinite(g)
    if not np.array_equal(np.isfinite(t), finite) or not np.array_equal(t[~finite], g[~finite], equal_nan=True):
        return float("inf")
    t, g = t[finite], g[finite]
    if t.size == 0:
        return 0.0
    scale = float(np.sqrt(np.mean(g * g)))
    denom = np.maximum(np.abs(g), scale)
    diff = np.abs(t - g)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(diff == 0, 0.0, diff / denom)
    return float(ratio.max())


