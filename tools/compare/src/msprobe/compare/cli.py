"""``msprobe compare -tp TARGET -gp GOLDEN -o OUT``: exit 0 when everything agrees, 1 on a divergence,
2 on a usage or input error."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from msprobe.cli.progress import QUIET_HELP

from .config import CompareConfig
from .divergence import paragraph
from .pair import parse_numbers
from .run import run_compare


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
    workers: int = typer.Option(1, "-j", "--workers", min=1, max=64, help="Ranks compared in parallel."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help=QUIET_HELP),
) -> int:
    """Compare two dumps rank by rank and name the first API whose inputs agree but whose outputs do not."""
    config = CompareConfig(output_dir=output, steps=_tuple(parse_numbers(steps, "--steps")),
                           ranks=_tuple(parse_numbers(ranks, "--ranks")), mapping_file=mapping, xlsx=xlsx,
                           html=html, workers=workers, quiet=quiet)
    result = run_compare(target, golden, config)
    if html is not None:
        from .html import write_html

        page = write_html(html, result.summary, result.views, config)
        typer.echo(f"wrote {page}", err=as_json)
    if as_json:
        typer.echo(json.dumps(result.summary, indent=1))
    else:
        _report(result.summary, config)
    typer.echo(f"wrote {result.summary_path}", err=as_json)
    return result.exit_code


def _tuple(values):
    return None if values is None else tuple(values)


def _report(summary: dict, config: CompareConfig) -> None:
    tolerance_note = "tolerance " + ", ".join(f"{k} {v:g}" for k, v in config.tolerances.items())
    for rank in summary["ranks"]:
        counts = rank["results"]
        where = rank["label"] if rank["step"] is None else f"step{rank['step']}/{rank['label']}"
        typer.echo(f"{where}: {rank['matched_entries']}/{rank['entries']} entries matched, {rank['rows']} rows "
                   f"({counts['pass']} pass, {counts['warning']} warning, {counts['error']} error, "
                   f"{counts['N/A']} unmatched), "
                   f"mode {rank['mode']} -> {rank['files']['csv']}")
        if rank["mode_note"]:
            typer.echo(f"  note: {rank['mode_note']}")
        if rank["unmatched_golden"] or rank["unmatched_target"]:
            typer.echo(f"  unmatched: {len(rank['unmatched_target'])} target, {len(rank['unmatched_golden'])} golden "
                       "entries (listed in the summary JSON)")
    found = summary["first_divergence"]
    if found is None:
        typer.echo("No divergence: every compared output agrees within tolerance.")
        return
    typer.echo("")
    typer.echo(paragraph(found["where"], found, tolerance_note))
    others = [r for r in summary["diverged_ranks"] if r != found["where"]]
    if others:
        typer.echo(f"Other ranks that diverge: {', '.join(others)}")
