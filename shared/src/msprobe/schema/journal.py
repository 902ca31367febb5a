"""Crash-safe writing of one rank directory, and recovery of what a killed run wrote.

Entries are appended to ``dump.journal`` as they are recorded; a record reaches the kernel with
every ``flush()``, so a SIGKILL loses nothing already flushed. Records: ``["h", header]``,
``["d", entry, value]`` (a later record for the same entry adds or replaces top-level keys),
``["c", node, parent]``, ``["s", entry, frames]`` and ``["s", [entries], frames]`` (one stack shared
by several entries, written once). ``finalize()`` turns the journal into ``dump.json``, ``stack.json``
and ``construct.json`` (written atomically) and, at the end of a step, removes it. Readers that find a
journal read it instead of dump.json: it holds everything dump.json holds and more.

The journal is ``JOURNAL_MAGIC`` followed by one pickle (protocol 4) per record (encoding a record
this way costs a fifth of its JSON text with the json module), or one JSON line per record (what the
dump engine writes: its own encoder makes the JSON of an entry once, for the journal and dump.json;
it writes through a memory mapping of a file reserved ahead, so a journal it leaves when killed ends
in zero bytes, which the reader drops). In a JSON line, a finite float may be spelled ``#`` and the 16
hex digits of its IEEE 754 bits (``#3ff0000000000000`` is 1.0): exact, and cheap enough to write in a
hook; :func:`decimal_floats` spells them as the json module does.
Records hold plain values only (dicts, lists, strings, numbers, booleans, None); the reader refuses
any pickle that names a class or a function, so reading a journal never runs code.
"""
from __future__ import annotations

import io
import json
import math
import os
import pickle
import re
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .construct import group_stacks
from .dump import DumpFile, validate_dump
from .errors import PathLike, SchemaError
from .jsonio import compact_dumps, path_kind, read_file, write_json_atomic

JOURNAL_NAME = "dump.journal"
"""A step's journal. The dump opens the next step's on a background thread before that step records
anything; one that holds no record (:func:`journal_recorded`: its step never came) is passed over."""
JOURNAL_MAGIC = b"msprobe journal 2\n"
DUMP_NAME, STACK_NAME, CONSTRUCT_NAME = "dump.json", "stack.json", "construct.json"


@dataclass
class RankFiles:
    """Everything one rank directory holds, as read back from a journal or from the three JSON files."""

    dump: DumpFile
    construct: Dict[str, Any]
    stacks: Dict[str, List[str]]


class RankWriter:
    """Appends entries of one rank directory to its journal; thread-safe."""

    pickled = True
    """Records as pickles after ``JOURNAL_MAGIC``; False: as JSON lines (:func:`json_record`), what a
    writer that encodes its entries as JSON anyway (the dump engine's) uses."""

    def __init__(self, rank_dir: PathLike, header: Dict[str, Any], autoflush: bool = True,
                 make_dir: bool = True) -> None:
        """``make_dir=False``: ``rank_dir`` is known to exist (no system calls to make sure)."""
        self.rank_dir = Path(rank_dir)
        if make_dir:
            self.rank_dir.mkdir(parents=True, exist_ok=True)
        self.journal_path = self.rank_dir / JOURNAL_NAME
        self._lock = threading.Lock()
        self._autoflush = autoflush
        # (a buffer size given: open() then asks no terminal question, a system call less)
        self._handle = open(self.journal_path, "ab", buffering=io.DEFAULT_BUFFER_SIZE)
        if self._handle.tell() == 0 and self.pickled:
            self._handle.write(JOURNAL_MAGIC)
            self._handle.flush()  # before any record, however a subclass writes its records
        self._write(["h", header])

    def entry(self, name: str, value: Dict[str, Any]) -> None:
        """Record an entry; a later call with the same name adds or replaces its top-level keys."""
        self._write(["d", name, value])

    def construct(self, node: str, parent: Any) -> None:
        self._write(["c", node, parent])

    def stack(self, entry: str, frames: List[str]) -> None:
        self._write(["s", entry, frames])

    def shared_stack(self, entries: List[str], frames: List[str]) -> None:
        """One stack line for several entries (the same call site, called again and again)."""
        self._write(["s", entries, frames])

    def _write(self, item: list) -> None:
        record = journal_record(item) if self.pickled else json_record(item)
        with self._lock:
            self._handle.write(record)
            if self._autoflush:
                self._handle.flush()

    def flush(self) -> None:
        with self._lock:
            self._handle.flush()

    def finalize(self, remove_journal: bool, indent: Optional[int] = 1) -> RankFiles:
        """Write dump.json / stack.json / construct.json from the journal; optionally remove the journal.

        ``indent=None`` writes compact JSON with the C encoder (what the dump engine uses: much faster).
        """
        with self._lock:
            self._handle.flush()
            files = read_journal(self.journal_path)
            write_json_atomic(self.rank_dir / DUMP_NAME, files.dump.to_json(), indent=indent)
            write_json_atomic(self.rank_dir / STACK_NAME, group_stacks(files.stacks), indent=indent)
            write_json_atomic(self.rank_dir / CONSTRUCT_NAME, files.construct, indent=indent)
            if remove_journal:
                self._handle.close()
                os.remove(self.journal_path)
            return files

    @property
    def closed(self) -> bool:
        return self._handle.closed


