"""The suite's distributions and their one version (the file VERSION at the repository root).

    python3 .ci/suite.py packages [--extras] [--editable]
                                               the package folders, dependencies first (shared first); --extras
                                               adds every optional-dependency group (./tools/dump[mindspore,pytorch]),
                                               --editable puts -e before each
    python3 .ci/suite.py check                 every pyproject has version VERSION and pins its siblings ==VERSION
    python3 .ci/suite.py set-version X.Y.Z     write VERSION and every pyproject's version and sibling pins

Any ``shared/`` or ``tools/*/`` folder with a pyproject.toml is a distribution of the suite, so a new tool is
picked up by ``just setup``, ``just wheels`` and the images without editing a list.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Dict, List

try:
    import tomllib
except ImportError:  # Python 3.9/3.10 hosts
    import tomli as tomllib  # type: ignore[no-redef]

REPO = Path(__file__).resolve().parents[1]
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+$")
REQ_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


class SuiteError(Exception):
    """A pyproject or VERSION that breaks the suite's packaging rules."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_version(repo: Path = REPO) -> str:
    value = (repo / "VERSION").read_text(encoding="utf-8").strip()
    if not VERSION_RE.match(value):
        raise SuiteError(f"{repo / 'VERSION'}: expected X.Y.Z, got {value!r}")
    return value


def projects(repo: Path = REPO) -> Dict[str, Path]:
    """Distribution name -> folder, for shared/ and every tools/*/ with a pyproject.toml."""
    found: Dict[str, Path] = {}
    for path in [repo / "shared" / "pyproject.toml", *sorted(repo.glob("tools/*/pyproject.toml"))]:
        if path.is_file():
            found[_norm(_load(path)["name"])] = path.parent
    return found


def _load(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise SuiteError(f"{path}: cannot read [project]: {exc}") from exc


def _siblings(project: dict, names: Dict[str, Path]) -> List[str]:
    reqs = project.get("dependencies", [])
    return [_norm(m.group(1)) for m in map(REQ_NAME.match, reqs) if m and _norm(m.group(1)) in names]


def ordered(repo: Path = REPO) -> List[Path]:
    """Package folders with each one's siblings before it."""
    names = projects(repo)
    order: List[str] = []

    def visit(name: str, path: List[str]) -> None:
        if name in order:
            return
        if name in path:
            raise SuiteError(f"dependency cycle: {' -> '.join(path + [name])}")
        for dep in _siblings(_load(names[name] / "pyproject.toml"), names):
            visit(dep, path + [name])
        order.append(name)

    for name in names:
        visit(name, [])
    return [names[name] for name in order]


def problems(repo: Path = REPO) -> List[str]:
    version = read_version(repo)
    names = projects(repo)
    found: List[str] = []
    for folder in names.values():
        path = folder / "pyproject.toml"
        project = _load(path)
        if project.get("version") != version:
            found.append(f"{path}: field 'version': expected {version} (VERSION), got {project.get('version')}")
        groups = [project.get("dependencies", [])] + list(project.get("optional-dependencies", {}).values())
        for req in (r for group in groups for r in group):
            match = REQ_NAME.match(req)
            if "@" in req:
                found.append(f"{path}: dependency {req!r}: direct references cannot be published")
            elif match and _norm(match.group(1)) in names and req.replace(" ", "")[len(match.group(1)):] != f"=={version}":
                found.append(f"{path}: dependency {req!r}: expected {match.group(1)}=={version}")
    return found


def set_version(version: str, repo: Path = REPO) -> None:
    if not VERSION_RE.match(version):
        raise SuiteError(f"version: expected X.Y.Z, got {version!r}")
    names = projects(repo)
    sibling = re.compile(r'"(%s)\s*==\s*[^"]*"' % "|".join(re.escape(n) for n in names))
    for folder in names.values():
        path = folder / "pyproject.toml"
        text = re.sub(r'(?m)^version = "[^"]*"', f'version = "{version}"', path.read_text(encoding="utf-8"), count=1)
        path.write_text(sibling.sub(lambda m: f'"{m.group(1)}=={version}"', text), encoding="utf-8")
    (repo / "VERSION").write_text(version + "\n", encoding="utf-8")


def _spec(folder: Path, repo: Path, extras: bool) -> str:
    groups = sorted(_load(folder / "pyproject.toml").get("optional-dependencies", {})) if extras else []
    rel = "./" + folder.relative_to(repo).as_posix()
    return f"{rel}[{','.join(groups)}]" if groups else rel


def main(argv: List[str]) -> int:
    try:
        if argv[:1] == ["packages"]:
            prefix = "-e " if "--editable" in argv[1:] else ""
            print(" ".join(prefix + _spec(f, REPO, "--extras" in argv[1:]) for f in ordered()))
        elif argv == ["check"]:
            found = problems()
            for line in found:
                print(f"suite: error: {line}", file=sys.stderr)
            return 1 if found else 0
        elif len(argv) == 2 and argv[0] == "set-version":
            set_version(argv[1])
            found = problems()
            if found:
                raise SuiteError(found[0])
        elif argv == ["version"]:
            print(read_version())
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
    except (SuiteError, OSError) as exc:
        print(f"suite: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
