"""What a dumped window hooks in a model: its modules in ``named_modules`` order and each one's own
parameters, walked once and used again while no module's children or parameters changed.

Walking them (``named_modules`` and ``named_parameters``: generators, a memo set, a string per path)
was most of what installing an L0 window cost; checking that the model is unchanged compares each
module's children and parameters with the ids of the plan's (in C where the helpers are built). The
plan holds its modules and parameters weakly (a module dropped from the model is not kept alive), so a
dead reference also makes it stale: an id reused by a new object cannot pass.
"""
from __future__ import annotations

import struct
import weakref
from typing import Iterator, List, Tuple

import torch

from msprobe.dump import native


class ModelPlan:
    """The modules of ``model`` but itself (path, module), with their own parameters (name, parameter)."""

    def __init__(self, model: torch.nn.Module) -> None:
        modules = [(path, m) for path, m in model.named_modules() if path]
        self._deaths: List[int] = []  # one item per module or parameter of the plan that died
        died = self._deaths.append
        self._modules = [(path, weakref.ref(m, died)) for path, m in modules]
        self._parameters = [[(name, weakref.ref(p, died)) for name, p in m.named_parameters(recurse=False)]
                            for _, m in modules]
        # (owner, its dict of children or parameters, the ids of their values packed): the root weakly too,
        # for the plan lives as long as the model (Hooks keeps it by weak key)
        self._members = [(weakref.ref(model), "_modules", _ids(model._modules))]
        self._members += [(ref, name, _ids(getattr(m, name))) for (_, m), (_, ref) in zip(modules, self._modules)
                          for name in ("_modules", "_parameters")]

    def references(self) -> Iterator[Tuple[str, "weakref.ref", List[Tuple[str, "weakref.ref"]]]]:
        """(path, weak reference to the module, [(name, weak reference to the parameter)]) of each module,
        the plan's own references (alive while ``still_valid`` says so)."""
        return ((path, module, parameters) for (path, module), parameters in zip(self._modules, self._parameters))

    def still_valid(self, model: torch.nn.Module) -> bool:
        """No module of the plan died, or got, lost or replaced a child or a parameter since it was made.
        (A death is told by its weak reference's callback: dereferencing them all cost more than the rest.)"""
        return not self._deaths and self._members[0][0]() is model and _same_members(self._members)


def _ids(members: dict) -> bytes:
    """The ids of ``members``' values as native pointers, packed (``_native.same_members`` reads them)."""
    ids = [id(value) for value in members.values()]
    return struct.pack(f"{len(ids)}P", *ids)


def _same_members_python(items: List[Tuple["weakref.ref", str, bytes]]) -> bool:
    """``_native.same_members``: every owner alive, and each dict holding the objects of the ids, in order."""
    for ref, name, ids in items:
        owner = ref()
        if owner is None or _ids(getattr(owner, name)) != ids:
            return False
    return True


_same_members = getattr(native.helpers(), "same_members", None) or _same_members_python
