"""A whole ``msprobe compare`` run: pair ranks, compare each (in worker processes when asked), write files."""
from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from msprobe.cli.progress import track
from msprobe.schema.compare_result import result_file_name

from .config import CompareConfig
from .divergence import execution_order, first_divergence
from .mapping import load_mapping
from .output import prepare_output_dir, write_csv, write_summary
from .pair import pair_ranks
from .rank import RankComparison, compare_rank
from .view_data import entries_per_rank, rank_view

EXIT_PASS, EXIT_DIVERGED = 0, 1


@dataclass
class CompareRun:
    summary: Dict[str, Any]
    views: List[Dict[str, Any]]
    """Per rank, what the HTML page shows."""
    summary_path: Path

    @property
    def exit_code(self) -> int:
        return EXIT_DIVERGED if self.summary["diverged_ranks"] else EXIT_PASS


def run_compare(target: Path, golden: Path, config: CompareConfig) -> CompareRun:
    mapping = load_mapping(config.mapping_file)
    pairs = pair_ranks(target, golden, config.steps, config.ranks)
    folder = prepare_output_dir(config.output_dir)
    timestamp = time.strftime("%Y%m%d%H%M%S")
    several_steps = len({t.step for t, _ in pairs}) > 1
    per_rank = entries_per_rank(len(pairs))
    jobs = [(pair, config, mapping, folder, timestamp, several_steps, per_rank) for pair in pairs]
    if config.workers > 1 and len(jobs) > 1:
        with ProcessPoolExecutor(max_workers=min(config.workers, len(jobs))) as pool:
            futures = [pool.submit(_compare_job, job) for job in jobs]
            reports = [future.result() for future in track(futures, "compare", config.quiet)]
    else:
        reports = [_compare_job(job) for job in track(jobs, "compare", config.quiet)]
    summary = _summary(target, golden, config, [r[0] for r in reports])
    path = write_summary(folder, summary, timestamp)
    return CompareRun(summary=summary, views=[r[1] for r in reports], summary_path=path)


def _compare_job(job) -> tuple:
    (t_rank, g_rank), config, mapping, folder, timestamp, several_steps, per_rank = job
    comparison = compare_rank(t_rank, g_rank, config, mapping)
    return _write_rank(comparison, config, folder, timestamp, several_steps, per_rank)


def _write_rank(comparison: RankComparison, config: CompareConfig, folder: Path, timestamp: str,
                several_steps: bool, per_rank: int) -> tuple:
    step = comparison.step if several_steps else None
    # a proc<pid> directory is msprobe 26.2's name for a run that is not distributed: "rank", as ours
    name = result_file_name(comparison.rank, timestamp, ".csv", step)
    files = {"csv": str(write_csv(folder, name, comparison.mode, comparison.rows))}
    if config.xlsx and len(comparison.rows) <= config.xlsx_max_rows:
        from .xlsx import write_xlsx  # openpyxl only when a workbook is written

        files["xlsx"] = str(write_xlsx(folder, name[:-4] + ".xlsx", comparison.mode, comparison.rows))
    found = first_divergence(comparison)
    report = _rank_summary(comparison, files, found)
    view = rank_view(comparison, execution_order(comparison.entries), found, per_rank) if config.html else {}
    return report, view


def _rank_summary(comparison: RankComparison, files: Dict[str, str], found: Optional[dict]) -> Dict[str, Any]:
    matched = [e for e in comparison.entries if e.golden is not None]
    return {
        "step": comparison.step, "rank": comparison.rank, "label": comparison.label,
        "target": str(comparison.target.path), "golden": str(comparison.golden.path),
        "mode": comparison.mode, "mode_note": comparison.mode_note, "files": files,
        "rows": len(comparison.rows), "results": comparison.counts,
        "entries": len(comparison.entries), "matched_entries": len(matched),
        "diverged": comparison.diverged,
        "unmatched_target": [e.name for e in comparison.entries if e.golden is None],
        "unmatched_golden": comparison.unmatched_golden,
        "first_divergence": found,
    }


def _summary(target: Path, golden: Path, config: CompareConfig, ranks: List[Dict[str, Any]]) -> Dict[str, Any]:
    diverged = [r for r in ranks if r["diverged"]]
    earliest = _earliest(diverged)
    return {
        "target": str(target), "golden": str(golden),
        "tolerances": dict(config.tolerances),
        "result": "diverged" if diverged else "pass",
        "diverged_ranks": [_where(r) for r in diverged],
        "first_divergence": earliest,
        "ranks": ranks,
    }


def _earliest(diverged: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The diverging rank whose divergence comes first in execution order (an origin before an inheritance)."""
    best = None
    for report in diverged:
        found = report["first_divergence"]
        if found is None:
            continue
        key = (found["kind"] != "origin", report["step"] if report["step"] is not None else -1,
               found["execution_index"], report["rank"] if report["rank"] is not None else -1)
        if best is None or key < best[0]:
            best = (key, dict(found, rank=report["label"], step=report["step"], where=_where(report)))
    return best[1] if best else None


def _where(report: Dict[str, Any]) -> str:
    """``step0/rank1``; the rank label alone when the dump has no step directories."""
    return report["label"] if report["step"] is None else f"step{report['step']}/{report['label']}"

