"""Hooks put straight into torch's hook dicts, or a module's call-through, behave as the registered ones and
leave nothing behind."""
from __future__ import annotations

import copy
import pickle

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


def _recording_hooks(seen):
    def pre(module, args, kwargs):
        seen.append(("pre", type(module).__name__, dict(kwargs)))
        return (args[0] * 2,), kwargs

    def post(module, args, kwargs, output):
        seen.append(("post", type(module).__name__))
        return output + 1
    return pre, post


def test_a_module_without_hooks_gets_a_call_through_that_acts_as_the_hooks_and_goes_away():
    seen = []
    layer = torch.nn.Linear(3, 2)
    hooks = HookDicts()
    hooks.module(layer, *_recording_hooks(seen))
    assert "_compiled_call_impl" in layer.__dict__ and not layer._forward_pre_hooks and not layer._forward_hooks
    x = torch.ones(4, 3)
    assert torch.equal(layer(x), torch.nn.functional.linear(x * 2, layer.weight, layer.bias) + 1)
    assert seen == [("pre", "Linear", {}), ("post", "Linear")]
    later = layer.register_forward_hook(lambda module, args, output: seen.append("user post"))  # made in a window
    layer(x)
    assert seen[2:] == [("pre", "Linear", {}), "user post", ("post", "Linear")]
    later.remove()
    seen.clear()
    copied = copy.deepcopy(layer)  # a copy made in a window is the user's own: not hooked
    assert "_compiled_call_impl" not in copied.__dict__ and "_compiled_call_impl" not in pickle.loads(pickle.dumps(layer)).__dict__
    with torch.no_grad():
        copied.weight.zero_()
    assert torch.equal(copied(x), copied.bias.expand(4, 2)) and seen == []
    hooks.remove()
    assert "_compiled_call_impl" not in layer.__dict__ and layer._compiled_call_impl is None
    assert torch.equal(layer(x), torch.nn.functional.linear(x, layer.weight, layer.bias)) and seen == []


def test_global_hooks_or_a_compiled_call_keep_the_hooks_in_torchs_dicts():
    seen = []
    layer = torch.nn.Linear(3, 2)
    handle = torch.nn.modules.module.register_module_forward_pre_hook(lambda module, args: seen.append("global pre"))
    try:
        hooks = HookDicts()
        hooks.module(layer, *_recording_hooks(seen))
        assert "_compiled_call_impl" not in layer.__dict__ and len(layer._forward_pre_hooks) == 1
        layer(torch.ones(1, 3))
        assert seen == ["global pre", ("pre", "Linear", {}), ("post", "Linear")]  # torch's order
        hooks.remove()
    finally:
        handle.remove()
    compiled = layer._compiled_call_impl = layer._call_impl  # what Module.compile() sets, in its place
    hooks = HookDicts()
    hooks.module(layer, *_recording_hooks(seen))
    assert layer._compiled_call_impl is compiled and len(layer._forward_hooks) == 1
    hooks.remove()
    assert layer._compiled_call_impl is compiled and not layer._forward_hooks


def test_a_call_through_passes_keyword_arguments_named_as_its_own_to_the_module():
    class Scaled(torch.nn.Module):
        def forward(self, x, ref=1.0, pre=1.0, post=1.0):
            return x * ref * pre * post

    seen = []
    module = Scaled()
    hooks = HookDicts()
    hooks.module(module, *_recording_hooks(seen))
    out = module(torch.ones(2), ref=2.0, pre=3.0, post=5.0)
    assert torch.equal(out, torch.full((2,), 2 * 2.0 * 3.0 * 5.0 + 1))
    assert seen == [("pre", "Scaled", {"ref": 2.0, "pre": 3.0, "post": 5.0}), ("post", "Scaled")]
    hooks.remove()
