"""``msprobe index DUMP``: build the statistics index of every rank that lacks one, into a cache folder.

The input dump is never written: tables go to ``--cache`` (default ``${MSPROBE_CACHE:-~/.cache/msprobe}/index``),
named by dump.json's size and hash, so an index is reused only for the same bytes and rebuilt otherwise.
One Dask task per rank (``-j``, ``--scheduler``): on a cluster each rank is indexed on a worker that reads it,
into that worker's cache folder.
"""
from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Dict, Optional

import typer

from ..schema import index as idx
from ..schema.jsonio import without_cyclic_gc
from ..schema.tree import scan_dump_tree
from .dask_ranks import JOBS_HELP, SCHEDULER_HELP, run_ranks
from .progress import QUIET_HELP, warn


def register(app: typer.Typer) -> None:
    app.command("index")(index)


def index_rank(path: str, cache: str) -> Dict[str, object]:
    """Index one rank folder into ``cache`` unless an index of the same bytes is there or beside dump.json."""
    rank = Path(path)
    source = idx.source_file(rank)
    key = idx.source_key(source)
    beside = rank / idx.INDEX_NAME
    if beside.is_file() and idx.index_key(beside) == key:
        return {"index": str(beside), "built": False}
    target = idx.cached_path(cache, key)
    if target.is_file() and idx.index_key(target) == key:
        return {"index": str(target), "built": False}
    Path(cache).mkdir(parents=True, exist_ok=True)
    with without_cyclic_gc():
        table = idx.read_json_table(source)
        idx.write_index(table, key, target)
    return {"index": str(target), "built": True, "rows": table.row_count}


def index(
    path: Path = typer.Argument(..., help="A dump: dump.json's rank directory, a step directory or a whole tree."),
    cache: Optional[Path] = typer.Option(None, "--cache", help="Cache folder of the tables "
                                         "(default: ${MSPROBE_CACHE:-~/.cache/msprobe}/index)."),
    jobs: int = typer.Option(min(2, os.cpu_count() or 1), "-j", "--jobs", min=1, help=JOBS_HELP),
    scheduler: Optional[str] = typer.Option(None, "--scheduler", help=SCHEDULER_HELP),
    quiet: bool = typer.Option(False, "-q", "--quiet", help=QUIET_HELP),
) -> None:
    """Build the columnar statistics index (Parquet) of a dump's ranks, once, into a cache folder."""
    idx.pyarrow_modules()  # one line saying what to install, before any work
    tree = scan_dump_tree(path)
    for line in tree.skipped:
        warn(line)
    folder = idx.cache_dir(cache).expanduser()
    ranks = [str(r.path) for r in tree.ranks]
    outcomes = run_ranks(functools.partial(index_rank, cache=str(folder)), ranks, "indexing",
                         jobs=min(jobs, max(1, len(ranks))), scheduler=scheduler, quiet=quiet)
    built = sum(1 for o in outcomes if o.ok and o.value["built"])
    for outcome in outcomes:
        if not outcome.ok:
            typer.echo(f"{outcome.path}: not indexed: {outcome.why}")
    done = sum(1 for o in outcomes if o.ok)
    typer.echo(f"indexed {done} of {len(outcomes)} rank(s) ({built} built, {done - built} already indexed) "
               f"into {folder}")
    if done < len(outcomes):
        raise typer.Exit(1)
