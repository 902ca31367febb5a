"""Background writer: tensor files and the end-of-step JSON files. The hook thread queues work; a daemon
thread does the file I/O (fsync included) in order. Small host snapshots may be written by the hook thread
itself (``here``): for a file of a few kilobytes, handing it to the thread costs more than writing it, as
the two threads then trade the GIL around every file."""
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
_BACKLOG_BYTES = 1 << 30
"""Bytes of queued tensor copies above which the hook thread waits (host memory held by the backlog)."""


def _warn(exc: BaseException, what: str) -> None:
    print(f"msprobe: warning: error while {what}: {exc}", file=sys.stderr)


class TensorFileWriter:
    """One daemon thread draining a queue of (snapshot, path) through the adapter's save function.

    The queue is a ``SimpleQueue`` (no locks and conditions of ``queue.Queue`` to pay for every tensor
    file on the hook thread and again by the writer, both holding the GIL); the backlog is bounded by
    counting, and ``drain`` waits for a marker queued behind the work."""

    def __init__(self, save: Callable[[Any, str], None], on_error: Callable[[BaseException, str], None] = _warn,
                 size: Callable[[Any], int] = lambda snapshot: 0,
                 here: Optional[Callable[[Any, int], bool]] = None) -> None:
        """``on_error(exc, what)``: the first error (a full disk); tensor files queued after it are not
        written (other work still runs, its errors go to ``on_error`` too). ``size(snapshot)``: its bytes.
        ``here(snapshot, nbytes)``: whether ``put`` writes that snapshot on the calling thread, at once."""
        self._save = save
        self._here = here
        self._on_error = on_error
        self._size = size
        self.stopped = False
        self._queued_bytes = 0  # by the hook threads
        self._done_bytes = 0  # by the writer thread only
        self._waited = False
        self._queue: "queue.SimpleQueue[Tuple[Any, str, int]]" = queue.SimpleQueue()
        self._thread: Optional[threading.Thread] = None
        self._recent: Dict[int, Tuple[Any, str]] = {}
        self._queued = 0  # by the hook threads
        self._done = 0  # by the writer thread only
        self._deferred: List[Tuple[Any, str]] = []
        self._queueing = threading.Lock()  # tensor files come from autograd's device threads too

    def put(self, snapshot: Any, path: str) -> None:
        nbytes = 0 if callable(snapshot) else self._size(snapshot)
        if self._here is not None and not callable(snapshot) and self._here(snapshot, nbytes):
            self._do(snapshot, path)
            return
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="msprobe-tensor-writer", daemon=True)
            self._thread.start()
        if self._behind():
            self._wait_for_room()
        with self._queueing:  # what was deferred goes first, whichever thread queues next
            deferred, self._deferred = self._deferred, []
            self._queued += len(deferred) + 1
            self._queued_bytes += nbytes
            for item in deferred:
                self._queue.put((item[0], item[1], 0))
            self._queue.put((snapshot, path, nbytes))

    def _behind(self) -> bool:
        return self._queued - self._done > _BACKLOG or self._queued_bytes - self._done_bytes > _BACKLOG_BYTES

    def _wait_for_room(self) -> None:
        """Back-pressure: the training waits for the disk (said once) rather than holding ever more copies."""
        if not self._waited:
            self._waited = True
            print(f"msprobe: note: tensor files are made faster than the disk takes them: the training waits "
                  f"while more than {_BACKLOG} files or {_BACKLOG_BYTES >> 20} MiB are queued", file=sys.stderr)
        while self._behind() and self._thread.is_alive():
            time.sleep(0.001)

    def defer(self, work: Callable[[], Any], what: str) -> None:
        """``call(work)`` without waking the writer thread: queued with the next ``put``, ``call`` or
        ``drain``, in order. Waking it costs the hook thread a system call and then the GIL whenever
        the writer wants it; a step that woke it at ``stop()`` and
        again at ``step()`` now wakes it once."""
        with self._queueing:
            self._deferred.append((work, what))

    def call(self, work: Callable[[], Any], what: str) -> None:
        """Run ``work()`` on the writer thread after everything queued before it."""
        self.put(work, what)

    def on_writer_thread(self) -> bool:
        return threading.current_thread() is self._thread

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
            snapshot, path, nbytes = self._queue.get()
            try:
                self._do(snapshot, path)
            finally:
                self._done_bytes += nbytes
                self._done += 1

    def _do(self, snapshot: Any, path: str) -> None:
        """Run queued work, or write a tensor file unless an error stopped them."""
        try:
            if callable(snapshot):
                snapshot()
            elif not self.stopped:
                self._write(snapshot, path)
        except Exception as exc:  # a full disk must not kill training: the dump stops instead
            self.stopped = True
            self._on_error(exc, f"writing {path}")

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
