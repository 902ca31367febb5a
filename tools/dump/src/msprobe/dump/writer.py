"""Background writer: tensor files and the end-of-step JSON files. The hook thread only queues work;
a daemon thread does the file I/O (fsync included) in order."""
from __future__ import annotations

import os
import queue
import sys
import threading
from typing import Any, Callable, Dict, Optional, Tuple


class TensorFileWriter:
    """One daemon thread draining a queue of (snapshot, path) through the adapter's save function."""

    def __init__(self, save: Callable[[Any, str], None]) -> None:
        self._save = save
        # bounded: when the disk is slower than the training, the hook waits instead of piling up copies
        self._queue: "queue.Queue[Optional[Tuple[Any, str]]]" = queue.Queue(maxsize=4096)
        self._thread: Optional[threading.Thread] = None
        self._recent: Dict[int, Tuple[Any, str]] = {}

    def put(self, snapshot: Any, path: str) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="msprobe-tensor-writer", daemon=True)
            self._thread.start()
        self._queue.put((snapshot, path))

    def call(self, work: Callable[[], Any], what: str) -> None:
        """Run ``work()`` on the writer thread after everything queued before it."""
        self.put(work, what)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                snapshot, path = item
                if callable(snapshot):
                    snapshot()
                    continue
                self._write(snapshot, path)
            except Exception as exc:  # a full disk must not kill training; say it once per file
                print(f"msprobe: warning: cannot write {item[1] if item else '?'}: {exc}", file=sys.stderr)
            finally:
                self._queue.task_done()

    def _write(self, snapshot: Any, path: str) -> None:
        """Save, or hard-link when the adapter handed the same snapshot again (one API's output is the next
        one's input: same bytes under two names, serialised once)."""
        earlier = self._recent.get(id(snapshot))
        if earlier is not None and earlier[0] is snapshot:
            try:
                os.link(earlier[1], path)
                return
            except OSError:  # no hard links here (or the first file failed): write it again
                pass
        self._save(snapshot, path)
        if len(self._recent) >= 64:
            self._recent.clear()
        self._recent[id(snapshot)] = (snapshot, path)

    def drain(self) -> None:
        """Block until every queued file is on disk (end of a step, stop, exit)."""
        if self._thread is not None:
            self._queue.join()
