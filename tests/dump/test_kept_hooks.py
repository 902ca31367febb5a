"""Hooks kept from one dumped step's window to the next: the same files as hooks installed anew, nothing
recorded outside a window, and nothing left on the model once dumping ends or the model runs undumped."""
from __future__ import annotations

import json

import torch

from dumphelpers import MLP, assert_stats_match, numpy_stats
from msprobe.pytorch import PrecisionDebugger


def _data(dump_dir, step):
    return json.loads((dump_dir / f"step{step}" / "rank" / "dump.json").read_text())["data"]


def _hooks_on(model):
    """How many hooks the model's modules and parameters hold (the user's none), read from torch's dicts."""
    modules = sum(len(m._forward_pre_hooks) + len(m._forward_hooks) for m in model.modules())
    params = sum(len(p._backward_hooks or {}) for p in model.parameters())
    return modules, params


def _dumped_step(debugger, model, x):
    debugger.start(model)
    model(x).sum().backward()
    debugger.stop()
    debugger.step()
    debugger.flush()


def _forward_in_a_window(dump_dir):
    """A step 0 window that ran the model's forward only: (model, input, debugger, loss)."""
    torch.manual_seed(0)
    model, x = MLP(), torch.randn(2, 8)
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump_dir))
    debugger.start(model)
    loss = model(x).sum()
    debugger.stop()
    return model, x, debugger, loss


def test_hooks_stay_while_the_next_step_is_dumped_and_go_with_the_last(dump_dir):
    torch.manual_seed(0)
    model, x = MLP(), torch.randn(2, 8)
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump_dir), step=[0, 1])
    _dumped_step(debugger, model, x)
    assert _hooks_on(model) == (4, 4)  # fc1 and fc2: pre and post; their weights and biases
    with torch.no_grad():
        model.fc1.weight.mul_(2.0)
    _dumped_step(debugger, model, x)  # its start() installs nothing: the kept hooks record it
    assert _hooks_on(model) == (0, 0)  # step 2 is not dumped
    first, second = _data(dump_dir, 0), _data(dump_dir, 1)
    assert sorted(first) == sorted(second) and len(first) == 6
    weight = second["Module.fc1.Linear.forward.0"]["parameters"]["weight"]
    assert_stats_match(weight, numpy_stats(model.fc1.weight.detach().numpy()), "fc1.weight")
    assert second["Module.fc1.Linear.parameters_grad"]["weight"][0]["Norm"] > 0
    _dumped_step(debugger, model, x)
    assert not (dump_dir / "step2").exists()


def test_a_model_run_outside_a_window_takes_the_kept_hooks_away(dump_dir):
    torch.manual_seed(0)
    model, x = MLP(), torch.randn(2, 8)
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump_dir))
    _dumped_step(debugger, model, x)
    assert _hooks_on(model) == (4, 4)
    model(x).sum().backward()  # evaluation between steps, say: no window is open
    assert _hooks_on(model) == (0, 0)
    _dumped_step(debugger, model, x)  # step 1, hooked anew
    assert sorted(_data(dump_dir, 1)) == sorted(_data(dump_dir, 0))


def test_a_module_run_after_stop_keeps_the_parameter_hooks_until_step(dump_dir):
    model, x, debugger, loss = _forward_in_a_window(dump_dir)
    with torch.no_grad():
        model(x)  # after stop(): not recorded, and the module hooks go
    assert _hooks_on(model) == (0, 4)
    loss.backward()  # this step's gradients still are recorded until step()
    debugger.step()
    debugger.flush()
    data = _data(dump_dir, 0)
    assert set(data["Module.fc2.Linear.parameters_grad"]) == {"weight", "bias"}
    assert "Module.fc1.Linear.forward.1" not in data
    assert _hooks_on(model) == (0, 0)  # step() removes what was not kept parked


def test_gradients_after_step_are_not_recorded_by_kept_hooks(dump_dir):
    model, x, debugger, loss = _forward_in_a_window(dump_dir)
    debugger.step()
    loss.backward()  # step 1 has not started: its kept parameter hooks record nothing
    debugger.flush()
    assert not any(name.endswith(("parameters_grad", ".backward.0")) for name in _data(dump_dir, 0))
    assert not (dump_dir / "step1" / "rank" / "dump.json").exists()  # (its journal is opened ahead)
    _dumped_step(debugger, model, x)
    assert set(_data(dump_dir, 1)["Module.fc1.Linear.parameters_grad"]) == {"weight", "bias"}


