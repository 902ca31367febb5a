"""Result files: the CSV per rank (msprobe's columns), the styled workbook, and compare_summary.json.

Every file is written under a temporary name (``.NAME.<pid>.partial``) and given its name only once complete:
a run killed mid-write leaves no table that looks whole. Names are never reused: ``_1``, ``_2``... when taken.
"""
from __future__ import annotations

import contextlib
import csv
import os
from pathlib import Path
from typing import Any, Callable, Iterator, List

from msprobe.schema import MsprobeError
from msprobe.schema.compare_result import SUMMARY_NAME
from msprobe.schema.jsonio import dumps


MAX_TRIES = 1000
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a CSV cell as a formula (OWASP's list)."""
_FORMULA_FIRST = frozenset("".join(_FORMULA_START))


@contextlib.contextmanager
def output_dir(path: Path) -> Iterator[Path]:
    """The ``-o`` folder, created when missing, and removed again when the run fails before writing to it."""
    if path.exists() and not path.is_dir():
        raise MsprobeError(f"{path}: -o/--output must be a directory, found a file")
    created = not path.exists()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MsprobeError(f"{path}: cannot create the output directory ({exc.strerror})") from None
    try:
        yield path
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                path.rmdir()  # only when empty: nothing of the user's is removed
        raise


def write_new(folder: Path, name: str, write: Callable[[Any], None], binary: bool = False, **kwargs: Any) -> Path:
    """Write ``folder/name`` through ``write(handle)`` to a temporary file, then give it the first free name
    (``name``, ``stem_1.suffix``...); the temporary file is removed when writing fails."""
    partial = folder / f".{name}.{os.getpid()}.partial"
    try:
        with open(partial, "wb" if binary else "w", **kwargs) as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        return _publish(partial, folder, name)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


def _publish(partial: Path, folder: Path, name: str) -> Path:
    stem, dot, suffix = name.partition(".")
    for attempt in range(MAX_TRIES):
        candidate = folder / (name if attempt == 0 else f"{stem}_{attempt}{dot}{suffix}")
        try:
            os.link(partial, candidate)  # fails when the name is taken: never replaces a file
            return candidate
        except FileExistsError:
            continue
        except OSError:  # a file system without hard links: a rename after looking
            if candidate.exists():
                continue
            os.replace(partial, candidate)
            return candidate
    raise MsprobeError(f"{folder}: {MAX_TRIES} files named like {name} exist already")


def csv_cell(value: Any) -> Any:
    """A cell a spreadsheet shows as text: one starting like a formula gets a leading ``'``; numbers stay."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        try:
            float(value)
            return value  # "-1.5", "-inf": a number, kept as one
        except ValueError:
            return "'" + value
    return value


def write_csv(folder: Path, name: str, header: List[str], columns: List[List[Any]]) -> Path:
    """The table (``columns``: its cells by column of ``header``) as CSV."""
    def write(handle) -> None:
        writer = csv.writer(handle)
        writer.writerow(header)
        for cells in zip(*columns):
            if any(type(v) is str and v[:1] in _FORMULA_FIRST for v in cells):
                cells = [csv_cell(v) for v in cells]
            writer.writerow(cells)
    return write_new(folder, name, write, newline="", encoding="utf-8")


def write_summary(folder: Path, summary: dict, timestamp: str) -> Path:
    name = SUMMARY_NAME if not (folder / SUMMARY_NAME).exists() else SUMMARY_NAME.replace(".json", f"_{timestamp}.json")
    return write_new(folder, name, lambda handle: handle.write(dumps(summary, indent=1)), encoding="utf-8")
