"""``msprobe config_check -c bench.zip cmp.zip -o OUT``: OUT/bench/, OUT/cmp/, OUT/result.xlsx.

Both packs are read and validated before OUT is touched; OUT is deleted and recreated only when
an earlier run of this tool made it (a marker file says so) or it is empty.
"""
from __future__ import annotations

import math
import os
import shutil
from pathlib import Path
from typing import List, Optional

import typer

from msprobe.schema.errors import MsprobeError

from . import formats
from .compare_config import compare_env, compare_hyper, compare_pip
from .compare_random import compare_random
from .compare_tensors import compare_dataset, compare_weights
from .formats import ERROR, ItemResult, Pack, WARNING
from .report import collapse_equal, summary_table, write_report


def compare_packs(bench: Path, cmp: Path, output: Optional[Path] = None, framework: str = "pytorch",
                  fail_on_error: bool = False, tolerance: float = 0.0) -> int:
    """Compare two packs and write the report; 0 when the comparison ran (1 with fail_on_error and an error)."""
    if tolerance is None or math.isnan(tolerance) or tolerance < 0:
        raise MsprobeError(f"config_check: --tolerance must be a number >= 0, got {tolerance}")
    out = Path(output) if output is not None else Path(formats.DEFAULT_RESULT)
    bench_pack, cmp_pack = formats.load_pack(Path(bench)), formats.load_pack(Path(cmp))
    prepare_output(out, [Path(bench), Path(cmp)])
    extract(bench_pack, out / "bench")
    extract(cmp_pack, out / "cmp")
    results = compare_items(bench_pack, cmp_pack, tolerance)
    write_report(out / formats.RESULT_FILE, results)
    typer.echo(f"config_check: {bench} (bench) vs {cmp} (cmp)")
    typer.echo(summary_table(results))
    typer.echo(f"report: {(out / formats.RESULT_FILE).resolve()}")
    if fail_on_error and any(r.level == ERROR for r in results):
        return 1
    return 0


def compare_items(bench: Pack, cmp: Pack, tolerance: float = 0.0) -> List[ItemResult]:
    results = {
        "env": compare_env(bench.env or {}, cmp.env or {}),
        "pip": compare_pip(bench.pip or {}, cmp.pip or {}),
        "dataset": collapse_equal(compare_dataset(bench.dataset, cmp.dataset, tolerance), 2),
        "weights": collapse_equal(compare_weights(bench.weights, cmp.weights, tolerance), 2),
        "hyperparameters": compare_hyper(bench.hyper, cmp.hyper),
        "random": compare_random(bench.random, cmp.random),
    }
    collected = {"dataset": "dataset", "weights": "weights", "hyperparameters": "hyper", "random": "random"}
    for name, attribute in collected.items():
        b, c = bool(getattr(bench, attribute)), bool(getattr(cmp, attribute))
        if not b and not c:
            results[name].note, results[name].note_level = "not collected in either pack", WARNING
        elif b != c:
            side = "bench" if b else "cmp"
            results[name].note, results[name].note_level = f"collected in the {side} pack only", ERROR
    for pack, side in ((bench, "bench"), (cmp, "cmp")):
        if pack.duplicates:
            results["env"].note = (results["env"].note + "; " if results["env"].note else "") + \
                f"{side} zip repeats {pack.duplicates} entries (last copy used)"
    return [results[name] for name in formats.ITEMS]


def prepare_output(out: Path, inputs: List[Path]) -> None:
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise MsprobeError(f"{out}: exists and is not a folder; choose another -o")
    resolved = out.resolve()
    for path in inputs:
        if resolved == path.resolve() or resolved in path.resolve().parents:
            raise MsprobeError(f"{out}: contains the input pack {path}; choose another -o")
    if out.is_dir():
        if (out / formats.OUT_MARKER).is_file():
            shutil.rmtree(out)
        elif any(out.iterdir()):
            raise MsprobeError(f"{out}: exists and was not created by msprobe config_check; "
                               f"remove it or choose another -o")
    out.mkdir(parents=True, exist_ok=True)
    (out / formats.OUT_MARKER).write_text("made by msprobe config_check -c; deleted and recreated by the next run\n")


def extract(pack: Pack, folder: Path) -> None:
    base = folder.resolve()
    for name, data in pack.raw.items():
        target = (base / name).resolve()
        if base not in target.parents:  # names were checked when the pack was read; check the result too
            raise MsprobeError(f"{pack.path}: entry '{name}' would be written outside {folder}")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as stream:
                stream.write(data)
        except OSError as exc:
            raise MsprobeError(f"{pack.path}: entry '{name}' cannot be extracted ({exc.strerror or exc})")
    os.makedirs(base, exist_ok=True)
