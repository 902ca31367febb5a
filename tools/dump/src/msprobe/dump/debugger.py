"""The framework-free part of ``PrecisionDebugger``: config, the start/stop/step window, save, class-level calls.

``msprobe.pytorch.PrecisionDebugger`` and ``msprobe.mindspore.PrecisionDebugger`` subclass
:class:`BaseDebugger` and supply only what a framework decides: the adapter, the tensor and model types,
when a saved variable's gradient can be hooked, and seeding.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Any, Dict, List, Optional, Tuple

from msprobe.schema import DebuggerConfig, MsprobeError, load_config

from .adapter import Adapter
from .dump_path import check_dump_path, claim_known_rank
from .engine import DumpEngine

# Per framework family (BaseDebugger._family): the debugger whose window is open (start..stop), as two open
# windows would record each other's hooks, and the most recently created debugger, for upstream's
# class-level calls (PrecisionDebugger.start()).
_OPEN: Dict[str, "weakref.ref"] = {}
_LATEST: Dict[str, "BaseDebugger"] = {}


class _Either:
    """A method callable on an instance or, as upstream allows, on the class (the latest instance)."""

    def __init__(self, func) -> None:
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, obj, owner):
        if obj is None:
            obj = owner._latest()
            if obj is None:
                raise MsprobeError(f"PrecisionDebugger.{self.func.__name__}(): create a PrecisionDebugger first")
        return self.func.__get__(obj, owner)


class BaseDebugger:
    """Dump configuration and controls: ``start(model)``, ``stop()``, ``step()``, ``save(...)``.

    Every instance is independent (no singleton): a second one with another configuration takes
    effect; opening its window while another debugger's is open is an error.
    """

    # Which registry of open / latest debuggers this class shares (one per adapter package).
    _family = ""
    # How start()'s errors name the model: "needs {_model_needed}", "expected {_model_expected} or a list/tuple".
    _model_needed = "the model (or a list of them)"
    _model_expected = "a model"

    def __init__(self, config_path: Optional[str] = None, task: Optional[str] = None,
                 dump_path: Optional[str] = None, level: Optional[str] = None, step: Any = None,
                 tasks: Optional[Dict] = None) -> None:
        config = load_config(config_path, task=task, dump_path=dump_path, level=level, step=step)
        check_dump_path(config)
        self.config = config
        self.adapter = self._make_adapter(config)
        claim_known_rank(config, self.adapter.rank())  # (a rank folder another live process writes: refused)
        self.engine = self._make_engine(config, tasks)
        if config.seed is not None:
            self._seed_all(config.seed, config.is_deterministic)
        _LATEST[self._family] = self  # upstream scripts call PrecisionDebugger.start() without keeping it

    # --- what a framework supplies -------------------------------------------------------------------------

    def _make_adapter(self, config: DebuggerConfig) -> Adapter:
        """The framework's adapter for ``config`` (raise MsprobeError for settings it cannot honour)."""
        raise NotImplementedError

    def _make_engine(self, config: DebuggerConfig, tasks: Optional[Dict]) -> DumpEngine:
        """The engine of ``config`` (a framework with a flight recorder returns it for that task)."""
        if config.task == "flight_recorder":
            raise MsprobeError(f"{config.source or 'PrecisionDebugger'}: field 'task': flight_recorder is "
                               f"available for PyTorch only")
        return DumpEngine(config, self.adapter, tasks)

    def _seed_all(self, seed: int, deterministic: bool) -> None:
        raise NotImplementedError

    @staticmethod
    def _tensor_types() -> Tuple[type, ...]:
        """Tensor classes ``save`` accepts and hooks."""
        raise NotImplementedError

    @staticmethod
    def _model_types() -> Tuple[type, ...]:
        """Classes ``start(model)`` accepts (alone or in a list)."""
        raise NotImplementedError

    @staticmethod
    def _pack_models(models: List[Any], listed: bool) -> List[Any]:
        """What ``adapter.install`` takes for ``models`` (``listed``: the user passed a list/tuple)."""
        return models

    def _records_grads(self) -> bool:
        """Whether gradients computed from now on can reach a saved variable's hooks."""
        raise NotImplementedError

    @staticmethod
    def _grad_tensor(tensor: Any) -> bool:
        """Whether ``tensor`` (of a saved variable) gets a gradient hook."""
        raise NotImplementedError

    # --- controls ------------------------------------------------------------------------------------------

    @_Either
    def start(self, model: Any = None) -> None:
        """Open the dump window of the current step (no effect on steps or ranks not selected).
        L0/mix need ``model``."""
        models = self._models(model)
        if self._is_open():
            return
        ref = _OPEN.get(self._family)
        other = ref() if ref is not None else None
        if other is not None and other is not self:
            raise MsprobeError("PrecisionDebugger.start(): another PrecisionDebugger "
                               f"(dump_path '{other.config.dump_path}') is started; call its stop() first")
        if self.engine.finished or not self.engine.begin():
            return
        _OPEN[self._family] = weakref.ref(self)
        try:
            self.adapter.install(self.engine, models)
        except BaseException as exc:  # a half-open window would block every later start()
            del _OPEN[self._family]
            self.adapter.uninstall_all()
            self.engine.end()
            if isinstance(exc, MsprobeError) or not isinstance(exc, Exception):
                raise
            self.engine.fail(exc, "installing the hooks (start)")

    @_Either
    def stop(self) -> None:
        """Close the window: no new calls are recorded; gradients of recorded calls still are until step()."""
        if self._is_open():
            del _OPEN[self._family]
            self.adapter.uninstall_forward()
            self.engine.end()

    @_Either
    def step(self, loss: Any = None, grad_norm: Any = None) -> None:
        """End the step: files of this step become final, counters restart, the step number grows.
        ``loss``, ``grad_norm`` (numbers or 0-d tensors): read by task flight_recorder, ignored by the others."""
        self.stop()
        if loss is not None or grad_norm is not None:
            observe = getattr(self.engine, "observe_step", None)  # (the flight recorder's engine)
            if observe is not None:
                observe(loss, grad_norm)
        self.engine.next_step()
        self.adapter.uninstall_all(keep=self.engine.wants_this_step())

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
        """Record ``variable`` as ``Debug.{name}.{n}.forward`` and, where the framework is computing
        gradients, its gradient as ``Debug.{name}.{n}.backward``."""
        if not isinstance(name, str) or not name:
            raise MsprobeError("PrecisionDebugger.save(): argument 'name': expected a non-empty string")
        if not isinstance(variable, (dict, list, tuple, int, float, str) + self._tensor_types()):
            raise MsprobeError("PrecisionDebugger.save(): argument 'variable': expected a dict, list, tuple, "
                               f"tensor, int, float or str, got {type(variable).__name__}")
        engine = self.engine
        if not engine.wants_this_step():
            return
        index = engine.save_variable(name, variable)
        if save_backward and self._records_grads():
            self._hook_saved_grads(name, index, variable)

    # --- helpers -------------------------------------------------------------------------------------------

    @classmethod
    def _latest(cls) -> Any:
        return _LATEST.get(cls._family)

    def _is_open(self) -> bool:
        ref = _OPEN.get(self._family)
        return ref is not None and ref() is self

    def _hook_saved_grads(self, name: str, index: int, variable: Any) -> None:
        engine = self.engine
        tensors = [t for t in self._flat_tensors(variable) if self._grad_tensor(t)]
        grads: Dict[int, Any] = {}

        def hook_for(i: int):
            def hook(grad: Any) -> None:
                grads[i] = grad
                if len(grads) == len(tensors):
                    value = grads[0] if len(tensors) == 1 else [grads[k] for k in range(len(tensors))]
                    engine.save_variable(name, value, "backward", index)
            return hook
        for i, tensor in enumerate(tensors):
            tensor.register_hook(hook_for(i))

    def _flat_tensors(self, value: Any) -> List[Any]:
        if isinstance(value, self._tensor_types()):
            return [value]
        if isinstance(value, dict):
            return [t for v in value.values() for t in self._flat_tensors(v)]
        if isinstance(value, (list, tuple)):
            return [t for v in value for t in self._flat_tensors(v)]
        return []

    def _models(self, model: Any) -> List[Any]:
        level = self.engine.config.level  # (the engine's: the flight recorder's ring is L0 whatever the file says)
        if model is None:
            if self.engine.module_level:
                raise MsprobeError(f"PrecisionDebugger.start(): argument 'model': level {level} records modules, "
                                   f"so start(model=...) needs {self._model_needed}")
            return []
        kinds = self._model_types()
        if isinstance(model, kinds):
            return self._pack_models([model], False)
        if isinstance(model, (list, tuple)) and model and all(isinstance(m, kinds) for m in model):
            return self._pack_models(list(model), True)
        raise MsprobeError(f"PrecisionDebugger.start(): argument 'model': expected {self._model_expected} or a "
                           f"list/tuple of them, got {type(model).__name__}")
