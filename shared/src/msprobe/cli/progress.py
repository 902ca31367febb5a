"""Progress bars (rich, on stderr) for commands that work through many ranks, steps or files.

Shown only to a person at a terminal: off with ``--quiet`` and whenever stderr is not a terminal
(pipes, CI logs, captured output), so files and logs never hold control sequences.
"""
from __future__ import annotations

import sys
from typing import Any, Iterable, Iterator, Sequence, TypeVar

import typer

from .terminal import echo

T = TypeVar("T")

QUIET_HELP = "No progress bars (they show only on a terminal)."


def shown(quiet: bool) -> bool:
    """Whether a progress bar may be drawn now."""
    return not quiet and sys.stderr.isatty()


def track(items: Sequence[T], description: str, quiet: bool = False) -> Iterable[T]:
    """``items``, with a bar advancing as each is taken when there is more than one and a bar may be shown."""
    if len(items) < 2 or not shown(quiet):
        return items
    return _tracked(items, description)


def _tracked(items: Sequence[T], description: str) -> Iterator[T]:
    from rich.console import Console  # only when a bar is drawn: rich is slow to import
    from rich.progress import track as rich_track

    yield from rich_track(items, description=description, console=Console(stderr=True), transient=True)


class Bar:
    """A bar fed by completions, from any thread: ``with Bar(total, "comparing", quiet, in_bytes=True) as bar:
    bar.advance(n)``. Drawn only where :func:`shown`; ``transient``, so the summary lines replace it."""

    def __init__(self, total: int, description: str, quiet: bool = False, in_bytes: bool = False) -> None:
        self._bar: Any = None
        if total and shown(quiet):
            from rich.console import Console
            from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TaskProgressColumn,
                                       TextColumn, TimeRemainingColumn, TransferSpeedColumn)

            amount = [DownloadColumn(), TransferSpeedColumn()] if in_bytes else [MofNCompleteColumn()]
            self._bar = Progress(TextColumn(description), BarColumn(), TaskProgressColumn(), *amount,
                                 TimeRemainingColumn(), console=Console(stderr=True), transient=True)
            self._task = self._bar.add_task(description, total=total)

    def __enter__(self) -> "Bar":
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, amount: int = 1) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, amount)


def warn(line: str) -> None:
    """A warning as every command of the suite prints one (stderr, one line; names it quotes escaped)."""
    echo(f"msprobe: warning: {line}", err=True)
