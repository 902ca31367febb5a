"""Find the iteration directory a user path means, and what kind of checkpoint it holds."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Tuple

from msprobe.schema.errors import MsprobeError

TRACKER = "latest_checkpointed_iteration.txt"
RANK_DIR = re.compile(r"^mp_rank_(\d{2})(?:_(\d{3}))?(?:_(\d{3}))?$")


def iteration_dir(path: Path) -> Tuple[Path, str]:
    """(directory holding the rank folders or the distributed checkpoint, 'megatron' | 'torch_dist')."""
    path = Path(path)
    if not path.is_dir():
        raise MsprobeError(f"{path}: not a checkpoint directory")
    if RANK_DIR.match(path.name):
        raise MsprobeError(f"{path}: is a single rank's folder; give the checkpoint or iter_XXXXXXX directory")
    tracker = path / TRACKER
    if tracker.is_file():
        text = tracker.read_text(errors="replace").strip()
        if text == "release":
            chosen = path / "release"
        elif text.isdigit():
            chosen = path / f"iter_{int(text):07d}"
        else:
            raise MsprobeError(f"{tracker}: expected an iteration number or 'release', got {text[:40]!r}")
        if not chosen.is_dir():
            raise MsprobeError(f"{tracker}: names {chosen.name}, which does not exist in {path}")
        path = chosen
    kind = _kind(path)
    if kind is None:
        raise MsprobeError(f"{path}: no {TRACKER}, mp_rank_* folders or distributed checkpoint (.metadata) found")
    return path, kind


def _kind(path: Path):
    if (path / ".metadata").is_file():
        return "torch_dist"
    if any(RANK_DIR.match(p.name) for p in path.iterdir() if p.is_dir()):
        return "megatron"
    return None
