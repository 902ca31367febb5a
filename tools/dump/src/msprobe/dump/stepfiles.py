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
from typing import Any, Dict, List, Optional

from msprobe.schema import RankWriter
from msprobe.schema.construct import group_stacks
from msprobe.schema.journal import CONSTRUCT_NAME, DUMP_NAME, STACK_NAME
from msprobe.schema.jsonio import write_json_atomic

# what json.dumps(value, ensure_ascii=False) writes (same bytes), without building an encoder per call and
# without the circular-reference bookkeeping (a dict per container, ~40% of the time): entries are trees
# the engine builds itself, never circular
_dumps = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode


class StepWriter(RankWriter):
    """A ``RankWriter`` (flushed by the engine) that remembers its entries, stacks and construct."""

    def __init__(self, rank_dir: str, header: Dict[str, Any]) -> None:
        super().__init__(rank_dir, header, autoflush=False)
        self._header = dict(header)
        self._values: Dict[str, Any] = {}
        self._texts: Dict[str, Optional[str]] = {}
        self._stacks: Dict[str, List[str]] = {}
        self._construct: Dict[str, Any] = {}

    def entry(self, name: str, value: Dict[str, Any]) -> None:
        text = _dumps(value)
        line = '["d", ' + _dumps(name) + ", " + text + "]\n"  # json.dumps(["d", name, value]), same bytes
        with self._lock:
            self._handle.write(line)
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

    def finish(self) -> None:
        """Write dump.json / stack.json / construct.json (as ``finalize(True, indent=None)``) and remove
        the journal. Runs on the background writer thread once the step's lines are all written."""
        with self._lock:
            self._handle.flush()
            parts = [_dumps(name) + ": " + (text if text is not None else _dumps(self._values[name]))
                     for name, text in self._texts.items()]
            header = _dumps(self._header)
            data = '"data": {' + ", ".join(parts) + "}"
            _write_text_atomic(os.path.join(str(self.rank_dir), DUMP_NAME),
                               header[:-1] + ", " + data + "}" if self._header else "{" + data + "}")
            write_json_atomic(self.rank_dir / STACK_NAME, group_stacks(self._stacks), indent=None)
            write_json_atomic(self.rank_dir / CONSTRUCT_NAME, self._construct, indent=None)
            self._handle.close()
            os.remove(self.journal_path)


def _write_text_atomic(path: str, text: str) -> None:
    """``write_json_atomic`` for text already encoded: temp file, fsync, rename."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
