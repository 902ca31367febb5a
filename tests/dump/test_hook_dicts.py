"""Hooks put straight into torch's hook dicts behave as the registered ones and leave nothing behind."""
from __future__ import annotations

import torch

from msprobe.pytorch.hook_dicts import HookDicts


def test_module_hooks_see_each_call_after_the_users_and_go_away():
    seen = []
    layer = torch.nn.Linear(3, 2)
    layer.register_forward_pre_hook(lambda module, args: seen.append("user pre"))
    hooks = HookDicts()

    def pre(module, args, kwargs):
        seen.append(("pre", args[0].shape, dict(kwargs)))
        return (args[0] * 2,), kwargs  # replaces the inputs, as a registered with_kwargs pre hook may

    def post(module, args, kwargs, output):
        seen.append(("post", args[0].shape))
        return output + 1

    hooks.module(layer, pre, post)
    x = torch.ones(4, 3)
    out = layer(x)
    assert seen == ["user pre", ("pre", (4, 3), {}), ("post", (4, 3))]
    assert torch.equal(out, torch.nn.functional.linear(x * 2, layer.weight, layer.bias) + 1)
    hooks.remove()
    seen.clear()
    assert torch.equal(layer(x), torch.nn.functional.linear(x, layer.weight, layer.bias))
    assert seen == ["user pre"]
    assert len(layer._forward_hooks) == 0 and len(layer._forward_pre_hooks) == 1
    assert not layer._forward_pre_hooks_with_kwargs and not layer._forward_hooks_with_kwargs


def test_parameter_hooks_get_the_gradient_and_go_away():
    layer = torch.nn.Linear(3, 2)
    grads = []
    hooks = HookDicts()
    hooks.tensor(layer.weight, lambda grad: grads.append(grad.clone()))
    layer(torch.ones(4, 3)).sum().backward()
    assert len(grads) == 1 and torch.equal(grads[0], layer.weight.grad)
    hooks.remove()
    layer(torch.ones(4, 3)).sum().backward()
    assert len(grads) == 1


def test_a_non_leaf_tensor_takes_the_public_api():
    leaf = torch.ones(3, requires_grad=True)
    inner = leaf * 2
    grads = []
    hooks = HookDicts()
    hooks.tensor(inner, lambda grad: grads.append(grad))
    (inner * 3).sum().backward()
    assert [g.tolist() for g in grads] == [[3.0, 3.0, 3.0]]
    hooks.remove()
    assert not inner._backward_hooks
