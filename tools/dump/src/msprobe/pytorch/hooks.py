"""PyTorch hooks: a TorchFunctionMode for APIs (however they were imported; the functions themselves are
not replaced, so ``act is F.gelu`` still holds), patched torch.distributed collectives, module hooks,
parameter gradient hooks, and identity views whose gradient hooks give each call its own gradients.

Nested calls: torch pops the mode while it handles a call, so the APIs a Python-level API calls (F.layer_norm
calling torch.layer_norm) are invisible by default, as in msprobe. With ``record_nested`` the mode is pushed
again around the call's body; the body runs from a copy of the function whose globals answer "no" to
``has_torch_function*``, because its first line would otherwise hand the call straight back to the mode.
"""
from __future__ import annotations

import functools
import types
from collections import OrderedDict
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch.overrides import TorchFunctionMode

from msprobe.dump.engine import Call, DumpEngine

from .api_list import ApiTable


set_grad = torch._C._set_grad_enabled
# the mode stack's C entry points (torch >= 2.0); without them hooks simply run under the mode
_modes_active = getattr(torch._C, "_len_torch_function_stack", lambda: 0)
_pop_mode = getattr(torch._C, "_pop_torch_function_stack", None)
_push_mode = getattr(torch._C, "_push_on_torch_function_stack", None)


def outside_mode(hook):
    """``hook`` run with the innermost torch function mode set aside. Hooks (module, gradient,
    collective wrappers) run while the dump's mode is active, and under an active mode every tensor
    attribute our code reads (shape, dtype, version, ...) is a Python round trip through the mode:
    ~10x the cost. Inside the mode's own handler torch has already set it aside."""
    @functools.wraps(hook)
    def run(*args, **kwargs):
        if not _modes_active():
            return hook(*args, **kwargs)
        mode = _pop_mode()
        try:
            return hook(*args, **kwargs)
        finally:
            _push_mode(mode)
    return run


def _inplace(name: str) -> bool:
    if name.startswith("__"):
        return name.startswith("__i") or name == "__setitem__"
    return name.endswith("_")


def _gradient_hook(engine: DumpEngine, call: Call, side: str, path: Tuple[int, ...]):
    @outside_mode
    def hook(grad):
        engine.backward_grad(call, side, path, grad)
    return hook


def _gate(engine: DumpEngine, call: Call, side: str, value: Any, path: Tuple[int, ...], count: List[int]) -> Any:
    """An identity view of each differentiable tensor, hooked so its gradient belongs to this call only."""
    if isinstance(value, torch.Tensor):
        if value.requires_grad and value.layout == torch.strided:
            view = value.view_as(value)
            engine.adapter.alias(view, value)
            _hook_new_view(view, _gradient_hook(engine, call, side, path))
            count[0] += 1
            return view
        return value
    if isinstance(value, (list, tuple)) and len(path) < 2 and any(isinstance(v, torch.Tensor) for v in value):
        items = [_gate(engine, call, side, v, path + (i,), count) for i, v in enumerate(value)]
        if isinstance(value, list):
            return items
        try:
            return type(value)(items)
        except TypeError:
            return type(value)(*items)
    return value


def _hook_new_view(view: torch.Tensor, hook) -> None:
    """``view.register_hook(hook)`` for a view made just now: what register_hook does, less its handle
    object (nobody removes these hooks: the view dies with the step's graph) and its per-call import."""
    grad_fn = view.grad_fn
    if grad_fn is None or view._backward_hooks is not None:
        view.register_hook(hook)
        return
    hooks = view._backward_hooks = OrderedDict()
    grad_fn._register_hook_dict(view)
    hooks[0] = hook


def gate_call(engine: DumpEngine, call: Call, args: Sequence[Any], output_of) -> Any:
    """Run ``output_of(gated_args)`` with both sides hooked; returns the gated output."""
    count_in = [0]
    gated = [_gate(engine, call, "output", a, (i,), count_in) for i, a in enumerate(args)]
    new, n_outputs, hooked_out = _gate_outputs(engine, call, output_of(gated))
    if count_in[0] or hooked_out:
        engine.backward_expect(call, n_outputs, len(args), hooked_out, count_in[0])
    return new


