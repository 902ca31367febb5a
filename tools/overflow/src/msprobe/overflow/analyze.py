"""Offline analysis of one rank: the first node whose inputs are finite and whose outputs are not.

Entries are taken in dump order (the order they were recorded, which is execution order for
APIs). A module entry can be recorded before or after the APIs it contains, so when the first
such node is a module, the analysis descends to the earliest qualifying node inside it (by
construct.json) — the innermost API is what the user has to fix.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from msprobe.schema import RankDir, RankFiles, iter_records, module_chain, record_is_finite, try_parse_entry
from msprobe.schema.dump import stat_value
from msprobe.schema.errors import PathLike
from msprobe.schema.index import find_index

from .rules import UserIgnore, has_nan, ignored, literal_non_finite, rule_for, user_ignore_for

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
    nan_inputs: bool = False
    nan_outputs: bool = False
    expected: bool = False
    """Its inf/nan outputs were asked for (an inf/nan literal argument, e.g. an attention mask), or are all
    covered by the user's ignore list."""
    ignored_by: Optional[str] = None
    """The item of the user's ignore list that covers all its inf/nan outputs."""
    is_param_grad: bool = False
    """A ``parameters_grad`` entry: the result of a backward node, often recorded before that node."""
    peak: Optional[float] = None
    """Largest finite |Max| / |Min| of its outputs: shows values growing towards an overflow."""
    non_finite: int = 0
    """Tensors of the entry with inf/nan statistics, counted as ``msprobe inspect`` counts them."""
    excused: int = 0
    """Of those, the ones an ignore rule leaves out (uninitialised memory, receive buffers)."""

    @property
    def anomalous(self) -> bool:
        return bool(self.bad_inputs or self.bad_outputs)

    @property
    def produces(self) -> bool:
        """Creates inf/nan: finite inputs and inf/nan outputs, or NaN outputs from inputs without NaN (inf-inf)."""
        if self.expected or not self.bad_outputs:
            return False
        return not self.bad_inputs or (self.nan_outputs and not self.nan_inputs)


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
    non_finite: int = 0
    """Tensors with inf/nan in this rank's dump (what ``msprobe inspect`` counts)."""
    first_non_finite: Optional[EntryState] = None
    """The first entry holding inf/nan, in dump order: where expected inf/nan that was left out begins."""


def _scan(name: str, entry: Dict[str, Any], state: EntryState, include_expected: bool = False,
          ignores: Tuple[UserIgnore, ...] = ()) -> None:
    """Fill the non-finite positions of one entry (ignore rules and the user's ``ignores`` applied unless
    ``include_expected``)."""
    parsed = try_parse_entry(name)
    rule = None if include_expected else rule_for(parsed)
    ignores = () if include_expected else ignores
    covered: List[str] = []
    for role, value in entry.items():
        is_input = role in INPUT_ROLES
        for trail, record in iter_records(value):
            if not is_input:
                _update_peak(state, record)
            if record_is_finite(record):
                continue
            state.non_finite += 1
            if ignored(rule, role, trail):
                state.excused += 1
                continue
            (state.bad_inputs if is_input else state.bad_outputs).append(
                ".".join([role] + [str(t) for t in trail]))
            item = user_ignore_for(ignores, parsed, record) if ignores and not is_input else None
            if item is not None:
                covered.append(str(item))
            if has_nan(record):
                if is_input:
                    state.nan_inputs = True
                else:
                    state.nan_outputs = True
    # a listed API whose every inf/nan output is covered counts as a mask: expected, and what flows from it too
    if covered and len(covered) == len(state.bad_outputs):
        state.ignored_by = covered[0]
    state.expected = not include_expected and (literal_non_finite(entry) or state.ignored_by is not None)


def _update_peak(state: EntryState, record: Dict[str, Any]) -> None:
    for key in ("Max", "Min"):
        number = stat_value(record.get(key))
        if number is not None and math.isfinite(number) and (state.peak is None or abs(number) > state.peak):
            state.peak = abs(number)


