"""What a window patches beside its torch function mode: torch.distributed's collectives, which are not
overridable (no torch function mode sees them): the module's functions are replaced by recording wrappers
while a window is open, and put back after; and Python's tensor operators, which reach the mode under
their own names only through wrappers (operators.py)."""
from __future__ import annotations

import functools
from typing import Any, Dict, List, Tuple

import torch

from msprobe.dump.engine import DumpEngine

from .api_list import ApiTable
from .gates import outside_mode
from .operators import OperatorPatches


class CollectivePatches:
    """The wrappers of the API list's collectives (each made once, again only if the function was
    replaced since) and of the tensor operators."""

    def __init__(self, engine: DumpEngine, table: ApiTable) -> None:
        self.engine = engine
        self.table = table
        self._patched: List[Tuple[Any, str, Any]] = []
        self._wrapped: Dict[str, Tuple[Any, Any]] = {}  # collective -> (original, its wrapper)
        self._operators = OperatorPatches(table)

    def install(self) -> None:
        self._operators.install()
        dist = torch.distributed
        if not (dist.is_available() and self.table.distributed):
            return
        for name in self.table.distributed:
            original = getattr(dist, name, None)
            if original is None:
                continue
            made = self._wrapped.get(name)
            if made is None or made[0] is not original:
                made = self._wrapped[name] = (original, self._wrap(name, original))
            setattr(dist, name, made[1])
            self._patched.append((dist, name, original))

    def remove(self) -> None:
        self._operators.remove()
        for module, name, original in reversed(self._patched):
            setattr(module, name, original)
        self._patched.clear()

    def _wrap(self, name: str, original):
        engine = self.engine

        @functools.wraps(original)
        @outside_mode
        def collective(*args, **kwargs):
            call = None if engine.busy else engine.api_begin("Distributed", name)
            if call is None:
                return original(*args, **kwargs)
            engine.api_inputs(call, args, kwargs)
            output = original(*args, **kwargs)
            _bump_versions(args)  # c10d writes in place without bumping versions: no stale cached stats
            # in-place collectives: the result is the updated first argument
            engine.api_outputs(call, output if output is not None and not hasattr(output, "wait") else
                               (args[0] if args else None))
            return output
        return collective


def _bump_versions(values) -> None:
    """Mark tensors a collective wrote in place as changed (the statistics cache keys on ``_version``)."""
    for value in values:
        if isinstance(value, (list, tuple)):
            _bump_versions(value)
        elif isinstance(value, torch.Tensor):
            try:
                torch.autograd.graph.increment_version(value)
            except RuntimeError:  # inference tensors have no version counter (and are not cached by version)
                pass
