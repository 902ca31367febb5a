"""The first divergence: in execution order, the first API whose inputs agree and whose outputs do not.

Execution order: forward entries as recorded (call order), then backward entries as recorded (the
backward pass runs from the loss back, so this is the forward order reversed), then parameter
gradients. Agreement is judged per dtype tolerance (``CompareConfig.tolerances``). A plain argument
that differs (``approximate='tanh'``) does not make inputs disagree: it is the likely cause, and is
named in the report. When no API qualifies but outputs differ, the first API with differing outputs
is reported as ``inherited``: its inputs differed already (data, weights or code outside the dump).
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from msprobe.schema import module_chain

from .rank import EntryResult, RankComparison

ORIGIN, INHERITED = "origin", "inherited"


def execution_order(entries: List[EntryResult]) -> List[EntryResult]:
    forward = [e for e in entries if e.direction == "forward"]
    backward = [e for e in entries if e.direction == "backward"]
    rest = [e for e in entries if e.direction not in ("forward", "backward")]
    return forward + backward + rest


def first_divergence(comparison: RankComparison) -> Optional[Dict[str, Any]]:
    """The first diverging API of a rank as a plain dict (summary JSON), or None when outputs all agree."""
    ordered = [e for e in execution_order(comparison.entries) if e.golden is not None]
    apis = [e for e in ordered if e.kind == "api"] or ordered
    found = next((e for e in apis if e.inputs_ok and not e.outputs_ok), None)
    kind = ORIGIN
    if found is None:
        found = next((e for e in apis if not e.outputs_ok), None)
        kind = INHERITED
    if found is None:
        return None
    files = comparison.files["target"]
    return {
        "kind": kind,
        "entry": found.name,
        "golden_entry": found.golden,
        "direction": found.direction,
        "execution_index": ordered.index(found),
        "module_chain": module_chain(files.construct, found.name),
        "stack": list(files.stacks.get(found.name, [])),
        "input_error": finite_or_none(found.input_error),
        "output_error": finite_or_none(found.output_error),
        "worst_output": found.worst_output,
        "notes": list(found.notes),
    }


def finite_or_none(value: float) -> Optional[float]:
    return value if math.isfinite(value) else None


def paragraph(rank_label: str, found: Dict[str, Any], tolerance_note: str) -> str:
    """The first divergence of one rank as a paragraph for the terminal."""
    chain = " < ".join(found["module_chain"]) or "(no module recorded)"
    if found["kind"] == ORIGIN:
        head = (f"{rank_label}: first divergence at {found['entry']} ({found['direction']}): its inputs agree "
                f"(scaled error {_fmt(found['input_error'])}) but its outputs do not (scaled error "
                f"{_fmt(found['output_error'])} at {found['worst_output']}; {tolerance_note}).")
    else:
        head = (f"{rank_label}: outputs first differ at {found['entry']} ({found['direction']}), but its inputs "
                f"differed already (scaled error {_fmt(found['input_error'])}): the difference comes from "
                "data, weights or code outside the dump.")
    lines = [head, f"  module: {chain}"]
    lines.extend(f"  note: {note}" for note in found["notes"][:5])
    frames = [f for f in found["stack"] if "site-packages" not in f][:3] or found["stack"][:3]
    lines.extend("  at " + frame.replace("\n", " ").strip() for frame in frames)
    return "\n".join(lines)


def _fmt(value: Optional[float]) -> str:
    return "inf" if value is None else f"{value:.3g}"
