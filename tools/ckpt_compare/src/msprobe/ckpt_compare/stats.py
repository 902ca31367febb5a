"""Stream two logical parameters block by block from disk and accumulate l2 / cos in float64.

Only one block of rows per side is in memory at a time (``block_elems`` elements), so peak memory
does not grow with the parameter; reads are positional (``os.preadv``) so threads share file handles.
(Memory maps were tried: page-fault "fault-around" keeps re-mapping released pages, so resident
memory crept up with the checkpoint size; plain reads keep it flat.)
"""
from __future__ import annotations

import math
import os
import queue
import threading
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from msprobe.schema.errors import MsprobeError

from .model import Param
from .ptfile import ITEMSIZE, TensorRef

_NUMPY = {"f4": np.float32, "f8": np.float64, "f2": np.float16, "i8": np.int64, "i4": np.int32,
          "i2": np.int16, "i1": np.int8, "u1": np.uint8, "b1": np.bool_, "bf16": np.uint16}


class Files:
    """Open file descriptors of the worker threads, and a background read-ahead of what comes next.

    ``prefetch`` asks the kernel to start reading parameters that will be compared next
    (``POSIX_FADV_WILLNEED`` from a background thread), so the disk stays busy while workers compute;
    the pages go to the page cache, not to this process's memory.
    """

    def __init__(self) -> None:
        self._local = threading.local()
        self._all: List[int] = []
        self._lock = threading.Lock()
        self._queue: "queue.Queue" = queue.Queue()
        self._thread = threading.Thread(target=self._prefetcher, daemon=True)
        self._thread.start()

    def prefetch(self, param: Param) -> None:
        for piece in param.pieces:
            ref = piece.ref
            self._queue.put((str(ref.path), ref.offset, ref.numel * ITEMSIZE[ref.dtype]))

    def _prefetcher(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            path, offset, length = item
            try:
                fd = self._fd(path)
                for start in range(offset, offset + length, 32 << 20):
                    os.posix_fadvise(fd, start, min(32 << 20, offset + length - start), os.POSIX_FADV_WILLNEED)
            except (OSError, MsprobeError, AttributeError):
                pass  # only a hint: the real read reports any problem

    def read(self, ref: TensorRef, offset: int, nbytes: int, into: memoryview) -> None:
        fd = self._fd(str(ref.path))
        try:
            got = os.preadv(fd, [into[:nbytes]], offset)
        except OSError as exc:
            raise MsprobeError(f"{ref.path}: cannot read ({exc.strerror})") from None
        if got != nbytes:
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


def _as_float(raw: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bf16":  # bfloat16 is the top half of a float32
        wide = raw.astype(np.uint32)
        wide <<= 16
        return wide.view(np.float32)
    return raw


class Reader:
    """Fills float64 row blocks of one logical parameter."""

    def __init__(self, files: Files, param: Param) -> None:
        self.files, self.param = files, param
        self.row = param.numel // param.shape[0] if param.shape and param.shape[0] else max(param.numel, 1)
        self.rows = param.shape[0] if param.shape else 1
        self._buf = bytearray()

    def block(self, r0: int, r1: int, out: np.ndarray) -> np.ndarray:
        """Rows [r0, r1) as a flat float64 array (a view of ``out``)."""
        flat = out[: (r1 - r0) * self.row]
        shaped = flat.reshape((r1 - r0,) + tuple(self.param.shape[1:])) if self.param.shape else flat
        for piece in self.param.pieces:
            ref = piece.ref
            s0 = piece.start[0] if piece.start else 0
            n0 = ref.shape[0] if ref.shape else 1
            a, b = max(r0, s0), min(r1, s0 + n0)
            if a >= b or ref.numel == 0:
                continue
            prow = ref.numel // n0
            count = (b - a) * prow
            size = ITEMSIZE[ref.dtype]
            if len(self._buf) < count * size:
                self._buf = bytearray(count * size)
            self.files.read(ref, ref.offset + (a - s0) * prow * size, count * size, memoryview(self._buf))
            values = _as_float(np.frombuffer(self._buf, dtype=_NUMPY[ref.dtype], count=count), ref.dtype)
            if prow == self.row:  # full-width piece: rows land contiguously
                flat[(a - r0) * self.row:(b - r0) * self.row] = values
            else:
                index = (slice(a - r0, b - r0),) + tuple(slice(s, s + n) for s, n in zip(piece.start[1:], ref.shape[1:]))
                shaped[index] = values.reshape((b - a,) + tuple(ref.shape[1:]))
        return flat


def compare(files: Files, left: Param, right: Param, rows: int, block_elems: int,
            progress: Optional[Callable[[int], None]] = None) -> Tuple[float, float]:
    """(l2 of the difference, cosine similarity) over the first ``rows`` rows of both parameters."""
    ra, rb = Reader(files, left), Reader(files, right)
    step = max(1, block_elems // max(ra.row, 1))
    width = step * ra.row
    a, b, d = np.empty(width), np.empty(width), np.empty(width)
    aa = bb = dd = 0.0
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        x, y = ra.block(r0, r1, a), rb.block(r0, r1, b)
        diff = np.subtract(x, y, out=d[: x.size])
        aa += float(np.dot(x, x))
        bb += float(np.dot(y, y))
        dd += float(np.dot(diff, diff))
        if progress:
            progress((r1 - r0) * (ra.row * ITEMSIZE[left.dtype] + rb.row * ITEMSIZE[right.dtype]))
    # a.b = (|a|^2 + |b|^2 - |a-b|^2) / 2 saves a pass; its rounding error is a few ulps of |a||b|,
    # so cos keeps ~1e-15 absolute accuracy (dd itself is never derived this way: it is summed directly).
    return math.sqrt(dd) if dd == dd else float("nan"), _cosine((aa + bb - dd) / 2, aa, bb)


def _cosine(ab: float, aa: float, bb: float) -> float:
    if aa != aa or bb != bb or ab != ab:
        return float("nan")
    if aa == 0.0 and bb == 0.0:
        return 1.0  # two all-zero tensors are identical
    if aa == 0.0 or bb == 0.0:
        return 0.0
    return max(-1.0, min(1.0, ab / math.sqrt(aa * bb)))


def replica_mismatches(files: Files, param: Param, limit_elems: int) -> List[str]:
    """Ranks whose copy of a replicated parameter differs from the first rank's (small tensors only)."""
    if not param.replicas or param.numel > limit_elems or len(param.pieces) != 1:
        return []
    first = param.pieces[0].ref
    want = _raw(files, first)
    return [where for where, ref in param.replicas if ref.shape != first.shape or _raw(files, ref) != want]


def _raw(files: Files, ref: TensorRef) -> bytes:
    buf = bytearray(ref.numel * ITEMSIZE[ref.dtype])
    files.read(ref, ref.offset, len(buf), memoryview(buf))
    return bytes(buf)


def block_bytes(params: Dict[str, Param]) -> int:
    return sum(p.nbytes for p in params.values())
