"""``msprobe compare`` result tables: column names and order, as msprobe 26.2.0 writes them.

One table per rank, ``compare_result_rank{N}_{timestamp}.csv``: the basic columns, then the columns
of the compare mode (statistics, tensor or md5), then the extra columns, then the stack. Scripts
written against msprobe's tables read ours unchanged. Cells that do not apply hold ``N/A``.
"""
from __future__ import annotations

from typing import Dict, List, Literal, Optional, Tuple

from .dump import STAT_KEYS

NAME, BENCH_NAME = "NPU Name", "Bench Name"
BASIC = [NAME, BENCH_NAME, "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
         "NPU Requires_grad", "Bench Requires_grad"]
_STAT_COLUMNS = {  # record key: (the name in "NPU max", the diff column, the relative-error column)
    "Max": ("max", "Max diff", "MaxRelativeErr"),
    "Min": ("min", "Min diff", "MinRelativeErr"),
    "Mean": ("mean", "Mean diff", "MeanRelativeErr"),
    "Norm": ("l2norm", "L2norm diff", "NormRelativeErr"),
}
"""msprobe's spelling of each statistic in column names (``Norm`` is ``l2norm``/``L2norm``/``Norm``)."""
COLUMN_STAT_KEYS = tuple(key for key in STAT_KEYS if key in _STAT_COLUMNS)
"""The dump-record keys behind the statistics columns, in ``STAT_KEYS`` order: the statistics with a column
spelling above. The table is msprobe's: a statistic a dump records beyond these has no column until it is
given a spelling here."""
STAT_NAMES = tuple(_STAT_COLUMNS[key][0] for key in COLUMN_STAT_KEYS)
NPU_STATS = [f"NPU {s}" for s in STAT_NAMES]
BENCH_STATS = [f"Bench {s}" for s in STAT_NAMES]
STAT_DIFFS = [_STAT_COLUMNS[key][1] for key in COLUMN_STAT_KEYS]
STAT_RELATIVE = [_STAT_COLUMNS[key][2] for key in COLUMN_STAT_KEYS]
COSINE, EUC_DIST, MAX_ABS, MAX_REL = "Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr"
ONE_THOUSANDTH, FIVE_THOUSANDTHS = "One Thousandth Err Ratio", "Five Thousandths Err Ratio"
TENSOR_METRICS = [COSINE, EUC_DIST, MAX_ABS, MAX_REL, ONE_THOUSANDTH, FIVE_THOUSANDTHS]
NPU_MD5, BENCH_MD5 = "NPU MD5", "BENCH MD5"
REQ_GRAD_CONSISTENT, RESULT, ERR_MESSAGE = "Requires_grad Consistent", "Result", "Err_message"
EXTRA = [REQ_GRAD_CONSISTENT, RESULT, ERR_MESSAGE]
STACK = "NPU_Stack_Info"
DATA_NAME = "Data_name"
"""Tensor mode only: ``['<target file>', '<golden file>']``, ``-1`` for a value that has no file."""
NOT_APPLICABLE = "N/A"
PASS, WARNING, ERROR, DIFFERENT = "pass", "warning", "error", "Different"
"""``Result`` values; ``Different`` is msprobe's word for unequal CRC-32 in md5 mode."""

CompareMode = Literal["statistics", "tensor", "md5"]
MODES: Tuple[str, ...] = ("statistics", "tensor", "md5")
HEADERS: Dict[str, List[str]] = {
    "statistics": BASIC + STAT_DIFFS + STAT_RELATIVE + NPU_STATS + BENCH_STATS + EXTRA + [STACK],
    "tensor": BASIC + TENSOR_METRICS + NPU_STATS + BENCH_STATS + EXTRA + [STACK, DATA_NAME],
    "md5": BASIC + [NPU_MD5, BENCH_MD5] + EXTRA + [STACK],
}
SUMMARY_NAME = "compare_summary.json"


def result_file_name(rank: Optional[int], timestamp: str, suffix: str = ".csv", step: Optional[int] = None) -> str:
    """``compare_result_rank{N}_{timestamp}.csv`` (``rank`` alone when not distributed; ``step{S}_`` first
    when several steps are compared in one run)."""
    step_part = "" if step is None else f"step{step}_"
    rank_part = "rank" if rank is None else f"rank{rank}"
    return f"compare_result_{step_part}{rank_part}_{timestamp}{suffix}"


def header(mode: CompareMode) -> List[str]:
    if mode not in HEADERS:
        raise ValueError(f"compare mode must be one of {MODES}, got {mode!r}")
    return list(HEADERS[mode])
