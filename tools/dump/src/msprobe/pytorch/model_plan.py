"""What a dumped window hooks in a model: its modules in ``named_modules`` order and each one's own
parameters, walked once and used again while no module's children or parameters changed.

The plan holds its modules and parameters weakly (a module dropped from the model is not kept alive), so a
dead reference also makes it stale: an id reused by a new object cannot pass.
"""
from __future__ import annotations

import weakref
from typing import Iterator, List, Tuple

import torch


class ModelPlan:
    """The modules of ``model`` but itself (path, module), with their own parameters (name, parameter)."""

    def __init__(self, model: torch.nn.Module) -> None:
        modules = [(path, m) for path, m in model.named_modules() if path]
        self._deaths: List[int] = []  # one item per module or parameter of the plan that died
        died = self._deaths.append
        self._modules = [(path, weakref.ref(m, died)) for path, m in modules]
        self._parameters = [[(name, weakref.ref(p, died)) for name, p in m.named_parameters(recurse=False)]
                            for _, m in modules]
        self._model = weakref.ref(model)
        self._signature = _signature(model)

    def references(self) -> Iterator[Tuple[str, "weakref.ref", List[Tuple[str, "weakref.ref"]]]]:
        """(path, weak reference to the module, [(name, weak reference to the parameter)]) of each module,
        the plan's own references (alive while ``still_valid`` says so)."""
        return ((path, module, parameters) for (path, module), parameters in zip(self._modules, self._parameters))

    def still_valid(self, model: torch.nn.Module) -> bool:
        """No module of the plan died, or got, lost or replaced a child or a parameter since it was made."""
        return not self._deaths and self._model() is model and _signature(model) == self._signature


def _signature(model: torch.nn.Module) -> List[Tuple[str, int, List[Tuple[str, int]]]]:
    """Each module's path and id with its own parameters' names and ids (ids of live objects: the plan's
    weak references say when one dies)."""
    return [(path, id(m), [(name, id(p)) for name, p in m.named_parameters(recurse=False)])
            for path, m in model.named_modules()]