def scan_entry(name: str, entry: Dict[str, Any], ignores: Tuple[UserIgnore, ...] = ()) -> EntryState:
    """One entry's non-finite positions, on its own (for the online task)."""
    parsed = try_parse_entry(name)
    state = EntryState(0, name, [], [], 0, bool(parsed and parsed.prefix == "Distributed"),
                       bool(parsed and parsed.is_module), is_param_grad=bool(parsed and parsed.kind == "parameters_grad"))
    _scan(name, entry, state, ignores=ignores)
    return state


def entry_states(data: Dict[str, Dict[str, Any]], include_expected: bool = False,
                 ignores: Tuple[UserIgnore, ...] = ()) -> List[EntryState]:
    """Per entry, in dump order: its non-finite positions and how many collectives came before it.
    ``include_expected``: no inf/nan is expected (masks, empty memory, receive buffers are analysed too)."""
    states: List[EntryState] = []
    collectives = 0
    for index, (name, entry) in enumerate(data.items()):
        parsed = try_parse_entry(name)
        is_collective = bool(parsed and parsed.prefix == "Distributed")
        state = EntryState(index, name, [], [], collectives, is_collective, bool(parsed and parsed.is_module),
                           is_param_grad=bool(parsed and parsed.kind == "parameters_grad"))
        _scan(name, entry, state, include_expected, ignores)
        states.append(state)
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
    producers = [s for s in states if s.produces]
    # A parameter's gradient is recorded when it is accumulated, which can be before the backward node
    # that computed it is: it is the culprit only when no computing node qualifies.
    candidates = [s for s in producers if not s.is_param_grad] or producers
    chosen = _descend(candidates[0], candidates, construct) if candidates else None
    # inf/nan passing through (bad inputs and outputs) before any node created it entered from outside
    # the dump (data, weights, unhooked code) -- unless an expected inf (a mask) came first: then it
    # may be that mask travelling, and nothing can be concluded from it.
    for state in states:
        if chosen is not None and state.index >= chosen.index:
            break
        if state.expected:
            break
        if state.bad_inputs and state.bad_outputs and not (chosen and _inside(construct, chosen, state)):
            return INHERITED, state
    return (ORIGIN, chosen) if chosen is not None else None


def _inside(construct: Dict[str, Any], node: EntryState, module: EntryState) -> bool:
    """A module recorded before its children sees inf/nan the child produced: not an outside source."""
    return module.is_module and module.name in module_chain(construct, node.name)


def analyze_rank(rank: RankDir, last: int = 5, files: Optional[RankFiles] = None,
                 include_expected: bool = False, ignores: Tuple[UserIgnore, ...] = (),
                 cache: Optional[PathLike] = None) -> RankResult:
    """Load one rank directory (journal included) and find its first overflow event. A rank whose statistics
    index (beside dump.json, or in ``cache``) shows every tensor finite is answered from the index: no event.
    One that holds inf or nan is then read whole from dump.json, the index read for nothing: its report quotes
    whole entries (arguments, stacks), which the index does not hold, and in a run that overflowed most ranks
    are still finite (the index's question pays off on them)."""
    if files is None and not rank.interrupted and rank.dump_file is None:
        table = find_index(rank.path, cache)
        if table is not None and table.all_finite():
            return RankResult(rank=rank, entries=len(table.entries), anomalous_entries=0, anomaly=None)
    files = files or rank.load()
    data = files.dump.data
    states = entry_states(data, include_expected, ignores)
    found = first_anomaly(states, files.construct)
    anomaly = None
    if found is not None:
        kind, state = found
        anomaly = Anomaly(rank=rank, kind=kind, state=state, data_info=data[state.name],
                          construct_info=module_chain(files.construct, state.name),
                          stack_info=list(files.stacks.get(state.name, [])),
                          before=states[max(0, state.index - last):state.index] if last > 0 else [])
    return RankResult(rank=rank, entries=len(states), anomalous_entries=sum(1 for s in states if s.anomalous),
                      anomaly=anomaly, non_finite=sum(s.non_finite for s in states),
                      first_non_finite=next((s for s in states if s.non_finite), None))
