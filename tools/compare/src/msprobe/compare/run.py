"""A whole ``msprobe compare`` run: pair ranks, compare each (in worker processes when asked), write files."""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, List, Optional

from msprobe.cli.dask_ranks import refuse_incomplete, run_ranks
from msprobe.schema.compare_result import header, result_file_name
from msprobe.schema.jsonio import without_cyclic_gc

from .config import CompareConfig
from .divergence import INHERITED, FirstDivergence, execution_order, first_divergence
from .mapping import load_mapping
from .output import output_dir, write_csv, write_summary
from .pair import pair_ranks
from .rank import RankComparison, compare_rank
from .table import TableCells
from .view_data import entries_per_rank, rank_view

EXIT_PASS, EXIT_DIVERGED = 0, 1


@dataclass
class RankReport:
    """One rank compared, as the summary reports it (``to_json``: its entry of compare_summary.json)."""

    step: Optional[int]
    rank: Optional[int]
    label: str
    target: str
    golden: str
    mode: str
    mode_note: str
    files: Dict[str, str]
    rows: int
    results: Dict[str, int]
    entries: int
    matched_entries: int
    unmatched_target: List[str]
    unmatched_golden: List[str]
    first_divergence: Optional[FirstDivergence]
    recorded_differently: List[str]
    """Entries whose outputs differ only in how the two dumps record them (``divergence`` module)."""
    read: Dict[str, str]
    """Per side (``target``, ``golden``): ``index`` when its rows came from a statistics index matching its
    dump.json, else ``dump.json`` (the same rows either way)."""

    @property
    def diverged(self) -> bool:
        return self.first_divergence is not None

    @property
    def where(self) -> str:
        """``step0/rank1``; the rank label alone when the dump has no step directories."""
        return self.label if self.step is None else f"step{self.step}/{self.label}"

    def to_json(self) -> Dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__dataclass_fields__}
        out["diverged"] = self.diverged
        out["first_divergence"] = None if self.first_divergence is None else self.first_divergence.to_json()
        return out


@dataclass
class CompareRun:
    ranks: List[RankReport]
    first: Optional[FirstDivergence]
    """The run's first divergence: the rank whose divergence comes first (an origin or a parameter before
    an inheritance, then step, execution order, rank); None exactly when no rank diverged."""
    summary: Dict[str, Any]
    """compare_summary.json, made from the two above."""
    views: List[Dict[str, Any]]
    """Per rank, what the HTML page shows."""
    summary_path: Path

    @property
    def exit_code(self) -> int:
        return EXIT_DIVERGED if self.first is not None else EXIT_PASS


def run_compare(target: Path, golden: Path, config: CompareConfig) -> CompareRun:
    mapping = load_mapping(config.mapping_file)
    pairs = pair_ranks(target, golden, config.steps, config.ranks)
    with output_dir(config.output_dir) as folder:
        timestamp = time.strftime("%Y%m%d%H%M%S")
        several_steps = len({t.step for t, _ in pairs}) > 1
        per_rank = entries_per_rank(len(pairs))
        jobs = [(pair, config, mapping, folder, timestamp, several_steps, per_rank) for pair in pairs]
        # one Dask task per rank pair, run where both sides can be read; only results travel
        outcomes = run_ranks(_compare_job, [(str(t.path), str(g.path)) for t, g in pairs], "compare",
                             jobs=min(config.workers, max(1, len(jobs))), scheduler=config.scheduler,
                             quiet=config.quiet, items=jobs)
        refuse_incomplete(outcomes, "compared")
        reports = [outcome.value for outcome in outcomes]
        ranks = [r[0] for r in reports]
        first = _earliest(ranks)
        summary = _summary(target, golden, config, ranks, first)
        path = write_summary(folder, summary, timestamp)
    return CompareRun(ranks=ranks, first=first, summary=summary, views=[r[1] for r in reports], summary_path=path)


def _compare_job(job) -> tuple:
    (t_rank, g_rank), config, mapping, folder, timestamp, several_steps, per_rank = job
    folder.mkdir(parents=True, exist_ok=True)  # (on a cluster: the -o folder of this worker's node)
    with without_cyclic_gc():
        comparison = compare_rank(t_rank, g_rank, config, mapping)
        return _write_rank(comparison, config, folder, timestamp, several_steps, per_rank)


def _write_rank(comparison: RankComparison, config: CompareConfig, folder: Path, timestamp: str,
                several_steps: bool, per_rank: int) -> tuple:
    found, recorded_differently = first_divergence(comparison)  # before writing: it adds to rows' messages
    step = comparison.step if several_steps else None
    # a proc<pid> directory is msprobe 26.2's name for a run that is not distributed: "rank", as ours
    name = result_file_name(comparison.rank, timestamp, ".csv", step)
    columns, cells = header(comparison.mode), TableCells.of(comparison)
    if len(comparison.rows) > config.table_max_rows and not config.force_csv:
        from .columnar import write_table  # pyarrow only when a table that size is written

        files = {"table": str(write_table(folder, name[:-4] + ".parquet", columns, cells.coded_columns(columns)))}
        table = None
    else:
        table = cells.columns(columns)
        files = {"csv": str(write_csv(folder, name, columns, table))}
    if config.xlsx and len(comparison.rows) <= config.xlsx_max_rows:
        from .xlsx import write_xlsx  # openpyxl only when a workbook is written

        table = cells.columns(columns) if table is None else table
        files["xlsx"] = str(write_xlsx(folder, name[:-4] + ".xlsx", columns, table))
    report = _rank_report(comparison, files, found, recorded_differently)
    view = rank_view(comparison, execution_order(comparison.entries), found, per_rank) if config.html else {}
    return report, view


def _rank_report(comparison: RankComparison, files: Dict[str, str], found: Optional[FirstDivergence],
                 recorded_differently: List[str]) -> RankReport:
    golden = comparison.entries.golden
    return RankReport(
        step=comparison.step, rank=comparison.rank, label=comparison.label,
        target=str(comparison.target.path), golden=str(comparison.golden.path),
        mode=comparison.mode, mode_note=comparison.mode_note, files=files,
        rows=len(comparison.rows), results=comparison.counts,
        entries=len(golden), matched_entries=sum(name is not None for name in golden),
        unmatched_target=[name for name, partner in zip(comparison.entries.names, golden) if partner is None],
        unmatched_golden=comparison.unmatched_golden, first_divergence=found,
        recorded_differently=recorded_differently,
        read={side: "index" if read.indexed else "dump.json" for side, read in comparison.files.items()})


def _summary(target: Path, golden: Path, config: CompareConfig, ranks: List[RankReport],
             first: Optional[FirstDivergence]) -> Dict[str, Any]:
    return {
        "target": str(target), "golden": str(golden),
        "tolerances": dict(config.tolerances),
        "result": "diverged" if first is not None else "pass",
        "diverged_ranks": [r.where for r in ranks if r.diverged],
        "first_divergence": None if first is None else first.to_json(),
        "ranks": [r.to_json() for r in ranks],
    }


def _earliest(ranks: List[RankReport]) -> Optional[FirstDivergence]:
    """The diverging rank whose divergence comes first in execution order (where a divergence enters, origin
    or parameter, before an inheritance)."""
    best = None
    for report in ranks:
        found = report.first_divergence
        if found is None:
            continue
        key = (found.kind == INHERITED, report.step if report.step is not None else -1,
               found.execution_index, report.rank if report.rank is not None else -1)
        if best is None or key < best[0]:
            best = (key, replace(found, rank=report.label, step=report.step, where=report.where))
    return best[1] if best else None
