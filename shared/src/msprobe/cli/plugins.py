"""How tools extend the command and the demo, through entry points.

``msprobe.commands``: ``name = "pkg.module:register"`` where ``register(app: typer.Typer)`` adds one command.
``msprobe.demo``: ``name = "pkg.module:run"`` where ``run(ctx: DemoContext)`` runs one part of the demo;
an integer attribute ``order`` on the function places it (lower first).
``msprobe.config_check``: ``pack`` / ``compare_packs`` / ``compare_checkpoints`` handlers of the
``config_check`` command, which two tools share.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Dict

from ..schema.plugins import entry_points

# Commands documented by msprobe that come from tools of this suite: name → distribution to install.
KNOWN_COMMANDS = {
    "overflow_check": "msprobe-overflow",
    "op_generate": "msprobe-op-generate",
    "compare": "msprobe-compare",
}
CONFIG_CHECK_HANDLERS = {
    "pack": "msprobe-config-check",
    "compare_packs": "msprobe-config-check",
    "compare_checkpoints": "msprobe-ckpt-compare",
}


def load_group(group: str) -> Dict[str, Callable[..., Any]]:
    """name → loaded object; a tool that fails to import is reported on stderr and skipped."""
    out: Dict[str, Callable[..., Any]] = {}
    for point in entry_points(group):
        if point.name in out:
            continue
        try:
            out[point.name] = point.load()
        except Exception as exc:  # a broken tool must not take the whole command down
            print(f"msprobe: warning: cannot load {group} '{point.name}' from {point.value}: {exc}", file=sys.stderr)
    return out


def install_hint(distribution: str) -> str:
    """What to run, by package name: users who installed from wheels have no checkout to point into."""
    return f"pip install {distribution}"
