"""dump.json: the model, its validation, and reading (including recovery of an interrupted run).

A tensor record is a dict whose ``type`` names a tensor type; its keys, in order:
``type, dtype, shape, Max, Min, Mean, Norm, requires_grad`` then optional ``md5`` (a CRC-32; with
``summary_mode: xor``, msprobe 26.x's 64-bit XOR checksum, ``0x`` and 16 hex digits, and no statistics; for a
0-d tensor msprobe 26.2.0 writes the tensor's value itself there, a JSON number) and ``data_name``.
A statistic too large for a float (a 401-digit JSON integer) reads as +-inf, as ``1e400`` does.
A non-tensor value is ``{"type": ..., "value": ...}``; ``None`` is ``null``; lists keep their nesting.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .errors import PathLike, SchemaError, field_path
from .jsonio import load_json
from .kinds import TASKS
from .leaves import Leaf, entry_leaves, is_tensor_record

STAT_KEYS = ("Max", "Min", "Mean", "Norm")
"""The statistics of a tensor record, in the record's key order: every producer builds them with
:func:`stat_record`, every reader iterates this tuple."""
_MD5_RE = re.compile(r"^(?:[0-9a-fA-F]{8}|0x[0-9a-fA-F]{16})$")
"""CRC-32 (``summary_mode: md5``), or msprobe 26.x's 64-bit XOR checksum (``summary_mode: xor``)."""


@dataclass
class DumpFile:
    """One rank's dump.json."""

    data: Dict[str, Any]
    """Entry name → entry (``input_args``/``input_kwargs``/``output``/``parameters`` or ``input``/``output``)."""
    task: Optional[str] = None
    level: Optional[str] = None
    framework: Optional[str] = None
    """``pytorch``, ``mindspore`` or ``mindtorch``; detected from tensor types when the file lacks it."""
    dump_data_dir: Optional[str] = None
    path: Optional[str] = None
    recovered: bool = False
    """True when read back from the journal of a run that did not finish (killed, crashed)."""
    extra: Dict[str, Any] = field(default_factory=dict)

    def header(self) -> Dict[str, Any]:
        return {"task": self.task, "level": self.level, "framework": self.framework,
                "dump_data_dir": self.dump_data_dir}

    def to_json(self) -> Dict[str, Any]:
        out = self.header()
        out.update(self.extra)
        out["data"] = self.data
        return out


