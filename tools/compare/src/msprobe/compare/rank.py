"""One rank of two dumps compared: the table rows and, per entry, whether inputs and outputs agree."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from msprobe.schema import RankDir, try_parse_entry
from msprobe.schema.unchecked import explain
from msprobe.schema.compare_result import ERROR, NOT_APPLICABLE, PASS, WARNING

from .config import CompareConfig
from .mapping import NameMapping
from .match import pair_entries
from .modes import choose_mode
from .rows import INPUT, PARAMETERS, Row
from .sides import RankSide, load_side
from .table import RowJudge
from .table_row import TableRow

_RANK_OF_RESULT = {NOT_APPLICABLE: 0, PASS: 0, WARNING: 1, "Different": 2, ERROR: 2}


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
class RankComparison:
    step: Optional[int]
    rank: Optional[int]
    label: str
    target: RankDir
    golden: RankDir
    mode: str
    mode_note: str
    rows: List[TableRow]
    entries: List[EntryResult]
    unmatched_golden: List[str]
    files: Dict[str, RankSide]
    """``target`` and ``golden``: each side as read (its construct.json and stack.json too)."""

    @property
    def counts(self) -> Dict[str, int]:
        out = {PASS: 0, WARNING: 0, ERROR: 0, NOT_APPLICABLE: 0}
        for row in self.rows:
            out[row.result if row.result in out else ERROR] += 1
        return out


def compare_rank(target: RankDir, golden: RankDir, config: CompareConfig, mapping: NameMapping) -> RankComparison:
    try:
        return _compare(target, golden, config, mapping)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # records are validated only on trouble
        raise explain(exc, target, golden) from None


def _compare(target: RankDir, golden: RankDir, config: CompareConfig, mapping: NameMapping) -> RankComparison:
    t_side, g_side = load_side(target), load_side(golden)
    mode, note = choose_mode(t_side, g_side, config.statistics)
    same = _family(t_side.framework) == _family(g_side.framework)
    judge = RowJudge(mode, config.tolerance, target.tensor_dir, golden.tensor_dir, config.max_tensor_bytes, same)
    pairs, unmatched = pair_entries(t_side.names, g_side.names, mapping)
    rows: List[TableRow] = []
    entries = []
    for t_name, g_name in pairs:
        entries.append(_compare_entry(t_name, g_name, t_side, g_side, judge, config, rows))
    return RankComparison(step=target.step, rank=target.rank, label=target.label, target=target, golden=golden,
                          mode=mode, mode_note=note, rows=rows, entries=entries, unmatched_golden=unmatched,
                          files={"target": t_side, "golden": g_side})


def _family(framework: Optional[str]) -> str:
    """MSAdapter/MindTorch tensors are MindSpore tensors: requires_grad means the same there."""
    return "mindspore" if framework in ("mindspore", "mindtorch") else str(framework)


def _kind(name: str):
    parsed = try_parse_entry(name)
    return (parsed.kind, parsed.direction) if parsed else ("other", None)


def _compare_entry(t_name: str, g_name: Optional[str], t_side: RankSide, g_side: RankSide,
                   judge: RowJudge, config: CompareConfig, rows: List[TableRow]) -> EntryResult:
    kind, direction = _kind(t_name)
    result = EntryResult(t_name, g_name, kind, direction, first_row=len(rows))
    t_rows = t_side.rows(t_name)
    g_rows = {} if g_name is None else {r.name[len(g_name):]: r for r in g_side.rows(g_name)}
    stack = _stack_text(t_side.stacks.get(t_name)) if config.stack else NOT_APPLICABLE
    for index, row in enumerate(t_rows):
        partner = g_rows.pop(row.name[len(t_name):], None) if g_name is not None else None
        if partner is not None and bool(partner.record) != bool(row.record):
            partner = None  # a None on one side (a gradient not computed): nothing to compare
        cells, error, messages = judge.row(row, partner, stack if index == 0 else NOT_APPLICABLE)
        rows.append(cells)
        _account(result, row, partner, cells.result, error, messages)
    if g_rows:
        result.notes.append("golden only: " + ", ".join(r.name for r in g_rows.values()))
    result.row_count = len(rows) - result.first_row
    return result


def _account(result: EntryResult, row: Row, partner: Optional[Row], verdict: str, error: float,
             messages: List[str]) -> None:
    if _RANK_OF_RESULT.get(verdict, 2) > _RANK_OF_RESULT.get(result.result, 2):
        result.result = verdict
    if partner is None:
        if result.golden is not None:
            result.notes.append(f"target only: {row.name}")
        return
    bad = verdict != PASS
    if bad and (row.is_tensor or row.kind != INPUT):
        result.differing.setdefault(row.kind, []).append(row.name)
    if row.kind == INPUT:
        result.input_error = max(result.input_error, error)
        if bad and row.is_tensor:
            result.inputs_ok = False
        elif bad:
            result.notes.append(f"argument {row.name} differs: {messages[0] if messages else verdict}")
    elif row.kind == PARAMETERS:
        if bad:
            result.params_ok = False
    else:
        if result.worst_output is None or error > result.output_error:
            result.worst_output = row.name
        result.output_error = max(result.output_error, error)
        if bad:
            result.outputs_ok = False


def _stack_text(frames: Optional[List[str]]) -> str:
    return NOT_APPLICABLE if not frames else str(list(frames))

