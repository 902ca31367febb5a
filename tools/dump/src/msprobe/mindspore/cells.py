"""Cell/Module hooks (levels L0 and mix) and parameter-gradient hooks.

Forward pre/post hooks work on every MindSpore 2.x (2.0 passes a cell-id string as the first hook
argument, 2.3+ the cell: both are ignored, each hook is a closure over its cell). The pre hook may
return new inputs: that is where the argument taps for backward go in; the post hook taps the output.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ._compat import can_hook_parameters
from .internals import building_grad, own_parameters as direct_parameters


def named_cells(models: List[Any]) -> List[Tuple[str, Any]]:
    """(dotted path, cell) of every sub-cell; ``{i}.`` in front when a list of models was given.
    The root model itself is not recorded (FORMATS.md 2)."""
    out: List[Tuple[str, Any]] = []
    many = len(models) > 1
    for index, model in enumerate(models):
        for name, cell in model.cells_and_names():
            if name == "":
                continue
            path = f"{index}.{name}" if many else name
            out.append((path, cell))
    return out


class CellHooks:
    """Forward hooks recording ``{Module|Cell}.{path}.{Class}.{forward|backward}.{n}`` entries."""

    def __init__(self, engine: Any, tap: Any, registry: Any, mode: Any, prefix: str) -> None:
        self.engine = engine
        self.tap = tap
        self.registry = registry
        self.mode = mode
        self.prefix = prefix
        self._handles: List[Any] = []
        self._open: Dict[int, List[Any]] = {}

    def install(self, cells: List[Tuple[str, Any]]) -> None:
        for path, cell in cells:
            class_name = type(cell).__name__
            self._handles.append(cell.register_forward_pre_hook(self._pre(path, class_name, cell)))
            self._handles.append(cell.register_forward_hook(self._post(cell)))

    def _pre(self, path: str, class_name: str, cell: Any):
        engine, tap, prefix, opened, registry, mode = (self.engine, self.tap, self.prefix, self._open,
                                                       self.registry, self.mode)

        def pre_hook(_cell_or_id: Any, inputs: Tuple[Any, ...]) -> Optional[Tuple[Any, ...]]:
            if engine.busy or not engine.recording:
                opened.setdefault(id(cell), []).append(None)
                return None
            mode.eager = True  # the cell's body may change its inputs in place before module_end
            try:
                call = engine.module_begin(path, class_name, tuple(inputs), {}, prefix)
            finally:
                mode.eager = False
            opened.setdefault(id(cell), []).append(call)
            if call is None or not (call.want_backward and building_grad()):
                return None
            registry.add(call)
            with engine.guard("observing the gradients of", call.forward):  # failing: the cell runs untapped
                args, _, n_args, hooked = tap.tap_inputs(tuple(inputs), {}, registry.reporter(call, "output"))
                call.n_args, call.expect_in = n_args, hooked
                return args if hooked else None
            return None
        return pre_hook

    def _post(self, cell: Any):
        engine, tap, opened, registry = self.engine, self.tap, self._open, self.registry

        def post_hook(_cell_or_id: Any, _inputs: Any, output: Any) -> Any:
            stack = opened.get(id(cell))
            call = stack.pop() if stack else None
            if call is None:
                return None
            engine.module_end(call, output, direct_parameters(cell))
            if not (call.want_backward and building_grad()):
                return None
            registry.add(call)
            with engine.guard("observing the gradients of", call.forward):  # failing: its output as it made it
                new_output, n_out, hooked = tap.tap_outputs(output, registry.reporter(call, "input"))
                if not hooked:
                    return None
                engine.backward_expect(call, n_out, call.n_args, hooked, call.expect_in)
                return new_output
            return None
        return post_hook

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        self._open.clear()


class ParamGradHooks:
    """``parameters_grad`` entries through Parameter.register_hook (MindSpore >= 2.1; 2.0 has none)."""

    def __init__(self, engine: Any, prefix: str) -> None:
        self.engine = engine
        self.prefix = prefix
        self._handles: List[Any] = []

    @staticmethod
    def available() -> bool:
        return can_hook_parameters()

    def install(self, cells: List[Tuple[str, Any]]) -> None:
        self.remove()
        engine, generation = self.engine, self.engine.generation
        for path, cell in cells:
            owner = (self.prefix, path, type(cell).__name__)
            for name, param in direct_parameters(cell).items():
                if not getattr(param, "requires_grad", True):
                    continue

                def hook(grad: Any, owner: Tuple[str, str, str] = owner, name: str = name) -> None:
                    if engine.generation == generation and not engine.finished:
                        engine.param_grad(owner, name, grad)
                self._handles.append(param.register_hook(hook))

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
