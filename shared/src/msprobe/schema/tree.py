"""The dump directory tree: ``<dump_path>/step<N>/{rank|rank<R>|proc<pid>}/`` with its three JSON files.

``find_rank_dirs`` accepts any level of it — a dump.json, a rank directory, a step directory or
the whole tree — ours or upstream's, and says what is wrong with a tree that is not one;
``scan_dump_tree`` also lists the directories it passed over that look like part of a dump.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .construct import load_construct, load_stack
from .dump import DumpFile, load_dump
from .errors import PathLike, SchemaError
from .jsonio import path_kind
from .journal import CONSTRUCT_NAME, DUMP_NAME, JOURNAL_NAME, STACK_NAME, RankFiles, journal_recorded, read_journal

TENSOR_DIR = "dump_tensor_data"
_STEP_RE = re.compile(r"step([0-9]{1,18})")
_RANK_RE = re.compile(r"(?:rank([0-9]{0,18})|proc([0-9]{1,18}))")


def step_dir_name(step: int) -> str:
    return f"step{step}"


def rank_dir_name(rank: Optional[int]) -> str:
    """``rank<R>`` when distributed, ``rank`` otherwise (msprobe 8.x naming)."""
    return "rank" if rank is None else f"rank{rank}"


def parse_step_dir(name: str) -> Optional[int]:
    match = _STEP_RE.fullmatch(name)
    return int(match.group(1)) if match else None


def parse_rank_dir(name: str) -> Optional[dict]:
    """``{"rank": R|None, "proc": pid|None}`` for a rank directory name, else None."""
    match = _RANK_RE.fullmatch(name)
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
    step_name: Optional[str] = None
    """The step directory's name as found (``step01`` stays ``step01``); None outside a step directory."""

    @property
    def label(self) -> str:
        if self.rank is not None:
            return f"rank{self.rank}"
        return f"proc{self.proc}" if self.proc is not None else "rank"

    @property
    def step_label(self) -> Optional[str]:
        """How messages name the step: its directory's name."""
        return self.step_name or (step_dir_name(self.step) if self.step is not None else None)

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
        construct, stacks = self.load_metadata()
        return RankFiles(dump=dump, construct=construct, stacks=stacks)

    def load_metadata(self) -> Tuple[Dict[str, Any], Dict[str, List[str]]]:
        """(construct, stacks) of a finished rank directory, as :meth:`load` reads them ({} where absent)."""
        construct_file, stack_file = self.path / CONSTRUCT_NAME, self.path / STACK_NAME
        construct = load_construct(construct_file) if path_kind(construct_file) != "missing" else {}
        stacks = load_stack(stack_file) if path_kind(stack_file) != "missing" else {}
        return construct, stacks

    def load_dump(self) -> DumpFile:
        return self.load().dump


def list_dir(path: Path) -> List[Path]:
    """The entries of a directory, sorted; SchemaError naming it when it cannot be read."""
    try:
        return sorted(path.iterdir())
    except OSError as exc:
        raise SchemaError(path, None, f"cannot read the directory: {exc.strerror}") from None


def _is_dir(path: Path) -> bool:
    return path_kind(path) == "directory"


def _is_rank_content(path: Path) -> bool:
    list_dir(path)  # an unreadable rank directory is named as such, not by the file looked for in it
    return path_kind(path / DUMP_NAME) == "file" or journal_recorded(path / JOURNAL_NAME)


def _never_recorded(path: Path) -> bool:
    """A rank directory the dump made for a step that recorded nothing: empty, or a journal opened ahead
    that holds no record and an empty tensor directory."""
    for child in list_dir(path):
        if child.name == JOURNAL_NAME or (child.name == TENSOR_DIR and _is_dir(child) and not list_dir(child)):
            continue  # (a journal with records made this rank content)
        return False
    return True


def _rank_of(path: Path, step_dir: Optional[Path]) -> RankDir:
    parsed = parse_rank_dir(path.name) or {"rank": None, "proc": None}
    step = parse_step_dir(step_dir.name) if step_dir is not None else None
    return RankDir(path=path, step=step, rank=parsed["rank"], proc=parsed["proc"],
                   step_name=step_dir.name if step is not None else None)


@dataclass
class DumpTree:
    """What :func:`scan_dump_tree` found."""

    ranks: List[RankDir]
    """Every recorded rank directory, ordered by step then rank."""
    skipped: List[str]
    """One line per directory passed over whose name looks like a step or rank directory but is not one."""


def find_rank_dirs(path: PathLike) -> List[RankDir]:
    """Every rank directory under ``path``, ordered by step then rank."""
    return scan_dump_tree(path).ranks


