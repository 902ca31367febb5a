"""The dump's TorchFunctionMode: it sees every overridable torch call of a dumped window (however the API
was imported: the functions themselves are not replaced, so ``act is F.gelu`` still holds) and records
those in the API list; their backward entries are observed on the graph as it is (``gates.py``)."""
from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from msprobe.dump.calls import Call
from msprobe.dump.engine import DumpEngine

from .api_list import ApiTable
from . import gates
from .internals import compiling
from .nested import NestedRunner


set_grad = torch.set_grad_enabled  # called, not entered: sets the mode at once


_NOT_INPLACE = ("__invert__", "__index__", "__int__")
_BACKWARD = (torch.Tensor.backward, torch.autograd.backward, torch.autograd.grad)


def _inplace(name: str) -> bool:
    if name.startswith("__"):
        return (name.startswith("__i") and name not in _NOT_INPLACE) or name == "__setitem__"
    return name.endswith("_")


class DumpMode(TorchFunctionMode):
    """Sees every overridable torch call while a step is dumped; records those in the API list."""

    def __init__(self, engine: DumpEngine, table: ApiTable, nested: bool = False, compiled: Any = None) -> None:
        super().__init__()
        self.engine = engine
        self.compiled = compiled  # (compile_note.py) told when dynamo traces a recorded API
        self.table = table.by_func
        self.operators = table.operators  # (operators.py) never run nested: their body is the C method
        self.nested = nested
        self._runner = NestedRunner(self)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        key = self.table.get(func)
        engine = self.engine
        if key is None or engine.busy or compiling():  # (dynamo traces this as a plain call)
            kwargs = kwargs or {}
            if key is not None and not engine.busy and self.compiled is not None:  # (so compiling())
                self.compiled.seen = True
            if func in _BACKWARD and not engine.busy and not compiling():
                # torch runs a mode's handler with the mode set aside, so backward would run without it: the
                # APIs called in backward (recomputed by gradient checkpointing, in a Python autograd
                # Function's backward) are recorded as msprobe records them only with the mode pushed again
                return self._runner.body(func, args, kwargs)
            return self._runner.body(func, args, kwargs) if self.nested and not engine.busy else func(*args, **kwargs)
        kwargs = kwargs or {}
        call = engine.api_begin(key[0], key[1])
        if not self.nested or self.operators.get(key[1]) is func:
            return func(*args, **kwargs) if call is None else run_recorded(engine, call, key[1], func, args, kwargs)
        if call is None:
            return self._runner.body(func, args, kwargs)
        return run_recorded(engine, call, key[1], lambda *a, **k: self._runner.body(func, a, k), args, kwargs,
                            nested=True)


def run_recorded(engine: DumpEngine, call: Call, name: str, func, args, kwargs, nested: bool = False) -> Any:
    grad_mode = torch.is_grad_enabled()
    if not grad_mode:  # (an optimizer's step): nothing to switch, and no backward to gate
        engine.api_inputs(call, args, kwargs)
        output = func(*args, **kwargs)
        engine.api_outputs(call, output)
        return output
    set_grad(False)  # statistics never need autograd
    try:
        engine.api_inputs(call, args, kwargs)
    finally:
        set_grad(True)
    try:
        if call.want_backward and not _inplace(name):
            output = gates.observe_call(engine, call, args, func, kwargs)  # the output as func returned it
        else:
            output = func(*args, **kwargs)
    except BaseException:  # (a recomputation stopped inside it by torch's checkpoint): its inputs are recorded
        set_grad(False)
        try:
            engine.api_outputs(call, None, raised=True)
        finally:
            set_grad(True)
        raise
    set_grad(False)
    try:
        engine.api_outputs(call, output)
    finally:
        set_grad(True)
    return output
