"""``msprobe compare -tp TARGET -gp GOLDEN -o OUT``: exit 0 when everything agrees, 1 on a divergence,
2 on a usage or input error."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from msprobe.cli.dask_ranks import JOBS_HELP, SCHEDULER_HELP
from msprobe.cli.progress import QUIET_HELP
from msprobe.cli.terminal import echo as _echo  # names from the dumps printed escaped

from .config import CompareConfig
from .divergence import paragraph
from .pair import parse_numbers
from .run import CompareRun, run_compare


def register(app: typer.Typer) -> None:
    app.command("compare", context_settings={"help_option_names": ["-h", "--help"]})(compare)


def compare(
    target: Path = typer.Option(..., "-tp", "--target_path", "--target-path",
                                help="Dump to check: dump tree, step dir, rank dir or dump.json (ours or msprobe's)."),
    golden: Path = typer.Option(..., "-gp", "--golden_path", "--golden-path", help="Reference dump, same forms."),
    output: Path = typer.Option(Path("output"), "-o", "--output_path", "--output",
                                help="Folder for the result files (never overwritten)."),
    steps: Optional[str] = typer.Option(None, "--steps", "--step", help="Steps to compare, e.g. 0,2-3."),
    ranks: Optional[str] = typer.Option(None, "--ranks", "--rank", help="Ranks to compare, e.g. 0-3."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary JSON instead of the report."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write this self-contained HTML page."),
    mapping: Optional[Path] = typer.Option(None, "--mapping", "-am", "--api_mapping", "-lm", "--layer_mapping",
                                           help="Name mapping YAML (ours, or msprobe's api/layer mapping)."),
    xlsx: bool = typer.Option(True, "--xlsx/--no-xlsx", help="Write the styled .xlsx beside each CSV."),
    workers: int = typer.Option(1, "-j", "--workers", min=1, max=64, help=JOBS_HELP),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help=SCHEDULER_HELP),
    force_csv: bool = typer.Option(False, "--csv", help="Write each rank's CSV even above 200,000 rows "
                                   "(where its full table is otherwise written as Parquet)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help=QUIET_HELP),
    statistics: bool = typer.Option(False, "--statistics",
                                    help="Compare tensor dumps by their statistics; read no tensor file."),
) -> int:
    """Compare two dumps rank by rank and name where they first diverge (origin, parameter or inherited)."""
    config = CompareConfig(output_dir=output, steps=_tuple(parse_numbers(steps, "--steps")),
                           ranks=_tuple(parse_numbers(ranks, "--ranks")), mapping_file=mapping, xlsx=xlsx,
                           html=html, workers=workers, quiet=quiet, statistics=statistics, scheduler=scheduler,
                           force_csv=force_csv)
    result = run_compare(target, golden, config)
    if html is not None:
        from .html import write_html

        page = write_html(html, result.summary, result.views, config)
        typer.echo(f"wrote {page}", err=as_json)
    if as_json:
        typer.echo(json.dumps(result.summary, indent=1))
    else:
        _report(result, config)
    typer.echo(f"wrote {result.summary_path}", err=as_json)
    return result.exit_code


def _tuple(values):
    return None if values is None else tuple(values)


def _report(result: CompareRun, config: CompareConfig) -> None:
    tolerance_note = "tolerance " + ", ".join(f"{k} {v:g}" for k, v in config.tolerances.items())
    for rank in result.ranks:
        counts = rank.results
        _echo(f"{rank.where}: {rank.matched_entries}/{rank.entries} entries matched, {rank.rows} rows "
              f"({counts['pass']} pass, {counts['warning']} warning, {counts['error']} error, "
              f"{counts['N/A']} unmatched), "
              f"mode {rank.mode} -> {rank.files.get('csv') or rank.files['table']}")
        if rank.mode_note:
            _echo(f"  note: {rank.mode_note}")
        if rank.unmatched_golden or rank.unmatched_target:
            _echo(f"  unmatched: {len(rank.unmatched_target)} target, {len(rank.unmatched_golden)} golden "
                  "entries (listed in the summary JSON)")
        if rank.recorded_differently:
            _echo(f"  recorded differently, not a divergence: {', '.join(rank.recorded_differently[:3])}"
                  + (" ..." if len(rank.recorded_differently) > 3 else ""))
    found = result.first
    if found is None:
        warned = sum(r.results["warning"] + r.results["error"] for r in result.ranks)
        _echo("No divergence: every compared entry agrees within tolerance"
              + (f" ({warned} rows marked warning or error change no result: see their Err_message)."
                 if warned else "."))
        return
    _echo("")
    typer.echo(paragraph(found.where, found, tolerance_note))  # (its lines escaped there)
    others = [r.where for r in result.ranks if r.diverged and r.where != found.where]
    if others:
        _echo(f"Other ranks that diverge: {', '.join(others)}")
