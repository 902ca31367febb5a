"""Install footprint of each tool: its wheel installed alone into a fresh virtual environment.

The wheels are built once (`just wheels` into a temporary dist, or --dist); the third-party wheels every tool
needs are downloaded once from the configured index into a wheelhouse, so that no install pays for a
download. Then, per tool: a new venv, `pip install --no-index --find-links WHEELHOUSE msprobe-<tool>`, and
  install s  = wall seconds of that pip install (unpacking and byte-compiling, no network), the
               fastest of --repeat installs,
  venv MiB   = the venv's size on disk after it (du; pip's cache lives outside the venv),
  packages   = distributions it added to the empty venv (whose pip and setuptools are not counted),
  check      = `msprobe --version`, then the tool's command (`msprobe COMMAND --help`) or its import, ran.
The frameworks are those the suite is tested with: requirements-demo.txt as constraints (torch 2.13.0 CPU,
mindspore 2.10.0, numpy<2). Without constraints pip takes the newest torch, a CUDA build of several GB.
Usage: .venv/bin/python bench/install_footprint.py [--tools shared,overflow] [--dist DIR] [--work DIR] [--repeat 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from typing import Dict, List, NamedTuple, Tuple

REPO = Path(__file__).resolve().parents[1]


class Tool(NamedTuple):
    requirement: str
    checks: Tuple[Tuple[str, ...], ...]
    """Commands run in the venv after `msprobe --version`: ("msprobe", ...) or ("python", "-c", ...)."""


TOOLS: Dict[str, Tool] = {
    "shared": Tool("msprobe-shared", (("msprobe", "inspect", "--help"),)),
    "dump": Tool("msprobe-dump", (("python", "-c", "import msprobe.dump"),)),
    "dump[pytorch]": Tool("msprobe-dump[pytorch]", (("python", "-c", "import torch, msprobe.pytorch"),)),
    "dump[mindspore]": Tool("msprobe-dump[mindspore]", (("python", "-c", "import mindspore, msprobe.mindspore"),)),
    "overflow": Tool("msprobe-overflow", (("msprobe", "overflow_check", "--help"),)),
    "config_check": Tool("msprobe-config-check", (("msprobe", "config_check", "--help"),
                                                  ("python", "-c", "import msprobe.core.config_check"))),
    "ckpt_compare": Tool("msprobe-ckpt-compare", (("msprobe", "config_check", "--help"),
                                                  ("python", "-c", "import msprobe.ckpt_compare.compare"))),
    "ckpt_compare[demo]": Tool("msprobe-ckpt-compare[demo]",
                               (("python", "-c", "import torch, msprobe.ckpt_compare.writer"),)),
    "op_generate": Tool("msprobe-op-generate", (("msprobe", "op_generate", "--help"),)),
    "compare": Tool("msprobe-compare", (("msprobe", "compare", "--help"),)),
    "launcher": Tool("msprobe-launcher", (("msprobe", "image", "--help"), ("msprobe", "run", "--help"))),
}


class Row(NamedTuple):
    tool: str
    seconds: float
    mib: float
    packages: int
    check: str


def _run(cmd: List, timeout: float = 1800, **kw) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout, **kw)


def _fail(what: str, proc: "subprocess.CompletedProcess[str]") -> None:
    lines = (proc.stderr or proc.stdout).strip().splitlines() or ["no output"]
    sys.exit(f"install_footprint: error: {what} failed (exit {proc.returncode}): {lines[-1]}")


def build_wheels(dist: Path) -> None:
    """`just wheels` with this interpreter's venv, into DIST."""
    bindir = Path(sys.executable).parent
    just = shutil.which("just", path=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    if just is None:
        sys.exit("install_footprint: error: `just` not found (pip install rust-just, or pass --dist)")
    env = dict(os.environ, MSPROBE_DIST=str(dist), MSPROBE_VENV=sys.prefix,
               PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    built = _run([just, "wheels"], cwd=REPO, env=env)
    if built.returncode != 0:
        _fail("just wheels", built)


def fill_wheelhouse(house: Path, dist: Path, constraints: Path, requirements: List[str]) -> None:
    """Every wheel the tools need: siblings from DIST, the rest from the index pip is configured with."""
    for requirement in requirements:
        fetched = _run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "-d", house,
                        "--find-links", dist, "-c", constraints, requirement])
        if fetched.returncode != 0:
            _fail(f"pip download {requirement}", fetched)


