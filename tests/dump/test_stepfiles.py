"""StepWriter (the engine's writer) writes the same bytes as the schema library's RankWriter."""
from __future__ import annotations

import json

from msprobe.dump.stepfiles import StepWriter
from msprobe.schema import RankWriter
from msprobe.schema.journal import read_journal


HEADER = {"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": None}
RECORD = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": float("inf"),
          "Min": float("-inf"), "Mean": float("nan"), "Norm": 1e-300, "requires_grad": True, "md5": "0a1b2c3d"}


def _write(writer):
    writer.entry("Functional.linear.0.forward", {"input_args": [RECORD, None, {"type": "int", "value": 3}],
                                                 "input_kwargs": {"bias": {"type": "bool", "value": False}},
                                                 "output": [[RECORD, -0.0]]})
    writer.entry("Module.é层.Linear.forward.0", {"input_args": [], "input_kwargs": {}, "output": []})
    writer.entry("Functional.linear.0.forward", {"parameters": {"weight": RECORD}})  # later keys merge
    writer.entry("Debug.odd.0.forward", {"data": {1: "an int key: json writes it as a string"}})
    for part in ({"weight": [RECORD]}, {}, {"bias": [None]}, {"bias.1": [RECORD]}):  # parts side by side
        writer.entry("Module.é层.Linear.parameters_grad", part)
    for part in ({"weight": [RECORD]}, {"bias": [None]}, {"weight": []}):  # a key again: its value replaced
        writer.entry("Module.fc.Linear.parameters_grad", part)
    for part in ({"1": [None]}, {1: [RECORD]}):  # the same key once written
        writer.entry("Module.odd.Linear.parameters_grad", part)
    writer.construct("Module.é层.Linear.forward.0", None)
    writer.constructs({"Torch.cos.0.forward": "Module.é层.Linear.forward.0", "Module.fc.Linear.forward.0": None})
    writer.construct("Torch.cos.0.forward", "Module.fc.Linear.forward.0")  # a node again: its parent replaced
    writer.stack("Functional.linear.0.forward", ["File a.py, line 1, in f, \n x = 1"])
    writer.shared_stack(["Module.é层.Linear.forward.0", "Torch.cos.0.forward"], ["File b.py, line 2, in g, \n y"])


def test_step_writer_bytes_equal_rank_writer(tmp_path):
    step = StepWriter(tmp_path / "step", HEADER)
    _write(step)
    step.flush()
    reference = RankWriter(tmp_path / "reference", HEADER)
    _write(reference)
    reference.flush()
    # the same records: plain JSON lines any JSON reader reads
    journal = (tmp_path / "step" / "dump.journal").read_bytes()
    assert journal == (tmp_path / "reference" / "dump.journal").read_bytes()
    assert all(json.loads(line) for line in journal.splitlines())
    ours, theirs = (read_journal(tmp_path / name / "dump.journal") for name in ("step", "reference"))
    assert json.dumps(ours.dump.to_json()) == json.dumps(theirs.dump.to_json())  # text: NaN != NaN
    assert (ours.construct, ours.stacks) == (theirs.construct, theirs.stacks)
    assert list(ours.construct.items()) == [("Module.é层.Linear.forward.0", None),
                                            ("Torch.cos.0.forward", "Module.fc.Linear.forward.0"),
                                            ("Module.fc.Linear.forward.0", None)]
    step.finish()
    reference.finalize(remove_journal=True, indent=None)
    for name in ("dump.json", "stack.json", "construct.json"):
        assert (tmp_path / "step" / name).read_bytes() == (tmp_path / "reference" / name).read_bytes(), name
    assert not (tmp_path / "step" / "dump.journal").exists()
    stacks = json.loads((tmp_path / "step" / "stack.json").read_text())
    assert stacks["1"] == [["Module.é层.Linear.forward.0", "Torch.cos.0.forward"], ["File b.py, line 2, in g, \n y"]]
