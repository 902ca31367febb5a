"""API calls made without autograd, recorded in one C call (``_native.record_plain_call``), the forward
entries of calls with autograd (``finish_call``) and gradients recorded by the compiled hook
(``record_gradient``): the files a step leaves are the bytes the
Python paths (api_begin, api_inputs, api_outputs, backward_grad, _add) leave, and the C call itself
names, counts, writes and hands over what it does not write."""
from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import pytest
import torch

from msprobe.dump import native
from msprobe.dump.engine import DumpEngine
from msprobe.schema.journal import decimal_floats
from msprobe.pytorch import PrecisionDebugger

kernel = native.helpers()
pytestmark = pytest.mark.skipif(kernel is None, reason="no C compiler or Python headers here")

FILES = ("dump.json", "stack.json", "construct.json")
_ADD = DumpEngine._add


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def _run(tmp_path: Path, level: str, plain: bool, monkeypatch) -> tuple:
    """Two training steps and an evaluation under no_grad, dumped; (files of each step, entries that went
    through the engine's Python _add)."""
    added = []

    def counting(self, name, *args):
        added.append(name)
        return _ADD(self, name, *args)

    monkeypatch.setattr(DumpEngine, "_add", counting)
    torch.manual_seed(0)
    model = Net()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = torch.randn(4, 8), torch.randn(4, 4)
    out = tmp_path / ("plain" if plain else "python") / level
    debugger = PrecisionDebugger(task="statistics", dump_path=str(out), level=level)
    debugger.engine._plain_possible = debugger.engine._plain_possible and plain
    for _ in range(2):
        debugger.start(model=model)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        with torch.no_grad():
            model(x).clamp_(-1, 1)  # modules and APIs without autograd: construct parents in mix
        debugger.stop()
        debugger.step()
    debugger.flush()
    files = {step: {name: (out / f"step{step}" / "rank" / name).read_bytes() for name in FILES} for step in (0, 1)}
    return files, added


def _backward(name: str) -> bool:
    return name.endswith("backward") or ".backward." in name


@pytest.mark.parametrize("level", ["L0", "L1", "mix"])
def test_the_c_path_leaves_the_python_paths_files(tmp_path, level, monkeypatch):
    (fast, in_python), (slow, all_added) = [_run(tmp_path, level, plain, monkeypatch) for plain in (True, False)]
    for step in (0, 1):
        assert fast[step] == slow[step], step
    # every entry went through C: backward entries (record_gradient), forward entries of modules and calls
    # with autograd (finish_call) and of calls without (record_plain_call); each step's first call opened
    # the step's journal (DumpEngine.open_plain), where its entry once opened it in Python
    assert [name for name in all_added if _backward(name)] and not [name for name in in_python if _backward(name)]
    assert not [name for name in in_python if name.endswith("forward") or ".forward." in name]
    assert not [name for name in in_python if "parameters_grad" in name]  # record_param_gradient
    data = json.loads(fast[1]["dump.json"])["data"]
    assert ("Module.fc2.Linear.forward.1" in data) == (level != "L1")
    assert ("Tensor.addcdiv_.3.forward" in data and "Tensor.clamp_.0.forward" in data) == (level != "L0")
    assert "Module.fc1.Linear.parameters_grad" in data or level == "L1"
    if level == "mix":
        construct = json.loads(fast[0]["construct.json"])
        assert construct["Functional.linear.2.forward"] == "Module.fc1.Linear.forward.1"
        assert construct["Tensor.addcdiv_.0.forward"] is None


class Engine:
    busy = False
    opened = 0

    def open_plain(self):
        """DumpEngine.open_plain of a configuration with no plain context (the test sets ``plain``)."""
        self.opened += 1
        return None


