"""Public MindSpore APIs that differ between versions (2.0 on Python 3.9 ... 2.10), and the torch-on-MindSpore
adapters (MSAdapter, MindTorch). What the adapter reads or writes of MindSpore beyond its documented API is
in :mod:`.internals`.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Optional

import mindspore as ms


def hook_backward(hook: Callable[..., Any]) -> Any:
    """An identity primitive that calls ``hook(grads_tuple)`` with the gradients flowing into its outputs."""
    from mindspore import ops
    return ops.HookBackward(hook)


def can_hook_parameters() -> bool:
    """Parameter.register_hook (MindSpore >= 2.1 PyNative); 2.0 has no tensor hooks."""
    return hasattr(ms.Parameter, "register_hook")


class TorchOnMindSpore:
    """The torch-style package running on MindSpore: ``msadapter.pytorch`` or its successor ``mindtorch.torch``."""

    def __init__(self, name: str, torch: Any) -> None:
        self.name = name
        self.torch = torch
        self.tensor_class = getattr(torch, "Tensor")
        self.module_class = torch.nn.Module
        self.functional = torch.nn.functional
        self._cast = _find_cast(name)

    def rewrap(self, value: Any, like: Any) -> Any:
        """``value`` (a plain MindSpore tensor from HookBackward) as the adapter's Tensor when ``like`` was one."""
        # the MRO, not isinstance/issubclass: MindSpore's tensor metaclass and __subclasshook__ make every
        # tensor an "instance" of the adapter's class
        if self._cast is None or self.tensor_class not in type(like).__mro__ or \
                self.tensor_class in type(value).__mro__:
            return value
        return self._cast(value)


def _find_cast(name: str) -> Optional[Callable[[Any], Any]]:
    for module in (f"{name}.tensor", f"{name}._tensor"):
        try:
            return getattr(importlib.import_module(module), "cast_to_adapter_tensor")
        except (ImportError, AttributeError):
            continue
    return None


TORCH_PACKAGES = ("msadapter.pytorch", "mindtorch.torch")


def detect_torch_adapter(model: Any = None) -> Optional[TorchOnMindSpore]:
    """The torch-on-MindSpore package in use: imported by the user already, or the model's class comes from it."""
    for name in TORCH_PACKAGES:
        torch = sys.modules.get(name)
        if torch is None:
            continue
        if model is None or isinstance(model, torch.nn.Module) or _any_torch_module(model, torch):
            return TorchOnMindSpore(name, torch)
    return None


def _any_torch_module(model: Any, torch: Any) -> bool:
    items = model if isinstance(model, (list, tuple)) else [model]
    return any(isinstance(item, torch.nn.Module) for item in items)
