"""The words the formats and commands share, defined once: frameworks, tasks, levels.

config.json, dump.json and the command line check what they are given against these tuples; code that
branches on one of them names it with the ``Literal`` type beside it.
"""
from __future__ import annotations

from typing import Literal, Tuple

Framework = Literal["pytorch", "mindspore"]
FRAMEWORKS: Tuple[str, ...] = ("pytorch", "mindspore")
"""What ``-f/--framework``, config_check and ckpt_compare accept (an MSAdapter run is a ``mindspore`` run)."""

DUMP_FRAMEWORKS: Tuple[str, ...] = FRAMEWORKS + ("mindtorch",)
"""What a dump.json's ``framework`` may say: msprobe writes ``mindtorch`` for MindTorch / MSAdapter runs."""

Task = Literal["statistics", "tensor", "overflow_check", "flight_recorder"]
TASKS: Tuple[str, ...] = ("statistics", "tensor", "overflow_check", "flight_recorder")
"""The tasks of config.json and dump.json (other tasks come from tools through entry points)."""

Level = Literal["L0", "L1", "mix"]
LEVELS: Tuple[str, ...] = ("L0", "L1", "mix")
"""What config.json's ``level`` accepts for a dump."""
MODULE_LEVELS: Tuple[str, ...] = ("L0", "mix")
"""The levels that record modules (cells); ``API_LEVELS`` record APIs (``mix``: both)."""
API_LEVELS: Tuple[str, ...] = ("L1", "mix")

DUMP_LEVELS: Tuple[str, ...] = LEVELS + ("L2",)
"""What a dump.json's ``level`` may say: msprobe's L2 is its kernel-level dump, read but never written here."""
