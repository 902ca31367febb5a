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

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from msprobe.cli.terminal import printable
from msprobe.schema import module_chain, try_parse_entry
import numpy as np

from msprobe.schema.compare_result import ERROR, NOT_APPLICABLE as NA, PASS
from msprobe.schema.leaves import INPUT

from .entries import EntryTable
from .judge import CODE, RESULTS
from .rank import RankComparison
from .table import TableCells
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


def execution_order(entries: EntryTable) -> np.ndarray:
    """The entries' positions in execution order."""
    direction = np.array([{"forward": 1, "backward": 2}.get(d, 0) for d in entries.directions], dtype=np.int8)
    position = np.arange(len(direction))
    backward = np.flatnonzero(direction == 2)
    last_backward = int(backward[-1]) if backward.size else -1
    forward = direction == 1
    return np.concatenate((position[forward & (position <= last_backward)], backward,
                           position[forward & (position > last_backward)], np.flatnonzero(direction == 0)))


def first_divergence(comparison: RankComparison) -> Tuple[Optional[FirstDivergence], List[str]]:
    """The rank's first divergence (None when every matched entry agrees, apart from recording), and the
    entries found to differ only in how the two dumps record them."""
    return _Search(comparison).run()


class _Search:
    """The first divergence's search over one rank's entries, in execution order."""

    def __init__(self, comparison: RankComparison) -> None:
        self.comparison = comparison
        self.entries = entries = comparison.entries
        self.cells = TableCells.of(comparison)
        order = execution_order(entries)
        self.ordered = order[np.array([g is not None for g in entries.golden], dtype=bool)[order]]
        kinds = np.array(entries.kinds, dtype=object)[self.ordered]
        judged = self.ordered[kinds == "api"]
        if not judged.size:
            judged = self.ordered[kinds == "module"]
        self.judged = judged if judged.size else self.ordered
        self.position = np.full(len(entries), -1, dtype=np.int64)
        self.position[self.judged] = np.arange(len(self.judged))
        self.skipped: List[int] = []
        self._index: Optional[Dict[str, int]] = None
        # where a difference last reached an input, or a parameter gradient (what the step consumes)
        failing = np.flatnonzero(~entries.inputs_ok[self.judged])
        self.last_reached = int(failing[-1]) if failing.size else -1
        if entries.differs[self.ordered[kinds == "parameters_grad"]].any():
            self.last_reached = len(self.judged)

    def run(self) -> Tuple[Optional[FirstDivergence], List[str]]:
        entries = self.entries
        for position in np.flatnonzero(entries.differs[self.judged]).tolist():
            entry = int(self.judged[position])
            kind, parameter = self._classify(entry)
            if kind == ORIGIN:
                seen_by = self._received_unchanged(entry, position)
                if seen_by:
                    self._mark_recorded_differently(entry, seen_by, _RECEIVED)
                    continue
                shaped = self._shaped_differently(entry)
                if shaped and self.last_reached < position:
                    self._mark_recorded_differently(entry, shaped, _UNCONSUMED)
                    continue
            index = int(np.flatnonzero(self.ordered == entry)[0])
            return self._describe(entry, kind, parameter, index), self._skipped_names()
        return None, self._skipped_names()

    def _skipped_names(self) -> List[str]:
        return [self.entries.names[i] for i in self.skipped]

    def _entry_at(self, name: str) -> Optional[int]:
        if self._index is None:
            self._index = {n: i for i, n in enumerate(self.entries.names)}
        return self._index.get(name)

    def _classify(self, entry: int) -> Tuple[str, Optional[str]]:
        entries, rows = self.entries, self.comparison.rows
        if entries.directions[entry] == "backward" and self._forward_diverged(entry):
            return INHERITED, None
        differing = entries.differing_rows(entry)
        if not entries.params_ok[entry]:  # (a parameter row differs)
            return PARAMETER, _parameter_name(rows.name(differing["parameters"][0]))
        if entries.inputs_ok[entry]:
            return ORIGIN, None
        if entries.directions[entry] == "forward":
            for row in differing.get("input", []):
                if rows.target.requires_grad[row] == 1 and rows.target.tensor[row]:
                    return PARAMETER, self._module_parameter(entry, row) or rows.name(row)
        return INHERITED, None

    def _forward_diverged(self, entry: int) -> bool:
        twin = self._entry_at(_forward_name(self.entries.names[entry]))
        return (twin is not None and self.entries.golden[twin] is not None and bool(self.entries.differs[twin])
                and twin not in self.skipped)

    def _module_parameter(self, entry: int, row: int) -> Optional[str]:
        """The recorded parameter of the API's module (mix) holding the same values as the input row."""
        chain = module_chain(self.comparison.files["target"].construct, self.entries.names[entry])
        module = self._entry_at(chain[0]) if chain else None
        if module is None:
            return None
        key = _value_key(self.cells.row(row))
        if not _holds_a_value(key):
            return None
        for candidate in self.entries.row_range(module):
            name = self.comparison.rows.name(candidate)
            if ".parameters." in name and _value_key(self.cells.row(candidate)) == key:
                return _parameter_name(name)
        return None

    def _received_unchanged(self, entry: int, position: int) -> List[int]:
        """When every differing output of ``entry`` reached a later API unchanged and agreeing there: its rows;
        else empty."""
        seen = []
        for row in self.entries.differing_rows(entry).get("output", []):
            cells = self.cells.row(row)
            if cells.target_stats[0] == cells.target_stats[1] or not self._witnessed(row, _value_key(cells), position):
                return []
            seen.append(row)
        return seen

    def _witnessed(self, row: int, key: Tuple[str, ...], position: int) -> bool:
        """Whether a judged entry after ``position`` received the value of ``row`` as an input that agrees (and is
        no constant: its Max and Min differ). Rows of the same numbers are found by column, then their cells
        compared."""
        rows = self.comparison.rows
        t = rows.target
        numbers, same_nan = rows.target_values.numbers, np.isnan(rows.target_values.numbers)
        alike = ((numbers == numbers[row]) | (same_nan & same_nan[row])).all(axis=1)
        alike &= t.kind.equals(INPUT) & (rows.verdicts.result == CODE[PASS]) & (self.position[t.order] > position)
        return any(cells.target_stats[0] != cells.target_stats[1] and _value_key(cells) == key
                   for cells in self.cells.rows_at(np.flatnonzero(alike)))

    def _shaped_differently(self, entry: int) -> List[int]:
        """Output rows the two sides do not record alike (shape, dtype, or present on one side only)."""
        rows = self.comparison.rows
        return [row for row in self.entries.row_range(entry) if str(rows.target.label[row]).startswith("output")
                and RESULTS[rows.verdicts.result[row]] in (ERROR, NA)]

    def _mark_recorded_differently(self, entry: int, rows: List[int], note: str) -> None:
        for row in rows:
            self.comparison.rows.notes.setdefault(row, []).append(note)
        self.entries.notes.setdefault(entry, []).append(note)
        self.skipped.append(entry)

    def _describe(self, entry: int, kind: str, parameter: Optional[str], index: int) -> FirstDivergence:
        files = self.comparison.files["target"]
        found = self.entries.entry(entry)
        differing = found.differing.get("parameters", []) + found.differing.get("input", [])
        return FirstDivergence(
            kind=kind, entry=found.name, golden_entry=found.golden, direction=found.direction,
            execution_index=index, module_chain=module_chain(files.construct, found.name),
            stack=list(files.stacks.get(found.name, [])), input_error=finite_or_none(found.input_error),
            output_error=finite_or_none(found.output_error), worst_output=found.worst_output, notes=list(found.notes),
            differing_inputs=differing, parameter=parameter, recorded_differently=self._skipped_names())