def _context(tmp_path: Path, *, modules=None, pending=None, frames=("File a.py, line 1, in f, \n x",)):
    fd = os.open(tmp_path / "journal", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    rest, busy_seen = [], []
    record = {"type": "torch.Tensor", "Max": 1.5}

    def whole(tensor):
        busy_seen.append(engine.busy)
        return dict(record)

    engine = Engine()
    context = (engine, {}, {}, whole, torch.Tensor, lambda *a: {"slow": True}, fd, {}, [],
               modules, [] if pending is None else pending, lambda: list(frames),
               lambda name, entry, tensors, with_stack: rest.append((name, entry, tensors, with_stack)))
    return context, fd, rest, busy_seen


def test_record_plain_call_names_counts_writes_and_keeps(tmp_path):
    context, fd, rest, busy_seen = _context(tmp_path)
    engine, counters, _, _, _, _, _, lines, metadata = context[:9]
    x = torch.ones(2)
    for _ in range(2):
        out = kernel.record_plain_call(context, ("Torch", "add"), torch.add, (x, x), {"alpha": 2})
    assert torch.equal(out, torch.full((2,), 3.0))
    assert counters == {"Torch.add": 2} and not rest and not engine.busy and busy_seen == [True] * 6
    os.close(fd)
    written = (tmp_path / "journal").read_bytes().splitlines()
    entry = {"input_args": [{"type": "torch.Tensor", "Max": 1.5}] * 2,
             "input_kwargs": {"alpha": {"type": "int", "value": 2}}, "output": [{"type": "torch.Tensor", "Max": 1.5}]}
    assert [json.loads(decimal_floats(line)) for line in written] == [["d", f"Torch.add.{i}.forward", entry] for i in (0, 1)]
    assert list(lines) == ["Torch.add.0.forward", "Torch.add.1.forward"] and lines["Torch.add.1.forward"] == written[1] + b"\n"
    assert metadata == [("s", f"Torch.add.{i}.forward", ["File a.py, line 1, in f, \n x"]) for i in (0, 1)]
    assert not any(gc.is_tracked(item) for item in metadata)  # no young-generation collections for them


def test_record_plain_call_construct_parents_and_empty_stacks(tmp_path):
    class Open:
        forward = "Module.fc.Linear.forward.0"

    modules = []
    context, fd, _, _ = _context(tmp_path, modules=modules, frames=())
    kernel.record_plain_call(context, ("Torch", "neg"), torch.neg, (torch.ones(1),), None)
    modules.append(Open())
    kernel.record_plain_call(context, ("Torch", "neg"), torch.neg, (torch.ones(1),), None)
    os.close(fd)
    assert context[8] == [("c", "Torch.neg.0.forward", None), ("c", "Torch.neg.1.forward", Open.forward)]


def test_record_plain_call_hands_over_behind_pending_entries(tmp_path):
    context, fd, rest, _ = _context(tmp_path, pending=[("an entry waiting for its statistics",)])
    kernel.record_plain_call(context, ("Tensor", "mul_"), torch.Tensor.mul_, (torch.ones(3), 2.0), None)
    os.close(fd)
    assert (tmp_path / "journal").read_bytes() == b"" and context[8] == []
    [(name, entry, tensors, with_stack)] = rest
    assert name == "Tensor.mul_.0.forward" and tensors == [] and with_stack and entry["input_args"][1] == {"type": "float", "value": 2.0}


def test_record_plain_call_lets_the_apis_error_through(tmp_path):
    context, fd, rest, _ = _context(tmp_path)
    with pytest.raises(RuntimeError):
        kernel.record_plain_call(context, ("Tensor", "add_"), torch.Tensor.add_, (torch.ones(3), torch.ones(4)), None)
    os.close(fd)
    assert not context[0].busy and (tmp_path / "journal").read_bytes() == b"" and not rest
    assert context[1] == {"Tensor.add_": 1}  # the call was counted, as api_begin counts it
    with pytest.raises(TypeError, match="malformed context"):
        kernel.record_plain_call(context[:2] + ([],) + context[3:], ("Torch", "neg"), torch.neg, (torch.ones(1),), None)


def test_mode_dispatch_records_plain_calls_and_hands_the_rest_on(tmp_path):
    """DumpMode.__torch_function__'s C front (_mode.c): a function outside the API list, or any call while
    the engine is busy, runs as is; a call without autograd is recorded in C while the plain context is
    set; anything else goes to the Python method."""
    context, fd, rest, _ = _context(tmp_path)
    engine = context[0]
    engine.plain = None
    method_calls = []

    def method(mode, func, types, args=(), kwargs=None):
        method_calls.append(func)
        return "method"

    table = {torch.neg: ("Torch", "neg")}
    grad = [False]
    state = (table, engine, lambda: grad[0], method, None)  # no module hooks' state: no record_grad_call
    dispatch = lambda func, args, kwargs=None: kernel.mode_dispatch(state, "mode", func, (), args, kwargs)
    x = torch.ones(2)
    assert torch.equal(dispatch(torch.add, (x, x), {"alpha": 2}), torch.full((2,), 3.0))  # not in the table
    assert dispatch(torch.neg, (x,)) == "method" and engine.opened == 1  # none yet, and none opened
    engine.plain = context
    assert torch.equal(dispatch(torch.neg, (x,)), -x) and context[1] == {"Torch.neg": 1}  # recorded in C
    grad[0] = True
    assert dispatch(torch.neg, (x,)) == "method"  # with autograd and no hooks' state: gates are Python's
    engine.busy = True
    assert torch.equal(dispatch(torch.neg, (x,)), -x) and context[1] == {"Torch.neg": 1}  # busy: as is
    assert method_calls == [torch.neg, torch.neg] and not rest
    assert kernel.mode_dispatch(state, "mode", torch.neg, (), args=(x,)) == "method"  # keywords: the method's
    os.close(fd)
