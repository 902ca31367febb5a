"""The online ``overflow_check`` task: the dump engine keeps only entries whose tensors hold inf/nan.

The engine computes every tensor's statistics on the tensor's own device and brings them to the
host in batches (no host sync per tensor); the decision here only reads those host numbers, so a
step without overflow costs what a statistics dump costs, minus the writing. An inf/nan anywhere
in a tensor makes its Max, Min, Mean or Norm inf/nan, which is what ``record_is_finite`` checks.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from msprobe.dump.tasks import TaskPolicy
from msprobe.schema import DebuggerConfig, iter_records, record_is_finite, try_parse_entry

from .rules import ignored, rule_for

# Doc 30: at L1 the overflow check covers APIs except Primitive and Jit ones.
L1_EXCLUDED_PREFIXES = ("Primitive", "Jit")


class OverflowTask(TaskPolicy):
    """Keep an entry only when one of its tensors (not excused by an ignore rule) holds inf/nan."""

    def __init__(self, overflow_nums: int = 1, level: str = "L1", save_tensors: bool = False) -> None:
        self.overflow_nums = overflow_nums
        """Stop recording after this many kept entries over the whole run; -1 = unlimited."""
        self.level = level
        self.save_tensors = save_tensors
        self.overflows = 0
        self.first: Optional[str] = None
        """Name of the first entry kept (for logs and tests)."""

    def keep(self, name: str, entry: Dict[str, Any]) -> bool:
        if self.finished():
            return False
        parsed = try_parse_entry(name)
        if self.level == "L1" and parsed is not None and parsed.prefix in L1_EXCLUDED_PREFIXES:
            return False
        if not has_overflow(name, entry):
            return False
        self.overflows += 1
        if self.first is None:
            self.first = name
        return True

    def finished(self) -> bool:
        return self.overflow_nums != -1 and self.overflows >= self.overflow_nums


def has_overflow(name: str, entry: Dict[str, Any]) -> bool:
    """Whether any tensor record of the entry holds inf/nan, ignoring APIs whose inf/nan is expected."""
    rule = rule_for(try_parse_entry(name))
    for role, value in entry.items():
        for trail, record in iter_records(value):
            if not record_is_finite(record) and not ignored(rule, role, trail):
                return True
    return False


def make_task(config: DebuggerConfig) -> OverflowTask:
    """Entry point ``msprobe.dump.tasks`` ``overflow_check``: the policy for one debugger configuration."""
    return OverflowTask(overflow_nums=config.task_config.overflow_nums, level=config.level)
