"""Across ranks: which rank's overflow came first.

Ranks share no clock, but every rank takes part in the same collectives in the same order, so
``Distributed.*`` entries are synchronisation points. Each rank's first overflow event gets the key
``(k, r)``: ``k`` = how many ``Distributed.*`` entries that rank recorded before the event, ``r`` = 0
when the event is produced locally (finite inputs, inf/nan outputs of a computing node) and 1 when
it arrived from elsewhere (the node is itself a collective — it received inf/nan from another rank —
or its inputs were already inf/nan). The smallest key started it: an event before the k-th
collective happened before anything another rank could only have received through that collective.
Ranks with equal keys cannot be told apart; all of them are named.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple, Union

from msprobe.cli.dask_ranks import refuse_incomplete, run_ranks
from msprobe.schema import RankDir, find_rank_dirs
from msprobe.schema.index import reader_cache
from msprobe.schema.tree import group_by_step

from .analyze import Anomaly, RankResult, analyze_rank
from .rules import UserIgnore


@dataclass
class StepResult:
    """One step of the dump: every rank's result and the rank/node where the overflow started."""

    step: Optional[int]
    step_name: Optional[str]
    """The step directory's name (``step01`` and ``step1`` are two steps); None outside a step directory."""
    ranks: List[RankResult]
    events: List[Anomaly]
    """Every rank's first event, earliest first (by ``order_key``, then rank number)."""

    @property
    def origin(self) -> Optional[Anomaly]:
        return self.events[0] if self.events else None

    @property
    def non_finite(self) -> int:
        """Tensors with inf/nan over the step's ranks, as ``msprobe inspect`` counts them."""
        return sum(r.non_finite for r in self.ranks)

    @property
    def tied(self) -> List[Anomaly]:
        """Events that cannot be ordered before the origin (same key), origin included."""
        if not self.events:
            return []
        return [e for e in self.events if e.order_key == self.events[0].order_key]


def _rank_number(anomaly: Anomaly) -> int:
    rank = anomaly.rank
    return rank.rank if rank.rank is not None else (rank.proc or 0)


def order_events(results: List[RankResult]) -> List[Anomaly]:
    events = [r.anomaly for r in results if r.anomaly is not None]
    return sorted(events, key=lambda a: (a.order_key, _rank_number(a)))


def analyze_dump(path: Union[str, Path], last: int = 5, include_expected: bool = False,
                 ignores: Tuple[UserIgnore, ...] = ()) -> List[StepResult]:
    """Analyse a dump at any level (dump.json, rank, step or whole tree), one result per step."""
    return analyze_ranks(find_rank_dirs(path), last=last, include_expected=include_expected, ignores=ignores)


def analyze_ranks(ranks: List[RankDir], last: int = 5, include_expected: bool = False,
                  ignores: Tuple[UserIgnore, ...] = (), jobs: int = 1, scheduler: Optional[str] = None,
                  quiet: bool = True) -> List[StepResult]:
    """Analyse rank directories (as ``find_rank_dirs`` orders them), one result per step directory, one Dask
    task per rank (``jobs`` local workers, or the cluster at ``scheduler``; ``cli.dask_ranks``), with a
    progress bar unless ``quiet``; ``ignores``: the user's ignore list (rules.UserIgnore). A rank that could
    not be analysed (its dump is broken, its workers died) is an error naming it, never a rank without events."""
    analyze = functools.partial(analyze_rank, last=last, include_expected=include_expected, ignores=ignores,
                                cache=reader_cache())
    outcomes = run_ranks(analyze, [str(rank.path) for rank in ranks], "overflow_check", jobs=jobs,
                         scheduler=scheduler, quiet=quiet, items=ranks)
    refuse_incomplete(outcomes, "analysed")
    done = {id(rank): outcome.value for rank, outcome in zip(ranks, outcomes)}
    out = []
    for name, members in group_by_step(ranks).items():
        results = [done[id(rank)] for rank in members]
        out.append(StepResult(step=members[0].step, step_name=name, ranks=results, events=order_events(results)))
    return out
