"""The dump's TorchFunctionMode: it sees every overridable torch call of a dumped window (however the API
was imported: the functions themselves are not replaced, so ``act is F.gelu`` still holds) and records
those in the API list, gating their arguments and outputs for the backward entries (``gates.py``)."""
from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from msprobe.dump.calls import Call
from msprobe.dump.engine import DumpEngine

from .api_list import ApiTable
from .gates import gate_call
from .internals import compiling
from .nested import NestedRunner


set_grad = torch.set_grad_enabled  # called, not entered: sets the mode at once


def _inplace(name: str) -> bool:
    if name.startswith("__"):
        return name.startswith("__i") or name == "__setitem__"
    return name.endswith("_")


class DumpMode(TorchFunctionMode):
    """Sees every overridable torch call while a step is dumped; records those in the API list."""

    def __init__(self, engine: DumpEngine, table: ApiTable, nested: bool = False) -> None:
        super().__init__()
        self.engine = engine
        self.table = table.by_func
        self.nested = nested
        self._runner = NestedRunner(self)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        key = self.table.get(func)
        engine = self.engine
        if key is None or engine.busy or compiling():  # (dynamo traces this as a plain call)
            kwargs = kwargs or {}
            return self._runner.body(func, args, kwargs) if self.nested and not engine.busy else func(*args, **kwargs)
        kwargs = kwargs or {}
        call = engine.api_begin(key[0], key[1])
        if not self.nested:
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
    if call.want_backward and not _inplace(name):
        engine.busy = True
        try:
            output = gate_call(engine, call, args, lambda gated: _unbusy_call(engine, func, gated, kwargs), nested)
        finally:
            engine.busy = False
    else:
        output = func(*args, **kwargs)
    set_grad(False)
    try:
        engine.api_outputs(call, output)
    finally:
        set_grad(True)
    return output


def _unbusy_call(engine: DumpEngine, func, args, kwargs):
    engine.busy = False
    try:
        return func(*args, **kwargs)
    finally:
        engine.busy = True
