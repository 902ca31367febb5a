"""`just wheels` makes publishable wheels: installed from a wheelhouse with --no-index, far from the checkout."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIGHT = ["msprobe-shared", "msprobe-dump", "msprobe-overflow", "msprobe-config-check", "msprobe-ckpt-compare",
         "msprobe-launcher"]
pytestmark = pytest.mark.slow


def _run(cmd, **kw) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=1200, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """dist/ from `just wheels`, a wheelhouse beside it, and a venv with the light tools installed --no-index."""
    root = tmp_path_factory.mktemp("wheels")
    dist = root / "dist"
    env = dict(os.environ, MSPROBE_DIST=str(dist), MSPROBE_VENV=sys.prefix,
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    built = _run(["just", "wheels"], cwd=REPO, env=env)
    assert built.returncode == 0, built.stderr[-2000:]
    house = root / "wheelhouse"
    shutil.copytree(dist, house)
    fetched = _run([sys.executable, "-m", "pip", "download", "-q", "-d", house, "--find-links", dist, *LIGHT])
    assert fetched.returncode == 0, fetched.stderr[-2000:]
    target = root / "venv"
    venv.create(target, with_pip=True)
    pip = _run([target / "bin/python", "-m", "pip", "install", "-q", "--no-index", "--find-links", house, *LIGHT],
               cwd=root, env={k: v for k, v in os.environ.items() if not k.startswith("PIP_")})
    assert pip.returncode == 0, pip.stderr[-2000:]
    return target


def test_wheels_carry_exact_sibling_pins(installed):
    shown = _run([installed / "bin/python", "-m", "pip", "show", "msprobe-overflow"]).stdout
    assert "Requires: msprobe-dump, msprobe-shared" in shown


def test_pip_freeze_shows_no_paths(installed):
    frozen = _run([installed / "bin/python", "-m", "pip", "freeze"]).stdout.splitlines()
    assert "msprobe-shared==" + (REPO / "VERSION").read_text().strip() in frozen
    assert not [line for line in frozen if " @ " in line or "file:" in line], frozen


def test_each_tool_runs_from_the_installed_wheels(installed, tmp_path):
    msprobe = installed / "bin/msprobe"
    helped = _run([msprobe, "--help"], cwd=tmp_path)
    assert helped.returncode == 0
    for command in ("inspect", "overflow_check", "config_check", "image", "run"):
        assert command in helped.stdout
    assert "not installed" not in helped.stdout.split("overflow_check")[1][:80]
    (tmp_path / "a.sh").write_text("torchrun train.py --lr 0.1 --bf16\n")
    (tmp_path / "b.sh").write_text("torchrun train.py --lr 0.2 --fp16\n")
    for name in ("a", "b"):
        packed = _run([msprobe, "config_check", "-d", f"{name}.sh", "-o", f"{name}.zip"], cwd=tmp_path)
        assert packed.returncode == 0, packed.stderr
    compared = _run([msprobe, "config_check", "-c", "a.zip", "b.zip", "-o", "result"], cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert "hyperparameters" in compared.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    overflow = _run([msprobe, "overflow_check", "-i", empty], cwd=tmp_path)
    assert overflow.returncode == 2 and overflow.stderr.startswith("msprobe: error:"), overflow.stderr
    imported = _run([installed / "bin/python", "-c", "import msprobe.dump, msprobe.ckpt_compare.compare"])
    assert imported.returncode == 0, imported.stderr
    nodaemon = _run([msprobe, "image", "list"], env=dict(os.environ, DOCKER_HOST="unix:///nonexistent.sock"))
    assert nodaemon.returncode == 2 and len(nodaemon.stderr.strip().splitlines()) == 1, nodaemon.stderr
    assert "no docker daemon answers at unix:///nonexistent.sock" in nodaemon.stderr
