"""Background writer: tensor files and the end-of-step JSON files. The hook thread only queues work;
a daemon thread does the file I/O (fsync included) in order."""
from __future__ import annotations

import functools
import os
import queue
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

_BACKLOG = 4096
"""Queued items above which the hook thread waits: when the disk is slower than the training, the hook
waits instead of piling up copies."""


class TensorFileWriter:
    """One daemon thread draining a queue of (snapshot, path) through the adapter's save function.

    The queue is a ``SimpleQueue`` (a C queue: 0.1 us a put against 2 us for ``queue.Queue``'s locks and
    conditions, paid for every tensor file on the hook thread and again by the writer, both holding the
    GIL); the backlog is bounded by counting, and ``drain`` waits for a marker queued behind the work."""

    def __init__(self, save: Callable[[Any, str], None]) -> None:
        self._save = save
        self._queue: "queue.SimpleQueue[Tuple[Any, str]]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._recent: Dict[int, Tuple[Any, str]] = {}
        self._queued = 0  # by the hook threads
        self._done = 0  # by the writer thread only
        self._deferred: List[Tuple[Any, str]] = []
        self._queueing = threading.Lock()  # tensor files come from autograd's device threads too

    def put(self, snapshot: Any, path: str) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="msprobe-tensor-writer", daemon=True)
            self._thread.start()
        while self._queued - self._done > _BACKLOG and self._thread.is_alive():
            time.sleep(0.001)
        with self._queueing:  # what was deferred goes first, whichever thread queues next
            deferred, self._deferred = self._deferred, []
            self._queued += len(deferred) + 1
            for item in deferred:
                self._queue.put(item)
            self._queue.put((snapshot, path))

    def defer(self, work: Callable[[], Any], what: str) -> None:
        """``call(work)`` without waking the writer thread: queued with the next ``put``, ``call`` or
        ``drain``, in order. Waking it costs the hook thread a system call (~10 us here, more under a
        hypervisor) and then the GIL whenever the writer wants it; a step that woke it at ``stop()`` and
        again at ``step()`` now wakes it once."""
        with self._queueing:
            self._deferred.append((work, what))

    def call(self, work: Callable[[], Any], what: str) -> None:
        """Run ``work()`` on the writer thread after everything queued before it."""
        self.put(work, what)

    def release(self, garbage: List[Any]) -> None:
        """Free ``garbage`` (what a closed window's caches held) on the writer thread, after the files queued
        before it, and the snapshots kept for hard links with it: a window's snapshots are not handed again
        once its caches are emptied."""
        self.defer(functools.partial(self._release, garbage), "release")

    def _release(self, garbage: List[Any]) -> None:
        garbage.clear()
        self._recent.clear()

    def _run(self) -> None:
        while True:
            snapshot, path = self._queue.get()
            try:
                if callable(snapshot):
                    snapshot()
                    continue
                self._write(snapshot, path)
            except Exception as exc:  # a full disk must not kill training; say it once per file
                print(f"msprobe: warning: cannot write {path}: {exc}", file=sys.stderr)
            finally:
                self._done += 1

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
        if not self._deferred and (self._thread is None or not self._thread.is_alive()):
            return
        if threading.current_thread() is self._thread:
            return  # work queued by the writer itself runs after it anyway
        marker = threading.Event()
        self.put(marker.set, "drain")
        while not marker.wait(0.05):
            if not self._thread.is_alive():
                return