def iter_records(value: Any, trail: Tuple = ()) -> Iterator[Tuple[Tuple, Dict[str, Any]]]:
    """Yield (position, tensor record) for every tensor record nested in an entry value."""
    if is_tensor_record(value):
        yield trail, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from iter_records(item, trail + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from iter_records(item, trail + (index,))


def stat_value(value: Any) -> Optional[float]:
    """A statistic as a float (``"inf"``-style strings too); None when absent or not numeric."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:  # beyond the largest double: saturate, as float("1e400") does
            return math.inf if value > 0 else -math.inf
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


_MAX, _MIN, _MEAN, _NORM = STAT_KEYS  # (fails at import when a statistic is added: stat_record must take it)


def stat_record(high: Any, low: Any, mean: Any, norm: Any) -> Dict[str, Any]:
    """A record's statistics keyed by ``STAT_KEYS``. Every producer (each PyTorch and MindSpore path) builds
    them here, so a statistic added to ``STAT_KEYS`` becomes an argument each one must pass instead of a key
    some paths leave out. A dict display, not ``dict(zip(...))``: this runs once per dumped tensor, and the
    display is three times faster."""
    return {_MAX: high, _MIN: low, _MEAN: mean, _NORM: norm}


def max_min_record(high: Any, low: Any) -> Dict[str, Any]:
    """Max and Min, the other statistics null: msprobe's record of integer and bool tensors."""
    return stat_record(high, low, None, None)


def record_is_finite(record: Dict[str, Any]) -> bool:
    """False when any statistic of the record is inf or nan."""
    for key in STAT_KEYS:
        number = stat_value(record.get(key))
        if number is not None and not math.isfinite(number):
            return False
    return True


def detect_framework(doc: Dict[str, Any]) -> Optional[str]:
    """The file's ``framework``, else guessed from the first tensor type or dtype spelling."""
    framework = doc.get("framework")
    if isinstance(framework, str):
        return framework
    probe = doc.get("type")
    if isinstance(probe, str):
        return _framework_of_type(probe)
    for _, record in iter_records(doc.get("data") or {}):
        guess = _framework_of_type(record.get("type", "")) or _framework_of_dtype(record.get("dtype"))
        if guess:
            return guess
    return None


def _framework_of_type(type_name: str) -> Optional[str]:
    if type_name.startswith("torch"):
        return "pytorch"
    if type_name.startswith("mindspore"):
        return "mindspore"
    return None


def _framework_of_dtype(dtype: Any) -> Optional[str]:
    if not isinstance(dtype, str):
        return None
    return "pytorch" if dtype.startswith("torch.") else "mindspore" if dtype[:1].isupper() else None


def validate_dump(doc: Any, path: Optional[PathLike] = None) -> DumpFile:
    """Check the structure of a parsed dump.json and return it as a DumpFile."""
    if not isinstance(doc, dict):
        raise SchemaError(path, None, "expected a JSON object at the top level", type(doc).__name__, has_got=True)
    for key in ("task", "level", "framework"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise SchemaError(path, key, "expected a string", doc[key], has_got=True)
    if doc.get("task") is not None and doc["task"] not in TASKS:
        raise SchemaError(path, "task", f"expected one of {', '.join(TASKS)}", doc["task"], has_got=True)
    if "data" not in doc:
        raise SchemaError(path, "data", "missing: a dump.json holds its entries under 'data'")
    data = doc["data"]
    if not isinstance(data, dict):
        raise SchemaError(path, "data", "expected an object of entries", type(data).__name__, has_got=True)
    for name, entry in data.items():
        validate_entry(name, entry, path)
    extra = {k: v for k, v in doc.items() if k not in ("task", "level", "framework", "dump_data_dir", "data")}
    return DumpFile(data=data, task=doc.get("task"), level=doc.get("level"), framework=detect_framework(doc),
                    dump_data_dir=doc.get("dump_data_dir"), path=str(path) if path else None, extra=extra)


def validate_entry(name: str, entry: Any, path: Optional[PathLike] = None) -> None:
    """Check one entry of ``data`` as :func:`validate_dump` does (streaming readers check entry by entry)."""
    checked_leaves(name, entry, path)


def checked_leaves(name: str, entry: Any, path: Optional[PathLike] = None
                   ) -> List[Tuple[Leaf, Optional[List[Optional[float]]]]]:
    """(leaf, its statistics as floats in STAT_KEYS order, None for a leaf that is no tensor) for every leaf of
    the entry ``name`` of ``data`` (``leaves.entry_leaves``), each tensor record checked as :func:`validate_dump`
    checks it (the statistics are what the check read: the index keeps them)."""
    if not isinstance(entry, dict):
        raise SchemaError(path, field_path("data", name), "expected an object (an entry)", entry, has_got=True)
    try:
        leaves = entry_leaves(name, entry)
    except RecursionError:
        raise SchemaError(path, field_path("data", name), "nested too deeply") from None
    return [(leaf, _validate_record(leaf.value, path, ("data", name) + leaf.trail) if leaf.tensor else None)
            for leaf in leaves]


def _validate_record(record: Dict[str, Any], path: Optional[PathLike], trail: Tuple) -> List[Optional[float]]:
    """Check one tensor record; returns its statistics as floats in STAT_KEYS order (None where absent): the
    check has to read them as numbers, and the index keeps what it read (one parse of each statistic)."""
    if "dtype" in record and not isinstance(record["dtype"], str):
        _refuse(path, trail, "dtype", "expected a string", record["dtype"])
    shape = record.get("shape")
    if shape is not None and not (isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool)
                                                                  for d in shape)):
        _refuse(path, trail, "shape", "expected a list of integers", shape)
    stats: List[Optional[float]] = []
    for key in STAT_KEYS:
        value = record.get(key)
        if type(value) is float or value is None:  # nearly every statistic: no conversion to make
            stats.append(value)
            continue
        number = stat_value(value)
        if number is None:
            _refuse(path, trail, key, "expected a number or null", value)
        stats.append(number)
    if "requires_grad" in record and not isinstance(record["requires_grad"], (bool, type(None))):
        _refuse(path, trail, "requires_grad", "expected true or false", record["requires_grad"])
    md5 = record.get("md5")
    # (msprobe 26.2.0's xor mode writes a 0-d tensor's value as its md5: a number is read as that value)
    if md5 is not None and not (isinstance(md5, str) and _MD5_RE.fullmatch(md5) or _is_number(md5)):
        _refuse(path, trail, "md5", "expected 8 hex digits (CRC-32), 0x and 16 hex digits (xor checksum) or a "
                "number (the value of a 0-d tensor)", md5)
    if "data_name" in record and not isinstance(record["data_name"], (str, type(None))):
        _refuse(path, trail, "data_name", "expected a file name", record["data_name"])
    return stats


def _refuse(path: Optional[PathLike], trail: Tuple, key: str, why: str, value: Any) -> None:
    # the field's path is joined only here: a valid record (all but one, if any) never needs it
    raise SchemaError(path, f"{field_path(*trail)}.{key}", why, value, has_got=True)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_dump(path: PathLike) -> DumpFile:
    """Read a dump.json, or recover the entries of an interrupted run from its journal beside it."""
    from .journal import JOURNAL_NAME, journal_recorded, read_journal

    path = Path(path)
    journal = path.parent / JOURNAL_NAME
    if path.name == "dump.json" and journal_recorded(journal):
        return read_journal(journal).dump
    return validate_dump(load_json(path), path)


def tensor_records(dump: DumpFile) -> Iterator[Tuple[str, Tuple, Dict[str, Any]]]:
    """(entry name, position, record) for every tensor record in the dump."""
    for name, entry in dump.data.items():
        for trail, record in iter_records(entry):
            yield name, trail, record


def entry_records(entry: Dict[str, Any], roles: Tuple[str, ...]) -> List[Dict[str, Any]]:
    """The tensor records under the given roles of one entry (``input_args``, ``output``...)."""
    return [record for role in roles if role in entry for _, record in iter_records(entry[role])]
