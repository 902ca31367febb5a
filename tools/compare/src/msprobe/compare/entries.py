"""Each entry's verdict from its rows, by column: whether its inputs, outputs and parameters agree, its largest
scaled errors, and its notes; one entry as a typed record (``EntryResult``) only when it is described."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import numpy as np

from msprobe.schema.compare_result import DIFFERENT, ERROR, PASS, WARNING
from msprobe.schema.leaves import INPUT, PARAMETERS
from msprobe.schema.names import entry_kind

from .judge import CODE, RESULTS

if TYPE_CHECKING:
    from .rank import RankRows

_SEVERITY = np.zeros(len(RESULTS), dtype=np.int8)
_SEVERITY[[CODE[WARNING], CODE[DIFFERENT], CODE[ERROR]]] = (1, 2, 2)
"""How bad a row's result is for its entry (the first row of the worst severity gives the entry's result)."""


@dataclass
class EntryResult:
    """One target entry and its golden partner."""

    name: str
    golden: Optional[str]
    kind: str
    """``api``, ``module``, ``parameters_grad`` or ``other``."""
    direction: Optional[str]
    input_error: float = 0.0
    output_error: float = 0.0
    inputs_ok: bool = True
    """Every tensor input agrees (plain arguments are ``notes``)."""
    outputs_ok: bool = True
    params_ok: bool = True
    """Every parameter the entry records (a module's ``parameters``, L0 and mix) agrees."""
    result: str = PASS
    notes: List[str] = field(default_factory=list)
    first_row: int = 0
    row_count: int = 0
    worst_output: Optional[str] = None
    """The output row with the largest scaled error."""
    differing: Dict[str, List[str]] = field(default_factory=dict)
    """Row names that disagree, by kind (``input``, ``output``, ``parameters``)."""

    @property
    def differs(self) -> bool:
        return not (self.inputs_ok and self.outputs_ok and self.params_ok)


@dataclass
class EntryTable:
    """Every target entry's verdict, in call order, by column (a rank holds up to hundreds of thousands)."""

    names: List[str]
    golden: List[Optional[str]]
    kinds: List[str]
    directions: List[Optional[str]]
    first_row: np.ndarray
    row_count: np.ndarray
    input_error: np.ndarray
    output_error: np.ndarray
    inputs_ok: np.ndarray
    outputs_ok: np.ndarray
    params_ok: np.ndarray
    result: np.ndarray
    worst_output: np.ndarray
    """The output row with the largest scaled error; -1 for none."""
    notes: Dict[int, List[str]]
    rows: "RankRows"
    row_differs: np.ndarray
    """bool per row: it has a partner and disagrees (a plain input argument counts in the notes instead)."""

    def __len__(self) -> int:
        return len(self.names)

    @property
    def differs(self) -> np.ndarray:
        return ~(self.inputs_ok & self.outputs_ok & self.params_ok)

    def entry(self, i: int) -> EntryResult:
        worst = int(self.worst_output[i])
        return EntryResult(
            self.names[i], self.golden[i], self.kinds[i], self.directions[i], float(self.input_error[i]),
            float(self.output_error[i]), bool(self.inputs_ok[i]), bool(self.outputs_ok[i]), bool(self.params_ok[i]),
            RESULTS[self.result[i]], list(self.notes.get(i, [])), int(self.first_row[i]), int(self.row_count[i]),
            None if worst < 0 else self.rows.name(worst), self.differing(i))

    def row_range(self, i: int) -> range:
        return range(int(self.first_row[i]), int(self.first_row[i] + self.row_count[i]))

    def differing_rows(self, i: int) -> Dict[str, List[int]]:
        """Rows that disagree (:attr:`row_differs`), by kind."""
        out: Dict[str, List[int]] = {}
        for row in self.row_range(i):
            if self.row_differs[row]:
                out.setdefault(self.rows.target.kind[row], []).append(row)
        return out

    def differing(self, i: int) -> Dict[str, List[str]]:
        return {kind: [self.rows.name(row) for row in found] for kind, found in self.differing_rows(i).items()}


def entry_table(names: List[str], golden: List[Optional[str]], rows: "RankRows", messages) -> EntryTable:
    """The entries' verdicts; ``messages(row)``: a row's messages (the first names why a plain argument differs)."""
    count, order = len(names), rows.target.order
    kinds, directions = zip(*map(entry_kind, names)) if names else ((), ())
    first = np.searchsorted(order, np.arange(count), side="left")
    row_count = np.searchsorted(order, np.arange(count), side="right") - first
    per_entry = _PerEntry(first, row_count)
    code, error, partner = rows.verdicts.result, rows.verdicts.error, rows.partner
    paired, bad = partner >= 0, code != CODE[PASS]
    is_input, is_param = rows.target.kind.equals(INPUT), rows.target.kind.equals(PARAMETERS)
    is_output = ~is_input & ~is_param
    severity = _SEVERITY[code]
    position, beyond = np.arange(len(order)), len(order)
    worst = per_entry.reduce(np.maximum, severity, 0)
    deciding = per_entry.reduce(np.minimum, np.where((severity > 0) & (severity == worst[order]), position, beyond),
                                beyond)
    result = np.full(count, CODE[PASS], dtype=np.int8)
    decided = deciding < beyond
    result[decided] = code[deciding[decided]]
    input_error = per_entry.reduce(np.maximum, np.where(paired & is_input, error, 0.0), 0.0)
    outputs = paired & is_output
    output_error = per_entry.reduce(np.maximum, np.where(outputs, error, 0.0), 0.0)
    worst_output = per_entry.reduce(np.minimum, np.where(outputs & (error == output_error[order]), position, beyond),
                                    beyond)
    worst_output[worst_output >= beyond] = -1
    differs = paired & bad & (rows.target.tensor | ~is_input)
    out = EntryTable(list(names), list(golden), list(kinds), list(directions), first, row_count, input_error,
                     output_error, per_entry.none(differs & is_input), per_entry.none(differs & is_output),
                     per_entry.none(differs & is_param), result, worst_output, {}, rows, differs)
    _add_notes(out, rows, paired, is_input & bad, messages)
    return out


class _PerEntry:
    """Reductions of row columns to one value per entry (an entry's rows are consecutive)."""

    def __init__(self, first: np.ndarray, count: np.ndarray) -> None:
        self.first = first
        self.holding = np.flatnonzero(count > 0)

    def reduce(self, ufunc: np.ufunc, values: np.ndarray, empty: Any) -> np.ndarray:
        out = np.full(len(self.first), empty, dtype=values.dtype)
        if self.holding.size:
            out[self.holding] = ufunc.reduceat(values, self.first[self.holding])
        return out

    def none(self, failing: np.ndarray) -> np.ndarray:
        """True for an entry none of whose rows is ``failing``."""
        return ~self.reduce(np.logical_or, failing, False)


def _add_notes(table: EntryTable, rows: "RankRows", paired: np.ndarray, bad_input: np.ndarray, messages) -> None:
    order, matched = rows.target.order, np.array([g is not None for g in table.golden], dtype=bool)
    target_only = ~paired & matched[order]
    for row in np.flatnonzero(target_only | (paired & bad_input & ~rows.target.tensor)).tolist():
        if paired[row]:
            said = messages(row)
            why = said[0] if said else RESULTS[rows.verdicts.result[row]]
            note = f"argument {rows.name(row)} differs: {why}"
        else:
            note = f"target only: {rows.name(row)}"
        table.notes.setdefault(int(order[row]), []).append(note)
    golden, left_rows = rows.golden, np.flatnonzero(~rows.golden_taken).tolist()
    owner = {name: i for i, name in enumerate(table.golden) if name is not None} if left_rows else {}
    left: Dict[int, List[str]] = {}
    for row in left_rows:
        name = golden.entries[golden.order[row]]
        if name in owner:
            left.setdefault(owner[name], []).append(f"{name}.{golden.label[row]}")
    for entry, names in left.items():
        table.notes.setdefault(entry, []).append("golden only: " + ", ".join(names))

