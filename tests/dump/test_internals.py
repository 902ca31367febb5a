"""What the PyTorch adapter reads from torch beyond its documented API (``msprobe.pytorch.internals``), on the
torch this runs with: tests/dump/test_oldest_torch.py runs this file on the oldest torch we support too."""
from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

from msprobe.pytorch import internals


def test_version_counts_in_place_writes_and_is_none_for_inference_tensors():
    t = torch.zeros(3)
    before = internals.version(t)
    t.add_(1)
    assert isinstance(before, int) and internals.version(t) == before + 1
    view = t[1:]
    view.mul_(2)  # a view shares its base's counter
    assert internals.version(t) == internals.version(view) == before + 2
    with torch.inference_mode():
        frozen = torch.ones(2)
    assert internals.version(frozen) is None


def test_root_is_the_tensor_a_view_was_made_from():
    base = torch.randn(4, 4)
    assert internals.root(base) is base
    assert internals.root(base.t()) is base and internals.root(base[1:].view(-1)) is base


def test_order_numbers_autograd_nodes_as_they_are_made():
    x = torch.randn(3, requires_grad=True)
    first = x * 2
    second = first.sin()
    assert internals.order(second) > internals.order(first)


def test_outside_mode_sets_the_innermost_mode_aside_and_back():
    seen = []

    class Spy(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    x = torch.ones(2)
    with Spy():
        internals.outside_mode(torch.add, x, x, alpha=2)
        assert not seen  # set aside while it ran
        torch.add(x, x)
    assert seen == [torch.add]
    assert internals.outside_mode(lambda a, b=0: a + b, 1, b=2) == 3  # no mode active: called as it is


def test_compiling_is_false_in_eager_code_and_compiled_tells_wrapped_modules():
    assert internals.compiling() is False
    module = torch.nn.Linear(2, 2)
    assert not internals.compiled(module)
    if hasattr(torch, "compile"):
        assert internals.compiled(torch.compile(module, backend="eager"))
