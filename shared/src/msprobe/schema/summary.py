"""What ``msprobe inspect`` reports about a dump: counts per step and rank, and non-finite tensors."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from .dump import iter_records, record_is_finite
from .errors import SchemaError
from .names import try_parse_entry
from .jsonio import path_kind
from .tree import RankDir, list_dir


@dataclass
class RankSummary:
    step: Optional[int]
    step_dir: Optional[str]
    """The step directory's name (``step01`` and ``step1`` are two steps)."""
    rank: str
    path: str
    framework: Optional[str]
    task: Optional[str]
    level: Optional[str]
    entries: int
    prefixes: Dict[str, int]
    forward: int
    backward: int
    parameters_grad: int
    tensors: int
    construct_nodes: int
    stacks: int
    non_finite: List[str] = field(default_factory=list)
    """``entry: position`` of every tensor record with inf/nan statistics."""
    recovered: bool = False
    tensor_files: int = 0
    bad_files: List[str] = field(default_factory=list)
    """``name: what is wrong`` for every tensor file dump.json names that is missing or cannot be read."""


def summarize_rank(rank: RankDir) -> RankSummary:
    files = rank.load()
    dump = files.dump
    prefixes: Counter = Counter()
    directions: Counter = Counter()
    tensors = 0
    non_finite: List[str] = []
    bad_files: List[str] = []
    for name, entry in dump.data.items():
        parsed = try_parse_entry(name)
        prefixes[parsed.prefix if parsed else "other"] += 1
        directions[parsed.kind if parsed and parsed.kind == "parameters_grad" else
                   (parsed.direction if parsed else "other")] += 1
        for trail, record in iter_records(entry):
            tensors += 1
            data_name = record.get("data_name")
            problem = tensor_file_problem(rank.tensor_dir, data_name) if isinstance(data_name, str) else None
            if problem:
                bad_files.append(f"{data_name}: {problem}")
            if not record_is_finite(record):
                non_finite.append(f"{name}: {'.'.join(str(t) for t in trail)}")
    tensor_dir = rank.tensor_dir
    tensor_files = len(list_dir(tensor_dir)) if path_kind(tensor_dir) == "directory" else 0
    return RankSummary(step=rank.step, step_dir=rank.step_label, rank=rank.label, path=str(rank.path), framework=dump.framework,
                       task=dump.task, level=dump.level, entries=len(dump.data), prefixes=dict(sorted(prefixes.items())),
                       forward=directions["forward"], backward=directions["backward"],
                       parameters_grad=directions["parameters_grad"], tensors=tensors,
                       construct_nodes=len(files.construct), stacks=len(files.stacks), non_finite=non_finite,
                       recovered=dump.recovered, tensor_files=tensor_files, bad_files=bad_files)


_ZIP_END = b"PK\x05\x06"
_NPY_MAGIC = b"\x93NUMPY"


def tensor_file_problem(tensor_dir: Path, name: str) -> Optional[str]:
    """What is wrong with the tensor file ``name`` of a rank directory, or None: missing, not a regular
    file, empty, unreadable, or cut short (a ``.pt`` without its zip end record, a ``.npy`` without its
    magic). Reads at most 64 KiB of it."""
    if Path(name).name != name:
        return "not a file name"
    path = tensor_dir / name
    try:
        kind = path_kind(path)
    except SchemaError:
        return "cannot be looked at"
    if kind != "file":
        return kind if kind == "missing" else f"a {kind}, not a file"
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            if size == 0:
                return "empty"
            if name.endswith(".npy"):
                return None if handle.read(len(_NPY_MAGIC)) == _NPY_MAGIC else "not a .npy file"
            handle.seek(max(size - (1 << 16), 0))
            return None if _ZIP_END in handle.read() else "cut short (no zip end record)"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
