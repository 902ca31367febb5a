"""Hooks registered through torch's public API (``register_forward_pre_hook`` / ``register_forward_hook``
with ``with_kwargs=True``, ``Tensor.register_hook``), kept by their ``RemovableHandle`` and removed together."""
from __future__ import annotations

from typing import Any, Callable, Iterable, List, Tuple

import torch


class HookHandles:
    """The hooks of one kind of window (forward, or gradients), removed together."""

    def __init__(self) -> None:
        self._handles: List[Any] = []

    def modules(self, items: Iterable[Tuple[torch.nn.Module, Callable, Callable]]) -> None:
        """For each (module, pre, post): ``pre(module, args, kwargs)`` before and ``post(module, args, kwargs,
        output)`` after each call."""
        handles = self._handles
        for module, pre, post in items:
            handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
            # always_call: ``post`` runs when the forward raises too (output None), as msprobe's hook does: a module
            # whose recomputation torch's checkpoint stops inside it gets its entry, and the open-call stack stays right
            handles.append(module.register_forward_hook(post, with_kwargs=True, always_call=True))

    def tensors(self, items: Iterable[Tuple[torch.Tensor, Callable]]) -> None:
        """For each (tensor, hook): ``hook(grad)`` when the tensor's gradient is computed."""
        self._handles.extend(tensor.register_hook(hook) for tensor, hook in items)

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
