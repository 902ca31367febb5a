"""PrecisionDebugger for PyTorch: msprobe's interface on the suite's engine (shared part: msprobe.dump.debugger)."""
from __future__ import annotations

from typing import Any, List, Tuple

import torch

from msprobe.dump.debugger import BaseDebugger
from msprobe.schema import DebuggerConfig

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
        return TorchAdapter(config.api_list, config.record_nested, effective_risk_level(config),
                            config.record_all_apis)

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
