"""Backward entries the observers of issue #37 give (msprobe.pytorch.gates): modules returning a dict, a
ModelOutput or a dataclass get one (one gradient per tensor in it, in order, as msprobe lays them out), and
the APIs and modules recomputed by gradient checkpointing during backward are recorded, as msprobe does."""
from __future__ import annotations

import dataclasses
import json

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from dumphelpers import assert_stats_match, numpy_stats
from msprobe.pytorch import PrecisionDebugger


def _data(dump_dir, step=0):
    return json.loads((dump_dir / f"step{step}" / "rank" / "dump.json").read_text())["data"]


def _check(record, tensor, where):
    assert record["shape"] == list(tensor.shape), where
    assert_stats_match(record, numpy_stats(tensor.detach().numpy()), where)


@dataclasses.dataclass
class Pair:
    first: torch.Tensor
    second: torch.Tensor
    note: str = "kept"


class Dict2(nn.Module):
    def __init__(self, as_dataclass: bool) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.as_dataclass = as_dataclass

    def forward(self, x):
        h = self.lin(x)
        frozen = torch.ones(2)  # takes no gradient: no slot
        if self.as_dataclass:
            return Pair(torch.tanh(h), h * 3)
        return {"a": torch.tanh(h), "mask": frozen, "b": h * 3, "none": None}


def test_modules_returning_a_dict_or_a_dataclass_get_one_gradient_per_tensor(tmp_path):
    for as_dataclass in (False, True):
        torch.manual_seed(3)
        model = nn.ModuleDict({"m": Dict2(as_dataclass)})
        x = torch.randn(3, 4, requires_grad=True)
        dump = tmp_path / str(as_dataclass)
        debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump))
        debugger.start(model)
        out = model["m"](x)
        first, second = (out.first, out.second) if as_dataclass else (out["a"], out["b"])
        (first.pow(2).sum() + (second * 5).sum()).backward()
        debugger.stop()
        debugger.step()
        entry = _data(dump)["Module.m.Dict2.backward.0"]
        h = model["m"].lin(x)
        (gx,) = torch.autograd.grad(torch.tanh(h).pow(2).sum() + (h * 15).sum(), (x,))
        assert len(entry["input"]) == 2, entry["input"]
        _check(entry["input"][0], 2 * torch.tanh(h), "gradient of the first tensor")
        _check(entry["input"][1], 5 * torch.ones(3, 4), "gradient of the second tensor")
        _check(entry["output"][0], gx, "gradient of the argument")


class Scale(torch.autograd.Function):
    """A Python autograd Function: its backward's APIs run in backward, as forward calls."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return torch.mul(grad, 2)


def test_apis_recomputed_by_checkpointing_and_run_in_backward_are_recorded(tmp_path):
    """msprobe records them as forward calls in order, their counters going on; an API inside which torch
    stops the recomputation (its last saved tensor is made) is recorded with its inputs only, as there."""
    x = torch.randn(5, requires_grad=True)
    w = torch.randn(5, requires_grad=True)
    debugger = PrecisionDebugger(task="statistics", level="L1", dump_path=str(tmp_path / "d"))
    debugger.start()
    y = checkpoint(lambda t: torch.exp(torch.sin(t) * w), x, use_reentrant=False)
    Scale.apply(y).sum().backward()
    debugger.stop()
    debugger.step()
    data = _data(tmp_path / "d")
    names = list(data)
    recomputed = names.index("Torch.sin.1.forward")
    assert names.index("Torch.sin.0.forward") < names.index("Torch.exp.0.forward") < recomputed
    assert names.index("Tensor.__mul__.2.forward") > recomputed  # (__mul__.1: Scale's forward, x * 2)
    assert names.index("Torch.mul.0.forward") < recomputed  # Scale's backward, run before the recomputation
    # exp saves its output: the recomputation stops inside it, which then has no output
    assert "output" not in data["Torch.exp.1.forward"] and data["Torch.exp.1.forward"]["input_args"]
    assert data["Torch.sin.1.forward"]["output"] == data["Torch.sin.0.forward"]["output"]
    assert torch.allclose(x.grad, 2 * torch.exp(torch.sin(x) * w) * w * torch.cos(x))


def test_modules_recomputed_by_checkpointing_get_a_second_forward_entry(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))
    x = torch.randn(2, 4, requires_grad=True)
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(tmp_path / "d"))
    debugger.start(model)
    checkpoint(model, x, use_reentrant=False).sum().backward()
    debugger.stop()
    debugger.step()
    data = _data(tmp_path / "d")
    assert {"Module.0.Linear.forward.1", "Module.1.Tanh.forward.1"} <= set(data)
    # the last module holds the last saved tensor: stopped inside, its output is null (msprobe's too)
    assert data["Module.2.Linear.forward.1"]["output"] == [None]
    assert data["Module.0.Linear.forward.1"]["output"] == data["Module.0.Linear.forward.0"]["output"]
    assert "Module.0.Linear.backward.0" in data and "Module.0.Linear.parameters_grad" in data
