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


def test_autograd_nodes_are_numbered_as_they_are_made_and_the_next_number_is_known_before():
    x = torch.randn(3, requires_grad=True)
    mark = internals.next_order()
    assert internals.next_order() == mark  # asking makes no node
    first = x * 2
    with torch.no_grad():
        x * 3  # no node, no number
    second = first.sin()
    assert internals.node_order(first.grad_fn) == mark and internals.node_order(second.grad_fn) == mark + 1


def test_edges_lead_to_a_tensors_node_or_to_a_leafs_accumulator():
    x = torch.randn(3, requires_grad=True)
    pair = torch.randn(2, 3, requires_grad=True).unbind(0)  # one node, two outputs
    y = pair[1] * x
    (node, nr), (leaf_node, _) = y.grad_fn.next_functions
    assert internals.edge_of(pair[1]) == (pair[1].grad_fn, 1) and node is pair[1].grad_fn and nr == 1
    assert internals.edge_of(x) == (None, 0) and internals.leaf_of(leaf_node) is x
    assert internals.leaf_of(node) is None


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
