"""Wrapping of API namespaces (functions and Tensor methods) and of the Primitive objects inside a model.

A wrapped callable reports to the engine and, while PyNative builds a gradient graph, taps its arguments
and outputs for backward (:mod:`.grads`). Only the outermost wrapped call is recorded (an API used inside
another, or by the dump itself, is not), unless ``record_nested`` is set. ``uninstall`` restores every
attribute exactly as it was.
"""
from __future__ import annotations

import functools
import inspect
import sys
import threading
from typing import Any, Callable, Dict, List, Tuple

from . import internals
from .internals import building_grad

_ORIGINAL = "__msprobe_original__"
_INPLACE_PREFIXES = ("assign", "scatter_update", "scatter_nd_update", "inplace")


def is_inplace(name: str) -> bool:
    """In-place APIs must get the caller's own tensors (a tapped copy would be updated instead)."""
    if name.startswith("__"):
        return name == "__setitem__" or (name.startswith("__i") and name != "__invert__")
    return name.endswith("_") or name.startswith(_INPLACE_PREFIXES)


class EncodeMode:
    """``eager``: statistics of the tensors being encoded must be taken now (they may change in place)."""

    def __init__(self) -> None:
        self.eager = False


class CallRecorder:
    """The forward/backward protocol of one wrapped call, shared by APIs, Tensor methods and Primitives."""

    def __init__(self, engine: Any, tap: Any, registry: Any, mode: EncodeMode, record_nested: bool) -> None:
        self.engine = engine
        self.tap = tap
        self.registry = registry
        self.mode = mode
        self.record_nested = record_nested
        self._local = threading.local()

    def depth(self) -> int:
        return getattr(self._local, "depth", 0)

    def call(self, prefix: str, name: str, fn: Callable[..., Any], args: Tuple[Any, ...],
             kwargs: Dict[str, Any]) -> Any:
        engine = self.engine
        if (self.depth() and not self.record_nested) or engine.busy or not engine.recording:
            return fn(*args, **kwargs)
        call = engine.api_begin(prefix, name)
        if call is None:
            return fn(*args, **kwargs)
        inplace = is_inplace(name)
        self.mode.eager = inplace
        try:
            engine.api_inputs(call, args, kwargs)
        finally:
            self.mode.eager = False
        grads = call.want_backward and building_grad()
        n_args = hooked_in = 0
        if grads:
            self.registry.add(call)
            if not inplace:
                with engine.guard("observing the gradients of", call.forward):  # failing: the call runs untapped
                    args, kwargs, n_args, hooked_in = self.tap.tap_inputs(args, kwargs,
                                                                          self.registry.reporter(call, "output"))
        self._local.depth = self.depth() + 1
        try:
            output = fn(*args, **kwargs)
        finally:
            self._local.depth -= 1
        engine.api_outputs(call, output)
        if grads:
            with engine.guard("observing the gradients of", call.forward):  # failing: its output as it made it
                output, n_out, hooked_out = self.tap.tap_outputs(output, self.registry.reporter(call, "input"))
                if hooked_out:
                    engine.backward_expect(call, n_out, n_args, hooked_out, hooked_in)
        return output


