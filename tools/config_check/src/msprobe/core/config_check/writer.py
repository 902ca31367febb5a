"""Crash-safe, multi-rank pack writing.

Each rank writes its entries as plain files into a staging folder beside the zip
(``.<zip name>.parts/<run>/``), each file atomically. ``assemble`` rebuilds the zip from the whole
staging folder under a file lock, so ranks never append to one zip at the same time, a re-run
replaces the pack instead of adding duplicate entries, and the last rank to finish leaves the
complete pack and removes the staging folder. ``<run>`` is the launcher's process id, shared by
the ranks one torchrun/msrun starts on a node.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Dict, Iterator

from . import formats

try:
    import fcntl
except ImportError:  # Windows: single-process packs only
    fcntl = None  # type: ignore[assignment]

_DONE = ".done"


def run_key() -> str:
    launched = any(name in os.environ for name in ("TORCHELASTIC_RUN_ID", "RANK", "RANK_ID", "MS_ROLE"))
    return f"launcher{os.getppid()}" if launched else f"process{os.getpid()}"


class PackWriter:
    """Entries of one rank, staged on disk until ``assemble`` builds the zip."""

    def __init__(self, zip_path: Path, key: str = "") -> None:
        self.zip_path = Path(zip_path).resolve()
        self.root = self.zip_path.parent / f".{self.zip_path.name}.parts"
        self.stage = self.root / (key or run_key())
        self.stage.mkdir(parents=True, exist_ok=True)

    def put(self, entry: str, data: bytes) -> None:
        target = self.stage / entry
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=".tmp", dir=target.parent)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(tmp, target)

    def assemble(self, rank: int, world_size: int, finished: bool) -> bool:
        """Rebuild the zip from every staged entry; True when this was the last rank to finish."""
        with self._locked():
            if not self.stage.is_dir():
                return False
            if finished:
                done = self.stage / _DONE
                done.mkdir(exist_ok=True)
                (done / f"rank{rank}").touch()
            formats.write_zip(self.zip_path, dict(self._entries()))
            last = finished and len(list((self.stage / _DONE).iterdir())) >= max(world_size, 1)
            if last:
                shutil.rmtree(self.stage, ignore_errors=True)
        if last:
            with contextlib.suppress(OSError):
                (self.root / "lock").unlink()
                self.root.rmdir()
        return last

    def _entries(self) -> Iterator[tuple]:
        for folder, dirs, files in os.walk(self.stage):
            dirs[:] = [d for d in dirs if d != _DONE]
            for name in files:
                if name.startswith(".tmp"):
                    continue
                path = Path(folder) / name
                yield path.relative_to(self.stage).as_posix(), path.read_bytes()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "lock", "a+") as lock:
            if fcntl is not None:
                fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(lock, fcntl.LOCK_UN)


def staged(writer: PackWriter) -> Dict[str, bytes]:
    """What the writer holds now (for tests and the demo)."""
    return dict(writer._entries())
