"""Find one API's forward and backward entries in a dump, in one streaming pass, and write them out.

A dump.json of a long run holds hundreds of thousands of entries; only two are wanted. The file is read
in chunks and searched for the two keys; each value found is decoded alone by the json module and
checked by ``msprobe.schema.validate_dump``, so the file is read once and never held whole. A dump of a
killed run (a journal beside or instead of dump.json) and any other layout go through
``msprobe.schema`` readers as they are.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

from msprobe.schema import SchemaError, find_rank_dirs, iter_records, validate_dump
from msprobe.schema.jsonio import load_json, write_json_atomic
from msprobe.schema.tree import TENSOR_DIR

CHUNK_CHARS = 1 << 20
MAX_ENTRY_CHARS = 64 << 20
"""An entry larger than this (64 Mi characters) is refused rather than buffered."""
MAX_HEADER_CHARS = 1 << 16
_DATA_KEY = re.compile(r'"data"\s*:\s*\{')


@dataclass
class Extracted:
    """One API of a dump: its entries, with every ``data_name`` made an absolute path."""

    api_name: str
    framework: Optional[str]
    forward: Dict[str, Any]
    backward: Optional[Dict[str, Any]]
    source: Path

    def to_json(self) -> Dict[str, Any]:
        data = {f"{self.api_name}.forward": self.forward}
        if self.backward is not None:
            data[f"{self.api_name}.backward"] = self.backward
        return {"task": None, "level": "L1", "framework": self.framework, "dump_data_dir": None, "data": data}


def extract_api(dump_path: Path, api_name: str) -> Extracted:
    """The API's entries from a dump.json (or a rank directory); SchemaError when it holds no forward entry."""
    rank = _single_rank(Path(dump_path))
    wanted = (f"{api_name}.forward", f"{api_name}.backward")
    if rank.interrupted or rank.dump_file is not None:
        dump = rank.load_dump()
        header, found = dump.header(), {k: dump.data[k] for k in wanted if k in dump.data}
        source = Path(dump.path or rank.path / "dump.json")
    else:
        source = rank.path / "dump.json"
        header, found = stream_entries(source, wanted)
    return _finish(api_name, header, found, source, _tensor_dir(header, source))


def load_extracted(path: Path, api_name: str) -> Extracted:
    """Read what :func:`extract_api` wrote (or upstream's bare ``{entry: value}`` extract)."""
    doc = load_json(path)
    if isinstance(doc, dict) and "data" not in doc:
        doc = {"data": doc}
    dump = validate_dump(doc, path)
    found = {k: v for k, v in dump.data.items() if k.startswith(f"{api_name}.")}
    return _finish(api_name, dump.header(), found, Path(path), Path(path).parent)


def write_extracted(path: Path, extracted: Extracted) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, extracted.to_json())


def _single_rank(path: Path):
    ranks = find_rank_dirs(path)
    if len(ranks) != 1:
        raise SchemaError(path, "dump_json_path", f"expected one rank's dump.json, found {len(ranks)} rank "
                          "directories; name the dump.json of the rank to reproduce")
    return ranks[0]


def _finish(api_name: str, header: Dict[str, Any], found: Dict[str, Any], source: Path,
            tensor_dir: Path) -> Extracted:
    doc = dict(header, data=found)
    dump = validate_dump(doc, source)
    forward = dump.data.get(f"{api_name}.forward")
    if forward is None:
        raise SchemaError(source, f"data.{api_name}.forward", "missing: the dump has no such API call "
                          "(api_name is '{Prefix}.{api}.{call}', as in the dump's keys)")
    backward = dump.data.get(f"{api_name}.backward")
    for entry in (forward, backward or {}):
        _absolute_files(entry, tensor_dir, source)
    return Extracted(api_name, dump.framework, forward, backward, source)


def _tensor_dir(header: Dict[str, Any], source: Path) -> Path:
    named = header.get("dump_data_dir")
    if isinstance(named, str) and named and Path(named).is_dir():
        return Path(named)
    return source.parent / TENSOR_DIR


def _absolute_files(entry: Dict[str, Any], tensor_dir: Path, source: Path) -> None:
    for trail, record in iter_records(entry):
        name = record.get("data_name")
        if not name or Path(name).is_absolute():
            continue
        if Path(name).name != name:  # a name that climbs out of the tensor directory is no dump's
            raise SchemaError(source, "data_name", "expected a file name inside the tensor directory", name,
                              has_got=True)
        record["data_name"] = str((tensor_dir / name).resolve())


def stream_entries(path: Path, names: tuple) -> tuple:
    """(header, {name: value}) for the given top-level keys of ``data``, reading ``path`` once in chunks."""
    try:
        handle = open(path, encoding="utf-8")
    except OSError as exc:
        raise SchemaError(path, None, f"cannot read: {exc.strerror}") from None
    with handle:
        reader = _Chunks(handle, path)
        header = _header(reader, path)
        if header is None:  # a writer that puts ``data`` first: the plain reader, whole file
            dump = validate_dump(load_json(path), path)
            return dump.header(), {k: dump.data[k] for k in names if k in dump.data}
        return header, _find(reader, names, path)


class _Chunks:
    """A text buffer over a file, filled on demand; ``text[start:]`` is what is still to be searched."""

    def __init__(self, handle, path: Path) -> None:
        self.handle, self.path, self.text, self.start, self.done = handle, path, "", 0, False

    def more(self) -> bool:
        try:
            chunk = self.handle.read(CHUNK_CHARS)
        except UnicodeDecodeError as exc:
            raise SchemaError(self.path, None, f"not UTF-8 text ({exc.reason})") from None
        if not chunk:
            self.done = True
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
            return doc if isinstance(doc, dict) else None
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
