"""The one writer of a rank directory: its journal as entries are recorded, then dump.json, stack.json and
construct.json from what it holds.

Each entry is encoded as JSON once, as it is recorded: that text is the entry's journal line (one
``os.write`` of a whole line: a killed process keeps it) and, when the step ends, its part of dump.json. Stack
and construct records are written at once (``autoflush``) or gathered and written together by ``flush()``.
Whole records per write keep records of two threads from interleaving. The journal's records are described in
``msprobe.schema.journal``, which also recovers the files from a journal a killed process left.
"""
from __future__ import annotations

import functools
import json
import os
import threading
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from .construct import stack_groups
from .dump import validate_dump
from .errors import PathLike
from .journal import CONSTRUCT_NAME, DUMP_NAME, JOURNAL_NAME, STACK_NAME, RankFiles, json_record
from .index import write_beside
from .jsonio import compact_dumps, write_bytes_atomic


class StacksJson:
    """The JSON of each stack met, encoded once per writer family rather than in the journal and again in
    stack.json at every step; at most ``limit``. Keyed by the list's identity (``msprobe.dump.stack`` hands out
    one list per distinct stack): each list is kept while known, so its id is not reused meanwhile."""

    def __init__(self, limit: int = 1 << 14) -> None:
        self._limit = limit
        self._known: Dict[int, Tuple[List[str], bytes]] = {}

    def __call__(self, frames: List[str]) -> bytes:
        known = self._known.get(id(frames))
        if known is not None and known[0] is frames:
            return known[1]
        text = compact_dumps(frames).encode("utf-8")
        if len(self._known) >= self._limit:
            self._known.clear()
        self._known[id(frames)] = (frames, text)
        return text


