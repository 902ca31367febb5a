"""The one writer of a rank directory (msprobe.schema.RankWriter, the engine's and every tool's): the files it
writes from memory at a step's end are exactly what its journal reads back as, so a killed run's recovered
files and a finished run's agree."""
from __future__ import annotations

import json

from msprobe.schema import RankWriter
from msprobe.schema.journal import read_journal
from msprobe.schema.construct import group_stacks
from msprobe.schema.jsonio import compact_dumps


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


def test_the_files_written_from_memory_are_what_the_journal_reads_back_as(tmp_path):
    for autoflush in (False, True):  # the engine's (stack and construct records batched) and the tools'
        folder = tmp_path / f"autoflush_{autoflush}"
        writer = RankWriter(folder, HEADER, autoflush=autoflush)
        _write(writer)
        writer.flush()
        journal = (folder / "dump.journal").read_bytes()
        assert all(json.loads(line) for line in journal.splitlines())  # plain JSON lines any JSON reader reads
        recovered = read_journal(folder / "dump.journal")
        assert list(recovered.construct.items()) == [("Module.é层.Linear.forward.0", None),
                                                     ("Torch.cos.0.forward", "Module.fc.Linear.forward.0"),
                                                     ("Module.fc.Linear.forward.0", None)]
        writer.finish()
        assert not (folder / "dump.journal").exists() and writer.closed
        assert (folder / "dump.json").read_bytes() == compact_dumps(recovered.dump.to_json()).encode()
        assert (folder / "stack.json").read_bytes() == compact_dumps(group_stacks(recovered.stacks)).encode()
        assert (folder / "construct.json").read_bytes() == compact_dumps(recovered.construct).encode()
        stacks = json.loads((folder / "stack.json").read_text())
        assert stacks["1"] == [["Module.é层.Linear.forward.0", "Torch.cos.0.forward"],
                               ["File b.py, line 2, in g, \n y"]]
        merged = json.loads((folder / "dump.json").read_text())["data"]
        assert merged["Module.fc.Linear.parameters_grad"] == {"weight": [], "bias": [None]}


def test_finalize_indents_and_returns_what_it_wrote(tmp_path):
    writer = RankWriter(tmp_path / "rank", HEADER)
    _write(writer)
    files = writer.finalize(remove_journal=True)
    text = (tmp_path / "rank" / "dump.json").read_text()
    assert text.startswith('{\n "task": "statistics"') and json.loads(text)["data"] == files.dump.data
    assert files.stacks["Torch.cos.0.forward"] == ["File b.py, line 2, in g, \n y"]
    assert files.construct["Torch.cos.0.forward"] == "Module.fc.Linear.forward.0"
