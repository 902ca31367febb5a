"""``async_dump: false`` (msprobe's default): a step's files are on disk when ``step()`` returns, as a script
written for msprobe expects; ``async_dump: true`` finishes them on a background thread (``flush()`` waits)."""
from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

from msprobe.pytorch import PrecisionDebugger
from msprobe.schema.index import INDEX_NAME, have_pyarrow, index_key, source_key

INDEXED = [INDEX_NAME] if have_pyarrow() else []  # the dump's index, where its extra is installed


def _debugger(tmp_path, task, asynchronous):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": task, "level": "mix", "dump_path": str(tmp_path / "dump"),
                                  "async_dump": asynchronous}))
    return PrecisionDebugger(config_path=str(config))


@pytest.mark.parametrize("task", ["statistics", "tensor"])
def test_files_are_on_disk_when_step_returns(tmp_path, task):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    debugger = _debugger(tmp_path, task, False)
    for step in range(2):
        debugger.start(model)
        model(torch.randn(3, 4)).sum().backward()
        debugger.stop()
        debugger.step()
        rank = tmp_path / "dump" / f"step{step}" / "rank"
        # right after step(), before any flush(): what a script written for msprobe reads
        assert {"construct.json", "dump.json", "stack.json"} <= {p.name for p in rank.iterdir() if p.is_file()}
        data = json.loads((rank / "dump.json").read_text())["data"]
        assert "Module.0.Linear.forward.0" in data and "Functional.linear.0.backward" in data
        if task == "tensor":
            names = {r["data_name"] for e in data.values() for side in e.values() if isinstance(side, list)
                     for r in side if isinstance(r, dict) and "data_name" in r}
            assert names and all((rank / "dump_tensor_data" / n).stat().st_size > 0 for n in names)
    debugger.flush()  # the index is the writer thread's: written after dump.json, waited for here
    for step in range(2):
        rank = tmp_path / "dump" / f"step{step}" / "rank"
        assert sorted(p.name for p in rank.iterdir() if p.is_file()) == sorted(
            ["construct.json", "dump.json", "stack.json"] + INDEXED)
        assert not INDEXED or index_key(rank / INDEX_NAME) == source_key(rank / "dump.json")


def test_async_dump_finishes_the_files_on_the_background_thread(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    debugger = _debugger(tmp_path, "statistics", True)
    debugger.start(model)
    model(torch.randn(3, 4)).sum().backward()
    debugger.stop()
    debugger.step()
    debugger.flush()
    rank = tmp_path / "dump" / "step0" / "rank"
    assert sorted(p.name for p in rank.iterdir()) == sorted(["construct.json", "dump.json", "stack.json"] + INDEXED)
