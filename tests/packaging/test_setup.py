"""Setup that talks and installs once: one line per step, a second run with nothing changed installs nothing."""
from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STEP = REPO / ".ci" / "setup_step.sh"


def _step(venv_dir: Path, *args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(["bash", str(STEP), str(venv_dir), "probe", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600)


def test_a_step_says_what_it_installs_then_skips_until_its_inputs_change(tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    wheel_dir = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheel_dir),
                            str(REPO / "shared")], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = str(next(wheel_dir.glob("msprobe_shared-*.whl")))
    args = ("--no-index", "--no-deps", wheel)
    first = _step(env_dir, *args)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0] == f"setup: probe: pip install {wheel}"
    assert (env_dir / "bin" / "msprobe").exists()
    second = _step(env_dir, *args)
    assert second.returncode == 0 and second.stdout.startswith("setup: probe: up to date, nothing installed"), second.stdout
    third = _step(env_dir, "--no-index", "--no-deps", "--force-reinstall", wheel)
    assert third.stdout.startswith("setup: probe: pip install"), third.stdout


def test_the_demo_step_installs_no_test_tools():
    dry = subprocess.run([str(REPO / "dev"), "--dry-run", "setup-demo"], cwd=REPO, capture_output=True, text=True,
                         env=dict(os.environ, MSPROBE_VENV=sys.prefix), timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert "-r requirements-demo.txt" in dry.stderr and "requirements-test.txt" not in dry.stderr
    demo = (REPO / "requirements-demo.txt").read_text().lower()
    for absent in ("megatron", "pytest", "hypothesis", "docker"):
        assert absent not in demo
