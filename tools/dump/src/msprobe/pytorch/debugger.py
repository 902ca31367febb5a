"""PrecisionDebugger for PyTorch: msprobe's interface on the suite's engine."""
from __future__ import annotations

import warnings
import weakref
from typing import Any, Dict, List, Optional, Tuple

import torch

from msprobe.dump.engine import DumpEngine
from msprobe.schema import MsprobeError, load_config

from .adapter import TorchAdapter

# The debugger whose window is open (start..stop): two open windows would record each other's hooks.
_OPEN: List["weakref.ref"] = []
# The most recently created debugger, for upstream's class-level calls (PrecisionDebugger.start()):
# held strongly, as upstream scripts create it without keeping a reference.
_LATEST: List["PrecisionDebugger"] = []


class _Either:
    """A method callable on an instance or, as upstream allows, on the class (the latest instance)."""

    def __init__(self, func) -> None:
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, obj, owner):
        if obj is None:
            obj = _LATEST[0] if _LATEST else None
            if obj is None:
                raise MsprobeError(f"PrecisionDebugger.{self.func.__name__}(): create a PrecisionDebugger first")
        return self.func.__get__(obj, owner)


class PrecisionDebugger:
    """Dump configuration and controls: ``start(model)``, ``stop()``, ``step()``, ``save(...)``.

    Every instance is independent (no singleton): a second one with another configuration takes
    effect; opening its window while another debugger's is open is an error.
    """

    def __init__(self, config_path: Optional[str] = None, task: Optional[str] = None,
                 dump_path: Optional[str] = None, level: Optional[str] = None, step: Any = None,
                 tasks: Optional[Dict] = None) -> None:
        config = load_config(config_path).overriding(task=task, dump_path=dump_path, level=level, step=step)
        self.config = config
        if config.record_nested:  # a clear error rather than a silently ignored setting
            raise MsprobeError(f"{config.source or 'config'}: field 'record_nested': not supported by the PyTorch "
                               "adapter yet; only the outermost API of a nested call is recorded")
        self.adapter = TorchAdapter(config.api_list, config.record_nested)
        self.engine = DumpEngine(config, self.adapter, tasks)
        if config.seed is not None:
            from .seed import seed_all

            seed_all(config.seed, config.is_deterministic)
        _LATEST[:] = [self]

    @_Either
    def start(self, model: Any = None) -> None:
        """Open the dump window of the current step (no effect on steps or ranks not selected)."""
        models = _models(model, self.config.level)
        if self._is_open():
            return
        other = _OPEN[0]() if _OPEN else None
        if other is not None and other is not self:
            raise MsprobeError("PrecisionDebugger.start(): another PrecisionDebugger "
                               f"(dump_path '{other.config.dump_path}') is started; call its stop() first")
        if self.engine.finished or not self.engine.begin():
            return
        _OPEN[:] = [weakref.ref(self)]
        self.adapter.install(self.engine, models)

    @_Either
    def stop(self) -> None:
        """Close the window: no new calls are recorded; gradients of recorded calls still are until step()."""
        if self._is_open():
            _OPEN.clear()
            self.adapter.uninstall_forward()
            self.engine.end()

    @_Either
    def step(self) -> None:
        """End the step: files of this step become final, counters restart, the step number grows."""
        self.stop()
        self.engine.next_step()
        self.adapter.uninstall_all()

    @_Either
    def flush(self) -> None:
        """Wait until the files of finished steps are final (step() completes them in the background)."""
        self.engine.wait()

    @_Either
    def forward_backward_dump_end(self) -> None:
        """Deprecated name of stop()."""
        warnings.warn("forward_backward_dump_end() is deprecated: use stop()", DeprecationWarning, stacklevel=3)
        self.stop()

    @_Either
    def save(self, variable: Any, name: str, save_backward: bool = True) -> None:
        """Record ``variable`` as ``Debug.{name}.{n}.forward`` (and its gradient as ``...backward``)."""
        if not isinstance(name, str) or not name:
            raise MsprobeError("PrecisionDebugger.save(): argument 'name': expected a non-empty string")
        if not isinstance(variable, (dict, list, tuple, torch.Tensor, int, float, str)):
            raise MsprobeError("PrecisionDebugger.save(): argument 'variable': expected a dict, list, tuple, "
                               f"tensor, int, float or str, got {type(variable).__name__}")
        engine = self.engine
        if not engine.wants_this_step():
            return
        index = engine.save_variable(name, variable)
        if save_backward and torch.is_grad_enabled():
            self._hook_saved_grads(name, index, variable)

    def _hook_saved_grads(self, name: str, index: int, variable: Any) -> None:
        engine = self.engine
        tensors = [t for t in _flat_tensors(variable) if t.requires_grad]
        if not tensors:
            return
        grads: Dict[int, Any] = {}

        def hook_for(i):
            def hook(grad):
                grads[i] = grad
                if len(grads) == len(tensors):
                    value = grads[0] if len(tensors) == 1 else [grads[k] for k in range(len(tensors))]
                    engine.save_variable(name, value, "backward", index)
            return hook
        for i, tensor in enumerate(tensors):
            tensor.register_hook(hook_for(i))

    def _is_open(self) -> bool:
        return bool(_OPEN) and _OPEN[0]() is self


def _flat_tensors(value: Any) -> List[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat_tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat_tensors(v)]
    return []


def _models(model: Any, level: str) -> List[Tuple[str, torch.nn.Module]]:
    if model is None:
        if level in ("L0", "mix"):
            raise MsprobeError(f"PrecisionDebugger.start(): argument 'model': level {level} records modules, "
                               "so start(model=...) needs the torch.nn.Module (or a list of them)")
        return []
    if isinstance(model, torch.nn.Module):
        return [("", model)]
    if isinstance(model, (list, tuple)) and model and all(isinstance(m, torch.nn.Module) for m in model):
        return [(f"{i}.", m) for i, m in enumerate(model)]
    raise MsprobeError("PrecisionDebugger.start(): argument 'model': expected a torch.nn.Module or a list/tuple "
                       f"of them, got {type(model).__name__}")
