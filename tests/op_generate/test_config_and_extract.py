"""config_op.json checks (one line naming file and field, exit 2), the streaming extraction, the written extract,
and the command's file handling (no overwrite without --force, ``python -m``)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from msprobe.schema import stream as stream_module
from msprobe.op_generate import extract_api, load_extracted
from msprobe.schema import RankWriter
from tests.support.cli import assert_one_line_error



@pytest.mark.parametrize("fields, field, words", [
    ({}, "api_name", "missing"),
    ({"api_name": "softmax"}, "api_name", "Functional.softmax.3"),
    ({"api_name": "Functional.softmax.3"}, "dump_json_path", "missing"),
    ({"propagation": "sideways"}, "propagation", "forward, backward"),
    ({"data_mode": "real"}, "data_mode", "random_data, real_data"),
    ({"random_seed": "42"}, "random_seed", "integer"),
    ({"iter_times": 0}, "iter_times", "1..1000"),
    ({"iter_times": 1001}, "iter_times", "1..1000"),
    ({"iter_times": True}, "iter_times", "integer"),
    ({"cosine_threshold": 2}, "cosine_threshold", "[-1.0, 1.0]"),
    ({"max_abs_error_threshold": -1}, "max_abs_error_threshold", "number"),
    ({"dump_jsn_path": "x"}, "dump_jsn_path", "unknown field"),
    ({"dump_json_path": 5}, "dump_json_path", "string"),
])
def test_every_bad_value_is_one_line_naming_file_and_field(tmp_path, capsys, fields, field, words, cli):
    doc = {"dump_json_path": str(tmp_path / "dump.json"), "api_name": "Functional.softmax.3"}
    doc.update(fields)
    if fields == {}:
        doc.pop("api_name")
    if "dump_json_path" not in fields and fields.get("api_name") == "Functional.softmax.3":
        doc.pop("dump_json_path")
    config = tmp_path / "config_op.json"
    config.write_text(json.dumps(doc))
    assert cli(["-f", "mindspore", "op_generate", "-i", str(config), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("msprobe: error: ")
    assert str(config) in err and f"'{field}'" in err and words in err, err
    assert not (tmp_path / "out").exists()


def test_missing_and_bad_files_name_the_file(tmp_path, capsys, torch_dump, cli):
    config = tmp_path / "config_op.json"
    config.write_text("{not json")
    assert cli(["op_generate", "-i", str(config), "-o", str(tmp_path)]) == 2
    assert str(config) in capsys.readouterr().err
    config.write_text(json.dumps({"dump_json_path": str(tmp_path / "nope.json"), "api_name": "Torch.add.0"}))
    assert cli(["op_generate", "-i", str(config), "-o", str(tmp_path)]) == 2
    assert "nope.json" in capsys.readouterr().err
    config.write_text(json.dumps({"dump_json_path": str(torch_dump), "api_name": "Torch.add.7"}))
    assert cli(["op_generate", "-i", str(config), "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(torch_dump) in err and "data.Torch.add.7.forward" in err
    config.write_text(json.dumps({"dump_json_path": str(torch_dump), "api_name": "Torch.matmul.0",
                                  "propagation": "backward"}))
    assert cli(["op_generate", "-i", str(config), "-o", str(tmp_path)]) == 0  # it has a backward entry
    config.write_text(json.dumps({"dump_json_path": str(torch_dump), "api_name": "Tensor.t.0"}))
    assert cli(["op_generate", "-i", str(config), "-o", str(tmp_path)]) == 0


def test_no_overwrite_without_force_and_python_dash_m(tmp_path, torch_dump, cli):
    config = tmp_path / "config_op.json"
    config.write_text(json.dumps({"dump_json_path": str(torch_dump), "api_name": "Torch.matmul.0",
                                  "extract_api_path": str(tmp_path / "matmul.json")}))
    command = [sys.executable, "-m", "msprobe.op_generate", "-i", str(config), "-o", str(tmp_path / "new" / "dir")]
    first = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    script = tmp_path / "new" / "dir" / "Torch.matmul.0.forward.py"
    script.write_text("# edited by hand\n")
    again = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert_one_line_error(again, "--force")
    assert script.read_text() == "# edited by hand\n"
    forced = subprocess.run(command + ["--force"], capture_output=True, text=True, timeout=120)
    assert forced.returncode == 0 and "Torch.matmul.0" in script.read_text()
    extracted = json.loads((tmp_path / "matmul.json").read_text())
    assert sorted(extracted["data"]) == ["Torch.matmul.0.backward", "Torch.matmul.0.forward"]
    names = [r["data_name"] for r in extracted["data"]["Torch.matmul.0.forward"]["input_args"]]
    assert all(name.startswith("/") and name.endswith(".pt") for name in names)
    # the written extract alone is enough to generate again
    config.write_text(json.dumps({"extract_api_path": str(tmp_path / "matmul.json"), "api_name": "Torch.matmul.0",
                                  "data_mode": "real_data", "propagation": "backward"}))
    assert cli(["op_generate", "-i", str(config), "-o", str(tmp_path / "again")]) == 0


def test_streaming_finds_entries_across_chunk_boundaries(torch_dump, monkeypatch):
    whole = extract_api(torch_dump, "Functional.linear.0")
    monkeypatch.setattr(stream_module, "CHUNK_CHARS", 7)
    small = extract_api(torch_dump, "Functional.linear.0")
    assert (small.forward, small.backward, small.framework) == (whole.forward, whole.backward, "pytorch")
    assert whole.backward is not None and len(whole.backward["output"]) == 2


def test_interrupted_dump_is_read_from_its_journal(tmp_path):
    record = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": -1.0,
              "Mean": 0.0, "Norm": 1.4, "requires_grad": False}
    writer = RankWriter(tmp_path / "step0" / "rank", {"task": "statistics", "level": "L1",
                                                      "framework": "pytorch", "dump_data_dir": None})
    writer.entry("Torch.exp.0.forward", {"input_args": [record], "input_kwargs": {}, "output": [record]})
    writer.flush()  # killed here: no dump.json, only the journal
    found = extract_api(tmp_path / "step0" / "rank", "Torch.exp.0")
    assert found.forward["input_args"][0]["shape"] == [2] and found.backward is None


def test_upstream_bare_extract_is_accepted(peer_fixtures):
    path = peer_fixtures / "test/msprobe_test/pytorch_ut/api_accuracy_checker/run_ut/forward.json"
    found = load_extracted(path, "Torch.chunk.4")
    assert found.framework == "pytorch" and found.forward["input_kwargs"]["dim"]["value"] == -1
