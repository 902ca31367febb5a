"""``msprobe demo``: every installed tool on a built-in tiny model, end to end, with no user files.

Each tool contributes one part through the ``msprobe.demo`` entry point group; a part gets the
output folder and what earlier parts produced (``ctx.results``), and says what it did. A part that cannot
run here skips (``ctx.skip``, ``ctx.only(framework)``, or a module that is not installed), and the summary
counts it apart from the parts that ran.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import typer

from ..schema.errors import MsprobeError
from ..schema.plugins import entry_points
from .context import framework as framework_of

DEMO_MARKER = ".msprobe-demo"


class PartSkipped(Exception):
    """Raised by ``DemoContext.skip``: the part cannot run here (framework not chosen, module not installed)."""


# Import names whose package is named otherwise on PyPI.
_PACKAGES = {"yaml": "pyyaml", "google": "protobuf"}


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

    def skip(self, reason: str) -> None:
        """Stop the part here; the summary counts it as skipped, not as run."""
        raise PartSkipped(reason)

    def only(self, framework: str) -> None:
        """Skip the part unless ``-f`` is absent or names ``framework`` (a part of one framework calls this first)."""
        if self.framework not in (None, framework):
            self.skip(f"framework {self.framework}")


def missing_module(exc: ImportError) -> Optional[str]:
    """The skip reason for a third-party module that is not installed; None for anything else (a broken install
    of the suite itself is a failure, not a skip)."""
    root = (getattr(exc, "name", None) or "").split(".")[0]
    if not isinstance(exc, ModuleNotFoundError) or not root or root == "msprobe":
        return None
    return f"{root} is not installed (pip install {_PACKAGES.get(root, root)})"


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)


def demo(
    ctx: typer.Context,
    out: Path = typer.Option(Path("msprobe_demo"), "-o", "--output", help="Folder for the demo's outputs."),
) -> None:
    """Train a tiny built-in model for a few steps with every installed tool and write their outputs."""
    _fresh_dir(out)
    parts = _parts()
    if not parts:
        raise MsprobeError("no tool is installed to demonstrate: pip install msprobe-dump (and the other tools)")
    context = DemoContext(out_dir=out.resolve(), framework=framework_of(ctx))
    typer.echo(f"msprobe demo: writing under {context.out_dir}")
    outcome: Dict[str, List[str]] = {"ran": [], "skipped": [], "failed": []}
    for name, run in parts:
        typer.echo(f"[{name}]")
        outcome[_run_part(context, name, run)].append(name)
    summary = f"summary: {len(outcome['ran'])}/{len(parts)} parts ran"
    for kind in ("skipped", "failed"):
        if outcome[kind]:
            summary += f", {len(outcome[kind])} {kind} ({', '.join(outcome[kind])})"
    typer.echo(f"{summary}; outputs in {context.out_dir}")
    if outcome["failed"]:
        raise MsprobeError(f"demo parts failed: {', '.join(outcome['failed'])}")


def _run_part(context: DemoContext, name: str, run: Callable[[DemoContext], Any]) -> str:
    """Run one part; "ran", "skipped" or "failed". Every part skips the same way: by ctx.skip (ctx.only), or by
    importing a module that is not installed."""
    started = time.perf_counter()
    try:
        result = run(context)
    except PartSkipped as exc:
        context.say(f"skipped: {exc}")
        return "skipped"
    except ImportError as exc:
        reason = missing_module(exc)
        if reason is None:
            raise
        context.say(f"skipped: {reason}")
        return "skipped"
    except MsprobeError as exc:
        typer.echo(f"  failed: {exc}", err=True)
        return "failed"
    context.results[name] = result
    typer.echo(f"  done in {time.perf_counter() - started:.1f}s")
    return "ran"


def _parts() -> List[Tuple[str, Callable[[DemoContext], Any]]]:
    """The installed parts in their order. A part whose module needs what is not installed (torch...) is kept, as
    a part that skips saying so, first: it cannot tell its place without being imported."""
    loaded: Dict[str, Tuple[float, Callable[[DemoContext], Any]]] = {}
    for point in entry_points("msprobe.demo"):
        if point.name in loaded:
            continue
        try:
            run = point.load()
        except Exception as exc:  # a broken tool fails its own part, not the whole demo
            reason = missing_module(exc) if isinstance(exc, ImportError) else None
            run = _skipping(reason) if reason else _failing(f"{point.value} cannot be imported: {exc}")
        loaded[point.name] = (getattr(run, "order", 100), run)
    return [(name, run) for name, (_, run) in sorted(loaded.items(), key=lambda kv: (kv[1][0], kv[0]))]


def _skipping(reason: str) -> Callable[[DemoContext], Any]:
    def run(ctx: DemoContext) -> None:
        ctx.skip(reason)
    run.order = 0  # type: ignore[attr-defined]
    return run


def _failing(message: str) -> Callable[[DemoContext], Any]:
    def run(ctx: DemoContext) -> None:
        raise MsprobeError(message)
    run.order = 0  # type: ignore[attr-defined]
    return run


def _fresh_dir(out: Path) -> None:
    """Reuse a folder only if an earlier demo made it; never delete a user's folder."""
    if out.exists():
        if not (out / DEMO_MARKER).exists() and (not out.is_dir() or any(out.iterdir())):
            raise MsprobeError(f"{out}: exists and was not made by msprobe demo; choose another -o")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / DEMO_MARKER).write_text("made by msprobe demo\n")
