"""Real models, every task x level, two steps: names, files, and every statistic recomputed with numpy."""
from __future__ import annotations

import json

import pytest
import torch

from dumphelpers import MODELS, assert_stats_match, numpy_stats, train
from msprobe.pytorch import PrecisionDebugger
from msprobe.schema import find_rank_dirs, iter_records, load_construct, load_stack, parse_entry, parse_tensor_file


@pytest.mark.parametrize("level", ["L0", "L1", "mix"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_tensor_task_statistics_match_numpy(tmp_path, model, level):
    dump = tmp_path / "dump"
    train(PrecisionDebugger(task="tensor", level=level, dump_path=str(dump)), model)
    ranks = find_rank_dirs(dump)
    assert [(r.step, r.label) for r in ranks] == [(0, "rank"), (1, "rank")]
    for rank in ranks:
        assert not rank.interrupted and (rank.path / "dump.json").is_file()
        doc = json.loads((rank.path / "dump.json").read_text())
        assert doc["framework"] == "pytorch" and doc["task"] == "tensor" and doc["level"] == level
        data = doc["data"]
        assert data, "nothing recorded"
        kinds = {parse_entry(name).kind for name in data}
        assert ("module" in kinds) == (level in ("L0", "mix"))
        assert ("api" in kinds) == (level in ("L1", "mix"))
        if level != "L1":
            assert "parameters_grad" in kinds
        checked = 0
        for name, entry in data.items():
            for trail, record in iter_records(entry):
                file_name = record["data_name"]
                parsed = parse_tensor_file(file_name)
                assert parsed.entry == name and parsed.suffix == ".pt"
                tensor = torch.load(rank.path / "dump_tensor_data" / file_name, weights_only=True)
                assert list(tensor.shape) == record["shape"] and str(tensor.dtype) == record["dtype"]
                assert_stats_match(record, numpy_stats(tensor.float().numpy() if tensor.dtype == torch.bfloat16
                                                       else tensor.numpy()), f"{name}{trail}")
                checked += 1
        assert checked == len(list((rank.path / "dump_tensor_data").iterdir()))
        construct = load_construct(rank.path / "construct.json")
        stacks = load_stack(rank.path / "stack.json")
        if level == "L1":
            assert construct == {}
        else:
            assert all(node in data or node.endswith(tuple(f".backward.{i}" for i in range(9))) for node in construct)
        forward = [n for n in data if parse_entry(n).direction == "forward"]
        assert set(forward) <= set(stacks)


@pytest.mark.parametrize("level", ["L0", "L1", "mix"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_statistics_task_equals_tensor_task(tmp_path, model, level):
    train(PrecisionDebugger(task="tensor", level=level, dump_path=str(tmp_path / "t")), model)
    train(PrecisionDebugger(task="statistics", level=level, dump_path=str(tmp_path / "s")), model)
    for step in (0, 1):
        with_files = json.loads((tmp_path / "t" / f"step{step}" / "rank" / "dump.json").read_text())["data"]
        stats = json.loads((tmp_path / "s" / f"step{step}" / "rank" / "dump.json").read_text())
        assert stats["task"] == "statistics" and stats["dump_data_dir"] is None
        assert list(stats["data"]) == list(with_files)
        for name, entry in stats["data"].items():
            expected = dict(iter_records(with_files[name]))
            for trail, record in iter_records(entry):
                assert "data_name" not in record
                assert list(record) == ["type", "dtype", "shape", "Max", "Min", "Mean", "Norm", "requires_grad"]
                want = dict(expected[trail])
                want.pop("data_name")
                assert record == want, f"{name}{trail}"
        assert not (tmp_path / "s" / f"step{step}" / "rank" / "dump_tensor_data").exists()


def test_module_names_and_list_of_models(dump_dir):
    model_a, model_b = MODELS["mlp"][0](), MODELS["mlp"][0]()
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump_dir))
    debugger.start(model=[model_a, model_b])
    model_b(model_a(torch.randn(2, 8))[:, :4].repeat(1, 2)).sum().backward()
    debugger.stop()
    debugger.step()
    debugger.flush()
    data = json.loads((dump_dir / "step0" / "rank" / "dump.json").read_text())["data"]
    assert "Module.0.fc1.Linear.forward.0" in data and "Module.1.fc2.Linear.forward.0" in data
    assert "Module.1.fc2.Linear.backward.0" in data and "Module.0.fc1.Linear.parameters_grad" in data
    assert set(data["Module.0.fc1.Linear.parameters_grad"]) == {"weight", "bias"}
    assert set(data["Module.0.fc1.Linear.forward.0"]["parameters"]) == {"weight", "bias"}
    construct = json.loads((dump_dir / "step0" / "rank" / "construct.json").read_text())
    assert construct["Module.0.fc1.Linear.forward.0"] is None
