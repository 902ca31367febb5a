"""``record_nested``: APIs called inside other APIs (F.layer_norm -> torch.layer_norm) are recorded too."""
from __future__ import annotations

import sys

import pytest
import torch
import torch.nn.functional as F
from torch.overrides import handle_torch_function, has_torch_function

from dumphelpers import assert_stats_match, dump_one_step, numpy_stats


def _dump(tmp_path, nested, body):
    return dump_one_step(tmp_path, body, record_nested=nested)


def _layer_norm_step(x, w):
    def body():
        y = F.layer_norm(x, (8,), w)
        (y * y).sum().backward()
    return body


@pytest.mark.parametrize("nested", [False, True])
def test_inner_apis_recorded_only_when_asked(tmp_path, nested):
    torch.manual_seed(0)
    x = torch.randn(4, 8, requires_grad=True)
    w = torch.randn(8, requires_grad=True)
    data = _dump(tmp_path, nested, _layer_norm_step(x, w))
    assert "Functional.layer_norm.0.forward" in data and "Functional.layer_norm.0.backward" in data
    assert ("Torch.layer_norm.0.forward" in data) is nested
    assert ("Torch.layer_norm.0.backward" in data) is nested


def test_inner_entries_hold_the_same_tensors_and_gradients(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(4, 8, requires_grad=True)
    w = torch.randn(8, requires_grad=True)
    data = _dump(tmp_path, True, _layer_norm_step(x, w))
    names = list(data)
    # the inner call ends first, so its entry comes first
    assert names.index("Torch.layer_norm.0.forward") < names.index("Functional.layer_norm.0.forward")
    y = F.layer_norm(x, (8,), w)
    gy = 2 * y.detach()
    gx, gw = torch.autograd.grad(y, (x, w), gy)
    for api in ("Functional", "Torch"):
        forward = data[f"{api}.layer_norm.0.forward"]
        assert_stats_match(forward["output"][0], numpy_stats(y.detach().numpy()), f"{api} output")
        backward = data[f"{api}.layer_norm.0.backward"]
        assert_stats_match(backward["input"][0], numpy_stats(gy.numpy()), f"{api} grad of output")
        assert_stats_match(backward["output"][0], numpy_stats(gx.numpy()), f"{api} grad of input")
    # F.layer_norm hands its weight on as a keyword (no backward.output slot); torch.layer_norm gets it as
    # positional argument 2
    assert data["Functional.layer_norm.0.backward"]["output"][1:] == [None]
    assert_stats_match(data["Torch.layer_norm.0.backward"]["output"][2], numpy_stats(gw.numpy()), "grad w")


def _self_dispatching(x):
    """A Python-level torch function whose dispatch check is not one of its module's global names."""
    if torch.overrides.has_torch_function((x,)):
        return torch.overrides.handle_torch_function(_self_dispatching, (x,), x)
    return torch.relu(x) * 2


def test_functions_that_dispatch_themselves_still_run_once(tmp_path):
    x = torch.tensor([-1.0, 3.0])
    results = []
    data = _dump(tmp_path, True, lambda: results.append(_self_dispatching(x) + 1))
    assert results[0].tolist() == [1.0, 7.0]
    assert "Tensor.__add__.0.forward" in data  # the mode is still in place after the function returned
    assert F.gelu is torch._C._nn.gelu  # nothing in torch was replaced


def _helper(x):
    return x + 1


def _uses_helper(x):
    """A Python-level torch function that calls a global of its module."""
    if has_torch_function((x,)):
        return handle_torch_function(_uses_helper, (x,), x)
    return _helper(x)


def test_a_global_patched_between_windows_is_seen(tmp_path, monkeypatch):
    x = torch.zeros(2)
    results = []
    _dump(tmp_path / "first", True, lambda: results.append(_uses_helper(x)))
    monkeypatch.setattr(sys.modules[__name__], "_helper", lambda t: t + 2)
    _dump(tmp_path / "second", True, lambda: results.append(_uses_helper(x)))
    assert [r.tolist() for r in results] == [[1.0, 1.0], [2.0, 2.0]]  # the body ran from a fresh copy
