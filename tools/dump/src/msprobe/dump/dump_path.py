"""``dump_path`` checked when the debugger is made: a path the run cannot write, or one that already holds
an earlier run's dump, stops the script with one line before training starts (not inside the model's
forward, and never two runs' steps mixed in one tree).

An earlier run's dump is one whose rank folders were last changed before this process started: the other
ranks of this run (other processes, started together by the launcher) and earlier debuggers of this
process write after it started.

Two processes of the same moment writing one rank folder are kept apart by ``rank_lock.py``."""
from __future__ import annotations

import os
import time
from typing import Optional

from msprobe.schema import DebuggerConfig, MsprobeError, SchemaError
from msprobe.schema.jsonio import path_kind
from msprobe.schema.tree import find_rank_dirs, rank_dir_name

from .rank_lock import claim

_MAX_DEPTH = 256
"""Parents walked up to find the folder a missing dump_path will be made in."""
_IMPORTED = time.time()


def process_start() -> float:
    """When this process started, never later than it did (Linux: its start in clock ticks after boot,
    ``/proc/self/stat`` field 22, against the boot clock now; elsewhere: when this module was imported)."""
    try:
        with open("/proc/self/stat") as handle:
            ticks = int(handle.read().rsplit(")", 1)[1].split()[19])
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
        return time.time() - age
    except (OSError, ValueError, IndexError, AttributeError):
        return _IMPORTED


def check_dump_path(config: DebuggerConfig) -> None:
    """MsprobeError unless ``config.dump_path`` can be made or written and holds no earlier run's dump."""
    path = os.path.abspath(config.dump_path)
    field = dump_path_field(config)
    try:
        existing = _nearest_existing(path, field)
        if not os.access(existing, os.W_OK | os.X_OK):
            raise MsprobeError(f"{field}: '{existing}' is not writable by this user: choose another dump_path")
        if existing == path:
            _refuse_earlier_dump(path, field)
    except SchemaError as exc:  # a folder on the way cannot be looked at
        raise MsprobeError(f"{field}: {exc}") from None


def dump_path_field(config: DebuggerConfig) -> str:
    """How a refusal names the setting: ``config.json: field 'dump_path'``."""
    return f"{config.source or 'PrecisionDebugger'}: field 'dump_path'"


def claim_known_rank(config: DebuggerConfig, rank: Optional[int]) -> None:
    """When the debugger is made and its rank is known already (``torch.distributed`` initialised, or the
    launcher's ``RANK``), a rank folder held by a live process is refused now, like an earlier run's dump:
    before training starts. Otherwise the first entry of the run claims it (``DumpEngine``)."""
    if rank is None:
        launched = os.environ.get("RANK", "")
        if not launched.isdigit():
            return  # (spawned processes learn their rank later: claiming "rank" now would refuse a sibling)
        rank = int(launched)
    claim(config.dump_path, rank_dir_name(rank), dump_path_field(config))


def _nearest_existing(path: str, field: str) -> str:
    """``path`` when it is a folder, else its nearest existing parent (a folder, or MsprobeError)."""
    current = path
    for _ in range(_MAX_DEPTH):
        kind = path_kind(current)
        if kind == "directory":
            return current
        if kind != "missing":
            what = "it" if current == path else f"'{current}'"
            raise MsprobeError(f"{field}: '{path}' cannot be a dump folder: {what} is a {kind}")
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    raise MsprobeError(f"{field}: '{path}': no existing parent folder found")


def _refuse_earlier_dump(path: str, field: str) -> None:
    try:
        ranks = find_rank_dirs(path)
    except SchemaError:  # no dump there (other files are the user's business)
        return
    started = process_start()
    earlier = [rank for rank in ranks if os.stat(rank.path).st_mtime < started]
    if earlier:
        found = os.path.relpath(earlier[0].path, path)
        raise MsprobeError(f"{field}: '{path}' already holds the dump of an earlier run ({found}, {len(earlier)} "
                           "rank folder(s)); runs are never mixed: remove it or choose another dump_path")
