"""Helpers for config_check tests: run the real training scripts, compare, read result.xlsx."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict, List

import openpyxl

from tests.support.cli import error_lines, msprobe  # noqa: F401 (the config_check tests take them from here)

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "scripts"
BIN = Path(sys.executable).parent


def summary(result_dir: Path) -> Dict[str, str]:
    sheet = openpyxl.load_workbook(result_dir / "result.xlsx", read_only=True)["summary"]
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0][:2] == ("filename", "pass_check")
    return {row[0]: row[1] for row in rows[1:]}


def summary_detail(result_dir: Path) -> Dict[str, str]:
    sheet = openpyxl.load_workbook(result_dir / "result.xlsx", read_only=True)["summary"]
    return {row[0]: row[2] for row in list(sheet.iter_rows(values_only=True))[1:]}


def sheet_rows(result_dir: Path, name: str) -> List[dict]:
    sheet = openpyxl.load_workbook(result_dir / "result.xlsx", read_only=True)[name]
    rows = list(sheet.iter_rows(values_only=True))
    return [dict(zip(rows[0], row)) for row in rows[1:]]


def clean_env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "HCCL_", "MASTER_", "TORCHELASTIC"))}
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    env.update(extra)
    return env