def journal_record(item: list) -> bytes:
    """One journal record: ``item`` (plain values only) pickled with protocol 4."""
    return pickle.dumps(item, protocol=4)


def json_record(item: list) -> bytes:
    """One journal record as a JSON line (the format's other spelling; no magic line before it)."""
    return (compact_dumps(item) + "\n").encode("utf-8")


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a journal record names {module}.{name}; records hold plain values only")


def _pickled_records(raw: bytes, path: Path) -> Iterator[Tuple[str, Any]]:
    stream = io.BytesIO(raw)
    stream.seek(len(JOURNAL_MAGIC))
    number = 0
    while stream.tell() < len(raw):
        number += 1
        start = stream.tell()
        try:
            item = _PlainUnpickler(stream).load()  # a new unpickler per record: each record has its own memo
        except EOFError:
            return  # the write the kill interrupted
        except Exception as exc:
            if "truncated" in str(exc):
                return
            raise SchemaError(path, f"record {number}", f"expected a journal record ({exc})") from None
        if _nodes_beyond(item, 4 * (stream.tell() - start) + 64):
            raise SchemaError(path, f"record {number}", "expected a journal record, got one whose shared "
                              "references expand it far beyond its size")
        yield f"record {number}", item


def _nodes_beyond(item: Any, limit: int) -> bool:
    """Whether walking ``item`` visits more than ``limit`` values. A pickle can refer to one list many
    times (a few bytes each), so a small record could otherwise stand for an exponentially large tree."""
    pending, seen = [item], 0
    while pending:
        value = pending.pop()
        seen += 1
        if seen > limit:
            return True
        if isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
    return False


_STRING_OR_HEX_FLOAT = re.compile(rb'"(?:[^"\\]|\\.)*"|#([0-9a-f]{16})')


def _decimal(match: "re.Match[bytes]") -> bytes:
    bits = match.group(1)
    if bits is None:  # a string: its text stays as it is
        return match.group(0)
    value = struct.unpack(">d", bytes.fromhex(bits.decode("ascii")))[0]
    return json.dumps(value).encode("ascii") if math.isfinite(value) else match.group(0)  # never written


def decimal_floats(text: bytes) -> bytes:
    """JSON journal text with its hex floats (``#`` and 16 hex digits, outside strings) spelled as
    ``json.dumps`` spells them; text without them as it is."""
    return _STRING_OR_HEX_FLOAT.sub(_decimal, text) if b"#" in text else text


def _json_lines(raw: bytes, path: Path) -> Iterator[Tuple[str, Any]]:
    # a journal written through a memory mapping and left by a killed process ends in the zeros reserved
    # after its last record
    lines = raw.rstrip(b"\0").split(b"\n")
    last = len(lines) - 1
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            item = json.loads(decimal_floats(line))
        except (ValueError, RecursionError):
            if number == last:
                return  # the write the kill interrupted
            raise SchemaError(path, f"line {number + 1}", "expected a JSON journal record") from None
        yield f"line {number + 1}", item


def read_journal(path: PathLike) -> RankFiles:
    """Rebuild a rank directory's contents from its journal; a last record cut by a kill is dropped."""
    path = Path(path)
    raw = read_file(path)
    records = _pickled_records(raw, path) if raw.startswith(JOURNAL_MAGIC) else _json_lines(raw, path)
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
            if head.startswith(JOURNAL_MAGIC) or end < 0:  # pickled (never opened ahead), or not a journal
                return bool(head)  # of JSON lines: read_journal says what it is
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
