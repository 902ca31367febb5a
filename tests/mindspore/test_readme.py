"""The MindSpore section of tools/dump/README.md: its Python example and its shell commands run."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ms_dump_checks import inspect_ok
from tests.support.cli import msprobe
from tests.support.readme import code_blocks

REPO = Path(__file__).resolve().parents[2]
README = REPO / "tools" / "dump" / "README.md"


def _section() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("## MindSpore and PyTorch code on MindSpore"):]


def _blocks(kind: str):
    return code_blocks(_section(), kind)


def test_python_example_and_inspect(tmp_path):
    (tmp_path / "example.py").write_text(_blocks("python")[0])
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert _blocks("bash")[0].strip() == "msprobe inspect ./msprobe_out/dump_path"
    done = msprobe("inspect", "./msprobe_out/dump_path", cwd=tmp_path)
    assert done.returncode == 0 and "framework: mindspore" in done.stdout, done.stdout + done.stderr


def test_api_list_check_command():
    command = _blocks("bash")[1].splitlines()[0].split()
    assert command[:2] == ["python", "tools/dump/scripts/gen_mindspore_api_list.py"]
    done = subprocess.run([sys.executable] + command[1:], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "up to date" in done.stdout, done.stdout + done.stderr


def test_demo_command(tmp_path):
    command = _blocks("bash")[2].strip().split()
    assert command[:4] == ["msprobe", "-f", "mindspore", "demo"]
    done = msprobe(*command[1:], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[dump_mindspore]" in done.stdout and "statistics mix dump of 2 steps" in done.stdout
    inspect_ok(tmp_path / "msprobe_demo" / "dump_mindspore")
