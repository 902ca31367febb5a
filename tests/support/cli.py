"""The installed ``msprobe`` command, run as a user runs it, and what its failures must look like.

    from tests.support.cli import MSPROBE, msprobe, assert_one_line_error
    done = msprobe("inspect", str(dump), cwd=tmp_path)
    assert_one_line_error(msprobe("inspect", "missing", cwd=tmp_path), "missing")
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional, Sequence, Union

MSPROBE = Path(sys.executable).with_name("msprobe")
"""The command of the venv running the tests."""


def msprobe(*args: Union[str, Path], cwd: Optional[Union[str, Path]] = None, env: Optional[Dict[str, str]] = None,
            timeout: float = 300, prefix: Sequence[str] = ()) -> "subprocess.CompletedProcess[str]":
    """``msprobe ARGS`` (after ``prefix``, e.g. setpriv), output captured as text."""
    return subprocess.run([*prefix, str(MSPROBE), *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def error_lines(stderr: str) -> list:
    """What the command said, less other tools' plugin-loading warnings (several tools share one venv)."""
    return [line for line in stderr.strip().splitlines() if not line.startswith("msprobe: warning: cannot load")]


def assert_one_line_error(done: "subprocess.CompletedProcess[str]", *parts: str) -> str:
    """Exit 2 and one ``msprobe: error: ...`` line holding every one of ``parts``, no traceback; the line."""
    lines = error_lines(done.stderr)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert len(lines) == 1 and lines[0].startswith("msprobe: error: "), done.stderr
    for part in parts:
        assert part in lines[0], done.stderr
    return lines[0]
