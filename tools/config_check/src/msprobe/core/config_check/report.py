"""The report: result.xlsx for people (coloured levels, frozen header, readable widths), the detail
CSVs and result.json for programs, and the terminal table."""
from __future__ import annotations

import csv
import functools
import re
from pathlib import Path
from typing import Any, List, Optional, Sequence

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter

from . import formats
from .results import (COLUMNS, DETAIL_COLUMNS, DETAIL_CSV, ERROR, INFO, NONE, PASS, RESULT_FILE, RESULT_JSON,
                      SUMMARY_COLUMNS, WARNING, ItemResult, summary_json)

COLOURS = {PASS: "C6EFCE", WARNING: "FFEB9C", ERROR: "FFC7CE", INFO: "DDEBF7", NONE: "EDEDED"}
_FILLS = {level: PatternFill("solid", start_color=colour, end_color=colour) for level, colour in COLOURS.items()}
_HEADER_FILL = PatternFill("solid", start_color="D9D9D9", end_color="D9D9D9")
_MAX_WIDTH = 60
_WRAP = Alignment(wrap_text=True, vertical="top")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def readable(value: Any) -> Any:
    """Text every writer accepts: undecodable bytes (surrogates) and control characters escaped."""
    if not isinstance(value, str):
        return value
    if value.isascii() and value.isprintable():
        return value
    value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", value)


def write_report(out: Path, results: Sequence[ItemResult], bench: str, cmp: str,
                 track: Optional[formats.Track] = None) -> None:
    """OUT/<item>.csv for weights and dataset, OUT/result.xlsx, OUT/result.json."""
    writes = [functools.partial(_csv, out / DETAIL_CSV[r.name], DETAIL_COLUMNS[r.name], r.details)
              for r in results if r.name in DETAIL_CSV]
    writes.append(functools.partial(_xlsx, out / RESULT_FILE, results))
    writes.append(functools.partial((out / RESULT_JSON).write_bytes, formats.dumps(summary_json(results, bench, cmp))))
    for write in track(writes, "writing the report") if track is not None else writes:
        write()


def _csv(path: Path, columns: Sequence[str], rows: List[Sequence[Any]], text_at: int = 2) -> None:
    """Rows of numbers and one free-text column (the tensor name), the only one that needs escaping."""
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(columns)
        writer.writerows(row if readable(row[text_at]) is row[text_at] else
                         row[:text_at] + (readable(row[text_at]),) + row[text_at + 1:] for row in rows)


def _xlsx(path: Path, results: Sequence[ItemResult]) -> None:
    book = Workbook(write_only=True)
    summary = [(r.name, r.level, r.detail) for r in results]
    _sheet(book, "summary", SUMMARY_COLUMNS, summary, level_at=1)
    for result in results:
        columns = COLUMNS[result.name]
        _sheet(book, result.name, columns, result.rows, level_at=columns.index("level"))
    book.save(path)


def _sheet(book: Workbook, title: str, columns: Sequence[str], rows: List[Sequence[Any]], level_at: int) -> None:
    sheet = book.create_sheet(title)
    sheet.freeze_panes = "A2"
    widths = [len(c) + 2 for c in columns]
    for row in rows[:500]:
        for index, value in enumerate(row):
            text = "" if value is None else str(value)
            longest = max((len(line) for line in text.split("\n")), default=0)
            widths[index] = min(max(widths[index], longest + 2), _MAX_WIDTH)
    for index, width in enumerate(widths, 1):
        sheet.column_dimensions[get_column_letter(index)].width = width
    header = []
    for name in columns:
        cell = WriteOnlyCell(sheet, value=name)
        cell.font, cell.fill = Font(bold=True), _HEADER_FILL
        header.append(cell)
    sheet.append(header)
    wrap = {i for i, name in enumerate(columns) if name.endswith("stack")}
    for row in rows:
        out: List[Any] = [readable(value) for value in row]
        level = row[level_at]
        if level in _FILLS:
            cell = WriteOnlyCell(sheet, value=level)
            cell.fill = _FILLS[level]
            out[level_at] = cell
        for index in wrap:
            cell = WriteOnlyCell(sheet, value=out[index])
            cell.alignment = _WRAP
            out[index] = cell
        sheet.append(out)


def summary_table(results: Sequence[ItemResult]) -> str:
    rows = [("item", "result", "detail")] + [(r.name, r.level, r.detail) for r in results]
    widths = [max(len(str(row[i])) for row in rows) for i in range(2)]
    lines = [f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}" for row in rows]
    lines.insert(1, "-" * max(len(line) for line in lines))
    return "\n".join(lines)
