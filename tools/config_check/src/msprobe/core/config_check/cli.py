"""Handlers of the shared ``msprobe config_check`` verb (entry point group ``msprobe.config_check``)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import typer

from . import formats
from .collect import static_entries
from .compare import compare_packs as _compare_packs
from .masking import Masker
from .stats import check_framework


def pack(paths: Optional[Sequence[Path]], output: Optional[Path], framework: str) -> None:
    """``-d [train.sh ...] [cfg.yaml ...] [-o pack.zip]``: environment, libraries, hyperparameters."""
    check_framework(framework)
    out = Path(output) if output is not None else Path(formats.DEFAULT_PACK)
    if out.suffix != ".zip":
        from msprobe.schema.errors import MsprobeError
        raise MsprobeError(f"{out}: the pack must be a .zip file")
    entries = static_entries([Path(p) for p in paths or []], Masker())
    formats.write_zip(out, entries)
    typer.echo(f"config_check: wrote {out.resolve()} ({', '.join(sorted(entries))})")


def compare_packs(bench: Path, cmp: Path, output: Optional[Path], framework: str,
                  fail_on_error: bool = False, tolerance: float = 0.0, quiet: bool = False) -> int:
    """``-c bench.zip cmp.zip [-o OUT]``: returns the exit code."""
    check_framework(framework)
    return _compare_packs(bench, cmp, output, framework, fail_on_error, tolerance, quiet)
