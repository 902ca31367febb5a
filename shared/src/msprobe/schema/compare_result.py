"""``msprobe compare`` result tables: column names and order, as msprobe 26.2.0 writes them.

One table per rank, ``compare_result_rank{N}_{timestamp}.csv``: the basic columns, then the columns
of the compare mode (statistics, tensor or md5), then the extra columns, then the stack. Scripts
written against msprobe's tables read ours unchanged. Cells that do not apply hold ``N/A``.
"""
from __future__ import annotations

from typing import Dict, List, Optional

NAME, BENCH_NAME = "NPU Name", "Bench Name"
BASIC = [NAME, BENCH_NAME, "NPU Dtype", "Bench Dtype", "NPU Tensor Shape", "Bench Tensor Shape",
         "NPU Requires_grad", "Bench Requires_grad"]
STAT_NAMES = ("max", "min", "mean", "l2norm")
"""msprobe's spelling of the four statistics in column names."""
COLUMN_STAT_KEYS = ("Max", "Min", "Mean", "Norm")
"""The dump-record keys behind those columns, in column order: the table is msprobe's and keeps these
four whatever further statistics a dump's records hold (``msprobe.schema.dump.STAT_KEYS``)."""
NPU_STATS = [f"NPU {s}" for s in STAT_NAMES]
BENCH_STATS = [f"Bench {s}" for s in STAT_NAMES]
STAT_DIFFS = ["Max diff", "Min diff", "Mean diff", "L2norm diff"]
STAT_RELATIVE = ["MaxRelativeErr", "MinRelativeErr", "MeanRelativeErr", "NormRelativeErr"]
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

MODES = ("statistics", "tensor", "md5")
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


def header(mode: str) -> List[str]:
    if mode not in HEADERS:
        raise ValueError(f"compare mode must be one of {MODES}, got {mode!r}")
    return list(HEADERS[mode])
