"""The first divergence of a rank: the first entry, in execution order, where anything disagrees.

Everything recorded before it agrees, so what differs there entered there, and how it entered is its kind:

- ``origin``: its tensor inputs (and parameters) agree, its outputs do not: the computation differs here
  (a plain argument that differs, ``approximate='tanh'``, is named in its notes, as it is usually the cause);
- ``parameter``: a parameter differs: a module's recorded ``parameters`` (L0, mix), or a forward API's input
  that requires grad and that no API before it produced (every earlier output agrees): a weight (L1, mix;
  at mix named by its module, ``model.layers.1.mlp.down_proj.weight``);
- ``inherited``: other inputs differ already (data, or code outside the dump); a backward entry whose
  forward diverged is always this, never an origin.

APIs are judged where the dump has them (L1, mix), modules otherwise (L0). Execution order is dump order
(both ours and msprobe's record an entry when it completes), grouped: forward, backward, the forward
entries recorded after the last backward one (the optimizer step), then parameter gradients.

A difference that never reaches anything computed after it is one in what the two dumps record, not in the
run: its rows say so and the search goes on. That is an entry whose inputs agree and whose outputs differ
while a later API received its value unchanged, and agreeing there (same dtype and statistics, a
non-constant tensor; msprobe 26.2 records ``cross_entropy``'s backward output as ``nll_loss``'s input
gradient), or whose outputs the two sides record in another shape or number while no later API's input,
and no parameter gradient, differs (msprobe 26.2's ``Functional.linear`` backward records its input again).
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from msprobe.cli.terminal import printable
from msprobe.schema import module_chain, try_parse_entry
from msprobe.schema.compare_result import ERROR, NOT_APPLICABLE as NA, PASS

from .rank import EntryResult, RankComparison
from .table_row import TableRow

ORIGIN, PARAMETER, INHERITED = "origin", "parameter", "inherited"
KINDS = (ORIGIN, PARAMETER, INHERITED)


@dataclass
class FirstDivergence:
    """Where a rank's divergence enters; ``to_json`` is its form in compare_summary.json."""

    kind: str
    """``origin``, ``parameter`` or ``inherited`` (module docstring)."""
    entry: str
    golden_entry: Optional[str]
    direction: Optional[str]
    execution_index: int
    """Position among the rank's matched entries in execution order."""
    module_chain: List[str]
    stack: List[str]
    input_error: Optional[float]
    """Largest scaled error of the inputs; None for infinite."""
    output_error: Optional[float]
    worst_output: Optional[str]
    notes: List[str]
    differing_inputs: List[str] = field(default_factory=list)
    """Rows of tensor inputs (and parameters) that disagree."""
    parameter: Optional[str] = None
    """Kind ``parameter``: the parameter's name where the dump tells it, else the input row."""
    recorded_differently: List[str] = field(default_factory=list)
    """Entries before it whose outputs differ only in how the two dumps record them."""
    rank: Optional[str] = None
    """Set when the rank's divergence becomes the run's: the rank's label, step and ``step0/rank1``."""
    step: Optional[int] = None
    where: Optional[str] = None

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)


def execution_order(entries: List[EntryResult]) -> List[EntryResult]:
    last_backward = max((i for i, e in enumerate(entries) if e.direction == "backward"), default=-1)
    forward = [e for e in entries[:last_backward + 1] if e.direction == "forward"]
    backward = [e for e in entries if e.direction == "backward"]
    after = [e for e in entries[last_backward + 1:] if e.direction == "forward"]
    rest = [e for e in entries if e.direction not in ("forward", "backward")]
    return forward + backward + after + rest


