"""The flight recorder under torchrun --nproc_per_node 2 (gloo on the CPU): data-parallel training of the tiny
Llama with a NaN planted in rank 1's layer-1 MLP at step 6. Each rank detects for itself and writes under its
own rank folder: rank 1 names the module, rank 0 (whose forward stays finite) fires at the same step on its
gradient norm, NaN from the all-reduce; the training is bit-identical to a run without the recorder on both."""
from __future__ import annotations

import json
from pathlib import Path

from flight_runs import NAN_MODULE, ring_steps
from msprobe.schema import find_rank_dirs
from tests.support.torchrun import two_ranks

WORKER = Path(__file__).with_name("flight_dist_worker.py")
STEPS, AT = 8, 6
OPTIONS = {"ring_steps": 4, "max_triggers": 1}


def test_each_rank_detects_for_itself_under_its_own_rank_folder(tmp_path):
    out = tmp_path / "dump"
    two_ranks(WORKER, out, STEPS, AT, json.dumps(OPTIONS), timeout=180)
    trigger = out / "trigger0"
    # one trigger file per rank (no plain trigger.json), beside the ring's steps and the full dump after it
    assert sorted(p.name for p in trigger.glob("*.json")) == ["trigger_rank0.json", "trigger_rank1.json"]
    docs = {rank: json.loads((trigger / f"trigger_rank{rank}.json").read_text()) for rank in (0, 1)}
    # rank 1 made the NaN: its trigger names the step and the module
    assert (docs[1]["detector"], docs[1]["step"], docs[1]["module"], docs[1]["rank"]) == ("inf_nan", AT, NAN_MODULE, 1)
    # rank 0's own forward stayed finite; the NaN reached it through the all-reduced gradients
    assert (docs[0]["detector"], docs[0]["step"], docs[0]["module"], docs[0]["rank"]) == ("inf_nan", AT, "grad_norm", 0)
    for rank, doc in docs.items():
        assert doc["ring_steps"] == [3, 4, 5, 6] == ring_steps(trigger, f"rank{rank}")
        assert doc["capture_steps"] == [AT + 1]
        assert (trigger / "capture" / f"step{AT + 1}" / f"rank{rank}" / "dump.json").is_file()
    # the usual layout, rank<R> folders only: every reader of the suite finds both ranks of every step
    labels = sorted((r.step, r.label) for r in find_rank_dirs(trigger))
    assert labels == [(step, f"rank{rank}") for step in (3, 4, 5, 6) for rank in (0, 1)]
    assert not [p for p in out.rglob("rank") if p.is_dir()] and not (out / "trigger1").exists()
    ring = json.loads((trigger / "step6" / "rank1" / "dump.json").read_text())["data"]
    assert NAN_MODULE in ring and all(n.startswith("Module.") for n in ring)
    for rank in (0, 1):
        report = json.loads(Path(f"{out}.rank{rank}.json").read_text())
        assert report["on"] == report["off"], rank  # the losses, bit for bit (as repr), NaN steps included
        assert report["params_identical"], rank
        assert [(t["step"], t["module"]) for t in report["triggers"]][:1] == [(AT, docs[rank]["module"])]
    report = json.loads(Path(f"{out}.rank0.json").read_text())
    assert report["on"][AT] != "nan" and report["on"][AT + 1] == "nan"  # rank 0: finite at 6, NaN weights after
    # without step(grad_norm=...), rank 0 fires a step later, on the first module its NaN weights make NaN
    no_norm = {rank: json.loads(Path(f"{out}.rank{rank}.json").read_text())["no_grad_norm"] for rank in (0, 1)}
    assert [(t["step"], t["module"]) for t in no_norm[1]["triggers"]][:1] == [(AT, NAN_MODULE)]
    first = no_norm[0]["triggers"][0]
    assert (first["detector"], first["step"]) == ("inf_nan", AT + 1) and first["module"].startswith("Module.model.")
    assert no_norm[0]["losses"] == report["off"]
    doc = json.loads((tmp_path / "dump-no-grad-norm" / "trigger0" / "trigger_rank0.json").read_text())
    assert (doc["step"], doc["module"]) == (AT + 1, first["module"])
