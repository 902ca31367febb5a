"""The journal of one step and rank, keeping what it recorded in memory for the end-of-step files.

Writing an entry as JSON text costs five times its journal record (a pickle of plain values,
``msprobe.schema.journal``) on the hot path, and ``RankWriter.finalize`` would read the journal back,
parse and validate every record and encode dump.json anyway. :class:`StepWriter` writes each entry's
record as it is recorded (a killed process keeps it) and keeps the record's bytes; the JSON of dump.json
is written from those, once, by the background writer thread when the step ends. The journal records
and the files are those ``RankWriter`` writes; a journal left by a killed process is recovered by
``msprobe.schema`` as before.
"""
from __future__ import annotations

import json
import os
from json.encoder import c_make_encoder, encode_basestring
from typing import Any, Dict, List

from msprobe.schema import RankWriter
from msprobe.schema.construct import group_stacks
from msprobe.schema.journal import CONSTRUCT_NAME, DUMP_NAME, STACK_NAME, journal_record, read_record
from msprobe.schema.jsonio import write_json_atomic, write_text_atomic


def _not_serialisable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# what json.dumps(value, ensure_ascii=False) writes (same bytes), with the C encoder built once instead of
# per call (JSONEncoder.encode builds one, and a float formatter, every time: ~20% of an entry's cost)
# and without the circular-reference bookkeeping (a dict per container): entries are trees the engine
# builds itself, never circular
if c_make_encoder is not None:
    _encode = c_make_encoder(None, _not_serialisable, encode_basestring, None, ": ", ", ", False, False, True)

    def _dumps(value: Any) -> str:
        return "".join(_encode(value, 0))
else:  # a Python without the _json accelerator
    _dumps = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode


class StepWriter(RankWriter):
    """A ``RankWriter`` that remembers its entries, stacks and construct.

    Every entry record reaches the kernel as it is recorded (one ``os.write`` of a whole record on the
    append-mode journal: a killed process keeps it); stack and construct records are gathered and written
    together by ``flush()``. Whole records per write keep records from two threads from interleaving."""

    def __init__(self, rank_dir: str, header: Dict[str, Any]) -> None:
        self._batch: List[bytes] = []
        super().__init__(rank_dir, header, autoflush=False)
        self._fd = self._handle.fileno()  # every record goes through the descriptor, none through the handle
        self.flush()  # the header record
        self._header = dict(header)
        self._records: List[bytes] = []
        self._stacks: Dict[str, List[str]] = {}
        self._construct: Dict[str, Any] = {}

    def _write(self, item: list) -> None:
        record = journal_record(item)
        with self._lock:
            self._batch.append(record)

    def flush(self) -> None:
        with self._lock:
            records, self._batch = self._batch, []
            if records:
                _write_all(self._fd, b"".join(records))

    def entry(self, name: str, value: Dict[str, Any]) -> None:
        """Record an entry; a later call with the same name adds or replaces its top-level keys."""
        record = journal_record(["d", name, value])
        _write_all(self._fd, record)
        # the record's bytes, not the entry, wait for dump.json: bytes are invisible to the garbage
        # collector, while thousands of surviving dicts a step made it scan the whole process (~290k
        # objects under torch) every few dumped steps
        self._records.append(record)

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
        the journal. Runs on the background writer thread once the step's lines are all written."""
        self.flush()
        with self._lock:
            values: Dict[str, Any] = {}
            for record in self._records:
                _, name, value = read_record(record)
                values.setdefault(name, {}).update(value)  # a later record adds or replaces keys, as read_journal
            parts = [encode_basestring(name) + ": " + _dumps(value) for name, value in values.items()]
            header = _dumps(self._header)
            data = '"data": {' + ", ".join(parts) + "}"
            write_text_atomic(self.rank_dir / DUMP_NAME,
                              header[:-1] + ", " + data + "}" if self._header else "{" + data + "}")
            write_json_atomic(self.rank_dir / STACK_NAME, group_stacks(self._stacks), indent=None)
            write_json_atomic(self.rank_dir / CONSTRUCT_NAME, self._construct, indent=None)
            self._handle.close()
            os.remove(self.journal_path)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]
