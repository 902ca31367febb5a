"""msprobe.schema.stream: selected entries of a dump.json equal what the whole-file reader gives."""
from __future__ import annotations

import json

import pytest

from msprobe.schema import SchemaError, load_dump
from msprobe.schema import stream
from msprobe.schema.dump import record_is_finite, stat_value


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
    # (every entry is decoded to check it, so the first one over the bound is refused)
    with pytest.raises(SchemaError, match=r"data\.Torch\.add\.0\.forward.*larger than 200 characters"):
        stream.stream_entries(path, ("Torch.add.1.forward",))


def _damaged(text: str, how: str) -> str:
    if how == "truncated":
        return text[:len(text) * 3 // 4]
    if how == "bad record in another entry":
        return text.replace('"Max": 39.5', '"Max": "big"')
    if how == "garbage after the object":
        return text + "\n{}"
    return text.replace('"Max": 39.5', '"Max": 1' + "0" * 5000)  # over Python's int parsing limit


@pytest.mark.parametrize("how", ["truncated", "bad record in another entry", "garbage after the object",
                                 "a 5001-digit number"])
def test_what_the_whole_file_reader_rejects_is_rejected(tmp_path, monkeypatch, how):
    monkeypatch.setattr(stream, "CHUNK_CHARS", 97)
    path = tmp_path / "dump.json"
    path.write_text(_damaged(json.dumps(_dump(40), indent=1), how))
    with pytest.raises(SchemaError) as whole:
        load_dump(path)
    with pytest.raises(SchemaError) as streamed:  # the wanted entry comes before the damage
        stream.stream_entries(path, ("Torch.add.1.forward",))
    assert str(path) in str(streamed.value) and "\n" not in str(streamed.value), (whole.value, streamed.value)


def test_a_401_digit_statistic_reads_as_infinity(tmp_path):
    doc = _dump(3)
    doc["data"]["Torch.add.1.forward"]["output"][0]["Max"] = 10 ** 400
    doc["data"]["Torch.add.1.forward"]["output"][0]["Min"] = -10 ** 400
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(doc))
    _, found = stream.stream_entries(path, ("Torch.add.1.forward",))
    record = found["Torch.add.1.forward"]["output"][0]
    assert (stat_value(record["Max"]), stat_value(record["Min"])) == (float("inf"), float("-inf"))
    assert not record_is_finite(record) and not record_is_finite(load_dump(path).data["Torch.add.1.forward"]["output"][0])
