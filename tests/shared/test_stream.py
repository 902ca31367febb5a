"""msprobe.schema.stream: selected entries of a dump.json equal what the whole-file reader gives."""
from __future__ import annotations

import json

import pytest

from msprobe.schema import SchemaError, load_dump
from msprobe.schema import stream


def _record(value: float) -> dict:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": value, "Min": -value,
            "Mean": 0.0, "Norm": value, "requires_grad": False}


def _dump(entries: int) -> dict:
    data = {f"Torch.add.{i}.forward": {"input_args": [_record(i + 0.5)], "input_kwargs": {},
                                       "output": [_record(float("inf") if i == 7 else i)]} for i in range(entries)}
    return {"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": None, "data": data}


def test_entries_across_chunks_equal_the_whole_file(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "CHUNK_CHARS", 97)  # every value straddles chunk ends
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(_dump(40), indent=1))
    wanted = ("Torch.add.7.forward", "Torch.add.39.forward", "Torch.add.99.forward")
    header, found = stream.stream_entries(path, wanted)
    whole = load_dump(path)
    assert header["task"] == "statistics" and header["framework"] == "pytorch"
    assert found == {name: whole.data[name] for name in wanted[:2]}


@pytest.mark.parametrize("order", [("data", "task", "level", "framework", "dump_data_dir"),
                                   ("task", "level", "dump_data_dir", "data", "framework")])  # msprobe 26's
def test_a_header_key_after_data_is_still_read(tmp_path, order):
    doc = _dump(3)
    path = tmp_path / "dump.json"
    path.write_text(json.dumps({key: doc[key] for key in order}, indent=1))
    header, found = stream.stream_entries(path, ("Torch.add.1.forward",))
    assert header["task"] == "statistics" and header["framework"] == "pytorch"
    assert found == {"Torch.add.1.forward": doc["data"]["Torch.add.1.forward"]}


def test_an_entry_over_the_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "MAX_ENTRY_CHARS", 200)
    monkeypatch.setattr(stream, "CHUNK_CHARS", 64)
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(_dump(2), indent=4))
    with pytest.raises(SchemaError, match=r"data\.Torch\.add\.1\.forward.*larger than 200 characters"):
        stream.stream_entries(path, ("Torch.add.1.forward",))
