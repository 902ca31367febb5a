"""What ``msprobe inspect`` reports about a dump: counts per step and rank, and non-finite tensors."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .dump import iter_records, record_is_finite
from .names import try_parse_entry
from .tensor_file import tensor_file_problem  # noqa: F401 - inspect's check is every tool's
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
