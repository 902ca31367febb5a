"""``parameters_grad`` where Parameters have no gradient hooks (MindSpore 2.0, so MSAdapter 0.1.0).

There the weight gradients exist only as what ``ms.grad`` / ``ms.value_and_grad`` return, so those two
functions are wrapped (at import of ``msprobe.mindspore``, before training code builds its grad function)
and the weight part of each result is handed to the engine while a dump window is installed.
"""
from __future__ import annotations

import functools
import warnings
from typing import Any, Dict, List, Optional, Tuple

import mindspore as ms

from ._compat import can_hook_parameters
from .internals import own_parameters

_WRAPPED = "__msprobe_weight_grads__"
_active: Optional["WeightGradTap"] = None
"""The tap of the debugger whose step is being dumped: the patched functions are process-wide."""


class WeightGradTap:
    """Maps each Parameter of the dumped cells to its owner, and records returned weight gradients."""

    def __init__(self, engine: Any, prefix: str) -> None:
        self.engine = engine
        self.prefix = prefix
        self._owners: Dict[int, Tuple[Tuple[str, str, str], str]] = {}

    def install(self, cells: List[Tuple[str, Any]]) -> None:
        self._owners = {id(param): ((self.prefix, path, type(cell).__name__), name)
                        for path, cell in cells for name, param in own_parameters(cell).items()}
        self._generation = self.engine.generation
        global _active
        _active = self

    def remove(self) -> None:
        global _active
        if _active is self:
            _active = None

    def record(self, weights: List[Any], grads: Any) -> None:
        if self.engine.generation != self._generation or self.engine.finished:
            return
        for param, grad in zip(weights, grads):
            owner = self._owners.get(id(param))
            if owner is not None and grad is not None:
                self.engine.param_grad(owner[0], owner[1], grad)


def _weight_list(weights: Any) -> Optional[List[Any]]:
    if weights is None:
        return None
    return [weights] if isinstance(weights, ms.Parameter) else list(weights)


def _weight_grads(result: Any, with_value: bool, grad_position: Any, single: bool) -> Tuple[Any, ...]:
    grads = result[1] if with_value else result
    if grad_position is not None:
        grads = grads[1]  # (gradients of the inputs, gradients of the weights)
    return (grads,) if single else tuple(grads)


def _wrap(original: Any, with_value: bool) -> Any:
    @functools.wraps(original)
    def grad_function(fn: Any, grad_position: Any = 0, weights: Any = None, has_aux: bool = False,
                      *args: Any, **kwargs: Any) -> Any:
        inner = original(fn, grad_position, weights, has_aux, *args, **kwargs)
        weight_list = _weight_list(weights)
        if weight_list is None or args or kwargs.get("return_ids"):
            return inner

        @functools.wraps(inner)
        def run(*call_args: Any, **call_kwargs: Any) -> Any:
            result = inner(*call_args, **call_kwargs)
            tap = _active
            if tap is not None:
                try:
                    grads = _weight_grads(result, with_value, grad_position, isinstance(weights, ms.Parameter))
                    tap.record(weight_list, grads)
                except (IndexError, TypeError) as exc:  # an unforeseen result shape must not stop training
                    warnings.warn(f"msprobe: parameter gradients not recorded: {exc}")
            return result
        return run

    setattr(grad_function, _WRAPPED, True)
    return grad_function


def patch_grad_functions() -> None:
    """Wrap ``mindspore.grad`` / ``mindspore.value_and_grad`` once, only where Parameters cannot be hooked."""
    if can_hook_parameters():
        return
    for name, with_value in (("value_and_grad", True), ("grad", False)):
        original = getattr(ms, name, None)
        if original is not None and not getattr(original, _WRAPPED, False):
            setattr(ms, name, _wrap(original, with_value))
