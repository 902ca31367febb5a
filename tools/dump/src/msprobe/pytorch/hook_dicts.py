"""Hooks put straight into the dicts torch keeps them in: what ``register_forward_pre_hook``,
``register_forward_hook`` (``with_kwargs=True``) and ``Tensor.register_hook`` do, less the
``RemovableHandle`` each of them makes (~5 us a hook; a small model's dumped window installs ~70 and
removes them again). Where a torch lacks those dicts, the public API does it.

A module with no hooks of its own (nor global ones) gets its two hooks as a call-through instead: the
instance's ``_compiled_call_impl``, which ``Module.__call__`` calls in place of ``_call_impl`` (it is
where ``Module.compile()`` puts the compiled call). A hooked module's ``_call_impl`` runs its hooks in a
closure made per call, with a lookup per hook in four dicts: ~1.5 us a call more than the call-through,
which calls ``pre``, the module's own ``_call_impl`` (its hook-free path) and ``post``. The module's
class, ``forward`` and signature stay as they are; pickling or copying a module drops the attribute
(``Module.__getstate__``), so a copy made in a window is not hooked."""
from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from typing import Any, Callable, Iterable, List, Tuple

import torch
from torch.nn.modules import module as _torch_module

_GLOBAL_HOOKS = [getattr(_torch_module, name, None) for name in (
    "_global_forward_pre_hooks", "_global_forward_hooks", "_global_backward_pre_hooks", "_global_backward_hooks")]
_CALLS_THROUGH = getattr(torch.nn.Module, "_wrapped_call_impl", None)
"""What ``Module.__call__`` is where it looks for ``_compiled_call_impl`` (torch >= 2.2)"""


class HookDicts:
    """The hooks of one kind of window (forward, or gradients), under one key, removed together."""

    def __init__(self) -> None:
        self._key = object()  # ours alone: torch's own ids are ints
        self._dicts: List[dict] = []
        self._handles: List[Any] = []
        self._through: List[Tuple[Any, Callable]] = []  # (module ref, its call-through)

    def module(self, module: torch.nn.Module, pre: Callable, post: Callable) -> None:
        """``pre(module, args, kwargs)`` before and ``post(module, args, kwargs, output)`` after each call."""
        self.modules([(module, pre, post)])

    def modules(self, items: Iterable[Tuple[torch.nn.Module, Callable, Callable]]) -> None:
        """``module`` for each (module, pre, post), in one loop: a window hooks every module of a model."""
        key, dicts = self._key, self._dicts
        for module, pre, post in items:
            if self._call_through(module, pre, post):
                continue
            try:
                found = (module._forward_pre_hooks, module._forward_pre_hooks_with_kwargs, module._forward_hooks,
                         module._forward_hooks_with_kwargs)
            except AttributeError:
                self._handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
                self._handles.append(module.register_forward_hook(post, with_kwargs=True))
                continue
            found[0][key], found[1][key], found[2][key], found[3][key] = pre, True, post, True
            dicts.extend(found)

    def _call_through(self, module: torch.nn.Module, pre: Callable, post: Callable) -> bool:
        """Installs ``pre`` and ``post`` as the module's call-through where it calls through one and has no
        hook (the order of hooks stays torch's where there are others); False: not installed."""
        if _CALLS_THROUGH is None or type(module).__call__ is not _CALLS_THROUGH or any(_GLOBAL_HOOKS):
            return False
        state = getattr(module, "__dict__", None)
        if state is None or state.get("_compiled_call_impl") is not None or state.get("_forward_pre_hooks") or \
                state.get("_forward_hooks") or state.get("_backward_pre_hooks") or state.get("_backward_hooks"):
            return False
        ref = weakref.ref(module)
        through = functools.partial(_call_through, ref, pre, post)
        state["_compiled_call_impl"] = through
        self._through.append((ref, through))
        return True

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
        for ref, through in self._through:
            module = ref()
            if module is not None and module.__dict__.get("_compiled_call_impl") is through:
                del module.__dict__["_compiled_call_impl"]  # the class's None again
        self._through.clear()


def _call_through(ref: Any, pre: Callable, post: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """A module's call with ``pre`` and ``post`` as its forward pre hook and forward hook (with kwargs); its
    own parameters are positional-only, so a keyword argument of the module named ``pre`` is the module's."""
    module = ref()
    changed = pre(module, args, kwargs)
    if changed is not None:
        args, kwargs = changed
    output = module._call_impl(*args, **kwargs)
    changed = post(module, args, kwargs, output)
    return output if changed is None else changed
