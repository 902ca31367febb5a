"""The journal of one step and rank, keeping what it recorded in memory for the end-of-step files.

Each entry is encoded as JSON once, as it is recorded (``_native.journal_entry``, ~4x the json module's
speed; the json module where the helpers are not built): that text is the entry's journal line (a
killed process keeps it) and, when the step ends, its part of dump.json, which the background thread
joins. The compiled encoder writes the line's floats in hex (their shortest decimal digits cost a hook
100-500 ns a float, ~0.17 ms of an L0 step on the bench model), and the background thread spells them
in decimal while it joins (``_native.decimal_floats``, without the GIL). (Encoding a pickle on the hot
path and the JSON later cost more in all: the JSON was still made, from records read back first, and on
a 2-core machine that thread competes with the next step.)
The journal and the files are those ``RankWriter`` with ``pickled = False`` writes; a journal left by a
killed process is recovered by ``msprobe.schema`` as before.
"""
from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from msprobe.schema import RankWriter
from msprobe.schema.construct import group_stacks
from msprobe.schema.journal import CONSTRUCT_NAME, DUMP_NAME, STACK_NAME, decimal_floats, json_record
from msprobe.schema.jsonio import compact_dumps, temporary_path, write_bytes_atomic

from . import native


def json_line_encoder() -> Callable[[Any], bytes]:
    """``value -> (json.dumps(value, ensure_ascii=False) + "\n").encode()``: the compiled encoder when
    built (it raises TypeError for what it does not know, non-str keys for one: see :func:`json_line`)."""
    helpers = native.helpers()
    return json_record if helpers is None else helpers.json_line


def json_line(encoder: Callable[[Any], bytes], value: Any) -> bytes:
    try:
        return encoder(value)
    except TypeError:  # the compiled encoder's refusal: the json module converts (or refuses) instead
        return json_record(value)