def du_mib(path: Path) -> float:
    return int(_run(["du", "-sk", path]).stdout.split()[0]) / 1024


def installed(env: Path) -> set:
    listed = _run([env / "bin/python", "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"])
    return {item["name"].lower() for item in json.loads(listed.stdout)}


def check(env: Path, tool: Tool) -> str:
    """'ok', or the command that failed and the last line it printed."""
    for command in (("msprobe", "--version"),) + tool.checks:
        done = _run([env / "bin" / command[0], *command[1:]], timeout=600, cwd=env)
        warned = [line for line in done.stderr.splitlines() if line.startswith("msprobe: warning:")]
        if done.returncode != 0 or warned:
            last = (warned or (done.stderr or done.stdout).strip().splitlines() or ["no output"])[-1]
            return f"FAILED: {' '.join(command[:3])}: {last}"
    return "ok"


def install(env: Path, house: Path, constraints: Path, requirement: str) -> float:
    """A fresh venv at ENV with REQUIREMENT installed; the seconds pip took."""
    shutil.rmtree(env, ignore_errors=True)
    venv.create(env, with_pip=True)
    start = time.perf_counter()
    pip = _run([env / "bin/python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index",
                "--find-links", house, "-c", constraints, requirement])
    seconds = time.perf_counter() - start
    if pip.returncode != 0:
        _fail(f"pip install {requirement}", pip)
    return seconds


def measure(name: str, tool: Tool, work: Path, house: Path, constraints: Path, repeat: int, keep: bool) -> Row:
    """The fastest of REPEAT installs (the machine is shared: slower runs are other work), then size and check."""
    env = work / f"venv-{name.replace('[', '-').rstrip(']')}"
    seconds = min(install(env, house, constraints, tool.requirement) for _ in range(repeat))
    added = len(installed(env) - {"pip", "setuptools"})
    row = Row(name, seconds, du_mib(env), added, check(env, tool))
    if not keep:
        shutil.rmtree(env)
    return row


def empty_venv_mib(work: Path) -> float:
    env = work / "venv-empty"
    venv.create(env, with_pip=True)
    size = du_mib(env)
    shutil.rmtree(env)
    return size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", default=",".join(TOOLS),
                        help=f"comma-separated tools to measure, in this order (default: all: {','.join(TOOLS)})")
    parser.add_argument("--dist", type=Path, help="use the msprobe wheels in DIST instead of running `just wheels`")
    parser.add_argument("--work", type=Path, help="folder for the wheelhouse and the venvs (default: a temp folder)")
    parser.add_argument("--constraints", type=Path, default=REPO / "requirements-demo.txt",
                        help="pip constraints for the third-party packages (default: requirements-demo.txt)")
    parser.add_argument("--repeat", type=int, default=1, help="installs per tool; the fastest is printed (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep each venv (default: removed once measured)")
    options = parser.parse_args()
    names = [n.strip() for n in options.tools.split(",") if n.strip()]
    unknown = [n for n in names if n not in TOOLS]
    if unknown or not names:
        parser.error(f"--tools: unknown {unknown or 'empty list'}; known: {', '.join(TOOLS)}")
    work = options.work or Path(tempfile.mkdtemp(prefix="msprobe-footprint-"))
    work.mkdir(parents=True, exist_ok=True)
    dist = options.dist or work / "dist"
    if options.dist is None:
        build_wheels(dist)
    house = work / "wheelhouse"
    fill_wheelhouse(house, dist, options.constraints, [TOOLS[n].requirement for n in names])
    print(f"Python {sys.version.split()[0]}; an empty venv (pip, setuptools): {empty_venv_mib(work):.0f} MiB")
    print("| tool | install s | venv MiB | packages | check |\n|---|---:|---:|---:|---|", flush=True)
    rows = []
    for name in names:
        row = measure(name, TOOLS[name], work, house, options.constraints, max(1, options.repeat), options.keep)
        rows.append(row)
        print(f"| {row.tool} | {row.seconds:.1f} | {row.mib:.0f} | {row.packages} | {row.check} |", flush=True)
    if options.work is None and not options.keep:
        shutil.rmtree(work)
    return 1 if any(row.check != "ok" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
