"""Module hooks in C (``_native.module_pre`` / ``module_post``): on a model whose modules return tuples,
lists, named tuples, nested outputs, their own input, take lists, keywords and strided tensors, share a
parameter under two names and run parts without autograd, the files a dumped step leaves are the bytes
the Python hooks leave, the model's gradients are those of an undumped run, and only what the C hooks
hand over reaches the Python hooks."""
from __future__ import annotations

import collections
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from msprobe.dump import native
from msprobe.dump.engine import DumpEngine
from msprobe.pytorch import PrecisionDebugger, hooks

from dumphelpers import assert_same_dumps, sgd_steps, step_files

kernel = native.helpers()
pytestmark = pytest.mark.skipif(kernel is None, reason="no C compiler or Python headers here")

Pair = collections.namedtuple("Pair", "first second")


class TupleOut(nn.Module):
    def forward(self, x):
        return x * 2, x + 1


class ListOut(nn.Module):
    def forward(self, x):
        return [x.sin(), None, 3]


class NamedOut(nn.Module):
    def forward(self, x):
        return Pair(x.cos(), x.exp())


class NestedOut(nn.Module):
    def forward(self, x):
        return x.tanh(), (x * 3, x - 1)


class Passthrough(nn.Module):
    def forward(self, x):
        return x


class TakesList(nn.Module):
    def forward(self, xs):
        return xs[0] + xs[1]


class Keywords(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.full((6,), 0.5))
        self.frozen = nn.Parameter(torch.ones(6), requires_grad=False)
        self.unset = None

    def forward(self, x, times: int = 1, *, shift=None):
        return x * self.scale * times + (shift if shift is not None else self.frozen)


class Tied(nn.Module):
    def __init__(self, weight: nn.Parameter) -> None:
        super().__init__()
        self.weight = weight
        self.again = weight

    def forward(self, x):
        return x @ self.weight


class NoGradInside(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(6, 6)

    def forward(self, x):
        with torch.no_grad():
            constant = self.inner(x.detach())
        return x + constant


class Varied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)
        self.pair, self.listed, self.named, self.nested = TupleOut(), ListOut(), NamedOut(), NestedOut()
        self.through, self.sum, self.keywords = Passthrough(), TakesList(), Keywords()
        self.tied = Tied(nn.Parameter(torch.randn(6, 6) * 0.3))
        self.quiet = NoGradInside()

    def forward(self, x):
        h = self.fc(x)
        a, b = self.pair(h)
        listed = self.listed(a)
        named = self.named(b)
        first, (second, third) = self.nested(h)
        same = self.through(first)
        total = self.sum([listed[0], named.second]) + self.sum([second, third])
        strided = self.through(total.t().contiguous().t())  # a transposed view: the strided gate
        out = self.keywords(strided, 2, shift=same) + self.keywords(named.first)
        return self.quiet(self.tied(out))


def _dump(tmp_path: Path, level: str, compiled: bool, monkeypatch) -> tuple:
    """Two dumped training steps: (files of each step, parameter gradients of the last, calls that went
    through the Python hooks: their module_begin, and their gate_outputs where autograd is on; counted
    there, for a wrapper frame around a hook would be in the stacks)."""
    monkeypatch.undo()
    calls = collections.Counter()
    begin, gate_outputs = DumpEngine.module_begin, hooks.gate_outputs

    def counted(kind, function):
        def run(*args):
            calls[kind] += 1
            return function(*args)
        return run

    monkeypatch.setattr(DumpEngine, "module_begin", counted("pre", begin))
    monkeypatch.setattr(hooks, "gate_outputs", counted("post", gate_outputs))
    if not compiled:
        monkeypatch.setattr(hooks.Hooks, "_compiled_state", lambda self: None)
    out = tmp_path / ("compiled" if compiled else "python") / level
    grads = sgd_steps(Varied, (5, 4), _loss, PrecisionDebugger(task="statistics", dump_path=str(out), level=level))
    return step_files(out), grads, calls


def _loss(output):
    return output.square().mean()


@pytest.mark.parametrize("level", ["L0", "mix"])
def test_the_c_hooks_leave_the_python_hooks_files(tmp_path, level, monkeypatch):
    # one call site for both (it is in the stacks)
    (compiled, compiled_grads, compiled_calls), (python, python_grads, python_calls) = \
        [_dump(tmp_path, level, use_c, monkeypatch) for use_c in (True, False)]
    assert_same_dumps((compiled, compiled_grads), (python, python_grads), sgd_steps(Varied, (5, 4), _loss),
                      "the C and the Python module hooks")
    dump = compiled[(1, "dump.json")].decode()
    for entry in ("Module.named.NamedOut.backward.0", "Module.keywords.Keywords.forward.1",
                  "Module.tied.Tied.parameters_grad", "Module.quiet.inner.Linear.forward.0"):
        assert entry in dump
    # 14 module calls a step, 13 with autograd; in C all but the list argument's pre hooks (two calls) and
    # the post hooks of the named tuple and the nested outputs (the first module of a step too: it opens
    # the step's journal, DumpEngine.open_plain)
    assert python_calls == {"pre": 28, "post": 26}
    assert compiled_calls == {"pre": 2 * 2, "post": 2 * 2}


class Repeated(nn.Module):
    """A child under a non-ASCII name, called twelve times a step (two-digit call indexes)."""

    def __init__(self):
        super().__init__()
        self.add_module("écho", nn.Linear(4, 4))

    def forward(self, x):
        for _ in range(12):
            x = getattr(self, "écho")(x).tanh()
        return x


@pytest.mark.parametrize("level", ["L0", "mix"])
def test_the_c_hooks_name_calls_as_the_python_hooks_do(tmp_path, level, monkeypatch):
    """Entry names are built in C without PyUnicode_FromFormat (``indexed_name``): ASCII directly, anything
    else through the format; both as Python names them."""
    runs = {}
    for use_c in (True, False):
        monkeypatch.undo()
        if not use_c:
            monkeypatch.setattr(hooks.Hooks, "_compiled_state", lambda self: None)
        out = tmp_path / str(use_c)
        sgd_steps(Repeated, (3, 4), _loss, PrecisionDebugger(task="statistics", dump_path=str(out), level=level))
        runs[use_c] = step_files(out)
    assert runs[True] == runs[False]
    dump = runs[True][(1, "dump.json")].decode()
    assert "Module.écho.Linear.forward.11" in dump and "Module.écho.Linear.backward.10" in dump
