"""The journal of one step and rank, keeping what it wrote in memory for the end-of-step files.

``RankWriter.finalize`` reads the journal back, parses and validates every line and encodes dump.json
again: on a small model that background work costs nearly half as much CPU as the dumped step itself,
and competes with it for the GIL. The engine wrote every line itself, so :class:`StepWriter` keeps each
entry's JSON text (the same encoder, the same bytes) and writes dump.json by joining them; stack.json
and construct.json come from the dicts it kept. The journal lines and the files are those
``RankWriter`` writes; a journal left by a killed process is recovered by ``msprobe.schema`` as before.
"""
from __future__ import annotations

import json
import os
from json.encoder import c_make_encoder, encode_basestring
from typing import Any, Dict, List, Optional

from msprobe.schema import RankWriter
from msprobe.schema.construct import group_stacks
from msprobe.schema.journal import CONSTRUCT_NAME, DUMP_NAME, STACK_NAME
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

    Every entry line reaches the kernel as it is recorded (one ``os.write`` of a whole line on the
    append-mode journal: a killed process keeps it); stack and construct lines are gathered and written
    together by ``flush()``. Whole lines per write keep lines from two threads from interleaving."""

    def __init__(self, rank_dir: str, header: Dict[str, Any]) -> None:
        self._batch: List[str] = []
        super().__init__(rank_dir, header, autoflush=False)
        self._fd = self._handle.fileno()  # every line goes through the descriptor, none through the text handle
        self.flush()  # the header line
        self._header = dict(header)
        self._values: Dict[str, Any] = {}
        self._texts: Dict[str, Optional[str]] = {}
        self._stacks: Dict[str, List[str]] = {}
        self._construct: Dict[str, Any] = {}

    def _write(self, item: list) -> None:
        line = _dumps(item) + "\n"
        with self._lock:
            self._batch.append(line)

    def flush(self) -> None:
        with self._lock:
            lines, self._batch = self._batch, []
            if lines:
                _write_all(self._fd, "".join(lines).encode("utf-8"))

    def entry(self, name: str, value: Dict[str, Any]) -> None:
        text = _dumps(value)
        line = '["d", ' + encode_basestring(name) + ", " + text + "]\n"  # json.dumps(["d", name, value]), same bytes
        _write_all(self._fd, line.encode("utf-8"))
        earlier = self._values.get(name)
        if earlier is None:
            self._values[name] = value
            self._texts[name] = text
        else:  # a later call with the same name adds or replaces top-level keys (as read_journal merges)
            merged = dict(earlier)
            merged.update(value)
            self._values[name] = merged
            self._texts[name] = None

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
            parts = [encode_basestring(name) + ": " + (text if text is not None else _dumps(self._values[name]))
                     for name, text in self._texts.items()]
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
