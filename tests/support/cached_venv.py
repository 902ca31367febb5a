"""Virtual environments cached under ``${MSPROBE_CACHE:-~/.cache/msprobe}``, shared by every clone on the machine.

Several clones of the suite share one machine and one cache, and a clone may be deleted while its cache
entries live on. An entry is therefore valid only for what it records in its stamp (``.msprobe-stamp.json``):

- ``recipe``: what was installed (versions, package lists); a different recipe rebuilds the entry;
- ``depends_on``: every path outside the entry that it reads at run time (a clone's site-packages named by a
  ``.pth`` line); an entry whose dependency is gone is stale and is rebuilt, never used broken.

An entry that depends on a clone's files is keyed by those paths (:func:`keyed_dir`), so two live clones never
rewrite each other's entries; :func:`prune_stale` removes siblings whose dependencies are gone. An entry with no
``depends_on`` is self-contained and serves every clone.

Use::

    root = ensure_venv(keyed_dir(cache_dir() / "upstream", "mindstudio-probe-26.2.0", [site]),
                       recipe={"mindstudio-probe": "26.2.0"}, depends_on=[site], build=install_into)
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sysconfig
import venv
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence

from filelock import FileLock, Timeout

STAMP = ".msprobe-stamp.json"


def suite_site_packages() -> Path:
    """The site-packages of the interpreter running the suite (the clone's own venv)."""
    return Path(sysconfig.get_paths()["purelib"]).resolve()


def keyed_dir(parent: Path, name: str, depends_on: Sequence[Path]) -> Path:
    """``parent/name-<hash of depends_on>``: one entry per set of outside paths it reads."""
    digest = hashlib.sha256("\n".join(str(Path(p).resolve()) for p in depends_on).encode()).hexdigest()[:12]
    return parent / f"{name}-{digest}"


def _wanted(recipe: Dict[str, object], depends_on: Sequence[Path]) -> Dict[str, object]:
    return {"recipe": recipe, "depends_on": [str(Path(p).resolve()) for p in depends_on]}


def read_stamp(root: Path) -> Optional[Dict[str, object]]:
    try:
        stamp = json.loads((root / STAMP).read_text())
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def is_valid(root: Path, recipe: Dict[str, object], depends_on: Sequence[Path]) -> bool:
    """The entry was built to this recipe, is complete, and everything it reads outside itself exists."""
    stamp = read_stamp(root)
    if stamp != _wanted(recipe, depends_on):
        return False
    return (root / "bin" / "python").exists() and all(Path(p).exists() for p in stamp["depends_on"])


def ensure_venv(root: Path, recipe: Dict[str, object], depends_on: Sequence[Path],
                build: Callable[[Path], None], timeout: float = 3600) -> Path:
    """The venv at ``root`` built by ``build(root)`` (which gets a fresh venv with pip), unless a valid one is
    there. Built under a file lock, so parallel test processes build it once; the stamp is written last."""
    root.parent.mkdir(parents=True, exist_ok=True)
    if is_valid(root, recipe, depends_on):
        return root
    with FileLock(str(root) + ".lock", timeout=timeout):
        if not is_valid(root, recipe, depends_on):
            (root / STAMP).unlink(missing_ok=True)
            venv.EnvBuilder(clear=True, with_pip=True, symlinks=True).create(root)
            build(root)
            (root / STAMP).write_text(json.dumps(_wanted(recipe, depends_on), indent=1) + "\n")
    return root


def prune_stale(parent: Path) -> None:
    """Remove the entries under ``parent`` that read a path which no longer exists (their clone is gone).
    An entry another process holds the lock of is left alone; entries without a stamp are not ours to judge."""
    if not parent.is_dir():
        return
    for root in parent.iterdir():
        stamp = read_stamp(root) if root.is_dir() else None
        if not stamp or all(Path(p).exists() for p in stamp.get("depends_on", [])):
            continue
        try:
            with FileLock(str(root) + ".lock", timeout=0):
                shutil.rmtree(root, ignore_errors=True)
        except Timeout:
            continue
