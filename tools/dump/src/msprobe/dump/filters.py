"""The config's ``scope``, ``list`` and ``data_mode`` filters, applied by name before any work is done."""
from __future__ import annotations

from typing import Tuple

from msprobe.schema import TaskConfig


def base_name(entry: str) -> str:
    """The entry name without direction (so an API's backward follows its forward's scope)."""
    for tag in (".forward", ".backward"):
        cut = entry.rfind(tag)
        if cut >= 0:
            return entry[:cut] + entry[cut + len(tag):]
    return entry


class EntryFilter:
    """Decides which entries and which of their parts are recorded."""

    def __init__(self, task_config: TaskConfig) -> None:
        modes = set(task_config.data_mode)
        everything = "all" in modes
        self.forward = everything or "forward" in modes or not modes & {"forward", "backward"}
        self.backward = everything or "backward" in modes or not modes & {"forward", "backward"}
        self.inputs = everything or "input" in modes or not modes & {"input", "output"}
        self.outputs = everything or "output" in modes or not modes & {"input", "output"}
        self.substrings: Tuple[str, ...] = tuple(task_config.list)
        scope = tuple(task_config.scope)
        self.range = scope if len(scope) == 2 else None
        self.names = frozenset(base_name(s) for s in scope) if scope and self.range is None else None
        self._in_range = False
        self._range_done = False
        self._kept = set()
        self.trivial = everything and not self.substrings and not scope

    def wants_direction(self, direction: str) -> bool:
        return self.forward if direction == "forward" else self.backward

    def wants(self, name: str, direction: str) -> bool:
        """Record entry ``name`` (forward or backward)? Range scopes advance on forward names."""
        if not self.wants_direction(direction):
            return False
        if self.trivial:
            return True
        if self.substrings and not any(s in name for s in self.substrings):
            return False
        if self.names is not None:
            base = base_name(name)
            return any(base == n or base.startswith(n + ".") for n in self.names)
        if self.range is not None:
            return self._range_wants(name, direction)
        return True

    def _range_wants(self, name: str, direction: str) -> bool:
        base = base_name(name)
        if direction == "backward":
            return base in self._kept
        first, last = base_name(self.range[0]), base_name(self.range[1])
        if not self._in_range and not self._range_done and base == first:
            self._in_range = True
        if self._in_range:
            self._kept.add(base)
            if base == last:
                self._in_range, self._range_done = False, True
            return True
        return False

    def new_step(self) -> None:
        self._in_range = False
        self._range_done = False
        self._kept = set()
