"""Every command tools/compare/README.md shows is run here, in the order shown."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.readme import code_blocks, run_shown, shell_commands

REPO = Path(__file__).resolve().parents[2]
README = REPO / "tools" / "compare" / "README.md"


def _blocks(kind: str):
    return code_blocks(README.read_text(encoding="utf-8"), kind)


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_shown(command, cwd, env=dict(os.environ, OMP_NUM_THREADS="1"))


@pytest.mark.slow
def test_readme_commands(tmp_path):
    commands = shell_commands(README)
    assert len(commands) == 5
    golden, target, page, as_json, bench = commands
    for folder in ("tests", "bench"):  # the commands run from the repository root; their files land here
        (tmp_path / folder).symlink_to(REPO / folder)
    for command in (golden, target):
        done = _run(command, tmp_path)
        assert done.returncode == 0, done.stderr[-3000:]
    done = _run(page, tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]
    (shown,) = _blocks("text")
    for line in shown.strip().splitlines():
        assert line in done.stdout, (line, done.stdout)
    assert (tmp_path / "msprobe_out" / "report.html").is_file()
    assert len(list((tmp_path / "msprobe_out" / "compare").glob("compare_result_rank_*.xlsx"))) == 1
    done = _run(as_json, tmp_path)
    assert done.returncode == 1
    assert json.loads(done.stdout)["first_divergence"]["entry"] == "Functional.gelu.1.forward"
    done = _run(bench, REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"ours: +\d+\.\d+ s .* peak RSS +\d+ MiB", done.stdout)
    assert re.search(r"ratio per rank \(msprobe / ours\): time \d+\.\d+x, peak RSS \d+\.\d+x", done.stdout)