def _gate_outputs(engine: Any, call: Any, output: Any) -> Tuple[Any, int, int]:
    """Hook the gradient w.r.t. each output (the backward ``input``): (gated output, outputs, hooked)."""
    count = [0]
    engine.busy = True
    try:
        if isinstance(output, (list, tuple)):
            items = [_gate(engine, call, "input", o, (i,), count) for i, o in enumerate(output)]
            return (items if isinstance(output, list) else _rebuild(output, items)), len(output), count[0]
        return _gate(engine, call, "input", output, (0,), count), 1, count[0]
    finally:
        engine.busy = False


def _rebuild(value: tuple, items: list) -> tuple:
    try:
        return type(value)(items)
    except TypeError:
        return type(value)(*items)


class DumpMode(TorchFunctionMode):
    """Sees every overridable torch call while a step is dumped; records those in the API list."""

    def __init__(self, engine: DumpEngine, table: ApiTable, nested: bool = False) -> None:
        super().__init__()
        self.engine = engine
        self.table = table.by_func
        self.nested = nested
        self._running: List[Any] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        key = self.table.get(func)
        engine = self.engine
        if key is None or engine.busy:
            return self._body(func, args, kwargs) if self.nested and not engine.busy else func(*args, **kwargs)
        call = engine.api_begin(key[0], key[1])
        if not self.nested:
            return func(*args, **kwargs) if call is None else run_recorded(engine, call, key[1], func, args, kwargs)
        if call is None:
            return self._body(func, args, kwargs)
        return run_recorded(engine, call, key[1], lambda *a, **k: self._body(func, a, k), args, kwargs)

    def _body(self, func, args, kwargs):
        """Run ``func`` with this mode active inside it (``record_nested``)."""
        if type(func) is not types.FunctionType or (self._running and self._running[-1] is func):
            # C functions have no Python body; a second entry for the same function is its own dispatch
            # check (one the globals copy did not catch): run it plainly, as without record_nested
            return func(*args, **kwargs)
        self._running.append(func)
        try:
            with self:
                return _undispatched(func)(*args, **kwargs)
        finally:
            self._running.pop()


_NO_DISPATCH = ("has_torch_function", "has_torch_function_unary", "has_torch_function_variadic")
_GLOBALS: Dict[int, Tuple[dict, dict]] = {}
_UNDISPATCHED: Dict[Any, Callable] = {}


def _never(*args: Any) -> bool:
    return False


def _undispatched(func: types.FunctionType) -> Callable:
    """A copy of ``func`` whose ``has_torch_function*`` checks are false (cached per function)."""
    copy = _UNDISPATCHED.get(func)
    if copy is None:
        original = func.__globals__
        cached = _GLOBALS.get(id(original))
        if cached is None or cached[0] is not original:
            namespace = dict(original)
            namespace.update({name: _never for name in _NO_DISPATCH if name in namespace})
            cached = _GLOBALS[id(original)] = (original, namespace)
        copy = types.FunctionType(func.__code__, cached[1], func.__name__, func.__defaults__, func.__closure__)
        copy.__kwdefaults__ = func.__kwdefaults__
        _UNDISPATCHED[func] = copy
    return copy


def run_recorded(engine: DumpEngine, call: Call, name: str, func, args, kwargs) -> Any:
    grad_mode = torch.is_grad_enabled()
    set_grad(False)  # statistics never need autograd
    try:
        engine.api_inputs(call, args, kwargs)
    finally:
        set_grad(grad_mode)
    if call.want_backward and grad_mode and not _inplace(name):
        engine.busy = True
        try:
            output = gate_call(engine, call, args, lambda gated: _unbusy_call(engine, func, gated, kwargs))
        finally:
            engine.busy = False
    else:
        output = func(*args, **kwargs)
    set_grad(False)
    try:
        engine.api_outputs(call, output)
    finally:
        set_grad(grad_mode)
    return output


def _unbusy_call(engine: DumpEngine, func, args, kwargs):
    engine.busy = False
    try:
        return func(*args, **kwargs)
    finally:
        engine.busy = True