def scan_dump_tree(path: PathLike) -> DumpTree:
    """Every rank directory under ``path`` (a dump.json, a rank, step or dump directory) and what was skipped."""
    path = Path(path)
    kind = path_kind(path)
    if kind == "missing":
        raise SchemaError(path, None, "no such file or directory")
    if kind != "directory" or path.name in (DUMP_NAME, JOURNAL_NAME):
        return DumpTree([_rank_of_file(path, kind)], [])
    if _is_rank_content(path):
        return DumpTree([_rank_of(path, path.parent)], [])
    children = list_dir(path)
    skipped: List[str] = []
    if parse_step_dir(path.name) is not None or _child_ranks(children, []):
        return DumpTree(_ranks_of_step(path, children, skipped), skipped)
    steps = []
    for child in children:
        if _is_dir(child):
            if parse_step_dir(child.name) is not None:
                steps.append(child)
            elif child.name.lower().startswith("step"):
                skipped.append(_skip_note(child, "a step directory is named step<N>"))
    if not steps:
        _check_not_special(path)
        raise SchemaError(path, None, "no dump found: expected dump.json, rank*/ or step*/ directories")
    found: List[RankDir] = []
    for step_dir in sorted(steps, key=lambda c: (parse_step_dir(c.name), c.name)):
        found.extend(_ranks_of_step(step_dir, list_dir(step_dir), skipped, skip_unrecorded=True))
    if not found:
        raise SchemaError(path, None, "no dump found: the step directories hold no recorded rank")
    return DumpTree(found, skipped)


def _rank_of_file(path: Path, kind: str) -> RankDir:
    if kind != "file" and path.name in (DUMP_NAME, JOURNAL_NAME):
        raise SchemaError(path, None, f"expected a file, found a {kind}")
    if kind != "file" or (path.suffix != ".json" and path.name != JOURNAL_NAME):
        found = "" if kind == "file" else f", found a {kind}"
        raise SchemaError(path, None, f"expected a dump.json, a rank, step or dump directory{found}")
    rank = _rank_of(path.parent, path.parent.parent)
    if path.name not in (JOURNAL_NAME, DUMP_NAME):
        rank.dump_file = path
    return rank


def _skip_note(path: Path, rule: str) -> str:
    return f"{path}: skipped, not part of the dump ({rule})"


def _child_ranks(children: List[Path], skipped: List[str]) -> List[Path]:
    ranks = []
    for child in children:
        if not _is_dir(child):
            continue
        if parse_rank_dir(child.name) is not None:
            ranks.append(child)
        elif child.name.lower().startswith(("rank", "proc")):
            skipped.append(_skip_note(child, "a rank directory is named rank, rank<R> or proc<pid>"))
    return ranks


def _ranks_of_step(step_dir: Path, children: List[Path], skipped: List[str],
                   skip_unrecorded: bool = False) -> List[RankDir]:
    """The recorded rank directories of a step; ``skip_unrecorded``: a step none of whose ranks recorded
    anything (opened ahead of a step that never came) has none, instead of being an error."""
    stray = [c.name for c in children if parse_step_dir(c.name) is not None and _is_dir(c)]
    if stray:
        raise SchemaError(step_dir / stray[0], None, "a step directory inside a step directory; "
                          "expected rank directories (rank, rank<R>, proc<pid>)")
    ranks = _child_ranks(children, skipped)
    if not ranks and not (skip_unrecorded and not children):
        raise SchemaError(step_dir, None, "expected rank directories (rank, rank<R>, proc<pid>)")
    out = []
    for rank_path in ranks:
        if not _is_rank_content(rank_path):
            _check_not_special(rank_path)
            if _never_recorded(rank_path):
                continue
            raise SchemaError(rank_path / DUMP_NAME, None, "missing")
        out.append(_rank_of(rank_path, step_dir))
    if not out and not skip_unrecorded:
        raise SchemaError(step_dir, None, "no recorded rank directory (this step recorded nothing)")
    return sorted(out, key=lambda r: (r.rank if r.rank is not None else -1, r.proc or 0))


def _check_not_special(rank_path: Path) -> None:
    """dump.json or dump.journal present as something other than a file: say what it is."""
    for name in (DUMP_NAME, JOURNAL_NAME):
        kind = path_kind(rank_path / name)
        if kind not in ("missing", "file"):
            raise SchemaError(rank_path / name, None, f"expected a file, found a {kind}")


def group_by_step(ranks: List[RankDir]) -> Dict[Optional[str], List[RankDir]]:
    """Ranks by step directory name (``step01`` and ``step1`` are two steps), in the order given."""
    out: Dict[Optional[str], List[RankDir]] = {}
    for rank in ranks:
        out.setdefault(rank.step_name, []).append(rank)
    return out
