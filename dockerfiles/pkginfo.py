"""Resolve what an image of one tool needs: the repo's local packages (in install order) and third-party requirements.

Usage: python3 dockerfiles/pkginfo.py REPO_ROOT TOOL_DIR...
Prints lines ``local <dir relative to repo>`` (dependencies first, ``shared`` always first) and
``req <requirement>`` for third-party requirements. Local requirements are those whose name starts with
``msprobe-`` (they are written as ``name @ {root:...}`` direct references and are installed with --no-deps).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Dict, List

try:
    import tomllib  # Python 3.11+
except ImportError:  # pragma: no cover - Python 3.9/3.10
    import tomli as tomllib  # type: ignore[no-redef]

LOCAL_DIRS: Dict[str, str] = {
    "msprobe-shared": "shared",
    "msprobe-dump": "tools/dump",
    "msprobe-overflow": "tools/overflow",
    "msprobe-config-check": "tools/config_check",
    "msprobe-ckpt-compare": "tools/ckpt_compare",
    "msprobe-op-generate": "tools/op_generate",
}


def _name(req: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    if not match:
        raise ValueError(f"cannot parse requirement {req!r}")
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def resolve(root: Path, dirs: List[str]) -> "tuple[list[str], list[str]]":
    order: List[str] = []
    reqs: List[str] = []

    def visit(rel: str) -> None:
        if rel in order:
            return
        project = tomllib.loads((root / rel / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        for req in project.get("dependencies", []):
            name = _name(req)
            if name.startswith("msprobe-"):
                if name not in LOCAL_DIRS:
                    raise ValueError(f"{rel}: unknown local package {name}")
                visit(LOCAL_DIRS[name])
            elif req not in reqs:
                reqs.append(req)
        order.append(rel)

    visit("shared")
    for rel in dirs:
        visit(rel)
    return order, reqs


def main(argv: List[str]) -> int:
    if len(argv) < 1:
        print("usage: pkginfo.py REPO_ROOT [PACKAGE_DIR...]", file=sys.stderr)
        return 2
    try:
        order, reqs = resolve(Path(argv[0]), argv[1:])
    except (OSError, KeyError, ValueError) as exc:
        print(f"pkginfo: {exc}", file=sys.stderr)
        return 1
    for rel in order:
        print(f"local {rel}")
    for req in reqs:
        print(f"req {req}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
