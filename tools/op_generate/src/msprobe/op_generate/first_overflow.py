"""The two readings of the ``first-overflow`` recipe (justfile): which API ``overflow_check --json`` names
first and how, and what the script op_generate wrote for it says once run alone.

``python -m msprobe.op_generate.first_overflow origin OVERFLOW_JSON`` prints what the first event is
(``first overflowing API: Torch.exp.0.forward (step0/rank)``), nothing when the dump holds no inf/nan.
``python -m msprobe.op_generate.first_overflow nothing OVERFLOW_JSON DUMP`` says what a dump without an overflow
holds: no inf/nan at all, or inf/nan that overflow_check left out as expected (masks...), how much and why.
``python -m msprobe.op_generate.first_overflow alone OVERFLOW_JSON`` prints why that event cannot be run alone
(a collective), nothing when it can.
``python -m msprobe.op_generate.first_overflow verdict OVERFLOW_JSON SCRIPT STATUS REPORTS`` prints the
verdict from the script's exit status and the reports it wrote in REPORTS (exit 0), or, on stderr, that the
script gave none (exit non-zero).
"""
from __future__ import annotations

import csv
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from msprobe.cli.terminal import echo as _say  # entry names from the dump printed escaped

from .verdict import OWN_INF_NAN

KINDS = {"origin": "first overflowing API", "inherited": "first API with inf/nan (already in its inputs)"}
"""overflow_check's event kinds, as the recipe says them."""
SIDE_FAILED = re.compile(r"(tested|bench|golden) side failed: ")
BENCH = "the torch CPU bench"


@dataclass(frozen=True)
class Event:
    """The first overflow event of the dump: its entry, where it is, and overflow_check's kind."""

    op_name: str
    where: str
    kind: str
    collective: bool = False
    """A ``Distributed.*`` entry: the rank received its inf/nan through it, or sent what it already held."""

    def describe(self) -> str:
        kind = ("first inf/nan received through a collective" if self.collective and self.kind == "origin"
                else KINDS.get(self.kind, "first API with inf/nan"))
        return f"{kind}: {self.op_name} ({self.where})"

    def why_not_alone(self) -> Optional[str]:
        """Why op_generate cannot run this event's API on its own, or None when it can."""
        if not self.collective:
            return None
        return (f"{self.op_name} is a collective, not run alone: its inf/nan came from another rank's data (or "
                "from before the dump), not from a kernel of this rank. Dump every rank (\"rank\": []) and run "
                "this again to see where it began")


def first_event(summary: List[Dict[str, Any]]) -> Optional[Event]:
    """From ``overflow_check --json``: the event of the first step with one (its events start with the origin)."""
    for step in summary:
        if step.get("events"):
            event = step["events"][0]
            where = "/".join(part for part in (step.get("step_dir"), event["rank"]) if part)
            return Event(event["op_name"], where, event["kind"], bool(event.get("collective")))
    return None


@dataclass(frozen=True)
class Reports:
    """The two CSVs one run of a generated script wrote."""

    details: List[Dict[str, str]]
    notes: List[str]
    """The result CSV's Message, split: ``tested side failed: ...``, ``nondeterministic: ...``."""

    @property
    def passed(self) -> bool:
        return all(row["Status"] == "pass" for row in self.details)

    @property
    def own_inf_nan(self) -> int:
        return sum(int(row[OWN_INF_NAN] or 0) for row in self.details)


def read_reports(folder: Path) -> Optional[Reports]:
    """The reports in ``folder`` (which holds one run's only), or None when they are missing or are not
    this op_generate's (no column saying whether the tested side made inf/nan of its own)."""
    details, result = (sorted(folder.glob(f"accuracy_checking_{kind}_*.csv")) for kind in ("details", "result"))
    if len(details) != 1 or len(result) != 1:
        return None
    (details_rows, header), (result_rows, _) = _read(details[0]), _read(result[0])
    if OWN_INF_NAN not in header or len(result_rows) != 1:
        return None
    notes = [n for n in (result_rows[0].get("Message") or "").split("; ") if n]
    return Reports(details_rows, notes)


def _read(path: Path) -> Tuple[List[Dict[str, str]], List[str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader), list(reader.fieldnames or [])


def verdict(api: str, script: str, status: int, folder: Path) -> Tuple[int, str]:
    """(exit status, line): the verdict with 0, or why the run gave none with a non-zero status."""
    reports = read_reports(folder)
    # exit status 1 is both "a row is an error" and any crash (a traceback, SystemExit("...")): only a run
    # whose reports were written and agree with its status gave a verdict
    if reports is None:
        return status or 1, (f"first-overflow: {script} failed with exit status {status} and left no readable "
                             f"report in {folder} (its messages are above)")
    if status not in (0, 1) or (status == 0) != reports.passed:
        return status or 1, (f"first-overflow: {script} failed with exit status {status}, which its report in "
                             f"{folder} does not account for (its messages are above)")
    failed = [note for note in reports.notes if SIDE_FAILED.match(note)]
    if failed:
        return 1, f"first-overflow: {script} failed: {'; '.join(failed)}"
    if reports.own_inf_nan:
        return 0, (f"first-overflow: verdict: {api} alone reproduces the overflow: its output holds inf/nan at "
                   f"{reports.own_inf_nan} place(s) where {BENCH}'s is finite (rows above)")
    if not reports.passed:
        return 0, (f"first-overflow: verdict: {api} alone differs from {BENCH} beyond the tolerance but does not "
                   "overflow: no inf/nan of its own on inputs drawn in the dumped range (rows above; the details "
                   "CSV's Dtype Status says whether its dtype's rounding explains the difference)")
    return 0, (f"first-overflow: verdict: {api} alone agrees with {BENCH} on inputs drawn in the dumped range: "
               "the kernel is not at fault, look at the values that reach it")


def nothing(summary: List[Dict[str, Any]], dump: str) -> str:
    """The line for a dump without an overflow event, naming the inf/nan left out as expected (as overflow_check
    does), since "no inf/nan" would be untrue of a dump whose only inf values are masks."""
    left = [step["left_out"] for step in summary if step.get("left_out")]
    if not left:
        return f"first-overflow: no inf/nan in {dump}"
    return (f"first-overflow: no overflow in {dump}: {sum(item['tensors'] for item in left)} tensor(s) hold inf/nan, "
            f"all left out as expected; they begin at {left[0]['begins_at']}: it {left[0]['why']} "
            f"(msprobe overflow_check -i {dump} --include-expected analyses them as overflows)")


def main(argv: List[str]) -> int:
    summary = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    if argv[0] == "nothing":
        _say(nothing(summary, argv[2]))
        return 0
    event = first_event(summary)
    if argv[0] == "origin":
        if event is not None:
            _say(event.describe())
        return 0
    if argv[0] == "alone":
        why = event.why_not_alone() if event is not None else None
        if why:
            _say(why)
        return 0
    code, line = verdict(event.op_name, argv[2], int(argv[3]), Path(argv[4]))
    _say(line, err=bool(code))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
