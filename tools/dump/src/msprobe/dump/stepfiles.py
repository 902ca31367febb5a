"""The journal of one step and rank, keeping what it recorded in memory for the end-of-step files.

Each entry is encoded as JSON once, as it is recorded: that text is the entry's journal line (one
``os.write`` of a whole line: a killed process keeps it) and, when the step ends, its part of dump.json.
The journal and the files are those ``RankWriter`` writes; a journal left by a killed process is
recovered by ``msprobe.schema``.
"""
from __future__ import annotations

import json
import os
from json.encoder import encode_basestring
from typing import Any, Dict, List, Optional, Tuple, Union

from msprobe.schema import RankWriter
from msprobe.schema.construct import stack_groups
from msprobe.schema.journal import CONSTRUCT_NAME, DUMP_NAME, STACK_NAME, json_record
from msprobe.schema.jsonio import compact_dumps, write_bytes_atomic


class StepWriter(RankWriter):
    """A ``RankWriter`` of JSON lines that remembers its entries' JSON, stacks and construct.

    Every entry record reaches the kernel as it is recorded; stack and construct records are gathered and
    written together by ``flush()``. Whole records per write keep records from two threads from
    interleaving. ``make_dir=False``: ``rank_dir`` exists (made by ``OpenedAhead``)."""

    def __init__(self, rank_dir: str, header: Dict[str, Any], make_dir: bool = True,
                 stacks_json: Optional["StacksJson"] = None) -> None:
        """``stacks_json``: the JSON of the stacks met so far (kept across steps: a stack is encoded once)."""
        self._batch: List[bytes] = []
        self._stacks_json = stacks_json if stacks_json is not None else StacksJson()
        self.broken = False
        """A journal write failed (a full disk): nothing more is appended, as a record after a cut one
        would make the journal unreadable; ``finish`` writes the step's files from memory."""
        super().__init__(rank_dir, header, autoflush=False, make_dir=make_dir)
        self._fd = self._handle.fileno()  # records go through the descriptor, none through the handle
        self.flush()  # the header record
        self._header = dict(header)
        # entry -> its journal line (bytes: never scanned by the garbage collector), or its parts' lines with
        # their keys (an entry recorded in parts: a module's parameter gradients)
        self._entries: Dict[str, Union[bytes, List[Tuple[bytes, Any]]]] = {}
        self._stacks: Dict[str, List[str]] = {}
        self._construct: Dict[str, Any] = {}

    def _write(self, item: list) -> None:
        self._write_line(json_record(item))

    def _write_line(self, record: bytes) -> None:
        with self._lock:
            self._batch.append(record)

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
        super().construct(node, parent)
        self._construct[node] = parent

    def constructs(self, nodes: Dict[str, Any]) -> None:
        super().constructs(nodes)
        self._construct.update(nodes)

    def stack(self, entry: str, frames: List[str]) -> None:
        self._stack_record(entry, [entry], frames)

    def shared_stack(self, entries: List[str], frames: List[str]) -> None:
        self._stack_record(entries, entries, frames)

    def _stack_record(self, key: Union[str, List[str]], entries: List[str], frames: List[str]) -> None:
        """``["s", key, frames]``, the stack's JSON taken from ``stacks_json``."""
        self._write_line(b'["s", ' + compact_dumps(key).encode("utf-8") + b", " + self._stacks_json(frames) + b"]\n")
        for entry in entries:
            self._stacks[entry] = frames

    def finish(self) -> None:
        """Write dump.json / stack.json / construct.json (as ``finalize(True, indent=None)``) and remove
        the journal."""
        if self.broken:
            self._batch = []  # (the stacks and construct it held are kept in memory too)
        else:
            self.flush()
        with self._lock:
            header = json_record(self._header)[:-1]
            data = b'"data": {' + self._members() + b"}"
            dump = header[:-1] + b", " + data + b"}" if self._header else b"{" + data + b"}"
            for name, blob in ((DUMP_NAME, dump),
                               (STACK_NAME, self._grouped_stacks()),
                               (CONSTRUCT_NAME, compact_dumps(self._construct).encode("utf-8"))):
                write_bytes_atomic(self.rank_dir / name, blob, durable=False)
            self._handle.close()
            os.remove(self.journal_path)

    def _grouped_stacks(self) -> bytes:
        """stack.json: ``compact_dumps(group_stacks(stacks))``, each stack's JSON from ``stacks_json``."""
        groups = (b'"%d": [%s, %s]' % (number, compact_dumps(entries).encode("utf-8"), self._stacks_json(frames))
                  for number, (entries, frames) in enumerate(stack_groups(self._stacks)))
        return b"{" + b", ".join(groups) + b"}"

    def _members(self) -> bytes:
        """``"name": value, ...`` of the step's entries, parts merged as ``read_journal`` merges records."""
        members = []
        for name, line in self._entries.items():
            head = encode_basestring(name).encode("utf-8")
            value = _merged(line, name) if isinstance(line, list) else _value_of(line, name, len(head))
            members.append(head + b": " + value)
        return b", ".join(members)

    def discard(self) -> None:
        """Close and remove the journal of a step that recorded nothing (one opened ahead, not used)."""
        with self._lock:
            self._handle.close()
            try:
                os.remove(self.journal_path)
            except FileNotFoundError:  # its directory was removed meanwhile: nothing left to undo
                pass


def _value_of(line: bytes, name: str, head: int = -1) -> bytes:
    """The value's JSON in an entry's journal line ``["d", <name>, <value>]\\n`` (``head``: the length of
    the name's JSON, when known)."""
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


class StacksJson:
    """The JSON of each stack met (``stack.capture`` hands out one list object per distinct stack), encoded
    once per engine rather than in the journal and again in stack.json at every step; at most ``limit``."""

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
        self._known[id(frames)] = (frames, text)  # (the list kept: its id is not reused while known)
        return text


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]
