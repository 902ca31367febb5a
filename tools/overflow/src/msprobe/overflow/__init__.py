"""Overflow check: keep only APIs/modules with inf/nan while training (online), and find where it started (offline).

Offline: ``analyze_dump(path, include_expected=False)`` → one ``StepResult`` per step (``origin``: the rank and node where
the overflow started), ``analyze_rank(rank_dir)`` for one rank, ``to_json`` for msprobe's
``anomaly_analyze_*.json`` shape. Online: ``task: "overflow_check"`` in the dump configuration.
"""
from __future__ import annotations

from .analyze import INHERITED, ORIGIN, Anomaly, EntryState, RankResult, analyze_rank, entry_states, first_anomaly
from .order import StepResult, analyze_dump, analyze_ranks, order_events
from .report import to_json, write_reports


def overflow_task(save_tensors: bool = False):
    """Task factory for ``PrecisionDebugger(tasks={"overflow_check": overflow_task(save_tensors=True)})``."""
    from .task import overflow_task as factory  # imports the dump engine only when asked for

    return factory(save_tensors)

__all__ = [
    "INHERITED", "ORIGIN", "Anomaly", "EntryState", "RankResult", "analyze_rank", "entry_states", "first_anomaly",
    "StepResult", "analyze_dump", "analyze_ranks", "order_events", "to_json", "write_reports", "overflow_task",
]
