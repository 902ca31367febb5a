"""One version for the suite (VERSION), every sibling pinned ==VERSION, no direct references (.ci/suite.py)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / ".ci" / "suite.py"


def _suite(*args: str, repo: Path = REPO) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, str(repo / ".ci" / "suite.py"), *args], capture_output=True, text=True,
                          timeout=60)


def _copy_tree(tmp: Path) -> Path:
    """A copy of the repository's packaging files (VERSION, .ci/suite.py, every pyproject.toml)."""
    for rel in ["VERSION", ".ci/suite.py", "shared/pyproject.toml",
                *(p.relative_to(REPO).as_posix() for p in REPO.glob("tools/*/pyproject.toml"))]:
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp / rel)
    return tmp


def test_the_checkout_follows_the_version_rules():
    result = _suite("check")
    assert result.returncode == 0, result.stderr
    version = (REPO / "VERSION").read_text().strip()
    assert _suite("version").stdout.strip() == version


def test_packages_are_listed_siblings_first_and_new_tools_are_picked_up():
    folders = _suite("packages").stdout.split()
    assert folders[0] == "./shared"
    assert folders.index("./tools/dump") < folders.index("./tools/overflow")
    on_disk = {"./" + p.parent.relative_to(REPO).as_posix() for p in REPO.glob("tools/*/pyproject.toml")}
    assert set(folders[1:]) == on_disk
    with_extras = _suite("packages", "--extras", "--editable").stdout
    assert "-e ./tools/dump[index,mindspore,pytorch]" in with_extras and "-e ./tools/ckpt_compare[demo]" in with_extras


def test_set_version_rewrites_every_pyproject_and_pin(tmp_path):
    repo = _copy_tree(tmp_path)
    assert _suite("set-version", "2.3.4", repo=repo).returncode == 0
    assert (repo / "VERSION").read_text().strip() == "2.3.4"
    overflow = (repo / "tools/overflow/pyproject.toml").read_text()
    assert 'version = "2.3.4"' in overflow and '"msprobe-dump==2.3.4"' in overflow and '"msprobe-shared==2.3.4"' in overflow
    assert _suite("check", repo=repo).returncode == 0
    bad = _suite("set-version", "2.3", repo=repo)
    assert bad.returncode == 2 and bad.stderr.strip() == "suite: error: version: expected X.Y.Z, got '2.3'"


def test_check_names_the_file_and_the_broken_pin(tmp_path):
    repo = _copy_tree(tmp_path)
    path = repo / "tools/overflow/pyproject.toml"
    path.write_text(path.read_text().replace('"msprobe-dump==', '"msprobe-dump>='))
    shared = repo / "shared/pyproject.toml"
    shared.write_text(shared.read_text().replace('version = "', 'version = "9', 1))
    result = _suite("check", repo=repo)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert any(str(path) in line and "'msprobe-dump>=" in line for line in lines), lines
    assert any(str(shared) in line and "field 'version'" in line for line in lines), lines


def test_wheel_metadata_has_no_direct_references():
    """What hatchling / setuptools would write as Requires-Dist: read straight from the pyprojects."""
    import tomllib

    for path in [REPO / "shared/pyproject.toml", *REPO.glob("tools/*/pyproject.toml")]:
        project = tomllib.loads(path.read_text())["project"]
        reqs = project.get("dependencies", []) + sum(project.get("optional-dependencies", {}).values(), [])
        assert not [r for r in reqs if "@" in r or "file:" in r], path
