"""Every `pip install ./...` line a README shows, run as written from the repository root into a fresh venv.

Speed (2 cores): each venv has no pip of its own and sees the dev venv's third-party packages through a
`.pth` line naming a folder of links to them, every msprobe distribution left out. pip then resolves the
msprobe siblings only from the folders the line names (as a user's pip, with no index serving them,
would) and finds torch, numpy, typer... already installed; `--no-index` keeps it off the network, so a
line that needs more than it names fails here as it would for the user (`No matching distribution`)."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path
from typing import List, Tuple

import pytest

REPO = Path(__file__).resolve().parents[2]
READMES = ["README.md", "shared/README.md", *sorted(str(p.relative_to(REPO)) for p in REPO.glob("tools/*/README.md"))]
# the command each tool's line must add to `msprobe --help` (tools without a command: their import package)
ADDS = {"tools/dump": "msprobe.pytorch", "tools/overflow": "overflow_check", "tools/op_generate": "op_generate",
        "tools/compare": "compare", "tools/config_check": "config_check", "tools/ckpt_compare": "config_check",
        "tools/launcher": "image", "shared": "inspect"}


def install_lines() -> List[Tuple[str, str]]:
    """(README, line) for every `pip install ./...` a README shows, in a block or inline."""
    found = []
    for name in READMES:
        for line in re.findall(r"^\s*(pip install \./[^`\n]*?)\s*$|`(pip install \./[^`\n]*)`",
                               (REPO / name).read_text(encoding="utf-8"), re.M):
            found.append((name, (line[0] or line[1]).strip()))
    return found


@pytest.fixture(scope="module")
def third_party(tmp_path_factory) -> Path:
    """A folder of links to the dev venv's site-packages, less every msprobe distribution."""
    farm = tmp_path_factory.mktemp("third-party")
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if "msprobe" not in entry.name.lower():
            (farm / entry.name).symlink_to(entry)
    try:  # the build backend of most packages (no build isolation: it must be importable)
        import hatchling  # noqa: F401
    except ImportError:
        got = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target",
                              str(farm), "hatchling>=1.18"], capture_output=True, text=True, timeout=600)
        assert got.returncode == 0, got.stderr[-2000:]
    return farm


def _fresh_venv(root: Path, third_party: Path) -> Path:
    venv.create(root, with_pip=False)
    purelib = subprocess.run([str(root / "bin/python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "third_party.pth").write_text(f"{third_party}\n")
    return root / "bin" / "python"


def test_every_tool_readme_shows_an_install_line():
    named = {name for name, _ in install_lines()}
    assert set(READMES) - {"README.md"} <= named, set(READMES) - named


@pytest.mark.parametrize("readme,line", sorted(set(install_lines())))
def test_install_line_as_written(tmp_path, third_party, readme, line):
    python = _fresh_venv(tmp_path / "venv", third_party)
    words = shlex.split(line)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index",
                           "--no-build-isolation", *words[2:]], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PIP_NO_INPUT="1"))
    assert done.returncode == 0, (readme, line, done.stderr[-2000:])
    helped = subprocess.run([str(tmp_path / "venv/bin/msprobe"), "--help"], capture_output=True, text=True,
                            timeout=120, env=dict(os.environ, COLUMNS="200"))
    assert helped.returncode == 0, (line, helped.stderr[-2000:])
    for folder in (w.split("[")[0].rstrip("/").lstrip("./") for w in words[2:] if w.startswith("./")):
        wanted = ADDS[folder]
        if wanted.startswith("msprobe."):
            imported = subprocess.run([str(python), "-c", f"import {wanted}"], capture_output=True, text=True)
            assert imported.returncode == 0, (line, imported.stderr[-1000:])
        else:
            assert re.search(rf"^[│| ]*{wanted}\b", helped.stdout, re.M), (line, helped.stdout)


def test_an_install_line_missing_a_sibling_fails_here(tmp_path, third_party):
    """What the overflow README showed before: the check above would catch it."""
    python = _fresh_venv(tmp_path / "venv", third_party)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation",
                           "./tools/overflow"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode != 0 and "msprobe-dump==0.1.0" in done.stderr, done.stderr[-2000:]
