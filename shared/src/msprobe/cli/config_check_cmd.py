"""``msprobe config_check``: one verb, two tools (seed docs 31 and 32).

``-d [files]``        collect a config pack            (msprobe-config-check)
``-c A.zip B.zip``    compare two packs                 (msprobe-config-check)
``-c DIR1 DIR2`` / ``--compare DIR1 DIR2``  compare two Megatron checkpoints (msprobe-ckpt-compare)
"""
from __future__ import annotations

import zipfile
from pathlib import Path
from typing import List, Optional

import typer

from ..schema.errors import MsprobeError
from .context import framework as framework_of
from .plugins import CONFIG_CHECK_HANDLERS, install_hint, load_group
from .progress import QUIET_HELP


def register(app: typer.Typer) -> None:
    app.command("config_check")(config_check)


def config_check(
    ctx: typer.Context,
    paths: Optional[List[Path]] = typer.Argument(None, help="Files for -d; two packs or two checkpoints for -c."),
    dump: bool = typer.Option(False, "-d", "--dump", help="Collect: launch scripts (.sh) and yaml files to read."),
    compare: bool = typer.Option(False, "-c", "--compare", help="Compare two packs (.zip) or two checkpoints."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Pack, result folder or JSON to write."),
    fail_on_error: bool = typer.Option(False, "--fail-on-error",
                                       help="Exit 1 when any compared item is 'error' (for CI pipelines)."),
    tolerance: float = typer.Option(0.0, "--tolerance", help="Relative tolerance for weights/dataset (0 = exact)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help=QUIET_HELP),
) -> None:
    """Collect or compare training configurations, or compare two checkpoints."""
    paths = paths or []
    if dump == compare:
        raise MsprobeError("config_check: give exactly one of -d (collect) or -c/--compare (compare)")
    framework = framework_of(ctx) or "pytorch"
    if dump:
        _handler("pack")(paths=paths, output=output, framework=framework)
        return
    if len(paths) != 2:
        raise MsprobeError(f"config_check -c: expected two paths (bench and cmp), got {len(paths)}")
    kind = _kind(paths[0])
    if kind != _kind(paths[1]):
        raise MsprobeError(f"config_check -c: {paths[0]} is a {kind} but {paths[1]} is a {_kind(paths[1])}")
    if kind == "pack":
        code = _handler("compare_packs")(bench=paths[0], cmp=paths[1], output=output, framework=framework,
                                         fail_on_error=fail_on_error, tolerance=tolerance, quiet=quiet)
    else:
        code = _handler("compare_checkpoints")(path1=paths[0], path2=paths[1], output=output, framework=framework,
                                               quiet=quiet)
    if code:
        raise typer.Exit(code)


def _kind(path: Path) -> str:
    if not path.exists():
        raise MsprobeError(f"{path}: no such file or directory")
    if path.is_dir():
        return "checkpoint"
    if path.suffix == ".zip" or zipfile.is_zipfile(path):
        return "pack"
    raise MsprobeError(f"{path}: expected a config pack (.zip) or a checkpoint directory")


def _handler(name: str):
    handlers = load_group("msprobe.config_check")
    if name not in handlers:
        distribution = CONFIG_CHECK_HANDLERS[name]
        mode = "-d" if name == "pack" else "-c"
        raise MsprobeError(f"config_check {mode} comes with the package {distribution}, which is not installed: "
                           f"{install_hint(distribution)}")
    return handlers[name]
