"""PyTorch hooks of one dumped window: the API mode (``api_mode.py``), the patched torch.distributed
collectives (``collectives.py``), module hooks and parameter gradient hooks. Backward entries, read
without changing the graph: ``gates.py``; nested calls (``record_nested``): ``nested.py``. No hook returns
anything but None: the arguments, outputs and gradients the model sees are its own.
"""
from __future__ import annotations

import operator
import weakref
from typing import Dict, List, Optional, Sequence, Tuple

import torch

from msprobe.dump.engine import DumpEngine

from .api_list import ApiTable
from .api_mode import DumpMode, set_grad
from .collectives import CollectivePatches
from . import gates
from .gates import Before, outside_mode, param_gradient_hook
from .compile_note import CompiledNote
from .hook_handles import HookHandles
from .internals import DYNAMO_TRACES_MODES, compiled, compiling
from .model_plan import ModelPlan
from .prepared import ModuleHooks, OpenCalls, ParameterHook, PreparedModel


class Hooks:
    """Everything installed for one dumped window, and its removal."""

    def __init__(self, engine: DumpEngine, table: ApiTable, record_nested: bool) -> None:
        self.engine = engine
        self.table = table
        self.record_nested = record_nested
        self._mode: Optional[DumpMode] = None
        self._collectives = CollectivePatches(engine, table)
        self._module_hooks_on = HookHandles()
        self._grad_hooks_on = HookHandles()
        self._hooked_params: set = set()
        self._unhooked: List[ParameterHook] = []  # parameters the last install left without a hook (frozen, dead)
        self._made: "weakref.WeakKeyDictionary[torch.nn.Module, ModuleHooks]" = weakref.WeakKeyDictionary()
        self._plans: "weakref.WeakKeyDictionary[torch.nn.Module, ModelPlan]" = weakref.WeakKeyDictionary()
        self._prepared: "weakref.WeakKeyDictionary[ModelPlan, PreparedModel]" = weakref.WeakKeyDictionary()
        self._installed: Optional[List[PreparedModel]] = None  # the prepared models of the open window
        self._parked: Optional[List[PreparedModel]] = None  # those of a closed one whose module hooks stayed
        self._grad_generation = -1  # the engine's step generation the parameter hooks were installed in
        self.compiled = CompiledNote()

    def install(self, models: Sequence[Tuple[str, torch.nn.Module]]) -> None:
        """``models``: (name prefix, module) pairs; the prefix is ``"{i}."`` when start() got a list."""
        engine = self.engine
        compiled_here = self._note_compiled(models)
        self.compiled.watch()
        if engine.api_level and not (compiled_here and not DYNAMO_TRACES_MODES):
            self._mode = DumpMode(engine, self.table, self.record_nested, self.compiled)
            self._mode.__enter__()
            self._collectives.install()
        if engine.module_level:
            prepared = [self._prepared_of(model, prefix) for prefix, model in models]
            parked, self._parked = self._parked, None
            kept = parked is not None and len(parked) == len(prepared) and all(map(operator.is_, parked, prepared))
            if not kept:
                self._module_hooks_on.remove()
                if self._grad_generation != engine.generation:  # kept from the last step's window
                    self._remove_grad_hooks()
                for model in prepared:
                    self._hook_modules(model.modules)
            for model in prepared:
                for made in model.modules:
                    made.calls.clear()  # a window that ended inside a forward call leaves its call behind
            # kept: the parameters hooked then still are, and only those left out then (a frozen one may be
            # trainable now) are looked at again. No backward
            # entry wanted (data_mode): parameters_grad is backward data, and hooks that record nothing
            # cost time at every parameter gradient
            if engine.filter.backward:
                self._unhooked = self._hook_parameters(self._unhooked if kept else
                                                       [item for model in prepared for item in model.parameters])
            self._installed = prepared
            self._grad_generation = engine.generation

    def _note_compiled(self, models: Sequence[Tuple[str, torch.nn.Module]]) -> bool:
        """Whether a model runs under torch.compile, said in one line, once: dynamo traces past the hooks, so
        what runs inside its compiled graphs is not dumped (what runs eagerly, graph breaks included, is)."""
        found = [prefix + path for prefix, model in models for path, module in model.named_modules()
                 if compiled(module)]
        if found:
            self.compiled.say(found[0] or "the model")
        return bool(found)

    def uninstall_forward(self) -> None:
        """stop(): the module hooks stay, parked (they do nothing outside a window, and the first module
        call outside one removes them): the next window of the same models installs nothing."""
        self.compiled.at_stop()  # compiled code ran in the window (compile_note.py)
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        self._collectives.remove()
        if self._installed is not None:
            self._parked, self._installed = self._installed, None

    def uninstall_all(self, keep: bool = False) -> None:
        """step(): ``keep``: the next step is recorded too, and parked hooks and parameter hooks stay for it
        (installing them costs more than keeping them); else everything is removed."""
        self.uninstall_forward()
        if not keep or self._parked is None:
            self._remove_all()

    def _unpark(self) -> bool:
        """A module ran outside a window: parked hooks would cost each of its calls from now on, so they
        go (parameter hooks stay until step() where this step's gradients may still come). False: none."""
        if self._parked is None:
            return False
        self._parked = None
        self._module_hooks_on.remove()
        if not self.engine.opened:
            self._remove_grad_hooks()
        return True

    def _remove_all(self) -> None:
        self._parked = self._installed = None
        self._module_hooks_on.remove()
        self._remove_grad_hooks()

    def _remove_grad_hooks(self) -> None:
        self._grad_hooks_on.remove()
        self._hooked_params.clear()
        self._unhooked = []

    # ----- modules ---------------------------------------------------------------------------------
    def _prepared_of(self, model: torch.nn.Module, prefix: str) -> PreparedModel:
        """The model's ``_prepare``d hooks, the same object while its plan holds and its prefix is the same."""
        plan = self._plans.get(model)
        if plan is None or not plan.still_valid(model):
            plan = self._plans[model] = ModelPlan(model)  # the root model itself is not recorded (as upstream)
        prepared = self._prepared.get(plan)
        if prepared is None or prepared.prefix != prefix:
            prepared = self._prepared[plan] = self._prepare(plan, prefix)
        return prepared

    def _hook_modules(self, modules: List[ModuleHooks]) -> None:
        # still_valid() said every reference is alive; a dead one (never expected) is skipped, not hooked
        self._module_hooks_on.modules([(module, made.pre, made.post) for made in modules
                                       if (module := made.module()) is not None])

    def _hook_parameters(self, parameters: List[ParameterHook]) -> List[ParameterHook]:
        """Hooks those of ``parameters`` that take gradients and have no hook yet; returns those left
        without one (frozen, or dead)."""
        hooked, hooks, left = self._hooked_params, [], []
        for item in parameters:
            if item.key in hooked:  # start() twice in a step: hook once
                continue
            param = item.parameter()
            if param is not None and param.requires_grad:
                hooked.add(item.key)
                hooks.append((param, item.hook))
            else:
                left.append(item)
        self._grad_hooks_on.tensors(hooks)
        return left

    def _prepare(self, plan: ModelPlan, prefix: str) -> PreparedModel:
        """What every window of a model installs, gathered once per plan: installing it is then one loop
        (walking the plan and asking each module for its hooks at every window is avoided)."""
        modules: List[ModuleHooks] = []
        parameters: List[ParameterHook] = []
        for path, module_ref, params in plan.references():
            module = module_ref()
            made = self._module_hooks(module, prefix + path)
            modules.append(made)
            param_hooks = made.param_hooks
            for name, param_ref in params:
                hook = param_hooks.get(name)
                if hook is None:
                    hook = param_hooks[name] = self._param_hook(made.owner, name)
                parameters.append(ParameterHook((id(module), name), param_ref, hook))
        return PreparedModel(prefix, modules, parameters)

    def _module_hooks(self, module: torch.nn.Module, full: str) -> ModuleHooks:
        """The hooks of ``module`` at path ``full``, made once and registered again in every window."""
        made = self._made.get(module)
        if made is not None and made.path == full:
            made.calls.clear()  # a window that ended inside a forward call leaves its call behind
            return made
        class_name = type(module).__name__
        calls: OpenCalls = []
        made = self._made[module] = ModuleHooks(
            full, weakref.ref(module), calls, self._pre_hook(full, class_name, calls), self._post_hook(calls),
            (self.engine.adapter.module_prefix, full, class_name))
        return made

    def _pre_hook(self, path: str, class_name: str, calls: OpenCalls):
        engine = self.engine
        unpark = self._unpark
        compiled_note = self.compiled

        @outside_mode
        def pre(module, args, kwargs):
            if engine.busy:
                return None
            if compiling():  # traced by dynamo: the graph runs compiled, undumped
                compiled_note.seen = True
                return None
            if not engine.recording and unpark():
                return None  # its post hook is gone too
            grad_mode = torch.is_grad_enabled()
            set_grad(False)
            try:
                call = engine.module_begin(path, class_name, args, kwargs)
            finally:
                set_grad(grad_mode)
            calls.append((call, None))  # (the call, what its backward entry needs from before it ran)
            if call is None or not (call.want_backward and grad_mode) or engine.finished:
                return None
            with engine.guard("observing the gradients of", call.forward):  # failing: the module runs undumped
                calls[-1] = (call, Before(args))
            return None
        return pre

    def _post_hook(self, calls: OpenCalls):
        engine = self.engine
        compiled_note = self.compiled

        @outside_mode
        def post(mod, args, kwargs, output):
            if compiling():
                compiled_note.seen = True
                return None
            if not calls:
                return None
            call, before = calls.pop()
            if call is None:
                return None
            if before is not None and torch.is_grad_enabled() and not engine.finished:
                gates.observe(engine, call, before, output)
            params = _own_parameters(mod) if call.want_forward and engine.records_parameters else None
            grad_mode = torch.is_grad_enabled()
            set_grad(False)
            try:
                engine.module_end(call, output, params or None)
            finally:
                set_grad(grad_mode)
            return None  # the module's output as it made it
        return post

    def _param_hook(self, owner: Tuple[str, str, str], name: str):
        return param_gradient_hook(self.engine, owner, name)


def _own_parameters(module: torch.nn.Module) -> Dict[str, torch.Tensor]:
    """The module's own parameters by name (the same parameter under two names is listed once)."""
    return dict(module.named_parameters(recurse=False))
