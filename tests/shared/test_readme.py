"""Every command shared/README.md shows is run here, as written, in a folder that holds a dump."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

from msprobe.schema import RankWriter
from tests.support.cli import MSPROBE

REPO = Path(__file__).resolve().parents[2]


def shell_lines(readme: Path) -> list:
    blocks = re.findall(r"```(?:shell|bash)\n(.*?)```", readme.read_text(), flags=re.S)
    return [line.strip() for block in blocks for line in block.splitlines() if line.strip()]


def test_every_command_of_the_shared_readme(tmp_path):
    for rank in ("rank0", "rank1"):
        writer = RankWriter(tmp_path / "dump" / "step0" / rank, {"task": "statistics", "level": "L1",
                                                                 "framework": "pytorch", "dump_data_dir": None})
        writer.entry("Torch.sin.0.forward", {"input_args": [], "input_kwargs": {}, "output": []})
        writer.finalize(remove_journal=True)
    lines = shell_lines(REPO / "shared" / "README.md")
    # pip lines are the top README's, which tests/test_readme.py installs into a fresh venv
    assert [line for line in lines if line.startswith("pip ")] == ["pip install ./shared"]
    assert "pip install ./shared" in shell_lines(REPO / "README.md")
    commands = [line for line in lines if not line.startswith("pip ")]
    assert commands and all(line.startswith("msprobe ") for line in commands)
    env = dict(os.environ, HOME=str(tmp_path / "home"), PATH=f"{MSPROBE.parent}{os.pathsep}{os.environ['PATH']}")
    for line in commands:
        done = subprocess.run([str(MSPROBE), *shlex.split(line)[1:]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip(), (line, done.stderr)
    # the prose's completion commands find the shell they are run from: run them from bash ("; :" keeps
    # bash from replacing itself with the command), into a scratch HOME
    shown = subprocess.run(["bash", "-c", "msprobe --show-completion; :"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "_MSPROBE_COMPLETE=complete_bash" in shown.stdout, shown.stderr
    installed = subprocess.run(["bash", "-c", "msprobe --install-completion; :"], cwd=tmp_path, env=env,
                               capture_output=True, text=True, timeout=120)
    assert installed.returncode == 0 and "bash completion installed" in installed.stdout, installed.stderr
    assert "msprobe" in (tmp_path / "home" / ".bashrc").read_text()
