"""Who the container runs as, and who owns what it writes.

A caller other than root: the container runs as the caller's uid:gid, so what it writes is the caller's
as it is written. Root: never root in the container (a root process there owns the files it writes on the
host and holds capabilities a hostile input could use), but the image's own user (1000:1000 in the suite's
images). The output folder is lent to that user for the run where it cannot write it (its owner is set back
after), and what that user made or changed there during the run is handed to the caller afterwards, even
when the run fails. Folders below the output folder are not lent: a tool writing into one it cannot write
says so itself.
"""
from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path
from typing import Any, Optional, Tuple

from msprobe.schema import MsprobeError


SUITE_USER = (1000, 1000)
"""The user of the images ``msprobe image build`` makes (tool.Dockerfile: USER 1000:1000)."""
CTIME_SLACK_S = 2.0
"""Entries changed this long before the run began count as the run's (file systems keep coarse times)."""


def image_user(image: Any) -> Tuple[int, int]:
    """The numeric non-root ``uid:gid`` the image names as its user; the suite's user where it names none,
    root, or a name (which only the image's /etc/passwd could turn into a number)."""
    found = re.fullmatch(r"(\d+)(?::(\d+))?", str((image.attrs.get("Config") or {}).get("User") or ""))
    if not found or int(found.group(1)) == 0:
        return SUITE_USER
    uid = int(found.group(1))
    return uid, int(found.group(2)) if found.group(2) is not None else uid


def _writable_by(path: Path, uid: int, gid: int) -> bool:
    info = path.stat()
    need = stat.S_IWUSR | stat.S_IXUSR
    if info.st_uid == uid:
        return info.st_mode & need == need
    if info.st_gid == gid:
        return info.st_mode & (need >> 3) == need >> 3
    return info.st_mode & (need >> 6) == need >> 6


class Handover:
    """For a root caller: the output folder lent to the image's user, the run's files given back."""

    def __init__(self, output: Path, created: bool, user: Tuple[int, int]) -> None:
        self.output, self.created, self.user = output, created, user
        self.started = time.time()
        self.owner: Optional[Tuple[int, int]] = None
        """Who owned the output folder before it was lent (None: not lent)."""

    def before(self) -> None:
        uid, gid = self.user
        if self.created or not _writable_by(self.output, uid, gid):
            info = self.output.stat()
            self.owner = (os.getuid(), os.getgid()) if self.created else (info.st_uid, info.st_gid)
            try:
                os.chown(self.output, uid, gid)
            except OSError as exc:  # (root squashed on a network file system, a read-only one)
                self.owner = None
                raise MsprobeError(f"msprobe run: {self.output}: cannot lend it to the image's user {uid}:{gid}: "
                                   f"{exc.strerror or exc}; choose another -O") from None

    def after(self) -> None:
        """Give the caller what the image's user made or changed under the output folder (links themselves,
        never followed)."""
        uid = self.user[0]
        since = self.started - CTIME_SLACK_S
        mine = (os.getuid(), os.getgid())
        for folder, dirs, files in os.walk(self.output):
            for name in dirs + files:
                path = os.path.join(folder, name)
                info = os.lstat(path)
                if info.st_uid == uid and info.st_ctime >= since:
                    os.lchown(path, *mine)
        if self.owner is not None:
            os.chown(self.output, *self.owner)
