"""``msprobe overflow_check -i DUMP [-o OUT]``: find where inf/nan started, per rank and across ranks."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from msprobe.cli.dask_ranks import JOBS_HELP, SCHEDULER_HELP
from msprobe.cli.progress import QUIET_HELP, warn
from msprobe.schema import MsprobeError, scan_dump_tree

from .order import analyze_ranks
from .report import NO_ANOMALY, print_results, summary_json, write_reports
from .rules import IGNORE_VALUES, parse_ignore


def register(app: typer.Typer) -> None:
    app.command("overflow_check")(overflow_check)


def overflow_check(
    input_path: Path = typer.Option(..., "-i", "--input", "--input_path",
                                    help="A dump: dump.json, rank directory, step directory or whole dump tree."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", "--output_path",
                                          help="Folder for anomaly_analyze_<timestamp>.json (default ./output)."),
    last: int = typer.Option(5, "-n", "--last", help="How many entries before the node to print."),
    stack_lines: int = typer.Option(8, "--stack-lines", help="How many stack frames to print per node."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary instead of the report."),
    include_expected: bool = typer.Option(
        False, "--include-expected", help="Also analyse inf/nan that is expected and left out by default: "
        "attention masks (an inf/nan number given to masked_fill, full...), empty memory, receive buffers."),
    ignore: Optional[List[str]] = typer.Option(
        None, "--ignore", metavar="API[:VALUE]", help="Leave out, as expected, the inf/nan outputs of this API "
        f"(Torch.log), or only those holding one value ({'|'.join(IGNORE_VALUES)}: Torch.log:-inf); repeatable. "
        "The config block's \"ignore\" list does the same online."),
    jobs: int = typer.Option(1, "-j", "--jobs", min=1, help=JOBS_HELP),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help=SCHEDULER_HELP),
    quiet: bool = typer.Option(False, "-q", "--quiet", help=QUIET_HELP),
) -> None:
    """Find, per rank, the first API or module with finite inputs and inf/nan outputs, and the rank it started on."""
    if last < 0:
        raise MsprobeError(f"overflow_check: -n/--last must be 0 or more, got {last}")
    ignores = parse_ignore(ignore or [], "command line", "--ignore")
    tree = scan_dump_tree(input_path)
    for line in tree.skipped:
        warn(line)
    results = analyze_ranks(tree.ranks, last=last, include_expected=include_expected, ignores=ignores,
                            jobs=jobs, scheduler=scheduler, quiet=quiet)
    echo = typer.echo
    if as_json:
        echo(summary_json(results))
    else:
        print_results(results, echo, stack_lines)
    paths = write_reports(results, output if output is not None else Path("output"))
    if not paths:
        if not as_json:
            echo(NO_ANOMALY)
        return
    for path in paths:
        typer.echo(f"wrote {path}", err=as_json)
