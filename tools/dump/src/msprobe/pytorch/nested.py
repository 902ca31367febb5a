"""``record_nested`` for the PyTorch adapter.

Torch sets the dump's mode aside while it handles a call, so the APIs a Python-level API calls
(F.layer_norm calling torch.layer_norm) are invisible by default, as in msprobe. To record them the
mode is pushed again around the call's body; the body runs from a copy of the function whose globals
answer "no" to ``has_torch_function*``, because its first line would otherwise hand the call straight
back to the mode.
"""
from __future__ import annotations

import types
from typing import Any, Callable, Dict, List, Tuple


_NO_DISPATCH = ("has_torch_function", "has_torch_function_unary", "has_torch_function_variadic")


def _never(*args: Any) -> bool:
    return False


class NestedRunner:
    """Runs API bodies with a mode active inside them; one per mode, so one per dumped window: the
    copies of module globals it makes are never older than the window (a module patched between
    windows is seen)."""

    def __init__(self, mode: Any) -> None:
        self.mode = mode
        self._running: List[Any] = []
        self._globals: Dict[int, Tuple[dict, dict]] = {}
        self._copies: Dict[Any, Callable] = {}

    def body(self, func, args, kwargs):
        if type(func) is not types.FunctionType or (self._running and self._running[-1] is func):
            # C functions have no Python body; a second entry for the same function is its own dispatch
            # check (one the globals copy did not catch): run it plainly, as without record_nested
            return func(*args, **kwargs)
        self._running.append(func)
        try:
            with self.mode:
                return self.undispatched(func)(*args, **kwargs)
        finally:
            self._running.pop()

    def undispatched(self, func: types.FunctionType) -> Callable:
        """A copy of ``func`` whose ``has_torch_function*`` checks are false (cached per function)."""
        copy = self._copies.get(func)
        if copy is None:
            original = func.__globals__
            cached = self._globals.get(id(original))
            if cached is None or cached[0] is not original:
                namespace = dict(original)
                namespace.update({name: _never for name in _NO_DISPATCH if name in namespace})
                cached = self._globals[id(original)] = (original, namespace)
            copy = types.FunctionType(func.__code__, cached[1], func.__name__, func.__defaults__,
                                      func.__closure__)
            copy.__kwdefaults__ = func.__kwdefaults__
            self._copies[func] = copy
        return copy
