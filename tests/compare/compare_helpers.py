"""Helpers of the compare tests: real dumps of the tiny transformer made by the dump tool, the msprobe command."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from tests.support import cli

SCRIPTS = Path(__file__).with_name("scripts")
DUMP_TINY = SCRIPTS / "dump_tiny.py"
TINY_MODEL = Path(__file__).resolve().parents[2] / "tools" / "dump" / "src" / "msprobe" / "pytorch" / "tiny_model.py"
PLANTED_API = "Functional.gelu.1.forward"
PLANTED_MODULE = "Module.blocks.1.mlp.MLP.forward.0"


def dump_env(out: Path, task: str = "statistics", plant: bool = False, **extra: str) -> Dict[str, str]:
    env = dict(os.environ, MSPROBE_OUT=str(out), DUMP_TASK=task, PLANT="tanh" if plant else "",
               OMP_NUM_THREADS="1")
    env.update(extra)
    return env


def make_dump(out: Path, task: str = "statistics", plant: bool = False, python: Optional[str] = None) -> Path:
    env = dump_env(out, task, plant, TINY_MODEL=str(TINY_MODEL))
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([python or sys.executable, str(DUMP_TINY)], env=env, cwd=str(out), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return out


def msprobe(*args: Union[str, Path], cwd: Optional[Path] = None) -> "subprocess.CompletedProcess[str]":
    """The installed ``msprobe`` command (tests.support.cli), given the time a compare of real dumps takes."""
    return cli.msprobe(*args, cwd=cwd, timeout=600)


def read_csv(path: Path) -> List[Dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def renamed_copy(source: Path, dest: Path, replace: Dict[str, str], values: Optional[Dict[str, Any]] = None) -> Path:
    """A copy of a real dump tree whose names say something else: every ``old`` in the keys and strings of its
    JSON files (dump, construct, stack) becomes ``new``, as a dump from someone else's machine may name things;
    ``values`` sets string arguments by row (``"Functional.gelu.1.forward.input.approximate"``)."""
    shutil.copytree(source, dest)
    for path in dest.rglob("*.json"):
        doc = _replaced(json.loads(path.read_text(encoding="utf-8")), replace)
        for row, value in (values or {}).items():
            entry, _, key = row.rpartition(".input.")
            if path.name == "dump.json" and entry in doc.get("data", {}):
                doc["data"][entry]["input_kwargs"][key] = {"type": "str", "value": value}
        path.write_text(json.dumps(doc), encoding="utf-8")
    return dest


def _replaced(value: Any, replace: Dict[str, str]) -> Any:
    if isinstance(value, str):
        for old, new in replace.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {_replaced(k, replace): _replaced(v, replace) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, replace) for v in value]
    return value
