"""Ranks as tasks on Dask distributed: one task per rank, locally or on a cluster, fed to a progress bar.

* ``jobs == 1`` and no scheduler: Dask's synchronous scheduler, in this process (no worker processes).
* ``jobs > 1``: a local cluster of ``jobs`` single-threaded worker processes, closed at the end.
* ``scheduler`` (``--scheduler ADDRESS`` or ``DASK_SCHEDULER_ADDRESS``): the workers of that cluster.
  Each worker reports which rank folders it can read (``MSPROBE_WORKER_ROOTS``, :data:`ROOTS_ENV`, limits a
  worker to the folders of its node), and each rank's task is restricted to those workers, so dumps never
  travel: only results do. A rank no worker can read, or whose only readers died, is reported with why.

A task that fails, or whose worker died and could not be run elsewhere, is a :class:`RankOutcome` with
``ok=False`` and ``why``: callers report it as not done, never as done (:func:`refuse_incomplete`).
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..schema.errors import MsprobeError
from .progress import Bar

ROOTS_ENV = "MSPROBE_WORKER_ROOTS"
"""Folders (os.pathsep-separated) a Dask worker serves; unset: every folder it can read."""
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
SCHEDULER_HELP = "Run the ranks on this Dask scheduler's workers (default: $DASK_SCHEDULER_ADDRESS, else local)."
JOBS_HELP = "Local worker processes (1: in this process, Dask's synchronous scheduler)."
_POLL_S = 0.5


@dataclass
class RankOutcome:
    """What became of one rank's task."""

    path: Any
    """The rank folder (or the folders of a rank pair) as given."""
    ok: bool
    value: Any = None
    why: str = ""
    worker: str = ""
    """Which worker ran it (``host:pid``)."""
    lost: bool = False
    """Not run to its end: no worker could read its folders, or its workers died (``why`` says which, not
    naming the folders); False with ``ok=False``: the task's own error (``why`` is its message)."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def can_read(path: str) -> bool:
    """Whether this process (a worker) serves and can read the rank folder ``path``."""
    roots = [r for r in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if r]
    target = os.path.realpath(path)
    if roots and not any(target == os.path.realpath(r) or target.startswith(os.path.realpath(r) + os.sep)
                         for r in roots):
        return False
    return os.path.isdir(target) and os.access(target, os.R_OK | os.X_OK)


def _readable(paths: List[str]) -> List[bool]:
    return [can_read(p) for p in paths]


def _folders(path: Any) -> Tuple[str, ...]:
    """The folders a task reads: a rank folder, or both of a rank pair."""
    return tuple(str(p) for p in path) if isinstance(path, (tuple, list)) else (str(path),)


def _task(fn: Callable[[Any], Any], path: Any, item: Any) -> Dict[str, Any]:
    # runs on the worker: refuse a folder this worker does not serve rather than read it from elsewhere
    for folder in _folders(path):
        if not can_read(folder):
            raise MsprobeError(f"{folder}: not readable on worker {worker_name()}")
    return {"value": fn(item), "worker": worker_name()}


def refuse_incomplete(outcomes: Sequence[RankOutcome], verb: str) -> None:
    """Refuse a run with a task not done (its dump broken, no worker reading its folders, its workers dead):
    a report never claims a rank it did not read. Names the first such task, counts the others; ``verb``:
    what a task does ("compared"). A lost task is named by its folders, a failed one by its own error."""
    failed = [o for o in outcomes if not o.ok]
    if not failed:
        return
    first = failed[0]
    why = f"{' vs '.join(_folders(first.path))}: not {verb}: {first.why}" if first.lost else first.why
    unit = "rank pair(s)" if isinstance(first.path, (tuple, list)) else "rank(s)"
    more = f" (and {len(failed) - 1} more {unit} not {verb})" if len(failed) > 1 else ""
    raise MsprobeError(why + more)


def dask_modules():
    try:
        import dask
        import distributed
    except ImportError:
        raise MsprobeError("running ranks as tasks needs dask: pip install 'dask[distributed]'") from None
    return dask, distributed


def run_ranks(fn: Callable[[Any], Any], paths: Sequence[Any], description: str, jobs: int = 1,
              scheduler: Optional[str] = None, quiet: bool = False,
              items: Optional[Sequence[Any]] = None) -> List[RankOutcome]:
    """``fn(item)`` for every rank folder (or pair of folders: a tuple), one Dask task each, run where every
    folder it names can be read; ``items``: what ``fn`` gets per task (default: its folder, as a str).
    Outcomes in the order of ``paths``."""
    paths = [tuple(str(f) for f in p) if isinstance(p, (tuple, list)) else str(p) for p in paths]
    items = list(paths) if items is None else list(items)
    scheduler = scheduler or os.environ.get(SCHEDULER_ENV) or None
    with Bar(len(paths), description, quiet) as bar:
        if scheduler is None and jobs <= 1:
            return _synchronous(fn, paths, items, bar)
        dask, distributed = dask_modules()
        if scheduler is not None:
            try:
                client = distributed.Client(scheduler, timeout="10s")
            except (OSError, TimeoutError) as exc:
                raise MsprobeError(f"--scheduler {scheduler}: cannot reach the Dask scheduler ({exc})") from None
            with client:
                return _distributed(client, fn, paths, items, bar, locality=True)
        with dask.config.set({"distributed.worker.daemon": False, "distributed.logging.distributed": "error"}):
            cluster = distributed.LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                               dashboard_address=None, silence_logs=40)
            with cluster, distributed.Client(cluster) as client:
                return _distributed(client, fn, paths, items, bar, locality=False)


def _synchronous(fn: Callable[[Any], Any], paths: List[Any], items: List[Any], bar: Bar) -> List[RankOutcome]:
    out = []
    try:
        import dask
    except ImportError:  # one process needs no Dask: the same tasks, run in order
        dask = None
    for path, item in zip(paths, items):
        try:
            if dask is not None:
                result = dask.delayed(_task)(fn, path, item).compute(scheduler="synchronous")
            else:
                result = _task(fn, path, item)
            out.append(RankOutcome(path, True, result["value"], worker=result["worker"]))
        except (MsprobeError, OSError) as exc:
            out.append(RankOutcome(path, False, why=" ".join(str(exc).splitlines())))
        bar.advance()
    return out


def _distributed(client, fn, paths: List[Any], items: List[Any], bar: Bar, locality: bool) -> List[RankOutcome]:
    from distributed import wait

    outcomes: Dict[int, RankOutcome] = {}
    readers = _readers(client, paths) if locality else {p: None for p in paths}
    futures, allowed = {}, {}
    for at, (path, item) in enumerate(zip(paths, items)):
        who = readers[path]
        if who is not None and not who:
            outcomes[at] = RankOutcome(path, False, why="no Dask worker can read it", lost=True)
            bar.advance()
            continue
        future = client.submit(_task, fn, path, item, key=f"rank-{at}-{abs(hash(path))}", pure=False,
                               workers=who, allow_other_workers=False)
        futures[future] = at
        allowed[future] = who
    pending = set(futures)
    while pending:
        try:
            done, pending = wait(pending, timeout=_POLL_S, return_when="FIRST_COMPLETED")
        except TimeoutError:
            done = set()
        pending = set(pending)
        for future in done:
            outcomes[futures[future]] = _outcome(future, paths[futures[future]])
            bar.advance()
        if not done and locality:  # a rank whose every reader died waits forever: report it instead
            alive = set(client.scheduler_info().get("workers", {}))
            for future in [f for f in pending if allowed[f] is not None and not set(allowed[f]) & alive]:
                future.cancel()
                pending.discard(future)
                outcomes[futures[future]] = RankOutcome(
                    paths[futures[future]], False,
                    why=f"the worker(s) that could read it died ({', '.join(allowed[future])})", lost=True)
                bar.advance()
    return [outcomes[at] for at in range(len(paths))]


def _readers(client, paths: List[Any]) -> Dict[Any, List[str]]:
    """task's folder(s) → addresses of the workers that report they can read every one of them."""
    folders = sorted({f for p in paths for f in _folders(p)})
    reports = client.run(_readable, folders)
    seen = {addr: {f for f, ok in zip(folders, report) if ok} for addr, report in reports.items()}
    return {path: [addr for addr, mine in seen.items() if set(_folders(path)) <= mine] for path in paths}


def _outcome(future, path: str) -> RankOutcome:
    try:
        result = future.result()
    except Exception as exc:  # the task's own error, or KilledWorker after its workers kept dying
        why = " ".join(str(exc).splitlines()) or exc.__class__.__name__
        if exc.__class__.__name__ == "KilledWorker":
            return RankOutcome(path, False, why="its worker died while running it (retried, then given up)",
                               lost=True)
        return RankOutcome(path, False, why=why)
    return RankOutcome(path, True, result["value"], worker=result["worker"])
