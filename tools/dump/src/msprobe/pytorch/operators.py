"""Python's operators on tensors under their own names, as msprobe records them (``x + y`` is
``Tensor.__add__``, ``x += y`` is ``Tensor.__iadd__``, each with its own counter).

torch binds most operators to a method of another name (``Tensor.__add__`` is ``TensorBase.add`` for
the torch function protocol): a mode sees ``x + y`` and ``x.add(y)`` as the same call. While a window is
open, the operators below are replaced on ``torch.Tensor`` by wrappers that hand the call to the torch
function protocol as themselves (``torch.overrides.handle_torch_function``, as torch's own Python-level
operators such as ``Tensor.__rsub__`` do) and call the original when no mode or subclass takes it.
``-x`` thus reaches the mode as ``Tensor.__neg__``, which msprobe's list lacks: not recorded, as in msprobe.

Five reflected operators are Python code in torch and absent from msprobe's list (``REFLECTED``): msprobe
leaves them unwrapped, so its wrappers see the APIs their bodies call (``1 / x`` is ``Tensor.reciprocal``
then ``Tensor.__mul__``, ``2 // x`` ``Torch.floor_divide``). A mode would see them as one unrecorded call
and run it set aside, hiding those; unless the API list records them, they are replaced by a wrapper that
runs torch's body itself, the mode in force, so the same entries come out.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import torch
from torch.overrides import handle_torch_function, has_torch_function

from .api_list import ApiTable
from .internals import compiling

# Operators torch binds to a method of another name (the others, __eq__, __and__, __rsub__..., reach the mode
# under their own names already).
OPERATORS = (
    "__abs__", "__add__", "__div__", "__ge__", "__gt__", "__iadd__", "__idiv__", "__ifloordiv__", "__imod__",
    "__imul__", "__ipow__", "__isub__", "__itruediv__", "__le__", "__lt__", "__matmul__", "__mod__", "__mul__",
    "__ne__", "__neg__", "__pos__", "__pow__", "__radd__", "__rand__", "__rmul__", "__ror__", "__rtruediv__",
    "__rxor__", "__sub__", "__truediv__",
)
REFLECTED = ("__rfloordiv__", "__rlshift__", "__rmatmul__", "__rrshift__", "__rtruediv__")
_ABSENT = object()


def _wrap(name: str, original: Callable) -> Callable:
    def operator(self, *args, **kwargs):
        if not compiling() and has_torch_function((self,) + args):
            return handle_torch_function(operator, (self,) + args, self, *args, **kwargs)
        return original(self, *args, **kwargs)

    operator.__name__ = name
    operator.__qualname__ = f"Tensor.{name}"
    operator.__doc__ = getattr(original, "__doc__", None)
    return operator


def _transparent(name: str, original: Callable) -> Callable:
    body = getattr(original, "__wrapped__", None)  # torch's operator without its dispatch decorator

    def operator(self, *args, **kwargs):
        if body is None or compiling() or not _plain((self,) + args):  # a subclass of its own handling gets it
            return original(self, *args, **kwargs)  # whole, as without the dump
        try:
            return body(self, *args, **kwargs)
        except TypeError:  # as torch's decorator does: Python then tries the other operand's operator
            return NotImplemented

    operator.__name__ = name
    operator.__qualname__ = f"Tensor.{name}"
    operator.__doc__ = getattr(original, "__doc__", None)
    return operator


def _handler(kind: type) -> Any:
    handler = kind.__torch_function__
    return getattr(handler, "__func__", handler)


# torch's own handling of tensor subclasses, and none (Parameter's; DTensor's)
_DEFAULT_HANDLING = (_handler(torch.Tensor), _handler(torch.nn.Parameter))


def _plain(values: Tuple[Any, ...]) -> bool:
    """No tensor among ``values`` whose class handles torch functions its own way: for the others torch's
    dispatch would run the same body, each API it calls dispatched in turn."""
    return all(not isinstance(value, torch.Tensor) or type(value) is torch.Tensor
               or _handler(type(value)) in _DEFAULT_HANDLING for value in values)


class OperatorPatches:
    """The operator wrappers of one table (made once, again only if ``torch.Tensor``'s operator was
    replaced since), installed for a window and removed after it."""

    def __init__(self, table: ApiTable) -> None:
        self.table = table
        self._wrapped: Dict[str, Tuple[Any, Callable]] = {}  # name -> (original, its wrapper)
        self._saved: List[Tuple[str, Any]] = []

    def install(self) -> None:
        if self._saved:  # already installed (start() twice in a window)
            return
        ours = {wrapper for _, wrapper in self._wrapped.values()}
        tensor = torch.Tensor
        for name in self._names():
            current = getattr(tensor, name, None)
            if current is None or current in ours:
                continue
            made = self._wrapped.get(name)
            if made is None or made[0] is not current:
                recorded = name in self.table.tensor_names or name not in REFLECTED
                made = self._wrapped[name] = (current, (_wrap if recorded else _transparent)(name, current))
                if recorded:
                    self.table.add_operator(name, made[1])
            self._saved.append((name, tensor.__dict__.get(name, _ABSENT)))
            setattr(tensor, name, made[1])

    def _names(self) -> Tuple[str, ...]:
        """OPERATORS, and the REFLECTED ones not recorded under their own names (their bodies' APIs are)."""
        return OPERATORS + tuple(n for n in REFLECTED if n not in OPERATORS and n not in self.table.tensor_names)

    def remove(self) -> None:
        tensor = torch.Tensor
        for name, saved in reversed(self._saved):
            if saved is _ABSENT:
                delattr(tensor, name)  # inherited from TensorBase again
            else:
                setattr(tensor, name, saved)
        self._saved.clear()
