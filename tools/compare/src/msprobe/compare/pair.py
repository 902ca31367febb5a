"""Pairing the rank directories of two dumps: by step, then by rank number.

Either side may be a whole dump tree, a step directory, a rank directory or a dump.json, ours or
msprobe's (``rank``, ``rank<R>``, ``proc<pid>``). A directory without a rank number (``rank``,
``proc<pid>``) pairs with the other side's only rank of that step. When one side is a single step,
it pairs with the other side's step of the same number, or with its only step.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from msprobe.schema import MsprobeError, RankDir, find_rank_dirs
from msprobe.schema.tree import group_by_step

RankPair = Tuple[RankDir, RankDir]


def _by_rank(ranks: List[RankDir]) -> Dict[Optional[int], RankDir]:
    out: Dict[Optional[int], RankDir] = {}
    for rank in ranks:
        out.setdefault(rank.rank, rank)
    return out


def _pair_step(target: List[RankDir], golden: List[RankDir]) -> List[RankPair]:
    if len(target) == 1 and len(golden) == 1:
        return [(target[0], golden[0])]
    t_ranks, g_ranks = _by_rank(target), _by_rank(golden)
    return [(t_ranks[r], g_ranks[r]) for r in sorted(t_ranks, key=lambda r: -1 if r is None else r) if r in g_ranks]


def pair_ranks(target: Path, golden: Path, steps: Optional[Sequence[int]] = None,
               ranks: Optional[Sequence[int]] = None) -> List[RankPair]:
    """Every (target, golden) rank directory pair to compare, ordered by step then rank."""
    t_steps, g_steps = group_by_step(find_rank_dirs(target)), group_by_step(find_rank_dirs(golden))
    if len(t_steps) == 1 and len(g_steps) == 1:
        step_pairs = [(next(iter(t_steps.values())), next(iter(g_steps.values())))]
    else:
        common = sorted((s for s in t_steps if s in g_steps), key=lambda s: _step_number(t_steps[s]))
        step_pairs = [(t_steps[s], g_steps[s]) for s in common]
    pairs: List[RankPair] = []
    for t_list, g_list in step_pairs:
        if steps is not None:
            t_list = [r for r in t_list if r.step in steps]
            g_list = [r for r in g_list if r.step in steps]
        if ranks is not None:
            t_list = [r for r in t_list if r.rank in ranks]
            g_list = [r for r in g_list if r.rank in ranks]
        if t_list and g_list:
            pairs.extend(_pair_step(t_list, g_list))
    if not pairs:
        raise MsprobeError(f"nothing to compare: {target} and {golden} share no step and rank"
                           + _selection(steps, ranks) + f" (target has {_inventory(t_steps)}, golden has "
                           f"{_inventory(g_steps)})")
    return pairs


def _selection(steps: Optional[Sequence[int]], ranks: Optional[Sequence[int]]) -> str:
    parts = []
    if steps is not None:
        parts.append(f"--steps {','.join(map(str, steps))}")
    if ranks is not None:
        parts.append(f"--ranks {','.join(map(str, ranks))}")
    return f" among {' '.join(parts)}" if parts else ""


def _step_number(ranks: List[RankDir]) -> int:
    return -1 if ranks[0].step is None else ranks[0].step


def _inventory(steps: Dict[object, List[RankDir]]) -> str:
    """``step0: rank0, rank1; step1: rank0`` (group_by_step's keys are opaque: the ranks say the step)."""
    parts = []
    for ranks in sorted(steps.values(), key=_step_number):
        name = "no step" if ranks[0].step is None else f"step{ranks[0].step}"
        parts.append(f"{name}: {', '.join(r.label for r in ranks)}")
    return "; ".join(parts)


def parse_numbers(text: Optional[str], option: str) -> Optional[List[int]]:
    """``"0,2-4"`` → ``[0, 2, 3, 4]``; None when not given."""
    if text is None:
        return None
    out: List[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                low, high = (int(p) for p in part.split("-", 1))
                if high < low or high - low > 1_000_000:
                    raise ValueError
                out.extend(range(low, high + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise MsprobeError(f"{option}: expected numbers and ranges like 0,2-4, got {text!r}") from None
    return out
