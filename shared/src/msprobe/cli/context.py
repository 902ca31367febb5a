"""State the root command hands to subcommands (the global ``-f/--framework``)."""
from __future__ import annotations

from typing import Optional

import typer


def framework(ctx: typer.Context) -> Optional[str]:
    """The ``-f/--framework`` given before the subcommand, or None (msprobe 26.x style)."""
    root = ctx.find_root()
    return (root.obj or {}).get("framework")
