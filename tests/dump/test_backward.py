"""API and module backward entries line up with the forward call (checked against torch.autograd.grad)."""
from __future__ import annotations

import json

import torch
import torch.nn as nn
import torch.nn.functional as F

from dumphelpers import assert_stats_match, numpy_stats
from msprobe.pytorch import PrecisionDebugger


def _data(dump_dir, step=0):
    return json.loads((dump_dir / f"step{step}" / "rank" / "dump.json").read_text())["data"]


def _check(record, tensor, where):
    assert record["shape"] == list(tensor.shape), where
    assert_stats_match(record, numpy_stats(tensor.detach().numpy()), where)


def test_linear_on_3d_input_gets_one_gradient_per_argument(dump_dir):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, requires_grad=True)
    w = torch.randn(5, 4, requires_grad=True)
    b = torch.randn(5, requires_grad=True)
    debugger = PrecisionDebugger(task="statistics", level="L1", dump_path=str(dump_dir))
    debugger.start()
    y = F.linear(x, w, b)
    loss = (y * y).sum()
    loss.backward()
    debugger.stop()
    debugger.step()
    debugger.flush()

    y_ref = F.linear(x, w, b)
    gy = 2 * y_ref.detach()
    gx, gw, gb = torch.autograd.grad(y_ref, (x, w, b), gy)
    entry = _data(dump_dir)["Functional.linear.0.backward"]
    assert len(entry["input"]) == 1 and len(entry["output"]) == 3
    _check(entry["input"][0], gy, "backward.input[0]")
    _check(entry["output"][0], gx, "backward.output[0] (x)")
    _check(entry["output"][1], gw, "backward.output[1] (weight)")
    _check(entry["output"][2], gb, "backward.output[2] (bias)")


def test_null_for_arguments_without_gradient_and_argument_order(dump_dir):
    x = torch.randn(3, 4)  # no grad
    w = torch.randn(4, 2, requires_grad=True)
    debugger = PrecisionDebugger(task="statistics", level="L1", dump_path=str(dump_dir))
    debugger.start()
    out = torch.matmul(x, w)
    out.sum().backward()
    debugger.stop()
    debugger.step()
    debugger.flush()
    entry = _data(dump_dir)["Torch.matmul.0.backward"]
    assert entry["output"][0] is None
    (gw,) = torch.autograd.grad(torch.matmul(x, w), (w,), torch.ones(3, 2))
    _check(entry["output"][1], gw, "grad w")


def test_a_tensor_used_twice_gets_each_calls_own_gradient(dump_dir):
    x = torch.randn(6, requires_grad=True)
    debugger = PrecisionDebugger(task="statistics", level="L1", dump_path=str(dump_dir))
    debugger.start()
    a = torch.sin(x)
    b = torch.exp(x)
    (a * 3 + b).sum().backward()
    debugger.stop()
    debugger.step()
    debugger.flush()
    data = _data(dump_dir)
    _check(data["Torch.sin.0.backward"]["output"][0], 3 * torch.cos(x), "sin")
    _check(data["Torch.exp.0.backward"]["output"][0], torch.exp(x), "exp")


def test_outputs_used_twice_written_in_place_or_returned_as_given(dump_dir):
    """An op's output is hooked itself: its gradient is the sum over its uses, and the one of the value it
    had when made (a later in-place write does not change it); an op that returns its argument
    (contiguous() of a contiguous tensor) has no gradient of its own: no backward entry, as msprobe records
    none for a dropout with p = 0 (and no view of ours in the graph to make one)."""
    x = torch.randn(5, requires_grad=True)
    config = dump_dir.parent / "all_apis.json"  # contiguous() is not in msprobe's default set
    config.write_text('{"record_all_apis": true}')
    debugger = PrecisionDebugger(config_path=str(config), task="statistics", level="L1", dump_path=str(dump_dir))
    debugger.start()
    t = torch.tanh(x)
    same = t.contiguous()  # returns its argument itself
    u = t * 3 + torch.sin(t)
    u.mul_(2)  # written in place after the op made it
    (u * same).sum().backward()
    debugger.stop()
    debugger.step()
    debugger.flush()
    data = _data(dump_dir)
    with torch.no_grad():
        t0, u0 = torch.tanh(x), torch.tanh(x) * 3 + torch.sin(torch.tanh(x))
        grad_u = 2 * t0  # d/du of (2u * t) with t held
        grad_same = 2 * u0
        grad_t = grad_u * (3 + torch.cos(t0)) + grad_same
    _check(data["Torch.tanh.0.backward"]["input"][0], grad_t, "tanh output")
    _check(data["Torch.tanh.0.backward"]["output"][0], grad_t * (1 - t0 ** 2), "tanh argument")
    assert "Tensor.contiguous.0.forward" in data and "Tensor.contiguous.0.backward" not in data
    _check(data["Tensor.__add__.0.backward"]["input"][0], grad_u, "add output, before mul_")


