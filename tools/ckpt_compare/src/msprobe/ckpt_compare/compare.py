"""Compare two checkpoints of any layouts parameter by parameter; build the JSON report and summary."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import dist_ckpt, megatron_ckpt, names
from .locate import iteration_dir
from .engine import add_note, execute
from .kernel import COMPLEX, comparable
from .model import Checkpoint, Param
from .options import CompareOptions

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
    pairs = []
    for name in sorted(set(left) | set(right), key=names.sort_key):
        a, b = left.get(name), right.get(name)
        if a is None or b is None:
            present = a or b
            report.entries[name] = {"l2": None, "cos": None, "numel": present.numel, "shape": list(present.shape),
                                    "only_in": "path1" if a is not None else "path2"}
            continue
        entry: Dict[str, Any] = {"l2": None, "cos": None, "numel": a.numel, "shape": list(a.shape)}
        report.entries[name] = entry
        rows = _rows(name, a, b, entry)
        if rows is not None and _comparable(a, b, entry):
            pairs.append((name, a, b, rows))
        for note in sorted({param.note for param in (a, b) if param.note}):
            add_note(entry, note)
    report.seconds, report.bytes_read = execute(pairs, report.entries, options)
    return report


def _rows(name: str, a: Param, b: Param, entry: Dict[str, Any]) -> Optional[int]:
    """Rows of both to compare, or None (shape mismatch, recorded in ``entry``)."""
    rows = a.shape[0] if a.shape else 1
    if a.shape == b.shape:
        return rows
    if name in _VOCAB and a.shape[1:] == b.shape[1:]:
        rows = min(a.shape[0], b.shape[0])  # vocabulary padded differently for different TP sizes
        add_note(entry, f"vocabulary padding differs ({a.shape[0]} vs {b.shape[0]} rows); first {rows} rows compared")
        entry["numel"] = rows * (a.numel // a.shape[0])
        return rows
    entry["shape_path2"] = list(b.shape)
    entry["error"] = "shape mismatch"
    return None


def _comparable(a: Param, b: Param, entry: Dict[str, Any]) -> bool:
    for param in (a, b):
        if not comparable(param.dtype):
            entry["error"] = f"dtype {param.dtype} is not compared"
            return False
    if (a.dtype in COMPLEX) != (b.dtype in COMPLEX):
        entry["error"] = f"dtype mismatch: {a.dtype} vs {b.dtype} (complex against real)"
        return False
    return True


def summary(report: Report) -> List[str]:
    entries = report.entries
    compared = [(n, e) for n, e in entries.items() if e.get("cos") is not None]
    only1 = [n for n, e in entries.items() if e.get("only_in") == "path1"]
    only2 = [n for n, e in entries.items() if e.get("only_in") == "path2"]
    shapes = [n for n, e in entries.items() if e.get("error") == "shape mismatch"]
    others = [f"{n} ({e['error']})" for n, e in entries.items() if e.get("error") not in (None, "shape mismatch")]
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
                         ("replicas differ across ranks", replicas), ("not compared", others)):
        if items:
            lines.append(f"{label}: {len(items)} ({', '.join(items[:3])}{', ...' if len(items) > 3 else ''})")
    for ckpt in (report.left, report.right):
        lines.extend(f"note: {note}" for note in ckpt.notes)
    nonfinite = [n for n, e in entries.items() if "non-finite" in e.get("note", "")]
    if nonfinite:
        lines.append(f"non-finite values: {len(nonfinite)} ({', '.join(nonfinite[:3])})")
    return lines
