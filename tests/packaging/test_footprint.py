"""bench/install_footprint.py on its smallest case: `msprobe-shared` alone, from a wheel built here (no timing asserted)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "install_footprint.py"


def _bench(*args, cwd: Path = REPO) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, str(BENCH), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=900)


def test_shared_alone_is_measured_and_its_command_runs(tmp_path):
    dist = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist),
                            str(REPO / "shared")], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    work = tmp_path / "work"
    result = _bench("--tools", "shared", "--dist", dist, "--work", work, "--keep")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    lines = result.stdout.splitlines()
    empty = float(lines[0].split(": ")[-1].split()[0])
    assert lines[1:3] == ["| tool | install s | venv MiB | packages | check |", "|---|---:|---:|---:|---|"]
    tool, seconds, mib, packages, check = (cell.strip() for cell in lines[3].strip("|").split("|"))
    assert (tool, check) == ("shared", "ok") and float(seconds) > 0
    # what the venv holds: msprobe-shared, typer and what typer pulls in; no framework, no numpy
    kept = work / "venv-shared"
    listed = subprocess.run([str(kept / "bin/python"), "-m", "pip", "list", "--format", "freeze"],
                            capture_output=True, text=True).stdout.lower()
    names = {line.split("==")[0] for line in listed.splitlines()}
    assert {"msprobe-shared", "typer"} <= names and not names & {"torch", "numpy", "mindspore"}, names
    assert int(packages) == len(names - {"pip", "setuptools"})
    assert float(mib) > empty and abs(float(mib) - _du_mib(kept)) < 1
    assert (kept / "bin/msprobe").exists()


def test_an_unknown_tool_is_one_line_naming_the_known_ones():
    result = _bench("--tools", "shared,nope")
    assert result.returncode == 2 and result.stderr.strip().splitlines()[-1].startswith(
        "install_footprint.py: error: --tools: unknown ['nope']; known: shared, dump, "), result.stderr


def _du_mib(path: Path) -> float:
    return int(subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True).stdout.split()[0]) / 1024
