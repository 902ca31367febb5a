"""Gradient observers: a recorded call's backward entry, read without changing the graph autograd runs.

Nothing of the user's graph is replaced or added (no view, no autograd Function, no tensor returned in place
of the user's, no hook that returns a gradient), so training is bit-identical with and without the dump.
Two kinds of hook read gradients as they pass:

- ``backward.input`` (the gradient w.r.t. each output): ``Tensor.register_hook`` on the output itself,
  which autograd runs once the gradients of all the output's uses are summed.
- ``backward.output`` (the gradient w.r.t. each positional tensor argument, from this call's uses only):
  autograd numbers the nodes of a thread in order, so the nodes the call made are those numbered from the
  mark taken before it ran (``before``). They are walked from the outputs back to the arguments, and each
  one with an edge into an argument gets a post hook (``Node.register_hook``), which sees the gradient it
  hands along that edge. Several such edges of one argument (``x * x``, or a module using its argument
  twice) are added up by the dump (autograd adds them in its own order: the recorded sum may differ from
  the one autograd forms in the last bit).

What only a node of our own could tell apart, and so is recorded as follows:

- an output that is an argument itself (``x.to(x.dtype)``, ``dropout`` with p = 0, a module returning its
  input): its gradient is that tensor's gradient, summed over all its uses, also those before the call. An
  API whose outputs are all its own arguments gets no backward entry (msprobe records none for a dropout
  with p = 0); a module's gets that gradient on both sides.
- a module output made before the module ran: its gradient summed over all its uses.
- a tensor passed at two positions gets, at each, its gradient from all of the call's uses.
- a use of an argument that leads to none of the call's outputs (a side result kept on the module) is not
  in its gradient.

Hooks run with the dump's torch function mode set aside (``internals.outside_mode``).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Dict, List, Sequence, Tuple

import torch

from msprobe.dump.engine import Call, DumpEngine

from .internals import edge_of, leaf_of, next_order, node_order
from .internals import outside_mode as run_outside_mode


def outside_mode(hook):
    """``hook`` always run with the dump's mode set aside."""
    return functools.partial(run_outside_mode, hook)


def _record_gradient(engine: DumpEngine, call: Call, side: str, path: Tuple[int, ...], grad: Any) -> None:
    run_outside_mode(engine.backward_grad, call, side, path, grad)  # returns None: the gradient is left as it is


def _record_param_gradient(engine: DumpEngine, owner: Tuple[str, str, str], name: str, grad: Any) -> None:
    run_outside_mode(engine.param_grad, owner, name, grad)


def param_gradient_hook(engine: DumpEngine, owner: Tuple[str, str, str], name: str) -> Callable[[Any], None]:
    """The gradient hook of parameter ``name`` of module ``owner`` (prefix, path, class): its part of
    ``{prefix}.{path}.{class}.parameters_grad``."""
    return functools.partial(_record_param_gradient, engine, owner, name)


class Before:
    """What a call's backward entry needs from before it ran: ``mark``, the number of the first autograd node
    it makes; ``args``, its differentiable positional tensor arguments (path, tensor, edge into it), the edge
    taken now, as a call writing an argument in place moves it."""

    __slots__ = ("mark", "args", "n_args")

    def __init__(self, args: Sequence[Any]) -> None:
        found: List[tuple] = []
        for i, value in enumerate(args):
            _differentiable(value, (i,), found)
        self.args = found
        self.n_args = len(args)
        self.mark = next_order()


def _differentiable(value: Any, path: Tuple[int, ...], found: List[tuple]) -> None:
    if isinstance(value, torch.Tensor):
        if value.requires_grad:
            found.append((path, value, edge_of(value)))
    elif isinstance(value, (list, tuple)) and len(path) < 2:
        for i, item in enumerate(value):
            _differentiable(item, path + (i,), found)


def observe_call(engine: DumpEngine, call: Call, args: Sequence[Any], func: Callable, kwargs: Dict[str, Any]) -> Any:
    """``func(*args, **kwargs)`` (an API), with its backward entry observed; returns its output as it is."""
    before = None
    with engine.guard("observing the gradients of", call.forward):
        before = Before(args)
    if before is None:  # the call runs as if undumped (errors of its own are the user's)
        return func(*args, **kwargs)
    output = func(*args, **kwargs)
    observe(engine, call, before, output, api=True)
    return output


def observe(engine: DumpEngine, call: Call, before: Before, output: Any, api: bool = False) -> None:
    """Hook what gives ``call`` its backward entry (nothing when no output takes a gradient)."""
    with engine.guard("observing the gradients of", call.forward):  # on failure nothing is hooked but what was
        _observe(engine, call, before, output, api)


