"""A step's directory and journal, opened on the background writer thread before the step's first entry.

Making a directory and creating a file is slow on some disks (a network file system above all), and
the first entry of every dumped step would wait for them. With ``async_dump``, ``step()`` asks for the next
step's directory when that step is recorded and this one wrote entries; its first entry takes the
writer if it is ready and opens its own otherwise (after which the background one is never opened).
The journal opened ahead has its final name, ``dump.journal``: renaming it at the first entry would cost
that entry a system call (a round trip on a network file system), and readers pass over a
journal that holds no record (``msprobe.schema.journal.journal_recorded``). One that is not taken is
removed again, with the directories it made, when the next one is asked for or the process exits; a
process killed before leaves a directory that readers pass over.
"""
from __future__ import annotations

import os
import threading
from typing import Callable, List, Optional

from msprobe.schema.journal import JOURNAL_NAME
from msprobe.schema.rank_writer import RankWriter
from msprobe.schema.tree import TENSOR_DIR


class OpenedAhead:
    """The writer of one rank directory, opened by ``run()`` on the writer thread unless taken first."""

    def __init__(self, rank_dir: str, open_writer: Callable[[str, bool], RankWriter]) -> None:
        """``open_writer(rank_dir, dir_made)``: a new writer of that directory's journal."""
        self.rank_dir = rank_dir
        self._open_writer = open_writer
        self._lock = threading.Lock()
        self._writer: Optional[RankWriter] = None
        self._taken = False
        self._made: List[str] = []  # the directories run() created, innermost last

    def run(self) -> None:
        """Open the directory and journal, unless taken already or a journal is there (a run before this
        one left it: the first entry's own open appends to it, as it always did)."""
        with self._lock:
            if self._taken:
                return
            made = _prepare_dirs([os.path.dirname(self.rank_dir), self.rank_dir], os.path.join(self.rank_dir, JOURNAL_NAME))
            if made is None:
                return
            self._writer = self._open_writer(self.rank_dir, True)
            # the tensor directory (tensor task) is the writer's: one in a rank directory made now is new too
            self._made = made + ([os.path.join(self.rank_dir, TENSOR_DIR)] if self.rank_dir in made else [])

    def take(self, rank_dir: Optional[str]) -> Optional[RankWriter]:
        """The writer, when it is open and for ``rank_dir``; None otherwise (nothing is opened after this;
        an open one for another directory is removed: ``remove()`` it on the writer thread)."""
        with self._lock:
            self._taken = True
            if self._writer is None or rank_dir != self.rank_dir:
                return None
            writer, self._writer = self._writer, None
        return writer

    def remove(self) -> None:
        """Undo ``run()`` unless ``take()`` handed its writer out: the journal, then the directories it
        made, if they are empty."""
        with self._lock:
            self._taken = True
            writer, self._writer = self._writer, None
        if writer is None:
            return
        writer.discard()
        for path in reversed(self._made):
            try:
                os.rmdir(path)
            except OSError:  # not empty (another rank's directory, files put there since): kept
                pass


def _prepare_dirs(dirs: List[str], journal: str) -> Optional[List[str]]:
    """Those of ``dirs`` made (outermost first); None, and nothing done, when ``journal`` is there."""
    if os.path.exists(journal):
        return None
    made = [path for path in dirs if not os.path.isdir(path)]
    for path in dirs:
        os.makedirs(path, exist_ok=True)
    return made
