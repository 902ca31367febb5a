"""What the image tests share: running commands, and the commands dockerfiles/README.md shows.

Each command of the README's ``bash`` blocks is run by some test here through :func:`readme_command` (which
finds it by its first words) and :func:`run_readme`; tests/images/test_readme.py checks that none is left out.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional

from tests.support.cli import MSPROBE
from tests.support.readme import code_blocks

REPO = Path(__file__).resolve().parents[2]
README = REPO / "dockerfiles" / "README.md"
VERSION = (REPO / "VERSION").read_text().strip()
# paths the README writes relative to the checkout, made absolute so a command runs from any folder
RELATIVE = {".venv/bin/msprobe": str(MSPROBE), "./dev": str(REPO / "dev"), ".ci/": str(REPO / ".ci") + "/",
            "dockerfiles/": str(REPO / "dockerfiles") + "/"}


def missing_prerequisite() -> str:
    """Why images cannot be built here, or "" when they can."""
    if os.environ.get("MSPROBE_SKIP_IMAGES") == "1":
        return "MSPROBE_SKIP_IMAGES=1"
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "building images needs root (debootstrap, dockerd)"
    for tool, package in (("docker", "docker.io"), ("dockerd", "docker.io"), ("debootstrap", "debootstrap")):
        if shutil.which(tool) is None:
            return f"{tool} not found (apt-get install -y {package})"
    return ""


def run(cmd: List, timeout: float = 1800, **kw) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)


def out(proc: "subprocess.CompletedProcess[str]") -> str:
    return (proc.stdout + proc.stderr)[-3000:]


def inspect(name: str) -> dict:
    return json.loads(run(["docker", "image", "inspect", name]).stdout)[0]


def readme_commands() -> List[str]:
    """The lines of the README's bash blocks, without their comments."""
    blocks = code_blocks(README.read_text(encoding="utf-8"), "bash")
    lines = [line.split("  #", 1)[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def readme_command(start: str) -> str:
    """The one README command that begins with ``start``."""
    found = [c for c in readme_commands() if c.startswith(start)]
    assert len(found) == 1, f"dockerfiles/README.md: {len(found)} commands begin with {start!r}: {found}"
    return found[0]


def run_readme(command: str, cwd: Path, env: Optional[Dict[str, str]] = None, timeout: float = 1800,
               user: Optional[int] = None) -> "subprocess.CompletedProcess[str]":
    """Run a README command with bash in ``cwd``, the checkout's paths made absolute. With ``user``, as that
    uid (and gid) in the group of the docker socket, as a user allowed to use docker would."""
    script = command
    for rel, absolute in RELATIVE.items():  # at the start of a word only: "$PWD/out" and the like stay as written
        script = re.sub(r"(^|\s)" + re.escape(rel), lambda m: m.group(1) + absolute, script)
    prefix: List[str] = []
    if user is not None:
        group = os.stat("/var/run/docker.sock").st_gid
        prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", f"--groups={group}", "env", "HOME=/tmp"]
    return run([*prefix, "bash", "-c", script], timeout=timeout, cwd=cwd, env=env)
