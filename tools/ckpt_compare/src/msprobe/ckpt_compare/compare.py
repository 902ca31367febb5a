"""Compare two checkpoints of any layouts parameter by parameter; build the JSON report and summary."""
from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import dist_ckpt, megatron_ckpt, names
from .locate import iteration_dir
from .model import Checkpoint
from .options import CompareOptions
from .stats import Files, compare, replica_mismatches

_VOCAB = ("embedding.word_embeddings.weight", "output_layer.weight")


@dataclass
class Report:
    left: Checkpoint
    right: Checkpoint
    entries: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    seconds: float = 0.0
    bytes_read: int = 0


def open_checkpoint(path: Path) -> Checkpoint:
    where, kind = iteration_dir(Path(path))
    ckpt = dist_ckpt.read(where) if kind == "torch_dist" else megatron_ckpt.read(where)
    _drop_tied_head(ckpt)
    return ckpt


def _drop_tied_head(ckpt: Checkpoint) -> None:
    """With tied embeddings the head is a copy of the embedding (kept only on the last stage)."""
    args = ckpt.args
    if args is not None and getattr(args, "untie_embeddings_and_output_weights", True) is False:
        if ckpt.params.pop("output_layer.weight", None) is not None:
            ckpt.notes.append(f"{ckpt.path}: output_layer.weight is tied to the embedding; compared once, as the embedding")


def run(path1: Path, path2: Path, options: CompareOptions) -> Report:
    report = Report(open_checkpoint(path1), open_checkpoint(path2))
    left, right = report.left.params, report.right.params
    jobs = []
    for name in sorted(set(left) | set(right), key=names.sort_key):
        a, b = left.get(name), right.get(name)
        if a is None or b is None:
            present = a or b
            report.entries[name] = {"l2": None, "cos": None, "numel": present.numel, "shape": list(present.shape),
                                    "only_in": "path1" if a is not None else "path2"}
            continue
        entry: Dict[str, Any] = {"l2": None, "cos": None, "numel": a.numel, "shape": list(a.shape)}
        report.entries[name] = entry
        rows = a.shape[0] if a.shape else 1
        if a.shape != b.shape:
            if name in _VOCAB and a.shape[1:] == b.shape[1:]:
                rows = min(a.shape[0], b.shape[0])  # vocabulary padded differently for different TP sizes
                entry["note"] = f"vocabulary padding differs ({a.shape[0]} vs {b.shape[0]} rows); first {rows} rows compared"
                entry["numel"] = rows * (a.numel // a.shape[0])
            else:
                entry["shape_path2"] = list(b.shape)
                entry["error"] = "shape mismatch"
                continue
        jobs.append((name, a, b, rows))
    _execute(report, jobs, options)
    return report


def _execute(report: Report, jobs: List, options: CompareOptions) -> None:
    files = Files()
    total = sum(a.nbytes * rows // max(a.shape[0] if a.shape else 1, 1) + b.nbytes * rows // max(b.shape[0] if b.shape else 1, 1)
                for _n, a, b, rows in jobs)
    done = [0]
    lock = threading.Lock()

    def progress(nbytes: int) -> None:
        with lock:
            done[0] += nbytes

    def work(index: int) -> None:
        name, a, b, rows = jobs[index]
        if index + 1 < len(jobs):  # the next parameter starts coming from disk while this one is compared
            files.prefetch(jobs[index + 1][1])
            files.prefetch(jobs[index + 1][2])
        l2, cos = compare(files, a, b, rows, options.block_elems, progress)
        entry = report.entries[name]
        entry["l2"], entry["cos"] = _finite(l2), _finite(cos)
        if l2 != l2 or cos != cos:
            entry["note"] = "non-finite values (nan/inf) in at least one side"
        for side, param in (("path1", a), ("path2", b)):
            bad = replica_mismatches(files, param, options.replica_check_elems)
            if bad:
                entry[f"replicas_differ_{side}"] = bad

    started = time.perf_counter()
    jobs = sorted(jobs, key=lambda j: -j[1].nbytes)  # big first: both workers stay busy to the end
    show = options.progress and sys.stderr.isatty()
    try:
        with ThreadPoolExecutor(max_workers=max(1, options.workers)) as pool:
            for job in jobs[:2]:
                files.prefetch(job[1])
                files.prefetch(job[2])
            pending = {pool.submit(work, index) for index in range(len(jobs))}
            while pending:
                finished, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
                for future in finished:
                    future.result()  # re-raise a reader error (truncated file...) at once
                if show and time.perf_counter() - started > 1.0:
                    _bar(done[0], total, time.perf_counter() - started)
    finally:
        files.close()
        if show and time.perf_counter() - started > 1.0:
            sys.stderr.write("\n")
    report.seconds = time.perf_counter() - started
    report.bytes_read = done[0]


def _bar(done: int, total: int, seconds: float) -> None:
    frac = done / total if total else 1.0
    filled = int(frac * 30)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {frac:6.1%} "
                     f"{done / 2**20:,.0f}/{total / 2**20:,.0f} MiB {done / 2**20 / max(seconds, 1e-9):,.0f} MiB/s")
    sys.stderr.flush()


def _finite(value: float) -> Optional[float]:
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def summary(report: Report) -> List[str]:
    entries = report.entries
    compared = [(n, e) for n, e in entries.items() if e.get("cos") is not None]
    only1 = [n for n, e in entries.items() if e.get("only_in") == "path1"]
    only2 = [n for n, e in entries.items() if e.get("only_in") == "path2"]
    shapes = [n for n, e in entries.items() if e.get("error") == "shape mismatch"]
    replicas = [n for n, e in entries.items() if any(k.startswith("replicas_differ") for k in e)]
    lines = [f"path1: {report.left.path} ({report.left.layout}, {len(report.left.params)} parameters)",
             f"path2: {report.right.path} ({report.right.layout}, {len(report.right.params)} parameters)",
             f"compared {len(compared)} parameters ({sum(e['numel'] for _n, e in compared):,} elements) "
             f"in {report.seconds:.1f}s"]
    if compared:
        worst_cos = min(compared, key=lambda kv: kv[1]["cos"])
        worst_l2 = max(compared, key=lambda kv: kv[1]["l2"])
        lines.append(f"worst cos: {worst_cos[1]['cos']:.6f} ({worst_cos[0]})")
        lines.append(f"worst l2: {worst_l2[1]['l2']:.6g} ({worst_l2[0]})")
    for label, items in (("only in path1", only1), ("only in path2", only2), ("shape mismatch", shapes),
                         ("replicas differ across ranks", replicas)):
        if items:
            lines.append(f"{label}: {len(items)} ({', '.join(items[:3])}{', ...' if len(items) > 3 else ''})")
    for ckpt in (report.left, report.right):
        lines.extend(f"note: {note}" for note in ckpt.notes)
    nonfinite = [n for n, e in entries.items() if "non-finite" in e.get("note", "")]
    if nonfinite:
        lines.append(f"non-finite values: {len(nonfinite)} ({', '.join(nonfinite[:3])})")
    return lines
