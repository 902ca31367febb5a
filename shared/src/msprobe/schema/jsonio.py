"""JSON reading and writing shared by every file of the suite.

Upstream writes bare ``Infinity`` / ``NaN`` tokens for non-finite statistics (Python's json default);
we read and write the same tokens so both tools read each other's files.
"""
from __future__ import annotations

import json
import os
from json.encoder import c_make_encoder, encode_basestring
from pathlib import Path
from typing import Any

from .errors import PathLike, SchemaError


def load_json(path: PathLike) -> Any:
    """Parse a JSON file, turning every I/O or syntax problem into a SchemaError naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SchemaError(path, None, "file not found") from None
    except IsADirectoryError:
        raise SchemaError(path, None, "expected a file, found a directory") from None
    except UnicodeDecodeError as exc:
        raise SchemaError(path, None, f"not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise SchemaError(path, None, f"cannot read: {exc.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(path, None, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise SchemaError(path, None, "invalid JSON: nested too deeply") from None


def dumps(value: Any, indent: int = None) -> str:
    return json.dumps(value, indent=indent, ensure_ascii=False)


def _not_serialisable(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# what json.dumps(value, ensure_ascii=False) writes (same bytes), with the C encoder built once instead of
# per call (JSONEncoder.encode builds one, and a float formatter, every time: ~20% of a small record's cost)
# and without the circular-reference bookkeeping (a dict per container)
if c_make_encoder is not None:
    _encode = c_make_encoder(None, _not_serialisable, encode_basestring, None, ": ", ", ", False, False, True)

    def compact_dumps(value: Any) -> str:
        """``json.dumps(value, ensure_ascii=False)`` of a tree of plain values (no cycles), faster."""
        return "".join(_encode(value, 0))
else:  # a Python without the _json accelerator
    compact_dumps = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode


def write_json_atomic(path: PathLike, value: Any, indent: int = 1) -> None:
    """Write a whole JSON file so a reader never sees half of it: temp file, fsync, rename."""
    # json.dumps (not json.dump) so that indent=None takes the C encoder: 10x faster on large dumps
    write_text_atomic(path, json.dumps(value, indent=indent, ensure_ascii=False))


def write_text_atomic(path: PathLike, text: str) -> None:
    """Write a whole text file (JSON already encoded) so a reader never sees half of it."""
    write_bytes_atomic(path, text.encode("utf-8"))


def temporary_path(path: PathLike) -> Path:
    """Where :func:`write_bytes_atomic` writes ``path`` before renaming it over ``path``."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def write_bytes_atomic(path: PathLike, data: bytes) -> None:
    """Write a whole file so a reader never sees half of it: temp file, fsync, rename."""
    path = Path(path)
    tmp = temporary_path(path)
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
