"""The files of a trigger: the ring as a statistics dump (``step<N>/rank<R>/`` under the trigger's folder, the
usual layout, written by the schema's ``RankWriter`` as every dump is) and ``trigger.json`` last, so that a
trigger folder with its ``trigger.json`` is complete."""
from __future__ import annotations

import math
import os
import shutil
from dataclasses import asdict
from typing import Any, Dict, List, Optional

from msprobe.schema import MsprobeError
from msprobe.schema.jsonio import write_json_atomic
from msprobe.schema.rank_writer import RankWriter
from msprobe.schema.tree import rank_dir_name, step_dir_name

from .ring import RingStep
from .rules import Trigger

TRIGGER_DIR = "trigger{}"
"""The folder of the k-th trigger under dump_path (k from 0)."""
CAPTURE_DIR = "capture"
"""The full dump after a trigger, under the trigger's folder (its own dump tree: another level)."""


def trigger_json_name(rank: Optional[int]) -> str:
    """``trigger.json``; ``trigger_rank<R>.json`` when distributed (each rank fires on its own)."""
    return "trigger.json" if rank is None else f"trigger_rank{rank}.json"


def check_no_triggers(dump_path: str, where: str, rank: Optional[int]) -> None:
    """A dump_path holding an earlier run's triggers is refused, as one holding a dump is (runs never mix). When
    the rank is known, only a trigger of this rank counts: the other ranks of this run may have fired already
    (a rank that builds its debugger late is not refused)."""
    if not os.path.isdir(dump_path):
        return
    for name in sorted(os.listdir(dump_path)):
        folder = os.path.join(dump_path, name)
        if not name.startswith("trigger") or not os.path.isdir(folder):
            continue
        if rank is None or os.path.exists(os.path.join(folder, trigger_json_name(rank))):
            raise MsprobeError(f"{where}: field 'dump_path': '{dump_path}' already holds a flight recorder's "
                               f"'{name}'; remove it or choose another dump_path")


def write_ring(trigger_dir: str, steps: List[RingStep], header: Dict[str, Any], rank: Optional[int]) -> List[int]:
    """Each resolved step of ``steps`` as ``trigger_dir/step<N>/rank<R>/`` (dump.json, stack.json,
    construct.json, made durable); returns the steps written."""
    written = []
    for slot in steps:
        if not slot.resolved or not slot.entries:
            continue
        path = os.path.join(trigger_dir, step_dir_name(slot.step), rank_dir_name(rank))
        writer = RankWriter(path, dict(header, dump_data_dir=None), autoflush=False)
        try:
            for name, entry, _, frames in slot.entries:
                writer.entry(name, entry)
                if frames:
                    writer.stack(name, frames)
            if slot.construct:
                writer.constructs(slot.construct)
            writer.finish(durable=True)
        except BaseException:
            # a full disk: this step's folder goes whole (no dump.json without its construct.json); a kill
            # here leaves the journal, whole records that every reader of the suite reads as the dump
            writer.discard()
            shutil.rmtree(path, ignore_errors=True)
            raise
        written.append(slot.step)
    return written


def write_trigger(trigger_dir: str, trigger: Trigger, ring_steps: List[int], capture: List[int],
                  rank: Optional[int], capture_error: Optional[str] = None) -> str:
    """``trigger.json``: the trigger, the steps the ring holds, the steps to be fully dumped, and why that full
    dump did not start (``capture_error``, ``Type: message``; None when it did or none was asked for)."""
    doc = dict(asdict(trigger), rank=rank, ring_steps=ring_steps, capture_steps=capture,
               capture_dir=CAPTURE_DIR if capture else None, capture_error=capture_error)
    for key in ("value", "threshold"):  # strict JSON (jq reads it): a non-finite number as its name
        if isinstance(doc[key], float) and not math.isfinite(doc[key]):
            doc[key] = str(doc[key])
    path = os.path.join(trigger_dir, trigger_json_name(rank))
    write_json_atomic(path, doc)
    return path
