"""Selected entries of a dump.json, read in one pass over the file without holding it whole.

The file is read in chunks and searched for the wanted top-level keys of ``data``; each value found is
decoded alone by the json module. The header (task, level, framework, dump_data_dir) is what precedes
``data``; a file where any of them follows ``data`` (msprobe 26 writes ``framework`` last) or is missing
is read whole by the plain reader instead, so the header is always complete.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from .dump import validate_dump
from .errors import SchemaError
from .jsonio import load_json

CHUNK_CHARS = 1 << 20
MAX_ENTRY_CHARS = 64 << 20
"""An entry larger than this (64 Mi characters) is refused rather than buffered."""
MAX_HEADER_CHARS = 1 << 16
_DATA_KEY = re.compile(r'"data"\s*:\s*\{')
HEADER_KEYS = ("task", "level", "framework", "dump_data_dir")


def stream_entries(path: Path, names: Tuple[str, ...]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(header, {name: value}) for the given top-level keys of ``data``, reading ``path`` once in chunks."""
    try:
        handle = open(path, encoding="utf-8")
    except OSError as exc:
        raise SchemaError(path, None, f"cannot read: {exc.strerror}") from None
    with handle:
        reader = _Chunks(handle, path)
        header = _header(reader, path)
        if header is None:  # a header key after ``data``, or none: the plain reader, whole file
            dump = validate_dump(load_json(path), path)
            return dump.header(), {k: dump.data[k] for k in names if k in dump.data}
        return header, _find(reader, names, path)


class _Chunks:
    """A text buffer over a file, filled on demand; ``text[start:]`` is what is still to be searched."""

    def __init__(self, handle, path: Path) -> None:
        self.handle, self.path, self.text, self.start = handle, path, "", 0

    def more(self) -> bool:
        try:
            chunk = self.handle.read(CHUNK_CHARS)
        except UnicodeDecodeError as exc:
            raise SchemaError(self.path, None, f"not UTF-8 text ({exc.reason})") from None
        if not chunk:
            return False
        self.text = self.text[self.start:] + chunk
        self.start = 0
        return True


def _header(reader: _Chunks, path: Path) -> Optional[Dict[str, Any]]:
    while True:
        match = _DATA_KEY.search(reader.text)
        if match:
            head = reader.text[:match.start()].rstrip().rstrip(",") + "}"
            reader.start = match.end() - 1
            try:
                doc = json.loads(head)
            except json.JSONDecodeError:
                return None
            return doc if isinstance(doc, dict) and all(key in doc for key in HEADER_KEYS) else None
        if len(reader.text) > MAX_HEADER_CHARS or not reader.more():
            if not reader.text.lstrip().startswith("{"):
                raise SchemaError(path, None, "invalid JSON: expected an object")
            return None


def _find(reader: _Chunks, names: tuple, path: Path) -> Dict[str, Any]:
    pattern = re.compile('"(' + "|".join(re.escape(n) for n in names) + r')"\s*:\s*')
    keep = max(len(n) for n in names) + 16
    decoder, found = json.JSONDecoder(), {}
    while len(found) < len(names):
        match = pattern.search(reader.text, reader.start)
        if match is None or reader.text[match.start() - 1] == "\\":
            reader.start = max(reader.start, len(reader.text) - keep) if match is None else match.end()
            if match is None and not reader.more():
                break
            continue
        value, end = _decode(reader, decoder, match.end(), path, match.group(1))
        if not isinstance(value, dict):
            raise SchemaError(path, f"data.{match.group(1)}", "expected an object (an entry)", value, has_got=True)
        found.setdefault(match.group(1), value)
        reader.start = end
    return found


def _decode(reader: _Chunks, decoder: json.JSONDecoder, at: int, path: Path, name: str) -> tuple:
    offset = at - reader.start  # (more() drops text[:start], so the value stays at start + offset)
    while True:
        try:
            return decoder.raw_decode(reader.text, reader.start + offset)
        except json.JSONDecodeError as exc:
            if len(reader.text) - reader.start > MAX_ENTRY_CHARS:
                raise SchemaError(path, f"data.{name}", f"larger than {MAX_ENTRY_CHARS} characters") from None
            if not reader.more():
                raise SchemaError(path, f"data.{name}", f"invalid JSON: {exc.msg}") from None
