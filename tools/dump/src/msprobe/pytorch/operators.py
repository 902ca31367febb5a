"""Python's operators on tensors under their own names, as msprobe records them (``x + y`` is
``Tensor.__add__``, ``x += y`` is ``Tensor.__iadd__``, each with its own counter).

torch binds most operators to a method of another name (``Tensor.__add__`` is ``TensorBase.add`` for
the torch function protocol): a mode sees ``x + y`` and ``x.add(y)`` as the same call. While a window is
open, the operators below are replaced on ``torch.Tensor`` by wrappers that hand the call to the torch
function protocol as themselves (``torch.overrides.handle_torch_function``, as torch's own Python-level
operators such as ``Tensor.__rsub__`` do) and call the original when no mode or subclass takes it.
``-x`` thus reaches the mode as ``Tensor.__neg__``, which msprobe's list lacks: not recorded, as in msprobe.
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
        for name in OPERATORS:
            current = getattr(tensor, name, None)
            if current is None or current in ours:
                continue
            made = self._wrapped.get(name)
            if made is None or made[0] is not current:
                made = self._wrapped[name] = (current, _wrap(name, current))
                self.table.add_operator(name, made[1])
            self._saved.append((name, tensor.__dict__.get(name, _ABSENT)))
            setattr(tensor, name, made[1])

    def remove(self) -> None:
        tensor = torch.Tensor
        for name, saved in reversed(self._saved):
            if saved is _ABSENT:
                delattr(tensor, name)  # inherited from TensorBase again
            else:
                setattr(tensor, name, saved)
        self._saved.clear()
