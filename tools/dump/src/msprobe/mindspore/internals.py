"""Everything the MindSpore adapter takes from MindSpore beyond its documented API, in one place, looked up
by feature (never by version number); tests/mindspore/test_internals.py checks each on the oldest (2.0,
in the MSAdapter rootfs) and the newest (2.10) MindSpore we support.

Reads:

- ``building_grad()``: whether PyNative is recording a graph for ``ms.grad`` / ``ms.value_and_grad``
  (``_pynative_executor.grad_flag()``, in ``mindspore.graph.api``, or ``mindspore.common.api`` before
  2.7): only then are gradient taps worth attaching.
- ``tensor_types()``: the classes of MindSpore tensors: ``ms.Tensor``, and the ``StubTensor`` that PyNative
  ops return (``mindspore.common._stub_tensor``, where it exists).
- ``as_tensor(value)``: a gradient as ``ms.Tensor``: MindSpore 2.0 hands HookBackward's function the C++
  tensor (``mindspore._c_expression.Tensor``; ``TensorPy`` later), which has no ``asnumpy``.
- ``own_parameters(cell)``: a cell's own Parameters by attribute name (``Cell._params``; the public
  ``parameters_and_names(expand=False)`` is slower and fails on MindSpore 2.0 where a slot holds None).
- ``jit_executor()``, ``jit_target(executor)``: the class ``ms.jit`` instantiates for each call
  (``_JitExecutor``, ``_MindsporeFunctionExecutor`` in 2.0 .. 2.2) and the function and Cell one runs
  (its ``fn`` and ``obj``).
- ``rank()``: this process's rank once communication is initialized (``GlobalComm.INITED``: ``get_rank()``
  answers 0 before that on recent versions), else None.
- ``device_target()``: ``CPU``, ``Ascend`` or ``GPU`` (``get_context("device_target")``).

Writes (each undone by the caller with the value it returns or gave):

- ``set_class(obj, cls)``: a Primitive object's class swapped for a recording subclass (Python looks
  ``__call__`` up on the class, and a C++ layout may refuse the swap).
- ``set_call(cls, call)``: the jit executor class's ``__call__`` replaced.

(``weight_grads.py`` wraps the public ``ms.grad`` / ``ms.value_and_grad`` on MindSpore 2.0, where their
results are the only way to the weight gradients; the namespaces of ``support_wrap_ops.yaml`` are public.)

Where one of these is missing, :func:`missing` prints one warning line, once per process, naming it and what
the dump does without it; the dump goes on.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Dict, Optional, Set, Tuple

import mindspore as ms

VERSION = str(getattr(ms, "__version__", "unknown"))
_warned: Set[str] = set()


def missing(what: str, without: str) -> None:
    """``msprobe: warning: no {what} in MindSpore {VERSION}: {without}``, once per ``what`` and process."""
    if what in _warned:
        return
    _warned.add(what)
    print(f"msprobe: warning: no {what} in MindSpore {VERSION}: {without}", file=sys.stderr, flush=True)


def _attribute(candidates: Tuple[Tuple[str, str], ...]) -> Any:
    """The first ``module.attribute`` of ``candidates`` that exists (newest location first: importing a
    deprecated module prints a warning)."""
    for module_name, name in candidates:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        value = getattr(module, name, None)
        if value is not None:
            return value
    return None


_EXECUTOR = _attribute((("mindspore.graph.api", "_pynative_executor"), ("mindspore.common.api", "_pynative_executor")))
_GRAD_FLAG: Optional[Callable[[], Any]] = getattr(_EXECUTOR, "grad_flag", None)


def building_grad() -> bool:
    if _GRAD_FLAG is None:
        missing("_pynative_executor.grad_flag (mindspore.graph.api)",
                "backward data (backward entries, parameters_grad) is not dumped, forward data is")
        return False
    return bool(_GRAD_FLAG())


def _tensor_types() -> Tuple[type, ...]:
    try:
        from mindspore.common._stub_tensor import StubTensor
    except ImportError:  # PyNative ops return ms.Tensor itself
        return (ms.Tensor,)
    return (ms.Tensor, StubTensor)


_TENSOR_TYPES = _tensor_types()


def tensor_types() -> Tuple[type, ...]:
    return _TENSOR_TYPES


def _native_tensor_types() -> Tuple[type, ...]:
    from mindspore import _c_expression

    return tuple(cls for cls in (getattr(_c_expression, name, None) for name in ("Tensor", "TensorPy"))
                 if isinstance(cls, type))


_NATIVE_TENSORS = _native_tensor_types()


def as_tensor(value: Any) -> Any:
    """``value`` as ``ms.Tensor`` when it is MindSpore's C++ tensor; anything else as it is (the engine
    records its type)."""
    if isinstance(value, _TENSOR_TYPES) or not isinstance(value, _NATIVE_TENSORS):
        return value
    return ms.Tensor(value)


def own_parameters(cell: Any) -> Dict[str, Any]:
    params = getattr(cell, "_params", None)
    if isinstance(params, dict):
        return {name: param for name, param in params.items() if param is not None}
    missing("Cell._params", "parameters are found through Cell.parameters_and_names, more slowly")
    return dict(cell.parameters_and_names(expand=False))


_JIT_EXECUTORS = (("mindspore.graph.api", "_JitExecutor"), ("mindspore.common.api", "_JitExecutor"),
                  ("mindspore.common.api", "_MindsporeFunctionExecutor"))
_jit: Dict[str, Optional[type]] = {}


def jit_executor() -> Optional[type]:
    if "class" not in _jit:
        cls = _attribute(_JIT_EXECUTORS)
        _jit["class"] = cls if isinstance(cls, type) and "__call__" in vars(cls) else None
    if _jit["class"] is None:
        missing("jit executor class (_JitExecutor in mindspore.graph.api)",
                "calls of @ms.jit functions and Cells are not dumped")
    return _jit["class"]


def jit_target(executor: Any) -> Tuple[Any, Any]:
    """(the function, the Cell whose method it is, or None) one jit executor runs."""
    return getattr(executor, "fn", None), getattr(executor, "obj", None)


def set_call(cls: type, call: Callable[..., Any]) -> Callable[..., Any]:
    """Replace ``cls.__call__``; returns the one it had (give it back to undo)."""
    original = vars(cls)["__call__"]
    cls.__call__ = call
    return original


def set_class(obj: Any, cls: type) -> bool:
    """``obj.__class__ = cls``; False where the object's C++ layout refuses it (it keeps its class)."""
    try:
        obj.__class__ = cls
    except TypeError:
        missing(f"class swap for {type(obj).__name__} objects", f"calls of {type(obj).__name__} Primitive "
                "objects held by cells are not dumped (the ops.* functions are)")
        return False
    return True


def rank() -> Optional[int]:
    from mindspore.communication import management

    inited = getattr(management.GlobalComm, "INITED", None)
    if inited is None:
        missing("GlobalComm.INITED (mindspore.communication.management)",
                "the rank folder is named after get_rank(), rank0 in a run without communication")
        try:
            return int(management.get_rank())
        except RuntimeError:  # communication is not initialized
            return None
    return int(management.get_rank()) if inited else None


def device_target() -> str:
    try:
        return str(ms.get_context("device_target"))
    except ValueError:  # the key is gone
        missing("get_context('device_target')", "statistics are computed on the host, one copy per tensor")
        return "CPU"
