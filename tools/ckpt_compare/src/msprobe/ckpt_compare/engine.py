"""Run the comparison of many parameter pairs on all cores, with reads running ahead of the arithmetic.

Every pair is cut into spans of about ``span_bytes`` per side; worker threads (one per core) take
spans in checkpoint order, read both sides with one ``preadv`` per piece and reduce them in float64
(``kernel.sums``; numpy and reads release the GIL). While a worker takes span ``i`` the prefetch
thread asks the kernel for span ``i + ahead``, so the disk streams while the cores compute. A pair's
partial sums are added in span order when its last span is done: the numbers do not depend on the
number of threads or their timing. Memory: two or four span buffers per worker, whatever the sizes.
"""
from __future__ import annotations

import os
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from msprobe.cli.progress import Bar

from .kernel import Scratch, l2_cos, scalars, single_threaded_blas, sums
from .model import Param
from .options import CompareOptions
from .reader import Files, Source, replicas_differ


NONFINITE = "non-finite values (nan/inf) in at least one side"


@dataclass
class Job:
    """One parameter pair: its spans' partial sums and the report entry they fill."""
    name: str
    left: Source
    right: Source
    elems: int
    span: int
    entry: Dict[str, Any]
    parts: List[Optional[np.ndarray]] = field(default_factory=list)
    left_over: int = 0


def execute(pairs: List[Tuple[str, Param, Param, int]], entries: Dict[str, Dict[str, Any]],
            options: CompareOptions) -> Tuple[float, int]:
    """Fill ``entries[name]`` with l2 / cos for each (name, left, right, rows); (seconds, bytes compared)."""
    files = Files()
    try:
        jobs = [_job(files, name, a, b, rows, entries[name], options) for name, a, b, rows in pairs]
        jobs.sort(key=lambda job: _place(job.left.param))  # the order of the first checkpoint's files
        tasks = [(job, index) for job in jobs for index in range(len(job.parts))]
        total = sum(job.elems * (job.left.size + job.right.size) for job in jobs)
        run = _Run(files, tasks, options)
        started = time.perf_counter()
        with Bar(total, "comparing", quiet=not options.progress, in_bytes=True) as bar, single_threaded_blas():
            run.start(bar.advance)
        return time.perf_counter() - started, total
    finally:
        files.close()


def _job(files: Files, name: str, a: Param, b: Param, rows: int, entry: Dict[str, Any], options: CompareOptions) -> Job:
    left, right = Source(files, a), Source(files, b)
    unit = max(left.unit, right.unit)  # 1 (any element range) or a row (a side split on a later dim)
    span = max(unit, options.span_bytes // max(left.size, right.size) // unit * unit)
    elems = rows * left.row
    job = Job(name, left, right, elems, span, entry)
    job.parts = [None] * max(1, -(-elems // span))
    job.left_over = len(job.parts)
    return job


def _place(param: Param) -> Tuple[str, int]:
    ref = param.pieces[0].ref
    return str(ref.path), ref.offset


class _Run:
    def __init__(self, files: Files, tasks, options: CompareOptions) -> None:
        self.files, self.tasks, self.options = files, tasks, options
        self.lock = threading.Lock()
        self.next = 0
        self.ahead = max(2, options.readahead_bytes // max(1, 2 * options.span_bytes))
        self.failed = False

    def start(self, advance: Callable[[int], None]) -> None:
        for index in range(min(self.ahead, len(self.tasks))):
            self._prefetch(index)
        workers = self.options.workers or len(os.sched_getaffinity(0))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(self._work, advance) for _ in range(workers)]
            try:
                done, _ = wait(futures, return_when=FIRST_EXCEPTION)
                for future in done:
                    future.result()  # a reader error (truncated file...) is raised at once
            finally:
                self.failed = True  # stops the other workers after their current span
                wait(futures)

    def _take(self) -> Optional[int]:
        with self.lock:
            if self.failed or self.next >= len(self.tasks):
                return None
            self.next += 1
            return self.next - 1

    def _prefetch(self, index: int) -> None:
        if index < len(self.tasks):
            job, part = self.tasks[index]
            e0, e1 = part * job.span, min(job.elems, (part + 1) * job.span)
            self.files.prefetch(job.left.ranges(e0, e1) + job.right.ranges(e0, e1))

    def _work(self, advance: Callable[[int], None]) -> None:
        scratch, buffers = Scratch(), _Buffers(self.options.span_bytes)
        while True:
            index = self._take()
            if index is None:
                return
            self._prefetch(index + self.ahead)
            job, part = self.tasks[index]
            e0, e1 = part * job.span, min(job.elems, (part + 1) * job.span)
            x = job.left.read(e0, e1, *buffers.get(0, (e1 - e0) * job.left.size, job.left.flat))
            y = job.right.read(e0, e1, *buffers.get(1, (e1 - e0) * job.right.size, job.right.flat))
            job.parts[part] = sums(scalars(x), job.left.param.dtype == "bf16",
                                   scalars(y), job.right.param.dtype == "bf16", scratch)
            advance((e1 - e0) * (job.left.size + job.right.size))
            with self.lock:
                job.left_over -= 1
                last = job.left_over == 0
            if last:
                _finish(job)
                for side, param in (("path1", job.left.param), ("path2", job.right.param)):
                    bad = replicas_differ(self.files, param, self.options.replica_check_elems,
                                          buffers.get(0, self.options.span_bytes, True)[0],
                                          buffers.get(1, self.options.span_bytes, True)[0])
                    if bad:
                        job.entry[f"replicas_differ_{side}"] = bad


class _Buffers:
    """A worker's read buffers: (data, spare) per side; spare only for pieces split on a later dim."""

    def __init__(self, span_bytes: int) -> None:
        self.span_bytes = span_bytes
        self.held: Dict[Tuple[int, int], bytearray] = {}

    def get(self, side: int, nbytes: int, flat: bool) -> Tuple[bytearray, bytearray]:
        data = self._buf((side, 0), nbytes)
        return data, (data if flat else self._buf((side, 1), nbytes))

    def _buf(self, key: Tuple[int, int], nbytes: int) -> bytearray:
        buf = self.held.get(key)
        if buf is None or len(buf) < nbytes:
            buf = self.held[key] = bytearray(max(nbytes, self.span_bytes))
        return buf


def _finish(job: Job) -> None:
    total = np.sum(np.stack(job.parts), axis=0) if len(job.parts) > 1 else job.parts[0]
    l2, cos = l2_cos(*(float(v) for v in total))
    job.entry["l2"], job.entry["cos"] = _finite(l2), _finite(cos)
    if l2 != l2 or cos != cos or job.entry["l2"] is None:
        add_note(job.entry, NONFINITE)


def add_note(entry: Dict[str, Any], note: str) -> None:
    entry["note"] = f"{entry['note']}; {note}" if entry.get("note") else note


def _finite(value: float) -> Optional[float]:
    return value if value == value and value not in (float("inf"), float("-inf")) else None
