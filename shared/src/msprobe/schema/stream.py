"""Selected entries of a dump.json, read in one pass over the file without holding it whole.

The file is read in chunks; each entry of ``data`` is decoded alone by the json module and checked as the
whole-file reader checks it, and the wanted ones are kept, so a file ``inspect`` rejects (truncated, a bad
record in another entry) is rejected here too, while at most one entry is held at a time. The header (task, level, framework, dump_data_dir) is what precedes
``data``; a file where any of them follows ``data`` (msprobe 26 writes ``framework`` last) or is missing
is read whole by the plain reader instead, so the header is always complete.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from .dump import validate_dump, validate_entry
from .errors import SchemaError
from .jsonio import load_json

CHUNK_CHARS = 1 << 20
MAX_ENTRY_CHARS = 64 << 20
"""An entry larger than this (64 Mi characters) is refused rather than buffered."""
MAX_HEADER_CHARS = 1 << 16
_DATA_KEY = re.compile(r'"data"\s*:\s*\{')
_NOT_SPACE = re.compile(r"[^ \t\n\r]")
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
            if not isinstance(doc, dict) or not all(key in doc for key in HEADER_KEYS):
                return None
            return validate_dump(dict(doc, data={}), path).header()  # checked as the whole-file reader checks it
        if len(reader.text) > MAX_HEADER_CHARS or not reader.more():
            if not reader.text.lstrip().startswith("{"):
                raise SchemaError(path, None, "invalid JSON: expected an object")
            return None


def _find(reader: _Chunks, names: tuple, path: Path) -> Dict[str, Any]:
    """Every entry of ``data`` decoded and checked in turn, keeping the wanted ones, then the rest of the file:
    a file the whole-file reader (``inspect``) rejects (truncated, a bad record anywhere) is rejected here too."""
    wanted, found = set(names), {}
    decoder = json.JSONDecoder()
    _expect(reader, "{", path, "data")
    if _peek(reader, path, "data") == "}":
        reader.start += 1
    else:
        while True:
            name = _decode(reader, decoder, path, "data")
            if not isinstance(name, str):
                raise SchemaError(path, "data", "invalid JSON: expected an entry name")
            _expect(reader, ":", path, f"data.{name}")
            value = _decode(reader, decoder, path, f"data.{name}")
            validate_entry(name, value, path)
            if name in wanted:
                found[name] = value  # (the last of repeated keys, as the json module keeps)
            if _expect(reader, ",}", path, "data") == "}":
                break
    while _expect(reader, ",}", path, None) == ",":  # the top level's keys after data
        key = _decode(reader, decoder, path, None)
        _expect(reader, ":", path, str(key))
        _decode(reader, decoder, path, str(key))
    if _peek(reader, path, None, at_end=True) is not None:
        raise SchemaError(path, None, "invalid JSON: extra data after the top-level object")
    return found


def _peek(reader: _Chunks, path: Path, where: Optional[str], at_end: bool = False) -> Optional[str]:
    """The next character that is not white space (not consumed); None at the end of the file when
    ``at_end``, else a SchemaError (the file stops early: truncated)."""
    while True:
        match = _NOT_SPACE.search(reader.text, reader.start)
        if match is not None:
            reader.start = match.start()
            return match.group(0)
        reader.start = len(reader.text)
        if not reader.more():
            if at_end:
                return None
            raise SchemaError(path, where, "invalid JSON: the file ends early (truncated?)")


def _expect(reader: _Chunks, chars: str, path: Path, where: Optional[str]) -> str:
    char = _peek(reader, path, where)
    if char not in chars:
        raise SchemaError(path, where, f"invalid JSON: expected {' or '.join(repr(c) for c in chars)}", char,
                          has_got=True)
    reader.start += 1
    return char


def _decode(reader: _Chunks, decoder: json.JSONDecoder, path: Path, where: Optional[str]) -> Any:
    """The JSON value at the reader's position (reading more of the file while it is cut by the buffer's end)."""
    _peek(reader, path, where)
    while True:
        try:
            value, end = decoder.raw_decode(reader.text, reader.start)
        except json.JSONDecodeError as exc:
            if len(reader.text) - reader.start > MAX_ENTRY_CHARS:
                raise SchemaError(path, where, f"larger than {MAX_ENTRY_CHARS} characters") from None
            if not reader.more():
                raise SchemaError(path, where, f"invalid JSON: {exc.msg}") from None
            continue
        except ValueError:  # an integer of more than 4300 digits
            raise SchemaError(path, where, "invalid JSON: a number with more than 4300 digits") from None
        except RecursionError:
            raise SchemaError(path, where, "invalid JSON: nested too deeply") from None
        if end == len(reader.text) and reader.more():  # a number may go on in the next chunk
            continue
        reader.start = end
        return value
