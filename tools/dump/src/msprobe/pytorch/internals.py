"""Everything the PyTorch adapter takes from torch beyond its documented API, in one place: each one is
read-only, and tests/dump/test_internals.py checks them on the oldest and the newest torch we support.

- ``version(t)``: the tensor's version counter (``Tensor._version``), bumped by every in-place write: the
  statistics cache keys on it, so a tensor written since is reduced again. None for inference tensors.
- ``root(t)``: the tensor a view was made from (``Tensor._base``), or the tensor itself.
- ``compiling()``: whether dynamo is tracing the calling code (``torch.compiler.is_compiling``, or
  ``torch._dynamo.is_compiling`` before torch 2.3); ``compiled(module)``: whether a module runs compiled
  (``torch.compile``'s wrapper keeps the module as ``_orig_mod``; ``Module.compile()`` sets
  ``_compiled_call_impl``). ``DYNAMO_TRACES_MODES``: whether dynamo traces code under an active torch
  function mode (torch 2.5 on); older dynamo fails on one, so no mode is pushed for a compiled model there.
  ``optimized_module_class()``: that wrapper's class, whose ``__call__`` a window patches to see it run.
- ``next_order``, ``node_order``, ``edge_of``, ``leaf_of``: autograd's graph as the gradient observers read it
  (below, at their definitions).
- ``outside_mode(function, *args, **kwargs)``: ``function(*args, **kwargs)`` with the innermost torch function mode set aside
  (the torch function mode stack's push and pop). Hooks run while the dump's mode is active, and under an
  active mode every tensor attribute the hook reads (shape, dtype, version) is a Python round trip
  through the mode. Without those entry points the function simply runs under the mode.
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional

import torch

_modes_active = getattr(torch._C, "_len_torch_function_stack", None)
_pop_mode = getattr(torch._C, "_pop_torch_function_stack", None)
_push_mode = getattr(torch._C, "_push_on_torch_function_stack", None)
HAS_MODE_STACK = None not in (_modes_active, _pop_mode, _push_mode)


def _is_compiling() -> Callable[[], bool]:
    public = getattr(getattr(torch, "compiler", None), "is_compiling", None)
    if public is not None:
        return public
    from torch import _dynamo

    return _dynamo.is_compiling


compiling = _is_compiling()
DYNAMO_TRACES_MODES = tuple(int(part) for part in torch.__version__.split(".")[:2] if part.isdigit()) >= (2, 5)


def optimized_module_class() -> Optional[type]:
    """``torch.compile``'s module wrapper class (``torch._dynamo.eval_frame.OptimizedModule``); None while dynamo
    is not imported (then nothing was compiled)."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    return getattr(eval_frame, "OptimizedModule", None)


def compiled(module: torch.nn.Module) -> bool:
    return "_orig_mod" in module._modules or getattr(module, "_compiled_call_impl", None) is not None


def version(t: torch.Tensor) -> Optional[int]:
    try:
        return t._version
    except RuntimeError:  # an inference tensor has no version counter
        return None


def root(t: torch.Tensor) -> torch.Tensor:
    base = t._base
    return t if base is None else base


def outside_mode(function: Callable, *args: Any, **kwargs: Any) -> Any:
    if not HAS_MODE_STACK or not _modes_active():
        return function(*args, **kwargs)
    try:
        mode = _pop_mode()
    except RuntimeError:  # torch 2.2 counts a mode it is running as active but cannot pop it: run under it
        return function(*args, **kwargs)
    try:
        return function(*args, **kwargs)
    finally:
        _push_mode(mode)


# ----- autograd's graph, read by the gradient observers (gates.py) ------------------------------------------
# - ``next_order()``: the number the next autograd node made on this thread will get
#   (``torch._C._autograd._get_sequence_nr``): taken before a call, every node the call makes is numbered
#   from it on (no node is made to learn it).
# - ``node_order(node)``: a node's number (``Node._sequence_nr()``).
# - ``edge_of(t)``: the edge a consumer of ``t`` points along: (``t.grad_fn``, ``t.output_nr``), or
#   (None, 0) for a leaf, which autograd reaches through its ``AccumulateGrad`` node.
# - ``leaf_of(node)``: the tensor an ``AccumulateGrad`` node accumulates into (``.variable``), else None.
_get_sequence_nr = torch._C._autograd._get_sequence_nr
_ACCUMULATE_GRAD = torch._C._functions.AccumulateGrad


def next_order() -> int:
    return _get_sequence_nr()


def node_order(node: Any) -> int:
    return node._sequence_nr()


def edge_of(t: torch.Tensor) -> tuple:
    fn = t.grad_fn
    return (fn, t.output_nr) if fn is not None else (None, 0)


def leaf_of(node: Any) -> Optional[torch.Tensor]:
    return node.variable if type(node) is _ACCUMULATE_GRAD else None
