"""Tasks: what a dump keeps. ``statistics`` and ``tensor`` are built in; other tools add theirs
(overflow_check) through the ``msprobe.dump.tasks`` entry point group or the ``tasks=`` argument.

A task is a factory ``factory(config) -> TaskPolicy``.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from msprobe.schema import DebuggerConfig, MsprobeError, plugins

TASK_GROUP = "msprobe.dump.tasks"


class TaskPolicy:
    """Per-entry decisions of a task; the engine asks after the entry's statistics reached the host."""

    save_tensors = False
    """True: write a tensor file for every tensor of a kept entry (task ``tensor``)."""

    def keep(self, name: str, entry: Dict[str, Any]) -> bool:
        """Keep this entry (its statistics are final host numbers)? Called once per entry, in order."""
        return True

    def kept(self, name: str, rank_dir: str) -> None:
        """Called after a kept entry went to the writer, with the rank directory it is written to."""

    def finished(self) -> bool:
        """True once the task wants no more entries (e.g. after N overflows): recording stops."""
        return False

    def on_step_end(self, step: int) -> None:
        """Called after each step's files are final."""


class StatisticsTask(TaskPolicy):
    pass


class TensorTask(TaskPolicy):
    save_tensors = True


BUILTIN_TASKS: Dict[str, Callable[[DebuggerConfig], TaskPolicy]] = {
    "statistics": lambda config: StatisticsTask(),
    "tensor": lambda config: TensorTask(),
}


def resolve_task(config: DebuggerConfig,
                 tasks: Optional[Dict[str, Callable[[DebuggerConfig], TaskPolicy]]] = None) -> TaskPolicy:
    """The policy of ``config.task``: ``tasks`` argument first, then built-ins, then entry points."""
    name = config.task
    if tasks and name in tasks:
        return tasks[name](config)
    if name in BUILTIN_TASKS:
        return BUILTIN_TASKS[name](config)
    for point in plugins.entry_points(TASK_GROUP):
        if point.name == name:
            return point.load()(config)
    raise MsprobeError(f"{config.source or 'config'}: field 'task': task '{name}' needs a tool that is not "
                       f"installed (no '{TASK_GROUP}' entry point named '{name}'; "
                       "for overflow_check: pip install msprobe-overflow)")
