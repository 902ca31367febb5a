"""Backward data per call, lined up with the forward arguments, from MindSpore PyNative autodiff.

Before the call, every floating-point tensor argument (also one level inside list/tuple arguments)
goes through an ``ops.HookBackward`` identity; after it, the outputs do too. In the backward
pass the output hooks get the gradients w.r.t. the outputs (the entry's ``input``), the argument hooks
the gradients w.r.t. exactly these argument positions (its ``output``). Works under ``ms.grad`` and
``ms.value_and_grad`` on MindSpore 2.0 ... 2.10, on every device (HookBackward is PyNative-only, like hooks).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from ._compat import hook_backward
from .internals import as_tensor

FLOAT_DTYPES = ("Float16", "Float32", "Float64", "BFloat16")
Path = Tuple[int, ...]


def _is_float_tensor(value: Any, tensor_types: Tuple[type, ...]) -> bool:
    return isinstance(value, tensor_types) and str(value.dtype) in FLOAT_DTYPES


def find_tensors(values: List[Any], tensor_types: Tuple[type, ...]) -> List[Tuple[Path, Any]]:
    """(position, tensor) of float tensors in ``values``, one level into lists and tuples."""
    found: List[Tuple[Path, Any]] = []
    for index, value in enumerate(values):
        if _is_float_tensor(value, tensor_types):
            found.append(((index,), value))
        elif isinstance(value, (list, tuple)):
            found.extend(((index, inner), item) for inner, item in enumerate(value)
                         if _is_float_tensor(item, tensor_types))
    return found


def replace(values: List[Any], found: List[Tuple[Path, Any]], new: List[Any]) -> List[Any]:
    """``values`` with the tensors at the found positions replaced by ``new`` (containers rebuilt)."""
    out = list(values)
    for (path, _), tensor in zip(found, new):
        if len(path) == 1:
            out[path[0]] = tensor
        else:
            container = out[path[0]]
            items = list(container)
            items[path[1]] = tensor
            out[path[0]] = tuple(items) if isinstance(container, tuple) else items
    return out


class GradTap:
    """Attaches the two HookBackward identities of one call and reports gradients to ``report``."""

    def __init__(self, tensor_types: Tuple[type, ...], rewrap: Callable[[Any, Any], Any]) -> None:
        self.tensor_types = tensor_types
        self.rewrap = rewrap

    def _tap(self, found: List[Tuple[Path, Any]], report: Callable[[Path, Any], None]) -> List[Any]:
        # one HookBackward per tensor: MindSpore 2.0's multi-input HookBackward breaks its bprop_cut
        # kernel on inputs of different ranks, and a single-input hook is exact on every version
        out = []
        types = self.tensor_types
        for path, tensor in found:
            def hook(grads: Any, path: Path = path) -> None:
                grad = grads[0] if isinstance(grads, tuple) else grads
                if grad is not None:
                    report(path, grad if isinstance(grad, types) else as_tensor(grad))
            new = hook_backward(hook)(tensor)
            out.append(self.rewrap(new, tensor))
        return out

    def tap_inputs(self, args: Tuple[Any, ...], kwargs: Dict[str, Any],
                   report: Callable[[Path, Any], None]) -> Tuple[Tuple[Any, ...], Dict[str, Any], int, int]:
        """New (args, kwargs) and (number of argument slots, number of hooked tensors).

        Keyword tensors take the slots after the positional ones, in keyword order."""
        keys = list(kwargs)
        values = list(args) + [kwargs[k] for k in keys]
        found = find_tensors(values, self.tensor_types)
        if not found:
            return args, kwargs, len(values), 0
        values = replace(values, found, self._tap(found, report))
        new_args = tuple(values[:len(args)])
        new_kwargs = dict(zip(keys, values[len(args):]))
        return new_args, new_kwargs, len(values), len(found)

    def tap_outputs(self, output: Any, report: Callable[[Path, Any], None]) -> Tuple[Any, int, int]:
        """New output, number of output slots, number of hooked tensors."""
        single = not isinstance(output, (list, tuple))
        values = [output] if single else list(output)
        found = [(path, t) for path, t in find_tensors(values, self.tensor_types) if len(path) == 1]
        if not found:
            return output, len(values), 0
        values = replace(values, found, self._tap(found, report))
        if single:
            return values[0], 1, len(found)
        return (values if isinstance(output, list) else _same_tuple(output, values)), len(values), len(found)


def _same_tuple(original: tuple, values: List[Any]) -> Optional[tuple]:
    """A tuple of the original's class (namedtuples keep their fields)."""
    if type(original) is tuple:
        return tuple(values)
    try:
        return type(original)(*values)
    except TypeError:
        return tuple(values)


class CallRegistry:
    """Gradient hooks find their call by entry name in the current step, not by closure.

    MindSpore 2.0 PyNative caches the backward graph of ``ms.grad`` per input signature: from the second
    step on, it runs the HookBackward functions captured in the first step. Resolving the name (counters
    restart every step, so the same position has the same name) sends those gradients to this step's call.
    """

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self._calls: Dict[str, Any] = {}
        self._generation: Optional[int] = None

    def add(self, call: Any) -> None:
        if self._generation != call.generation:
            self._calls.clear()
            self._generation = call.generation
        self._calls[call.forward] = call

    def reporter(self, call: Any, side: str) -> Callable[[Path, Any], None]:
        engine, calls, name = self.engine, self._calls, call.forward

        def report(path: Path, grad: Any) -> None:
            current = calls.get(name)
            if current is not None and current.generation == engine.generation:
                engine.backward_grad(current, side, path, grad)
        return report
