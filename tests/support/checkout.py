"""A copy of the checkout as a clone of it would hold it, made without git clone (uncommitted work included)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def copy_of_the_tree(dest: Path, *paths: str) -> Path:
    """Tracked files and new ones git does not ignore (no build/, no egg-info), of ``paths`` (folders of the
    repository) or of all of it, copied to the same places under ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", *paths],
                            cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():  # (a deleted file still listed, or a submodule, is not copied)
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


BUILD_OUTPUTS = ("build", "dist", "__pycache__", ".venv")
"""Ignored folders that builds and interpreters write into the checkout (the packaging tests build wheels
there meanwhile): not what a command of ours left behind."""


def untracked(ignored: bool = False) -> set:
    """Files of the checkout git does not track and (unless ``ignored``) does not ignore: what a command left
    for `git status` to show; ``ignored`` adds the ignored ones, build outputs (``BUILD_OUTPUTS``, egg-info)
    left out. Tests that watch the checkout this way carry the ``checkout`` marker, which puts them on one
    xdist worker (tests/conftest.py): one writing the checkout beside another would be seen."""
    listed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"] + (["--ignored"] if ignored
                            else []), cwd=REPO, capture_output=True, text=True, check=True).stdout
    kinds = ("??", "!!") if ignored else ("??",)
    return {line[3:] for line in listed.splitlines() if line[:2] in kinds and not _built(line[3:])}


def _built(path: str) -> bool:
    return any(part in BUILD_OUTPUTS or part.endswith(".egg-info") for part in Path(path).parts)