def test_a_frozen_parameter_made_trainable_again_is_recorded_by_kept_hooks(dump_dir):
    torch.manual_seed(0)
    model, x = MLP(), torch.randn(2, 8)
    model.fc1.weight.requires_grad_(False)
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump_dir))
    _dumped_step(debugger, model, x)
    assert set(_data(dump_dir, 0)["Module.fc1.Linear.parameters_grad"]) == {"bias"}
    _dumped_step(debugger, model, x)  # still frozen: the kept hooks look at it again, and leave it
    assert set(_data(dump_dir, 1)["Module.fc1.Linear.parameters_grad"]) == {"bias"}
    model.fc1.weight.requires_grad_(True)
    _dumped_step(debugger, model, x)
    assert set(_data(dump_dir, 2)["Module.fc1.Linear.parameters_grad"]) == {"weight", "bias"}
    assert _hooks_on(model) == (4, 4)


def test_a_plan_sees_every_change_of_children_and_parameters():
    """``ModelPlan.still_valid``: a child or a parameter added, removed or replaced anywhere in the model
    makes the plan stale; nothing else does."""
    from msprobe.pytorch import model_plan

    model = torch.nn.Sequential(MLP(), torch.nn.Linear(4, 4, bias=False))
    changes = [
        lambda m: setattr(m[0], "fc2", torch.nn.Linear(16, 4)),  # a child replaced
        lambda m: m[0].add_module("extra", torch.nn.ReLU()),  # a child added
        lambda m: m.append(torch.nn.ReLU()),  # a child of the root added
        lambda m: delattr(m[0], "fc1"),  # a child removed
        lambda m: setattr(m[1], "weight", torch.nn.Parameter(torch.ones(4, 4))),  # a parameter replaced
        lambda m: m[1].register_parameter("bias", torch.nn.Parameter(torch.ones(4))),  # set where it was None
        lambda m: m[0].fc1.register_parameter("scale", torch.nn.Parameter(torch.ones(1))),  # one more
    ]
    for change in changes:
        plan = model_plan.ModelPlan(model)
        assert plan.still_valid(model)
        model[0].fc1.weight.requires_grad_(False)  # not a change of what is hooked
        with torch.no_grad():
            model[1].weight.add_(1.0)
        assert plan.still_valid(model)
        change(model)
        assert not plan.still_valid(model)
        model = torch.nn.Sequential(MLP(), torch.nn.Linear(4, 4, bias=False))
    assert not model_plan.ModelPlan(model).still_valid(torch.nn.Sequential(MLP()))  # another model


def test_two_windows_of_one_step_on_two_models_keep_both_models_gradients(dump_dir):
    torch.manual_seed(0)
    first, second, x = MLP(), torch.nn.Sequential(torch.nn.Linear(8, 3)), torch.randn(2, 8)
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump_dir))
    debugger.start(first)
    loss = first(x).sum()
    debugger.stop()
    debugger.start(second)  # another model: the first one's module hooks go, its parameter hooks stay
    loss = loss + second(x).sum()
    debugger.stop()
    loss.backward()
    debugger.step()
    debugger.flush()
    data = _data(dump_dir, 0)
    assert set(data["Module.fc1.Linear.parameters_grad"]) == {"weight", "bias"}
    assert set(data["Module.0.Linear.parameters_grad"]) == {"weight", "bias"}
    assert {"Module.fc2.Linear.backward.0", "Module.0.Linear.backward.0"} <= set(data)


def test_forward_data_only_puts_no_hook_on_parameters(tmp_path, dump_dir):
    """data_mode ["forward"]: parameters_grad entries are backward data, so no parameter gets a gradient
    hook (one that records nothing still cost each gradient a trip through Python)."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "statistics", "dump_path": str(dump_dir), "level": "L0",
                                  "statistics": {"data_mode": ["forward"]}}))
    torch.manual_seed(0)
    model, x = MLP(), torch.randn(2, 8)
    debugger = PrecisionDebugger(config_path=str(config))
    for _ in range(2):
        debugger.start(model)
        model(x).sum().backward()
        assert _hooks_on(model)[1] == 0
        debugger.stop()
        debugger.step()
    debugger.flush()
    for step in (0, 1):
        names = list(_data(dump_dir, step))
        assert names and all(".forward." in name for name in names), names
    assert all(p.grad is not None for p in model.parameters())
