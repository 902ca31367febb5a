"""What ``msprobe inspect`` reports about a dump: counts per step and rank, and non-finite tensors."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .errors import PathLike
from .index import RankTable, find_index, row_is_finite, table_of_dump
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
    """``dump_tensor_data/name: what is wrong`` for every tensor file dump.json names that is missing or cannot
    be read."""


def summarize_rank(rank: RankDir, cache: Optional[PathLike] = None) -> RankSummary:
    """One rank's summary, from its statistics index when a matching one is beside dump.json or in ``cache``
    (the same summary: the index holds every tensor record and entry name), else from dump.json."""
    table = None if rank.interrupted or rank.dump_file is not None else find_index(rank.path, cache)
    if table is not None:
        construct, stacks = rank.load_metadata()
        recovered = False
    else:
        files = rank.load()
        dump = files.dump
        table = table_of_dump(dump)
        construct, stacks, recovered = files.construct, files.stacks, dump.recovered
    return _summary(rank, table, len(construct), len(stacks), recovered)


def _summary(rank: RankDir, table: RankTable, construct_nodes: int, stacks: int, recovered: bool) -> RankSummary:
    prefixes: Counter = Counter()
    directions: Counter = Counter()
    for name in table.entries:
        parsed = try_parse_entry(name)
        prefixes[parsed.prefix if parsed else "other"] += 1
        directions[parsed.kind if parsed and parsed.kind == "parameters_grad" else
                   (parsed.direction if parsed else "other")] += 1
    non_finite: List[str] = []
    bad_files: List[str] = []
    for row in table.rows:
        data_name = row["data_name"]
        problem = tensor_file_problem(rank.tensor_dir, data_name) if isinstance(data_name, str) else None
        if problem:
            bad_files.append(f"{rank.tensor_dir.name}/{data_name}: {problem}")  # relative to the rank folder
        if not row_is_finite(row):
            position = row["direction"] + ("." + row["path"] if row["path"] else "")
            non_finite.append(f"{row['entry']}: {position}")
    tensor_dir = rank.tensor_dir
    tensor_files = len(list_dir(tensor_dir)) if path_kind(tensor_dir) == "directory" else 0
    head = table.header
    return RankSummary(step=rank.step, step_dir=rank.step_label, rank=rank.label, path=str(rank.path),
                       framework=head.get("framework"), task=head.get("task"), level=head.get("level"),
                       entries=len(table.entries), prefixes=dict(sorted(prefixes.items())),
                       forward=directions["forward"], backward=directions["backward"],
                       parameters_grad=directions["parameters_grad"], tensors=table.tensor_count,
                       construct_nodes=construct_nodes, stacks=stacks, non_finite=non_finite,
                       recovered=recovered, tensor_files=tensor_files, bad_files=bad_files)
