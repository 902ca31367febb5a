"""One live process per rank folder of a dump_path: two trainings started at once on one ``dump_path`` would
mix their steps in one tree (issue 40).

A process claims ``(dump_path, rank folder name)`` before it writes there: an advisory lock (``flock``) on a
lock file naming its pid, kept for the life of the process. The kernel drops the lock when the process ends,
so the lock of a dead process (killed, crashed) is simply taken over; other ranks of the same run claim other
names, and a later run finds the lock free. The lock files live under the system's temporary folder, keyed by
the dump folder's real path, never in the dump tree that readers walk.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from typing import Dict, Optional

from msprobe.schema import MsprobeError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks here; runs are not kept apart there
    fcntl = None

LOCK_DIR_NAME = "msprobe-dump-locks"
# The locks this process holds: path -> open descriptor. Process-wide on purpose: a flock belongs to the
# process (its open file), and a second debugger of the same process must find its own lock, not fight it.
_HELD: Dict[str, int] = {}


def lock_file(dump_path: str, rank_name: str) -> str:
    """Where the lock of ``dump_path``'s rank folder ``rank_name`` (``rank``, ``rank3``) lives."""
    key = hashlib.sha256(os.path.realpath(dump_path).encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return os.path.join(tempfile.gettempdir(), LOCK_DIR_NAME, f"{key}.{rank_name}.lock")


def claim(dump_path: str, rank_name: str, field: str) -> None:
    """Hold the rank folder for this process; MsprobeError (one line, ``field`` first) when a live process
    holds it. Where no lock can be taken (no flock, an unwritable temporary folder) the dump goes on."""
    path = lock_file(dump_path, rank_name)
    if fcntl is None or path in _HELD:
        return
    fd = _open(path)
    if fd is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = _holder(fd)
        os.close(fd)
        who = f"process {holder}" if holder else "another process"
        raise MsprobeError(f"{field}: {os.path.join(os.path.abspath(dump_path), '<step>', rank_name)} is being "
                           f"written by {who}, which is still running; two runs are never mixed in one dump: "
                           "choose another dump_path") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    _HELD[path] = fd


def _open(path: str) -> Optional[int]:
    folder = os.path.dirname(path)
    try:
        if not os.path.isdir(folder):
            os.makedirs(folder, exist_ok=True)
            os.chmod(folder, 0o1777)  # (shared by every user, like /tmp itself)
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        return None


def _holder(fd: int) -> str:
    """The pid the lock file names (empty while its holder is still writing it)."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return text if text.isdigit() else ""


def release_all() -> None:
    """Drop every lock of this process (tests; a process's locks otherwise end with it)."""
    for path in list(_HELD):
        os.close(_HELD.pop(path))
