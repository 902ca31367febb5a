"""``msprobe -f pytorch config_check --compare CKPT1 CKPT2 [-o out.json]`` (seed doc 32)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

import typer

from msprobe.schema.errors import MsprobeError
from msprobe.schema.kinds import FRAMEWORKS  # MSAdapter checkpoints (mindspore) are torch.save files too

from .compare import run, summary
from .options import CompareOptions

DEFAULT_OUTPUT = Path("ckpt_similarity.json")


def compare_checkpoints(path1: Path, path2: Path, output: Optional[Path], framework: Optional[str],
                        quiet: bool = False, options: Optional[CompareOptions] = None) -> int:
    """Compare two checkpoints, write the JSON report, print a summary; returns the exit code.

    ``quiet`` turns the progress bar off (it only ever shows on a terminal)."""
    options = options or CompareOptions(progress=not quiet)
    if framework not in (None,) + FRAMEWORKS:
        raise MsprobeError(f"config_check -c: framework '{framework}' has no checkpoint reader "
                           f"(use {' or '.join(FRAMEWORKS)})")
    output = Path(output) if output is not None else DEFAULT_OUTPUT
    if output.exists():
        raise MsprobeError(f"{output}: output path exists; remove it or choose another -o (results are never overwritten)")
    try:  # made as overflow_check and config_check -c make theirs: `-o msprobe_out/x.json` works in a fresh clone
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MsprobeError(f"{output}: cannot create the folder {output.parent} ({exc.strerror})") from None
    report = run(Path(path1), Path(path2), options)
    write_json(report.entries, output)
    for line in summary(report):
        typer.echo(line)
    typer.echo(f"result written to {output}")
    return 0


def write_json(entries, output: Path) -> None:
    """Written beside the target, then renamed: a crash never leaves half a report."""
    temp = output.with_name(f".{output.name}.tmp{os.getpid()}")
    try:
        with open(temp, "x", encoding="utf-8") as handle:
            json.dump(entries, handle, indent=4, allow_nan=False)
        if output.exists():
            raise MsprobeError(f"{output}: appeared while comparing; not overwritten")
        os.replace(temp, output)
    finally:
        if temp.exists():
            temp.unlink()
