"""The dump directory tree: ``<dump_path>/step<N>/{rank|rank<R>|proc<pid>}/`` with its three JSON files.

``find_rank_dirs`` accepts any level of it — a dump.json, a rank directory, a step directory or
the whole tree — ours or upstream's, and says what is wrong with a tree that is not one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from .construct import load_construct, load_stack
from .dump import DumpFile, load_dump
from .errors import PathLike, SchemaError
from .journal import CONSTRUCT_NAME, DUMP_NAME, JOURNAL_NAME, STACK_NAME, RankFiles, journal_recorded, read_journal

TENSOR_DIR = "dump_tensor_data"
_STEP_RE = re.compile(r"^step(\d+)$")
_RANK_RE = re.compile(r"^(?:rank(\d*)|proc(\d+))$")


def step_dir_name(step: int) -> str:
    return f"step{step}"


def rank_dir_name(rank: Optional[int]) -> str:
    """``rank<R>`` when distributed, ``rank`` otherwise (msprobe 8.x naming)."""
    return "rank" if rank is None else f"rank{rank}"


def parse_step_dir(name: str) -> Optional[int]:
    match = _STEP_RE.match(name)
    return int(match.group(1)) if match else None


def parse_rank_dir(name: str) -> Optional[dict]:
    """``{"rank": R|None, "proc": pid|None}`` for a rank directory name, else None."""
    match = _RANK_RE.match(name)
    if not match:
        return None
    rank, proc = match.group(1), match.group(2)
    return {"rank": int(rank) if rank else None, "proc": int(proc) if proc else None}


@dataclass
class RankDir:
    """One rank directory of one step."""

    path: Path
    step: Optional[int]
    rank: Optional[int]
    proc: Optional[int] = None
    dump_file: Optional[Path] = None
    """The dump file when given explicitly under another name than dump.json."""

    @property
    def label(self) -> str:
        if self.rank is not None:
            return f"rank{self.rank}"
        return f"proc{self.proc}" if self.proc is not None else "rank"

    @property
    def tensor_dir(self) -> Path:
        return self.path / TENSOR_DIR

    @property
    def interrupted(self) -> bool:
        return self.dump_file is None and journal_recorded(self.path / JOURNAL_NAME)

    def load(self) -> RankFiles:
        """dump, construct and stacks of this rank; from the journal when the run did not finish."""
        if self.interrupted:
            return read_journal(self.path / JOURNAL_NAME)
        if self.dump_file is not None:
            return RankFiles(dump=load_dump(self.dump_file), construct={}, stacks={})
        dump = load_dump(self.path / DUMP_NAME)
        construct_file, stack_file = self.path / CONSTRUCT_NAME, self.path / STACK_NAME
        construct = load_construct(construct_file) if construct_file.exists() else {}
        stacks = load_stack(stack_file) if stack_file.exists() else {}
        return RankFiles(dump=dump, construct=construct, stacks=stacks)

    def load_dump(self) -> DumpFile:
        return self.load().dump


def _is_rank_content(path: Path) -> bool:
    return (path / DUMP_NAME).is_file() or journal_recorded(path / JOURNAL_NAME)


def _never_recorded(path: Path) -> bool:
    """A rank directory the dump made for a step that recorded nothing: empty, or a journal opened ahead
    that holds no record and an empty tensor directory."""
    for child in path.iterdir():
        if child.name == JOURNAL_NAME or (child.name == TENSOR_DIR and child.is_dir() and not any(child.iterdir())):
            continue  # (a journal with records made this rank content)
        return False
    return True


def _rank_of(path: Path, step: Optional[int]) -> RankDir:
    parsed = parse_rank_dir(path.name) or {"rank": None, "proc": None}
    return RankDir(path=path, step=step, rank=parsed["rank"], proc=parsed["proc"])


def find_rank_dirs(path: PathLike) -> List[RankDir]:
    """Every rank directory under ``path``, ordered by step then rank."""
    path = Path(path)
    if not path.exists():
        raise SchemaError(path, None, "no such file or directory")
    if path.is_file():
        if path.suffix != ".json" and path.name != JOURNAL_NAME:
            raise SchemaError(path, None, "expected a dump.json, a rank, step or dump directory")
        rank = _rank_of(path.parent, parse_step_dir(path.parent.parent.name))
        if path.name not in (JOURNAL_NAME, DUMP_NAME):
            rank.dump_file = path
        return [rank]
    if _is_rank_content(path):
        return [_rank_of(path, parse_step_dir(path.parent.name))]
    if parse_step_dir(path.name) is not None or _child_ranks(path):
        return _ranks_of_step(path, parse_step_dir(path.name))
    steps = sorted((parse_step_dir(c.name), c) for c in path.iterdir() if c.is_dir() and parse_step_dir(c.name) is not None)
    if not steps:
        raise SchemaError(path, None, "no dump found: expected dump.json, rank*/ or step*/ directories")
    found: List[RankDir] = []
    for step, step_dir in steps:
        found.extend(_ranks_of_step(step_dir, step, skip_unrecorded=True))
    if not found:
        raise SchemaError(path, None, "no dump found: the step directories hold no recorded rank")
    return found


def _child_ranks(path: Path) -> List[Path]:
    return [c for c in path.iterdir() if c.is_dir() and parse_rank_dir(c.name) is not None]


def _ranks_of_step(step_dir: Path, step: Optional[int], skip_unrecorded: bool = False) -> List[RankDir]:
    """The recorded rank directories of a step; ``skip_unrecorded``: a step none of whose ranks recorded
    anything (opened ahead of a step that never came) has none, instead of being an error."""
    stray = [c.name for c in step_dir.iterdir() if c.is_dir() and parse_step_dir(c.name) is not None]
    if stray:
        raise SchemaError(step_dir / stray[0], None, "a step directory inside a step directory; "
                          "expected rank directories (rank, rank<R>, proc<pid>)")
    ranks = _child_ranks(step_dir)
    if not ranks and not (skip_unrecorded and not any(step_dir.iterdir())):
        raise SchemaError(step_dir, None, "expected rank directories (rank, rank<R>, proc<pid>)")
    out = []
    for rank_path in ranks:
        if not _is_rank_content(rank_path):
            if _never_recorded(rank_path):
                continue
            raise SchemaError(rank_path / DUMP_NAME, None, "missing")
        out.append(_rank_of(rank_path, step))
    if not out and not skip_unrecorded:
        raise SchemaError(step_dir, None, "no recorded rank directory (this step recorded nothing)")
    return sorted(out, key=lambda r: (r.rank if r.rank is not None else -1, r.proc or 0))


def group_by_step(ranks: List[RankDir]) -> Dict[Optional[int], List[RankDir]]:
    out: Dict[Optional[int], List[RankDir]] = {}
    for rank in ranks:
        out.setdefault(rank.step, []).append(rank)
    return out