def test_module_backward_and_parameter_gradients(dump_dir):
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 2))
    x = torch.randn(5, 4, requires_grad=True)
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump_dir))
    debugger.start(model)
    model(x).pow(2).sum().backward()
    debugger.stop()
    debugger.step()
    debugger.flush()
    data = _data(dump_dir)
    h = model[0](x)
    out = model[2](model[1](h))
    gout = 2 * out.detach()
    gh, gx, gw0 = torch.autograd.grad(out, (h, x, model[0].weight), gout)
    first = data["Module.0.Linear.backward.0"]
    _check(first["input"][0], gh, "grad w.r.t. Linear0 output")
    _check(first["output"][0], gx, "grad w.r.t. Linear0 input")
    _check(data["Module.0.Linear.parameters_grad"]["weight"][0], gw0, "weight grad")
    _check(data["Module.2.Linear.backward.0"]["input"][0], gout, "grad w.r.t. model output")
    assert json.loads((dump_dir / "step0" / "rank" / "construct.json").read_text())["Module.2.Linear.backward.0"] is None


class _Returns(nn.Module):
    """Returns a tensor made before it ran (after using its argument), or its argument itself."""

    def __init__(self, kept=None) -> None:
        super().__init__()
        self.kept = kept

    def forward(self, x):
        if self.kept is None:
            return x
        self.seen = x * 2
        return self.kept


def test_module_outputs_made_before_it_ran_or_written_in_place_later(dump_dir):
    """Every output is hooked itself (no view of ours in the graph): one the module did not make (its
    argument, a tensor made before it ran and used elsewhere too) has its gradient summed over all its uses;
    a returned argument has that gradient on both sides; an argument used only for a side result (kept on
    the module, not returned) gets none."""
    torch.manual_seed(2)
    x = torch.randn(3, 4, requires_grad=True)  # 2-D: Linear's output is not a view (a view written in
    kept = torch.sin(x)  # place loses its hooks in torch, and its gradient before the write with them)
    model = nn.ModuleDict({"lin": nn.Linear(4, 4), "same": _Returns(), "old": _Returns(kept)})
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump_dir))
    debugger.start(model)
    y = model["lin"](x)
    y.mul_(2)  # written in place after the module made it
    same = model["same"](y)
    old = model["old"](y)
    (same * 5 + old * 3 + kept + model["old"].seen).sum().backward()
    debugger.stop()
    debugger.step()
    debugger.flush()
    data = _data(dump_dir)
    ones = torch.ones(3, 4)
    _check(data["Module.old._Returns.backward.0"]["input"][0], 4 * ones, "kept's, over all its uses: 3 + 1")
    assert data["Module.old._Returns.backward.0"]["output"] == [None]  # y led to no output of it
    _check(data["Module.same._Returns.backward.0"]["input"][0], 7 * ones, "y's, over all its uses: 5 + 2")
    _check(data["Module.same._Returns.backward.0"]["output"][0], 7 * ones, "the argument it returned")
    _check(data["Module.lin.Linear.backward.0"]["input"][0], 2 * (5 + 2) * ones, "before mul_")
    (gx,) = torch.autograd.grad(model["lin"](x), (x,), 14 * ones)
    _check(data["Module.lin.Linear.backward.0"]["output"][0], gx, "Linear's argument")


def test_stop_before_backward_then_step_records_backward(dump_dir):
    x = torch.randn(3, requires_grad=True)
    debugger = PrecisionDebugger(task="statistics", level="L1", dump_path=str(dump_dir))
    debugger.start()
    y = torch.tanh(x)
    debugger.stop()
    y.sum().backward()
    debugger.step()
    debugger.flush()
    data = _data(dump_dir)
    assert "Torch.tanh.0.forward" in data and "Torch.tanh.0.backward" in data


