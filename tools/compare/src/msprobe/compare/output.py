"""Result files: the CSV per rank (msprobe's columns), the styled workbook, and compare_summary.json."""
from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any, List

from msprobe.schema import MsprobeError
from msprobe.schema.compare_result import SUMMARY_NAME, header
from msprobe.schema.jsonio import dumps

MAX_TRIES = 1000


def prepare_output_dir(path: Path) -> Path:
    if path.exists() and not path.is_dir():
        raise MsprobeError(f"{path}: -o/--output must be a directory, found a file")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MsprobeError(f"{path}: cannot create the output directory ({exc.strerror})") from None
    return path


def open_new(folder: Path, name: str, mode: str = "x", **kwargs: Any):
    """Open ``folder/name`` for writing without replacing anything: ``name`` with ``_1``, ``_2``... when taken."""
    stem, dot, suffix = name.partition(".")
    for attempt in range(MAX_TRIES):
        candidate = folder / (name if attempt == 0 else f"{stem}_{attempt}{dot}{suffix}")
        try:
            return candidate, open(candidate, mode, **kwargs)
        except FileExistsError:
            continue
    raise MsprobeError(f"{folder}: {MAX_TRIES} files named like {name} exist already")


def write_csv(folder: Path, name: str, mode: str, rows: List[List[Any]]) -> Path:
    path, handle = open_new(folder, name, "x", newline="", encoding="utf-8")
    with handle:
        writer = csv.writer(handle)
        writer.writerow(header(mode))
        writer.writerows(rows)
    return path


def write_summary(folder: Path, summary: dict, timestamp: str) -> Path:
    name = SUMMARY_NAME if not (folder / SUMMARY_NAME).exists() else SUMMARY_NAME.replace(".json", f"_{timestamp}.json")
    path, handle = open_new(folder, name, "x", encoding="utf-8")
    with handle:
        handle.write(dumps(summary, indent=1))
        handle.flush()
        os.fsync(handle.fileno())
    return path