def _observe(engine: DumpEngine, call: Call, before: Before, output: Any, api: bool) -> None:
    outputs, n_outputs = _outputs(output)
    if not outputs:
        return
    paths: Dict[Any, List[Tuple[int, ...]]] = {}  # edge key -> the argument paths it feeds
    arguments: Dict[int, Any] = {}  # id(argument) -> its edge key
    nodes = []  # the arguments' nodes, alive for the walk: their ids stay theirs
    for path, tensor, (node, nr) in before.args:
        key = id(tensor) if node is None else (id(node), nr)
        nodes.append(node)
        paths.setdefault(key, []).append(path)
        arguments[id(tensor)] = key
    returned = [arguments[id(t)] for _, t in outputs if id(t) in arguments]
    if api and len(returned) == len(outputs):
        return  # it handed its arguments back: no gradient of its own to tell apart
    consumers = _consumers([t.grad_fn for _, t in outputs], before.mark, paths) if paths else []
    counts: Dict[Any, int] = {}
    for _, edges in consumers:
        for _, key in edges:
            counts[key] = counts.get(key, 0) + 1
    passed = {key for key in returned if key not in counts}  # returned, not used: the output's gradient
    expect_in = sum(len(paths[key]) for key in counts) + sum(len(paths[key]) for key in passed)
    engine.backward_expect(call, n_outputs, before.n_args, len(outputs), expect_in)
    for path, tensor in outputs:
        tensor.register_hook(functools.partial(_record_gradient, engine, call, "input", path))
        key = arguments.get(id(tensor))
        if key in passed:
            for arg_path in paths[key]:
                tensor.register_hook(functools.partial(_record_gradient, engine, call, "output", arg_path))
            passed.discard(key)
    if consumers:
        sums = _ArgumentGradients(engine, call, paths, counts)
        for node, edges in consumers:
            node.register_hook(functools.partial(run_outside_mode, sums.take, edges))


def _consumers(roots: Sequence[Any], mark: int, keys: Dict[Any, Any]) -> List[Tuple[Any, List[Tuple[int, Any]]]]:
    """The nodes numbered from ``mark`` on reachable from ``roots`` (the call's nodes) that have an edge into
    one of ``keys``: [(node, [(edge index, key)])]. Every node visited stays referenced until the walk ends,
    so a node's Python object, and its id, is the same each time it is met."""
    visited = []
    seen = set()
    stack = []
    for node in roots:
        if node is not None and id(node) not in seen and leaf_of(node) is None and node_order(node) >= mark:
            seen.add(id(node))
            stack.append(node)
    found = []
    while stack:
        node = stack.pop()
        visited.append(node)
        edges = None
        for index, (child, nr) in enumerate(node.next_functions):
            if child is None:
                continue
            leaf = leaf_of(child)
            key = (id(child), nr) if leaf is None else id(leaf)
            if key in keys:
                if edges is None:
                    edges = []
                edges.append((index, key))
            elif leaf is None and id(child) not in seen and node_order(child) >= mark:
                seen.add(id(child))
                stack.append(child)
        if edges is not None:
            found.append((node, edges))
    return found


class _ArgumentGradients:
    """The gradients the call's nodes hand to its arguments, added up per argument; recorded once the last
    of an argument's edges is through."""

    __slots__ = ("engine", "call", "paths", "pending", "sums")

    def __init__(self, engine: DumpEngine, call: Call, paths: Dict[Any, List[Tuple[int, ...]]],
                 counts: Dict[Any, int]) -> None:
        self.engine, self.call, self.paths = engine, call, paths
        self.pending = dict(counts)
        self.sums: Dict[Any, Any] = {}

    def take(self, edges: List[Tuple[int, Any]], grad_inputs: Sequence[Any], grad_outputs: Sequence[Any]) -> None:
        """A node's post hook: ``grad_inputs`` are what it hands along its edges. Returns None."""
        with self.engine.guard("recording", self.call.backward):
            for index, key in edges:
                grad = grad_inputs[index] if index < len(grad_inputs) else None
                if grad is not None:
                    held = self.sums.get(key)
                    if held is None:
                        self.sums[key] = grad
                    else:
                        with torch.no_grad():  # a new tensor: autograd's own are never written
                            self.sums[key] = held + grad
                left = self.pending[key] = self.pending[key] - 1
                if left == 0:
                    total = self.sums.pop(key, None)
                    for path in self.paths[key]:
                        self.engine.backward_grad(self.call, "output", path, total)


def _outputs(output: Any) -> Tuple[List[Tuple[Tuple[int, ...], torch.Tensor]], int]:
    """The outputs that take a gradient, with their paths, and the number of ``backward.input`` slots: a
    tensor, a list or tuple (one slot per item; a list or tuple inside it, one per inner item), or, as
    msprobe lays them out, a dict (a ``ModelOutput``) or a dataclass: one slot per tensor taking a gradient
    in it, in order."""
    found: List[Tuple[Tuple[int, ...], torch.Tensor]] = []
    if isinstance(output, torch.Tensor):
        if output.requires_grad:
            found.append(((0,), output))
        return found, 1
    if isinstance(output, (list, tuple)):
        for i, value in enumerate(output):
            if isinstance(value, torch.Tensor):
                if value.requires_grad:
                    found.append(((i,), value))
            elif isinstance(value, (list, tuple)):
                found.extend(((i, j), v) for j, v in enumerate(value)
                             if isinstance(v, torch.Tensor) and v.requires_grad)
        return found, len(output)
    if isinstance(output, dict) or (dataclasses.is_dataclass(output) and not isinstance(output, type)):
        tensors: List[torch.Tensor] = []
        _flat(output, tensors, 0)
        return [((i,), t) for i, t in enumerate(tensors)], len(tensors)
    return found, 1


def _flat(value: Any, tensors: List[torch.Tensor], depth: int) -> None:
    """The tensors taking a gradient in ``value``, in order (dict values, items, dataclass fields)."""
    if isinstance(value, torch.Tensor):
        if value.requires_grad:
            tensors.append(value)
    elif depth >= 8:
        return
    elif isinstance(value, dict):
        for item in value.values():
            _flat(item, tensors, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _flat(item, tensors, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            _flat(getattr(value, field.name, None), tensors, depth + 1)
