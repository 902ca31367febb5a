"""The styled workbook beside each CSV: frozen header, filters, red rows (error) and yellow rows (warning).

openpyxl in write-only mode: rows stream to the file, only the highlighted rows' cells carry a style.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, List

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter

from msprobe.schema.compare_result import DIFFERENT, ERROR, RESULT, WARNING, header

from .output import open_new

RED, YELLOW = "FFC7CE", "FFEB9C"
_FILLS = {ERROR: RED, DIFFERENT: RED, WARNING: YELLOW}
MAX_CELL_TEXT = 32_000
"""Excel's limit is 32,767 characters per cell: longer stacks are cut."""


def write_xlsx(folder: Path, name: str, mode: str, rows: List[List[Any]]) -> Path:
    columns = header(mode)
    result_index = columns.index(RESULT)
    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("compare_result")
    sheet.freeze_panes = "A2"
    sheet.auto_filter.ref = f"A1:{get_column_letter(len(columns))}{len(rows) + 1}"
    bold = Font(bold=True)
    sheet.append([_styled(sheet, value, font=bold) for value in columns])
    fills = {key: PatternFill("solid", start_color=color, end_color=color) for key, color in _FILLS.items()}
    for row in rows:
        fill = fills.get(row[result_index])
        values = [_cell(v) for v in row]
        sheet.append(values if fill is None else [_styled(sheet, v, fill=fill) for v in values])
    path, handle = open_new(folder, name, "xb")
    with handle:
        workbook.save(handle)
    return path


def _cell(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_CELL_TEXT:
        return value[:MAX_CELL_TEXT] + "..."
    return value


def _styled(sheet, value: Any, fill: PatternFill = None, font: Font = None) -> WriteOnlyCell:
    cell = WriteOnlyCell(sheet, value=value)
    if fill is not None:
        cell.fill = fill
    if font is not None:
        cell.font = font
    return cell
