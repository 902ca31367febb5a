"""``msprobe config_check -c bench.zip cmp.zip -o OUT``: OUT/bench/, OUT/cmp/ and the report (results.py).

Both packs are read and validated before OUT is touched; OUT is deleted and recreated only when
an earlier run of this tool made it (a marker file says so) or it is empty.
"""
from __future__ import annotations

import functools
import math
import shutil
from pathlib import Path
from typing import List, Optional

import typer

from msprobe.cli import progress
from msprobe.schema.errors import MsprobeError

from . import formats
from .compare_config import compare_env, compare_hyper, compare_pip
from .compare_random import compare_random
from .compare_tensors import compare_dataset, compare_weights
from .formats import Pack, Track
from .masking import BOTH_SET, KEY_ENV, Masker
from .report import summary_table, write_report
from .results import DEFAULT_RESULT, ERROR, ITEMS, NONE, OUT_MARKER, RESULT_FILE, RESULT_JSON, ItemResult


def compare_packs(bench: Path, cmp: Path, output: Optional[Path] = None, framework: str = "pytorch",
                  fail_on_error: bool = False, tolerance: float = 0.0, quiet: bool = False) -> int:
    """Compare two packs and write the report; 0 when the comparison ran (1 with fail_on_error and an error)."""
    if tolerance is None or math.isnan(tolerance) or tolerance < 0:
        raise MsprobeError(f"config_check: --tolerance must be a number >= 0, got {tolerance}")
    out = Path(output) if output is not None else Path(DEFAULT_RESULT)
    bench, cmp = Path(bench), Path(cmp)
    track: Track = functools.partial(progress.track, quiet=quiet)  # bars on a terminal only
    bench_pack = formats.load_pack(bench, track=track)
    cmp_pack = formats.load_pack(cmp, track=track)
    prepare_output(out, [bench, cmp])
    extract(bench_pack, out / "bench", track)
    extract(cmp_pack, out / "cmp", track)
    results = compare_items(bench_pack, cmp_pack, tolerance, track)
    write_report(out, results, str(bench), str(cmp), track)
    typer.echo(f"config_check: {bench} (bench) vs {cmp} (cmp)")
    typer.echo(summary_table(results))
    typer.echo(f"report: {(out / RESULT_FILE).resolve()} (summary for programs: {RESULT_JSON})")
    if fail_on_error and any(r.level == ERROR for r in results):
        return 1
    return 0


def compare_items(bench: Pack, cmp: Pack, tolerance: float = 0.0, track: Optional[Track] = None) -> List[ItemResult]:
    # Packs written by msprobe hold secrets in clear: masked here too, so no report shows them.
    masker = Masker()
    compares = {
        "env": lambda: compare_env(masker.tree(bench.env or {}), masker.tree(cmp.env or {})),
        "pip": lambda: compare_pip(bench.pip or {}, cmp.pip or {}),
        "dataset": lambda: compare_dataset(bench.dataset, cmp.dataset, tolerance),
        "weights": lambda: compare_weights(bench.weights, cmp.weights, tolerance),
        "hyperparameters": lambda: compare_hyper(masker.tree(bench.hyper), masker.tree(cmp.hyper)),
        "random": lambda: compare_random(bench.random, cmp.random),
    }
    results = {name: compares[name]() for name in (track(ITEMS, "comparing") if track is not None else ITEMS)}
    collected = {"dataset": "dataset", "weights": "weights", "hyperparameters": "hyper", "random": "random"}
    for name, attribute in collected.items():
        b, c = bool(getattr(bench, attribute)), bool(getattr(cmp, attribute))
        if not b and not c:
            results[name].note, results[name].note_level = "nothing to compare: collected in neither pack", NONE
        elif b != c:
            side = "bench" if b else "cmp"
            results[name].note, results[name].note_level = f"collected in the {side} pack only", ERROR
    for name in ("env", "hyperparameters"):  # masks under two keys: equal or not, nobody can tell
        uncompared = sum(1 for row in results[name].rows
                         if any(BOTH_SET in str(cell) or "set on both sides" in str(cell) for cell in row))
        if uncompared:
            results[name].note = (results[name].note + "; " if results[name].note else "") + \
                f"{uncompared} masked value(s) not compared (packs masked with different keys; pack both with " \
                f"the same {KEY_ENV} to compare them)"
    for pack, side in ((bench, "bench"), (cmp, "cmp")):
        if pack.duplicates:
            results["env"].note = (results["env"].note + "; " if results["env"].note else "") + \
                f"{side} zip repeats {pack.duplicates} entries (last copy used)"
    return [results[name] for name in ITEMS]


def prepare_output(out: Path, inputs: List[Path]) -> None:
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise MsprobeError(f"{out}: exists and is not a folder; choose another -o")
    resolved = out.resolve()
    for path in inputs:
        if resolved == path.resolve() or resolved in path.resolve().parents:
            raise MsprobeError(f"{out}: contains the input pack {path}; choose another -o")
    if out.is_dir():
        if (out / OUT_MARKER).is_file():
            shutil.rmtree(out)
        elif any(out.iterdir()):
            raise MsprobeError(f"{out}: exists and was not created by msprobe config_check; "
                               f"remove it or choose another -o")
    out.mkdir(parents=True, exist_ok=True)
    (out / OUT_MARKER).write_text("made by msprobe config_check -c; deleted and recreated by the next run\n")


def extract(pack: Pack, folder: Path, track: Optional[Track] = None) -> None:
    """The pack's entries as files. Names were checked when the pack was read (formats.check_entry_name),
    and ``folder`` is new (prepare_output), so no link inside it can redirect a write."""
    base = folder.resolve()
    base.mkdir(parents=True, exist_ok=True)
    made = {base}
    names = list(pack.raw)
    for name in track(names, f"unpacking {folder.name}") if track is not None else names:
        target = base / name
        try:
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            target.write_bytes(pack.raw[name])
        except OSError as exc:
            raise MsprobeError(f"{pack.path}: entry '{name}' cannot be extracted ({exc.strerror or exc})")