class RankWriter:
    """Appends the records of one rank directory to its journal and writes its three files; thread-safe."""

    def __init__(self, rank_dir: PathLike, header: Dict[str, Any], autoflush: bool = True, make_dir: bool = True,
                 stacks_json: Optional[StacksJson] = None, index: bool = False,
                 index_later: Optional[Callable[[Callable[[], Any], str], None]] = None) -> None:
        """``make_dir=False``: ``rank_dir`` is known to exist (no system call to make sure). ``stacks_json``: the
        JSON of the stacks met so far, shared by the writers of one run's steps (a stack is encoded once).
        ``index``: also write the statistics index beside dump.json where pyarrow is installed (``index.py``);
        ``index_later(work, what)``: runs that write elsewhere (a writer thread: parsing dump.json again and
        encoding Parquet is not the training's work); None: before ``finish`` returns."""
        self.rank_dir = Path(rank_dir)
        if make_dir:
            self.rank_dir.mkdir(parents=True, exist_ok=True)
        self.journal_path = self.rank_dir / JOURNAL_NAME
        self._lock = threading.Lock()
        self._autoflush = autoflush
        self._index = index
        self._index_later = index_later
        self._stacks_json = stacks_json if stacks_json is not None else StacksJson()
        self.broken = False
        """A journal write failed (a full disk): nothing more is appended, as a record after a cut one would
        make the journal unreadable; ``finish`` writes the step's files from memory."""
        self.closed = False
        self._batch: List[bytes] = []
        # entry -> its journal line (bytes: never scanned by the garbage collector), or its parts' lines with
        # their keys (an entry recorded in parts: a module's parameter gradients)
        self._entries: Dict[str, Union[bytes, List[Tuple[bytes, Any]]]] = {}
        self._stacks: Dict[str, List[str]] = {}
        self._construct: Dict[str, Any] = {}
        self._header = dict(header)
        self._fd = os.open(self.journal_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self._append(json_record(["h", header]))

    def entry(self, name: str, value: Dict[str, Any]) -> None:
        """Record an entry; a later call with the same name adds or replaces its top-level keys."""
        line = json_record(["d", name, value])
        self._append(line)
        earlier = self._entries.get(name)
        if earlier is None:
            self._entries[name] = line
        elif isinstance(earlier, list):  # a value completed in parts: merged by finish()
            earlier.append((line, tuple(value)))
        else:  # (the first part's keys read back once, here: most entries come whole)
            self._entries[name] = [(earlier, tuple(json.loads(_value_of(earlier, name)))), (line, tuple(value))]

    def construct(self, node: str, parent: Any) -> None:
        self._record(json_record(["c", node, parent]))
        self._construct[node] = parent

    def constructs(self, nodes: Dict[str, Any]) -> None:
        """Several construct nodes (node -> parent) in one record."""
        self._record(json_record(["c", nodes]))
        self._construct.update(nodes)

    def stack(self, entry: str, frames: List[str]) -> None:
        self._stack_record(entry, [entry], frames)

    def shared_stack(self, entries: List[str], frames: List[str]) -> None:
        """One stack record for several entries (the same call site, called again and again)."""
        self._stack_record(entries, entries, frames)

    def _stack_record(self, key: Union[str, List[str]], entries: List[str], frames: List[str]) -> None:
        self._record(b'["s", ' + compact_dumps(key).encode("utf-8") + b", " + self._stacks_json(frames) + b"]\n")
        for entry in entries:
            self._stacks[entry] = frames

    def _record(self, record: bytes) -> None:
        with self._lock:
            self._batch.append(record)
        if self._autoflush:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            records, self._batch = self._batch, []
            if records:
                self._append(b"".join(records))

    def _append(self, data: bytes) -> None:
        if self.broken:
            raise OSError(f"{self.journal_path}: not appended to after an earlier write error")
        try:
            _write_all(self._fd, data)
        except BaseException:
            self.broken = True
            raise

    def finish(self, durable: bool = False) -> None:
        """Write dump.json / stack.json / construct.json (compact JSON) from what was recorded and remove the
        journal. ``durable``: fsync each file (the dump's step files are whole after a kill, not a power loss)."""
        self._finish(None, durable)

    def finalize(self, remove_journal: bool, indent: Optional[int] = 1) -> RankFiles:
        """The three files as :meth:`finish` writes them, indented by ``indent`` (None: compact), made durable;
        the journal removed when ``remove_journal``. Returns what they hold."""
        blobs = self._finish(indent, True, remove_journal)
        dump, stacks, construct = (json.loads(blob) for blob in blobs)
        return RankFiles(dump=validate_dump(dump, self.rank_dir / DUMP_NAME), construct=construct,
                         stacks={entry: frames for entries, frames in stacks.values() for entry in entries})

    def _finish(self, indent: Optional[int], durable: bool, remove_journal: bool = True) -> List[bytes]:
        if self.broken:
            self._batch = []  # (the stacks and construct it held are kept in memory too)
        else:
            self.flush()
        with self._lock:
            blobs = [self._dump_json(), self._grouped_stacks(), compact_dumps(self._construct).encode("utf-8")]
            for name, blob in zip((DUMP_NAME, STACK_NAME, CONSTRUCT_NAME), blobs):
                if indent is not None:
                    blob = json.dumps(json.loads(blob), indent=indent, ensure_ascii=False).encode("utf-8")
                write_bytes_atomic(self.rank_dir / name, blob, durable=durable)
                if self._index and name == DUMP_NAME:  # keyed by the bytes just written: a later edit voids it
                    work = functools.partial(write_beside, self.rank_dir, blob)
                    if self._index_later is None:
                        work()
                    else:
                        self._index_later(work, f"indexing {self.rank_dir}")
            if remove_journal:
                self._close()
                os.remove(self.journal_path)
            return blobs

    def _dump_json(self) -> bytes:
        header = json_record(self._header)[:-1]
        data = b'"data": {' + self._members() + b"}"
        return header[:-1] + b", " + data + b"}" if self._header else b"{" + data + b"}"

    def _grouped_stacks(self) -> bytes:
        """stack.json: ``compact_dumps(group_stacks(stacks))``, each stack's JSON from ``stacks_json``."""
        groups = (b'"%d": [%s, %s]' % (number, compact_dumps(entries).encode("utf-8"), self._stacks_json(frames))
                  for number, (entries, frames) in enumerate(stack_groups(self._stacks)))
        return b"{" + b", ".join(groups) + b"}"

    def _members(self) -> bytes:
        """``"name": value, ...`` of the entries, parts merged as ``read_journal`` merges records."""
        members = []
        for name, line in self._entries.items():
            head = encode_basestring(name).encode("utf-8")
            value = _merged(line, name) if isinstance(line, list) else _value_of(line, name, len(head))
            members.append(head + b": " + value)
        return b", ".join(members)

    def discard(self) -> None:
        """Close and remove the journal of a step that recorded nothing (one opened ahead, not used)."""
        with self._lock:
            self._close()
            try:
                os.remove(self.journal_path)
            except FileNotFoundError:  # its directory was removed meanwhile: nothing left to undo
                pass

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self._fd)


def _value_of(line: bytes, name: str, head: int = -1) -> bytes:
    """The value's JSON in an entry's journal line ``["d", <name>, <value>]\\n`` (``head``: the length of
    the name's JSON, when known): json_record writes ``["d", `` (6 bytes), the name, ``, `` (2)."""
    if head < 0:
        head = len(encode_basestring(name).encode("utf-8"))
    return line[head + 8:-2]


def _merged(parts: List[Tuple[bytes, Any]], name: str) -> bytes:
    """The value of an entry recorded in parts, as ``read_journal`` merges them (a later part's key
    replaces an earlier one's value in its place): the parts' members side by side when no key comes
    twice (each the same JSON as in the whole value), else decoded and encoded again."""
    keys = [key for _, part_keys in parts for key in part_keys]
    values = [_value_of(line, name) for line, _ in parts]
    if len(set(keys)) == len(keys) and all(type(key) is str for key in keys):
        return b"{" + b", ".join(value[1:-1] for value in values if value != b"{}") + b"}"
    merged: Dict[str, Any] = {}
    for value in values:
        merged.update(json.loads(value))
    return compact_dumps(merged).encode("utf-8")


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]
