"""Gradient gates: identity views around the arguments of an API or module call, and hooks on the
outputs it made, whose gradient hooks give that call, and only that call, its gradients
(``backward.input`` = w.r.t. its outputs, ``backward.output`` = w.r.t. its positional tensor arguments).
Hooks run with the dump's torch function mode set aside (``internals.outside_mode``)."""
from __future__ import annotations

import functools
from typing import Any, Callable, List, Optional, Sequence, Tuple

import torch

from msprobe.dump.engine import Call, DumpEngine

from .internals import order
from .internals import outside_mode as run_outside_mode


def outside_mode(hook):
    """``hook`` always run with the dump's mode set aside."""
    return functools.partial(run_outside_mode, hook)


def _record_gradient(engine: DumpEngine, call: Call, side: str, path: Tuple[int, ...], grad: Any) -> None:
    run_outside_mode(engine.backward_grad, call, side, path, grad)  # a partial of this per gated tensor


def _record_param_gradient(engine: DumpEngine, owner: Tuple[str, str, str], name: str, grad: Any) -> None:
    run_outside_mode(engine.param_grad, owner, name, grad)


def param_gradient_hook(engine: DumpEngine, owner: Tuple[str, str, str], name: str) -> Callable[[Any], None]:
    """The gradient hook of parameter ``name`` of module ``owner`` (prefix, path, class): its part of
    ``{prefix}.{path}.{class}.parameters_grad``."""
    return functools.partial(_record_param_gradient, engine, owner, name)


def _gradient_hook(engine: DumpEngine, call: Call, side: str, path: Tuple[int, ...]):
    return functools.partial(_record_gradient, engine, call, side, path)


def gate(engine: DumpEngine, call: Call, side: str, value: Any, path: Tuple[int, ...], count: List[Any],
         recorded_later: bool = True) -> Any:
    """An identity view of each differentiable tensor, hooked so its gradient belongs to this call only.
    ``count``: [views made, the last one]. ``recorded_later``: a recorded call may get the view as its
    argument (a module's inner calls, nested API calls), so it gets the original's statistics (an API's
    arguments are gated only around the API's own body, which is not recorded without record_nested:
    finding the original's statistics of a strided tensor in the cache is not free).
    The view is ``value[...]``, an alias: its backward hands the gradient on as it is, the same tensor,
    whose statistics the hook of the call that made ``value`` then finds in the cache; ``view_as``'s
    backward made a new tensor of it."""
    if isinstance(value, torch.Tensor):
        if value.requires_grad and value.layout == torch.strided:
            view = value[...]
            if recorded_later:
                engine.adapter.alias(view, value)
            view.register_hook(_gradient_hook(engine, call, side, path))
            count[0] += 1
            count[1] = view
            return view
        return value
    if isinstance(value, (list, tuple)) and len(path) < 2 and any(isinstance(v, torch.Tensor) for v in value):
        items = [gate(engine, call, side, v, path + (i,), count, recorded_later) for i, v in enumerate(value)]
        return _rebuild(value, items)
    return value


def gate_call(engine: DumpEngine, call: Call, args: Sequence[Any], output_of, nested: bool = False) -> Any:
    """Run ``output_of(gated_args)`` with both sides hooked; returns the gated output. ``nested``: the
    calls the body makes are recorded (record_nested)."""
    count_in = [0, None]
    try:
        gated = [gate(engine, call, "output", a, (i,), count_in, nested) for i, a in enumerate(args)]
    except Exception as exc:  # the call runs as if undumped (errors of its own are the user's)
        engine.fail(exc, f"gating the arguments of {call.forward}")
        return output_of(args)
    output = output_of(gated)
    try:
        new, n_outputs, hooked_out = gate_outputs(engine, call, output, functools.partial(not_among, (args, gated)))
        if count_in[0] or hooked_out:
            engine.backward_expect(call, n_outputs, len(args), hooked_out, count_in[0])
    except Exception as exc:
        engine.fail(exc, f"gating the outputs of {call.forward}")
        return output
    return new


def gate_outputs(engine: Any, call: Any, output: Any,
                 made_by_call: Optional[Callable[[torch.Tensor], bool]] = None) -> Tuple[Any, int, int]:
    """Hook the gradient w.r.t. each output (the backward ``input``): (gated output, outputs, hooked).
    ``made_by_call(tensor)``: whether the call made that output (an op's output may be its argument:
    ``contiguous()``; a module may return a tensor made before it ran); None: not known, every output
    gets a gate."""
    count = [0, None]
    engine.busy = True
    try:
        if isinstance(output, (list, tuple)):
            items = [_gate_output(engine, call, o, (i,), count, made_by_call) for i, o in enumerate(output)]
            return _rebuild(output, items), len(output), count[0]
        return _gate_output(engine, call, output, (0,), count, made_by_call), 1, count[0]
    finally:
        engine.busy = False


def _gate_output(engine: Any, call: Any, value: Any, path: Tuple[int, ...], count: List[Any],
                 made_by_call: Optional[Callable[[torch.Tensor], bool]]) -> Any:
    """An output the call made is hooked itself: no gate's view (and its backward node) is needed, for
    its gradient is the gradient w.r.t. this output (a hook added before a later in-place write still
    gets the gradient w.r.t. the value it has here). Any other output gets a gate."""
    if made_by_call is not None and type(value) is torch.Tensor and value.grad_fn is not None \
            and value.layout == torch.strided and made_by_call(value):
        value.register_hook(_gradient_hook(engine, call, "input", path))
        count[0] += 1
        return value
    return gate(engine, call, "input", value, path, count)


def not_among(inputs: Sequence[Sequence[Any]], tensor: Any) -> bool:
    """``tensor`` is none of the values (nor of their list items): what an op returns is then new."""
    for values in inputs:
        for value in values:
            if value is tensor or (isinstance(value, (list, tuple)) and any(v is tensor for v in value)):
                return False
    return True


def made_after(view: Optional[torch.Tensor]) -> Optional[Callable[[torch.Tensor], bool]]:
    """Whether a tensor's grad_fn was made after ``view``'s (a module's last input gate): autograd numbers
    the nodes of a thread in order, so an output whose node is newer was made while the module ran.
    None without such a view (a module without differentiable arguments)."""
    if view is None or view.grad_fn is None:
        return None
    mark = order(view)
    return lambda tensor: order(tensor) > mark


def _rebuild(value: Any, items: list) -> Any:
    """``items`` in the container ``value`` came in: a list, a tuple or a named tuple."""
    if isinstance(value, list):
        return items
    try:
        return type(value)(items)
    except TypeError:
        return type(value)(*items)
