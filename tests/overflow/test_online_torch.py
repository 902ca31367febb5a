"""Online overflow_check with real PyTorch (CPU), then the offline analysis of what it wrote."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from msprobe.overflow import analyze_dump
from msprobe.pytorch import PrecisionDebugger
from msprobe.schema import find_rank_dirs, record_is_finite, iter_records


class Net(nn.Module):
    def __init__(self, dtype: torch.dtype, weight: float) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 8).to(dtype)
        self.fc2 = nn.Linear(8, 8).to(dtype)
        with torch.no_grad():
            for fc in (self.fc1, self.fc2):
                fc.weight.fill_(weight)
                fc.bias.zero_()

    def forward(self, x: torch.Tensor, use_exp: bool) -> torch.Tensor:
        h = self.fc1(x)
        if use_exp:
            h = torch.exp(h)
        return self.fc2(h)


def _config(tmp_path: Path, level: str, nums: int, **block) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"task": "overflow_check", "dump_path": str(tmp_path / "dump"), "rank": [],
                                "step": [], "level": level, "overflow_check": {"overflow_nums": nums, **block}}))
    return str(path)


def _train(tmp_path, model, x, level="mix", nums=-1, steps=2, scale=1.0, use_exp=True):
    debugger = PrecisionDebugger(config_path=_config(tmp_path, level, nums))
    for _ in range(steps):
        debugger.start(model=model)
        loss = (model(x, use_exp).float() * scale).sum()
        loss.backward()
        debugger.stop()
        debugger.step()
    _written(debugger)
    return tmp_path / "dump"


def _written(debugger) -> None:
    """The engine writes a step's JSON files on its writer thread after step(); wait for them."""
    wait = getattr(debugger.engine, "wait", None)
    if wait is not None:
        wait()


def _kept(dump: Path):
    out = {}
    for rank in find_rank_dirs(dump):
        out[rank.step] = rank.load().dump.data
    return out


@pytest.mark.parametrize("dtype, value", [(torch.float16, 20.0), (torch.bfloat16, 100.0)])
def test_forward_exp_overflow_is_kept_and_found(tmp_path, dtype, value):
    model = Net(dtype, 1.0 / 8)
    x = torch.full((2, 8), value, dtype=dtype)     # fc1 -> value, exp(value) overflows the dtype
    dump = _train(tmp_path, model, x)
    kept = _kept(dump)
    assert kept[0], "step 0 kept nothing"
    for data in kept.values():
        for name, entry in data.items():
            assert any(not record_is_finite(r) for _, r in iter_records(entry)), name
    assert "Torch.exp.0.forward" in kept[0] and "Functional.linear.0.forward" not in kept[0]
    [first, *_] = analyze_dump(dump)
    assert first.origin.op_name == "Torch.exp.0.forward"
    assert first.origin.construct_info == []  or first.origin.construct_info[0].startswith("Module.")


def test_overflow_nums_stops_recording(tmp_path):
    model = Net(torch.float16, 1.0 / 8)
    dump = _train(tmp_path, model, torch.full((2, 8), 20.0, dtype=torch.float16), level="L1", nums=1)
    kept = _kept(dump)
    assert list(kept[0]) == ["Torch.exp.0.forward"]
    assert not any(kept.get(step) for step in kept if step != 0)


def test_no_overflow_keeps_nothing(tmp_path):
    model = Net(torch.float32, 0.1)
    dump = _train(tmp_path, model, torch.ones(2, 8), steps=1)
    assert not any(_kept(dump).values()) if dump.exists() else True
    if dump.exists():
        assert all(r.origin is None for r in analyze_dump(dump))


def test_backward_overflow_from_exploding_gradient(tmp_path):
    model = Net(torch.float16, 10.0)
    x = torch.ones(4, 8, dtype=torch.float16)      # forward: 80, 6400 (finite in fp16)
    dump = _train(tmp_path, model, x, level="mix", scale=1000.0, use_exp=False, steps=1)
    data = _kept(dump)[0]
    assert not [n for n in data if n.endswith("forward") or ".forward." in n]
    [result] = analyze_dump(dump)
    assert result.origin.op_name in ("Functional.linear.1.backward", "Module.fc2.Linear.backward.0"), \
        result.origin.op_name


@pytest.mark.parametrize("from_config", [True, False])
def test_real_tensors_of_kept_entries_only(tmp_path, from_config):
    from msprobe.overflow import overflow_task

    model = Net(torch.float16, 1.0 / 8)
    if from_config:  # "overflow_check": {"overflow_nums": 1, "save_tensors": true}
        debugger = PrecisionDebugger(config_path=_config(tmp_path, "L1", 1, save_tensors=True))
    else:
        debugger = PrecisionDebugger(config_path=_config(tmp_path, "L1", 1),
                                     tasks={"overflow_check": overflow_task(save_tensors=True)})
    debugger.start(model=model)
    model(torch.full((2, 8), 20.0, dtype=torch.float16), True).float().sum().backward()
    debugger.stop()
    debugger.step()
    _written(debugger)
    rank = tmp_path / "dump" / "step0" / "rank"
    files = sorted(p.name for p in (rank / "dump_tensor_data").iterdir())
    assert files == ["Torch.exp.0.forward.input.0.pt", "Torch.exp.0.forward.output.0.pt"]
    saved = torch.load(rank / "dump_tensor_data" / files[1], weights_only=True)
    assert torch.isinf(saved).all()


def test_offline_analysis_of_a_tensor_dump(tmp_path):
    model = Net(torch.float16, 1.0 / 8)
    debugger = PrecisionDebugger(task="tensor", dump_path=str(tmp_path / "dump"), level="L1")
    debugger.start(model=model)
    model(torch.full((2, 8), 20.0, dtype=torch.float16), True).float().sum().backward()
    debugger.stop()
    debugger.step()
    _written(debugger)
    assert any((tmp_path / "dump" / "step0" / "rank" / "dump_tensor_data").iterdir())
    [result] = analyze_dump(tmp_path / "dump" / "step0" / "rank" / "dump.json")
    assert result.origin.op_name == "Torch.exp.0.forward"
    assert [s.name for s in result.origin.before] == ["Functional.linear.0.forward"]


def test_l0_keeps_modules_only(tmp_path):
    model = Net(torch.float16, 1.0 / 8)
    dump = _train(tmp_path, model, torch.full((2, 8), 20.0, dtype=torch.float16), level="L0", steps=1)
    data = _kept(dump)[0]
    assert data and all(name.startswith("Module.") for name in data), list(data)
    [result] = analyze_dump(dump)
    # exp runs in Net.forward itself, which L0 does not record: fc2 is the first module to see the inf
    assert result.origin.op_name == "Module.fc2.Linear.forward.0" and result.origin.kind == "inherited"