class Hooks:
    """Everything installed for one dumped window, and its removal."""

    def __init__(self, engine: DumpEngine, table: ApiTable, record_nested: bool) -> None:
        self.engine = engine
        self.table = table
        self.record_nested = record_nested
        self._mode: Optional[DumpMode] = None
        self._patched: List[Tuple[Any, str, Any]] = []
        self._module_handles: List[Any] = []
        self._grad_handles: List[Any] = []
        self._hooked_params: set = set()

    def install(self, models: Sequence[Tuple[str, torch.nn.Module]]) -> None:
        """``models``: (name prefix, module) pairs; the prefix is ``"{i}."`` when start() got a list."""
        engine = self.engine
        if engine.api_level:
            self._mode = DumpMode(engine, self.table, self.record_nested)
            self._mode.__enter__()
            self._patch_distributed()
        if engine.module_level:
            for prefix, model in models:
                self._hook_model(model, prefix)

    def uninstall_forward(self) -> None:
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        for module, name, original in reversed(self._patched):
            setattr(module, name, original)
        self._patched.clear()
        for handle in self._module_handles:
            handle.remove()
        self._module_handles.clear()

    def uninstall_all(self) -> None:
        self.uninstall_forward()
        for handle in self._grad_handles:
            handle.remove()
        self._grad_handles.clear()
        self._hooked_params.clear()

    # ----- torch.distributed (not overridable: the module's functions are patched while dumping) --
    def _patch_distributed(self) -> None:
        dist = torch.distributed
        if not (dist.is_available() and self.table.distributed):
            return
        for name in self.table.distributed:
            original = getattr(dist, name, None)
            if original is None:
                continue
            setattr(dist, name, self._wrap_collective(name, original))
            self._patched.append((dist, name, original))

    def _wrap_collective(self, name: str, original):
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

    # ----- modules ---------------------------------------------------------------------------------
    def _hook_model(self, model: torch.nn.Module, prefix: str) -> None:
        for path, module in model.named_modules():
            if not path:
                continue  # the root model itself is not recorded (upstream does the same)
            full = prefix + path
            class_name = type(module).__name__
            calls: List[Call] = []
            self._module_handles.append(module.register_forward_pre_hook(
                self._pre_hook(full, class_name, calls), with_kwargs=True))
            self._module_handles.append(module.register_forward_hook(
                self._post_hook(module, calls), with_kwargs=True))
            for name, param in module.named_parameters(recurse=False):
                if param.requires_grad and (id(module), name) not in self._hooked_params:
                    self._hooked_params.add((id(module), name))  # start() twice in a step: hook once
                    self._grad_handles.append(param.register_hook(
                        self._param_hook((self.engine.adapter.module_prefix, full, class_name), name)))

    def _pre_hook(self, path: str, class_name: str, calls: List[Call]):
        engine = self.engine

        @outside_mode
        def pre(module, args, kwargs):
            if engine.busy:
                return None
            grad_mode = torch.is_grad_enabled()
            set_grad(False)
            try:
                call = engine.module_begin(path, class_name, args, kwargs)
            finally:
                set_grad(grad_mode)
            calls.append(call)
            if call is None or not (call.want_backward and grad_mode):
                return None
            engine.busy = True
            try:
                count = [0]
                gated = tuple(_gate(engine, call, "output", a, (i,), count) for i, a in enumerate(args))
            finally:
                engine.busy = False
            call.n_args = len(args)
            call.expect_in = count[0]
            return gated, kwargs
        return pre

    def _post_hook(self, module: torch.nn.Module, calls: List[Call]):
        engine = self.engine

        @outside_mode
        def post(mod, args, kwargs, output):
            if not calls:
                return None
            call = calls.pop()
            if call is None:
                return None
            new_output = None
            if call.want_backward and torch.is_grad_enabled():
                new_output, n_out, hooked_out = _gate_outputs(engine, call, output)
                if call.expect_in or hooked_out:
                    engine.backward_expect(call, n_out, call.n_args, hooked_out, call.expect_in)
            params = dict(mod.named_parameters(recurse=False)) if call.want_forward else None
            grad_mode = torch.is_grad_enabled()
            set_grad(False)
            try:
                engine.module_end(call, output, params or None)
            finally:
                set_grad(grad_mode)
            return new_output
        return post

    def _param_hook(self, owner: Tuple[str, str, str], name: str):
        engine = self.engine

        @outside_mode
        def hook(grad):
            engine.param_grad(owner, name, grad)
        return hook


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