def _forward_name(name: str) -> str:
    """``X.backward`` -> ``X.forward``; ``Module.m.Linear.backward.0`` -> ``...forward.0``."""
    if name.endswith(".backward"):
        return name[: -len("backward")] + "forward"
    return name.replace(".backward.", ".forward.")


def _parameter_name(row_name: str) -> str:
    """``Module.m.down_proj.Linear.forward.0.parameters.weight`` -> ``m.down_proj.weight``."""
    head, _, param = row_name.partition(".parameters.")
    parsed = try_parse_entry(head)
    return f"{parsed.name}.{param}" if parsed is not None and param else row_name


def _value_key(row: TableRow) -> Tuple[str, ...]:
    """What identifies a tensor's value across entries: dtype, statistics (or CRC-32 in md5 mode)."""
    return (row.target_dtype, str(row.target_md5)) + tuple(str(s) for s in row.target_stats)


def _holds_a_value(key: Tuple[str, ...]) -> bool:
    """Whether a statistic or the checksum is known (rows of N/A only match everything)."""
    return any(value != NA for value in key[1:])


_RECEIVED = ("Differs, but a later API received this value unchanged, and there it agrees: the two dumps record "
             "it differently; not a divergence.")
_UNCONSUMED = ("Recorded in another shape or number of outputs, and no API after it received a different input "
               "(nor does any parameter gradient differ): the two dumps record it differently; not a divergence.")


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
