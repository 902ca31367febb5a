"""The styled workbook beside each CSV: frozen header, filters, red rows (error) and yellow rows (warning).

openpyxl in write-only mode: rows stream to the file, only the highlighted rows' cells carry a style. Every
string is a string cell, never a formula: a dump's argument ``"=HYPERLINK(...)"`` must not come alive in Excel.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, List

from openpyxl import Workbook
from openpyxl.cell import WriteOnlyCell
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import get_column_letter

from msprobe.schema.compare_result import DIFFERENT, ERROR, RESULT, WARNING

from .output import write_new

RED, YELLOW = "FFC7CE", "FFEB9C"
_FILLS = {ERROR: RED, DIFFERENT: RED, WARNING: YELLOW}
MAX_CELL_TEXT = 32_000
"""Excel's limit is 32,767 characters per cell: longer stacks are cut."""
# XML cannot hold most control characters (openpyxl refuses the cell) and turns a bare CR into LF: OOXML writes
# them as _xHHHH_, and a literal "_xHHHH_" in the text as "_x005F_xHHHH_", so a dump's string reads back as it was
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f]")
_ESCAPE_LIKE = re.compile(r"_(x[0-9A-Fa-f]{4}_)")
_NEEDS_ESCAPE = re.compile(r"[\x00-\x08\x0b-\x1f]|_x[0-9A-Fa-f]{4}_")


def write_xlsx(folder: Path, name: str, header: List[str], columns: List[List[Any]]) -> Path:
    """The table (``columns``: its cells by column of ``header``) as a workbook, each row coloured by its result."""
    workbook = Workbook(write_only=True)
    sheet = workbook.create_sheet("compare_result")
    sheet.freeze_panes = "A2"
    sheet.auto_filter.ref = f"A1:{get_column_letter(len(header))}{len(columns[0]) + 1}"
    bold = Font(bold=True)
    sheet.append([_styled(sheet, value, font=bold) for value in header])
    fills = {key: PatternFill("solid", start_color=color, end_color=color) for key, color in _FILLS.items()}
    for result, cells in zip(columns[header.index(RESULT)], zip(*columns)):
        fill = fills.get(result)
        values = [_text(v) for v in cells]
        if fill is None:
            sheet.append([_styled(sheet, v) if isinstance(v, str) and v.startswith("=") else v for v in values])
        else:
            sheet.append([_styled(sheet, v, fill=fill) for v in values])
    return write_new(folder, name, workbook.save, binary=True)


def _text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if len(value) > MAX_CELL_TEXT:
        value = value[:MAX_CELL_TEXT] + "..."
    if _NEEDS_ESCAPE.search(value):
        value = _CONTROL.sub(lambda m: f"_x{ord(m.group()):04X}_", _ESCAPE_LIKE.sub(r"_x005F_\1", value))
    return value


def _styled(sheet, value: Any, fill: PatternFill = None, font: Font = None):
    cell = WriteOnlyCell(sheet, value=value)
    if isinstance(value, str):
        cell.data_type = "s"  # openpyxl would store "=..." as a live formula
    if fill is not None:
        cell.fill = fill
    if font is not None:
        cell.font = font
    return cell
