"""Which comparison two dumps allow: tensor files, CRC-32 (md5) or statistics — what both sides have."""
from __future__ import annotations

from typing import Tuple

from msprobe.schema import MsprobeError
from msprobe.schema.compare_result import CompareMode

from .sides import RankSide


def describe(side: RankSide) -> str:
    """``tensor``, ``md5``, ``statistics`` or ``overflow_check``."""
    if side.task == "overflow_check":
        return "overflow_check"
    if side.task == "tensor" or (side.rank.tensor_dir.is_dir() and side.holds("data_name")):
        return "tensor"
    return "md5" if side.holds("md5") else "statistics"


def choose_mode(target: RankSide, golden: RankSide, statistics: bool = False) -> Tuple[CompareMode, str]:
    """(mode, note for the user: empty when both sides hold the same kind of data); ``statistics``: tensor
    dumps are compared by their statistics, no tensor file read (``--statistics``)."""
    target_rank, golden_rank = target.rank, golden.rank
    kinds = describe(target), describe(golden)
    if statistics and "tensor" in kinds and "md5" not in kinds and "overflow_check" not in kinds:
        return "statistics", "compared by statistics, as asked (--statistics): no tensor file read"
    if "overflow_check" in kinds:
        raise MsprobeError(f"{target_rank.path} holds task {target.task!r} and {golden_rank.path} task "
                           f"{golden.task!r}: overflow_check dumps are not compared (use msprobe overflow_check)")
    if kinds[0] == kinds[1]:
        return kinds[0], ""
    if "md5" in kinds:
        raise MsprobeError(f"task mismatch: target {target_rank.path} holds {kinds[0]} data and golden "
                           f"{golden_rank.path} {kinds[1]}: CRC-32 values compare only with CRC-32 values "
                           "(dump both with summary_mode md5, or both without)")
    return "statistics", f"target holds {kinds[0]}, golden {kinds[1]}: compared by statistics, what both sides have"
