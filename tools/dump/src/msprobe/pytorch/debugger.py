"""PrecisionDebugger for PyTorch: msprobe's interface on the suite's engine (shared part: msprobe.dump.debugger)."""
from __future__ import annotations

from typing import Any, ContextManager, Dict, List, Optional, Tuple

import torch

from msprobe.dump.debugger import BaseDebugger, _Either
from msprobe.dump.engine import DumpEngine
from msprobe.schema import DebuggerConfig, MsprobeError

from .adapter import TorchAdapter
from .api_list import effective_risk_level


class PrecisionDebugger(BaseDebugger):
    """msprobe's debugger for PyTorch: ``start(model)``, ``stop()``, ``step()``, ``save(...)``.

    ``start`` takes a torch.nn.Module or a list of them (named ``"{i}."``); ``save`` hooks the gradient
    of tensors that require it. Each instance is independent (see msprobe.dump.debugger.BaseDebugger).
    """

    _family = "pytorch"
    _model_needed = "the torch.nn.Module (or a list of them)"
    _model_expected = "a torch.nn.Module"

    def _make_adapter(self, config: DebuggerConfig) -> TorchAdapter:
        kind = TorchAdapter
        if config.task == "flight_recorder":
            from .flight_recorder import RecorderAdapter as kind  # the ring's hooks, and the root module's loss
        return kind(config.api_list, config.record_nested, effective_risk_level(config), config.record_all_apis)

    def _make_engine(self, config: DebuggerConfig, tasks: Optional[Dict]) -> DumpEngine:
        if config.task != "flight_recorder":
            return super()._make_engine(config, tasks)
        from msprobe.dump.flight_recorder import FlightRecorder

        from .flight_recorder import TorchRecorderHost

        # the full dump after a trigger gets a plain adapter of its own configuration
        return FlightRecorder(config, self.adapter, TorchRecorderHost(
            lambda capture: TorchAdapter(capture.api_list, capture.record_nested, effective_risk_level(capture),
                                         capture.record_all_apis)))

    @_Either
    def triggers(self) -> List[Any]:
        """task flight_recorder: the triggers so far (``Trigger``: detector, step, module, value, threshold): every
        one written, then the latest 16 beyond ``max_triggers``; empty for other tasks."""
        met = getattr(self.engine, "met_triggers", None)
        return met() if met is not None else []

    @_Either
    def replay(self, step: Optional[int] = None) -> ContextManager[None]:
        """task flight_recorder: a context with the RNGs as at ``start()`` of ``step`` (default: the last
        trigger's step), set back on leaving it; rerun that step's batch inside it to reproduce the step."""
        replay = getattr(self.engine, "replay", None)
        if replay is None:
            raise MsprobeError(f"PrecisionDebugger.replay(): needs task flight_recorder (this debugger's task "
                               f"is {self.config.task})")
        return replay(step)

    def _seed_all(self, seed: int, deterministic: bool) -> None:
        from .seed import seed_all

        seed_all(seed, deterministic)

    @staticmethod
    def _tensor_types() -> Tuple[type, ...]:
        return (torch.Tensor,)

    @staticmethod
    def _model_types() -> Tuple[type, ...]:
        return (torch.nn.Module,)

    @staticmethod
    def _pack_models(models: List[Any], listed: bool) -> List[Tuple[str, torch.nn.Module]]:
        # Modules of a list are named "{i}.{path}", as upstream does.
        return [(f"{i}." if listed else "", m) for i, m in enumerate(models)]

    def _records_grads(self) -> bool:
        return torch.is_grad_enabled()

    @staticmethod
    def _grad_tensor(tensor: Any) -> bool:
        return tensor.requires_grad
