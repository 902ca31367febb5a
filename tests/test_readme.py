"""Every command the top-level README shows is executed here (``./dev test`` is what CI runs)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"


def readme_commands() -> list:
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_readme_shows_the_two_commands_and_ci_runs_the_test_one():
    commands = readme_commands()
    assert commands[:2] == ["./dev demo", "./dev test"]
    ci = (REPO / ".ci" / "run").read_text()
    assert "./dev test" in ci.splitlines()[-1]


@pytest.mark.slow
def test_demo_command_and_the_commands_after_it():
    env = dict(os.environ, MSPROBE_VENV=sys.prefix)
    demo = subprocess.run(["./dev", "demo"], cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
    assert "summary:" in demo.stdout and "parts ran" in demo.stdout
    assert (REPO / "msprobe_demo" / "dump").is_dir()
    bindir = Path(sys.prefix) / "bin"
    for command in readme_commands():
        if not command.startswith(".venv/bin/msprobe"):
            continue
        args = command.split()
        args[0] = str(bindir / "msprobe")
        result = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, (command, result.stderr)
        assert result.stdout.strip(), command


@pytest.mark.slow
def test_per_tool_install_commands(tmp_path):
    root = tmp_path / "venv"
    venv.create(root, with_pip=True)
    pip_lines = [c for c in readme_commands() if c.startswith("pip install ")]
    assert len(pip_lines) == 5
    for line in pip_lines:
        args = [str(root / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        result = subprocess.run(args + line.split()[2:], cwd=REPO, capture_output=True, text=True, timeout=1200)
        assert result.returncode == 0, (line, result.stderr[-2000:])
        helped = subprocess.run([str(root / "bin/msprobe"), "--help"], capture_output=True, text=True)
        assert helped.returncode == 0, line
    helped = subprocess.run([str(root / "bin/msprobe"), "--help"], capture_output=True, text=True).stdout
    assert "overflow_check" in helped and "not installed" not in helped.split("overflow_check")[1][:80]
