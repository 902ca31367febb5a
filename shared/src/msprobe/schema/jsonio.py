"""JSON reading and writing shared by every file of the suite.

Upstream writes bare ``Infinity`` / ``NaN`` tokens for non-finite statistics (Python's json default);
we read and write the same tokens so both tools read each other's files.
"""
from __future__ import annotations

import gc
import json
import os
import stat
from contextlib import contextmanager
from json.encoder import c_make_encoder, encode_basestring
from pathlib import Path
from typing import Any, Iterator

from .errors import PathLike, SchemaError


_KINDS = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO (named pipe)"),
          (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"))


def path_kind(path: PathLike) -> str:
    """``file``, ``directory``, ``missing``, or what else is there (``FIFO (named pipe)``, ``socket``...),
    following symbolic links; SchemaError when it cannot be looked at (permission denied)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "broken symbolic link" if os.path.islink(path) else "missing"
    except OSError as exc:
        raise SchemaError(path, None, f"cannot read: {exc.strerror}") from None
    return next((name for test, name in _KINDS if test(mode)), "special file")


def read_file(path: PathLike) -> bytes:
    """The bytes of a regular file; SchemaError naming the file for anything else (a FIFO is never opened,
    as opening one waits for a writer)."""
    kind = path_kind(path)
    if kind == "missing":
        raise SchemaError(path, None, "file not found")
    if kind != "file":
        raise SchemaError(path, None, f"expected a file, found a {kind}")
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise SchemaError(path, None, f"cannot read: {exc.strerror}") from None


def load_json(path: PathLike) -> Any:
    """Parse a JSON file, turning every I/O or syntax problem into a SchemaError naming the file."""
    path = Path(path)
    try:
        text = read_file(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SchemaError(path, None, f"not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(path, None, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except ValueError:  # an integer of more than 4300 digits (Python's limit on int parsing)
        raise SchemaError(path, None, "invalid JSON: a number with more than 4300 digits") from None
    except RecursionError:
        raise SchemaError(path, None, "invalid JSON: nested too deeply") from None


@contextmanager
def without_cyclic_gc() -> Iterator[None]:
    """For work on a whole rank's dump in a process of its own (a compare job, an index build): it makes
    millions of small objects and no cycles, and the cyclic collector would walk all of them again and again
    (a third of a 100,000-entry rank's comparison, spread over whatever allocated next). Not for the dump's
    writer thread: the collector is the whole process's, the training's included."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


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
    # json.dumps (not json.dump) so that indent=None takes the C encoder (json.dump always the Python one)
    write_text_atomic(path, json.dumps(value, indent=indent, ensure_ascii=False))


def write_text_atomic(path: PathLike, text: str) -> None:
    """Write a whole text file (JSON already encoded) so a reader never sees half of it."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_new(path: PathLike, value: Any, indent: int = 1, attempts: int = 1000) -> Path:
    """Write a whole JSON file under a name no other file has: ``path``, else ``<stem>_1<suffix>``, ``_2``...
    Never replaces a file, even one another process creates at the same moment; returns the name used."""
    path = Path(path)
    tmp = temporary_path(path)
    write_bytes_atomic(tmp, json.dumps(value, indent=indent, ensure_ascii=False).encode("utf-8"))
    try:
        for number in range(attempts):
            target = path if number == 0 else path.with_name(f"{path.stem}_{number}{path.suffix}")
            try:
                os.link(tmp, target)  # atomic, and fails when the name is taken: a reader sees all or nothing
                return target
            except FileExistsError:
                continue
        raise SchemaError(path, None, f"cannot find a free name after {attempts} tries")
    finally:
        os.unlink(tmp)


def temporary_path(path: PathLike) -> Path:
    """Where :func:`write_bytes_atomic` writes ``path`` before renaming it over ``path``."""
    return Path(_temporary_name(os.fspath(path)))


def _temporary_name(path: str) -> str:
    head, tail = os.path.split(path)
    return os.path.join(head, f".{tail}.tmp{os.getpid()}")


def write_bytes_atomic(path: PathLike, data: Any, durable: bool = True) -> None:
    """Write a whole file (``data``: bytes or a buffer) so a reader never sees half of it: temp file, fsync,
    rename; the temp file is removed when writing fails (a full disk). ``durable=False`` skips the fsync: the
    file is still whole or absent after a killed process, only not after a power loss (the dump's step and
    tensor files, written on the training's path, as msprobe writes them). Plain strings and an unbuffered
    file: the dump writes hundreds of tensor files a step through here."""
    path = os.fspath(path)
    tmp = _temporary_name(path)
    try:
        with open(tmp, "wb", buffering=0) as handle:
            view = memoryview(data).cast("B")
            while view:
                view = view[handle.write(view):]
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
