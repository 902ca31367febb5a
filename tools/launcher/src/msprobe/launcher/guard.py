"""Which host paths ``msprobe run`` mounts into a container, checked before the daemon is asked.

The output folder is mounted writable: never the root, a system folder or a folder every user shares
(a tool fed a hostile dump could then rewrite the host), nor your home folder itself (your shell's start
files, your keys). Nothing is mounted from the kernel's and the daemons' folders, and no socket: a bind-mounted
socket reaches past ``--network none`` (a read-only mount does not stop ``connect``; the docker socket is
root on the host).
"""
from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path
from typing import Iterable, Set

from msprobe.schema import MsprobeError

NEVER = ("/proc", "/sys", "/dev", "/run", "/var/run")
"""Neither input nor output, nor anything under them."""
SYSTEM = ("/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/var")
"""Never the output, nor anything under them (but a folder of your own under /var/tmp)."""
SHARED = ("/home", "/opt", "/srv", "/mnt", "/media", "/tmp", "/var/tmp", "/root")
"""Never the output themselves (a folder of your own under them is fine); /tmp and /var/tmp are not inputs
either (other programs keep their sockets there)."""
OWN_UNDER = ("/var/tmp",)
EXAMPLE = "give a folder of your own, e.g. -O ./msprobe_out"


def _forms(paths: Iterable[str]) -> Set[Path]:
    """Each path as written and as resolved (/var/run is a link to /run on most systems)."""
    out: Set[Path] = set()
    for p in paths:
        out.add(Path(p))
        out.add(Path(os.path.realpath(p)))
    return out


def _under(path: Path, folders: Set[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def _homes() -> Set[Path]:
    """The caller's home folder as $HOME says and as the password database says."""
    homes = {os.path.expanduser("~")}
    try:
        homes.add(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:  # a uid without an entry (a container's user): $HOME only
        pass
    return _forms(h for h in homes if h and h != "/")


def check_output(path: Path, given: str) -> None:
    """Refuse ``path`` (absolute, resolved) as the writable output folder, in one line."""
    why = ""
    homes = _homes()
    if path == Path(path.anchor):
        why = "the root directory"
    elif _under(path, _forms(NEVER)):
        why = "a system folder"
    elif path in homes:
        why = "your home folder itself"
    elif any(path in home.parents for home in homes):
        why = "a folder holding your home folder"
    elif path in _forms(SHARED):
        why = "a folder all users share"
    elif _under(path, _forms(SYSTEM)) and not _under_own(path):
        why = "a system folder"
    if why:
        raise MsprobeError(f"msprobe run: refusing {given} as the writable output folder (-O): {path} is {why}; "
                           f"{EXAMPLE}")


def _under_own(path: Path) -> bool:
    """A folder below /var/tmp (not /var/tmp itself): a user's own, like one under /tmp."""
    return any(f in path.parents for f in _forms(OWN_UNDER))


def _is_socket(path: Path) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:  # not there (a path to be written) or not readable: the caller says which
        return False


def check_input(path: Path, given: str) -> None:
    """Refuse ``path`` (absolute; resolved once it is known to exist) as a read-only mount, in one line. Asked
    first of the path as written: under /proc even a stat can fail."""
    why = ""
    if path == Path(path.anchor):
        why = "it is the root directory"
    elif _under(path, _forms(NEVER)):
        why = f"{path} is the kernel's or a daemon's (under {', '.join(NEVER)} nothing is mounted)"
    elif path in _forms(("/tmp", "/var/tmp")):
        why = f"{path} holds other programs' sockets"
    elif _is_socket(path):
        why = f"{path} is a socket (it would reach past --network none)"
    if why:
        raise MsprobeError(f"msprobe run: refusing to mount {given}: {why}")
