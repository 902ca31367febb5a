"""``msprobe demo``: every installed tool on a built-in tiny model, end to end, with no user files.

Each tool contributes one part through the ``msprobe.demo`` entry point group; a part gets the
output folder and what earlier parts produced (``ctx.results``), and says what it did.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional

import typer

from ..schema.errors import MsprobeError
from .context import framework as framework_of
from .plugins import load_group

DEMO_MARKER = ".msprobe-demo"


@dataclass
class DemoContext:
    out_dir: Path
    """Folder every part writes under (its own subfolder)."""
    framework: Optional[str]
    """``-f`` given to the command: run only that framework's parts; None = all installed."""
    results: Dict[str, Any] = field(default_factory=dict)
    """What each finished part produced, by part name."""

    def say(self, line: str) -> None:
        typer.echo(f"  {line}")


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    ctx: typer.Context,
    out: Path = typer.Option(Path("msprobe_demo"), "-o", "--output", help="Folder for the demo's outputs."),
) -> None:
    """Train a tiny built-in model for a few steps with every installed tool and write their outputs."""
    _fresh_dir(out)
    parts = sorted(load_group("msprobe.demo").items(), key=lambda kv: (getattr(kv[1], "order", 100), kv[0]))
    if not parts:
        raise MsprobeError("no tool is installed to demonstrate: install ./tools/dump (and the other tools)")
    context = DemoContext(out_dir=out.resolve(), framework=framework_of(ctx))
    typer.echo(f"msprobe demo: writing under {context.out_dir}")
    failed = []
    for name, run in parts:
        typer.echo(f"[{name}]")
        started = time.perf_counter()
        try:
            context.results[name] = run(context)
        except MsprobeError as exc:
            failed.append(name)
            typer.echo(f"  failed: {exc}", err=True)
            continue
        typer.echo(f"  done in {time.perf_counter() - started:.1f}s")
    typer.echo(f"summary: {len(parts) - len(failed)}/{len(parts)} parts ran; outputs in {context.out_dir}")
    if failed:
        raise MsprobeError(f"demo parts failed: {', '.join(failed)}")


def _fresh_dir(out: Path) -> None:
    """Reuse a folder only if an earlier demo made it; never delete a user's folder."""
    if out.exists():
        if not (out / DEMO_MARKER).exists() and (not out.is_dir() or any(out.iterdir())):
            raise MsprobeError(f"{out}: exists and was not made by msprobe demo; choose another -o")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / DEMO_MARKER).write_text("made by msprobe demo\n")
