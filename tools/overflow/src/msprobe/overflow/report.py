"""What ``msprobe overflow_check`` prints and writes (``anomaly_analyze_*.json``, msprobe-compatible)."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from msprobe.cli.terminal import printable
from msprobe.schema import MsprobeError, iter_records
from msprobe.schema.jsonio import write_json_new

from .analyze import INHERITED, Anomaly, EntryState
from .order import StepResult

NO_ANOMALY = "Cannot find any anomaly node, no need to generate analyze file."
INCLUDE_HINT = "--include-expected analyses them as overflows"


def rank_key(anomaly: Anomaly) -> str:
    """``rank_<R>`` as msprobe writes it; a dump without rank id is ``rank_0``."""
    rank = anomaly.rank
    if rank.rank is None and rank.proc is not None:
        return f"proc_{rank.proc}"
    return f"rank_{rank.rank or 0}"


def to_json(result: StepResult) -> Dict[str, List[Dict[str, Any]]]:
    """``{"rank_R": [{op_name, data_info, construct_info, stack_info}]}``, the starting rank first."""
    out: Dict[str, List[Dict[str, Any]]] = {}
    for event in result.events:
        out.setdefault(rank_key(event), []).append({
            "op_name": event.op_name, "data_info": event.data_info,
            "construct_info": event.construct_info, "stack_info": event.stack_info})
    return out


def write_reports(results: List[StepResult], output: Path) -> List[Path]:
    """One ``anomaly_analyze_<timestamp>.json`` per step with an anomaly (``_step<N>`` added when several).
    A name already taken, by an earlier run or one running at the same time, gets ``_1``, ``_2``... added:
    no report replaces another."""
    found = [r for r in results if r.events]
    if not found:
        return []
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MsprobeError(f"{output}: cannot create the output directory ({exc.strerror})") from None
    stamp = time.strftime("%Y%m%d%H%M%S")
    paths = []
    for result in found:
        tag = f"_{result.step_name}" if len(results) > 1 and result.step_name is not None else ""
        try:
            paths.append(write_json_new(output / f"anomaly_analyze{tag}_{stamp}.json", to_json(result)))
        except OSError as exc:
            raise MsprobeError(f"{output}: cannot write the report ({exc.strerror})") from None
    return paths


def _stats(entry_value: Any) -> str:
    parts = []
    for trail, record in iter_records(entry_value):
        where = ".".join(str(t) for t in trail)
        parts.append(f"{where}[{record.get('dtype', '?')}] max={record.get('Max')} min={record.get('Min')}")
    return "; ".join(parts[:4]) + (f"; ... {len(parts) - 4} more" if len(parts) > 4 else "")


def _brief(state: EntryState) -> str:
    flags = []
    if state.bad_inputs:
        flags.append("inf/nan in " + ", ".join(state.bad_inputs[:3]))
    if state.bad_outputs:
        flags.append("inf/nan out " + ", ".join(state.bad_outputs[:3]))
    if state.peak is not None:
        flags.append(f"outputs |max|={state.peak:.6g}")
    return f"{state.name}" + (f"  ({'; '.join(flags)})" if flags else "")


def print_results(results: List[StepResult], echo: Callable[[str], None], stack_lines: int = 8) -> None:
    """The console report, one ``echo`` per line; names from the dump (entries, modules, stack frames) printed
    escaped, so a name holding terminal escape codes shows them rather than runs them."""
    echo = _escaping(echo)
    for result in results:
        where = result.step_name or "dump"
        ranks = len(result.ranks)
        if not result.events:
            head, _, more = _left_out(result).partition("\n")  # (the first line break is ours: no name before it)
            echo(f"{where}: {ranks} rank(s), no overflow found{head}")
            if more:
                echo(more)
            continue
        origin = result.origin
        echo(f"{where}: {ranks} rank(s), {len(result.events)} with an overflow, {result.non_finite} tensor(s) "
             f"with inf/nan; overflow started on {origin.rank.label} at {origin.op_name}")
        if len(result.tied) > 1:
            echo("  cannot order: " + ", ".join(f"{e.rank.label} {e.op_name}" for e in result.tied)
                 + " reached inf/nan between the same collectives")
        for event in result.events:
            _print_event(event, echo, stack_lines)


def _escaping(echo: Callable[[str], None]) -> Callable[[str], None]:
    return lambda line: echo(printable(line))


def _left_out(result: StepResult) -> str:
    """What a step without overflow still holds: the inf/nan tensors left out as expected, and why."""
    left = left_out(result)
    if left is None:
        return "; no tensor holds inf/nan"
    return (f"; {left['tensors']} tensor(s) hold inf/nan, all left out as expected\n"
            f"  they begin at {left['begins_at']}: it {left['why']}; {INCLUDE_HINT}")


def left_out(result: StepResult) -> Optional[Dict[str, Any]]:
    """A step without overflow whose tensors still hold inf/nan: how many, where they begin and why they were
    left out; None otherwise."""
    if result.events or not result.non_finite:
        return None
    first = next(r.first_non_finite for r in result.ranks if r.first_non_finite is not None)
    return {"tensors": result.non_finite, "begins_at": first.name, "why": _why_expected(first)}


def _why_expected(state: EntryState) -> str:
    if state.ignored_by is not None:
        return f"is on the ignore list ({state.ignored_by})"
    if state.expected:
        return "was given an inf/nan number (an attention mask: masked_fill(mask, -inf), full(..., -inf))"
    if state.excused and state.excused == state.non_finite:
        return "may hold any value there (uninitialised memory, or a buffer a collective fills)"
    if state.bad_inputs and not state.bad_outputs:
        return "turns its inf/nan inputs into finite outputs"
    return "carries inf/nan from an expected source before it"


def _print_event(event: Anomaly, echo: Callable[[str], None], stack_lines: int) -> None:
    state = event.state
    how = ("its inputs already hold inf/nan (from data, weights or code the dump did not record)"
           if event.kind == INHERITED else
           "received inf/nan through this collective" if state.is_collective else
           "finite inputs, inf/nan outputs")
    echo(f"- {event.rank.label}: {event.op_name}  [{how}; after {state.collectives_before} collective(s)]")
    echo(f"    inputs : {_stats({k: v for k, v in event.data_info.items() if 'input' in k or k == 'parameters'})}")
    echo(f"    outputs: {_stats({k: v for k, v in event.data_info.items() if 'output' in k})}")
    echo("    module chain: " + (" <- ".join(event.construct_info) if event.construct_info else "-"))
    if event.stack_info:
        echo("    stack (innermost first):")
        for frame in event.stack_info[:stack_lines]:
            echo("      " + " ".join(frame.split()))
    if event.before:
        echo(f"    the {len(event.before)} entries before it:")
        for state_before in event.before:
            echo("      " + _brief(state_before))


def summary_json(results: List[StepResult]) -> str:
    """A machine-readable summary (``--json``): per step, the origin and every rank's event."""
    doc = []
    for result in results:
        doc.append({
            "step": result.step,
            "step_dir": result.step_name,
            "non_finite_tensors": result.non_finite,
            "left_out": left_out(result),
            "origin": None if result.origin is None else {"rank": result.origin.rank.label,
                                                          "op_name": result.origin.op_name},
            "tied": [{"rank": e.rank.label, "op_name": e.op_name} for e in result.tied],
            "events": [{"rank": e.rank.label, "op_name": e.op_name, "kind": e.kind,
                        "collectives_before": e.state.collectives_before, "collective": e.state.is_collective}
                       for e in result.events],
        })
    return json.dumps(doc, indent=1)
