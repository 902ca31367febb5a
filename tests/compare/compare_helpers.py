"""Helpers of the compare tests: real dumps of the tiny transformer made by the dump tool, the msprobe command."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

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


def msprobe(*args: str, cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    """The installed ``msprobe`` command, as users run it."""
    exe = Path(sys.executable).with_name("msprobe")
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=600,
                          cwd=str(cwd) if cwd else None)


def read_csv(path: Path) -> List[Dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))
