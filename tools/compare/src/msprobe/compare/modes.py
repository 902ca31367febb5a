"""Which comparison two dumps allow: tensor files, CRC-32 (md5) or statistics — what both sides have."""
from __future__ import annotations

from typing import Tuple

from msprobe.schema import DumpFile, MsprobeError, RankDir, iter_records
from msprobe.schema.compare_result import CompareMode

_PROBE_ENTRIES = 64
"""Entries looked at to tell what a dump holds (a dump is written in one summary mode throughout)."""


def _holds(dump: DumpFile, key: str) -> bool:
    for index, entry in enumerate(dump.data.values()):
        if index >= _PROBE_ENTRIES:
            break
        for _, record in iter_records(entry):
            if record.get(key):
                return True
    return False


def describe(dump: DumpFile, rank: RankDir) -> str:
    """``tensor``, ``md5``, ``statistics`` or ``overflow_check``."""
    if dump.task == "overflow_check":
        return "overflow_check"
    if dump.task == "tensor" or (rank.tensor_dir.is_dir() and _holds(dump, "data_name")):
        return "tensor"
    return "md5" if _holds(dump, "md5") else "statistics"


def choose_mode(target: DumpFile, golden: DumpFile, target_rank: RankDir, golden_rank: RankDir,
                statistics: bool = False) -> Tuple[CompareMode, str]:
    """(mode, note for the user: empty when both sides hold the same kind of data); ``statistics``: tensor
    dumps are compared by their statistics, no tensor file read (``--statistics``)."""
    kinds = describe(target, target_rank), describe(golden, golden_rank)
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
