"""Helpers for config_check tests: run the real training scripts, compare, read result.xlsx."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

import openpyxl

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "scripts"
BIN = Path(sys.executable).parent


def msprobe(*args: str, cwd: Optional[Path] = None,
            env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "msprobe"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def error_lines(stderr: str) -> List[str]:
    """What the command said, less other tools' plugin-loading warnings (the tree is shared)."""
    return [line for line in stderr.strip().splitlines() if not line.startswith("msprobe: warning: cannot load")]


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
