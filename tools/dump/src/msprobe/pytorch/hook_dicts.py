"""Hooks put straight into the dicts torch keeps them in: what ``register_forward_pre_hook``,
``register_forward_hook`` (``with_kwargs=True``) and ``Tensor.register_hook`` do, less the
``RemovableHandle`` each of them makes (~5 us a hook; a small model's dumped window installs ~70 and
removes them again). Where a torch lacks those dicts, the public API does it."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, List, Tuple

import torch


class HookDicts:
    """The hooks of one kind of window (forward, or gradients), under one key, removed together."""

    def __init__(self) -> None:
        self._key = object()  # ours alone: torch's own ids are ints
        self._dicts: List[Tuple[dict, ...]] = []
        self._handles: List[Any] = []

    def module(self, module: torch.nn.Module, pre: Callable, post: Callable) -> None:
        """``pre(module, args, kwargs)`` before and ``post(module, args, kwargs, output)`` after each call."""
        try:
            dicts = (module._forward_pre_hooks, module._forward_pre_hooks_with_kwargs, module._forward_hooks,
                     module._forward_hooks_with_kwargs)
        except AttributeError:
            self._handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
            self._handles.append(module.register_forward_hook(post, with_kwargs=True))
            return
        key = self._key
        dicts[0][key], dicts[1][key], dicts[2][key], dicts[3][key] = pre, True, post, True
        self._dicts.append(dicts)

    def tensor(self, tensor: torch.Tensor, hook: Callable) -> None:
        """``hook(grad)`` when the tensor's gradient is computed (a leaf's: a parameter's)."""
        hooks = getattr(tensor, "_backward_hooks", False)
        if hooks is False or tensor.grad_fn is not None:
            self._handles.append(tensor.register_hook(hook))
            return
        if hooks is None:
            hooks = tensor._backward_hooks = OrderedDict()  # torch's setter attaches the dict to autograd
        hooks[self._key] = hook
        self._dicts.append((hooks,))

    def remove(self) -> None:
        key = self._key
        for dicts in self._dicts:
            for hooks in dicts:
                hooks.pop(key, None)
        self._dicts.clear()
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
