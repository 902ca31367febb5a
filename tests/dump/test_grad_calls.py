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
from msprobe.pytorch import PrecisionDebugger, hooks

from dumphelpers import assert_same_dumps, sgd_steps, step_files

kernel = native.helpers()
pytestmark = pytest.mark.skipif(kernel is None, reason="no C compiler or Python headers here")


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


def _dump(tmp_path: Path, level: str, compiled: bool, monkeypatch) -> tuple:
    """(files of both steps, the last step's gradients, API calls the Python method began)"""
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
    grads = sgd_steps(Ops, (5, 6), _loss, PrecisionDebugger(task="statistics", dump_path=str(out), level=level))
    return step_files(out), grads, began


def _loss(output):
    return output


@pytest.mark.parametrize("level", ["L1", "mix"])
def test_grad_calls_in_c_leave_the_python_methods_files(tmp_path, level, monkeypatch):
    # one call site for both (it is in the stacks)
    (compiled, compiled_grads, compiled_began), (python, python_grads, python_began) = \
        [_dump(tmp_path, level, use_c, monkeypatch) for use_c in (True, False)]
    assert_same_dumps((compiled, compiled_grads), (python, python_grads), sgd_steps(Ops, (5, 6), _loss),
                      "record_grad_call and the Python method")
    dump = compiled[(1, "dump.json")].decode()
    for entry in ("Torch.max.0.backward", "Torch.cat.0.backward", "Tensor.contiguous.0.backward",
                  "Functional.gelu.0.forward", "Functional.layer_norm.0.backward", "Tensor.add_.0.forward",
                  "Tensor.chunk.0.backward"):
        assert entry in dump
    # the Python method: every recorded call with autograd there; in C all but torch.cat's (a list
    # argument) and the calls before the step's first entry opens its journal
    assert python_began["cat"] == compiled_began["cat"] == 2
    assert python_began["gelu"] == python_began["layer_norm"] == 2
    assert compiled_began["gelu"] == compiled_began["layer_norm"] == 0
    assert sum(compiled_began.values()) < sum(python_began.values()) / 2
