"""Find one API's forward and backward entries in a dump, in one streaming pass, and write them out.

A dump.json of a long run holds hundreds of thousands of entries; only two are wanted:
``msprobe.schema.stream.stream_entries`` reads the file once in chunks, and each value found is checked
by ``msprobe.schema.validate_dump``. A dump of a killed run (a journal beside or instead of dump.json)
and any other layout go through ``msprobe.schema`` readers as they are.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

from msprobe.schema import SchemaError, find_rank_dirs, iter_records, validate_dump
from msprobe.schema.jsonio import load_json, write_json_atomic
from msprobe.schema.stream import stream_entries
from msprobe.schema.tree import TENSOR_DIR


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
