"""Entry points of the installed tools, found below the command line: the dump engine finds the tasks other
tools provide (``msprobe.dump.tasks``) without importing the ``msprobe`` command."""
from __future__ import annotations

from importlib import metadata
from typing import List


def entry_points(group: str) -> List[metadata.EntryPoint]:
    """Every installed entry point of ``group``."""
    found = metadata.entry_points()
    if hasattr(found, "select"):
        return list(found.select(group=group))
    return list(found.get(group, []))  # Python 3.9
