"""result.xlsx for people (coloured levels, frozen header, readable widths) and the terminal table."""
from __future__ import annotations

from pathlib import Path
from typing import Any, List, Sequence

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter

from .formats import COLUMNS, ERROR, INFO, PASS, SUMMARY_COLUMNS, WARNING, ItemResult

COLOURS = {PASS: "C6EFCE", WARNING: "FFEB9C", ERROR: "FFC7CE", INFO: "DDEBF7"}
_FILLS = {level: PatternFill("solid", start_color=colour, end_color=colour) for level, colour in COLOURS.items()}
_HEADER_FILL = PatternFill("solid", start_color="D9D9D9", end_color="D9D9D9")
_MAX_WIDTH = 60
_WRAP = Alignment(wrap_text=True, vertical="top")


def collapse_equal(result: ItemResult, name_column: int) -> ItemResult:
    """Weights/dataset: one row per step and rank whose tensors are all equal; differing rows in full."""
    level_at = COLUMNS[result.name].index("level")
    groups: dict = {}
    for row in result.rows:
        groups.setdefault((row[0], row[1]), []).append(row)
    rows = []
    for (step, rank), members in groups.items():
        passing = [row for row in members if row[level_at] == PASS]
        rows.extend(row for row in members if row[level_at] != PASS)
        if passing:
            plural = "s" if len(passing) != 1 else ""
            label = f"({len(passing)} tensor{plural} equal)" if len(passing) < len(members) \
                else f"(all {len(passing)} tensor{plural} equal)"
            filler = [None] * len(COLUMNS[result.name])
            filler[0], filler[1], filler[level_at] = step, rank, PASS
            filler[name_column], filler[name_column + 1] = label, True
            rows.append(tuple(filler))
    rows.sort(key=lambda row: (row[0], row[1], row[level_at] == PASS, str(row[name_column])))
    differ = sum(1 for row in result.rows if row[level_at] != PASS)
    counted = f"{differ} of {len(result.rows)} tensors differ" if result.rows else ""
    return ItemResult(result.name, rows, note=result.note, note_level=result.note_level, counted=counted)


def write_report(path: Path, results: Sequence[ItemResult]) -> None:
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
        out: List[Any] = list(row)
        level = row[level_at]
        if level in _FILLS:
            cell = WriteOnlyCell(sheet, value=level)
            cell.fill = _FILLS[level]
            out[level_at] = cell
        for index in wrap:
            cell = WriteOnlyCell(sheet, value=row[index])
            cell.alignment = _WRAP
            out[index] = cell
        sheet.append(out)


def summary_table(results: Sequence[ItemResult]) -> str:
    rows = [("item", "result", "detail")] + [(r.name, r.level, r.detail) for r in results]
    widths = [max(len(str(row[i])) for row in rows) for i in range(2)]
    lines = [f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]}" for row in rows]
    lines.insert(1, "-" * max(len(line) for line in lines))
    return "\n".join(lines)