def first_divergence(comparison: RankComparison) -> Tuple[Optional[FirstDivergence], List[str]]:
    """The rank's first divergence (None when every matched entry agrees, apart from recording), and the
    entries found to differ only in how the two dumps record them."""
    ordered = [e for e in execution_order(comparison.entries) if e.golden is not None]
    judged = [e for e in ordered if e.kind == "api"] or [e for e in ordered if e.kind == "module"] or ordered
    witnesses: Optional[Dict[Tuple[str, ...], int]] = None
    skipped: List[EntryResult] = []
    # where a difference last reached an input, or a parameter gradient (what the step consumes)
    last_reached = max((i for i, e in enumerate(judged) if not e.inputs_ok), default=-1)
    if any(e.differs for e in ordered if e.kind == "parameters_grad"):
        last_reached = len(judged)
    for position, entry in enumerate(judged):
        if not entry.differs:
            continue
        kind, parameter = _classify(entry, comparison, skipped)
        if kind == ORIGIN:
            witnesses = _passing_inputs(comparison, judged) if witnesses is None else witnesses
            seen_by = _received_unchanged(comparison, entry, position, witnesses)
            if seen_by:
                _mark_recorded_differently(comparison, entry, seen_by, _RECEIVED)
                skipped.append(entry)
                continue
            shaped = _shaped_differently(comparison, entry)
            if shaped and last_reached < position:
                _mark_recorded_differently(comparison, entry, shaped, _UNCONSUMED)
                skipped.append(entry)
                continue
        return _describe(comparison, entry, kind, parameter, ordered.index(entry), skipped), [e.name for e in skipped]
    return None, [e.name for e in skipped]


def _classify(entry: EntryResult, comparison: RankComparison, skipped: List[EntryResult]) -> Tuple[str, Optional[str]]:
    if entry.direction == "backward" and _forward_diverged(entry, comparison, skipped):
        return INHERITED, None
    if not entry.params_ok:
        return PARAMETER, _parameter_name(entry.differing.get("parameters", [""])[0])
    if entry.inputs_ok:
        return ORIGIN, None
    if entry.direction == "forward":
        rows = _rows(comparison, entry)
        for name in entry.differing.get("input", []):
            row = rows.get(name)
            if row is not None and row.target_requires_grad == "True":
                return PARAMETER, _module_parameter(comparison, entry, row) or name
    return INHERITED, None


def _forward_diverged(entry: EntryResult, comparison: RankComparison, skipped: List[EntryResult]) -> bool:
    forward = _forward_name(entry.name)
    twin = next((e for e in comparison.entries if e.name == forward), None)
    return twin is not None and twin.golden is not None and twin.differs and twin not in skipped


def _forward_name(name: str) -> str:
    """``X.backward`` -> ``X.forward``; ``Module.m.Linear.backward.0`` -> ``...forward.0``."""
    if name.endswith(".backward"):
        return name[: -len("backward")] + "forward"
    return name.replace(".backward.", ".forward.")


def _rows(comparison: RankComparison, entry: EntryResult) -> Dict[str, TableRow]:
    return {r.target_name: r for r in comparison.rows[entry.first_row: entry.first_row + entry.row_count]}


def _parameter_name(row_name: str) -> str:
    """``Module.m.down_proj.Linear.forward.0.parameters.weight`` -> ``m.down_proj.weight``."""
    head, _, param = row_name.partition(".parameters.")
    parsed = try_parse_entry(head)
    return f"{parsed.name}.{param}" if parsed is not None and param else row_name


def _module_parameter(comparison: RankComparison, entry: EntryResult, row: TableRow) -> Optional[str]:
    """The recorded parameter of the API's module (mix) holding the same values as the input row."""
    chain = module_chain(comparison.files["target"].construct, entry.name)
    module = next((e for e in comparison.entries if chain and e.name == chain[0]), None)
    if module is None:
        return None
    for name, cells in _rows(comparison, module).items():
        if ".parameters." in name and _value_key(cells) == _value_key(row) and _holds_a_value(row):
            return _parameter_name(name)
    return None


def _value_key(row: TableRow) -> Tuple[str, ...]:
    """What identifies a tensor's value across entries: dtype, statistics (or CRC-32 in md5 mode)."""
    return (row.target_dtype, str(row.target_md5)) + tuple(str(s) for s in row.target_stats)


def _holds_a_value(row: TableRow) -> bool:
    """Whether a statistic or the checksum is known (rows of N/A only match everything)."""
    return any(value != NA for value in _value_key(row)[1:])


def _passing_inputs(comparison: RankComparison, judged: List[EntryResult]) -> Dict[Tuple[str, ...], int]:
    """Target value of every agreeing tensor input -> the last judged position that received it."""
    out: Dict[Tuple[str, ...], int] = {}
    for position, entry in enumerate(judged):
        prefix = entry.name + ".input."
        for row in comparison.rows[entry.first_row: entry.first_row + entry.row_count]:
            if row.result == PASS and row.target_name.startswith(prefix) and row.target_stats[0] != row.target_stats[1]:
                out[_value_key(row)] = position
    return out


