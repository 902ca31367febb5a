"""The PyTorch side of the flight recorder (``msprobe.dump.flight_recorder``): one non-blocking copy of a
step's statistics, the RNG states kept for replay, the root module's loss, and the full dump's hooks beside
the ring's while a capture runs."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import torch

from msprobe.dump.adapter import Adapter
from msprobe.dump.flight_recorder import RecorderHost, Transfer
from msprobe.schema import DebuggerConfig

from . import stats
from .adapter import TorchAdapter
from .gates import outside_mode


class TorchTransfer(Transfer):
    """A step's statistics values and extra scalars: host numbers at once on the CPU; from a CUDA device one
    ``torch.stack`` and one non-blocking copy to pinned memory, whose event says when it is there."""

    def __init__(self, handles: Sequence[stats.Handle], scalars: Sequence[Any]) -> None:
        self._handles = list(handles)
        values: List[Any] = stats.device_values(self._handles)
        self._count = len(values)
        self._scalar_kinds = [isinstance(s, torch.Tensor) for s in scalars]
        self._plain = [None if s is None or isinstance(s, torch.Tensor) else float(s) for s in scalars]
        values += [s.detach().reshape(()) for s in scalars if isinstance(s, torch.Tensor)]
        self._event: Optional[Any] = None
        self._copy: Optional[torch.Tensor] = None
        self._flat: Optional[List[Any]] = None
        on_device = [v for v in values if isinstance(v, torch.Tensor) and not v.is_cpu]
        if not on_device:  # the CPU: numbers already (a CPU tensor's item() waits for nothing)
            self._flat = [v.item() if hasattr(v, "item") else v for v in values]
            return
        device = on_device[0].device
        if len(on_device) != len(values) or any(v.device != device for v in on_device):
            self._flat = [v.item() if hasattr(v, "item") else v for v in values]  # mixed devices: rare, plain
            return
        stacked = torch.stack(values)  # (promoted to one dtype, as stats.to_host stacks them)
        if device.type == "cuda":
            self._copy = torch.empty(stacked.shape, dtype=stacked.dtype, pin_memory=True)
            self._copy.copy_(stacked, non_blocking=True)
            self._event = torch.cuda.Event()
            self._event.record()
        else:  # another accelerator: no event to ask, one blocking copy per step
            self._copy = stacked.to("cpu")

    def done(self) -> bool:
        return self._flat is not None or self._event is None or self._event.query()

    def values(self) -> Tuple[List[Dict[str, Any]], List[Optional[float]]]:
        if self._flat is None:
            if self._event is not None:
                self._event.synchronize()
            self._flat = self._copy.tolist()
            self._copy = self._event = None
        flat = self._flat
        records = stats.from_values(self._handles, flat[:self._count])
        extra = iter(flat[self._count:])
        scalars = [float(next(extra)) if is_tensor else plain for is_tensor, plain in zip(self._scalar_kinds, self._plain)]
        return records, scalars


class TorchRecorderHost(RecorderHost):
    """Transfers, RNG states and capture adapters for PyTorch."""

    def __init__(self, make_adapter: Callable[[DebuggerConfig], Adapter]) -> None:
        self._make_adapter = make_adapter

    def transfer(self, handles: Sequence[Any], scalars: Sequence[Any]) -> Transfer:
        return TorchTransfer(handles, scalars)

    def rng_state(self) -> Any:
        # the CUDA generators only where CUDA is in use already: asking would initialise it
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
        return torch.get_rng_state(), cuda

    @contextlib.contextmanager
    def replay(self, state: Any) -> Iterator[None]:
        saved = self.rng_state()
        cpu, cuda = state
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)
        try:
            yield
        finally:  # the training goes on with the generators where it left them
            torch.set_rng_state(saved[0])
            if saved[1] is not None:
                torch.cuda.set_rng_state_all(saved[1])

    def capture_adapter(self, config: DebuggerConfig) -> Adapter:
        return self._make_adapter(config)


class RecorderAdapter(TorchAdapter):
    """The ring's adapter: the dump's L0 hooks, a forward hook on each root model for its 0-d loss, and the
    capture's own adapter installed and removed with it while a full dump after a trigger runs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._recorder: Any = None
        self._root_hooks: List[Any] = []

    def install(self, engine: Any, models: Sequence[Any]) -> None:
        self._recorder = engine
        if engine.recording:
            super().install(engine, models)
            if not self._root_hooks:
                hook = outside_mode(self._root_output)
                self._root_hooks = [model.register_forward_hook(hook) for _, model in models]
        capture = engine.capture
        if capture is not None and capture.engine.recording:
            capture.adapter.install(capture.engine, models)

    def _root_output(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        recorder = self._recorder
        # failing: the recorder stops (one line), the output stays as the model made it
        with recorder.guard("reading the loss output of", type(module).__name__):
            loss = _loss_of(output)
            if loss is not None:
                recorder.root_loss(loss.detach())
        return None  # the output as the model made it

    def uninstall_forward(self) -> None:
        for handle in self._root_hooks:
            handle.remove()
        self._root_hooks = []
        capture = self._capture()
        if capture is not None:
            capture.adapter.uninstall_forward()
        super().uninstall_forward()

    def uninstall_all(self, keep: bool = False) -> None:
        capture = self._capture()
        if capture is not None:
            capture.adapter.uninstall_all(keep)
        super().uninstall_all(keep)

    def _capture(self) -> Any:
        return self._recorder.capture if self._recorder is not None else None


def _loss_of(output: Any) -> Optional[torch.Tensor]:
    """A model's 0-d floating loss: the output itself, or its ``loss`` (a ``ModelOutput``, a dict)."""
    if isinstance(output, dict) or hasattr(output, "loss"):
        output = output.get("loss") if isinstance(output, dict) else getattr(output, "loss", None)
    if isinstance(output, torch.Tensor) and output.dim() == 0 and output.is_floating_point():
        return output
    return None
