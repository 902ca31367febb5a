"""Offline analysis of one rank: the first node whose inputs are finite and whose outputs are not.

Entries are taken in dump order (the order they were recorded, which is execution order for
APIs). A module entry can be recorded before or after the APIs it contains, so when the first
such node is a module, the analysis descends to the earliest qualifying node inside it (by
construct.json) — the innermost API is what the user has to fix.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from msprobe.schema import RankDir, RankFiles, iter_records, module_chain, record_is_finite, try_parse_entry

from .rules import ignored, rule_for

INPUT_ROLES = ("input_args", "input_kwargs", "input", "parameters")
ORIGIN = "origin"
"""Inputs finite, outputs inf/nan: the node produced the overflow."""
INHERITED = "inherited"
"""Inputs already inf/nan at the first anomalous entry: it came from outside the dump (data, weights, unhooked code)."""


@dataclass
class EntryState:
    """What the analysis needs about one dump entry."""

    index: int
    name: str
    bad_inputs: List[str]
    bad_outputs: List[str]
    collectives_before: int
    is_collective: bool
    is_module: bool

    @property
    def anomalous(self) -> bool:
        return bool(self.bad_inputs or self.bad_outputs)


@dataclass
class Anomaly:
    """The first overflow event of one rank in one step."""

    rank: RankDir
    kind: str
    state: EntryState
    data_info: Dict[str, Any]
    construct_info: List[str]
    stack_info: List[str]
    before: List[EntryState] = field(default_factory=list)
    """The entries recorded just before it, oldest first (what led up to it)."""

    @property
    def op_name(self) -> str:
        return self.state.name

    @property
    def order_key(self) -> Tuple[int, int]:
        """Position in cross-rank time: collectives done before it, then 0 if produced locally, 1 if received."""
        received = self.kind == INHERITED or self.state.is_collective
        return self.state.collectives_before, 1 if received else 0


@dataclass
class RankResult:
    rank: RankDir
    entries: int
    anomalous_entries: int
    anomaly: Optional[Anomaly]


def _bad_positions(name: str, entry: Dict[str, Any]) -> Tuple[List[str], List[str]]:
    rule = rule_for(try_parse_entry(name))
    bad_in: List[str] = []
    bad_out: List[str] = []
    for role, value in entry.items():
        for trail, record in iter_records(value):
            if record_is_finite(record) or ignored(rule, role, trail):
                continue
            where = ".".join([role] + [str(t) for t in trail])
            (bad_in if role in INPUT_ROLES else bad_out).append(where)
    return bad_in, bad_out


def entry_states(data: Dict[str, Dict[str, Any]]) -> List[EntryState]:
    """Per entry, in dump order: its non-finite positions and how many collectives came before it."""
    states: List[EntryState] = []
    collectives = 0
    for index, (name, entry) in enumerate(data.items()):
        parsed = try_parse_entry(name)
        bad_in, bad_out = _bad_positions(name, entry)
        is_collective = bool(parsed and parsed.prefix == "Distributed")
        states.append(EntryState(index, name, bad_in, bad_out, collectives, is_collective,
                                 bool(parsed and parsed.is_module)))
        if is_collective:
            collectives += 1
    return states


def _descend(first: EntryState, candidates: List[EntryState], construct: Dict[str, Any]) -> EntryState:
    """From a module, the earliest qualifying node inside it, repeatedly (the innermost culprit)."""
    chosen = first
    while chosen.is_module:
        inner = [c for c in candidates if c is not chosen and chosen.name in module_chain(construct, c.name)]
        if not inner:
            break
        chosen = inner[0]
    return chosen


def first_anomaly(states: List[EntryState], construct: Dict[str, Any]) -> Optional[Tuple[str, EntryState]]:
    """(kind, entry) of the first overflow event, or None when every tensor is finite."""
    first_bad = next((s for s in states if s.anomalous), None)
    if first_bad is None:
        return None
    candidates = [s for s in states if s.bad_outputs and not s.bad_inputs]
    if not candidates:
        return INHERITED, first_bad
    chosen = _descend(candidates[0], candidates, construct)
    # Inputs already bad before any node produced inf/nan: it entered from outside the dump.
    if first_bad.bad_inputs and first_bad.index < chosen.index and not _inside(construct, chosen, first_bad):
        return INHERITED, first_bad
    return ORIGIN, chosen


def _inside(construct: Dict[str, Any], node: EntryState, module: EntryState) -> bool:
    """A module recorded before its children sees inf/nan the child produced: not an outside source."""
    return module.is_module and module.name in module_chain(construct, node.name)


def analyze_rank(rank: RankDir, last: int = 5, files: Optional[RankFiles] = None) -> RankResult:
    """Load one rank directory (journal included) and find its first overflow event."""
    files = files or rank.load()
    data = files.dump.data
    states = entry_states(data)
    found = first_anomaly(states, files.construct)
    anomaly = None
    if found is not None:
        kind, state = found
        anomaly = Anomaly(rank=rank, kind=kind, state=state, data_info=data[state.name],
                          construct_info=module_chain(files.construct, state.name),
                          stack_info=list(files.stacks.get(state.name, [])),
                          before=states[max(0, state.index - last):state.index] if last > 0 else [])
    return RankResult(rank=rank, entries=len(states), anomalous_entries=sum(1 for s in states if s.anomalous),
                      anomaly=anomaly)
