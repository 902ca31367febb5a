"""PrecisionDebugger controls: save, several debuggers, class-level calls, filters, tasks, seed_all."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from dumphelpers import assert_stats_match, numpy_stats
from msprobe.dump import TaskPolicy
from msprobe.pytorch import PrecisionDebugger, seed_all
from msprobe.schema import MsprobeError, record_is_finite


def _data(dump_dir, step=0):
    return json.loads((dump_dir / f"step{step}" / "rank" / "dump.json").read_text())["data"]


def _one_step(debugger, body, model=None):
    debugger.start(model)
    body()
    debugger.stop()
    debugger.step()
    debugger.flush()


def test_save_variables_and_their_gradients(dump_dir):
    debugger = PrecisionDebugger(task="statistics", level="L1", dump_path=str(dump_dir))
    x = torch.randn(4, requires_grad=True)

    def body():
        y = x * 2
        debugger.save({"y": y, "n": 3, "f": 0.5, "s": "hi", "l": [1, (2.0,)]}, "state")
        debugger.save(y, "y")
        y.pow(2).sum().backward()
    _one_step(debugger, body)
    data = _data(dump_dir)
    saved = data["Debug.state.0.forward"]["data"]
    assert saved["n"] == {"type": "int", "value": 3} and saved["s"] == {"type": "str", "value": "hi"}
    assert saved["l"] == [{"type": "int", "value": 1}, [{"type": "float", "value": 2.0}]]
    assert_stats_match(saved["y"], numpy_stats((x * 2).detach().numpy()), "y")
    assert_stats_match(data["Debug.y.0.backward"]["data"], numpy_stats((4 * x * 2).detach().numpy() / 2), "grad y")
    with pytest.raises(MsprobeError, match="argument 'variable'"):
        debugger.save(object(), "bad")


def test_second_debugger_takes_effect_and_overlap_is_an_error(tmp_path):
    first = PrecisionDebugger(task="statistics", level="L1", dump_path=str(tmp_path / "a"))
    second = PrecisionDebugger(task="tensor", level="L1", dump_path=str(tmp_path / "b"))
    _one_step(first, lambda: torch.cos(torch.ones(2)))
    _one_step(second, lambda: torch.cos(torch.ones(2)))
    assert "Torch.cos.0.forward" in _data(tmp_path / "a")
    assert (tmp_path / "b" / "step0" / "rank" / "dump_tensor_data").is_dir()
    first.start()
    with pytest.raises(MsprobeError, match="another PrecisionDebugger"):
        second.start()
    first.stop()


def test_class_level_calls_use_the_latest_debugger(dump_dir):
    PrecisionDebugger(task="statistics", level="L1", dump_path=str(dump_dir))
    PrecisionDebugger.start()
    torch.exp(torch.zeros(1))
    PrecisionDebugger.stop()
    PrecisionDebugger.step()
    PrecisionDebugger.flush()
    assert "Torch.exp.0.forward" in _data(dump_dir)


def test_forward_backward_dump_end_warns_and_stops(dump_dir):
    debugger = PrecisionDebugger(task="statistics", level="L1", dump_path=str(dump_dir))
    debugger.start()
    torch.exp(torch.zeros(1))
    with pytest.warns(DeprecationWarning, match="use stop"):
        debugger.forward_backward_dump_end()
    torch.exp(torch.zeros(1))  # not recorded: stopped
    debugger.step()
    debugger.flush()
    assert [n for n in _data(dump_dir) if "exp" in n] == ["Torch.exp.0.forward"]


def test_step_filter(dump_dir):
    debugger = PrecisionDebugger(task="statistics", level="L1", dump_path=str(dump_dir), step=[1])
    for _ in range(3):
        _one_step(debugger, lambda: torch.exp(torch.zeros(1)))
    assert sorted(p.name for p in dump_dir.iterdir()) == ["step1"]


def _config(tmp_path, dump_dir, **block):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"task": "statistics", "level": "L1", "dump_path": str(dump_dir),
                                "statistics": block}))
    return str(path)


def test_list_scope_and_data_mode_filters(tmp_path, dump_dir):
    def body():
        x = torch.ones(3, requires_grad=True)
        torch.tanh(torch.sin(x)).sum().backward()
        torch.cos(x)

    _one_step(PrecisionDebugger(config_path=_config(tmp_path, dump_dir / "list", list=["sin"])), body)
    assert sorted(_data(dump_dir / "list")) == ["Torch.sin.0.backward", "Torch.sin.0.forward"]
    scope = ["Torch.sin.0.forward", "Torch.tanh.0.forward"]
    _one_step(PrecisionDebugger(config_path=_config(tmp_path, dump_dir / "range", scope=scope)), body)
    assert sorted(_data(dump_dir / "range")) == ["Torch.sin.0.backward", "Torch.sin.0.forward",
                                                 "Torch.tanh.0.backward", "Torch.tanh.0.forward"]
    _one_step(PrecisionDebugger(config_path=_config(tmp_path, dump_dir / "fi", data_mode=["forward", "input"])), body)
    data = _data(dump_dir / "fi")
    assert data and all(n.endswith(".forward") for n in data)
    assert all(entry["output"] == [] and entry["input_args"] for entry in data.values())


def test_custom_task_keeps_entries_and_stops(tmp_path, dump_dir):
    class NonFinite(TaskPolicy):
        def __init__(self, config):
            self.found = 0

        def keep(self, name, entry):
            bad = any(not record_is_finite(r) for r in _records(entry))
            self.found += bad
            return bad

        def finished(self):
            return self.found >= 2

    def _records(entry):
        from msprobe.schema import iter_records
        return [r for _, r in iter_records(entry)]

    debugger = PrecisionDebugger(task="overflow_check", level="L1", dump_path=str(dump_dir),
                                 tasks={"overflow_check": NonFinite})

    def body():
        x = torch.tensor([1.0, 0.0])
        torch.log(x)     # -inf: kept
        torch.exp(x)     # finite: dropped
        torch.log(x)     # kept, second: finished
        torch.log(x)     # not recorded any more
    _one_step(debugger, body)
    assert list(_data(dump_dir)) == ["Torch.log.0.forward", "Torch.log.1.forward"]
    assert _data(dump_dir)["Torch.log.0.forward"]["output"][0]["Min"] == float("-inf")


def test_seed_all(monkeypatch):
    import os
    import random

    seed_all(7, mode=True, rm_dropout=True)
    try:
        a = (random.random(), np.random.rand(), torch.rand(1).item())
        seed_all(7, mode=True)
        assert a == (random.random(), np.random.rand(), torch.rand(1).item())
        assert os.environ["PYTHONHASHSEED"] == "7" and torch.are_deterministic_algorithms_enabled()
        x = torch.ones(100)
        assert torch.equal(nn.Dropout(0.5)(x), x) and torch.equal(F.dropout(x, 0.9, training=True), x)
    finally:
        torch.use_deterministic_algorithms(False)
    with pytest.raises(MsprobeError, match="'seed'"):
        seed_all("1")


def test_async_dump_and_high_precision(tmp_path, dump_dir):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"task": "statistics", "level": "L1", "dump_path": str(dump_dir),
                                "async_dump": True, "precision": "high"}))
    debugger = PrecisionDebugger(config_path=str(path))
    x = torch.rand(1000, dtype=torch.float32)

    def body():
        torch.sqrt(x)
        x.mul_(2)  # statistics were taken when sqrt ran, not at the end of the step
    _one_step(debugger, body)
    data = _data(dump_dir)
    assert data["Torch.sqrt.0.forward"]["input_args"][0]["Max"] == pytest.approx(x.max().item() / 2)
    assert_stats_match(data["Torch.sqrt.0.forward"]["output"][0], numpy_stats(np.sqrt(x.numpy() / 2)), "sqrt",
                       rel=1e-6)


def test_module_hooks_follow_replaced_modules_and_keep_nothing_alive(dump_dir):
    """Module hooks are made once per module and registered again in every window: a module replaced
    between steps is recorded with its own parameters, and a dropped model is not kept alive."""
    import gc
    import weakref

    from dumphelpers import MLP

    model = MLP()
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump_dir))
    x = torch.randn(2, 8)
    _one_step(debugger, lambda: model(x).sum().backward(), model)
    model.fc2 = nn.Linear(16, 4)
    with torch.no_grad():
        model.fc2.weight.fill_(0.5)
    _one_step(debugger, lambda: model(x).sum().backward(), model)
    first, second = _data(dump_dir, 0), _data(dump_dir, 1)
    assert sorted(first) == sorted(second)
    weight = second["Module.fc2.Linear.forward.0"]["parameters"]["weight"]
    assert weight["Max"] == weight["Min"] == 0.5
    assert "weight" in second["Module.fc2.Linear.parameters_grad"]
    gone = weakref.ref(model.fc2)
    model.fc2 = nn.Linear(16, 4)
    gc.collect()
    assert gone() is None


def test_a_model_hooked_alone_then_in_a_list_takes_the_listed_names(dump_dir):
    """What a window installs is gathered once per model and prefix: the same model started alone, then as
    the first of a list, then alone again is named as each start() asks."""
    from dumphelpers import MLP

    model, other = MLP(), MLP()
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump_dir))
    x = torch.randn(2, 8)
    _one_step(debugger, lambda: model(x).sum().backward(), model)
    _one_step(debugger, lambda: (model(x) + other(x)).sum().backward(), [model, other])
    _one_step(debugger, lambda: model(x).sum().backward(), model)
    alone = {name for name in _data(dump_dir, 0)}
    listed = _data(dump_dir, 1)
    assert "Module.fc1.Linear.forward.0" in alone and "Module.fc1.Linear.parameters_grad" in alone
    assert {"Module.0.fc1.Linear.forward.0", "Module.1.fc1.Linear.forward.0", "Module.0.fc2.Linear.backward.0",
            "Module.0.fc1.Linear.parameters_grad", "Module.1.fc2.Linear.parameters_grad"} <= set(listed)
    assert not any(name.startswith("Module.fc") for name in listed)
    assert set(_data(dump_dir, 2)) == alone


def test_tensor_snapshots_are_freed_once_the_window_closes(dump_dir):
    """The caches of a window (statistics, snapshots) are emptied at stop() and what they held is freed on
    the writer thread: no snapshot outlives the files written from it."""
    import gc
    import weakref

    from dumphelpers import MLP

    model = MLP()
    debugger = PrecisionDebugger(task="tensor", level="L0", dump_path=str(dump_dir))
    debugger.start(model)
    model(torch.randn(2, 8)).sum().backward()
    snapshots = [weakref.ref(value[1]) for value in debugger.adapter._snap_cache.entries.values()]
    assert snapshots and len(debugger.adapter._stat_cache)
    debugger.stop()
    assert not len(debugger.adapter._snap_cache) and not len(debugger.adapter._stat_cache)
    debugger.step()
    debugger.flush()
    gc.collect()
    assert all(ref() is None for ref in snapshots)
    assert (dump_dir / "step0" / "rank" / "dump_tensor_data").is_dir()


def test_modules_and_parameters_added_or_frozen_between_steps_are_followed(dump_dir):
    """The modules a window hooks are walked once and used again while the model is unchanged: a module
    added, a parameter frozen or replaced between steps is seen in the next step."""
    from dumphelpers import MLP

    model = MLP()
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(dump_dir))
    x = torch.randn(2, 8)
    _one_step(debugger, lambda: model(x).sum().backward(), model)
    model.fc1.extra = nn.Identity()  # a child added to a module
    _one_step(debugger, lambda: model.fc1.extra(model(x)).sum().backward(), model)
    assert "Module.fc1.extra.Identity.forward.0" in _data(dump_dir, 1)
    model.fc1.weight.requires_grad_(False)  # frozen
    _one_step(debugger, lambda: model(x).sum().backward(), model)
    assert set(_data(dump_dir, 2)["Module.fc1.Linear.parameters_grad"]) == {"bias"}
    model.fc2.bias = nn.Parameter(torch.full((4,), 2.0))  # a parameter replaced
    _one_step(debugger, lambda: model(x).sum().backward(), model)
    assert _data(dump_dir, 3)["Module.fc2.Linear.forward.0"]["parameters"]["bias"]["Max"] == 2.0
