"""Every command tools/ckpt_compare/README.md shows is run here, in the order shown; the demo part alone too."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.readme import code_blocks, run_shown, shell_commands

REPO = Path(__file__).resolve().parents[2]
README = REPO / "tools" / "ckpt_compare" / "README.md"


def _blocks(kind: str):
    return code_blocks(README.read_text(encoding="utf-8"), kind)


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess:
    done = run_shown(command, cwd)
    assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    return done


@pytest.mark.slow
def test_readme_commands(tmp_path):
    commands = shell_commands(README)
    assert len(commands) == 5
    demo, compare, mindspore, install, bench = commands  # (usage first, then how to install)
    # installing into the environment under test would swap the code being tested: the top-level README
    # shows the same command, and tests/test_readme.py runs it in a fresh virtual environment
    assert install == "pip install ./shared ./tools/ckpt_compare" and install in (REPO / "README.md").read_text()
    _run(demo, tmp_path)
    (shown,) = _blocks("text")  # the printed summary the README quotes
    out = _run(compare, tmp_path).stdout
    for line in shown.strip().splitlines():
        if "..." not in line:
            assert line in out, (line, out)
    data = json.loads((tmp_path / "msprobe_out" / "tp1_vs_tp2pp2.json").read_text())
    assert len(data) == 27 and data["decoder.layers.0.input_layernorm.weight"]["cos"] == 1.0
    _run(mindspore, tmp_path)
    assert json.loads((tmp_path / "msprobe_out" / "iter10_vs_iter20.json").read_text()) == data
    report = _run(bench, REPO).stdout
    assert re.search(r"cold: cat .* read ratio \d+\.\d+; peak RSS \d+ MiB = \d+\.\d+x largest parameter", report)
    assert re.search(r"cold read ratio: median \d+\.\d+ \(min \d+\.\d+, max \d+\.\d+, 3 runs\)", report)


def test_demo_part_alone(tmp_path):
    from msprobe.ckpt_compare.demo import run
    from msprobe.cli.demo import DemoContext
    said = []
    context = DemoContext(out_dir=tmp_path, framework=None)
    context.say = said.append
    result = run(context)
    data = json.loads(result.read_text())
    assert run.order == 50 and len(data) == 27
    changed = data["decoder.layers.2.mlp.linear_fc1.weight"]
    assert changed["l2"] > 0 and changed["cos"] < 1
    assert all(e["l2"] == 0.0 for n, e in data.items() if n != "decoder.layers.2.mlp.linear_fc1.weight")
    assert any(line.startswith("worst cos: ") for line in said)
