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
