"""Read element ranges of a logical parameter from its on-disk pieces, in logical (C) order.

Reads are positional (``os.preadv``) straight into the caller's buffer, so threads share nothing but
file descriptors; ``Files.prefetch`` asks the kernel to start reading ranges that come next
(``POSIX_FADV_WILLNEED`` from a background thread), so the disk stays busy while workers compute
and the pages go to the page cache, not to this process's memory. (Memory maps were tried:
page-fault "fault-around" keeps re-mapping released pages, so resident memory crept up with the
checkpoint size; plain reads keep it flat.)
"""
from __future__ import annotations

import os
import queue
import threading
from typing import Iterator, List, Tuple

import numpy as np

from msprobe.schema.errors import MsprobeError

from .kernel import NUMPY
from .model import Param, Piece
from .tensorref import ITEMSIZE, TensorRef

Segment = Tuple[Piece, int, int]  # piece, first and last+1 unit (row, or element when flat) it serves


class Files:
    """Open file descriptors of the worker threads, and a background read-ahead of what comes next."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._all: List[int] = []
        self._lock = threading.Lock()
        self._queue: "queue.Queue" = queue.Queue()
        self._thread = threading.Thread(target=self._prefetcher, daemon=True)
        self._thread.start()

    def prefetch(self, ranges: List[Tuple[str, int, int]]) -> None:
        self._queue.put(ranges)

    def _prefetcher(self) -> None:
        while True:
            ranges = self._queue.get()
            if ranges is None:
                return
            for path, offset, length in ranges:
                try:
                    os.posix_fadvise(self._fd(path), offset, length, os.POSIX_FADV_WILLNEED)
                except (OSError, MsprobeError, AttributeError):
                    pass  # only a hint: the real read reports any problem

    def read(self, ref: TensorRef, offset: int, into: memoryview) -> None:
        fd = self._fd(str(ref.path))
        try:
            got = os.preadv(fd, [into], offset)
        except OSError as exc:
            raise MsprobeError(f"{ref.path}: cannot read ({exc.strerror})") from None
        if got != len(into):
            raise MsprobeError(f"{ref.path}: file ends before the tensor data does (truncated?)")

    def _fd(self, path: str) -> int:
        # One descriptor per thread and file: the kernel keeps read-ahead state per open file, and
        # two threads reading different places through one descriptor would defeat it.
        mine = self._local.__dict__.setdefault("fds", {})
        if path not in mine:
            try:
                mine[path] = os.open(path, os.O_RDONLY)
            except OSError as exc:
                raise MsprobeError(f"{path}: cannot open ({exc.strerror})") from None
            with self._lock:
                self._all.append(mine[path])
        return mine[path]

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join()
        with self._lock:
            for fd in self._all:
                os.close(fd)
            self._all.clear()


class Source:
    """One logical parameter as a flat sequence of elements in its stored dtype.

    When every piece spans whole rows (unsplit, or split on dim 0) the pieces are consecutive runs of
    the flat order, so any element range is read straight into place (``flat``); pieces split on a
    later dim are read row-aligned and scattered into place.
    """

    def __init__(self, files: Files, param: Param) -> None:
        self.files, self.param = files, param
        self.dtype = np.dtype(NUMPY[param.dtype])
        self.size = ITEMSIZE[param.dtype]
        self.row = param.numel // param.shape[0] if param.shape and param.shape[0] else 1
        self.flat = all(tuple(p.ref.shape[1:]) == tuple(param.shape[1:]) for p in param.pieces)
        self.unit = 1 if self.flat else self.row

    def _segments(self, e0: int, e1: int) -> Iterator[Segment]:
        """Pieces overlapping elements [e0, e1), with the overlap in units of ``self.unit``."""
        per = self.row // self.unit
        u0, u1 = e0 // self.unit, e1 // self.unit
        for piece in self.param.pieces:
            first = (piece.start[0] if piece.start else 0) * per
            count = (piece.ref.shape[0] if piece.ref.shape else 1) * per
            a, b = max(u0, first), min(u1, first + count)
            if a < b and piece.ref.numel:
                yield piece, a, b

    def _span(self, piece: Piece, a: int, b: int) -> Tuple[int, int]:
        """(byte offset in the file, byte length) of units [a, b) of ``piece``."""
        per_unit = piece.ref.numel // max(1, piece.ref.shape[0] if piece.ref.shape else 1) if not self.flat else 1
        first = (piece.start[0] if piece.start else 0) * (self.row // self.unit)
        return piece.ref.offset + (a - first) * per_unit * self.size, (b - a) * per_unit * self.size

    def ranges(self, e0: int, e1: int) -> List[Tuple[str, int, int]]:
        return [(str(piece.ref.path),) + self._span(piece, a, b) for piece, a, b in self._segments(e0, e1)]

    def read(self, e0: int, e1: int, buf: bytearray, spare: bytearray) -> np.ndarray:
        """Elements [e0, e1) (multiples of ``unit``) in ``buf``; ``spare`` holds split pieces' rows."""
        view = memoryview(buf)
        out = np.frombuffer(buf, dtype=self.dtype, count=e1 - e0)
        for piece, a, b in self._segments(e0, e1):
            offset, length = self._span(piece, a, b)
            if self.flat:
                start = (a * self.unit - e0) * self.size
                self.files.read(piece.ref, offset, view[start:start + length])
                continue
            self.files.read(piece.ref, offset, memoryview(spare)[:length])
            rows = out.reshape((-1,) + tuple(self.param.shape[1:]))
            where = (slice(a - e0 // self.row, b - e0 // self.row),) + tuple(
                slice(s, s + n) for s, n in zip(piece.start[1:], piece.ref.shape[1:]))
            rows[where] = np.frombuffer(spare, dtype=self.dtype, count=length // self.size).reshape(
                (b - a,) + tuple(piece.ref.shape[1:]))
        return out


def replicas_differ(files: Files, param: Param, limit_elems: int, mine: bytearray, theirs: bytearray) -> List[str]:
    """Ranks whose copy of a replicated parameter differs from the first rank's, read span by span."""
    if not param.replicas or param.numel > limit_elems or len(param.pieces) != 1:
        return []
    first = param.pieces[0].ref
    nbytes, chunk = first.numel * ITEMSIZE[first.dtype], min(len(mine), len(theirs))
    bad = []
    for where, ref in param.replicas:
        if ref.shape != first.shape or ref.dtype != first.dtype:
            bad.append(where)
            continue
        for start in range(0, nbytes, chunk):
            count = min(chunk, nbytes - start)
            files.read(first, first.offset + start, memoryview(mine)[:count])
            files.read(ref, ref.offset + start, memoryview(theirs)[:count])
            if not np.array_equal(np.frombuffer(mine, np.uint8, count), np.frombuffer(theirs, np.uint8, count)):
                bad.append(where)
                break
    return bad
