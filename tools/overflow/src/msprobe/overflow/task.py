"""The online ``overflow_check`` task: the dump engine keeps only entries whose tensors hold inf/nan.

The engine computes every tensor's statistics on the tensor's own device and brings them to the
host in batches (no host sync per tensor); the decision here only reads those host numbers, so a
step without overflow costs what a statistics dump costs, minus the writing. An inf/nan anywhere
in a tensor makes its Max, Min, Mean or Norm inf/nan, which is what ``record_is_finite`` checks.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from msprobe.dump.tasks import TaskPolicy
from msprobe.schema import DebuggerConfig, iter_records, record_is_finite, try_parse_entry

from .analyze import scan_entry
from .ascend import warn_if_undetectable

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
        if not has_overflow(name, entry):
            return False
        parsed = try_parse_entry(name)
        if self.level == "L1" and parsed is not None and parsed.prefix in L1_EXCLUDED_PREFIXES:
            return False
        self.overflows += 1
        if self.first is None:
            self.first = name
        return True

    def finished(self) -> bool:
        return self.overflow_nums != -1 and self.overflows >= self.overflow_nums


def has_overflow(name: str, entry: Dict[str, Any]) -> bool:
    """Whether the entry holds inf/nan that is not expected.

    Not counted: tensors excused by an ignore rule (``empty``, receive buffers), outputs of a call given
    an inf/nan literal (``masked_fill(mask, -inf)``), and an inf input absorbed into finite outputs
    (a ``-inf`` mask entering softmax). Counted: any other inf/nan output, and NaN in any input.
    """
    # Fast path, the common case: every statistic finite (four float checks per tensor, nothing parsed).
    if all(record_is_finite(record) for _, record in iter_records(entry)):
        return False
    state = scan_entry(name, entry)
    return bool(state.bad_outputs and not state.expected) or state.nan_inputs


def make_task(config: DebuggerConfig, save_tensors: bool = False) -> OverflowTask:
    """Entry point ``msprobe.dump.tasks`` ``overflow_check``: the policy for one debugger configuration."""
    warn_if_undetectable()
    return OverflowTask(overflow_nums=config.task_config.overflow_nums, level=config.level,
                        save_tensors=save_tensors or config.task_config.save_tensors)


def overflow_task(save_tensors: bool = False) -> Callable[[DebuggerConfig], OverflowTask]:
    """A task factory for ``PrecisionDebugger(..., tasks={"overflow_check": overflow_task(save_tensors=True)})``:
    with ``save_tensors`` the real tensors of the kept entries are written too (every tensor is then
    copied while it is checked, which costs what a tensor dump costs)."""
    return lambda config: make_task(config, save_tensors=save_tensors)
