"""PrecisionDebugger for MindSpore and for torch code on MindSpore (MSAdapter / MindTorch), doc 29 §2.1.

The shared part lives in msprobe.dump.debugger; this class supplies the adapter and MindSpore's types.
"""
from __future__ import annotations

from typing import Any, Tuple

from msprobe.dump.debugger import BaseDebugger
from msprobe.schema import DebuggerConfig

from ._compat import can_hook_parameters
from .internals import building_grad, tensor_types
from .adapter import MindSporeAdapter


class PrecisionDebugger(BaseDebugger):
    """Dump configuration and controls: ``start(model)``, ``stop()``, ``step()``, ``save(...)``.

    ``PrecisionDebugger(config_path=None, task=None, dump_path=None, level=None, step=None)``; the
    arguments override the same fields of config.json. Backward data comes from ``ms.grad`` /
    ``ms.value_and_grad`` run between ``start`` and ``step``. At L1 a model given to ``start`` adds the
    Primitive objects its cells hold (doc 2.1.1); ``save`` records gradients under ms.grad with
    MindSpore >= 2.1; ``forward_backward_dump_end`` is the deprecated name of ``stop`` (doc 2.1.4).
    """

    _family = "mindspore"
    _model_needed = "the Cell / torch Module (or a list of them)"
    _model_expected = "a mindspore.nn.Cell (or an MSAdapter torch.nn.Module)"

    def _make_adapter(self, config: DebuggerConfig) -> MindSporeAdapter:
        return MindSporeAdapter(config)

    def _seed_all(self, seed: int, deterministic: bool) -> None:
        from .seed import seed_all

        seed_all(seed, deterministic)

    @staticmethod
    def _tensor_types() -> Tuple[type, ...]:
        return tensor_types()

    @staticmethod
    def _model_types() -> Tuple[type, ...]:
        from mindspore import nn

        return (nn.Cell,)

    def _records_grads(self) -> bool:
        return building_grad() and can_hook_parameters()

    @staticmethod
    def _grad_tensor(tensor: Any) -> bool:
        return str(tensor.dtype).startswith(("Float", "BFloat"))