def _received_unchanged(comparison: RankComparison, entry: EntryResult, position: int,
                        witnesses: Dict[Tuple[str, ...], int]) -> List[str]:
    """When every differing output of ``entry`` reached a later API unchanged and agreeing there: one row
    name per output saying so; else empty."""
    rows = _rows(comparison, entry)
    seen = []
    for name in entry.differing.get("output", []):
        row = rows[name]
        if row.target_stats[0] == row.target_stats[1] or witnesses.get(_value_key(row), -1) <= position:
            return []
        seen.append(name)
    return seen


def _shaped_differently(comparison: RankComparison, entry: EntryResult) -> List[str]:
    """Output rows the two sides do not record alike (shape, dtype, or present on one side only)."""
    prefix = entry.name + ".output"
    return [name for name, row in _rows(comparison, entry).items()
            if name.startswith(prefix) and row.result in (ERROR, NA)]


_RECEIVED = ("Differs, but a later API received this value unchanged, and there it agrees: the two dumps record "
             "it differently; not a divergence.")
_UNCONSUMED = ("Recorded in another shape or number of outputs, and no API after it received a different input "
               "(nor does any parameter gradient differ): the two dumps record it differently; not a divergence.")


def _mark_recorded_differently(comparison: RankComparison, entry: EntryResult, names: List[str], note: str) -> None:
    rows = _rows(comparison, entry)
    for name in names:
        row = rows[name]
        row.err_message = json.dumps(json.loads(row.err_message) + [note])
    entry.notes.append(note)


def _describe(comparison: RankComparison, entry: EntryResult, kind: str, parameter: Optional[str], index: int,
              skipped: List[EntryResult]) -> FirstDivergence:
    files = comparison.files["target"]
    differing = entry.differing.get("parameters", []) + entry.differing.get("input", [])
    return FirstDivergence(
        kind=kind, entry=entry.name, golden_entry=entry.golden, direction=entry.direction,
        execution_index=index, module_chain=module_chain(files.construct, entry.name),
        stack=list(files.stacks.get(entry.name, [])), input_error=finite_or_none(entry.input_error),
        output_error=finite_or_none(entry.output_error), worst_output=entry.worst_output, notes=list(entry.notes),
        differing_inputs=differing, parameter=parameter, recorded_differently=[e.name for e in skipped])


def finite_or_none(value: float) -> Optional[float]:
    return value if math.isfinite(value) else None


def paragraph(rank_label: str, found: FirstDivergence, tolerance_note: str) -> str:
    """The first divergence of one rank as a paragraph for the terminal."""
    chain = " < ".join(found.module_chain) or "(no module recorded)"
    where = f"{found.entry} ({found.direction})"
    if found.kind == ORIGIN:
        head = (f"{rank_label}: first divergence at {where}: its inputs agree (scaled error "
                f"{_fmt(found.input_error)}) but its outputs do not (scaled error {_fmt(found.output_error)} at "
                f"{found.worst_output}; {tolerance_note}).")
    elif found.kind == PARAMETER:
        head = (f"{rank_label}: first divergence at {where}: parameter {found.parameter} differs while everything "
                f"before it agrees: the weights differ (changed, loaded or initialised differently).")
    else:
        inputs = ", ".join(found.differing_inputs[:3]) or "its inputs"
        head = (f"{rank_label}: first divergence at {where}, inherited: {inputs} differ(s) while everything before "
                "it agrees: the difference comes from data or code outside the dump"
                + (" (its forward diverged)." if found.direction == "backward" else "."))
    lines = [head, f"  module: {chain}"]
    lines.extend(f"  note: {note}" for note in found.notes[:5])
    if found.recorded_differently:
        lines.append(f"  recorded differently, not a divergence: {', '.join(found.recorded_differently[:3])}")
    frames = [f for f in found.stack if "site-packages" not in f][:3] or found.stack[:3]
    lines.extend("  at " + frame.replace("\n", " ").strip() for frame in frames)
    return "\n".join(printable(line) for line in lines)  # names from the dumps: control characters escaped


def _fmt(value: Optional[float]) -> str:
    return "inf" if value is None else f"{value:.3g}"
