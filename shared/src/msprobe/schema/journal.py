"""The journal of one rank directory, and recovery of what a killed run wrote.

``RankWriter`` (``msprobe.schema.rank_writer``) appends entries to ``dump.journal`` as they are recorded; a
record reaches the kernel as it is written (stack and construct records with every ``flush()``), so a
SIGKILL loses nothing already written. Records: ``["h", header]``, ``["d", entry, value]`` (a later record
for the same entry adds or replaces top-level keys), ``["c", node, parent]``, ``["c", {node: parent, ...}]``
(several nodes at once), ``["s", entry, frames]`` and ``["s", [entries], frames]`` (one stack shared by
several entries, written once). At the end of a step the writer writes ``dump.json``, ``stack.json`` and
``construct.json`` (atomically) and removes the journal. Readers that find a journal read it instead of
dump.json: it holds everything dump.json holds and more.

The journal is one JSON line per record, which any JSON reader reads (the json module's spelling, with
its ``Infinity``/``NaN`` tokens); a last line cut by a kill is dropped, and so are zero bytes after the
last record (a file system may leave them after a crash).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .dump import DumpFile, validate_dump
from .errors import PathLike, SchemaError
from .jsonio import compact_dumps, path_kind, read_file

JOURNAL_NAME = "dump.journal"
"""A step's journal. The dump opens the next step's on a background thread before that step records
anything; one that holds no record (:func:`journal_recorded`: its step never came) is passed over."""
DUMP_NAME, STACK_NAME, CONSTRUCT_NAME = "dump.json", "stack.json", "construct.json"


@dataclass
class RankFiles:
    """Everything one rank directory holds, as read back from a journal or from the three JSON files."""

    dump: DumpFile
    construct: Dict[str, Any]
    stacks: Dict[str, List[str]]


def json_record(item: list) -> bytes:
    """One journal record as a JSON line."""
    return (compact_dumps(item) + "\n").encode("utf-8")


def _json_lines(raw: bytes, path: Path) -> Iterator[Tuple[str, Any]]:
    # what follows the last newline is empty, or a record a kill cut: a record is complete with its newline
    lines = raw.rstrip(b"\0").split(b"\n")[:-1]
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (ValueError, RecursionError):
            raise SchemaError(path, f"line {number + 1}", "expected a JSON journal record") from None
        yield f"line {number + 1}", item


def read_journal(path: PathLike) -> RankFiles:
    """Rebuild a rank directory's contents from its journal; a last record cut by a kill is dropped."""
    path = Path(path)
    raw = read_file(path)
    records = _json_lines(raw, path)
    header: Dict[str, Any] = {}
    data: Dict[str, Any] = {}
    construct: Dict[str, Any] = {}
    stacks: Dict[str, List[str]] = {}
    for where, item in records:
        kind = item[0] if isinstance(item, list) and item else None
        if kind == "h" and isinstance(item[1], dict):
            header = item[1] if not header else header
        elif kind == "d" and len(item) == 3 and isinstance(item[2], dict):
            data.setdefault(item[1], {}).update(item[2])
        elif kind == "c" and len(item) == 3:
            construct[item[1]] = item[2]
        elif kind == "c" and len(item) == 2 and isinstance(item[1], dict):
            construct.update(item[1])
        elif kind == "s" and len(item) == 3:
            for entry in (item[1] if isinstance(item[1], list) else [item[1]]):
                stacks[entry] = item[2]
        else:
            raise SchemaError(path, where, "expected a journal record [kind, ...]", item, has_got=True)
    doc = dict(header)
    doc["data"] = data
    dump = validate_dump(doc, path)
    dump.recovered = True
    return RankFiles(dump=dump, construct=construct, stacks=stacks)


def journal_recorded(path: PathLike) -> bool:
    """Whether the journal at ``path`` holds a record after its header. A journal opened ahead of a step
    that never came (the process ended or was killed first) holds its header and maybe the zeros reserved
    after it; its records would follow the header line at once. Anything but a readable regular file
    (a FIFO would block the open) is not a recorded journal."""
    try:
        if path_kind(path) != "file":
            return False
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)
            end = head.find(b"\n")
            if end < 0:  # not a journal: read_journal says what it is
                return bool(head)
            after = head[end + 1:end + 2] or handle.read(1)
    except (OSError, SchemaError):
        return False
    return after not in (b"", b"\0")


def has_journal(rank_dir: PathLike) -> bool:
    """Whether ``rank_dir`` holds a journal with records (an interrupted or running step)."""
    return journal_of(rank_dir) is not None


def journal_of(rank_dir: PathLike) -> Optional[Path]:
    path = Path(rank_dir) / JOURNAL_NAME
    return path if journal_recorded(path) else None
