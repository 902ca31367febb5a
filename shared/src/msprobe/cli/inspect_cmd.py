"""``msprobe inspect PATH``: validate a dump at any level of its tree and summarise it."""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer

from ..schema.errors import MsprobeError
from ..schema.index import reader_cache
from ..schema.summary import RankSummary, summarize_rank
from ..schema.tree import scan_dump_tree
from .progress import QUIET_HELP, track, warn
from .terminal import echo as _echo  # names from the dump (entries, files) printed escaped


def register(app: typer.Typer) -> None:
    app.command("inspect")(inspect)


def inspect(
    path: Path = typer.Argument(..., help="A dump.json, a rank directory, a step directory or a whole dump tree."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    show: int = typer.Option(10, "--show", min=0, help="How many non-finite tensors to list per rank."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help=QUIET_HELP),
) -> None:
    """Validate a dump (ours or msprobe's) and print steps, ranks, entries and inf/nan tensors."""
    tree = scan_dump_tree(path)
    for line in tree.skipped:
        warn(line)
    cache = reader_cache()  # statistics indexes `msprobe index` built, used where they match dump.json
    summaries = [summarize_rank(rank, cache) for rank in track(tree.ranks, "inspect", quiet)]
    if as_json:
        typer.echo(json.dumps([asdict(s) for s in summaries], indent=1))
        _check_files(summaries)
        return
    steps = list(dict.fromkeys(s.step_dir[len("step"):] for s in summaries if s.step_dir is not None))
    ranks = sorted({s.rank for s in summaries})
    frameworks = sorted({s.framework or "unknown" for s in summaries})
    _echo(f"dump: {path}")
    _echo(f"steps: {_list(steps) or '-'}   ranks: {', '.join(ranks)}   framework: {', '.join(frameworks)}")
    for summary in summaries:
        _print_rank(summary, show)
    bad = sum(len(s.non_finite) for s in summaries)
    _echo(f"total: {len(summaries)} rank dump(s), {sum(s.entries for s in summaries)} entries, "
          f"{sum(s.tensors for s in summaries)} tensors, {bad} with inf/nan")
    _check_files(summaries)


def _check_files(summaries) -> None:
    """Tensor files a dump.json names but that are missing or unreadable fail the inspection."""
    bad_files = [f"{s.path}/{item}" for s in summaries for item in s.bad_files]
    if bad_files:
        raise MsprobeError(f"{len(bad_files)} tensor file(s) named in dump.json missing or unreadable, "
                           f"first {bad_files[0]}")


def _print_rank(s: RankSummary, show: int) -> None:
    where = f"{s.step_dir}/{s.rank}" if s.step_dir is not None else s.rank
    note = "  (recovered from the journal of an interrupted run)" if s.recovered else ""
    _echo(f"- {where}: task={s.task or '-'} level={s.level or '-'} entries={s.entries} "
          f"forward={s.forward} backward={s.backward} parameters_grad={s.parameters_grad} "
          f"tensors={s.tensors} files={s.tensor_files} construct={s.construct_nodes} stacks={s.stacks}{note}")
    _echo("  prefixes: " + (", ".join(f"{k}={v}" for k, v in s.prefixes.items()) or "-"))
    if s.bad_files:
        _echo(f"  tensor files missing or unreadable: {len(s.bad_files)}")
        for item in s.bad_files[:show]:
            _echo(f"    {item}")
    if s.non_finite:
        _echo(f"  inf/nan in {len(s.non_finite)} tensor(s):")
        for item in s.non_finite[:show]:
            _echo(f"    {item}")
        if len(s.non_finite) > show:
            _echo(f"    ... {len(s.non_finite) - show} more")


def _list(values) -> str:
    return ", ".join(str(v) for v in values)