class StepWriter(RankWriter):
    """A ``RankWriter`` of JSON lines that remembers its entries' JSON, stacks and construct.

    Every entry record reaches the kernel as it is recorded: copied into the journal's shared mapping
    (``_native.MappedJournal``, no system call) where the helpers are built, else one ``os.write`` of a
    whole line on the append-mode journal; a killed process keeps it either way. Stack and construct
    records are gathered and written together by ``flush()``. Whole records per write keep records from
    two threads from interleaving. ``capacity``: the bytes reserved for the journal ahead (the previous
    step's size: it grows, by doubling, when that is not enough); ``expected``: those of them the step is
    expected to write, whose pages are faulted in now (None: all), off the hook thread when opened ahead;
    ``make_dir=False``: ``rank_dir`` exists (made by ``OpenedAhead``)."""

    pickled = False

    def __init__(self, rank_dir: str, header: Dict[str, Any], capacity: int = 1 << 18,
                 expected: Optional[int] = None, make_dir: bool = True) -> None:
        self._batch: List[bytes] = []
        self._line = json_line_encoder()
        helpers = native.helpers()
        self._append = helpers.journal_entry if helpers is not None else None
        super().__init__(rank_dir, header, autoflush=False, make_dir=make_dir)
        self._fd = self._handle.fileno()  # records go through the mapping or the descriptor, none through the handle
        self._mapped = _mapped_journal(self.journal_path, capacity, capacity if expected is None else expected)
        self._target: Union[int, Any] = self._fd if self._mapped is None else self._mapped
        self.flush()  # the header record
        self._header = dict(header)
        # entry -> its journal line, or lines (bytes: never scanned by the garbage collector)
        self._entries: Dict[str, Union[bytes, List[bytes]]] = {}
        self._stacks: Dict[str, List[str]] = {}
        self._construct: Dict[str, Any] = {}

    def _write(self, item: list) -> None:
        record = json_line(self._line, item)
        with self._lock:
            self._batch.append(record)

    def flush(self) -> None:
        with self._lock:
            records, self._batch = self._batch, []
            if records:
                self._write_records(b"".join(records))

    def _write_records(self, data: bytes) -> None:
        if self._mapped is not None:
            self._mapped.append(data)
        else:
            _write_all(self._fd, data)

    def appender(self) -> Optional[Tuple[Any, Dict[str, Any]]]:
        """(journal, lines): ``_native.journal_entry``'s first two arguments (the mapped journal, or the
        descriptor), with which it does what ``entry`` does; None without the helpers."""
        return (self._target, self._entries) if self._append is not None else None

    def size(self) -> int:
        """The journal's bytes so far (where it is mapped; 0 where it is not)."""
        return self._mapped.used if self._mapped is not None else 0

    def entry(self, name: str, value: Dict[str, Any]) -> None:
        """Record an entry; a later call with the same name adds or replaces its top-level keys."""
        if self._append is not None:
            try:
                self._append(self._target, self._entries, name, value)  # _native.journal_entry: all of the below
                return
            except TypeError:  # refused before anything was written: the json module writes it instead
                pass
        line = json_record(["d", name, value])
        self._write_records(line)
        earlier = self._entries.get(name)
        if earlier is None:
            self._entries[name] = line
        elif isinstance(earlier, list):  # a value completed in parts (a module's parameter gradients):
            earlier.append(line)  # merged by finish(), off the hot path
        else:
            self._entries[name] = [earlier, line]

    def construct(self, node: str, parent: Any) -> None:
        super().construct(node, parent)
        self._construct[node] = parent

    def stack(self, entry: str, frames: List[str]) -> None:
        super().stack(entry, frames)
        self._stacks[entry] = frames

    def shared_stack(self, entries: List[str], frames: List[str]) -> None:
        super().shared_stack(entries, frames)
        for entry in entries:
            self._stacks[entry] = frames

    def finish(self) -> None:
        """Write dump.json / stack.json / construct.json (as ``finalize(True, indent=None)``) and remove
        the journal. Runs on the background writer thread once the step's lines are all written: its
        file system calls go in one stretch without the GIL where the helpers are built (``_files.c``)."""
        self.flush()
        with self._lock:
            header = json_line(self._line, self._header)[:-1]
            data = b'"data": {' + self._decimal_members(self._members()) + b"}"
            dump = header[:-1] + b", " + data + b"}" if self._header else b"{" + data + b"}"
            files = [(self.rank_dir / DUMP_NAME, dump),
                     (self.rank_dir / STACK_NAME, compact_dumps(group_stacks(self._stacks)).encode("utf-8")),
                     (self.rank_dir / CONSTRUCT_NAME, compact_dumps(self._construct).encode("utf-8"))]
            self._close_journal()
            helpers = native.helpers()
            if helpers is not None and hasattr(helpers, "write_files"):
                jobs = [(os.fspath(path), os.fspath(temporary_path(path)), blob) for path, blob in files]
                helpers.write_files(jobs, os.fspath(self.journal_path))
                return
            for path, blob in files:
                write_bytes_atomic(path, blob)
            os.remove(self.journal_path)

    @staticmethod
    def _decimal_members(members: bytes) -> bytes:
        helpers = native.helpers()
        return decimal_floats(members) if helpers is None else helpers.decimal_floats(members)

    def _members(self) -> bytes:
        """``"name": value, ...`` of the step's entries, parts merged (``_native.dump_members`` where built)."""
        helpers = native.helpers()
        if helpers is not None and hasattr(helpers, "dump_members"):
            try:
                return helpers.dump_members(self._entries)
            except ValueError:  # a line json_record wrote (a value the compiled encoder refused): as below
                pass
        parts = []
        for name, line in self._entries.items():
            if isinstance(line, list):  # merged as read_journal merges records
                merged: Dict[str, Any] = {}
                for part in line:
                    merged.update(json.loads(decimal_floats(part))[2])
                line = json_line(self._line, ["d", name, merged])
            head = compact_dumps(name).encode("utf-8")  # the line is ["d", <name>, <value>]\n
            parts.append(head + b": " + line[len(head) + 8:-2])
        return b", ".join(parts)

    def discard(self) -> None:
        """Close and remove the journal of a step that recorded nothing (one opened ahead, not used)."""
        with self._lock:
            self._close_journal()
            try:
                os.remove(self.journal_path)
            except FileNotFoundError:  # its directory was removed meanwhile: nothing left to undo
                pass

    def _close_journal(self) -> None:
        if self._mapped is not None:
            self._mapped.close()
        self._handle.close()


def _mapped_journal(path: Any, capacity: int, populate: int) -> Optional[Any]:
    """The journal's shared mapping, or None where it cannot be made (no helpers, no mmap, a file system
    that refuses it): the descriptor is written to instead."""
    helpers = native.helpers()
    if helpers is None or not hasattr(helpers, "MappedJournal"):
        return None
    try:
        return helpers.MappedJournal(os.fspath(path), capacity, populate)
    except OSError:
        return None


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]
