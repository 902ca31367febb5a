"""The online ``overflow_check`` task: the dump engine keeps only entries whose tensors hold inf/nan.

The engine computes every tensor's statistics on the tensor's own device and brings them to the
host in batches (no host sync per tensor); the decision here only reads those host numbers, so a
step without overflow costs what a statistics dump costs, minus the writing. An inf/nan anywhere
in a tensor makes its Max, Min, Mean or Norm inf/nan, which is what ``record_is_finite`` checks.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from msprobe.dump.tasks import TaskPolicy
from msprobe.schema import DebuggerConfig, iter_records, record_is_finite, try_parse_entry

from .analyze import EntryState, scan_entry
from .ascend import warn_if_undetectable
from .rules import UserIgnore, parse_ignore

# Doc 30: at L1 the overflow check covers APIs except Primitive and Jit ones.
L1_EXCLUDED_PREFIXES = ("Primitive", "Jit")


class OverflowTask(TaskPolicy):
    """Keep an entry only when one of its tensors (not excused by an ignore rule) holds inf/nan."""

    def __init__(self, overflow_nums: int = 1, level: str = "L1", save_tensors: bool = False,
                 ignores: Tuple[UserIgnore, ...] = ()) -> None:
        self.overflow_nums = overflow_nums
        """Stop recording after this many kept entries over the whole run; -1 = unlimited."""
        self.level = level
        self.save_tensors = save_tensors
        self.ignores = ignores
        """The user's ignore list (rules.UserIgnore): APIs whose inf/nan outputs are expected."""
        self.overflows = 0
        self.first: Optional[str] = None
        """Name of the first entry kept (for logs and tests)."""
        self._first_state: Optional[EntryState] = None
        self._scan = StepScan(ignores)

    def keep(self, name: str, entry: Dict[str, Any]) -> bool:
        if self.finished():
            return False
        state = self._scan.overflow(name, entry)
        if state is None:
            return False
        parsed = try_parse_entry(name)
        if self.level == "L1" and parsed is not None and parsed.prefix in L1_EXCLUDED_PREFIXES:
            return False
        self.overflows += 1
        if self.first is None:
            self.first, self._first_state = name, state
        return True

    def kept(self, name: str, rank_dir: str) -> None:
        if name == self.first and self._first_state is not None:
            # one line as it happens: the training goes on and may print for hours after it
            print(first_overflow_line(self._first_state, rank_dir), file=sys.stderr, flush=True)
            self._first_state = None

    def on_step_end(self, step: int) -> None:
        self._scan = StepScan(self.ignores)

    def finished(self) -> bool:
        return self.overflow_nums != -1 and self.overflows >= self.overflow_nums


def inf_nan_state(name: str, entry: Dict[str, Any], ignores: Tuple[UserIgnore, ...] = ()) -> Optional[EntryState]:
    """Where the entry holds inf/nan (ignore rules applied); None when every statistic is finite."""
    # Fast path, the common case: every statistic finite (four float checks per tensor, nothing parsed).
    if all(record_is_finite(record) for _, record in iter_records(entry)):
        return None
    return scan_entry(name, entry, ignores)


def is_overflow(state: EntryState, expected_seen: bool = False) -> bool:
    """Whether the entry's inf/nan is an overflow.

    Not counted: tensors excused by an ignore rule (``empty``, receive buffers), outputs of a call given
    an inf/nan literal (``masked_fill(mask, -inf)``) or of an API on the user's ignore list, and an inf input
    absorbed into finite outputs (a ``-inf`` mask entering softmax). ``expected_seen``: expected inf/nan was
    met earlier in the step; then only what creates inf/nan (finite inputs, inf/nan outputs; or new NaN)
    counts, as the offline analysis decides, since what carries a mask onwards is not an overflow.
    Counted otherwise: any other inf/nan output, and NaN in any input.
    """
    if state.nan_inputs:
        return True
    if not state.bad_outputs or state.expected:
        return False
    return state.produces or not expected_seen


class StepScan:
    """The overflow_check task's decision over one step's entries, fed in order: once expected inf/nan (a mask,
    a listed API) was met, what carries it onwards is not an overflow (``is_overflow``'s ``expected_seen``)."""

    def __init__(self, ignores: Tuple[UserIgnore, ...] = ()) -> None:
        self.ignores = ignores
        self.expected_seen = False

    def overflow(self, name: str, entry: Dict[str, Any]) -> Optional[EntryState]:
        """The entry's inf/nan state when it is an overflow; None otherwise."""
        state = inf_nan_state(name, entry, self.ignores)
        if state is None:
            return None
        counted = is_overflow(state, self.expected_seen)
        self.expected_seen = self.expected_seen or state.expected
        return state if counted else None


def has_overflow(name: str, entry: Dict[str, Any], ignores: Sequence[UserIgnore] = ()) -> bool:
    """Whether the entry, on its own, holds inf/nan that is not expected."""
    state = inf_nan_state(name, entry, tuple(ignores))
    return state is not None and is_overflow(state)


def first_overflow_line(state: EntryState, rank_dir: str) -> str:
    """What the task prints when it finds its first overflow: what, where, the file."""
    what = ", ".join(state.bad_outputs[:3]) or ", ".join(state.bad_inputs[:3])
    more = len(state.bad_outputs or state.bad_inputs) - 3
    what += f" and {more} more" if more > 0 else ""
    return (f"msprobe: overflow_check: first overflow: {state.name}, inf/nan in {what}; recorded in "
            f"{os.path.join(rank_dir, 'dump.json')}")


def make_task(config: DebuggerConfig, save_tensors: bool = False) -> OverflowTask:
    """Entry point ``msprobe.dump.tasks`` ``overflow_check``: the policy for one debugger configuration."""
    ignores = parse_ignore(config.task_config.ignore, config.source or "config", f"{config.task}.ignore")
    warn_if_undetectable()
    return OverflowTask(overflow_nums=config.task_config.overflow_nums, level=config.level,
                        save_tensors=save_tensors or config.task_config.save_tensors, ignores=ignores)


def overflow_task(save_tensors: bool = False) -> Callable[[DebuggerConfig], OverflowTask]:
    """A task factory for ``PrecisionDebugger(..., tasks={"overflow_check": overflow_task(save_tensors=True)})``:
    with ``save_tensors`` the real tensors of the kept entries are written too (every tensor is then
    copied while it is checked, which costs what a tensor dump costs)."""
    return lambda config: make_task(config, save_tensors=save_tensors)
