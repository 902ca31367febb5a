"""A progress bar of bytes compared, on stderr, only for a person at a terminal.

Off with ``--quiet`` or when stderr is not a terminal (CI logs, pipes), so captured output stays
free of control sequences; ``transient``: the summary lines replace it when the work is done.
"""
from __future__ import annotations

from typing import Any, Optional

from rich.console import Console
from rich.progress import (BarColumn, DownloadColumn, Progress, TaskProgressColumn, TextColumn,
                           TimeRemainingColumn, TransferSpeedColumn)


class Bar:
    """``with Bar(total, enabled) as bar: bar.advance(nbytes)`` from any thread."""

    def __init__(self, total: int, enabled: bool) -> None:
        console = Console(stderr=True)
        self._bar: Optional[Progress] = None
        if enabled and console.is_terminal:
            self._bar = Progress(TextColumn("comparing"), BarColumn(), TaskProgressColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), TimeRemainingColumn(), console=console, transient=True)
            self._task = self._bar.add_task("compare", total=total)

    def __enter__(self) -> "Bar":
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, nbytes: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, nbytes)