class NamespaceWrapper:
    """Replaces listed attributes of modules/classes with recording wrappers; restores them.

    The wrappers are built once (``prepare``), then ``apply``/``unwrap`` only swap attributes, so a
    start()/stop() per step costs a dictionary walk, not the introspection of ~1500 APIs."""

    def __init__(self, recorder: CallRecorder) -> None:
        self.recorder = recorder
        self._plan: List[Tuple[Any, str, Any, bool, Any]] = []  # (owner, name, original, own, wrapper)
        self._applied = False

    def prepare(self, namespace: Any, names: List[str], prefix: str) -> int:
        count = 0
        is_class = inspect.isclass(namespace)
        for name in names:
            try:
                raw = inspect.getattr_static(namespace, name)
            except AttributeError:
                continue
            current = getattr(namespace, name, None)
            if current is None or not callable(current) or inspect.isclass(current) or hasattr(current, _ORIGINAL):
                continue
            if is_class and isinstance(raw, (staticmethod, classmethod, property)):
                continue
            own = name in vars(namespace)
            self._plan.append((namespace, name, raw, own, self._wrapper(prefix, name, current)))
            count += 1
        return count

    def prepare_rebind(self, package: str) -> None:
        """Also replace references to the wrapped functions held by the package's own modules
        (``from .functional import linear`` inside nn.Linear), so internal calls are seen too."""
        wrappers = {id(raw): wrapper for owner, _, raw, _, wrapper in self._plan if not inspect.isclass(owner)}
        planned = {(id(owner), name) for owner, name, _, _, _ in self._plan}
        for module_name, module in list(sys.modules.items()):
            if module is None or not (module_name == package or module_name.startswith(package + ".")):
                continue
            for attr, value in list(vars(module).items()):
                wrapper = wrappers.get(id(value)) if callable(value) else None
                if wrapper is not None and (id(module), attr) not in planned:
                    planned.add((id(module), attr))
                    self._plan.append((module, attr, value, True, wrapper))

    def apply(self) -> None:
        if not self._applied:
            for owner, name, _, _, wrapper in self._plan:
                setattr(owner, name, wrapper)
            self._applied = True

    def _wrapper(self, prefix: str, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        recorder = self.recorder

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            return recorder.call(prefix, name, fn, args, kwargs)
        try:
            functools.update_wrapper(wrapped, fn)
        except (AttributeError, TypeError):
            pass
        setattr(wrapped, _ORIGINAL, fn)
        return wrapped

    def unwrap(self) -> None:
        if not self._applied:
            return
        for owner, name, raw, own, _ in reversed(self._plan):
            if own:
                setattr(owner, name, raw)
            else:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
        self._applied = False


class PrimitiveWrapper:
    """Records the Primitive objects held by a model's cells (``self.matmul = ops.MatMul()``).

    An instance's ``__call__`` cannot be replaced (Python looks it up on the class), so each primitive's
    class is swapped for a cached subclass whose ``__call__`` records; ``unwrap`` swaps it back."""

    def __init__(self, recorder: CallRecorder) -> None:
        self.recorder = recorder
        self._classes: Dict[type, type] = {}
        self._swapped: List[Tuple[Any, type]] = []

    def wrap_model(self, cells: List[Any]) -> int:
        from mindspore.ops import Primitive
        skip = _hook_classes()
        for cell in cells:
            for value in list(vars(cell).values()):
                if isinstance(value, Primitive) and not isinstance(value, skip) and \
                        type(value) not in self._classes.values():
                    self._swap(value)
        return len(self._swapped)

    def _swap(self, prim: Any) -> None:
        original = type(prim)
        sub = self._classes.get(original)
        if sub is None:
            recorder = self.recorder

            def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
                name = getattr(self, "name", None) or type(self).__mro__[1].__name__
                call = functools.partial(original.__call__, self)
                return recorder.call("Primitive", name, call, args, kwargs)
            sub = type(original.__name__, (original,), {"__call__": __call__, "__module__": original.__module__})
            self._classes[original] = sub
        if internals.set_class(prim, sub):
            self._swapped.append((prim, original))

    def unwrap(self) -> None:
        for prim, original in reversed(self._swapped):
            internals.set_class(prim, original)
        self._swapped.clear()


def _hook_classes() -> Tuple[type, ...]:
    from mindspore import ops
    return tuple(c for c in (getattr(ops, "HookBackward", None),) if c is not None)


class JitWrapper:
    """Records every call of a ``@ms.jit`` function or Cell as ``Jit.{name}.{n}``: the executor class that
    jit's wrapper instantiates per call (``_JitExecutor`` in 2.3+, ``_MindsporeFunctionExecutor`` in 2.0)
    gets a recording ``__call__``, so functions decorated before ``start`` are seen too."""

    def __init__(self, recorder: CallRecorder) -> None:
        self.recorder = recorder
        self._saved: List[Tuple[type, Any]] = []

    def wrap(self) -> int:
        cls = internals.jit_executor()
        if cls is not None and not hasattr(cls.__call__, _ORIGINAL):  # (not already wrapped by this or another)
            original = vars(cls)["__call__"]
            self._saved.append((cls, internals.set_call(cls, self._wrapper(original))))
        return len(self._saved)

    def _wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        recorder = self.recorder

        def __call__(executor: Any, *args: Any, **kwargs: Any) -> Any:
            fn, obj = internals.jit_target(executor)
            name = getattr(fn, "__name__", None) or "jit"
            lead: Tuple[Any, ...] = ()
            if obj is not None and args:
                lead, args = args[:1], args[1:]
                name = f"{type(lead[0]).__name__}.{name}" if name == "construct" else name

            def run(*call_args: Any, **call_kwargs: Any) -> Any:
                return original(executor, *(lead + call_args), **call_kwargs)
            return recorder.call("Jit", name, run, args, kwargs)
        setattr(__call__, _ORIGINAL, original)
        return __call__

    def unwrap(self) -> None:
        for cls, original in reversed(self._saved):
            internals.set_call(cls, original)
        self._saved.clear()
