"""API calls with autograd recorded in C (``_native.record_grad_call``, reached from ``mode_dispatch``): on
calls with tuple and structseq outputs, list arguments, a shape's tuple, keywords, strided arguments, an
output that is its argument and an in-place call, a dumped step leaves the bytes the Python method
leaves, gradients reach the model as without the dump, and only lists of tensors go to the Python
method."""
from __future__ import annotations

import collections
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from msprobe.dump import native
from msprobe.dump.engine import DumpEngine
from msprobe.pytorch import hooks

kernel = native.helpers()
pytestmark = pytest.mark.skipif(kernel is None, reason="no C compiler or Python headers here")

FILES = ("dump.json", "stack.json", "construct.json")


class Ops(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        h = self.fc(x)
        a, b = h.chunk(2, dim=-1)  # a tuple output
        top = torch.max(h, dim=-1)  # a structseq output: gates.gate_outputs hooks it
        joined = torch.cat([a, b], dim=-1)  # a list argument: the Python method
        same = joined.contiguous()  # returns its argument: a gate, not a hook of its own
        act = F.layer_norm(F.gelu(same, approximate="tanh"), (6,))  # a keyword; a tuple without tensors
        strided = act.t().matmul(torch.ones(x.shape[0], 1))  # a transposed argument
        scaled = h * 2
        scaled.add_(1)  # in place: no gates
        return act.sum() + top.values.sum() + strided.sum() + scaled.sum()


def _train(debugger=None) -> dict:
    torch.manual_seed(0)
    model = Ops()
    x = torch.randn(5, 6)
    grads = {}
    for _ in range(2):
        model.zero_grad()
        if debugger is not None:
            debugger.start(model=model)
        model(x).backward()
        if debugger is not None:
            debugger.stop()
            debugger.step()
        grads = {name: p.grad.clone() for name, p in model.named_parameters()}
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
    return grads


def _dump(tmp_path: Path, level: str, compiled: bool, monkeypatch) -> tuple:
    """(files of both steps, the last step's gradients, API calls the Python method began)"""
    from msprobe.pytorch import PrecisionDebugger

    monkeypatch.undo()
    began = collections.Counter()
    api_begin = DumpEngine.api_begin

    def counted(self, prefix, api):
        began[api] += 1
        return api_begin(self, prefix, api)

    monkeypatch.setattr(DumpEngine, "api_begin", counted)
    if not compiled:
        init = hooks.DumpMode.__init__
        monkeypatch.setattr(hooks.DumpMode, "__init__", lambda self, engine, table, nested=False, state=None:
                            init(self, engine, table, nested, None))
    out = tmp_path / ("compiled" if compiled else "python") / level
    debugger = PrecisionDebugger(task="statistics", dump_path=str(out), level=level)
    grads = _train(debugger)
    debugger.flush()
    files = {(step, name): (out / f"step{step}" / "rank" / name).read_bytes() for step in (0, 1) for name in FILES}
    return files, grads, began


@pytest.mark.parametrize("level", ["L1", "mix"])
def test_grad_calls_in_c_leave_the_python_methods_files(tmp_path, level, monkeypatch):
    # one call site for both (it is in the stacks)
    (compiled, compiled_grads, compiled_began), (python, python_grads, python_began) = \
        [_dump(tmp_path, level, use_c, monkeypatch) for use_c in (True, False)]
    for key in python:
        assert compiled[key] == python[key], f"{key} differs between record_grad_call and the Python method"
    dump = compiled[(1, "dump.json")].decode()
    for entry in ("Torch.max.0.backward", "Torch.cat.0.backward", "Tensor.contiguous.0.backward",
                  "Functional.gelu.0.forward", "Functional.layer_norm.0.backward", "Tensor.add_.0.forward",
                  "Tensor.chunk.0.backward"):
        assert entry in dump
    expected = _train()
    for name in expected:
        torch.testing.assert_close(compiled_grads[name], python_grads[name], rtol=0, atol=0)
        torch.testing.assert_close(compiled_grads[name], expected[name], rtol=1e-5, atol=1e-6)
    # the Python method: every recorded call with autograd there; in C all but torch.cat's (a list
    # argument) and the calls before the step's first entry opens its journal
    assert python_began["cat"] == compiled_began["cat"] == 2
    assert python_began["gelu"] == python_began["layer_norm"] == 2
    assert compiled_began["gelu"] == compiled_began["layer_norm"] == 0
    assert sum(compiled_began.values()) < sum(python_began.values()) / 2
