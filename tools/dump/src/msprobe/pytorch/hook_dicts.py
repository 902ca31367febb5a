"""Hooks put straight into the dicts torch keeps them in: what ``register_forward_pre_hook``,
``register_forward_hook`` (``with_kwargs=True``) and ``Tensor.register_hook`` do, less the
``RemovableHandle`` each of them makes (~5 us a hook; a small model's dumped window installs ~70 and
removes them again). Where a torch lacks those dicts, the public API does it."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Iterable, List, Tuple

import torch


class HookDicts:
    """The hooks of one kind of window (forward, or gradients), under one key, removed together."""

    def __init__(self) -> None:
        self._key = object()  # ours alone: torch's own ids are ints
        self._dicts: List[dict] = []
        self._handles: List[Any] = []

    def module(self, module: torch.nn.Module, pre: Callable, post: Callable) -> None:
        """``pre(module, args, kwargs)`` before and ``post(module, args, kwargs, output)`` after each call."""
        self.modules([(module, pre, post)])

    def modules(self, items: Iterable[Tuple[torch.nn.Module, Callable, Callable]]) -> None:
        """``module`` for each (module, pre, post), in one loop: a window hooks every module of a model."""
        key, dicts = self._key, self._dicts
        for module, pre, post in items:
            try:
                found = (module._forward_pre_hooks, module._forward_pre_hooks_with_kwargs, module._forward_hooks,
                         module._forward_hooks_with_kwargs)
            except AttributeError:
                self._handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
                self._handles.append(module.register_forward_hook(post, with_kwargs=True))
                continue
            found[0][key], found[1][key], found[2][key], found[3][key] = pre, True, post, True
            dicts.extend(found)

    def tensor(self, tensor: torch.Tensor, hook: Callable) -> None:
        """``hook(grad)`` when the tensor's gradient is computed (a leaf's: a parameter's)."""
        self.tensors([(tensor, hook)])

    def tensors(self, items: Iterable[Tuple[torch.Tensor, Callable]]) -> None:
        """``tensor`` for each (tensor, hook), in one loop."""
        key, dicts = self._key, self._dicts
        for tensor, hook in items:
            hooks = getattr(tensor, "_backward_hooks", False)
            if hooks is False or tensor.grad_fn is not None:
                self._handles.append(tensor.register_hook(hook))
                continue
            if hooks is None:
                hooks = tensor._backward_hooks = OrderedDict()  # torch's setter attaches the dict to autograd
            hooks[key] = hook
            dicts.append(hooks)

    def remove(self) -> None:
        key = self._key
        for hooks in self._dicts:
            hooks.pop(key, None)
        self._dicts.clear()
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
